//! The sans-IO live client: a state machine fed with datagrams and the
//! current time, returning datagrams to send and events.
//!
//! Stages follow Quake 3's client: `getchallenge` until a
//! `challengeResponse`, `connect` until a `connectResponse` (each resent
//! every [`LiveConfig::retransmit`], [`LiveConfig::connect_attempts`] times at
//! most), then sequenced packets once a second until the gamestate arrives,
//! then one packet every [`LiveConfig::packet_interval`] carrying the last
//! two usercmds. Every client packet acknowledges the last server message
//! (the base the server deltas the next snapshot from) and the last reliable
//! server command; the reliable client commands not yet acknowledged ride
//! along until they are.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fields::{BitReader, BitSink, BitSource, BitWriter, HuffmanCode, HuffmanReader, HuffmanWriter};

use super::error::LiveError;
use super::netchan::{
    detect_framing, scramble, Dropped, Framing, Netchan, NetchanStats, Protocol, Side,
    CLIENT_SCRAMBLE_START, SERVER_SCRAMBLE_START,
};
use super::oob::{self, info_value, parse_server_oob, ServerOob, Userinfo};
use super::pak::PakIndex;
use super::pure;
use super::usercmd::{hash_key, Usercmd};
use crate::client::Q3Client;
use crate::message::{Command, ParsedMessage, MAX_MSGLEN, MAX_STRING_CHARS};

/// Reliable commands each side keeps (`MAX_RELIABLE_COMMANDS`).
pub const MAX_RELIABLE_COMMANDS: usize = 64;
/// Most usercmds in one packet (`MAX_PACKET_USERCMDS`).
pub const MAX_PACKET_USERCMDS: usize = 32;
/// Configstring holding the server info (`CS_SERVERINFO`).
pub const CS_SERVERINFO: usize = 0;
/// Configstring holding the system info (`CS_SYSTEMINFO`).
pub const CS_SYSTEMINFO: usize = 1;

/// Client command bytes (`clc_ops_e`).
pub mod clc {
    /// A usercmd block delta-coded against the acknowledged snapshot.
    pub const MOVE: u8 = 2;
    /// A usercmd block asking for a full snapshot.
    pub const MOVE_NO_DELTA: u8 = 3;
    /// A reliable text command.
    pub const CLIENT_COMMAND: u8 = 4;
    /// End of the message.
    pub const EOF: u8 = 5;
}

/// What the player does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Movement {
    /// Stands still (usercmds carry only the time).
    Idle,
    /// Runs forward while turning, reverses the turn every two seconds and
    /// presses attack every other second (which also respawns it).
    #[default]
    Wander,
}

/// How the client connects and plays.
#[derive(Debug, Clone)]
pub struct LiveConfig {
    /// Protocol 71 (ioquake3 and OpenArena) or 68 (id's).
    pub protocol: Protocol,
    /// The framing, when known in advance. `None` (the default): protocol
    /// 68 is always [`Framing::Legacy`]; under 71 the client tells ioquake3's
    /// framing from OpenArena's legacy one by the server's first sequenced
    /// datagram (see [`detect_framing`]).
    pub framing: Option<Framing>,
    /// Player name.
    pub name: String,
    /// The qport sent in every packet (lets a NAT remap the port).
    pub qport: u16,
    /// The client challenge sent with `getchallenge`.
    pub client_challenge: i32,
    /// Time between packets once in the game (`1000 / cl_maxpackets`).
    pub packet_interval: Duration,
    /// Time between handshake retries (`RETRANSMIT_TIMEOUT`).
    pub retransmit: Duration,
    /// Handshake packets sent per stage before giving up.
    pub connect_attempts: u32,
    /// Silence after which the connection counts as lost; also the longest
    /// wait for the gamestate once connected.
    pub timeout: Duration,
    /// Snapshots per second asked for (`snaps`).
    pub snaps: u32,
    /// Bytes per second the server may send (`rate`).
    pub rate: u32,
    /// What the player does.
    pub movement: Movement,
    /// Reliable commands sent once, when the first snapshot arrives (e.g.
    /// `say hello`).
    pub commands_on_enter: Vec<String>,
    /// The local paks, to answer pure servers (`sv_pure 1`) with their
    /// checksums; without them a pure server ends the session with an error.
    pub paks: Option<Arc<PakIndex>>,
}

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            protocol: Protocol::V71,
            framing: None,
            name: "netq3".into(),
            qport: 27_015,
            client_challenge: 0x1d2c_3b4a,
            packet_interval: Duration::from_millis(33),
            retransmit: Duration::from_secs(3),
            connect_attempts: 5,
            timeout: Duration::from_secs(10),
            snaps: 20,
            rate: 25_000,
            movement: Movement::default(),
            commands_on_enter: Vec::new(),
            paks: None,
        }
    }
}

