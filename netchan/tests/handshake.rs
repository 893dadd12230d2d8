//! Handshake security and failure modes, against the server endpoint directly.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use netq3_netchan::conditioner::ConditionerConfig;
use netq3_netchan::handshake::{
    ConnectRequest, Cookie, Handshake, CHALLENGE_REQUEST_LEN, OPT_ENCRYPT,
};
use netq3_netchan::{
    DisconnectReason, DropReason, Endpoint, Event, HandleOutcome, RateAnnounce, RejectReason,
    MAX_DATAGRAM,
};

fn encode(p: Handshake) -> Vec<u8> {
    let mut buf = [0u8; 64];
    let n = p.write(&mut buf).unwrap();
    buf[..n].to_vec()
}

/// Feeds `request` and returns every response, checking none is larger than the request.
fn exchange(
    server: &mut Endpoint,
    now: Instant,
    from: SocketAddr,
    request: &[u8],
) -> Vec<Handshake> {
    exchange_with(server, now, from, request).1
}

/// [`exchange`], with what the endpoint said it did with the request.
fn exchange_with(
    server: &mut Endpoint,
    now: Instant,
    from: SocketAddr,
    request: &[u8],
) -> (HandleOutcome, Vec<Handshake>) {
    let outcome = server.handle(now, from, request);
    let mut buf = [0u8; MAX_DATAGRAM];
    let mut out = Vec::new();
    while let Some(t) = server.poll_transmit(now, &mut buf) {
        assert_eq!(t.destination, from);
        assert!(
            t.len <= request.len(),
            "response {} > request {}",
            t.len,
            request.len()
        );
        out.push(Handshake::parse(&buf[..t.len]).unwrap());
    }
    (outcome, out)
}

fn cookie_for(server: &mut Endpoint, now: Instant, from: SocketAddr, client_id: u32) -> Cookie {
    let req = encode(Handshake::ChallengeRequest { client_id });
    assert_eq!(req.len(), CHALLENGE_REQUEST_LEN);
    match exchange(server, now, from, &req).as_slice() {
        [Handshake::ChallengeResponse {
            client_id: c,
            cookie,
        }] if *c == client_id => *cookie,
        other => panic!("unexpected {other:?}"),
    }
}

fn connect_request(client_id: u32, cookie: Cookie) -> ConnectRequest {
    ConnectRequest {
        client_id,
        cookie,
        version: 1,
        schema: 0,
        options: 0,
        rate: RateAnnounce::UNLIMITED,
    }
}

#[test]
fn challenge_creates_no_state_and_never_amplifies() {
    let t0 = Instant::now();
    let mut server = Endpoint::new(server_config(), t0);
    for i in 0..1000u16 {
        let from = addr(10_000 + i);
        cookie_for(&mut server, t0, from, i as u32);
    }
    assert_eq!(server.connections().count(), 0);
    assert_eq!(server.metrics().challenges_answered, 1000);
    assert_eq!(server.table_sizes().slots, 0);
    // A short (unpadded) request gets no answer at all.
    let mut short = encode(Handshake::ChallengeRequest { client_id: 1 });
    short.truncate(20);
    assert_eq!(
        exchange_with(&mut server, t0, addr(1), &short),
        (HandleOutcome::Rejected(DropReason::TooShort), vec![])
    );
    assert_eq!(server.metrics().rejected.get(DropReason::TooShort), 1);
    assert_eq!(server.metrics().rejected.total(), 1);
}

