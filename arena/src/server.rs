//! The game server: a netchan endpoint, the snapshot server's master state
//! and the [`World`], wired the way the snapshot crate documents.
//!
//! * On connect: the gamestate goes on the guaranteed-ordered channel, and
//!   every configstring change after it. The client answers `Begin` once it
//!   has the gamestate, and only then gets snapshots (Quake 3's "primed"
//!   state), so every snapshot it receives can be decoded.
//! * Commands arrive as guaranteed-quickest items and are applied at once
//!   (Quake 3's `ClientThink`); the snapshot ack they carry goes to
//!   [`snapshot::Server::acknowledge`], as does every
//!   [`Event::StateDelivered`].
//! * Each tick: advance the world, copy it into the master state, commit
//!   the frame, and build each client's snapshot as its state payload.
//! * Chat, the kill feed and join/leave notices are guaranteed-ordered
//!   messages, each numbered per client so delivery can be verified.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use fields::Codec;
use netchan::{codes, ConnectionId, DisconnectReason, Event, SendError, StateId};
use snapshot::{BuildOutcome, ClientId, ClientSettings, Scope, ServerConfig};

use crate::error::Error;
use crate::physics::Map;
use crate::protocol::{
    kind, ClientMessage, Command, EntityState, LeaveReason, PlayerState, ServerMessage,
};
use crate::transport::Net;
use crate::world::{
    item_state, GameEvent, World, ENTITY_LIMIT, ITEM_BASE, MAX_PLAYERS, PROJECTILE_BASE,
    PROJECTILE_SLOTS,
};

/// Configstring: server info (map, tick rate, codec).
pub const CS_SERVERINFO: usize = 0;
/// Configstring: match phase (`playing`, `ended`).
pub const CS_MATCH: usize = 1;
/// Configstrings `CS_PLAYERS + slot`: player info (`n\<name>`).
pub const CS_PLAYERS: usize = 32;

/// Client number shown in the spectator's player state.
pub const SPECTATOR_CLIENT: u8 = 127;

/// Projectiles farther than this from a player are out of its scope.
pub const PROJECTILE_SCOPE: f32 = 1400.0;

/// Where the spectator's recording goes: the snapshot layer's messages for
/// the spectator view, with their server times. Implemented over
/// `demo::Recorder` by the match; a test can collect them in memory.
pub trait DemoSink {
    /// The gamestate message.
    fn gamestate(&mut self, server_time_ms: u32, bytes: &[u8]) -> Result<(), Error>;
    /// A configstring-change message.
    fn configstring(&mut self, server_time_ms: u32, bytes: &[u8]) -> Result<(), Error>;
    /// A snapshot message.
    fn snapshot(
        &mut self,
        server_time_ms: u32,
        sequence: u32,
        bytes: &[u8],
        is_full: bool,
    ) -> Result<(), Error>;
    /// Flushes and closes the recording.
    fn finish(&mut self) -> Result<(), Error>;
}

/// How the server runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerOptions {
    /// Wire format of every delta.
    pub codec: Codec,
    /// Ticks per second.
    pub tick_hz: u32,
    /// A sync checksum every this many snapshots to a client.
    pub checksum_interval: u32,
    /// Seed of the world's randomness.
    pub seed: u64,
    /// A keyframe (full update) in the recording every this many ms.
    pub keyframe_ms: u32,
}

/// How a client's session ended, as the server saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PeerStatus {
    /// Still connected.
    Connected,
    /// Disconnected cleanly.
    Left,
    /// Timed out.
    TimedOut,
    /// Closed for another reason (ordered overflow, kicked when full).
    Dropped,
    /// Told by the server that it shuts down (a remote bot's view).
    Shutdown,
}

