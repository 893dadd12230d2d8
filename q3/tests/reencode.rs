//! Re-encoding every snapshot of the real demos with our q3 encoder: at
//! least 99.9% must come out with exactly Quake 3's bit count, and every
//! other one must have an explained cause.

mod common;

use q3::reencode::{verify_demo, ReencodeStats, Verifier};
use q3::Dm68Decoder;

/// Per file: the totals are printed with the causes of every mismatch;
/// bit counts that agree must be bit-identical; every mismatch must be
/// explained by a change Quake 3 sent that the wire cannot show (its server
/// compares raw 32-bit values, so a velocity going from `0.0` to `-0.0` is
/// "sent" and decodes to the same `0`). Over all demos, at least 99.9% of
/// snapshots have exactly Quake 3's bit count.
#[test]
fn reencoded_snapshots_match_quake3_bit_counts() {
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
        assert!(stats.snapshots > 0, "{name}");
        assert_eq!(stats.identical_bits, stats.exact_bits, "{name}");
        for mismatch in &stats.mismatches {
            assert!(!mismatch.causes.is_empty(), "{name}: {mismatch:?}");
            assert!(
                mismatch
                    .causes
                    .iter()
                    .all(|c| c.kind.is_invisible_on_the_wire()),
                "{name}: unexplained difference {mismatch:?}"
            );
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
    assert!(total.snapshots > 20_000);
    assert!(
        total.exact_ratio() >= 0.999,
        "only {:.3}% exact",
        100.0 * total.exact_ratio()
    );
}

#[test]
fn truncated_demo_reencodes_up_to_its_last_complete_record() {
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
    assert!(stats.exact_ratio() >= 0.999);
}
