//! # netq3-demo
//!
//! Recording, replay and inspection of snapshot streams in the native demo
//! format. The `demo` command-line tool (crate `demo-cli`, in `demo/cli`)
//! adds Quake 3 `.dm_68` files through the `q3` crate, conversion and plots;
//! a library user of this crate compiles none of that. Five seconds of a
//! game recorded from a server-side recorder stream, played back from the
//! file's schemas alone, and sought:
//!
//! ```
//! use fields::{net_struct, q3_float, unsigned, Codec};
//! use snapshot::{AllInScope, BuildOutcome, ClientSettings, Received, Server, ServerConfig};
//! use netq3_demo::{DemoHeader, DemoReader, Player, Recorder};
//!
//! net_struct! { struct Ship { x: f32 = q3_float(), } }
//! net_struct! { struct Pilot { score: u16 = unsigned(8), } }
//!
//! let mut server: Server<Ship, Pilot> = Server::new(ServerConfig::for_codec(Codec::Native))?;
//! let viewer = server.add_client(ClientSettings::unlimited())?;
//! let stream = server.add_recorder(viewer, ClientSettings::recorder())?;
//! let header = DemoHeader::for_types::<Ship, Pilot>(Codec::Native, 20, 20);
//! let mut recorder = Recorder::create(Vec::new(), header)?;
//! let mut bytes = Vec::new();
//! server.write_gamestate(&mut bytes)?;
//! recorder.record_gamestate(0, &bytes)?;
//! for frame in 0..100u32 {
//!     server.set_entity(1, Ship { x: frame as f32 * 8.0 })?;
//!     server.commit_frame(frame * 50)?;
//!     if frame % 40 == 0 {
//!         server.request_full_update(stream)?; // a keyframe to seek to
//!     }
//!     if let BuildOutcome::Built(info) = server.build_snapshot(stream, &mut AllInScope, &mut bytes)? {
//!         recorder.record_snapshot(frame * 50, info.sequence, &bytes, info.base.is_none())?;
//!     }
//! }
//! let file = recorder.finish()?;
//!
//! let mut player = Player::new(DemoReader::new(&file)?)?;
//! let mut snapshots = 0;
//! while let Some(played) = player.next_record() {
//!     snapshots += matches!(played?.received, Received::Snapshot(_)) as u32;
//! }
//! assert_eq!(snapshots, 100);
//! player.seek(2_500)?;
//! assert_eq!(player.client().newest().map(|s| s.server_time()), Some(2_500));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
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
pub mod output;
pub mod play;
pub mod reader;
pub mod rebase;
pub mod stats;
pub mod writer;

pub use error::DemoError;
pub use format::{DemoHeader, KeyframeEntry, MessageFraming, RecordKind};
pub use play::{Played, Player};
pub use reader::{DemoReader, Record, Records};
pub use rebase::{ClientRecorder, Rebaser};
pub use writer::Recorder;
