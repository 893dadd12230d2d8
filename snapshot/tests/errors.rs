//! Every way a client rejects a message: each returns `Err`, is counted,
//! and leaves the client as it was.

mod common;

use common::*;
use fields::codec::Held;
use fields::varcode::put_exp_golomb;
use fields::{BitSink, BitWriter, Codec, EntityUpdate};
use netq3_snapshot::framing::{AreaMask, Compact, Delivery, Framing, SnapshotHeader};
use netq3_snapshot::message::MessageKind;
use netq3_snapshot::{Client, ClientError, ClientSettings, Received, Server, ServerConfig};

fn server_with_world(config: ServerConfig) -> Server<Ent, Player> {
    let mut server: Server<Ent, Player> = Server::new(config).unwrap();
    for number in [1, 4, 9, 30] {
        server
            .set_entity(
                number,
                Ent {
                    x: number as f32,
                    health: 50,
                    ..Ent::default()
                },
            )
            .unwrap();
    }
    server.set_baseline(4, Some(Ent::default())).unwrap();
    server.set_configstring(0, "map").unwrap();
    server
}

/// A server, a client holding its snapshot 0, and the bytes of snapshot 0
/// (full) and snapshot 1 (a delta from 0).
type Fixture = (Server<Ent, Player>, Client<Ent, Player>, Vec<u8>, Vec<u8>);

fn setup(codec: Codec) -> Fixture {
    let mut server = server_with_world(ServerConfig::for_codec(codec));
    let id = server.add_client(ClientSettings::unlimited()).unwrap();
    let mut client = Client::new();
    connect(&mut server, &mut client);
    let mut first = Vec::new();
    server.commit_frame(0).unwrap();
    build(&mut server, id, &mut first);
    client.read_snapshot(0, &first).unwrap();
    server.acknowledge(id, 0).unwrap();
    server.entity_mut(9).unwrap().y = 3.5;
    server.remove_entity(30);
    server.commit_frame(50).unwrap();
    let mut second = Vec::new();
    build(&mut server, id, &mut second);
    (server, client, first, second)
}

