//! Native demos end to end: a generated match recorded server-side plays
//! back to exactly the states the server sent; seeking lands on the same
//! states as playing from the start; cuts are standalone; truncated and
//! corrupted copies behave as specified; client-side recordings re-base.

mod common;

use std::sync::Arc;

use common::arena::{held, record_match, record_match_with, Expected, Pilot, Ship};
use fields::model::{AdaptPolicy, NativeModel};
use fields::Codec;
use netq3_demo::format::{KeyframeEntry, PREAMBLE_LEN};
use netq3_demo::{ClientRecorder, DemoError, DemoHeader, DemoReader, Player, RecordKind, Recorder};
use snapshot::{AllInScope, BuildOutcome, Client, ClientSettings, Models, Server, ServerConfig};

/// Plays a whole demo with verification; returns every snapshot held.
fn play_all(data: &[u8]) -> Vec<Expected> {
    let mut player = Player::new(DemoReader::new(data).unwrap()).unwrap();
    player.set_verify(true);
    let mut out = Vec::new();
    while let Some(played) = player.next_record() {
        let played = played.unwrap();
        if played.record.kind.is_snapshot() {
            out.push(held(player.client().newest().unwrap()));
        }
    }
    assert!(player.reached_end());
    assert!(player.checksums_verified() > 0);
    out
}

#[test]
fn a_recorded_match_replays_to_the_states_the_server_sent() {
    for codec in [Codec::Q3, Codec::Native] {
        let recorded = record_match(codec, 300, 60);
        let played = play_all(&recorded.demo);
        assert_eq!(played.len(), 300);
        assert_eq!(played, recorded.expected, "{codec:?}");
        // Entities really came and went, and keyframes were indexed.
        let sizes: Vec<usize> = played.iter().map(|e| e.entities.len()).collect();
        assert!(sizes.iter().min() < sizes.iter().max());
        let reader = DemoReader::new(&recorded.demo).unwrap();
        let keyframes = reader.keyframes().unwrap();
        assert_eq!(keyframes.len(), 5, "the first snapshot and every 60 frames");
        assert_eq!(keyframes[0].server_time, 0);
        assert_eq!(reader.header().metadata["map"], "asteroids");
    }
}

#[test]
fn seeking_lands_on_the_states_of_playing_from_the_start() {
    let recorded = record_match(Codec::Native, 300, 60);
    let reader = DemoReader::new(&recorded.demo).unwrap();
    let mut player = Player::new(reader).unwrap();
    for time in [
        0, 1, 49, 50, 2_999, 3_000, 3_001, 7_777, 12_345, 14_950, 99_999,
    ] {
        player.seek(time).unwrap();
        let want = recorded
            .expected
            .iter()
            .rev()
            .find(|e| e.time <= time)
            .unwrap_or(&recorded.expected[0]);
        assert_eq!(
            &held(player.client().newest().unwrap()),
            want,
            "seek to {time}"
        );
        // Playing on from there gives the following snapshots.
        let index = recorded.expected.iter().position(|e| e == want).unwrap();
        for next in recorded.expected[index + 1..].iter().take(40) {
            loop {
                let played = player.next_record().unwrap().unwrap();
                if played.record.kind.is_snapshot() {
                    break;
                }
            }
            assert_eq!(&held(player.client().newest().unwrap()), next);
        }
    }
}

#[test]
fn seeking_works_without_the_index() {
    // A truncated file has no index: keyframes are found by scanning.
    let recorded = record_match(Codec::Native, 200, 50);
    let reader = DemoReader::new(&recorded.demo).unwrap();
    let last = reader.records().last().unwrap().unwrap();
    let cut = &recorded.demo[..last.offset + last.file_len()];
    let truncated = DemoReader::new(cut).unwrap();
    assert_eq!(truncated.keyframes().unwrap(), reader.keyframes().unwrap());
    let mut player = Player::new(truncated).unwrap();
    player.seek(6_020).unwrap();
    assert_eq!(
        held(player.client().newest().unwrap()),
        recorded.expected[120]
    );
}

