//! Scoping, priority under a budget, and rate control.

mod common;

use common::*;
use fields::Codec;
use netq3_snapshot::{
    BuildOutcome, Client, ClientId, ClientSettings, Received, Server, ServerConfig, UpdateKind,
};

fn server(codec: Codec, entities: u32) -> Server<Ent, Player> {
    let mut server: Server<Ent, Player> = Server::new(ServerConfig::for_codec(codec)).unwrap();
    for number in 0..entities {
        server
            .set_entity(
                number,
                Ent {
                    x: number as f32 * 100.0,
                    y: 12.5,
                    z: -3.75,
                    health: 100,
                    model: number as u16 % 512,
                    flags: 0xABCDE,
                    angle: 45.0,
                    firing: true,
                },
            )
            .unwrap();
    }
    server
}

#[test]
fn entities_enter_and_leave_the_view_with_the_scope() {
    for codec in CODECS {
        let mut server = server(codec, 10);
        server.set_always_in_scope(9, true).unwrap();
        let id = server.add_client(ClientSettings::unlimited()).unwrap();
        let mut client: Client<Ent, Player> = Client::new();
        client.set_trace(true);
        connect(&mut server, &mut client);
        let mut bytes = Vec::new();
        // Sees entities within 250 units of its x; entity 9 always.
        let mut near = |_: ClientId, p: &Player, _: u32, e: &Ent| {
            ((e.x - p.origin[0]).abs() <= 250.0).then_some(1.0)
        };
        let mut views = Vec::new();
        for (frame, x) in [0.0, 0.0, 500.0, 500.0].into_iter().enumerate() {
            server.player_state_mut(id).unwrap().origin[0] = x;
            server.commit_frame(frame as u32 * 50).unwrap();
            let BuildOutcome::Built(info) =
                server.build_snapshot(id, &mut near, &mut bytes).unwrap()
            else {
                panic!()
            };
            client.read_snapshot(info.sequence, &bytes).unwrap();
            server.acknowledge(id, info.sequence).unwrap();
            assert_matches_record(&server, id, &client);
            let numbers: Vec<u32> = client
                .newest()
                .unwrap()
                .entities()
                .map(|(n, _)| n)
                .collect();
            views.push((
                numbers,
                client.entered().to_vec(),
                client.left().to_vec(),
                client.trace().unwrap().entities.len(),
            ));
        }
        assert_eq!(views[0], (vec![0, 1, 2, 9], vec![0, 1, 2, 9], vec![], 4));
        // Nothing changed: nothing written.
        assert_eq!(views[1], (vec![0, 1, 2, 9], vec![], vec![], 0));
        assert_eq!(
            views[2],
            (
                vec![3, 4, 5, 6, 7, 9],
                vec![3, 4, 5, 6, 7],
                vec![0, 1, 2],
                8
            )
        );
        let trace = client.trace().unwrap();
        assert!(trace.entities.is_empty());
        assert_eq!(views[3].0, vec![3, 4, 5, 6, 7, 9]);
        // Removals were written as such.
        server.player_state_mut(id).unwrap().origin[0] = 900.0;
        server.commit_frame(1000).unwrap();
        let BuildOutcome::Built(info) = server.build_snapshot(id, &mut near, &mut bytes).unwrap()
        else {
            panic!()
        };
        client.read_snapshot(info.sequence, &bytes).unwrap();
        let kinds: Vec<_> = client
            .trace()
            .unwrap()
            .entities
            .iter()
            .map(|e| (e.number, e.kind))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (3, UpdateKind::Removed),
                (4, UpdateKind::Removed),
                (5, UpdateKind::Removed),
                (6, UpdateKind::Removed),
                (8, UpdateKind::Added),
            ]
        );
    }
}

