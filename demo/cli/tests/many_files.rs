//! `demo info`, `stats` and `events` over many files and folders: one JSON
//! line per file (per event for `events`), in command-line order whatever
//! the number of workers, damaged files reported up to their fault with
//! the error, and the worst status as the exit status. Commands that write
//! files leave nothing behind when they fail.

mod support;

use std::collections::BTreeMap;

use support::{demo, json_lines, path_str, q3, stderr, stdout, temp};

/// (records, snapshots) `info` reports for each shared demo; the invalid
/// one fails inside its first record, the truncated one is read to its
/// last complete record.
const EXPECTED: [(&str, u64, u64); 8] = [
    ("dm_68_cpma_core_gameplay_dev.dm_68", 72, 71),
    ("dm_68_osp_chat.dm_68", 533, 532),
    ("dm_68_osp_duel_2.dm_68", 17_758, 17_757),
    ("dm_68_osp_gameplay_types.dm_68", 1024, 1023),
    ("door_lift_grenade_100_130.dm_68", 1264, 1263),
    ("invalid_command_byte.dm_68", 0, 0),
    ("one_frag_only_with_plasma.dm_68", 635, 634),
    ("truncated.dm_68", 238, 237),
];

/// The records of a `.dm_68` file: (sequence, message).
fn records(data: &[u8]) -> Vec<(i32, Vec<u8>)> {
    q3::Dm68Reader::new(data)
        .unwrap()
        .map_while(Result::ok)
        .map(|r| (r.sequence, r.message.to_vec()))
        .collect()
}

/// The plasma demo's first 300 records, then the invalid demo's broken
/// gamestate: a file that fails after 300 good records.
fn damaged_after_300_records() -> std::path::PathBuf {
    let plasma = std::fs::read(q3("one_frag_only_with_plasma.dm_68")).unwrap();
    let invalid = std::fs::read(q3("invalid_command_byte.dm_68")).unwrap();
    let mut parts = q3::fuzzing::Dm68Parts {
        records: records(&plasma)[..300].to_vec(),
        end_marker: true,
    };
    let broken = records(&invalid).remove(0);
    parts.records.push((parts.records[299].0 + 1, broken.1));
    let path = temp("damaged-after-300.dm_68");
    std::fs::write(&path, parts.encode()).unwrap();
    path
}

