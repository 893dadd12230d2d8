//! Structure-aware fuzzing of the native demo format, shared by the
//! `demo/fuzz` targets, the property tests and the seed replay test (so all
//! three run exactly the same code). Not part of the API.
//!
//! Random bytes almost never get past the record checksums, so the decoders
//! behind them (header, keyframe index, end record, snapshot messages) would
//! go unfuzzed. [`build`] instead lets the fuzzer's bytes (through
//! [`arbitrary::Unstructured`]) choose a *valid* demo — a recorded stream of a
//! small game with entities appearing, changing and leaving, configstring
//! changes and keyframes, in either codec and either message framing (bit
//! stream or range-coded) — and then a list of [`Mutation`]s of its fields:
//! frame fields, payload bytes, lengths, whole records, keyframe index
//! entries, the end record and the header. Every checksum is recomputed
//! afterwards, except for the one mutation that damages a checksum on purpose.

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use fields::model::{AdaptPolicy, ModelData, NativeModel};
use fields::{net_struct, q3_float, signed, unsigned, Codec};
use snapshot::{AllInScope, BuildOutcome, ClientSettings, Server, ServerConfig};

use crate::cut::cut;
use crate::dump::{dump_native, DumpOptions};
use crate::format::{
    crc32, crc32_update, decode_header, DemoHeader, Frame, KeyframeEntry, MessageFraming,
    RecordKind, END_PAYLOAD_LEN, FRAME_LEN, MAGIC, TRAILER_LEN, VERSION,
};
use crate::play::Player;
use crate::reader::DemoReader;
use crate::stats::native_stats;
use crate::writer::Recorder;

net_struct! {
    /// The entity type of the generated games.
    pub struct Thing {
        /// Position.
        pub x: f32 = q3_float(),
        /// Position.
        pub y: f32 = q3_float(),
        /// Kind.
        pub kind: u8 = unsigned(5),
        /// Hit points, negative when dying.
        pub hp: i16 = signed(10),
    }
}

net_struct! {
    /// The player-state type of the generated games.
    pub struct Me {
        /// Health.
        pub health: u16 = unsigned(9),
        /// Score.
        pub score: i16 = signed(12),
    }
}

/// Largest number of frames a generated game runs (keeps inputs fast).
pub const MAX_FRAMES: u32 = 48;
/// Entity numbers a generated game uses.
pub const MAX_THINGS: u32 = 12;

/// One record of a demo as fields, before framing and checksums.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRecord {
    /// The kind byte (any value, after mutation).
    pub kind: u8,
    /// Server time, ms.
    pub server_time: u32,
    /// Snapshot sequence.
    pub sequence: u32,
    /// The payload.
    pub payload: Vec<u8>,
}

/// A demo taken apart: header and records (index and end record included).
#[derive(Debug, Clone, PartialEq)]
pub struct DemoParts {
    /// The header (fingerprints are not checked on encoding).
    pub header: DemoHeader,
    /// The records in file order.
    pub records: Vec<RawRecord>,
}

impl DemoParts {
    /// Takes a well-framed demo apart (`None` if it is not one).
    pub fn parse(data: &[u8]) -> Option<DemoParts> {
        let (header, mut offset) = decode_header(data).ok()?;
        let mut records = Vec::new();
        while offset < data.len() {
            let frame = Frame::decode(data.get(offset..)?.first_chunk::<FRAME_LEN>()?).ok()?;
            let start = offset + FRAME_LEN;
            let end = start.checked_add(frame.len as usize)?;
            records.push(RawRecord {
                kind: frame.kind,
                server_time: frame.server_time,
                sequence: frame.sequence,
                payload: data.get(start..end)?.to_vec(),
            });
            offset = end + TRAILER_LEN;
        }
        Some(DemoParts { header, records })
    }

