//! Lockstep recordings: a real session recorded by one participant,
//! replayed from the start and from keyframes, and damaged files.

use std::collections::BTreeMap;
use std::time::Duration;

use fields::fuzzing::{corpus_files, write_seeds};
use lockstep::session::{run, SessionConfig};
use lockstep::{HostConfig, Simulation, UnitOrder, Units, UnitsSetup};
use netchan::ConditionerConfig;
use netq3_demo::fuzzing::{lockstep_reader, LockstepSeen};
use netq3_demo::lockstep::{
    info, replay, LockstepHeader, LockstepReader, LockstepRecordKind, LockstepRecorder,
};
use netq3_demo::DemoError;
use proptest::prelude::*;

/// Plays a 4-participant session of 60 turns at 10% loss; participant 1
/// records it. Returns the file and every participant's final checksum.
fn recorded_game() -> (Vec<u8>, Vec<u64>) {
    let config = SessionConfig {
        participants: 4,
        turns: 60,
        host: HostConfig {
            setup: UnitsSetup {
                units: 200,
                ..UnitsSetup::default()
            }
            .to_bytes(),
            seed: 77,
            ..HostConfig::default()
        },
        link: ConditionerConfig {
            loss: 0.1,
            latency: Duration::from_millis(20),
            ..ConditionerConfig::default()
        },
        ..SessionConfig::default()
    };
    let mut recorder: Option<LockstepRecorder<Vec<u8>>> = None;
    let report = run::<Units>(
        &config,
        |p, peer| {
            let turn = peer.scheduled_turn() as i32;
            vec![UnitOrder {
                first: p as u32,
                count: 8,
                target: [turn * 11 - 300, 200 - turn * 5],
            }
            .encode()
            .to_vec()]
        },
        |p, peer, _| {
            if p != 1 {
                return;
            }
            let recorder = recorder.get_or_insert_with(|| {
                let (seed, setup) = peer.seed_and_setup();
                LockstepRecorder::create(
                    Vec::new(),
                    LockstepHeader {
                        simulation: Units::NAME.into(),
                        seed,
                        setup: setup.to_vec(),
                        participants: peer.participants().to_vec(),
                        settings: peer.settings().unwrap(),
                        keyframe_interval: 16,
                        metadata: BTreeMap::new(),
                    },
                )
                .unwrap()
            });
            recorder
                .record_turn(peer.last_turn().unwrap(), peer.sim().unwrap())
                .unwrap();
        },
    )
    .unwrap();
    assert_eq!(report.desyncs().len(), 0);
    let sums = report
        .participants
        .iter()
        .map(|p| p.final_checksum.unwrap())
        .collect();
    (recorder.unwrap().finish().unwrap(), sums)
}

#[test]
fn a_replay_reproduces_every_checksum_and_seeking_to_a_keyframe_reproduces_the_rest() {
    let (file, sums) = recorded_game();
    assert!(sums.iter().all(|s| *s == sums[0]));
    let reader = LockstepReader::new(&file).unwrap();
    let (report, _) = replay::<Units>(&reader, None).unwrap();
    assert_eq!(report.turns, 60);
    // Sync every 4 turns (3, 7, …, 59): 15 checksums; keyframes after 15, 31, 47.
    assert_eq!(report.checksums_verified, 15);
    assert_eq!(report.keyframes_verified, 3);
    assert_eq!(report.final_checksum, sums[0]);
    assert!(!report.truncated);

    let keyframes = reader.keyframes().unwrap();
    assert_eq!(
        keyframes.iter().map(|k| k.turn).collect::<Vec<_>>(),
        vec![15, 31, 47]
    );
    let (from_middle, _) = replay::<Units>(&reader, Some(&keyframes[1])).unwrap();
    assert_eq!(from_middle.first_turn, Some(32));
    assert_eq!(from_middle.turns, 28);
    // Checks of turns 35, 39, …, 59 and the keyframe after 47.
    assert_eq!(from_middle.checksums_verified, 7);
    assert_eq!(from_middle.keyframes_verified, 1);
    assert_eq!(from_middle.final_checksum, sums[0]);

    let facts = info(&reader, file.len()).unwrap();
    assert_eq!(facts.turns, 60);
    assert_eq!(facts.checksums, 15);
    assert_eq!(facts.keyframes, 3);
    // One order per participant from turn 2 (the first turn anyone could order for).
    assert_eq!(facts.commands, 58 * 4);
    assert_eq!(facts.participants, vec![0, 1, 2, 3]);
    assert!(facts.mean_turn_ms >= 50.0);
}

/// Rewrites record `index`'s payload with `edit` and recomputes its CRC:
/// a valid file whose content changed.
fn edit_record(file: &[u8], index: usize, edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let reader = LockstepReader::new(file).unwrap();
    let record = reader.records().nth(index).unwrap().unwrap();
    let mut payload = record.payload.to_vec();
    edit(&mut payload);
    assert_eq!(payload.len(), record.payload.len());
    let mut out = file.to_vec();
    let start = record.offset + netq3_demo::format::FRAME_LEN;
    out[start..start + payload.len()].copy_from_slice(&payload);
    let frame: [u8; netq3_demo::format::FRAME_LEN] = file
        [record.offset..record.offset + netq3_demo::format::FRAME_LEN]
        .try_into()
        .unwrap();
    let crc = netq3_demo::format::crc32_update(netq3_demo::format::crc32(&frame), &payload);
    out[start + payload.len()..start + payload.len() + 4].copy_from_slice(&crc.to_le_bytes());
    out
}

