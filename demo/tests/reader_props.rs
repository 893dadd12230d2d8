//! Property tests of the reader on mutated files: whatever the damage,
//! reading, playing, indexing, seeking and cutting return errors, never
//! panic, and a file that still plays to its end marker plays the original
//! snapshots.

mod common;

use std::sync::OnceLock;

use common::arena::{held, record_match, Expected};
use fields::Codec;
use netq3_demo::{DemoError, DemoReader, Player};
use proptest::prelude::*;

fn original() -> &'static (Vec<u8>, Vec<Expected>) {
    static DEMO: OnceLock<(Vec<u8>, Vec<Expected>)> = OnceLock::new();
    DEMO.get_or_init(|| {
        let recorded = record_match(Codec::Native, 80, 20);
        (recorded.demo, recorded.expected)
    })
}

/// Plays `data` to its end: the snapshots decoded and how it ended.
fn play(data: &[u8]) -> (Vec<Expected>, Result<(), DemoError>) {
    let mut out = Vec::new();
    let reader = match DemoReader::new(data) {
        Ok(reader) => reader,
        Err(error) => return (out, Err(error)),
    };
    let _ = reader.keyframes();
    let mut player = match Player::new(reader.clone()) {
        Ok(player) => player,
        Err(error) => return (out, Err(error)),
    };
    player.set_verify(true);
    while let Some(played) = player.next_record() {
        match played {
            Ok(played) if played.record.kind.is_snapshot() => {
                out.push(held(player.client().newest().unwrap()))
            }
            Ok(_) => {}
            Err(error) => return (out, Err(error)),
        }
    }
    for time in [0, 1_234, u32::MAX] {
        let _ = player.seek(time);
    }
    let _ = netq3_demo::cut::cut(&reader, 500, 2_000, Vec::new(), &mut |_| {});
    (out, Ok(()))
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, mask: u8 },
    Truncate { at: usize },
    Insert { at: usize, bytes: Vec<u8> },
    Remove { at: usize, len: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1u8..).prop_map(|(at, mask)| Mutation::Flip { at, mask }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..16)
        )
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<usize>(), 1usize..64).prop_map(|(at, len)| Mutation::Remove { at, len }),
    ]
}

fn apply(data: &mut Vec<u8>, mutation: &Mutation) {
    let len = data.len();
    match mutation {
        Mutation::Flip { at, mask } => data[at % len] ^= mask,
        Mutation::Truncate { at } => data.truncate(at % len),
        Mutation::Insert { at, bytes } => {
            let at = at % len;
            data.splice(at..at, bytes.iter().copied());
        }
        Mutation::Remove { at, len: n } => {
            let at = at % len;
            let end = (at + n).min(len);
            data.drain(at..end);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn mutated_files_never_panic_and_never_play_wrong_states(
        mutations in proptest::collection::vec(mutation(), 1..4)
    ) {
        let (original, expected) = original();
        let mut data = original.clone();
        for mutation in &mutations {
            if !data.is_empty() {
                apply(&mut data, mutation);
            }
        }
        let (played, ending) = play(&data);
        // What was played before any error is a prefix of the original:
        // checksums catch every damaged record before it is decoded.
        prop_assert!(played.len() <= expected.len());
        prop_assert_eq!(&played[..], &expected[..played.len()]);
        if ending.is_ok() {
            prop_assert_eq!(played.len(), expected.len());
        }
    }
}
