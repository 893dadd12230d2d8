//! The seed example: a full update, a one-field delta after an ack, and a
//! delta that repairs a lost snapshot by carrying both changes.

mod common;

use common::*;
use fields::Codec;
use netq3_snapshot::{
    Client, ClientSettings, FieldMask, Received, Server, ServerConfig, SyncCheck, UpdateKind,
};

fn fields(names: &[&str]) -> FieldMask {
    names.iter().map(|name| field(name)).collect()
}

#[test]
fn three_frames_carry_exactly_the_fields_the_client_is_missing() {
    for codec in CODECS {
        let config = ServerConfig {
            checksum_interval: 0,
            ..ServerConfig::for_codec(codec)
        };
        let mut server: Server<Ent, Player> = Server::new(config).unwrap();
        let id = server.add_client(ClientSettings::unlimited()).unwrap();
        let mut client: Client<Ent, Player> = Client::new();
        client.set_trace(true);
        connect(&mut server, &mut client);
        let mut bytes = Vec::new();

        // Frame 1: the entity appears; no ack yet, so a full update from the dummy.
        server
            .set_entity(
                5,
                Ent {
                    x: 10.0,
                    y: 20.0,
                    health: 100,
                    model: 7,
                    ..Ent::default()
                },
            )
            .unwrap();
        server.commit_frame(0).unwrap();
        let first = build(&mut server, id, &mut bytes);
        assert_eq!(first.base, None);
        let Received::Snapshot(report) = client.read_snapshot(first.sequence, &bytes).unwrap()
        else {
            panic!("expected a snapshot")
        };
        assert_eq!(report.sequence, first.sequence);
        assert_eq!(report.entered, 1);
        let trace = client.trace().unwrap();
        assert_eq!(trace.base, None);
        assert_eq!(trace.entities.len(), 1);
        assert_eq!(trace.entities[0].number, 5);
        assert_eq!(trace.entities[0].kind, UpdateKind::Added);
        // Every field whose word is not zero: the four set, and the angle,
        // whose 0.0 is the middle step (word 2048) of its quantized range.
        assert_eq!(
            trace.entities[0].fields,
            fields(&["x", "y", "health", "model", "angle"])
        );
        assert!(trace.player_fields.is_empty());
        assert!(server.acknowledge(id, client.ack().unwrap()).unwrap());

        // Frame 2: one field changes; the delta is against frame 1 and carries only it.
        server.entity_mut(5).unwrap().x = 11.0;
        server.commit_frame(50).unwrap();
        let second = build(&mut server, id, &mut bytes);
        assert_eq!(second.base, Some(first.sequence));
        client.read_snapshot(second.sequence, &bytes).unwrap();
        let trace = client.trace().unwrap().clone();
        assert_eq!(trace.base, Some(first.sequence));
        assert_eq!(trace.entities.len(), 1);
        assert_eq!(trace.entities[0].kind, UpdateKind::Changed);
        assert_eq!(trace.entities[0].fields, fields(&["x"]));
        assert!(trace.player_fields.is_empty());
        let second_bits = trace.bits;
        // The client's ack for frame 2 is lost: the server is not told.

        // Frame 3: another field changes; still a delta against frame 1, so
        // it carries the old change (x) and the new one (y) together.
        server.entity_mut(5).unwrap().y = 21.0;
        server.commit_frame(100).unwrap();
        let third = build(&mut server, id, &mut bytes);
        assert_eq!(third.base, Some(first.sequence));
        client.read_snapshot(third.sequence, &bytes).unwrap();
        let trace = client.trace().unwrap().clone();
        assert_eq!(trace.base, Some(first.sequence));
        assert_eq!(trace.entities.len(), 1);
        assert_eq!(trace.entities[0].kind, UpdateKind::Changed);
        assert_eq!(trace.entities[0].fields, fields(&["x", "y"]));
        let newest = client.newest().unwrap();
        assert_eq!(
            (newest.entity(5).unwrap().x, newest.entity(5).unwrap().y),
            (11.0, 21.0)
        );
        assert_matches_record(&server, id, &client);

        if codec == Codec::Q3 {
            // Quake 3's layout, bit for bit, after the compact header
            // (`netq3_snapshot::framing::Compact`): the second snapshot is
            // the first delta, one back (2 bits), one frame (1 bit), and
            // its base, a full update, shows no frame length, so its time
            // is stated (the usual bit, the toggle-only bit, 7 exception
            // flags, 50 ms zigzagged at exp-Golomb order 5: 10 bits); an
            // unchanged player state is `lc` = 0 (8 bits) and "no array
            // changed" (1); the entity is its number (10), not-removed (1),
            // has-delta (1), `lc` (8), then per field up to `lc` a changed
            // bit, a non-zero bit, the integral-float bit and 13 bits; the
            // end marker is 10.
            let field_bits = 1 + 1 + 1 + 13;
            let header = 2 + 2 + 1 + 1 + 1 + 7 + 10;
            assert_eq!(second_bits, header + 9 + (10 + 1 + 1 + 8 + field_bits) + 10);
            // The third: one more field; two back from the same base, 100
            // ms since it, take as many bits as one back and 50 ms did.
            assert_eq!(trace.bits, second_bits + field_bits);
        }
    }
}

