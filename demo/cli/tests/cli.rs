//! The `demo` binary on native demos and on the shared Quake 3 demos:
//! output keys and counts, exit codes 0 / 3 / 2, and files it writes.

// The demo crate's shared test helper names that crate by its library name.
extern crate demo as netq3_demo;

#[path = "../../tests/common/arena.rs"]
mod arena;

mod support;

use arena::record_match;
use fields::Codec;
use support::{demo, json, path_str, q3, stderr, stdout, temp};

#[test]
fn native_demos_through_every_command() {
    let recorded = record_match(Codec::Native, 400, 100);
    // No file extension: the format is found by content.
    let file = temp("match");
    std::fs::write(&file, &recorded.demo).unwrap();
    let file = path_str(&file);

    let info = json(&demo(&["info", file, "--json"]));
    assert_eq!(info["format"], "native");
    assert_eq!(
        info["records"], 402,
        "gamestate, configstring, 400 snapshots"
    );
    assert_eq!(info["snapshots"], 400);
    assert_eq!(info["keyframes"], 4);
    assert_eq!(info["duration_s"], 19.95);
    assert_eq!(info["truncated"], false);
    assert_eq!(info["entity_schema"]["name"], "Ship");
    assert_eq!(info["metadata"]["map"], "asteroids");
    let reader = demo::DemoReader::new(&recorded.demo).unwrap();
    let payloads: Vec<f64> = reader
        .records()
        .map(Result::unwrap)
        .filter(|r| r.kind.is_snapshot())
        .map(|r| r.payload.len() as f64)
        .collect();
    let mean = payloads.iter().sum::<f64>() / payloads.len() as f64;
    assert!((info["mean_snapshot_bytes"].as_f64().unwrap() - mean).abs() < 1e-9);
    let text = stdout(&demo(&["info", file]));
    assert!(text.contains("snapshots:  400"), "{text}");

    let play = demo(&["play", file, "--verify", "--timedemo"]);
    assert_eq!(play.status.code(), Some(0), "{}", stderr(&play));
    let text = stdout(&play);
    assert!(text.contains("400 snapshots"), "{text}");
    assert!(text.contains("snapshots/s"), "{text}");
    let seek = demo(&["play", file, "--seek", "10", "--verify"]);
    assert_eq!(seek.status.code(), Some(0), "{}", stderr(&seek));
    assert!(
        stdout(&seek).contains("played 200 records, 200 snapshots"),
        "{}",
        stdout(&seek)
    );

    let dump = demo(&["dump", file, "--jsonl", "--from", "1", "--to", "2"]);
    assert_eq!(dump.status.code(), Some(0), "{}", stderr(&dump));
    let lines: Vec<serde_json::Value> = stdout(&dump)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 21, "1.00 s to 2.00 s at 20 Hz");
    assert_eq!(lines[0]["time_ms"], 1_000);
    assert!(lines[0]["player"]["health"].is_i64());
    assert!(lines[0]["entities"][0]["state"]["hull"].is_u64());
    let text = stdout(&demo(&["dump", file, "--to", "0.1"]));
    assert_eq!(text.lines().count(), 3);
    assert!(text.starts_with("t=0 seq=0 full player{"), "{text}");

    let svg = temp("match.svg");
    let stats = demo(&["stats", file, "--svg", path_str(&svg)]);
    assert_eq!(stats.status.code(), Some(0), "{}", stderr(&stats));
    assert!(stdout(&stats).contains("entities per snapshot"));
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.starts_with("<svg") && picture.contains("<polyline"));

    let cut = temp("match-cut");
    let output = demo(&[
        "cut",
        file,
        "--from",
        "5",
        "--to",
        "7.5",
        "-o",
        path_str(&cut),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let info = json(&demo(&["info", path_str(&cut), "--json"]));
    assert_eq!(info["snapshots"], 51);
    assert_eq!(info["duration_s"], 2.5);
    let play = demo(&["play", path_str(&cut), "--verify"]);
    assert_eq!(play.status.code(), Some(0), "{}", stderr(&play));

    // Truncated: everything complete plays, exit 3.
    let truncated = temp("match-truncated");
    std::fs::write(&truncated, &recorded.demo[..recorded.demo.len() * 2 / 3]).unwrap();
    let play = demo(&["play", path_str(&truncated), "--verify"]);
    assert_eq!(play.status.code(), Some(3), "{}", stderr(&play));
    assert!(stderr(&play).contains("truncated"));
    let info = json(&demo(&["info", path_str(&truncated), "--json"]));
    assert_eq!(info["truncated"], true);

    // Corrupted: exit 2 naming the offset.
    let mut damaged = recorded.demo.clone();
    let at = damaged.len() / 2;
    damaged[at] ^= 0x10;
    let corrupted = temp("match-corrupted");
    std::fs::write(&corrupted, &damaged).unwrap();
    let play = demo(&["play", path_str(&corrupted)]);
    assert_eq!(play.status.code(), Some(2));
    assert!(stderr(&play).contains("byte offset"), "{}", stderr(&play));

    let not_a_demo = temp("notes.dm_68");
    std::fs::write(&not_a_demo, b"hello, this is text").unwrap();
    let info = demo(&["info", path_str(&not_a_demo)]);
    assert_eq!(info.status.code(), Some(2));
    assert!(stderr(&info).contains("not a demo"));
}

/// The file of issue 15: a recorded demo whose last 35 bytes (its end
/// record) are replaced by an end record with an empty payload, valid frame
/// check and CRC, followed by 16 filler bytes, so that a full-size end
/// record seems to start where the short one does.
fn short_end_record(recorded: &[u8]) -> Vec<u8> {
    use demo::format::{crc32_update, Frame, RecordKind, END_PAYLOAD_LEN, FRAME_LEN, TRAILER_LEN};
    let end_len = FRAME_LEN + END_PAYLOAD_LEN + TRAILER_LEN;
    assert_eq!(end_len, 35);
    let mut data = recorded[..recorded.len() - end_len].to_vec();
    let frame = Frame {
        kind: RecordKind::End.byte(),
        len: 0,
        server_time: 0,
        sequence: 0,
    }
    .encode();
    data.extend_from_slice(&frame);
    data.extend_from_slice(&crc32_update(0, &frame).to_le_bytes());
    data.extend_from_slice(&[0xAB; 16]);
    assert_eq!(data.len(), recorded.len());
    data
}

#[test]
fn a_short_end_record_is_an_error_in_every_command() {
    let recorded = record_match(Codec::Native, 60, 20);
    let file = temp("short-end");
    std::fs::write(&file, short_end_record(&recorded.demo)).unwrap();
    let file = path_str(&file);
    let svg = temp("short-end.svg");
    let cut = temp("short-end-cut");
    let commands: [Vec<&str>; 8] = [
        vec!["info", file],
        vec!["info", file, "--json"],
        vec!["dump", file, "--from", "500"],
        vec!["dump", file],
        vec!["play", file, "--seek", "1000"],
        vec!["play", file, "--verify"],
        vec!["stats", file, "--svg", path_str(&svg)],
        vec![
            "cut",
            file,
            "--from",
            "1",
            "--to",
            "2",
            "-o",
            path_str(&cut),
        ],
    ];
    for args in commands {
        let output = demo(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(
            message.starts_with("demo: ") && message.contains("end record of 0 bytes"),
            "{args:?}: {message}"
        );
        assert!(!message.contains("panicked"), "{args:?}: {message}");
    }
    let convert = demo(&["convert", file, path_str(&temp("short-end-converted"))]);
    assert_eq!(convert.status.code(), Some(2), "{}", stderr(&convert));
}

#[test]
fn quake3_demos_through_info_play_dump_and_convert() {
    if !q3::corpus::available_or_skip("quake3_demos_through_info_play_dump_and_convert") {
        return;
    }
    let duel = q3("dm_68_osp_duel_2.dm_68");
    let info = json(&demo(&["info", &duel, "--json"]));
    assert_eq!(info["format"], "q3-dm68");
    assert_eq!(info["records"], 17_758);
    assert_eq!(info["snapshots"], 17_757);
    assert_eq!(info["truncated"], false);
    assert!(info["duration_s"].as_f64().unwrap() > 800.0);
    assert!(info["mean_snapshot_bytes"].as_f64().unwrap() > 0.0);
    assert_eq!(info["metadata"]["mapname"], "pro-q3dm6");

    let plasma = q3("one_frag_only_with_plasma.dm_68");
    let info = json(&demo(&["info", &plasma, "--json"]));
    assert_eq!(info["records"], 635);
    assert_eq!(info["snapshots"], 634);
    let play = demo(&["play", &plasma, "--timedemo", "--verify"]);
    assert_eq!(play.status.code(), Some(0), "{}", stderr(&play));
    assert!(stdout(&play).contains("634 snapshots"));
    assert!(stdout(&play).contains("snapshots/s"));
    let dump = demo(&["dump", &plasma, "--jsonl", "--to", "1"]);
    let first: serde_json::Value =
        serde_json::from_str(stdout(&dump).lines().next().unwrap()).unwrap();
    assert_eq!(first["base"], serde_json::Value::Null);
    assert!(first["player"]["origin_0"].is_number());
    assert!(first["entities"][0]["state"]["e_type"].is_number());

    let truncated = q3("truncated.dm_68");
    let play = demo(&["play", &truncated]);
    assert_eq!(play.status.code(), Some(3), "{}", stderr(&play));
    assert!(
        stdout(&play).contains("played 238 records"),
        "{}",
        stdout(&play)
    );
    let info = json(&demo(&["info", &truncated, "--json"]));
    assert_eq!(info["truncated"], true);
    assert_eq!(info["records"], 238);

    let invalid = q3("invalid_command_byte.dm_68");
    let play = demo(&["play", &invalid]);
    assert_eq!(play.status.code(), Some(2));
    assert!(stderr(&play).contains("record 0"), "{}", stderr(&play));

    let converted = temp("plasma-q3");
    let convert = demo(&["convert", &plasma, path_str(&converted), "--codec", "q3"]);
    assert_eq!(convert.status.code(), Some(0), "{}", stderr(&convert));
    let text = stdout(&convert);
    assert!(
        text.contains("634/634 snapshots with exactly Quake 3's bit count"),
        "{text}"
    );
    let info = json(&demo(&["info", path_str(&converted), "--json"]));
    assert_eq!(info["format"], "native");
    assert_eq!(info["codec"], "q3");
    assert_eq!(info["snapshots"], 634);
    let play = demo(&["play", path_str(&converted), "--verify"]);
    assert_eq!(play.status.code(), Some(0), "{}", stderr(&play));
}

/// Structure-aware mutated demos (valid framing and checksums, damaged
/// fields; `demo::fuzzing`) through every command of the binary: an exit
/// code of 0, 2 or 3 and never a panic.
#[test]
fn mutated_demos_never_make_a_command_panic() {
    let mut files = 0;
    for seed in 0..64u32 {
        // Bytes from a fixed sequence: each seed chooses another game and
        // other mutations.
        let input: Vec<u8> = (0..1536u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) ^ seed.wrapping_mul(40_503)).to_le_bytes()[1])
            .collect();
        let Ok(built) = demo::fuzzing::build(&mut arbitrary::Unstructured::new(&input)) else {
            continue;
        };
        if built.mutations.is_empty() {
            continue;
        }
        files += 1;
        if files > 12 {
            break;
        }
        let file = temp(&format!("mutated-{seed}"));
        std::fs::write(&file, &built.data).unwrap();
        let file = path_str(&file);
        let svg = temp(&format!("mutated-{seed}.svg"));
        let cut = temp(&format!("mutated-{seed}-cut"));
        let page = temp(&format!("mutated-{seed}.html"));
        for args in [
            vec!["info", file, "--json"],
            vec!["dump", file, "--jsonl"],
            vec!["play", file, "--verify", "--seek", "0.5"],
            vec!["stats", file, "--svg", path_str(&svg)],
            vec!["events", file, "--json"],
            vec!["view", file, "-o", path_str(&page)],
            vec![
                "cut",
                file,
                "--from",
                "0.2",
                "--to",
                "1",
                "-o",
                path_str(&cut),
            ],
        ] {
            let output = demo(&args);
            let message = stderr(&output);
            assert!(
                matches!(output.status.code(), Some(0 | 2 | 3)),
                "{args:?} after {:?}: {:?} {message}",
                built.mutations,
                output.status
            );
            assert!(!message.contains("panicked"), "{args:?}: {message}");
        }
    }
    assert!(files > 12, "only {files} mutated demos were built");
}
