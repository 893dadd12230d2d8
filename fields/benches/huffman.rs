//! Huffman throughput with Quake 3's code: table-driven encode/decode against
//! bit-at-a-time encoding and the tree-walking decoder.
//!
//! The input is 64 KiB drawn from Quake 3's own byte frequencies (the table
//! id Software measured on real message traffic), so code lengths are
//! distributed as in a live game: about 2.7 bits per byte on average.

use std::hint::black_box;

use criterion::{criterion_main, BenchmarkId, Criterion, Throughput};
use fields::huffman::{HuffmanCode, QUAKE3_FREQUENCIES};
use fields::{BitReader, BitSink, BitSource, BitWriter, HuffmanReader};

const INPUT_LEN: usize = 64 * 1024;

/// Deterministic bytes with Quake 3's byte distribution (xorshift sampling of
/// the cumulative frequency table).
fn quake3_like_input() -> Vec<u8> {
    let mut cumulative = Vec::with_capacity(256);
    let mut total = 0u64;
    for &f in &QUAKE3_FREQUENCIES {
        total += u64::from(f);
        cumulative.push(total);
    }
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..INPUT_LEN)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let pick = state % total;
            cumulative.partition_point(|&c| c <= pick) as u8
        })
        .collect()
}

/// The baseline encoder: one `put_bit` per code bit, like Quake 3's own.
fn encode_bit_by_bit(code: &HuffmanCode, input: &[u8], out: &mut BitWriter<'_>) {
    for &byte in input {
        let word = code.code_word(byte);
        for i in 0..word.len {
            out.put_bit(word.bit(i)).unwrap();
        }
    }
}

fn bench_huffman(c: &mut Criterion) {
    let code = HuffmanCode::quake3();
    let input = quake3_like_input();
    let mut encoded = vec![0u8; code.encoded_bits(&input).div_ceil(8)];
    code.encode_bytes(&input, &mut BitWriter::new(&mut encoded))
        .unwrap();

    let mut group = c.benchmark_group("huffman_encode");
    group.throughput(Throughput::Bytes(input.len() as u64));
    let mut out = vec![0u8; encoded.len()];
    group.bench_function(BenchmarkId::new("quake3", "table"), |b| {
        b.iter(|| {
            let mut w = BitWriter::new(&mut out);
            code.encode_bytes(black_box(&input), &mut w).unwrap();
            w.finish()
        })
    });
    group.bench_function(BenchmarkId::new("quake3", "bit_by_bit"), |b| {
        b.iter(|| {
            let mut w = BitWriter::new(&mut out);
            encode_bit_by_bit(code, black_box(&input), &mut w);
            w.finish()
        })
    });
    group.finish();

    let mut group = c.benchmark_group("huffman_decode");
    group.throughput(Throughput::Bytes(input.len() as u64));
    let mut decoded = vec![0u8; input.len()];
    group.bench_function(BenchmarkId::new("quake3", "table"), |b| {
        b.iter(|| {
            let mut r = BitReader::new(black_box(&encoded));
            code.decode_bytes(&mut r, &mut decoded).unwrap();
        })
    });
    let tree = code.tree_decoder();
    group.bench_function(BenchmarkId::new("quake3", "tree_walk"), |b| {
        b.iter(|| {
            let mut r = BitReader::new(black_box(&encoded));
            tree.decode_bytes(&mut r, &mut decoded).unwrap();
        })
    });
    // The same symbols through the bitstream-mode adapter, one byte per read,
    // as a codec reading 8-bit fields would see them.
    group.bench_function(BenchmarkId::new("quake3", "bitstream_get_u8"), |b| {
        b.iter(|| {
            let mut r = HuffmanReader::new(BitReader::new(black_box(&encoded)), code);
            for slot in decoded.iter_mut() {
                *slot = r.get_u8().unwrap();
            }
        })
    });
    group.finish();
    assert_eq!(decoded, input);
}

// criterion_group! makes an undocumented `pub fn`; a private module keeps it
// out of the missing-docs lint without silencing the lint for the file.
mod group {
    criterion::criterion_group!(benches, super::bench_huffman);
}
criterion_main!(group::benches);
