//! The delivery classes, notify invariants, rate and priority, layers and
//! connection lifetime, all on simulated time.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::*;
use netq3_netchan::conditioner::ConditionerConfig;
use netq3_netchan::packet::{packet_type, DataHeader};
use netq3_netchan::{
    codes, ConnectOptions, ConnectionConfig, DisconnectReason, Event, PresharedKey, RateAnnounce,
    SendError,
};

fn jittery(loss: f64) -> ConditionerConfig {
    ConditionerConfig {
        loss,
        latency: Duration::from_millis(30),
        jitter: Duration::from_millis(8),
        duplicate: 0.05,
        reorder: 0.05,
        reorder_delay: Duration::from_millis(12),
        ..ConditionerConfig::default()
    }
}

#[test]
fn all_four_classes_on_one_connection() {
    let mut sim = Sim::new();
    let server = sim.add(1, server_config(), jittery(0.2), 1);
    let client = sim.add(2, client_config(), jittery(0.2), 2);
    let (cid, sid) = connect(&mut sim, client, server, opts(5));

    let mut quickest_sent = 0u32;
    let mut states = Vec::new();
    for tick in 0..200u32 {
        {
            let c = sim.nodes[client].endpoint.connection_mut(cid).unwrap();
            c.send_ordered(format!("chat {tick}").as_bytes()).unwrap();
            c.send_unguaranteed(&tick.to_le_bytes(), (tick % 3) as u8)
                .unwrap();
            if c.send_quickest(&tick.to_le_bytes()).is_ok() {
                quickest_sent += 1;
            }
        }
        {
            let s = sim.nodes[server].endpoint.connection_mut(sid).unwrap();
            // A "snapshot" larger than one datagram every fifth tick.
            let size = if tick % 5 == 0 { 3000 } else { 200 };
            let payload: Vec<u8> = (0..size).map(|i| (i as u32 ^ tick) as u8).collect();
            states.push(s.send_state(&payload).unwrap());
        }
        let until = sim.now + Duration::from_millis(50);
        while sim.now < until {
            sim.step();
        }
    }
    sim.run_for(Duration::from_secs(3));

    let server_events = sim.take_events(server);
    let chats: Vec<String> = server_events
        .iter()
        .filter_map(|e| match e {
            Event::Message { data, .. } => Some(String::from_utf8(data.clone()).unwrap()),
            _ => None,
        })
        .collect();
    let expected: Vec<String> = (0..200).map(|t| format!("chat {t}")).collect();
    assert_eq!(chats, expected, "ordered: exactly once, in order");

    let quick: Vec<u32> = server_events
        .iter()
        .filter_map(|e| match e {
            Event::Quickest { data, .. } => Some(u32::from_le_bytes(data[..4].try_into().unwrap())),
            _ => None,
        })
        .collect();
    assert_eq!(
        quick.len() as u32,
        quickest_sent,
        "quickest: every item once"
    );
    assert!(quick.windows(2).all(|w| w[0] < w[1]), "quickest: in order");

    let unguaranteed: Vec<u32> = server_events
        .iter()
        .filter_map(|e| match e {
            Event::Unguaranteed { data, .. } => {
                Some(u32::from_le_bytes(data[..4].try_into().unwrap()))
            }
            _ => None,
        })
        .collect();
    let unique: HashSet<u32> = unguaranteed.iter().copied().collect();
    assert_eq!(
        unique.len(),
        unguaranteed.len(),
        "unguaranteed: never duplicated"
    );
    // Seeded: exact figures. Some lost at 20% loss, none resent.
    assert_eq!(unguaranteed.len(), 166, "unguaranteed events received");

    // State: one report per id, in id order; received payloads are intact and increasing.
    let client_events = sim.take_events(client);
    let received: Vec<(u64, usize)> = client_events
        .iter()
        .filter_map(|e| match e {
            Event::State { id, data, .. } => Some((*id, data.len())),
            _ => None,
        })
        .collect();
    assert!(received.windows(2).all(|w| w[0].0 < w[1].0));
    let fragmented = received.iter().filter(|&&(_, len)| len == 3000).count();
    assert_eq!(
        (received.len(), fragmented),
        (147, 17),
        "states and fragmented states received"
    );
    let reports: Vec<(u64, bool)> = server_events
        .iter()
        .filter_map(|e| match e {
            Event::StateDelivered { id, .. } => Some((*id, true)),
            Event::StateDropped { id, .. } => Some((*id, false)),
            _ => None,
        })
        .collect();
    assert_eq!(reports.iter().map(|r| r.0).collect::<Vec<_>>(), states);
    let delivered: HashSet<u64> = reports.iter().filter(|r| r.1).map(|r| r.0).collect();
    let arrived: HashSet<u64> = received.iter().map(|r| r.0).collect();
    // Delivered means every datagram of it arrived, so the client has it. The
    // converse may fail: the acks of an arrived state can all be lost.
    assert!(
        delivered.is_subset(&arrived),
        "{:?}",
        delivered.difference(&arrived)
    );
    assert_eq!(
        (delivered.len(), arrived.difference(&delivered).count()),
        (144, 3),
        "states delivered, and arrived but reported dropped"
    );
    let m = sim.nodes[server]
        .endpoint
        .connection(sid)
        .unwrap()
        .metrics();
    assert_eq!(m.states_delivered + m.states_dropped, 200);
}

