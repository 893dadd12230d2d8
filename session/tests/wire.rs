//! The session's wire messages: round trips of valid messages and
//! packets, exact sizes, and mutated valid packets (never a panic).

use fields::Codec;
use netq3_session::fuzzing::FuzzCommand;
use netq3_session::wire::{
    ClientMessage, CommandPacket, ServerMessage, SnapshotPayload, WireError,
    MAX_COMMANDS_PER_PACKET, MAX_COMMAND_PACKET,
};
use netq3_session::ViewStamp;
use proptest::prelude::*;

fn command() -> impl Strategy<Value = FuzzCommand> {
    (
        any::<u8>(),
        0u8..16,
        any::<i8>(),
        any::<i8>(),
        any::<u16>(),
        any::<i16>(),
    )
        .prop_map(|(msec, buttons, forward, right, yaw, pitch)| FuzzCommand {
            msec,
            buttons,
            forward,
            right,
            yaw,
            pitch,
        })
}

/// A run of commands as a player makes them: mostly small changes.
fn commands() -> impl Strategy<Value = Vec<FuzzCommand>> {
    (
        command(),
        prop::collection::vec((0u8..4, any::<i16>()), 1..100),
    )
        .prop_map(|(start, steps)| {
            let mut c = start;
            steps
                .into_iter()
                .map(|(which, delta)| {
                    match which {
                        0 => c.yaw = c.yaw.wrapping_add(delta as u16 % 512),
                        1 => c.forward = (delta % 127) as i8,
                        2 => c.buttons = (delta as u8) % 16,
                        _ => c.msec = 16 + (delta as u8 % 2),
                    }
                    c
                })
                .collect()
        })
}

/// Views as a client makes them: the same snapshots for a few commands,
/// then newer ones (or, now and then, none or anything at all).
fn views(len: usize) -> impl Strategy<Value = Vec<Option<ViewStamp>>> {
    (
        any::<u8>(),
        prop::collection::vec((0u8..10, 0u8..4, -120i32..120, any::<(u8, u8, i32)>()), len),
    )
        .prop_map(|(start, steps)| {
            let mut newest = start;
            steps
                .into_iter()
                .map(|(kind, step, offset, wild)| match kind {
                    0 => None,
                    1 => Some(ViewStamp {
                        newest: wild.0,
                        previous_back: wild.1 % 32,
                        offset_ms: wild.2 % (1 << 20),
                    }),
                    _ => {
                        newest = newest.wrapping_add(step / 2);
                        Some(ViewStamp {
                            newest,
                            previous_back: 1 + step % 2,
                            offset_ms: offset,
                        })
                    }
                })
                .collect()
        })
}

