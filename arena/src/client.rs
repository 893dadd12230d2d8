//! A bot's client: its own netchan endpoint and socket, a
//! `session::Client` (connect, gamestate, snapshots, command packets),
//! prediction, interpolation and the bot brain.
//!
//! Each client frame it reads what arrived, renders (interpolates) the
//! others, lets the bot decide, queues the command with the session (which
//! sends it Quake 3's way: packed, delta-coded, repeated until delivered,
//! at most `max_packets` a second) and predicts its effect. Every reliable
//! game command from the server carries a sequence number the client
//! checks, so loss or reordering on the guaranteed channel would show up in
//! its counters.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use session::{ClientConfig, ClientEvent, DisconnectReason};
use snapshot::SyncCheck;

use crate::bot::{Bot, SelfView};
use crate::interp::{render, RenderEntity, ServerClock};
use crate::physics::Map;
use crate::predict::Predictor;
use crate::protocol::{ClientMessage, Command, EntityState, PlayerState, ServerMessage};
use crate::transport::{Meter, Net};

/// The session client of the arena's types.
pub type SessionClient = session::Client<EntityState, PlayerState, Command>;

/// How a bot client is set up.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Its name.
    pub name: String,
    /// Its netchan client id (qport).
    pub client_id: u32,
    /// Snapshots per second it asks for.
    pub snaps: u32,
    /// Bytes per second it can receive.
    pub rate: u32,
    /// Client frames (commands) per second.
    pub fps: u32,
    /// Seed of its bot's decisions.
    pub seed: u64,
}

/// Where a client is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientPhase {
    /// Not started.
    Idle,
    /// Handshake under way, or waiting for the gamestate.
    Connecting,
    /// Has the gamestate; playing.
    Playing,
    /// Disconnecting cleanly.
    Leaving,
    /// Stopped sending and receiving (to be timed out by the server).
    Silent,
    /// The connection is gone.
    Closed,
}

/// What one client saw and did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientStats {
    /// Size of every snapshot message received.
    pub snapshot_bytes: Vec<u32>,
    /// Snapshots decoded.
    pub snapshots: u64,
    /// Of which full updates.
    pub full_snapshots: u64,
    /// Of which deltas.
    pub delta_snapshots: u64,
    /// Snapshot messages the snapshot client rejected (e.g. missing base).
    pub snapshot_errors: u64,
    /// Sync checksums that matched.
    pub checksums_matched: u64,
    /// Sync checksums that did not (must stay 0).
    pub checksum_mismatches: u64,
    /// Guaranteed-ordered messages received.
    pub reliable_delivered: u64,
    /// Of which out of sequence (must stay 0).
    pub reliable_out_of_order: u64,
    /// Ordered messages that failed to decode (must stay 0).
    pub reliable_malformed: u64,
    /// Ordered messages sent (hello, begin, chat, full-update requests).
    pub reliable_sent: u64,
    /// Commands sent.
    pub commands: u64,
    /// Commands not sent because the quickest queue was full.
    pub commands_dropped: u64,
    /// Full updates requested.
    pub full_requests: u64,
    /// Chat lines received.
    pub chat_received: u64,
    /// Kill-feed lines received.
    pub kills_seen: u64,
    /// Join and leave notices received.
    pub joins_seen: u64,
    /// Leave notices received.
    pub leaves_seen: u64,
    /// Frames whose render time was past the newest snapshot.
    pub interp_stalls: u64,
    /// Frames rendered.
    pub frames: u64,
}

/// One bot, playing over its own endpoint.
pub struct GameClient {
    options: ClientOptions,
    net: Option<Net>,
    server: SocketAddr,
    session: SessionClient,
    phase: ClientPhase,
    disconnect: Option<DisconnectReason>,
    predictor: Predictor,
    clock: ServerClock,
    bot: Bot,
    map: Map,
    view: Vec<RenderEntity>,
    /// The interpolated states behind `view`.
    drawn: Vec<(u32, EntityState)>,
    epoch: Instant,
    next_frame: Instant,
    last_command_ms: u64,
    send_seq: u32,
    expect_seq: u32,
    message: Vec<u8>,
    stats: ClientStats,
    connected_at: Option<Instant>,
    ended_at: Option<Instant>,
    final_meter: Option<Meter>,
    final_rtt: Option<Duration>,
}

