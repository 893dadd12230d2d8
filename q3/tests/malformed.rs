//! Malformed input: crafted messages for each kind of damage, and
//! property tests that mutate real records. Everything must come back as an
//! error (or a successful parse), never a panic.

mod common;

use std::sync::OnceLock;

use fields::{BitError, BitSink, BitWriter, HuffmanCode, HuffmanWriter};
use netq3_q3::reencode::{write_packet_entities, write_snapshot};
use netq3_q3::{
    svc, Baselines, Command, Dm68Decoder, Dm68Reader, EntityState, MessageError, PlayerState,
    Q3Client, Q3Error, Snapshot, Validity, MAX_MSGLEN,
};
use proptest::prelude::*;

/// A message built with Quake 3's Huffman bitstream: a reliable acknowledge,
/// then whatever `body` writes.
fn message(body: impl FnOnce(&mut HuffmanWriter<'_, '_>)) -> Vec<u8> {
    let mut buf = vec![0u8; 2 * MAX_MSGLEN];
    let mut writer = BitWriter::new(&mut buf);
    let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
    sink.put_bits(7, 32).unwrap();
    body(&mut sink);
    let len = writer.finish();
    buf.truncate(len);
    buf
}

/// A snapshot header with no delta and an empty area mask.
fn snapshot_header(sink: &mut HuffmanWriter<'_, '_>) {
    sink.put_u8(svc::SNAPSHOT).unwrap();
    sink.put_bits(1000, 32).unwrap();
    sink.put_u8(0).unwrap();
    sink.put_u8(0).unwrap();
    sink.put_u8(0).unwrap();
}

/// An unchanged player state: lc 0, no arrays.
fn empty_player_state(sink: &mut HuffmanWriter<'_, '_>) {
    sink.put_u8(0).unwrap();
    sink.put_bit(false).unwrap();
}

fn parse(bytes: &[u8]) -> Result<netq3_q3::ParsedMessage, MessageError> {
    Q3Client::new().parse_message(10, bytes)
}

fn expect_bits_error(
    result: Result<netq3_q3::ParsedMessage, MessageError>,
    context: &str,
) -> BitError {
    match result {
        Err(MessageError::Bits { context: c, source }) if c.contains(context) => source,
        other => panic!("expected a bit error in {context}, got {other:?}"),
    }
}

#[test]
fn bad_command_bytes_are_errors_naming_the_bit() {
    for byte in [svc::BAD, 9, 10, 42, 255] {
        let mut ack_end = 0;
        let bytes = message(|sink| {
            ack_end = sink.bits_written();
            sink.put_u8(byte).unwrap();
        });
        match parse(&bytes) {
            Err(MessageError::BadCommand { byte: b, bit }) => {
                assert_eq!(b, byte);
                assert_eq!(bit, ack_end);
            }
            other => panic!("byte {byte}: {other:?}"),
        }
    }
    let bytes = message(|sink| {
        sink.put_u8(svc::GAMESTATE).unwrap();
        sink.put_bits(0, 32).unwrap();
        sink.put_u8(svc::SNAPSHOT).unwrap();
    });
    assert!(matches!(
        parse(&bytes),
        Err(MessageError::BadGamestateCommand { byte: 7, .. })
    ));
}

#[test]
fn lc_past_the_field_count_is_an_error() {
    let bytes = message(|sink| {
        snapshot_header(sink);
        sink.put_u8(49).unwrap(); // the player state has 48 scalar fields
    });
    let error = expect_bits_error(parse(&bytes), "player state");
    assert!(matches!(error, BitError::Invalid { .. }), "{error}");

    let bytes = message(|sink| {
        snapshot_header(sink);
        empty_player_state(sink);
        sink.put_bits(5, 10).unwrap();
        sink.put_bit(false).unwrap(); // not removed
        sink.put_bit(true).unwrap(); // has a delta
        sink.put_u8(52).unwrap(); // entities have 51 fields
    });
    let error = expect_bits_error(parse(&bytes), "entity 5");
    assert!(error.to_string().contains("52"), "{error}");
}

