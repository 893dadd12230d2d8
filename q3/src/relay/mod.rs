//! `q3 relay`: a Quake 3 server for spectators, fed by one source (a live
//! server our client follows as a spectator, or a recorded `.dm_68`), so
//! that many real Quake 3 clients can watch one match over one connection
//! to the game server — the job of QuakeWorld's QTV and Quake 3's GTV.
//!
//! The sans-IO core [`Relay`] takes datagrams and time and returns
//! datagrams and [`RelayEvent`]s; the source's state comes in through
//! [`Relay::load_gamestate`] and [`Relay::server_command`]. It speaks to
//! clients as ioquake3's server does:
//!
//! * connectionless requests ([`requests`]): `getchallenge` (answered with
//!   `challengeResponse <challenge> <client challenge> 71`), `connect` with
//!   the userinfo (protocol 68 or 71), `getinfo` and `getstatus` in Quake
//!   3's formats, each rate-limited per source address and in all
//!   ([`limiter`]); up to [`MAX_SPECTATORS`] spectators;
//! * the server end of the netchan for protocols 68 and 71, each client's
//!   framing (ioquake3's challenge word or the legacy scrambling that
//!   OpenArena's clients use under 71) told from its first packet;
//!   messages of 1300 bytes or more go as fragments of 1300;
//! * the gamestate with the source's configstrings (the system info
//!   rewritten: the relay's own `sv_serverid`, not pure) and baselines;
//! * client messages read ([`client_message`]): reliable commands executed
//!   once and acknowledged (`disconnect` frees the slot, `userinfo` renames,
//!   everything else is ignored), usercmds read with their keys and
//!   ignored;
//! * the source's reliable server commands (`print`, `cs`, `scores`,
//!   `chat`…) forwarded to every spectator.
//!
//! * the snapshot stream ([`stream`]): the source's snapshots are the
//!   master state of one `snapshot::Server` with the q3 codec and Quake 3's
//!   `svc_snapshot` framing; each spectator is a client of it, with its own
//!   32-slot ring, and gets each new frame (at most its `snaps` rate) after
//!   its reliable commands, coded against the newest snapshot it
//!   acknowledged, its player state marked as followed ([`view`]).

pub mod client_message;
#[doc(hidden)]
pub mod fuzzing;
pub mod limiter;
pub mod requests;
pub mod source;
mod spectator;
pub mod stream;
pub mod udp;
pub mod view;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::client::Q3Client;
use crate::commands::ConfigstringCommands;
use crate::live::netchan::{Framing, Protocol};
use crate::live::oob::{info_pairs, info_value, text_packet, Userinfo};
use crate::live::{CS_SERVERINFO, CS_SYSTEMINFO};
use crate::message::MAX_STRING_CHARS;
use crate::snapshot::{Baselines, Snapshot};
use stream::SnapshotStream;

pub use client_message::{parse_client_message, ClientMessage, ClientMessageError, Moves};
pub use limiter::RateLimiter;
pub use requests::{parse_request, ConnectInfo, Request};
pub use spectator::{Spectator, SpectatorState, SpectatorStats, Unreadable};

/// Most spectators at once.
pub const MAX_SPECTATORS: usize = 64;
/// Pending challenges kept (the oldest is reused beyond).
pub const MAX_CHALLENGES: usize = 1024;
/// The protocol number announced in `challengeResponse` and `getinfo`.
pub const ANNOUNCED_PROTOCOL: u32 = 71;

