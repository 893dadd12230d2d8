//! A server on its way out, and a server that does not know a client's
//! connection: both say so at once, so a client never waits for a timeout
//! to learn it must start over.

mod common;

use std::time::Duration;

use common::*;
use netq3_netchan::conditioner::ConditionerConfig;
use netq3_netchan::status::StatusLimits;
use netq3_netchan::{DisconnectReason, DropReason, Event, RejectReason};

fn opts(client_id: u32) -> netq3_netchan::ConnectOptions {
    netq3_netchan::ConnectOptions {
        client_id,
        encrypt: false,
        compress: false,
    }
}

#[test]
fn a_refusing_server_rejects_the_challenge_and_creates_nothing() {
    let mut sim = Sim::new();
    let server = sim.add(1, server_config(), ConditionerConfig::default(), 1);
    let client = sim.add(2, client_config(), ConditionerConfig::default(), 2);
    sim.nodes[server]
        .endpoint
        .refuse_connections(RejectReason::Restarting);
    assert_eq!(
        sim.nodes[server].endpoint.refusing(),
        Some(RejectReason::Restarting)
    );
    let (now, saddr) = (sim.now, sim.nodes[server].addr);
    let id = sim.nodes[client]
        .endpoint
        .connect(now, saddr, opts(7))
        .unwrap();
    sim.run_for(Duration::from_millis(100));
    assert_eq!(
        sim.take_events(client),
        vec![Event::Disconnected {
            conn: id,
            reason: DisconnectReason::Rejected(RejectReason::Restarting)
        }]
    );
    let metrics = sim.nodes[server].endpoint.metrics().clone();
    assert_eq!(metrics.refused, 1);
    assert_eq!(metrics.challenges_answered, 0);
    assert_eq!(sim.nodes[server].endpoint.connections().count(), 0);
    assert!(sim.take_events(server).is_empty());

    // Accepting again, the same client gets in.
    sim.nodes[server].endpoint.accept_connections();
    let now = sim.now;
    let id = sim.nodes[client]
        .endpoint
        .connect(now, saddr, opts(7))
        .unwrap();
    let up = sim.run_until(Duration::from_secs(1), |s| {
        s.nodes[client]
            .events
            .iter()
            .any(|e| matches!(e, Event::Connected { conn, .. } if *conn == id))
    });
    assert!(up);
}

#[test]
fn a_connect_with_a_cookie_from_before_the_refusal_is_rejected() {
    let mut sim = Sim::new();
    let server = sim.add(1, server_config(), ConditionerConfig::default(), 1);
    let client = sim.add(2, client_config(), ConditionerConfig::default(), 2);
    let (now, saddr, caddr) = (sim.now, sim.nodes[server].addr, sim.nodes[client].addr);
    let id = sim.nodes[client]
        .endpoint
        .connect(now, saddr, opts(9))
        .unwrap();
    // Carry the challenge and its answer by hand: the client holds a cookie
    // and is about to send its connect when the server starts refusing.
    let mut buf = [0u8; netq3_netchan::MAX_DATAGRAM];
    let t = sim.nodes[client]
        .endpoint
        .poll_transmit(now, &mut buf)
        .unwrap();
    sim.nodes[server].endpoint.handle(now, caddr, &buf[..t.len]);
    let t = sim.nodes[server]
        .endpoint
        .poll_transmit(now, &mut buf)
        .unwrap();
    sim.nodes[client].endpoint.handle(now, saddr, &buf[..t.len]);
    assert_eq!(sim.nodes[server].endpoint.metrics().challenges_answered, 1);
    sim.nodes[server]
        .endpoint
        .refuse_connections(RejectReason::ShuttingDown);
    sim.run_for(Duration::from_millis(500));
    assert_eq!(
        sim.take_events(client),
        vec![Event::Disconnected {
            conn: id,
            reason: DisconnectReason::Rejected(RejectReason::ShuttingDown)
        }]
    );
    assert_eq!(sim.nodes[server].endpoint.connections().count(), 0);
    assert_eq!(sim.nodes[server].endpoint.metrics().accepted, 0);
}

