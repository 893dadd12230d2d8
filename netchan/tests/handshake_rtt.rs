//! The handshake measures the first round trip on both ends, so the first
//! messages of a connection are resent after a timeout fitted to the link,
//! not to the 200 ms guess `initial_rtt` makes.

mod common;

use std::time::Duration;

use common::*;
use netq3_netchan::conditioner::ConditionerConfig;
use netq3_netchan::{ConnectOptions, Event};

fn link(latency_ms: u64) -> ConditionerConfig {
    ConditionerConfig {
        latency: Duration::from_millis(latency_ms),
        ..ConditionerConfig::default()
    }
}

#[test]
fn both_ends_know_the_round_trip_once_connected() {
    let mut sim = Sim::new();
    let server = sim.add(1, server_config(), link(40), 1);
    let client = sim.add(2, client_config(), link(40), 2);
    let (now, saddr) = (sim.now, sim.nodes[server].addr);
    let options = ConnectOptions {
        client_id: 5,
        encrypt: false,
        compress: false,
    };
    let id = sim.nodes[client]
        .endpoint
        .connect(now, saddr, options)
        .unwrap();
    // Stop at the moment the server hears the client's first datagram:
    // no data has been acknowledged yet.
    let up = sim.run_until(Duration::from_secs(2), |s| {
        s.nodes[server]
            .events
            .iter()
            .any(|e| matches!(e, Event::Connected { .. }))
    });
    assert!(up);
    let server_conn = sim.nodes[server].endpoint.connections().next().unwrap();
    let server_rtt = sim.nodes[server]
        .endpoint
        .connection(server_conn)
        .unwrap()
        .rtt();
    let client_rtt = sim.nodes[client].endpoint.connection(id).unwrap().rtt();
    assert_eq!(client_rtt, Duration::from_millis(80), "connect → accept");
    assert_eq!(
        server_rtt,
        Duration::from_millis(80),
        "accept → first datagram"
    );
}

#[test]
fn a_resent_connect_gives_no_sample() {
    let mut sim = Sim::new();
    let server = sim.add(1, server_config(), link(40), 1);
    let client = sim.add(2, client_config(), link(40), 2);
    let (now, saddr) = (sim.now, sim.nodes[server].addr);
    let options = ConnectOptions {
        client_id: 6,
        encrypt: false,
        compress: false,
    };
    let id = sim.nodes[client]
        .endpoint
        .connect(now, saddr, options)
        .unwrap();
    // The server is away while the connect goes out for the first time
    // (the challenge was answered), so the client sends it again.
    let answered = sim.run_until(Duration::from_secs(1), |s| {
        s.nodes[server].endpoint.metrics().challenges_answered == 1
    });
    assert!(answered);
    sim.nodes[server].offline = true;
    sim.run_for(Duration::from_millis(300));
    sim.nodes[server].offline = false;
    let up = sim.run_until(Duration::from_secs(3), |s| {
        s.nodes[client]
            .events
            .iter()
            .any(|e| matches!(e, Event::Connected { .. }))
    });
    assert!(up);
    // Which of the connects the accept answers is unknown: no sample, the
    // initial guess stands until data is acknowledged.
    assert_eq!(
        sim.nodes[client].endpoint.connection(id).unwrap().rtt(),
        Duration::from_millis(200)
    );
}
