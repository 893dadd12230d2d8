//! Drives a connected [`LiveClient`] with arbitrary server datagrams: the
//! entry point of the `live_client` fuzz target and of its seed replay test.
//!
//! Input: one byte choosing the protocol (even: 71, odd: 68), the server
//! challenge (4 bytes, little-endian), then datagrams, each a little-endian
//! 16-bit length and that many bytes. The client is taken through the
//! handshake with that challenge first, so sequenced datagrams reach the
//! netchan and the message parser.

use std::time::{Duration, Instant};

use super::client::{End, Event, LiveClient, LiveConfig, Stage};
use super::netchan::Protocol;
use super::oob;

/// The client settings the harness uses (also what fixtures are made with).
pub fn harness_config(protocol: Protocol) -> LiveConfig {
    LiveConfig {
        protocol,
        qport: 4242,
        client_challenge: 1234,
        ..LiveConfig::default()
    }
}

/// What a harness run saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HarnessOutcome {
    /// Server messages decoded.
    pub messages: u32,
    /// Snapshots decoded.
    pub snapshots: u32,
    /// Gamestates decoded.
    pub gamestates: u32,
    /// Whether the session ended (and if so, whether by a decode error).
    pub ended: bool,
    /// Whether it ended on a message that did not decode.
    pub decode_error: bool,
}

/// Runs the harness on `data` (see the module docs). Never panics; time
/// advances 10 ms per datagram and the client is polled after each.
pub fn feed_server_datagrams(data: &[u8]) -> HarnessOutcome {
    let mut outcome = HarnessOutcome::default();
    let Some((&choice, rest)) = data.split_first() else {
        return outcome;
    };
    let Some((challenge, mut rest)) = rest.split_first_chunk::<4>() else {
        return outcome;
    };
    let challenge = i32::from_le_bytes(*challenge);
    let protocol = if choice % 2 == 0 {
        Protocol::V71
    } else {
        Protocol::V68
    };
    let config = harness_config(protocol);
    let start = Instant::now();
    let mut now = start;
    let mut client = LiveClient::new(config.clone(), now);
    client.poll(now);
    client.handle_datagram(
        now,
        &oob::text_packet(&format!(
            "challengeResponse {challenge} {} {}",
            config.client_challenge,
            protocol.number()
        )),
    );
    client.handle_datagram(
        now,
        &oob::text_packet(&format!("connectResponse {challenge}")),
    );
    while let Some((len, tail)) = rest.split_first_chunk::<2>() {
        let len = usize::from(u16::from_le_bytes(*len)).min(tail.len());
        let (datagram, tail) = tail.split_at(len);
        rest = tail;
        now += Duration::from_millis(10);
        client.handle_datagram(now, datagram);
        client.poll(now);
        while client.next_datagram().is_some() {}
        while let Some(event) = client.next_event() {
            if let Event::Message { message, .. } = &event {
                outcome.messages += 1;
                outcome.snapshots += message.snapshots().count() as u32;
                outcome.gamestates += message
                    .commands
                    .iter()
                    .filter(|c| matches!(c.command, crate::message::Command::Gamestate(_)))
                    .count() as u32;
            }
        }
        if client.stage() == Stage::Ended {
            break;
        }
    }
    outcome.ended = client.stage() == Stage::Ended;
    outcome.decode_error = matches!(
        client.end(),
        Some(End::Error(super::LiveError::Decode { .. }))
    );
    outcome
}

/// Builds harness input from datagrams the server sent in a session with
/// `challenge`.
pub fn harness_input<'a>(
    protocol: Protocol,
    challenge: i32,
    datagrams: impl IntoIterator<Item = &'a [u8]>,
) -> Vec<u8> {
    let mut out = vec![u8::from(protocol == Protocol::V68)];
    out.extend_from_slice(&challenge.to_le_bytes());
    for datagram in datagrams {
        let len = datagram.len().min(usize::from(u16::MAX));
        out.extend_from_slice(&(len as u16).to_le_bytes());
        out.extend_from_slice(&datagram[..len]);
    }
    out
}