#[test]
fn unsorted_entity_lists_are_errors() {
    let bytes = message(|sink| {
        snapshot_header(sink);
        empty_player_state(sink);
        for number in [7, 3] {
            sink.put_bits(number, 10).unwrap();
            sink.put_bit(false).unwrap();
            sink.put_bit(false).unwrap();
        }
        sink.put_bits(1023, 10).unwrap();
        sink.put_u8(svc::EOF).unwrap();
    });
    expect_bits_error(parse(&bytes), "entity number");
}

#[test]
fn lengths_past_the_end_are_errors() {
    // Area mask longer than Quake 3 allows.
    let bytes = message(|sink| {
        sink.put_u8(svc::SNAPSHOT).unwrap();
        sink.put_bits(1000, 32).unwrap();
        sink.put_u8(0).unwrap();
        sink.put_u8(0).unwrap();
        sink.put_u8(33).unwrap();
    });
    assert!(matches!(
        parse(&bytes),
        Err(MessageError::AreamaskTooLong { len: 33, .. })
    ));

    // An area mask, string or entity list that runs past the message.
    let cut = |body: &dyn Fn(&mut HuffmanWriter<'_, '_>)| {
        let mut bytes = message(|sink| body(sink));
        bytes.truncate(bytes.len() - 2);
        parse(&bytes)
    };
    let areamask = |sink: &mut HuffmanWriter<'_, '_>| {
        sink.put_u8(svc::SNAPSHOT).unwrap();
        sink.put_bits(1000, 32).unwrap();
        sink.put_u8(0).unwrap();
        sink.put_u8(0).unwrap();
        sink.put_u8(32).unwrap();
        sink.put_bytes(&[0xAA; 32]).unwrap();
    };
    let error = expect_bits_error(cut(&areamask), "area mask");
    assert!(matches!(error, BitError::EndOfInput { .. }), "{error}");
    let command = |sink: &mut HuffmanWriter<'_, '_>| {
        sink.put_u8(svc::SERVER_COMMAND).unwrap();
        sink.put_bits(1, 32).unwrap();
        sink.put_bytes(b"print \"a long line of text\"").unwrap();
    };
    expect_bits_error(cut(&command), "server command");

    // A download chunk larger than a message.
    let bytes = message(|sink| {
        sink.put_u8(svc::DOWNLOAD).unwrap();
        sink.put_bits(0, 16).unwrap();
        sink.put_bits(100, 32).unwrap();
        sink.put_bits(20_000, 16).unwrap();
    });
    assert!(matches!(
        parse(&bytes),
        Err(MessageError::DownloadChunk { .. })
    ));

    // Out-of-range configstring indices (Quake 3 reads a signed short).
    for index in [1024u32, 0xFFFF] {
        let bytes = message(|sink| {
            sink.put_u8(svc::GAMESTATE).unwrap();
            sink.put_bits(0, 32).unwrap();
            sink.put_u8(svc::CONFIGSTRING).unwrap();
            sink.put_bits(index, 16).unwrap();
        });
        assert!(
            matches!(parse(&bytes), Err(MessageError::ConfigstringIndex { .. })),
            "{index}"
        );
    }

    // A message with no end marker.
    let bytes = message(|sink| sink.put_u8(svc::NOP).unwrap());
    expect_bits_error(parse(&bytes), "command byte");

    // A message longer than Quake 3's MAX_MSGLEN.
    assert!(matches!(
        parse(&vec![0; MAX_MSGLEN + 1]),
        Err(MessageError::TooLong { .. })
    ));
}

