//! # netq3-snapshot
//!
//! Snapshots of a game world, sent to each client as deltas against the
//! newest snapshot that client acknowledged — Quake 3's scheme, sans-IO.
//! A server, a client, and the bytes between them:
//!
//! ```
//! use fields::{net_struct, q3_float, unsigned, Codec};
//! use netq3_snapshot::{AllInScope, BuildOutcome, Client, ClientSettings, Received, Server, ServerConfig};
//!
//! net_struct! {
//!     /// An entity.
//!     pub struct Thing {
//!         pub x: f32 = q3_float(),
//!         pub model: u16 = unsigned(9),
//!     }
//! }
//! net_struct! {
//!     /// A player state.
//!     pub struct Me {
//!         pub health: u16 = unsigned(10),
//!     }
//! }
//!
//! let mut server: Server<Thing, Me> = Server::new(ServerConfig::for_codec(Codec::Q3))?;
//! let id = server.add_client(ClientSettings::unlimited())?;
//! let mut client: Client<Thing, Me> = Client::new();
//!
//! // Once, on the reliable channel.
//! let mut bytes = Vec::new();
//! server.write_gamestate(&mut bytes)?;
//! client.read_message(&bytes)?;
//!
//! server.set_entity(7, Thing { x: 64.0, model: 3 })?;
//! for (time, x) in [(0, 64.0), (50, 70.0)] {
//!     server.entity_mut(7).unwrap().x = x;
//!     server.commit_frame(time)?;
//!     let BuildOutcome::Built(info) = server.build_snapshot(id, &mut AllInScope, &mut bytes)? else {
//!         unreachable!("unlimited clients get every frame");
//!     };
//!     // ... bytes cross the network, numbered by the transport ...
//!     let Received::Snapshot(report) = client.read_snapshot(info.sequence, &bytes)? else {
//!         unreachable!()
//!     };
//!     assert_eq!(report.sequence, info.sequence);
//!     // The client's ack comes back (or the netchan reports delivery).
//!     server.acknowledge(id, client.ack().unwrap())?;
//! }
//! let newest = client.newest().unwrap();
//! assert_eq!(newest.entity(7).unwrap().x, 70.0);
//! assert_eq!(newest.base(), Some(0)); // the second snapshot was a delta
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The [`Server`] keeps the master state (entities by number, a player
//! state per client), stores each frame's entity states once in a shared
//! history, and keeps a ring of the last [`RING_SIZE`](config::RING_SIZE)
//! snapshots it sent each client. Every snapshot is built the same way: the
//! client's scoped view of the newest frame, encoded as a delta from the
//! newest acknowledged snapshot still in the ring — or from the zeroed dummy
//! when there is none, which makes it a full update. Lost snapshots need no
//! retransmission: the next delta is against the last *acknowledged* one, so
//! it carries every change the client missed.
//!
//! The [`Client`] decodes each snapshot against the base it names, keeps
//! its own ring, and reports the sequence to acknowledge. It works with any
//! [`fields::Fields`] types, including
//! [`DynamicState`](fields::dynamic::DynamicState), so a recording can be
//! decoded from its schema alone.
//!
//! Bytes travel over whatever the game uses: snapshots are the netchan's
//! most-recent-state payload; the gamestate and configstring messages go on
//! its reliable ordered channel. All encoding goes through
//! [`fields::Codec`] (Quake 3's bit-exact format or the native one).
//!
//! ## With the netchan
//!
//! * On connect, send [`Server::write_gamestate`]'s bytes on the reliable
//!   ordered channel; after a [`Server::set_configstring`], send
//!   [`Server::write_configstring`]'s bytes the same way.
//! * Each frame, [`Server::commit_frame`], then for each client
//!   [`Server::set_next_sequence`] with the id the netchan will give the
//!   payload, [`Server::build_snapshot`] (or [`Server::build_snapshots`]), and
//!   submit the bytes as the most-recent-state payload. A snapshot's
//!   sequence is not in its bytes: the transport carries it (see
//!   [`framing`] for how a receiver tells a stale or baseless snapshot
//!   before it looks anything up).
//! * When the netchan reports that payload delivered, call
//!   [`Server::acknowledge`] with its sequence; a dropped one needs nothing
//!   (the next delta covers it). Acks the client reports itself
//!   ([`Client::ack`], e.g. in its command packets) go to the same call.
//! * On the client, hand every reliable message to [`Client::read_message`]
//!   and every snapshot, with the payload's id as its sequence, to
//!   [`Client::read_snapshot`]. If [`Client::needs_full_update`] turns true,
//!   tell the server, which calls [`Server::request_full_update`].
//!
//! ## Recording and playing back
//!
//! [`Server::add_recorder`] adds a stream that shows another client's view
//! (its scope and player state) and acknowledges itself, since a file loses
//! nothing. [`Server::request_full_update`] on it writes a keyframe. A
//! recording is then just the gamestate, configstring and snapshot messages
//! in order, each snapshot with its sequence; a [`Client`] — typed, or over
//! [`DynamicState`](fields::dynamic::DynamicState) from the recorded schema —
//! replays it with [`Client::read_message`] and [`Client::read_snapshot`]. To seek, feed the gamestate (and
//! configstrings) and then everything from a keyframe on to a fresh client,
//! or [`Client::clear_snapshots`] a clone. [`Client::set_trace`] reports
//! which fields each message carried, for dumps, and
//! [`Client::set_symbol_trace`] every symbol a native message coded with
//! the models that coded it, for entropy reports. [`encode_snapshot`] and
//! [`Client::encode_held`] write a snapshot held as states (a keyframe for a
//! client-side recording, the start of a cut) as a message.
//!
//! ## Interpolation and lag compensation
//!
//! Clients draw the others between their two newest snapshots
//! ([`Client::render`], with the game's [`Interpolate`]); the [`ViewStamp`]
//! it returns says what was drawn, in a few bytes a game sends with each
//! command. [`Server::rewind`] turns a stamp back into exactly what that
//! client drew — from the shared history, bounded by a maximum rewind and
//! checked against what was really sent — so a shot can be judged against
//! what the shooter saw ([`rewind`]).
//!
//! ## Design notes
//!
//! * Ring slots are indexed by a per-client snapshot *sequence* (Quake 3's
//!   message number), not the server frame: a client on a lower snapshot
//!   rate than the frame rate still has 32 usable bases.
//! * The dummy baseline is every field word zero (Quake 3's `memset`), not
//!   the Rust `Default`, so typed and schema-driven ends agree on it.
//! * History is shared ([`MemoryReport`]): each changed entity state is
//!   stored once per frame and clients refer to it, and a per-frame cache
//!   lets clients that need the same delta share one encoding.
//! * Sequence numbers and frame numbers are `u32`; at 60 snapshots a second
//!   they last over two years of one session.
#![forbid(unsafe_code)]

pub mod adapt;
mod bitset;
mod build;
pub mod checksum;
pub mod client;
pub mod config;
pub mod encode;
mod entity_cache;
pub mod error;
mod frame_store;
pub mod framing;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod gamestate;
pub mod history;
pub mod interp;
mod list_cache;
pub mod message;
pub mod models;
mod rate;
pub mod received;
pub mod replay;
pub mod rewind;
pub mod scope;
pub mod server;
pub mod stats;
pub mod trace;
mod writer;

pub use build::{BuildOutcome, SnapshotInfo};
pub use client::{Client, Received, SnapshotReport, SyncCheck};
pub use config::{ClientSettings, ServerConfig};
pub use encode::{encode_snapshot, EncodeError, EncodeOptions, EncodeSetup, SnapshotState};
pub use error::{ClientError, ConfigError, ServerError};
pub use framing::{AreaMask, Compact, CompactRange, Delivery, Framing, MessageCoding};
pub use gamestate::Gamestate;
pub use interp::{Interpolate, RenderPoint, Rendered, ViewStamp};
pub use models::Models;
pub use received::Snapshot;
pub use rewind::{Clamp, Rewind, RewindError};
pub use scope::{AllInScope, Scope};
pub use server::{ClientId, MemoryReport, SentSnapshot, Server};
pub use stats::{ClientStats, SendStats};
pub use trace::{
    CodedSymbol, EntityTrace, FieldMask, SnapshotTrace, SymbolOf, SymbolTrace, UpdateKind,
};
