//! The server plugin: clients as entities, their events as messages, the
//! master state filled from components each fixed tick.

use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard, PoisonError};

use bevy_app::{App, FixedUpdate, Plugin, PostUpdate, PreUpdate};
use bevy_ecs::prelude::*;
use bevy_time::{Fixed, Real, Time};
use netq3::{
    AllInScope, ClientKey, DisconnectReason, Server, ServerConfig, ServerEvent, ServerStats,
    SessionError,
};

use crate::{NetDriver, NetEntity, NetGame, NetSet, NetState, SessionClock};

/// The game's session server.
type Session<G> = Server<<G as NetGame>::Entity, <G as NetGame>::Player, <G as NetGame>::Command>;

/// The server session as a resource: netq3's [`Server`] and its driver.
#[derive(Resource)]
pub struct NetServer<G: NetGame> {
    /// In a mutex because a resource must be `Sync` and a server that
    /// records a demo holds its writer, which need only be `Send`. Systems
    /// reach it through `&mut` (no locking).
    server: Mutex<Session<G>>,
    driver: NetDriver,
    clock: SessionClock,
    clients: HashMap<ClientKey, Entity>,
    /// Entity numbers filled last tick (to remove the ones that are gone).
    filled: HashSet<u32>,
    ticks: u64,
    errors: u64,
}

impl<G: NetGame> NetServer<G> {
    /// A server with `config` on `driver` (whose endpoint it configures).
    pub fn new(config: ServerConfig, mut driver: NetDriver) -> Result<Self, SessionError> {
        let server = Server::new(config)?;
        let clock = SessionClock::start();
        driver.configure(server.endpoint_config(), clock.origin);
        Ok(NetServer {
            server: Mutex::new(server),
            driver,
            clock,
            clients: HashMap::new(),
            filled: HashSet::new(),
            ticks: 0,
            errors: 0,
        })
    }

    /// The address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.driver.local_addr()
    }

    /// The session (its master state, clients, statistics...).
    pub fn server(&self) -> MutexGuard<'_, Session<G>> {
        self.server.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session, mutably (to record a demo, change the map...); use
    /// [`NetServer::session_and_endpoint`] for calls that take the endpoint.
    pub fn server_mut(&mut self) -> &mut Session<G> {
        self.server
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The session and its driver's endpoint, for the session calls that
    /// take both.
    pub fn session_and_endpoint(&mut self) -> (&mut Session<G>, &mut netq3::Endpoint) {
        (
            self.server
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner),
            self.driver.endpoint_mut(),
        )
    }

    /// The driver (its endpoint, next wakeup...).
    pub fn driver(&self) -> &NetDriver {
        &self.driver
    }

    /// The session's counters.
    pub fn stats(&self) -> ServerStats {
        *self.server().stats()
    }

    /// Fixed ticks run (snapshots built).
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// Session errors the systems met (each also sent as a [`ServerError`]).
    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// The entity that stands for `client`, while it is connected.
    pub fn client_entity(&self, client: ClientKey) -> Option<Entity> {
        self.clients.get(&client).copied()
    }

    /// Sends a reliable message to one client: delivered once, in order.
    pub fn send_reliable(&mut self, client: ClientKey, data: &[u8]) -> Result<(), SessionError> {
        let (server, endpoint) = self.session_and_endpoint();
        server.send_reliable(endpoint, client, data)
    }

    /// Sends a reliable message to every client in the game.
    pub fn broadcast(&mut self, data: &[u8]) -> Result<(), SessionError> {
        let (server, endpoint) = self.session_and_endpoint();
        server.broadcast(endpoint, data)
    }

    /// Disconnects `client` ([`DisconnectReason::Kicked`]).
    pub fn kick(&mut self, client: ClientKey) -> Result<(), SessionError> {
        let (server, endpoint) = self.session_and_endpoint();
        server.kick(endpoint, client)
    }

    /// Tells every client the server is going away (`restarting`: they
    /// reconnect on their own); keep updating the App briefly so the notices
    /// go out.
    pub fn shutdown(&mut self, restarting: bool) {
        let (server, endpoint) = self.session_and_endpoint();
        server.shutdown(endpoint, restarting);
    }
}

