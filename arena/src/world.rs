//! The server's game simulation: players driven by their commands,
//! projectiles that spawn, fly, hit and vanish, damage, deaths, respawns,
//! scores and items on respawn timers.
//!
//! Player movement happens when a command arrives (Quake 3's
//! `ClientThink`), with the shared [`pmove`]; everything else advances in
//! fixed ticks. Randomness (spawn points) comes from one seeded generator,
//! so the same seed and the same command stream give the same game.

use netchan::SeededRng;

use crate::physics::{
    direction, distance, pmove, snap, trace_player, trace_world, Map, MoveState, EYE_HEIGHT,
    PLAYER_HEIGHT,
};
use crate::protocol::{anim, buttons, event, item, kind, Command, EntityState, PlayerState};

/// Most players (entity numbers `0..MAX_PLAYERS`).
pub const MAX_PLAYERS: usize = 64;
/// First item entity number.
pub const ITEM_BASE: u32 = 64;
/// First projectile entity number.
pub const PROJECTILE_BASE: u32 = 96;
/// Projectile slots: numbers `PROJECTILE_BASE..ENTITY_LIMIT`.
pub const PROJECTILE_SLOTS: usize = 900;
/// Entity numbers in use are below this (under the q3 codec's 1023).
pub const ENTITY_LIMIT: u32 = PROJECTILE_BASE + PROJECTILE_SLOTS as u32;

/// Projectile speed, units/s.
pub const PROJECTILE_SPEED: f32 = 900.0;
/// Projectile radius.
pub const PROJECTILE_RADIUS: f32 = 4.0;
/// Longest flight, ms.
pub const PROJECTILE_LIFE_MS: u32 = 2500;
/// Time between shots, ms.
pub const RELOAD_MS: u32 = 600;
/// Time between rail shots, ms (Quake 3's railgun: 1.5 s).
pub const RAIL_RELOAD_MS: u32 = 1500;
/// Damage of a rail hit.
pub const RAIL_DAMAGE: i32 = 60;
/// Reach of the rail, units (across the whole arena).
pub const RAIL_RANGE: f32 = 4096.0;
/// Damage of a direct hit.
pub const HIT_DAMAGE: i32 = 30;
/// Most damage of an explosion near a player (at the centre).
pub const SPLASH_DAMAGE: i32 = 20;
/// Reach of an explosion.
pub const SPLASH_RADIUS: f32 = 100.0;
/// Horizontal knockback speed of a hit.
pub const KNOCKBACK: f32 = 250.0;
/// Upward knockback speed of a hit.
pub const KNOCKBACK_UP: f32 = 120.0;
/// Time from death to respawn, ms.
pub const RESPAWN_MS: u32 = 1500;
/// Health at spawn and the most a health pack restores to.
pub const MAX_HEALTH: i32 = 100;
/// Most armor.
pub const MAX_ARMOR: i32 = 100;
/// Health a pack gives.
pub const HEALTH_PACK: i32 = 25;
/// Armor a pickup gives.
pub const ARMOR_PACK: i32 = 50;
/// Time an item takes to come back, ms.
pub const ITEM_RESPAWN_MS: u32 = 8000;
/// How close a player's feet must come to an item to take it.
pub const PICKUP_RADIUS: f32 = 32.0;

/// One player of the world.
#[derive(Debug, Clone, PartialEq)]
pub struct Player {
    /// Name.
    pub name: String,
    /// Movement state.
    pub motion: MoveState,
    /// View yaw (65536ths of a turn).
    pub yaw: u16,
    /// View pitch.
    pub pitch: i16,
    /// The newest command applied.
    pub command: u32,
    /// Alive.
    pub alive: bool,
    /// Health.
    pub health: i32,
    /// Armor.
    pub armor: i32,
    /// Frags.
    pub score: i32,
    /// Deaths.
    pub deaths: u32,
    /// Respawn counter.
    pub spawn: u8,
    /// World time when the weapon is ready.
    pub ready_ms: u32,
    /// World time when the rail is ready.
    pub rail_ready_ms: u32,
    /// World time of respawn while dead.
    pub respawn_ms: u32,
    /// The newest event and its counter.
    pub event: (u8, u8),
}

impl Player {
    fn raise(&mut self, what: u8) {
        self.event = (what, self.event.1.wrapping_add(1) & 7);
    }
}