    /// The file: preamble, header and records with every checksum right.
    pub fn encode(&self) -> Vec<u8> {
        let body = postcard::to_allocvec(&self.header).unwrap_or_default();
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&body);
        let crc = crc32(&out[MAGIC.len()..]);
        out.extend_from_slice(&crc.to_le_bytes());
        for record in &self.records {
            out.extend_from_slice(&frame_bytes(record));
            out.extend_from_slice(&record.payload);
            out.extend_from_slice(&record_crc(record).to_le_bytes());
        }
        out
    }

    /// Byte offset of each record in [`encode`](Self::encode)'s output.
    pub fn offsets(&self) -> Vec<u64> {
        let body = postcard::to_allocvec(&self.header).unwrap_or_default();
        let mut offset = (MAGIC.len() + 2 + 4 + body.len() + 4) as u64;
        self.records
            .iter()
            .map(|record| {
                let at = offset;
                offset += (FRAME_LEN + record.payload.len() + TRAILER_LEN) as u64;
                at
            })
            .collect()
    }
}

fn frame_bytes(record: &RawRecord) -> [u8; FRAME_LEN] {
    Frame {
        kind: record.kind,
        len: record.payload.len() as u32,
        server_time: record.server_time,
        sequence: record.sequence,
    }
    .encode()
}

fn record_crc(record: &RawRecord) -> u32 {
    crc32_update(crc32(&frame_bytes(record)), &record.payload)
}

/// A model of [`Thing`] trained on things walking in a line, which no
/// generated game's snapshots are coded with.
fn other_thing_model() -> Option<&'static ModelData> {
    static MODEL: OnceLock<Option<ModelData>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let thing = |i: u16| Thing {
                x: f32::from(i),
                y: 1.0,
                kind: 2,
                hp: 100,
            };
            NativeModel::train_on_deltas((1..64).map(|i| (thing(i - 1), thing(i))))
                .ok()
                .map(|model| model.data().clone())
        })
        .as_ref()
}

/// What a generated game does in one frame.
#[derive(Debug, Clone, Arbitrary)]
enum Action {
    Set {
        number: u8,
        x: i16,
        y: i16,
        kind: u8,
        hp: i16,
    },
    Remove {
        number: u8,
    },
    Player {
        health: u16,
        score: i16,
    },
    Configstring {
        index: u8,
        value: u8,
    },
    Keyframe,
    Skip,
}

/// A generated game that the server or recorder refuses is not a demo to
/// build (none is refused today; the builder must not panic if one were).
fn ok<T, E>(result: Result<T, E>) -> arbitrary::Result<T> {
    result.map_err(|_| arbitrary::Error::IncorrectFormat)
}

/// Records a valid demo of a game whose every choice comes from `u`.
pub fn record_game(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<u8>> {
    let codec = if u.arbitrary()? {
        Codec::Native
    } else {
        Codec::Q3
    };
    let framing = if u.arbitrary()? {
        MessageFraming::CompactRange
    } else {
        MessageFraming::Compact
    };
    let frames = u.int_in_range(1..=MAX_FRAMES)?;
    let checksum_interval = u.int_in_range(0..=4)?;
    let mut server: Server<Thing, Me> = ok(Server::new(ServerConfig {
        checksum_interval,
        max_entities: 64,
        codec,
    }))?;
    ok(server.set_framing(framing.framing()))?;
    ok(server.set_configstring(0, "map=fuzz"))?;
    if u.arbitrary()? {
        ok(server.set_baseline(
            1,
            Some(Thing {
                kind: 3,
                hp: 100,
                ..Thing::default()
            }),
        ))?;
    }
    let viewed = ok(server.add_client(ClientSettings::unlimited()))?;
    let id = ok(server.add_recorder(viewed, ClientSettings::recorder()))?;
    let mut header = DemoHeader::for_types::<Thing, Me>(codec, 20, 20).with_framing(framing);
    if u.arbitrary()? {
        header = header.with_metadata("map", "fuzz");
    }
    let mut recorder = ok(Recorder::create(Vec::new(), header))?;
    let mut bytes = Vec::new();
    ok(server.write_gamestate(&mut bytes))?;
    ok(recorder.record_gamestate(0, &bytes))?;
    for frame in 0..frames {
        let time = frame * 50;
        let actions = u.int_in_range(0..=4)?;
        for _ in 0..actions {
            match u.arbitrary::<Action>()? {
                Action::Set {
                    number,
                    x,
                    y,
                    kind,
                    hp,
                } => {
                    let thing = Thing {
                        x: f32::from(x) / 4.0,
                        y: f32::from(y),
                        kind: kind % 32,
                        hp: hp.clamp(-512, 511),
                    };
                    ok(server.set_entity(u32::from(number) % MAX_THINGS, thing))?;
                }
                Action::Remove { number } => {
                    server.remove_entity(u32::from(number) % MAX_THINGS);
                }
                Action::Player { health, score } => {
                    let me = ok(server.player_state_mut(viewed))?;
                    me.health = health % 512;
                    me.score = score.clamp(-2048, 2047);
                }
                Action::Configstring { index, value } => {
                    let index = 1 + usize::from(index % 4);
                    ok(server.set_configstring(index, &format!("v{value}")))?;
                    ok(server.write_configstring(index, &mut bytes))?;
                    ok(recorder.record_configstring(time, &bytes))?;
                }
                Action::Keyframe => ok(server.request_full_update(id))?,
                Action::Skip => {}
            }
        }
        ok(server.commit_frame(time))?;
        if let BuildOutcome::Built(info) =
            ok(server.build_snapshot(id, &mut AllInScope, &mut bytes))?
        {
            ok(recorder.record_snapshot(time, info.sequence, &bytes, info.base.is_none()))?;
        }
    }
    ok(recorder.finish())
}

/// Which field of a record frame a mutation sets.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum FrameField {
    /// The kind byte.
    Kind(u8),
    /// The server time.
    Time(u32),
    /// The sequence.
    Sequence(u32),
}