#[test]
fn notify_once_per_datagram_in_send_order() {
    let mut sim = Sim::new();
    sim.sent_log = Some(Vec::new());
    sim.delivered_log = Some(Vec::new());
    let mut sc = server_config();
    sc.connection.datagram_notify_events = true;
    let mut cc = client_config();
    cc.connection.datagram_notify_events = true;
    let server = sim.add(1, sc, jittery(0.25), 3);
    let client = sim.add(2, cc, jittery(0.25), 4);
    let (cid, sid) = connect(&mut sim, client, server, opts(8));
    for i in 0..3000u32 {
        let c = sim.nodes[client].endpoint.connection_mut(cid).unwrap();
        c.send_ordered(&i.to_le_bytes()).unwrap();
        if i % 10 == 0 {
            let until = sim.now + Duration::from_millis(20);
            while sim.now < until {
                sim.step();
            }
        }
    }
    sim.run_for(Duration::from_secs(2));

    let mut drops = Vec::new();
    for (node, conn, peer) in [(client, cid, server), (server, sid, client)] {
        let me = sim.nodes[node].addr;
        let other = sim.nodes[peer].addr;
        let seqs_sent: Vec<u64> = sim
            .sent_log
            .as_ref()
            .unwrap()
            .iter()
            .filter(|s| s.from == me && packet_type(&s.bytes) == Ok(6))
            .map(|s| DataHeader::parse(&s.bytes).unwrap().0.seq as u64)
            .collect();
        let arrived: HashSet<u16> = sim
            .delivered_log
            .as_ref()
            .unwrap()
            .iter()
            .filter(|s| s.from == me && s.to == other && packet_type(&s.bytes) == Ok(6))
            .map(|s| DataHeader::parse(&s.bytes).unwrap().0.seq)
            .collect();
        let notes: Vec<(u64, bool)> = sim.nodes[node]
            .events
            .iter()
            .filter_map(|e| match e {
                Event::Notify {
                    conn: c,
                    seq,
                    delivered,
                } if *c == conn => Some((*seq, *delivered)),
                _ => None,
            })
            .collect();
        // Exactly one per sent datagram, in send order: the notified seqs are 0, 1, 2, ...
        let expected: Vec<u64> = (0..notes.len() as u64).collect();
        assert_eq!(notes.iter().map(|n| n.0).collect::<Vec<_>>(), expected);
        let in_flight = sim.nodes[node]
            .endpoint
            .connection(conn)
            .unwrap()
            .metrics()
            .datagrams_in_flight;
        assert_eq!(notes.len() + in_flight, seqs_sent.len());
        assert!(in_flight < 40);
        // Wire seqs of the sent datagrams are consecutive too.
        assert!(seqs_sent
            .iter()
            .enumerate()
            .all(|(i, s)| *s == (i as u64 & 0xffff)));
        // Delivered is never claimed for a datagram that did not arrive.
        for (seq, delivered) in &notes {
            if *delivered {
                assert!(
                    arrived.contains(&(*seq as u16)),
                    "seq {seq} claimed delivered"
                );
            }
        }
        // Loss is noticed: seeded, so exact (25% loss each way).
        let dropped = notes.iter().filter(|n| !n.1).count();
        drops.push((dropped, notes.len()));
    }
    let m = sim.nodes[client]
        .endpoint
        .connection(cid)
        .unwrap()
        .metrics();
    assert_eq!(
        drops,
        vec![(191, 490), (81, 322)],
        "(notified dropped, notified) client, then server"
    );
    assert!(m.loss > 0.1 && m.loss < 0.6, "smoothed loss {}", m.loss);
    assert!(
        m.rtt > Duration::from_millis(50) && m.rtt < Duration::from_millis(150),
        "{:?}",
        m.rtt
    );
}

