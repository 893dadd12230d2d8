//! Full-update fallback, client restart, keyframes, and history lifetime.

mod common;

use common::*;
use netq3_snapshot::{
    config::RING_SIZE, Client, ClientError, ClientSettings, Received, Server, ServerConfig,
};

fn world(codec: fields::Codec) -> Server<Ent, Player> {
    let mut server: Server<Ent, Player> = Server::new(ServerConfig::for_codec(codec)).unwrap();
    for number in 0..20 {
        server
            .set_entity(
                number * 3,
                Ent {
                    x: number as f32 * 10.0,
                    model: number as u16,
                    ..Ent::default()
                },
            )
            .unwrap();
    }
    server
}

fn step(server: &mut Server<Ent, Player>, time: u32) {
    for number in (0..20).map(|n| n * 3) {
        if let Some(entity) = server.entity_mut(number) {
            entity.x += 1.0;
        }
    }
    server.commit_frame(time).unwrap();
}

#[test]
fn an_ack_older_than_the_ring_falls_back_to_a_full_update() {
    for codec in CODECS {
        let mut server = world(codec);
        let id = server.add_client(ClientSettings::unlimited()).unwrap();
        let mut client = Client::new();
        connect(&mut server, &mut client);
        let mut bytes = Vec::new();
        step(&mut server, 0);
        let first = build(&mut server, id, &mut bytes);
        client.read_snapshot(first.sequence, &bytes).unwrap();
        server.acknowledge(id, first.sequence).unwrap();

        // No more acks. Every snapshot up to 31 back is a delta from the
        // acked one; the 32nd would need the slot being written: full.
        let mut bases = Vec::new();
        let mut last = None;
        for frame in 1..=RING_SIZE as u32 + 1 {
            step(&mut server, frame * 50);
            let info = build(&mut server, id, &mut bytes);
            bases.push(info.base);
            last = Some(info.sequence);
        }
        assert!(bases[..RING_SIZE - 1]
            .iter()
            .all(|&b| b == Some(first.sequence)));
        assert_eq!(bases[RING_SIZE - 1], None);
        assert_eq!(bases[RING_SIZE], None);
        // The client lost all of those but the last, and still decodes it.
        let Received::Snapshot(report) = client.read_snapshot(last.unwrap(), &bytes).unwrap()
        else {
            panic!()
        };
        assert_eq!(report.base, None);
        assert_matches_record(&server, id, &client);
        // An ack of a snapshot that left the ring is ignored.
        assert!(!server.acknowledge(id, first.sequence + 1).unwrap());
    }
}

#[test]
fn a_restarted_client_recovers_by_requesting_a_full_update() {
    for codec in CODECS {
        let mut server = world(codec);
        let id = server.add_client(ClientSettings::unlimited()).unwrap();
        let mut client = Client::new();
        connect(&mut server, &mut client);
        let mut bytes = Vec::new();
        for frame in 0..10 {
            step(&mut server, frame * 50);
            let info = build(&mut server, id, &mut bytes);
            client.read_snapshot(info.sequence, &bytes).unwrap();
            server.acknowledge(id, client.ack().unwrap()).unwrap();
        }

        // The client process restarts: a fresh client gets the gamestate
        // again, but the server still deltas against the old client's acks.
        let mut client: Client<Ent, Player> = Client::new();
        connect(&mut server, &mut client);
        step(&mut server, 500);
        let info = build(&mut server, id, &mut bytes);
        assert!(info.base.is_some());
        let error = client.read_snapshot(info.sequence, &bytes).unwrap_err();
        assert_eq!(
            error,
            ClientError::BaseMissing {
                sequence: info.sequence,
                base: info.base.unwrap()
            }
        );
        assert!(error.to_string().contains("does not hold"));
        assert_eq!(client.stats().base_missing, 1);
        assert!(client.needs_full_update());
        assert_eq!(client.ack(), None);

        // The game relays the request; the next snapshot is full.
        server.request_full_update(id).unwrap();
        step(&mut server, 550);
        let info = build(&mut server, id, &mut bytes);
        assert_eq!(info.base, None);
        client.read_snapshot(info.sequence, &bytes).unwrap();
        assert!(!client.needs_full_update());
        assert_matches_record(&server, id, &client);
        // Acks from before the request no longer count.
        assert!(!server.acknowledge(id, 5).unwrap());
        assert!(server.acknowledge(id, info.sequence).unwrap());
        step(&mut server, 600);
        assert_eq!(build(&mut server, id, &mut bytes).base, Some(info.sequence));
    }
}

