//! One spectator of the relay: its netchan (server end), its reliable
//! commands both ways, what it acknowledged, and the messages written to it.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fields::{BitReader, BitSink, BitSource, Codec, EntityUpdate, HuffmanCode, HuffmanReader};
use fields::{BitWriter, HuffmanWriter};

use super::client_message::{parse_client_message, ClientMessage, ClientMessageError};
use super::requests::ConnectInfo;
use crate::live::netchan::{
    scramble, Dropped, Framing, Netchan, Protocol, CLIENT_SCRAMBLE_START, SERVER_SCRAMBLE_START,
};
use crate::live::{NetchanError, MAX_RELIABLE_COMMANDS};
use crate::message::{svc, MAX_MSGLEN};
use crate::snapshot::Baselines;
use crate::tables::EntityState;

/// Where a spectator is, as ioquake3's `clientState_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpectatorState {
    /// Connected; the gamestate goes with the answer to its first packet.
    Connected,
    /// Has the gamestate; waits for its first usercmd.
    Primed,
    /// In the game: receives the stream.
    Active,
}

/// A client message that could not be read (the spectator stays; the
/// message is dropped, as Quake 3 does with illegible packets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// The netchan header or a fragment was bad.
    Netchan(NetchanError),
    /// The message itself.
    Message(ClientMessageError),
}

/// Counters of one spectator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SpectatorStats {
    /// Client messages read.
    pub messages: u64,
    /// Client datagrams that did not read.
    pub unreadable: u64,
    /// Usercmds read (and ignored).
    pub usercmds: u64,
    /// Reliable client commands executed (each once).
    pub commands: u64,
    /// Gamestates sent.
    pub gamestates: u64,
    /// Server messages sent.
    pub messages_sent: u64,
    /// Datagrams sent.
    pub datagrams_sent: u64,
    /// Snapshots sent.
    pub snapshots: u64,
    /// Of which deltas from a snapshot it acknowledged.
    pub delta_snapshots: u64,
    /// Usercmd packets asking for a full snapshot (`clc_moveNoDelta`).
    pub no_delta_moves: u64,
}

/// A connected spectator.
#[derive(Debug)]
pub struct Spectator {
    pub(crate) address: SocketAddr,
    pub(crate) name: String,
    pub(crate) userinfo: String,
    pub(crate) protocol: Protocol,
    pub(crate) challenge: i32,
    /// `None` while a protocol 71 client's framing is still unknown.
    pub(crate) framing: Option<Framing>,
    pub(crate) netchan: Netchan,
    pub(crate) state: SpectatorState,
    pub(crate) reliable_sequence: i32,
    pub(crate) reliable_acknowledge: i32,
    pub(crate) reliable_commands: Vec<String>,
    pub(crate) last_client_command: i32,
    pub(crate) last_client_command_text: String,
    pub(crate) message_acknowledge: i32,
    /// The message the client named as its delta base (`-1`: none).
    pub(crate) delta_message: i32,
    pub(crate) gamestate_message_num: i32,
    /// Its client in the snapshot stream (from its gamestate on).
    pub(crate) stream_id: Option<snapshot::ClientId>,
    /// The server time of the last snapshot sent to it.
    pub(crate) last_snapshot_time: Option<i32>,
    pub(crate) last_packet: Instant,
    pub(crate) next_message: Instant,
    pub(crate) message_interval: Duration,
    pub(crate) stats: SpectatorStats,
}

fn ring(sequence: i32) -> usize {
    (sequence as u32 as usize) & (MAX_RELIABLE_COMMANDS - 1)
}

impl Spectator {
    /// A spectator just accepted by `connect`.
    pub(crate) fn new(
        address: SocketAddr,
        userinfo: String,
        protocol: Protocol,
        framing: Option<Framing>,
        info: &ConnectInfo,
        now: Instant,
    ) -> Spectator {
        let (qport, challenge, snaps) = (info.qport, info.challenge, info.snaps);
        let name = crate::live::oob::info_value(&userinfo, "name")
            .chars()
            .take(32)
            .collect();
        // `snaps` as ioquake3 clamps it: 1..=sv_fps (20 here).
        let snaps = if snaps <= 0 { 20 } else { snaps.min(20) } as u64;
        Spectator {
            address,
            name,
            userinfo,
            protocol,
            challenge,
            framing,
            netchan: Netchan::server(
                framing.unwrap_or(protocol.default_framing()),
                qport,
                challenge,
            ),
            state: SpectatorState::Connected,
            reliable_sequence: 0,
            reliable_acknowledge: 0,
            reliable_commands: vec![String::new(); MAX_RELIABLE_COMMANDS],
            last_client_command: 0,
            last_client_command_text: String::new(),
            message_acknowledge: 0,
            delta_message: -1,
            gamestate_message_num: -1,
            stream_id: None,
            last_snapshot_time: None,
            last_packet: now,
            next_message: now,
            message_interval: Duration::from_millis(1000 / snaps),
            stats: SpectatorStats::default(),
        }
    }