#[test]
fn forged_expired_and_replayed_cookies_create_no_state() {
    let t0 = Instant::now();
    let mut server = Endpoint::new(server_config(), t0);
    let from = addr(5000);

    // Forged: a made-up MAC.
    let forged = Cookie {
        timestamp_ms: 0,
        mac: [0xAA; 16],
    };
    let resp = exchange(
        &mut server,
        t0,
        from,
        &encode(Handshake::Connect(connect_request(1, forged))),
    );
    assert!(resp.is_empty());
    // Stolen: a real cookie, presented from another address or for another id.
    let real = cookie_for(&mut server, t0, from, 1);
    assert!(exchange(
        &mut server,
        t0,
        addr(5001),
        &encode(Handshake::Connect(connect_request(1, real)))
    )
    .is_empty());
    assert!(exchange(
        &mut server,
        t0,
        from,
        &encode(Handshake::Connect(connect_request(2, real)))
    )
    .is_empty());
    assert_eq!(server.metrics().rejected.get(DropReason::BadCookie), 3);
    assert_eq!(server.connections().count(), 0);

    // Expired: the default lifetime is 10 s.
    let later = t0 + Duration::from_secs(11);
    assert!(exchange(
        &mut server,
        later,
        from,
        &encode(Handshake::Connect(connect_request(1, real)))
    )
    .is_empty());
    assert_eq!(server.metrics().rejected.get(DropReason::ExpiredCookie), 1);
    assert_eq!(server.connections().count(), 0);

    // Valid: accepted once.
    let t1 = t0 + Duration::from_secs(20);
    let fresh = cookie_for(&mut server, t1, from, 1);
    let (outcome, resp) = exchange_with(
        &mut server,
        t1,
        from,
        &encode(Handshake::Connect(connect_request(1, fresh))),
    );
    let HandleOutcome::Accepted(created) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(matches!(
        resp.as_slice(),
        [Handshake::Accept { client_id: 1, .. }]
    ));
    assert_eq!(server.connections().collect::<Vec<_>>(), vec![created]);
    // A retry of the same connect is answered again but creates nothing.
    let (outcome, resp) = exchange_with(
        &mut server,
        t1,
        from,
        &encode(Handshake::Connect(connect_request(1, fresh))),
    );
    assert!(matches!(
        resp.as_slice(),
        [Handshake::Accept { client_id: 1, .. }]
    ));
    assert_eq!(outcome, HandleOutcome::AcceptRepeated(created));
    assert_eq!(server.connections().count(), 1);
    assert_eq!(server.metrics().accepted, 1);

    // Replayed after that connection is gone (the pending slot times out).
    server.handle_timeout(t1 + Duration::from_secs(6));
    assert_eq!(server.connections().count(), 0);
    let t2 = t1 + Duration::from_secs(7);
    let resp = exchange(
        &mut server,
        t2,
        from,
        &encode(Handshake::Connect(connect_request(1, fresh))),
    );
    assert!(resp.is_empty());
    assert_eq!(server.metrics().rejected.get(DropReason::ReplayedCookie), 1);
    assert_eq!(server.metrics().rejected.total(), 5);
    assert_eq!(server.connections().count(), 0);
}

#[test]
fn rejections_carry_reasons() {
    let t0 = Instant::now();
    let mut config = server_config();
    config.protocol_version = 7;
    config.schema_fingerprint = 0xfeed;
    config.server.as_mut().unwrap().max_clients = 1;
    let mut server = Endpoint::new(config, t0);
    // The cookie is filled in below, per address.
    let request = |id: u32, version: u32, schema: u64, options: u8| ConnectRequest {
        version,
        schema,
        options,
        ..connect_request(
            id,
            Cookie {
                timestamp_ms: 0,
                mac: [0; 16],
            },
        )
    };
    let cases = [
        (
            1,
            request(1, 6, 0xfeed, 0),
            Some(RejectReason::VersionMismatch),
        ),
        (
            2,
            request(2, 7, 0xbeef, 0),
            Some(RejectReason::SchemaMismatch),
        ),
        (
            3,
            request(3, 7, 0xfeed, OPT_ENCRYPT),
            Some(RejectReason::EncryptionUnavailable),
        ),
        (4, request(4, 7, 0xfeed, 0), None),
        (5, request(5, 7, 0xfeed, 0), Some(RejectReason::ServerFull)),
    ];
    for (i, (id, mut req, expected)) in cases.into_iter().enumerate() {
        let from = addr(6000 + i as u16);
        req.cookie = cookie_for(&mut server, t0, from, id);
        let (outcome, resp) =
            exchange_with(&mut server, t0, from, &encode(Handshake::Connect(req)));
        match expected {
            Some(reason) => {
                assert_eq!(outcome, HandleOutcome::Refused(reason));
                assert_eq!(
                    resp,
                    vec![Handshake::Reject {
                        client_id: id,
                        reason
                    }]
                )
            }
            None => {
                assert!(matches!(outcome, HandleOutcome::Accepted(_)), "{outcome:?}");
                assert!(matches!(resp.as_slice(), [Handshake::Accept { .. }]))
            }
        }
    }
    assert_eq!(server.connections().count(), 1);
    assert_eq!(server.metrics().refused, 4);
    assert_eq!(server.metrics().accepted, 1);
}

