//! The client plugin: the session's events as messages, the two newest
//! snapshots, and the replicated entities mirrored and interpolated.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::time::Duration;

use bevy_app::{App, Plugin, PostUpdate, PreUpdate};
use bevy_ecs::prelude::*;
use bevy_time::{Real, Time};
use netq3::{
    Client, ClientConfig, ClientEvent, ClientState, ClientStats, DisconnectReason, SessionError,
    Snapshot, SnapshotReport,
};

use crate::{NetDriver, NetEntity, NetGame, NetSet, NetState, NetTransform, SessionClock};

/// The render clock is reset rather than eased when it is this far off.
const CLOCK_RESET_MS: i64 = 500;

/// The client session as a resource: netq3's [`Client`] and its driver.
#[derive(Resource)]
pub struct NetClient<G: NetGame> {
    client: Client<G::Entity, G::Player, G::Command>,
    driver: NetDriver,
    clock: SessionClock,
    /// Bevy's real time at the last system run.
    elapsed: Duration,
    /// Server time minus local time, ms, eased towards each snapshot's.
    server_offset_ms: Option<i64>,
    render_ms: u32,
    interpolation_delay: Duration,
    rendered: Vec<(u32, G::Entity)>,
    mirrored: HashMap<u32, Entity>,
    stats: InterpolationStats,
    errors: u64,
}

/// What the interpolation did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InterpolationStats {
    /// Frames drawn from snapshots.
    pub frames: u64,
    /// Frames whose render time was past the newest snapshot (the next one
    /// was late or lost): entities held still.
    pub stalls: u64,
    /// Snapshots received that were deltas (not full updates).
    pub delta_snapshots: u64,
}

impl<G: NetGame> NetClient<G> {
    /// A client with `config` on `driver` (whose endpoint it configures).
    pub fn new(config: ClientConfig, mut driver: NetDriver) -> Self {
        let client = Client::new(config);
        let clock = SessionClock::start();
        driver.configure(client.endpoint_config(), clock.origin);
        NetClient {
            client,
            driver,
            clock,
            elapsed: Duration::ZERO,
            server_offset_ms: None,
            render_ms: 0,
            interpolation_delay: Duration::from_millis(50),
            rendered: Vec::new(),
            mirrored: HashMap::new(),
            stats: InterpolationStats::default(),
            errors: 0,
        }
    }

    /// Starts connecting to `server` (retried until the config's deadline).
    pub fn connect(&mut self, server: SocketAddr) -> Result<(), SessionError> {
        let now = self.clock.now(self.elapsed);
        self.server_offset_ms = None;
        self.render_ms = 0;
        self.client.connect(self.driver.endpoint_mut(), now, server)
    }

    /// Leaves ([`DisconnectReason::Left`]); a [`DisconnectedFromServer`]
    /// follows.
    pub fn disconnect(&mut self) {
        self.client.disconnect(self.driver.endpoint_mut());
    }

    /// Queues one frame of input; it goes out in `PostUpdate`. Returns its
    /// number. Errors while not [`ClientState::Active`] or with too many
    /// commands unacknowledged.
    pub fn command(&mut self, command: G::Command) -> Result<u32, SessionError> {
        self.client.command(command)
    }

    /// Sends a reliable message to the server: delivered once, in order.
    pub fn send_reliable(&mut self, data: &[u8]) -> Result<(), SessionError> {
        self.client.send_reliable(self.driver.endpoint_mut(), data)
    }

    /// The newest snapshot.
    pub fn newest(&self) -> Option<&Snapshot<G::Entity, G::Player>> {
        self.client.snapshots().newest()
    }

    /// The snapshot before the newest (what interpolation starts from).
    pub fn previous(&self) -> Option<&Snapshot<G::Entity, G::Player>> {
        self.client.snapshots().previous()
    }

    /// Where the session is.
    pub fn state(&self) -> ClientState {
        self.client.state()
    }

    /// This client's player slot, once the gamestate arrived.
    pub fn slot(&self) -> Option<usize> {
        self.client.slot()
    }

    /// The session (snapshots, configuration...).
    pub fn client(&self) -> &Client<G::Entity, G::Player, G::Command> {
        &self.client
    }

    /// The driver (its endpoint, next wakeup...).
    pub fn driver(&self) -> &NetDriver {
        &self.driver
    }

    /// The session's counters.
    pub fn stats(&self) -> &ClientStats {
        self.client.stats()
    }

    /// What the interpolation did.
    pub fn interpolation_stats(&self) -> InterpolationStats {
        self.stats
    }

    /// Session errors the systems met (each also sent as a [`ClientError`]).
    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// The server time entities are drawn at, ms.
    pub fn render_ms(&self) -> u32 {
        self.render_ms
    }