/// Which field of a keyframe index entry a mutation sets.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum EntryField {
    /// Byte offset of the keyframe.
    Offset(i16),
    /// Its server time.
    Time(u32),
    /// Its sequence.
    Sequence(u32),
    /// Its record number.
    Record(u64),
    /// Offset of its gamestate.
    GamestateOffset(i16),
    /// Record number of its gamestate.
    GamestateRecord(u64),
}

/// One change to a valid demo; checksums are recomputed afterwards (except
/// by [`Mutation::BreakChecksum`]). Record and entry numbers wrap around.
#[derive(Debug, Clone, Arbitrary)]
pub enum Mutation {
    /// Sets a frame field of a record.
    Frame {
        /// The record.
        record: u16,
        /// The field and its new value.
        field: FrameField,
    },
    /// Xors a payload byte.
    Xor {
        /// The record.
        record: u16,
        /// The byte (wraps).
        at: u16,
        /// The mask.
        mask: u8,
    },
    /// Cuts a payload short.
    Truncate {
        /// The record.
        record: u16,
        /// Bytes kept (wraps).
        keep: u16,
    },
    /// Appends bytes to a payload.
    Extend {
        /// The record.
        record: u16,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// Removes a record.
    Remove {
        /// The record.
        record: u16,
    },
    /// Copies a record to another place.
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
    /// Sets a field of a keyframe index entry (offsets move by a small amount).
    Entry {
        /// The entry.
        entry: u8,
        /// The field and its new value.
        field: EntryField,
    },
    /// Removes an index entry.
    DropEntry {
        /// The entry.
        entry: u8,
    },
    /// Points the end record elsewhere.
    EndOffset {
        /// Added to the index offset.
        delta: i32,
    },
    /// Sets the end record's record count.
    EndCount {
        /// The count.
        count: u64,
    },
    /// Sets a header field.
    Header(HeaderMutation),
    /// Damages one checksum or frame check, left wrong.
    BreakChecksum {
        /// The record.
        record: u16,
    },
}

/// A change to the header.
#[derive(Debug, Clone, Arbitrary)]
pub enum HeaderMutation {
    /// Another codec.
    SwapCodec,
    /// The other message framing (the messages stay as they were coded).
    SwapFraming,
    /// Tick rate.
    TickHz(u32),
    /// Snapshot rate.
    SnapshotHz(u32),
    /// A metadata entry.
    Metadata(String, String),
    /// A wrong entity fingerprint.
    EntityFingerprint(u64),
    /// The entity model removed.
    DropEntityModel,
    /// The snapshots said to be coded with a given entity model (one
    /// trained on other games than the recorded one), or with the type's
    /// own: the player's model set-up and decoding under the wrong model.
    CodedEntityModel(bool),
    /// The models said to adapt (chain length, weight and lead folded into
    /// small ranges), or not.
    Adaptation(Option<(u8, u16, u8)>),
    /// Two entity fields swap kinds (fingerprint recomputed).
    SwapEntityFieldKinds {
        /// One field (wraps).
        a: u8,
        /// The other (wraps).
        b: u8,
    },
    /// An entity field removed (fingerprint recomputed: a consistent, different schema).
    DropEntityField {
        /// The field (wraps).
        field: u8,
    },
}

impl Mutation {
    /// Applies the mutation. Returns the record whose checksum must stay
    /// wrong, for [`Mutation::BreakChecksum`].
    fn apply(&self, parts: &mut DemoParts) -> Option<usize> {
        let n = parts.records.len();
        let pick = |i: u16| (n > 0).then(|| usize::from(i) % n);
        match self {
            Mutation::Frame { record, field } => {
                let r = &mut parts.records[pick(*record)?];
                match *field {
                    FrameField::Kind(kind) => r.kind = kind,
                    FrameField::Time(time) => r.server_time = time,
                    FrameField::Sequence(sequence) => r.sequence = sequence,
                }
            }
            Mutation::Xor { record, at, mask } => {
                let payload = &mut parts.records[pick(*record)?].payload;
                let len = payload.len();
                if len > 0 {
                    payload[usize::from(*at) % len] ^= mask;
                }
            }
            Mutation::Truncate { record, keep } => {
                let payload = &mut parts.records[pick(*record)?].payload;
                let keep = usize::from(*keep) % (payload.len() + 1);
                payload.truncate(keep);
            }
            Mutation::Extend { record, bytes } => {
                parts.records[pick(*record)?]
                    .payload
                    .extend_from_slice(bytes);
            }
            Mutation::Remove { record } => {
                parts.records.remove(pick(*record)?);
            }
            Mutation::Duplicate { record, to } => {
                let copy = parts.records[pick(*record)?].clone();
                parts.records.insert(usize::from(*to) % (n + 1), copy);
            }
            Mutation::Swap { a, b } => parts.records.swap(pick(*a)?, pick(*b)?),
            Mutation::Entry { entry, field } => {
                edit_index(parts, |entries| {
                    let len = entries.len();
                    if len == 0 {
                        return;
                    }
                    let e = &mut entries[usize::from(*entry) % len];
                    match *field {
                        EntryField::Offset(d) => e.offset = e.offset.wrapping_add_signed(d.into()),
                        EntryField::Time(t) => e.server_time = t,
                        EntryField::Sequence(s) => e.sequence = s,
                        EntryField::Record(r) => e.record = r,
                        EntryField::GamestateOffset(d) => {
                            e.gamestate_offset = e.gamestate_offset.wrapping_add_signed(d.into())
                        }
                        EntryField::GamestateRecord(r) => e.gamestate_record = r,
                    }
                });
            }
            Mutation::DropEntry { entry } => edit_index(parts, |entries| {
                if !entries.is_empty() {
                    entries.remove(usize::from(*entry) % entries.len());
                }
            }),
            Mutation::EndOffset { delta } => edit_end(parts, |offset, _| {
                *offset = offset.wrapping_add_signed((*delta).into())
            }),
            Mutation::EndCount { count } => edit_end(parts, |_, records| *records = *count),
            Mutation::Header(change) => change.apply(&mut parts.header),
            Mutation::BreakChecksum { record } => return pick(*record),
        }
        None
    }
}

impl HeaderMutation {
    /// Applies the change to `header`.
    pub fn apply(&self, header: &mut DemoHeader) {
        match self {
            HeaderMutation::SwapCodec => {
                header.codec = match header.codec {
                    Codec::Q3 => Codec::Native,
                    Codec::Native => Codec::Q3,
                }
            }
            HeaderMutation::SwapFraming => {
                header.framing = match header.framing {
                    MessageFraming::Compact => MessageFraming::CompactRange,
                    MessageFraming::CompactRange => MessageFraming::Compact,
                }
            }
            HeaderMutation::TickHz(hz) => header.tick_hz = *hz,
            HeaderMutation::SnapshotHz(hz) => header.snapshot_hz = *hz,
            HeaderMutation::Metadata(key, value) => {
                header.metadata.insert(key.clone(), value.clone());
            }
            HeaderMutation::EntityFingerprint(fingerprint) => {
                header.entity_fingerprint = *fingerprint
            }
            HeaderMutation::DropEntityModel => header.entity_model = None,
            HeaderMutation::CodedEntityModel(given) => {
                header.coded_entity_model = given.then(other_thing_model).flatten().cloned()
            }
            HeaderMutation::Adaptation(policy) => {
                header.adaptation = policy.map(|(chain, weight, lead)| AdaptPolicy {
                    chain_length: u32::from(chain % 64) + 1,
                    first_chain: u32::from(chain % 5),
                    weight: u32::from(weight % 4096) + 1,
                    lead: u32::from(lead % 3),
                })
            }
            HeaderMutation::SwapEntityFieldKinds { a, b } => {
                let fields = &mut header.entity_schema.fields;
                if !fields.is_empty() {
                    let len = fields.len();
                    let (a, b) = (usize::from(*a) % len, usize::from(*b) % len);
                    let kind = fields[a].kind;
                    fields[a].kind = fields[b].kind;
                    fields[b].kind = kind;
                    header.entity_fingerprint = header.entity_schema.fingerprint();
                }
            }
            HeaderMutation::DropEntityField { field } => {
                let fields = &mut header.entity_schema.fields;
                if !fields.is_empty() {
                    let len = fields.len();
                    fields.remove(usize::from(*field) % len);
                    header.entity_fingerprint = header.entity_schema.fingerprint();
                }
            }
        }
    }
}

/// Decodes the last index record's entries, lets `edit` change them, and
/// encodes them back (nothing happens when there is no decodable index).
fn edit_index(parts: &mut DemoParts, edit: impl FnOnce(&mut Vec<KeyframeEntry>)) {
    let index = RecordKind::Index.byte();
    let Some(record) = parts.records.iter_mut().rev().find(|r| r.kind == index) else {
        return;
    };
    let Ok(mut entries) = postcard::from_bytes::<Vec<KeyframeEntry>>(&record.payload) else {
        return;
    };
    edit(&mut entries);
    if let Ok(payload) = postcard::to_allocvec(&entries) {
        record.payload = payload;
    }
}

/// Lets `edit` change the (index offset, record count) of the last end
/// record with a full-size payload.
fn edit_end(parts: &mut DemoParts, edit: impl FnOnce(&mut u64, &mut u64)) {
    let end = RecordKind::End.byte();
    let Some(record) = parts
        .records
        .iter_mut()
        .rev()
        .find(|r| r.kind == end && r.payload.len() == END_PAYLOAD_LEN)
    else {
        return;
    };
    let (offset, count) = record.payload.split_at(8);
    let mut offset = u64::from_le_bytes(offset.try_into().unwrap_or_default());
    let mut count = u64::from_le_bytes(count.try_into().unwrap_or_default());
    edit(&mut offset, &mut count);
    record.payload[..8].copy_from_slice(&offset.to_le_bytes());
    record.payload[8..].copy_from_slice(&count.to_le_bytes());
}

/// Points the end record at the index record where it now is (after
/// records moved), so mutated index entries are met rather than the whole
/// index being skipped for a stale offset.
fn repoint_end(parts: &mut DemoParts) {
    let offsets = parts.offsets();
    let index = RecordKind::Index.byte();
    let Some(at) = parts.records.iter().rposition(|r| r.kind == index) else {
        return;
    };
    let offset = offsets[at];
    edit_end(parts, |o, count| {
        *o = offset;
        *count = at as u64;
    });
}

/// A demo built by [`build`].
#[derive(Debug, Clone)]
pub struct Built {
    /// The valid demo as recorded.
    pub valid: Vec<u8>,
    /// The mutations applied.
    pub mutations: Vec<Mutation>,
    /// The file after them, checksums recomputed.
    pub data: Vec<u8>,
}

/// A valid demo chosen by `u`, then up to 4 mutations with checksums
/// recomputed (and, if `u` says so, the end record re-pointed at the index).
pub fn build(u: &mut Unstructured<'_>) -> arbitrary::Result<Built> {
    let valid = record_game(u)?;
    let mut parts = DemoParts::parse(&valid).ok_or(arbitrary::Error::IncorrectFormat)?;
    let count = u.int_in_range(0..=4)?;
    let mut mutations = Vec::with_capacity(count);
    for _ in 0..count {
        mutations.push(u.arbitrary::<Mutation>()?);
    }
    let mut broken = Vec::new();
    for mutation in &mutations {
        broken.extend(mutation.apply(&mut parts));
    }
    if u.arbitrary()? {
        repoint_end(&mut parts);
    }
    let mut data = parts.encode();
    let offsets = parts.offsets();
    for record in broken {
        // A later mutation may have removed the record.
        let (Some(&at), Some(raw)) = (offsets.get(record), parts.records.get(record)) else {
            continue;
        };
        let at = usize::try_from(at).unwrap_or(usize::MAX);
        // The frame check's first byte, or the CRC's.
        let end = at.saturating_add(FRAME_LEN + raw.payload.len());
        let target = if record % 2 == 0 {
            at.saturating_add(13)
        } else {
            end
        };
        if let Some(byte) = data.get_mut(target) {
            *byte ^= 0x5A;
        }
    }
    Ok(Built {
        valid,
        mutations,
        data,
    })
}

/// What [`exercise`] saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Exercised {
    /// The header decoded.
    pub opened: bool,
    /// Records played before the end or the first error.
    pub played: usize,
    /// Snapshot sync checksums that matched.
    pub checksums_verified: u64,
    /// Played to the end marker without an error.
    pub clean: bool,
    /// Keyframes found (index or scan).
    pub keyframes: usize,
}