#[test]
fn a_changed_command_fails_the_next_checksum_naming_its_turn() {
    let (file, _) = recorded_game();
    let reader = LockstepReader::new(&file).unwrap();
    // The turn record of turn 9 (it carries orders); its target x changes.
    let (index, turn) = reader
        .records()
        .map(Result::unwrap)
        .find(|r| r.kind == LockstepRecordKind::Turn && r.turn == 9)
        .map(|r| (r.index, r.turn))
        .unwrap();
    assert_eq!(turn, 9);
    let damaged = edit_record(&file, index, |payload| {
        // The last 14 bytes are participant 3's order: first unit (4 bytes),
        // count (2), target. A count of 0 orders nothing (a refused order).
        let count = payload.len() - 10;
        assert_eq!(payload[count], 8);
        payload[count] = 0;
    });
    let reader = LockstepReader::new(&damaged).unwrap();
    match replay::<Units>(&reader, None) {
        Err(DemoError::ChecksumMismatch { sequence, .. }) => assert_eq!(sequence, 11),
        other => panic!("expected a checksum mismatch at turn 11, got {other:?}"),
    }
}

#[test]
fn truncated_and_wrong_files_are_errors_or_partial_replays() {
    let (file, _) = recorded_game();
    let cut = &file[..file.len() * 2 / 3];
    let reader = LockstepReader::new(cut).unwrap();
    let (report, _) = replay::<Units>(&reader, None).unwrap();
    assert!(report.truncated);
    assert!(report.turns > 0 && report.turns < 60);
    assert!(matches!(
        LockstepReader::new(&file[..10]),
        Err(DemoError::BadHeader { .. })
    ));
    assert!(matches!(
        LockstepReader::new(b"SNAPDEMO"),
        Err(DemoError::NotADemo { .. })
    ));
    let mut flipped = file.clone();
    let at = flipped.len() / 2;
    flipped[at] ^= 0x40;
    let reader = LockstepReader::new(&flipped).unwrap();
    assert!(matches!(
        replay::<Units>(&reader, None),
        Err(DemoError::Corrupt { .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any single flipped bit anywhere: an error or a replay, never a panic;
    /// a flip inside a record payload with its CRC recomputed still replays
    /// or fails with a named error.
    #[test]
    fn damaged_recordings_never_panic(bit in any::<usize>(), record in 0usize..80) {
        static FILE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        let file = FILE.get_or_init(|| recorded_game().0);
        let mut bytes = file.clone();
        let at = bit % (bytes.len() * 8);
        bytes[at / 8] ^= 1 << (at % 8);
        if let Ok(reader) = LockstepReader::new(&bytes) {
            let _ = replay::<Units>(&reader, None);
            let _ = info(&reader, bytes.len());
            let _ = reader.keyframes();
        }
        let count = LockstepReader::new(file).unwrap().records().count();
        let edited = edit_record(file, record % count, |p| {
            if !p.is_empty() {
                let i = bit % p.len();
                p[i] ^= 1 << (bit % 8);
            }
        });
        let reader = LockstepReader::new(&edited).unwrap();
        let _ = replay::<Units>(&reader, None);
        let _ = info(&reader, edited.len());
    }
}

/// The `lockstep_reader` fuzz target's committed seeds (`FUZZ_SEEDS_WRITE=1`
/// rewrites them): the recorded game whole, and cut in the middle of a
/// record. Replayed through the function the target calls.
#[test]
fn lockstep_reader_seeds_replay() {
    const CRATE: &str = env!("CARGO_MANIFEST_DIR");
    let (file, _) = recorded_game();
    let cut = file[..file.len() / 2].to_vec();
    write_seeds(CRATE, "lockstep_reader", &[file, cut]).unwrap();
    let committed = corpus_files(CRATE, "seeds", "lockstep_reader").unwrap();
    let seen: Vec<LockstepSeen> = committed
        .iter()
        .map(|(_, data)| lockstep_reader(data))
        .collect();
    assert_eq!(
        seen,
        [
            LockstepSeen {
                opened: true,
                described: true,
                turns: 60,
                checksums_verified: 15,
                truncated: false,
                keyframes: 3,
                keyframe_replays: 3,
            },
            LockstepSeen {
                opened: true,
                described: true,
                // The complete records: turns 0 to 31, the checks of
                // turns 3, 7, …, 31, and the keyframe after turn 15
                // (found by a scan: the index is at the end).
                turns: 32,
                checksums_verified: 8,
                truncated: true,
                keyframes: 1,
                keyframe_replays: 1,
            },
        ]
    );
    for (_, data) in corpus_files(CRATE, "regressions", "lockstep_reader").unwrap() {
        lockstep_reader(&data);
    }
}
