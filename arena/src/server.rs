//! The game server: the [`World`] on top of a `session::Server`, which
//! does the networking — connects, gamestates, one snapshot stream per
//! client acknowledged from netchan's delivery reports, command packets,
//! reliable commands, timeouts and the recording.
//!
//! * A client's hello makes it a peer (`Connected`); once it holds the
//!   gamestate (`Entered`) its player spawns and everyone hears of it.
//! * Commands arrive in order, each once, and are applied at once (Quake
//!   3's `ClientThink`).
//! * Each tick: advance the world, copy it into the master state and let
//!   the session send every client its snapshot.
//! * Chat, the kill feed and join/leave notices are reliable game
//!   commands, each numbered per client so delivery can be verified.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use fields::Codec;
use netchan::ConnectionConfig;
use session::{ClientKey, DisconnectReason, RecordView, ServerClientStats, ServerEvent};
use snapshot::{ClientId, Scope};

use crate::error::Error;
use crate::physics::Map;
use crate::protocol::{
    buttons, kind, ClientMessage, Command, EntityState, LeaveReason, PlayerState, ServerMessage,
    PROTOCOL_VERSION,
};
use crate::transport::Net;
use crate::world::{
    item_state, GameEvent, Seen, World, ENTITY_LIMIT, ITEM_BASE, MAX_PLAYERS, PROJECTILE_BASE,
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

/// Most reliable commands queued or unacknowledged to one client before
/// it is disconnected as too slow (joins, leaves, chat and the kill feed of
/// a 64-player match fit many times over).
pub const MAX_RELIABLE: usize = 512;

/// The session server of the arena's types.
pub type SessionServer = session::Server<EntityState, PlayerState, Command>;

/// A demo being written: the recorder the session feeds.
pub type DemoRecorder = demo::Recorder<Box<dyn Write + Send>>;

/// How the server runs.
#[derive(Debug, Clone)]
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
    /// Netchan settings of every connection (idle timeout, rates).
    pub connection: ConnectionConfig,
    /// Lag compensation: rail shots are judged against the players as the
    /// shooter's client drew them (the session's rewind), not where they
    /// are now.
    pub lag_comp: bool,
    /// The furthest the rewind reaches back, ms.
    pub max_rewind_ms: u32,
}

impl ServerOptions {
    /// The session configuration these options make.
    pub fn session_config(&self) -> session::ServerConfig {
        session::ServerConfig {
            codec: self.codec,
            max_entities: ENTITY_LIMIT,
            checksum_interval: self.checksum_interval,
            max_clients: MAX_PLAYERS,
            max_reliable: MAX_RELIABLE,
            game_version: PROTOCOL_VERSION,
            keyframe_ms: self.keyframe_ms,
            connection: self.connection.clone(),
            max_rewind_ms: self.max_rewind_ms,
            models: session::Models::of_types(),
            framing: crate::protocol::framing(self.codec),
        }
    }

    /// The netchan endpoint configuration of a server with these options.
    pub fn endpoint_config(&self) -> netchan::EndpointConfig {
        self.session_config()
            .endpoint::<EntityState, PlayerState, Command>()
    }
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
    /// Closed for another reason (reliable overflow, kicked, server full).
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
    /// Reliable game commands queued to it.
    pub reliable_sent: u64,
    /// How its session ended.
    pub status: PeerStatus,
    /// Why, when it ended.
    pub reason: Option<DisconnectReason>,
    /// Commands applied.
    pub commands: u64,
    /// Reliable game commands from it that failed to decode.
    pub bad_messages: u64,
    /// Reliable game commands from it out of sequence (must stay 0).
    pub upstream_out_of_order: u64,
    /// Reliable game commands from it received.
    pub upstream_received: u64,
    /// Rail shots it fired.
    pub rail_shots: u64,
    /// Of which hit a player.
    pub rail_hits: u64,
    /// The session's counters for it (snapshots, acks, command packets…).
    pub session: ServerClientStats,
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
    /// Snapshots written to the recording.
    pub recorded: u64,
    /// Of which keyframes.
    pub recorded_keyframes: u64,
    /// Chat lines broadcast.
    pub chat: u64,
    /// Kill-feed lines broadcast.
    pub kills: u64,
    /// How far back each rail shot that fired was judged (lag
    /// compensation), ms.
    pub rewind_ms: Vec<u32>,
    /// Rail shots whose rewind the session bounded (too old, too new,
    /// unverified).
    pub rewinds_clamped: u64,
    /// Rail shots that could not be rewound (no view yet): judged against
    /// the present.
    pub rewinds_failed: u64,
}

