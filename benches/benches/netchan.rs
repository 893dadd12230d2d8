//! The sans-IO netchan core on simulated time, two endpoints joined in
//! memory (`benches::netpair`):
//!
//! * datagrams per second — each 50 ms tick the server hands over a real
//!   snapshot (the native messages the snapshot engine writes for the duel
//!   demo, in order) as the
//!   most-recent state and the client a 20-byte player command
//!   (guaranteed-quickest, as Quake 3's usercmds): two datagrams per tick,
//!   each carrying the other side's acks;
//! * fragmentation and reassembly — a 16 KiB state payload (the largest
//!   netchan carries) split into 1400-byte datagrams and put back together.

use std::time::Duration;

use benches::corpus::{duel_steps, engine_stream};
use benches::netpair::Pair;
use criterion::{criterion_main, BenchmarkId, Criterion, Throughput};
use fields::Codec;

const TICK: Duration = Duration::from_millis(50);
const LARGE: usize = 16 * 1024;
/// A player command's worth of bytes (Quake 3's usercmd is about that).
const COMMAND: [u8; 20] = [0x5a; 20];

fn datagrams(c: &mut Criterion) {
    let steps = duel_steps().expect("the duel demo decodes");
    let messages = engine_stream(Codec::Native, &steps)
        .expect("encodes")
        .messages;
    drop(steps);
    let mut group = c.benchmark_group("netchan_state_datagrams");
    for compress in [false, true] {
        let mut pair = Pair::connect(compress).expect("handshake");
        // Datagrams per tick, counted on simulated time before measuring.
        let mut i = 0;
        let mut tick = |pair: &mut Pair| {
            let message = &messages[i % messages.len()];
            i += 1;
            pair.server_connection()
                .expect("connected")
                .send_state(&message.bytes)
                .expect("fits");
            pair.client_connection()
                .expect("connected")
                .send_quickest(&COMMAND)
                .expect("fits");
            pair.tick(TICK)
        };
        let probe: usize = (0..200).map(|_| tick(&mut pair).datagrams).sum();
        let per_tick = (probe as f64 / 200.0).round() as u64;
        group.throughput(Throughput::Elements(per_tick));
        let name = if compress { "huffman" } else { "plain" };
        group.bench_function(BenchmarkId::new("duel_snapshots", name), |b| {
            b.iter(|| tick(&mut pair))
        });
    }
    group.finish();
}

fn fragmentation(c: &mut Criterion) {
    let mut group = c.benchmark_group("netchan_fragmentation");
    group.throughput(Throughput::Bytes(LARGE as u64));
    // A realistic large payload: full-snapshot-like bytes, deterministic.
    let payload: Vec<u8> = (0..LARGE as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let mut pair = Pair::connect(false).expect("handshake");
    group.bench_function(BenchmarkId::new("state", "16KiB"), |b| {
        b.iter(|| {
            pair.server_connection()
                .expect("connected")
                .send_state(&payload)
                .expect("fits");
            let mut received = 0;
            for _ in 0..100 {
                received += pair.tick(Duration::from_millis(1)).states;
                if received > 0 {
                    break;
                }
            }
            assert_eq!(received, 1, "the payload is reassembled");
        })
    });
    group.finish();
}

// criterion_group! makes an undocumented `pub fn`; a private module keeps it
// out of the missing-docs lint.
mod group {
    criterion::criterion_group!(benches, super::datagrams, super::fragmentation);
}
criterion_main!(group::benches);
