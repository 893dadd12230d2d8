//! CPU per server frame: step the world, commit the frame, build and
//! encode every client's snapshot, and take their acks — for 1, 8 and 64
//! clients seeing all 256 entities of a Quake-3-shaped world. Also the
//! client's cost to decode one snapshot.
//!
//! Bytes per snapshot and history memory are printed by
//! `cargo run --release -p snapshot --example history`.
// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use fields::Codec;
use snapshot::{AllInScope, BuildOutcome, Client, ClientId, ClientSettings, Server, ServerConfig};

mod support;
use support::q3world::{populate, step, Activity, EntityState, Noise, PlayerState};

/// A server with `clients` clients that has run long enough to be in
/// steady state (rings full, every client on delta snapshots).
struct Bench {
    server: Server<EntityState, PlayerState>,
    clients: Vec<ClientId>,
    noise: Noise,
    frame: u32,
    bytes: Vec<u8>,
    activity: Activity,
}

impl Bench {
    fn new(codec: Codec, clients: usize, activity: Activity) -> Self {
        let config = ServerConfig::for_codec(codec);
        let mut server = Server::new(config).expect("valid config");
        let mut noise = Noise::new(0x0051_7e5e);
        populate(&mut server, &mut noise);
        let clients = (0..clients)
            .map(|_| {
                server
                    .add_client(ClientSettings::unlimited())
                    .expect("client")
            })
            .collect();
        let mut bench = Bench {
            server,
            clients,
            noise,
            frame: 0,
            bytes: Vec::with_capacity(16 * 1024),
            activity,
        };
        for _ in 0..40 {
            bench.frame();
        }
        bench
    }

    /// One server frame. About one ack in twenty is lost, so some clients
    /// are a frame behind and need a different delta.
    fn frame(&mut self) -> usize {
        step(
            &mut self.server,
            &self.clients,
            &mut self.noise,
            self.frame,
            self.activity,
        );
        self.server
            .commit_frame(self.frame * 50)
            .expect("time moves forward");
        let mut total = 0;
        for &id in &self.clients {
            let outcome = self
                .server
                .build_snapshot(id, &mut AllInScope, &mut self.bytes)
                .expect("snapshot builds");
            if let BuildOutcome::Built(info) = outcome {
                total += info.bytes;
                if self.noise.below(20) != 0 {
                    self.server
                        .acknowledge(id, info.sequence)
                        .expect("client exists");
                }
            }
        }
        self.frame += 1;
        total
    }
}

fn server_frame(c: &mut Criterion) {
    for activity in [Activity::Deathmatch, Activity::Busy] {
        let mut group = c.benchmark_group(format!("server_frame/{activity:?}"));
        for codec in [Codec::Q3, Codec::Native] {
            for clients in [1usize, 8, 64] {
                let mut bench = Bench::new(codec, clients, activity);
                group.throughput(Throughput::Elements(clients as u64));
                group.bench_function(BenchmarkId::new(codec.name(), clients), |b| {
                    b.iter(|| bench.frame())
                });
            }
        }
        group.finish();
    }
}

fn client_decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("client_decode");
    for codec in [Codec::Q3, Codec::Native] {
        let mut bench = Bench::new(codec, 1, Activity::Deathmatch);
        let id = bench.clients[0];
        let mut gamestate = Vec::new();
        bench
            .server
            .write_gamestate(&mut gamestate)
            .expect("gamestate encodes");
        // Record a full update and the delta after it.
        bench.server.request_full_update(id).expect("client exists");
        bench.frame();
        let full = bench.bytes.clone();
        step(
            &mut bench.server,
            &bench.clients,
            &mut bench.noise,
            bench.frame,
            bench.activity,
        );
        bench.server.commit_frame(bench.frame * 50).expect("time");
        bench
            .server
            .build_snapshot(id, &mut AllInScope, &mut bench.bytes)
            .expect("snapshot builds");
        let delta = bench.bytes.clone();
        let mut client: Client<EntityState, PlayerState> = Client::new();
        client.read_message(&gamestate).expect("gamestate decodes");
        client.read_message(&full).expect("full update decodes");
        // Each iteration decodes into its own copy of the client; the copy
        // is made outside the timed part.
        let mut empty = client.clone();
        empty.clear_snapshots();
        group.bench_function(BenchmarkId::new("full_256", codec.name()), |b| {
            b.iter_batched(
                || empty.clone(),
                |mut fresh| fresh.read_message(&full).expect("decodes"),
                BatchSize::LargeInput,
            )
        });
        group.bench_function(BenchmarkId::new("delta", codec.name()), |b| {
            b.iter_batched(
                || client.clone(),
                |mut probe| probe.read_message(&delta).expect("decodes"),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, server_frame, client_decode);
criterion_main!(benches);
