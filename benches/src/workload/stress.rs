//! The synthetic stress workload: a full entity range, a quarter of it
//! changing every frame.
//!
//! Quake 3's entity list numbers entities in 10 bits and uses 1023 as its
//! end marker, so the q3 codec carries numbers `0..=1022` only. To compare
//! every encoding on the same data, the stress case uses those 1023
//! numbers for all of them (1023 entities, not 1024), and 256 of them —
//! a quarter, rounded — change every frame.
//!
//! The client acknowledges every snapshot, so each is a delta from the one
//! before (the first is full). Frames are 50 ms apart (Quake 3's default
//! 20 Hz `sv_fps`).

use std::sync::Arc;

use fields::model::ModelTrainer;
use fields::{array, net_struct, q3_float, signed, unsigned, NetFields};
use serde::Serialize;

use super::{ExtraEncoders, RunEnd, Visit, Workload};
use crate::models::{build_model, engine_with_models, train_on};
use crate::state::{NoBaselines, State, Step, Zeros};
use crate::world::{integrate, short_angle, Rng, SimEntity, SimPlayer, World};
use crate::Error;

net_struct! {
    /// The stress workload's entity: position, velocity, view angles and a
    /// few small integers, like a typical shooter's moving entity.
    #[derive(Serialize)]
    pub struct StressEntity {
        /// Position.
        pub x: f32 = q3_float(),
        /// Position.
        pub y: f32 = q3_float(),
        /// Position.
        pub z: f32 = q3_float(),
        /// Velocity, units per second.
        pub vx: f32 = q3_float(),
        /// Velocity.
        pub vy: f32 = q3_float(),
        /// Velocity.
        pub vz: f32 = q3_float(),
        /// Heading, degrees.
        pub yaw: f32 = q3_float(),
        /// Pitch, degrees.
        pub pitch: f32 = q3_float(),
        /// Model index.
        pub model: u16 = unsigned(8),
        /// Health; negative when gibbed.
        pub health: i16 = signed(10),
        /// Animation (bit 7 toggles to restart it).
        pub anim: u8 = unsigned(8),
        /// Flags.
        pub flags: u16 = unsigned(12),
    }
}

net_struct! {
    /// The stress workload's player state.
    #[derive(Serialize)]
    pub struct StressPlayer {
        /// Time of the last command run, ms.
        pub command_time: i32 = unsigned(32),
        /// Position.
        pub x: f32 = q3_float(),
        /// Position.
        pub y: f32 = q3_float(),
        /// Position.
        pub z: f32 = q3_float(),
        /// Velocity.
        pub vx: f32 = q3_float(),
        /// Velocity.
        pub vy: f32 = q3_float(),
        /// View heading.
        pub yaw: f32 = q3_float(),
        /// View pitch.
        pub pitch: f32 = q3_float(),
        /// Health.
        pub health: i16 = signed(10),
        /// Weapon.
        pub weapon: u8 = unsigned(4),
        /// Ammunition per weapon.
        pub ammo: [i16; 8] = array(signed(10), 8),
    }
}

impl SimEntity for StressEntity {
    fn spawn(rng: &mut Rng, number: u32) -> Self {
        StressEntity {
            x: rng.whole(4000),
            y: rng.whole(4000),
            z: rng.whole(500),
            vx: rng.whole(320),
            vy: rng.whole(320),
            yaw: rng.angle(),
            model: (number % 64) as u16,
            health: 100,
            ..StressEntity::default()
        }
    }

    fn advance(&mut self, rng: &mut Rng, _time_ms: i32, dt_ms: i32) {
        self.x = integrate(self.x, self.vx, dt_ms);
        self.y = integrate(self.y, self.vy, dt_ms);
        self.z = integrate(self.z, self.vz, dt_ms);
        if rng.percent(30) {
            self.vx = rng.whole(320);
            self.vy = rng.whole(320);
            self.vz = rng.whole(100);
        }
        if rng.percent(50) {
            self.yaw = rng.angle();
            self.pitch = short_angle(rng.below(8192) as i32 - 4096);
        }
        if rng.percent(10) {
            self.anim = (self.anim ^ 0x80) | rng.below(20) as u8;
        }
        if rng.percent(5) {
            self.health = rng.below(300) as i16 - 50;
        }
    }
}

