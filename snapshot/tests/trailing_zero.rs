//! A bit-stream snapshot message leaves its last byte out when that byte is
//! zero (`MessageCoding::sent_len`), and the client reads it with the byte
//! put back: the same snapshots arrive in fewer bytes.

mod common;

use common::*;
use fields::Codec;
use netq3_snapshot::{Client, ClientError, ClientSettings, Server, ServerConfig};

/// A stream of mostly small deltas (an entity or two moving now and then,
/// the player's health changing), every snapshot acknowledged: returns the
/// messages as sent with their coded bits and sequences.
fn stream() -> Vec<(Vec<u8>, usize, u32)> {
    let config = ServerConfig {
        checksum_interval: 0,
        ..ServerConfig::for_codec(Codec::Native)
    };
    let mut server: Server<Ent, Player> = Server::new(config).unwrap();
    let id = server.add_client(ClientSettings::unlimited()).unwrap();
    let mut client: Client<Ent, Player> = Client::new();
    connect(&mut server, &mut client);
    let mut rng = Rng::new(0x7a11);
    for number in 0..4 {
        server
            .set_entity(
                number,
                Ent {
                    x: 8.0 * number as f32,
                    model: 3,
                    ..Ent::default()
                },
            )
            .unwrap();
    }
    let mut sent = Vec::new();
    let mut bytes = Vec::new();
    for frame in 0..200u32 {
        if rng.chance(0.3) {
            let number = rng.below(4) as u32;
            server.entity_mut(number).unwrap().x += rng.range(-20, 20) as f32;
        }
        if rng.chance(0.2) {
            let health = rng.range(1, 100) as i16;
            server
                .set_player_state(
                    id,
                    Player {
                        health,
                        ..Player::default()
                    },
                )
                .unwrap();
        }
        server.commit_frame(frame * 50).unwrap();
        let info = build(&mut server, id, &mut bytes);
        assert_eq!(info.bytes, bytes.len());
        if bytes.len() < info.bits.div_ceil(8) {
            probe_shortened(&client, info.sequence, &bytes);
        }
        client.read_snapshot(info.sequence, &bytes).unwrap();
        assert_matches_record(&server, id, &client);
        server.acknowledge(id, client.ack().unwrap()).unwrap();
        sent.push((bytes.clone(), info.bits, info.sequence));
    }
    sent
}

/// What a client makes of a shortened message's other forms: with its
/// zero byte sent after all it reads the same (the byte holds the
/// message's last bits); with one more zero byte it is refused.
fn probe_shortened(client: &Client<Ent, Player>, sequence: u32, bytes: &[u8]) {
    let mut whole = bytes.to_vec();
    whole.push(0);
    let (mut sent, mut probe) = (client.clone(), client.clone());
    sent.read_snapshot(sequence, bytes).unwrap();
    probe.read_snapshot(sequence, &whole).unwrap();
    assert_eq!(
        probe.newest().unwrap().player(),
        sent.newest().unwrap().player()
    );
    whole.push(0);
    assert!(matches!(
        client.clone().read_snapshot(sequence, &whole),
        Err(ClientError::TrailingData { .. })
    ));
    // A byte less is refused, or read as another snapshot (its last bits
    // read as zeros).
    let mut cut = client.clone();
    if cut
        .read_snapshot(sequence, &bytes[..bytes.len() - 1])
        .is_ok()
    {
        let (cut, sent) = (cut.newest().unwrap(), sent.newest().unwrap());
        assert!(
            cut.player() != sent.player()
                || cut.entities().collect::<Vec<_>>() != sent.entities().collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_last_zero_byte_is_left_out_and_the_snapshots_still_arrive() {
    let sent = stream();
    let shortened = sent
        .iter()
        .filter(|(bytes, bits, _)| bytes.len() < bits.div_ceil(8))
        .count();
    // Every message is its coded bits in whole bytes, or one byte fewer.
    for (bytes, bits, _) in &sent {
        assert!(bytes.len() + 1 >= bits.div_ceil(8) && bytes.len() <= bits.div_ceil(8));
        assert_ne!(bytes.last(), Some(&0), "a last zero byte is never sent");
    }
    assert_eq!((sent.len(), shortened), (200, 17));
}