/// Ship and pilot models trained on another game (ships on straight
/// lines), so adapting to the recorded match changes them.
fn other_game_models() -> Models {
    let ship = |i: u32| Ship {
        x: (i * 3) as f32,
        y: 10.0,
        heading: 90.0,
        hull: 300,
        model: (i % 4) as u8,
    };
    let pilot = |i: u32| Pilot {
        x: i as f32,
        health: 100,
        ..Pilot::default()
    };
    Models::new(
        trained((1..200).map(|i| (ship(i - 1), ship(i)))),
        trained((1..200).map(|i| (pilot(i - 1), pilot(i)))),
    )
}

/// A model of `T` trained on the deltas `pairs` gives.
fn trained<T: fields::NetFields>(pairs: impl Iterator<Item = (T, T)>) -> Arc<NativeModel> {
    Arc::new(NativeModel::train_on_deltas(pairs).unwrap())
}

#[test]
fn an_adapting_stream_recorded_server_side_replays_and_is_not_rebased() {
    let policy = AdaptPolicy {
        chain_length: 16,
        first_chain: 0,
        weight: 256,
        lead: 0,
    };
    let models = other_game_models().with_adaptation(Some(policy));
    let recorded = record_match_with(Codec::Native, 300, 60, models);
    let reader = DemoReader::new(&recorded.demo).unwrap();
    assert_eq!(reader.header().adaptation, Some(policy));
    // Every state as the server sent it, every checksum verified.
    assert_eq!(play_all(&recorded.demo), recorded.expected);
    // The player's models adapted along the chain as the server's did: the
    // trained model, then a rebuild every 16 messages, three in each of the
    // five 60-snapshot spans a keyframe starts from the trained model again.
    let mut player = Player::new(reader.clone()).unwrap();
    let mut entity_models = std::collections::HashSet::new();
    while let Some(played) = player.next_record() {
        if let snapshot::Received::Snapshot(report) = played.unwrap().received {
            entity_models.insert(player.client().coded_with(report.sequence).unwrap()[0]);
        }
    }
    assert_eq!(entity_models.len(), 1 + 5 * 3);
    // Without the policy in its header the demo does not play.
    let mut parts = netq3_demo::fuzzing::DemoParts::parse(&recorded.demo).unwrap();
    parts.header.adaptation = None;
    let fixed = parts.encode();
    let mut player = Player::new(DemoReader::new(&fixed).unwrap()).unwrap();
    assert!(
        std::iter::from_fn(|| player.next_record()).any(|r| r.is_err()),
        "a fixed-model player read an adapting stream"
    );
    // A cut re-encodes its first snapshot with the trained models, which
    // the deltas after it were not chained from: refused, clearly.
    let error = netq3_demo::cut::cut(&reader, 4_025, 9_000, Vec::new(), &mut |_| {})
        .expect_err("an adapting stream cannot be re-based");
    assert!(
        matches!(&error, DemoError::Refused(why) if why.contains("adapting")),
        "{error}"
    );
}