#[test]
fn rate_limit_and_modem_announcement() {
    let mut sim = Sim::new();
    sim.sent_log = Some(Vec::new());
    let server = sim.add(1, server_config(), ConditionerConfig::default(), 5);
    let mut cc = client_config();
    // A modem-era client: 10 datagrams/s of 200 bytes.
    cc.connection.receive_rate = RateAnnounce {
        bytes_per_sec: 2000,
        packets_per_sec: 10,
    };
    let client = sim.add(2, cc, ConditionerConfig::default(), 6);
    let (_cid, sid) = connect(&mut sim, client, server, opts(3));
    let start = sim.elapsed();
    for i in 0..50u32 {
        let s = sim.nodes[server].endpoint.connection_mut(sid).unwrap();
        s.send_ordered(&[i as u8; 300]).unwrap();
    }
    sim.run_for(Duration::from_secs(10));
    let server_addr = sim.nodes[server].addr;
    let data: Vec<&Sent> = sim
        .sent_log
        .as_ref()
        .unwrap()
        .iter()
        .filter(|s| s.from == server_addr && s.at >= start && packet_type(&s.bytes) == Ok(6))
        .collect();
    assert!(
        data.iter().all(|s| s.bytes.len() <= 200),
        "datagrams sized for the modem"
    );
    let total: usize = data.iter().map(|s| s.bytes.len()).sum();
    let secs = 10.0;
    assert!(
        total as f64 <= 2000.0 * secs + 200.0,
        "{total} bytes in {secs}s"
    );
    assert!(
        data.len() as f64 <= 10.0 * secs + 1.0,
        "{} datagrams in {secs}s",
        data.len()
    );
    // It still got everything across, fragmented to fit.
    let got = sim.nodes[client]
        .events
        .iter()
        .filter(|e| matches!(e, Event::Message { .. }))
        .count();
    assert_eq!(got, 50);
}

#[test]
fn priority_orders_unguaranteed_events_under_a_tight_budget() {
    let mut sim = Sim::new();
    let mut sc = server_config();
    sc.connection.send_rate = RateAnnounce {
        bytes_per_sec: 3000,
        packets_per_sec: 10,
    };
    let server = sim.add(1, sc, ConditionerConfig::default(), 7);
    let client = sim.add(2, client_config(), ConditionerConfig::default(), 8);
    let (_cid, sid) = connect(&mut sim, client, server, opts(4));
    sim.take_events(client);
    {
        let s = sim.nodes[server].endpoint.connection_mut(sid).unwrap();
        for i in 0..20u8 {
            // Low priority first in queue order; high priority must still go first.
            s.send_unguaranteed(
                &[
                    b'l', i, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                ],
                1,
            )
            .unwrap();
        }
        for i in 0..20u8 {
            s.send_unguaranteed(
                &[
                    b'h', i, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                ],
                9,
            )
            .unwrap();
        }
    }
    sim.run_for(Duration::from_secs(3));
    let order: Vec<(u8, u8)> = sim.nodes[client]
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Unguaranteed { data, .. } => Some((data[0], data[1])),
            _ => None,
        })
        .collect();
    assert_eq!(order.len(), 40);
    assert!(order[..20].iter().all(|(p, _)| *p == b'h'), "{order:?}");
    assert!(
        order[..20].windows(2).all(|w| w[0].1 < w[1].1),
        "FIFO within a priority"
    );
}

