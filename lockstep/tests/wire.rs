//! The lockstep wire messages: property tests on valid messages (round
//! trips, every truncation and many mutations rejected or still valid,
//! never a panic), the bounds, and the committed fuzz seeds replayed
//! through the fuzz target's own function.

use std::path::PathBuf;

use netq3_lockstep::fuzzing::exercise;
use netq3_lockstep::wire::{
    decode_turn, encode_turn, encode_turns_message, CommandSet, SetMessage, Settings, SpeedReport,
    Start, SyncCheck, ToHost, ToPeer, Turn, WireError, MAX_COMMANDS_PER_SET, MAX_REPEATED,
    MAX_SET_BYTES,
};
use proptest::prelude::*;

fn command_set() -> impl Strategy<Value = CommandSet> {
    prop::collection::vec(prop::collection::vec(any::<u8>(), 0..16), 0..8)
        .prop_map(|commands| CommandSet { commands })
}

fn set_message(turn: u32) -> impl Strategy<Value = SetMessage> {
    (
        command_set(),
        any::<(u16, u16, u16)>(),
        prop::option::of(any::<(u32, u64)>()),
    )
        .prop_map(
            move |(set, (rtt_ms, frame_ms, period_ms), sync)| SetMessage {
                turn,
                set,
                speed: SpeedReport {
                    rtt_ms,
                    frame_ms,
                    period_ms,
                },
                sync: sync.map(|(turn, checksum)| SyncCheck { turn, checksum }),
            },
        )
}

fn to_host() -> impl Strategy<Value = ToHost> {
    prop_oneof![
        Just(ToHost::Leave),
        (any::<u32>(), 0..u32::MAX - 8, 0..4usize)
            .prop_flat_map(|(turns_below, first, count)| {
                let sets: Vec<_> = (0..count as u32).map(|i| set_message(first + i)).collect();
                (Just(turns_below), sets)
            })
            .prop_map(|(turns_below, sets)| ToHost::Sets { turns_below, sets }),
    ]
}

fn turn_numbered(turn: u32) -> impl Strategy<Value = Turn> {
    (
        Just(turn),
        1..60_000u32,
        1..1000u32,
        prop::collection::btree_set(0..64u8, 0..4),
        prop::collection::btree_map(0..64u8, command_set(), 0..6),
    )
        .prop_map(|(turn, turn_ms, steps, dropped, sets)| Turn {
            turn,
            turn_ms,
            steps,
            dropped: dropped.into_iter().collect(),
            sets: sets.into_iter().collect(),
        })
}

