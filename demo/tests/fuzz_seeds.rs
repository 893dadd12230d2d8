//! The structure-aware demo builder in `cargo test`, and the committed seeds
//! (valid inputs) and past crashes of the `demo/fuzz` targets replayed
//! through the functions the targets call. `FUZZ_SEEDS_WRITE=1 cargo test -p
//! demo --test fuzz_seeds` rewrites the seeds.

use arbitrary::Unstructured;
use fields::fuzzing::{corpus_files, write_seeds};
use netq3_demo::fuzzing::{
    self, build, demo_structured, exercise, small_demo, DemoParts, HeaderMutation,
};
use netq3_demo::{DemoReader, MessageFraming, RecordKind};
use proptest::prelude::*;

const CRATE: &str = env!("CARGO_MANIFEST_DIR");

/// Inputs that build a valid demo with snapshots and no mutation: two
/// whose messages are a bit stream and two range-coded ones.
fn structured_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    let mut per_framing = [0usize; 2];
    for fill in 0..=255u8 {
        let input = vec![fill; 1024];
        let Ok(built) = build(&mut Unstructured::new(&input)) else {
            continue;
        };
        let reader = DemoReader::new(&built.data).unwrap();
        let snapshots = reader
            .records()
            .filter(|r| r.as_ref().is_ok_and(|r| r.kind.is_snapshot()))
            .count();
        let framing = match reader.header().framing {
            MessageFraming::Compact => 0,
            MessageFraming::CompactRange => 1,
        };
        if built.mutations.is_empty() && snapshots >= 10 && per_framing[framing] < 2 {
            per_framing[framing] += 1;
            seeds.push(input);
        }
        if seeds.len() == 4 {
            break;
        }
    }
    seeds
}

#[test]
fn demo_structured_replays() {
    let seeds = structured_seeds();
    assert_eq!(seeds.len(), 4, "fills that build unmutated demos");
    write_seeds(CRATE, "demo_structured", &seeds).unwrap();
    let committed = corpus_files(CRATE, "seeds", "demo_structured").unwrap();
    assert!(!committed.is_empty());
    for (path, data) in committed {
        let seen = demo_structured(&data).expect("a seed builds a demo");
        assert!(
            seen.clean && seen.played >= 12,
            "{}: {seen:?}",
            path.display()
        );
    }
    for (_, data) in corpus_files(CRATE, "regressions", "demo_structured").unwrap() {
        demo_structured(&data);
    }
}

#[test]
fn demo_reader_replays() {
    let mut whole = vec![0u8];
    whole.extend_from_slice(small_demo());
    // Mode 1 with no patches: the small demo as it is.
    let seeds = vec![whole, vec![1]];
    write_seeds(CRATE, "demo_reader", &seeds).unwrap();
    let committed = corpus_files(CRATE, "seeds", "demo_reader").unwrap();
    assert!(!committed.is_empty());
    for (path, data) in committed {
        let seen = fuzzing::demo_reader(&data);
        assert!(
            seen.clean && seen.played >= 12,
            "{}: {seen:?}",
            path.display()
        );
        assert!(seen.keyframes >= 1, "{}: {seen:?}", path.display());
    }
    for (_, data) in corpus_files(CRATE, "regressions", "demo_reader").unwrap() {
        fuzzing::demo_reader(&data);
    }
}

#[test]
fn parts_round_trip_a_recorded_demo() {
    let demo = small_demo();
    let parts = DemoParts::parse(demo).unwrap();
    assert_eq!(parts.encode(), demo);
    let reader = DemoReader::new(demo).unwrap();
    let offsets = parts.offsets();
    for record in reader.records().map(Result::unwrap) {
        assert_eq!(offsets[record.index], record.offset as u64);
        assert_eq!(parts.records[record.index].kind, record.kind.byte());
    }
    let kinds: Vec<u8> = parts.records.iter().rev().take(2).map(|r| r.kind).collect();
    assert_eq!(kinds, [RecordKind::End.byte(), RecordKind::Index.byte()]);
}

/// The header's claims about the snapshots' models reach the player: a
/// demo said to adapt, or to be coded with a model it was not, opens and
/// then fails with errors (the gamestate's fingerprint), never a panic.
#[test]
fn header_claims_about_the_models_reach_the_player() {
    let demo = small_demo();
    assert!(exercise(demo).clean);
    for change in [
        HeaderMutation::Adaptation(Some((15, 255, 0))),
        HeaderMutation::CodedEntityModel(true),
    ] {
        let mut parts = DemoParts::parse(demo).unwrap();
        change.apply(&mut parts.header);
        let seen = exercise(&parts.encode());
        assert!(seen.opened && !seen.clean, "{change:?}: {seen:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Valid demos with mutated fields and recomputed checksums: errors,
    /// never a panic; unmutated ones play cleanly with their index intact
    /// (asserted inside `demo_structured`).
    #[test]
    fn structured_demos_never_panic(input in proptest::collection::vec(any::<u8>(), 0..1536)) {
        demo_structured(&input);
    }
}
