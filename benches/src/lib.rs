//! # benches
//!
//! What the library costs, measured side by side with Quake 3 on Quake 3's
//! own data: bytes per snapshot (the `delta-size` report), CPU (criterion
//! benchmarks under `benches/`) and memory (the `history-memory` binary).
//! See `benches/README.md` for how to reproduce every number.
//!
//! The pieces, bottom up:
//!
//! * [`state`] — a snapshot as the client holds it ([`State`]) and a step of
//!   a stream ([`Step`]: a snapshot and the base it deltas from), the same
//!   for every workload;
//! * [`engine`] — the snapshot engine as the report's encoder: every `q3`
//!   and `native` figure is a message a [`snapshot::Server`] wrote and a
//!   [`snapshot::Client`] read back;
//! * [`encode`] — the encodings the report compares ([`Encoder`]), with
//!   where each message's bits went ([`Breakdown`], from the engine
//!   reader's trace): `q3`, `native`, the `naive` postcard baseline, and
//!   through [`models`] the engine with other models than the types' own:
//!   in [`loo`] trained without the demo being measured, for the arena
//!   trained on another match;
//! * [`deltas`] — the deltas a message carries, without writing one: what
//!   model training and the adaptation benchmark's tallies count;
//! * [`bound`] — the entropy bound of the engine's native messages, from
//!   the symbols its reader traces;
//! * [`workload`] — what is measured: real Quake 3 demos, arena matches
//!   and the synthetic stress case;
//! * [`report`] — runs encoders over workloads and summarises;
//! * [`model_compare`] — snapshot deltas vs deterministic lockstep: bytes
//!   per second per client and input latency for 16 to 65,536 moving units;
//! * [`world`], [`frame`], [`netpair`], [`corpus`] — shared setup of the
//!   criterion benchmarks and the memory binary.
#![forbid(unsafe_code)]

pub mod bound;
pub mod corpus;
pub mod deltas;
pub mod encode;
pub mod engine;
pub mod frame;
pub mod loo;
pub mod model_compare;
pub mod models;
pub mod netpair;
pub mod report;
pub mod state;
pub mod stats;
pub mod workload;
pub mod world;

use std::path::PathBuf;

pub use encode::{Breakdown, Encoder, NaiveEncoder};
pub use state::{State, Step, Zeros};

/// Anything that can go wrong while measuring.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Encoding or decoding bits.
    #[error("bits: {0}")]
    Bits(#[from] fields::BitError),
    /// Serializing the naive baseline.
    #[error("postcard: {0}")]
    Postcard(#[from] postcard::Error),
    /// Reading a Quake 3 demo.
    #[error("{0}")]
    Demo(#[from] q3::Q3Error),
    /// Reading a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The snapshot server refused something.
    #[error("snapshot server: {0}")]
    Server(#[from] snapshot::ServerError),
    /// The arena match failed.
    #[error("arena: {0}")]
    Arena(String),
    /// A trained model could not be used.
    #[error("native model: {0}")]
    Model(String),
    /// The snapshot engine's reader refused or misread its writer's
    /// message.
    #[error("engine: {0}")]
    Engine(String),
}

/// Where the real Quake 3 demos are ([`q3::corpus::dir`]).
pub fn default_demo_dir() -> PathBuf {
    q3::corpus::dir()
}

/// The real demo every benchmark uses as its main workload: a full OSP duel.
pub const DUEL_DEMO: &str = q3::corpus::DUEL;

/// Every `.dm_68` file in `dir`, sorted by name.
pub fn demo_files(dir: &std::path::Path) -> Result<Vec<PathBuf>, Error> {
    q3::corpus::files_in(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })
}

/// Reads a whole file, naming it in the error.
pub fn read_file(path: &std::path::Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}
