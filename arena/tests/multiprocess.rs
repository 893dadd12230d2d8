//! The arena split across processes over real UDP on 127.0.0.1: one
//! `arena serve` and two `arena bots` processes with loss, the status query
//! and `/metrics` while they play, SIGTERM → a graceful exit 0, and the
//! server's demo plays back with every checksum verified. A few seconds of
//! wall time; every wait is bounded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use demo::{DemoReader, Player};
use serde_json::Value;

mod common;

use common::{json, wait, ARENA};

fn tmp(name: &str) -> PathBuf {
    common::tmp("arena-mp", name)
}

/// Reads the server's stdout until it names its game and metrics addresses.
fn addresses(child: &mut Child) -> (SocketAddr, SocketAddr) {
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut game = None;
    let mut metrics = None;
    while game.is_none() || metrics.is_none() {
        let line = lines.next().expect("server printed its addresses").unwrap();
        if let Some(addr) = line.strip_prefix("arena serve: listening on ") {
            game = Some(addr.parse().unwrap());
        }
        if let Some(rest) = line.strip_prefix("arena serve: metrics on http://") {
            metrics = Some(rest.trim_end_matches("/metrics").parse().unwrap());
        }
    }
    // Keep draining stdout so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    (game.unwrap(), metrics.unwrap())
}

fn scrape(addr: SocketAddr) -> prometheus_parse::Scrape {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).unwrap()
}

fn sample(scrape: &prometheus_parse::Scrape, name: &str) -> f64 {
    use prometheus_parse::Value as V;
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name)
        .map(|s| match s.value {
            V::Counter(v) | V::Gauge(v) | V::Untyped(v) => v,
            _ => 0.0,
        })
        .sum()
}

#[test]
fn serve_and_two_bot_processes_over_udp_with_loss() {
    let demo = tmp("serve.demo");
    let serve_json = tmp("serve.json");
    let mut server = Command::new(ARENA)
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--metrics-bind",
            "127.0.0.1:0",
        ])
        .args(["--max-clients", "8", "--seconds", "60"])
        .arg("--record")
        .arg(&demo)
        .arg("--summary-json")
        .arg(&serve_json)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .expect("arena serve starts");
    let (addr, metrics) = addresses(&mut server);

    // The status query before anyone joins.
    let out = Command::new(ARENA)
        .args(["status", &addr.to_string(), "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["clients"], 0);
    assert_eq!(status["max_clients"], 8);
    assert_eq!(status["tick_hz"], 20);

    let bots: Vec<(Child, PathBuf)> = (1..=2)
        .map(|seed| {
            let path = tmp(&format!("bots{seed}.json"));
            let child = Command::new(ARENA)
                .args(["bots", "--connect", &addr.to_string(), "--count", "2"])
                .args(["--seconds", "3", "--loss", "0.1", "--latency-ms", "20"])
                .args(["--jitter-ms", "5", "--seed", &seed.to_string()])
                .arg("--summary-json")
                .arg(&path)
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .spawn()
                .expect("arena bots starts");
            (child, path)
        })
        .collect();

    // While they play: four clients in the status and the metrics.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = 0;
    while Instant::now() < deadline {
        let out = Command::new(ARENA)
            .args(["status", &addr.to_string(), "--json"])
            .output()
            .unwrap();
        if out.status.success() {
            let status: Value = serde_json::from_slice(&out.stdout).unwrap();
            seen = status["clients"].as_u64().unwrap();
            if seen == 4 {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    assert_eq!(seen, 4, "all four bots connected");
    let during = scrape(metrics);
    assert_eq!(sample(&during, "arena_connected_clients"), 4.0);
    assert!(sample(&during, "arena_frames_total") > 0.0);

    for (mut child, path) in bots {
        let status = wait(&mut child, Duration::from_secs(30));
        assert!(status.success(), "arena bots failed: {status}");
        let summary = json(&path);
        let _ = std::fs::remove_file(&path);
        assert_eq!(summary["server_addr"], addr.to_string());
        assert_eq!(
            summary["violations"].as_array().unwrap().len(),
            0,
            "{summary}"
        );
        let clients = summary["per_client"].as_array().unwrap();
        assert_eq!(clients.len(), 2);
        for c in clients {
            assert_eq!(c["status"], "left", "{c}");
            assert_eq!(c["checksum_mismatches"], 0, "{c}");
            assert_eq!(c["reliable_out_of_order"], 0, "{c}");
            assert!(c["checksums_matched"].as_u64().unwrap() > 0, "{c}");
            assert!(c["snapshots"].as_u64().unwrap() > 20, "{c}");
            assert!(
                c["delta_snapshots"].as_u64().unwrap() > c["full_snapshots"].as_u64().unwrap(),
                "{c}"
            );
            assert!(c["max_datagram_bytes"].as_u64().unwrap() <= 1400, "{c}");
        }
    }

    let after = scrape(metrics);
    assert!(sample(&after, "arena_snapshots_total") > 80.0);
    assert!(sample(&after, "arena_bytes_sent_total") > 0.0);

    // SIGTERM: a graceful shutdown, exit 0.
    let kill = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = wait(&mut server, Duration::from_secs(15));
    assert!(status.success(), "arena serve after SIGTERM: {status}");
    let summary = json(&serve_json);
    let _ = std::fs::remove_file(&serve_json);
    assert_eq!(summary["stopped_by"], "SIGTERM");
    let clients = summary["clients"].as_array().unwrap();
    assert_eq!(clients.len(), 4);
    for c in clients {
        assert_eq!(c["status"], "left", "{c}");
        assert_eq!(c["upstream_out_of_order"], 0, "{c}");
        assert!(c["commands"].as_u64().unwrap() > 50, "{c}");
    }

    // The demo was finalized and verifies.
    let data = std::fs::read(&demo).expect("demo written");
    let _ = std::fs::remove_file(&demo);
    let reader = DemoReader::new(&data).expect("valid header");
    assert!(!reader.keyframes().expect("index").is_empty());
    let mut player = Player::new(reader).expect("player");
    player.set_verify(true);
    let mut records = 0;
    while let Some(played) = player.next_record() {
        played.expect("every record plays and verifies");
        records += 1;
    }
    assert!(player.reached_end());
    assert!(player.checksums_verified() > 0);
    assert!(records as u64 >= summary["recorded_snapshots"].as_u64().unwrap());
}

#[test]
fn bots_exit_non_zero_with_the_reason_on_a_schema_mismatch() {
    let mut server = Command::new(ARENA)
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--metrics-bind",
            "127.0.0.1:0",
        ])
        .args(["--seconds", "20", "--codec", "q3"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .expect("arena serve starts");
    let (addr, _) = addresses(&mut server);
    let mut bots = Command::new(ARENA)
        .args(["bots", "--connect", &addr.to_string(), "--count", "1"])
        .args(["--seconds", "10", "--codec", "native"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait(&mut bots, Duration::from_secs(15));
    let mut stderr = String::new();
    bots.stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    let server_status = wait(&mut server, Duration::from_secs(15));
    assert!(!status.success());
    assert!(stderr.contains("SchemaMismatch"), "{stderr}");
    assert!(server_status.success());
}