/// A client the game knows (it said hello).
#[derive(Debug)]
struct Peer {
    client_id: u32,
    slot: u8,
    /// The next sequence number of a game command to it.
    next_seq: u32,
    /// The next sequence number expected from it.
    expect_seq: u32,
    /// Its player is in the world.
    spawned: bool,
    name: String,
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
    session: SessionServer,
    world: World,
    options: ServerOptions,
    peers: BTreeMap<ClientKey, Peer>,
    reports: BTreeMap<u32, PeerReport>,
    stats: ServerStats,
    message: Vec<u8>,
    ended: bool,
    /// The rewound entities of the command being applied.
    rewound: Vec<(u32, EntityState)>,
    /// The players in them.
    seen: Vec<Seen>,
}

impl std::fmt::Debug for GameServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GameServer")
            .field("time_ms", &self.world.time_ms())
            .field("peers", &self.peers.len())
            .finish_non_exhaustive()
    }
}

impl GameServer {
    /// A server on `net` (whose endpoint was made from
    /// [`ServerOptions::endpoint_config`]), recording the spectator view
    /// through `recorder` if given.
    pub fn new(
        net: Net,
        options: ServerOptions,
        recorder: Option<DemoRecorder>,
    ) -> Result<GameServer, Error> {
        let mut session = SessionServer::new(options.session_config())?;
        let map = Map::arena();
        let world = session.world_mut();
        world.set_configstring(
            CS_SERVERINFO,
            &format!(
                "map\\{}\\tick\\{}\\codec\\{}",
                map.name,
                options.tick_hz,
                options.codec.name()
            ),
        )?;
        world.set_configstring(CS_MATCH, "playing")?;
        // Spawn baselines: items sit where they always are, so a client
        // that gets one learns it from a few bits. (Projectile slots get
        // none: 900 baselines would make the gamestate several datagrams
        // long for a saving of a byte or two per shot.)
        for (index, &(pos, kind)) in map.items.iter().enumerate() {
            world.set_baseline(ITEM_BASE + index as u32, Some(item_state(kind, pos, true)))?;
        }
        if let Some(recorder) = recorder {
            // The spectator: a view that sees everything.
            let spectator = PlayerState {
                client: SPECTATOR_CLIENT,
                spectator: true,
                ..PlayerState::default()
            };
            session.record(RecordView::Spectator(spectator), recorder)?;
        }
        Ok(GameServer {
            net,
            session,
            world: World::new(map, options.seed),
            options,
            peers: BTreeMap::new(),
            reports: BTreeMap::new(),
            stats: ServerStats::default(),
            message: Vec::new(),
            ended: false,
            rewound: Vec::new(),
            seen: Vec::new(),
        })
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

    /// The session server.
    pub fn session(&self) -> &SessionServer {
        &self.session
    }

    /// The snapshot server (master state, every client's stream).
    pub fn snapshots(&self) -> &snapshot::Server<EntityState, PlayerState> {
        self.session.world()
    }

    /// Counters.
    pub fn stats(&self) -> &ServerStats {
        &self.stats
    }

    /// The record of every client ever connected, by netchan client id.
    pub fn reports(&self) -> &BTreeMap<u32, PeerReport> {
        &self.reports
    }

    /// Milliseconds per tick.
    pub fn tick_ms(&self) -> u32 {
        (1000 / self.options.tick_hz.max(1)).max(1)
    }

    /// Whether every connected client has acknowledged every reliable
    /// command sent to it (the end-of-match drain waits for this).
    pub fn ordered_idle(&self) -> bool {
        self.session.reliable_idle(self.net.endpoint())
    }

    /// Receives and sends at `now`, handling every event.
    pub fn pump(&mut self, now: Instant) -> Result<usize, Error> {
        let moved = self.net.pump(now);
        self.session.update(self.net.endpoint_mut(), now)?;
        while let Some(event) = self.session.poll_event() {
            self.handle(event)?;
        }
        Ok(moved)
    }

    fn handle(&mut self, event: ServerEvent<Command>) -> Result<(), Error> {
        match event {
            ServerEvent::Connected { client, name } => self.connected(client, &name)?,
            ServerEvent::Entered { client, .. } => self.entered(client)?,
            ServerEvent::Command {
                client,
                number,
                command,
            } => self.command(client, number, &command),
            ServerEvent::Message { client, data } => self.client_message(client, &data),
            ServerEvent::Disconnected {
                client,
                reason,
                stats,
            } => self.disconnected(client, reason, stats)?,
        }
        Ok(())
    }

    /// Applies a client's command (Quake 3's `ClientThink`). A rail shot
    /// with lag compensation on is traced against the players as that
    /// client drew them when it made the command.
    fn command(&mut self, client: ClientKey, number: u32, command: &Command) {
        let Some(peer) = self.peers.get(&client) else {
            return;
        };
        let (slot, client_id) = (peer.slot, peer.client_id);
        if let Some(report) = self.reports.get_mut(&client_id) {
            report.commands += 1;
        }
        if !peer.spawned {
            return;
        }
        let mut rewind = None;
        if self.options.lag_comp && command.buttons & buttons::RAIL != 0 {
            match self.session.rewind(client, number, &mut self.rewound) {
                Ok(r) => {
                    self.seen.clear();
                    self.seen.extend(
                        self.rewound
                            .iter()
                            .filter(|(_, e)| e.kind == kind::PLAYER)
                            .map(|(_, e)| Seen {
                                slot: e.owner,
                                feet: [e.x, e.y, e.z],
                                alive: e.active,
                            }),
                    );
                    rewind = Some(r);
                }
                Err(_) => self.stats.rewinds_failed += 1,
            }
        }
        let applied = match rewind {
            Some(_) => self
                .world
                .apply_command_seen(slot, number, command, &self.seen),
            None => self.world.apply_command(slot, number, command),
        };
        if let Some(rail) = applied.rail {
            if let Some(r) = rewind {
                self.stats.rewind_ms.push(r.rewind_ms);
                self.stats.rewinds_clamped += r.clamp.is_some() as u64;
            }
            if let Some(report) = self.reports.get_mut(&client_id) {
                report.rail_shots += 1;
                report.rail_hits += rail.victim.is_some() as u64;
            }
        }
    }

    fn connected(&mut self, client: ClientKey, name: &str) -> Result<(), Error> {
        let Some(client_id) = self.session.client(client).map(|c| c.client_id) else {
            return Ok(());
        };
        let slot = client.slot() as u8;
        let name = sanitize_name(name, slot);
        self.session.set_player_state(
            client,
            PlayerState {
                client: slot,
                ..PlayerState::default()
            },
        )?;
        self.reports.insert(
            client_id,
            PeerReport {
                slot,
                name: name.clone(),
                reliable_sent: 0,
                status: PeerStatus::Connected,
                reason: None,
                commands: 0,
                bad_messages: 0,
                upstream_out_of_order: 0,
                upstream_received: 0,
                rail_shots: 0,
                rail_hits: 0,
                session: ServerClientStats::default(),
            },
        );
        self.peers.insert(
            client,
            Peer {
                client_id,
                slot,
                next_seq: 0,
                expect_seq: 0,
                spawned: false,
                name,
            },
        );
        Ok(())
    }

    /// The client holds the gamestate: its player spawns (once) and everyone
    /// hears of it.
    fn entered(&mut self, client: ClientKey) -> Result<(), Error> {
        let Some(peer) = self.peers.get_mut(&client) else {
            return Ok(());
        };
        if peer.spawned {
            return Ok(());
        }
        peer.spawned = true;
        let (slot, name) = (peer.slot, peer.name.clone());
        self.world.add_player(slot, &name);
        self.set_configstring(CS_PLAYERS + slot as usize, &format!("n\\{name}"))?;
        self.broadcast(ServerMessage::Join {
            client: slot,
            name: &name,
        });
        Ok(())
    }

    fn disconnected(
        &mut self,
        client: ClientKey,
        reason: DisconnectReason,
        stats: ServerClientStats,
    ) -> Result<(), Error> {
        let Some(peer) = self.peers.remove(&client) else {
            return Ok(());
        };
        let (status, leave) = match reason {
            DisconnectReason::TimedOut => {
                self.stats.timeouts += 1;
                (PeerStatus::TimedOut, LeaveReason::TimedOut)
            }
            DisconnectReason::PeerLeft => (PeerStatus::Left, LeaveReason::Disconnected),
            DisconnectReason::ServerShutdown | DisconnectReason::ServerRestarting => {
                (PeerStatus::Shutdown, LeaveReason::Disconnected)
            }
            _ => (PeerStatus::Dropped, LeaveReason::Disconnected),
        };
        if let Some(report) = self.reports.get_mut(&peer.client_id) {
            report.status = status;
            report.reason = Some(reason);
            report.session = stats;
        }
        if peer.spawned {
            self.world.remove_player(peer.slot);
            self.set_configstring(CS_PLAYERS + peer.slot as usize, "")?;
            self.broadcast(ServerMessage::Leave {
                client: peer.slot,
                reason: leave,
            });
        }
        Ok(())
    }

    fn client_message(&mut self, client: ClientKey, data: &[u8]) {
        let Some(peer) = self.peers.get_mut(&client) else {
            return;
        };
        let report = self.reports.get_mut(&peer.client_id);
        let Ok((seq, message)) = ClientMessage::decode(data) else {
            if let Some(report) = report {
                report.bad_messages += 1;
            }
            return;
        };
        if let Some(report) = report {
            report.upstream_received += 1;
            if seq != peer.expect_seq {
                report.upstream_out_of_order += 1;
            }
        }
        peer.expect_seq = seq.wrapping_add(1);
        match message {
            ClientMessage::Say { text } if peer.spawned && !self.ended => {
                let text = text.to_owned();
                let from = peer.slot;
                self.stats.chat += 1;
                self.broadcast(ServerMessage::Chat { from, text: &text });
            }
            ClientMessage::Say { .. } => {}
        }
    }

    /// Queues `message` to every peer, each with its own next sequence number.
    fn broadcast(&mut self, message: ServerMessage<'_>) {
        let keys: Vec<ClientKey> = self.peers.keys().copied().collect();
        for key in keys {
            let Some(peer) = self.peers.get_mut(&key) else {
                continue;
            };
            message.encode(peer.next_seq, &mut self.message);
            let queued = self
                .session
                .send_reliable(self.net.endpoint_mut(), key, &self.message)
                .is_ok();
            if queued {
                peer.next_seq = peer.next_seq.wrapping_add(1);
                if let Some(report) = self.reports.get_mut(&peer.client_id) {
                    report.reliable_sent += 1;
                }
            }
        }
    }

    /// Changes a configstring; the session tells everyone and the recording.
    fn set_configstring(&mut self, index: usize, value: &str) -> Result<(), Error> {
        self.session
            .set_configstring(self.net.endpoint_mut(), index, value)?;
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
        self.session
            .send_snapshots(self.net.endpoint_mut(), time, &mut ArenaScope)?;
        if let Some(recorded) = self.session.recording_stats() {
            self.stats.recorded = recorded.snapshots;
            self.stats.recorded_keyframes = recorded.keyframes;
        }
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
            self.session
                .world_mut()
                .set_always_in_scope(ITEM_BASE + index as u32, true)?;
        }
        for index in 0..PROJECTILE_SLOTS {
            let state = self.world.projectile_entity(index);
            self.put(PROJECTILE_BASE + index as u32, state)?;
        }
        for (&key, peer) in &self.peers {
            if let Some(state) = self.world.player_state(peer.slot) {
                self.session.set_player_state(key, state)?;
            }
        }
        Ok(())
    }