/// What stops a relay.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    /// The recorded match does not read.
    #[error("the demo does not read: {0}")]
    Demo(#[source] crate::Q3Error),
    /// The recorded match holds no gamestate.
    #[error("the demo holds no gamestate: nothing to relay")]
    NoGamestate,
    /// The live source ended the session.
    #[error("the source server: {0}")]
    Source(String),
    /// The socket failed.
    #[error("socket: {0}")]
    Io(#[from] std::io::Error),
}

/// The source's gamestate as the relay passes it on.
#[derive(Debug, Clone, Default)]
pub struct SourceGamestate {
    /// The configstrings set, by index.
    pub configstrings: Vec<(usize, String)>,
    /// The spawn baselines.
    pub baselines: Baselines,
    /// The client number spectators are given (the source's seat).
    pub client_num: i32,
}

impl SourceGamestate {
    /// The gamestate a Quake 3 parse state holds now (configstring updates
    /// included).
    pub fn of(client: &Q3Client) -> SourceGamestate {
        SourceGamestate {
            configstrings: client
                .configstrings()
                .map(|(i, s)| (i, s.to_owned()))
                .collect(),
            baselines: (**client.baselines()).clone(),
            client_num: client.client_num().unwrap_or(0),
        }
    }
}

/// How the relay serves.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// Spectators at most (1..=64).
    pub max_spectators: usize,
    /// The name shown by `getinfo`.
    pub hostname: String,
    /// The framing of protocol 71 clients, if fixed; `None` (the default)
    /// tells each client's from its first packet.
    pub framing_71: Option<Framing>,
    /// Silence after which a spectator is dropped.
    pub timeout: Duration,
    /// A challenge not used by `connect` within this time expires.
    pub challenge_timeout: Duration,
    /// Seeds the challenges and checksum feeds (vary it per run).
    pub seed: u64,
}

impl Default for RelayConfig {
    fn default() -> Self {
        RelayConfig {
            max_spectators: MAX_SPECTATORS,
            hostname: "netq3 relay".into(),
            framing_71: None,
            timeout: Duration::from_secs(20),
            challenge_timeout: Duration::from_secs(30),
            seed: 0x6e65_7471_3372_6c79,
        }
    }
}

/// Something that happened at the relay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelayEvent {
    /// A spectator connected (its slot and name).
    Connected {
        /// Its slot.
        slot: usize,
        /// Its address.
        address: SocketAddr,
        /// Its name.
        name: String,
    },
    /// A connection was refused, with the reason sent.
    Refused {
        /// Who asked.
        address: SocketAddr,
        /// Why.
        reason: String,
    },
    /// A spectator entered the game (its first usercmd).
    Entered {
        /// Its slot.
        slot: usize,
    },
    /// A reliable command from a spectator (executed once).
    Command {
        /// Its slot.
        slot: usize,
        /// The text.
        text: String,
    },
    /// A spectator left or was dropped.
    Dropped {
        /// Its slot.
        slot: usize,
        /// Why.
        reason: String,
    },
}

/// Counters of the relay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RelayStats {
    /// Datagrams received.
    pub datagrams_received: u64,
    /// Datagrams sent.
    pub datagrams_sent: u64,
    /// Connectionless requests answered.
    pub requests_answered: u64,
    /// Connectionless requests refused by the rate limits.
    pub requests_limited: u64,
    /// Sequenced datagrams from unknown addresses.
    pub strangers: u64,
    /// Client datagrams that did not read.
    pub unreadable: u64,
    /// Spectators accepted.
    pub connections: u64,
    /// Gamestates loaded from the source.
    pub source_gamestates: u64,
    /// Server commands forwarded from the source.
    pub forwarded_commands: u64,
    /// Source snapshots taken as frames of the stream.
    pub frames: u64,
    /// Source snapshots not newer than the frame before (skipped).
    pub stale_frames: u64,
    /// Snapshots sent to spectators.
    pub snapshots_sent: u64,
    /// Of which deltas.
    pub delta_snapshots_sent: u64,
    /// Errors of the snapshot stream (a frame or a snapshot the engine
    /// refused).
    pub stream_errors: u64,
}

#[derive(Debug, Clone)]
struct Challenge {
    address: SocketAddr,
    challenge: i32,
    time: Instant,
}

/// The generator of challenges and checksum feeds: the workspace's seeded
/// xoshiro256++ (vary [`RelayConfig::seed`] per run).
#[derive(Debug, Clone)]
struct Generator(Xoshiro256PlusPlus);

impl Generator {
    fn new(seed: u64) -> Generator {
        Generator(Xoshiro256PlusPlus::seed_from_u64(seed))
    }

