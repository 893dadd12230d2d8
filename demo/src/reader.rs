//! [`DemoReader`]: a native demo held in memory, read record by record.
//!
//! Nothing read from the file sizes an allocation: records are borrowed
//! slices of the file, every length is checked against the bytes present
//! and a fixed bound ([`MAX_RECORD_LEN`], [`MAX_HEADER_LEN`](crate::format::MAX_HEADER_LEN))
//! before use, and the postcard decoder of the header and index only
//! allocates for elements actually present in those bounded payloads.

use std::sync::Arc;

use fields::dynamic::{DynamicLayout, DynamicState};

use crate::error::DemoError;
use crate::format::{
    crc32, crc32_update, decode_header, DemoHeader, Frame, KeyframeEntry, RecordKind,
    END_PAYLOAD_LEN, FRAME_LEN, MAX_RECORD_LEN, TRAILER_LEN,
};

/// A native demo in memory: its header, and its records on demand.
#[derive(Debug, Clone)]
pub struct DemoReader<'a> {
    data: &'a [u8],
    header: DemoHeader,
    records_start: usize,
}

/// One complete, checksum-verified record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Index of the record in the file (0-based).
    pub index: usize,
    /// Byte offset of the record in the file.
    pub offset: usize,
    /// What it holds.
    pub kind: RecordKind,
    /// Server time, ms.
    pub server_time: u32,
    /// Snapshot sequence (0 for other records).
    pub sequence: u32,
    /// The message bytes.
    pub payload: &'a [u8],
}

impl Record<'_> {
    /// Bytes the record takes in the file.
    pub fn file_len(&self) -> usize {
        FRAME_LEN + self.payload.len() + TRAILER_LEN
    }
}

impl<'a> DemoReader<'a> {
    /// Checks the magic, version and header of `data`.
    pub fn new(data: &'a [u8]) -> Result<Self, DemoError> {
        let (header, records_start) = decode_header(data)?;
        Ok(DemoReader {
            data,
            header,
            records_start,
        })
    }

    /// The header.
    pub fn header(&self) -> &DemoHeader {
        &self.header
    }

    /// The whole file.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Byte offset of the first record.
    pub fn records_start(&self) -> usize {
        self.records_start
    }

