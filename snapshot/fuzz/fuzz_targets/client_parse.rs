//! Feeds arbitrary messages to clients that already hold a gamestate and
//! two snapshots (so deltas against a real base are reachable), for both
//! codecs. The client must never panic, and whatever it accepts must leave
//! it consistent: entities sorted, numbers within the announced limit.
//!
//! Input: byte 0 picks the codec (bit 0) and whether the rest is one
//! message (bit 1) or a sequence of length-prefixed ones (one length byte each).
#![no_main]

use std::sync::OnceLock;

use fields::{array, boolean, net_struct, q3_float, quantized, signed, unsigned, Codec};
use libfuzzer_sys::fuzz_target;
use snapshot::{AllInScope, Client, ClientSettings, Server, ServerConfig};

net_struct! {
    struct Ent {
        x: f32 = q3_float(),
        y: f32 = q3_float(),
        health: i16 = signed(10),
        model: u16 = unsigned(9),
        angle: f32 = quantized(-180.0, 180.0, 12),
        firing: bool = boolean(),
        stats: [u8; 3] = array(unsigned(8), 3),
    }
}

net_struct! {
    struct Player {
        origin: [f32; 3] = array(q3_float(), 3),
        health: i16 = signed(10),
        ammo: [i16; 4] = array(signed(16), 4),
    }
}

/// A client per codec that holds a gamestate (with baselines and
/// configstrings) and snapshots 0 (full) and 1 (delta).
fn fixtures() -> &'static [Client<Ent, Player>; 2] {
    static FIXTURES: OnceLock<[Client<Ent, Player>; 2]> = OnceLock::new();
    FIXTURES.get_or_init(|| [fixture(Codec::Q3), fixture(Codec::Native)])
}

fn fixture(codec: Codec) -> Client<Ent, Player> {
    let config = ServerConfig {
        max_entities: 64,
        checksum_interval: 1,
        codec,
    };
    let mut server: Server<Ent, Player> = Server::new(config).expect("valid config");
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
    let mut bytes = Vec::new();
    server.write_gamestate(&mut bytes).expect("encodes");
    client.read_message(&bytes).expect("decodes");
    for frame in 0..2 {
        server.entity_mut(5).expect("exists").y += 1.5;
        server.commit_frame(frame * 50).expect("time");
        server
            .build_snapshot(id, &mut AllInScope, &mut bytes)
            .expect("builds");
        client.read_message(&bytes).expect("decodes");
        server.acknowledge(id, frame).expect("client");
    }
    client
}

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

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut client = fixtures()[(mode & 1) as usize].clone();
    if mode & 2 != 0 {
        let _ = client.read_message(rest);
        check(&client);
        return;
    }
    let mut rest = rest;
    while let Some((&len, tail)) = rest.split_first() {
        let (message, tail) = tail.split_at((len as usize).min(tail.len()));
        let _ = client.read_message(message);
        check(&client);
        rest = tail;
    }
});
