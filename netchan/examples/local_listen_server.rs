//! A listen server and two clients in one process over the in-process link,
//! showing every delivery class and the state notify on simulated time.
//!
//! ```sh
//! cargo run -p netq3-netchan --example local_listen_server
//! ```

use std::time::{Duration, Instant};

use netq3_netchan::{ConnectOptions, Endpoint, EndpointConfig, Event, LocalDriver, LocalHub};

fn main() -> std::io::Result<()> {
    let t0 = Instant::now();
    let mut now = t0;
    let hub = LocalHub::new();
    let mut server =
        LocalDriver::bind_local(&hub, None, Endpoint::new(EndpointConfig::server(), now))?;
    let server_addr = server.local_addr();
    let mut clients = Vec::new();
    for i in 0..2u32 {
        let mut c =
            LocalDriver::bind_local(&hub, None, Endpoint::new(EndpointConfig::client(), now))?;
        let id = c
            .endpoint_mut()
            .connect(
                now,
                server_addr,
                ConnectOptions {
                    client_id: 100 + i,
                    encrypt: false,
                    compress: true,
                },
            )
            .expect("connect");
        clients.push((c, id));
    }

    let mut tick = 0u32;
    let mut next_tick = now;
    // Two simulated seconds at 20 ticks per second.
    while now < t0 + Duration::from_secs(2) {
        if now >= next_tick {
            next_tick += Duration::from_millis(50);
            tick += 1;
            for (c, id) in &mut clients {
                if let Some(conn) = c.endpoint_mut().connection_mut(*id) {
                    if conn.is_established() {
                        // A player command every tick, a chat line now and then.
                        let _ = conn.send_quickest(&tick.to_le_bytes());
                        if tick % 10 == 0 {
                            let _ = conn.send_ordered(
                                format!("chat from {} at tick {tick}", conn.client_id()).as_bytes(),
                            );
                        }
                    }
                }
            }
            // The server sends every client a snapshot-sized state and an effect event.
            let ids: Vec<_> = server.endpoint().connections().collect();
            for id in ids {
                if let Some(conn) = server.endpoint_mut().connection_mut(id) {
                    if conn.is_established() {
                        let snapshot = vec![tick as u8; 600];
                        let _ = conn.send_state(&snapshot);
                        let _ = conn.send_unguaranteed(b"explosion", 5);
                    }
                }
            }
        }
        // In-process datagrams arrive instantly: pump until nobody moves any.
        loop {
            let mut moved = server.pump(now);
            for (c, _) in &mut clients {
                moved += c.pump(now);
            }
            if moved == 0 {
                break;
            }
        }
        while let Some(event) = server.endpoint_mut().poll_event() {
            match event {
                Event::Message { conn, data } => {
                    println!(
                        "server got {:?} on {conn:?}",
                        String::from_utf8_lossy(&data)
                    );
                    server.endpoint_mut().recycle(data);
                }
                Event::Connected { conn, addr } => {
                    println!("server: {conn:?} connected from {addr}")
                }
                Event::Quickest { data, .. } => server.endpoint_mut().recycle(data),
                _ => {}
            }
        }
        for (c, _) in &mut clients {
            while let Some(event) = c.endpoint_mut().poll_event() {
                if let Event::State { data, .. } | Event::Unguaranteed { data, .. } = event {
                    c.endpoint_mut().recycle(data);
                }
            }
        }
        // Simulated time: jump to the next thing that needs doing.
        let wake = clients
            .iter()
            .filter_map(|(c, _)| c.next_wakeup())
            .chain(server.next_wakeup())
            .chain([next_tick])
            .min()
            .unwrap_or(next_tick);
        now = wake.max(now + Duration::from_micros(100));
    }
    for id in server.endpoint().connections() {
        let m = server.endpoint().connection(id).expect("live").metrics();
        println!(
            "{id:?}: {} datagrams out, {} bytes out, largest {} B, states delivered {} / dropped {}, rtt {:?}",
            m.datagrams_sent, m.bytes_sent, m.largest_datagram_sent, m.states_delivered, m.states_dropped, m.rtt
        );
    }
    Ok(())
}