fn encode(f: impl FnOnce(&mut BitWriter<'_>)) -> Vec<u8> {
    let mut buf = vec![0u8; 256];
    let mut writer = BitWriter::new(&mut buf);
    f(&mut writer);
    let len = writer.finish();
    buf.truncate(len);
    buf
}

/// Writes the compact header of full update `sequence`.
fn full_header(w: &mut BitWriter<'_>, sequence: u32) {
    let header = SnapshotHeader {
        sequence,
        frame: 0,
        server_time: 0,
        base: None,
        flags: 0,
        area_mask: AreaMask::EMPTY,
        has_checksum: false,
        via_time: None,
        delivery: Delivery::FULL,
        history: None,
    };
    Compact.write_header(w, &header, None).unwrap();
}

/// Reads `message` as snapshot 1 (the fixture's second).
fn read(client: &mut Client<Ent, Player>, message: &[u8]) -> Result<Received, ClientError> {
    client.read_snapshot(1, message)
}

#[test]
fn every_truncation_of_every_message_kind_is_rejected_or_read_as_another_snapshot() {
    let mut accepted_prefixes = 0;
    for codec in CODECS {
        let (mut server, client, _, second) = setup(codec);
        let mut gamestate = Vec::new();
        server.write_gamestate(&mut gamestate).unwrap();
        let mut configstring = Vec::new();
        server.write_configstring(0, &mut configstring).unwrap();
        for (message, snapshot) in [(&second, true), (&gamestate, false), (&configstring, false)] {
            let read = |probe: &mut Client<Ent, Player>, bytes: &[u8]| {
                if snapshot {
                    probe.read_snapshot(1, bytes)
                } else {
                    probe.read_message(bytes)
                }
            };
            for len in 0..message.len() {
                let mut probe = client.clone();
                let result = read(&mut probe, &message[..len]);
                if snapshot && result.is_ok() {
                    // A bit-stream snapshot's reader puts back the last
                    // zero byte its sender may leave out
                    // (`MessageCoding::sent_len`), and zeros read as
                    // little news: a prefix may read as another snapshot
                    // (never as this one). The transport carries the length.
                    let mut whole = client.clone();
                    read(&mut whole, message).unwrap();
                    assert_ne!(probe.newest(), whole.newest(), "{codec:?} prefix {len}");
                    accepted_prefixes += 1;
                    continue;
                }
                let error = result.unwrap_err();
                assert!(
                    matches!(error, ClientError::Malformed(_)),
                    "{codec:?} prefix {len}: {error}"
                );
                assert_eq!(probe.stats().malformed, 1);
                assert_eq!(probe.newest(), client.newest());
                assert_eq!(probe.ack(), client.ack());
            }
            // The whole message is fine.
            read(&mut client.clone(), message).unwrap();
        }
    }
    assert_eq!(accepted_prefixes, 1);
}

#[test]
fn trailing_data_is_rejected() {
    let (_, mut client, _, mut second) = setup(Codec::Native);
    second.push(0);
    assert!(matches!(
        read(&mut client, &second),
        Err(ClientError::TrailingData { .. })
    ));
    assert_eq!(client.stats().malformed, 1);
    second.pop();
    read(&mut client, &second).unwrap();
}

#[test]
fn a_snapshot_before_the_gamestate_is_rejected() {
    let (_, _, first, _) = setup(Codec::Q3);
    let mut fresh: Client<Ent, Player> = Client::new();
    assert_eq!(
        fresh.read_snapshot(0, &first),
        Err(ClientError::NoGamestate)
    );
    assert_eq!(fresh.stats().no_gamestate, 1);
}

#[test]
fn a_missing_base_is_rejected_and_asks_for_a_full_update() {
    let (_, client, _, second) = setup(Codec::Q3);
    let mut other = client.clone();
    other.clear_snapshots();
    assert_eq!(
        read(&mut other, &second),
        Err(ClientError::BaseMissing {
            sequence: 1,
            base: 0
        })
    );
    assert!(other.needs_full_update());
}

#[test]
fn misplaced_messages_and_impossible_distances_are_rejected() {
    let (mut server, mut client, first, _) = setup(Codec::Native);
    assert_eq!(
        client.read_message(&first),
        Err(ClientError::SnapshotWithoutSequence)
    );
    let mut gamestate = Vec::new();
    server.write_gamestate(&mut gamestate).unwrap();
    assert_eq!(
        client.read_snapshot(5, &gamestate),
        Err(ClientError::NotASnapshot(MessageKind::Gamestate))
    );
    // A delta 9 back from snapshot 2 (distance less one, exp-Golomb 1).
    let bad_distance = encode(|w| {
        MessageKind::Delta.write(w).unwrap();
        put_exp_golomb(w, 8, 1).unwrap();
    });
    assert_eq!(
        client.read_snapshot(2, &bad_distance),
        Err(ClientError::BadDeltaDistance {
            sequence: 2,
            distance: 9
        })
    );
    assert_eq!(client.stats().malformed, 3);
}

#[test]
fn out_of_range_entity_numbers_are_rejected() {
    for codec in CODECS {
        // The client learns a limit of 20 from the gamestate; a server with
        // a larger range then sends entity 30.
        let small = ServerConfig {
            max_entities: 20,
            ..ServerConfig::for_codec(codec)
        };
        let mut small_server: Server<Ent, Player> = Server::new(small).unwrap();
        let mut client: Client<Ent, Player> = Client::new();
        connect(&mut small_server, &mut client);
        assert_eq!(client.entity_limit(), Some(20));
        let mut big = server_with_world(ServerConfig::for_codec(codec));
        let id = big.add_client(ClientSettings::unlimited()).unwrap();
        big.commit_frame(0).unwrap();
        let mut bytes = Vec::new();
        let info = build(&mut big, id, &mut bytes);
        let error = client.read_snapshot(info.sequence, &bytes).unwrap_err();
        assert_eq!(
            error,
            ClientError::EntityOutOfRange {
                number: 30,
                limit: 20
            }
        );
        assert!(error.to_string().contains("outside 0..20"));
        assert_eq!(client.stats().out_of_range, 1);
        assert!(client.newest().is_none());
    }
}

#[test]
fn removing_an_entity_the_base_lacks_is_rejected() {
    for codec in CODECS {
        let (_, mut client, _, _) = setup(codec);
        let message = encode(|w| {
            full_header(w, 7);
            codec
                .write_delta(w, &Player::default(), &Player::default())
                .unwrap();
            let old = Ent::default();
            codec
                .write_entity(
                    w,
                    None,
                    5,
                    EntityUpdate::Removed {
                        old: &old,
                        held: Held::nothing(),
                    },
                )
                .unwrap();
            codec.write_entities_end(w, Some(5), &old).unwrap();
        });
        assert_eq!(
            client.read_snapshot(7, &message),
            Err(ClientError::RemovedUnknownEntity { number: 5 })
        );
    }
}

#[test]
fn unsorted_entity_lists_and_bad_field_data_are_malformed() {
    let (_, mut client, _, _) = setup(Codec::Q3);
    let zero = Ent::default();
    let one = Ent {
        x: 1.0,
        ..Ent::default()
    };
    let unsorted = encode(|w| {
        full_header(w, 7);
        Codec::Q3
            .write_delta(w, &Player::default(), &Player::default())
            .unwrap();
        for number in [8, 3] {
            let update = EntityUpdate::Delta {
                base: &zero,
                new: &one,
                force: true,
            };
            Codec::Q3.write_entity(w, None, number, update).unwrap();
        }
        Codec::Q3.write_entities_end(w, Some(3), &zero).unwrap();
    });
    let error = client.read_snapshot(7, &unsorted).unwrap_err();
    assert!(matches!(error, ClientError::Malformed(_)), "{error}");
    assert!(error.to_string().contains("sorted"));
    // A Quake 3 entity whose last-changed count exceeds its fields.
    let bad_lc = encode(|w| {
        full_header(w, 7);
        Codec::Q3
            .write_delta(w, &Player::default(), &Player::default())
            .unwrap();
        w.put_bits(2, 10).unwrap();
        w.put_bit(false).unwrap();
        w.put_bit(true).unwrap();
        w.put_u8(200).unwrap();
    });
    let error = client.read_snapshot(7, &bad_lc).unwrap_err();
    assert!(error.to_string().contains("last-changed"), "{error}");
    assert_eq!(client.stats().malformed, 2);
}

fn gamestate_bits(w: &mut BitWriter<'_>, codec: u32, limit: u32, fingerprint: u32) {
    MessageKind::Gamestate.write(w).unwrap();
    w.put_bits(codec, 2).unwrap();
    w.put_bits(limit - 1, 16).unwrap();
    w.put_bits(fingerprint, 32).unwrap();
}

#[test]
fn bad_gamestates_are_rejected() {
    let mut client: Client<Ent, Player> = Client::new();
    let fingerprint = client.fingerprint();

    let unknown_codec = encode(|w| gamestate_bits(w, 3, 10, fingerprint));
    assert_eq!(
        client.read_message(&unknown_codec),
        Err(ClientError::UnknownCodec(3))
    );
    let too_many_for_q3 = encode(|w| gamestate_bits(w, 0, 2000, fingerprint));
    assert_eq!(
        client.read_message(&too_many_for_q3),
        Err(ClientError::EntityLimit { limit: 2000 })
    );
    let wrong_types = encode(|w| gamestate_bits(w, 1, 10, fingerprint ^ 1));
    assert_eq!(
        client.read_message(&wrong_types),
        Err(ClientError::FingerprintMismatch {
            expected: fingerprint,
            found: fingerprint ^ 1
        })
    );
    let unsorted_configstrings = encode(|w| {
        gamestate_bits(w, 1, 10, fingerprint);
        w.put_bits(2, 11).unwrap();
        w.put_bits(5, 10).unwrap();
        w.put_str("a", 8).unwrap();
        w.put_bits(5, 10).unwrap();
        w.put_str("b", 8).unwrap();
    });
    let error = client.read_message(&unsorted_configstrings).unwrap_err();
    assert!(error.to_string().contains("configstring index"), "{error}");
    let too_many_configstrings = encode(|w| {
        gamestate_bits(w, 1, 10, fingerprint);
        w.put_bits(2000, 11).unwrap();
    });
    let error = client.read_message(&too_many_configstrings).unwrap_err();
    assert!(error.to_string().contains("configstring count"), "{error}");
    let not_utf8 = encode(|w| {
        gamestate_bits(w, 1, 10, fingerprint);
        w.put_bits(1, 11).unwrap();
        w.put_bits(0, 10).unwrap();
        w.put_bytes(&[0xff, 0xfe, 0]).unwrap();
    });
    let error = client.read_message(&not_utf8).unwrap_err();
    assert!(error.to_string().contains("UTF-8"), "{error}");
    let removal_baseline = encode(|w| {
        gamestate_bits(w, 1, 10, fingerprint);
        w.put_bits(0, 11).unwrap();
        let old = Ent::default();
        Codec::Native
            .write_entity(
                w,
                None,
                3,
                EntityUpdate::Removed {
                    old: &old,
                    held: Held::nothing(),
                },
            )
            .unwrap();
        Codec::Native.write_entities_end(w, Some(3), &old).unwrap();
    });
    let error = client.read_message(&removal_baseline).unwrap_err();
    assert!(error.to_string().contains("spawn baseline"), "{error}");
    let baseline_out_of_range = encode(|w| {
        gamestate_bits(w, 1, 10, fingerprint);
        w.put_bits(0, 11).unwrap();
        let zero = Ent::default();
        let update = EntityUpdate::Delta {
            base: &zero,
            new: &zero,
            force: true,
        };
        Codec::Native.write_entity(w, None, 12, update).unwrap();
        Codec::Native
            .write_entities_end(w, Some(12), &zero)
            .unwrap();
    });
    assert_eq!(
        client.read_message(&baseline_out_of_range),
        Err(ClientError::EntityOutOfRange {
            number: 12,
            limit: 10
        })
    );
    assert_eq!(client.stats().malformed, 7);
    assert_eq!(client.stats().out_of_range, 1);
    assert!(client.gamestate().is_none());
}

#[test]
fn bad_configstring_messages_are_rejected() {
    let mut client: Client<Ent, Player> = Client::new();
    let too_long = encode(|w| {
        MessageKind::Configstring.write(w).unwrap();
        w.put_bits(1, 10).unwrap();
        w.put_bytes(&[b'a'; 200]).unwrap();
    });
    // 200 bytes without a terminator run off the end.
    assert!(matches!(
        client.read_message(&too_long),
        Err(ClientError::Malformed(_))
    ));
    let mut long = vec![0u8; 1100];
    let mut writer = BitWriter::new(&mut long);
    MessageKind::Configstring.write(&mut writer).unwrap();
    writer.put_bits(1, 10).unwrap();
    writer.put_bytes(&[b'a'; 1030]).unwrap();
    writer.put_u8(0).unwrap();
    let len = writer.finish();
    let error = client.read_message(&long[..len]).unwrap_err();
    assert!(error.to_string().contains("exceeds its bound"), "{error}");
}

#[test]
fn a_configstring_change_applies_in_order() {
    let (mut server, mut client, _, _) = setup(Codec::Q3);
    assert_eq!(client.gamestate().unwrap().configstring(0), Some("map"));
    server.set_configstring(0, "q3dm17").unwrap();
    server.set_configstring(9, "player one").unwrap();
    for index in [0, 9] {
        let mut bytes = Vec::new();
        server.write_configstring(index, &mut bytes).unwrap();
        assert_eq!(
            client.read_message(&bytes).unwrap(),
            Received::Configstring { index }
        );
    }
    let gamestate = client.gamestate().unwrap();
    assert_eq!(gamestate.configstring(0), Some("q3dm17"));
    assert_eq!(gamestate.configstring(9), Some("player one"));
    // Baselines arrive as wire values (the quantized angle's nearest step).
    assert_eq!(
        gamestate.baseline(4),
        Some(&fields::NetFields::normalized(&Ent::default()))
    );
    assert_eq!(client.stats().configstrings, 2);
    // Baselines are sealed once a gamestate went out.
    assert_eq!(
        server.set_baseline(4, None),
        Err(netq3_snapshot::ServerError::GamestateSealed)
    );
}

#[test]
fn random_corruption_never_panics_and_never_half_applies() {
    let mut rng = Rng::new(7);
    for codec in CODECS {
        let (_, client, first, second) = setup(codec);
        for round in 0..3000 {
            let (sequence, mut message) = if round % 2 == 0 {
                (1, second.clone())
            } else {
                (0, first.clone())
            };
            for _ in 0..=rng.below(3) {
                let bit = rng.below(message.len() as u64 * 8) as usize;
                message[bit / 8] ^= 1 << (bit % 8);
            }
            let mut probe = client.clone();
            match probe.read_snapshot(sequence, &message) {
                Ok(_) => {}
                Err(_) => {
                    assert_eq!(probe.stats().rejected(), 1);
                    assert_eq!(probe.newest(), client.newest());
                }
            }
        }
    }
}