#[test]
fn record_lengths_are_bounded() {
    let record = |sequence: i32, length: i32, payload: &[u8]| {
        let mut out = sequence.to_le_bytes().to_vec();
        out.extend_from_slice(&length.to_le_bytes());
        out.extend_from_slice(payload);
        out
    };
    let gamestate = message(|sink| {
        sink.put_u8(svc::GAMESTATE).unwrap();
        sink.put_bits(0, 32).unwrap();
        sink.put_u8(svc::EOF).unwrap();
        sink.put_bits(0, 32).unwrap();
        sink.put_bits(0, 32).unwrap();
        sink.put_u8(svc::EOF).unwrap();
    });
    let first = record(1, gamestate.len() as i32, &gamestate);

    for length in [MAX_MSGLEN as i32 + 1, -2, i32::MIN] {
        let mut file = first.clone();
        file.extend(record(2, length, &[]));
        let mut reader = Dm68Reader::new(&file).unwrap();
        assert!(reader.next().unwrap().is_ok());
        match reader.next() {
            Some(Err(Q3Error::BadLength {
                record: 1,
                offset,
                length: l,
                ..
            })) => {
                assert_eq!(offset, first.len());
                assert_eq!(l, length);
            }
            other => panic!("{length}: {other:?}"),
        }
        assert!(reader.next().is_none(), "nothing follows an error");
    }

    // A length that runs past the end of the file is a truncation.
    let mut file = first.clone();
    file.extend(record(2, 100, &[1, 2, 3]));
    let items: Vec<_> = Dm68Decoder::new(&file).unwrap().collect();
    assert_eq!(items.len(), 2);
    assert!(items[0].is_ok());
    assert!(matches!(
        items[1],
        Err(Q3Error::Truncated {
            complete_records: 1,
            needed: 108,
            available: 11,
            ..
        })
    ));

    // With the end marker it is complete.
    let mut file = first.clone();
    file.extend(record(-1, -1, &[]));
    let items: Vec<_> = Dm68Decoder::new(&file).unwrap().collect();
    assert_eq!(items.len(), 1);
    assert!(items[0].is_ok());
}

#[test]
fn entity_numbers_at_or_above_1023_cannot_be_written() {
    let baselines = Baselines::default();
    assert!(baselines.get(1023).is_some());
    assert!(baselines.get(1024).is_none());
    for number in [1023, 1024, 5000] {
        let mut buf = vec![0u8; 1024];
        let mut writer = BitWriter::new(&mut buf);
        let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
        let entities = [(number, EntityState::default())];
        let result = write_packet_entities(&mut sink, &[], &entities, &baselines);
        assert!(result.is_err(), "{number}");
    }
}

fn entity(seed: i32) -> EntityState {
    EntityState {
        pos_tr_time: 1000 + seed,
        pos_tr_base_0: seed as f32 * 8.0,
        pos_tr_base_1: -0.5 * seed as f32,
        pos_tr_base_2: 24.0,
        e_type: 1,
        client_num: seed & 63,
        e_flags: 0x40000 | seed,
        frame: seed * 3,
        ..EntityState::default()
    }
}

/// Our encoder's output parses back to the same snapshot, including the
/// merge against a base (kept, changed, removed and new entities).
#[test]
fn written_snapshots_parse_back() {
    let mut client = Q3Client::new();
    let mut ps = PlayerState {
        command_time: 990,
        origin_0: 100.0,
        origin_1: -200.25,
        pm_time: -40,
        viewheight: -12,
        weapon: 7,
        ..PlayerState::default()
    };
    ps.stats[0] = 125;
    ps.stats[6] = -1;
    ps.powerups[2] = 123_456_789;
    let full = Snapshot {
        message_num: 10,
        delta_num: 0,
        server_time: 1000,
        snap_flags: 4,
        areamask: vec![0, 255, 3],
        ps,
        entities: vec![(1, entity(1)), (5, entity(5)), (9, entity(9))],
        server_command_num: 0,
        validity: Validity::Valid,
    };
    let mut next = full.clone();
    next.message_num = 11;
    next.delta_num = 1;
    next.server_time = 1050;
    next.ps.origin_0 = 101.5;
    next.ps.ammo[5] = 30;
    next.entities = vec![(1, entity(1)), (7, entity(70)), (9, entity(90))];

    let baselines = Baselines::default();
    let mut base = None;
    for snapshot in [&full, &next] {
        let bytes = message(|sink| {
            write_snapshot(sink, snapshot, base, &baselines).unwrap();
            sink.put_u8(svc::EOF).unwrap();
        });
        let parsed = client.parse_message(snapshot.message_num, &bytes).unwrap();
        let [command] = &parsed.commands[..] else {
            panic!("one command expected");
        };
        let Command::Snapshot(decoded) = &command.command else {
            panic!("a snapshot expected");
        };
        assert_eq!(*decoded.snapshot, *snapshot);
        base = Some(snapshot);
    }
    assert_eq!(client.latest_snapshot().unwrap().entities, next.entities);
}

