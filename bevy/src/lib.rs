//! # bevy_netq3
//!
//! Quake 3's snapshot-delta networking ([`netq3`]) as Bevy plugins: a
//! [`NetServerPlugin`] (feature `server`) and a [`NetClientPlugin`]
//! (feature `client`). The conventions are those of Bevy's netcode crates:
//!
//! - datagrams are received in `PreUpdate` ([`NetSet::Receive`]) and sent in
//!   `PostUpdate` ([`NetSet::Send`]); the game ticks in `FixedUpdate`;
//! - the session is a resource ([`NetServer`], [`NetClient`]) that holds
//!   netq3's sans-IO [`Server`](netq3::Server) / [`Client`](netq3::Client)
//!   and the driver that moves its datagrams ([`NetDriver`]: real UDP or the
//!   in-process link); its clock is Bevy's [`Time<Real>`](bevy_time::Real);
//! - on the server every client is an entity ([`RemoteClient`]); connects,
//!   disconnects with their reasons, commands and reliable messages are Bevy
//!   messages ([`ClientConnected`], [`CommandReceived`], ...);
//! - the server fills its master state each tick from the [`NetState`] of
//!   every entity with a [`NetEntity`] number, and each client's player
//!   state from the [`NetState`] on its [`RemoteClient`] entity;
//! - the client exposes the two newest snapshots ([`NetClient::newest`],
//!   [`NetClient::previous`]) and mirrors every replicated entity as an
//!   entity of its own, interpolated between them ([`NetState`] and
//!   [`NetTransform`]); run conditions such as [`client_connected`] gate the
//!   game's systems.
//!
//! A server and a client App, stepped by hand over the in-process link:
//!
//! ```
//! use std::time::Duration;
//! use bevy_app::{App, FixedUpdate};
//! use bevy_ecs::prelude::*;
//! use bevy_time::{TimePlugin, TimeUpdateStrategy};
//! use bevy_netq3::*;
//! use netq3::{net_struct, signed, unsigned, Interpolate, LocalHub, RenderPoint};
//!
//! net_struct! { struct Ball { x: i16 = signed(16), } }
//! net_struct! { struct Me { score: u16 = unsigned(16), } }
//! net_struct! { struct Kick { dx: i8 = signed(8), } }
//! impl Interpolate for Ball {
//!     fn interpolate(newest: &Self, _: Option<&Self>, _: &RenderPoint) -> Self { *newest }
//! }
//! struct Game;
//! impl NetGame for Game {
//!     type Entity = Ball;
//!     type Player = Me;
//!     type Command = Kick;
//!     fn translation(ball: &Ball) -> [f32; 3] { [ball.x as f32, 0.0, 0.0] }
//! }
//!
//! let hub = LocalHub::new();
//! let server = NetServer::<Game>::new(Default::default(), NetDriver::local(&hub, None)?)?;
//! let address = server.local_addr();
//! let mut client = NetClient::<Game>::new(netq3::ClientConfig::named("ada"), NetDriver::local(&hub, None)?);
//! client.connect(address)?;
//! let mut apps = [App::new(), App::new()];
//! apps[0].add_plugins((TimePlugin, NetServerPlugin::<Game>::default())).insert_resource(server);
//! apps[1].add_plugins((TimePlugin, NetClientPlugin::<Game>::default())).insert_resource(client);
//! for app in &mut apps {
//!     app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(10)));
//! }
//! apps[0].world_mut().spawn((NetEntity(100), NetState(Ball { x: 7 })));
//! for _ in 0..100 {
//!     apps.iter_mut().for_each(App::update);
//! }
//! let mut balls = apps[1].world_mut().query::<(&NetEntity, &NetTransform)>();
//! let (number, transform) = balls.single(apps[1].world())?;
//! assert_eq!((number.0, transform.translation), (100, [7.0, 0.0, 0.0]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bevy_ecs::prelude::*;
use netq3::{ConditionerConfig, Endpoint, EndpointConfig, Interpolate, LocalDriver, LocalHub};
use netq3::{NetFields, UdpDriver};

#[cfg(feature = "client")]
mod client;
#[cfg(feature = "server")]
mod server;

#[cfg(feature = "client")]
pub use client::*;
#[cfg(feature = "server")]
pub use server::*;

pub use netq3;

/// A game's three networked types, as [`net_struct!`](netq3::net_struct)
/// declares them, and how an entity is placed in space.
pub trait NetGame: Send + Sync + 'static {
    /// What every entity sends (Quake 3's `entityState_t`); drawn between
    /// snapshots by its [`Interpolate`].
    type Entity: NetFields + Interpolate + Send + Sync;
    /// What a client sees of its own player (Quake 3's `playerState_t`).
    type Player: NetFields + Send + Sync;
    /// One frame of a client's input (Quake 3's `usercmd_t`).
    type Command: NetFields + Send + Sync;
    /// Where an entity is, for [`NetTransform`].
    fn translation(entity: &Self::Entity) -> [f32; 3];
}