/// Everything a tool does with a file: open, index, statistics, play with
/// verification, seek, cut and dump. Any input gets errors, never a panic;
/// a file that plays cleanly must have reached its end marker.
pub fn exercise(data: &[u8]) -> Exercised {
    let mut seen = Exercised::default();
    let Ok(reader) = DemoReader::new(data) else {
        return seen;
    };
    seen.opened = true;
    if let Ok(keyframes) = reader.keyframes() {
        seen.keyframes = keyframes.len();
    }
    let _ = native_stats(&reader, true, &mut |_| {});
    let Ok(mut player) = Player::new(reader.clone()) else {
        return seen;
    };
    player.set_verify(true);
    seen.clean = true;
    while let Some(played) = player.next_record() {
        if played.is_err() {
            seen.clean = false;
            break;
        }
        seen.played += 1;
    }
    seen.checksums_verified = player.checksums_verified();
    if seen.clean {
        assert!(player.reached_end());
    }
    for time in [0, 333, 1_000, u32::MAX] {
        let _ = player.seek(time);
    }
    let _ = cut(&reader, 200, 800, Vec::new(), &mut |_| {});
    let options = DumpOptions {
        jsonl: true,
        from_ms: Some(500),
        to_ms: None,
    };
    let _ = dump_native(&reader, options, &mut std::io::sink(), &mut |_| {});
    seen
}