#[test]
fn a_cut_is_a_standalone_demo_that_plays_and_verifies() {
    let recorded = record_match(Codec::Native, 300, 60);
    let reader = DemoReader::new(&recorded.demo).unwrap();
    let (out, report) =
        netq3_demo::cut::cut(&reader, 4_025, 9_000, Vec::new(), &mut |_| {}).unwrap();
    // The first snapshot at or after 4025 ms is frame 81 (4050 ms).
    assert_eq!(report.first_ms, 4_050);
    assert_eq!(report.last_ms, 9_000);
    let want: Vec<Expected> = recorded
        .expected
        .iter()
        .filter(|e| (4_050..=9_000).contains(&e.time))
        .cloned()
        .collect();
    assert_eq!(report.snapshots, want.len());
    let cut_reader = DemoReader::new(&out).unwrap();
    let kinds: Vec<RecordKind> = cut_reader.records().map(|r| r.unwrap().kind).collect();
    assert_eq!(kinds[..2], [RecordKind::Gamestate, RecordKind::Keyframe]);
    assert_eq!(cut_reader.header().metadata["cut_from_ms"], "4025");
    let played = play_all(&out);
    // Sequences and the configstring change at the half survive the cut.
    assert_eq!(played, want);
    let mut player = Player::new(cut_reader).unwrap();
    while player.next_record().is_some() {}
    let gamestate = player.client().gamestate().unwrap();
    assert_eq!(gamestate.configstring(0), Some("map=asteroids"));
    assert_eq!(gamestate.configstring(1), Some("score=halftime"));
}

