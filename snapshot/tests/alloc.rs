//! The hot paths allocate nothing in steady state: committing a frame,
//! building every client's snapshot (including the budget path), taking
//! acks, and decoding on the client.
//!
//! The world here is periodic (moves, deaths, number reuse and lost acks
//! repeat every 20 frames), so once warmed up buffers stop meeting new
//! peaks. The warm-up is long because the budget-limited client's deferred
//! set drifts with its accumulated priorities, and each of its 33 ring
//! records grows its override list (by doubling, so a handful of times at
//! most) the first time it holds a new maximum. After that, any allocation
//! counted would be one made every frame.

mod common;

use common::*;
use netq3_snapshot::{AllInScope, BuildOutcome, Client, ClientSettings, Server, ServerConfig};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

#[test]
fn steady_state_frames_do_not_allocate() {
    let _profiler = dhat::Profiler::builder().testing().build();
    for codec in CODECS {
        let mut server: Server<Ent, Player> = Server::new(ServerConfig::for_codec(codec)).unwrap();
        for number in 0..60 {
            let ent = Ent {
                x: number as f32 * 8.0,
                model: number as u16,
                ..Ent::default()
            };
            server.set_entity(number, ent).unwrap();
        }
        let tight = ClientSettings {
            max_snapshot_bytes: 120,
            ..ClientSettings::unlimited()
        };
        let settings = [
            ClientSettings::unlimited(),
            ClientSettings::unlimited(),
            tight,
        ];
        let ids: Vec<_> = settings
            .iter()
            .map(|s| server.add_client(*s).unwrap())
            .collect();
        let mut client: Client<Ent, Player> = Client::new();
        connect(&mut server, &mut client);
        let mut bytes = Vec::with_capacity(16 * 1024);
        let mut frame = |server: &mut Server<Ent, Player>,
                         client: &mut Client<Ent, Player>,
                         n: u32| {
            for number in 0..60 {
                if let Some(entity) = server.entity_mut(number).filter(|_| (number + n) % 3 == 0) {
                    entity.x = ((n + number) % 20) as f32;
                }
            }
            // Numbers die and are reused.
            let number = 50 + n % 10;
            if server.remove_entity(number).is_none() {
                server.set_entity(number, Ent::default()).unwrap();
            }
            server.commit_frame(n * 50).unwrap();
            for (index, &id) in ids.iter().enumerate() {
                let BuildOutcome::Built(info) = server
                    .build_snapshot(id, &mut AllInScope, &mut bytes)
                    .unwrap()
                else {
                    panic!()
                };
                if index == 0 {
                    client.read_snapshot(info.sequence, &bytes).unwrap();
                }
                if (n + index as u32) % 10 != 0 {
                    server.acknowledge(id, info.sequence).unwrap();
                }
            }
        };
        for n in 0..2000 {
            frame(&mut server, &mut client, n);
        }
        let before = dhat::HeapStats::get();
        for n in 2000..2300 {
            frame(&mut server, &mut client, n);
        }
        let after = dhat::HeapStats::get();
        assert_eq!(
            after.total_blocks,
            before.total_blocks,
            "{codec:?}: {} allocations in 300 steady-state frames",
            after.total_blocks - before.total_blocks
        );
        assert!(server.stats(ids[2]).unwrap().budget_limited > 0);
    }
}