impl LiveConfig {
    /// The userinfo sent with `connect` for the given server challenge.
    pub fn userinfo(&self, challenge: i32) -> Userinfo {
        let mut info = Userinfo::default();
        let rate = self.rate.to_string();
        let snaps = self.snaps.to_string();
        for (key, value) in [
            ("name", self.name.as_str()),
            ("rate", &rate),
            ("snaps", &snaps),
            ("model", "sarge"),
            ("headmodel", "sarge"),
            ("team_model", "sarge"),
            ("team_headmodel", "sarge"),
            ("handicap", "100"),
            ("teamtask", "0"),
            ("sex", "male"),
            ("color1", "4"),
            ("color2", "5"),
            ("cl_anonymous", "0"),
            ("cg_predictItems", "1"),
            ("cl_voipProtocol", ""),
        ] {
            info.set(key, value);
        }
        // Some games (OpenArena) refuse players without a 32-hex-digit GUID;
        // this one is derived from the settings, so it is stable per client.
        info.set("cl_guid", &self.guid());
        info.set("protocol", &self.protocol.number().to_string())
            .set("qport", &self.qport.to_string())
            .set("challenge", &challenge.to_string());
        info
    }
}

impl LiveConfig {
    /// The `cl_guid` sent: 32 upper-case hex digits derived from the name,
    /// qport and client challenge (FNV-1a, twice with different seeds).
    pub fn guid(&self) -> String {
        let text = format!("{}/{}/{}", self.name, self.qport, self.client_challenge);
        let fnv = |seed: u64| {
            text.bytes().fold(seed, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            })
        };
        format!(
            "{:016X}{:016X}",
            fnv(0xcbf2_9ce4_8422_2325),
            fnv(0x8422_2325_cbf2_9ce4)
        )
    }
}

/// Where the client is in its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Sending `getchallenge`.
    Challenging,
    /// Sending `connect`.
    Connecting,
    /// Connected, waiting for the gamestate.
    Connected,
    /// Has a gamestate, no snapshot yet.
    Primed,
    /// Receiving snapshots.
    Active,
    /// Over (see [`LiveClient::end`]).
    Ended,
}

/// Something that happened, in order.
#[derive(Debug, Clone)]
pub enum Event {
    /// The server answered `getchallenge`.
    Challenge {
        /// The server's challenge.
        challenge: i32,
        /// The protocol it announced.
        protocol: Option<u32>,
    },
    /// The server accepted the connection.
    Connected,
    /// A connectionless `print` after the connection.
    Print(String),
    /// A server message, decoded (and unscrambled under protocol 68).
    Message {
        /// Its sequence number.
        sequence: i32,
        /// Its bytes after the netchan header: what a `.dm_68` record holds.
        payload: Vec<u8>,
        /// What it said.
        message: Box<ParsedMessage>,
    },
    /// The session ended (the reason is [`LiveClient::end`]).
    Ended,
}

/// How a session ended.
#[derive(Debug)]
pub enum End {
    /// [`LiveClient::disconnect`] was called.
    Quit,
    /// Something else ended it.
    Error(LiveError),
}

/// Counters kept by the client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ClientStats {
    /// Datagrams sent.
    pub datagrams_sent: u64,
    /// Datagrams received.
    pub datagrams_received: u64,
    /// Sequenced datagrams that did not read as netchan packets.
    pub bad_datagrams: u64,
    /// New reliable server commands.
    pub server_commands: u64,
    /// Reliable server command sequence numbers skipped (never received).
    pub server_command_gaps: u64,
    /// Gamestates received.
    pub gamestates: u64,
    /// Usercmds generated.
    pub usercmds: u64,
    /// Packets sent with `clc_move` (acknowledging a snapshot as delta base).
    pub delta_moves: u64,
    /// Packets sent with `clc_moveNoDelta`.
    pub full_moves: u64,
    /// `cp` answers sent to a pure server (one per gamestate).
    pub pure_answers: u64,
}