#[test]
fn a_restarted_client_that_says_nothing_recovers_when_the_ring_runs_out() {
    let mut server = world(fields::Codec::Native);
    let id = server.add_client(ClientSettings::unlimited()).unwrap();
    let mut bytes = Vec::new();
    step(&mut server, 0);
    let first = build(&mut server, id, &mut bytes);
    server.acknowledge(id, first.sequence).unwrap();
    let mut client: Client<Ent, Player> = Client::new();
    connect(&mut server, &mut client);
    let mut rejected = 0;
    for frame in 1..=40 {
        step(&mut server, frame * 50);
        let info = build(&mut server, id, &mut bytes);
        match client.read_snapshot(info.sequence, &bytes) {
            Ok(_) => {
                assert_matches_record(&server, id, &client);
                server.acknowledge(id, client.ack().unwrap()).unwrap();
            }
            Err(ClientError::BaseMissing { .. }) => rejected += 1,
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(rejected, RING_SIZE - 1);
    assert_eq!(client.stats().base_missing, rejected as u64);
    assert_eq!(client.stats().full_updates, 1);
}

#[test]
fn a_recorder_streams_a_clients_view_with_keyframes_for_seeking() {
    for codec in CODECS {
        let mut server = world(codec);
        let id = server.add_client(ClientSettings::unlimited()).unwrap();
        let recorder = server.add_recorder(id, ClientSettings::recorder()).unwrap();
        let mut gamestate = Vec::new();
        server.write_gamestate(&mut gamestate).unwrap();
        server.set_configstring(2, "changed later").unwrap();
        let mut change = Vec::new();
        server.write_configstring(2, &mut change).unwrap();

        // The client sees only entities left of its player.
        let mut scope = |_: netq3_snapshot::ClientId, player: &Player, _: u32, e: &Ent| {
            (e.x < player.origin[0]).then_some(1.0)
        };
        // Each message, with its sequence when it is a snapshot.
        let mut recording = vec![(None, gamestate.clone()), (None, change)];
        let mut keyframes = Vec::new();
        let mut bytes = Vec::new();
        for frame in 0..40u32 {
            server.player_state_mut(id).unwrap().origin[0] = frame as f32 * 5.0;
            step(&mut server, frame * 50);
            if frame % 10 == 0 {
                server.request_full_update(recorder).unwrap();
            }
            let netq3_snapshot::BuildOutcome::Built(info) = server
                .build_snapshot(recorder, &mut scope, &mut bytes)
                .unwrap()
            else {
                panic!()
            };
            if frame % 10 == 0 {
                assert_eq!(info.base, None);
                keyframes.push(recording.len());
            } else {
                // Auto-acknowledged: every snapshot is a delta from the last.
                assert_eq!(info.base, Some(info.sequence - 1));
            }
            recording.push((Some(info.sequence), bytes.clone()));
        }
        let feed = |client: &mut Client<Ent, Player>,
                    (sequence, message): &(Option<u32>, Vec<u8>)| {
            match sequence {
                Some(sequence) => client.read_snapshot(*sequence, message),
                None => client.read_message(message),
            }
            .unwrap();
        };

        // Play the whole recording.
        let mut player: Client<Ent, Player> = Client::new();
        for message in &recording {
            feed(&mut player, message);
        }
        assert_eq!(
            player.gamestate().unwrap().configstring(2),
            Some("changed later")
        );
        assert_matches_record(&server, recorder, &player);
        let end = player.newest().unwrap().clone();
        assert!(end.entities().all(|(_, e)| e.x < 39.0 * 5.0));
        assert_eq!(end.player().origin[0], 39.0 * 5.0);

        // Seek: the gamestate, then from the last keyframe on.
        let mut seeker: Client<Ent, Player> = Client::new();
        seeker.read_message(&gamestate).unwrap();
        for message in &recording[*keyframes.last().unwrap()..] {
            feed(&mut seeker, message);
        }
        assert_eq!(seeker.newest().unwrap(), &end);

        // Clearing a client's snapshots and feeding a keyframe works too.
        let mut restored = player.clone();
        restored.clear_snapshots();
        assert!(restored.newest().is_none());
        let k = keyframes[2];
        feed(&mut restored, &recording[k]);
        let mut reference: Client<Ent, Player> = Client::new();
        for message in &recording[..=k] {
            feed(&mut reference, message);
        }
        assert_eq!(restored.newest(), reference.newest());

        // A recorder whose client left cannot build.
        server.remove_client(id).unwrap();
        assert!(matches!(
            server.build_snapshot(recorder, &mut scope, &mut bytes),
            Err(netq3_snapshot::ServerError::ViewerGone { .. })
        ));
    }
}

#[test]
fn history_is_released_as_rings_move_on_and_clients_leave() {
    let mut server = world(fields::Codec::Native);
    let ids: Vec<_> = (0..4)
        .map(|_| server.add_client(ClientSettings::unlimited()).unwrap())
        .collect();
    let mut bytes = Vec::new();
    for frame in 0..100 {
        step(&mut server, frame * 50);
        for &id in &ids {
            let info = build(&mut server, id, &mut bytes);
            server.acknowledge(id, info.sequence).unwrap();
        }
    }
    // 20 entities change every frame; a ring holds 32 frames, so at most
    // 32 versions of each stay alive.
    let memory = server.memory();
    assert_eq!(memory.frames, RING_SIZE);
    assert_eq!(memory.stored_states, 20 * RING_SIZE);
    for &id in &ids {
        server.remove_client(id).unwrap();
    }
    let memory = server.memory();
    assert_eq!(memory.frames, 1);
    assert_eq!(memory.stored_states, 20);
    assert!(matches!(
        server.acknowledge(ids[0], 1),
        Err(netq3_snapshot::ServerError::UnknownClient(_))
    ));
    // A new client in a reused slot gets a new id.
    let id = server.add_client(ClientSettings::unlimited()).unwrap();
    assert_eq!(id.index(), ids[0].index());
    assert_ne!(id, ids[0]);
}

#[test]
fn unchanged_entities_share_one_stored_state_across_frames() {
    let mut server = world(fields::Codec::Native);
    let id = server.add_client(ClientSettings::unlimited()).unwrap();
    let mut bytes = Vec::new();
    for frame in 0..50 {
        // Touch every entity without changing anything the wire sees.
        for number in (0..20).map(|n| n * 3) {
            let x = server.entity(number).unwrap().x;
            server.entity_mut(number).unwrap().x = x;
        }
        server.commit_frame(frame * 50).unwrap();
        let info = build(&mut server, id, &mut bytes);
        server.acknowledge(id, info.sequence).unwrap();
        if frame > 0 {
            assert_eq!(info.entities_written, 0);
        }
    }
    assert_eq!(server.memory().stored_states, 20);
}

#[test]
fn a_snapshot_that_arrives_late_is_kept_as_a_base() {
    // The transport reports a snapshot delivered once all its datagrams were
    // acknowledged, even if it completed after a newer one. The server may
    // then delta from it: the client must hold it.
    for codec in CODECS {
        let mut server = world(codec);
        let id = server.add_client(ClientSettings::unlimited()).unwrap();
        let mut client: Client<Ent, Player> = Client::new();
        connect(&mut server, &mut client);
        let mut first = Vec::new();
        let mut second = Vec::new();
        step(&mut server, 0);
        let s0 = build(&mut server, id, &mut first);
        assert!(matches!(
            client.read_snapshot(s0.sequence, &first).unwrap(),
            Received::Snapshot(_)
        ));
        server.acknowledge(id, s0.sequence).unwrap();
        step(&mut server, 50);
        let s1 = build(&mut server, id, &mut first);
        step(&mut server, 100);
        let s2 = build(&mut server, id, &mut second);
        // s2 arrives first, then s1, late.
        assert!(matches!(
            client.read_snapshot(s2.sequence, &second).unwrap(),
            Received::Snapshot(_)
        ));
        assert_eq!(
            client.read_snapshot(s1.sequence, &first).unwrap(),
            Received::Stale {
                sequence: s1.sequence,
                kept: true
            }
        );
        assert_eq!(
            client.newest().unwrap().sequence(),
            s2.sequence,
            "a late snapshot is not the newest"
        );
        assert_eq!(client.stats().late_kept, 1);
        // A duplicate of it is ignored.
        assert_eq!(
            client.read_snapshot(s1.sequence, &first).unwrap(),
            Received::Stale {
                sequence: s1.sequence,
                kept: false
            }
        );
        // Only s1 is acknowledged: the next delta is against it.
        server.acknowledge(id, s1.sequence).unwrap();
        step(&mut server, 150);
        let s3 = build(&mut server, id, &mut first);
        assert_eq!(s3.base, Some(s1.sequence));
        assert!(matches!(
            client.read_snapshot(s3.sequence, &first).unwrap(),
            Received::Snapshot(_)
        ));
        assert_matches_record(&server, id, &client);
        assert!(!client.needs_full_update());
    }
}
