//! Arbitrary datagrams into a server endpoint that has one established
//! connection, so the data path (sequence window, ack processing, chunk
//! parsing, reassembly, decompression) is reached as well as the handshake
//! parser. Nothing may panic; memory stays bounded by the configured limits.
#![no_main]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use netchan::{ConnectOptions, Endpoint, EndpointConfig, Event, MAX_DATAGRAM};

const CLIENT_ID: u32 = 0x1234_5678;

fn established() -> (Endpoint, Instant, SocketAddr) {
    let now = Instant::now();
    let caddr = SocketAddr::from(([127, 0, 0, 1], 2));
    let saddr = SocketAddr::from(([127, 0, 0, 1], 1));
    let mut client = Endpoint::new(EndpointConfig { secret: [1; 32], ..EndpointConfig::client() }, now);
    let mut server = Endpoint::new(EndpointConfig { secret: [2; 32], ..EndpointConfig::server() }, now);
    client
        .connect(now, saddr, ConnectOptions { client_id: CLIENT_ID, encrypt: false, compress: true })
        .unwrap();
    let mut buf = [0u8; MAX_DATAGRAM];
    let mut t = now;
    for _ in 0..50 {
        t += Duration::from_millis(10);
        client.handle_timeout(t);
        while let Some(x) = client.poll_transmit(t, &mut buf) {
            server.handle(t, caddr, &buf[..x.len]);
        }
        server.handle_timeout(t);
        while let Some(x) = server.poll_transmit(t, &mut buf) {
            client.handle(t, saddr, &buf[..x.len]);
        }
        while let Some(e) = server.poll_event() {
            if matches!(e, Event::Connected { .. }) {
                return (server, t, caddr);
            }
        }
    }
    panic!("handshake failed");
}

fuzz_target!(|data: &[u8]| {
    let (mut server, mut now, caddr) = established();
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