fn to_peer() -> impl Strategy<Value = ToPeer> {
    prop_oneof![
        (
            any::<u32>(),
            prop::option::of(any::<u32>()),
            0..u32::MAX - 8,
            0..4usize
        )
            .prop_flat_map(|(sets_below, last_turn, first, count)| {
                let turns: Vec<_> = (0..count as u32)
                    .map(|i| turn_numbered(first + i))
                    .collect();
                (Just(sets_below), Just(last_turn), turns)
            })
            .prop_map(|(sets_below, last_turn, turns)| ToPeer::Turns {
                sets_below,
                last_turn,
                turns,
            }),
        (any::<u32>(), prop::collection::btree_set(0..64u8, 0..5)).prop_map(
            |(turn, participants)| ToPeer::OutOfSync {
                turn,
                participants: participants.into_iter().collect(),
            }
        ),
        (
            prop::collection::btree_set(0..64u8, 1..8),
            any::<u64>(),
            2..16u32,
            1..100u32,
            prop::collection::vec(any::<u8>(), 0..64)
        )
            .prop_map(|(participants, seed, delay, sync_interval, setup)| {
                let participants: Vec<u8> = participants.into_iter().collect();
                ToPeer::Start(Start {
                    you: participants[participants.len() / 2],
                    participants,
                    seed,
                    settings: Settings {
                        delay,
                        sync_interval,
                        step_ms: 50,
                        initial_turn_ms: 100,
                    },
                    setup,
                })
            }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn valid_messages_round_trip_and_damage_is_an_error_or_another_valid_message(
        host in to_host(),
        peer in to_peer(),
        flip in any::<(usize, u8)>(),
    ) {
        let bytes = host.to_bytes();
        prop_assert_eq!(ToHost::decode(&bytes), Ok(host.clone()));
        let peer_bytes = peer.to_bytes();
        prop_assert_eq!(ToPeer::decode(&peer_bytes), Ok(peer.clone()));
        if let ToPeer::Turns { sets_below, last_turn, turns } = &peer {
            for turn in turns {
                prop_assert_eq!(decode_turn(&encode_turn(turn)), Ok(turn.clone()));
            }
            // The host's borrowing encoder writes the same bytes.
            prop_assert_eq!(
                &encode_turns_message(*sets_below, *last_turn, turns.iter()),
                &peer_bytes
            );
        }
        for cut in 0..bytes.len() {
            prop_assert!(ToHost::decode(&bytes[..cut]).is_err());
        }
        for cut in 0..peer_bytes.len() {
            prop_assert!(ToPeer::decode(&peer_bytes[..cut]).is_err());
        }
        let mut longer = peer_bytes.clone();
        longer.push(0);
        prop_assert_eq!(ToPeer::decode(&longer), Err(WireError::Trailing(1)));
        // A flipped byte: whatever the decoders make of it, no panic.
        let mut damaged = peer_bytes;
        let at = flip.0 % damaged.len();
        damaged[at] ^= flip.1 | 1;
        exercise(&damaged);
    }
}

fn sets(entries: Vec<SetMessage>) -> ToHost {
    ToHost::Sets {
        turns_below: 0,
        sets: entries,
    }
}

fn set_for(turn: u32, set: CommandSet) -> SetMessage {
    SetMessage {
        turn,
        set,
        speed: SpeedReport::default(),
        sync: None,
    }
}

fn turns(turns: Vec<Turn>) -> ToPeer {
    ToPeer::Turns {
        sets_below: 0,
        last_turn: None,
        turns,
    }
}

#[test]
fn bounds_are_enforced() {
    let too_many = sets(vec![set_for(
        1,
        CommandSet {
            commands: vec![vec![1]; MAX_COMMANDS_PER_SET + 1],
        },
    )]);
    assert!(matches!(
        ToHost::decode(&too_many.to_bytes()),
        Err(WireError::TooMany { count: 33, .. })
    ));
    let too_big = sets(vec![set_for(
        1,
        CommandSet {
            commands: vec![vec![0; MAX_SET_BYTES + 1]],
        },
    )]);
    assert!(matches!(
        ToHost::decode(&too_big.to_bytes()),
        Err(WireError::TooMany { count: 241, .. })
    ));
    // Repeated sets and turns are consecutive and at most MAX_REPEATED.
    let gap = sets(vec![
        set_for(4, CommandSet::default()),
        set_for(6, CommandSet::default()),
    ]);
    assert!(matches!(
        ToHost::decode(&gap.to_bytes()),
        Err(WireError::Invalid(_))
    ));
    let flood = sets(
        (0..MAX_REPEATED as u32 + 1)
            .map(|t| set_for(t, CommandSet::default()))
            .collect(),
    );
    assert!(matches!(
        ToHost::decode(&flood.to_bytes()),
        Err(WireError::TooMany { count: 33, .. })
    ));
    let backwards = turns(vec![
        Turn {
            turn: 5,
            turn_ms: 100,
            steps: 2,
            ..Turn::default()
        },
        Turn {
            turn: 4,
            turn_ms: 100,
            steps: 2,
            ..Turn::default()
        },
    ]);
    assert!(matches!(
        ToPeer::decode(&backwards.to_bytes()),
        Err(WireError::Invalid(_))
    ));
    let unordered = turns(vec![Turn {
        turn: 3,
        turn_ms: 100,
        steps: 2,
        dropped: vec![],
        sets: vec![(2, CommandSet::default()), (1, CommandSet::default())],
    }]);
    assert!(matches!(
        ToPeer::decode(&unordered.to_bytes()),
        Err(WireError::Invalid(_))
    ));
    let zero_steps = turns(vec![Turn {
        turn: 3,
        turn_ms: 100,
        steps: 0,
        ..Turn::default()
    }]);
    assert!(ToPeer::decode(&zero_steps.to_bytes()).is_err());
    // A huge claimed length is an error, not an allocation.
    assert!(ToHost::decode(&[1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
}

fn seeds_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/wire")
}

/// The seeds: named valid messages of each kind, and damaged ones.
fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let set = CommandSet {
        commands: vec![vec![1, 2, 3], vec![]],
    };
    let turn = Turn {
        turn: 12,
        turn_ms: 150,
        steps: 3,
        dropped: vec![4],
        sets: vec![(0, set.clone()), (2, CommandSet::default())],
    };
    let commands = ToHost::Sets {
        turns_below: 12,
        sets: vec![
            SetMessage {
                turn: 13,
                set,
                speed: SpeedReport {
                    rtt_ms: 120,
                    frame_ms: 4,
                    period_ms: 150,
                },
                sync: Some(SyncCheck {
                    turn: 11,
                    checksum: 0x0123_4567_89ab_cdef,
                }),
            },
            set_for(14, CommandSet::default()),
        ],
    }
    .to_bytes();
    let start = ToPeer::Start(Start {
        you: 1,
        participants: vec![0, 1, 2],
        seed: 7,
        settings: Settings {
            delay: 2,
            sync_interval: 4,
            step_ms: 50,
            initial_turn_ms: 100,
        },
        setup: vec![9; 5],
    })
    .to_bytes();
    let mut truncated = commands.clone();
    truncated.truncate(commands.len() - 3);
    vec![
        ("valid-commands", commands),
        ("valid-leave", ToHost::Leave.to_bytes()),
        ("valid-start", start),
        (
            "valid-turn",
            ToPeer::Turns {
                sets_below: 14,
                last_turn: Some(40),
                turns: vec![turn.clone()],
            }
            .to_bytes(),
        ),
        (
            "valid-out-of-sync",
            ToPeer::OutOfSync {
                turn: 23,
                participants: vec![3],
            }
            .to_bytes(),
        ),
        ("valid-recorded-turn", encode_turn(&turn)),
        ("bad-truncated-commands", truncated),
        ("bad-huge-length", vec![0, 1, 0xff, 0xff, 0xff, 0xff, 0x0f]),
        ("bad-unknown-variant", vec![9, 0, 0]),
    ]
}

#[test]
fn committed_fuzz_seeds_replay_through_the_fuzz_target() {
    let dir = seeds_dir();
    if std::env::var_os("LOCKSTEP_WRITE_SEEDS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in seeds() {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
    let mut valid = 0;
    let mut bad = 0;
    for (name, bytes) in seeds() {
        let committed = std::fs::read(dir.join(name)).unwrap();
        assert_eq!(committed, bytes, "seed {name} is stale");
        let outcome = exercise(&committed);
        let decoded = outcome.to_host || outcome.to_peer || outcome.turn;
        if name.starts_with("valid-") {
            assert!(decoded, "{name}");
            valid += 1;
        } else {
            assert!(!decoded, "{name}");
            bad += 1;
        }
    }
    assert_eq!((valid, bad), (6, 3));
    // Every file in the directory (fuzzer finds included) replays cleanly.
    for entry in std::fs::read_dir(&dir).unwrap() {
        exercise(&std::fs::read(entry.unwrap().path()).unwrap());
    }
}
