//! Decoding the real Quake 3 demos in `../shared/q3demos` completely, with
//! plausibility checks on what comes out.

mod common;

use std::sync::OnceLock;

use fields::{BitSink, BitWriter, HuffmanCode, HuffmanWriter};

use netq3_q3::{
    check_dm68, looks_like_dm68, Command, Dm68Decoder, Dm68Reader, MessageError, Q3Error, Snapshot,
};

/// What decoding a whole file produced.
struct Decoded {
    records: usize,
    snapshots: Vec<std::sync::Arc<Snapshot>>,
    configstring0: String,
    server_commands: usize,
    ending: Option<Q3Error>,
}

fn decode(data: &[u8]) -> Decoded {
    let mut decoder = Dm68Decoder::new(data).expect("content check");
    let mut out = Decoded {
        records: 0,
        snapshots: Vec::new(),
        configstring0: String::new(),
        server_commands: 0,
        ending: None,
    };
    for item in &mut decoder {
        match item {
            Ok(record) => {
                out.records += 1;
                for command in &record.message.commands {
                    match &command.command {
                        Command::Snapshot(s) => out.snapshots.push(s.snapshot.clone()),
                        Command::ServerCommand(_) => out.server_commands += 1,
                        _ => {}
                    }
                }
            }
            Err(e) => out.ending = Some(e),
        }
    }
    out.configstring0 = decoder.client().configstring(0).to_owned();
    out
}

/// The big duel, decoded once for this test binary.
fn duel() -> &'static Decoded {
    static DUEL: OnceLock<Decoded> = OnceLock::new();
    DUEL.get_or_init(|| decode(&common::read_demo("dm_68_osp_duel_2.dm_68")))
}

#[test]
fn duel_decodes_to_the_known_counts() {
    if !common::here("duel_decodes_to_the_known_counts") {
        return;
    }
    let duel = duel();
    assert!(duel.ending.is_none(), "{:?}", duel.ending);
    assert_eq!(duel.records, 17_758);
    assert_eq!(duel.snapshots.len(), 17_757);
    assert!(duel.snapshots.iter().all(|s| s.is_valid()));
    assert!(duel.server_commands > 1000);
}

#[test]
fn plasma_clip_decodes_to_the_known_counts() {
    if !common::here("plasma_clip_decodes_to_the_known_counts") {
        return;
    }
    let decoded = decode(&common::read_demo("one_frag_only_with_plasma.dm_68"));
    assert!(decoded.ending.is_none(), "{:?}", decoded.ending);
    assert_eq!(decoded.records, 635);
    assert_eq!(decoded.snapshots.len(), 634);
}

#[test]
fn every_valid_demo_decodes_completely_and_plausibly() {
    if !common::here("every_valid_demo_decodes_completely_and_plausibly") {
        return;
    }
    for path in common::valid_demo_paths() {
        let name = common::name(&path);
        let data = std::fs::read(&path).unwrap();
        assert!(looks_like_dm68(&data), "{name}");
        let decoded = if name == "dm_68_osp_duel_2.dm_68" {
            duel()
        } else {
            &decode(&data)
        };
        assert!(decoded.ending.is_none(), "{name}: {:?}", decoded.ending);
        // One gamestate record, then one snapshot per record.
        assert_eq!(decoded.snapshots.len() + 1, decoded.records, "{name}");
        assert!(
            decoded.configstring0.contains("\\sv_hostname\\"),
            "{name}: {}",
            decoded.configstring0
        );
        check_snapshots(&name, &decoded.snapshots);
        println!(
            "{name}: {} records, {} snapshots, {} server commands",
            decoded.records,
            decoded.snapshots.len(),
            decoded.server_commands
        );
    }
}

