//! Offline regression from real traffic: sessions captured against a real
//! ioquake3 server (OpenArena, 4 bots; `q3 connect --capture`) are replayed
//! through a fresh client at the captured times. The client must decode the
//! same snapshots the live session did, and (its inputs being the same)
//! send byte for byte the datagrams the live client sent.

use std::time::{Duration, Instant};

use netq3_q3::live::harness::{feed_server_datagrams, harness_input};
use netq3_q3::live::udp::Capture;
use netq3_q3::live::{Event, LiveClient, LiveConfig, Protocol, Session, Stage};
use netq3_q3::Dm68Decoder;

fn load(name: &str) -> Capture {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    postcard::from_bytes(&bytes).expect("a capture")
}

struct Replayed {
    session: Session,
    client: LiveClient,
    mismatched_datagrams: usize,
    client_datagrams: usize,
    recording: Vec<u8>,
}

fn replay(capture: &Capture) -> Replayed {
    let protocol = Protocol::from_number(capture.protocol).expect("68 or 71");
    let config = LiveConfig {
        protocol,
        // The captures were made by a client that assumed ioquake3's
        // framing for 71 (before it told OpenArena's apart, which defers the
        // first packet): replay with that framing, so its datagrams match.
        framing: Some(protocol.default_framing()),
        qport: capture.qport,
        client_challenge: capture.client_challenge,
        ..LiveConfig::default()
    };
    let start = Instant::now();
    let mut client = LiveClient::new(config, start);
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!(
        "netq3-replay-{}-{}-{run}.dm_68",
        capture.protocol,
        std::process::id()
    ));
    let file = std::fs::File::create(&path).unwrap();
    let mut session = Session::new("replay", capture.protocol).record_to(Box::new(file));
    let (mut mismatched, mut sent) = (0, 0);
    for datagram in &capture.datagrams {
        let now = start + Duration::from_micros(datagram.micros);
        if datagram.from_server {
            client.handle_datagram(now, &datagram.bytes);
        } else {
            let mut next = client.next_datagram();
            if next.is_none() {
                if capture
                    .stop_micros
                    .is_some_and(|stop| datagram.micros >= stop)
                {
                    // The live session's time was up: it left.
                    client.disconnect(now);
                } else {
                    client.poll(now);
                }
                next = client.next_datagram();
            }
            sent += 1;
            if next.as_deref() != Some(&datagram.bytes[..]) {
                eprintln!(
                    "client datagram {sent} differs: replayed {:?}, live {:?}",
                    next, datagram.bytes
                );
                mismatched += 1;
            }
        }
        while let Some(event) = client.next_event() {
            session.observe(&client, &event, now).unwrap();
            assert!(!matches!(event, Event::Ended) || client.stage() == Stage::Ended);
        }
    }
    session.finish_recording().unwrap();
    let recording = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    Replayed {
        session,
        client,
        mismatched_datagrams: mismatched,
        client_datagrams: sent,
        recording,
    }
}

fn check(name: &str, expected_fragments: u64) {
    let capture = load(name);
    let replayed = replay(&capture);
    let marks = replayed.session.marks();
    assert!(marks.len() >= 100, "{name}: {} snapshots", marks.len());
    assert_eq!(
        marks,
        &capture.snapshots[..],
        "{name}: the same snapshots come out"
    );
    let summary = replayed.session.summary(&replayed.client);
    assert_eq!(summary.decode_errors, 0);
    assert!(
        summary.delta_snapshots * 10 >= summary.snapshots * 9,
        "{summary:?}"
    );
    assert_eq!(
        replayed.client.netchan_stats().fragments,
        expected_fragments
    );
    assert_eq!(replayed.client.stats().gamestates, 1);
    assert_eq!(replayed.session.native_errors(), 0);
    assert!(summary.native_mean_snapshot_bytes > 0.0);
    assert!(summary.native_adapting_mean_snapshot_bytes > 0.0);
    // Same inputs, same outputs: every datagram the live client sent.
    assert_eq!(
        replayed.client_datagrams,
        capture.datagrams.iter().filter(|d| !d.from_server).count()
    );
    assert_eq!(
        replayed.mismatched_datagrams, 0,
        "{name}: client datagrams differ from the live session's"
    );
    // The recording decodes with the q3 reader, snapshot for snapshot.
    let mut snapshots = 0;
    for record in Dm68Decoder::new(&replayed.recording).unwrap() {
        let record = record.unwrap();
        for snap in record.message.snapshots() {
            let mark = marks[snapshots];
            assert_eq!(
                (snap.snapshot.message_num, snap.snapshot.server_time),
                (mark.message_num, mark.server_time)
            );
            snapshots += 1;
        }
    }
    assert_eq!(snapshots, marks.len());
}

#[test]
fn protocol_68_session_replays_to_the_same_snapshots() {
    check("live68.capture", 2);
}

