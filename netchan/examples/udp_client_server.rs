//! A server and a client over real UDP on 127.0.0.1, with the link
//! conditioner in front of both sockets.
//!
//! ```sh
//! cargo run -p netq3-netchan --example udp_client_server -- --loss 0.1 --latency-ms 40 --jitter-ms 10 --seconds 3
//! ```

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netq3_netchan::conditioner::ConditionerConfig;
use netq3_netchan::{ConnectOptions, Endpoint, EndpointConfig, Event, UdpDriver};

fn arg(args: &[String], name: &str) -> Option<f64> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1)?.parse().ok()
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let conditioner = ConditionerConfig {
        loss: arg(&args, "--loss").unwrap_or(0.0),
        latency: Duration::from_millis(arg(&args, "--latency-ms").unwrap_or(0.0) as u64),
        jitter: Duration::from_millis(arg(&args, "--jitter-ms").unwrap_or(0.0) as u64),
        duplicate: arg(&args, "--duplicate").unwrap_or(0.0),
        ..ConditionerConfig::default()
    };
    let seconds = arg(&args, "--seconds").unwrap_or(3.0);

    let start = Instant::now();
    let any = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut server = UdpDriver::bind_udp(any, Endpoint::new(EndpointConfig::server(), start))?;
    let mut client = UdpDriver::bind_udp(any, Endpoint::new(EndpointConfig::client(), start))?;
    server.set_conditioner(conditioner.clone(), 1);
    client.set_conditioner(conditioner, 2);
    println!(
        "server on {}, client on {}",
        server.local_addr(),
        client.local_addr()
    );

    let cid = client
        .endpoint_mut()
        .connect(
            start,
            server.local_addr(),
            ConnectOptions {
                client_id: 7,
                encrypt: false,
                compress: true,
            },
        )
        .expect("connect");
    let mut next_tick = start;
    let mut tick = 0u32;
    let mut chats = 0;
    while start.elapsed() < Duration::from_secs_f64(seconds) {
        let now = Instant::now();
        if now >= next_tick {
            next_tick += Duration::from_millis(50);
            tick += 1;
            if let Some(c) = client.endpoint_mut().connection_mut(cid) {
                if c.is_established() {
                    let _ = c.send_quickest(&tick.to_le_bytes());
                    if tick % 4 == 0 {
                        let _ = c.send_ordered(format!("say hello #{tick}").as_bytes());
                    }
                }
            }
        }
        server.pump(now);
        client.pump(now);
        while let Some(e) = server.endpoint_mut().poll_event() {
            match e {
                Event::Connected { addr, .. } => {
                    println!(
                        "server: client connected from {addr} after {:?}",
                        start.elapsed()
                    )
                }
                Event::Message { conn, data } => {
                    chats += 1;
                    if let Some(c) = server.endpoint_mut().connection_mut(conn) {
                        let _ = c.send_state(&data);
                    }
                    server.endpoint_mut().recycle(data);
                }
                _ => {}
            }
        }
        while let Some(e) = client.endpoint_mut().poll_event() {
            if let Event::Disconnected { reason, .. } = e {
                println!("client: disconnected: {reason:?}");
            }
        }
        let now = Instant::now();
        server.wait(now, Duration::from_millis(1))?;
        client.wait(
            now,
            next_tick
                .saturating_duration_since(now)
                .min(Duration::from_millis(5)),
        )?;
    }
    if let Some(c) = client.endpoint().connection(cid) {
        let m = c.metrics();
        let secs = start.elapsed().as_secs_f64();
        println!(
            "client: {:.1} kbps out, loss {:.1}%, rtt {:?}, largest datagram {} B, ordered queued {} / acked {}, server got {chats} chats",
            m.bytes_sent as f64 * 8.0 / 1000.0 / secs,
            m.loss * 100.0,
            m.rtt,
            m.largest_datagram_sent,
            m.ordered_queued,
            m.ordered_acked,
        );
    }
    Ok(())
}