fn check_snapshots(name: &str, snapshots: &[std::sync::Arc<Snapshot>]) {
    assert_eq!(
        snapshots[0].delta_num, 0,
        "{name}: demos start with a full snapshot"
    );
    for pair in snapshots.windows(2) {
        assert!(
            pair[1].server_time > pair[0].server_time,
            "{name}: server time {} after {}",
            pair[1].server_time,
            pair[0].server_time
        );
        assert!(pair[1].message_num > pair[0].message_num, "{name}");
    }
    for snap in snapshots {
        assert!(snap.is_valid(), "{name}: {:?}", snap.validity);
        let ps = &snap.ps;
        for coordinate in [ps.origin_0, ps.origin_1, ps.origin_2] {
            assert!(coordinate.abs() <= 10_000.0, "{name}: origin {coordinate}");
        }
        assert!((0..64).contains(&ps.client_num), "{name}");
        assert!(snap.areamask.len() <= 32, "{name}");
        assert!(
            snap.entities.windows(2).all(|w| w[0].0 < w[1].0),
            "{name}: entities sorted and unique"
        );
        assert!(snap.entities.iter().all(|(n, _)| *n < 1023), "{name}");
        for (number, entity) in &snap.entities {
            // ET_EVENTS (13) plus an event number for temporary entities.
            assert!(
                entity.e_type < 13 + 128,
                "{name}: entity {number} type {}",
                entity.e_type
            );
            for c in [
                entity.pos_tr_base_0,
                entity.pos_tr_base_1,
                entity.pos_tr_base_2,
            ] {
                assert!(
                    c.is_finite() && c.abs() < 100_000.0,
                    "{name}: {number} at {c}"
                );
            }
        }
        if let Some(base) = snap.base_message() {
            assert!(base < snap.message_num, "{name}");
        }
    }
    // Players are entities too: the followed client's own entity shows up
    // in other players' views, and at least someone moves.
    assert!(snapshots.iter().any(|s| !s.entities.is_empty()), "{name}");
}

#[test]
fn truncated_demo_yields_its_complete_records_then_truncation() {
    if !common::here("truncated_demo_yields_its_complete_records_then_truncation") {
        return;
    }
    let data = common::read_demo("truncated.dm_68");
    let decoded = decode(&data);
    assert_eq!(decoded.records, 238);
    match decoded.ending {
        Some(Q3Error::Truncated {
            complete_records, ..
        }) => assert_eq!(complete_records, 238),
        other => panic!("expected truncation, got {other:?}"),
    }
    assert!(decoded.ending.as_ref().unwrap().is_truncation());
    check_snapshots("truncated.dm_68", &decoded.snapshots);

    // The record reader alone reports the same.
    let mut reader = Dm68Reader::new(&data).unwrap();
    let complete = reader.by_ref().take_while(Result::is_ok).count();
    assert_eq!(complete, 238);
    assert!(!reader.reached_end_marker());
}

#[test]
fn invalid_command_byte_demo_fails_with_a_clear_error() {
    if !common::here("invalid_command_byte_demo_fails_with_a_clear_error") {
        return;
    }
    let data = common::read_demo("invalid_command_byte.dm_68");
    assert!(looks_like_dm68(&data), "it is a demo, only a broken one");
    let decoded = decode(&data);
    let error = decoded.ending.expect("must fail");
    let text = error.to_string();
    println!("invalid_command_byte.dm_68: {text}");
    let Q3Error::Message { record, source, .. } = &error else {
        panic!("expected a message error, got {error:?}");
    };
    assert_eq!(error.record(), Some(*record));
    assert!(text.contains(&format!("record {record}")), "{text}");
    assert!(source.bit().is_some(), "{text}");
    assert!(
        matches!(
            source,
            MessageError::BadCommand { .. } | MessageError::BadGamestateCommand { .. }
        ),
        "{text}"
    );
    assert!(text.contains("bad command byte"), "{text}");
}

#[test]
fn other_content_is_not_taken_for_a_demo() {
    assert!(check_dm68(b"").is_err());
    assert!(!looks_like_dm68(b"NETQ3DEMO\0\0\0\0\0\0\0"));
    assert!(!looks_like_dm68(b"{\"format\": \"json\"}\n"));
    // A plausible header whose message does not start like a server message.
    let mut message = [0u8; 16];
    let mut writer = BitWriter::new(&mut message);
    let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
    sink.put_bits(1, 32).unwrap();
    sink.put_u8(200).unwrap();
    let len = writer.finish();
    let mut fake = Vec::new();
    fake.extend_from_slice(&5i32.to_le_bytes());
    fake.extend_from_slice(&(len as i32).to_le_bytes());
    fake.extend_from_slice(&message[..len]);
    assert!(!looks_like_dm68(&fake));
    let error = Dm68Reader::new(&fake).unwrap_err();
    assert!(matches!(error, Q3Error::NotDm68 { .. }), "{error}");
    // An empty recording (only the end marker) is a demo with no records.
    let empty = [0xFFu8; 8];
    assert!(looks_like_dm68(&empty));
    let mut reader = Dm68Reader::new(&empty).unwrap();
    assert!(reader.next().is_none());
    assert!(reader.reached_end_marker());
}

#[test]
fn sniffing_works_on_the_first_bytes_only() {
    if !common::here("sniffing_works_on_the_first_bytes_only") {
        return;
    }
    for path in common::demo_paths() {
        let data = std::fs::read(&path).unwrap();
        assert!(looks_like_dm68(&data[..64]), "{}", common::name(&path));
    }
}