/// A connected client, on the entity that stands for it. Put the client's
/// player state on it as a [`NetState`] of the game's player type.
#[derive(Debug, Clone, PartialEq, Eq, Component)]
pub struct RemoteClient {
    /// Its key.
    pub key: ClientKey,
    /// Its name (clipped to 32 bytes; sanitize it for display).
    pub name: String,
    /// Whether it holds the gamestate and gets snapshots.
    pub entered: bool,
}

/// A client connected; its entity was spawned.
#[derive(Debug, Clone, PartialEq, Eq, Message)]
pub struct ClientConnected {
    /// The client.
    pub client: ClientKey,
    /// Its entity.
    pub entity: Entity,
    /// Its name.
    pub name: String,
}

/// A client holds the gamestate: spawn its player now (Quake 3's
/// `ClientBegin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Message)]
pub struct ClientEntered {
    /// The client.
    pub client: ClientKey,
    /// Its entity.
    pub entity: Entity,
}

/// A client is gone; its entity was despawned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Message)]
pub struct ClientDisconnected {
    /// The client.
    pub client: ClientKey,
    /// The entity that stood for it (despawned).
    pub entity: Entity,
    /// Why.
    pub reason: DisconnectReason,
}

/// A client's next command: in order, exactly once.
#[derive(Debug, Clone, PartialEq, Message)]
pub struct CommandReceived<C: Send + Sync + 'static> {
    /// The client.
    pub client: ClientKey,
    /// Its entity.
    pub entity: Entity,
    /// Its number (consecutive from 1 within a session).
    pub number: u32,
    /// The command.
    pub command: C,
}

/// A reliable message from a client.
#[derive(Debug, Clone, PartialEq, Eq, Message)]
pub struct MessageFromClient {
    /// The client.
    pub client: ClientKey,
    /// Its entity.
    pub entity: Entity,
    /// The bytes it sent.
    pub data: Vec<u8>,
}

/// A session call of the server's systems failed.
#[derive(Debug, Clone, PartialEq, Eq, Message)]
pub struct ServerError(pub String);

/// The server plugin. Insert a [`NetServer`] resource (the plugin's systems
/// do nothing without one); `TimePlugin` must be there too.
pub struct NetServerPlugin<G>(PhantomData<fn() -> G>);

impl<G> Default for NetServerPlugin<G> {
    fn default() -> Self {
        NetServerPlugin(PhantomData)
    }
}

impl<G: NetGame> Plugin for NetServerPlugin<G> {
    fn build(&self, app: &mut App) {
        app.add_message::<ClientConnected>()
            .add_message::<ClientEntered>()
            .add_message::<ClientDisconnected>()
            .add_message::<CommandReceived<G::Command>>()
            .add_message::<MessageFromClient>()
            .add_message::<ServerError>()
            .add_systems(PreUpdate, server_receive::<G>.in_set(NetSet::Receive))
            .add_systems(
                FixedUpdate,
                (fill_master_state::<G>, send_snapshots::<G>)
                    .chain()
                    .in_set(NetSet::Replicate),
            )
            .add_systems(PostUpdate, server_send::<G>.in_set(NetSet::Send));
    }
}

/// Run condition: whether the [`NetServer`] resource of game `G` exists.
pub fn server_running<G: NetGame>(server: Option<Res<NetServer<G>>>) -> bool {
    server.is_some()
}