    /// How far behind the estimated server clock entities are drawn: one
    /// snapshot interval (the default, 50 ms, is 20 snapshots a second)
    /// keeps the render time between the two newest snapshots.
    pub fn set_interpolation_delay(&mut self, delay: Duration) {
        self.interpolation_delay = delay;
    }

    /// Eases the server clock estimate towards what a new snapshot says.
    fn observe(&mut self, server_ms: u32) {
        let target = server_ms as i64 - self.elapsed.as_millis() as i64;
        self.server_offset_ms = Some(match self.server_offset_ms {
            Some(offset) if (target - offset).abs() <= CLOCK_RESET_MS => {
                offset + (target - offset) / 8
            }
            _ => target,
        });
    }
}

/// The session is connected; a new session may follow (snapshots restart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Message)]
pub struct ConnectedToServer;

/// A gamestate arrived: snapshots follow; the game loads its map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Message)]
pub struct GamestateReceived {
    /// Its epoch.
    pub epoch: u8,
    /// This client's player slot.
    pub slot: usize,
}

/// A new newest snapshot ([`NetClient::newest`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Message)]
pub struct SnapshotReceived {
    /// What it was.
    pub report: SnapshotReport,
    /// Size of its message, bytes.
    pub bytes: usize,
}

/// A reliable message from the server.
#[derive(Debug, Clone, PartialEq, Eq, Message)]
pub struct MessageFromServer(pub Vec<u8>);

/// The session ended for a reason that warrants a new one; the client
/// reconnects on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Message)]
pub struct Reconnecting {
    /// Why the old session ended.
    pub reason: DisconnectReason,
}

/// The client is disconnected for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Message)]
pub struct DisconnectedFromServer {
    /// Why.
    pub reason: DisconnectReason,
}

/// A session call of the client's systems failed.
#[derive(Debug, Clone, PartialEq, Eq, Message)]
pub struct ClientError(pub String);

/// Where the client session is, for run conditions that do not name the
/// game ([`client_connected`]...). Kept by the client plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Resource)]
pub struct NetClientStatus {
    /// The session's state.
    pub state: ClientState,
    /// The player slot, once the gamestate arrived.
    pub slot: Option<usize>,
}

/// Run condition: the client holds a gamestate and snapshots and commands
/// flow ([`ClientState::Active`]).
pub fn client_connected(status: Option<Res<NetClientStatus>>) -> bool {
    status.is_some_and(|s| s.state == ClientState::Active)
}

/// Run condition: the client is connecting or loading the gamestate.
pub fn client_connecting(status: Option<Res<NetClientStatus>>) -> bool {
    status.is_some_and(|s| matches!(s.state, ClientState::Connecting | ClientState::Loading))
}

/// Run condition: the client has no session (never started, or over).
pub fn client_disconnected(status: Option<Res<NetClientStatus>>) -> bool {
    status.is_none_or(|s| matches!(s.state, ClientState::Idle | ClientState::Disconnected))
}

/// The client plugin. Insert a [`NetClient`] resource (the plugin's systems
/// do nothing without one); `TimePlugin` must be there too.
pub struct NetClientPlugin<G>(PhantomData<fn() -> G>);

impl<G> Default for NetClientPlugin<G> {
    fn default() -> Self {
        NetClientPlugin(PhantomData)
    }
}

impl<G: NetGame> Plugin for NetClientPlugin<G> {
    fn build(&self, app: &mut App) {
        app.add_message::<ConnectedToServer>()
            .add_message::<GamestateReceived>()
            .add_message::<SnapshotReceived>()
            .add_message::<MessageFromServer>()
            .add_message::<Reconnecting>()
            .add_message::<DisconnectedFromServer>()
            .add_message::<ClientError>()
            .insert_resource(NetClientStatus {
                state: ClientState::Idle,
                slot: None,
            })
            .configure_sets(PreUpdate, NetSet::Receive.before(NetSet::Interpolate))
            .add_systems(PreUpdate, client_receive::<G>.in_set(NetSet::Receive))
            .add_systems(
                PreUpdate,
                interpolate_entities::<G>.in_set(NetSet::Interpolate),
            )
            .add_systems(PostUpdate, client_send::<G>.in_set(NetSet::Send));
    }
}

/// The writers of the client's messages.
type ClientWriters<'w> = (
    MessageWriter<'w, ConnectedToServer>,
    MessageWriter<'w, GamestateReceived>,
    MessageWriter<'w, SnapshotReceived>,
    MessageWriter<'w, MessageFromServer>,
    MessageWriter<'w, Reconnecting>,
    MessageWriter<'w, DisconnectedFromServer>,
    MessageWriter<'w, ClientError>,
);