/// The server's record of one client (by its netchan client id).
#[derive(Debug, Clone, PartialEq)]
pub struct PeerReport {
    /// Player slot (entity number).
    pub slot: u8,
    /// Name from its hello.
    pub name: String,
    /// Guaranteed-ordered messages queued to it.
    pub reliable_sent: u64,
    /// How its session ended.
    pub status: PeerStatus,
    /// Commands applied.
    pub commands: u64,
    /// Commands that failed to decode.
    pub bad_commands: u64,
    /// Ordered messages from it that failed to decode or were unexpected.
    pub bad_messages: u64,
    /// Ordered messages from it out of sequence (must stay 0).
    pub upstream_out_of_order: u64,
    /// Ordered messages from it received.
    pub upstream_received: u64,
    /// Full updates it asked for.
    pub full_requests: u64,
    /// Snapshots built for it.
    pub snapshots: u64,
    /// Of which full updates.
    pub full_snapshots: u64,
    /// Snapshot acknowledgements taken from netchan delivery reports.
    pub delivered_acks: u64,
    /// Snapshot acknowledgements taken from its commands.
    pub command_acks: u64,
}

/// Counters of the server as a whole.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerStats {
    /// Ticks run.
    pub frames: u64,
    /// Wall-clock time of each tick (world, master state, snapshots).
    pub frame_times: Vec<Duration>,
    /// Connections that timed out.
    pub timeouts: u64,
    /// Connections refused because every player slot was taken.
    pub refused: u64,
    /// Snapshots written to the recording.
    pub recorded: u64,
    /// Of which keyframes.
    pub recorded_keyframes: u64,
    /// Chat lines broadcast.
    pub chat: u64,
    /// Kill-feed lines broadcast.
    pub kills: u64,
    /// Events for connections the server does not know (late reports).
    pub stray_events: u64,
    /// Size of each snapshot message built and whether it was a full
    /// update, until [`GameServer::take_snapshot_sizes`] takes them.
    pub snapshot_sizes: Vec<(u32, bool)>,
}

/// A connected client.
#[derive(Debug)]
struct Peer {
    conn: ConnectionId,
    client_id: u32,
    snap: ClientId,
    slot: u8,
    /// The next sequence number of an ordered message to it.
    next_seq: u32,
    /// The next sequence number expected from it.
    expect_seq: u32,
    /// It has the gamestate and gets snapshots.
    begun: bool,
    name: String,
    /// Outstanding state payloads and the snapshot each carried.
    states: VecDeque<(StateId, u32)>,
}

/// Which entities a player sees, and how much each matters.
struct ArenaScope;

impl Scope<EntityState, PlayerState> for ArenaScope {
    fn priority(
        &mut self,
        _viewer: ClientId,
        player: &PlayerState,
        number: u32,
        entity: &EntityState,
    ) -> Option<f32> {
        if player.spectator {
            return Some(1.0);
        }
        // A client's own body is its player state.
        if entity.kind == kind::PLAYER && number == player.client as u32 {
            return None;
        }
        let d = (entity.x - player.x).hypot(entity.y - player.y);
        if entity.kind == kind::PROJECTILE && d > PROJECTILE_SCOPE {
            return None;
        }
        Some(1000.0 / (100.0 + d))
    }
}

/// The authoritative server.
pub struct GameServer {
    net: Net,
    snap: snapshot::Server<EntityState, PlayerState>,
    world: World,
    options: ServerOptions,
    peers: Vec<Option<Peer>>,
    reports: BTreeMap<u32, PeerReport>,
    spectator: ClientId,
    recorder: Option<ClientId>,
    demo: Option<Box<dyn DemoSink>>,
    next_keyframe_ms: u32,
    buf: Vec<u8>,
    message: Vec<u8>,
    stats: ServerStats,
    ended: bool,
}

impl std::fmt::Debug for GameServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GameServer")
            .field("time_ms", &self.world.time_ms())
            .field("peers", &self.peers.iter().flatten().count())
            .finish_non_exhaustive()
    }
}

