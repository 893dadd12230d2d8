//! The structure-aware fuzz targets, in `cargo test`: every committed seed
//! and past crash replayed through the same function the cargo-fuzz target
//! calls, and a bounded proptest run of each.

use std::path::{Path, PathBuf};

use netq3_netchan::{fuzzing, DropReason, HandleOutcome, RejectReason};
use proptest::prelude::*;

/// The targets and their bodies (`netchan/fuzz/fuzz_targets/<name>.rs` calls the same function).
/// A target's body.
type Body = fn(&[u8]) -> Vec<HandleOutcome>;

const TARGETS: [(&str, Body); 2] = [
    ("handshake", fuzzing::handshake),
    ("sealed", fuzzing::sealed),
];

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn seeds_and_past_crashes_replay() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    for (name, body) in TARGETS {
        let seeds = files(&root.join("seeds").join(name));
        // The seeds are committed: a missing directory is a broken checkout, not a skip.
        assert!(seeds.len() >= 3, "{name}: {} seeds", seeds.len());
        for file in seeds
            .iter()
            .chain(&files(&root.join("regressions").join(name)))
        {
            let data = std::fs::read(file).unwrap();
            let _ = body(&data);
        }
    }
}

/// A byte-level target's body.
type ByteBody = fn(&[u8]);

/// The byte-level targets: their seeds and past crashes replay without a
/// panic (the status regression is a request whose flag nibble was set,
/// which the parser once accepted and re-encoded differently).
#[test]
fn byte_level_seeds_and_past_crashes_replay() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let targets: [(&str, ByteBody); 3] = [
        ("datagram", fuzzing::bytes::datagram),
        ("reassembly", fuzzing::bytes::reassembly),
        ("status", fuzzing::bytes::status),
    ];
    for (name, body) in targets {
        let seeds = files(&root.join("seeds").join(name));
        assert!(seeds.len() >= 2, "{name}: {} seeds", seeds.len());
        for file in seeds
            .iter()
            .chain(&files(&root.join("regressions").join(name)))
        {
            body(&std::fs::read(file).unwrap());
        }
    }
    assert_eq!(files(&root.join("regressions").join("status")).len(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn handshake_target_holds(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        fuzzing::handshake(&data);
    }

    #[test]
    fn sealed_target_holds(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        fuzzing::sealed(&data);
    }
}

fn seed(target: &str, name: &str) -> Vec<HandleOutcome> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target)
        .join(name);
    let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let body = TARGETS.iter().find(|t| t.0 == target).unwrap().1;
    body(&data)
}

/// An outcome without its connection id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum O {
    Accepted,
    Repeated,
    Challenged,
    Refused(RejectReason),
    Data,
    Status,
    Dropped(DropReason),
}

fn shapes(outcomes: Vec<HandleOutcome>) -> Vec<O> {
    outcomes
        .into_iter()
        .map(|o| match o {
            HandleOutcome::Accepted(_) => O::Accepted,
            HandleOutcome::AcceptRepeated(_) => O::Repeated,
            HandleOutcome::Challenged => O::Challenged,
            HandleOutcome::Refused(r) => O::Refused(r),
            HandleOutcome::Data(_) => O::Data,
            HandleOutcome::Status => O::Status,
            HandleOutcome::Rejected(r) => O::Dropped(r),
            HandleOutcome::Handshake(_) => panic!("the server never takes a client's handshake"),
        })
        .collect()
}

#[test]
fn each_seed_reaches_what_it_was_written_for() {
    use DropReason::*;
    use RejectReason::{EncryptionUnavailable, SchemaMismatch, ServerFull, VersionMismatch};
    use O::*;
    let cases: [(&str, &str, Vec<O>); 7] = [
        (
            "handshake",
            "honest_connect",
            vec![Challenged, Accepted, Data, Data, Dropped(Duplicate)],
        ),
        (
            "handshake",
            "refusals",
            vec![
                Refused(VersionMismatch),
                Refused(SchemaMismatch),
                Refused(EncryptionUnavailable),
                Accepted,
                Accepted,
                Refused(ServerFull),
                Refused(ServerFull),
                Repeated,
            ],
        ),
        (
            "handshake",
            "bad_cookies",
            vec![
                Dropped(BadCookie),
                Dropped(ExpiredCookie),
                Dropped(ExpiredCookie),
                Dropped(BadCookie),
                Accepted,
                Repeated,
                Accepted,
            ],
        ),
        (
            "handshake",
            "mutated_challenges",
            vec![
                Challenged,
                Dropped(BadFraming),
                Challenged,
                Challenged,
                Dropped(BadFraming),
            ],
        ),
        ("sealed", "stream", vec![Data, Data, Data]),
        (
            "sealed",
            "tampered",
            vec![
                Dropped(Decryption),
                Dropped(UnknownConnection),
                Data,
                Dropped(BadBody),
                Dropped(Decryption),
            ],
        ),
        (
            "sealed",
            "fragments",
            vec![Data, Data, Data, Data, Dropped(Unexpected)],
        ),
    ];
    for (target, name, expected) in cases {
        assert_eq!(shapes(seed(target, name)), expected, "{target}/{name}");
    }
}