fn client_receive<G: NetGame>(
    client: Option<ResMut<NetClient<G>>>,
    mut status: ResMut<NetClientStatus>,
    time: Res<Time<Real>>,
    writers: ClientWriters,
) {
    let Some(mut net) = client else { return };
    let net = &mut *net;
    let (
        mut connected,
        mut gamestate,
        mut snapshot,
        mut message,
        mut reconnecting,
        mut gone,
        mut errors,
    ) = writers;
    net.elapsed = time.elapsed();
    let now = net.clock.now(net.elapsed);
    net.driver.pump(now);
    if let Err(e) = net.client.update(net.driver.endpoint_mut(), now) {
        net.errors += 1;
        errors.write(ClientError(e.to_string()));
    }
    while let Some(event) = net.client.poll_event() {
        match event {
            ClientEvent::Connected => {
                connected.write(ConnectedToServer);
            }
            ClientEvent::Gamestate { epoch, slot } => {
                net.server_offset_ms = None;
                gamestate.write(GamestateReceived { epoch, slot });
            }
            ClientEvent::Configstring { .. } => {}
            ClientEvent::Snapshot { report, bytes } => {
                if report.base.is_some() {
                    net.stats.delta_snapshots += 1;
                }
                if let Some(server_ms) = net.newest().map(|s| s.server_time()) {
                    net.observe(server_ms);
                }
                snapshot.write(SnapshotReceived { report, bytes });
            }
            ClientEvent::Message(data) => {
                message.write(MessageFromServer(data));
            }
            ClientEvent::Reconnecting { reason } => {
                reconnecting.write(Reconnecting { reason });
            }
            ClientEvent::Disconnected { reason } => {
                gone.write(DisconnectedFromServer { reason });
            }
        }
    }
    let new_status = NetClientStatus {
        state: net.client.state(),
        slot: net.client.slot(),
    };
    if *status != new_status {
        *status = new_status;
    }
}

/// Draws the newest snapshot at the render time (the estimated server
/// clock minus the interpolation delay) with the game's [`Interpolate`]
/// (netq3's own interpolation, which the server's lag compensation
/// reproduces), and mirrors every entity in it: spawned with its
/// [`NetEntity`] number when it enters, its [`NetState`] and
/// [`NetTransform`] updated each frame, despawned when it leaves.
///
/// [`Interpolate`]: netq3::Interpolate
fn interpolate_entities<G: NetGame>(
    mut commands: Commands,
    client: Option<ResMut<NetClient<G>>>,
    mut mirrored: Query<(&mut NetState<G::Entity>, &mut NetTransform)>,
) {
    let Some(mut net) = client else { return };
    let net = &mut *net;
    let mut rendered = std::mem::take(&mut net.rendered);
    let drawn = match net.server_offset_ms {
        Some(offset) if net.client.state() == ClientState::Active => {
            let at = net.elapsed.as_millis() as i64 + offset
                - net.interpolation_delay.as_millis() as i64;
            // Never backwards: the clock estimate eases both ways.
            net.render_ms = net.render_ms.max(at.clamp(0, u32::MAX as i64) as u32);
            net.client.render(net.render_ms, &mut rendered)
        }
        _ => {
            rendered.clear();
            None
        }
    };
    if let Some(drawn) = drawn {
        net.stats.frames += 1;
        if drawn.point.stalled {
            net.stats.stalls += 1;
        }
    }
    let mut seen = HashMap::with_capacity(rendered.len());
    for (number, state) in &rendered {
        let transform = NetTransform {
            translation: G::translation(state),
        };
        let existing = net.mirrored.get(number).copied();
        let entity = match existing.map(|e| (e, mirrored.get_mut(e))) {
            Some((entity, Ok((mut net_state, mut net_transform)))) => {
                if net_state.0 != *state {
                    net_state.0 = state.clone();
                }
                if *net_transform != transform {
                    *net_transform = transform;
                }
                entity
            }
            // New, or despawned by the game: (re)spawned.
            _ => commands
                .spawn((NetEntity(*number), NetState(state.clone()), transform))
                .id(),
        };
        seen.insert(*number, entity);
    }
    for (number, entity) in net.mirrored.drain() {
        if !seen.contains_key(&number) {
            if let Ok(mut e) = commands.get_entity(entity) {
                e.despawn();
            }
        }
    }
    net.mirrored = seen;
    net.rendered = rendered;
}

fn client_send<G: NetGame>(
    client: Option<ResMut<NetClient<G>>>,
    time: Res<Time<Real>>,
    mut errors: MessageWriter<ClientError>,
) {
    let Some(mut net) = client else { return };
    let net = &mut *net;
    net.elapsed = time.elapsed();
    let now = net.clock.now(net.elapsed);
    if let Err(e) = net.client.update(net.driver.endpoint_mut(), now) {
        net.errors += 1;
        errors.write(ClientError(e.to_string()));
    }
    net.driver.pump(now);
}
