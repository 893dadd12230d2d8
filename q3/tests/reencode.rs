//! Re-encoding every snapshot of the real demos with our q3 encoder: every
//! snapshot comes out with exactly Quake 3's bit count except 7 known ones,
//! each explained by a `0.0` / `-0.0` velocity Quake 3 sent as a change.

mod common;

use netq3_q3::reencode::{verify_demo, CauseKind, ReencodeStats, Verifier};
use netq3_q3::Dm68Decoder;

/// Snapshots per valid demo, and the records whose snapshot does not get
/// Quake 3's bit count (all in `door_lift_grenade_100_130.dm_68`).
const EXPECTED: [(&str, usize, &[usize]); 6] = [
    ("dm_68_cpma_core_gameplay_dev.dm_68", 71, &[]),
    ("dm_68_osp_chat.dm_68", 532, &[]),
    ("dm_68_osp_duel_2.dm_68", 17_757, &[]),
    ("dm_68_osp_gameplay_types.dm_68", 1_023, &[]),
    (
        "door_lift_grenade_100_130.dm_68",
        1_263,
        &[320, 521, 566, 657, 702, 811, 864],
    ),
    ("one_frag_only_with_plasma.dm_68", 634, &[]),
];

/// Per file: the totals are printed with the causes of every mismatch;
/// bit counts that agree must be bit-identical; exactly the known records
/// mismatch, each explained by a player-state velocity Quake 3 sent as
/// changed although it decodes equal to its base (its server compares raw
/// 32-bit values, so `0.0` to `-0.0` is "sent" and decodes to the same `0`).
#[test]
fn reencoded_snapshots_match_quake3_bit_counts() {
    if !common::here("reencoded_snapshots_match_quake3_bit_counts") {
        return;
    }
    let mut total = ReencodeStats::default();
    for path in common::valid_demo_paths() {
        let name = common::name(&path);
        let data = std::fs::read(&path).unwrap();
        let stats = verify_demo(&data).unwrap_or_else(|e| panic!("{name}: {e}"));
        let counts = stats.cause_counts();
        println!(
            "{name}: {} snapshots, {} exact bit count ({:.3}%), {} bit-identical, \
             {} original bits, {} re-encoded bits, mismatch causes {counts:?}",
            stats.snapshots,
            stats.exact_bits,
            100.0 * stats.exact_ratio(),
            stats.identical_bits,
            stats.original_bits,
            stats.reencoded_bits,
        );
        for mismatch in &stats.mismatches {
            let causes: Vec<String> = mismatch.causes.iter().map(|c| c.to_string()).collect();
            println!(
                "  record {} message {}: {} vs {} bits: {}",
                mismatch.record,
                mismatch.message_num,
                mismatch.original_bits,
                mismatch.reencoded_bits,
                causes.join("; ")
            );
        }
        let (_, snapshots, mismatched) = EXPECTED
            .iter()
            .find(|(file, _, _)| *file == name)
            .unwrap_or_else(|| panic!("{name} is not a known demo"));
        assert_eq!(stats.snapshots, *snapshots, "{name}");
        assert_eq!(stats.identical_bits, stats.exact_bits, "{name}");
        assert_eq!(stats.exact_bits, snapshots - mismatched.len(), "{name}");
        let records: Vec<usize> = stats.mismatches.iter().map(|m| m.record).collect();
        assert_eq!(&records[..], *mismatched, "{name}");
        for mismatch in &stats.mismatches {
            assert!(!mismatch.causes.is_empty(), "{name}: {mismatch:?}");
            for cause in &mismatch.causes {
                assert_eq!(cause.kind, CauseKind::ChangedButEqual, "{name}: {cause}");
                assert!(
                    matches!(cause.field, Some("velocity_0" | "velocity_1")),
                    "{name}: {cause}"
                );
                assert_eq!(cause.detail, "value 0", "{name}: {cause}");
            }
        }
        assert_eq!(stats.explained_ratio(), 1.0, "{name}");
        total.merge(stats);
    }
    println!(
        "all demos: {} snapshots, {:.3}% exact, causes {:?}",
        total.snapshots,
        100.0 * total.exact_ratio(),
        total.cause_counts()
    );
    assert_eq!(total.snapshots, 21_280);
    assert_eq!(total.exact_bits, 21_273);
    assert_eq!(total.cause_counts().values().sum::<usize>(), 7);
}

#[test]
fn truncated_demo_reencodes_up_to_its_last_complete_record() {
    if !common::here("truncated_demo_reencodes_up_to_its_last_complete_record") {
        return;
    }
    let data = common::read_demo("truncated.dm_68");
    let mut verifier = Verifier::new();
    let mut ending = None;
    for item in Dm68Decoder::new(&data).unwrap() {
        match item {
            Ok(record) => verifier.check_record(&record).unwrap(),
            Err(e) => ending = Some(e),
        }
    }
    assert!(ending.is_some_and(|e| e.is_truncation()));
    let stats = verifier.into_stats();
    assert_eq!(stats.snapshots, 237);
    assert_eq!(stats.exact_bits, 237);
}
