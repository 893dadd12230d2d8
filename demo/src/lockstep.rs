//! Lockstep recordings: a game as its seed, setup and turns (every
//! participant's commands), with the sync checksums and periodic full-state
//! keyframes, so a replay re-simulates it, checks every checksum, and seeks.
//!
//! The file reuses the native format's record framing ([`Frame`], CRC-32,
//! the same length bounds and end record) behind its own magic and header:
//!
//! | part | bytes |
//! | --- | --- |
//! | magic [`LOCKSTEP_MAGIC`] | 8 |
//! | format version ([`LOCKSTEP_VERSION`]) | 2 |
//! | header length `h` (at most [`MAX_HEADER_LEN`](crate::format::MAX_HEADER_LEN)) | 4 |
//! | [`LockstepHeader`], postcard-encoded | `h` |
//! | CRC-32 of version, length and header | 4 |
//! | records, framed as in [`crate::format`] | … |
//!
//! Records (the frame's time is the game's simulated time in ms, its
//! sequence the turn number):
//!
//! | kind | byte | payload |
//! | --- | --- | --- |
//! | [`LockstepRecordKind::Turn`] | `0x10` | the turn as the host sent it ([`lockstep::wire::encode_turn`]) |
//! | [`LockstepRecordKind::Check`] | `0x11` | the agreed sync checksum after the turn, `u64` LE |
//! | [`LockstepRecordKind::Keyframe`] | `0x12` | the state after the turn ([`Simulation::save`]) |
//! | index | `0xFE` | postcard list of [`LockstepKeyframe`] |
//! | end | `0xFF` | index offset and record count, `u64` LE each |
//!
//! Replaying needs the simulation named in the header: the `demo` tool
//! knows the built-in [`lockstep::Units`] (and the arena's world), and a
//! library user passes its own type to [`replay`].

use std::collections::BTreeMap;
use std::io::Write;

use lockstep::wire::{decode_turn, encode_turn, Settings, Turn};
use lockstep::{ParticipantId, Simulation};
use serde::{Deserialize, Serialize};

use crate::error::DemoError;
use crate::format::{
    crc32, crc32_update, decode_preamble, encode_preamble, Frame, END_PAYLOAD_LEN, FRAME_LEN,
    MAX_RECORD_LEN, TRAILER_LEN,
};

/// The first bytes of every lockstep recording.
pub const LOCKSTEP_MAGIC: [u8; 8] = *b"LOCKDEMO";
/// The `format` name of lockstep recordings in tools and JSON output.
pub const LOCKSTEP_FORMAT_NAME: &str = "lockstep";
/// The format version this build reads and writes.
pub const LOCKSTEP_VERSION: u16 = 1;
const INDEX_KIND: u8 = 0xFE;
const END_KIND: u8 = 0xFF;

/// Whether `data` starts with the lockstep recording magic.
pub fn has_lockstep_magic(data: &[u8]) -> bool {
    data.starts_with(&LOCKSTEP_MAGIC)
}

/// What a lockstep recording holds besides turns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockstepHeader {
    /// [`Simulation::NAME`] of the simulation that ran.
    pub simulation: String,
    /// Its seed.
    pub seed: u64,
    /// Its setup bytes.
    pub setup: Vec<u8>,
    /// The participants at the start.
    pub participants: Vec<ParticipantId>,
    /// The session settings.
    pub settings: Settings,
    /// A keyframe every this many turns.
    pub keyframe_interval: u32,
    /// Free-form facts: recorder, match, build.
    pub metadata: BTreeMap<String, String>,
}

/// What a lockstep record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum LockstepRecordKind {
    /// A turn.
    Turn,
    /// A sync checksum.
    Check,
    /// A full state.
    Keyframe,
}

impl LockstepRecordKind {
    /// The kind's byte.
    pub fn byte(self) -> u8 {
        match self {
            LockstepRecordKind::Turn => 0x10,
            LockstepRecordKind::Check => 0x11,
            LockstepRecordKind::Keyframe => 0x12,
        }
    }

    fn from_byte(byte: u8) -> Option<Self> {
        Some(match byte {
            0x10 => LockstepRecordKind::Turn,
            0x11 => LockstepRecordKind::Check,
            0x12 => LockstepRecordKind::Keyframe,
            _ => return None,
        })
    }
}

/// One entry of the keyframe index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockstepKeyframe {
    /// Byte offset of the keyframe record.
    pub offset: u64,
    /// Index of the record.
    pub record: u64,
    /// The turn after which the state was saved.
    pub turn: u32,
    /// Simulated time then, ms.
    pub time_ms: u32,
}