#[test]
fn client_sees_rejection_and_schema_mismatch() {
    let mut sim = Sim::new();
    let mut sc = server_config();
    sc.schema_fingerprint = 1;
    let mut cc = client_config();
    cc.schema_fingerprint = 2;
    let server = sim.add(1, sc, ConditionerConfig::default(), 1);
    let client = sim.add(2, cc, ConditionerConfig::default(), 2);
    let (now, saddr) = (sim.now, sim.nodes[server].addr);
    let id = sim.nodes[client]
        .endpoint
        .connect(now, saddr, opts(1))
        .unwrap();
    sim.run_for(Duration::from_secs(1));
    assert_eq!(
        sim.nodes[client].events,
        vec![Event::Disconnected {
            conn: id,
            reason: DisconnectReason::Rejected(RejectReason::SchemaMismatch)
        }]
    );
    assert_eq!(sim.nodes[server].endpoint.connections().count(), 0);
}

#[test]
fn client_retries_with_backoff_then_gives_up() {
    let mut sim = Sim::new();
    sim.sent_log = Some(Vec::new());
    let client = sim.add(2, client_config(), ConditionerConfig::default(), 2);
    let now = sim.now;
    // Nobody listens at port 9.
    let id = sim.nodes[client]
        .endpoint
        .connect(now, addr(9), opts(1))
        .unwrap();
    sim.run_for(Duration::from_secs(62));
    let times: Vec<Duration> = sim
        .sent_log
        .as_ref()
        .unwrap()
        .iter()
        .map(|s| s.at)
        .collect();
    // 0, 0.25, 0.75, 1.75, then every second until the 60 s timeout:
    // 1.75 + 58 = 59.75 is the last.
    let gaps: Vec<u128> = times
        .windows(2)
        .map(|w| (w[1] - w[0]).as_millis())
        .collect();
    assert_eq!(gaps[..4], [250, 500, 1000, 1000]);
    assert!(gaps[3..].iter().all(|g| *g == 1000), "{gaps:?}");
    assert_eq!(times.len(), 62);
    assert_eq!(*times.last().unwrap(), Duration::from_millis(59_750));
    assert_eq!(
        sim.nodes[client].events,
        vec![Event::Disconnected {
            conn: id,
            reason: DisconnectReason::HandshakeTimedOut
        }]
    );
    assert_eq!(sim.nodes[client].endpoint.connections().count(), 0);
}

#[test]
fn handshake_survives_heavy_loss() {
    let lossy = ConditionerConfig {
        loss: 0.5,
        latency: Duration::from_millis(40),
        ..ConditionerConfig::default()
    };
    let mut sim = Sim::new();
    let server = sim.add(1, server_config(), lossy.clone(), 3);
    let client = sim.add(2, client_config(), lossy, 4);
    let (cid, sid) = connect(&mut sim, client, server, opts(99));
    assert!(sim.nodes[client]
        .endpoint
        .connection(cid)
        .unwrap()
        .is_established());
    assert!(sim.nodes[server]
        .endpoint
        .connection(sid)
        .unwrap()
        .is_established());
}