/// A projectile: a straight trajectory from `base` at `launch_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Projectile {
    /// Who fired it.
    pub owner: u8,
    /// Position at `launch_ms`.
    pub base: [f32; 3],
    /// Velocity, whole units/s.
    pub vel: [f32; 3],
    /// Trajectory time base.
    pub launch_ms: u32,
    /// It hit something: shown one frame at the impact point, then removed.
    pub impact: bool,
}

impl Projectile {
    /// Position at world time `ms` (the same evaluation clients use).
    pub fn position_at(&self, ms: u32) -> [f32; 3] {
        position_at(self.base, self.vel, self.launch_ms, ms)
    }
}

/// A trajectory's position at time `ms`: `base + vel × (ms − launch)`.
pub fn position_at(base: [f32; 3], vel: [f32; 3], launch_ms: u32, ms: u32) -> [f32; 3] {
    let dt = (ms as f32 - launch_ms as f32) / 1000.0;
    [
        base[0] + vel[0] * dt,
        base[1] + vel[1] * dt,
        base[2] + vel[2] * dt,
    ]
}

/// An item spot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Item {
    /// Health or armor.
    pub kind: u8,
    /// Position on the floor.
    pub pos: [f32; 2],
    /// Available to pick up.
    pub available: bool,
    /// When it comes back while taken.
    pub respawn_ms: u32,
}

/// Another player as a shooter saw them: where the rail is traced against.
/// With lag compensation these are the rewound players (what the shooter's
/// client drew); without, where everyone is now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seen {
    /// Their slot.
    pub slot: u8,
    /// Their feet.
    pub feet: [f32; 3],
    /// Alive as seen.
    pub alive: bool,
}

/// A rail shot that fired.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RailShot {
    /// The player it hit (alive both as seen and now), if any.
    pub victim: Option<u8>,
}

/// What applying a command did besides moving.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Applied {
    /// The rail fired.
    pub rail: Option<RailShot>,
}

/// Something the game tells everyone about (the kill feed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GameEvent {
    /// `killer` fragged `victim`.
    Kill {
        /// The killer.
        killer: u8,
        /// The victim.
        victim: u8,
    },
}

/// Counters of the simulation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorldStats {
    /// Projectiles fired.
    pub shots: u64,
    /// Projectiles that hit a player.
    pub hits: u64,
    /// Players caught in an explosion they were not hit by.
    pub splash_hits: u64,
    /// Kills.
    pub kills: u64,
    /// Items taken.
    pub pickups: u64,
    /// Shots not fired because every projectile slot was taken.
    pub slots_full: u64,
    /// Commands ignored as older than the newest applied.
    pub stale_commands: u64,
    /// Rail shots fired.
    pub rail_shots: u64,
    /// Rail shots that hit a player.
    pub rail_hits: u64,
}

/// The whole game state on the server.
#[derive(Debug, Clone)]
pub struct World {
    map: Map,
    players: Vec<Option<Player>>,
    projectiles: Vec<Option<Projectile>>,
    items: Vec<Item>,
    rng: SeededRng,
    time_ms: u32,
    events: Vec<GameEvent>,
    stats: WorldStats,
}

impl World {
    /// A world on `map`, its randomness seeded with `seed`.
    pub fn new(map: Map, seed: u64) -> World {
        let items = map
            .items
            .iter()
            .map(|&(pos, kind)| Item {
                kind,
                pos,
                available: true,
                respawn_ms: 0,
            })
            .collect();
        World {
            map,
            players: vec![None; MAX_PLAYERS],
            projectiles: vec![None; PROJECTILE_SLOTS],
            items,
            rng: SeededRng::new(seed ^ 0x05ee_d0fa_4e4a),
            time_ms: 0,
            events: Vec::new(),
            stats: WorldStats::default(),
        }
    }

    /// The map.
    pub fn map(&self) -> &Map {
        &self.map
    }

    /// World time, ms.
    pub fn time_ms(&self) -> u32 {
        self.time_ms
    }

    /// Counters.
    pub fn stats(&self) -> &WorldStats {
        &self.stats
    }

    /// Player `slot`, if present.
    pub fn player(&self, slot: u8) -> Option<&Player> {
        self.players.get(slot as usize)?.as_ref()
    }