#[allow(clippy::too_many_arguments)]
fn server_receive<G: NetGame>(
    mut commands: Commands,
    server: Option<ResMut<NetServer<G>>>,
    time: Res<Time<Real>>,
    mut connected: MessageWriter<ClientConnected>,
    mut entered: MessageWriter<ClientEntered>,
    mut disconnected: MessageWriter<ClientDisconnected>,
    mut received: MessageWriter<CommandReceived<G::Command>>,
    mut messages: MessageWriter<MessageFromClient>,
    mut errors: MessageWriter<ServerError>,
    mut clients: Query<&mut RemoteClient>,
) {
    let Some(mut net) = server else { return };
    let net = &mut *net;
    let now = net.clock.now(time.elapsed());
    net.driver.pump(now);
    let (server, endpoint) = net.session_and_endpoint();
    if let Err(e) = server.update(endpoint, now) {
        net.errors += 1;
        errors.write(ServerError(e.to_string()));
    }
    while let Some(event) = net.server_mut().poll_event() {
        match event {
            ServerEvent::Connected { client, name } => {
                let entity = commands
                    .spawn(RemoteClient {
                        key: client,
                        name: name.clone(),
                        entered: false,
                    })
                    .id();
                net.clients.insert(client, entity);
                connected.write(ClientConnected {
                    client,
                    entity,
                    name,
                });
            }
            ServerEvent::Entered { client, .. } => {
                let Some(&entity) = net.clients.get(&client) else {
                    continue;
                };
                if let Ok(mut remote) = clients.get_mut(entity) {
                    remote.entered = true;
                }
                entered.write(ClientEntered { client, entity });
            }
            ServerEvent::Command {
                client,
                number,
                command,
            } => {
                if let Some(&entity) = net.clients.get(&client) {
                    received.write(CommandReceived {
                        client,
                        entity,
                        number,
                        command,
                    });
                }
            }
            ServerEvent::Message { client, data } => {
                if let Some(&entity) = net.clients.get(&client) {
                    messages.write(MessageFromClient {
                        client,
                        entity,
                        data,
                    });
                }
            }
            ServerEvent::Disconnected { client, reason, .. } => {
                if let Some(entity) = net.clients.remove(&client) {
                    commands.entity(entity).despawn();
                    disconnected.write(ClientDisconnected {
                        client,
                        entity,
                        reason,
                    });
                }
            }
        }
    }
}

/// Quake 3's game module filling `entityState_t`s: every entity with a
/// number and a state goes into the master state; numbers no entity holds
/// any more leave it. Each entered client's player state is set from the
/// [`NetState`] on its entity.
fn fill_master_state<G: NetGame>(
    server: Option<ResMut<NetServer<G>>>,
    entities: Query<(&NetEntity, &NetState<G::Entity>)>,
    players: Query<(&RemoteClient, &NetState<G::Player>)>,
    mut errors: MessageWriter<ServerError>,
) {
    let Some(mut net) = server else { return };
    let net = &mut *net;
    let previous = std::mem::take(&mut net.filled);
    let mut filled = HashSet::with_capacity(previous.len());
    for (number, state) in &entities {
        let world = net.server_mut().world_mut();
        let changed = world.entity(number.0) != Some(&state.0);
        let result = if changed {
            world.set_entity(number.0, state.0.clone())
        } else {
            Ok(())
        };
        match result {
            Ok(()) => {
                filled.insert(number.0);
            }
            Err(e) => {
                net.errors += 1;
                errors.write(ServerError(format!("entity {}: {e}", number.0)));
            }
        }
    }
    for gone in previous.difference(&filled) {
        net.server_mut().world_mut().remove_entity(*gone);
    }
    net.filled = filled;
    for (client, state) in &players {
        if client.entered {
            if let Err(e) = net
                .server_mut()
                .set_player_state(client.key, state.0.clone())
            {
                net.errors += 1;
                errors.write(ServerError(e.to_string()));
            }
        }
    }
}

/// One snapshot per fixed tick to every client that is due one, stamped
/// with the fixed clock.
fn send_snapshots<G: NetGame>(
    server: Option<ResMut<NetServer<G>>>,
    time: Res<Time<Fixed>>,
    mut errors: MessageWriter<ServerError>,
) {
    let Some(mut net) = server else { return };
    let net = &mut *net;
    net.ticks += 1;
    let server_ms = time.elapsed().as_millis() as u32;
    let (server, endpoint) = net.session_and_endpoint();
    if let Err(e) = server.send_snapshots(endpoint, server_ms, &mut AllInScope) {
        net.errors += 1;
        errors.write(ServerError(e.to_string()));
    }
}

fn server_send<G: NetGame>(server: Option<ResMut<NetServer<G>>>, time: Res<Time<Real>>) {
    let Some(mut net) = server else { return };
    let now = net.clock.now(time.elapsed());
    net.driver.pump(now);
}