#[test]
fn pending_connections_are_bounded() {
    let t0 = Instant::now();
    let mut config = server_config();
    config.server.as_mut().unwrap().max_pending = 3;
    let mut server = Endpoint::new(config, t0);
    let mut accepted = 0;
    let mut full = 0;
    for i in 0..10u16 {
        let from = addr(7000 + i);
        let cookie = cookie_for(&mut server, t0, from, i as u32);
        let (outcome, resp) = exchange_with(
            &mut server,
            t0,
            from,
            &encode(Handshake::Connect(connect_request(i as u32, cookie))),
        );
        match (outcome, resp.as_slice()) {
            (HandleOutcome::Accepted(_), [Handshake::Accept { .. }]) => accepted += 1,
            (
                HandleOutcome::Refused(RejectReason::ServerFull),
                [Handshake::Reject {
                    reason: RejectReason::ServerFull,
                    ..
                }],
            ) => full += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((accepted, full), (3, 7));
    // Silent pending peers time out and free their slots.
    server.handle_timeout(t0 + Duration::from_secs(6));
    assert_eq!(server.connections().count(), 0);
    assert!(
        server.poll_event().is_none(),
        "never-established peers raise no events"
    );
}

#[test]
fn handshake_takes_two_round_trips_plus_one_way() {
    let link = ConditionerConfig {
        latency: Duration::from_millis(40),
        ..ConditionerConfig::default()
    };
    let mut sim = Sim::new();
    let server = sim.add(1, server_config(), link.clone(), 1);
    let client = sim.add(2, client_config(), link, 2);
    connect(&mut sim, client, server, opts(1));
    // Challenge, response, connect, accept, first datagram: five 40 ms legs.
    let elapsed = sim.elapsed();
    assert!(
        elapsed >= Duration::from_millis(200) && elapsed < Duration::from_millis(220),
        "{elapsed:?}"
    );
}

#[test]
fn lost_accepts_fall_back_to_a_fresh_cookie() {
    // Everything the server sends is lost for a while: the client's connect
    // retries go unanswered, the server's pending slot expires, and the
    // client must start over with a new cookie to get in.
    let slow = ConditionerConfig {
        latency: Duration::from_millis(50),
        ..ConditionerConfig::default()
    };
    let mut sim = Sim::new();
    let server = sim.add(1, server_config(), slow.clone(), 1);
    let mut cc = client_config();
    cc.connect_timeout = Duration::from_secs(30);
    let client = sim.add(2, cc, slow.clone(), 2);
    let (now, saddr) = (sim.now, sim.nodes[server].addr);
    sim.nodes[client]
        .endpoint
        .connect(now, saddr, opts(5))
        .unwrap();
    // Let the challenge exchange happen, then cut the server's outgoing link.
    sim.run_until(Duration::from_secs(1), |sim| {
        sim.nodes[client]
            .endpoint
            .connections()
            .next()
            .and_then(|id| sim.nodes[client].endpoint.connection(id))
            .is_some_and(|c| c.phase() == netq3_netchan::Phase::Connecting)
    });
    sim.nodes[server].link = netq3_netchan::LinkConditioner::new(
        ConditionerConfig {
            loss: 1.0,
            ..ConditionerConfig::default()
        },
        0,
    );
    sim.run_for(Duration::from_secs(8));
    assert_eq!(
        sim.nodes[server].endpoint.connections().count(),
        0,
        "pending slot expired"
    );
    sim.nodes[server].link = netq3_netchan::LinkConditioner::new(slow, 0);
    let ok = sim.run_until(Duration::from_secs(15), |sim| {
        sim.nodes[server]
            .events
            .iter()
            .any(|e| matches!(e, Event::Connected { .. }))
    });
    assert!(ok, "client never got back in");
    // The first accept was lost with its pending slot; the fresh cookie got the second.
    assert_eq!(sim.nodes[server].endpoint.metrics().accepted, 2);
}
