//! The live client's state machine with simulated time and a scripted
//! server: handshake retries, rejections, timeouts, server disconnects,
//! acknowledgements.

use std::time::{Duration, Instant};

use fields::huffman::adaptive_decompress;
use fields::{BitReader, BitSource, HuffmanReader};
use fields::{BitSink, BitWriter, HuffmanCode, HuffmanWriter};
use netq3_q3::live::netchan::{
    challenge_word, scramble, Framing, CLIENT_SCRAMBLE_START, SERVER_SCRAMBLE_START,
};
use netq3_q3::live::oob::{info_value, text_packet};
use netq3_q3::live::{End, Event, LiveClient, LiveConfig, LiveError, Protocol, Stage};

const CHALLENGE: i32 = 0x5151_2323;

fn config(protocol: Protocol) -> LiveConfig {
    LiveConfig {
        protocol,
        qport: 777,
        client_challenge: 99,
        ..LiveConfig::default()
    }
}

fn drain(client: &mut LiveClient) -> Vec<Vec<u8>> {
    std::iter::from_fn(|| client.next_datagram()).collect()
}

/// A server message: reliable acknowledge, server commands, end.
fn server_message(acknowledge: i32, commands: &[(i32, &str)]) -> Vec<u8> {
    let mut buf = vec![0u8; 4096];
    let mut writer = BitWriter::new(&mut buf);
    let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
    sink.put_bits(acknowledge as u32, 32).unwrap();
    for (sequence, text) in commands {
        sink.put_u8(netq3_q3::svc::SERVER_COMMAND).unwrap();
        sink.put_bits(*sequence as u32, 32).unwrap();
        sink.put_str(text, 1000).unwrap();
    }
    sink.put_u8(netq3_q3::svc::EOF).unwrap();
    let len = sink.bits_written() / 8 + 1;
    buf.truncate(len);
    buf
}

fn sequenced(sequence: i32, message: &[u8]) -> Vec<u8> {
    let mut datagram = (sequence as u32).to_le_bytes().to_vec();
    datagram.extend_from_slice(&challenge_word(CHALLENGE, sequence).to_le_bytes());
    datagram.extend_from_slice(message);
    datagram
}

/// A client through the handshake at `t0` (protocol 71).
fn connected(t0: Instant) -> LiveClient {
    let mut client = LiveClient::new(config(Protocol::V71), t0);
    client.poll(t0);
    assert_eq!(
        drain(&mut client),
        vec![text_packet("getchallenge 99 Quake3Arena")]
    );
    client.handle_datagram(
        t0,
        &text_packet(&format!("challengeResponse {CHALLENGE} 99 71")),
    );
    let connect = drain(&mut client);
    assert_eq!(connect.len(), 1);
    assert!(connect[0].starts_with(b"\xff\xff\xff\xffconnect "));
    let userinfo =
        String::from_utf8(adaptive_decompress(&connect[0][12..], 4096).unwrap()).unwrap();
    let userinfo = userinfo.trim_matches('"');
    assert_eq!(info_value(userinfo, "protocol"), "71");
    assert_eq!(info_value(userinfo, "qport"), "777");
    assert_eq!(info_value(userinfo, "challenge"), CHALLENGE.to_string());
    assert_eq!(info_value(userinfo, "cl_guid").len(), 32);
    client.handle_datagram(t0, &text_packet(&format!("connectResponse {CHALLENGE}")));
    assert_eq!(client.stage(), Stage::Connected);
    client
}

#[test]
fn handshake_is_retried_then_given_up() {
    let t0 = Instant::now();
    let cfg = config(Protocol::V71);
    let mut client = LiveClient::new(cfg.clone(), t0);
    let mut sent = 0;
    for step in 0..100u64 {
        let now = t0 + Duration::from_millis(step * 200);
        client.poll(now);
        sent += drain(&mut client).len();
    }
    assert_eq!(sent, cfg.connect_attempts as usize);
    assert!(
        matches!(
            client.end(),
            Some(End::Error(LiveError::NoAnswer { attempts: 5, .. }))
        ),
        "{:?}",
        client.end()
    );
}