/// The live client. Feed it with [`LiveClient::handle_datagram`] and
/// [`LiveClient::poll`]; read [`LiveClient::next_event`]; send what
/// [`LiveClient::next_datagram`] returns; sleep until
/// [`LiveClient::deadline`] or the next datagram.
#[derive(Debug)]
pub struct LiveClient {
    config: LiveConfig,
    stage: Stage,
    end: Option<End>,
    challenge: i32,
    attempts: u32,
    next_handshake: Instant,
    netchan: Netchan,
    /// The framing, once known (68: from the start; 71: from the server's
    /// first sequenced datagram).
    framing: Option<Framing>,
    connected_at: Option<Instant>,
    parser: Q3Client,
    server_id: i32,
    checksum_feed: i32,
    server_message_sequence: i32,
    server_command_sequence: i32,
    server_commands: Vec<String>,
    reliable_sequence: i32,
    reliable_acknowledge: i32,
    reliable_commands: Vec<String>,
    /// The latest valid snapshot: its message number, server time, and when it came.
    snap: Option<(i32, i32, Instant)>,
    cmds: VecDeque<Usercmd>,
    last_sent: Option<Instant>,
    last_received: Instant,
    started: Instant,
    outgoing: VecDeque<Vec<u8>>,
    events: VecDeque<Event>,
    stats: ClientStats,
    entered: bool,
    packet_buf: Vec<u8>,
}

fn ring_index(sequence: i32) -> usize {
    (sequence as u32 as usize) & (MAX_RELIABLE_COMMANDS - 1)
}

