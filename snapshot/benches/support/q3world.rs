//! A Quake-3-shaped world for benchmarks and the memory report: an entity
//! with the 51 networked fields of `entityState_t` (204 bytes of fields),
//! a player state with Quake 3's four 16-entry arrays, and a deathmatch-like
//! mix of what changes per frame.
#![allow(dead_code)]

use fields::{array, net_struct, q3_float, signed, unsigned};
use snapshot::{ClientId, Server};

net_struct! {
    /// The networked fields of Quake 3's `entityState_t`, in its wire order.
    pub struct EntityState {
        pub pos_time: i32 = signed(32),
        pub pos_base_x: f32 = q3_float(),
        pub pos_base_y: f32 = q3_float(),
        pub pos_delta_x: f32 = q3_float(),
        pub pos_delta_y: f32 = q3_float(),
        pub pos_base_z: f32 = q3_float(),
        pub apos_base_y: f32 = q3_float(),
        pub pos_delta_z: f32 = q3_float(),
        pub apos_base_x: f32 = q3_float(),
        pub event: i32 = unsigned(10),
        pub angles2_y: f32 = q3_float(),
        pub kind: i32 = unsigned(8),
        pub torso_anim: i32 = unsigned(8),
        pub event_parm: i32 = unsigned(8),
        pub legs_anim: i32 = unsigned(8),
        pub ground_entity: i32 = unsigned(10),
        pub pos_type: i32 = unsigned(8),
        pub flags: i32 = unsigned(19),
        pub other_entity: i32 = unsigned(10),
        pub weapon: i32 = unsigned(8),
        pub client: i32 = unsigned(8),
        pub angles_y: f32 = q3_float(),
        pub pos_duration: i32 = signed(32),
        pub apos_type: i32 = unsigned(8),
        pub origin_x: f32 = q3_float(),
        pub origin_y: f32 = q3_float(),
        pub origin_z: f32 = q3_float(),
        pub solid: i32 = unsigned(24),
        pub powerups: i32 = unsigned(16),
        pub model: i32 = unsigned(8),
        pub other_entity2: i32 = unsigned(10),
        pub loop_sound: i32 = unsigned(8),
        pub generic1: i32 = unsigned(8),
        pub origin2_z: f32 = q3_float(),
        pub origin2_x: f32 = q3_float(),
        pub origin2_y: f32 = q3_float(),
        pub model2: i32 = unsigned(8),
        pub angles_x: f32 = q3_float(),
        pub time: i32 = signed(32),
        pub apos_time: i32 = signed(32),
        pub apos_duration: i32 = signed(32),
        pub apos_base_z: f32 = q3_float(),
        pub apos_delta_x: f32 = q3_float(),
        pub apos_delta_y: f32 = q3_float(),
        pub apos_delta_z: f32 = q3_float(),
        pub time2: i32 = signed(32),
        pub angles_z: f32 = q3_float(),
        pub angles2_x: f32 = q3_float(),
        pub angles2_z: f32 = q3_float(),
        pub constant_light: i32 = signed(32),
        pub frame: i32 = unsigned(16),
    }
}

net_struct! {
    /// A Quake-3-like `playerState_t`: scalars, then the four arrays.
    pub struct PlayerState {
        pub command_time: i32 = signed(32),
        pub origin_x: f32 = q3_float(),
        pub origin_y: f32 = q3_float(),
        pub bob_cycle: i32 = unsigned(8),
        pub velocity_x: f32 = q3_float(),
        pub velocity_y: f32 = q3_float(),
        pub view_angle_y: f32 = q3_float(),
        pub view_angle_x: f32 = q3_float(),
        pub weapon_time: i32 = signed(16),
        pub origin_z: f32 = q3_float(),
        pub velocity_z: f32 = q3_float(),
        pub legs_timer: i32 = unsigned(8),
        pub pm_time: i32 = signed(16),
        pub event_sequence: i32 = unsigned(16),
        pub torso_anim: i32 = unsigned(8),
        pub movement_dir: i32 = unsigned(4),
        pub events_0: i32 = unsigned(8),
        pub legs_anim: i32 = unsigned(8),
        pub events_1: i32 = unsigned(8),
        pub pm_flags: i32 = unsigned(16),
        pub ground_entity: i32 = unsigned(10),
        pub weapon_state: i32 = unsigned(4),
        pub flags: i32 = unsigned(16),
        pub external_event: i32 = unsigned(10),
        pub gravity: i32 = unsigned(16),
        pub speed: i32 = unsigned(16),
        pub delta_angle_y: i32 = unsigned(16),
        pub client: i32 = unsigned(8),
        pub weapon: i32 = unsigned(5),
        pub view_height: i32 = signed(8),
        pub stats: [i32; 16] = array(signed(16), 16),
        pub persistant: [i32; 16] = array(signed(16), 16),
        pub ammo: [i32; 16] = array(signed(16), 16),
        pub powerups: [i32; 16] = array(signed(32), 16),
    }
}

