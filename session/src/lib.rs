//! # netq3-session
//!
//! The layer a game embeds: a server and a client that join `netchan`
//! (the channel) and `snapshot` (the world's deltas) the way Quake 3's
//! `sv_client.c` / `cl_main.c` join its netchan and snapshots — so that a
//! game only says what its world is, what its players press, and what it
//! wants to tell them. A server and a client in one loop, over the
//! in-process link on simulated time:
//!
//! ```
//! use std::time::{Duration, Instant};
//! use fields::{net_struct, unsigned};
//! use netchan::{Endpoint, LocalDriver, LocalHub};
//! use netq3_session::{AllInScope, Client, ClientConfig, Server, ServerConfig, ServerEvent};
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
//! server.world_mut().set_entity(1, Ball::default())?;
//! let mut pushes = 0;
//! for tick in 1..=40u32 {
//!     now += Duration::from_millis(50);
//!     sv.pump(now);
//!     server.update(sv.endpoint_mut(), now)?;
//!     while let Some(event) = server.poll_event() {
//!         if let ServerEvent::Command { command, .. } = event {
//!             server.world_mut().entity_mut(1).ok_or("no ball")?.x += command.dx as u16;
//!         }
//!     }
//!     server.send_snapshots(sv.endpoint_mut(), tick * 50, &mut AllInScope)?;
//!     cl.pump(now);
//!     client.update(cl.endpoint_mut(), now)?;
//!     while client.poll_event().is_some() {} // connected, gamestate, snapshots
//!     if client.command(Push { dx: 1 }).is_ok() {
//!         pushes += 1; // accepted once the gamestate is in
//!     }
//! }
//! let seen = client.snapshots().newest().and_then(|s| s.entity(1)).ok_or("no ball")?.x;
//! assert!(pushes > 20 && seen > 0 && seen <= pushes);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Generic over the game's three [`net_struct!`] types: the entity `E`, the
//! player state `P` and the command `C` (a frame of input, Quake 3's
//! `usercmd_t`). Sans-IO like netchan: every call takes the current time
//! and the netchan [`Endpoint`] (from any driver — UDP,
//! the in-process link, a test harness), and nothing here sleeps or reads
//! a clock.
//!
//! ## What it does
//!
//! **Server** ([`Server`]):
//!
//! * accepts clients up to `max_clients` player slots; netchan's handshake
//!   rejects a client built with other tables, codec or models (the
//!   [`schema_fingerprint`]) and the client gets a readable
//!   [`DisconnectReason`];
//! * sends each client the gamestate after its hello, and once the client
//!   has it ([`ServerEvent::Entered`]), one snapshot stream — deltas
//!   against the newest snapshot netchan reported delivered (the mapping
//!   from netchan's state ids to snapshot sequences lives here), full
//!   updates when the client asks;
//! * delivers the client's commands to the game in order, each exactly once
//!   ([`ServerEvent::Command`]);
//! * lag compensation ([`Server::rewind`]): every entity as a client drew
//!   it when it made a command — the command carries which snapshots it
//!   drew between and its render time ([`ViewStamp`]) — interpolated exactly
//!   as the client did from the shared frame history, bounded by
//!   [`ServerConfig::max_rewind_ms`] and checked against what was sent;
//! * sends reliable game commands (chat, events) and configstring changes,
//!   with a bounded queue per client: overflow disconnects that client with
//!   [`DisconnectReason::ReliableOverflow`] instead of growing;
//! * changes map or restarts ([`Server::change_map`]): a new gamestate with a
//!   new *epoch* to everyone, every stream restarted from a full update, and
//!   no snapshot of the old map ever applied on the new one;
//! * times clients out, kicks them, shuts down telling everyone why (or
//!   that it restarts), records a spectator's or a client's view through
//!   `demo`'s recorder (feature `record`), and counts everything per client.
//!
//! **Client** ([`Client`]):
//!
//! * connects, retrying the handshake until a deadline (30% loss each way
//!   only makes it take longer), sends its hello, takes the gamestate and
//!   the snapshot stream (two newest snapshots for interpolation);
//! * sends commands Quake 3's way ([`wire::CommandPacket`]): at most
//!   `max_packets` packets a second whatever the frame rate, several
//!   commands per packet, each delta-coded against the previous one, every
//!   command repeated until a packet holding it is reported delivered — so
//!   a lost datagram loses no command, and the upstream stays small; draws
//!   the others between its two newest snapshots with the game's
//!   [`Interpolate`] ([`Client::render`]), and stamps every command with
//!   what it drew;
//! * surfaces why it was disconnected, and reconnects on its own when the
//!   server restarts or times out (a new session, a full resync).
//!
//! ## A loop
//!
//! `examples/udp.rs` runs a server and clients in threads over real UDP
//! sockets and the real clock, through the link conditioner, each loop
//! sleeping until its next frame or its endpoint's next deadline, whichever
//! comes first:
//!
//! ```sh
//! cargo run -p netq3-session --example udp
//! ```
//!
//! (The `netq3` facade's `examples/embed.rs` is the shortest complete
//! program: a server and a client in one loop over the in-process link.)
//!
//! Per frame the server pumps its driver, calls [`Server::update`] and
//! drains [`Server::poll_event`] (connects, commands, messages,
//! disconnects), simulates, sets entities through [`Server::world_mut`]
//! and each player's state with [`Server::set_player_state`], then calls
//! [`Server::send_snapshots`]. The client pumps its driver, calls
//! [`Client::update`], drains [`Client::poll_event`], reads
//! [`Client::snapshots`], and queues its input with [`Client::command`].
//!
//! ## Wire
//!
//! See [`wire`]: reliable session messages on netchan's guaranteed-ordered
//! class, snapshots (prefixed with their gamestate epoch) and command
//! packets as each direction's most-recent-state payload.
#![forbid(unsafe_code)]

pub mod client;
pub mod config;
pub mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod reason;
pub mod server;
pub mod stats;
pub mod wire;

pub use client::{Client, ClientEvent, ClientState};
pub use config::{
    client_settings, schema_fingerprint, schema_fingerprint_with, ClientConfig, ServerConfig,
};
pub use error::SessionError;
pub use reason::DisconnectReason;
pub use server::{ClientInfo, ClientKey, Server, ServerEvent};
#[cfg(feature = "record")]
pub use server::{RecordView, RecordingStats};
pub use snapshot::Models;
pub use snapshot::{
    AllInScope, Clamp, Compact, CompactRange, Framing, Interpolate, RenderPoint, Rendered, Rewind,
    Scope, ViewStamp,
};
pub use stats::{ClientStats, ServerClientStats, ServerStats};

// What a game touches in the layers below, so that it needs this one
// dependency (or the `netq3` facade): the layers themselves, for anything
// further, and the names every game uses.
pub use ::fields;
pub use ::netchan;
pub use ::snapshot;
pub use fields::{
    array, boolean, net_struct, q3_float, quantized, signed, unsigned, Codec, NetFields,
};
pub use netchan::{
    ConditionerConfig, Endpoint, EndpointConfig, LocalDriver, LocalHub, RejectReason, UdpDriver,
};
pub use snapshot::{Gamestate, Snapshot, SnapshotReport};
/// The snapshots a client holds ([`Client::snapshots`]): the gamestate and
/// the newest snapshots, the two newest for interpolation.
pub type Snapshots<E, P> = snapshot::Client<E, P>;