impl LiveClient {
    /// A client that will start its handshake at the first [`LiveClient::poll`].
    pub fn new(config: LiveConfig, now: Instant) -> Self {
        let netchan = Netchan::new(config.protocol, config.qport, 0);
        let framing = match config.protocol {
            Protocol::V68 => Some(Framing::Legacy),
            Protocol::V71 => config.framing,
        };
        LiveClient {
            framing,
            connected_at: None,
            config,
            stage: Stage::Challenging,
            end: None,
            challenge: 0,
            attempts: 0,
            next_handshake: now,
            netchan,
            parser: Q3Client::new(),
            server_id: 0,
            checksum_feed: 0,
            server_message_sequence: 0,
            server_command_sequence: 0,
            server_commands: vec![String::new(); MAX_RELIABLE_COMMANDS],
            reliable_sequence: 0,
            reliable_acknowledge: 0,
            reliable_commands: vec![String::new(); MAX_RELIABLE_COMMANDS],
            snap: None,
            cmds: VecDeque::new(),
            last_sent: None,
            last_received: now,
            started: now,
            outgoing: VecDeque::new(),
            events: VecDeque::new(),
            stats: ClientStats::default(),
            entered: false,
            packet_buf: Vec::with_capacity(MAX_MSGLEN),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &LiveConfig {
        &self.config
    }

    /// Where the session is.
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// Why the session ended, once it has.
    pub fn end(&self) -> Option<&End> {
        self.end.as_ref()
    }

    /// The parse state (configstrings, snapshots).
    pub fn parser(&self) -> &Q3Client {
        &self.parser
    }

    /// The client's counters.
    pub fn stats(&self) -> ClientStats {
        self.stats
    }

    /// The framing of the connection, once known.
    pub fn framing(&self) -> Option<Framing> {
        self.framing
    }

    /// The netchan's counters.
    pub fn netchan_stats(&self) -> NetchanStats {
        self.netchan.stats()
    }

    /// The server id of the current gamestate (`sv_serverid`).
    pub fn server_id(&self) -> i32 {
        self.server_id
    }

    /// The last reliable server command received.
    pub fn server_command_sequence(&self) -> i32 {
        self.server_command_sequence
    }

    /// Reliable client commands sent and acknowledged by the server.
    pub fn reliable_sequences(&self) -> (i32, i32) {
        (self.reliable_sequence, self.reliable_acknowledge)
    }

    /// The usercmd made for `server_time`, if still among the last 64.
    pub fn usercmd_at(&self, server_time: i32) -> Option<&Usercmd> {
        self.cmds
            .iter()
            .rev()
            .find(|c| c.server_time == server_time)
    }

    /// The next event, if any.
    pub fn next_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The next datagram to send, if any.
    pub fn next_datagram(&mut self) -> Option<Vec<u8>> {
        let datagram = self.outgoing.pop_front();
        self.stats.datagrams_sent += datagram.is_some() as u64;
        datagram
    }

    /// When [`LiveClient::poll`] next has something to do.
    pub fn deadline(&self) -> Option<Instant> {
        let silence = self.last_received + self.config.timeout;
        match self.stage {
            Stage::Ended => None,
            Stage::Challenging | Stage::Connecting => Some(self.next_handshake),
            Stage::Connected | Stage::Primed | Stage::Active => {
                let send = self
                    .last_sent
                    .map_or(silence, |sent| sent + self.send_interval());
                let gamestate = match (self.stage, self.connected_at) {
                    (Stage::Connected, Some(at)) => at + self.config.timeout,
                    _ => silence,
                };
                Some(send.min(silence).min(gamestate))
            }
        }
    }

    fn send_interval(&self) -> Duration {
        if self.stage == Stage::Connected {
            // Quake 3 sends once a second until it has a gamestate.
            Duration::from_secs(1)
        } else {
            self.config.packet_interval
        }
    }

    fn finish(&mut self, end: End) {
        if self.stage != Stage::Ended {
            self.stage = Stage::Ended;
            self.end = Some(end);
            self.events.push_back(Event::Ended);
        }
    }

    /// Queues a reliable client command (e.g. `say hello`).
    pub fn add_reliable_command(&mut self, text: &str) -> Result<(), LiveError> {
        if self.reliable_sequence - self.reliable_acknowledge >= MAX_RELIABLE_COMMANDS as i32 {
            return Err(LiveError::Usage("too many unacknowledged client commands"));
        }
        self.reliable_sequence += 1;
        let mut text = text.to_owned();
        text.truncate(MAX_STRING_CHARS - 1);
        self.reliable_commands[ring_index(self.reliable_sequence)] = text;
        Ok(())
    }

    /// Leaves the game: sends `disconnect` three times (as Quake 3 does, in
    /// case some are lost) and ends the session.
    pub fn disconnect(&mut self, now: Instant) {
        if matches!(self.stage, Stage::Connected | Stage::Primed | Stage::Active) {
            let _ = self.add_reliable_command("disconnect");
            for _ in 0..3 {
                if let Err(e) = self.write_packet(now) {
                    self.finish(End::Error(e));
                    return;
                }
            }
        }
        self.finish(End::Quit);
    }

    /// Does whatever is due at `now`: handshake retries, the next packet,
    /// the timeout.
    pub fn poll(&mut self, now: Instant) {
        let result = self.poll_inner(now);
        if let Err(e) = result {
            self.fail(now, e);
        }
    }

    fn poll_inner(&mut self, now: Instant) -> Result<(), LiveError> {
        match self.stage {
            Stage::Ended => Ok(()),
            Stage::Challenging | Stage::Connecting => {
                if now < self.next_handshake {
                    return Ok(());
                }
                let stage = if self.stage == Stage::Challenging {
                    "challengeResponse"
                } else {
                    "connectResponse"
                };
                if self.attempts >= self.config.connect_attempts {
                    return Err(LiveError::NoAnswer {
                        stage,
                        attempts: self.attempts,
                    });
                }
                self.attempts += 1;
                self.next_handshake = now + self.config.retransmit;
                let packet = if self.stage == Stage::Challenging {
                    oob::getchallenge(self.config.client_challenge)
                } else {
                    oob::connect(&self.config.userinfo(self.challenge))?
                };
                self.outgoing.push_back(packet);
                Ok(())
            }
            Stage::Connected | Stage::Primed | Stage::Active => {
                let silent = now.saturating_duration_since(self.last_received);
                if silent >= self.config.timeout {
                    return Err(LiveError::TimedOut {
                        seconds: silent.as_secs_f64(),
                    });
                }
                if let (Stage::Connected, Some(at)) = (self.stage, self.connected_at) {
                    let waited = now.saturating_duration_since(at);
                    if waited >= self.config.timeout {
                        return Err(LiveError::NoGamestate {
                            seconds: waited.as_secs_f64(),
                            datagrams: self.stats.datagrams_received,
                        });
                    }
                }
                let due = self
                    .last_sent
                    .is_none_or(|sent| now >= sent + self.send_interval());
                if due {
                    self.write_packet(now)?;
                }
                Ok(())
            }
        }
    }

    /// Takes one datagram from the server.
    pub fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) {
        if self.stage == Stage::Ended {
            return;
        }
        self.stats.datagrams_received += 1;
        let result = if oob::is_oob(datagram) {
            self.handle_oob(now, datagram)
        } else {
            self.handle_sequenced(now, datagram)
        };
        if let Err(e) = result {
            self.fail(now, e);
        }
    }

    /// Ends the session on `error`. When the client gives up on a
    /// connection the server still holds (a message it cannot read, a pak
    /// it lacks), it says `disconnect` first, as Quake 3's client does on an
    /// error, so the server frees the slot at once.
    fn fail(&mut self, now: Instant, error: LiveError) {
        let server_gone = matches!(
            error,
            LiveError::Disconnected(_) | LiveError::TimedOut { .. } | LiveError::Io(_)
        );
        if !server_gone
            && matches!(self.stage, Stage::Connected | Stage::Primed | Stage::Active)
            && self.add_reliable_command("disconnect").is_ok()
        {
            for _ in 0..3 {
                if self.write_packet(now).is_err() {
                    break;
                }
            }
        }
        self.finish(End::Error(error));
    }

    fn handle_oob(&mut self, now: Instant, datagram: &[u8]) -> Result<(), LiveError> {
        let Some(packet) = parse_server_oob(datagram) else {
            return Ok(());
        };
        match packet {
            ServerOob::ChallengeResponse {
                challenge,
                client_challenge,
                protocol,
            } => {
                if self.stage != Stage::Challenging {
                    return Ok(());
                }
                if client_challenge.is_some_and(|c| c != self.config.client_challenge) {
                    return Ok(()); // not an answer to our request
                }
                self.challenge = challenge;
                self.stage = Stage::Connecting;
                self.attempts = 0;
                self.next_handshake = now;
                self.last_received = now;
                self.events.push_back(Event::Challenge {
                    challenge,
                    protocol,
                });
                self.poll_inner(now)
            }
            ServerOob::ConnectResponse { challenge } => {
                if self.stage != Stage::Connecting {
                    return Ok(());
                }
                if self.config.protocol == Protocol::V71 && challenge != Some(self.challenge) {
                    return Ok(()); // a stale or forged answer
                }
                let framing = self
                    .framing
                    .unwrap_or(self.config.protocol.default_framing());
                self.netchan = Netchan::client(framing, self.config.qport, self.challenge);
                self.stage = Stage::Connected;
                self.connected_at = Some(now);
                self.last_received = now;
                // While the framing is unknown, wait (at most the one second
                // Quake 3 waits between packets in this stage) for the
                // server's first datagram to tell it: ioquake3 servers send
                // connected clients packets at once.
                self.last_sent = if self.framing.is_none() {
                    Some(now)
                } else {
                    None
                };
                self.events.push_back(Event::Connected);
                self.poll_inner(now)
            }
            ServerOob::Print(text) => {
                if matches!(self.stage, Stage::Challenging | Stage::Connecting) {
                    return Err(LiveError::Rejected(text.trim().to_owned()));
                }
                self.events.push_back(Event::Print(text));
                Ok(())
            }
            ServerOob::Disconnect
                if !matches!(self.stage, Stage::Challenging | Stage::Connecting) =>
            {
                Err(LiveError::Disconnected("disconnect packet".into()))
            }
            _ => Ok(()),
        }
    }

    fn handle_sequenced(&mut self, now: Instant, datagram: &[u8]) -> Result<(), LiveError> {
        if matches!(self.stage, Stage::Challenging | Stage::Connecting) || datagram.len() < 4 {
            return Ok(());
        }
        if self.framing.is_none() {
            if let Some(framing) = detect_framing(datagram, Side::Server, self.challenge) {
                self.framing = Some(framing);
                self.netchan.set_framing(framing);
                // Answer at once now that our packets will be read right.
                self.last_sent = None;
            }
        }
        let incoming = match self.netchan.process(datagram) {
            Ok(Ok(incoming)) => incoming,
            Ok(Err(Dropped::Fragment)) => {
                self.last_received = now;
                return Ok(());
            }
            Ok(Err(_)) => return Ok(()),
            Err(_) => {
                self.stats.bad_datagrams += 1;
                return Ok(());
            }
        };
        self.last_received = now;
        let mut payload = incoming.payload;
        if self.netchan.framing().scrambles() {
            // The key text is our reliable command the message acknowledges;
            // the acknowledge is read before unscrambling, as Quake 3 does.
            let acknowledge = read_long(&payload).unwrap_or(0);
            let seed = self.challenge ^ incoming.sequence;
            let text = &self.reliable_commands[ring_index(acknowledge)];
            scramble(&mut payload, SERVER_SCRAMBLE_START, seed, text.as_bytes());
        }
        self.server_message_sequence = incoming.sequence;
        let message = self
            .parser
            .parse_message(incoming.sequence, &payload)
            .map_err(|source| LiveError::Decode {
                sequence: incoming.sequence,
                source,
            })?;
        self.absorb(now, &message)?;
        self.events.push_back(Event::Message {
            sequence: incoming.sequence,
            payload,
            message: Box::new(message),
        });
        Ok(())
    }

    /// Updates the connection state from a parsed message.
    fn absorb(&mut self, now: Instant, message: &ParsedMessage) -> Result<(), LiveError> {
        let acknowledge = message.reliable_acknowledge;
        self.reliable_acknowledge =
            if acknowledge < self.reliable_sequence - MAX_RELIABLE_COMMANDS as i32 {
                self.reliable_sequence
            } else {
                acknowledge.min(self.reliable_sequence)
            };
        let mut disconnect = None;
        for command in &message.commands {
            match &command.command {
                Command::Gamestate(gamestate) => {
                    self.stats.gamestates += 1;
                    self.server_command_sequence = gamestate.server_command_sequence;
                    self.checksum_feed = gamestate.checksum_feed;
                    self.snap = None;
                    self.cmds.clear();
                    if matches!(self.stage, Stage::Connected | Stage::Active | Stage::Primed) {
                        self.stage = Stage::Primed;
                    }
                    // Send the first usercmd at once: it puts us in the world.
                    self.last_sent = None;
                    // A pure server wants our pak checksums before the
                    // first move (`CL_SendPureChecksums`).
                    let systeminfo = self.parser.configstring(CS_SYSTEMINFO);
                    if info_value(systeminfo, "sv_pure") == "1" {
                        let Some(paks) = &self.config.paks else {
                            return Err(LiveError::Unsupported(
                                "the server is pure (sv_pure 1) and no local paks were given \
                                 to answer it with"
                                    .into(),
                            ));
                        };
                        if let Some(answer) =
                            pure::answer(systeminfo, gamestate.checksum_feed, paks)?
                        {
                            self.add_reliable_command(&answer.command)?;
                            self.stats.pure_answers += 1;
                        }
                    }
                }
                Command::ServerCommand(command) if command.is_new => {
                    self.stats.server_commands += 1;
                    let gap = command.sequence - self.server_command_sequence - 1;
                    self.stats.server_command_gaps += gap.max(0) as u64;
                    self.server_command_sequence = command.sequence;
                    self.server_commands[ring_index(command.sequence)] = command.text.clone();
                    let mut words = command.text.split_whitespace();
                    if words.next() == Some("disconnect") {
                        let reason = command.text["disconnect".len()..].trim().trim_matches('"');
                        disconnect = Some(reason.to_owned());
                    }
                }
                Command::Snapshot(snapshot) if snapshot.snapshot.is_valid() => {
                    let s = &snapshot.snapshot;
                    if self.snap.is_none_or(|(num, _, _)| s.message_num > num) {
                        self.snap = Some((s.message_num, s.server_time, now));
                    }
                    if self.stage == Stage::Primed {
                        self.stage = Stage::Active;
                        if !self.entered {
                            self.entered = true;
                            for text in self.config.commands_on_enter.clone() {
                                self.add_reliable_command(&text)?;
                            }
                        }
                    }
                }
                Command::Download(_) => {
                    // Never asked for: tell the server to stop.
                    self.add_reliable_command("stopdl")?;
                }
                _ => {}
            }
        }
        // The system info carries the server id (it changes on map_restart).
        let id = info_value(self.parser.configstring(CS_SYSTEMINFO), "sv_serverid");
        if !id.is_empty() {
            self.server_id = id.parse().unwrap_or(self.server_id);
        }
        if let Some(reason) = disconnect {
            return Err(LiveError::Disconnected(if reason.is_empty() {
                "disconnect".into()
            } else {
                reason
            }));
        }
        Ok(())
    }

    /// The usercmd for this packet.
    fn next_usercmd(&mut self, now: Instant) -> Usercmd {
        let previous = self.cmds.back().copied().unwrap_or_default();
        let server_time = match self.snap {
            Some((_, time, at)) => {
                let elapsed = now.saturating_duration_since(at).as_millis().min(10_000) as i32;
                time.wrapping_add(elapsed).max(previous.server_time + 1)
            }
            None => previous.server_time,
        };
        let mut cmd = Usercmd {
            server_time,
            ..Usercmd::default()
        };
        if self.config.movement == Movement::Wander && self.snap.is_some() {
            let ms = now.saturating_duration_since(self.started).as_millis() as u64;
            let turning_right = (ms / 2000) % 2 == 0;
            let step = (65_536u32 / 360 * 3) as u16;
            let yaw = previous.angles[1];
            cmd.angles[1] = if turning_right {
                yaw.wrapping_sub(step)
            } else {
                yaw.wrapping_add(step)
            };
            cmd.forward = 127;
            cmd.buttons = if (ms / 1000) % 2 == 1 { 1 } else { 0 };
        }
        self.cmds.push_back(cmd);
        while self.cmds.len() > 64 {
            self.cmds.pop_front();
        }
        self.stats.usercmds += 1;
        cmd
    }

    /// Builds and frames one client message (`CL_WritePacket`).
    fn write_packet(&mut self, now: Instant) -> Result<(), LiveError> {
        let code = HuffmanCode::quake3();
        // One buffer for every packet (taken out so `self` stays borrowable).
        let mut buf = std::mem::take(&mut self.packet_buf);
        buf.clear();
        buf.resize(MAX_MSGLEN, 0);
        let result = self.write_packet_into(now, code, &mut buf);
        self.packet_buf = buf;
        result
    }

    fn write_packet_into(
        &mut self,
        now: Instant,
        code: &HuffmanCode,
        buf: &mut Vec<u8>,
    ) -> Result<(), LiveError> {
        let mut writer = BitWriter::new(buf);
        let mut sink = HuffmanWriter::new(&mut writer, code);
        sink.put_bits(self.server_id as u32, 32)?;
        sink.put_bits(self.server_message_sequence as u32, 32)?;
        sink.put_bits(self.server_command_sequence as u32, 32)?;
        for sequence in self.reliable_acknowledge + 1..=self.reliable_sequence {
            sink.put_u8(clc::CLIENT_COMMAND)?;
            sink.put_bits(sequence as u32, 32)?;
            for byte in self.reliable_commands[ring_index(sequence)].bytes() {
                sink.put_u8(if byte > 127 || byte == b'%' {
                    b'.'
                } else {
                    byte
                })?;
            }
            sink.put_u8(0)?;
        }
        if matches!(self.stage, Stage::Primed | Stage::Active) {
            self.next_usercmd(now);
            // This packet's command and the previous one (`cl_packetdup 1`).
            let count = self.cmds.len().min(2);
            let delta = self
                .snap
                .is_some_and(|(num, _, _)| num == self.server_message_sequence);
            sink.put_u8(if delta { clc::MOVE } else { clc::MOVE_NO_DELTA })?;
            if delta {
                self.stats.delta_moves += 1;
            } else {
                self.stats.full_moves += 1;
            }
            sink.put_u8(count as u8)?;
            let acknowledged = &self.server_commands[ring_index(self.server_command_sequence)];
            let key = self.checksum_feed
                ^ self.server_message_sequence
                ^ hash_key(acknowledged.as_bytes(), 32);
            let mut from = Usercmd::default();
            for cmd in self.cmds.iter().skip(self.cmds.len() - count) {
                cmd.write_delta(&mut sink, key, &from)?;
                from = *cmd;
            }
        }
        sink.put_u8(clc::EOF)?;
        // Quake 3's message size: the byte holding the next bit to write.
        let len = sink.bits_written() / 8 + 1;
        buf.truncate(len);
        if self.netchan.framing().scrambles() {
            let seed = self.challenge ^ self.server_id ^ self.server_message_sequence;
            let text = &self.server_commands[ring_index(self.server_command_sequence)];
            scramble(buf, CLIENT_SCRAMBLE_START, seed, text.as_bytes());
        }
        let mut datagrams = Vec::new();
        self.netchan.transmit(buf, &mut datagrams)?;
        self.outgoing.extend(datagrams);
        self.last_sent = Some(now);
        Ok(())
    }
}

/// The first 32-bit value of a message in bitstream mode.
fn read_long(payload: &[u8]) -> Option<i32> {
    let mut source = HuffmanReader::new(BitReader::new(payload), HuffmanCode::quake3());
    source.get_bits(32).ok().map(|v| v as i32)
}
