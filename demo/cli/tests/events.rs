//! `demo events` on the shared Quake 3 demos: exact counts per type,
//! checked against simpler readers that share nothing with the events
//! module — obituary entities counted from `demo dump`'s JSON with a
//! different de-duplication rule, chat commands counted from the parsed
//! messages, and the scoreboard configstrings and the recorder's own score
//! — then the same events from the demos converted to native ones, and a
//! cut around one event.

mod support;

use std::collections::BTreeMap;

use q3::{Command, Dm68Decoder};
use support::{demo, json, json_lines, path_str, q3, stderr, stdout, temp};

/// (frag, chat, score, flag, join, leave, rename) per shared demo.
const COUNTS: [(&str, [usize; 7]); 7] = [
    ("dm_68_cpma_core_gameplay_dev.dm_68", [0, 0, 0, 0, 0, 0, 0]),
    ("dm_68_osp_chat.dm_68", [0, 3, 0, 0, 0, 0, 0]),
    ("dm_68_osp_duel_2.dm_68", [28, 27, 28, 0, 3, 0, 2]),
    ("dm_68_osp_gameplay_types.dm_68", [0, 3, 0, 0, 0, 0, 0]),
    ("door_lift_grenade_100_130.dm_68", [0, 0, 0, 0, 0, 0, 0]),
    ("one_frag_only_with_plasma.dm_68", [1, 2, 0, 0, 0, 0, 0]),
    ("truncated.dm_68", [0, 2, 0, 0, 0, 0, 0]),
];

const TYPES: [&str; 7] = ["frag", "chat", "score", "flag", "join", "leave", "rename"];

fn counts(lines: &[serde_json::Value]) -> [usize; 7] {
    TYPES.map(|t| lines.iter().filter(|l| l["type"] == t).count())
}

/// Obituaries counted from `demo dump --jsonl`: an entity of type
/// `ET_EVENTS + EV_OBITUARY` (73), keyed by (attacker, target, means), is a
/// new death unless the same key was seen less than a second before (no
/// one is killed twice by the same weapon within the respawn time).
fn obituaries_from_dump(file: &str) -> Vec<(i64, i64, i64, i64)> {
    let dump = demo(&["dump", file, "--jsonl"]);
    let mut last_seen: BTreeMap<(i64, i64, i64), i64> = BTreeMap::new();
    let mut deaths = Vec::new();
    for line in stdout(&dump).lines() {
        let snapshot: serde_json::Value = serde_json::from_str(line).unwrap();
        let time = snapshot["time_ms"].as_i64().unwrap();
        for entity in snapshot["entities"].as_array().unwrap() {
            let state = &entity["state"];
            if state["e_type"] != 73 {
                continue;
            }
            let key = (
                state["other_entity_num2"].as_i64().unwrap(),
                state["other_entity_num"].as_i64().unwrap(),
                state["event_parm"].as_i64().unwrap(),
            );
            if last_seen
                .insert(key, time)
                .is_none_or(|then| time - then >= 1000)
            {
                deaths.push((time, key.0, key.1, key.2));
            }
        }
    }
    deaths
}

/// New `chat` and `tchat` commands, and at the end the score configstrings
/// and the recorder's score (`persistant[PERS_SCORE]`) at its first and
/// last snapshot.
struct Parsed {
    chat: usize,
    scores: (String, String),
    recorder_score: (i32, i32),
    recorder: i32,
}

fn parse(file: &str) -> Parsed {
    let data = std::fs::read(file).unwrap();
    let mut decoder = Dm68Decoder::new(&data).unwrap();
    let mut chat = 0;
    let mut first_score = None;
    let mut last_score = 0;
    while let Some(Ok(record)) = decoder.next() {
        for command in &record.message.commands {
            match &command.command {
                Command::ServerCommand(text)
                    if text.is_new
                        && (text.text.starts_with("chat ") || text.text.starts_with("tchat ")) =>
                {
                    chat += 1
                }
                Command::Snapshot(snap) => {
                    let score = i32::from(snap.snapshot.ps.persistant[0] as i16);
                    first_score.get_or_insert(score);
                    last_score = score;
                }
                _ => {}
            }
        }
    }
    let client = decoder.client();
    Parsed {
        chat,
        scores: (client.configstring(6).into(), client.configstring(7).into()),
        recorder_score: (first_score.unwrap_or(0), last_score),
        recorder: client.client_num().unwrap_or(-1),
    }
}