impl std::fmt::Debug for GameClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GameClient")
            .field("name", &self.options.name)
            .field("phase", &self.phase)
            .finish_non_exhaustive()
    }
}

impl GameClient {
    /// A client on `net` (whose endpoint was made from
    /// `config.endpoint::<…>()`) that will connect to `server`; `epoch` is
    /// time zero of its local clock.
    pub fn new(
        options: ClientOptions,
        config: ClientConfig,
        net: Net,
        server: SocketAddr,
        epoch: Instant,
    ) -> Self {
        GameClient {
            bot: Bot::new(options.seed),
            options,
            net: Some(net),
            server,
            session: SessionClient::new(config),
            phase: ClientPhase::Idle,
            disconnect: None,
            predictor: Predictor::new(),
            clock: ServerClock::new(),
            map: Map::arena(),
            view: Vec::new(),
            drawn: Vec::new(),
            epoch,
            next_frame: epoch,
            last_command_ms: 0,
            send_seq: 0,
            expect_seq: 0,
            message: Vec::new(),
            stats: ClientStats::default(),
            connected_at: None,
            ended_at: None,
            final_meter: None,
            final_rtt: None,
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.options.name
    }

    /// Its netchan client id.
    pub fn client_id(&self) -> u32 {
        self.options.client_id
    }

    /// Where it is in its life.
    pub fn phase(&self) -> ClientPhase {
        self.phase
    }

    /// Why its connection ended, if it did.
    pub fn disconnect_reason(&self) -> Option<DisconnectReason> {
        self.disconnect
    }

    /// What it saw and did.
    pub fn stats(&self) -> &ClientStats {
        &self.stats
    }

    /// The snapshot client.
    pub fn snapshots(&self) -> &snapshot::Client<EntityState, PlayerState> {
        self.session.snapshots()
    }

    /// The session client.
    pub fn session(&self) -> &SessionClient {
        &self.session
    }

    /// The predictor.
    pub fn predictor(&self) -> &Predictor {
        &self.predictor
    }

    /// The others as rendered in the last frame.
    pub fn view(&self) -> &[RenderEntity] {
        &self.view
    }

    /// Its endpoint, while it has one.
    pub fn net(&self) -> Option<&Net> {
        self.net.as_ref()
    }

    /// When it connected.
    pub fn connected_at(&self) -> Option<Instant> {
        self.connected_at
    }

    /// When its session ended (left, went silent, or the match ended).
    pub fn ended_at(&self) -> Option<Instant> {
        self.ended_at
    }

    /// Socket counters, frozen when the session ended.
    pub fn meter(&self) -> Meter {
        self.final_meter
            .or_else(|| self.net.as_ref().map(Net::meter))
            .unwrap_or_default()
    }

    /// Smoothed RTT, frozen when the session ended.
    pub fn rtt(&self) -> Duration {
        self.final_rtt
            .or_else(|| self.live_rtt())
            .unwrap_or_default()
    }

    fn live_rtt(&self) -> Option<Duration> {
        let net = self.net.as_ref()?;
        Some(self.session.connection(net.endpoint())?.rtt())
    }

    /// Whether its guaranteed traffic is all acknowledged: reliable
    /// commands and every command it queued.
    pub fn queues_idle(&self) -> bool {
        let Some(net) = self.net.as_ref() else {
            return true;
        };
        self.session.pending_commands() == 0
            && self
                .session
                .connection(net.endpoint())
                .is_none_or(|c| c.metrics().ordered_queue_len == 0)
    }

    fn local_ms(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.epoch).as_millis() as u64
    }

