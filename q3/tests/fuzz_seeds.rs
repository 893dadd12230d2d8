//! The structure-aware `.dm_68` builder in `cargo test`, and the committed
//! seeds (valid inputs) and past crashes of the `q3/fuzz` targets replayed
//! through the functions the targets call. `FUZZ_SEEDS_WRITE=1 cargo test -p
//! q3 --test fuzz_seeds` rewrites the seeds.

use arbitrary::Unstructured;
use fields::fuzzing::{corpus_files, write_seeds};
use netq3_q3::fuzzing::{build_dm68, dm68_structured, q3_message};
use proptest::prelude::*;

const CRATE: &str = env!("CARGO_MANIFEST_DIR");

/// Inputs that build an unmutated demo of at least 8 records.
fn structured_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for fill in 0..=255u8 {
        let input: Vec<u8> = (0..2048u32)
            .map(|i| fill.wrapping_add((i % 7) as u8))
            .collect();
        let Ok(built) = build_dm68(&mut Unstructured::new(&input)) else {
            continue;
        };
        if built.mutations.is_empty() && built.valid.records.len() >= 8 {
            seeds.push(input);
        }
        if seeds.len() == 4 {
            break;
        }
    }
    seeds
}

#[test]
fn dm68_structured_replays() {
    let seeds = structured_seeds();
    assert_eq!(seeds.len(), 4, "inputs that build unmutated demos");
    write_seeds(CRATE, "dm68_structured", &seeds).unwrap();
    let committed = corpus_files(CRATE, "seeds", "dm68_structured").unwrap();
    assert!(!committed.is_empty());
    for (path, data) in committed {
        let built = build_dm68(&mut Unstructured::new(&data)).unwrap();
        assert!(built.mutations.is_empty(), "{}", path.display());
        let decoded = dm68_structured(&data).unwrap();
        assert_eq!(decoded, built.valid.records.len(), "{}", path.display());
    }
    for (_, data) in corpus_files(CRATE, "regressions", "dm68_structured").unwrap() {
        dm68_structured(&data);
    }
}

#[test]
fn q3_message_replays() {
    // Mode 0: whole generated files (valid without the shared corpus).
    let seeds: Vec<Vec<u8>> = structured_seeds()
        .iter()
        .take(2)
        .map(|input| {
            let built = build_dm68(&mut Unstructured::new(input)).unwrap();
            let mut seed = vec![0u8];
            seed.extend_from_slice(&built.data);
            seed
        })
        .collect();
    write_seeds(CRATE, "q3_message", &seeds).unwrap();
    let committed = corpus_files(CRATE, "seeds", "q3_message").unwrap();
    assert!(!committed.is_empty());
    for (path, data) in committed {
        let records = q3_message(&data);
        assert!(records >= 8, "{}: {records} records", path.display());
    }
    for (_, data) in corpus_files(CRATE, "regressions", "q3_message").unwrap() {
        q3_message(&data);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Valid demos with framing-preserving mutations: errors, never a
    /// panic; unmutated ones decode completely with every snapshot valid
    /// (asserted inside `dm68_structured`).
    #[test]
    fn structured_dm68_never_panics(input in proptest::collection::vec(any::<u8>(), 0..2048)) {
        dm68_structured(&input);
    }
}

/// The relay's client-packet seeds are real clients' datagrams (the
/// OpenArena client's, captured by `q3 relay --capture-seeds`): replayed,
/// every one reads, the client's commands run and its usercmds are read.
#[test]
fn relay_client_replays() {
    let committed = corpus_files(CRATE, "seeds", "relay_client").unwrap();
    assert!(committed.len() >= 2, "{} seeds", committed.len());
    for (path, data) in committed {
        let outcome = netq3_q3::relay::fuzzing::feed_client_datagrams(&data);
        let name = path.display();
        assert!(outcome.messages >= 20, "{name}: {outcome:?}");
        assert_eq!(outcome.unreadable, 0, "{name}: {outcome:?}");
        assert!(outcome.usercmds >= outcome.messages, "{name}: {outcome:?}");
        assert!(outcome.entered, "{name}: {outcome:?}");
        // The gamestate, then a message every 50 ms of the harness clock.
        assert!(outcome.sent >= outcome.messages / 5, "{name}: {outcome:?}");
        // Entered, it gets the stream's frames (a message each 50 ms).
        assert!(outcome.snapshots >= 5, "{name}: {outcome:?}");
    }
    for (_, data) in corpus_files(CRATE, "regressions", "relay_client").unwrap() {
        netq3_q3::relay::fuzzing::feed_client_datagrams(&data);
    }
}
