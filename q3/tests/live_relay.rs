//! `q3 relay` with real programs: fed live by `ioq3ded` (4 bots, pure) or
//! by a `.dm_68` that `q3 connect --record` made on oa_dm1, and watched by
//! our own clients and by the real OpenArena client (its legacy "71").
//!
//! The source server needs `NETQ3_REQUIRE_IOQ3`'s package, the real client
//! `NETQ3_REQUIRE_OPENARENA`'s (`.ci/openarena`); each part skips without
//! its program unless its variable is 1. Both relays and every client run
//! at once (the real clients 45 s, ten of ours 30 s, eight of them behind
//! 10% loss each way): the file takes about 55 seconds.

mod ioq3;
mod realclient;

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use netchan::{ConditionerConfig, LinkConditioner};

use ioq3::{paks, Server};
use netq3_q3::live::netchan::Framing;
use netq3_q3::live::oob::{info_value, parse_server_oob, ServerOob};
use netq3_q3::live::udp;
use netq3_q3::live::{
    LiveClient, LiveConfig, Movement, Protocol, Session, Stage, Summary, CS_SYSTEMINFO,
};
use netq3_q3::relay::udp::{self as relay_udp, RelayRun, Source};
use netq3_q3::relay::{RelayConfig, RelayEvent};
use netq3_q3::Snapshot;
use realclient::{check_demo, snapshots_by_time, DemoCheck, RealClient};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/oa_dm1-12s.dm_68"
);

/// A relay running in a thread, its events collected.
struct RunningRelay {
    address: SocketAddr,
    events: Arc<Mutex<Vec<RelayEvent>>>,
    thread: std::thread::JoinHandle<RelayRun>,
}

fn start_relay(source: Source, seconds: u64) -> RunningRelay {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let address = socket.local_addr().unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let thread = std::thread::spawn(move || {
        relay_udp::run(
            socket,
            RelayConfig::default(),
            source,
            Some(Duration::from_secs(seconds)),
            false,
            &mut |_, event| sink.lock().unwrap().push(event.clone()),
        )
        .expect("the relay runs")
    });
    // Ready once it has the source's gamestate (its map in getinfo). Asked
    // from an address of its own: the relay limits requests per address,
    // as ioquake3 does, and the clients come from 127.0.0.1.
    let asker = UdpSocket::bind("127.0.0.200:0").unwrap();
    asker
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut buf = [0u8; 2048];
    loop {
        asker
            .send_to(&netq3_q3::live::oob::text_packet("getinfo ready"), address)
            .unwrap();
        if let Ok((n, _)) = asker.recv_from(&mut buf) {
            if let Some(ServerOob::InfoResponse(info)) = parse_server_oob(&buf[..n]) {
                if info_value(&info, "mapname") == "oa_dm1" {
                    break;
                }
            }
        }
        assert!(Instant::now() < deadline, "the relay never had a game");
        std::thread::sleep(Duration::from_millis(300));
    }
    RunningRelay {
        address,
        events,
        thread,
    }
}

fn live_source(server: &Server, record: &Path) -> Source {
    Source::Server {
        record: Some(record.to_owned()),
        address: server.address,
        config: LiveConfig {
            name: "netq3-relay".into(),
            qport: 3131,
            client_challenge: 0x0303_0303,
            movement: Movement::Idle,
            commands_on_enter: vec!["team spectator".into(), "follownext".into()],
            paks: Some(paks()),
            ..LiveConfig::default()
        },
    }
}

/// A UDP proxy in front of the relay that loses `loss` of the datagrams
/// each way (netchan's seeded link conditioner): "loss on the client's
/// socket" without touching the client.
struct LossyProxy {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<(u64, u64)>,
}

/// `host` is the proxy's own loopback address towards the relay: each
/// proxied client comes from an address of its own, as real spectators do
/// (the relay limits connectionless requests per address).
fn lossy_proxy(
    target: SocketAddr,
    host: [u8; 4],
    loss: f64,
    seed: u64,
    limit: Duration,
) -> LossyProxy {
    let front = UdpSocket::bind("127.0.0.1:0").unwrap();
    let back = UdpSocket::bind(SocketAddr::from((host, 0))).unwrap();
    back.connect(target).unwrap();
    front
        .set_read_timeout(Some(Duration::from_millis(1)))
        .unwrap();
    back.set_read_timeout(Some(Duration::from_millis(1)))
        .unwrap();
    let address = front.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let thread = std::thread::spawn(move || {
        let config = ConditionerConfig {
            loss,
            ..ConditionerConfig::perfect()
        };
        let mut up = LinkConditioner::new(config.clone(), seed);
        let mut down = LinkConditioner::new(config, seed ^ 0x5555);
        let mut client: Option<SocketAddr> = None;
        let mut buf = vec![0u8; 65_536];
        let deadline = Instant::now() + limit;
        while !stopped.load(Ordering::Relaxed) && Instant::now() < deadline {
            let now = Instant::now();
            if let Ok((n, from)) = front.recv_from(&mut buf) {
                client = Some(from);
                up.push(now, from, target, &buf[..n]);
            }
            if let (Ok(n), Some(to)) = (back.recv(&mut buf), client) {
                down.push(now, target, to, &buf[..n]);
            }
            while let Some(datagram) = up.pop_due(now) {
                let _ = back.send(&datagram.bytes);
            }
            while let Some(datagram) = down.pop_due(now) {
                let _ = front.send_to(&datagram.bytes, datagram.to);
            }
        }
        (up.stats().lost, down.stats().lost)
    });
    LossyProxy {
        address,
        stop,
        thread,
    }
}

