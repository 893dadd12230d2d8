//! The bodies of the `q3/fuzz` targets as library functions, so the seed
//! replay test runs exactly the code the fuzzer runs. Not part of the API.
//!
//! A `.dm_68` file has no checksum, but it has structure: records of
//! (sequence, length, message), an end marker, and messages that are Huffman
//! bitstreams of commands. Random bytes rarely get past the first record.
//! [`build_dm68`] lets the fuzzer's bytes choose a *valid* demo — a gamestate
//! with configstrings and baselines, then snapshots of a small game, each a
//! delta from an earlier one or full, with server commands — and then
//! mutations that keep the record framing valid: message bytes, cut or
//! extended messages, sequences, records dropped, copied or swapped, a
//! missing end marker.

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use fields::{BitSink, BitWriter, Codec, EntityUpdate, Fields, HuffmanCode, HuffmanWriter};

use crate::message::{svc, Command, ParsedMessage, MAX_MSGLEN};
use crate::reencode::write_snapshot;
use crate::snapshot::{Baselines, Snapshot, Validity};
use crate::tables::{EntityState, PlayerState};
use crate::{corpus, Dm68Decoder, Dm68Reader, MessageError, Q3Client, END_MARKER_LENGTH};

/// A `.dm_68` file as records.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dm68Parts {
    /// (sequence, message) of each record.
    pub records: Vec<(i32, Vec<u8>)>,
    /// Whether the file ends with the end marker.
    pub end_marker: bool,
}

impl Dm68Parts {
    /// The file bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (sequence, message) in &self.records {
            out.extend_from_slice(&sequence.to_le_bytes());
            out.extend_from_slice(&(message.len() as i32).to_le_bytes());
            out.extend_from_slice(message);
        }
        if self.end_marker {
            out.extend_from_slice(&END_MARKER_LENGTH.to_le_bytes());
            out.extend_from_slice(&END_MARKER_LENGTH.to_le_bytes());
        }
        out
    }
}

fn ok<T, E>(result: Result<T, E>) -> arbitrary::Result<T> {
    result.map_err(|_| arbitrary::Error::IncorrectFormat)
}

/// A message: the reliable acknowledge, what `body` writes, the EOF byte.
fn message(
    reliable_ack: u32,
    body: impl FnOnce(&mut HuffmanWriter<'_, '_>) -> Result<(), fields::BitError>,
) -> arbitrary::Result<Vec<u8>> {
    let mut buf = vec![0u8; MAX_MSGLEN];
    let mut writer = BitWriter::new(&mut buf);
    let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
    ok(sink.put_bits(reliable_ack, 32))?;
    ok(body(&mut sink))?;
    ok(sink.put_u8(svc::EOF))?;
    let len = writer.finish();
    buf.truncate(len);
    Ok(buf)
}

fn put_string<S: BitSink + ?Sized>(sink: &mut S, text: &str) -> Result<(), fields::BitError> {
    for byte in text.bytes() {
        sink.put_u8(byte)?;
    }
    sink.put_u8(0)
}

/// An entity or player state with up to 4 fields set from `u` (normalized
/// so that every value is one the codec can send).
fn state<T: fields::NetFields + Default>(
    u: &mut Unstructured<'_>,
    from: &T,
) -> arbitrary::Result<T> {
    let mut state = from.clone();
    for _ in 0..u.int_in_range(0..=4)? {
        let field = u.choose_index(state.field_count())?;
        state.set_word(field, 0, u.arbitrary()?);
    }
    Ok(state.normalized())
}

/// One snapshot of the generated game.
#[derive(Debug, Clone, Copy, Arbitrary)]
enum Step {
    /// Entity `number % 64` appears or changes.
    Set(u8),
    /// Entity `number % 64` leaves.
    Remove(u8),
    /// The player state changes.
    Player,
    /// A reliable server command rides along.
    Command,
}