/// Writes a lockstep recording: call [`Self::record_turn`] with each turn as
/// it executes, then [`Self::finish`].
#[derive(Debug)]
pub struct LockstepRecorder<W: Write> {
    writer: W,
    header: LockstepHeader,
    offset: u64,
    records: u64,
    index: Vec<LockstepKeyframe>,
    time_ms: u64,
    next_turn: u32,
}

impl<W: Write> LockstepRecorder<W> {
    /// Writes the preamble and header.
    pub fn create(mut writer: W, header: LockstepHeader) -> Result<Self, DemoError> {
        if header.keyframe_interval == 0 {
            return Err(DemoError::Refused("keyframe interval 0".into()));
        }
        let out = encode_preamble(&LOCKSTEP_MAGIC, LOCKSTEP_VERSION, &header)?;
        writer.write_all(&out)?;
        Ok(LockstepRecorder {
            writer,
            header,
            offset: out.len() as u64,
            records: 0,
            index: Vec::new(),
            time_ms: 0,
            next_turn: 0,
        })
    }

    /// The header.
    pub fn header(&self) -> &LockstepHeader {
        &self.header
    }

    fn write_record(
        &mut self,
        kind: u8,
        time_ms: u32,
        turn: u32,
        payload: &[u8],
    ) -> Result<(), DemoError> {
        if payload.len() > MAX_RECORD_LEN {
            return Err(DemoError::Refused(format!(
                "a {}-byte record exceeds the limit of {MAX_RECORD_LEN}",
                payload.len()
            )));
        }
        let frame = Frame {
            kind,
            len: payload.len() as u32,
            server_time: time_ms,
            sequence: turn,
        }
        .encode();
        let crc = crc32_update(crc32(&frame), payload);
        self.writer.write_all(&frame)?;
        self.writer.write_all(payload)?;
        self.writer.write_all(&crc.to_le_bytes())?;
        self.offset += (FRAME_LEN + payload.len() + TRAILER_LEN) as u64;
        self.records += 1;
        Ok(())
    }

    /// Records a turn `sim` has just executed: the turn; its checksum on a
    /// sync turn; the whole state every `keyframe_interval` turns. Turns
    /// must come in order from 0.
    pub fn record_turn<S: Simulation>(&mut self, turn: &Turn, sim: &S) -> Result<(), DemoError> {
        if turn.turn != self.next_turn {
            return Err(DemoError::Refused(format!(
                "turn {} recorded, turn {} expected",
                turn.turn, self.next_turn
            )));
        }
        self.next_turn += 1;
        self.time_ms += turn.steps as u64 * self.header.settings.step_ms as u64;
        let time = self.time_ms.min(u32::MAX as u64) as u32;
        self.write_record(
            LockstepRecordKind::Turn.byte(),
            time,
            turn.turn,
            &encode_turn(turn),
        )?;
        if (turn.turn + 1) % self.header.settings.sync_interval.max(1) == 0 {
            self.write_record(
                LockstepRecordKind::Check.byte(),
                time,
                turn.turn,
                &sim.checksum().to_le_bytes(),
            )?;
        }
        if (turn.turn + 1) % self.header.keyframe_interval == 0 {
            self.index.push(LockstepKeyframe {
                offset: self.offset,
                record: self.records,
                turn: turn.turn,
                time_ms: time,
            });
            self.write_record(
                LockstepRecordKind::Keyframe.byte(),
                time,
                turn.turn,
                &sim.save(),
            )?;
        }
        Ok(())
    }

    /// Writes the keyframe index and the end record; returns the writer.
    pub fn finish(mut self) -> Result<W, DemoError> {
        let index = postcard::to_allocvec(&self.index)
            .map_err(|e| DemoError::Refused(format!("cannot encode the keyframe index: {e}")))?;
        let index_offset = self.offset;
        let records = self.records;
        self.write_record(INDEX_KIND, 0, 0, &index)?;
        let mut end = [0u8; END_PAYLOAD_LEN];
        end[..8].copy_from_slice(&index_offset.to_le_bytes());
        end[8..].copy_from_slice(&records.to_le_bytes());
        self.write_record(END_KIND, 0, 0, &end)?;
        self.writer.flush()?;
        Ok(self.writer)
    }
}

/// One checked record of a lockstep recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockstepRecord<'a> {
    /// Index of the record (0-based).
    pub index: usize,
    /// Byte offset in the file.
    pub offset: usize,
    /// What it holds.
    pub kind: LockstepRecordKind,
    /// Simulated time, ms.
    pub time_ms: u32,
    /// The turn.
    pub turn: u32,
    /// The payload.
    pub payload: &'a [u8],
}

