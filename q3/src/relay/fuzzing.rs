//! Drives a [`Relay`] with arbitrary datagrams from one connected
//! spectator: the entry point of the `relay_client` fuzz target and of its
//! seed replay test. Seeds are real clients' datagrams captured by
//! `q3 relay --capture-seeds DIR`.
//!
//! Input: one byte choosing the protocol (even: 71, its framing told from
//! the first datagram; odd: 68), then the spectator's challenge, the
//! relay's server id and checksum feed (4 bytes each, little-endian), then
//! datagrams, each a little-endian 16-bit length and that many bytes.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::spectator::Spectator;
use super::{Relay, RelayConfig, RelayEvent, SourceGamestate};
use crate::live::netchan::{Framing, Protocol};
use crate::live::CS_SYSTEMINFO;
use crate::snapshot::{Snapshot, Validity};
use crate::tables::{EntityState, PlayerState};

/// What a harness run saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RelayHarnessOutcome {
    /// Client messages read.
    pub messages: u64,
    /// Client datagrams that did not read.
    pub unreadable: u64,
    /// Usercmds read.
    pub usercmds: u64,
    /// Reliable client commands executed.
    pub commands: u64,
    /// Whether the spectator entered the game.
    pub entered: bool,
    /// Datagrams the relay sent.
    pub sent: u64,
    /// Snapshots the relay's stream sent the spectator.
    pub snapshots: u64,
}

/// The header of a harness input.
pub fn harness_header(protocol: Protocol, challenge: i32, server_id: i32, feed: i32) -> Vec<u8> {
    let mut out = vec![u8::from(protocol == Protocol::V68)];
    for value in [challenge, server_id, feed] {
        out.extend_from_slice(&value.to_le_bytes());
    }
    out
}

/// Appends one datagram to a harness input.
pub fn push_datagram(input: &mut Vec<u8>, datagram: &[u8]) {
    let len = datagram.len().min(usize::from(u16::MAX));
    input.extend_from_slice(&(len as u16).to_le_bytes());
    input.extend_from_slice(&datagram[..len]);
}

/// A small gamestate for the harness's relay.
fn gamestate() -> SourceGamestate {
    let mut source = SourceGamestate {
        configstrings: vec![
            (
                0,
                "\\mapname\\oa_dm1\\g_gametype\\0\\sv_hostname\\fuzz".into(),
            ),
            (CS_SYSTEMINFO, "\\sv_serverid\\1\\sv_pure\\1".into()),
        ],
        client_num: 3,
        ..SourceGamestate::default()
    };
    source.baselines.set(
        12,
        EntityState {
            e_type: 2,
            ..EntityState::default()
        },
    );
    source
}

/// The source's frame at `time`: one entity moving, the followed player.
fn frame(time: i32) -> Snapshot {
    Snapshot {
        message_num: time / 50,
        delta_num: 0,
        server_time: time,
        snap_flags: 0,
        areamask: vec![0],
        ps: PlayerState {
            command_time: time - 10,
            client_num: 3,
            ..PlayerState::default()
        },
        entities: vec![(
            12,
            EntityState {
                e_type: 2,
                origin_0: (time % 1000) as f32,
                ..EntityState::default()
            },
        )],
        server_command_num: 0,
        validity: Validity::Valid,
    }
}

/// Runs the harness on `data` (see the module docs). Never panics; time
/// advances 10 ms per datagram, the source gives a frame every 50 ms, and
/// the relay is polled after each datagram.
pub fn feed_client_datagrams(data: &[u8]) -> RelayHarnessOutcome {
    let mut outcome = RelayHarnessOutcome::default();
    let Some((&choice, rest)) = data.split_first() else {
        return outcome;
    };
    let Some((header, mut rest)) = rest.split_first_chunk::<12>() else {
        return outcome;
    };
    let word =
        |i: usize| i32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
    let (challenge, server_id, feed) = (word(0), word(4), word(8));
    let (protocol, framing) = if choice % 2 == 0 {
        (Protocol::V71, None)
    } else {
        (Protocol::V68, Some(Framing::Legacy))
    };
    let start = Instant::now();
    let mut now = start;
    let mut relay = Relay::new(RelayConfig::default(), now);
    relay.load_gamestate(&gamestate());
    relay.server_id = server_id;
    relay.checksum_feed = feed;
    let address: SocketAddr = ([127, 0, 0, 1], 27_960).into();
    let userinfo = "\\name\\fuzz\\snaps\\20";
    let mut info = super::ConnectInfo::from_userinfo(userinfo);
    info.challenge = challenge;
    let mut spectator = Spectator::new(address, userinfo.into(), protocol, framing, &info, now);
    spectator.stream_id = relay.stream.as_mut().and_then(|s| s.add_spectator().ok());
    relay.spectators[0] = Some(spectator);
    let mut datagrams = 0u32;
    while let Some((len, tail)) = rest.split_first_chunk::<2>() {
        let len = usize::from(u16::from_le_bytes(*len)).min(tail.len());
        let (datagram, tail) = tail.split_at(len);
        rest = tail;
        now += Duration::from_millis(10);
        if datagrams % 5 == 0 {
            relay.snapshot(now, &frame(1_000 + 10 * datagrams as i32));
        }
        datagrams += 1;
        relay.handle_datagram(now, address, datagram);
        relay.poll(now);
        while relay.next_datagram().is_some() {
            outcome.sent += 1;
        }
        while let Some(event) = relay.next_event() {
            outcome.entered |= matches!(event, RelayEvent::Entered { .. });
        }
        // Read after each datagram: a `disconnect` frees the slot.
        if let Some((_, spectator)) = relay.spectators().next() {
            let stats = spectator.stats();
            outcome.messages = stats.messages;
            outcome.usercmds = stats.usercmds;
            outcome.commands = stats.commands;
            outcome.snapshots = stats.snapshots;
        }
    }
    outcome.unreadable = relay.stats().unreadable;
    outcome
}