#[test]
fn a_short_budget_sends_by_priority_and_starves_nothing() {
    for codec in CODECS {
        let mut server = server(codec, 120);
        let settings = ClientSettings {
            max_snapshot_bytes: 200,
            ..ClientSettings::unlimited()
        };
        let id = server.add_client(settings).unwrap();
        let mut client: Client<Ent, Player> = Client::new();
        connect(&mut server, &mut client);
        let mut bytes = Vec::new();
        // Priority falls with the number: entity 0 matters most.
        let mut by_number = |_: ClientId, _: &Player, n: u32, _: &Ent| Some(1000.0 - n as f32);

        server.commit_frame(0).unwrap();
        let BuildOutcome::Built(first) = server
            .build_snapshot(id, &mut by_number, &mut bytes)
            .unwrap()
        else {
            panic!()
        };
        assert!(bytes.len() <= 200);
        assert!(first.entities_deferred > 0);
        client.read_snapshot(first.sequence, &bytes).unwrap();
        server.acknowledge(id, first.sequence).unwrap();
        assert_matches_record(&server, id, &client);
        let held: Vec<u32> = client
            .newest()
            .unwrap()
            .entities()
            .map(|(n, _)| n)
            .collect();
        // The most important entities went first.
        assert_eq!(held, (0..held.len() as u32).collect::<Vec<_>>());

        // Entities keep arriving, each snapshot within the budget, until all are held.
        let mut frames = 1;
        while client.newest().unwrap().len() < 120 {
            server.commit_frame(frames * 50).unwrap();
            let BuildOutcome::Built(info) = server
                .build_snapshot(id, &mut by_number, &mut bytes)
                .unwrap()
            else {
                panic!()
            };
            assert!(bytes.len() <= 200, "{} bytes", bytes.len());
            client.read_snapshot(info.sequence, &bytes).unwrap();
            server.acknowledge(id, info.sequence).unwrap();
            assert_matches_record(&server, id, &client);
            frames += 1;
            assert!(frames < 200, "starved");
        }
        let stats = server.stats(id).unwrap();
        assert!(stats.budget_limited > 0);
        assert_eq!(stats.snapshots, frames as u64);
    }
}

#[test]
fn deferred_changes_keep_the_clients_old_state_in_the_record() {
    for codec in CODECS {
        let mut server = server(codec, 60);
        let settings = ClientSettings {
            max_snapshot_bytes: 180,
            ..ClientSettings::unlimited()
        };
        let id = server.add_client(settings).unwrap();
        let mut client: Client<Ent, Player> = Client::new();
        connect(&mut server, &mut client);
        let mut bytes = Vec::new();
        let mut frame = 0;
        // Let the client catch up with the whole world first.
        loop {
            server.commit_frame(frame * 50).unwrap();
            let info = build(&mut server, id, &mut bytes);
            client.read_snapshot(info.sequence, &bytes).unwrap();
            server.acknowledge(id, info.sequence).unwrap();
            frame += 1;
            if client.newest().unwrap().len() == 60 && info.entities_deferred == 0 {
                break;
            }
        }
        // Now everything changes at once; the budget holds some changes
        // back, and the client must hold the old state of those.
        for number in 0..60 {
            let entity = server.entity_mut(number).unwrap();
            entity.health -= 10;
            entity.x += 0.5;
            entity.flags ^= 0x5A5A5A;
        }
        server.commit_frame(frame * 50).unwrap();
        let info = build(&mut server, id, &mut bytes);
        assert!(info.entities_deferred > 0);
        client.read_snapshot(info.sequence, &bytes).unwrap();
        assert_matches_record(&server, id, &client);
        let held = client.newest().unwrap();
        let stale = held.entities().filter(|(_, e)| e.health == 100).count();
        assert_eq!(stale, info.entities_deferred as usize);
        // A delta from this snapshot starts from those old states.
        server.acknowledge(id, info.sequence).unwrap();
        server.commit_frame(frame * 50 + 50).unwrap();
        let next = build(&mut server, id, &mut bytes);
        client.read_snapshot(next.sequence, &bytes).unwrap();
        assert_matches_record(&server, id, &client);
    }
}

#[test]
fn snapshot_rate_spaces_snapshots_over_server_frames() {
    let mut server = server(Codec::Native, 4);
    let settings = ClientSettings {
        snapshot_rate: 20,
        byte_rate: 0,
        ..ClientSettings::default()
    };
    let id = server.add_client(settings).unwrap();
    let mut bytes = Vec::new();
    let mut built = 0;
    let mut not_due = 0;
    // 60 Hz for one second.
    for frame in 0..60u32 {
        server.commit_frame(frame * 1000 / 60).unwrap();
        match server
            .build_snapshot(id, &mut netq3_snapshot::AllInScope, &mut bytes)
            .unwrap()
        {
            BuildOutcome::Built(_) => built += 1,
            BuildOutcome::NotDue => not_due += 1,
            BuildOutcome::RateDelayed => panic!("no byte rate"),
        }
    }
    assert_eq!((built, not_due), (20, 40));
}

