//! [`Recorder`]: writes a native demo from the messages a client received.

use std::io::Write;

use fields::BitReader;
use snapshot::message::MessageKind;
use snapshot::{Framing, Models};

use crate::error::DemoError;
use crate::format::{
    crc32, crc32_update, encode_header, DemoHeader, Frame, KeyframeEntry, MessageFraming,
    RecordKind, MAX_RECORD_LEN,
};

/// Writes a demo: the header, then each message as a record, then (on
/// [`finish`](Recorder::finish)) the keyframe index and the end marker.
///
/// A recording must never start on a delta: after each gamestate, the first
/// snapshot must be a full update, or [`record_snapshot`](Self::record_snapshot)
/// refuses it. On the server, add the stream with
/// `snapshot::Server::add_recorder` and call `request_full_update` on it
/// before its first snapshot (a recorder's first snapshot is full anyway)
/// and every few seconds for keyframes. A recording of a client's own view
/// goes through [`ClientRecorder`](crate::ClientRecorder).
///
/// A recorder dropped without `finish` leaves a truncated file whose
/// complete records still play.
#[derive(Debug)]
pub struct Recorder<W: Write> {
    writer: W,
    offset: u64,
    records: u64,
    index: Vec<KeyframeEntry>,
    gamestate_offset: Option<(u64, u64)>,
    /// A full snapshot has been recorded since the last gamestate.
    started: bool,
    last_sequence: Option<u32>,
    /// The header's framing: what the recorded messages must be (it also
    /// reads each snapshot message's kind).
    framing: MessageFraming,
    /// The header's models: what the recorded stream must be coded with.
    models: Models,
}

impl<W: Write> Recorder<W> {
    /// Writes the header to `writer` and returns the recorder.
    pub fn create(mut writer: W, header: DemoHeader) -> Result<Self, DemoError> {
        let models = header.models()?;
        let bytes = encode_header(&header)?;
        writer.write_all(&bytes)?;
        Ok(Recorder {
            writer,
            offset: bytes.len() as u64,
            records: 0,
            index: Vec::new(),
            gamestate_offset: None,
            started: false,
            last_sequence: None,
            framing: header.framing,
            models,
        })
    }

    /// How the header says the recorded messages are framed: a server or
    /// client recording must frame the ones it records this way.
    pub fn framing(&self) -> MessageFraming {
        self.framing
    }

    /// The models the header says the recorded stream is coded with (and
    /// how they adapt): a recording server's must be the same.
    pub fn models(&self) -> &Models {
        &self.models
    }

    /// Records a gamestate message (as `snapshot::Server::write_gamestate`
    /// produced it). Snapshots after it must start with a full one again.
    pub fn record_gamestate(&mut self, server_time_ms: u32, bytes: &[u8]) -> Result<(), DemoError> {
        expect_kind(bytes, MessageKind::Gamestate)?;
        self.gamestate_offset = Some((self.offset, self.records));
        self.started = false;
        self.last_sequence = None;
        self.write_record(RecordKind::Gamestate, server_time_ms, 0, bytes)
    }

    /// Records a configstring-change message.
    pub fn record_configstring(
        &mut self,
        server_time_ms: u32,
        bytes: &[u8],
    ) -> Result<(), DemoError> {
        if self.gamestate_offset.is_none() {
            return Err(DemoError::Refused(
                "a configstring change before any gamestate".into(),
            ));
        }
        expect_kind(bytes, MessageKind::Configstring)?;
        self.write_record(RecordKind::Configstring, server_time_ms, 0, bytes)
    }

