//! A deterministic synthetic world: entities that move, turn and animate,
//! a fixed number of them changing every frame, from a seeded generator.
//!
//! It drives the stress workload (with this crate's own entity type) and
//! the server-frame benchmark and memory binary (with Quake 3's real
//! `entityState_t`/`playerState_t` layouts, so sizes are Quake 3's). Values
//! follow Quake 3's habits so neither codec is favoured by accident:
//! positions and velocities are whole units (Quake 3 snaps them), angles
//! are 16-bit (multiples of 360/65536 degrees).

use q3::{EntityState, PlayerState};

/// The workspace's seeded generator ([`netchan::SeededRng`]) with the
/// draws a game world needs: deterministic on every platform.
#[derive(Debug, Clone)]
pub struct Rng(netchan::SeededRng);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(netchan::SeededRng::new(seed))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.below(n)
    }

    /// True with probability `percent` / 100.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// A whole number in `-limit..=limit`, as a float.
    pub fn whole(&mut self, limit: u32) -> f32 {
        (self.below(2 * u64::from(limit) + 1) as i64 - i64::from(limit)) as f32
    }

    /// A 16-bit angle in degrees (a multiple of 360/65536).
    pub fn angle(&mut self) -> f32 {
        short_angle(self.below(65536) as i32 - 32768)
    }
}

/// Degrees of a 16-bit angle, as Quake 3's `SHORT2ANGLE`.
pub fn short_angle(short: i32) -> f32 {
    short as f32 * (360.0 / 65536.0)
}

/// An entity the world can spawn and move.
pub trait SimEntity: Clone {
    /// A new entity numbered `number`.
    fn spawn(rng: &mut Rng, number: u32) -> Self;
    /// One frame of change at `time_ms`, `dt_ms` after the previous one.
    fn advance(&mut self, rng: &mut Rng, time_ms: i32, dt_ms: i32);
}

/// A player state the world can spawn and move.
pub trait SimPlayer: Clone {
    /// The player state of client `client`.
    fn spawn(rng: &mut Rng, client: u32) -> Self;
    /// One frame of change (every player moves every frame).
    fn advance(&mut self, rng: &mut Rng, time_ms: i32, dt_ms: i32);
}

/// Entities and player states, stepped frame by frame.
#[derive(Debug, Clone)]
pub struct World<E, P> {
    /// Entities by number, sorted.
    pub entities: Vec<(u32, E)>,
    /// One player state per client.
    pub players: Vec<P>,
    /// Time of the current frame, ms.
    pub time_ms: i32,
    /// Milliseconds per frame.
    pub frame_ms: i32,
    /// How many entities change each frame.
    pub changing: usize,
    /// Indices into `entities` of those that changed in the last frame.
    pub changed: Vec<usize>,
    rng: Rng,
    order: Vec<usize>,
}

impl<E: SimEntity, P: SimPlayer> World<E, P> {
    /// A world of `entities` entities numbered `0..entities` and `clients`
    /// player states, `changing` entities changing every `frame_ms` ms.
    pub fn new(seed: u64, entities: u32, clients: u32, changing: usize, frame_ms: i32) -> Self {
        let mut rng = Rng::new(seed);
        let entities: Vec<(u32, E)> = (0..entities).map(|n| (n, E::spawn(&mut rng, n))).collect();
        let players = (0..clients).map(|c| P::spawn(&mut rng, c)).collect();
        World {
            order: (0..entities.len()).collect(),
            changing: changing.min(entities.len()),
            entities,
            players,
            time_ms: 0,
            frame_ms,
            changed: Vec::new(),
            rng,
        }
    }

    /// Advances one frame: exactly `changing` entities, drawn uniformly,
    /// change; every player state changes.
    pub fn step(&mut self) {
        self.time_ms += self.frame_ms;
        // A partial Fisher–Yates shuffle draws the changing set.
        let n = self.order.len();
        for i in 0..self.changing {
            let j = i + self.rng.below((n - i) as u64) as usize;
            self.order.swap(i, j);
        }
        self.changed.clear();
        self.changed.extend_from_slice(&self.order[..self.changing]);
        self.changed.sort_unstable();
        for &index in &self.changed {
            self.entities[index]
                .1
                .advance(&mut self.rng, self.time_ms, self.frame_ms);
        }
        for player in &mut self.players {
            player.advance(&mut self.rng, self.time_ms, self.frame_ms);
        }
    }
}

/// Moves a whole-unit position by a whole-unit velocity over `dt_ms`,
/// snapped to a whole unit as Quake 3's `SnapVector` does.
pub fn integrate(position: f32, velocity: f32, dt_ms: i32) -> f32 {
    (position + velocity * dt_ms as f32 / 1000.0).round()
}

