//! The client end: connect (retrying until a deadline), gamestate,
//! snapshot stream, Quake 3 style command packets, reliable commands,
//! disconnect reasons and automatic reconnects.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fields::NetFields;
use netchan::{
    ConnectError, ConnectOptions, ConnectionId, Endpoint, EndpointConfig, Event, StateId,
};
use snapshot::{Interpolate, Received, Rendered, SnapshotReport, SyncCheck, ViewStamp};

use crate::config::ClientConfig;
use crate::error::SessionError;
use crate::reason::{codes, DisconnectReason};
use crate::stats::ClientStats;
use crate::wire::{
    ClientMessage, CommandPacket, ServerMessage, SnapshotPayload, COMMAND_HISTORY,
    MAX_COMMAND_PACKET,
};

/// A command packet goes out again after this long without a delivery
/// report, even with no new command (a lost packet and an idle player).
const RESEND_AFTER: Duration = Duration::from_millis(250);

/// The wait before connecting again after a restarting server refused,
/// doubling with each refusal up to [`BACKOFF_MAX`]: a few small datagrams
/// a second at most, and a server back on the same address is found within
/// half a second.
const BACKOFF_FIRST: Duration = Duration::from_millis(100);
/// The longest wait between refused connect attempts.
const BACKOFF_MAX: Duration = Duration::from_millis(500);

/// Where a client is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientState {
    /// Not started.
    Idle,
    /// Handshake in progress (retrying until the deadline).
    Connecting,
    /// Connected, waiting for the gamestate.
    Loading,
    /// Has the gamestate: snapshots and commands flow.
    Active,
    /// Leaving (its disconnect is going out).
    Leaving,
    /// Over; see [`Client::disconnect_reason`].
    Disconnected,
}

/// What happened on the client, for the game.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientEvent {
    /// The handshake completed (a new session).
    Connected,
    /// A gamestate arrived (first, or a map change / restart): the game
    /// loads the map from the configstrings; snapshots restart with a full
    /// one, and no snapshot of the earlier gamestate is ever applied.
    Gamestate {
        /// Its epoch.
        epoch: u8,
        /// This client's player slot on the server ([`Client::slot`]).
        slot: usize,
    },
    /// A configstring changed.
    Configstring {
        /// Its index.
        index: usize,
    },
    /// A new newest snapshot ([`Client::snapshots`] has it).
    Snapshot {
        /// What it was.
        report: SnapshotReport,
        /// Size of its snapshot message, bytes.
        bytes: usize,
    },
    /// A reliable game command from the server.
    Message(Vec<u8>),
    /// The session ended for a reason that warrants a new one (the server
    /// restarted or timed out): the client reconnects on its own, with
    /// command numbers and snapshots starting over.
    Reconnecting {
        /// Why the old session ended.
        reason: DisconnectReason,
    },
    /// The client is disconnected for good: the server ended the session
    /// (kick, shutdown, refusal…), or the game did ([`Client::disconnect`],
    /// [`Client::abandon`], reason [`DisconnectReason::Left`]). Either way
    /// [`Client::snapshots`] holds nothing of the ended session any more.
    Disconnected {
        /// Why, in words a player can read (`Display`).
        reason: DisconnectReason,
    },
}

/// The client end of the session, generic over the game's entity `E`,
/// player state `P` and command `C` (all [`net_struct!`](crate::net_struct) types).
///
/// Sans-IO: every call that talks to the server takes the netchan
/// [`Endpoint`] (from any driver: `driver.endpoint_mut()`).
pub struct Client<E, P, C> {
    config: ClientConfig,
    snap: snapshot::Client<E, P>,
    state: ClientState,
    server: Option<SocketAddr>,
    conn: Option<ConnectionId>,
    epoch: Option<u8>,
    /// The player slot the newest gamestate named.
    slot: Option<usize>,
    full_requested: bool,
    deadline: Option<Instant>,
    retry_at: Option<Instant>,
    /// The wait after the next refusal by a restarting server.
    backoff: Duration,
    reason: Option<DisconnectReason>,
    /// Commands not yet known delivered, oldest first, numbered from
    /// `pending_first`, each with the view it was made from.
    pending: VecDeque<(C, Option<ViewStamp>)>,
    /// What the game drew last ([`Client::render`]): the view of the next
    /// commands.
    view: Option<ViewStamp>,
    pending_first: u32,
    /// Command `pending_first − 1`, known delivered: the base of the next
    /// packet's first command.
    acked_last: Option<C>,
    /// Commands queued since the last packet (or a packet was lost).
    dirty: bool,
    /// Command packets in flight and the newest command each carried.
    in_flight: VecDeque<(StateId, u32)>,
    next_packet_at: Option<Instant>,
    last_packet_at: Option<Instant>,
    events: VecDeque<ClientEvent>,
    /// The time of the latest call that passed one.
    now: Instant,
    stats: ClientStats,
    message: Vec<u8>,
    packet: Box<[u8; MAX_COMMAND_PACKET]>,
}

