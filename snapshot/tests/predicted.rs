//! Snapshots whose entity type has a trained native model with a predictor
//! on the snapshot's elapsed time: deltas against different bases (so
//! different elapsed times) must each decode to exactly what was sent, even
//! when the server shares encodings between clients.

use std::sync::{Arc, OnceLock};

use fields::model::{Clock, ModelTrainer, NativeModel, Predictor};
use fields::{net_struct, q3_float, unsigned, Codec, DeltaContext, NetFields};
use netq3_snapshot::{
    AllInScope, BuildOutcome, Client, ClientSettings, Received, Server, ServerConfig,
};

net_struct! {
    /// A projectile: a position that moves at its velocity.
    pub struct Shot {
        /// Position.
        pub x: f32 = q3_float(),
        /// Velocity, units per second.
        pub vx: f32 = q3_float(),
        /// Projectile type.
        pub kind: u8 = unsigned(4),
    }
    native_model = Some(model());
}

net_struct! {
    /// The watching player.
    pub struct Watcher {
        /// Points.
        pub score: u16 = unsigned(12),
    }
}

/// Positions after `frame` 50 ms frames, for entity `n`.
fn shot(n: u32, frame: u32) -> Shot {
    let vx = 100.0 + 37.0 * n as f32 + (frame / 17) as f32 * 3.0;
    Shot {
        x: 0.37 * n as f32 + vx * frame as f32 * 0.05,
        vx,
        kind: (n % 5) as u8,
    }
}

fn model() -> &'static Arc<NativeModel> {
    static MODEL: OnceLock<Arc<NativeModel>> = OnceLock::new();
    MODEL.get_or_init(|| {
        let schema = Shot::TABLE.schema();
        let mut trainer = ModelTrainer::new(schema.fingerprint(), schema.fields.len())
            .with_predictor(
                0,
                Predictor::Integrate {
                    rate: 1,
                    clock: Clock::Elapsed,
                },
            );
        for n in 0..8 {
            for frame in 0..200 {
                trainer.learn_grids(&shot(n, frame));
            }
        }
        trainer.freeze_grids();
        for n in 0..8 {
            for frame in 1..200 {
                for lag in 1..4 {
                    if frame >= lag {
                        let context = DeltaContext {
                            elapsed_ms: 50 * lag as i32,
                            ..DeltaContext::default()
                        };
                        trainer.observe(&shot(n, frame - lag), &shot(n, frame), &context);
                    }
                }
            }
        }
        Arc::new(NativeModel::new(trainer.finish()).unwrap())
    })
}

#[test]
fn predicted_deltas_decode_exactly_for_clients_with_different_bases() {
    let mut server: Server<Shot, Watcher> =
        Server::new(ServerConfig::for_codec(Codec::Native)).unwrap();
    // Client `lag` acknowledges snapshots `lag` frames late.
    let lags = [1u32, 1, 2, 3];
    let ids: Vec<_> = lags
        .iter()
        .map(|_| server.add_client(ClientSettings::unlimited()).unwrap())
        .collect();
    let mut clients: Vec<Client<Shot, Watcher>> = lags.iter().map(|_| Client::new()).collect();
    let mut bytes = Vec::new();
    server.write_gamestate(&mut bytes).unwrap();
    for client in &mut clients {
        client.read_message(&bytes).unwrap();
    }
    let mut pending: Vec<Vec<(u32, u32)>> = vec![Vec::new(); lags.len()];
    let mut delta_bytes = 0usize;
    let mut deltas = 0usize;
    for frame in 0..120u32 {
        for n in 0..8 {
            server.set_entity(n, shot(n, frame)).unwrap();
        }
        server.commit_frame(frame * 50).unwrap();
        for (k, &id) in ids.iter().enumerate() {
            let BuildOutcome::Built(info) = server
                .build_snapshot(id, &mut AllInScope, &mut bytes)
                .unwrap()
            else {
                panic!("unlimited clients get every frame");
            };
            let Received::Snapshot(report) =
                clients[k].read_snapshot(info.sequence, &bytes).unwrap()
            else {
                panic!("expected a snapshot");
            };
            assert_eq!(report.sequence, info.sequence);
            if info.base.is_some() {
                delta_bytes += bytes.len();
                deltas += 1;
            }
            let held = clients[k].newest().unwrap();
            let sent = server.sent_snapshot(id, info.sequence).unwrap();
            assert_eq!(held.entities().len(), 8);
            for ((n, got), (m, want)) in held.entities().zip(sent.entities()) {
                assert_eq!(n, m);
                assert_eq!(
                    got.x.to_bits(),
                    want.x.to_bits(),
                    "client {k} frame {frame} entity {n}"
                );
                assert_eq!(got, want);
            }
            pending[k].push((frame + lags[k], info.sequence));
            while pending[k].first().is_some_and(|&(due, _)| due <= frame) {
                let (_, sequence) = pending[k].remove(0);
                server.acknowledge(id, sequence).unwrap();
            }
        }
    }
    // The predictor makes steady motion cheap: a handful of bytes per delta.
    let mean = delta_bytes as f64 / deltas as f64;
    assert!(mean < 60.0, "mean delta {mean:.1} bytes");
}