    /// A positive 31-bit number, as Quake 3's challenges are.
    fn next_i32(&mut self) -> i32 {
        (self.0.next_u32() & 0x7fff_ffff) as i32
    }
}

/// The relay's state: the source's gamestate as spectators get it, the
/// spectators, pending challenges and rate limits.
#[derive(Debug)]
pub struct Relay {
    config: RelayConfig,
    generator: Generator,
    limiter: RateLimiter,
    challenges: Vec<Challenge>,
    spectators: Vec<Option<Spectator>>,
    configstrings: Vec<(usize, String)>,
    baselines: Baselines,
    client_num: i32,
    server_id: i32,
    checksum_feed: i32,
    has_gamestate: bool,
    stream: Option<SnapshotStream>,
    tracker: ConfigstringCommands,
    outgoing: VecDeque<(SocketAddr, Vec<u8>)>,
    events: VecDeque<RelayEvent>,
    stats: RelayStats,
}

impl Relay {
    /// A relay with no source gamestate yet (clients are refused until
    /// [`Relay::load_gamestate`]).
    pub fn new(config: RelayConfig, now: Instant) -> Relay {
        let mut generator = Generator::new(config.seed);
        let server_id = generator.next_i32();
        let checksum_feed = generator.next_i32();
        let slots = config.max_spectators.clamp(1, MAX_SPECTATORS);
        Relay {
            config,
            generator,
            limiter: RateLimiter::new(now),
            challenges: Vec::new(),
            spectators: (0..slots).map(|_| None).collect(),
            configstrings: Vec::new(),
            baselines: Baselines::default(),
            client_num: 0,
            server_id,
            checksum_feed,
            has_gamestate: false,
            stream: None,
            tracker: ConfigstringCommands::default(),
            outgoing: VecDeque::new(),
            events: VecDeque::new(),
            stats: RelayStats::default(),
        }
    }

    /// The counters.
    pub fn stats(&self) -> RelayStats {
        let mut stats = self.stats;
        stats.requests_limited = self.limiter.refused();
        stats
    }

    /// The server id spectators must name (`sv_serverid`).
    pub fn server_id(&self) -> i32 {
        self.server_id
    }

    /// The spectators, by slot.
    pub fn spectators(&self) -> impl Iterator<Item = (usize, &Spectator)> {
        self.spectators
            .iter()
            .enumerate()
            .filter_map(|(slot, s)| s.as_ref().map(|s| (slot, s)))
    }

    /// The configstrings spectators get (the source's, system info
    /// rewritten).
    pub fn configstring(&self, index: usize) -> &str {
        self.configstrings
            .iter()
            .find(|(i, _)| *i == index)
            .map_or("", |(_, s)| s.as_str())
    }

    /// The next event, if any.
    pub fn next_event(&mut self) -> Option<RelayEvent> {
        self.events.pop_front()
    }

    /// The next datagram to send and where, if any.
    pub fn next_datagram(&mut self) -> Option<(SocketAddr, Vec<u8>)> {
        let next = self.outgoing.pop_front();
        self.stats.datagrams_sent += u64::from(next.is_some());
        next
    }

    /// The system info as spectators get it: the relay's server id, not
    /// pure (the relay checks no paks), no pure pak lists.
    fn rewrite_systeminfo(&self, source: &str) -> String {
        let mut info = Userinfo::default();
        for (key, value) in info_pairs(source) {
            if !matches!(key, "sv_serverid" | "sv_pure" | "sv_paks" | "sv_pakNames") {
                info.set(key, value);
            }
        }
        info.set("sv_serverid", &self.server_id.to_string())
            .set("sv_pure", "0");
        info.as_str().to_owned()
    }