/// One of our clients on the relay for `seconds`, with its session's
/// summary (decode errors, deltas).
fn our_client(
    relay: SocketAddr,
    protocol: Protocol,
    name: &str,
    seconds: u64,
) -> (LiveClient, Summary) {
    let config = LiveConfig {
        protocol,
        name: name.into(),
        qport: 2000 + protocol.number() as u16,
        client_challenge: 0x0505_0505 + protocol.number() as i32,
        ..LiveConfig::default()
    };
    let mut session = Session::new(relay.to_string(), protocol.number());
    let client = udp::run(
        relay,
        config,
        Duration::from_secs(seconds),
        None,
        &mut |client, event, now| session.observe(client, event, now),
    )
    .expect("the session runs");
    let summary = session.summary(&client);
    (client, summary)
}

/// The figures every one of our spectators must show: it entered, read
/// every message, got `gamestates` gamestates, and nine snapshots in ten
/// were deltas.
fn check_ours(
    name: &str,
    client: &LiveClient,
    summary: &Summary,
    gamestates: &RangeInclusive<u64>,
) {
    eprintln!(
        "{name}: {summary:?} {:?} {:?} {:?}",
        client.stats(),
        client.netchan_stats(),
        client.end()
    );
    assert!(
        matches!(client.end(), Some(netq3_q3::live::End::Quit)),
        "{name}: {:?}",
        client.end()
    );
    assert_eq!(summary.decode_errors, 0, "{name}");
    assert!(
        gamestates.contains(&client.stats().gamestates),
        "{name}: {} gamestates, not {gamestates:?}",
        client.stats().gamestates
    );
    assert_eq!(client.stats().server_command_gaps, 0, "{name}");
    // 20 a second asked for, 30 s, less a handshake retry or two.
    assert!(summary.snapshots >= 300, "{name}: {summary:?}");
    assert!(
        summary.delta_snapshots * 10 >= summary.snapshots * 9,
        "{name}: delta share {summary:?}"
    );
}

