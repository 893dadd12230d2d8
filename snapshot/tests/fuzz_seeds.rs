//! Replays the committed seeds (valid message sequences) and past crashes of
//! the `snapshot/fuzz` target through the function it calls.
//! `FUZZ_SEEDS_WRITE=1 cargo test -p netq3-snapshot --test fuzz_seeds` rewrites the seeds.

use fields::fuzzing::{corpus_files, write_seeds};
use fields::Codec;
use std::sync::Arc;

use netq3_snapshot::fuzzing::{client_parse, fixture_framed, Ent, Player, RELIABLE};
use netq3_snapshot::{
    AllInScope, BuildOutcome, ClientId, ClientSettings, Compact, CompactRange, Framing, Received,
    UpdateKind,
};

const CRATE: &str = env!("CARGO_MANIFEST_DIR");

/// For each codec: the fixture server's next messages — a configstring
/// change and three snapshots in which entities move, appear and leave — as
/// one length-prefixed sequence, and the first snapshot alone. The fixture
/// client acknowledges none of them while a second client, built first,
/// acknowledges all, so the second snapshot is chained (two entity lists;
/// the third is not: no list leads to the chained one). The same for the
/// native codec range-coded, its configstring marked [`RELIABLE`]. Then,
/// native in both framings, four snapshots of which one codes an entity
/// re-entering the view from a history snapshot ([`reentry_messages`]).
fn seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    let framings: [(u8, Codec, Arc<dyn Framing>); 3] = [
        (0, Codec::Q3, Arc::new(Compact)),
        (1, Codec::Native, Arc::new(Compact)),
        (5, Codec::Native, Arc::new(CompactRange)),
    ];
    for (bit, codec, framing) in framings {
        let (mut server, id, _) = fixture_framed(codec, framing);
        let other = server.add_client(ClientSettings::unlimited()).unwrap();
        let mut messages = Vec::new();
        let mut bytes = Vec::new();
        server.set_configstring(1, "round=2").unwrap();
        server.write_configstring(1, &mut bytes).unwrap();
        messages.push((if bit & 4 != 0 { RELIABLE } else { 0 }, bytes.clone()));
        for frame in 2..5u32 {
            server.entity_mut(5).unwrap().y += 2.0;
            if frame == 3 {
                server.remove_entity(40);
                server.set_entity(7, Default::default()).unwrap();
            }
            server.commit_frame(frame * 50).unwrap();
            if let BuildOutcome::Built(info) = server
                .build_snapshot(other, &mut AllInScope, &mut bytes)
                .unwrap()
            {
                server.acknowledge(other, info.sequence).unwrap();
            }
            let BuildOutcome::Built(info) = server
                .build_snapshot(id, &mut AllInScope, &mut bytes)
                .unwrap()
            else {
                panic!("unlimited clients get every frame")
            };
            messages.push((info.sequence as u8, bytes.clone()));
        }
        assert_eq!(server.stats(id).unwrap().chained, 1, "{codec:?}");
        let mut sequence = vec![bit];
        for (number, message) in &messages {
            sequence.push(u8::try_from(message.len()).expect("short messages"));
            sequence.push(*number);
            sequence.extend_from_slice(message);
        }
        seeds.push(sequence);
        let mut single = vec![bit | 2, messages[1].0];
        single.extend_from_slice(&messages[1].1);
        seeds.push(single);
    }
    for (bit, framing) in [
        (1, Arc::new(Compact) as Arc<dyn Framing>),
        (5, Arc::new(CompactRange)),
    ] {
        seeds.push(sequence_of(bit, &reentry_messages(framing)));
    }
    seeds
}

/// The messages of a seed as one length-prefixed sequence after `bit`.
fn sequence_of(bit: u8, messages: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut sequence = vec![bit];
    for (number, message) in messages {
        sequence.push(u8::try_from(message.len()).expect("short messages"));
        sequence.push(*number);
        sequence.extend_from_slice(message);
    }
    sequence
}

