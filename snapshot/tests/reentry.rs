//! Entities re-entering the view are coded from the state the client held
//! in an older snapshot of its base's chain (`netq3_snapshot::history`),
//! only when the server knows the client decoded that snapshot.

mod common;

use common::*;
use fields::Codec;
use netq3_snapshot::{
    BuildOutcome, Client, ClientError, ClientId, ClientSettings, Received, Server, ServerConfig,
    SnapshotReport, UpdateKind,
};

/// Entity 3 always in view; entity 5, a moving player without a spawn
/// baseline, in view only in the frames `visible` marks.
struct Stream {
    server: Server<Ent, Player>,
    id: ClientId,
    bytes: Vec<u8>,
}

impl Stream {
    fn new(codec: Codec) -> Self {
        let config = ServerConfig {
            checksum_interval: 0,
            ..ServerConfig::for_codec(codec)
        };
        let mut server: Server<Ent, Player> = Server::new(config).unwrap();
        let id = server.add_client(ClientSettings::unlimited()).unwrap();
        server
            .set_entity(
                3,
                Ent {
                    x: 5.0,
                    model: 2,
                    ..Ent::default()
                },
            )
            .unwrap();
        Stream {
            server,
            id,
            bytes: Vec::new(),
        }
    }

    /// Frame `frame`, entity 5 in view or not: the message's sequence.
    fn send(&mut self, frame: u32, visible: bool) -> u32 {
        self.send_with(frame, visible, None)
    }

    /// [`Stream::send`] with entity 6 in view, in state `other`, or out of
    /// it (`None`).
    fn send_with(&mut self, frame: u32, visible: bool, other: Option<Ent>) -> u32 {
        if let Some(other) = other {
            self.server.set_entity(6, other).unwrap();
        }
        let player = Ent {
            x: 100.0 + 12.0 * frame as f32,
            y: -40.0 + 3.0 * frame as f32,
            z: 24.0,
            health: 100 - frame as i16,
            model: 9,
            flags: 0x40,
            angle: 90.0,
            firing: frame % 2 == 0,
        };
        self.server.set_entity(5, player).unwrap();
        self.server.commit_frame(50 * frame).unwrap();
        let mut scope = |_: ClientId, _: &Player, number: u32, _: &Ent| match number {
            5 => visible.then_some(1.0),
            6 => other.is_some().then_some(1.0),
            _ => Some(1.0),
        };
        match self
            .server
            .build_snapshot(self.id, &mut scope, &mut self.bytes)
            .unwrap()
        {
            BuildOutcome::Built(info) => info.sequence,
            other => panic!("expected a snapshot, got {other:?}"),
        }
    }

    fn ack(&mut self, sequence: u32) {
        assert!(self.server.acknowledge(self.id, sequence).unwrap());
    }
}

fn client(stream: &mut Stream) -> Client<Ent, Player> {
    let mut client = Client::new();
    client.set_trace(true);
    connect(&mut stream.server, &mut client);
    client
}

fn read(client: &mut Client<Ent, Player>, stream: &Stream, sequence: u32) -> SnapshotReport {
    match client.read_snapshot(sequence, &stream.bytes).unwrap() {
        Received::Snapshot(report) => report,
        other => panic!("expected a snapshot, got {other:?}"),
    }
}

/// Entity 5 in view at frame 1, out at 2, back at 3; with `lose_1`, the
/// message of frame 1 is lost (never acknowledged). Returns the client,
/// the last message's report and size in bytes, and the stream.
fn leave_and_return(codec: Codec, lose_1: bool) -> (Client<Ent, Player>, SnapshotReport, usize) {
    let mut stream = Stream::new(codec);
    let mut client = client(&mut stream);
    let s0 = stream.send(0, false);
    read(&mut client, &stream, s0);
    stream.ack(s0);
    let s1 = stream.send(1, true);
    if !lose_1 {
        let report = read(&mut client, &stream, s1);
        assert_eq!(report.history, None);
        stream.ack(s1);
    }
    let s2 = stream.send(2, false);
    read(&mut client, &stream, s2);
    stream.ack(s2);
    let s3 = stream.send(3, true);
    let report = read(&mut client, &stream, s3);
    let held = client.newest().unwrap();
    let sent = stream.server.sent_snapshot(stream.id, s3).unwrap();
    assert_eq!(
        held.entities().collect::<Vec<_>>(),
        sent.entities().collect::<Vec<_>>(),
        "{codec:?}, lose_1 {lose_1}"
    );
    assert_eq!(held.entity(5).unwrap().x, 136.0);
    let bytes = stream.bytes.len();
    (client, report, bytes)
}

#[test]
fn a_player_back_in_view_is_coded_from_the_snapshot_that_last_held_it() {
    let (client, report, bytes) = leave_and_return(Codec::Native, false);
    // Base: the message of frame 2 (without entity 5); its base, frame 1's,
    // held it: named as the history snapshot, one before the base.
    assert_eq!(
        (report.sequence, report.base, report.history),
        (3, Some(2), Some(1))
    );
    let trace = client.trace().unwrap();
    assert_eq!(trace.entities.len(), 1);
    assert_eq!(
        (trace.entities[0].number, trace.entities[0].kind),
        (5, UpdateKind::Reentered)
    );
    // Two frames of change (x, y, health, firing) instead of the whole
    // state from zero, and the one bit of the writer's choice: 41 bits
    // where the next test's entry takes 107, and 8 bytes where it takes
    // 15, the header's 6 bits naming the snapshot included.
    assert_eq!((trace.entities[0].bits, bytes), (41, 8));
}