impl GameServer {
    /// A server on `net`, recording the spectator view to `demo` if given.
    pub fn new(
        net: Net,
        options: ServerOptions,
        demo: Option<Box<dyn DemoSink>>,
    ) -> Result<GameServer, Error> {
        let config = ServerConfig {
            codec: options.codec,
            max_entities: ENTITY_LIMIT,
            checksum_interval: options.checksum_interval,
        };
        let mut snap = snapshot::Server::new(config)?;
        let map = Map::arena();
        snap.set_configstring(
            CS_SERVERINFO,
            &format!(
                "map\\{}\\tick\\{}\\codec\\{}",
                map.name,
                options.tick_hz,
                options.codec.name()
            ),
        )?;
        snap.set_configstring(CS_MATCH, "playing")?;
        // Spawn baselines: items sit where they always are, so a client
        // that gets one learns it from a few bits. (Projectile slots get
        // none: 900 baselines would make the gamestate several datagrams
        // long for a saving of a byte or two per shot.)
        for (index, &(pos, kind)) in map.items.iter().enumerate() {
            snap.set_baseline(ITEM_BASE + index as u32, Some(item_state(kind, pos, true)))?;
        }
        // The spectator: a view that sees everything. It never gets a stream
        // of its own; the recorder shows its view.
        let spectator = snap.add_client(ClientSettings::recorder())?;
        snap.set_player_state(
            spectator,
            PlayerState {
                client: SPECTATOR_CLIENT,
                spectator: true,
                ..PlayerState::default()
            },
        )?;
        let mut server = GameServer {
            net,
            snap,
            world: World::new(map, options.seed),
            options,
            peers: (0..MAX_PLAYERS).map(|_| None).collect(),
            reports: BTreeMap::new(),
            spectator,
            recorder: None,
            demo,
            next_keyframe_ms: options.keyframe_ms,
            buf: Vec::new(),
            message: Vec::new(),
            stats: ServerStats::default(),
            ended: false,
        };
        if server.demo.is_some() {
            let recorder = server
                .snap
                .add_recorder(spectator, ClientSettings::recorder())?;
            server.recorder = Some(recorder);
            server.snap.write_gamestate(&mut server.buf)?;
            if let Some(demo) = server.demo.as_mut() {
                demo.gamestate(0, &server.buf)?;
            }
        }
        Ok(server)
    }

    /// The network endpoint.
    pub fn net(&self) -> &Net {
        &self.net
    }

    /// The network endpoint, mutably.
    pub fn net_mut(&mut self) -> &mut Net {
        &mut self.net
    }

    /// The world.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The snapshot server.
    pub fn snapshots(&self) -> &snapshot::Server<EntityState, PlayerState> {
        &self.snap
    }

    /// Counters.
    pub fn stats(&self) -> &ServerStats {
        &self.stats
    }

    /// The record of every client ever connected, by netchan client id.
    pub fn reports(&self) -> &BTreeMap<u32, PeerReport> {
        &self.reports
    }

    /// The sizes of the snapshots built since the last call (and whether
    /// each was a full update), for metrics.
    pub fn take_snapshot_sizes(&mut self) -> Vec<(u32, bool)> {
        std::mem::take(&mut self.stats.snapshot_sizes)
    }

    /// Milliseconds per tick.
    pub fn tick_ms(&self) -> u32 {
        (1000 / self.options.tick_hz.max(1)).max(1)
    }

    /// Whether every connected client has acknowledged every ordered message
    /// sent to it (the end-of-match drain waits for this).
    pub fn ordered_idle(&self) -> bool {
        self.peers.iter().flatten().all(|p| {
            self.net
                .endpoint()
                .connection(p.conn)
                .is_none_or(|c| c.metrics().ordered_queue_len == 0)
        })
    }

    /// Receives and sends at `now`, handling every event.
    pub fn pump(&mut self, now: Instant) -> Result<usize, Error> {
        let moved = self.net.pump(now);
        while let Some(event) = self.net.endpoint_mut().poll_event() {
            self.handle(event)?;
        }
        Ok(moved)
    }

    fn peer_index(&self, conn: ConnectionId) -> Option<usize> {
        self.peers
            .iter()
            .position(|p| p.as_ref().is_some_and(|p| p.conn == conn))
    }

    fn handle(&mut self, event: Event) -> Result<(), Error> {
        match event {
            Event::Connected { conn, .. } => self.connected(conn)?,
            Event::Disconnected { conn, reason } => self.disconnected(conn, reason)?,
            Event::Message { conn, data } => {
                self.message(conn, &data)?;
                self.net.endpoint_mut().recycle(data);
            }
            Event::Quickest { conn, data } => {
                self.command(conn, &data)?;
                self.net.endpoint_mut().recycle(data);
            }
            Event::StateDelivered { conn, id } => self.state_report(conn, id, true)?,
            Event::StateDropped { conn, id } => self.state_report(conn, id, false)?,
            Event::State { data, .. } | Event::Unguaranteed { data, .. } => {
                // Clients send neither; count and ignore.
                self.stats.stray_events += 1;
                self.net.endpoint_mut().recycle(data);
            }
            Event::Notify { .. } => {}
        }
        Ok(())
    }

