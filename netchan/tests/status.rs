//! The connectionless status query against a server endpoint: replies never
//! outgrow their requests, and floods are rate-limited per source.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netq3_netchan::outcome::{DropReason, HandleOutcome};
use netq3_netchan::status::{StatusLimits, StatusReply, StatusRequest, STATUS_REPLY_HEADER_LEN};
use netq3_netchan::{Endpoint, EndpointConfig, ServerConfig, MAX_DATAGRAM};

fn server(limits: StatusLimits, now: Instant) -> Endpoint {
    let config = EndpointConfig {
        secret: [5; 32],
        server: Some(ServerConfig {
            status_limits: limits,
            ..ServerConfig::default()
        }),
        ..EndpointConfig::default()
    };
    Endpoint::new(config, now)
}

fn request(nonce: u32, len: usize) -> Vec<u8> {
    let mut buf = [0u8; MAX_DATAGRAM];
    let n = StatusRequest::new(nonce, len).write(&mut buf).unwrap();
    buf[..n].to_vec()
}

/// Sends `req` from `from` and returns every reply's bytes, each checked to
/// go back to the sender.
fn ask(server: &mut Endpoint, now: Instant, from: SocketAddr, req: &[u8]) -> Vec<Vec<u8>> {
    let outcome = server.handle(now, from, req);
    assert!(
        matches!(
            outcome,
            HandleOutcome::Status
                | HandleOutcome::Rejected(DropReason::RateLimited | DropReason::Unexpected)
        ),
        "{outcome:?}"
    );
    let mut buf = [0u8; MAX_DATAGRAM];
    let mut out = Vec::new();
    while let Some(t) = server.poll_transmit(now, &mut buf) {
        assert_eq!(t.destination, from);
        out.push(buf[..t.len].to_vec());
    }
    out
}

fn addr(last: u8, port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, last], port))
}

#[test]
fn reply_is_never_larger_than_the_request() {
    let t0 = Instant::now();
    let mut server = server(StatusLimits::default(), t0);
    let payload: Vec<u8> = (0..200u32).map(|i| i as u8).collect();
    server.set_status(&payload).unwrap();

    // Minimum-size request: a 12-byte "pad to 212" reply, not the payload.
    let small = request(1, 0);
    let replies = ask(&mut server, t0, addr(1, 1000), &small);
    assert_eq!(replies.len(), 1);
    assert_eq!(small.len(), 32);
    assert_eq!(replies[0].len(), STATUS_REPLY_HEADER_LEN);
    assert!(replies[0].len() <= small.len());
    let needed = match StatusReply::parse(&replies[0]).unwrap() {
        StatusReply::TooLarge { nonce: 1, needed } => needed as usize,
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(needed, STATUS_REPLY_HEADER_LEN + 200);

    // One byte short of that: still refused.
    let short = request(2, needed - 1);
    let replies = ask(&mut server, t0, addr(1, 1000), &short);
    assert_eq!(replies[0].len(), STATUS_REPLY_HEADER_LEN);

    // Padded as told: the payload, exactly as large as the request.
    let padded = request(3, needed);
    let replies = ask(&mut server, t0, addr(1, 1000), &padded);
    assert_eq!(replies[0].len(), padded.len());
    assert_eq!(
        StatusReply::parse(&replies[0]).unwrap(),
        StatusReply::Status {
            nonce: 3,
            payload: &payload
        }
    );
    let m = server.metrics();
    assert_eq!((m.status_answered, m.status_too_large), (1, 2));
}

#[test]
fn a_flood_from_one_source_is_rate_limited() {
    let t0 = Instant::now();
    let limits = StatusLimits {
        per_source_rate: 2,
        per_source_burst: 4,
        total_rate: 100,
        total_burst: 100,
        max_sources: 64,
    };
    let mut server = server(limits, t0);
    server.set_status(b"map arena1; clients 3").unwrap();
    let req = request(7, 64);
    // 1000 requests in 5 s from one address, the port changing every time
    // (the limit is per IP address): the burst of 4, then 2 per second.
    let mut replies = 0;
    let mut reply_bytes = 0;
    for i in 0..1000u64 {
        let now = t0 + Duration::from_millis(5 * i);
        for r in ask(&mut server, now, addr(9, 1000 + i as u16), &req) {
            reply_bytes += r.len();
            replies += 1;
        }
    }
    assert_eq!(replies, 4 + 9);
    assert!(reply_bytes <= replies * req.len());
    assert_eq!(server.metrics().status_rate_limited, 1000 - 13);
    assert_eq!(
        server.metrics().rejected.get(DropReason::RateLimited),
        1000 - 13
    );
    assert_eq!(
        server.handle(t0 + Duration::from_millis(4999), addr(9, 1), &req),
        HandleOutcome::Rejected(DropReason::RateLimited)
    );
    // Another source is answered meanwhile.
    let now = t0 + Duration::from_millis(5000);
    assert_eq!(ask(&mut server, now, addr(10, 1), &req).len(), 1);
}

#[test]
fn status_is_ignored_until_set_and_by_clients() {
    let t0 = Instant::now();
    let mut server = server(StatusLimits::default(), t0);
    assert!(ask(&mut server, t0, addr(1, 1), &request(1, 64)).is_empty());
    assert!(server.set_status(&[0; MAX_DATAGRAM]).is_err());
    let mut client = Endpoint::new(EndpointConfig::client(), t0);
    assert!(client.set_status(b"x").is_ok());
    assert!(ask(&mut client, t0, addr(1, 1), &request(1, 64)).is_empty());
    // Malformed (non-zero padding) requests are counted, not answered.
    server.set_status(b"x").unwrap();
    let mut bad = request(1, 64);
    bad[40] = 1;
    assert_eq!(
        server.handle(t0, addr(1, 1), &bad),
        HandleOutcome::Rejected(DropReason::BadFraming)
    );
    assert!(ask(&mut server, t0, addr(1, 1), &request(2, 64)).len() == 1);
    assert_eq!(server.metrics().rejected.get(DropReason::BadFraming), 1);
}