    /// Its address.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Its player name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Where it is.
    pub fn state(&self) -> SpectatorState {
        self.state
    }

    /// The framing it speaks, once known.
    pub fn framing(&self) -> Option<Framing> {
        self.framing
    }

    /// Its counters.
    pub fn stats(&self) -> SpectatorStats {
        self.stats
    }

    /// The message it last named as delta base (`-1`: none).
    pub fn delta_message(&self) -> i32 {
        self.delta_message
    }

    /// Queues a reliable server command. When the client has fallen a whole
    /// ring behind, returns `false` (ioquake3 drops such a client).
    pub(crate) fn add_command(&mut self, text: &str) -> bool {
        if self.reliable_sequence - self.reliable_acknowledge >= MAX_RELIABLE_COMMANDS as i32 {
            return false;
        }
        self.reliable_sequence += 1;
        let mut text = text.to_owned();
        text.truncate(crate::message::MAX_STRING_CHARS - 1);
        self.reliable_commands[ring(self.reliable_sequence)] = text;
        true
    }

    /// Reads a sequenced datagram from this spectator: the message it
    /// completes, `Ok(None)` for one that completes none (a fragment, a late
    /// or duplicated packet).
    pub(crate) fn read(
        &mut self,
        datagram: &[u8],
        checksum_feed: i32,
        now: Instant,
    ) -> Result<Option<ClientMessage>, Unreadable> {
        if self.framing.is_none() {
            if let Some(framing) = crate::live::netchan::detect_framing(
                datagram,
                crate::live::netchan::Side::Client,
                self.challenge,
            ) {
                self.framing = Some(framing);
                self.netchan.set_framing(framing);
            }
        }
        let incoming = match self.netchan.process(datagram) {
            Ok(Ok(incoming)) => incoming,
            Ok(Err(Dropped::Fragment)) => {
                self.last_packet = now;
                return Ok(None);
            }
            Ok(Err(_)) => return Ok(None),
            Err(e) => {
                self.stats.unreadable += 1;
                return Err(Unreadable::Netchan(e));
            }
        };
        self.last_packet = now;
        let mut payload = incoming.payload;
        if self.netchan.framing().scrambles() {
            // The key: our challenge, the server id and message the client
            // acknowledges, and the server command it acknowledges — read
            // before unscrambling, as `SV_Netchan_Decode` does.
            let mut source = HuffmanReader::new(BitReader::new(&payload), HuffmanCode::quake3());
            let mut long = || source.get_bits(32).map(|v| v as i32).unwrap_or(0);
            let (server_id, acknowledge, reliable) = (long(), long(), long());
            let text = self.reliable_commands[ring(reliable)].clone();
            scramble(
                &mut payload,
                CLIENT_SCRAMBLE_START,
                self.challenge ^ server_id ^ acknowledge,
                text.as_bytes(),
            );
        }
        let commands = &self.reliable_commands;
        let message = parse_client_message(&payload, checksum_feed, &|sequence| {
            commands[ring(sequence)].clone()
        })
        .map_err(|e| {
            self.stats.unreadable += 1;
            Unreadable::Message(e)
        })?;
        self.stats.messages += 1;
        Ok(Some(message))
    }

    /// Frames a server message (reliable acknowledge and pending commands
    /// already in `message`, `svc_EOF` appended here), scrambled under the
    /// legacy framing, into datagrams.
    pub(crate) fn transmit(
        &mut self,
        message: &mut [u8],
        out: &mut Vec<Vec<u8>>,
    ) -> Result<(), NetchanError> {
        if self.netchan.framing().scrambles() {
            let seed = self.challenge ^ self.netchan.outgoing_sequence();
            scramble(
                message,
                SERVER_SCRAMBLE_START,
                seed,
                self.last_client_command_text.as_bytes(),
            );
        }
        let before = out.len();
        self.netchan.transmit(message, out)?;
        self.stats.datagrams_sent += (out.len() - before) as u64;
        self.stats.messages_sent += 1;
        Ok(())
    }