/// A lockstep recording in memory.
#[derive(Debug, Clone)]
pub struct LockstepReader<'a> {
    data: &'a [u8],
    header: LockstepHeader,
    records_start: usize,
}

impl<'a> LockstepReader<'a> {
    /// Checks the magic, version and header.
    pub fn new(data: &'a [u8]) -> Result<Self, DemoError> {
        if !has_lockstep_magic(data) {
            return Err(DemoError::NotADemo {
                reason: "no lockstep recording magic".into(),
            });
        }
        let (header, records_start): (LockstepHeader, usize) =
            decode_preamble(data, LOCKSTEP_VERSION)?;
        if header.keyframe_interval == 0 || header.settings.sync_interval == 0 {
            return Err(DemoError::BadHeader {
                reason: "keyframe or sync interval 0".into(),
            });
        }
        Ok(LockstepReader {
            data,
            header,
            records_start,
        })
    }

    /// The header.
    pub fn header(&self) -> &LockstepHeader {
        &self.header
    }

    /// Every record from the first; ends at the end record, or with one
    /// error (truncation, damage).
    pub fn records(&self) -> LockstepRecords<'a> {
        self.records_at(self.records_start, 0)
    }

    /// Records from byte `offset`, where record number `index` starts.
    pub fn records_at(&self, offset: usize, index: usize) -> LockstepRecords<'a> {
        LockstepRecords {
            data: self.data,
            offset: offset.min(self.data.len()),
            index,
            done: false,
            index_entries: None,
        }
    }

    /// The keyframes, from the index when the file is complete, else by
    /// scanning the records.
    pub fn keyframes(&self) -> Result<Vec<LockstepKeyframe>, DemoError> {
        let mut records = self.records();
        let mut scanned = Vec::new();
        for record in records.by_ref() {
            match record {
                Ok(r) if r.kind == LockstepRecordKind::Keyframe => scanned.push(LockstepKeyframe {
                    offset: r.offset as u64,
                    record: r.index as u64,
                    turn: r.turn,
                    time_ms: r.time_ms,
                }),
                Ok(_) => {}
                Err(e) if e.is_truncation() => break,
                Err(e) => return Err(e),
            }
        }
        match records.index_entries {
            Some(index) if index == scanned => Ok(index),
            Some(_) => Err(DemoError::Corrupt {
                record: records.index,
                offset: records.offset,
                reason: "the keyframe index disagrees with the keyframes".into(),
            }),
            None => Ok(scanned),
        }
    }
}

/// Iterator over the records of a lockstep recording.
#[derive(Debug, Clone)]
pub struct LockstepRecords<'a> {
    data: &'a [u8],
    offset: usize,
    index: usize,
    done: bool,
    index_entries: Option<Vec<LockstepKeyframe>>,
}

impl<'a> LockstepRecords<'a> {
    fn corrupt(
        &mut self,
        reason: impl Into<String>,
    ) -> Option<Result<LockstepRecord<'a>, DemoError>> {
        self.done = true;
        Some(Err(DemoError::Corrupt {
            record: self.index,
            offset: self.offset,
            reason: reason.into(),
        }))
    }
}

impl<'a> Iterator for LockstepRecords<'a> {
    type Item = Result<LockstepRecord<'a>, DemoError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            let rest = &self.data[self.offset..];
            let Some(frame_bytes) = rest.first_chunk::<FRAME_LEN>() else {
                self.done = true;
                return Some(Err(DemoError::Truncated {
                    offset: self.offset,
                    complete_records: self.index,
                    reason: format!("{} bytes of a record frame, no end marker", rest.len()),
                }));
            };
            let frame = match Frame::decode(frame_bytes) {
                Ok(frame) => frame,
                Err(reason) => return self.corrupt(reason),
            };
            let len = frame.len as usize;
            if len > MAX_RECORD_LEN {
                return self.corrupt(format!(
                    "payload length {len} exceeds the limit of {MAX_RECORD_LEN}"
                ));
            }
            let total = FRAME_LEN + len + TRAILER_LEN;
            if rest.len() < total {
                self.done = true;
                return Some(Err(DemoError::Truncated {
                    offset: self.offset,
                    complete_records: self.index,
                    reason: format!("the record needs {total} bytes, {} remain", rest.len()),
                }));
            }
            let payload = &rest[FRAME_LEN..FRAME_LEN + len];
            let mut stored = [0u8; 4];
            stored.copy_from_slice(&rest[FRAME_LEN + len..total]);
            if crc32_update(crc32(frame_bytes), payload) != u32::from_le_bytes(stored) {
                return self.corrupt("record checksum mismatch");
            }
            match frame.kind {
                INDEX_KIND => match postcard::from_bytes::<Vec<LockstepKeyframe>>(payload) {
                    Ok(entries) => self.index_entries = Some(entries),
                    Err(e) => return self.corrupt(format!("keyframe index: {e}")),
                },
                END_KIND => {
                    if len != END_PAYLOAD_LEN {
                        return self.corrupt(format!("end record of {len} bytes"));
                    }
                    if self.offset + total != self.data.len() {
                        let extra = self.data.len() - self.offset - total;
                        return self.corrupt(format!("{extra} bytes after the end marker"));
                    }
                    self.done = true;
                    return None;
                }
                byte => {
                    let Some(kind) = LockstepRecordKind::from_byte(byte) else {
                        return self.corrupt(format!("unknown record kind {byte}"));
                    };
                    let record = LockstepRecord {
                        index: self.index,
                        offset: self.offset,
                        kind,
                        time_ms: frame.server_time,
                        turn: frame.sequence,
                        payload,
                    };
                    self.offset += total;
                    self.index += 1;
                    return Some(Ok(record));
                }
            }
            self.offset += total;
            self.index += 1;
        }
    }
}

