//! Huffman throughput with Quake 3's code on the bytes Quake 3 feeds it:
//! the byte symbols of the duel demo's `svc_snapshot` commands in
//! bitstream mode (256 KiB of them, `benches::corpus::huffman_input`). Table-driven encoding and decoding against the
//! plain ways — one code bit at a time, and walking the code tree.

use std::hint::black_box;

use benches::corpus::huffman_input;
use criterion::{criterion_main, BenchmarkId, Criterion, Throughput};
use fields::{BitReader, BitSink, BitWriter, HuffmanCode};

const INPUT_LEN: usize = 256 * 1024;

/// The plain encoder: one `put_bit` per code bit, as Quake 3's own walks
/// from the leaf to the root and emits bit by bit.
fn encode_bit_by_bit(code: &HuffmanCode, input: &[u8], out: &mut BitWriter<'_>) {
    for &byte in input {
        let word = code.code_word(byte);
        for i in 0..word.len {
            out.put_bit(word.bit(i)).expect("the buffer fits");
        }
    }
}

fn huffman(c: &mut Criterion) {
    let input = huffman_input(INPUT_LEN).expect("encodes");
    let code = HuffmanCode::quake3();
    let mut encoded = vec![0u8; code.encoded_bits(&input).div_ceil(8)];
    code.encode_bytes(&input, &mut BitWriter::new(&mut encoded))
        .expect("the buffer fits");
    eprintln!(
        "huffman input: {} byte symbols of duel snapshots, {:.2} bits per byte with Quake 3's code",
        input.len(),
        code.encoded_bits(&input) as f64 / input.len() as f64
    );

    let mut group = c.benchmark_group("huffman_encode");
    group.throughput(Throughput::Bytes(input.len() as u64));
    let mut out = vec![0u8; encoded.len()];
    group.bench_function(BenchmarkId::new("duel", "table"), |b| {
        b.iter(|| {
            let mut w = BitWriter::new(&mut out);
            code.encode_bytes(black_box(&input), &mut w).expect("fits");
            w.finish()
        })
    });
    group.bench_function(BenchmarkId::new("duel", "bit_by_bit"), |b| {
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
    group.bench_function(BenchmarkId::new("duel", "table"), |b| {
        b.iter(|| {
            let mut r = BitReader::new(black_box(&encoded));
            code.decode_bytes(&mut r, &mut decoded).expect("decodes");
        })
    });
    let tree = code.tree_decoder();
    group.bench_function(BenchmarkId::new("duel", "tree_walk"), |b| {
        b.iter(|| {
            let mut r = BitReader::new(black_box(&encoded));
            tree.decode_bytes(&mut r, &mut decoded).expect("decodes");
        })
    });
    group.finish();
    assert_eq!(decoded, input);
}

// criterion_group! makes an undocumented `pub fn`; a private module keeps it
// out of the missing-docs lint.
mod group {
    criterion::criterion_group!(benches, super::huffman);
}
criterion_main!(group::benches);