#[test]
fn answers_to_someone_else_are_ignored_and_rejections_end_the_session() {
    let t0 = Instant::now();
    let mut client = LiveClient::new(config(Protocol::V71), t0);
    client.poll(t0);
    drain(&mut client);
    client.handle_datagram(t0, &text_packet("challengeResponse 5 12345 71"));
    assert_eq!(client.stage(), Stage::Challenging);
    client.handle_datagram(t0, &text_packet("connectResponse 5"));
    assert_eq!(client.stage(), Stage::Challenging);
    client.handle_datagram(t0, &text_packet("print\nServer is full.\n"));
    assert_eq!(client.stage(), Stage::Ended);
    match client.end() {
        Some(End::Error(LiveError::Rejected(text))) => assert_eq!(text, "Server is full."),
        other => panic!("{other:?}"),
    }
}

#[test]
fn packets_acknowledge_messages_and_commands_and_silence_times_out() {
    let t0 = Instant::now();
    let mut client = connected(t0);
    // Under 71 the first sequenced packet waits for the server's first
    // datagram (which tells the framing), a second at most; then ioquake3's
    // framing is assumed, and packets go once a second until a gamestate.
    assert!(drain(&mut client).is_empty());
    client.poll(t0 + Duration::from_millis(500));
    assert!(drain(&mut client).is_empty());
    client.poll(t0 + Duration::from_millis(1000));
    let first = drain(&mut client);
    assert_eq!(first.len(), 1);
    assert_eq!(&first[0][..4], &1u32.to_le_bytes());
    assert_eq!(&first[0][4..6], &777u16.to_le_bytes());
    assert_eq!(
        &first[0][6..10],
        &challenge_word(CHALLENGE, 1).to_le_bytes()
    );
    assert_eq!(client.framing(), None);
    client.poll(t0 + Duration::from_millis(1900));
    assert!(drain(&mut client).is_empty());

    // Server commands 1 and 2 arrive (3 is lost: a gap), message 7.
    let t1 = t0 + Duration::from_millis(1950);
    client.handle_datagram(
        t1,
        &sequenced(7, &server_message(0, &[(1, "print \"hi\""), (2, "cs 5 x")])),
    );
    client.handle_datagram(t1, &sequenced(7, &server_message(0, &[])));
    client.handle_datagram(
        t1,
        &sequenced(9, &server_message(0, &[(4, "print \"late\"")])),
    );
    assert_eq!(client.framing(), Some(Framing::Ioq3));
    let stats = client.stats();
    assert_eq!((stats.server_commands, stats.server_command_gaps), (3, 1));
    assert_eq!(client.netchan_stats().out_of_order, 1);
    assert_eq!(client.server_command_sequence(), 4);
    assert_eq!(client.parser().configstring(5), "x");
    let messages = std::iter::from_fn(|| client.next_event())
        .filter(|e| matches!(e, Event::Message { .. }))
        .count();
    assert_eq!(messages, 2);

    // The server disconnects us with a reason.
    client.handle_datagram(
        t1,
        &sequenced(
            10,
            &server_message(0, &[(5, "disconnect \"kicked by admin\"")]),
        ),
    );
    match client.end() {
        Some(End::Error(LiveError::Disconnected(reason))) => assert_eq!(reason, "kicked by admin"),
        other => panic!("{other:?}"),
    }

    // Silence: the connection times out after the configured time.
    let mut quiet = connected(t0);
    drain(&mut quiet);
    quiet.poll(t0 + Duration::from_secs(9));
    assert_ne!(quiet.stage(), Stage::Ended);
    quiet.poll(t0 + Duration::from_secs(10));
    assert!(matches!(
        quiet.end(),
        Some(End::Error(LiveError::TimedOut { .. }))
    ));
}

#[test]
fn a_message_that_does_not_decode_ends_the_session() {
    let t0 = Instant::now();
    let mut client = connected(t0);
    drain(&mut client);
    // Reliable acknowledge, then command byte 200: not a server command.
    let mut buf = vec![0u8; 64];
    let mut writer = BitWriter::new(&mut buf);
    let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
    sink.put_bits(0, 32).unwrap();
    sink.put_u8(200).unwrap();
    let len = sink.bits_written() / 8 + 1;
    client.handle_datagram(t0, &sequenced(1, &buf[..len]));
    assert!(
        matches!(
            client.end(),
            Some(End::Error(LiveError::Decode { sequence: 1, .. }))
        ),
        "{:?}",
        client.end()
    );
    // It tells the server it leaves (three times, as Quake 3 does).
    assert_eq!(drain(&mut client).len(), 3);
    assert_eq!(client.reliable_sequences(), (1, 0));
}