    /// Starts connecting (the session sends the hello).
    pub fn connect(&mut self, now: Instant) {
        let Some(net) = self.net.as_mut() else {
            return;
        };
        match self.session.connect(net.endpoint_mut(), now, self.server) {
            Ok(()) => {
                self.phase = ClientPhase::Connecting;
                self.next_frame = now;
                self.last_command_ms = self.local_ms(now);
            }
            Err(_) => self.phase = ClientPhase::Closed,
        }
    }

    fn send(&mut self, message: ClientMessage<'_>) {
        let Some(net) = self.net.as_mut() else {
            return;
        };
        message.encode(self.send_seq, &mut self.message);
        if self
            .session
            .send_reliable(net.endpoint_mut(), &self.message)
            .is_ok()
        {
            self.send_seq = self.send_seq.wrapping_add(1);
            self.stats.reliable_sent += 1;
        }
    }

    /// Starts a clean disconnect.
    pub fn leave(&mut self, now: Instant) {
        self.freeze(now);
        if let Some(net) = self.net.as_mut() {
            self.session.disconnect(net.endpoint_mut());
            self.phase = ClientPhase::Leaving;
        }
    }

    /// Stops sending and receiving, keeping the socket: the server must
    /// time the client out.
    pub fn go_silent(&mut self, now: Instant) {
        self.freeze(now);
        self.phase = ClientPhase::Silent;
    }

    /// Records the end of the session's measurements.
    pub fn freeze(&mut self, now: Instant) {
        if self.ended_at.is_none() {
            self.ended_at = Some(now);
            self.final_meter = self.net.as_ref().map(Net::meter);
            self.final_rtt = self.live_rtt();
        }
    }

    /// Whether the match loop should pump this client's endpoint.
    pub fn is_active(&self) -> bool {
        self.net.is_some()
            && matches!(
                self.phase,
                ClientPhase::Connecting | ClientPhase::Playing | ClientPhase::Leaving
            )
    }

    /// Receives, sends and handles events at `now`.
    pub fn pump(&mut self, now: Instant) -> usize {
        if !self.is_active() {
            return 0;
        }
        let Some(net) = self.net.as_mut() else {
            return 0;
        };
        let moved = net.pump(now);
        // Errors here are the session refusing a send on a closing
        // connection: nothing to do but carry on.
        let _ = self.session.update(net.endpoint_mut(), now);
        while let Some(event) = self.session.poll_event() {
            self.handle(now, event);
        }
        if self.phase == ClientPhase::Leaving
            && self.net.as_ref().is_none_or(|n| {
                self.session.connection(n.endpoint()).is_none() && n.next_wakeup().is_none()
            })
        {
            // The disconnect went out (through the conditioner, which may
            // hold it for the link's latency); close the socket.
            self.phase = ClientPhase::Closed;
            self.net = None;
        }
        moved
    }