/// What a replay did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplayReport {
    /// Turns re-simulated.
    pub turns: u32,
    /// Recorded checksums the re-simulation reproduced.
    pub checksums_verified: u32,
    /// Keyframes whose state the re-simulation reproduced.
    pub keyframes_verified: u32,
    /// The first turn executed.
    pub first_turn: Option<u32>,
    /// The last turn executed.
    pub last_turn: Option<u32>,
    /// Simulated time at the end, ms.
    pub time_ms: u32,
    /// The final state's checksum.
    pub final_checksum: u64,
    /// The file was cut short (every complete record was replayed).
    pub truncated: bool,
}

/// Re-simulates a recording with `S` — from the start, or from the
/// keyframe `from` — checking every recorded checksum and every keyframe
/// met on the way; the first mismatch is [`DemoError::ChecksumMismatch`]
/// naming the record and the turn.
pub fn replay<S: Simulation>(
    reader: &LockstepReader<'_>,
    from: Option<&LockstepKeyframe>,
) -> Result<(ReplayReport, S), DemoError> {
    let header = reader.header();
    if header.simulation != S::NAME {
        return Err(DemoError::Refused(format!(
            "the recording is of simulation `{}`, not `{}`",
            header.simulation,
            S::NAME
        )));
    }
    let bad_sim = |e: lockstep::SimError| DemoError::BadHeader {
        reason: e.to_string(),
    };
    let (mut sim, mut records, mut next_turn) = match from {
        None => (
            S::create(header.seed, &header.setup, &header.participants).map_err(bad_sim)?,
            reader.records(),
            0,
        ),
        Some(keyframe) => {
            let offset = usize::try_from(keyframe.offset).unwrap_or(usize::MAX);
            let index = usize::try_from(keyframe.record).unwrap_or(usize::MAX);
            let mut records = reader.records_at(offset, index);
            let record = records.next().ok_or_else(|| DemoError::Corrupt {
                record: index,
                offset,
                reason: "no keyframe here".into(),
            })??;
            if record.kind != LockstepRecordKind::Keyframe || record.turn != keyframe.turn {
                return Err(DemoError::Corrupt {
                    record: index,
                    offset,
                    reason: "the index points at no keyframe of that turn".into(),
                });
            }
            let sim = S::load(record.payload).map_err(|e| DemoError::Corrupt {
                record: index,
                offset,
                reason: e.to_string(),
            })?;
            (sim, records, keyframe.turn + 1)
        }
    };
    let mut report = ReplayReport::default();
    for record in records.by_ref() {
        let record = match record {
            Ok(record) => record,
            Err(e) if e.is_truncation() => {
                report.truncated = true;
                break;
            }
            Err(e) => return Err(e),
        };
        let corrupt = |reason: String| DemoError::Corrupt {
            record: record.index,
            offset: record.offset,
            reason,
        };
        match record.kind {
            LockstepRecordKind::Turn => {
                let turn = decode_turn(record.payload).map_err(|e| corrupt(e.to_string()))?;
                if turn.turn != next_turn || record.turn != turn.turn {
                    return Err(corrupt(format!(
                        "turn {} where turn {next_turn} was due",
                        turn.turn
                    )));
                }
                sim.execute(&turn, header.settings.step_ms);
                report.first_turn.get_or_insert(turn.turn);
                report.last_turn = Some(turn.turn);
                report.turns += 1;
                report.time_ms = record.time_ms;
                next_turn += 1;
            }
            LockstepRecordKind::Check | LockstepRecordKind::Keyframe => {
                if report.last_turn != Some(record.turn) {
                    return Err(corrupt(format!(
                        "a record of turn {} after turn {:?}",
                        record.turn, report.last_turn
                    )));
                }
                let expected = if record.kind == LockstepRecordKind::Check {
                    let bytes: [u8; 8] = record
                        .payload
                        .try_into()
                        .map_err(|_| corrupt("a checksum record not of 8 bytes".into()))?;
                    u64::from_le_bytes(bytes)
                } else {
                    S::load(record.payload)
                        .map_err(|e| corrupt(e.to_string()))?
                        .checksum()
                };
                if sim.checksum() != expected {
                    return Err(DemoError::ChecksumMismatch {
                        record: record.index,
                        offset: record.offset,
                        sequence: record.turn,
                    });
                }
                if record.kind == LockstepRecordKind::Check {
                    report.checksums_verified += 1;
                } else {
                    report.keyframes_verified += 1;
                }
            }
        }
    }
    report.final_checksum = sim.checksum();
    Ok((report, sim))
}