/// Records of a valid demo of a small game chosen by `u`: a gamestate, then
/// snapshots each a delta from the previous one (or full), as a recording
/// client would have received them.
pub fn record_dm68(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<(i32, Vec<u8>)>> {
    let mut records = Vec::new();
    let mut sequence: i32 = u.int_in_range(1..=1000)?;
    let mut command_sequence: i32 = u.int_in_range(0..=100)?;
    let mut baselines = Baselines::default();
    let mut baseline_list = Vec::new();
    for _ in 0..u.int_in_range(0..=3)? {
        let number = u.int_in_range(0..=63)?;
        let entity = state(u, &EntityState::default())?;
        baselines.set(number, entity);
        baseline_list.push((number, entity));
    }
    let extra: Vec<(u16, String)> = (0..u.int_in_range(0..=3)?)
        .map(|_| {
            Ok((
                u.int_in_range(2..=40)?,
                format!("cs{}", u.arbitrary::<u16>()?),
            ))
        })
        .collect::<arbitrary::Result<_>>()?;
    let gamestate = message(0, |s| {
        s.put_u8(svc::GAMESTATE)?;
        s.put_bits(command_sequence as u32, 32)?;
        for (index, text) in [
            (0u16, "\\mapname\\fuzz\\sv_hostname\\q3".to_string()),
            (1, "\\sv_serverid\\7".into()),
        ]
        .into_iter()
        .chain(extra)
        {
            s.put_u8(svc::CONFIGSTRING)?;
            s.put_bits(u32::from(index), 16)?;
            put_string(s, &text)?;
        }
        for (number, entity) in &baseline_list {
            s.put_u8(svc::BASELINE)?;
            let update = EntityUpdate::Delta {
                base: &EntityState::default(),
                new: entity,
                force: true,
            };
            Codec::Q3.write_entity(s, None, *number, update)?;
        }
        s.put_u8(svc::EOF)?;
        s.put_bits(0, 32)?;
        s.put_bits(0x1234, 32)
    })?;
    records.push((sequence, gamestate));

    let mut previous: Option<Snapshot> = None;
    let mut entities: Vec<(u32, EntityState)> = Vec::new();
    let mut ps = PlayerState::default();
    let frames = u.int_in_range(1..=24)?;
    for frame in 0..frames {
        sequence += 1;
        let mut command = None;
        for _ in 0..u.int_in_range(0..=3)? {
            match u.arbitrary::<Step>()? {
                Step::Set(number) => {
                    let number = u32::from(number % 64);
                    let from = match entities.binary_search_by_key(&number, |e| e.0) {
                        Ok(i) => entities[i].1,
                        Err(_) => *baselines.get(number).unwrap_or(&EntityState::default()),
                    };
                    let entity = state(u, &from)?;
                    match entities.binary_search_by_key(&number, |e| e.0) {
                        Ok(i) => entities[i].1 = entity,
                        Err(i) => entities.insert(i, (number, entity)),
                    }
                }
                Step::Remove(number) => entities.retain(|e| e.0 != u32::from(number % 64)),
                Step::Player => ps = state(u, &ps)?,
                Step::Command => {
                    command_sequence += 1;
                    command = Some(format!("print \"frame {frame}\"\n"));
                }
            }
        }
        // Full when asked or when there is nothing to delta from.
        let full = previous.is_none() || u.ratio(1, 8)?;
        let base = if full { None } else { previous.as_ref() };
        let areamask_len = u.int_in_range(0..=4)?;
        let snapshot = Snapshot {
            message_num: sequence,
            delta_num: u8::from(!full),
            server_time: 1000 + 50 * frame,
            snap_flags: 0,
            areamask: vec![0; areamask_len],
            ps,
            entities: entities.clone(),
            server_command_num: command_sequence,
            validity: Validity::Valid,
        };
        let bytes = message(command_sequence as u32, |s| {
            if let Some(text) = &command {
                s.put_u8(svc::SERVER_COMMAND)?;
                s.put_bits(command_sequence as u32, 32)?;
                put_string(s, text)?;
            }
            write_snapshot(s, &snapshot, base, &baselines)
        })?;
        records.push((sequence, bytes));
        previous = Some(snapshot);
    }
    Ok(records)
}

/// A change to a demo that keeps its record framing valid. Record numbers
/// and byte positions wrap around.
#[derive(Debug, Clone, Arbitrary)]
pub enum Dm68Mutation {
    /// Xors a message byte.
    Xor {
        /// The record.
        record: u16,
        /// The byte.
        at: u16,
        /// The mask.
        mask: u8,
    },
    /// Sets a message byte.
    Set {
        /// The record.
        record: u16,
        /// The byte.
        at: u16,
        /// Its value.
        value: u8,
    },
    /// Cuts a message short.
    Truncate {
        /// The record.
        record: u16,
        /// Bytes kept.
        keep: u16,
    },
    /// Appends bytes to a message.
    Extend {
        /// The record.
        record: u16,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// Sets a record's sequence.
    Sequence {
        /// The record.
        record: u16,
        /// The sequence.
        sequence: i32,
    },
    /// Removes a record.
    Remove {
        /// The record.
        record: u16,
    },
    /// Copies a record elsewhere.
    Duplicate {
        /// The record.
        record: u16,
        /// Where the copy goes.
        to: u16,
    },
    /// Swaps two records.
    Swap {
        /// One record.
        a: u16,
        /// The other.
        b: u16,
    },
    /// Drops the end marker.
    NoEndMarker,
}

impl Dm68Mutation {
    fn apply(&self, parts: &mut Dm68Parts) {
        let n = parts.records.len();
        if n == 0 {
            return;
        }
        let pick = |i: u16| usize::from(i) % n;
        match self {
            Dm68Mutation::Xor { record, at, mask } => {
                let message = &mut parts.records[pick(*record)].1;
                if !message.is_empty() {
                    let len = message.len();
                    message[usize::from(*at) % len] ^= mask;
                }
            }
            Dm68Mutation::Set { record, at, value } => {
                let message = &mut parts.records[pick(*record)].1;
                if !message.is_empty() {
                    let len = message.len();
                    message[usize::from(*at) % len] = *value;
                }
            }
            Dm68Mutation::Truncate { record, keep } => {
                let message = &mut parts.records[pick(*record)].1;
                let keep = usize::from(*keep) % (message.len() + 1);
                message.truncate(keep);
            }
            Dm68Mutation::Extend { record, bytes } => {
                parts.records[pick(*record)].1.extend_from_slice(bytes)
            }
            Dm68Mutation::Sequence { record, sequence } => {
                parts.records[pick(*record)].0 = *sequence
            }
            Dm68Mutation::Remove { record } => {
                parts.records.remove(pick(*record));
            }
            Dm68Mutation::Duplicate { record, to } => {
                let copy = parts.records[pick(*record)].clone();
                parts.records.insert(usize::from(*to) % (n + 1), copy);
            }
            Dm68Mutation::Swap { a, b } => parts.records.swap(pick(*a), pick(*b)),
            Dm68Mutation::NoEndMarker => parts.end_marker = false,
        }
    }
}

/// A demo built by [`build_dm68`].
#[derive(Debug, Clone)]
pub struct BuiltDm68 {
    /// The valid demo's records.
    pub valid: Dm68Parts,
    /// The mutations applied.
    pub mutations: Vec<Dm68Mutation>,
    /// The file after them.
    pub data: Vec<u8>,
}

/// A valid demo chosen by `u` ([`record_dm68`]), then up to 4 mutations.
pub fn build_dm68(u: &mut Unstructured<'_>) -> arbitrary::Result<BuiltDm68> {
    let valid = Dm68Parts {
        records: record_dm68(u)?,
        end_marker: true,
    };
    let mut parts = valid.clone();
    let count = u.int_in_range(0..=4)?;
    let mut mutations = Vec::with_capacity(count);
    for _ in 0..count {
        let mutation = u.arbitrary::<Dm68Mutation>()?;
        mutation.apply(&mut parts);
        mutations.push(mutation);
    }
    Ok(BuiltDm68 {
        data: parts.encode(),
        valid,
        mutations,
    })
}

/// Checks a parsed message: command positions within the message, snapshot
/// invariants (area mask, sorted entity numbers below 1023), and that every
/// parsed snapshot re-encodes without panicking. Returns the snapshots.
pub fn check_message(parsed: &ParsedMessage, len: usize) -> usize {
    assert!(parsed.bits <= len * 8);
    let mut snapshots = 0;
    for command in &parsed.commands {
        assert!(command.bits.start < command.bits.end);
        assert!(command.bits.end <= parsed.bits);
        if let Command::Snapshot(s) = &command.command {
            snapshots += 1;
            let snap = &s.snapshot;
            assert!(snap.areamask.len() <= 32);
            assert!(snap.entities.windows(2).all(|w| w[0].0 < w[1].0));
            assert!(snap.entities.iter().all(|(n, _)| *n < 1023));
            let mut buf = vec![0u8; 4 * MAX_MSGLEN];
            let mut writer = BitWriter::new(&mut buf);
            let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
            let _ = write_snapshot(&mut sink, snap, s.base.as_deref(), &s.baselines);
        }
    }
    snapshots
}

/// [`check_message`] on a parse that succeeded; an error must name a bit
/// inside the message. Returns the snapshots parsed.
pub fn check_parsed(result: Result<ParsedMessage, MessageError>, len: usize) -> usize {
    match result {
        Ok(parsed) => check_message(&parsed, len),
        Err(error) => {
            let _ = error.to_string();
            if let Some(bit) = error.bit() {
                assert!(bit <= len * 8, "{error}");
            }
            0
        }
    }
}

/// A whole `.dm_68` file decoded record by record: record numbers count up
/// and errors name the record they are in; the match's events are read
/// from it as `demo events` reads them. Returns the records decoded.
pub fn decode_file(data: &[u8]) -> usize {
    let mut records = 0;
    let mut decoder = Dm68Decoder::from_reader(Dm68Reader::new_unchecked(data));
    // The events read from whatever decodes (`events`): never a panic.
    let (mut events, mut found) = (crate::events::Dm68Events::new(), Vec::new());
    while let Some(item) = decoder.next() {
        match item {
            Ok(record) => {
                assert_eq!(record.record.index, records);
                records += 1;
                check_message(&record.message, record.record.message.len());
                events.push(&record, decoder.client(), &mut found);
            }
            Err(error) => {
                let _ = error.to_string();
                assert!(error.record().is_none_or(|r| r == records));
            }
        }
    }
    events.finish(&mut found);
    records
}

/// The `dm68_structured` target: [`build_dm68`] from the input, then
/// [`decode_file`]. An unmutated demo must decode completely, every snapshot
/// valid. Returns the records decoded (`None` if the input ran out before a
/// demo was chosen).
pub fn dm68_structured(input: &[u8]) -> Option<usize> {
    let built = build_dm68(&mut Unstructured::new(input)).ok()?;
    let decoded = decode_file(&built.data);
    if built.mutations.is_empty() {
        assert_eq!(decoded, built.valid.records.len());
        let mut client = Q3Client::new();
        for (sequence, message) in &built.valid.records {
            let parsed = client
                .parse_message(*sequence, message)
                .expect("a generated message parses");
            for snapshot in parsed.snapshots() {
                assert!(snapshot.snapshot.is_valid());
            }
        }
    }
    Some(decoded)
}

/// The first records of a small real demo (if the shared corpus is there),
/// each with the client state before it; always at least an empty message
/// with a fresh client.
fn primed() -> &'static [(Vec<u8>, i32, Q3Client)] {
    static PRIMED: OnceLock<Vec<(Vec<u8>, i32, Q3Client)>> = OnceLock::new();
    PRIMED.get_or_init(|| {
        let data =
            std::fs::read(corpus::path("dm_68_cpma_core_gameplay_dev.dm_68")).unwrap_or_default();
        let mut client = Q3Client::new();
        let mut records = vec![(Vec::new(), 1, client.clone())];
        for record in Dm68Reader::new_unchecked(&data)
            .map_while(Result::ok)
            .take(32)
        {
            records.push((record.message.to_vec(), record.sequence, client.clone()));
            if client
                .parse_message(record.sequence, record.message)
                .is_err()
            {
                break;
            }
        }
        records
    })
}

fn pick(index: u8) -> (i32, Q3Client, &'static [u8]) {
    let records = primed();
    let (bytes, sequence, client) = &records[usize::from(index) % records.len()];
    (*sequence, client.clone(), bytes)
}

/// The `q3_message` target. The first byte picks how the rest is used:
///
/// * 0 — a whole `.dm_68` file ([`decode_file`]);
/// * 1 — one message, parsed by a client primed with the first records of
///   a real demo (so snapshots have bases and baselines);
/// * 2 — a real record patched with (offset, xor) pairs, parsed in the
///   state Quake 3 would have before it;
/// * 3 — (width, value) pairs written through Quake 3's Huffman bitstream
///   after a reliable acknowledge, so the fuzzer can spell structurally valid
///   messages with arbitrary command bytes, lengths and entity numbers.
///
/// Modes 1 and 2 use the shared corpus when present (a fresh client and an
/// empty message otherwise). Returns records decoded (mode 0) or snapshots
/// parsed.
pub fn q3_message(data: &[u8]) -> usize {
    let Some((&mode, rest)) = data.split_first() else {
        return 0;
    };
    match mode % 4 {
        0 => decode_file(rest),
        1 => {
            let Some((&index, message)) = rest.split_first() else {
                return 0;
            };
            let (sequence, mut client, _) = pick(index);
            check_parsed(client.parse_message(sequence, message), message.len())
        }
        2 => {
            let Some((&index, patches)) = rest.split_first() else {
                return 0;
            };
            let (sequence, mut client, original) = pick(index);
            let mut message = original.to_vec();
            if message.is_empty() {
                return 0;
            }
            for patch in patches.chunks_exact(3) {
                let offset = usize::from(u16::from_le_bytes([patch[0], patch[1]]));
                let len = message.len();
                message[offset % len] ^= patch[2];
            }
            if patches.len() % 3 != 0 {
                // A trailing byte cuts the message short.
                let cut = usize::from(patches[patches.len() - 1]) % (message.len() + 1);
                message.truncate(cut);
            }
            check_parsed(client.parse_message(sequence, &message), message.len())
        }
        _ => {
            let Some((&index, ops)) = rest.split_first() else {
                return 0;
            };
            let mut buf = vec![0u8; MAX_MSGLEN];
            let mut writer = BitWriter::new(&mut buf);
            let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
            if sink.put_bits(0, 32).is_err() {
                return 0;
            }
            for op in ops.chunks_exact(5) {
                let width = u32::from(op[0] % 32) + 1;
                let value = u32::from_le_bytes([op[1], op[2], op[3], op[4]]);
                if sink.put_bits(value, width).is_err() {
                    break;
                }
            }
            let len = writer.finish();
            let (sequence, mut client, _) = pick(index);
            check_parsed(client.parse_message(sequence, &buf[..len]), len)
        }
    }
}