    /// Takes a new gamestate of the source (a new map, or the first one):
    /// every spectator gets it again (`SV_SpawnServer`).
    pub fn load_gamestate(&mut self, source: &SourceGamestate) {
        self.server_id = self.generator.next_i32();
        self.checksum_feed = self.generator.next_i32();
        self.configstrings = source
            .configstrings
            .iter()
            .filter(|(_, s)| !s.is_empty())
            .cloned()
            .collect();
        let source_systeminfo = source
            .configstrings
            .iter()
            .find(|(i, _)| *i == CS_SYSTEMINFO)
            .map_or("", |(_, s)| s.as_str());
        let systeminfo = self.rewrite_systeminfo(source_systeminfo);
        match self
            .configstrings
            .iter_mut()
            .find(|(i, _)| *i == CS_SYSTEMINFO)
        {
            Some((_, text)) => *text = systeminfo,
            None => self.configstrings.push((CS_SYSTEMINFO, systeminfo)),
        }
        self.configstrings.sort_by_key(|(i, _)| *i);
        self.baselines = source.baselines.clone();
        self.client_num = source.client_num;
        self.has_gamestate = true;
        self.tracker = ConfigstringCommands::default();
        self.stats.source_gamestates += 1;
        // A new world: every spectator starts again from a full snapshot.
        self.stream = match SnapshotStream::new(&self.baselines) {
            Ok(stream) => Some(stream),
            Err(_) => {
                self.stats.stream_errors += 1;
                None
            }
        };
        for spectator in self.spectators.iter_mut().flatten() {
            // Sent with the answer to its next packet, which will name the
            // old server id.
            spectator.state = SpectatorState::Connected;
            spectator.gamestate_message_num = -1;
            spectator.delta_message = -1;
            spectator.last_snapshot_time = None;
            spectator.stream_id = self.stream.as_mut().and_then(|s| s.add_spectator().ok());
        }
    }

    /// Takes the source's next snapshot as the stream's next frame and
    /// sends it to every primed or active spectator due one (its `snaps`
    /// rate). A snapshot not newer than the last frame is skipped.
    pub fn snapshot(&mut self, now: Instant, snapshot: &Snapshot) {
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        match stream.set_frame(snapshot) {
            Ok(true) => self.stats.frames += 1,
            Ok(false) => {
                self.stats.stale_frames += 1;
                return;
            }
            Err(_) => {
                self.stats.stream_errors += 1;
                return;
            }
        }
        let time = snapshot.server_time;
        for slot in 0..self.spectators.len() {
            let Some(spectator) = self.spectators[slot].as_ref() else {
                continue;
            };
            if spectator.state == SpectatorState::Connected {
                continue;
            }
            // Due when a message interval has (nearly) passed in server
            // time: frames come with some jitter.
            let interval = spectator.message_interval.as_millis() as i32;
            let due = spectator
                .last_snapshot_time
                .is_none_or(|last| time - last >= interval * 3 / 4 || time < last);
            if due {
                self.send_snapshot(now, slot);
            }
        }
    }

    /// Sends a spectator its message of the current frame.
    fn send_snapshot(&mut self, now: Instant, slot: usize) {
        let (Some(stream), Some(spectator)) =
            (self.stream.as_mut(), self.spectators[slot].as_mut())
        else {
            return;
        };
        let before = spectator.stats;
        let Ok(mut message) = spectator.snapshot_message(stream) else {
            self.stats.stream_errors += 1;
            return;
        };
        self.stats.snapshots_sent += spectator.stats.snapshots - before.snapshots;
        self.stats.delta_snapshots_sent += spectator.stats.delta_snapshots - before.delta_snapshots;
        // Frames keep coming: no message of commands alone in between.
        spectator.next_message = now + spectator.message_interval * 2;
        let mut datagrams = Vec::new();
        if spectator.transmit(&mut message, &mut datagrams).is_ok() {
            let address = spectator.address;
            self.outgoing
                .extend(datagrams.into_iter().map(|d| (address, d)));
        }
    }

    /// The snapshot stream, once the source gave a gamestate.
    pub fn stream(&self) -> Option<&SnapshotStream> {
        self.stream.as_ref()
    }