/// Quake 3's entity types used by the synthetic world.
const ET_GENERAL: i32 = 0;
const ET_PLAYER: i32 = 1;
const ET_ITEM: i32 = 2;
const ET_MISSILE: i32 = 3;
/// Trajectory types.
const TR_INTERPOLATE: i32 = 1;
const TR_LINEAR: i32 = 2;
/// `groundEntityNum` of an entity in the air.
const ENTITYNUM_NONE: i32 = 1023;

impl SimEntity for EntityState {
    fn spawn(rng: &mut Rng, number: u32) -> Self {
        // A quarter players, a quarter missiles, the rest items and props.
        let e_type = match number % 4 {
            0 => ET_PLAYER,
            1 => ET_MISSILE,
            2 => ET_ITEM,
            _ => ET_GENERAL,
        };
        EntityState {
            e_type,
            pos_tr_type: if e_type == ET_MISSILE {
                TR_LINEAR
            } else {
                TR_INTERPOLATE
            },
            pos_tr_base_0: rng.whole(2000),
            pos_tr_base_1: rng.whole(2000),
            pos_tr_base_2: rng.whole(300),
            pos_tr_delta_0: rng.whole(320),
            pos_tr_delta_1: rng.whole(320),
            apos_tr_base_1: rng.angle(),
            modelindex: (number % 40) as i32 + 1,
            client_num: (number % 64) as i32,
            weapon: (number % 9) as i32 + 1,
            ground_entity_num: ENTITYNUM_NONE,
            solid: 0x0020_1010,
            ..EntityState::default()
        }
    }

    fn advance(&mut self, rng: &mut Rng, time_ms: i32, dt_ms: i32) {
        self.pos_tr_time = time_ms;
        self.pos_tr_base_0 = integrate(self.pos_tr_base_0, self.pos_tr_delta_0, dt_ms);
        self.pos_tr_base_1 = integrate(self.pos_tr_base_1, self.pos_tr_delta_1, dt_ms);
        self.pos_tr_base_2 = integrate(self.pos_tr_base_2, self.pos_tr_delta_2, dt_ms);
        if rng.percent(30) {
            self.pos_tr_delta_0 = rng.whole(320);
            self.pos_tr_delta_1 = rng.whole(320);
            self.pos_tr_delta_2 = rng.whole(270);
        }
        if rng.percent(50) {
            self.apos_tr_base_1 = rng.angle();
        }
        if rng.percent(10) {
            // Quake 3 toggles bit 7 to restart the same animation.
            self.legs_anim = (self.legs_anim ^ 0x80) & 0xff;
            self.torso_anim = rng.below(30) as i32;
        }
        if rng.percent(5) {
            self.event = rng.below(60) as i32 + 1;
            self.event_parm = rng.below(256) as i32;
        }
    }
}

impl SimPlayer for PlayerState {
    fn spawn(rng: &mut Rng, client: u32) -> Self {
        let mut ps = PlayerState {
            client_num: client as i32,
            origin_0: rng.whole(2000),
            origin_1: rng.whole(2000),
            origin_2: rng.whole(300),
            viewheight: 26,
            gravity: 800,
            speed: 320,
            weapon: 5,
            ground_entity_num: ENTITYNUM_NONE,
            ..PlayerState::default()
        };
        ps.stats[0] = 100;
        ps.ammo[5] = 50;
        ps
    }

    fn advance(&mut self, rng: &mut Rng, time_ms: i32, dt_ms: i32) {
        self.command_time = time_ms;
        self.origin_0 = integrate(self.origin_0, self.velocity_0, dt_ms);
        self.origin_1 = integrate(self.origin_1, self.velocity_1, dt_ms);
        self.origin_2 = integrate(self.origin_2, self.velocity_2, dt_ms);
        if rng.percent(40) {
            self.velocity_0 = rng.whole(320);
            self.velocity_1 = rng.whole(320);
        }
        self.viewangles_1 = rng.angle();
        self.viewangles_0 = short_angle(rng.below(8192) as i32 - 4096);
        self.bob_cycle = (self.bob_cycle + 3) & 0xff;
        if rng.percent(10) {
            self.weapon_time = rng.below(1000) as i32;
            self.ammo[5] = (self.ammo[5] - 1).max(0);
        }
        if rng.percent(3) {
            self.stats[0] = rng.below(200) as i32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_world_is_deterministic_and_changes_the_asked_number() {
        let mut a: World<EntityState, PlayerState> = World::new(7, 100, 2, 25, 50);
        let mut b: World<EntityState, PlayerState> = World::new(7, 100, 2, 25, 50);
        for _ in 0..5 {
            let before = a.entities.clone();
            a.step();
            b.step();
            assert_eq!(a.entities, b.entities);
            assert_eq!(a.changed.len(), 25);
            let differing = before
                .iter()
                .zip(&a.entities)
                .filter(|(x, y)| x.1 != y.1)
                .count();
            // pos_tr_time changes with every advance.
            assert_eq!(differing, 25);
        }
        assert_eq!(a.time_ms, 250);
    }
}
