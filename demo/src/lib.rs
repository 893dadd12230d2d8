//! # demo
//!
//! Recording, replay and inspection of snapshot streams in the native demo
//! format. The `demo` command-line tool (crate `demo-cli`, in `demo/cli`)
//! adds Quake 3 `.dm_68` files through the `q3` crate, conversion and plots;
//! a library user of this crate compiles none of that.
//!
//! * [`Recorder`] writes a native demo ([`format`](mod@format)) from the messages a
//!   `snapshot::Client` receives — server-side, from a recorder stream of
//!   `snapshot::Server::add_recorder`, or client-side through
//!   [`ClientRecorder`] — starting with a gamestate and a full snapshot.
//! * [`DemoReader`] reads one back, record by record, with its keyframe
//!   index; a truncated file yields every complete record, then the
//!   truncation; a damaged record is an error naming its offset.
//! * [`Player`] plays it through the same `snapshot::Client` as live play,
//!   over [`DynamicState`](fields::dynamic::DynamicState) values built from
//!   the file's schemas, verifies sync checksums and seeks by keyframe.
//! * [`lockstep`] records and replays deterministic-lockstep games (seed,
//!   setup, turns, sync checksums, state keyframes) in the same record
//!   framing: replay re-simulates and checks every checksum.
//! * [`cut`], [`stats`] and [`dump`] are the `demo` command-line tool's
//!   building blocks for native files.
#![forbid(unsafe_code)]

pub mod cut;
pub mod dump;
pub mod error;
pub mod format;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod lockstep;
pub mod play;
pub mod reader;
pub mod rebase;
pub mod stats;
pub mod writer;

pub use error::DemoError;
pub use format::{DemoHeader, KeyframeEntry, RecordKind};
pub use play::{Played, Player};
pub use reader::{DemoReader, Record, Records};
pub use rebase::{ClientRecorder, Rebaser};
pub use writer::Recorder;
