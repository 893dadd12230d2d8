//! CPU per server frame of the snapshot crate: commit the frame, then build
//! and encode every client's snapshot and take its ack — 1, 8 and 64
//! clients seeing 256 entities with Quake 3's `entityState_t` layout, a
//! quarter of them changing per frame (`benches::frame`). Next to it the
//! physical floor: one `memcmp` per client and entity of the same bytes.
//! Target: at most 0.5 ms per frame at 64 clients.
//!
//! With adapting models (`snapshot::adapt`, `AdaptPolicy::LIVE`): the same
//! frames, each message's symbols tallied on the frame path, and what a
//! chain's rebuild costs (on a background thread): one model rebuilt from
//! 128 messages' symbols.

use std::hint::black_box;

use benches::frame::{memcmp_floor, FrameBench};
use criterion::{criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use fields::model::{AdaptPolicy, Adaptation};
use fields::{Codec, Fields};
use q3::EntityState;

const ENTITIES: u32 = 256;
const CLIENTS: [usize; 3] = [1, 8, 64];

fn server_frame(c: &mut Criterion) {
    let mut group = c.benchmark_group("server_frame_256");
    for codec in [Codec::Q3, Codec::Native] {
        for clients in CLIENTS {
            let mut bench = FrameBench::new(codec, clients, ENTITIES).expect("server starts");
            group.throughput(Throughput::Elements(clients as u64));
            group.bench_function(BenchmarkId::new(codec.name(), clients), |b| {
                b.iter(|| bench.frame().expect("frame"))
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("memcmp_floor_256");
    let world = FrameBench::new(Codec::Native, 1, ENTITIES).expect("server starts");
    let (base, current) = world.entity_images();
    let entity_bytes = base.len() / ENTITIES as usize;
    assert_eq!(entity_bytes, 4 * word_count());
    for clients in CLIENTS {
        group.throughput(Throughput::Elements(clients as u64));
        group.bench_function(BenchmarkId::new("memcmp", clients), |b| {
            b.iter(|| memcmp_floor(black_box(&current), &base, entity_bytes, clients))
        });
    }
    group.finish();
}

fn adaptation(c: &mut Criterion) {
    let mut group = c.benchmark_group("server_frame_256_adapting");
    for clients in [8, 64] {
        let mut bench =
            FrameBench::with_adaptation(Codec::Native, clients, ENTITIES, Some(AdaptPolicy::LIVE))
                .expect("server starts");
        group.throughput(Throughput::Elements(clients as u64));
        group.bench_function(BenchmarkId::new("native", clients), |b| {
            b.iter(|| bench.frame().expect("frame"))
        });
        eprintln!(
            "server_frame_256_adapting/native/{clients}: {} snapshots waited for a rebuild",
            bench.adapt_waits()
        );
    }
    group.finish();

    let mut group = c.benchmark_group("adapt_rebuild");
    let bench = FrameBench::new(Codec::Native, 1, ENTITIES).expect("server starts");
    let tallies = bench.chain_tallies();
    let model = EntityState::default()
        .native_model()
        .expect("Quake 3's entity model is committed");
    let policy = AdaptPolicy::DEFAULT;
    group.bench_function(BenchmarkId::new("q3_entity", tallies.len()), |b| {
        b.iter_batched(
            || {
                let mut state = Adaptation::new(model.clone());
                for tally in &tallies {
                    state = state
                        .for_next(&policy)
                        .expect("no rebuild yet")
                        .after(tally);
                }
                state
            },
            |state| state.for_next(&policy).expect("rebuilt"),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// Words of one entity state.
fn word_count() -> usize {
    use fields::NetFields;
    EntityState::TABLE
        .fields
        .iter()
        .map(|f| f.kind.elements())
        .sum()
}

// criterion_group! makes an undocumented `pub fn`; a private module keeps it
// out of the missing-docs lint.
mod group {
    criterion::criterion_group!(benches, super::server_frame, super::adaptation);
}
criterion_main!(group::benches);