fn name(line: &serde_json::Value) -> String {
    let file = line["file"].as_str().unwrap();
    std::path::Path::new(file)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn info_over_a_folder_gives_one_line_per_file_and_the_worst_status() {
    if !q3::corpus::available_or_skip(
        "info_over_a_folder_gives_one_line_per_file_and_the_worst_status",
    ) {
        return;
    }
    let dir = q3::corpus::dir();
    let damaged = damaged_after_300_records();
    let dir = path_str(&dir);
    let output = demo(&["info", "--json", dir, path_str(&damaged)]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 9, "{}", stdout(&output));
    for (line, (file, records, snapshots)) in lines.iter().zip(EXPECTED) {
        assert_eq!(name(line), file);
        assert_eq!(line["records"], records, "{file}");
        assert_eq!(line["snapshots"], snapshots, "{file}");
        assert_eq!(line["format"], "q3-dm68", "{file}");
        let broken = file == "invalid_command_byte.dm_68";
        assert_eq!(line.get("error").is_some(), broken, "{file}: {line}");
        assert_eq!(line["truncated"], file == "truncated.dm_68", "{file}");
    }
    let invalid = &lines[5]["error"];
    assert!(invalid.as_str().unwrap().contains("record 0"), "{invalid}");
    // The spliced file: its 300 good records, then the error naming record 300.
    let last = &lines[8];
    assert_eq!(name(last), "damaged-after-300.dm_68");
    assert_eq!(last["records"], 300);
    assert_eq!(last["snapshots"], 299);
    assert!(last["duration_s"].as_f64().unwrap() > 9.0, "{last}");
    assert!(
        last["error"].as_str().unwrap().contains("record 300"),
        "{last}"
    );
    assert!(stderr(&output).contains("damaged-after-300.dm_68"));

    // The same lines whatever the number of workers.
    let one = demo(&["info", "--json", "--jobs", "1", dir, path_str(&damaged)]);
    assert_eq!(one.status.code(), Some(2));
    assert_eq!(stdout(&one), stdout(&output));

    // Only good files: exit 0; a truncated one is no error for info.
    let good = demo(&[
        "info",
        "--json",
        &q3("one_frag_only_with_plasma.dm_68"),
        &q3("truncated.dm_68"),
    ]);
    assert_eq!(good.status.code(), Some(0), "{}", stderr(&good));
    assert_eq!(json_lines(&good).len(), 2);

    // Text: every file's block, the damaged one with its partial figures.
    let text = demo(&["info", path_str(&damaged), &q3("truncated.dm_68")]);
    assert_eq!(text.status.code(), Some(2));
    let text = stdout(&text);
    assert!(text.contains("records:    300 (1 gamestates)"), "{text}");
    assert!(text.contains("error:      "), "{text}");
    assert!(text.contains("truncated:  yes"), "{text}");
}

#[test]
fn stats_and_events_over_many_files() {
    if !q3::corpus::available_or_skip("stats_and_events_over_many_files") {
        return;
    }
    let damaged = damaged_after_300_records();
    let files = [
        q3("one_frag_only_with_plasma.dm_68"),
        q3("invalid_command_byte.dm_68"),
        path_str(&damaged).to_string(),
        q3("truncated.dm_68"),
    ];
    let svg = temp("plots");
    let mut args = vec!["stats", "--json", "--svg", path_str(&svg)];
    args.extend(files.iter().map(String::as_str));
    let output = demo(&args);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let lines = json_lines(&output);
    let snapshots: Vec<u64> = lines
        .iter()
        .map(|l| l["snapshots"].as_u64().unwrap())
        .collect();
    assert_eq!(snapshots, [634, 0, 299, 237]);
    assert!(lines[1]["error"].is_string() && lines[2]["error"].is_string());
    assert!(lines[0]["entities"]["max"].as_u64().unwrap() > 0);
    // A plot for each file that decoded something.
    let mut plots: Vec<String> = std::fs::read_dir(&svg)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    plots.sort();
    assert_eq!(
        plots,
        [
            "damaged-after-300.dm_68.svg",
            "one_frag_only_with_plasma.dm_68.svg",
            "truncated.dm_68.svg"
        ]
    );

    let mut args = vec!["events", "--json"];
    args.extend(files.iter().map(String::as_str));
    let output = demo(&args);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let mut per_file: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in json_lines(&output) {
        assert!(line["server_time"].is_i64(), "{line}");
        per_file
            .entry(name(&line))
            .or_default()
            .push(line["type"].as_str().unwrap().to_string());
    }
    assert_eq!(
        per_file["one_frag_only_with_plasma.dm_68"],
        ["chat", "frag", "chat"]
    );
    assert_eq!(per_file["invalid_command_byte.dm_68"], ["error"]);
    // The first 300 records hold the first chat line, then the error.
    assert_eq!(per_file["damaged-after-300.dm_68"], ["chat", "error"]);
    assert_eq!(per_file["truncated.dm_68"], ["chat", "chat"]);
}

#[test]
fn a_failed_convert_leaves_no_file() {
    if !q3::corpus::available_or_skip("a_failed_convert_leaves_no_file") {
        return;
    }
    let dir = temp("convert-failures");
    std::fs::create_dir_all(&dir).unwrap();
    let output = dir.join("invalid.demo");
    let convert = demo(&[
        "convert",
        &q3("invalid_command_byte.dm_68"),
        path_str(&output),
    ]);
    assert_eq!(convert.status.code(), Some(2), "{}", stderr(&convert));
    assert!(
        stderr(&convert).contains("record 0"),
        "{}",
        stderr(&convert)
    );
    assert!(
        !output.exists(),
        "a failed convert left {}",
        output.display()
    );
    let damaged = damaged_after_300_records();
    let convert = demo(&["convert", path_str(&damaged), path_str(&output)]);
    assert_eq!(convert.status.code(), Some(2), "{}", stderr(&convert));
    assert!(!output.exists());
    // An earlier file of the same name is left as it was.
    std::fs::write(&output, b"earlier").unwrap();
    let convert = demo(&["convert", path_str(&damaged), path_str(&output)]);
    assert_eq!(convert.status.code(), Some(2));
    assert_eq!(std::fs::read(&output).unwrap(), b"earlier");
    // No temporary file is left either.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("invalid.demo")]);
    // A cut that fails (no such event) writes nothing.
    let cut = dir.join("cut.demo");
    let failed = demo(&[
        "cut",
        &q3("one_frag_only_with_plasma.dm_68"),
        "--around-event",
        "99",
        "-o",
        path_str(&cut),
    ]);
    assert_eq!(failed.status.code(), Some(2));
    assert!(stderr(&failed).contains("3 events"), "{}", stderr(&failed));
    assert!(!cut.exists());
}
