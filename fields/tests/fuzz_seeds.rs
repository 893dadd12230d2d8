//! Replays the committed seeds (valid inputs) and past crashes of every
//! `fields/fuzz` target through the functions the targets call, so they run
//! in `cargo test` on stable. `FUZZ_SEEDS_WRITE=1 cargo test -p netq3-fields --test
//! fuzz_seeds` rewrites the seeds from the generators below.

use netq3_fields::codec::Held;
use netq3_fields::fuzzing::{
    self, corpus_files, everything_base, write_seeds, Everything, FUZZ_HELD,
};
use netq3_fields::range::{RangeEncoder, RangeWriter, SplitWriter};
use netq3_fields::{BitSink, BitWriter, Codec, EntityUpdate, Fields, HuffmanCode};

const CRATE: &str = env!("CARGO_MANIFEST_DIR");

/// Every seed must decode to at least `min` (reads, entities, symbols);
/// every past crash must replay without panicking. Returns the seed count.
fn replay(target: &str, min: usize, run: impl Fn(&[u8]) -> usize) -> usize {
    let seeds = corpus_files(CRATE, "seeds", target).unwrap();
    assert!(!seeds.is_empty(), "{target} has no committed seeds");
    for (path, data) in &seeds {
        let accepted = run(data);
        assert!(
            accepted >= min,
            "{}: only {accepted} accepted",
            path.display()
        );
    }
    for (_, data) in corpus_files(CRATE, "regressions", target).unwrap() {
        run(&data);
    }
    seeds.len()
}

fn bit_reader_seeds() -> Vec<Vec<u8>> {
    // Script: get_bits(8) twice (op 32 = 8 << 2), get_signed(8) (op 33), a
    // string of up to 15 bytes (op 62), get_f32 (op 3); then the payload.
    let script = [32u8, 32, 33, 62, 3];
    let mut payload = vec![0xA5, 0x5A, 0x1F];
    payload.extend_from_slice(b"fuzz\0");
    payload.extend_from_slice(&1.5f32.to_le_bytes());
    let mut seed = vec![script.len() as u8];
    seed.extend_from_slice(&script);
    seed.extend_from_slice(&payload);
    vec![seed, vec![2, 32, 32, 1, 2]]
}

fn changed() -> [Everything; 3] {
    let base = everything_base();
    [
        // z changed with frame 3 before and after: the fall path.
        Everything {
            time: 1050,
            x: 17.5,
            z: -40.0,
            ..base
        },
        // `on` with x changed: the fuzzing model's fixed-speed path.
        Everything {
            on: true,
            x: 12.0,
            yaw: 90.0,
            stats: [7, 8, 9, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, -3],
            ..base
        },
        Everything {
            frame: 511,
            power: [1, u32::MAX, 0],
            x: -1e6,
            ..base
        },
    ]
}

fn codec_seeds(codec: Codec) -> Vec<Vec<u8>> {
    list_seeds(codec, &everything_base(), changed(), raw_bits)
}

/// Runs a writing closure through a sink and returns the seed's bytes.
type Framer = fn(&mut dyn FnMut(&mut dyn BitSink)) -> Vec<u8>;

/// What `write` writes through a [`BitWriter`], in whole bytes.
fn raw_bits(write: &mut dyn FnMut(&mut dyn BitSink)) -> Vec<u8> {
    let mut buf = [0u8; 512];
    let mut writer = BitWriter::new(&mut buf);
    write(&mut writer);
    let len = writer.bits_written().div_ceil(8);
    buf[..len].to_vec()
}

/// What `write` writes through a [`RangeWriter`], ended.
fn range_coded(write: &mut dyn FnMut(&mut dyn BitSink)) -> Vec<u8> {
    let mut writer = RangeWriter::new();
    write(&mut writer);
    writer.finish().0.to_vec()
}

/// A split message ([`SplitWriter`]: raw bits in front, symbols
/// range-coded backwards from the end), as the engine's `CompactRange`.
fn split_coded(write: &mut dyn FnMut(&mut dyn BitSink)) -> Vec<u8> {
    let mut buf = vec![0u8; 4096];
    let mut encoder = RangeEncoder::new();
    let mut writer = SplitWriter::new(&mut buf, &mut encoder);
    write(&mut writer);
    let (len, _) = writer.finish().unwrap();
    buf.truncate(len);
    buf
}

/// Struct deltas from `base` to each of `changed`, then an entity list,
/// each written by `frame`.
fn list_seeds<T: Fields>(codec: Codec, base: &T, changed: [T; 3], frame: Framer) -> Vec<Vec<u8>> {
    let base = base.clone();
    let mut seeds = Vec::new();
    for new in changed.clone() {
        seeds.push(frame(&mut |sink| {
            codec.write_delta(sink, &base, &new).unwrap()
        }));
    }
    // An entity list: changed, removed, unchanged-but-forced, changed, end.
    let [a, b, _] = changed;
    seeds.push(frame(&mut |sink| {
        let updates = [
            (
                3,
                EntityUpdate::Delta {
                    base: &base,
                    new: &a,
                    force: false,
                },
            ),
            (
                5,
                EntityUpdate::Removed {
                    old: &base,
                    held: Held(&FUZZ_HELD),
                },
            ),
            (
                70,
                EntityUpdate::Delta {
                    base: &base,
                    new: &base,
                    force: true,
                },
            ),
            (
                1000,
                EntityUpdate::Delta {
                    base: &base,
                    new: &b,
                    force: false,
                },
            ),
        ];
        let mut last = None;
        for (number, update) in updates {
            assert!(codec.write_entity(sink, last, number, update).unwrap());
            last = Some(number);
        }
        codec.write_entities_end(sink, last, &base).unwrap();
    }));
    seeds
}

