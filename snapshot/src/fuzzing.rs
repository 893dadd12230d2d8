//! The body of the `snapshot/fuzz` target, as a library function so that the
//! regression test `tests/fuzz_seeds.rs` replays the committed seeds and past
//! crashes through exactly the code the fuzzer runs. Not part of the API.

use std::sync::{Arc, OnceLock};

use fields::{array, boolean, net_struct, q3_float, quantized, signed, unsigned, BitReader, Codec};

use crate::message::MessageKind;
use crate::MessageCoding;
use crate::{
    AllInScope, Client, ClientId, ClientSettings, Compact, CompactRange, Framing, Server,
    ServerConfig,
};

net_struct! {
    /// The entity type of the fuzzed clients.
    pub struct Ent {
        /// Position.
        pub x: f32 = q3_float(),
        /// Position.
        pub y: f32 = q3_float(),
        /// Health.
        pub health: i16 = signed(10),
        /// Model.
        pub model: u16 = unsigned(9),
        /// Angle.
        pub angle: f32 = quantized(-180.0, 180.0, 12),
        /// Firing.
        pub firing: bool = boolean(),
        /// Stats.
        pub stats: [u8; 3] = array(unsigned(8), 3),
    }
}

net_struct! {
    /// The player-state type of the fuzzed clients.
    pub struct Player {
        /// Position.
        pub origin: [f32; 3] = array(q3_float(), 3),
        /// Health.
        pub health: i16 = signed(10),
        /// Ammunition.
        pub ammo: [i16; 4] = array(signed(16), 4),
    }
}

/// A server and its client after a gamestate (with baselines and
/// configstrings) and snapshots 0 (full) and 1 (delta), so deltas against a
/// real base are reachable. The server can make more messages (seeds).
pub fn fixture(codec: Codec) -> (Server<Ent, Player>, ClientId, Client<Ent, Player>) {
    fixture_framed(codec, Arc::new(Compact))
}

/// [`fixture`] with snapshots in `framing` on both ends.
pub fn fixture_framed(
    codec: Codec,
    framing: Arc<dyn Framing>,
) -> (Server<Ent, Player>, ClientId, Client<Ent, Player>) {
    let config = ServerConfig {
        max_entities: 64,
        checksum_interval: 1,
        codec,
    };
    let mut server: Server<Ent, Player> = Server::new(config).expect("valid config");
    server
        .set_framing(Arc::clone(&framing))
        .expect("a framing for the codec");
    server.set_configstring(0, "fuzz").expect("short");
    server
        .set_baseline(
            2,
            Some(Ent {
                model: 9,
                ..Ent::default()
            }),
        )
        .expect("in range");
    for number in [1, 2, 5, 40] {
        let ent = Ent {
            x: number as f32,
            health: 100,
            ..Ent::default()
        };
        server.set_entity(number, ent).expect("in range");
    }
    let id = server
        .add_client(ClientSettings::unlimited())
        .expect("client");
    let mut client = Client::new();
    client.set_framing(framing);
    let mut bytes = Vec::new();
    server.write_gamestate(&mut bytes).expect("encodes");
    client.read_message(&bytes).expect("decodes");
    for frame in 0..2 {
        server.entity_mut(5).expect("exists").y += 1.5;
        server.commit_frame(frame * 50).expect("time");
        server
            .build_snapshot(id, &mut AllInScope, &mut bytes)
            .expect("builds");
        client.read_snapshot(frame, &bytes).expect("decodes");
        server.acknowledge(id, frame).expect("client");
    }
    (server, id, client)
}

/// The fixture clients: Quake 3 codec, native, native range-coded
/// ([`CompactRange`]).
fn fixtures() -> &'static [Client<Ent, Player>; 3] {
    static FIXTURES: OnceLock<[Client<Ent, Player>; 3]> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        [
            fixture(Codec::Q3).2,
            fixture(Codec::Native).2,
            fixture_framed(Codec::Native, Arc::new(CompactRange)).2,
        ]
    })
}

/// The sequence byte that marks a reliable message for a range-coded
/// client, whose snapshots do not start with their kind's bits.
pub const RELIABLE: u8 = 255;

fn check(client: &Client<Ent, Player>) {
    let limit = client.entity_limit().unwrap_or(u32::MAX);
    for snapshot in [client.newest(), client.previous()].into_iter().flatten() {
        let mut last = None;
        for (number, _) in snapshot.entities() {
            assert!(number < limit);
            assert!(last.is_none_or(|l| number > l));
            last = Some(number);
        }
    }
    assert_eq!(client.ack(), client.newest().map(|s| s.sequence()));
}

/// Hands one message to `client`: a snapshot (by its kind tag; for a
/// range-coded client, any message whose sequence is not [`RELIABLE`]) as
/// snapshot `sequence`, anything else as a reliable message. Returns whether it was
/// accepted.
fn read(client: &mut Client<Ent, Player>, sequence: u8, message: &[u8]) -> bool {
    let snapshot = match client.framing().coding() {
        // A range-coded snapshot's kind is range-coded with the rest of
        // its header: the transport says what a message is.
        MessageCoding::Split => sequence != RELIABLE,
        _ => MessageKind::read(&mut BitReader::new(message)).is_ok_and(|k| k.is_snapshot()),
    };
    if snapshot {
        client.read_snapshot(u32::from(sequence), message).is_ok()
    } else {
        client.read_message(message).is_ok()
    }
}

/// `client_parse`: messages into a [`fixture`] client. The client never
/// panics, and whatever it accepts leaves it consistent (entities sorted,
/// numbers within the announced limit, ack = newest).
///
/// Input: byte 0 picks the codec (bit 0: native; bit 2 with it: native
/// range-coded, [`CompactRange`]) and whether the rest is one
/// message (bit 1: a sequence byte, then the message) or a sequence of
/// messages, each after a length byte and a sequence byte (a snapshot's
/// sequence number, which the transport carries; ignored for other
/// messages). Returns the messages accepted.
pub fn client_parse(data: &[u8]) -> usize {
    let Some((&mode, rest)) = data.split_first() else {
        return 0;
    };
    let fixture = match (mode & 1, mode & 4) {
        (0, _) => 0,
        (_, 0) => 1,
        _ => 2,
    };
    let mut client = fixtures()[fixture].clone();
    if mode & 2 != 0 {
        let Some((&sequence, message)) = rest.split_first() else {
            return 0;
        };
        let accepted = read(&mut client, sequence, message);
        check(&client);
        return usize::from(accepted);
    }
    let mut accepted = 0;
    let mut rest = rest;
    while let Some((&len, tail)) = rest.split_first() {
        let Some((&sequence, tail)) = tail.split_first() else {
            break;
        };
        let (message, tail) = tail.split_at(usize::from(len).min(tail.len()));
        accepted += usize::from(read(&mut client, sequence, message));
        check(&client);
        rest = tail;
    }
    accepted
}