#[test]
fn data_for_an_unknown_connection_ends_the_client_at_once() {
    let mut sim = Sim::new();
    let server = sim.add(1, server_config(), ConditionerConfig::default(), 1);
    let client = sim.add(2, client_config(), ConditionerConfig::default(), 2);
    let (now, saddr) = (sim.now, sim.nodes[server].addr);
    let id = sim.nodes[client]
        .endpoint
        .connect(now, saddr, opts(11))
        .unwrap();
    let up = sim.run_until(Duration::from_secs(1), |s| {
        s.nodes[server]
            .events
            .iter()
            .any(|e| matches!(e, Event::Connected { .. }))
    });
    assert!(up);
    sim.take_events(client);

    // The server process restarts on the same address: a new endpoint with
    // a new secret that has never heard of the connection.
    // First one that stays silent about it (netchan's default)...
    sim.nodes[server].endpoint = netq3_netchan::Endpoint::new(
        netq3_netchan::EndpointConfig {
            secret: secret(3),
            ..netq3_netchan::EndpointConfig::server()
        },
        sim.now,
    );
    sim.nodes[client]
        .endpoint
        .connection_mut(id)
        .unwrap()
        .send_ordered(b"hello?")
        .unwrap();
    sim.run_for(Duration::from_millis(500));
    assert!(sim.take_events(client).is_empty());
    assert_eq!(sim.nodes[server].endpoint.metrics().datagrams_sent, 0);
    assert!(
        sim.nodes[server]
            .endpoint
            .metrics()
            .rejected
            .get(DropReason::UnknownConnection)
            > 0
    );

    // ...then one configured to answer, as a session server is.
    let mut config = netq3_netchan::EndpointConfig {
        secret: secret(4),
        ..netq3_netchan::EndpointConfig::server()
    };
    if let Some(server) = config.server.as_mut() {
        server.unknown_connection_replies = Some(StatusLimits::default());
    }
    sim.nodes[server].endpoint = netq3_netchan::Endpoint::new(config, sim.now);
    sim.nodes[client]
        .endpoint
        .connection_mut(id)
        .unwrap()
        .send_ordered(b"still there?")
        .unwrap();
    let start = sim.now;
    let ended = sim.run_until(Duration::from_secs(2), |s| {
        s.nodes[client]
            .events
            .iter()
            .any(|e| matches!(e, Event::Disconnected { .. }))
    });
    assert!(
        ended,
        "the client heard within 2 s, not at its idle timeout"
    );
    assert!(sim.now - start < Duration::from_millis(100));
    assert_eq!(
        sim.take_events(client),
        vec![Event::Disconnected {
            conn: id,
            reason: DisconnectReason::Rejected(RejectReason::UnknownConnection)
        }]
    );
    let metrics = sim.nodes[server].endpoint.metrics();
    assert!(metrics.unknown_connection_replies >= 1);
    assert!(
        metrics.unknown_connection_replies <= metrics.rejected.get(DropReason::UnknownConnection)
    );
    assert_eq!(sim.nodes[server].endpoint.connections().count(), 0);
}

#[test]
fn an_unknown_connection_reject_does_not_end_a_live_connection_of_another_id() {
    let mut sim = Sim::new();
    let server = sim.add(1, server_config(), ConditionerConfig::default(), 1);
    let client = sim.add(2, client_config(), ConditionerConfig::default(), 2);
    let (now, saddr) = (sim.now, sim.nodes[server].addr);
    let id = sim.nodes[client]
        .endpoint
        .connect(now, saddr, opts(13))
        .unwrap();
    assert!(sim.run_until(Duration::from_secs(1), |s| {
        s.nodes[client]
            .events
            .iter()
            .any(|e| matches!(e, Event::Connected { .. }))
    }));
    // A reject naming another client id (a stranger's guess) changes nothing.
    let mut buf = [0u8; 64];
    let n = netq3_netchan::handshake::Handshake::Reject {
        client_id: 14,
        reason: RejectReason::UnknownConnection,
    }
    .write(&mut buf)
    .unwrap();
    let now = sim.now;
    let outcome = sim.nodes[client].endpoint.handle(now, saddr, &buf[..n]);
    assert_eq!(
        outcome,
        netq3_netchan::HandleOutcome::Rejected(DropReason::Unexpected)
    );
    sim.run_for(Duration::from_millis(200));
    assert!(sim.nodes[client].endpoint.connection(id).is_some());
    assert!(!sim.nodes[client]
        .events
        .iter()
        .any(|e| matches!(e, Event::Disconnected { .. })));
}