    /// Every present player as `(slot, player)`.
    pub fn players(&self) -> impl Iterator<Item = (u8, &Player)> {
        self.players
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.as_ref().map(|p| (i as u8, p)))
    }

    /// Every item.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// Live projectiles as `(slot, projectile)`.
    pub fn projectiles(&self) -> impl Iterator<Item = (usize, &Projectile)> {
        self.projectiles
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.as_ref().map(|p| (i, p)))
    }

    /// A free player slot, if any.
    pub fn free_slot(&self) -> Option<u8> {
        self.players
            .iter()
            .position(Option::is_none)
            .map(|i| i as u8)
    }

    /// Puts a new player in `slot` at a spawn point.
    pub fn add_player(&mut self, slot: u8, name: &str) {
        let Some(entry) = self.players.get_mut(slot as usize) else {
            return;
        };
        *entry = Some(Player {
            name: name.to_owned(),
            motion: MoveState::default(),
            yaw: 0,
            pitch: 0,
            command: 0,
            alive: true,
            health: MAX_HEALTH,
            armor: 0,
            score: 0,
            deaths: 0,
            spawn: 0,
            ready_ms: 0,
            rail_ready_ms: 0,
            respawn_ms: 0,
            event: (event::NONE, 0),
        });
        self.respawn(slot);
    }

    /// Removes the player in `slot` (their projectiles fly on).
    pub fn remove_player(&mut self, slot: u8) -> Option<Player> {
        self.players.get_mut(slot as usize)?.take()
    }

    /// Places a player at a spawn point picked at random among the free ones
    /// (no other player within 100 units), full health.
    fn respawn(&mut self, slot: u8) {
        let others: Vec<[f32; 3]> = self
            .players()
            .filter(|(s, p)| *s != slot && p.alive)
            .map(|(_, p)| p.motion.pos)
            .collect();
        let free: Vec<[f32; 2]> = self
            .map
            .spawns
            .iter()
            .copied()
            .filter(|s| {
                others
                    .iter()
                    .all(|o| distance([s[0], s[1], 0.0], *o) > 100.0)
            })
            .collect();
        let choices = if free.is_empty() {
            &self.map.spawns
        } else {
            &free
        };
        let spot = choices[(self.rng.next_u64() % choices.len() as u64) as usize];
        // Face the centre.
        let yaw = ((-spot[1]).atan2(-spot[0]) / std::f32::consts::TAU * 65536.0).round() as i32;
        let Some(player) = self.players[slot as usize].as_mut() else {
            return;
        };
        player.motion = MoveState {
            pos: [spot[0], spot[1], 0.0],
            vel: [0.0; 3],
            on_ground: true,
            jump_held: false,
        };
        player.yaw = yaw as u16;
        player.alive = true;
        player.health = MAX_HEALTH;
        player.armor = 0;
        player.spawn = player.spawn.wrapping_add(1);
        player.raise(event::RESPAWN);
    }

    /// Applies command `number` of the player in `slot` (sanitized first):
    /// the rail (traced against where everyone is now), movement (when
    /// alive), view angles, jumping and firing. Older commands than the
    /// newest applied are ignored.
    pub fn apply_command(&mut self, slot: u8, number: u32, command: &Command) -> Applied {
        self.apply(slot, number, command, None)
    }

    /// [`Self::apply_command`] with the rail traced against the other
    /// players as the shooter saw them (lag compensation: the rewound
    /// players its client drew). Damage goes to a player alive now.
    pub fn apply_command_seen(
        &mut self,
        slot: u8,
        number: u32,
        command: &Command,
        seen: &[Seen],
    ) -> Applied {
        self.apply(slot, number, command, Some(seen))
    }

    fn apply(
        &mut self,
        slot: u8,
        number: u32,
        command: &Command,
        seen: Option<&[Seen]>,
    ) -> Applied {
        let command = &command.sanitized();
        let time = self.time_ms;
        let mut applied = Applied::default();
        let Some(Some(player)) = self.players.get_mut(slot as usize) else {
            return applied;
        };
        if number <= player.command {
            self.stats.stale_commands += 1;
            return applied;
        }
        player.command = number;
        player.yaw = command.yaw;
        player.pitch = command.pitch;
        if !player.alive {
            return applied;
        }
        // The rail fires from where the player stood when it aimed: before
        // this command's movement, as its client drew itself.
        let rail =
            (command.buttons & buttons::RAIL != 0 && time >= player.rail_ready_ms).then(|| {
                player.rail_ready_ms = time + RAIL_RELOAD_MS;
                player.raise(event::FIRE);
                let pos = player.motion.pos;
                [pos[0], pos[1], pos[2] + EYE_HEIGHT]
            });
        if let Some(eye) = rail {
            applied.rail = Some(self.fire_rail(slot, eye, command, seen));
        }
        let Some(Some(player)) = self.players.get_mut(slot as usize) else {
            return applied;
        };
        if !player.alive {
            return applied;
        }
        if pmove(&mut player.motion, command, &self.map).jumped {
            player.raise(event::JUMP);
        }
        if command.buttons & buttons::FIRE != 0 && time >= player.ready_ms {
            let dir = direction(command.yaw, command.pitch);
            let eye = [
                player.motion.pos[0],
                player.motion.pos[1],
                player.motion.pos[2] + EYE_HEIGHT,
            ];
            let mut base = [
                eye[0] + dir[0] * 20.0,
                eye[1] + dir[1] * 20.0,
                eye[2] + dir[2] * 20.0,
            ];
            let mut vel = [
                dir[0] * PROJECTILE_SPEED,
                dir[1] * PROJECTILE_SPEED,
                dir[2] * PROJECTILE_SPEED,
            ];
            snap(&mut base);
            snap(&mut vel);
            let Some(free) = self.projectiles.iter().position(Option::is_none) else {
                self.stats.slots_full += 1;
                return applied;
            };
            player.ready_ms = time + RELOAD_MS;
            player.raise(event::FIRE);
            self.projectiles[free] = Some(Projectile {
                owner: slot,
                base,
                vel,
                launch_ms: time,
                impact: false,
            });
            self.stats.shots += 1;
        }
        applied
    }

    /// Traces the rail of `shooter` from `eye` along its aim against the
    /// walls and the other players (`seen`, or where they are now), and
    /// damages the first player it meets if that player is alive now.
    fn fire_rail(
        &mut self,
        shooter: u8,
        eye: [f32; 3],
        command: &Command,
        seen: Option<&[Seen]>,
    ) -> RailShot {
        self.stats.rail_shots += 1;
        let dir = direction(command.yaw, command.pitch);
        let end = [
            eye[0] + dir[0] * RAIL_RANGE,
            eye[1] + dir[1] * RAIL_RANGE,
            eye[2] + dir[2] * RAIL_RANGE,
        ];
        let wall = trace_world(&self.map, eye, end, 0.0).unwrap_or(1.0);
        let present: Vec<Seen>;
        let targets = match seen {
            Some(seen) => seen,
            None => {
                present = self
                    .players()
                    .map(|(slot, p)| Seen {
                        slot,
                        feet: p.motion.pos,
                        alive: p.alive,
                    })
                    .collect();
                &present
            }
        };
        let mut hit: Option<(f32, u8)> = None;
        for target in targets {
            if target.slot == shooter || !target.alive {
                continue;
            }
            if let Some(t) = trace_player(eye, end, 0.0, target.feet) {
                if t < wall && hit.is_none_or(|(best, _)| t < best) {
                    hit = Some((t, target.slot));
                }
            }
        }
        let victim = hit
            .map(|(_, slot)| slot)
            .filter(|&slot| self.player(slot).is_some_and(|p| p.alive));
        if let Some(victim) = victim {
            self.stats.rail_hits += 1;
            self.damage(victim, shooter, RAIL_DAMAGE, dir, 1.0);
        }
        RailShot { victim }
    }

    /// Advances the world by `dt_ms`: respawns, projectiles, items. Kill
    /// feed entries go to [`Self::drain_events`].
    pub fn tick(&mut self, dt_ms: u32) {
        let before = self.time_ms;
        self.time_ms = self.time_ms.wrapping_add(dt_ms);
        let now = self.time_ms;

        for slot in 0..MAX_PLAYERS as u8 {
            let due = self
                .player(slot)
                .is_some_and(|p| !p.alive && now >= p.respawn_ms);
            if due {
                self.respawn(slot);
            }
        }

        for index in 0..self.projectiles.len() {
            let Some(projectile) = self.projectiles[index] else {
                continue;
            };
            if projectile.impact || now.saturating_sub(projectile.launch_ms) > PROJECTILE_LIFE_MS {
                self.projectiles[index] = None;
                continue;
            }
            self.fly(index, projectile, before, now);
        }

        for index in 0..self.items.len() {
            let item = self.items[index];
            if !item.available {
                if now >= item.respawn_ms {
                    self.items[index].available = true;
                }
                continue;
            }
            let taker = self.players.iter_mut().flatten().find(|p| {
                p.alive
                    && distance(p.motion.pos, [item.pos[0], item.pos[1], 0.0]) < PICKUP_RADIUS
                    && match item.kind {
                        item::HEALTH => p.health < MAX_HEALTH,
                        _ => p.armor < MAX_ARMOR,
                    }
            });
            if let Some(player) = taker {
                match item.kind {
                    item::HEALTH => player.health = (player.health + HEALTH_PACK).min(MAX_HEALTH),
                    _ => player.armor = (player.armor + ARMOR_PACK).min(MAX_ARMOR),
                }
                player.raise(event::PICKUP);
                self.items[index].available = false;
                self.items[index].respawn_ms = now + ITEM_RESPAWN_MS;
                self.stats.pickups += 1;
            }
        }
    }

    /// Moves a projectile from `before` to `now`, hitting the first player
    /// or wall on the way.
    fn fly(&mut self, index: usize, projectile: Projectile, before: u32, now: u32) {
        let from = projectile.position_at(before.max(projectile.launch_ms));
        let to = projectile.position_at(now);
        let mut hit: Option<(f32, Option<u8>)> =
            trace_world(&self.map, from, to, PROJECTILE_RADIUS).map(|t| (t, None));
        for (slot, player) in self.players() {
            if slot == projectile.owner || !player.alive {
                continue;
            }
            if let Some(t) = trace_player(from, to, PROJECTILE_RADIUS, player.motion.pos) {
                if hit.is_none_or(|(best, _)| t < best) {
                    hit = Some((t, Some(slot)));
                }
            }
        }
        let Some((t, victim)) = hit else {
            return;
        };
        let mut point = crate::physics::lerp(from, to, t);
        snap(&mut point);
        self.projectiles[index] = Some(Projectile {
            base: point,
            vel: [0.0; 3],
            launch_ms: now,
            impact: true,
            ..projectile
        });
        if let Some(victim) = victim {
            self.stats.hits += 1;
            self.damage(victim, projectile.owner, HIT_DAMAGE, projectile.vel, 1.0);
        }
        // The explosion hurts everyone else near it, less with distance,
        // pushing them away from it (the shooter is spared: no rocket jumps).
        let near: Vec<(u8, f32, [f32; 3])> = self
            .players()
            .filter(|(slot, p)| Some(*slot) != victim && *slot != projectile.owner && p.alive)
            .filter_map(|(slot, p)| {
                let centre = [
                    p.motion.pos[0],
                    p.motion.pos[1],
                    p.motion.pos[2] + PLAYER_HEIGHT / 2.0,
                ];
                let d = distance(centre, point);
                let away = [centre[0] - point[0], centre[1] - point[1], 0.0];
                (d < SPLASH_RADIUS).then_some((slot, 1.0 - d / SPLASH_RADIUS, away))
            })
            .collect();
        for (slot, scale, away) in near {
            let amount = ((SPLASH_DAMAGE as f32 * scale).round() as i32).max(1);
            self.stats.splash_hits += 1;
            self.damage(slot, projectile.owner, amount, away, scale);
        }
    }

    /// Damages `victim` by `amount`, knocks them along `push` (scaled by
    /// `knock`), and handles death.
    fn damage(&mut self, victim: u8, attacker: u8, amount: i32, push: [f32; 3], knock: f32) {
        let now = self.time_ms;
        let Some(Some(player)) = self.players.get_mut(victim as usize) else {
            return;
        };
        if !player.alive {
            return;
        }
        // Armor takes two thirds of the damage while it lasts.
        let absorbed = (amount * 2 / 3).min(player.armor);
        player.armor -= absorbed;
        player.health -= amount - absorbed;
        let along = push[0].hypot(push[1]).max(1.0);
        player.motion.vel[0] += push[0] / along * KNOCKBACK * knock;
        player.motion.vel[1] += push[1] / along * KNOCKBACK * knock;
        player.motion.vel[2] += KNOCKBACK_UP * knock;
        player.motion.on_ground = false;
        snap(&mut player.motion.vel);
        if player.health > 0 {
            player.raise(event::PAIN);
            return;
        }
        player.alive = false;
        player.deaths += 1;
        player.respawn_ms = now + RESPAWN_MS;
        player.motion.vel = [0.0; 3];
        player.raise(event::DEATH);
        if let Some(Some(killer)) = self.players.get_mut(attacker as usize) {
            killer.score += 1;
        }
        self.stats.kills += 1;
        self.events.push(GameEvent::Kill {
            killer: attacker,
            victim,
        });
    }

    /// Takes the events raised since the last call.
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, GameEvent> {
        self.events.drain(..)
    }

    /// The entity state of player `slot`.
    pub fn player_entity(&self, slot: u8) -> Option<EntityState> {
        let p = self.player(slot)?;
        let anim = if !p.alive {
            anim::DEAD
        } else if !p.motion.on_ground {
            anim::AIR
        } else if p.motion.vel[0] != 0.0 || p.motion.vel[1] != 0.0 {
            anim::RUN
        } else {
            anim::IDLE
        };
        Some(EntityState {
            kind: kind::PLAYER,
            x: p.motion.pos[0],
            y: p.motion.pos[1],
            z: p.motion.pos[2],
            vx: p.motion.vel[0],
            vy: p.motion.vel[1],
            vz: p.motion.vel[2],
            time: 0,
            yaw: (p.yaw >> 8) as u8,
            owner: slot,
            item: 0,
            active: p.alive,
            anim,
            event: p.event.0,
            event_seq: p.event.1,
            spawn: p.spawn,
        })
    }

    /// The player state of player `slot`.
    pub fn player_state(&self, slot: u8) -> Option<PlayerState> {
        let p = self.player(slot)?;
        Some(PlayerState {
            client: slot,
            command: p.command,
            x: p.motion.pos[0],
            y: p.motion.pos[1],
            z: p.motion.pos[2],
            vx: p.motion.vel[0],
            vy: p.motion.vel[1],
            vz: p.motion.vel[2],
            yaw: p.yaw,
            pitch: p.pitch,
            on_ground: p.motion.on_ground,
            jump_held: p.motion.jump_held,
            alive: p.alive,
            health: p.health.clamp(-511, 511) as i16,
            armor: p.armor.clamp(0, 255) as u8,
            score: p.score.clamp(-2047, 2047) as i16,
            deaths: p.deaths.min(4095) as u16,
            spawn: p.spawn,
            reload_ms: p.ready_ms.saturating_sub(self.time_ms).min(2047) as u16,
            spectator: false,
        })
    }

    /// The entity state of projectile slot `index`.
    pub fn projectile_entity(&self, index: usize) -> Option<EntityState> {
        let p = self.projectiles.get(index)?.as_ref()?;
        Some(EntityState {
            kind: kind::PROJECTILE,
            x: p.base[0],
            y: p.base[1],
            z: p.base[2],
            vx: p.vel[0],
            vy: p.vel[1],
            vz: p.vel[2],
            time: p.launch_ms,
            yaw: 0,
            owner: p.owner,
            item: 0,
            active: !p.impact,
            anim: 0,
            event: if p.impact { event::IMPACT } else { event::NONE },
            event_seq: 0,
            spawn: 0,
        })
    }

    /// The entity state of item `index`.
    pub fn item_entity(&self, index: usize) -> Option<EntityState> {
        let item = self.items.get(index)?;
        Some(item_state(item.kind, item.pos, item.available))
    }

    /// A digest of the whole game state (positions, health, scores,
    /// projectiles, items, time): equal digests mean equal games.
    pub fn checksum(&self) -> u64 {
        let mut h = Fnv::default();
        h.u32(self.time_ms);
        for (slot, p) in self.players() {
            h.u32(slot as u32);
            for v in p.motion.pos.iter().chain(&p.motion.vel) {
                h.u32(v.to_bits());
            }
            h.u32(p.command);
            h.u32(p.health as u32);
            h.u32(p.armor as u32);
            h.u32(p.score as u32);
            h.u32(p.deaths);
            h.u32(p.alive as u32);
        }
        for (index, p) in self.projectiles() {
            h.u32(index as u32);
            for v in p.base.iter().chain(&p.vel) {
                h.u32(v.to_bits());
            }
            h.u32(p.launch_ms);
        }
        for item in &self.items {
            h.u32(item.available as u32);
            h.u32(item.respawn_ms);
        }
        h.0
    }
}