impl SimPlayer for StressPlayer {
    fn spawn(rng: &mut Rng, _client: u32) -> Self {
        StressPlayer {
            x: rng.whole(4000),
            y: rng.whole(4000),
            health: 100,
            weapon: 5,
            ammo: [0, 0, 0, 0, 0, 50, 0, 0],
            ..StressPlayer::default()
        }
    }

    fn advance(&mut self, rng: &mut Rng, time_ms: i32, dt_ms: i32) {
        self.command_time = time_ms;
        self.x = integrate(self.x, self.vx, dt_ms);
        self.y = integrate(self.y, self.vy, dt_ms);
        if rng.percent(40) {
            self.vx = rng.whole(320);
            self.vy = rng.whole(320);
        }
        self.yaw = rng.angle();
        if rng.percent(10) {
            self.ammo[5] = (self.ammo[5] - 1).max(0);
        }
    }
}

/// Entity numbers of the stress case: every number the q3 codec carries.
pub const STRESS_ENTITIES: u32 = 1023;
/// Entities changing per frame: a quarter of 1023, rounded.
pub const STRESS_CHANGING: usize = 256;
/// Milliseconds per frame (20 Hz).
pub const STRESS_FRAME_MS: i32 = 50;
/// The generator's seed.
pub const STRESS_SEED: u64 = 0x5eed_0001;
/// The seed of the run `native_trained`'s models learn from.
pub const STRESS_TRAINING_SEED: u64 = 0x5eed_0002;

/// The stress workload.
#[derive(Debug, Clone)]
pub struct Stress {
    frames: usize,
    seed: u64,
}

impl Stress {
    /// `frames` snapshots (the first full) of the seeded world.
    pub fn new(frames: usize) -> Self {
        Stress {
            frames,
            seed: STRESS_SEED,
        }
    }

    /// The same with another seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
}

impl Workload for Stress {
    type Entity = StressEntity;
    type Player = StressPlayer;

    fn name(&self) -> String {
        "stress-1023".to_owned()
    }

    fn description(&self) -> String {
        format!(
            "synthetic: {STRESS_ENTITIES} entities (numbers 0..=1022, the q3 limit), \
             {STRESS_CHANGING} changing per frame, {} ms frames, every snapshot acked, seed {:#x}",
            STRESS_FRAME_MS, self.seed
        )
    }

    fn zeros(&self) -> Zeros<StressEntity, StressPlayer> {
        Zeros::default()
    }

    /// `native_trained`: models (learned grids, no predictors) trained on
    /// a run with another seed.
    fn extra_encoders(&self) -> Result<ExtraEncoders<StressEntity, StressPlayer>, Error> {
        let table =
            |t: &fields::FieldTable| ModelTrainer::new(t.schema().fingerprint(), t.fields.len());
        let mut training = self.clone().with_seed(STRESS_TRAINING_SEED);
        let (entity, player) = train_on(
            &mut training,
            table(&StressEntity::TABLE),
            table(&StressPlayer::TABLE),
        )?;
        let encoder = engine_with_models(
            "native_trained",
            build_model(entity)?,
            &StressEntity::TABLE.schema(),
            build_model(player)?,
            &StressPlayer::TABLE.schema(),
        )?;
        Ok(ExtraEncoders {
            encoders: vec![Box::new(encoder)],
            notes: vec![format!(
                "native_trained: models trained on a run with seed {STRESS_TRAINING_SEED:#x}, not on this one"
            )],
        })
    }

    fn run(&mut self, visit: &mut Visit<'_, StressEntity, StressPlayer>) -> Result<RunEnd, Error> {
        let mut world: World<StressEntity, StressPlayer> = World::new(
            self.seed,
            STRESS_ENTITIES,
            1,
            STRESS_CHANGING,
            STRESS_FRAME_MS,
        );
        let mut base: Option<Arc<State<StressEntity, StressPlayer>>> = None;
        for _ in 0..self.frames {
            world.step();
            let snapshot = Arc::new(State {
                server_time: world.time_ms,
                flags: 0,
                areamask: Vec::new(),
                player: world.players[0],
                entities: world.entities.clone(),
            });
            visit(Step {
                snapshot: &snapshot,
                base: base.as_ref(),
                delta_num: u8::from(base.is_some()),
                frame_ms: STRESS_FRAME_MS as u32,
                baselines: &NoBaselines,
                reference: None,
                stream: 0,
            })?;
            base = Some(snapshot);
        }
        Ok(RunEnd::Complete)
    }
}
