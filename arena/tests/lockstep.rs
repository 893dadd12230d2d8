//! `--model lockstep`: short matches on simulated time over both
//! transports through the conditioner, the schedule's silent and leaving
//! bots dropped, identical final states, an injected desync detected within
//! one sync interval, and the recording replayed turn for turn.

use std::path::PathBuf;

use arena::config::{MatchConfig, ModelKind};
use arena::lockstep::run::{desync_victim, SYNC_INTERVAL};
use arena::lockstep::{play_lockstep, ArenaSim, LockstepSummary};
use arena::transport::TransportKind;
use demo::lockstep::{replay, LockstepReader};

fn config(transport: TransportKind, seconds: f64, seed: u64) -> MatchConfig {
    let mut config = MatchConfig::short(transport, seconds, seed);
    config.model = ModelKind::Lockstep;
    config
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("arena-lockstep-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn assert_healthy(summary: &LockstepSummary) {
    let table = summary.table();
    println!("{table}");
    assert!(summary.ok(), "{table}");
    assert!(summary.desync.is_none(), "{table}");
    assert_eq!(summary.clients.len(), 4);
    // The schedule of 4 bots: bot 1 goes silent, bot 3 leaves; both dropped.
    assert!(
        summary.clients[1].silent && summary.clients[3].left,
        "{table}"
    );
    assert_eq!(summary.drops.len(), 2, "{table}");
    let stayed: Vec<_> = summary.stayed().collect();
    assert_eq!(stayed.len(), 2);
    assert!(stayed[0].turns >= 8, "{table}");
    assert_eq!(
        stayed[0].final_checksum, stayed[1].final_checksum,
        "{table}"
    );
    assert_eq!(stayed[0].final_turn, stayed[1].final_turn, "{table}");
    for c in &summary.clients {
        assert_eq!(c.desyncs, 0);
        // A turn is at least 50 ms; a command waits one to two turns.
        assert!(c.turn_ms >= 50.0, "{table}");
        assert!(c.input_latency_ms >= c.turn_ms * 0.9, "{table}");
        assert!(c.commands > 0 && c.kbps_up > 0.0, "{table}");
    }
    let json: serde_json::Value = serde_json::from_str(&summary.to_json()).unwrap();
    assert_eq!(json["model"], "lockstep");
    for field in [
        "turns",
        "turn_ms",
        "input_latency_ms",
        "desyncs",
        "final_checksum",
    ] {
        assert!(!json["clients"][0][field].is_null(), "{field}");
    }
}

#[test]
fn a_local_lockstep_match_with_loss_stays_in_sync_and_replays() {
    let mut config = config(TransportKind::Local, 5.0, 3);
    let dir = scratch("local");
    let record = dir.join("match.demo");
    config.record = Some(record.clone());
    let summary = play_lockstep(&config, &dir).unwrap();
    assert_healthy(&summary);

    // The recording (bot 0's view) replays to bot 0's final state,
    // reproducing every sync checksum on the way.
    let bytes = std::fs::read(&record).unwrap();
    let reader = LockstepReader::new(&bytes).unwrap();
    let (report, _) = replay::<ArenaSim>(&reader, None).unwrap();
    let bot0 = &summary.clients[0];
    assert_eq!(report.turns, bot0.turns);
    assert_eq!(Some(report.final_checksum), bot0.final_checksum);
    assert_eq!(report.checksums_verified, bot0.turns / SYNC_INTERVAL);
    // Seeking to a keyframe and playing on reaches the same end.
    let keyframes = reader.keyframes().unwrap();
    if let Some(keyframe) = keyframes.last() {
        let (rest, _) = replay::<ArenaSim>(&reader, Some(keyframe)).unwrap();
        assert_eq!(rest.final_checksum, report.final_checksum);
        assert_eq!(rest.first_turn, Some(keyframe.turn + 1));
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_udp_lockstep_match_stays_in_sync() {
    let config = config(TransportKind::Udp, 4.0, 5);
    let dir = scratch("udp");
    let summary = play_lockstep(&config, &dir).unwrap();
    assert_healthy(&summary);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_injected_desync_is_detected_within_one_sync_interval() {
    let mut config = config(TransportKind::Local, 5.0, 9);
    config.inject_desync = Some(6);
    let dir = scratch("desync");
    let summary = play_lockstep(&config, &dir).unwrap();
    let table = summary.table();
    assert!(!summary.ok(), "{table}");
    let desync = summary.desync.as_ref().expect("detected");
    // Sync turns are 3, 7, 11, …: the first after turn 6 is 7.
    assert_eq!(desync.turn, 7, "{table}");
    assert_eq!(desync.participants.len(), 1, "{table}");
    let victim = desync_victim(&config) as usize;
    assert_eq!(
        desync.participants[0], summary.clients[victim].id,
        "{table}"
    );
    assert_eq!(desync.last_agreed, Some(3));
    let failure = summary.failures().join("\n");
    assert!(failure.contains("out of sync at turn 7"), "{failure}");
    // The dump holds every stayed participant's state at turn 7; the
    // victim's world clock is a millisecond ahead of the others'.
    let dump = std::fs::read_to_string(desync.dump.as_ref().unwrap()).unwrap();
    assert!(dump.matches("== participant").count() == 4, "{dump}");
    assert!(dump.contains("arena: turn 7 time"), "{dump}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_desync_asked_for_after_the_last_turn_fails_the_run() {
    let mut config = config(TransportKind::Local, 2.0, 4);
    config.inject_desync = Some(100_000);
    let dir = scratch("late");
    let summary = play_lockstep(&config, &dir).unwrap();
    assert!(summary.desync.is_none());
    let failures = summary.failures().join("\n");
    assert!(
        failures.contains("--inject-desync 100000: no desync detected"),
        "{failures}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