/// Facts about a lockstep recording, for `demo info`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LockstepInfo {
    /// Always [`LOCKSTEP_FORMAT_NAME`].
    pub format: &'static str,
    /// Format version.
    pub version: u16,
    /// The simulation.
    pub simulation: String,
    /// Its seed.
    pub seed: u64,
    /// Setup bytes.
    pub setup_bytes: usize,
    /// Participants at the start.
    pub participants: Vec<ParticipantId>,
    /// Turn delay.
    pub delay: u32,
    /// Sync interval, turns.
    pub sync_interval: u32,
    /// Step length, ms.
    pub step_ms: u32,
    /// Keyframe interval, turns.
    pub keyframe_interval: u32,
    /// Turns recorded.
    pub turns: u32,
    /// Commands in all turns.
    pub commands: u64,
    /// Participants dropped during the game.
    pub dropped: Vec<ParticipantId>,
    /// Checksums recorded.
    pub checksums: u32,
    /// Keyframes.
    pub keyframes: u32,
    /// Simulated time, ms.
    pub duration_ms: u32,
    /// Mean turn length, ms (speed control's choice).
    pub mean_turn_ms: f64,
    /// File size.
    pub bytes: usize,
    /// Bytes of turn records (what the network carried, in essence).
    pub turn_bytes: u64,
    /// Whether the file was cut short.
    pub truncated: bool,
    /// Metadata.
    pub metadata: BTreeMap<String, String>,
}

/// Describes a recording by reading every record (nothing is simulated).
pub fn info(reader: &LockstepReader<'_>, bytes: usize) -> Result<LockstepInfo, DemoError> {
    let h = reader.header();
    let mut info = LockstepInfo {
        format: LOCKSTEP_FORMAT_NAME,
        version: LOCKSTEP_VERSION,
        simulation: h.simulation.clone(),
        seed: h.seed,
        setup_bytes: h.setup.len(),
        participants: h.participants.clone(),
        delay: h.settings.delay,
        sync_interval: h.settings.sync_interval,
        step_ms: h.settings.step_ms,
        keyframe_interval: h.keyframe_interval,
        turns: 0,
        commands: 0,
        dropped: Vec::new(),
        checksums: 0,
        keyframes: 0,
        duration_ms: 0,
        mean_turn_ms: 0.0,
        bytes,
        turn_bytes: 0,
        truncated: false,
        metadata: h.metadata.clone(),
    };
    let mut turn_ms_sum = 0u64;
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) if e.is_truncation() => {
                info.truncated = true;
                break;
            }
            Err(e) => return Err(e),
        };
        info.duration_ms = info.duration_ms.max(record.time_ms);
        match record.kind {
            LockstepRecordKind::Turn => {
                let turn = decode_turn(record.payload).map_err(|e| DemoError::Corrupt {
                    record: record.index,
                    offset: record.offset,
                    reason: e.to_string(),
                })?;
                info.turns += 1;
                info.turn_bytes += record.payload.len() as u64;
                turn_ms_sum += turn.turn_ms as u64;
                info.commands += turn
                    .sets
                    .iter()
                    .map(|(_, s)| s.commands.len() as u64)
                    .sum::<u64>();
                info.dropped.extend(&turn.dropped);
            }
            LockstepRecordKind::Check => info.checksums += 1,
            LockstepRecordKind::Keyframe => info.keyframes += 1,
        }
    }
    info.mean_turn_ms = turn_ms_sum as f64 / info.turns.max(1) as f64;
    Ok(info)
}