    fn connected(&mut self, conn: ConnectionId) -> Result<(), Error> {
        let Some(client_id) = self.net.endpoint().connection(conn).map(|c| c.client_id()) else {
            return Ok(());
        };
        let Some(slot) = self.peers.iter().position(Option::is_none) else {
            self.stats.refused += 1;
            self.net.endpoint_mut().disconnect(conn, codes::KICKED);
            return Ok(());
        };
        let snap = self.snap.add_client(ClientSettings::default())?;
        self.snap.set_player_state(
            snap,
            PlayerState {
                client: slot as u8,
                ..PlayerState::default()
            },
        )?;
        let mut peer = Peer {
            conn,
            client_id,
            snap,
            slot: slot as u8,
            next_seq: 0,
            expect_seq: 0,
            begun: false,
            name: String::new(),
            states: VecDeque::new(),
        };
        self.reports.insert(
            client_id,
            PeerReport {
                slot: slot as u8,
                name: String::new(),
                reliable_sent: 0,
                status: PeerStatus::Connected,
                commands: 0,
                bad_commands: 0,
                bad_messages: 0,
                upstream_out_of_order: 0,
                upstream_received: 0,
                full_requests: 0,
                snapshots: 0,
                full_snapshots: 0,
                delivered_acks: 0,
                command_acks: 0,
            },
        );
        self.snap.write_gamestate(&mut self.buf)?;
        let gamestate = std::mem::take(&mut self.buf);
        self.send(&mut peer, ServerMessage::Gamestate(&gamestate));
        self.buf = gamestate;
        self.peers[slot] = Some(peer);
        Ok(())
    }

    fn disconnected(&mut self, conn: ConnectionId, reason: DisconnectReason) -> Result<(), Error> {
        let Some(index) = self.peer_index(conn) else {
            self.stats.stray_events += 1;
            return Ok(());
        };
        let Some(peer) = self.peers[index].take() else {
            return Ok(());
        };
        let (status, leave) = match reason {
            DisconnectReason::TimedOut => {
                self.stats.timeouts += 1;
                (PeerStatus::TimedOut, LeaveReason::TimedOut)
            }
            DisconnectReason::Peer(codes::NORMAL) => (PeerStatus::Left, LeaveReason::Disconnected),
            DisconnectReason::Local(codes::SHUTDOWN) => {
                (PeerStatus::Shutdown, LeaveReason::Disconnected)
            }
            _ => (PeerStatus::Dropped, LeaveReason::Disconnected),
        };
        if let Some(report) = self.reports.get_mut(&peer.client_id) {
            report.status = status;
        }
        self.snap.remove_client(peer.snap)?;
        if peer.begun {
            self.world.remove_player(peer.slot);
            self.set_configstring(CS_PLAYERS + peer.slot as usize, "")?;
            self.broadcast(ServerMessage::Leave {
                client: peer.slot,
                reason: leave,
            });
        }
        Ok(())
    }

    fn message(&mut self, conn: ConnectionId, data: &[u8]) -> Result<(), Error> {
        let Some(index) = self.peer_index(conn) else {
            self.stats.stray_events += 1;
            return Ok(());
        };
        let Some(mut peer) = self.peers[index].take() else {
            return Ok(());
        };
        let result = self.client_message(&mut peer, data);
        self.peers[index] = Some(peer);
        result
    }

