//! A hostile network, deterministic and sans-IO: floods of garbage and
//! handshake-looking datagrams get no reply and leave no state, and a crowd
//! of clients on a bad link all get in.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use netq3_netchan::conditioner::ConditionerConfig;
use netq3_netchan::handshake::{
    Handshake, ACCEPT_LEN, CHALLENGE_REQUEST_LEN, CHALLENGE_RESPONSE_LEN, CONNECT_LEN, MAGIC,
    REJECT_LEN,
};
use netq3_netchan::{
    DropReason, Endpoint, Event, HandleOutcome, SeededRng, TableSizes, MAX_DATAGRAM,
};

/// Each handshake packet type with its exact length.
const HANDSHAKE_LENS: [(u8, usize); 5] = [
    (1, CHALLENGE_REQUEST_LEN),
    (2, CHALLENGE_RESPONSE_LEN),
    (3, CONNECT_LEN),
    (4, ACCEPT_LEN),
    (5, REJECT_LEN),
];

fn stranger(rng: &mut SeededRng) -> SocketAddr {
    // 300 source ports, as the attack in the issue used.
    addr(40_000 + rng.below(300) as u16)
}

/// Feeds one datagram, checks it was dropped and that nothing at all is sent back.
fn feed(server: &mut Endpoint, now: Instant, from: SocketAddr, datagram: &[u8]) -> DropReason {
    let outcome = server.handle(now, from, datagram);
    server.handle_timeout(now);
    let mut buf = [0u8; MAX_DATAGRAM];
    assert_eq!(
        server.poll_transmit(now, &mut buf),
        None,
        "a reply to {datagram:02x?}"
    );
    assert_eq!(server.poll_event(), None);
    match outcome {
        HandleOutcome::Rejected(reason) => reason,
        other => panic!("{other:?} for {datagram:02x?}"),
    }
}

#[test]
fn floods_get_no_reply_and_leave_no_state() {
    let t0 = Instant::now();
    let mut server = Endpoint::new(server_config(), t0);
    let mut rng = SeededRng::new(0x0bad_cafe);
    let mut by_reason: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut now = t0;
    let mut datagram = Vec::with_capacity(1500);

    // 20,000 random datagrams of 0..=1,499 bytes.
    for _ in 0..20_000 {
        datagram.resize(rng.below(1500) as usize, 0);
        rng.fill_bytes(&mut datagram);
        now += Duration::from_micros(100);
        let from = stranger(&mut rng);
        *by_reason
            .entry(feed(&mut server, now, from, &datagram).name())
            .or_default() += 1;
        assert_eq!(server.table_sizes(), TableSizes::default());
    }
    // 27,000 short handshake-looking datagrams: a handshake type, the magic,
    // then random bytes, always shorter than the type's exact length.
    for _ in 0..27_000 {
        let (ty, exact) = HANDSHAKE_LENS[rng.below(5) as usize];
        datagram.clear();
        datagram.push(ty << 4);
        datagram.extend_from_slice(&MAGIC);
        datagram.resize(5 + rng.below(exact as u64 - 5) as usize, 0);
        rng.fill_bytes(&mut datagram[5..]);
        now += Duration::from_micros(100);
        let from = stranger(&mut rng);
        assert_eq!(
            feed(&mut server, now, from, &datagram),
            DropReason::TooShort
        );
        *by_reason.entry(DropReason::TooShort.name()).or_default() += 1;
        assert_eq!(server.table_sizes(), TableSizes::default());
    }

    let m = server.metrics();
    assert_eq!(m.datagrams_received, 47_000);
    assert_eq!(m.rejected.total(), 47_000);
    // Nothing was sent: the 1,400-byte check on sent datagrams is untouched by
    // the 1,380 oversize datagrams received.
    assert_eq!(
        (m.datagrams_sent, m.bytes_sent, m.largest_datagram_sent),
        (0, 0, 0)
    );
    assert_eq!((m.challenges_answered, m.accepted, m.refused), (0, 0, 0));
    let expected: BTreeMap<&'static str, u64> = [
        // Two random datagrams of the status types with a flag bit set are
        // bad framing (status packets carry no flags), not too short.
        ("bad_framing", 18_257),
        ("oversize", 1_380),
        ("too_short", 69 + 27_000),
        ("unknown_connection", 294),
    ]
    .into_iter()
    .collect();
    assert_eq!(by_reason, expected);
    for (reason, n) in m.rejected.iter() {
        assert_eq!(
            n,
            by_reason.get(reason.name()).copied().unwrap_or(0),
            "{reason}"
        );
    }

    // The server still serves: an honest challenge gets its one answer.
    let mut request = [0u8; 64];
    let len = Handshake::ChallengeRequest { client_id: 1 }
        .write(&mut request)
        .unwrap();
    assert_eq!(len, CHALLENGE_REQUEST_LEN);
    assert_eq!(
        server.handle(now, addr(1), &request[..len]),
        HandleOutcome::Challenged
    );
    let mut buf = [0u8; MAX_DATAGRAM];
    let reply = server.poll_transmit(now, &mut buf).expect("a cookie");
    assert!(matches!(
        Handshake::parse(&buf[..reply.len]),
        Ok(Handshake::ChallengeResponse { client_id: 1, .. })
    ));
    assert_eq!(server.table_sizes(), TableSizes::default());
}

