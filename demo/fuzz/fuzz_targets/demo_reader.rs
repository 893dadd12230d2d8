//! Fuzzes the native demo reader and player. The first byte picks how the
//! rest is used:
//!
//! * even — the bytes are a whole file;
//! * odd — a small valid demo (recorded once from a generated stream, with
//!   keyframes) patched with (offset, xor) byte pairs, so damage lands in
//!   records whose framing and checksums are otherwise right.
//!
//! Every input must be read, played, indexed and seeked to its end or fail
//! with an error, never panic. Whatever plays completely must have passed
//! every record checksum.
#![no_main]

use std::sync::OnceLock;

use demo::{DemoHeader, DemoReader, Player, Recorder};
use fields::{net_struct, q3_float, unsigned, Codec};
use libfuzzer_sys::fuzz_target;
use snapshot::{AllInScope, BuildOutcome, ClientSettings, Server, ServerConfig};

net_struct! {
    struct Thing {
        x: f32 = q3_float(),
        kind: u8 = unsigned(5),
    }
}
net_struct! {
    struct Me {
        health: u16 = unsigned(9),
    }
}

fn seed() -> &'static [u8] {
    static SEED: OnceLock<Vec<u8>> = OnceLock::new();
    SEED.get_or_init(|| {
        let mut server: Server<Thing, Me> = Server::new(ServerConfig {
            checksum_interval: 3,
            ..ServerConfig::for_codec(Codec::Native)
        })
        .expect("config");
        let viewed = server.add_client(ClientSettings::unlimited()).expect("client");
        let id = server
            .add_recorder(viewed, ClientSettings::recorder())
            .expect("recorder");
        let header = DemoHeader::for_types::<Thing, Me>(Codec::Native, 20, 20);
        let mut recorder = Recorder::create(Vec::new(), header).expect("header");
        let mut bytes = Vec::new();
        server.write_gamestate(&mut bytes).expect("gamestate");
        recorder.record_gamestate(0, &bytes).expect("record");
        for frame in 0..24u32 {
            for n in 0..(frame % 5 + 1) {
                let thing = Thing {
                    x: (frame * n) as f32,
                    kind: (n % 32) as u8,
                };
                server.set_entity(n, thing).expect("entity");
            }
            server.commit_frame(frame * 50).expect("frame");
            if frame % 8 == 7 {
                server.request_full_update(id).expect("keyframe");
            }
            if let BuildOutcome::Built(info) = server
                .build_snapshot(id, &mut AllInScope, &mut bytes)
                .expect("snapshot")
            {
                recorder
                    .record_snapshot(frame * 50, info.sequence, &bytes, info.base.is_none())
                    .expect("record");
            }
        }
        recorder.finish().expect("finish")
    })
}

fn exercise(data: &[u8]) {
    if !demo::format::has_magic(data) {
        return;
    }
    let Ok(reader) = DemoReader::new(data) else {
        return;
    };
    let _ = reader.keyframes();
    let _ = demo::stats::native_stats(&reader, true, &mut |_| {});
    let Ok(mut player) = Player::new(reader.clone()) else {
        return;
    };
    player.set_verify(true);
    let mut clean = true;
    while let Some(played) = player.next_record() {
        if played.is_err() {
            clean = false;
        }
    }
    if clean {
        assert!(player.reached_end());
    }
    for time in [0, 333, 1_000, u32::MAX] {
        let _ = player.seek(time);
    }
    let _ = demo::cut::cut(&reader, 200, 800, Vec::new(), &mut |_| {});
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        exercise(rest);
        return;
    }
    let mut data = seed().to_vec();
    let len = data.len().max(1);
    for pair in rest.chunks_exact(3) {
        let offset = u16::from_le_bytes([pair[0], pair[1]]) as usize;
        if let Some(byte) = data.get_mut(offset % len) {
            *byte ^= pair[2];
        }
    }
    exercise(&data);
});