    fn client_message(&mut self, peer: &mut Peer, data: &[u8]) -> Result<(), Error> {
        let report = self.reports.get_mut(&peer.client_id);
        let Ok((seq, message)) = ClientMessage::decode(data) else {
            if let Some(report) = report {
                report.bad_messages += 1;
            }
            return Ok(());
        };
        if let Some(report) = report {
            report.upstream_received += 1;
            if seq != peer.expect_seq {
                report.upstream_out_of_order += 1;
            }
        }
        peer.expect_seq = seq.wrapping_add(1);
        match message {
            ClientMessage::Hello { snaps, rate, name } => {
                peer.name = sanitize_name(name, peer.slot);
                if let Some(report) = self.reports.get_mut(&peer.client_id) {
                    report.name = peer.name.clone();
                }
                let settings = client_settings(snaps as u32, rate);
                self.snap.set_settings(peer.snap, settings)?;
            }
            ClientMessage::Begin if !peer.begun => {
                peer.begun = true;
                self.world.add_player(peer.slot, &peer.name);
                let info = format!("n\\{}", peer.name);
                self.set_configstring_to(CS_PLAYERS + peer.slot as usize, &info, Some(peer))?;
                let name = peer.name.clone();
                self.broadcast_with(
                    ServerMessage::Join {
                        client: peer.slot,
                        name: &name,
                    },
                    Some(peer),
                );
            }
            ClientMessage::Say { text } if peer.begun && !self.ended => {
                let text = text.to_owned();
                self.stats.chat += 1;
                self.broadcast_with(
                    ServerMessage::Chat {
                        from: peer.slot,
                        text: &text,
                    },
                    Some(peer),
                );
            }
            ClientMessage::FullUpdate => {
                if let Some(report) = self.reports.get_mut(&peer.client_id) {
                    report.full_requests += 1;
                }
                self.snap.request_full_update(peer.snap)?;
            }
            ClientMessage::Begin | ClientMessage::Say { .. } => {
                if let Some(report) = self.reports.get_mut(&peer.client_id) {
                    report.bad_messages += 1;
                }
            }
        }
        Ok(())
    }

    fn command(&mut self, conn: ConnectionId, data: &[u8]) -> Result<(), Error> {
        let Some(index) = self.peer_index(conn) else {
            self.stats.stray_events += 1;
            return Ok(());
        };
        let Some(peer) = self.peers[index].as_ref() else {
            return Ok(());
        };
        let (slot, snap, begun, client_id) = (peer.slot, peer.snap, peer.begun, peer.client_id);
        let Some(report) = self.reports.get_mut(&client_id) else {
            return Ok(());
        };
        match Command::decode(data) {
            Ok(command) => {
                report.commands += 1;
                if begun {
                    self.world.apply_command(slot, &command);
                    if let Some(ack) = command.ack {
                        if self.snap.acknowledge(snap, ack)? {
                            report.command_acks += 1;
                        }
                    }
                }
            }
            Err(_) => report.bad_commands += 1,
        }
        Ok(())
    }

    fn state_report(
        &mut self,
        conn: ConnectionId,
        id: StateId,
        delivered: bool,
    ) -> Result<(), Error> {
        let Some(index) = self.peer_index(conn) else {
            self.stats.stray_events += 1;
            return Ok(());
        };
        let Some(peer) = self.peers[index].as_mut() else {
            return Ok(());
        };
        // Reports come once per id, in id order.
        while peer.states.front().is_some_and(|(s, _)| *s < id) {
            peer.states.pop_front();
        }
        let Some(&(front, sequence)) = peer.states.front() else {
            return Ok(());
        };
        if front != id {
            return Ok(());
        }
        peer.states.pop_front();
        if delivered && self.snap.acknowledge(peer.snap, sequence)? {
            if let Some(report) = self.reports.get_mut(&peer.client_id) {
                report.delivered_acks += 1;
            }
        }
        Ok(())
    }

    /// Queues `message` to `peer` with its next sequence number.
    fn send(&mut self, peer: &mut Peer, message: ServerMessage<'_>) {
        message.encode(peer.next_seq, &mut self.message);
        let Some(conn) = self.net.endpoint_mut().connection_mut(peer.conn) else {
            return;
        };
        match conn.send_ordered(&self.message) {
            Ok(()) => {
                peer.next_seq = peer.next_seq.wrapping_add(1);
                if let Some(report) = self.reports.get_mut(&peer.client_id) {
                    report.reliable_sent += 1;
                }
            }
            // Overflow closes the connection (a Disconnected event follows);
            // a closing connection takes nothing more.
            Err(
                SendError::OrderedOverflow | SendError::NotConnected | SendError::TooLarge { .. },
            )
            | Err(SendError::QuickestFull) => {}
        }
    }

