//! Guaranteed-ordered delivery under loss, duplication and reordering.

mod common;

use std::time::Duration;

use common::*;
use netq3_netchan::conditioner::ConditionerConfig;
use netq3_netchan::{ConnectionConfig, Event};

fn lossy(loss: f64) -> ConditionerConfig {
    ConditionerConfig {
        loss,
        latency: Duration::from_millis(20),
        jitter: Duration::from_millis(10),
        duplicate: 0.05,
        reorder: 0.05,
        reorder_delay: Duration::from_millis(15),
        ..ConditionerConfig::default()
    }
}

fn connection_config() -> ConnectionConfig {
    ConnectionConfig {
        ordered_max_messages: 16_384,
        ordered_window: 2048,
        ..ConnectionConfig::default()
    }
}

fn message(i: u32) -> Vec<u8> {
    let mut m = i.to_le_bytes().to_vec();
    // Variable length, derived from the index, so content errors show.
    m.extend((0..(i % 23)).map(|k| (i as u8).wrapping_add(k as u8)));
    m
}

/// Sends `count` messages client→server and `back` server→client at once;
/// checks every one arrives exactly once and in order.
/// Streams `count` messages up and `back` down; returns (resends, datagrams
/// notified dropped, duplicates received on both sides), seeded and exact.
fn stream(loss: f64, seed: u64, count: u32, back: u32) -> (u64, u64, u64) {
    let mut sim = Sim::new();
    sim.collect_events = false;
    let mut sc = server_config();
    sc.connection = connection_config();
    let mut cc = client_config();
    cc.connection = connection_config();
    cc.connect_timeout = Duration::from_secs(60);
    let server = sim.add(1, sc, lossy(loss), seed);
    let client = sim.add(2, cc, lossy(loss), seed.wrapping_mul(31).wrapping_add(7));

    let (now, server_addr) = (sim.now, sim.nodes[server].addr);
    let cid = sim.nodes[client]
        .endpoint
        .connect(now, server_addr, opts(9))
        .unwrap();
    let mut sid = None;
    let (mut sent_up, mut sent_down) = (0u32, 0u32);
    let (mut got_up, mut got_down) = (0u32, 0u32);
    let limit = sim.now + Duration::from_secs(600);
    while got_up < count || got_down < back {
        assert!(
            sim.now < limit,
            "stalled: up {got_up}/{count}, down {got_down}/{back} at {loss}"
        );
        // Keep the queues topped up without overflowing them.
        if let Some(c) = sim.nodes[client].endpoint.connection_mut(cid) {
            if c.is_established() {
                while sent_up < count && c.metrics().ordered_queue_len < 8000 {
                    c.send_ordered(&message(sent_up)).unwrap();
                    sent_up += 1;
                }
            }
        }
        if let Some(sid) = sid {
            if let Some(c) = sim.nodes[server].endpoint.connection_mut(sid) {
                while sent_down < back && c.metrics().ordered_queue_len < 8000 {
                    c.send_ordered(&message(sent_down)).unwrap();
                    sent_down += 1;
                }
            }
        }
        sim.step();
        while let Some(e) = sim.nodes[server].endpoint.poll_event() {
            match e {
                Event::Connected { conn, .. } => sid = Some(conn),
                Event::Message { data, .. } => {
                    assert_eq!(data, message(got_up), "up message {got_up} at loss {loss}");
                    got_up += 1;
                    sim.nodes[server].endpoint.recycle(data);
                }
                Event::Disconnected { reason, .. } => panic!("server side closed: {reason:?}"),
                _ => {}
            }
        }
        while let Some(e) = sim.nodes[client].endpoint.poll_event() {
            match e {
                Event::Message { data, .. } => {
                    assert_eq!(
                        data,
                        message(got_down),
                        "down message {got_down} at loss {loss}"
                    );
                    got_down += 1;
                    sim.nodes[client].endpoint.recycle(data);
                }
                Event::Disconnected { reason, .. } => panic!("client side closed: {reason:?}"),
                _ => {}
            }
        }
    }
    // Nothing extra arrives afterwards (exactly once).
    sim.run_for(Duration::from_secs(2));
    while let Some(e) = sim.nodes[server].endpoint.poll_event() {
        assert!(
            !matches!(e, Event::Message { .. }),
            "extra message after the stream"
        );
    }
    let m = sim.nodes[client]
        .endpoint
        .connection(cid)
        .unwrap()
        .metrics()
        .clone();
    assert_eq!(m.ordered_acked, count as u64);
    let server_m = sim.nodes[server]
        .endpoint
        .connection(sid.unwrap())
        .unwrap()
        .metrics()
        .clone();
    assert_eq!(server_m.ordered_delivered, count as u64);
    assert!(sim.largest <= netq3_netchan::MAX_DATAGRAM);
    (
        m.resends,
        m.datagrams_dropped,
        server_m.duplicates_received + m.duplicates_received,
    )
}

