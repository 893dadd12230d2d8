//! A real UDP round trip over 127.0.0.1 through the mio driver. The loop is
//! bounded in iterations and wall time, but nothing asserts on timing.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netq3_netchan::conditioner::ConditionerConfig;
use netq3_netchan::{ConnectOptions, Endpoint, EndpointConfig, Event, UdpDriver};

fn pump_until(
    drivers: &mut [&mut UdpDriver],
    mut done: impl FnMut(&mut [&mut UdpDriver], &Event, usize) -> bool,
) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    for _ in 0..100_000 {
        if Instant::now() > deadline {
            return false;
        }
        let now = Instant::now();
        for d in drivers.iter_mut() {
            d.pump(now);
        }
        for i in 0..drivers.len() {
            while let Some(e) = drivers[i].endpoint_mut().poll_event() {
                if done(drivers, &e, i) {
                    return true;
                }
            }
        }
        // Short sleeps on the sockets: woken early by traffic or deadlines.
        let now = Instant::now();
        for d in drivers.iter_mut() {
            d.wait(now, Duration::from_millis(2)).unwrap();
        }
    }
    false
}

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

fn round_trip(conditioner: ConditionerConfig, messages: u32) {
    let now = Instant::now();
    let mut server =
        UdpDriver::bind_udp(loopback(), Endpoint::new(EndpointConfig::server(), now)).unwrap();
    let mut client =
        UdpDriver::bind_udp(loopback(), Endpoint::new(EndpointConfig::client(), now)).unwrap();
    server.set_conditioner(conditioner.clone(), 1);
    client.set_conditioner(conditioner, 2);
    let server_addr = server.local_addr();
    let cid = client
        .endpoint_mut()
        .connect(
            now,
            server_addr,
            ConnectOptions {
                client_id: 0xC0FFEE,
                encrypt: false,
                compress: true,
            },
        )
        .unwrap();
    for i in 0..messages {
        client
            .endpoint_mut()
            .connection_mut(cid)
            .unwrap()
            .send_ordered(format!("ping {i}").as_bytes())
            .unwrap();
    }
    let mut pings = 0;
    let mut pongs = 0;
    let ok = pump_until(&mut [&mut server, &mut client], |drivers, event, who| {
        match (who, event) {
            (0, Event::Message { conn, data }) => {
                assert_eq!(data, format!("ping {pings}").as_bytes());
                pings += 1;
                let reply = format!("pong {}", pings - 1);
                drivers[0]
                    .endpoint_mut()
                    .connection_mut(*conn)
                    .unwrap()
                    .send_ordered(reply.as_bytes())
                    .unwrap();
            }
            (1, Event::Message { data, .. }) => {
                assert_eq!(data, format!("pong {pongs}").as_bytes());
                pongs += 1;
            }
            (_, Event::Disconnected { reason, .. }) => panic!("disconnected: {reason:?}"),
            _ => {}
        }
        pongs == messages
    });
    assert!(ok, "round trip incomplete: {pings} pings, {pongs} pongs");
    let m = client.endpoint().connection(cid).unwrap().metrics();
    assert!(m.datagrams_sent > 0 && m.datagrams_received > 0);
    assert!(m.largest_datagram_sent <= netq3_netchan::MAX_DATAGRAM);
    assert!(server.stats().received > 0 && client.stats().received > 0);
}

#[test]
fn udp_round_trip_over_loopback() {
    round_trip(ConditionerConfig::default(), 50);
}

#[test]
fn udp_round_trip_through_the_conditioner() {
    round_trip(
        ConditionerConfig {
            loss: 0.2,
            latency: Duration::from_millis(5),
            jitter: Duration::from_millis(3),
            duplicate: 0.05,
            ..ConditionerConfig::default()
        },
        30,
    );
}

#[test]
fn many_endpoints_on_one_thread_share_one_poll() {
    use mio::{Events, Poll, Token};
    use netq3_netchan::udp::UdpTransport;
    use netq3_netchan::Driver;

    let mut poll = Poll::new().unwrap();
    let mut events = Events::with_capacity(64);
    let now = Instant::now();
    let bind = |i: usize, config: EndpointConfig| {
        let t = UdpTransport::bind_registered(loopback(), poll.registry(), Token(i)).unwrap();
        Driver::new(Endpoint::new(config, now), t)
    };
    let mut server = bind(0, EndpointConfig::server());
    let server_addr = server.local_addr();
    let mut bots: Vec<UdpDriver> = (1..=4).map(|i| bind(i, EndpointConfig::client())).collect();
    for (i, bot) in bots.iter_mut().enumerate() {
        let options = ConnectOptions {
            client_id: i as u32,
            encrypt: false,
            compress: false,
        };
        bot.endpoint_mut()
            .connect(now, server_addr, options)
            .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut connected = 0;
    while connected < 4 && Instant::now() < deadline {
        let now = Instant::now();
        server.pump(now);
        for bot in &mut bots {
            bot.pump(now);
        }
        while let Some(e) = server.endpoint_mut().poll_event() {
            if matches!(e, Event::Connected { .. }) {
                connected += 1;
            }
        }
        // One sleep for all sockets: until any is readable or the earliest deadline.
        let wake = bots
            .iter()
            .filter_map(|b| b.next_wakeup())
            .chain(server.next_wakeup())
            .min();
        let timeout = wake.map_or(Duration::from_millis(10), |t| {
            t.saturating_duration_since(Instant::now())
                .min(Duration::from_millis(10))
        });
        poll.poll(&mut events, Some(timeout)).unwrap();
    }
    assert_eq!(connected, 4);
}