#[test]
fn a_changed_player_state_travels_as_its_own_delta() {
    for codec in CODECS {
        let mut server: Server<Ent, Player> = Server::new(ServerConfig::for_codec(codec)).unwrap();
        let id = server.add_client(ClientSettings::unlimited()).unwrap();
        let mut client: Client<Ent, Player> = Client::new();
        client.set_trace(true);
        connect(&mut server, &mut client);
        let mut bytes = Vec::new();
        server.player_state_mut(id).unwrap().health = 100;
        server.commit_frame(0).unwrap();
        let info = build(&mut server, id, &mut bytes);
        let Received::Snapshot(report) = client.read_snapshot(info.sequence, &bytes).unwrap()
        else {
            panic!()
        };
        // The first snapshot to a client carries a sync checksum by default.
        assert_eq!(report.sync, SyncCheck::Matched);
        server.acknowledge(id, client.ack().unwrap()).unwrap();
        server.player_state_mut(id).unwrap().stats[2] = -4;
        server.commit_frame(50).unwrap();
        let info = build(&mut server, id, &mut bytes);
        client.read_snapshot(info.sequence, &bytes).unwrap();
        let stats_field = {
            use fields::NetFields;
            Player::TABLE.field("stats").unwrap().0
        };
        assert_eq!(
            client.trace().unwrap().player_fields,
            [stats_field].into_iter().collect()
        );
        assert_eq!(client.newest().unwrap().player().stats, [0, 0, -4, 0]);
        assert_eq!(client.newest().unwrap().player().health, 100);
    }
}

#[test]
fn a_client_behind_on_acks_gets_the_two_cached_lists_chained() {
    for codec in CODECS {
        let config = ServerConfig {
            checksum_interval: 1,
            ..ServerConfig::for_codec(codec)
        };
        let mut server: Server<Ent, Player> = Server::new(config).unwrap();
        // Client `on_time` acks everything and is built first each frame;
        // client `late`'s ack of frame 2 is lost.
        let on_time = server.add_client(ClientSettings::unlimited()).unwrap();
        let late = server.add_client(ClientSettings::unlimited()).unwrap();
        let mut clients: [Client<Ent, Player>; 2] = [Client::new(), Client::new()];
        for client in &mut clients {
            connect(&mut server, client);
        }
        clients[1].set_trace(true);
        let mut bytes = Vec::new();
        let spawn = |x: f32| Ent {
            x,
            health: 100,
            model: 3,
            ..Ent::default()
        };
        server.set_entity(5, spawn(1.0)).unwrap();
        server.set_entity(9, spawn(2.0)).unwrap();
        let mut infos = Vec::new();
        let mut chained_trace = None;
        for (time, change) in [(0u32, 0), (50, 1), (100, 2), (150, 3)] {
            match change {
                1 => server.entity_mut(5).unwrap().x = 11.0,
                2 => {
                    server.entity_mut(5).unwrap().y = 21.0;
                    server.set_entity(12, spawn(3.0)).unwrap();
                }
                3 => {
                    server.remove_entity(9).expect("entity 9 was set");
                }
                _ => {}
            }
            server.commit_frame(time).unwrap();
            let mut frame = Vec::new();
            for (index, id) in [on_time, late].into_iter().enumerate() {
                let info = build(&mut server, id, &mut bytes);
                let Received::Snapshot(report) =
                    clients[index].read_snapshot(info.sequence, &bytes).unwrap()
                else {
                    panic!("expected a snapshot")
                };
                assert_eq!(report.sync, SyncCheck::Matched, "{codec:?} at {time} ms");
                assert_matches_record(&server, id, &clients[index]);
                if id == late && time == 100 {
                    chained_trace = clients[1].trace().cloned();
                }
                let lost = id == late && time == 50;
                if !lost {
                    server.acknowledge(id, info.sequence).unwrap();
                }
                frame.push(info);
            }
            infos.push(frame);
        }
        // Frame 3 (100 ms): `late` still holds frame 1 as its base, and its
        // snapshot of frame 2 was built from it: the previous frame's list
        // (1 -> 2) and this frame's (2 -> 3, built for `on_time`) go out
        // chained, with no entity encoded for it alone.
        let (on_time_3, late_3) = (infos[2][0], infos[2][1]);
        assert!(!on_time_3.chained);
        assert!(late_3.chained, "{codec:?}");
        assert_eq!(late_3.base, Some(infos[0][1].sequence));
        assert_eq!(late_3.entities_written, 1 + on_time_3.entities_written);
        // The trace shows both lists: entity 5's x (1 -> 2), then its y and
        // the new entity 12 (2 -> 3).
        let trace = chained_trace.expect("traced");
        let numbers: Vec<_> = trace.entities.iter().map(|e| e.number).collect();
        assert_eq!(numbers, [5, 5, 12]);
        assert_eq!(trace.entities[0].fields, fields(&["x"]));
        assert_eq!(trace.entities[1].fields, fields(&["y"]));
        assert_eq!(trace.entities[2].kind, UpdateKind::Added);
        assert_eq!(clients[1].stats().chained, 1);
        // Acked again, `late` is back on plain deltas.
        assert!(!infos[3][1].chained);
        assert_eq!(infos[3][1].base, Some(late_3.sequence));
        assert_eq!(server.stats(late).unwrap().chained, 1);
        let newest = clients[1].newest().unwrap();
        assert!(newest.entity(9).is_none());
        assert_eq!(newest.entity(12).unwrap().x, 3.0);
    }
}
