//! [`ArenaSim`]: the arena's [`World`] as a lockstep [`Simulation`] — the
//! same world the snapshot server runs, driven by every participant's
//! commands at the same turn instead of by arrival.
//!
//! Determinism of what it uses: players, projectiles and items live in
//! `Vec`s walked in slot order (no hash map anywhere in the world); time is
//! the turn's steps × the tick; the one random generator (spawn points) is
//! seeded from the session seed and saved with the state. Movement is
//! `f32` arithmetic snapped to whole units, and facing a spawn uses
//! `atan2`, direction `sin`/`cos`: bit-identical across participants of one
//! build on one platform (what a match runs), not across platforms (see
//! the `lockstep` crate's "Determinism" section).

use serde::{Deserialize, Serialize};

use lockstep::wire::Turn;
use lockstep::{ParticipantId, SimError, Simulation};

use crate::physics::{Map, MoveState};
use crate::world::{Item, Player, Projectile, World, WorldParts, WorldStats, MAX_PLAYERS};

/// The arena world under lockstep.
#[derive(Debug, Clone)]
pub struct ArenaSim {
    world: World,
    turn: u32,
    /// Commands that did not decode (counted, and part of the checksum).
    bad_commands: u64,
}

impl ArenaSim {
    /// The world.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The last turn executed.
    pub fn turn(&self) -> u32 {
        self.turn
    }

    /// The setup bytes of the arena map (the only map there is).
    pub fn setup() -> Vec<u8> {
        Map::arena().name.as_bytes().to_vec()
    }
}

#[derive(Serialize, Deserialize)]
struct PlayerData {
    name: String,
    pos: [f32; 3],
    vel: [f32; 3],
    on_ground: bool,
    jump_held: bool,
    yaw: u16,
    pitch: i16,
    command: u32,
    alive: bool,
    health: i32,
    armor: i32,
    score: i32,
    deaths: u32,
    spawn: u8,
    ready_ms: u32,
    rail_ready_ms: u32,
    respawn_ms: u32,
    event: (u8, u8),
}

#[derive(Serialize, Deserialize)]
struct ProjectileData {
    owner: u8,
    base: [f32; 3],
    vel: [f32; 3],
    launch_ms: u32,
    impact: bool,
}

#[derive(Serialize, Deserialize)]
struct ItemData {
    kind: u8,
    pos: [f32; 2],
    available: bool,
    respawn_ms: u32,
}

#[derive(Serialize, Deserialize)]
struct State {
    turn: u32,
    bad_commands: u64,
    players: Vec<Option<PlayerData>>,
    projectiles: Vec<(u16, ProjectileData)>,
    items: Vec<ItemData>,
    rng: netchan::SeededRng,
    time_ms: u32,
    stats: [u64; 9],
}

impl ArenaSim {
    fn state(&self) -> State {
        let parts = self.world.parts();
        let s = parts.stats;
        State {
            turn: self.turn,
            bad_commands: self.bad_commands,
            players: parts
                .players
                .into_iter()
                .map(|p| {
                    p.map(|p| PlayerData {
                        name: p.name,
                        pos: p.motion.pos,
                        vel: p.motion.vel,
                        on_ground: p.motion.on_ground,
                        jump_held: p.motion.jump_held,
                        yaw: p.yaw,
                        pitch: p.pitch,
                        command: p.command,
                        alive: p.alive,
                        health: p.health,
                        armor: p.armor,
                        score: p.score,
                        deaths: p.deaths,
                        spawn: p.spawn,
                        ready_ms: p.ready_ms,
                        rail_ready_ms: p.rail_ready_ms,
                        respawn_ms: p.respawn_ms,
                        event: p.event,
                    })
                })
                .collect(),
            projectiles: parts
                .projectiles
                .into_iter()
                .enumerate()
                .filter_map(|(i, p)| {
                    p.map(|p| {
                        (
                            i as u16,
                            ProjectileData {
                                owner: p.owner,
                                base: p.base,
                                vel: p.vel,
                                launch_ms: p.launch_ms,
                                impact: p.impact,
                            },
                        )
                    })
                })
                .collect(),
            items: parts
                .items
                .into_iter()
                .map(|i| ItemData {
                    kind: i.kind,
                    pos: i.pos,
                    available: i.available,
                    respawn_ms: i.respawn_ms,
                })
                .collect(),
            rng: parts.rng,
            time_ms: parts.time_ms,
            stats: [
                s.shots,
                s.hits,
                s.splash_hits,
                s.kills,
                s.pickups,
                s.slots_full,
                s.stale_commands,
                s.rail_shots,
                s.rail_hits,
            ],
        }
    }

