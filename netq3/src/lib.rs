//! # netq3
//!
//! Quake 3's snapshot-delta networking, done again in Rust, as one
//! dependency: the server and client sessions a game embeds (feature
//! `session`, on by default) and the layers under them, with Quake 3's own
//! formats and tools, native demos and deterministic lockstep behind
//! features. A server and a client in one loop over the in-process link:
//!
//! ```
//! use std::time::{Duration, Instant};
//! use netq3::{net_struct, unsigned, AllInScope, Client, ClientConfig, Server, ServerConfig};
//! use netq3::{Endpoint, LocalDriver, LocalHub};
//!
//! net_struct! { struct Ball { x: u16 = unsigned(12), } }
//! net_struct! { struct Score { points: u16 = unsigned(10), } }
//! net_struct! { struct Push { dx: u8 = unsigned(4), } }
//!
//! let (hub, mut now) = (LocalHub::new(), Instant::now());
//! let mut server = Server::<Ball, Score, Push>::new(ServerConfig::default())?;
//! let mut client = Client::<Ball, Score, Push>::new(ClientConfig::named("ada"));
//! let mut sv = LocalDriver::bind_local(&hub, None, Endpoint::new(server.endpoint_config(), now))?;
//! let mut cl = LocalDriver::bind_local(&hub, None, Endpoint::new(client.endpoint_config(), now))?;
//! client.connect(cl.endpoint_mut(), now, sv.local_addr())?;
//! server.world_mut().set_entity(1, Ball { x: 7 })?;
//! for tick in 1..=20u32 {
//!     now += Duration::from_millis(50);
//!     sv.pump(now);
//!     server.update(sv.endpoint_mut(), now)?;
//!     while server.poll_event().is_some() {}
//!     server.send_snapshots(sv.endpoint_mut(), tick * 50, &mut AllInScope)?;
//!     cl.pump(now);
//!     client.update(cl.endpoint_mut(), now)?;
//!     while client.poll_event().is_some() {}
//! }
//! let ball = client.snapshots().newest().and_then(|s| s.entity(1)).ok_or("no ball")?;
//! assert_eq!(ball.x, 7);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! `examples/embed.rs` is the same loop with commands and a lossy link, and
//! `netq3-session`'s `examples/udp.rs` runs servers and clients over real
//! UDP on the real clock.
//!
//! ## Features
//!
//! | feature | on by default | what it adds |
//! | --- | --- | --- |
//! | `session` | yes | [`session`]: the server and client a game embeds; its names ([`Server`], [`Client`], [`net_struct!`], the drivers, the conditioner, [`Snapshot`]…) at the top level |
//! | `record` | no | recording a session's view as a native demo (`Server::record`); implies `session` and `demo` |
//! | `q3` | no | `q3`: Quake 3's tables, messages, `.dm_68` demos, the live client |
//! | `demo` | no | `demo`: native demos — record, replay, seek, verify, inspect |
//! | `lockstep` | no | `lockstep`: Age of Empires' deterministic lockstep over the same channel |
//!
//! The layers every feature builds on are always here: [`fields`] (field
//! tables, bit streams, codecs), [`netchan`] (the channel and its drivers)
//! and [`snapshot`] (the master state, per-client rings and deltas).
#![forbid(unsafe_code)]

pub use ::fields;
pub use ::netchan;
pub use ::snapshot;

#[cfg(feature = "demo")]
pub use ::demo;
#[cfg(feature = "lockstep")]
pub use ::lockstep;
#[cfg(feature = "q3")]
pub use ::q3;
#[cfg(feature = "session")]
pub use ::session;

// The field-table macro and its field kinds: every game declares its
// entity, player state and command with them, with or without sessions.
pub use fields::{
    array, boolean, net_struct, q3_float, quantized, signed, unsigned, Codec, NetFields,
};
// The drivers and the link conditioner.
pub use netchan::{
    ConditionerConfig, Endpoint, EndpointConfig, LocalDriver, LocalHub, RejectReason, UdpDriver,
};
// What a client reads and draws, and what a server scopes and rewinds.
pub use snapshot::{
    AllInScope, Clamp, Gamestate, Interpolate, RenderPoint, Rendered, Rewind, Scope, Snapshot,
    SnapshotReport, ViewStamp,
};

#[cfg(feature = "session")]
pub use session::{
    Client, ClientConfig, ClientEvent, ClientInfo, ClientKey, ClientState, ClientStats,
    DisconnectReason, Server, ServerClientStats, ServerConfig, ServerEvent, ServerStats,
    SessionError, Snapshots,
};