#[test]
fn ordered_overflow_is_a_reported_disconnect() {
    let mut sim = Sim::new();
    let mut cc = client_config();
    cc.connection.ordered_max_messages = 100;
    let server = sim.add(1, server_config(), ConditionerConfig::default(), 9);
    let client = sim.add(2, cc, ConditionerConfig::default(), 10);
    let (cid, _sid) = connect(&mut sim, client, server, opts(6));
    // The server stops reading: nothing is acknowledged any more.
    sim.nodes[server].offline = true;
    let mut result = Ok(());
    for i in 0..200u32 {
        let c = sim.nodes[client].endpoint.connection_mut(cid).unwrap();
        result = c.send_ordered(&i.to_le_bytes());
        if result.is_err() {
            break;
        }
    }
    assert_eq!(result, Err(SendError::OrderedOverflow));
    sim.run_for(Duration::from_millis(100));
    assert!(sim.nodes[client].events.iter().any(|e| matches!(
        e,
        Event::Disconnected {
            reason: DisconnectReason::OrderedOverflow,
            ..
        }
    )));
    // The peer is told why.
    sim.nodes[server].offline = false;
    let mut sim2 = Sim::new();
    let mut cc = client_config();
    cc.connection.ordered_max_messages = 10;
    let server = sim2.add(1, server_config(), ConditionerConfig::default(), 9);
    let client = sim2.add(2, cc, ConditionerConfig::default(), 10);
    let (cid, _) = connect(&mut sim2, client, server, opts(6));
    let c = sim2.nodes[client].endpoint.connection_mut(cid).unwrap();
    for i in 0..11u32 {
        let _ = c.send_ordered(&i.to_le_bytes());
    }
    sim2.run_for(Duration::from_millis(200));
    assert!(sim2.nodes[server].events.iter().any(|e| matches!(
        e,
        Event::Disconnected {
            reason: DisconnectReason::Peer(codes::ORDERED_OVERFLOW),
            ..
        }
    )));
}

#[test]
fn explicit_disconnect_and_silent_peer_timeout() {
    let mut sim = Sim::new();
    let server = sim.add(1, server_config(), ConditionerConfig::default(), 11);
    let client = sim.add(2, client_config(), ConditionerConfig::default(), 12);
    let client2 = sim.add(3, client_config(), ConditionerConfig::default(), 13);
    let (cid, _sid) = connect(&mut sim, client, server, opts(1));
    let (_cid2, sid2) = connect(&mut sim, client2, server, opts(2));

    sim.nodes[client].endpoint.disconnect(cid, 42);
    sim.run_for(Duration::from_millis(200));
    assert!(sim.nodes[server].events.iter().any(|e| matches!(
        e,
        Event::Disconnected {
            reason: DisconnectReason::Peer(42),
            ..
        }
    )));
    assert!(sim.nodes[client].endpoint.connection(cid).is_none());

    // Client 2 goes silent.
    sim.nodes[client2].offline = true;
    sim.run_for(Duration::from_secs(11));
    assert!(sim.nodes[server].events.iter().any(|e| matches!(
        e,
        Event::Disconnected { conn, reason: DisconnectReason::TimedOut } if *conn == sid2
    )));
    assert_eq!(sim.nodes[server].endpoint.connections().count(), 0);
}