    /// Records a snapshot message, `bytes` exactly as
    /// `snapshot::Server::build_snapshot` produced them; `is_full` for a
    /// full update (a keyframe). The message's own header must agree with
    /// `sequence` and `is_full`, and the first snapshot after a gamestate
    /// must be full.
    pub fn record_snapshot(
        &mut self,
        server_time_ms: u32,
        sequence: u32,
        bytes: &[u8],
        is_full: bool,
    ) -> Result<(), DemoError> {
        let Some((gamestate_offset, gamestate_record)) = self.gamestate_offset else {
            return Err(DemoError::Refused(
                "a snapshot before any gamestate: record the gamestate first".into(),
            ));
        };
        let full = snapshot_is_full(self.framing.as_framing(), bytes)?;
        if full != is_full {
            return Err(DemoError::Refused(format!(
                "snapshot {sequence} is {} but was recorded as {}",
                describe(full),
                describe(is_full)
            )));
        }
        if !self.started && !is_full {
            return Err(DemoError::Refused(format!(
                "the first snapshot of a recording must be a full update, but snapshot \
                 {sequence} is {}: request a full update for the recorder \
                 (Server::request_full_update) before its first snapshot",
                describe(full)
            )));
        }
        if self.last_sequence.is_some_and(|last| sequence <= last) {
            return Err(DemoError::Refused(format!(
                "snapshot {sequence} is not newer than the last one recorded"
            )));
        }
        let kind = if is_full {
            self.index.push(KeyframeEntry {
                offset: self.offset,
                server_time: server_time_ms,
                sequence,
                record: self.records,
                gamestate_offset,
                gamestate_record,
            });
            self.started = true;
            RecordKind::Keyframe
        } else {
            RecordKind::Delta
        };
        self.last_sequence = Some(sequence);
        self.write_record(kind, server_time_ms, sequence, bytes)
    }

    /// Keyframes recorded so far.
    pub fn keyframes(&self) -> &[KeyframeEntry] {
        &self.index
    }

    /// Bytes written so far.
    pub fn bytes_written(&self) -> u64 {
        self.offset
    }

    /// Writes the keyframe index and the end marker, flushes, and returns
    /// the writer.
    pub fn finish(mut self) -> Result<W, DemoError> {
        let index = postcard::to_allocvec(&self.index)
            .map_err(|e| DemoError::Refused(format!("cannot encode the keyframe index: {e}")))?;
        let index_offset = self.offset;
        let records = self.records;
        self.write_record(RecordKind::Index, 0, 0, &index)?;
        let mut end = [0u8; 16];
        end[..8].copy_from_slice(&index_offset.to_le_bytes());
        end[8..].copy_from_slice(&records.to_le_bytes());
        self.write_record(RecordKind::End, 0, 0, &end)?;
        self.writer.flush()?;
        Ok(self.writer)
    }

    fn write_record(
        &mut self,
        kind: RecordKind,
        server_time: u32,
        sequence: u32,
        payload: &[u8],
    ) -> Result<(), DemoError> {
        if payload.len() > MAX_RECORD_LEN {
            return Err(DemoError::Refused(format!(
                "a {}-byte message exceeds the record limit of {MAX_RECORD_LEN}",
                payload.len()
            )));
        }
        let frame = Frame {
            kind: kind.byte(),
            len: payload.len() as u32,
            server_time,
            sequence,
        }
        .encode();
        let crc = crc32_update(crc32(&frame), payload);
        self.writer.write_all(&frame)?;
        self.writer.write_all(payload)?;
        self.writer.write_all(&crc.to_le_bytes())?;
        self.offset += (frame.len() + payload.len() + 4) as u64;
        self.records += 1;
        Ok(())
    }
}

fn describe(full: bool) -> &'static str {
    if full {
        "a full update"
    } else {
        "a delta"
    }
}

fn expect_kind(bytes: &[u8], want: MessageKind) -> Result<(), DemoError> {
    let kind = MessageKind::read(&mut BitReader::new(bytes))
        .map_err(|e| DemoError::Refused(format!("not a message: {e}")))?;
    if kind != want {
        return Err(DemoError::Refused(format!(
            "expected a {want:?} message, got a {kind:?} message"
        )));
    }
    Ok(())
}

/// Whether a snapshot message framed by `framing` is a full update (else
/// a delta), from its kind: the rest of its header reads only against its
/// base.
pub(crate) fn snapshot_is_full(framing: &dyn Framing, bytes: &[u8]) -> Result<bool, DemoError> {
    let kind = framing
        .snapshot_kind(bytes)
        .map_err(|e| DemoError::Refused(format!("not a snapshot message: {e}")))?;
    Ok(kind == MessageKind::Full)
}