/// The system sets both plugins put their systems in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, SystemSet)]
pub enum NetSet {
    /// `PreUpdate`: datagrams are received, the session handles them and
    /// its events become Bevy messages.
    Receive,
    /// `PreUpdate`, after [`NetSet::Receive`]: the client mirrors and
    /// interpolates the replicated entities.
    Interpolate,
    /// `FixedUpdate`: the server fills its master state from the
    /// components and sends snapshots. Put the game's tick before it.
    Replicate,
    /// `PostUpdate`: what the session queued (commands, messages,
    /// snapshots) goes out.
    Send,
}

/// The entity number an entity is replicated under, `0..max entities` of
/// the server's configuration (Quake 3 numbers a client's player entity by
/// its slot: [`netq3::ClientKey::slot`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Component)]
pub struct NetEntity(pub u32);

/// A networked state: on the server, what an entity with a [`NetEntity`]
/// (or a [`RemoteClient`]'s player state) sends each tick; on the client,
/// the entity as interpolated for the current render time.
#[derive(Debug, Clone, Copy, PartialEq, Default, Component)]
pub struct NetState<T: Send + Sync + 'static>(pub T);

/// Where the client draws a replicated entity: [`NetGame::translation`] of
/// its interpolated [`NetState`]. A plain component rather than Bevy's
/// `Transform`, so that a headless build does not compile `bevy_transform`
/// and its math stack; a game with a `Transform` copies `translation` over.
#[derive(Debug, Clone, Copy, PartialEq, Default, Component)]
pub struct NetTransform {
    /// x, y, z.
    pub translation: [f32; 3],
}

/// The driver that moves a session's datagrams: a UDP socket or the
/// in-process link, either through an optional seeded link conditioner.
#[derive(Debug)]
pub enum NetDriver {
    /// A UDP socket.
    Udp(UdpDriver),
    /// The in-process link (tests, listen servers).
    Local(LocalDriver),
}

impl NetDriver {
    /// Binds a UDP socket at `addr` (its endpoint is configured by the
    /// session: [`NetServer::new`], [`NetClient::new`]).
    pub fn udp(addr: SocketAddr) -> io::Result<NetDriver> {
        Ok(NetDriver::Udp(UdpDriver::bind_udp(addr, placeholder())?))
    }

    /// Binds on `hub` at `addr` (or a fresh address).
    pub fn local(hub: &LocalHub, addr: Option<SocketAddr>) -> io::Result<NetDriver> {
        Ok(NetDriver::Local(LocalDriver::bind_local(
            hub,
            addr,
            placeholder(),
        )?))
    }

    /// Puts the seeded link conditioner on the send path (loss, latency,
    /// duplication, reordering; a perfect configuration removes it).
    pub fn with_conditioner(mut self, config: ConditionerConfig, seed: u64) -> NetDriver {
        match &mut self {
            NetDriver::Udp(d) => d.set_conditioner(config, seed),
            NetDriver::Local(d) => d.set_conditioner(config, seed),
        }
        self
    }

    /// The address peers see.
    pub fn local_addr(&self) -> SocketAddr {
        match self {
            NetDriver::Udp(d) => d.local_addr(),
            NetDriver::Local(d) => d.local_addr(),
        }
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        match self {
            NetDriver::Udp(d) => d.endpoint(),
            NetDriver::Local(d) => d.endpoint(),
        }
    }

    /// The endpoint, mutably.
    pub fn endpoint_mut(&mut self) -> &mut Endpoint {
        match self {
            NetDriver::Udp(d) => d.endpoint_mut(),
            NetDriver::Local(d) => d.endpoint_mut(),
        }
    }

    /// Receives, runs timers and sends what is due at `now`.
    pub fn pump(&mut self, now: Instant) -> usize {
        match self {
            NetDriver::Udp(d) => d.pump(now),
            NetDriver::Local(d) => d.pump(now),
        }
    }

    /// When the driver next has work (a timer or a conditioned datagram).
    pub fn next_wakeup(&self) -> Option<Instant> {
        match self {
            NetDriver::Udp(d) => d.next_wakeup(),
            NetDriver::Local(d) => d.next_wakeup(),
        }
    }

    /// Replaces the endpoint with one configured for a session, created at
    /// `now`.
    fn configure(&mut self, config: EndpointConfig, now: Instant) {
        *self.endpoint_mut() = Endpoint::new(config, now);
    }
}

/// The endpoint a driver is bound with before its session configures it.
fn placeholder() -> Endpoint {
    Endpoint::new(EndpointConfig::default(), Instant::now())
}

/// A session's clock: the [`Instant`] its endpoint was created at, advanced
/// by Bevy's real time (so a test stepping `Time` by hand drives it).
#[derive(Debug, Clone, Copy)]
struct SessionClock {
    origin: Instant,
}

impl SessionClock {
    fn start() -> SessionClock {
        SessionClock {
            origin: Instant::now(),
        }
    }

    fn now(&self, real_elapsed: Duration) -> Instant {
        self.origin + real_elapsed
    }
}