    fn broadcast(&mut self, message: ServerMessage<'_>) {
        self.broadcast_with(message, None);
    }

    /// Sends `message` to every peer, including `taken` (a peer temporarily
    /// out of the table while it is being handled).
    fn broadcast_with(&mut self, message: ServerMessage<'_>, taken: Option<&mut Peer>) {
        for index in 0..self.peers.len() {
            if let Some(mut peer) = self.peers[index].take() {
                self.send(&mut peer, message);
                self.peers[index] = Some(peer);
            }
        }
        if let Some(peer) = taken {
            self.send(peer, message);
        }
    }

    fn set_configstring(&mut self, index: usize, value: &str) -> Result<(), Error> {
        self.set_configstring_to(index, value, None)
    }

    /// Changes a configstring and sends the change to everyone (and the
    /// recording).
    fn set_configstring_to(
        &mut self,
        index: usize,
        value: &str,
        taken: Option<&mut Peer>,
    ) -> Result<(), Error> {
        self.snap.set_configstring(index, value)?;
        let mut bytes = std::mem::take(&mut self.buf);
        self.snap.write_configstring(index, &mut bytes)?;
        self.broadcast_with(ServerMessage::Configstring(&bytes), taken);
        if let Some(demo) = self.demo.as_mut() {
            demo.configstring(self.world.time_ms(), &bytes)?;
        }
        self.buf = bytes;
        Ok(())
    }

    /// Marks the match over: the phase configstring changes and chat stops.
    pub fn end_match(&mut self) -> Result<(), Error> {
        if !self.ended {
            self.ended = true;
            self.set_configstring(CS_MATCH, "ended")?;
        }
        Ok(())
    }

    /// Runs one tick: the world, the master state, every due snapshot.
    pub fn tick(&mut self) -> Result<(), Error> {
        let started = Instant::now();
        let dt = self.tick_ms();
        self.world.tick(dt);
        let kills: Vec<GameEvent> = self.world.drain_events().collect();
        for GameEvent::Kill { killer, victim } in kills {
            self.stats.kills += 1;
            self.broadcast(ServerMessage::Kill { killer, victim });
        }
        self.export()?;
        let time = self.world.time_ms();
        self.snap.commit_frame(time)?;
        self.build_snapshots()?;
        self.record(time)?;
        self.stats.frames += 1;
        self.stats.frame_times.push(started.elapsed());
        Ok(())
    }

    /// Copies the world into the snapshot server's master state.
    fn export(&mut self) -> Result<(), Error> {
        for slot in 0..MAX_PLAYERS as u8 {
            let state = self.world.player_entity(slot);
            self.put(slot as u32, state)?;
        }
        for index in 0..self.world.items().len() {
            let state = self.world.item_entity(index);
            self.put(ITEM_BASE + index as u32, state)?;
            self.snap
                .set_always_in_scope(ITEM_BASE + index as u32, true)?;
        }
        for index in 0..PROJECTILE_SLOTS {
            let state = self.world.projectile_entity(index);
            self.put(PROJECTILE_BASE + index as u32, state)?;
        }
        for index in 0..self.peers.len() {
            let Some(peer) = self.peers[index].as_ref() else {
                continue;
            };
            if let Some(state) = self.world.player_state(peer.slot) {
                self.snap.set_player_state(peer.snap, state)?;
            }
        }
        Ok(())
    }

    /// Sets, changes or removes one master entity, touching it only when it
    /// changed (so the history stores nothing new for it).
    fn put(&mut self, number: u32, state: Option<EntityState>) -> Result<(), Error> {
        match (self.snap.entity(number), state) {
            (Some(old), Some(new)) if *old == new => {}
            (_, Some(new)) => self.snap.set_entity(number, new)?,
            (Some(_), None) => {
                self.snap.remove_entity(number);
            }
            (None, None) => {}
        }
        Ok(())
    }

