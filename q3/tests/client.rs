//! The client's snapshot ring: delta bases are resolved like Quake 3's
//! client does, invalid snapshots are parsed (the stream stays in sync) but
//! marked and not kept, and a gamestate resets everything.

use fields::{BitSink, BitWriter, HuffmanCode, HuffmanWriter};
use netq3_q3::reencode::write_snapshot;
use netq3_q3::{
    svc, Baselines, Command, EntityState, PlayerState, Q3Client, Snapshot, Validity, MAX_MSGLEN,
    MAX_PARSE_ENTITIES, MAX_SNAPSHOT_ENTITIES,
};

fn snapshot(message_num: i32, delta_num: u8, entities: usize) -> Snapshot {
    Snapshot {
        message_num,
        delta_num,
        server_time: message_num * 50,
        snap_flags: 0,
        areamask: vec![0xFF],
        ps: PlayerState {
            command_time: message_num * 50 - 10,
            origin_0: message_num as f32,
            ..PlayerState::default()
        },
        entities: (0..entities as u32)
            .map(|n| {
                (
                    n,
                    EntityState {
                        e_type: 1,
                        time: message_num,
                        ..EntityState::default()
                    },
                )
            })
            .collect(),
        server_command_num: 0,
        validity: Validity::Valid,
    }
}

/// Sends `snap` (as a delta from `base`) and returns what the client made of it.
fn send(client: &mut Q3Client, snap: &Snapshot, base: Option<&Snapshot>) -> Snapshot {
    let mut buf = vec![0u8; 4 * MAX_MSGLEN];
    let mut writer = BitWriter::new(&mut buf);
    let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
    sink.put_bits(0, 32).unwrap();
    write_snapshot(&mut sink, snap, base, &Baselines::default()).unwrap();
    sink.put_u8(svc::EOF).unwrap();
    let len = writer.finish();
    let parsed = client.parse_message(snap.message_num, &buf[..len]).unwrap();
    let snaps: Vec<_> = parsed.snapshots().collect();
    assert_eq!(snaps.len(), 1);
    (*snaps[0].snapshot).clone()
}

#[test]
fn delta_bases_resolve_through_the_ring() {
    let mut client = Q3Client::new();
    let s10 = snapshot(10, 0, 3);
    assert!(send(&mut client, &s10, None).is_valid());
    let s11 = snapshot(11, 1, 4);
    let got = send(&mut client, &s11, Some(&s10));
    assert_eq!(got, s11);
    assert_eq!(got.base_message(), Some(10));
    assert_eq!(client.latest_snapshot().unwrap().message_num, 11);

    // Base 12 was never received: parsed, marked, not kept.
    let s13 = snapshot(13, 1, 2);
    let got = send(&mut client, &s13, None);
    assert_eq!(got.validity, Validity::BaseInvalid { base: 12 });
    assert!(client.snapshot(13).is_none());
    assert_eq!(client.latest_snapshot().unwrap().message_num, 11);

    // A delta from 11, three messages back, is fine.
    let s14 = snapshot(14, 3, 5);
    assert_eq!(send(&mut client, &s14, Some(&s11)), s14);

    // Message 43 shares 11's slot: the slot holds an older message.
    let s45 = snapshot(45, 2, 1);
    let got = send(&mut client, &s45, Some(&s11));
    assert_eq!(
        got.validity,
        Validity::BaseTooOld {
            base: 43,
            found: 11
        }
    );
    // Quake 3 decodes an invalid delta against whatever the slot holds.
    assert_eq!(got.entities, s45.entities);
}

#[test]
fn bases_whose_entities_left_the_parse_ring_are_invalid() {
    let mut client = Q3Client::new();
    let per_snapshot = MAX_SNAPSHOT_ENTITIES as usize;
    let needed = (MAX_PARSE_ENTITIES - MAX_SNAPSHOT_ENTITIES) as usize / per_snapshot + 1;
    let first = snapshot(10, 0, per_snapshot);
    send(&mut client, &first, None);
    for k in 1..needed as i32 {
        send(&mut client, &snapshot(10 + k, 0, per_snapshot), None);
    }
    let late = snapshot(10 + needed as i32, needed as u8, 1);
    let got = send(&mut client, &late, Some(&first));
    assert_eq!(got.validity, Validity::ParseEntitiesTooOld { base: 10 });

    // One snapshot earlier the base was still usable.
    let mut client = Q3Client::new();
    send(&mut client, &first, None);
    for k in 1..needed as i32 - 1 {
        send(&mut client, &snapshot(10 + k, 0, per_snapshot), None);
    }
    let on_time = snapshot(9 + needed as i32, needed as u8 - 1, 1);
    assert!(send(&mut client, &on_time, Some(&first)).is_valid());
}

#[test]
fn a_gamestate_resets_the_client() {
    let mut client = Q3Client::new();
    let s10 = snapshot(10, 0, 3);
    send(&mut client, &s10, None);
    assert!(client.snapshot(10).is_some());

    let mut buf = vec![0u8; 1024];
    let mut writer = BitWriter::new(&mut buf);
    let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
    sink.put_bits(0, 32).unwrap();
    sink.put_u8(svc::GAMESTATE).unwrap();
    sink.put_bits(77, 32).unwrap();
    sink.put_u8(svc::CONFIGSTRING).unwrap();
    sink.put_bits(0, 16).unwrap();
    sink.put_str("\\sv_hostname\\test\\100%", 64).unwrap();
    // A baseline is the entity number and an entity delta from zero:
    // exactly what writing a forced entity produces.
    sink.put_u8(svc::BASELINE).unwrap();
    let baseline = EntityState {
        e_type: 2,
        modelindex: 9,
        ..EntityState::default()
    };
    fields::Codec::Q3
        .write_entity(
            &mut sink,
            None,
            42,
            fields::EntityUpdate::Delta {
                base: &EntityState::default(),
                new: &baseline,
                force: true,
            },
        )
        .unwrap();
    sink.put_u8(svc::EOF).unwrap();
    sink.put_bits(3, 32).unwrap();
    sink.put_bits(0xBEEF, 32).unwrap();
    sink.put_u8(svc::EOF).unwrap();
    let len = writer.finish();
    let parsed = client
        .parse_message(20, &buf[..len])
        .unwrap_or_else(|e| panic!("{e}"));
    let Command::Gamestate(gamestate) = &parsed.commands[0].command else {
        panic!("gamestate expected");
    };
    assert_eq!(gamestate.client_num, 3);
    assert_eq!(gamestate.checksum_feed, 0xBEEF);
    assert_eq!(client.server_command_sequence(), 77);
    assert_eq!(client.client_num(), Some(3));
    // Quake 3's reader turns '%' into '.'.
    assert_eq!(client.configstring(0), "\\sv_hostname\\test\\100.");
    assert!(client.snapshot(10).is_none(), "the ring was cleared");
    assert_eq!(client.gamestates(), 1);
    assert_eq!(gamestate.baselines, vec![(42, baseline)]);
    assert_eq!(client.baselines().get(42), Some(&baseline));
    assert_eq!(client.baselines().non_zero().count(), 1);
}