    /// Every record from the first.
    pub fn records(&self) -> Records<'a> {
        self.records_at(self.records_start, 0)
    }

    /// Records from byte `offset`, which must be where record number
    /// `index` starts (from a [`KeyframeEntry`] or an earlier [`Record`]).
    pub fn records_at(&self, offset: usize, index: usize) -> Records<'a> {
        Records {
            data: self.data,
            offset: offset.min(self.data.len()),
            index,
            state: State::Reading,
            keyframes: None,
        }
    }

    /// The record at `offset` (numbered `index`), if a complete valid one is there.
    pub fn record_at(&self, offset: usize, index: usize) -> Result<Record<'a>, DemoError> {
        match self.records_at(offset, index).next() {
            Some(result) => result,
            None => Err(DemoError::Corrupt {
                record: index,
                offset,
                reason: "no data record here".into(),
            }),
        }
    }

    /// The keyframes: from the index at the end of the file when it is
    /// intact, else by scanning every record (a truncated file has no index).
    pub fn keyframes(&self) -> Result<Vec<KeyframeEntry>, DemoError> {
        if let Some(index) = self.index_from_tail() {
            return Ok(index);
        }
        let mut keyframes = Vec::new();
        let mut gamestate = None;
        for record in self.records() {
            let record = match record {
                Ok(record) => record,
                Err(error) if error.is_truncation() => break,
                Err(error) => return Err(error),
            };
            match record.kind {
                RecordKind::Gamestate => {
                    gamestate = Some((record.offset as u64, record.index as u64))
                }
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
        Ok(keyframes)
    }

    /// The index named by the end record, if the file ends with a valid one.
    fn index_from_tail(&self) -> Option<Vec<KeyframeEntry>> {
        let end_len = FRAME_LEN + END_PAYLOAD_LEN + TRAILER_LEN;
        let end_offset = self.data.len().checked_sub(end_len)?;
        if end_offset < self.records_start {
            return None;
        }
        let end = self.records_at(end_offset, 0).read_raw().ok()?;
        // A shorter end record can sit at this offset with other bytes after
        // it: only a full-size one that reaches the end of the file counts.
        if end.kind != RecordKind::End.byte() || end.file_len() != end_len {
            return None;
        }
        let index_offset = u64::from_le_bytes(*end.payload.first_chunk::<8>()?);
        let index_offset = usize::try_from(index_offset).ok()?;
        if index_offset < self.records_start || index_offset >= end_offset {
            return None;
        }
        let index = self.records_at(index_offset, 0).read_raw().ok()?;
        if index.kind != RecordKind::Index.byte()
            || index_offset.checked_add(index.file_len()) != Some(end_offset)
        {
            return None;
        }
        let entries: Vec<KeyframeEntry> = postcard::from_bytes(index.payload).ok()?;
        // Entries must point inside the records, in increasing order.
        let ordered = entries.windows(2).all(|w| w[0].offset < w[1].offset);
        let inside = entries.iter().all(|e| {
            (self.records_start as u64..index_offset as u64).contains(&e.offset)
                && e.gamestate_offset <= e.offset
                && e.gamestate_offset >= self.records_start as u64
        });
        (ordered && inside).then_some(entries)
    }

    /// Layouts to decode the demo's states with (schemas and models from the header).
    pub fn layouts(&self) -> Result<(Arc<DynamicLayout>, Arc<DynamicLayout>), DemoError> {
        let bad = |what: &str, e: fields::BitError| DemoError::BadHeader {
            reason: format!("{what} schema: {e}"),
        };
        let entity = DynamicLayout::with_model(
            self.header.entity_schema.clone(),
            self.header.entity_model.clone(),
        )
        .map_err(|e| bad("entity", e))?;
        let player = DynamicLayout::with_model(
            self.header.player_schema.clone(),
            self.header.player_model.clone(),
        )
        .map_err(|e| bad("player", e))?;
        Ok((entity, player))
    }

    /// Zeroed prototypes of the two dynamic types, for a `snapshot::Client`.
    pub fn prototypes(&self) -> Result<(DynamicState, DynamicState), DemoError> {
        let (entity, player) = self.layouts()?;
        Ok((entity.zeroed(), player.zeroed()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Reading,
    Ended,
    Failed,
}

/// A raw record: any kind byte.
struct Raw<'a> {
    kind: u8,
    server_time: u32,
    sequence: u32,
    payload: &'a [u8],
}

impl Raw<'_> {
    fn file_len(&self) -> usize {
        FRAME_LEN + self.payload.len() + TRAILER_LEN
    }
}

/// Iterates over the data records (gamestate, configstring, delta,
/// keyframe) of a demo.
///
/// The end record ends the iteration. A file without one ends with a single
/// `Err(DemoError::Truncated)` after its complete records; a damaged record
/// is `Err(DemoError::Corrupt)` naming its offset. Nothing follows an error.
#[derive(Debug, Clone)]
pub struct Records<'a> {
    data: &'a [u8],
    offset: usize,
    index: usize,
    state: State,
    keyframes: Option<Vec<KeyframeEntry>>,
}

impl<'a> Records<'a> {
    /// Byte offset of the next record.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Records returned so far (plus the index of the first one).
    pub fn next_index(&self) -> usize {
        self.index
    }

    /// Whether the end marker was reached.
    pub fn reached_end(&self) -> bool {
        self.state == State::Ended
    }

    /// The keyframe index, once the end was reached.
    pub fn keyframe_index(&self) -> Option<&[KeyframeEntry]> {
        self.keyframes.as_deref()
    }

    fn corrupt(&self, reason: impl Into<String>) -> DemoError {
        DemoError::Corrupt {
            record: self.index,
            offset: self.offset,
            reason: reason.into(),
        }
    }

    fn truncated(&self, reason: String) -> DemoError {
        DemoError::Truncated {
            offset: self.offset,
            complete_records: self.index,
            reason,
        }
    }

    /// Reads and checks the record at the current offset, without advancing.
    fn read_raw(&self) -> Result<Raw<'a>, DemoError> {
        let rest = &self.data[self.offset..];
        let Some(frame_bytes) = rest.first_chunk::<FRAME_LEN>() else {
            let reason = if rest.is_empty() {
                "the file ends after the last complete record".to_string()
            } else {
                format!("{} bytes of a record frame", rest.len())
            };
            return Err(self.truncated(reason));
        };
        let frame = Frame::decode(frame_bytes).map_err(|reason| self.corrupt(reason))?;
        let len = frame.len as usize;
        if len > MAX_RECORD_LEN {
            return Err(self.corrupt(format!(
                "payload length {len} exceeds the limit of {MAX_RECORD_LEN}"
            )));
        }
        let total = FRAME_LEN + len + TRAILER_LEN;
        if rest.len() < total {
            return Err(self.truncated(format!(
                "the record needs {total} bytes, {} remain",
                rest.len()
            )));
        }
        let payload = &rest[FRAME_LEN..FRAME_LEN + len];
        let stored = u32::from_le_bytes(
            rest[FRAME_LEN + len..total]
                .try_into()
                .map_err(|_| self.corrupt("checksum"))?,
        );
        if crc32_update(crc32(frame_bytes), payload) != stored {
            return Err(self.corrupt("record checksum mismatch"));
        }
        Ok(Raw {
            kind: frame.kind,
            server_time: frame.server_time,
            sequence: frame.sequence,
            payload,
        })
    }

    fn fail(&mut self, error: DemoError) -> Option<Result<Record<'a>, DemoError>> {
        self.state = State::Failed;
        Some(Err(error))
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, DemoError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.state != State::Reading {
                return None;
            }
            let raw = match self.read_raw() {
                Ok(raw) => raw,
                Err(error) => return self.fail(error),
            };
            let Some(kind) = RecordKind::from_byte(raw.kind) else {
                let error = self.corrupt(format!("unknown record kind {}", raw.kind));
                return self.fail(error);
            };
            match kind {
                RecordKind::Index => {
                    match postcard::from_bytes::<Vec<KeyframeEntry>>(raw.payload) {
                        Ok(entries) => self.keyframes = Some(entries),
                        Err(e) => {
                            let error = self.corrupt(format!("keyframe index: {e}"));
                            return self.fail(error);
                        }
                    }
                    self.offset += raw.file_len();
                    self.index += 1;
                }
                RecordKind::End => {
                    if raw.payload.len() != END_PAYLOAD_LEN {
                        let error = self.corrupt(format!(
                            "end record of {} bytes, expected {END_PAYLOAD_LEN}",
                            raw.payload.len()
                        ));
                        return self.fail(error);
                    }
                    let end = self.offset + raw.file_len();
                    if end != self.data.len() {
                        self.offset = end;
                        let error = self.corrupt(format!(
                            "{} bytes after the end marker",
                            self.data.len() - end
                        ));
                        return self.fail(error);
                    }
                    self.offset = end;
                    self.state = State::Ended;
                    return None;
                }
                _ => {
                    let record = Record {
                        index: self.index,
                        offset: self.offset,
                        kind,
                        server_time: raw.server_time,
                        sequence: raw.sequence,
                        payload: raw.payload,
                    };
                    self.offset += raw.file_len();
                    self.index += 1;
                    return Some(Ok(record));
                }
            }
        }
    }
}
