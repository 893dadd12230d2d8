//! Encode and decode time of both codecs on the real duel demo's state
//! sequence (`dm_68_osp_duel_2.dm_68`, about 17,700 snapshots, loaded once):
//!
//! * per snapshot — the snapshot engine's own messages (`snapshot::Server`
//!   writing, `snapshot::Client` reading; q3 in Quake 3's `svc_snapshot`
//!   framing, native in the engine's compact one), each against the base
//!   the recording used, cycling through the sequence so the time is the
//!   sequence's mean. Encoding includes setting the snapshot's world in
//!   the server (entities, player state, frame commit), as a server does
//!   before it builds;
//! * per entity — each changed or added entity update on its own;
//! * adapting models (`fields::model::Adaptation`) — tallying one
//!   message's symbols, and rebuilding both of Quake 3's models from a
//!   chain of the duel's first 128 messages (`AdaptPolicy::DEFAULT`).
//!
//! q3 runs through Quake 3's Huffman code as Quake 3 does; native is raw
//! bits (the native codec codes its symbols with its models' codes).

use std::hint::black_box;
use std::sync::Arc;

use benches::deltas::MessageTally;
use std::time::{Duration, Instant};

use benches::corpus::{
    decode_entity, duel_steps, encode_entity, engine_encoder, engine_stream, entity_cases,
    q3_zeros, Encoded,
};
use benches::encode::Breakdown;
use benches::encode::Encoder;
use criterion::{criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use fields::model::{AdaptPolicy, Adaptation};
use fields::Codec;

const CODECS: [(&str, Codec); 2] = [("q3", Codec::Q3), ("native", Codec::Native)];

fn per_snapshot(c: &mut Criterion) {
    let steps = duel_steps().expect("the duel demo decodes");
    let zeros = q3_zeros();
    let mut breakdown = Breakdown::default();

    // The engine's server sending the duel to one client: each snapshot's
    // entities and player state set, its frame committed, its message
    // built (not read back). At the end of the demo a fresh server starts
    // over, outside the timing.
    let mut group = c.benchmark_group("snapshot_encode");
    group.throughput(Throughput::Elements(1));
    for (name, codec) in CODECS {
        let fresh = || engine_encoder(codec).unverified();
        let mut encoder = fresh();
        let mut i = 0;
        group.bench_function(BenchmarkId::new("duel", name), |b| {
            b.iter_custom(|iters| {
                let mut time = Duration::ZERO;
                for _ in 0..iters {
                    if i == steps.len() {
                        encoder = fresh();
                        i = 0;
                    }
                    let step = steps[i].step();
                    let start = Instant::now();
                    black_box(
                        encoder
                            .encode(black_box(&step), &zeros, &mut breakdown)
                            .expect("encodes"),
                    );
                    time += start.elapsed();
                    i += 1;
                }
                time
            })
        });
    }
    group.finish();

    // The engine's client reading those messages in order, each against
    // the base it names from its own ring. At the end a client that has
    // read only the gamestate starts over, outside the timing.
    let mut group = c.benchmark_group("snapshot_decode");
    group.throughput(Throughput::Elements(1));
    for (name, codec) in CODECS {
        let recording = engine_stream(codec, &steps).expect("encodes");
        let start_client = recording.reader(&zeros).expect("the gamestate decodes");
        let mut client = start_client.clone();
        let mut i = 0;
        group.bench_function(BenchmarkId::new("duel", name), |b| {
            b.iter_custom(|iters| {
                let mut time = Duration::ZERO;
                for _ in 0..iters {
                    if i == recording.messages.len() {
                        client = start_client.clone();
                        i = 0;
                    }
                    let start = Instant::now();
                    recording
                        .decode(black_box(&mut client), i)
                        .expect("decodes");
                    time += start.elapsed();
                    i += 1;
                }
                time
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
