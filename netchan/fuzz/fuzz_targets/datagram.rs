//! Arbitrary datagrams into a server endpoint that has one established
//! connection, so the data path (sequence window, ack processing, chunk
//! parsing, reassembly, decompression) is reached as well as the handshake
//! parser. Nothing may panic; memory stays bounded by the configured limits.
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use netchan::testing::Pair;
use netchan::{Event, MAX_DATAGRAM};

const CLIENT_ID: u32 = 0x1234_5678;

fuzz_target!(|data: &[u8]| {
    let pair = Pair::connected(Instant::now(), Pair::options(CLIENT_ID, false, true), None)
        .expect("handshake");
    let (mut server, mut now, caddr) = (pair.server, pair.now, pair.client_addr);
    let mut buf = [0u8; MAX_DATAGRAM];
    // Input: a sequence of [len u16][bytes] datagrams.
    let mut rest = data;
    while rest.len() >= 2 {
        let len = u16::from_le_bytes([rest[0], rest[1]]) as usize % 1500;
        rest = &rest[2..];
        let take = len.min(rest.len());
        let mut datagram = rest[..take].to_vec();
        rest = &rest[take..];
        // Aim data datagrams at the live connection so the deep path is fuzzed.
        if datagram.len() >= 5 && datagram[0] >> 4 == 6 {
            datagram[1..5].copy_from_slice(&CLIENT_ID.to_le_bytes());
        }
        now += Duration::from_millis(3);
        server.handle(now, caddr, &datagram);
        server.handle_timeout(now);
        while server.poll_transmit(now, &mut buf).is_some() {}
        while let Some(e) = server.poll_event() {
            if let Event::Message { data, .. } | Event::State { data, .. } = e {
                assert!(data.len() <= 16 * 1024);
            }
        }
    }
});