#[test]
fn hundred_thousand_messages_lossless() {
    assert_eq!(stream(0.0, 1, 100_000, 10_000), (3381, 49, 114));
}

#[test]
fn hundred_thousand_messages_10_percent_loss() {
    assert_eq!(stream(0.10, 2, 100_000, 10_000), (16033, 237, 106));
}

#[test]
fn hundred_thousand_messages_30_percent_loss() {
    assert_eq!(stream(0.30, 3, 100_000, 10_000), (62036, 924, 138));
}

#[test]
fn hundred_thousand_messages_50_percent_loss() {
    assert_eq!(stream(0.50, 4, 100_000, 10_000), (175_081, 2603, 141));
}

#[test]
fn sixteen_kib_messages_through_10_percent_loss() {
    let mut sim = Sim::new();
    sim.sent_log = Some(Vec::new());
    let server = sim.add(1, server_config(), lossy(0.10), 11);
    let client = sim.add(2, client_config(), lossy(0.10), 12);
    let (cid, _sid) = connect(&mut sim, client, server, opts(1));
    let big = |i: u32| -> Vec<u8> {
        (0..16 * 1024u32)
            .map(|b| (b.wrapping_mul(2654435761) >> 24) as u8 ^ i as u8)
            .collect()
    };
    for i in 0..40 {
        sim.nodes[client]
            .endpoint
            .connection_mut(cid)
            .unwrap()
            .send_ordered(&big(i))
            .unwrap();
    }
    let mut got = 0u32;
    let ok = sim.run_until(Duration::from_secs(120), |sim| {
        for e in sim.nodes[server].events.drain(..) {
            if let Event::Message { data, .. } = e {
                assert_eq!(data.len(), 16 * 1024);
                assert!(data == big(got), "message {got} corrupted");
                got += 1;
            }
        }
        got == 40
    });
    assert!(ok, "only {got} of 40 arrived");
    let log = sim.sent_log.as_ref().unwrap();
    assert!(log.iter().all(|s| s.bytes.len() <= 1400));
    assert!(
        log.iter().any(|s| s.bytes.len() > 1300),
        "fragments fill datagrams"
    );
    let m = sim.nodes[client]
        .endpoint
        .connection(cid)
        .unwrap()
        .metrics();
    // 40 messages of 16 KiB in 12 or 13 fragments each, plus resends.
    assert_eq!(m.fragments_sent, 594);
    assert!(m.largest_datagram_sent <= 1400);
}

#[test]
fn sequence_numbers_and_message_ids_wrap_around() {
    // 70,000 datagrams each way: both the 16-bit datagram sequence and the
    // 16-bit message id wrap, with encryption on (its nonce uses the
    // extended 64-bit sequence, so a wrong extension would fail to decrypt).
    let key = netq3_netchan::PresharedKey([8; 32]);
    let mut sim = Sim::new();
    let mut sc = server_config();
    sc.psk = Some(key.clone());
    let mut cc = client_config();
    cc.psk = Some(key);
    let link = ConditionerConfig {
        loss: 0.02,
        latency: Duration::from_millis(2),
        ..ConditionerConfig::default()
    };
    let server = sim.add(1, sc, link.clone(), 60);
    let client = sim.add(2, cc, link, 61);
    let options = netq3_netchan::ConnectOptions {
        client_id: 3,
        encrypt: true,
        compress: false,
    };
    let (cid, _sid) = connect(&mut sim, client, server, options);
    sim.collect_events = false;
    let mut next = 0u32;
    let total = 70_000u32;
    for i in 0..total {
        sim.nodes[client]
            .endpoint
            .connection_mut(cid)
            .unwrap()
            .send_ordered(&i.to_le_bytes())
            .unwrap();
        // One millisecond per message: one datagram each.
        let until = sim.now + Duration::from_millis(1);
        while sim.now < until {
            sim.step();
        }
        while let Some(e) = sim.nodes[server].endpoint.poll_event() {
            if let Event::Message { data, .. } = e {
                assert_eq!(data, next.to_le_bytes());
                next += 1;
            }
        }
    }
    sim.run_until(Duration::from_secs(5), |sim| {
        while let Some(e) = sim.nodes[server].endpoint.poll_event() {
            if let Event::Message { data, .. } = e {
                assert_eq!(data, next.to_le_bytes());
                next += 1;
            }
        }
        next == total
    });
    assert_eq!(next, total);
    let m = sim.nodes[client]
        .endpoint
        .connection(cid)
        .unwrap()
        .metrics();
    // Past the 16-bit wrap of the wire sequence number.
    assert_eq!(m.datagrams_sent, 70_002);
    assert_eq!(m.auth_failures, 0);
}
