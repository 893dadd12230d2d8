//! CPU per server frame of the snapshot crate: commit the frame, then build
//! and encode every client's snapshot and take its ack — 1, 8 and 64
//! clients seeing 256 entities with Quake 3's `entityState_t` layout, a
//! quarter of them changing per frame (`benches::frame`). Next to it the
//! physical floor: one `memcmp` per client and entity of the same bytes.
//! Target: at most 0.5 ms per frame at 64 clients.

use std::hint::black_box;

use benches::frame::{memcmp_floor, FrameBench};
use criterion::{criterion_main, BenchmarkId, Criterion, Throughput};
use fields::Codec;
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
    criterion::criterion_group!(benches, super::server_frame);
}
criterion_main!(group::benches);