    /// When its endpoint or session next has work.
    pub fn next_wakeup(&self) -> Option<Instant> {
        let net = self.net.as_ref()?.next_wakeup();
        match (net, self.session.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle(&mut self, now: Instant, event: ClientEvent) {
        match event {
            ClientEvent::Connected => {
                self.connected_at.get_or_insert(now);
            }
            ClientEvent::Gamestate { .. } => {
                if self.phase == ClientPhase::Connecting {
                    self.phase = ClientPhase::Playing;
                }
            }
            ClientEvent::Configstring { .. } => {}
            ClientEvent::Snapshot { report, bytes } => {
                self.stats.snapshot_bytes.push(bytes as u32);
                self.stats.snapshots += 1;
                if report.base.is_none() {
                    self.stats.full_snapshots += 1;
                } else {
                    self.stats.delta_snapshots += 1;
                }
                match report.sync {
                    SyncCheck::Matched => self.stats.checksums_matched += 1,
                    SyncCheck::Mismatched => self.stats.checksum_mismatches += 1,
                    SyncCheck::Absent => {}
                }
                if let Some(newest) = self.session.snapshots().newest() {
                    let local = self.local_ms(now) as f64;
                    self.clock.observe(newest.server_time(), local);
                    let ps = *newest.player();
                    self.predictor.reconcile(&ps, &self.map);
                }
            }
            ClientEvent::Message(data) => self.server_message(&data),
            ClientEvent::Reconnecting { reason } | ClientEvent::Disconnected { reason } => {
                self.freeze(now);
                self.disconnect = Some(reason);
                if self.phase != ClientPhase::Leaving {
                    self.phase = ClientPhase::Closed;
                }
            }
        }
    }

    fn server_message(&mut self, data: &[u8]) {
        let Ok((seq, message)) = ServerMessage::decode(data) else {
            self.stats.reliable_malformed += 1;
            return;
        };
        self.stats.reliable_delivered += 1;
        if seq != self.expect_seq {
            self.stats.reliable_out_of_order += 1;
        }
        self.expect_seq = seq.wrapping_add(1);
        match message {
            ServerMessage::Chat { .. } => self.stats.chat_received += 1,
            ServerMessage::Kill { .. } => self.stats.kills_seen += 1,
            ServerMessage::Join { .. } => self.stats.joins_seen += 1,
            ServerMessage::Leave { .. } => self.stats.leaves_seen += 1,
        }
    }

    /// When the next client frame is due.
    pub fn next_frame(&self) -> Instant {
        self.next_frame
    }

    /// Runs a client frame if one is due: render, think, command, predict.
    pub fn frame(&mut self, now: Instant, allow_chat: bool) {
        if self.phase != ClientPhase::Playing || now < self.next_frame {
            return;
        }
        let interval = Duration::from_secs_f64(1.0 / self.options.fps.max(1) as f64);
        while self.next_frame <= now {
            self.next_frame += interval;
        }
        let local = self.local_ms(now);
        let msec = local.saturating_sub(self.last_command_ms);
        if msec == 0 {
            return;
        }
        self.stats.frames += 1;
        self.render(local as f64);
        let Some(newest) = self.session.snapshots().newest() else {
            // No snapshot yet: nothing to predict from.
            self.last_command_ms = local;
            return;
        };
        let ps = *newest.player();
        let me = SelfView {
            client: ps.client,
            motion: self.predictor.current(),
            alive: self.predictor.alive(),
            health: ps.health,
            now_ms: local,
        };
        let intent = self.bot.think(me, &self.view, &self.map);
        // Commands cover the time since the last one (at most the cap; a
        // longer gap is the client's own stall and is not made up).
        let msec = msec.min(crate::protocol::MAX_COMMAND_MSEC as u64) as u8;
        self.last_command_ms = local;
        let command = intent.command(msec);
        match self.session.command(command) {
            Ok(number) => {
                self.stats.commands += 1;
                self.predictor.predict(number, command, &self.map);
            }
            Err(_) => self.stats.commands_dropped += 1,
        }
        if let (Some(text), true) = (intent.say, allow_chat) {
            self.send(ClientMessage::Say { text });
        }
    }

    /// Interpolates the others for local time `local_ms` (through the
    /// session, so every command after carries what was drawn).
    fn render(&mut self, local_ms: f64) {
        let Some(server_now) = self.clock.server_time(local_ms) else {
            return;
        };
        // One snapshot interval behind the estimated server time, in whole
        // milliseconds of server time (what the command's view stamp says).
        let delay = 1000.0 / self.options.snaps.max(1) as f64;
        let render_ms = (server_now - delay).clamp(0.0, u32::MAX as f64) as u32;
        if let Some(point) = render(
            &mut self.session,
            render_ms,
            &mut self.drawn,
            &mut self.view,
        ) {
            self.stats.interp_stalls += point.stalled as u64;
        }
    }
}