fn huffman_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for text in [
        &b"configstring 0 \"map q3dm17\""[..],
        &[0, 1, 2, 255, 254, 128],
    ] {
        let mut buf = [0u8; 256];
        let mut writer = BitWriter::new(&mut buf);
        HuffmanCode::quake3()
            .encode_bytes(text, &mut writer)
            .unwrap();
        let bits = writer.bits_written();
        let len = bits.div_ceil(8);
        // No widths; cut the padding bits of the last byte.
        let mut seed = vec![(len * 8 - bits) as u8, 0];
        seed.extend_from_slice(&buf[..len]);
        seeds.push(seed);
    }
    // Widths 8, 16, 32 and 3, then the first stream.
    let mut seed = vec![seeds[0][0], 4, 8, 16, 32, 3];
    seed.extend_from_slice(&seeds[0][2..]);
    seeds.push(seed);
    seeds
}

#[test]
fn bit_reader_replays() {
    let seeds = bit_reader_seeds();
    write_seeds(CRATE, "bit_reader", &seeds).unwrap();
    assert_eq!(
        fuzzing::bit_reader(&seeds[0]),
        5,
        "every scripted read succeeds"
    );
    assert_eq!(replay("bit_reader", 2, fuzzing::bit_reader), seeds.len());
}

#[test]
fn codec_q3_replays() {
    let seeds = codec_seeds(Codec::Q3);
    write_seeds(CRATE, "codec_q3", &seeds).unwrap();
    assert_eq!(
        fuzzing::codec(Codec::Q3, &seeds[3]),
        6,
        "the list's 4 entities (and its first bits read as a struct delta, held and spawn)"
    );
    assert_eq!(
        replay("codec_q3", 1, |d| fuzzing::codec(Codec::Q3, d)),
        seeds.len()
    );
}

#[test]
fn codec_native_replays() {
    let seeds = codec_seeds(Codec::Native);
    write_seeds(CRATE, "codec_native", &seeds).unwrap();
    assert_eq!(
        fuzzing::codec(Codec::Native, &seeds[3]),
        6,
        "the list's 4 entities (and its first bits read as a struct delta, held and spawn)"
    );
    assert_eq!(
        replay("codec_native", 1, |d| fuzzing::codec(Codec::Native, d)),
        seeds.len()
    );
}

#[test]
fn codec_modelled_replays() {
    let seeds = list_seeds(
        Codec::Native,
        fuzzing::modelled_base(),
        changed().map(|state| fuzzing::modelled(&state)),
        raw_bits,
    );
    write_seeds(CRATE, "codec_modelled", &seeds).unwrap();
    assert_eq!(
        fuzzing::codec_modelled(&seeds[3]),
        6,
        "the list's 4 entities (and its first bits read as a struct delta, held and spawn)"
    );
    assert_eq!(
        replay("codec_modelled", 1, fuzzing::codec_modelled),
        seeds.len()
    );
}

#[test]
fn codec_range_replays() {
    let seeds = list_seeds(
        Codec::Native,
        fuzzing::modelled_base(),
        changed().map(|state| fuzzing::modelled(&state)),
        range_coded,
    );
    write_seeds(CRATE, "codec_range", &seeds).unwrap();
    assert_eq!(
        fuzzing::codec_range(&seeds[3]),
        6,
        "the list's 4 entities (and its first bits read as a struct delta, \
         held and spawn: only one accepted them while a float without a grid \
         refused the grid symbols, which are now its coarse steps)"
    );
    assert_eq!(replay("codec_range", 1, fuzzing::codec_range), seeds.len());
}

#[test]
fn codec_split_replays() {
    let seeds = list_seeds(
        Codec::Native,
        fuzzing::modelled_base(),
        changed().map(|state| fuzzing::modelled(&state)),
        split_coded,
    );
    write_seeds(CRATE, "codec_split", &seeds).unwrap();
    assert_eq!(fuzzing::codec_split(&seeds[3]), 4, "the list's 4 entities");
    assert_eq!(replay("codec_split", 1, fuzzing::codec_split), seeds.len());
}

#[test]
fn huffman_decode_replays() {
    let seeds = huffman_seeds();
    write_seeds(CRATE, "huffman_decode", &seeds).unwrap();
    // 27 text bytes: the padding bits are cut exactly, so decoding stops at
    // the end of the stream after the last one.
    assert_eq!(fuzzing::huffman_decode(&seeds[0]), 27);
    assert_eq!(
        replay("huffman_decode", 6, fuzzing::huffman_decode),
        seeds.len()
    );
}

/// A userinfo string as a client's `connect` packet carries it.
const USERINFO: &[u8] = b"\\name\\UnnamedPlayer\\rate\\25000\\snaps\\20\\model\\sarge\\\
    headmodel\\sarge\\handicap\\100\\color1\\4\\sex\\male\\protocol\\68\\\
    qport\\12345\\challenge\\-1234567";

#[test]
fn huffman_adaptive_replays() {
    let mut compress = vec![0u8];
    compress.extend_from_slice(USERINFO);
    let mut decompress = vec![1u8];
    decompress.extend_from_slice(&netq3_fields::huffman::adaptive_compress(USERINFO).unwrap());
    let seeds = vec![compress, decompress];
    write_seeds(CRATE, "huffman_adaptive", &seeds).unwrap();
    // Both modes give the whole text back.
    for seed in &seeds {
        assert_eq!(fuzzing::huffman_adaptive(seed), USERINFO.len());
    }
    assert_eq!(
        replay(
            "huffman_adaptive",
            USERINFO.len(),
            fuzzing::huffman_adaptive
        ),
        2
    );
}
