//! The recording: a short match records the spectator view, and the demo
//! crate plays it back through a schema-driven snapshot client with every
//! sync checksum verified, and seeks in it.

use arena::config::MatchConfig;
use arena::transport::TransportKind;
use demo::{DemoReader, Player};

#[test]
fn the_spectator_demo_plays_back_verified_and_seeks() {
    // A directory of its own: the recording must be the only file left in
    // it (written under a temporary name, renamed when the match ended).
    let dir = std::env::temp_dir().join(format!("arena-test-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("match.demo");
    let mut config = MatchConfig::short(TransportKind::Local, 3.0, 5);
    config.record = Some(path.clone());
    config.keyframe_ms = 1000;
    let summary = arena::play(config).expect("match runs");
    assert!(summary.ok(), "{}", summary.table());
    let data = std::fs::read(&path).expect("demo written");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("match.demo")]);
    let _ = std::fs::remove_dir_all(&dir);

    let reader = DemoReader::new(&data).expect("valid header");
    assert_eq!(
        reader.header().metadata.get("map").map(String::as_str),
        Some("q3dm_rust")
    );
    assert!(
        reader.keyframes().expect("index").len() >= 3,
        "a keyframe a second"
    );
    let mut player = Player::new(reader.clone()).expect("player");
    player.set_verify(true);
    let mut snapshots = 0u64;
    while let Some(played) = player.next_record() {
        let played = played.expect("every record plays and verifies");
        snapshots += matches!(played.received, snapshot::Received::Snapshot(_)) as u64;
    }
    assert!(player.reached_end());
    assert_eq!(snapshots, summary.server.recorded_snapshots);
    assert!(player.checksums_verified() > 0);
    // The spectator sees every player that was in the game at the end.
    let newest = player.client().newest().expect("snapshots");
    assert!(newest.len() >= 2, "players and items are in view");

    let mut seeking = Player::new(reader).expect("player");
    seeking.seek(1500).expect("seek");
    let at = seeking
        .client()
        .newest()
        .expect("a snapshot at 1.5 s")
        .server_time();
    assert!((1000..=1500).contains(&at), "{at}");
}
