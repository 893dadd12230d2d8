//! Status requests and replies: arbitrary bytes, and valid packets with one
//! byte changed, into both parsers and a server endpoint. Nothing may panic,
//! whatever parses re-encodes to the same bytes, and no reply the endpoint
//! sends is larger than the request that caused it.
#![no_main]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use netchan::status::{StatusReply, StatusRequest};
use netchan::{Endpoint, EndpointConfig, MAX_DATAGRAM};

fuzz_target!(|data: &[u8]| {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let mut datagram = rest.to_vec();
    // Half the inputs start from a valid request padded to the input's
    // length, then flip the byte the input names, so the deep checks
    // (version, padding) are reached.
    if head & 1 == 0 {
        let mut buf = [0u8; MAX_DATAGRAM];
        let n = StatusRequest::new(u32::from(head), rest.len()).write(&mut buf).unwrap();
        datagram = buf[..n].to_vec();
        if let Some(&pos) = rest.first() {
            let i = pos as usize % n;
            datagram[i] ^= rest.get(1).copied().unwrap_or(1);
        }
    }
    let mut out = [0u8; MAX_DATAGRAM];
    if let Ok(req) = StatusRequest::parse(&datagram) {
        let n = req.write(&mut out).unwrap();
        assert_eq!(&out[..n], &datagram[..]);
    }
    if let Ok(reply) = StatusReply::parse(&datagram) {
        let n = reply.write(&mut out).unwrap();
        assert_eq!(&out[..n], &datagram[..]);
    }
    let now = Instant::now();
    let mut server = Endpoint::new(EndpointConfig { secret: [3; 32], ..EndpointConfig::server() }, now);
    server.set_status(&rest[..rest.len().min(300)]).unwrap();
    let from = SocketAddr::from(([127, 0, 0, 1], 9));
    server.handle(now + Duration::from_millis(1), from, &datagram);
    while let Some(t) = server.poll_transmit(now, &mut out) {
        assert!(t.len <= datagram.len());
    }
});