    fn build_snapshots(&mut self) -> Result<(), Error> {
        for index in 0..self.peers.len() {
            let Some(peer) = self.peers[index].as_mut() else {
                continue;
            };
            if !peer.begun {
                continue;
            }
            let outcome = self
                .snap
                .build_snapshot(peer.snap, &mut ArenaScope, &mut self.buf)?;
            let BuildOutcome::Built(info) = outcome else {
                continue;
            };
            let Some(conn) = self.net.endpoint_mut().connection_mut(peer.conn) else {
                continue;
            };
            if let Ok(id) = conn.send_state(&self.buf) {
                peer.states.push_back((id, info.sequence));
            }
            self.stats
                .snapshot_sizes
                .push((self.buf.len() as u32, info.base.is_none()));
            if let Some(report) = self.reports.get_mut(&peer.client_id) {
                report.snapshots += 1;
                report.full_snapshots += info.base.is_none() as u64;
            }
        }
        Ok(())
    }

    /// Writes the spectator view's snapshot to the recording, with a
    /// keyframe every `keyframe_ms` so a player can seek.
    fn record(&mut self, time: u32) -> Result<(), Error> {
        let (Some(recorder), Some(demo)) = (self.recorder, self.demo.as_mut()) else {
            return Ok(());
        };
        if time >= self.next_keyframe_ms {
            self.snap.request_full_update(recorder)?;
            self.next_keyframe_ms = time + self.options.keyframe_ms;
        }
        let outcome = self
            .snap
            .build_snapshot(recorder, &mut ArenaScope, &mut self.buf)?;
        if let BuildOutcome::Built(info) = outcome {
            let full = info.base.is_none();
            demo.snapshot(time, info.sequence, &self.buf, full)?;
            self.stats.recorded += 1;
            self.stats.recorded_keyframes += full as u64;
        }
        Ok(())
    }

    /// Closes the recording.
    pub fn finish_recording(&mut self) -> Result<(), Error> {
        if let Some(mut demo) = self.demo.take() {
            demo.finish()?;
        }
        Ok(())
    }

    /// The spectator's client id in the snapshot server.
    pub fn spectator(&self) -> ClientId {
        self.spectator
    }
}

/// The snapshot stream a client asked for: its snapshot rate, and a byte
/// budget a little under its announced rate so the netchan (which also
/// carries acks, commands' acks and ordered messages at that rate) is
/// never the one holding snapshots back.
pub fn client_settings(snaps: u32, rate: u32) -> ClientSettings {
    let snaps = snaps.clamp(1, 1000);
    let rate = rate.clamp(1000, 10_000_000);
    let byte_rate = rate / 10 * 8;
    let per_snapshot = (byte_rate / snaps).clamp(256, 16 * 1024);
    ClientSettings {
        snapshot_rate: snaps,
        byte_rate,
        // A full update after joining may take two snapshots' worth at once.
        burst_bytes: (per_snapshot * 2).max(1024),
        max_snapshot_bytes: per_snapshot.max(512),
        auto_ack: false,
    }
}

/// A name safe for a configstring: printable ASCII without separators, or
/// `player<slot>` when nothing is left.
fn sanitize_name(name: &str, slot: u8) -> String {
    let clean: String = name
        .chars()
        .filter(|c| c.is_ascii_graphic() && *c != '\\' && *c != '"' && *c != ';')
        .take(24)
        .collect();
    if clean.is_empty() {
        format!("player{slot}")
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitized() {
        assert_eq!(sanitize_name("bot\\1\0x", 3), "bot1x");
        assert_eq!(sanitize_name("\u{0}\u{1}", 3), "player3");
        assert_eq!(sanitize_name(&"a".repeat(100), 0).len(), 24);
    }

    #[test]
    fn client_settings_follow_the_requested_rates() {
        let s = client_settings(20, 25_000);
        assert_eq!(s.snapshot_rate, 20);
        assert_eq!(s.byte_rate, 20_000);
        assert_eq!(s.max_snapshot_bytes, 1000);
        assert!(s.validate().is_ok());
        // Nonsense from the network is clamped into something valid.
        assert!(client_settings(0, 0).validate().is_ok());
        assert!(client_settings(u32::MAX, u32::MAX).validate().is_ok());
    }
}
