//! What the report measures: sources of [`Step`]s.
//!
//! * [`q3demo::Q3Demo`] — a real Quake 3 demo: its decoded snapshots with
//!   the same delta bases the recorded stream used;
//! * [`stress::Stress`] — the synthetic stress case (1023 entities, a
//!   quarter of them changing every frame);
//! * [`arena::Arena`] — a real match of the `arena` crate (8 or 64 bots
//!   with projectiles, lossy link), every client's snapshot stream with the
//!   bases its acknowledgements gave.

pub mod arena;
pub mod q3demo;
pub mod stress;

use fields::Fields;
use serde::Serialize;

use crate::encode::Encoder;
use crate::state::{Step, Zeros};
use crate::Error;

/// A sequence of snapshot messages to measure.
pub trait Workload {
    /// The entity type.
    type Entity: Fields + PartialEq + Serialize;
    /// The player-state type.
    type Player: Fields + PartialEq + Serialize;

    /// Short name (the report's key).
    fn name(&self) -> String;

    /// One line on what it is.
    fn description(&self) -> String;

    /// The zeroed dummy values.
    fn zeros(&self) -> Zeros<Self::Entity, Self::Player>;

    /// Encodings only this workload can be measured with, after the
    /// standard `q3`, `native` and `naive`; with a note on each.
    fn extra_encoders(&self) -> Result<ExtraEncoders<Self::Entity, Self::Player>, Error> {
        Ok(ExtraEncoders::default())
    }

    /// Which of the size targets apply to it.
    fn targets(&self) -> TargetSet {
        TargetSet::None
    }

    /// Visits every step in order. A source that ends early (a truncated or
    /// corrupt demo) reports it in the returned [`RunEnd`] after visiting
    /// the steps before the fault.
    fn run(&mut self, visit: &mut Visit<'_, Self::Entity, Self::Player>) -> Result<RunEnd, Error>;
}

/// What [`Workload::run`] calls for every step.
pub type Visit<'v, E, P> = dyn FnMut(Step<'_, E, P>) -> Result<(), Error> + 'v;

/// Extra encoders of a workload, with notes for the report.
pub struct ExtraEncoders<E, P> {
    /// The encoders.
    pub encoders: Vec<Box<dyn Encoder<E, P>>>,
    /// What the report should say about them.
    pub notes: Vec<String>,
}

impl<E, P> Default for ExtraEncoders<E, P> {
    fn default() -> Self {
        ExtraEncoders {
            encoders: Vec::new(),
            notes: Vec::new(),
        }
    }
}

/// The targets that apply to a workload (they are reported, never
/// asserted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetSet {
    /// None (synthetic workloads).
    None,
    /// native mean bytes ≤ 0.6 × q3 (the arena).
    Size,
    /// That, and bits per changed entity ≤ 60 (real demos).
    SizeAndBits,
}

/// How a workload's run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunEnd {
    /// Every step was visited.
    Complete,
    /// The source failed after the steps visited; the reason.
    Stopped(String),
}