/// The `demo_structured` target: [`build`] from the input, then
/// [`exercise`]. An unmutated demo must play cleanly to its end with its
/// index intact. Returns what was seen (`None` if the input ran out before
/// a demo was chosen).
pub fn demo_structured(input: &[u8]) -> Option<Exercised> {
    let built = build(&mut Unstructured::new(input)).ok()?;
    let seen = exercise(&built.data);
    if built.mutations.is_empty() {
        let reader = DemoReader::new(&built.data).expect("a valid demo opens");
        assert!(seen.clean, "a valid demo plays to its end: {seen:?}");
        let records = reader.records().count();
        assert_eq!(seen.played, records);
        let scanned = keyframes_by_scan(&reader);
        assert_eq!(reader.keyframes().ok(), Some(scanned));
    }
    Some(seen)
}

fn keyframes_by_scan(reader: &DemoReader<'_>) -> Vec<KeyframeEntry> {
    let mut gamestate = None;
    let mut keyframes = Vec::new();
    for record in reader.records().map_while(Result::ok) {
        match record.kind {
            RecordKind::Gamestate => gamestate = Some((record.offset as u64, record.index as u64)),
            RecordKind::Keyframe => {
                if let Some((gamestate_offset, gamestate_record)) = gamestate {
                    keyframes.push(KeyframeEntry {
                        offset: record.offset as u64,
                        server_time: record.server_time,
                        sequence: record.sequence,
                        record: record.index as u64,
                        gamestate_offset,
                        gamestate_record,
                    });
                }
            }
            _ => {}
        }
    }
    keyframes
}