    /// Sets, changes or removes one master entity, touching it only when it
    /// changed (so the history stores nothing new for it).
    fn put(&mut self, number: u32, state: Option<EntityState>) -> Result<(), Error> {
        let master = self.session.world_mut();
        match (master.entity(number), state) {
            (Some(old), Some(new)) if *old == new => {}
            (_, Some(new)) => master.set_entity(number, new)?,
            (Some(_), None) => {
                master.remove_entity(number);
            }
            (None, None) => {}
        }
        Ok(())
    }

    /// Tells every client the server shuts down (they are disconnected
    /// with that reason; the events follow from later pumps).
    pub fn shutdown(&mut self) {
        self.session.shutdown(self.net.endpoint_mut(), false);
    }

    /// Closes the recording (index and end record written).
    pub fn finish_recording(&mut self) -> Result<(), Error> {
        if let Some((_, recorded)) = self.session.finish_recording()? {
            self.stats.recorded = recorded.snapshots;
            self.stats.recorded_keyframes = recorded.keyframes;
        }
        Ok(())
    }

    /// The session counters of every connected peer into its report.
    pub fn refresh_reports(&mut self) {
        for (key, peer) in &self.peers {
            if let (Some(info), Some(report)) = (
                self.session.client(*key),
                self.reports.get_mut(&peer.client_id),
            ) {
                report.session = info.stats;
            }
        }
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
}
