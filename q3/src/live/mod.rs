//! A live Quake 3 client: connects to a real (ioquake3) server over
//! protocol 71 or 68, stays in the game, acknowledges every snapshot so the
//! server keeps sending deltas, and reports what it received.
//!
//! * [`LiveClient`] — the sans-IO core: it takes `now` and datagrams and
//!   returns datagrams and [`Event`]s;
//! * [`netchan`] — the framing: sequences, qport, challenge word,
//!   fragments, protocol 68's scrambling;
//! * [`oob`] — the connectionless handshake and server queries;
//! * [`pak`] and [`pure`] — `.pk3` checksums and the `cp` answer a pure
//!   server (`sv_pure 1`) requires;
//! * [`usercmd`] — usercmds and their keyed delta coding;
//! * [`Session`] — the figures of a session and its `.dm_68` recording;
//! * [`udp`] — the thin driver on a `std` UDP socket.
//!
//! ```no_run
//! use std::time::Duration;
//! use netq3_q3::live::{udp, LiveConfig, Session};
//!
//! let server = "127.0.0.1:27960".parse()?;
//! let config = LiveConfig::default();
//! let mut session = Session::new("127.0.0.1:27960", 71);
//! let client = udp::run(server, config, Duration::from_secs(20), None, &mut |client, event, now| {
//!     session.observe(client, event, now)
//! })?;
//! let summary = session.summary(&client);
//! println!("{} snapshots, {} deltas", summary.snapshots, summary.delta_snapshots);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod client;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod harness;
pub mod netchan;
pub mod oob;
pub mod pak;
pub mod pure;
mod session;
pub mod udp;
pub mod usercmd;

pub use client::{
    clc, ClientStats, End, Event, LiveClient, LiveConfig, Movement, Stage, CS_SERVERINFO,
    CS_SYSTEMINFO, MAX_PACKET_USERCMDS, MAX_RELIABLE_COMMANDS,
};
pub use error::{LiveError, NetchanError};
pub use netchan::Protocol;
pub use session::{Session, SnapshotMark, Summary};
