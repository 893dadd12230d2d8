//! # snapshot
//!
//! Snapshots of a game world, sent to each client as deltas against the
//! newest snapshot that client acknowledged — Quake 3's scheme, sans-IO.
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
//! ```
//! use fields::{net_struct, q3_float, unsigned, Codec};
//! use snapshot::{AllInScope, BuildOutcome, Client, ClientSettings, Received, Server, ServerConfig};
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
//!     // ... bytes cross the network ...
//!     let Received::Snapshot(report) = client.read_message(&bytes)? else { unreachable!() };
//!     assert_eq!(report.sequence, info.sequence);
//!     // The client's ack comes back (or the netchan reports delivery).
//!     server.acknowledge(id, client.ack().unwrap())?;
//! }
//! let newest = client.newest().unwrap();
//! assert_eq!(newest.entity(7).unwrap().x, 70.0);
//! assert_eq!(newest.base(), Some(0)); // the second snapshot was a delta
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

mod bitset;
mod build;
pub mod checksum;
pub mod client;
pub mod config;
mod entity_cache;
pub mod error;
mod frame_store;
pub mod gamestate;
pub mod message;
mod rate;
pub mod received;
pub mod scope;
pub mod server;
pub mod stats;
pub mod trace;

pub use build::{BuildOutcome, SnapshotInfo};
pub use client::{Client, Received, SnapshotReport, SyncCheck};
pub use config::{ClientSettings, ServerConfig};
pub use error::{ClientError, ConfigError, ServerError};
pub use gamestate::Gamestate;
pub use received::Snapshot;
pub use scope::{AllInScope, Scope};
pub use server::{ClientId, MemoryReport, SentSnapshot, Server};
pub use stats::{ClientStats, SendStats};
pub use trace::{EntityTrace, FieldMask, SnapshotTrace, UpdateKind};