/// A [`World`]'s whole state as plain data (besides its map): what a
/// lockstep keyframe saves and an out-of-sync dump shows.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldParts {
    /// Player slots.
    pub players: Vec<Option<Player>>,
    /// Projectile slots.
    pub projectiles: Vec<Option<Projectile>>,
    /// Items.
    pub items: Vec<Item>,
    /// The random generator, mid-stream.
    pub rng: SeededRng,
    /// World time, ms.
    pub time_ms: u32,
    /// Counters.
    pub stats: WorldStats,
}

impl World {
    /// The whole state as plain data.
    pub fn parts(&self) -> WorldParts {
        WorldParts {
            players: self.players.clone(),
            projectiles: self.projectiles.clone(),
            items: self.items.clone(),
            rng: self.rng.clone(),
            time_ms: self.time_ms,
            stats: self.stats,
        }
    }

    /// A world on `map` in the state `parts` describes (slot counts are
    /// fixed: missing slots are empty, extra ones ignored).
    pub fn from_parts(map: Map, parts: WorldParts) -> World {
        let mut players = parts.players;
        players.resize(MAX_PLAYERS, None);
        let mut projectiles = parts.projectiles;
        projectiles.resize(PROJECTILE_SLOTS, None);
        World {
            map,
            players,
            projectiles,
            items: parts.items,
            rng: parts.rng,
            time_ms: parts.time_ms,
            events: Vec::new(),
            stats: parts.stats,
        }
    }
}

