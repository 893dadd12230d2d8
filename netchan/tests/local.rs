//! The in-process link: same driver API as UDP, on simulated time.

use std::time::{Duration, Instant};

use netq3_netchan::conditioner::ConditionerConfig;
use netq3_netchan::{ConnectOptions, Endpoint, EndpointConfig, Event, LocalDriver, LocalHub};

#[test]
fn listen_server_with_local_clients() {
    let t0 = Instant::now();
    let mut now = t0;
    let hub = LocalHub::new();
    let mut server =
        LocalDriver::bind_local(&hub, None, Endpoint::new(EndpointConfig::server(), now)).unwrap();
    let server_addr = server.local_addr();
    let mut clients: Vec<LocalDriver> = (0..4)
        .map(|_| {
            LocalDriver::bind_local(&hub, None, Endpoint::new(EndpointConfig::client(), now))
                .unwrap()
        })
        .collect();
    // One client sits behind a lossy link: the conditioner works on this transport too.
    clients[3].set_conditioner(
        ConditionerConfig {
            loss: 0.3,
            latency: Duration::from_millis(20),
            ..ConditionerConfig::default()
        },
        9,
    );
    for (i, c) in clients.iter_mut().enumerate() {
        let id = c
            .endpoint_mut()
            .connect(
                now,
                server_addr,
                ConnectOptions {
                    client_id: i as u32,
                    encrypt: false,
                    compress: false,
                },
            )
            .unwrap();
        c.endpoint_mut()
            .connection_mut(id)
            .unwrap()
            .send_ordered(format!("hello from {i}").as_bytes())
            .unwrap();
    }
    let mut greetings = Vec::new();
    for _ in 0..100_000 {
        loop {
            let mut moved = server.pump(now);
            for c in &mut clients {
                moved += c.pump(now);
            }
            if moved == 0 {
                break;
            }
        }
        while let Some(e) = server.endpoint_mut().poll_event() {
            if let Event::Message { data, .. } = e {
                greetings.push(String::from_utf8(data).unwrap());
            }
        }
        if greetings.len() == 4 {
            break;
        }
        let next = clients
            .iter()
            .filter_map(|c| c.next_wakeup())
            .chain(server.next_wakeup())
            .min()
            .unwrap_or(now + Duration::from_millis(1));
        now = next.max(now + Duration::from_micros(100));
    }
    greetings.sort();
    assert_eq!(
        greetings,
        vec![
            "hello from 0",
            "hello from 1",
            "hello from 2",
            "hello from 3"
        ]
    );
    assert_eq!(server.endpoint().connections().count(), 4);
    // Simulated time, seeded conditioner: the lossy client's greeting lands at an exact time
    // (its resend timed by the round trip the handshake measured, not by `initial_rtt`).
    assert_eq!((now - t0).as_micros(), 600_000);
    // In-process delivery is instant, so the measured RTT is just the ack delay.
    for id in server.endpoint().connections() {
        let c = server.endpoint().connection(id).unwrap();
        if c.client_id() != 3 {
            assert!(c.rtt() <= Duration::from_millis(10), "{:?}", c.rtt());
        }
    }
}