/// A small valid demo (recorded once from a fixed game, with keyframes).
pub fn small_demo() -> &'static [u8] {
    static DEMO: OnceLock<Vec<u8>> = OnceLock::new();
    DEMO.get_or_init(|| {
        // A fixed choice of game: every byte a 0x5B gives a native-codec
        // game of many frames with entity, player and configstring changes.
        let choices = [0x5Bu8; 4096];
        record_game(&mut Unstructured::new(&choices)).unwrap_or_default()
    })
}

/// The `demo_reader` target. The first byte picks how the rest is used:
/// even — the bytes are a whole file; odd — [`small_demo`] patched with
/// (offset, xor) byte pairs (checksums left as they were, so damage must be
/// caught by them).
pub fn demo_reader(input: &[u8]) -> Exercised {
    let Some((&mode, rest)) = input.split_first() else {
        return Exercised::default();
    };
    if mode % 2 == 0 {
        return exercise(rest);
    }
    let mut data = small_demo().to_vec();
    let len = data.len().max(1);
    for pair in rest.chunks_exact(3) {
        let offset = usize::from(u16::from_le_bytes([pair[0], pair[1]]));
        if let Some(byte) = data.get_mut(offset % len) {
            *byte ^= pair[2];
        }
    }
    exercise(&data)
}