#[test]
fn encrypted_and_compressed_connection() {
    let key = PresharedKey([0x5a; 32]);
    let mut sim = Sim::new();
    let mut sc = server_config();
    sc.psk = Some(key.clone());
    sc.server.as_mut().unwrap().require_encryption = true;
    let mut cc = client_config();
    cc.psk = Some(key);
    let server = sim.add(1, sc, jittery(0.1), 14);
    let client = sim.add(2, cc, jittery(0.1), 15);
    let options = ConnectOptions {
        client_id: 77,
        encrypt: true,
        compress: true,
    };
    let (cid, sid) = connect(&mut sim, client, server, options);
    assert!(sim.nodes[server]
        .endpoint
        .connection(sid)
        .unwrap()
        .is_encrypted());
    assert!(sim.nodes[client]
        .endpoint
        .connection(cid)
        .unwrap()
        .is_compressed());
    // Game-like payloads: mostly zeros and small numbers.
    let payload = |i: u32| -> Vec<u8> {
        (0..400u32)
            .map(|k| if k % 9 == 0 { (k ^ i) as u8 & 0x1f } else { 0 })
            .collect()
    };
    for i in 0..100 {
        sim.nodes[client]
            .endpoint
            .connection_mut(cid)
            .unwrap()
            .send_ordered(&payload(i))
            .unwrap();
    }
    sim.run_for(Duration::from_secs(5));
    let got: Vec<Vec<u8>> = sim.nodes[server]
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Message { data, .. } => Some(data.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(got, (0..100).map(payload).collect::<Vec<_>>());
    let m = sim.nodes[client]
        .endpoint
        .connection(cid)
        .unwrap()
        .metrics();
    // 100 × 400 bytes went out in far fewer bytes thanks to compression.
    assert!(
        m.bytes_sent < 100 * 400 * 6 / 10,
        "{} bytes {:?}",
        m.bytes_sent,
        m
    );
    assert!(
        m.largest_datagram_sent < 700,
        "full raw bodies shrink when compressed"
    );
    assert_eq!(
        sim.nodes[server]
            .endpoint
            .connection(sid)
            .unwrap()
            .metrics()
            .auth_failures,
        0
    );
}

#[test]
fn wrong_key_and_replayed_datagrams_are_rejected() {
    let mut sim = Sim::new();
    sim.sent_log = Some(Vec::new());
    let mut sc = server_config();
    sc.psk = Some(PresharedKey([1; 32]));
    let mut cc = client_config();
    cc.psk = Some(PresharedKey([2; 32]));
    cc.connect_timeout = Duration::from_secs(3);
    let server = sim.add(1, sc, ConditionerConfig::default(), 16);
    let client = sim.add(2, cc, ConditionerConfig::default(), 17);
    let (now, saddr) = (sim.now, sim.nodes[server].addr);
    let options = ConnectOptions {
        client_id: 5,
        encrypt: true,
        compress: false,
    };
    sim.nodes[client]
        .endpoint
        .connect(now, saddr, options)
        .unwrap();
    sim.run_for(Duration::from_secs(8));
    // The client got an accept, but nothing it sends authenticates.
    assert!(!sim.nodes[server]
        .events
        .iter()
        .any(|e| matches!(e, Event::Connected { .. })));
    assert_eq!(
        sim.nodes[server].endpoint.connections().count(),
        0,
        "pending slot timed out"
    );

    // Replay: with the right key, re-inject an old datagram.
    let key = PresharedKey([3; 32]);
    let mut sim = Sim::new();
    sim.sent_log = Some(Vec::new());
    let mut sc = server_config();
    sc.psk = Some(key.clone());
    let mut cc = client_config();
    cc.psk = Some(key);
    let server = sim.add(1, sc, ConditionerConfig::default(), 18);
    let client = sim.add(2, cc, ConditionerConfig::default(), 19);
    let options = ConnectOptions {
        client_id: 6,
        encrypt: true,
        compress: false,
    };
    let (cid, sid) = connect(&mut sim, client, server, options);
    sim.nodes[client]
        .endpoint
        .connection_mut(cid)
        .unwrap()
        .send_ordered(b"once")
        .unwrap();
    sim.run_for(Duration::from_millis(200));
    let caddr = sim.nodes[client].addr;
    let old: Vec<Vec<u8>> = sim
        .sent_log
        .as_ref()
        .unwrap()
        .iter()
        .filter(|s| s.from == caddr && packet_type(&s.bytes) == Ok(6))
        .map(|s| s.bytes.clone())
        .collect();
    let before = sim.nodes[server]
        .endpoint
        .connection(sid)
        .unwrap()
        .metrics()
        .clone();
    let now = sim.now;
    for d in &old {
        sim.nodes[server].endpoint.handle(now, caddr, d);
    }
    // A tampered datagram fails authentication.
    let mut tampered = old.last().unwrap().clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    tampered[5] = tampered[5].wrapping_add(100); // a fresh sequence number
    sim.nodes[server].endpoint.handle(now, caddr, &tampered);
    let after = sim.nodes[server]
        .endpoint
        .connection(sid)
        .unwrap()
        .metrics()
        .clone();
    assert_eq!(after.datagrams_received, before.datagrams_received);
    assert!(
        after.duplicates_received + after.stale_received
            >= before.duplicates_received + old.len() as u64
    );
    assert_eq!(after.auth_failures, before.auth_failures + 1);
    let messages = sim.nodes[server]
        .endpoint
        .poll_event()
        .into_iter()
        .chain(sim.nodes[server].events.drain(..))
        .filter(|e| matches!(e, Event::Message { .. }))
        .count();
    assert_eq!(messages, 1);
}

#[test]
fn nat_port_change_keeps_the_connection() {
    let mut sim = Sim::new();
    let server = sim.add(1, server_config(), ConditionerConfig::default(), 20);
    let client = sim.add(2, client_config(), ConditionerConfig::default(), 21);
    let (cid, sid) = connect(&mut sim, client, server, opts(1234));
    // The NAT maps the client to a new port.
    sim.nodes[client].addr = addr(4000);
    deliver(&mut sim, (client, cid), server, b"after rebinding");
    let conn = sim.nodes[server].endpoint.connection(sid).unwrap();
    assert_eq!(conn.remote_addr(), addr(4000));
    assert_eq!(sim.nodes[server].endpoint.metrics().migrations, 1);
    // And the server's replies reach the new port.
    deliver(&mut sim, (server, sid), client, b"reply");
}

/// Sends `message` guaranteed-ordered from `from` and checks it reaches `to` within 300 ms.
fn deliver(sim: &mut Sim, from: (usize, netq3_netchan::ConnectionId), to: usize, message: &[u8]) {
    sim.nodes[from.0]
        .endpoint
        .connection_mut(from.1)
        .unwrap()
        .send_ordered(message)
        .unwrap();
    sim.run_for(Duration::from_millis(300));
    assert!(sim.nodes[to]
        .events
        .iter()
        .any(|e| matches!(e, Event::Message { data, .. } if data == message)));
}

#[test]
fn idle_connection_traffic_is_bounded() {
    let mut sim = Sim::new();
    let server = sim.add(1, server_config(), ConditionerConfig::default(), 22);
    let client = sim.add(2, client_config(), ConditionerConfig::default(), 23);
    let (cid, _) = connect(&mut sim, client, server, opts(1));
    let before = sim.nodes[client]
        .endpoint
        .connection(cid)
        .unwrap()
        .metrics()
        .datagrams_sent;
    sim.run_for(Duration::from_secs(5));
    let sent = sim.nodes[client]
        .endpoint
        .connection(cid)
        .unwrap()
        .metrics()
        .datagrams_sent
        - before;
    // Keepalives every 100 ms: about 50, and no busy loop.
    assert!((40..=60).contains(&sent), "{sent} keepalives");
}

#[test]
fn connection_config_defaults_are_consistent() {
    let c = ConnectionConfig::default();
    assert!(c.ordered_window as usize <= c.ordered_max_messages);
    assert!(c.max_message_size <= c.max_partial_bytes);
}

#[test]
fn rtt_tracks_link_latency() {
    let link = ConditionerConfig {
        latency: Duration::from_millis(30),
        ..ConditionerConfig::default()
    };
    let mut sim = Sim::new();
    let server = sim.add(1, server_config(), link.clone(), 30);
    let client = sim.add(2, client_config(), link, 31);
    let (cid, sid) = connect(&mut sim, client, server, opts(1));
    for tick in 0..40u32 {
        sim.nodes[server]
            .endpoint
            .connection_mut(sid)
            .unwrap()
            .send_state(&[1; 600])
            .unwrap();
        sim.nodes[client]
            .endpoint
            .connection_mut(cid)
            .unwrap()
            .send_quickest(&tick.to_le_bytes())
            .unwrap();
        let until = sim.now + Duration::from_millis(50);
        while sim.now < until {
            sim.step();
        }
    }
    for (node, conn) in [(server, sid), (client, cid)] {
        let rtt = sim.nodes[node].endpoint.connection(conn).unwrap().rtt();
        // 60 ms of path plus at most the ack delay.
        assert!(
            rtt >= Duration::from_millis(60) && rtt <= Duration::from_millis(70),
            "{rtt:?}"
        );
    }
}

#[test]
fn server_total_rate_caps_all_connections_together() {
    let mut sim = Sim::new();
    sim.sent_log = Some(Vec::new());
    let mut sc = server_config();
    sc.server.as_mut().unwrap().total_rate = Some(20_000);
    let server = sim.add(1, sc, ConditionerConfig::default(), 40);
    let clients: Vec<usize> = (0..3)
        .map(|i| {
            sim.add(
                10 + i,
                client_config(),
                ConditionerConfig::default(),
                41 + i as u64,
            )
        })
        .collect();
    let mut sids = Vec::new();
    for (i, c) in clients.iter().enumerate() {
        sids.push(connect(&mut sim, *c, server, opts(i as u32)).1);
    }
    let start = sim.elapsed();
    for sid in &sids {
        let s = sim.nodes[server].endpoint.connection_mut(*sid).unwrap();
        for _ in 0..100 {
            s.send_ordered(&[0xAB; 1000]).unwrap();
        }
    }
    sim.run_for(Duration::from_secs(5));
    let saddr = sim.nodes[server].addr;
    let sent: Vec<&Sent> = sim
        .sent_log
        .as_ref()
        .unwrap()
        .iter()
        .filter(|s| s.from == saddr && s.at >= start)
        .collect();
    let total: usize = sent.iter().map(|s| s.bytes.len()).sum();
    // 5 s at 20 kB/s plus one burst allowance (1400 bytes minimum bucket).
    assert!(total <= 5 * 20_000 + 1400, "{total} bytes");
    assert!(
        total >= 5 * 20_000 * 8 / 10,
        "the cap is used, not starved: {total}"
    );
    // Shared fairly: every client got a similar share.
    let per_client: Vec<usize> = clients
        .iter()
        .map(|c| {
            let a = sim.nodes[*c].addr;
            sent.iter()
                .filter(|s| s.to == a)
                .map(|s| s.bytes.len())
                .sum()
        })
        .collect();
    let (lo, hi) = (
        per_client.iter().min().unwrap(),
        per_client.iter().max().unwrap(),
    );
    assert!(*hi as f64 <= *lo as f64 * 1.5, "{per_client:?}");
}

#[test]
fn receive_rate_can_change_mid_connection() {
    let mut sim = Sim::new();
    sim.sent_log = Some(Vec::new());
    let server = sim.add(1, server_config(), jittery(0.2), 50);
    let client = sim.add(2, client_config(), jittery(0.2), 51);
    let (cid, sid) = connect(&mut sim, client, server, opts(1));
    let slow = RateAnnounce {
        bytes_per_sec: 3000,
        packets_per_sec: 10,
    };
    sim.nodes[client]
        .endpoint
        .connection_mut(cid)
        .unwrap()
        .set_receive_rate(slow);
    sim.run_for(Duration::from_secs(1));
    assert_eq!(
        sim.nodes[server]
            .endpoint
            .connection(sid)
            .unwrap()
            .peer_rate(),
        slow
    );
    let start = sim.elapsed();
    for _ in 0..30 {
        sim.nodes[server]
            .endpoint
            .connection_mut(sid)
            .unwrap()
            .send_ordered(&[1; 500])
            .unwrap();
    }
    sim.run_for(Duration::from_secs(4));
    let saddr = sim.nodes[server].addr;
    let sizes: Vec<usize> = sim
        .sent_log
        .as_ref()
        .unwrap()
        .iter()
        .filter(|s| s.from == saddr && s.at >= start)
        .map(|s| s.bytes.len())
        .collect();
    assert!(sizes.iter().all(|n| *n <= 300), "{sizes:?}");
    assert!(sizes.len() <= 4 * 10 + 1);
    assert_eq!(
        sim.nodes[server]
            .endpoint
            .connection(sid)
            .unwrap()
            .metrics()
            .send_rate,
        3000
    );
}