/// What the relay saw of the real client, what its console said, and what
/// its recordings hold against the source's stream.
fn check_real_client(
    name: &str,
    client: &mut RealClient,
    events: &[RelayEvent],
    source: &BTreeMap<i32, Arc<Snapshot>>,
) -> DemoCheck {
    let console = client.console();
    assert!(client.errors().is_empty(), "{name}: {:?}", client.errors());
    assert!(
        console.contains(realclient::ACTIVE_MARK),
        "{name}: the client never went active: {console}"
    );
    let slot = events
        .iter()
        .find_map(|e| match e {
            RelayEvent::Connected { slot, name, .. }
                if !name.starts_with("netq3_") && !name.starts_with("lossy") =>
            {
                Some(*slot)
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("{name}: the real client never connected: {events:?}"));
    assert!(
        events.iter().any(|e| matches!(e, RelayEvent::Command { slot: s, text } if *s == slot && text.starts_with("cp "))),
        "{name}: its pure answer came through"
    );
    client.stop();
    let demos = client.demos();
    assert!(!demos.is_empty(), "{name}: it recorded no demo");
    let mut check = DemoCheck::default();
    for demo in &demos {
        let bytes = std::fs::read(demo).unwrap();
        let one = check_demo(&bytes, source)
            .unwrap_or_else(|e| panic!("{name}: {} does not decode: {e}", demo.display()));
        eprintln!("{name}: {}: {one:?}", demo.display());
        check = check.add(one);
    }
    eprintln!("{name}: the real client's recordings: {check:?}");
    // It holds at least 80% of the snapshots of its span, and each is the
    // source's own at that server time.
    assert!(
        check.snapshots * 10 >= check.expected * 8,
        "{name}: {check:?}"
    );
    assert!(check.snapshots >= 400, "{name}: {check:?}");
    assert_eq!(check.compared, check.snapshots, "{name}: {check:?}");
    assert_eq!(check.matched, check.compared, "{name}: {check:?}");
    check
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("netq3-live-relay-{}-{name}", std::process::id()))
}

#[test]
fn real_and_our_clients_on_the_relay() {
    let with_server = ioq3::server_available("real_and_our_clients_on_the_relay");
    let with_client = realclient::available("real_and_our_clients_on_the_relay");
    let server = with_server.then(|| Server::start("relay-source"));
    let source_record = temp_path("source.dm_68");
    let _ = std::fs::remove_file(&source_record);
    let live = server
        .as_ref()
        .map(|s| start_relay(live_source(s, &source_record), 58));
    let bytes = Arc::new(std::fs::read(FIXTURE).expect("the fixture"));
    let file = start_relay(
        Source::File {
            bytes: bytes.clone(),
            looping: true,
        },
        58,
    );

    let mut real_live = (with_client && live.is_some())
        .then(|| RealClient::connect(live.as_ref().unwrap().address, "live"));
    let mut real_file = with_client.then(|| RealClient::connect(file.address, "file"));
    // Our clients, both protocols, on the live relay (or the file's).
    let target = live.as_ref().map_or(file.address, |r| r.address);
    // One gamestate from the live relay; the file's relay loops its 12 s
    // recording, a new gamestate each pass: two or three more in the 24
    // to 30 s a client stays.
    let gamestates = if live.is_some() { 1..=1 } else { 3..=4 };
    // And eight more behind 10% loss each way.
    let proxies: Vec<LossyProxy> = (0..8)
        .map(|i| {
            let host = [127, 0, 0, 10 + i as u8];
            lossy_proxy(target, host, 0.10, 31 + i, Duration::from_secs(40))
        })
        .collect();
    let (ours_71, ours_68, lossy) = std::thread::scope(|scope| {
        let a = scope.spawn(|| our_client(target, Protocol::V71, "netq3_71", 30));
        let b = scope.spawn(|| our_client(target, Protocol::V68, "netq3_68", 30));
        let lossy: Vec<_> = proxies
            .iter()
            .enumerate()
            .map(|(i, proxy)| {
                let protocol = if i % 2 == 0 {
                    Protocol::V71
                } else {
                    Protocol::V68
                };
                let address = proxy.address;
                scope.spawn(move || our_client(address, protocol, &format!("lossy{i}"), 30))
            })
            .collect();
        (
            a.join().unwrap(),
            b.join().unwrap(),
            lossy
                .into_iter()
                .map(|t| t.join().unwrap())
                .collect::<Vec<_>>(),
        )
    });
    let mut dropped = (0, 0);
    for proxy in proxies {
        proxy.stop.store(true, Ordering::Relaxed);
        let (up, down) = proxy.thread.join().unwrap();
        dropped = (dropped.0 + up, dropped.1 + down);
    }
    // Despite the loss every one got the gamestate (resent when lost),
    // entered, read every message, mostly deltas, and left cleanly.
    for (i, (client, summary)) in lossy.iter().enumerate() {
        let name = format!("lossy{i}");
        check_ours(&name, client, summary, &gamestates);
        assert!(client.netchan_stats().lost > 0, "{name}: the loss was real");
    }
    eprintln!("lossy proxies dropped {} up, {} down", dropped.0, dropped.1);
    assert!(dropped.0 > 100 && dropped.1 > 100, "{dropped:?}");
    for ((client, summary), framing) in [(&ours_71, Framing::Ioq3), (&ours_68, Framing::Legacy)] {
        check_ours("ours", client, summary, &gamestates);
        assert_eq!(client.framing(), Some(framing));
        assert_eq!(client.netchan_stats().bad_challenge_word, 0);
        assert!(matches!(client.stage(), Stage::Ended));
        let parser = client.parser();
        assert_eq!(info_value(parser.configstring(0), "mapname"), "oa_dm1");
        assert_eq!(
            info_value(parser.configstring(CS_SYSTEMINFO), "sv_pure"),
            "0"
        );
    }
    // The real clients stay 45 s, then quit (ending their demos).
    for client in real_live.iter_mut().chain(real_file.iter_mut()) {
        let left = Duration::from_secs(45).saturating_sub(client.age());
        std::thread::sleep(left);
        client.stop();
    }
    let file_events = file.events.lock().unwrap().clone();
    if let Some(client) = real_file.as_mut() {
        let source = snapshots_by_time(&bytes).unwrap();
        check_real_client("file", client, &file_events, &source);
    }
    drop(real_file);
    let file_run = file.thread.join().unwrap();
    eprintln!("file relay: {file_run:?}");
    assert_eq!(file_run.stats.unreadable, 0);
    assert_eq!(file_run.stats.stream_errors, 0);
    assert!(file_run.source_snapshots >= 1000);
    if let Some(live) = live {
        let live_events = live.events.lock().unwrap().clone();
        // The source's record ends when the relay does.
        let run = live.thread.join().unwrap();
        eprintln!("live relay: {run:?}");
        assert_eq!(run.source_end, None);
        assert_eq!(run.stats.unreadable, 0);
        assert_eq!(run.stats.stream_errors, 0);
        assert!(run.source_snapshots >= 800, "{run:?}");
        assert!(run.stats.connections >= 10);
        let recorded = std::fs::read(&source_record).expect("the relay recorded its source");
        let _ = std::fs::remove_file(&source_record);
        let source = snapshots_by_time(&recorded).unwrap();
        assert!(source.len() >= 800, "{}", source.len());
        if let Some(client) = real_live.as_mut() {
            check_real_client("live", client, &live_events, &source);
        }
    }
    drop(server);
}