fn codec() -> impl Strategy<Value = Codec> {
    prop_oneof![Just(Codec::Native), Just(Codec::Q3)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn command_packets_round_trip(codec in codec(), first in 1u32..u32::MAX / 2, list in commands()) {
        let mut buf = [0u8; MAX_COMMAND_PACKET];
        let (len, count) = CommandPacket::encode(codec, first, list.iter(), &mut buf).unwrap();
        prop_assert_eq!(count, list.len().min(MAX_COMMANDS_PER_PACKET));
        let mut out = Vec::new();
        CommandPacket::decode(codec, &buf[..len], &mut out).unwrap();
        let expected: Vec<(u32, FuzzCommand)> =
            list.iter().take(count).enumerate().map(|(i, c)| (first + i as u32, *c)).collect();
        prop_assert_eq!(out, expected);
    }

    #[test]
    fn based_packets_round_trip_and_need_their_base(
        codec in codec(),
        first in 2u32..u32::MAX / 2,
        base in command(),
        list in commands(),
    ) {
        let mut buf = [0u8; MAX_COMMAND_PACKET];
        let (len, count) =
            CommandPacket::encode_from(codec, first, Some(&base), list.iter(), &mut buf).unwrap();
        let mut out = Vec::new();
        let based = CommandPacket::decode_with(codec, &buf[..len], |n| {
            assert_eq!(n, first - 1);
            Some(base)
        }, &mut out).unwrap();
        prop_assert!(based);
        prop_assert_eq!(out.len(), count);
        prop_assert!(out.iter().zip(&list).all(|((_, a), b)| a == b));
        prop_assert_eq!(
            CommandPacket::decode(codec, &buf[..len], &mut out),
            Err(WireError::MissingBase(first - 1))
        );
    }

    #[test]
    fn viewed_packets_round_trip_every_view(
        codec in codec(),
        first in 2u32..u32::MAX / 2,
        base in command(),
        (list, views) in commands().prop_flat_map(|l| { let n = l.len(); (Just(l), views(n)) }),
    ) {
        let mut buf = [0u8; MAX_COMMAND_PACKET];
        let (len, count) = CommandPacket::encode_viewed(
            codec,
            first,
            Some(&base),
            list.iter().zip(views.iter().map(Option::as_ref)),
            &mut buf,
        )
        .unwrap();
        prop_assert_eq!(count, list.len().min(MAX_COMMANDS_PER_PACKET));
        let mut out = Vec::new();
        prop_assert!(CommandPacket::decode_viewed(codec, &buf[..len], |_| Some(base), &mut out).unwrap());
        let expected: Vec<(u32, FuzzCommand, Option<ViewStamp>)> = list
            .iter()
            .zip(&views)
            .take(count)
            .enumerate()
            .map(|(i, (c, v))| (first + i as u32, *c, *v))
            .collect();
        prop_assert_eq!(out, expected);
    }

    #[test]
    fn a_small_buffer_takes_a_prefix(codec in codec(), list in commands(), size in 6usize..64) {
        let mut buf = vec![0u8; size];
        let (len, count) = CommandPacket::encode(codec, 9, list.iter(), &mut buf).unwrap();
        prop_assert!(len <= size);
        if count > 0 {
            let mut out = Vec::new();
            CommandPacket::decode(codec, &buf[..len], &mut out).unwrap();
            prop_assert_eq!(out.len(), count);
            prop_assert_eq!(out.last().map(|(_, c)| *c), Some(list[count - 1]));
        }
    }

    #[test]
    fn mutated_packets_never_panic(
        codec in codec(),
        (list, views) in commands().prop_flat_map(|l| { let n = l.len(); (Just(l), views(n)) }),
        flips in prop::collection::vec((any::<usize>(), 0u8..8), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut buf = [0u8; MAX_COMMAND_PACKET];
        let (len, _) = CommandPacket::encode_viewed(
            codec,
            1,
            None,
            list.iter().zip(views.iter().map(Option::as_ref)),
            &mut buf,
        )
        .unwrap();
        let mut bytes = buf[..len].to_vec();
        for (at, bit) in flips {
            let i = at % bytes.len();
            bytes[i] ^= 1 << bit;
        }
        bytes.truncate(cut.index(bytes.len() + 1));
        let mut input = vec![if codec == Codec::Native { 1 } else { 2 }];
        input.extend_from_slice(&bytes);
        // Decodes or errs; what decodes re-encodes to the same commands.
        netq3_session::fuzzing::client_input(&input);
    }

    #[test]
    fn reliable_messages_round_trip(
        epoch in any::<u8>(),
        bytes in prop::collection::vec(any::<u8>(), 0..64),
        snaps in any::<u16>(),
        rate in any::<u32>(),
        name in "[a-zA-Z0-9 éü]{0,40}",
    ) {
        let mut out = Vec::new();
        for message in [
            ServerMessage::Gamestate { epoch, slot: rate as u16, bytes: &bytes },
            ServerMessage::Configstring(&bytes),
            ServerMessage::Game(&bytes),
        ] {
            message.encode(&mut out);
            prop_assert_eq!(ServerMessage::decode(&out), Ok(message));
        }
        let clipped = netq3_session::wire::clip(&name, netq3_session::wire::MAX_NAME);
        for message in [
            ClientMessage::Hello { snaps, rate, name: clipped },
            ClientMessage::Begin { epoch },
            ClientMessage::FullUpdate { epoch },
            ClientMessage::Game(&bytes),
        ] {
            message.encode(&mut out);
            prop_assert_eq!(ClientMessage::decode(&out), Ok(message));
        }
        SnapshotPayload { epoch, bytes: &bytes }.encode(&mut out);
        prop_assert_eq!(SnapshotPayload::decode(&out), Ok(SnapshotPayload { epoch, bytes: &bytes }));
    }

    #[test]
    fn any_bytes_decode_or_err(bytes in prop::collection::vec(any::<u8>(), 0..200), which in 0u8..6) {
        let mut input = vec![which];
        input.extend_from_slice(&bytes);
        netq3_session::fuzzing::client_input(&input);
        netq3_session::fuzzing::server_input(&input);
    }
}

#[test]
fn repeated_commands_cost_almost_nothing() {
    let c = FuzzCommand {
        msec: 16,
        buttons: 1,
        forward: 127,
        right: -64,
        yaw: 12_345,
        pitch: -300,
    };
    let mut buf = [0u8; MAX_COMMAND_PACKET];
    let (one, _) = CommandPacket::encode(Codec::Native, 5, [c].iter(), &mut buf).unwrap();
    let (ten, count) = CommandPacket::encode(Codec::Native, 5, [c; 10].iter(), &mut buf).unwrap();
    assert_eq!(count, 10);
    // Header and the first command in full, then nine unchanged deltas of
    // about a bit each.
    assert_eq!(one, 16);
    assert_eq!(ten, 17);
    let (q3, _) = CommandPacket::encode(Codec::Q3, 5, [c; 10].iter(), &mut buf).unwrap();
    assert_eq!(q3, 24);
    // Based on the same command the server holds: the first costs a bit too.
    let (based, _) =
        CommandPacket::encode_from(Codec::Native, 5, Some(&c), [c; 10].iter(), &mut buf).unwrap();
    assert_eq!(based, 7);
}

#[test]
fn views_cost_a_few_bits_per_command() {
    let c = FuzzCommand {
        msec: 16,
        buttons: 1,
        forward: 127,
        right: -64,
        yaw: 12_345,
        pitch: -300,
    };
    let mut buf = [0u8; MAX_COMMAND_PACKET];
    let (plain, _) =
        CommandPacket::encode_from(Codec::Native, 5, Some(&c), [c; 3].iter(), &mut buf).unwrap();
    // Three commands of a 60 fps client in one packet: the same two
    // snapshots, the render time 16 or 17 ms later each time.
    let view = |offset_ms| ViewStamp {
        newest: 200,
        previous_back: 1,
        offset_ms,
    };
    let views = [view(-40), view(-24), view(-7)];
    let (viewed, count) = CommandPacket::encode_viewed(
        Codec::Native,
        5,
        Some(&c),
        [c; 3].iter().zip(views.iter().map(Some)),
        &mut buf,
    )
    .unwrap();
    assert_eq!(count, 3);
    // 1 + 1 + 8 + 1 + 10 bits for the first view, 2 + 8 for the others.
    assert_eq!(plain, 6);
    assert_eq!(viewed, 11);
    let mut out = Vec::new();
    CommandPacket::decode_viewed(Codec::Native, &buf[..viewed], |_| Some(c), &mut out).unwrap();
    assert_eq!(
        out.iter().map(|(_, _, v)| *v).collect::<Vec<_>>(),
        views.map(Some)
    );
    // A view "the same snapshots as before" with no view before it is an error.
    let mut bad = [0u8; 32];
    let bits = {
        use fields::{BitSink, BitWriter};
        let mut w = BitWriter::new(&mut bad);
        w.put_bits(5, 32).unwrap();
        w.put_bits(0, 6).unwrap();
        w.put_bit(false).unwrap();
        w.put_bit(true).unwrap();
        Codec::Native
            .write_delta(&mut w, &FuzzCommand::default(), &c)
            .unwrap();
        w.put_bit(true).unwrap();
        w.put_bit(true).unwrap();
        w.put_bits(0, 12).unwrap();
        w.bits_written()
    };
    let mut out: Vec<(u32, FuzzCommand, Option<ViewStamp>)> = Vec::new();
    assert!(matches!(
        CommandPacket::decode_viewed(Codec::Native, &bad[..bits.div_ceil(8)], |_| None, &mut out),
        Err(WireError::BadView(_))
    ));
}

#[test]
fn bad_packets_are_errors() {
    let mut out: Vec<(u32, FuzzCommand)> = Vec::new();
    assert!(matches!(
        CommandPacket::decode(Codec::Native, &[], &mut out),
        Err(WireError::Bits(_))
    ));
    // Command number 0.
    assert!(matches!(
        CommandPacket::decode(Codec::Native, &[0, 0, 0, 0, 0, 0, 0], &mut out),
        Err(WireError::BadNumber { first: 0, .. })
    ));
    // Numbers that overflow u32.
    let mut bytes = vec![0xff, 0xff, 0xff, 0xff, 0x3f];
    bytes.extend_from_slice(&[0; 40]);
    assert!(matches!(
        CommandPacket::decode(Codec::Native, &bytes, &mut out),
        Err(WireError::BadNumber { .. })
    ));
    let big = vec![1u8; MAX_COMMAND_PACKET + 1];
    assert_eq!(
        CommandPacket::decode(Codec::Native, &big, &mut out),
        Err(WireError::TooLarge(MAX_COMMAND_PACKET + 1))
    );
    assert_eq!(ServerMessage::decode(&[99]), Err(WireError::UnknownTag(99)));
    assert!(ServerMessage::decode(&[]).is_err());
    assert!(ClientMessage::decode(&[16, 1]).is_err());
    let mut long = vec![16, 0, 0, 0, 0, 0, 0];
    long.extend_from_slice(&[b'a'; 33]);
    assert_eq!(ClientMessage::decode(&long), Err(WireError::BadName));
}
