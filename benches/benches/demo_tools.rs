//! What the `demo` tool spends on Quake 3 demos, measured on the code it
//! runs:
//!
//! * `quake3_code` — making Quake 3's Huffman code at start-up: from the
//!   compiled-in code words (what `HuffmanCode::quake3` does now) against
//!   replaying the adaptive construction over the frequency table (what it
//!   did before: about 1.3 million tree updates);
//! * `dm68_read` — one pass over every shared demo that decodes completely,
//!   as `demo info` (`demo_cli::inspect::gather`) and `demo events`
//!   (`demo_cli::events::events_of`) make it, in bytes of file per second
//!   (criterion also prints snapshots per second from the element count in
//!   the second group).

use std::hint::black_box;

use criterion::{criterion_main, Criterion, Throughput};
use demo_cli::Format;
use fields::huffman::QUAKE3_CODE_WORDS;
use fields::HuffmanCode;

fn quake3_code(c: &mut Criterion) {
    let mut group = c.benchmark_group("quake3_code");
    group.sample_size(10);
    group.bench_function("from_words", |b| {
        b.iter(|| HuffmanCode::from_code_words(black_box(&QUAKE3_CODE_WORDS)).expect("valid"))
    });
    group.bench_function("replay", |b| {
        b.iter(|| HuffmanCode::quake3_replayed().expect("replays"))
    });
    group.finish();
}

fn dm68_read(c: &mut Criterion) {
    let files: Vec<Vec<u8>> = q3::corpus::valid_files()
        .iter()
        .map(|path| std::fs::read(path).expect("the shared demos are readable"))
        .collect();
    assert!(
        !files.is_empty(),
        "the shared demos are missing: {}",
        q3::corpus::dir().display()
    );
    let bytes: usize = files.iter().map(Vec::len).sum();
    let snapshots: usize = files
        .iter()
        .map(|data| {
            demo_cli::inspect::gather(data, Format::Dm68, false)
                .0
                .snapshots
        })
        .sum();
    eprintln!(
        "dm68_read: {} files, {bytes} bytes, {snapshots} snapshots",
        files.len()
    );
    for (name, throughput) in [
        ("bytes", Throughput::Bytes(bytes as u64)),
        ("snapshots", Throughput::Elements(snapshots as u64)),
    ] {
        let mut group = c.benchmark_group(format!("dm68_read_{name}"));
        group.sample_size(10);
        group.throughput(throughput);
        group.bench_function("info", |b| {
            b.iter(|| {
                for data in &files {
                    black_box(demo_cli::inspect::gather(data, Format::Dm68, false));
                }
            })
        });
        group.bench_function("events", |b| {
            b.iter(|| {
                for data in &files {
                    black_box(demo_cli::events::events_of(data, Format::Dm68));
                }
            })
        });
        group.finish();
    }
}

// criterion_group! makes an undocumented `pub fn`; a private module keeps it
// out of the missing-docs lint.
mod group {
    criterion::criterion_group!(benches, super::quake3_code, super::dm68_read);
}
criterion_main!(group::benches);