/// The fixture server's native snapshots of frames 2 to 5, each
/// acknowledged, with entity 5 (no spawn baseline) out of view at 2 and 3
/// and back at 4: the message of frame 4 names snapshot 1, the last to
/// hold it, as its history snapshot (see `netq3_snapshot::history`), and
/// codes entity 5 from its state there.
fn reentry_messages(framing: Arc<dyn Framing>) -> Vec<(u8, Vec<u8>)> {
    let (mut server, id, _) = fixture_framed(Codec::Native, framing);
    let mut messages = Vec::new();
    let mut bytes = Vec::new();
    for frame in 2..6u32 {
        server.entity_mut(5).unwrap().y += 2.0;
        server.commit_frame(frame * 50).unwrap();
        let hidden = frame < 4;
        let mut scope =
            |_: ClientId, _: &Player, number: u32, _: &Ent| (number != 5 || !hidden).then_some(1.0);
        let BuildOutcome::Built(info) = server.build_snapshot(id, &mut scope, &mut bytes).unwrap()
        else {
            panic!("unlimited clients get every frame")
        };
        server.acknowledge(id, info.sequence).unwrap();
        messages.push((info.sequence as u8, bytes.clone()));
    }
    messages
}

/// The messages of sequence seed `seed`, as [`sequence_of`] joined them.
fn messages_of(seed: &[u8]) -> Vec<(u8, &[u8])> {
    let mut messages = Vec::new();
    let mut rest = &seed[1..];
    while let [len, number, tail @ ..] = rest {
        let (message, tail) = tail.split_at(usize::from(*len));
        messages.push((*number, message));
        rest = tail;
    }
    messages
}

#[test]
fn the_reentry_seeds_decode_an_entity_from_a_history_snapshot() {
    let seeds = seeds();
    let reentry = &seeds[6..];
    assert_eq!(reentry.len(), 2);
    for seed in reentry {
        let framing: Arc<dyn Framing> = match seed[0] & 4 {
            0 => Arc::new(Compact),
            _ => Arc::new(CompactRange),
        };
        let (_, _, mut client) = fixture_framed(Codec::Native, framing);
        client.set_trace(true);
        let mut kinds = Vec::new();
        for (number, message) in messages_of(seed) {
            let Received::Snapshot(report) =
                client.read_snapshot(u32::from(number), message).unwrap()
            else {
                panic!("snapshot {number} decodes")
            };
            let five = client
                .trace()
                .unwrap()
                .entities
                .iter()
                .find(|entry| entry.number == 5)
                .map(|entry| entry.kind);
            kinds.push((report.sequence, report.base, report.history, five));
        }
        assert_eq!(
            kinds,
            [
                (2, Some(1), None, Some(UpdateKind::Removed)),
                (3, Some(2), None, None),
                (4, Some(3), Some(1), Some(UpdateKind::Reentered)),
                (5, Some(4), None, Some(UpdateKind::Changed)),
            ],
            "mode {}",
            seed[0]
        );
        assert_eq!(client.newest().unwrap().entity(5).unwrap().y, 11.0);
    }
}

#[test]
fn client_parse_replays() {
    let seeds = seeds();
    write_seeds(CRATE, "client_parse", &seeds).unwrap();
    assert_eq!(client_parse(&seeds[0]), 4, "Quake 3: all four messages");
    assert_eq!(client_parse(&seeds[2]), 4, "native: all four messages");
    assert_eq!(client_parse(&seeds[4]), 4, "range-coded: all four messages");
    assert_eq!(
        client_parse(&seeds[6]),
        4,
        "native re-entry: all four messages"
    );
    assert_eq!(
        client_parse(&seeds[7]),
        4,
        "range-coded re-entry: all four messages"
    );
    let committed = corpus_files(CRATE, "seeds", "client_parse").unwrap();
    assert_eq!(committed.len(), seeds.len());
    for (path, data) in committed {
        let want = if data[0] & 2 != 0 { 1 } else { 4 };
        assert_eq!(client_parse(&data), want, "{}", path.display());
    }
    for (_, data) in corpus_files(CRATE, "regressions", "client_parse").unwrap() {
        client_parse(&data);
    }
}