#[test]
fn without_an_acknowledged_snapshot_holding_it_the_player_comes_from_zero() {
    // Frame 1's message was lost: the server never names it, and codes
    // entity 5 from zero as a new entity.
    let (client, report, bytes) = leave_and_return(Codec::Native, true);
    assert_eq!(
        (report.sequence, report.base, report.history),
        (3, Some(2), None)
    );
    let trace = client.trace().unwrap();
    assert_eq!(
        (trace.entities[0].number, trace.entities[0].kind),
        (5, UpdateKind::Added)
    );
    // 15 bytes coded; its last, zero, is left out.
    assert_eq!((trace.entities[0].bits, bytes), (107, 14));
}

#[test]
fn quake_3_messages_never_name_a_history_snapshot() {
    let (client, report, _) = leave_and_return(Codec::Q3, false);
    assert_eq!(report.history, None);
    assert_eq!(client.trace().unwrap().entities[0].kind, UpdateKind::Added);
}

#[test]
fn a_client_without_the_history_snapshot_refuses_the_message() {
    // The message of frame 3 names frame 1's as its history snapshot.
    let mut stream = Stream::new(Codec::Native);
    let mut full = client(&mut stream);
    let mut sequences = Vec::new();
    for (frame, visible) in [(0, false), (1, true), (2, false)] {
        let sequence = stream.send(frame, visible);
        read(&mut full, &stream, sequence);
        stream.ack(sequence);
        sequences.push((sequence, stream.bytes.clone()));
    }
    let s3 = stream.send(3, true);
    assert_eq!(read(&mut full.clone(), &stream, s3).history, Some(1));

    // Another stream of the same frames whose message of frame 1 was lost:
    // its message of frame 2 is a delta from frame 0's, so a client of it
    // holds 0 and 2 but not 1.
    let mut other = Stream::new(Codec::Native);
    let mut lacking = client(&mut other);
    let o0 = other.send(0, false);
    read(&mut lacking, &other, o0);
    other.ack(o0);
    other.send(1, true);
    let o2 = other.send(2, false);
    assert_eq!(read(&mut lacking, &other, o2).base, Some(o0));

    let error = lacking.read_snapshot(s3, &stream.bytes).unwrap_err();
    assert!(
        matches!(
            error,
            ClientError::BaseMissing {
                sequence: 3,
                base: 1
            }
        ),
        "{error:?}"
    );
    assert!(lacking.needs_full_update());
    // Nothing was committed: the newest is still frame 2's.
    assert_eq!(lacking.ack(), Some(o2));
}

/// A missile: nothing like the event that later reuses its number.
const MISSILE: Ent = Ent {
    x: 903.5,
    y: -1250.25,
    z: 77.75,
    health: -300,
    model: 301,
    flags: 0xab_cdef,
    angle: 45.0,
    firing: true,
};

/// An event: one small field off the zeroed dummy.
const EVENT: Ent = Ent {
    x: 0.0,
    y: 0.0,
    z: 0.0,
    health: 0,
    model: 1,
    flags: 0,
    angle: 0.0,
    firing: false,
};

/// Frames 0 to 3: entity 5 in view at 1 and 3 (as `leave_and_return`),
/// entity 6 as `six` gives, every message acknowledged. Returns the last
/// message's report, its entries (number, kind, bits) and the stream.
fn with_six(
    six: [Option<Ent>; 4],
    five_at_3: bool,
) -> (SnapshotReport, Vec<(u32, UpdateKind, u32)>) {
    let mut stream = Stream::new(Codec::Native);
    let mut client = client(&mut stream);
    let mut report = None;
    for (frame, other) in six.into_iter().enumerate() {
        let frame = frame as u32;
        let five = frame == 1 || (frame == 3 && five_at_3);
        let sequence = stream.send_with(frame, five, other);
        report = Some(read(&mut client, &stream, sequence));
        stream.ack(sequence);
    }
    let held = client.newest().unwrap();
    let sent = stream.server.sent_snapshot(stream.id, 3).unwrap();
    assert_eq!(
        held.entities().collect::<Vec<_>>(),
        sent.entities().collect::<Vec<_>>()
    );
    let entries = client
        .trace()
        .unwrap()
        .entities
        .iter()
        .map(|entry| (entry.number, entry.kind, entry.bits))
        .collect();
    (report.unwrap(), entries)
}

#[test]
fn an_unrelated_entity_reusing_a_held_number_is_coded_from_zero_by_the_writers_choice() {
    // Entity 6 was a missile in frame 1's message and is an event at 3:
    // both are offered their state there; the player takes it (41 bits,
    // as above), the event takes the dummy, the cheaper by far, and pays
    // one bit for the choice over the same event never held before.
    let (report, entries) = with_six([None, Some(MISSILE), None, Some(EVENT)], true);
    assert_eq!(report.history, Some(1));
    assert_eq!(
        entries,
        [(5, UpdateKind::Reentered, 41), (6, UpdateKind::Added, 34)]
    );
    let (_, fresh) = with_six([None, None, None, Some(EVENT)], true);
    assert_eq!(
        fresh,
        [(5, UpdateKind::Reentered, 41), (6, UpdateKind::Added, 33)]
    );
}

#[test]
fn with_no_entity_cheaper_from_history_the_header_names_none() {
    // The event alone enters: nothing gains from frame 1's message, so
    // the header names no history snapshot and the entry carries no
    // choice (the bits of an event never held).
    let (report, entries) = with_six([None, Some(MISSILE), None, Some(EVENT)], false);
    assert_eq!(report.history, None);
    assert_eq!(entries, [(6, UpdateKind::Added, 37)]);
}