#[test]
fn sixty_four_clients_all_connect_at_30_percent_loss_each_way() {
    let bad = ConditionerConfig {
        loss: 0.3,
        latency: Duration::from_millis(100),
        jitter: Duration::from_millis(30),
        duplicate: 0.05,
        reorder: 0.05,
        reorder_delay: Duration::from_millis(40),
        ..ConditionerConfig::default()
    };
    let mut sim = Sim::new();
    let server = sim.add(1, server_config(), bad.clone(), 1);
    let clients: Vec<usize> = (0..64u16)
        .map(|i| sim.add(100 + i, client_config(), bad.clone(), 1000 + i as u64))
        .collect();
    let saddr = sim.nodes[server].addr;
    let now = sim.now;
    for (i, &c) in clients.iter().enumerate() {
        sim.nodes[c]
            .endpoint
            .connect(now, saddr, opts(i as u32 + 1))
            .unwrap();
    }
    let mut up = vec![None; clients.len()];
    let mut server_up = 0;
    let ok = sim.run_until(Duration::from_secs(60), |sim| {
        for (k, &c) in clients.iter().enumerate() {
            for e in sim.nodes[c].events.drain(..) {
                match e {
                    Event::Connected { .. } => up[k] = Some(sim.now - sim.t0),
                    other => panic!("client {k}: {other:?}"),
                }
            }
        }
        for e in sim.nodes[server].events.drain(..) {
            match e {
                Event::Connected { .. } => server_up += 1,
                other => panic!("server: {other:?}"),
            }
        }
        up.iter().all(Option::is_some) && server_up == clients.len()
    });
    assert!(
        ok,
        "{} of 64 clients connected",
        up.iter().flatten().count()
    );
    let slowest = up.iter().flatten().max().unwrap();
    let m = sim.nodes[server].endpoint.metrics();
    // Seeded: every figure is exact. The slowest client needed 10.75 s: the
    // old policy (10 s connect timeout) would have lost it.
    assert_eq!(
        (
            slowest.as_millis(),
            m.challenges_answered,
            m.accepted,
            m.refused,
            m.rejected.total()
        ),
        (10_753, 104, 67, 0, 206)
    );
    let reasons: Vec<(DropReason, u64)> = m.rejected.iter().filter(|r| r.1 > 0).collect();
    assert_eq!(
        reasons,
        vec![
            (DropReason::ReplayedCookie, 2),
            (DropReason::Duplicate, 204)
        ]
    );
    assert_eq!(sim.nodes[server].endpoint.connections().count(), 64);
}