impl<E, P, C> std::fmt::Debug for Client<E, P, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("session::Client")
            .field("name", &self.config.name)
            .field("state", &self.state)
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

type Result<T> = std::result::Result<T, SessionError>;

/// A fresh snapshot client reading `config`'s framing and decoding with
/// its models, or with the types' own if they do not fit (then
/// [`Client::connect`] refuses to connect).
fn snapshot_client<E: NetFields, P: NetFields>(config: &ClientConfig) -> snapshot::Client<E, P> {
    let mut client = snapshot::Client::new();
    if client.set_models(config.models.clone()).is_err() {
        client = snapshot::Client::new();
    }
    client.set_framing(config.framing.clone());
    client
}

impl<E, P, C> Client<E, P, C>
where
    E: NetFields,
    P: NetFields,
    C: NetFields,
{
    /// A client that has not connected yet.
    pub fn new(config: ClientConfig) -> Self {
        Client {
            snap: snapshot_client(&config),
            config,
            state: ClientState::Idle,
            server: None,
            conn: None,
            epoch: None,
            slot: None,
            full_requested: false,
            deadline: None,
            retry_at: None,
            backoff: BACKOFF_FIRST,
            reason: None,
            pending: VecDeque::new(),
            view: None,
            pending_first: 1,
            acked_last: None,
            dirty: false,
            in_flight: VecDeque::new(),
            next_packet_at: None,
            last_packet_at: None,
            events: VecDeque::new(),
            now: Instant::now(),
            stats: ClientStats::default(),
            message: Vec::new(),
            packet: Box::new([0; MAX_COMMAND_PACKET]),
        }
    }

    /// The netchan endpoint configuration this client needs.
    pub fn endpoint_config(&self) -> EndpointConfig {
        self.config.endpoint::<E, P, C>()
    }

    /// The configuration.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Where the client is.
    pub fn state(&self) -> ClientState {
        self.state
    }

    /// The snapshots received (newest and previous for interpolation) and
    /// the gamestate.
    pub fn snapshots(&self) -> &crate::Snapshots<E, P> {
        &self.snap
    }

    /// The epoch of the gamestate held.
    pub fn epoch(&self) -> Option<u8> {
        self.epoch
    }

    /// This client's player slot on the server (the server's
    /// [`ClientKey::slot`](crate::ClientKey::slot) for it), from the
    /// gamestate; `None` before the first one. A game that numbers player
    /// entities by slot finds its own player's entity with it (to predict it,
    /// or not to draw it in first person). It may change after a reconnect.
    pub fn slot(&self) -> Option<usize> {
        self.slot
    }

    /// Why the client is disconnected (after [`ClientEvent::Disconnected`]),
    /// or why the last session ended (after a reconnect).
    pub fn disconnect_reason(&self) -> Option<DisconnectReason> {
        self.reason
    }

    /// Counters.
    pub fn stats(&self) -> &ClientStats {
        &self.stats
    }

    /// The netchan connection of the current session, if any.
    pub fn connection<'a>(&self, endpoint: &'a Endpoint) -> Option<&'a netchan::Connection> {
        endpoint.connection(self.conn?)
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }

    /// Commands queued and not yet known delivered.
    pub fn pending_commands(&self) -> usize {
        self.pending.len()
    }

    /// The number the next command gets.
    pub fn next_command_number(&self) -> u32 {
        self.pending_first + self.pending.len() as u32
    }

    /// Starts connecting to `server`; the handshake is retried (a fresh one
    /// each time netchan gives up) until `config.connect_deadline`.
    pub fn connect(
        &mut self,
        endpoint: &mut Endpoint,
        now: Instant,
        server: SocketAddr,
    ) -> Result<()> {
        // Models that do not fit the types are refused before anything
        // is sent (the snapshot client was built without them).
        self.config.models.check(&E::default(), &P::default())?;
        self.now = now;
        self.server = Some(server);
        self.deadline = self.config.connect_deadline.map(|d| now + d);
        self.reason = None;
        self.reset_session();
        self.start_connect(endpoint, now)
    }

    fn start_connect(&mut self, endpoint: &mut Endpoint, now: Instant) -> Result<()> {
        let Some(server) = self.server else {
            return Err(SessionError::NotConnected);
        };
        let options = ConnectOptions {
            client_id: self.config.client_id,
            encrypt: false,
            compress: true,
        };
        match endpoint.connect(now, server, options) {
            Ok(conn) => {
                self.conn = Some(conn);
                self.state = ClientState::Connecting;
                self.retry_at = None;
                self.stats.connect_attempts += 1;
                ClientMessage::Hello {
                    snaps: self.config.snaps.min(u16::MAX as u32) as u16,
                    rate: self.config.rate,
                    name: &self.config.name,
                }
                .encode(&mut self.message);
                if let Some(c) = endpoint.connection_mut(conn) {
                    c.send_ordered(&self.message)?;
                }
                Ok(())
            }
            // The old connection is still being torn down: try again on the
            // next update.
            Err(ConnectError::AlreadyConnected) => {
                self.state = ClientState::Connecting;
                self.retry_at = Some(now);
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    fn reset_session(&mut self) {
        self.snap = snapshot_client(&self.config);
        // Events still queued about the old session's gamestate and
        // snapshots would send the game to a snapshot store that is now
        // empty: the session they describe is gone, and the game learns so
        // from the Reconnecting or Disconnected event that follows.
        self.events.retain(|e| {
            !matches!(
                e,
                ClientEvent::Snapshot { .. }
                    | ClientEvent::Gamestate { .. }
                    | ClientEvent::Configstring { .. }
            )
        });
        self.conn = None;
        self.epoch = None;
        self.slot = None;
        self.full_requested = false;
        self.pending.clear();
        self.view = None;
        self.pending_first = 1;
        self.acked_last = None;
        self.dirty = false;
        self.in_flight.clear();
        self.next_packet_at = None;
        self.last_packet_at = None;
    }

    /// Leaves the server cleanly: the server is told, and the session ends
    /// here at once, as a kick would end it — [`ClientEvent::Disconnected`]
    /// with [`DisconnectReason::Left`] is queued, and [`Self::snapshots`]
    /// is emptied. The client stays [`ClientState::Leaving`] while its
    /// notice goes out (keep pumping the driver a moment), then
    /// [`ClientState::Disconnected`]; [`Self::connect`] starts a new session.
    pub fn disconnect(&mut self, endpoint: &mut Endpoint) {
        let ends_a_session = self.in_session();
        let conn = self
            .conn
            .filter(|&conn| endpoint.connection(conn).is_some());
        if let Some(conn) = conn {
            endpoint.disconnect(conn, codes::NORMAL);
        }
        self.retry_at = None;
        self.reset_session();
        // The close is still going out; its netchan event ends `Leaving`.
        self.conn = conn;
        self.state = match conn {
            Some(_) => ClientState::Leaving,
            None => ClientState::Disconnected,
        };
        self.reason = Some(DisconnectReason::Left);
        if ends_a_session {
            self.events.push_back(ClientEvent::Disconnected {
                reason: DisconnectReason::Left,
            });
        }
    }

    /// Stops without telling the server (a crashed or unplugged client);
    /// the server times it out. The session ends here as with
    /// [`Self::disconnect`]: a [`ClientEvent::Disconnected`] with
    /// [`DisconnectReason::Left`], and no snapshots held.
    pub fn abandon(&mut self) {
        let ends_a_session = self.in_session();
        self.retry_at = None;
        self.reset_session();
        self.state = ClientState::Disconnected;
        self.reason = Some(DisconnectReason::Left);
        if ends_a_session {
            self.events.push_back(ClientEvent::Disconnected {
                reason: DisconnectReason::Left,
            });
        }
    }

    /// Whether a session is connecting or under way (so ending it is news
    /// for the game).
    fn in_session(&self) -> bool {
        matches!(
            self.state,
            ClientState::Connecting | ClientState::Loading | ClientState::Active
        )
    }

    /// Draws every entity of the newest snapshot at server time
    /// `render_ms`, interpolated from the previous one by the game's
    /// [`Interpolate`], into `out` (cleared first) — and remembers what was
    /// drawn: every command queued from now on carries it (a
    /// [`ViewStamp`]), so the server can rewind to exactly this view
    /// ([`crate::Server::rewind`]). `None` before the first snapshot.
    pub fn render(&mut self, render_ms: u32, out: &mut Vec<(u32, E)>) -> Option<Rendered>
    where
        E: Interpolate,
    {
        let rendered = self.snap.render(render_ms, out);
        self.view = rendered.map(|r| r.stamp);
        rendered
    }

    /// The view the next command will carry (what [`Self::render`] drew
    /// last).
    pub fn view(&self) -> Option<ViewStamp> {
        self.view
    }

    /// Sets the view the next commands carry, for a game that draws with
    /// its own code (the stamp from [`snapshot::Client::render`] over
    /// [`Self::snapshots`]); `None` sends none.
    pub fn set_view(&mut self, view: Option<ViewStamp>) {
        self.view = view;
    }

    /// Queues a command (one client frame of input) and returns its
    /// number. It goes out with the next command packet and is repeated in
    /// every packet until one holding it is delivered. It carries the view
    /// of the last [`Self::render`], if any.
    pub fn command(&mut self, command: C) -> Result<u32> {
        if self.state != ClientState::Active {
            return Err(SessionError::NotConnected);
        }
        if self.pending.len() >= self.config.max_pending_commands {
            return Err(SessionError::CommandQueueFull {
                pending: self.pending.len(),
            });
        }
        let number = self.next_command_number();
        self.pending.push_back((command, self.view));
        self.dirty = true;
        self.stats.commands += 1;
        Ok(number)
    }

    /// Sends a reliable game command (chat…) to the server: delivered once,
    /// in order. `Ok` once it is queued; [`SessionError::NotConnected`]
    /// before the connection is up or after it ended,
    /// [`SessionError::Send`] if the message itself is refused (too large,
    /// or the queue is full). The same shape as
    /// [`crate::Server::send_reliable`].
    pub fn send_reliable(&mut self, endpoint: &mut Endpoint, data: &[u8]) -> Result<()> {
        if !matches!(self.state, ClientState::Loading | ClientState::Active) {
            return Err(SessionError::NotConnected);
        }
        ClientMessage::Game(data).encode(&mut self.message);
        let conn = self.conn.ok_or(SessionError::NotConnected)?;
        endpoint
            .connection_mut(conn)
            .ok_or(SessionError::NotConnected)?
            .send_ordered(&self.message)?;
        self.stats.reliable_sent += 1;
        Ok(())
    }

    /// When [`Self::update`] next has work of its own (a command packet or
    /// a connect retry), besides what the endpoint reports.
    pub fn next_deadline(&self) -> Option<Instant> {
        let packet = if self.state == ClientState::Active && !self.pending.is_empty() {
            let resend = self.last_packet_at.map(|t| t + RESEND_AFTER);
            match (self.dirty, self.next_packet_at) {
                (true, Some(t)) => Some(t),
                (true, None) => Some(self.now),
                (false, _) => resend,
            }
        } else {
            None
        };
        match (packet, self.retry_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Handles what arrived, retries or reconnects when due, and sends a
    /// command packet when one is due (at most `max_packets` a second).
    /// Call after pumping the driver, and again after queueing commands.
    pub fn update(&mut self, endpoint: &mut Endpoint, now: Instant) -> Result<()> {
        self.now = now;
        while let Some(event) = endpoint.poll_event() {
            self.handle(endpoint, now, event)?;
        }
        if self.retry_at.is_some_and(|t| now >= t) {
            self.start_connect(endpoint, now)?;
        }
        self.send_commands(endpoint, now)
    }

    fn handle(&mut self, endpoint: &mut Endpoint, now: Instant, event: Event) -> Result<()> {
        let ours = |conn: ConnectionId| Some(conn) == self.conn;
        if self.state == ClientState::Leaving {
            // The session is over for the game: only the close matters.
            match event {
                Event::Disconnected { conn, .. } if ours(conn) => {
                    self.conn = None;
                    self.state = ClientState::Disconnected;
                }
                Event::Message { data, .. }
                | Event::State { data, .. }
                | Event::Quickest { data, .. }
                | Event::Unguaranteed { data, .. } => endpoint.recycle(data),
                _ => {}
            }
            return Ok(());
        }
        match event {
            Event::Connected { conn, .. } if ours(conn) => {
                self.state = ClientState::Loading;
                self.backoff = BACKOFF_FIRST;
                self.stats.sessions += 1;
                self.events.push_back(ClientEvent::Connected);
            }
            Event::Disconnected { conn, reason } if ours(conn) => {
                self.conn = None;
                self.disconnected(now, DisconnectReason::from_netchan(reason));
            }
            Event::Message { conn, data } if ours(conn) => {
                self.message_in(endpoint, &data)?;
                endpoint.recycle(data);
            }
            Event::State { conn, id, data } if ours(conn) => {
                self.snapshot_in(endpoint, id, &data)?;
                endpoint.recycle(data);
            }
            Event::StateDelivered { conn, id } if ours(conn) => self.packet_report(id, true),
            Event::StateDropped { conn, id } if ours(conn) => self.packet_report(id, false),
            Event::Message { data, .. }
            | Event::State { data, .. }
            | Event::Quickest { data, .. }
            | Event::Unguaranteed { data, .. } => endpoint.recycle(data),
            _ => {}
        }
        Ok(())
    }

    fn disconnected(&mut self, now: Instant, reason: DisconnectReason) {
        let in_time = self.deadline.is_none_or(|d| now < d);
        if reason == DisconnectReason::ConnectFailed && in_time {
            // netchan gave up on this handshake; Quake 3 keeps trying.
            self.retry_at = Some(now);
            return;
        }
        if reason == DisconnectReason::ServerRestarting
            && self.state == ClientState::Connecting
            && in_time
        {
            // A restarting server turned the handshake away: it (or its
            // successor on the same address) takes clients again shortly.
            self.stats.connect_refusals += 1;
            self.retry_at = Some(now + self.backoff);
            self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
            return;
        }
        self.reason = Some(reason);
        // Only a session that was under way comes back on its own; a
        // handshake that failed past the deadline gives up.
        if reason.reconnects() && self.config.reconnect && self.state != ClientState::Connecting {
            self.stats.reconnects += 1;
            self.reset_session();
            self.deadline = self.config.connect_deadline.map(|d| now + d);
            self.state = ClientState::Connecting;
            self.retry_at = Some(now);
            self.events.push_back(ClientEvent::Reconnecting { reason });
        } else {
            self.reset_session();
            self.state = ClientState::Disconnected;
            self.events.push_back(ClientEvent::Disconnected { reason });
        }
    }

    fn send_session(&mut self, endpoint: &mut Endpoint, message: ClientMessage<'_>) -> Result<()> {
        message.encode(&mut self.message);
        if let Some(c) = self.conn.and_then(|conn| endpoint.connection_mut(conn)) {
            c.send_ordered(&self.message)?;
        }
        Ok(())
    }

    fn message_in(&mut self, endpoint: &mut Endpoint, data: &[u8]) -> Result<()> {
        let Ok(message) = ServerMessage::decode(data) else {
            self.stats.bad_messages += 1;
            return Ok(());
        };
        match message {
            ServerMessage::Gamestate { epoch, slot, bytes } => {
                match self.snap.read_message(bytes) {
                    Ok(Received::Gamestate) => {
                        let slot = usize::from(slot);
                        self.epoch = Some(epoch);
                        self.slot = Some(slot);
                        self.full_requested = false;
                        self.state = ClientState::Active;
                        self.stats.gamestates += 1;
                        self.send_session(endpoint, ClientMessage::Begin { epoch })?;
                        self.events
                            .push_back(ClientEvent::Gamestate { epoch, slot });
                    }
                    _ => self.stats.bad_messages += 1,
                }
            }
            ServerMessage::Configstring(bytes) => match self.snap.read_message(bytes) {
                Ok(Received::Configstring { index }) => {
                    self.events.push_back(ClientEvent::Configstring { index })
                }
                _ => self.stats.bad_messages += 1,
            },
            ServerMessage::Game(bytes) => {
                self.stats.reliable_received += 1;
                self.events.push_back(ClientEvent::Message(bytes.to_vec()));
            }
        }
        Ok(())
    }

    /// A snapshot payload with netchan's id for it, which is the
    /// snapshot's sequence (the server numbers its snapshots so).
    fn snapshot_in(&mut self, endpoint: &mut Endpoint, id: StateId, data: &[u8]) -> Result<()> {
        let Ok(payload) = SnapshotPayload::decode(data) else {
            self.stats.snapshot_errors += 1;
            return Ok(());
        };
        let Some(epoch) = self.epoch.filter(|&e| e == payload.epoch) else {
            // Built against another gamestate (the old map): never applied.
            self.stats.old_epoch_snapshots += 1;
            return Ok(());
        };
        match self.snap.read_snapshot(id as u32, payload.bytes) {
            Ok(Received::Snapshot(report)) => {
                self.stats.snapshots += 1;
                if report.base.is_none() {
                    self.stats.full_snapshots += 1;
                    self.full_requested = false;
                }
                match report.sync {
                    SyncCheck::Matched => self.stats.checksums_matched += 1,
                    SyncCheck::Mismatched => self.stats.checksum_mismatches += 1,
                    SyncCheck::Absent => {}
                }
                self.events.push_back(ClientEvent::Snapshot {
                    report,
                    bytes: payload.bytes.len(),
                });
            }
            Ok(Received::Stale { .. }) => self.stats.stale_snapshots += 1,
            Ok(_) => self.stats.snapshot_errors += 1,
            Err(_) => self.stats.snapshot_errors += 1,
        }
        if self.snap.needs_full_update() && !self.full_requested {
            self.full_requested = true;
            self.stats.full_requests += 1;
            self.send_session(endpoint, ClientMessage::FullUpdate { epoch })?;
        }
        Ok(())
    }

    fn packet_report(&mut self, id: StateId, delivered: bool) {
        while self.in_flight.front().is_some_and(|(s, _)| *s < id) {
            self.in_flight.pop_front();
        }
        let Some(&(front, newest)) = self.in_flight.front() else {
            return;
        };
        if front != id {
            return;
        }
        self.in_flight.pop_front();
        if !delivered {
            // Its commands are still pending: send them again soon.
            self.dirty = true;
            return;
        }
        while self.pending_first <= newest {
            let Some((command, _)) = self.pending.pop_front() else {
                break;
            };
            self.acked_last = Some(command);
            self.pending_first += 1;
            self.stats.commands_acked += 1;
        }
    }

    fn send_commands(&mut self, endpoint: &mut Endpoint, now: Instant) -> Result<()> {
        if self.state != ClientState::Active || self.pending.is_empty() {
            return Ok(());
        }
        if self.next_packet_at.is_some_and(|t| now < t) {
            return Ok(());
        }
        let resend = self.last_packet_at.is_none_or(|t| now >= t + RESEND_AFTER);
        if !(self.dirty || resend) {
            return Ok(());
        }
        let Some(connection) = self.conn.and_then(|c| endpoint.connection_mut(c)) else {
            return Ok(());
        };
        // Delta from the newest command known delivered, while the server
        // surely still keeps it.
        let base = self
            .acked_last
            .as_ref()
            .filter(|_| self.pending.len() < COMMAND_HISTORY);
        let commands = self.pending.iter().map(|(c, v)| (c, v.as_ref()));
        let (len, count) = if self.pending.iter().any(|(_, v)| v.is_some()) {
            CommandPacket::encode_viewed(
                self.config.codec,
                self.pending_first,
                base,
                commands,
                &mut self.packet[..],
            )?
        } else {
            CommandPacket::encode_from(
                self.config.codec,
                self.pending_first,
                base,
                commands.map(|(c, _)| c),
                &mut self.packet[..],
            )?
        };
        if count == 0 {
            return Ok(());
        }
        let id = connection.send_state(&self.packet[..len])?;
        self.in_flight
            .push_back((id, self.pending_first + count as u32 - 1));
        // Commands beyond one packet's worth go in the next one.
        self.dirty = count < self.pending.len();
        self.last_packet_at = Some(now);
        let interval = Duration::from_secs(1) / self.config.max_packets.max(1);
        self.next_packet_at = Some(now + interval);
        self.stats.command_packets += 1;
        self.stats.command_bytes += len as u64;
        Ok(())
    }
}