/// What the `lockstep_reader` target saw of a lockstep recording.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LockstepSeen {
    /// The header parsed.
    pub opened: bool,
    /// `info` described every record.
    pub described: bool,
    /// Turns the replay from the start re-simulated.
    pub turns: u32,
    /// Recorded checksums that replay reproduced.
    pub checksums_verified: u32,
    /// Whether the replay found the file cut short.
    pub truncated: bool,
    /// Keyframes in the index (or found by a scan).
    pub keyframes: usize,
    /// Replays from the first four keyframes that reached the end.
    pub keyframe_replays: usize,
}

/// The `lockstep_reader` target: arbitrary bytes as a lockstep recording.
/// The header, every record, the keyframe index, `info`, and a replay with
/// the built-in unit simulation (from the start and from each of the first
/// four keyframes) must give values or errors, never a panic, and allocate
/// only within the format's bounds.
pub fn lockstep_reader(data: &[u8]) -> LockstepSeen {
    use crate::lockstep::{info, replay, LockstepReader};
    use lockstep::Units;
    let mut seen = LockstepSeen::default();
    let Ok(reader) = LockstepReader::new(data) else {
        return seen;
    };
    seen.opened = true;
    seen.described = info(&reader, data.len()).is_ok();
    if let Ok((report, _)) = replay::<Units>(&reader, None) {
        seen.turns = report.turns;
        seen.checksums_verified = report.checksums_verified;
        seen.truncated = report.truncated;
    }
    if let Ok(keyframes) = reader.keyframes() {
        seen.keyframes = keyframes.len();
        for keyframe in keyframes.iter().take(4) {
            if replay::<Units>(&reader, Some(keyframe)).is_ok() {
                seen.keyframe_replays += 1;
            }
        }
    }
    seen
}
