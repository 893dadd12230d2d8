//! Lockstep across processes over real UDP on 127.0.0.1: one `arena serve
//! --model lockstep` (the relay host, with its own replica and the
//! recording) and two `arena bots --model lockstep` processes of two
//! participants each, with loss on the bots' sockets. SIGTERM to the host
//! ends the session at an agreed turn: every participant stops there with
//! the host's state, every process exits 0, and the recording replays with
//! every checksum verified. A few seconds of wall time; every wait is
//! bounded.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use arena::lockstep::ArenaSim;
use demo::lockstep::{replay, LockstepReader};

mod common;

use common::{json, wait, ARENA};

fn tmp(name: &str) -> PathBuf {
    common::tmp("arena-lsp", name)
}

#[test]
fn a_lockstep_host_and_two_bot_processes_end_at_an_agreed_turn_on_sigterm() {
    let record = tmp("host.demo");
    let host_json = tmp("host.json");
    let mut host = Command::new(ARENA)
        .args(["serve", "--model", "lockstep", "--participants", "4"])
        .args(["--bind", "127.0.0.1:0", "--seconds", "60"])
        .arg("--record")
        .arg(&record)
        .arg("--summary-json")
        .arg(&host_json)
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("arena serve starts");
    let stdout = host.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let addr: SocketAddr = loop {
        let line = lines.next().expect("the host names its address").unwrap();
        if let Some(addr) = line.strip_prefix("arena serve: listening on ") {
            break addr.parse().unwrap();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    // The host logs when the session starts.
    let (started_tx, started) = mpsc::channel();
    let stderr = host.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("session started with 4 participants") {
                let _ = started_tx.send(());
            }
        }
    });

    let bots: Vec<(Child, PathBuf)> = (1..=2)
        .map(|seed| {
            let path = tmp(&format!("bots{seed}.json"));
            let child = Command::new(ARENA)
                .args([
                    "bots",
                    "--model",
                    "lockstep",
                    "--connect",
                    &addr.to_string(),
                ])
                .args(["--count", "2", "--loss", "0.1", "--latency-ms", "20"])
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

    started
        .recv_timeout(Duration::from_secs(20))
        .expect("the session started with all four participants");
    // Play a while, then end it.
    std::thread::sleep(Duration::from_secs(3));
    let kill = Command::new("kill")
        .args(["-TERM", &host.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = wait(&mut host, Duration::from_secs(20));
    assert!(status.success(), "arena serve after SIGTERM: {status}");
    let summary = json(&host_json);
    let _ = std::fs::remove_file(&host_json);
    assert_eq!(summary["stopped_by"], "SIGTERM", "{summary}");
    assert_eq!(summary["participants"], 4, "{summary}");
    assert_eq!(summary["all_delivered"], true, "{summary}");
    assert_eq!(summary["ok"], true, "{summary}");
    let last = summary["last_turn"].as_u64().expect("an agreed last turn");
    assert!(last >= 20, "{summary}");
    assert_eq!(
        summary["replica_turns"].as_u64(),
        Some(last + 1),
        "{summary}"
    );
    assert!(summary["sync_verified"].as_u64().unwrap() >= last / 4 - 1);
    let checksum = summary["final_checksum"].as_str().unwrap().to_owned();

    // Every participant stopped at the agreed turn, in the host's state.
    for (mut child, path) in bots {
        let status = wait(&mut child, Duration::from_secs(20));
        let bots = json(&path);
        let _ = std::fs::remove_file(&path);
        assert!(status.success(), "arena bots: {status}: {bots}");
        assert_eq!(bots["ended_by"], "session", "{bots}");
        assert_eq!(bots["model"], "lockstep", "{bots}");
        let clients = bots["clients"].as_array().unwrap();
        assert_eq!(clients.len(), 2);
        for c in clients {
            assert_eq!(c["final_turn"].as_u64(), Some(last), "{c}");
            assert_eq!(c["final_checksum"], checksum.as_str(), "{c}");
            assert_eq!(c["desyncs"], 0, "{c}");
            assert!(c["commands"].as_u64().unwrap() > 0, "{c}");
            assert!(c["input_latency_ms"].as_f64().unwrap() > 0.0, "{c}");
        }
    }

    // The host's recording was finalized and replays to the same state,
    // reproducing every sync checksum.
    let bytes = std::fs::read(&record).expect("recording written");
    let _ = std::fs::remove_file(&record);
    let reader = LockstepReader::new(&bytes).unwrap();
    let (report, _) = replay::<ArenaSim>(&reader, None).unwrap();
    assert_eq!(report.turns as u64, last + 1);
    assert_eq!(format!("{:016x}", report.final_checksum), checksum);
    assert_eq!(report.checksums_verified as u64, (last + 1) / 4);
    assert!(!reader.keyframes().unwrap().is_empty());
}
