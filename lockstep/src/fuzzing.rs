//! The body of the `wire` fuzz target (`fuzz/fuzz_targets/wire.rs`), here
//! so the committed seeds replay through exactly the same code in a stable
//! `cargo test` (`tests/wire.rs`).

use std::time::{Duration, Instant};

use crate::host::{Host, HostConfig};
use crate::peer::{Peer, PeerConfig};
use crate::sim::{Units, UnitsSetup};
use crate::wire::{decode_turn, encode_turn, Settings, Start, ToHost, ToPeer};

/// What [`exercise`] found the bytes to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Outcome {
    /// They decode as a participant → host message.
    pub to_host: bool,
    /// They decode as a host → participant message.
    pub to_peer: bool,
    /// They decode as a recorded turn.
    pub turn: bool,
}

/// Decodes `data` every way a receiver would, checks that whatever decodes
/// survives an encode/decode round trip unchanged, and feeds the bytes to a
/// started host (from participant 0) and a started participant. Panics only
/// on a real bug (a round trip that changes the message).
pub fn exercise(data: &[u8]) -> Outcome {
    let mut outcome = Outcome::default();
    if let Ok(message) = ToHost::decode(data) {
        outcome.to_host = true;
        assert_eq!(ToHost::decode(&message.to_bytes()), Ok(message));
    }
    if let Ok(message) = ToPeer::decode(data) {
        outcome.to_peer = true;
        assert_eq!(ToPeer::decode(&message.to_bytes()), Ok(message));
    }
    if let Ok(turn) = decode_turn(data) {
        outcome.turn = true;
        assert_eq!(decode_turn(&encode_turn(&turn)), Ok(turn));
    }

    let now = Instant::now();
    let mut host = Host::new(HostConfig {
        setup: UnitsSetup {
            units: 8,
            ..UnitsSetup::default()
        }
        .to_bytes(),
        ..HostConfig::default()
    });
    host.add_participant(now);
    host.add_participant(now);
    host.start(now);
    let _ = host.handle_message(now, 0, data);
    host.handle_timeout(now + Duration::from_secs(10));
    let later = now + Duration::from_secs(10);
    while host.poll_transmit(later).is_some() {}

    let mut peer: Peer<Units> = Peer::new(PeerConfig::default());
    let start = ToPeer::Start(Start {
        you: 0,
        participants: vec![0, 1],
        seed: 1,
        settings: Settings {
            delay: 2,
            sync_interval: 2,
            step_ms: 50,
            initial_turn_ms: 100,
        },
        setup: UnitsSetup {
            units: 8,
            ..UnitsSetup::default()
        }
        .to_bytes(),
    });
    let _ = peer.handle_message(now, &start.to_bytes());
    let _ = peer.handle_message(now, data);
    let _ = peer.poll(now + Duration::from_secs(1));
    while peer.poll_transmit(now + Duration::from_secs(1)).is_some() {}
    outcome
}