/// A record of the primed demo: message start and length in the file, its
/// sequence, and the client state before it.
type PrimedRecord = (usize, usize, i32, Q3Client);

/// Client states before each of the first records of a small real demo,
/// so mutated records are parsed in the state Quake 3 would have.
fn primed() -> &'static (Vec<u8>, Vec<PrimedRecord>) {
    static PRIMED: OnceLock<(Vec<u8>, Vec<PrimedRecord>)> = OnceLock::new();
    PRIMED.get_or_init(|| {
        let data = common::read_demo("one_frag_only_with_plasma.dm_68");
        let mut client = Q3Client::new();
        let mut states = Vec::new();
        for record in Dm68Reader::new(&data).unwrap().take(48) {
            let record = record.unwrap();
            let start = record.offset + 8;
            states.push((start, record.message.len(), record.sequence, client.clone()));
            client
                .parse_message(record.sequence, record.message)
                .unwrap();
        }
        (data, states)
    })
}

/// The fuzz targets' check of a parsed message (`netq3_q3::fuzzing`).
fn check_parsed(parsed: &netq3_q3::ParsedMessage, len: usize) {
    netq3_q3::fuzzing::check_message(parsed, len);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn mutated_real_records_parse_or_fail_cleanly(
        index in 0usize..48,
        flips in prop::collection::vec(any::<usize>(), 0..8),
        cut in prop::option::of(any::<usize>()),
    ) {
        if !common::here("mutated_real_records_parse_or_fail_cleanly") {
            return Ok(());
        }
        let (data, states) = primed();
        let (start, len, sequence, client) = &states[index];
        let mut bytes = data[*start..*start + *len].to_vec();
        for flip in flips {
            let bit = flip % (bytes.len() * 8);
            bytes[bit / 8] ^= 1 << (bit % 8);
        }
        if let Some(cut) = cut {
            bytes.truncate(cut % (bytes.len() + 1));
        }
        let mut client = client.clone();
        match client.parse_message(*sequence, &bytes) {
            Ok(parsed) => check_parsed(&parsed, bytes.len()),
            Err(error) => {
                let _ = error.to_string();
                if let Some(bit) = error.bit() {
                    prop_assert!(bit <= bytes.len() * 8);
                }
            }
        }
    }

    #[test]
    fn mutated_files_decode_or_fail_cleanly(
        flips in prop::collection::vec(any::<usize>(), 1..6),
        cut in prop::option::of(any::<usize>()),
    ) {
        if !common::here("mutated_files_decode_or_fail_cleanly") {
            return Ok(());
        }
        let mut data = common::read_demo("dm_68_cpma_core_gameplay_dev.dm_68");
        for flip in flips {
            let bit = flip % (data.len() * 8);
            data[bit / 8] ^= 1 << (bit % 8);
        }
        if let Some(cut) = cut {
            data.truncate(cut % (data.len() + 1));
        }
        let decoder = Dm68Decoder::from_reader(Dm68Reader::new_unchecked(&data));
        let mut records = 0;
        for item in decoder {
            match item {
                Ok(record) => {
                    prop_assert_eq!(record.record.index, records);
                    check_parsed(&record.message, record.record.message.len());
                    records += 1;
                }
                Err(error) => {
                    prop_assert!(error.record().is_none_or(|r| r == records), "{}", error);
                    let _ = error.to_string();
                }
            }
        }
    }
}