    /// Writes the start of a server message: the reliable acknowledge and
    /// every server command not yet acknowledged (`SV_UpdateServerCommandsToClient`).
    pub(crate) fn write_header<S: BitSink + ?Sized>(
        &self,
        sink: &mut S,
    ) -> Result<(), fields::BitError> {
        sink.put_bits(self.last_client_command as u32, 32)?;
        for sequence in self.reliable_acknowledge + 1..=self.reliable_sequence {
            sink.put_u8(svc::SERVER_COMMAND)?;
            sink.put_bits(sequence as u32, 32)?;
            put_string(sink, &self.reliable_commands[ring(sequence)])?;
        }
        Ok(())
    }

    /// The gamestate message (`SV_SendClientGameState`): pending commands,
    /// then `svc_gamestate` with the command sequence, every configstring
    /// set, every baseline, the client number and the checksum feed.
    pub(crate) fn gamestate_message(
        &mut self,
        configstrings: &[(usize, String)],
        baselines: &Baselines,
        client_num: i32,
        checksum_feed: i32,
    ) -> Result<Vec<u8>, fields::BitError> {
        let mut buf = vec![0u8; MAX_MSGLEN];
        let mut writer = BitWriter::new(&mut buf);
        let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
        self.write_header(&mut sink)?;
        sink.put_u8(svc::GAMESTATE)?;
        sink.put_bits(self.reliable_sequence as u32, 32)?;
        for (index, text) in configstrings {
            if text.is_empty() {
                continue;
            }
            sink.put_u8(svc::CONFIGSTRING)?;
            sink.put_bits(*index as u32, 16)?;
            put_string(&mut sink, text)?;
        }
        let null = EntityState::default();
        for (number, state) in baselines.non_zero() {
            sink.put_u8(svc::BASELINE)?;
            let update = EntityUpdate::Delta {
                base: &null,
                new: state,
                force: true,
            };
            Codec::Q3.write_entity(&mut sink, None, number, update)?;
        }
        sink.put_u8(svc::EOF)?;
        sink.put_bits(client_num as u32, 32)?;
        sink.put_bits(checksum_feed as u32, 32)?;
        sink.put_u8(svc::EOF)?;
        let len = sink.bits_written() / 8 + 1;
        buf.truncate(len);
        self.stats.gamestates += 1;
        Ok(buf)
    }

    /// The message of a frame (`SV_SendClientSnapshot`): the pending
    /// commands, then its snapshot from `stream` coded against its newest
    /// acknowledged one, numbered with the message that carries it. Without
    /// a snapshot to send (no frame yet, or it did not fit), the commands
    /// alone.
    pub(crate) fn snapshot_message(
        &mut self,
        stream: &mut super::stream::SnapshotStream,
    ) -> Result<Vec<u8>, fields::BitError> {
        let Some(id) = self.stream_id else {
            return self.commands_message();
        };
        let mut buf = vec![0u8; MAX_MSGLEN];
        let mut writer = BitWriter::new(&mut buf);
        self.write_header(&mut HuffmanWriter::new(&mut writer, HuffmanCode::quake3()))?;
        let active = self.state == SpectatorState::Active;
        let sequence = self.netchan.outgoing_sequence();
        match stream.write(id, sequence, active, &mut writer) {
            Ok(Some(info)) => {
                self.stats.snapshots += 1;
                self.stats.delta_snapshots += u64::from(info.base.is_some());
                self.last_snapshot_time = stream.time();
            }
            // A snapshot that does not fit counts as lost in the stream:
            // the commands go alone.
            Ok(None) | Err(_) => return self.commands_message(),
        }
        HuffmanWriter::new(&mut writer, HuffmanCode::quake3()).put_u8(svc::EOF)?;
        let len = writer.bits_written() / 8 + 1;
        buf.truncate(len);
        Ok(buf)
    }

    /// A message carrying only the pending reliable commands.
    pub(crate) fn commands_message(&self) -> Result<Vec<u8>, fields::BitError> {
        let mut buf = vec![0u8; MAX_MSGLEN];
        let mut writer = BitWriter::new(&mut buf);
        let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
        self.write_header(&mut sink)?;
        sink.put_u8(svc::EOF)?;
        let len = sink.bits_written() / 8 + 1;
        buf.truncate(len);
        Ok(buf)
    }
}

/// A string as Quake 3 writes it: its bytes, then 0.
fn put_string<S: BitSink + ?Sized>(sink: &mut S, text: &str) -> Result<(), fields::BitError> {
    for byte in text.bytes() {
        sink.put_u8(if byte == 0 { b'.' } else { byte })?;
    }
    sink.put_u8(0)
}