#[test]
fn protocol_71_session_replays_to_the_same_snapshots() {
    check("live71.capture", 2);
}

#[test]
fn a_corrupted_message_is_a_decode_error_not_a_panic() {
    let capture = load("live68.capture");
    let challenge = capture
        .datagrams
        .iter()
        .filter(|d| d.from_server)
        .find_map(|d| match netq3_q3::live::oob::parse_server_oob(&d.bytes) {
            Some(netq3_q3::live::oob::ServerOob::ChallengeResponse { challenge, .. }) => {
                Some(challenge)
            }
            _ => None,
        })
        .unwrap();
    let server: Vec<&[u8]> = capture
        .datagrams
        .iter()
        .filter(|d| d.from_server)
        .map(|d| &d.bytes[..])
        .collect();
    let clean = feed_server_datagrams(&harness_input(
        Protocol::V68,
        challenge,
        server.iter().copied(),
    ));
    let replayed = replay(&capture);
    let expected = capture.snapshots.len() as u64 + replayed.session.snapshots_before_gamestate();
    assert_eq!(u64::from(clean.snapshots), expected);
    assert!(!clean.ended);
    // Flip bits in the middle of the snapshot messages: the parser must
    // stop the session with a decode error at some point, never panic.
    let mut broken: Vec<Vec<u8>> = server.iter().map(|d| d.to_vec()).collect();
    for datagram in broken.iter_mut().skip(10) {
        if datagram.len() > 12 {
            let mid = datagram.len() / 2;
            datagram[mid] ^= 0xa5;
        }
    }
    let outcome = feed_server_datagrams(&harness_input(
        Protocol::V68,
        challenge,
        broken.iter().map(|d| &d[..]),
    ));
    assert!(outcome.ended && outcome.decode_error, "{outcome:?}");
    assert!(outcome.snapshots < clean.snapshots);
}

/// The committed fuzz seeds replay through the fuzz target's function with
/// the outcomes they were made for.
#[test]
fn fuzz_seeds_replay() {
    let dir = format!("{}/fuzz/seeds/live_client", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    assert!(names.len() >= 3, "{names:?}");
    for path in names {
        let data = std::fs::read(&path).unwrap();
        let outcome = feed_server_datagrams(&data);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        match name.as_str() {
            "session68" => assert!(outcome.snapshots >= 100 && !outcome.ended, "{outcome:?}"),
            "session71" => assert!(outcome.snapshots >= 100 && !outcome.ended, "{outcome:?}"),
            "gamestate68" => assert_eq!(
                (outcome.gamestates, outcome.ended),
                (1, false),
                "{outcome:?}"
            ),
            "corrupt68" => assert!(outcome.decode_error, "{outcome:?}"),
            other => panic!("unexpected seed {other}"),
        }
    }
}

/// Regenerates the fuzz seeds from the fixtures:
/// `cargo test -p netq3-q3 --test live_replay -- --ignored write_fuzz_seeds`.
#[test]
#[ignore]
fn write_fuzz_seeds() {
    let dir = format!("{}/fuzz/seeds/live_client", env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, protocol) in [
        ("live68.capture", Protocol::V68),
        ("live71.capture", Protocol::V71),
    ] {
        let capture = load(name);
        let challenge = capture
            .datagrams
            .iter()
            .filter(|d| d.from_server)
            .find_map(|d| match netq3_q3::live::oob::parse_server_oob(&d.bytes) {
                Some(netq3_q3::live::oob::ServerOob::ChallengeResponse { challenge, .. }) => {
                    Some(challenge)
                }
                _ => None,
            })
            .unwrap();
        let server: Vec<&[u8]> = capture
            .datagrams
            .iter()
            .filter(|d| d.from_server)
            .map(|d| &d.bytes[..])
            .collect();
        let tag = capture.protocol;
        std::fs::write(
            format!("{dir}/session{tag}"),
            harness_input(protocol, challenge, server.iter().copied()),
        )
        .unwrap();
        if protocol == Protocol::V68 {
            // Up to the end of the gamestate: the answers to the handshake,
            // the snapshots sent before it, its fragments.
            let end = server
                .iter()
                .position(|d| d.len() > 1300)
                .map_or(0, |i| i + 2);
            let head: Vec<&[u8]> = server[..end].to_vec();
            std::fs::write(
                format!("{dir}/gamestate68"),
                harness_input(protocol, challenge, head.iter().copied()),
            )
            .unwrap();
            let mut broken: Vec<Vec<u8>> = server.iter().take(40).map(|d| d.to_vec()).collect();
            for datagram in broken.iter_mut().skip(8) {
                if datagram.len() > 12 {
                    let mid = datagram.len() / 2;
                    datagram[mid] ^= 0xa5;
                }
            }
            std::fs::write(
                format!("{dir}/corrupt68"),
                harness_input(protocol, challenge, broken.iter().map(|d| &d[..])),
            )
            .unwrap();
        }
    }
}