    fn from_state(state: State) -> Result<ArenaSim, SimError> {
        let bad = |reason: String| SimError::State {
            sim: ArenaSim::NAME,
            reason,
        };
        if state.players.len() > MAX_PLAYERS {
            return Err(bad(format!("{} player slots", state.players.len())));
        }
        let mut projectiles = vec![None; crate::world::PROJECTILE_SLOTS];
        for (slot, p) in state.projectiles {
            let entry = projectiles
                .get_mut(slot as usize)
                .ok_or_else(|| bad(format!("projectile slot {slot}")))?;
            *entry = Some(Projectile {
                owner: p.owner,
                base: p.base,
                vel: p.vel,
                launch_ms: p.launch_ms,
                impact: p.impact,
            });
        }
        let map = Map::arena();
        if state.items.len() != map.items.len() {
            return Err(bad(format!(
                "{} items on a map of {}",
                state.items.len(),
                map.items.len()
            )));
        }
        let [shots, hits, splash_hits, kills, pickups, slots_full, stale_commands, rail_shots, rail_hits] =
            state.stats;
        let parts = WorldParts {
            players: state
                .players
                .into_iter()
                .map(|p| {
                    p.map(|p| Player {
                        name: p.name,
                        motion: MoveState {
                            pos: p.pos,
                            vel: p.vel,
                            on_ground: p.on_ground,
                            jump_held: p.jump_held,
                        },
                        yaw: p.yaw,
                        pitch: p.pitch,
                        command: p.command,
                        alive: p.alive,
                        health: p.health,
                        armor: p.armor,
                        score: p.score,
                        deaths: p.deaths,
                        spawn: p.spawn,
                        ready_ms: p.ready_ms,
                        rail_ready_ms: p.rail_ready_ms,
                        respawn_ms: p.respawn_ms,
                        event: p.event,
                    })
                })
                .collect(),
            projectiles,
            items: state
                .items
                .into_iter()
                .map(|i| Item {
                    kind: i.kind,
                    pos: i.pos,
                    available: i.available,
                    respawn_ms: i.respawn_ms,
                })
                .collect(),
            rng: state.rng,
            time_ms: state.time_ms,
            stats: WorldStats {
                shots,
                hits,
                splash_hits,
                kills,
                pickups,
                slots_full,
                stale_commands,
                rail_shots,
                rail_hits,
            },
        };
        Ok(ArenaSim {
            world: World::from_parts(map, parts),
            turn: state.turn,
            bad_commands: state.bad_commands,
        })
    }
}

impl Simulation for ArenaSim {
    const NAME: &'static str = "arena";

    fn create(seed: u64, setup: &[u8], participants: &[ParticipantId]) -> Result<Self, SimError> {
        let map = Map::arena();
        if setup != map.name.as_bytes() {
            return Err(SimError::Setup {
                sim: Self::NAME,
                reason: format!(
                    "unknown map {:?} (this build has {:?})",
                    String::from_utf8_lossy(setup),
                    map.name
                ),
            });
        }
        let mut world = World::new(map, seed);
        for &p in participants {
            if (p as usize) < MAX_PLAYERS {
                world.add_player(p, &format!("bot{p}"));
            }
        }
        Ok(ArenaSim {
            world,
            turn: 0,
            bad_commands: 0,
        })
    }

    fn load(state: &[u8]) -> Result<Self, SimError> {
        let state: State = postcard::from_bytes(state).map_err(|e| SimError::State {
            sim: Self::NAME,
            reason: e.to_string(),
        })?;
        ArenaSim::from_state(state)
    }

    fn execute(&mut self, turn: &Turn, step_ms: u32) {
        self.turn = turn.turn;
        for &p in &turn.dropped {
            self.world.remove_player(p);
        }
        for (p, set) in &turn.sets {
            for bytes in &set.commands {
                match crate::lockstep::command::decode(bytes) {
                    Ok((number, command)) => {
                        self.world.apply_command(*p, number, &command);
                    }
                    Err(_) => self.bad_commands += 1,
                }
            }
        }
        for _ in 0..turn.steps {
            self.world.tick(step_ms);
        }
        // The kill feed is not state; nobody reads it under lockstep.
        self.world.drain_events().for_each(drop);
    }

    fn checksum(&self) -> u64 {
        let mut h = lockstep::StateHasher::default();
        h.u64(self.world.checksum());
        h.u32(self.turn);
        h.u64(self.bad_commands);
        h.finish()
    }

    fn save(&self) -> Vec<u8> {
        postcard::to_allocvec(&self.state()).unwrap_or_default()
    }

    fn describe(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "arena: turn {} time {} ms checksum {:016x} world {:016x} stats {:?}",
            self.turn,
            self.world.time_ms(),
            self.checksum(),
            self.world.checksum(),
            self.world.stats()
        );
        for (slot, p) in self.world.players() {
            let _ = writeln!(
                out,
                "player {slot} {} pos {:?} vel {:?} ground {} yaw {} pitch {} command {} alive {} \
                 health {} armor {} score {} deaths {}",
                p.name,
                p.motion.pos,
                p.motion.vel,
                p.motion.on_ground,
                p.yaw,
                p.pitch,
                p.command,
                p.alive,
                p.health,
                p.armor,
                p.score,
                p.deaths
            );
        }
        for (slot, p) in self.world.projectiles() {
            let _ = writeln!(
                out,
                "projectile {slot} owner {} base {:?} vel {:?} launched {} impact {}",
                p.owner, p.base, p.vel, p.launch_ms, p.impact
            );
        }
        for (i, item) in self.world.items().iter().enumerate() {
            let _ = writeln!(
                out,
                "item {i} kind {} available {} respawn {}",
                item.kind, item.available, item.respawn_ms
            );
        }
        out
    }

    fn perturb(&mut self) {
        // The world clock one millisecond ahead: every later timer (reload,
        // respawn, items, projectile flight) shifts, and the clock is in
        // the checksum, so the divergence cannot heal by itself.
        let mut parts = self.world.parts();
        parts.time_ms = parts.time_ms.wrapping_add(1);
        self.world = World::from_parts(Map::arena(), parts);
    }
}