    /// Forwards a reliable server command of the source to every
    /// spectator. A change of the system info is sent rewritten as the
    /// spectators' own.
    pub fn server_command(&mut self, text: &str) {
        let update = self.tracker.apply(text);
        let texts: Vec<String> = match update {
            Some((index, value)) => {
                let value = if index == CS_SYSTEMINFO {
                    self.rewrite_systeminfo(&value)
                } else {
                    value
                };
                match self.configstrings.iter_mut().find(|(i, _)| *i == index) {
                    Some((_, text)) => *text = value.clone(),
                    None => {
                        self.configstrings.push((index, value.clone()));
                        self.configstrings.sort_by_key(|(i, _)| *i);
                    }
                }
                configstring_commands(index, &value)
            }
            None if text.starts_with("bcs") => Vec::new(), // sent whole once complete
            None => vec![text.to_owned()],
        };
        self.stats.forwarded_commands += 1;
        let mut dropped = Vec::new();
        for (slot, spectator) in self.spectators.iter_mut().enumerate() {
            let Some(spectator) = spectator else { continue };
            if texts.iter().any(|t| !spectator.add_command(t)) {
                dropped.push(slot);
            }
        }
        for slot in dropped {
            self.drop_spectator(slot, "fell too far behind the reliable commands");
        }
    }

    fn drop_spectator(&mut self, slot: usize, reason: &str) {
        if let Some(mut spectator) = self.spectators[slot].take() {
            if let (Some(stream), Some(id)) = (self.stream.as_mut(), spectator.stream_id) {
                stream.remove_spectator(id);
            }
            // Tell it, as `SV_DropClient` does, in a last message.
            if spectator.add_command(&format!("disconnect \"{reason}\"")) {
                if let Ok(mut message) = spectator.commands_message() {
                    let mut datagrams = Vec::new();
                    if spectator.transmit(&mut message, &mut datagrams).is_ok() {
                        let address = spectator.address;
                        self.outgoing
                            .extend(datagrams.into_iter().map(|d| (address, d)));
                    }
                }
            }
            self.events.push_back(RelayEvent::Dropped {
                slot,
                reason: reason.to_owned(),
            });
        }
    }

