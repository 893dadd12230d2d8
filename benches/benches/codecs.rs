//! Encode and decode time of both codecs on the real duel demo's state
//! sequence (`dm_68_osp_duel_2.dm_68`, about 17,700 snapshots, loaded once):
//!
//! * per snapshot — a whole `svc_snapshot`-equivalent message (header,
//!   player state, entity list) against the recorded base, cycling through
//!   the sequence so the time is the sequence's mean;
//! * per entity — each changed or added entity update on its own;
//! * adapting models (`fields::model::Adaptation`) — tallying one
//!   message's symbols, and rebuilding both of Quake 3's models from a
//!   chain of the duel's first 128 messages (`AdaptPolicy::DEFAULT`).
//!
//! q3 runs through Quake 3's Huffman code as Quake 3 does; native is raw
//! bits (see `benches::message`).

use std::hint::black_box;
use std::sync::Arc;

use benches::adapt::MessageTally;
use benches::corpus::{
    decode_entity, duel_steps, encode_all, encode_entity, entity_cases, q3_zeros, Encoded,
};
use benches::message::{Breakdown, MessageFormat};
use criterion::{criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use fields::model::{AdaptPolicy, Adaptation};
use fields::Codec;

const FORMATS: [(&str, MessageFormat); 2] =
    [("q3", MessageFormat::Q3), ("native", MessageFormat::NATIVE)];

fn per_snapshot(c: &mut Criterion) {
    let steps = duel_steps().expect("the duel demo decodes");
    let zeros = q3_zeros();
    let mut buf = vec![0u8; 1 << 16];
    let mut breakdown = Breakdown::default();

    let mut group = c.benchmark_group("snapshot_encode");
    group.throughput(Throughput::Elements(1));
    for (name, format) in FORMATS {
        let mut i = 0;
        group.bench_function(BenchmarkId::new("duel", name), |b| {
            b.iter(|| {
                let step = steps[i].step();
                i = (i + 1) % steps.len();
                format
                    .encode(&mut buf, black_box(&step), &zeros, &mut breakdown)
                    .expect("encodes")
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("snapshot_decode");
    group.throughput(Throughput::Elements(1));
    for (name, format) in FORMATS {
        let messages = encode_all(format, &steps).expect("encodes");
        let mut i = 0;
        group.bench_function(BenchmarkId::new("duel", name), |b| {
            b.iter(|| {
                let (step, message) = (&steps[i], &messages[i]);
                i = (i + 1) % steps.len();
                format
                    .decode(
                        black_box(&message.bytes),
                        message.bits,
                        step.base.as_deref(),
                        step.frame_ms,
                        &*step.baselines,
                        &zeros,
                    )
                    .expect("decodes")
            })
        });
    }
    group.finish();
}

fn per_entity(c: &mut Criterion) {
    let steps = duel_steps().expect("the duel demo decodes");
    let cases = entity_cases(&steps);
    drop(steps);
    let mut buf = vec![0u8; 4096];
    let codecs = [("q3", Codec::Q3, true), ("native", Codec::Native, false)];

    let mut group = c.benchmark_group("entity_encode");
    group.throughput(Throughput::Elements(1));
    for (name, codec, huffman) in codecs {
        let mut i = 0;
        group.bench_function(BenchmarkId::new("duel", name), |b| {
            b.iter(|| {
                let case = &cases[i];
                i = (i + 1) % cases.len();
                encode_entity(codec, huffman, black_box(case), &mut buf).expect("encodes")
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("entity_decode");
    group.throughput(Throughput::Elements(1));
    for (name, codec, huffman) in codecs {
        let encoded: Vec<Encoded> = cases
            .iter()
            .map(|case| {
                let bits = encode_entity(codec, huffman, case, &mut buf).expect("encodes");
                Encoded {
                    bytes: buf[..bits.div_ceil(8)].to_vec(),
                    bits,
                }
            })
            .collect();
        let mut i = 0;
        group.bench_function(BenchmarkId::new("duel", name), |b| {
            b.iter(|| {
                let case = &cases[i];
                let message = &encoded[i];
                i = (i + 1) % cases.len();
                decode_entity(codec, huffman, case, black_box(message)).expect("decodes")
            })
        });
    }
    group.finish();
}

fn adaptation(c: &mut Criterion) {
    let steps = duel_steps().expect("the duel demo decodes");
    let zeros = q3_zeros();
    let entity = q3::model::entity_model().expect("committed model");
    let player = q3::model::player_model().expect("committed model");
    let mut tally = MessageTally::new();

    let mut group = c.benchmark_group("adapt");
    group.throughput(Throughput::Elements(1));
    let mut i = 0;
    group.bench_function(BenchmarkId::new("tally", "duel"), |b| {
        b.iter(|| {
            tally.message(&black_box(&steps[i]).step(), &zeros, entity, player);
            i = (i + 1) % steps.len();
        })
    });

    // A chain one message short of a rebuild; each iteration adds the
    // last message (a fresh state, so nothing is cached) and rebuilds.
    let policy = AdaptPolicy::DEFAULT;
    let mut chain = (
        Adaptation::new(Arc::clone(entity)),
        Adaptation::new(Arc::clone(player)),
    );
    let chain_length = policy.chain_length as usize;
    for step in steps.iter().take(chain_length - 1) {
        tally.message(&step.step(), &zeros, entity, player);
        chain = (chain.0.after(&tally.entity), chain.1.after(&tally.player));
    }
    tally.message(&steps[chain_length - 1].step(), &zeros, entity, player);
    group.sample_size(10);
    group.bench_function(BenchmarkId::new("rebuild", "duel"), |b| {
        b.iter_batched(
            || (chain.0.after(&tally.entity), chain.1.after(&tally.player)),
            |(entity, player)| {
                let entity = entity.for_next(&policy).expect("rebuilds");
                let player = player.for_next(&policy).expect("rebuilds");
                (entity, player)
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

// criterion_group! makes an undocumented `pub fn`; a private module keeps it
// out of the missing-docs lint.
mod group {
    criterion::criterion_group!(
        benches,
        super::per_snapshot,
        super::per_entity,
        super::adaptation
    );
}
criterion_main!(group::benches);