#[test]
fn leaving_sends_disconnect_three_times() {
    let t0 = Instant::now();
    let mut client = connected(t0);
    drain(&mut client);
    client.disconnect(t0 + Duration::from_millis(10));
    let packets = drain(&mut client);
    assert_eq!(packets.len(), 3);
    assert_eq!(client.reliable_sequences(), (1, 0));
    assert!(matches!(client.end(), Some(End::Quit)));
    // Sequences 1, 2, 3 (nothing was sent before: the framing was unknown).
    let sequences: Vec<u32> = packets
        .iter()
        .map(|p| u32::from_le_bytes(p[..4].try_into().unwrap()))
        .collect();
    assert_eq!(sequences, vec![1, 2, 3]);
}

/// A legacy-framed server datagram (OpenArena's 71, or 68): no challenge
/// word, the payload after the reliable acknowledge scrambled with the
/// challenge, the sequence and the client command it acknowledges (`text`).
fn legacy_sequenced(sequence: i32, message: &[u8], text: &[u8]) -> Vec<u8> {
    let mut payload = message.to_vec();
    scramble(
        &mut payload,
        SERVER_SCRAMBLE_START,
        CHALLENGE ^ sequence,
        text,
    );
    let mut datagram = (sequence as u32).to_le_bytes().to_vec();
    datagram.extend_from_slice(&payload);
    datagram
}

#[test]
fn openarena_71_is_told_apart_by_the_first_server_datagram() {
    let t0 = Instant::now();
    let mut client = connected(t0);
    assert!(drain(&mut client).is_empty());
    // OpenArena's server sends connected clients packets at once, in the
    // legacy framing although both sides said 71.
    let t1 = t0 + Duration::from_millis(50);
    client.handle_datagram(
        t1,
        &legacy_sequenced(1, &server_message(0, &[(1, "print \"legacy\"")]), b""),
    );
    assert_eq!(client.framing(), Some(Framing::Legacy));
    assert_eq!(client.stats().server_commands, 1);
    assert_eq!(client.server_command_sequence(), 1);
    // The answer goes at once, without a challenge word, and scrambled
    // after its first 12 bytes with the acknowledged server command.
    client.poll(t1);
    let packets = drain(&mut client);
    assert_eq!(packets.len(), 1);
    let packet = &packets[0];
    assert_eq!(&packet[..4], &1u32.to_le_bytes());
    assert_eq!(&packet[4..6], &777u16.to_le_bytes());
    let mut payload = packet[6..].to_vec();
    // serverId 0, message acknowledge 1.
    scramble(
        &mut payload,
        CLIENT_SCRAMBLE_START,
        CHALLENGE ^ 1,
        b"print \"legacy\"",
    );
    let mut source = HuffmanReader::new(BitReader::new(&payload), HuffmanCode::quake3());
    let longs: Vec<u32> = (0..3).map(|_| source.get_bits(32).unwrap()).collect();
    assert_eq!(
        longs,
        vec![0, 1, 1],
        "serverId, message and command acknowledged"
    );
    assert_eq!(
        source.get_bits(8).unwrap(),
        u32::from(netq3_q3::live::clc::EOF)
    );
    // Later datagrams in the same framing keep coming through.
    client.handle_datagram(
        t1,
        &legacy_sequenced(2, &server_message(0, &[(2, "cs 7 seven")]), b""),
    );
    assert_eq!(client.parser().configstring(7), "seven");
    assert_eq!(client.netchan_stats().bad_challenge_word, 0);
}

#[test]
fn a_session_without_a_gamestate_ends_with_an_error() {
    let t0 = Instant::now();
    let mut client = connected(t0);
    // The server keeps sending (so the connection is not silent), but never
    // a gamestate.
    for step in 1..=200u64 {
        let now = t0 + Duration::from_millis(step * 50);
        client.handle_datagram(now, &sequenced(step as i32, &server_message(0, &[])));
        client.poll(now);
        drain(&mut client);
        if client.stage() == Stage::Ended {
            break;
        }
    }
    match client.end() {
        Some(End::Error(LiveError::NoGamestate { seconds, datagrams })) => {
            assert!((10.0..10.1).contains(seconds), "{seconds}");
            assert_eq!(*datagrams, 2 + 200);
        }
        other => panic!("{other:?}"),
    }
}