#[test]
fn a_client_over_its_byte_rate_is_delayed_and_told_so() {
    for codec in CODECS {
        let mut server = server(codec, 30);
        // 20 snapshots/s but only 400 bytes/s, 20 bytes a snapshot: the
        // full update and the deltas after it (about 30 bytes each, as
        // entities keep changing) overdraw the bucket, so due snapshots wait.
        let settings = ClientSettings {
            snapshot_rate: 20,
            byte_rate: 400,
            burst_bytes: 100,
            max_snapshot_bytes: 200,
            auto_ack: false,
        };
        let id = server.add_client(settings).unwrap();
        let mut client: Client<Ent, Player> = Client::new();
        connect(&mut server, &mut client);
        let mut bytes = Vec::new();
        let mut outcomes = Vec::new();
        for frame in 0..40u32 {
            server.entity_mut(frame % 30).unwrap().x += 1.0;
            server.commit_frame(frame * 50).unwrap();
            let outcome = server
                .build_snapshot(id, &mut netq3_snapshot::AllInScope, &mut bytes)
                .unwrap();
            if let BuildOutcome::Built(info) = outcome {
                let Received::Snapshot(_) = client.read_snapshot(info.sequence, &bytes).unwrap()
                else {
                    panic!()
                };
                assert_eq!(client.newest().unwrap().rate_delayed(), info.rate_delayed);
                server.acknowledge(id, info.sequence).unwrap();
                assert_matches_record(&server, id, &client);
            }
            outcomes.push(outcome);
        }
        let delayed = outcomes
            .iter()
            .filter(|o| matches!(o, BuildOutcome::RateDelayed))
            .count();
        assert!(delayed > 0, "{outcomes:?}");
        // Every snapshot after a delay says so.
        for pair in outcomes.windows(2) {
            if let [BuildOutcome::RateDelayed, BuildOutcome::Built(info)] = pair {
                assert!(info.rate_delayed);
            }
        }
        let stats = server.stats(id).unwrap();
        assert_eq!(stats.rate_delayed, delayed as u64);
        assert!(client.stats().rate_delayed > 0);
        // Over the run the bytes sent stay near the rate: 2 s at 400 B/s
        // plus the 100-byte burst, give or take one overdrawn message.
        assert!(stats.bytes <= 2 * 400 + 100 + 200, "{stats:?}");
    }
}

/// A scope that answers for every entity at once must build exactly the
/// snapshots the same answer given per entity builds: same bytes, with
/// always-in-scope entities, a budget that defers entities by priority,
/// lost acknowledgements and entities that leave.
#[test]
fn a_uniform_answer_builds_the_snapshots_per_entity_answers_build() {
    for codec in CODECS {
        let mut servers = [server(codec, 40), server(codec, 40)];
        let settings = [
            ClientSettings::unlimited(),
            ClientSettings {
                max_snapshot_bytes: 180,
                ..ClientSettings::unlimited()
            },
        ];
        let mut ids = Vec::new();
        for server in &mut servers {
            server.set_always_in_scope(7, true).unwrap();
            server.set_always_in_scope(33, true).unwrap();
            ids = settings
                .iter()
                .map(|s| server.add_client(*s).unwrap())
                .collect();
        }
        let mut rng = Rng::new(0x5c0fe);
        let (mut uniform_bytes, mut asked_bytes) = (Vec::new(), Vec::new());
        let mut deferred = 0;
        for frame in 0..40u32 {
            // The same changes on both servers.
            let moves: Vec<(u32, f32)> = (0..6)
                .map(|_| (rng.below(40) as u32, rng.range(-500, 500) as f32))
                .collect();
            let gone = (frame % 9 == 4).then(|| rng.below(40) as u32);
            for server in &mut servers {
                for &(number, x) in &moves {
                    if let Some(entity) = server.entity_mut(number) {
                        entity.x = x;
                    }
                }
                if let Some(number) = gone {
                    let _ = server.remove_entity(number);
                }
                server.commit_frame(frame * 50).unwrap();
            }
            for &id in &ids {
                let uniform = servers[0]
                    .build_snapshot(id, &mut netq3_snapshot::AllInScope, &mut uniform_bytes)
                    .unwrap();
                let mut per_entity = |_: ClientId, _: &Player, _: u32, _: &Ent| Some(1.0);
                let asked = servers[1]
                    .build_snapshot(id, &mut per_entity, &mut asked_bytes)
                    .unwrap();
                assert_eq!(uniform, asked, "{codec:?} frame {frame}");
                assert_eq!(uniform_bytes, asked_bytes, "{codec:?} frame {frame}");
                if let BuildOutcome::Built(info) = uniform {
                    deferred += info.entities_deferred;
                    if rng.below(5) != 0 {
                        servers[0].acknowledge(id, info.sequence).unwrap();
                        servers[1].acknowledge(id, info.sequence).unwrap();
                    }
                }
            }
        }
        // The budget really deferred entities by priority.
        assert!(deferred > 0, "{codec:?}: nothing was deferred");
    }
}