/// The entity state of an item (also its spawn baseline, as available).
pub fn item_state(kind: u8, pos: [f32; 2], available: bool) -> EntityState {
    EntityState {
        kind: crate::protocol::kind::ITEM,
        x: pos[0],
        y: pos[1],
        item: kind,
        active: available,
        ..EntityState::default()
    }
}

/// FNV-1a over 32-bit words.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn u32(&mut self, v: u32) {
        for b in v.to_le_bytes() {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fields::Fields;

    fn command(buttons: u8, yaw: u16) -> Command {
        Command {
            msec: 16,
            buttons,
            yaw,
            ..Command::default()
        }
    }

    /// A world with players at fixed spots, facing each other along x.
    fn duel() -> World {
        let mut world = World::new(Map::arena(), 1);
        world.add_player(0, "a");
        world.add_player(1, "b");
        for (slot, x) in [(0u8, -800.0), (1, -500.0)] {
            let p = world.players[slot as usize].as_mut().unwrap();
            p.motion.pos = [x, -200.0, 0.0];
        }
        world
    }

    #[test]
    fn a_projectile_flies_hits_knocks_back_and_vanishes() {
        let mut world = duel();
        world.apply_command(0, 1, &command(buttons::FIRE, 0));
        assert_eq!(world.stats().shots, 1);
        let slot = world.projectiles().next().unwrap().0;
        let entity = world.projectile_entity(slot).unwrap();
        assert_eq!(
            (entity.kind, entity.owner, entity.vx),
            (kind::PROJECTILE, 0, 900.0)
        );
        // A second shot inside the reload time does nothing.
        world.apply_command(0, 2, &command(buttons::FIRE, 0));
        assert_eq!(world.stats().shots, 1);
        // 300 units at 900 u/s: hit within the first 400 ms.
        for _ in 0..8 {
            world.tick(50);
        }
        assert_eq!(world.stats().hits, 1);
        let victim = world.player(1).unwrap();
        assert_eq!(victim.health, MAX_HEALTH - HIT_DAMAGE);
        assert!(victim.motion.vel[0] > 0.0 && !victim.motion.on_ground);
        assert_eq!(victim.event.0, event::PAIN);
        // Shown one frame as an impact, then gone.
        assert_eq!(world.projectiles().count(), 0);
    }

    #[test]
    fn four_hits_kill_and_the_victim_respawns() {
        let mut world = duel();
        let mut seq = 0;
        for _ in 0..4 {
            seq += 1;
            world.apply_command(0, seq, &command(buttons::FIRE, 0));
            for _ in 0..13 {
                world.tick(50);
                // Keep the victim in place so every shot hits.
                let p = world.players[1].as_mut().unwrap();
                if p.alive {
                    p.motion.pos = [-500.0, -200.0, 0.0];
                    p.motion.vel = [0.0; 3];
                }
            }
        }
        assert_eq!(world.stats().kills, 1);
        let events: Vec<_> = world.drain_events().collect();
        assert_eq!(
            events,
            vec![GameEvent::Kill {
                killer: 0,
                victim: 1
            }]
        );
        assert_eq!(world.player(0).unwrap().score, 1);
        let victim = world.player(1).unwrap();
        assert_eq!(victim.deaths, 1);
        assert!(!victim.alive);
        for _ in 0..(RESPAWN_MS / 50) {
            world.tick(50);
        }
        let victim = world.player(1).unwrap();
        assert!(victim.alive && victim.health == MAX_HEALTH && victim.spawn == 2);
    }

    #[test]
    fn dead_players_do_not_move_but_their_commands_count() {
        let mut world = duel();
        world.players[1].as_mut().unwrap().alive = false;
        world.players[1].as_mut().unwrap().respawn_ms = 10_000;
        let before = world.player(1).unwrap().motion;
        let mut run = command(0, 0);
        run.forward = 127;
        world.apply_command(1, 5, &run);
        assert_eq!(world.player(1).unwrap().motion, before);
        assert_eq!(world.player(1).unwrap().command, 5);
        // Older commands are ignored.
        world.apply_command(1, 3, &command(0, 0));
        assert_eq!(world.stats().stale_commands, 1);
    }

    #[test]
    fn items_are_taken_and_come_back() {
        let mut world = duel();
        let (pos, _) = world.map().items[0];
        let p = world.players[0].as_mut().unwrap();
        p.motion.pos = [pos[0], pos[1], 0.0];
        p.health = 50;
        world.tick(50);
        assert!(!world.items()[0].available);
        assert_eq!(world.player(0).unwrap().health, 75);
        for _ in 0..(ITEM_RESPAWN_MS / 50) {
            world.tick(50);
        }
        assert!(world.items()[0].available);
        assert!(!world.item_entity(0).unwrap().wire_differs(&item_state(
            world.items()[0].kind,
            pos,
            true
        )));
    }

    #[test]
    fn the_rail_hits_what_the_shooter_saw_and_reloads() {
        // Player 1 stands 300 units ahead on the line of fire (the duel).
        let mut world = duel();
        let rail = command(buttons::RAIL, 0);
        let applied = world.apply_command(0, 1, &rail);
        assert_eq!(applied.rail, Some(RailShot { victim: Some(1) }));
        assert_eq!(world.player(1).unwrap().health, MAX_HEALTH - RAIL_DAMAGE);
        assert_eq!((world.stats().rail_shots, world.stats().rail_hits), (1, 1));
        // Reloading: nothing fires.
        assert_eq!(world.apply_command(0, 2, &rail).rail, None);
        for _ in 0..(RAIL_RELOAD_MS / 50) {
            world.tick(50);
        }
        // Moved 60 units aside: the trace misses where it is now...
        world.players[1].as_mut().unwrap().motion.pos = [-500.0, -140.0, 0.0];
        let present = world.apply_command(0, 3, &rail);
        assert_eq!(present.rail, Some(RailShot { victim: None }));
        for _ in 0..(RAIL_RELOAD_MS / 50) {
            world.tick(50);
        }
        // ... and hits where the shooter saw it (lag compensation), the
        // damage going to the player as it is now.
        let seen = [Seen {
            slot: 1,
            feet: [-500.0, -200.0, 0.0],
            alive: true,
        }];
        let compensated = world.apply_command_seen(0, 4, &rail, &seen);
        assert_eq!(compensated.rail, Some(RailShot { victim: Some(1) }));
        assert_eq!(
            world.player(1).unwrap().health,
            MAX_HEALTH - 2 * RAIL_DAMAGE
        );
        for _ in 0..(RAIL_RELOAD_MS / 50) {
            world.tick(50);
        }
        // Seen dead, or not seen at all: no hit.
        let dead = [Seen {
            alive: false,
            ..seen[0]
        }];
        assert_eq!(
            world.apply_command_seen(0, 5, &rail, &dead).rail,
            Some(RailShot { victim: None })
        );
        assert_eq!((world.stats().rail_shots, world.stats().rail_hits), (4, 2));
    }

    #[test]
    fn walls_stop_the_rail() {
        let mut world = duel();
        // The central block lies between (-300, 0) and (300, 0).
        world.players[0].as_mut().unwrap().motion.pos = [-300.0, 0.0, 0.0];
        world.players[1].as_mut().unwrap().motion.pos = [300.0, 0.0, 0.0];
        assert!(!world.map().line_of_sight([-300.0, 0.0], [300.0, 0.0]));
        let applied = world.apply_command(0, 1, &command(buttons::RAIL, 0));
        assert_eq!(applied.rail, Some(RailShot { victim: None }));
        assert_eq!(world.player(1).unwrap().health, MAX_HEALTH);
    }

    #[test]
    fn same_seed_same_game() {
        let play = |seed| {
            let mut world = World::new(Map::arena(), seed);
            for slot in 0..6 {
                world.add_player(slot, "p");
            }
            for i in 1..400u32 {
                for slot in 0..6u8 {
                    let mut c = command(
                        if i % 7 == 0 { buttons::FIRE } else { 0 },
                        (i * 97 + slot as u32 * 9000) as u16,
                    );
                    c.forward = 127;
                    c.right = if (i / 30) % 2 == 0 { 90 } else { -90 };
                    world.apply_command(slot, i, &c);
                }
                if i % 3 == 0 {
                    world.tick(50);
                }
            }
            world.checksum()
        };
        assert_eq!(play(7), play(7));
        assert_ne!(play(7), play(8));
    }
}