#[test]
fn truncated_copies_replay_every_complete_record_then_report_truncation() {
    let recorded = record_match(Codec::Native, 120, 40);
    let reader = DemoReader::new(&recorded.demo).unwrap();
    let ends: Vec<usize> = reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            r.offset + r.file_len()
        })
        .collect();
    let start = reader.records_start();
    let last_end = *ends.last().unwrap();
    let index_len = u32::from_le_bytes(
        recorded.demo[last_end + 1..last_end + 5]
            .try_into()
            .unwrap(),
    );
    let index_end = last_end + 15 + index_len as usize + 4;
    let mut cuts: Vec<usize> = (start..recorded.demo.len()).step_by(97).collect();
    cuts.extend(ends.iter().copied());
    cuts.push(recorded.demo.len() - 1);
    for cut in cuts {
        let data = &recorded.demo[..cut];
        let complete = ends.iter().filter(|&&end| end <= cut).count();
        let mut player = Player::new(DemoReader::new(data).unwrap()).unwrap();
        player.set_verify(true);
        let mut records = 0;
        let mut snapshots = Vec::new();
        let ending = loop {
            match player.next_record() {
                Some(Ok(played)) => {
                    records += 1;
                    if played.record.kind.is_snapshot() {
                        snapshots.push(held(player.client().newest().unwrap()));
                    }
                }
                Some(Err(error)) => break Some(error),
                None => break None,
            }
        };
        assert_eq!(records, complete, "cut at {cut}");
        assert_eq!(snapshots[..], recorded.expected[..snapshots.len()]);
        match ending {
            Some(DemoError::Truncated {
                complete_records, ..
            }) => {
                // The count includes the index record, once it is complete.
                let index_complete = cut >= index_end;
                assert_eq!(complete_records, complete + index_complete as usize)
            }
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
    // Within the header: a clear error, not a truncation of records.
    for cut in [3, 8, 12, PREAMBLE_LEN + 5] {
        assert!(matches!(
            DemoReader::new(&recorded.demo[..cut]),
            Err(DemoError::NotADemo { .. } | DemoError::BadHeader { .. })
        ));
    }
}

/// Plays `data` to its end; the first error, if any.
fn play_to_end(data: &[u8]) -> Result<usize, DemoError> {
    let mut player = Player::new(DemoReader::new(data)?)?;
    player.set_verify(true);
    let mut snapshots = 0;
    while let Some(played) = player.next_record() {
        snapshots += played?.record.kind.is_snapshot() as usize;
    }
    Ok(snapshots)
}

#[test]
fn every_bit_flip_is_an_error_naming_the_damaged_record() {
    let recorded = record_match(Codec::Q3, 60, 20);
    let reader = DemoReader::new(&recorded.demo).unwrap();
    let header_end = reader.records_start();
    // Record boundaries, including the index and end records.
    let mut boundaries = vec![header_end];
    let mut offset = header_end;
    while offset < recorded.demo.len() {
        let len = u32::from_le_bytes(recorded.demo[offset + 1..offset + 5].try_into().unwrap());
        offset += 15 + len as usize + 4;
        boundaries.push(offset);
    }
    assert_eq!(offset, recorded.demo.len());
    let mut data = recorded.demo.clone();
    for bit in (0..data.len() * 8).step_by(7) {
        data[bit / 8] ^= 1 << (bit % 8);
        let result = play_to_end(&data);
        let byte = bit / 8;
        match result {
            Err(DemoError::Corrupt { offset, .. }) => {
                let record = boundaries.partition_point(|&b| b <= byte) - 1;
                assert_eq!(offset, boundaries[record], "flip at byte {byte}");
            }
            Err(DemoError::NotADemo { .. } | DemoError::BadHeader { .. })
            | Err(DemoError::UnknownVersion { .. }) => assert!(byte < header_end, "byte {byte}"),
            other => panic!("flip at byte {byte}: {other:?}"),
        }
        data[bit / 8] ^= 1 << (bit % 8);
    }
    assert_eq!(play_to_end(&data).unwrap(), 60);
}

#[test]
fn an_unknown_version_is_a_clear_error() {
    let recorded = record_match(Codec::Native, 5, 5);
    let mut data = recorded.demo;
    // The next version, which this reader cannot know.
    let next = netq3_demo::format::VERSION + 1;
    data[8..10].copy_from_slice(&next.to_le_bytes());
    let error = DemoReader::new(&data).unwrap_err();
    assert!(matches!(
        error,
        DemoError::UnknownVersion {
            found,
            supported: netq3_demo::format::VERSION
        } if found == next
    ));
    assert!(error.to_string().contains(&format!("version {next}")));
}

#[test]
fn the_recorder_refuses_a_recording_that_would_start_on_a_delta() {
    let mut server: Server<Ship, Pilot> = Server::new(ServerConfig::default()).unwrap();
    let id = server.add_client(ClientSettings::unlimited()).unwrap();
    let header = DemoHeader::for_types::<Ship, Pilot>(Codec::Native, 20, 20);
    let mut recorder = Recorder::create(Vec::new(), header).unwrap();
    let mut bytes = Vec::new();
    server.set_entity(3, Ship::default()).unwrap();
    server.commit_frame(0).unwrap();
    server
        .build_snapshot(id, &mut AllInScope, &mut bytes)
        .unwrap();
    assert!(matches!(
        recorder.record_snapshot(0, 0, &bytes, true),
        Err(DemoError::Refused(_))
    ));
    let mut gamestate = Vec::new();
    server.write_gamestate(&mut gamestate).unwrap();
    recorder.record_gamestate(0, &gamestate).unwrap();
    server.acknowledge(id, 0).unwrap();
    server.commit_frame(50).unwrap();
    let BuildOutcome::Built(info) = server
        .build_snapshot(id, &mut AllInScope, &mut bytes)
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(info.base, Some(0));
    let error = recorder.record_snapshot(50, 1, &bytes, false).unwrap_err();
    assert!(
        error.to_string().contains("must be a full update"),
        "{error}"
    );
    // Claiming a delta is full is caught from the message itself.
    assert!(recorder.record_snapshot(50, 1, &bytes, true).is_err());
    // The same client's full update is accepted.
    server.request_full_update(id).unwrap();
    server.commit_frame(100).unwrap();
    let BuildOutcome::Built(info) = server
        .build_snapshot(id, &mut AllInScope, &mut bytes)
        .unwrap()
    else {
        panic!()
    };
    recorder
        .record_snapshot(100, info.sequence, &bytes, info.base.is_none())
        .unwrap();
    let demo = recorder.finish().unwrap();
    assert_eq!(play_to_end(&demo).unwrap(), 1);
}

/// A client whose acks are often lost (so the server's deltas name old
/// bases) starts recording mid-game; the demo plays back to exactly what the
/// client held, and every keyframe is a valid seek point.
#[test]
fn a_client_side_recording_rebases_deltas_onto_recorded_snapshots() {
    for codec in [Codec::Q3, Codec::Native] {
        let mut server: Server<Ship, Pilot> = Server::new(ServerConfig {
            checksum_interval: 4,
            ..ServerConfig::for_codec(codec)
        })
        .unwrap();
        let id = server.add_client(ClientSettings::unlimited()).unwrap();
        let mut client: Client<Ship, Pilot> = Client::new();
        let mut bytes = Vec::new();
        server.set_configstring(2, "before").unwrap();
        server.write_gamestate(&mut bytes).unwrap();
        client.read_message(&bytes).unwrap();
        let header = DemoHeader::for_types::<Ship, Pilot>(codec, 20, 20);
        let mut recording: Option<ClientRecorder<Vec<u8>>> = None;
        let mut expected = Vec::new();
        for frame in 0..400u32 {
            for n in 0..12u32 {
                if (frame / 30 + n) % 4 == 0 {
                    server.remove_entity(n);
                } else {
                    let ship = Ship {
                        x: (frame * (n + 1)) as f32,
                        y: n as f32 * 10.0,
                        heading: (frame % 360) as f32,
                        hull: ((frame + n) % 500) as u16,
                        model: n as u8,
                    };
                    server.set_entity(n, ship).unwrap();
                }
            }
            server.player_state_mut(id).unwrap().health = (frame % 100) as i16;
            server.commit_frame(frame * 50).unwrap();
            if frame == 150 {
                server.set_configstring(2, "during").unwrap();
                server.write_configstring(2, &mut bytes).unwrap();
                let received = client.read_message(&bytes).unwrap();
                if let Some(recording) = &mut recording {
                    recording.record(&client, &bytes, &received).unwrap();
                }
            }
            let BuildOutcome::Built(info) = server
                .build_snapshot(id, &mut AllInScope, &mut bytes)
                .unwrap()
            else {
                panic!()
            };
            // Acks get through only now and then: bases lag by up to 12.
            if frame % 12 == 0 {
                server.acknowledge(id, info.sequence).unwrap();
            }
            let received = client.read_snapshot(info.sequence, &bytes).unwrap();
            if frame == 100 {
                let recorder = Recorder::create(Vec::new(), header.clone()).unwrap();
                let mut started = ClientRecorder::new(recorder, 1_000);
                started.start(&client).unwrap();
                recording = Some(started);
            }
            if let Some(recording) = &mut recording {
                if frame > 100 {
                    recording.record(&client, &bytes, &received).unwrap();
                }
                expected.push(common::arena::Expected {
                    sequence: info.sequence,
                    time: frame * 50,
                    player: common::arena::words(client.newest().unwrap().player()),
                    entities: client
                        .newest()
                        .unwrap()
                        .entities()
                        .map(|(n, e)| (n, common::arena::words(e)))
                        .collect(),
                });
            }
        }
        // At frame 100 the recording started after the snapshot was read:
        // its first recorded snapshot is frame 101's.
        expected.remove(0);
        let recording = recording.unwrap();
        assert!(recording.reencoded() > 10, "{}", recording.reencoded());
        let demo = recording.finish().unwrap();
        assert_eq!(play_to_end(&demo).unwrap(), expected.len());
        assert_eq!(play_all(&demo), expected);
        let reader = DemoReader::new(&demo).unwrap();
        let keyframes: Vec<KeyframeEntry> = reader.keyframes().unwrap();
        assert!(keyframes.len() >= 14, "{}", keyframes.len());
        // From every keyframe, playing on never needs an unrecorded base.
        for keyframe in &keyframes {
            let mut player = Player::new(reader.clone()).unwrap();
            player.seek(keyframe.server_time).unwrap();
            let index = expected
                .iter()
                .position(|e| e.time == keyframe.server_time)
                .unwrap();
            assert_eq!(held(player.client().newest().unwrap()), expected[index]);
            let mut count = index + 1;
            while let Some(played) = player.next_record() {
                if played.unwrap().record.kind.is_snapshot() {
                    assert_eq!(held(player.client().newest().unwrap()), expected[count]);
                    count += 1;
                }
            }
            assert_eq!(count, expected.len());
            assert_eq!(
                player.client().gamestate().unwrap().configstring(2),
                Some("during")
            );
        }
    }
}

/// Snapshots sometimes arrive late (after a newer one); the transport still
/// reports them delivered, so the server deltas from them. The client keeps
/// them as bases, but a recording never saw them: deltas on them must be
/// re-based, or the demo would not play.
#[test]
fn a_client_side_recording_rebases_deltas_on_late_snapshots() {
    let mut server: Server<Ship, Pilot> =
        Server::new(ServerConfig::for_codec(Codec::Native)).unwrap();
    let id = server.add_client(ClientSettings::unlimited()).unwrap();
    let mut client: Client<Ship, Pilot> = Client::new();
    let mut bytes = Vec::new();
    server.write_gamestate(&mut bytes).unwrap();
    client.read_message(&bytes).unwrap();
    let header = DemoHeader::for_types::<Ship, Pilot>(Codec::Native, 20, 20);
    let mut recording = ClientRecorder::new(Recorder::create(Vec::new(), header).unwrap(), 2_000);
    let expect = |client: &Client<Ship, Pilot>, frame: u32| {
        let newest = client.newest().unwrap();
        Expected {
            sequence: newest.sequence(),
            time: frame * 50,
            player: common::arena::words(newest.player()),
            entities: newest
                .entities()
                .map(|(n, e)| (n, common::arena::words(e)))
                .collect(),
        }
    };
    let mut expected = Vec::new();
    let mut held_back: Option<(Vec<u8>, u32)> = None;
    let mut late_bases = 0;
    for frame in 0..200u32 {
        for n in 0..6u32 {
            let ship = Ship {
                x: (frame * (n + 2)) as f32,
                y: n as f32,
                heading: 0.0,
                hull: 100,
                model: n as u8,
            };
            server.set_entity(n, ship).unwrap();
        }
        server.commit_frame(frame * 50).unwrap();
        let BuildOutcome::Built(info) = server
            .build_snapshot(id, &mut AllInScope, &mut bytes)
            .unwrap()
        else {
            panic!()
        };
        late_bases += usize::from(info.base.is_some_and(|b| b % 7 == 3));
        if frame == 0 {
            // Recording starts after the first snapshot: it records from the next.
            client.read_snapshot(info.sequence, &bytes).unwrap();
            recording.start(&client).unwrap();
            server.acknowledge(id, info.sequence).unwrap();
            continue;
        } else if info.sequence % 7 == 3 {
            // Held back; it arrives after the next one.
            held_back = Some((bytes.clone(), info.sequence));
            continue;
        } else {
            let received = client.read_snapshot(info.sequence, &bytes).unwrap();
            recording.record(&client, &bytes, &received).unwrap();
        }
        expected.push(expect(&client, frame));
        if let Some((late, sequence)) = held_back.take() {
            let received = client.read_snapshot(sequence, &late).unwrap();
            assert!(
                matches!(received, snapshot::Received::Stale { kept: true, .. }),
                "{received:?}"
            );
            recording.record(&client, &late, &received).unwrap();
            // The transport reports it delivered: it becomes the newest ack.
            server.acknowledge(id, sequence).unwrap();
        } else {
            server.acknowledge(id, info.sequence).unwrap();
        }
    }
    assert!(
        late_bases > 10,
        "the server used late snapshots as bases {late_bases} times"
    );
    assert!(recording.reencoded() >= late_bases as u64);
    let demo = recording.finish().unwrap();
    let played = play_all(&demo);
    assert_eq!(played.len(), expected.len());
    assert_eq!(played, expected);
}
