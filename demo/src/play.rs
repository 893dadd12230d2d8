//! [`Player`]: plays a native demo through the same `snapshot::Client`
//! code as live play, over [`DynamicState`] values built from the file's
//! schemas, with sync-checksum verification and seeking.

use fields::dynamic::DynamicState;
use snapshot::{Client, Models, Received, SyncCheck};

use crate::error::DemoError;
use crate::format::{KeyframeEntry, RecordKind};
use crate::reader::{DemoReader, Record, Records};

/// The client a demo plays into.
pub type DemoClient = Client<DynamicState, DynamicState>;

/// One record played.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Played<'a> {
    /// The record.
    pub record: Record<'a>,
    /// What the client made of its message.
    pub received: Received,
}

/// Plays the records of a demo, in order, into a [`DemoClient`].
#[derive(Debug, Clone)]
pub struct Player<'a> {
    reader: DemoReader<'a>,
    records: Records<'a>,
    client: DemoClient,
    verify: bool,
    checksums_verified: u64,
}

impl<'a> Player<'a> {
    /// A player at the start of the demo.
    pub fn new(reader: DemoReader<'a>) -> Result<Self, DemoError> {
        let client = fresh_client(&reader)?;
        Ok(Player {
            records: reader.records(),
            reader,
            client,
            verify: false,
            checksums_verified: 0,
        })
    }

    /// With verification on, a snapshot whose sync checksum disagrees with
    /// the decoded state is an error ([`DemoError::ChecksumMismatch`]).
    pub fn set_verify(&mut self, verify: bool) {
        self.verify = verify;
    }

    /// Sync checksums that matched so far.
    pub fn checksums_verified(&self) -> u64 {
        self.checksums_verified
    }

    /// The client holding the decoded snapshots.
    pub fn client(&self) -> &DemoClient {
        &self.client
    }

    /// Mutable access to the client (to turn tracing on, for example).
    pub fn client_mut(&mut self) -> &mut DemoClient {
        &mut self.client
    }

    /// The demo.
    pub fn reader(&self) -> &DemoReader<'a> {
        &self.reader
    }

    /// Whether the end marker was reached.
    pub fn reached_end(&self) -> bool {
        self.records.reached_end()
    }

    /// The next record, without playing it (`None` at the end or after an error).
    pub fn peek(&self) -> Option<Result<Record<'a>, DemoError>> {
        self.records.clone().next()
    }

    /// Plays the next record. `None` at the end marker; a truncated file
    /// ends with `Err(DemoError::Truncated)` after its complete records.
    pub fn next_record(&mut self) -> Option<Result<Played<'a>, DemoError>> {
        let record = match self.records.next()? {
            Ok(record) => record,
            Err(error) => return Some(Err(error)),
        };
        Some(self.play(record))
    }

    fn play(&mut self, record: Record<'a>) -> Result<Played<'a>, DemoError> {
        let received = match record.kind {
            RecordKind::Delta | RecordKind::Keyframe => {
                self.client.read_snapshot(record.sequence, record.payload)
            }
            _ => self.client.read_message(record.payload),
        }
        .map_err(|source| DemoError::Message {
            record: record.index,
            offset: record.offset,
            source,
        })?;
        if let Received::Snapshot(report) = received {
            match report.sync {
                SyncCheck::Mismatched if self.verify => {
                    return Err(DemoError::ChecksumMismatch {
                        record: record.index,
                        offset: record.offset,
                        sequence: report.sequence,
                    })
                }
                SyncCheck::Matched => self.checksums_verified += 1,
                _ => {}
            }
        }
        Ok(Played { record, received })
    }

    /// Positions the player at `time_ms`: afterwards the client's newest
    /// snapshot is the last one at or before that time (the first one, if
    /// the demo starts later), exactly as if played from the start.
    ///
    /// It restores the nearest keyframe before the time — a fresh client,
    /// the gamestate and configstring changes in force at it, the keyframe
    /// itself — and plays on from there. A recording whose deltas after a
    /// keyframe still name older bases (possible only for streams not made
    /// by this crate's recorders) fails from that keyframe with a missing
    /// base; the player then falls back to the keyframe before it, and
    /// ultimately to the start of the file.
    pub fn seek(&mut self, time_ms: u32) -> Result<(), DemoError> {
        let keyframes = self.reader.keyframes()?;
        let before = keyframes.partition_point(|k| k.server_time <= time_ms);
        // Candidates: the keyframe at or before the time, then earlier ones.
        let mut candidates: Vec<Option<&KeyframeEntry>> = keyframes
            [..before.max(1).min(keyframes.len())]
            .iter()
            .rev()
            .map(Some)
            .collect();
        candidates.push(None);
        let mut last_error = None;
        for keyframe in candidates {
            match self.seek_from(keyframe, time_ms) {
                Ok(()) => return Ok(()),
                Err(DemoError::Message {
                    source: snapshot::ClientError::BaseMissing { .. },
                    ..
                }) if keyframe.is_some() => continue,
                Err(error) => last_error = Some(error),
            }
            break;
        }
        Err(last_error.unwrap_or_else(|| DemoError::Span("nothing to seek to".into())))
    }

    fn seek_from(
        &mut self,
        keyframe: Option<&KeyframeEntry>,
        time_ms: u32,
    ) -> Result<(), DemoError> {
        self.client = fresh_client(&self.reader)?;
        self.checksums_verified = 0;
        match keyframe {
            None => self.records = self.reader.records(),
            Some(keyframe) => {
                let offset = to_usize(keyframe.offset);
                let mut records = self.reader.records_at(
                    to_usize(keyframe.gamestate_offset),
                    to_usize(keyframe.gamestate_record),
                );
                // The gamestate and configstring changes in force at the keyframe.
                loop {
                    if records.offset() >= offset {
                        break;
                    }
                    let record = match records.next() {
                        Some(result) => result?,
                        None => break,
                    };
                    if matches!(
                        record.kind,
                        RecordKind::Gamestate | RecordKind::Configstring
                    ) {
                        self.play(record)?;
                    }
                }
                if records.offset() != offset {
                    return Err(DemoError::Corrupt {
                        record: to_usize(keyframe.record),
                        offset,
                        reason: "the keyframe index points between records".into(),
                    });
                }
                self.records = records;
            }
        }
        // Fast-forward: play while the next snapshot is not past the time,
        // and at least until one snapshot is held.
        while let Some(next) = self.peek() {
            let record = match next {
                Ok(record) => record,
                // A truncated or damaged tail: stop before it; the caller
                // meets it when playing on.
                Err(_) => break,
            };
            let held = self.client.newest().is_some();
            if record.kind.is_snapshot() && held && record.server_time > time_ms {
                break;
            }
            self.records.next();
            self.play(record)?;
        }
        Ok(())
    }
}

fn to_usize(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

/// A client for the demo's schemas, coding with the header's models
/// ([`DemoHeader::models`](crate::DemoHeader::models)) and framing.
pub fn fresh_client(reader: &DemoReader<'_>) -> Result<DemoClient, DemoError> {
    let (entity, player) = reader.prototypes()?;
    let header = reader.header();
    let mut client = Client::with_prototypes(entity, player);
    client.set_framing(header.framing.framing());
    let models = header.models()?;
    if models != Models::of_types() {
        client
            .set_models(models)
            .map_err(|e| DemoError::BadHeader {
                reason: format!("the snapshots' models: {e}"),
            })?;
    }
    Ok(client)
}