    /// Takes one datagram from `from`.
    pub fn handle_datagram(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) {
        self.stats.datagrams_received += 1;
        if crate::live::oob::is_oob(datagram) {
            self.handle_request(now, from, datagram);
            return;
        }
        let slot = self
            .spectators
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.address == from))
            .or_else(|| {
                // A NAT may have changed the port: the qport tells.
                let qport = u16::from_le_bytes([*datagram.get(4)?, *datagram.get(5)?]);
                self.spectators.iter().position(|s| {
                    s.as_ref()
                        .is_some_and(|s| s.address.ip() == from.ip() && s.netchan.qport() == qport)
                })
            });
        let Some(slot) = slot else {
            self.stats.strangers += 1;
            return;
        };
        let feed = self.checksum_feed;
        let Some(spectator) = self.spectators[slot].as_mut() else {
            return;
        };
        spectator.address = from;
        let message = match spectator.read(datagram, feed, now) {
            Ok(Some(message)) => message,
            Ok(None) => return,
            Err(_) => {
                self.stats.unreadable += 1;
                return;
            }
        };
        self.execute(now, slot, message);
    }

    /// Acts on a client message (`SV_ExecuteClientMessage`).
    fn execute(&mut self, now: Instant, slot: usize, message: ClientMessage) {
        let server_id = self.server_id;
        let Some(spectator) = self.spectators[slot].as_mut() else {
            return;
        };
        if message.message_acknowledge < 0 {
            return;
        }
        spectator.message_acknowledge = message.message_acknowledge;
        let behind = spectator.reliable_sequence - message.reliable_acknowledge;
        if !(0..MAX_RELIABLE).contains(&behind) {
            spectator.reliable_acknowledge = spectator.reliable_sequence;
            return;
        }
        spectator.reliable_acknowledge = message.reliable_acknowledge;
        if message.server_id != server_id {
            // A packet from before the current gamestate: (re)send it once
            // the client has acknowledged everything up to the last one.
            if spectator.state != SpectatorState::Active
                && spectator.message_acknowledge > spectator.gamestate_message_num
            {
                self.send_gamestate(now, slot);
            }
            return;
        }
        let mut commands = Vec::new();
        let mut lost = false;
        for (sequence, text) in message.commands {
            if sequence <= spectator.last_client_command {
                continue;
            }
            if sequence > spectator.last_client_command + 1 {
                lost = true;
                break;
            }
            spectator.last_client_command = sequence;
            spectator.last_client_command_text = text.clone();
            spectator.stats.commands += 1;
            commands.push(text);
        }
        if lost {
            self.drop_spectator(slot, "Lost reliable commands");
            return;
        }
        let mut entered = false;
        if let Some(moves) = &message.moves {
            spectator.stats.usercmds += moves.commands.len() as u64;
            spectator.delta_message = if moves.delta {
                message.message_acknowledge
            } else {
                -1
            };
            // `clc_move` names the newest message it holds a snapshot of:
            // the base of its next delta; `clc_moveNoDelta` holds none.
            if let (Some(stream), Some(id)) = (self.stream.as_mut(), spectator.stream_id) {
                let result = if moves.delta {
                    stream
                        .acknowledge(id, message.message_acknowledge)
                        .map(|_| ())
                } else {
                    spectator.stats.no_delta_moves += 1;
                    stream.request_full(id, message.message_acknowledge)
                };
                self.stats.stream_errors += u64::from(result.is_err());
            }
            if spectator.state == SpectatorState::Primed {
                spectator.state = SpectatorState::Active;
                spectator.delta_message = -1;
                entered = true;
            }
        }
        if entered {
            self.events.push_back(RelayEvent::Entered { slot });
        }
        for text in commands {
            self.client_command(slot, &text);
        }
    }

    /// A reliable command from a spectator: `disconnect` leaves, `userinfo`
    /// renames; the rest (`cp`, `say`, `team`, `follow`…) means nothing to
    /// a relay and is only acknowledged.
    fn client_command(&mut self, slot: usize, text: &str) {
        self.events.push_back(RelayEvent::Command {
            slot,
            text: text.to_owned(),
        });
        let mut words = text.split_whitespace();
        match words.next() {
            Some("disconnect") => self.drop_spectator(slot, "disconnected"),
            Some("userinfo") => {
                if let Some(spectator) = self.spectators[slot].as_mut() {
                    let info = text["userinfo".len()..].trim().trim_matches('"');
                    spectator.name = info_value(info, "name").chars().take(32).collect();
                    spectator.userinfo = info.to_owned();
                }
            }
            _ => {}
        }
    }

    fn send_gamestate(&mut self, now: Instant, slot: usize) {
        let (configstrings, baselines) = (&self.configstrings, &self.baselines);
        let Some(spectator) = self.spectators[slot].as_mut() else {
            return;
        };
        let Ok(mut message) = spectator.gamestate_message(
            configstrings,
            baselines,
            self.client_num,
            self.checksum_feed,
        ) else {
            return;
        };
        spectator.gamestate_message_num = spectator.netchan.outgoing_sequence();
        spectator.state = SpectatorState::Primed;
        spectator.last_snapshot_time = None;
        spectator.next_message = now + spectator.message_interval;
        let mut datagrams = Vec::new();
        if spectator.transmit(&mut message, &mut datagrams).is_ok() {
            let address = spectator.address;
            self.outgoing
                .extend(datagrams.into_iter().map(|d| (address, d)));
        }
    }

    fn answer(&mut self, to: SocketAddr, text: &str) {
        self.stats.requests_answered += 1;
        self.outgoing.push_back((to, text_packet(text)));
    }

    fn refuse(&mut self, to: SocketAddr, reason: &str) {
        self.answer(to, &format!("print\n{reason}\n"));
        self.events.push_back(RelayEvent::Refused {
            address: to,
            reason: reason.to_owned(),
        });
    }

    /// A connectionless request.
    fn handle_request(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) {
        let Some(request) = parse_request(datagram) else {
            return;
        };
        if matches!(request, Request::Other(_)) {
            return;
        }
        if !self.limiter.allow(from.ip(), now) {
            return;
        }
        match request {
            Request::GetChallenge {
                client_challenge, ..
            } => {
                let challenge = self.new_challenge(now, from);
                self.answer(
                    from,
                    &format!(
                        "challengeResponse {challenge} {client_challenge} {ANNOUNCED_PROTOCOL}"
                    ),
                );
            }
            Request::Connect { userinfo } => self.connect(now, from, userinfo),
            Request::GetInfo { challenge } if challenge.len() <= 128 => {
                let info = self.info_string(&challenge);
                self.answer(from, &format!("infoResponse\n{info}"));
            }
            Request::GetStatus { challenge } if challenge.len() <= 128 => {
                let status = self.status_text(&challenge);
                self.answer(from, &format!("statusResponse\n{status}"));
            }
            _ => {}
        }
    }

    fn new_challenge(&mut self, now: Instant, from: SocketAddr) -> i32 {
        let timeout = self.config.challenge_timeout;
        self.challenges
            .retain(|c| now.saturating_duration_since(c.time) < timeout && c.address != from);
        if self.challenges.len() >= MAX_CHALLENGES {
            self.challenges.remove(0);
        }
        let challenge = self.generator.next_i32();
        self.challenges.push(Challenge {
            address: from,
            challenge,
            time: now,
        });
        challenge
    }

    fn connect(&mut self, now: Instant, from: SocketAddr, userinfo: String) {
        let info = ConnectInfo::from_userinfo(&userinfo);
        let protocol = match info.protocol {
            68 => Protocol::V68,
            71 => Protocol::V71,
            other => {
                return self.refuse(
                    from,
                    &format!(
                        "Server uses protocol version {ANNOUNCED_PROTOCOL} (yours is {other})."
                    ),
                )
            }
        };
        let Some(index) = self
            .challenges
            .iter()
            .position(|c| c.address == from && c.challenge == info.challenge)
        else {
            return self.refuse(from, "No or bad challenge for your address.");
        };
        if !self.has_gamestate {
            return self.refuse(from, "The relay has no game to show yet.");
        }
        // A client reconnecting from the same address replaces itself.
        if let Some(slot) = self
            .spectators
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.address == from))
        {
            self.remove_spectator(slot);
            self.events.push_back(RelayEvent::Dropped {
                slot,
                reason: "reconnected".into(),
            });
        }
        let Some(slot) = self.spectators.iter().position(Option::is_none) else {
            return self.refuse(from, "Server is full.");
        };
        // The challenge stays valid until it expires, as in ioquake3: a
        // client whose `connectResponse` was lost sends `connect` again,
        // and that replaces it (above).
        let _ = index;
        let framing = match protocol {
            Protocol::V68 => Some(Framing::Legacy),
            Protocol::V71 => self.config.framing_71,
        };
        let name = info.name.clone();
        let mut spectator = Spectator::new(from, userinfo, protocol, framing, &info, now);
        spectator.stream_id = self.stream.as_mut().and_then(|s| s.add_spectator().ok());
        self.spectators[slot] = Some(spectator);
        self.stats.connections += 1;
        self.answer(from, &format!("connectResponse {}", info.challenge));
        self.events.push_back(RelayEvent::Connected {
            slot,
            address: from,
            name,
        });
    }

    /// Frees a slot and its stream history, silently.
    fn remove_spectator(&mut self, slot: usize) {
        if let Some(spectator) = self.spectators[slot].take() {
            if let (Some(stream), Some(id)) = (self.stream.as_mut(), spectator.stream_id) {
                stream.remove_spectator(id);
            }
        }
    }

    fn spectator_count(&self) -> usize {
        self.spectators.iter().flatten().count()
    }

    /// The `infoResponse` info string (`SVC_Info`'s keys).
    pub fn info_string(&self, challenge: &str) -> String {
        let serverinfo = self.configstring(CS_SERVERINFO);
        let count = self.spectator_count().to_string();
        let mut info = Userinfo::default();
        info.set("challenge", challenge)
            .set("gamename", crate::live::oob::GAME_NAME)
            .set("protocol", &ANNOUNCED_PROTOCOL.to_string())
            .set("hostname", &self.config.hostname)
            .set("mapname", info_value(serverinfo, "mapname"))
            .set("clients", &count)
            .set("g_humanplayers", &count)
            .set("sv_maxclients", &self.spectators.len().to_string())
            .set("gametype", info_value(serverinfo, "g_gametype"))
            .set("pure", "0")
            .set("g_needpass", "0");
        let game = info_value(serverinfo, "gamename");
        if !game.is_empty() {
            info.set("game", game);
        }
        info.as_str().to_owned()
    }

    /// The `statusResponse` text after its first line (`SVC_Status`): the
    /// server info with the challenge, then `score ping "name"` per
    /// spectator.
    pub fn status_text(&self, challenge: &str) -> String {
        let mut info = Userinfo::default();
        for (key, value) in info_pairs(self.configstring(CS_SERVERINFO)) {
            info.set(key, value);
        }
        info.set("sv_hostname", &self.config.hostname)
            .set("sv_maxclients", &self.spectators.len().to_string())
            .set("challenge", challenge);
        let mut text = format!("{}\n", info.as_str());
        for spectator in self.spectators.iter().flatten() {
            let line = format!("0 0 \"{}\"\n", spectator.name);
            if text.len() + line.len() >= crate::message::MAX_MSGLEN - 16 {
                break;
            }
            text.push_str(&line);
        }
        text
    }

    /// When [`Relay::poll`] next has something to do.
    pub fn deadline(&self) -> Option<Instant> {
        self.spectators
            .iter()
            .flatten()
            .map(|s| {
                let timeout = s.last_packet + self.config.timeout;
                if s.state == SpectatorState::Connected {
                    timeout
                } else {
                    timeout.min(s.next_message)
                }
            })
            .min()
    }

    /// Does what is due at `now`: drops silent spectators and, while the
    /// source sends no frames (two message intervals without one), keeps
    /// each primed or active one's reliable commands flowing in messages of
    /// commands alone at its snapshot rate; the frames themselves go out
    /// from [`Relay::snapshot`].
    pub fn poll(&mut self, now: Instant) {
        for slot in 0..self.spectators.len() {
            let Some(spectator) = self.spectators[slot].as_mut() else {
                continue;
            };
            if now.saturating_duration_since(spectator.last_packet) >= self.config.timeout {
                self.remove_spectator(slot);
                self.events.push_back(RelayEvent::Dropped {
                    slot,
                    reason: "timed out".into(),
                });
                continue;
            }
            if spectator.state == SpectatorState::Connected || now < spectator.next_message {
                continue;
            }
            spectator.next_message = now + spectator.message_interval;
            let Ok(mut message) = spectator.commands_message() else {
                continue;
            };
            let mut datagrams = Vec::new();
            if spectator.transmit(&mut message, &mut datagrams).is_ok() {
                let address = spectator.address;
                self.outgoing
                    .extend(datagrams.into_iter().map(|d| (address, d)));
            }
        }
    }
}

const MAX_RELIABLE: i32 = crate::live::MAX_RELIABLE_COMMANDS as i32;

/// The commands that set configstring `index` to `value` on a client:
/// `cs` when it fits one command, else `bcs0`, `bcs1`…, `bcs2` pieces
/// (`SV_SendConfigstring`).
pub fn configstring_commands(index: usize, value: &str) -> Vec<String> {
    let max_chunk = MAX_STRING_CHARS - 24;
    if value.len() < max_chunk {
        return vec![format!("cs {index} \"{value}\"")];
    }
    let bytes = value.as_bytes();
    let mut pieces: Vec<&[u8]> = bytes.chunks(max_chunk).collect();
    if pieces.last().is_some_and(|p| p.len() == max_chunk) {
        // The client completes the string at `bcs2`: always send one.
        pieces.push(&[]);
    }
    pieces
        .iter()
        .enumerate()
        .map(|(i, piece)| {
            let command = if i == 0 {
                "bcs0"
            } else if i + 1 == pieces.len() {
                "bcs2"
            } else {
                "bcs1"
            };
            format!("{command} {index} \"{}\"", String::from_utf8_lossy(piece))
        })
        .collect()
}