/// Entities in the benchmark world (all visible to every client).
pub const ENTITIES: u32 = 256;
/// Moving players among them.
pub const PLAYERS: u32 = 16;
/// Missile slots (spawn, fly on a trajectory, explode).
pub const MISSILES: u32 = 40;

/// How much of the world changes each frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// A deathmatch: 16 players move every frame, missiles spawn and die,
    /// items are occasionally picked up — about 8% of entities per frame.
    Deathmatch,
    /// A quarter of all entities move every frame.
    Busy,
}

/// Deterministic xorshift, so runs are comparable.
#[derive(Debug, Clone)]
pub struct Noise(u64);

impl Noise {
    pub fn new(seed: u64) -> Self {
        Noise(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn player(number: u32) -> EntityState {
    EntityState {
        kind: 1,
        client: number as i32,
        model: 255,
        pos_type: 1,
        pos_base_x: (number * 64) as f32,
        pos_base_y: 100.0,
        pos_base_z: 24.0,
        solid: 0x40_2010,
        legs_anim: 11,
        torso_anim: 22,
        weapon: 5,
        ground_entity: 1022,
        ..EntityState::default()
    }
}

fn item(number: u32) -> EntityState {
    EntityState {
        kind: 2,
        model: (number % 40) as i32 + 1,
        pos_base_x: (number * 32) as f32,
        pos_base_y: -(number as f32) * 16.0,
        pos_base_z: 8.0,
        origin_x: (number * 32) as f32,
        origin_y: -(number as f32) * 16.0,
        origin_z: 8.0,
        apos_type: 2,
        apos_delta_y: 90.0,
        ..EntityState::default()
    }
}

fn missile(time: i32, noise: &mut Noise) -> EntityState {
    EntityState {
        kind: 3,
        weapon: 5,
        pos_type: 2,
        pos_time: time,
        pos_base_x: noise.below(2048) as f32,
        pos_base_y: noise.below(2048) as f32,
        pos_base_z: 40.0,
        pos_delta_x: 900.0,
        pos_delta_y: -120.0,
        other_entity: noise.below(PLAYERS as u64) as i32,
        loop_sound: 9,
        ..EntityState::default()
    }
}

/// Fills a server with the world: players, items, and missile slots half full.
pub fn populate(server: &mut Server<EntityState, PlayerState>, noise: &mut Noise) {
    for number in 0..ENTITIES {
        let state = if number < PLAYERS {
            player(number)
        } else if number < PLAYERS + MISSILES {
            if number % 2 == 0 {
                missile(0, noise)
            } else {
                continue;
            }
        } else {
            item(number)
        };
        server
            .set_entity(number, state)
            .expect("entity number in range");
    }
}

/// Advances the world by one 50 ms frame.
pub fn step(
    server: &mut Server<EntityState, PlayerState>,
    clients: &[ClientId],
    noise: &mut Noise,
    frame: u32,
    activity: Activity,
) {
    let time = (frame * 50) as i32;
    let movers = match activity {
        Activity::Deathmatch => PLAYERS,
        Activity::Busy => ENTITIES / 4,
    };
    for number in 0..movers {
        let Some(entity) = server.entity_mut(number) else {
            continue;
        };
        entity.pos_base_x += (noise.below(17) as f32) - 8.0;
        entity.pos_base_y += (noise.below(17) as f32) - 8.0;
        entity.pos_delta_x = (noise.below(640) as f32) - 320.0;
        entity.pos_delta_y = (noise.below(640) as f32) - 320.0;
        entity.apos_base_y = noise.below(360) as f32;
        entity.pos_time = time;
        if noise.below(8) == 0 {
            entity.legs_anim ^= 128;
        }
        if noise.below(20) == 0 {
            entity.event = (entity.event + 1) & 0x3ff;
            entity.event_parm = noise.below(256) as i32;
        }
    }
    // A missile explodes or is fired now and then, in a reused slot.
    let slot = PLAYERS + noise.below(MISSILES as u64) as u32;
    if noise.below(2) == 0 {
        if server.entity(slot).is_some() {
            server.remove_entity(slot);
        } else {
            server
                .set_entity(slot, missile(time, noise))
                .expect("missile slot in range");
        }
    }
    // An item is picked up or respawns.
    let first_item = PLAYERS + MISSILES;
    let item = first_item + noise.below((ENTITIES - first_item) as u64) as u32;
    if noise.below(4) == 0 {
        if let Some(entity) = server.entity_mut(item) {
            entity.flags ^= 0x80;
        }
    }
    for (index, &id) in clients.iter().enumerate() {
        let ps = server.player_state_mut(id).expect("client exists");
        ps.command_time = time;
        ps.origin_x += (noise.below(9) as f32) - 4.0;
        ps.velocity_x = (noise.below(640) as f32) - 320.0;
        ps.view_angle_y = ((frame + index as u32) % 360) as f32;
        if noise.below(30) == 0 {
            ps.ammo[5] -= 1;
        }
    }
}
