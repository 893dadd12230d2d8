//! Replays the committed seeds (valid message sequences) and past crashes of
//! the `snapshot/fuzz` target through the function it calls.
//! `FUZZ_SEEDS_WRITE=1 cargo test -p netq3-snapshot --test fuzz_seeds` rewrites the seeds.

use fields::fuzzing::{corpus_files, write_seeds};
use fields::Codec;
use std::sync::Arc;

use netq3_snapshot::fuzzing::{client_parse, fixture_framed, RELIABLE};
use netq3_snapshot::{AllInScope, BuildOutcome, ClientSettings, Compact, CompactRange, Framing};

const CRATE: &str = env!("CARGO_MANIFEST_DIR");

/// For each codec: the fixture server's next messages — a configstring
/// change and three snapshots in which entities move, appear and leave — as
/// one length-prefixed sequence, and the first snapshot alone. The fixture
/// client acknowledges none of them while a second client, built first,
/// acknowledges all, so the second snapshot is chained (two entity lists;
/// the third is not: no list leads to the chained one). The same for the
/// native codec range-coded, its configstring marked [`RELIABLE`].
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
    seeds
}

#[test]
fn client_parse_replays() {
    let seeds = seeds();
    write_seeds(CRATE, "client_parse", &seeds).unwrap();
    assert_eq!(client_parse(&seeds[0]), 4, "Quake 3: all four messages");
    assert_eq!(client_parse(&seeds[2]), 4, "native: all four messages");
    assert_eq!(client_parse(&seeds[4]), 4, "range-coded: all four messages");
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