#[test]
fn events_of_the_shared_demos_are_counted_exactly_and_independently() {
    if !q3::corpus::available_or_skip(
        "events_of_the_shared_demos_are_counted_exactly_and_independently",
    ) {
        return;
    }
    for (file, expected) in COUNTS {
        let path = q3(file);
        let output = demo(&["events", "--json", &path]);
        // A truncated file is read to its last complete record: no error.
        assert_eq!(output.status.code(), Some(0), "{file}: {}", stderr(&output));
        let lines = json_lines(&output);
        assert_eq!(counts(&lines), expected, "{file}");
        for line in &lines {
            assert_eq!(line["file"], path.as_str());
            assert!(line["server_time"].is_i64());
        }

        // Frags: the dump-based count, death by death.
        let frags: Vec<(i64, i64, i64, i64)> = lines
            .iter()
            .filter(|l| l["type"] == "frag")
            .map(|l| {
                (
                    l["server_time"].as_i64().unwrap(),
                    l["attacker"].as_i64().unwrap_or(1022),
                    l["target"].as_i64().unwrap(),
                    l["means_of_death"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(frags, obituaries_from_dump(&path), "{file}");

        // Chat: every new chat and tchat command.
        let parsed = parse(&path);
        assert_eq!(expected[1], parsed.chat, "{file}");

        // Scores: the final scoreboard configstrings are the events' last
        // score, and their sum is the frags that were not suicides.
        let kills = lines
            .iter()
            .filter(|l| l["type"] == "frag" && l["suicide"] == false)
            .count() as i64;
        if let Some(last) = lines.iter().rev().find(|l| l["type"] == "score") {
            assert_eq!(last["score1"].to_string(), parsed.scores.0, "{file}");
            assert_eq!(last["score2"].to_string(), parsed.scores.1, "{file}");
            let sum: i64 =
                parsed.scores.0.parse::<i64>().unwrap() + parsed.scores.1.parse::<i64>().unwrap();
            assert_eq!(sum, kills, "{file}: scoreboard vs frags");
        }
        // A player recording their own game: their score rises by their kills.
        if file == "one_frag_only_with_plasma.dm_68" {
            let own = lines
                .iter()
                .filter(|l| l["type"] == "frag" && l["attacker"] == parsed.recorder)
                .count() as i32;
            assert_eq!(parsed.recorder_score.1 - parsed.recorder_score.0, own);
            assert_eq!(own, 1);
        }
    }
}

#[test]
fn the_duel_names_its_players_and_the_text_lists_every_event() {
    if !q3::corpus::available_or_skip("the_duel_names_its_players_and_the_text_lists_every_event") {
        return;
    }
    let duel = q3("dm_68_osp_duel_2.dm_68");
    let lines = json_lines(&demo(&["events", "--json", &duel]));
    let first_frag = lines.iter().find(|l| l["type"] == "frag").unwrap();
    assert_eq!(first_frag["attacker_name"], "ic-TOXIC");
    assert_eq!(first_frag["target_name"], "territory.ruICooller");
    assert_eq!(first_frag["means"], "MOD_LIGHTNING");
    let renames: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["type"] == "rename")
        .map(|l| (l["from"].as_str().unwrap(), l["name"].as_str().unwrap()))
        .collect();
    assert_eq!(renames, [("Radio iTG-1", "iTG'lun"), ("Kee", "iTG'Radio2")]);
    let last_chat = lines.iter().rev().find(|l| l["type"] == "chat").unwrap();
    assert_eq!(last_chat["name"], "ic-TOXIC");
    assert_eq!(last_chat["text"], "gg");
    let indices: Vec<u64> = lines.iter().map(|l| l["index"].as_u64().unwrap()).collect();
    assert_eq!(indices, (0..88).collect::<Vec<u64>>());

    let text = stdout(&demo(&["events", &duel]));
    assert!(
        text.contains("88 events (28 frag, 27 chat, 28 score, 0 flag, 3 join, 0 leave, 2 rename)"),
        "{text}"
    );
    assert!(text.contains("ic-TOXIC killed territory.ruICooller (MOD_LIGHTNING)"));
}

#[test]
fn native_demos_converted_from_quake3_give_the_same_game_events() {
    if !q3::corpus::available_or_skip(
        "native_demos_converted_from_quake3_give_the_same_game_events",
    ) {
        return;
    }
    for file in ["dm_68_osp_duel_2.dm_68", "one_frag_only_with_plasma.dm_68"] {
        let native = temp(&format!("{file}.native"));
        let convert = demo(&["convert", &q3(file), path_str(&native)]);
        assert_eq!(convert.status.code(), Some(0), "{}", stderr(&convert));
        let from_q3 = json_lines(&demo(&["events", "--json", &q3(file)]));
        let from_native = json_lines(&demo(&["events", "--json", path_str(&native)]));
        // Chat is a server command, which native demos do not record; the
        // rest is configstrings and entities, which they do (a native demo
        // writes a message's snapshot before its configstrings, so events
        // of the same moment are compared as a set).
        let game = |lines: &[serde_json::Value]| -> Vec<(i64, String, String)> {
            let mut events: Vec<_> = lines
                .iter()
                .filter(|l| l["type"] != "chat")
                .map(|l| {
                    let mut event = l.clone();
                    let object = event.as_object_mut().unwrap();
                    for key in ["file", "index", "time_s"] {
                        object.remove(key);
                    }
                    (
                        l["server_time"].as_i64().unwrap(),
                        l["type"].as_str().unwrap().to_string(),
                        event.to_string(),
                    )
                })
                .collect();
            events.sort();
            events
        };
        assert_eq!(game(&from_native), game(&from_q3), "{file}");
        assert!(!game(&from_native).is_empty());
    }
}

#[test]
fn cut_around_an_event_writes_a_standalone_demo_that_holds_it() {
    if !q3::corpus::available_or_skip("cut_around_an_event_writes_a_standalone_demo_that_holds_it")
    {
        return;
    }
    let duel = q3("dm_68_osp_duel_2.dm_68");
    let events = json_lines(&demo(&["events", "--json", &duel]));
    // Event 1 is the first frag, 22.374 s into the duel.
    assert_eq!(events[1]["type"], "frag");
    let cut = temp("first-frag.demo");
    let output = demo(&[
        "cut",
        &duel,
        "--around-event",
        "1",
        "--before",
        "2",
        "--after",
        "3",
        "-o",
        path_str(&cut),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("event 1 at 22.374 s: frag"),
        "{}",
        stdout(&output)
    );
    let info = json(&demo(&["info", "--json", path_str(&cut)]));
    assert_eq!(info["format"], "native");
    let duration = info["duration_s"].as_f64().unwrap();
    assert!((4.9..=5.0).contains(&duration), "{duration}");
    let play = demo(&["play", path_str(&cut), "--verify"]);
    assert_eq!(play.status.code(), Some(0), "{}", stderr(&play));
    let inside = json_lines(&demo(&["events", "--json", path_str(&cut)]));
    let frags: Vec<_> = inside.iter().filter(|l| l["type"] == "frag").collect();
    assert_eq!(frags.len(), 1, "{inside:?}");
    assert_eq!(frags[0]["server_time"], events[1]["server_time"]);
    assert_eq!(frags[0]["attacker_name"], events[1]["attacker_name"]);
}
