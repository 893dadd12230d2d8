//! Cutting a span out of a native demo into a standalone one.
//!
//! The cut starts with the gamestate in force at its first snapshot (the
//! configstring changes before it folded in, re-encoded by the client that
//! played up to there) and that snapshot re-encoded as a full update. The
//! records after it are copied until the span ends, except deltas whose
//! base lies before the cut (or before a keyframe), which are re-based as
//! in a client-side recording (see [`crate::rebase`]).

use std::io::Write;

use snapshot::Received;

use crate::error::DemoError;
use crate::format::RecordKind;
use crate::play::Player;
use crate::reader::DemoReader;
use crate::rebase::Rebaser;
use crate::stats::Progress;
use crate::writer::Recorder;

/// What a cut wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CutReport {
    /// Snapshots in the cut.
    pub snapshots: usize,
    /// Of which re-encoded (the first, and deltas moved onto a base in the cut).
    pub reencoded: usize,
    /// Server time of the first snapshot.
    pub first_ms: u32,
    /// Server time of the last snapshot.
    pub last_ms: u32,
    /// The source ended (truncated) before the span did.
    pub source_truncated: bool,
}

/// Writes the snapshots of `reader` from `from_ms` to `to_ms` (server
/// time, inclusive) as a new demo to `writer`.
pub fn cut<W: Write>(
    reader: &DemoReader<'_>,
    from_ms: u32,
    to_ms: u32,
    writer: W,
    progress: Progress<'_>,
) -> Result<(W, CutReport), DemoError> {
    if from_ms > to_ms {
        return Err(DemoError::Span(format!(
            "the span {from_ms}..{to_ms} ms is empty"
        )));
    }
    let mut player = Player::new(reader.clone())?;
    player.seek(from_ms)?;
    let mut report = CutReport::default();
    // Play on to the first snapshot at or after the start.
    while player
        .client()
        .newest()
        .is_some_and(|s| s.server_time() < from_ms)
    {
        match player.next_record() {
            Some(Ok(_)) => {}
            Some(Err(error)) if error.is_truncation() => {
                report.source_truncated = true;
                break;
            }
            Some(Err(error)) => return Err(error),
            None => break,
        }
    }
    let first = match player.client().newest() {
        Some(s) if (from_ms..=to_ms).contains(&s.server_time()) => (s.sequence(), s.server_time()),
        _ => {
            return Err(DemoError::Span(format!(
                "no snapshot between {from_ms} and {to_ms} ms"
            )))
        }
    };
    let header = reader
        .header()
        .clone()
        .with_metadata("cut_from_ms", from_ms.to_string())
        .with_metadata("cut_to_ms", to_ms.to_string());
    let mut recorder = Recorder::create(writer, header)?;
    let mut gamestate = Vec::new();
    player.client().encode_gamestate(&mut gamestate)?;
    recorder.record_gamestate(first.1, &gamestate)?;
    let mut rebaser = Rebaser::default();
    let bytes = rebaser.keyframe(player.client(), first.0)?;
    recorder.record_snapshot(first.1, first.0, bytes, true)?;
    report.snapshots = 1;
    report.reencoded = 1;
    report.first_ms = first.1;
    report.last_ms = first.1;

    loop {
        if let Some(Ok(next)) = player.peek() {
            if next.kind.is_snapshot() && next.server_time > to_ms {
                break;
            }
        }
        let played = match player.next_record() {
            None => break,
            Some(Ok(played)) => played,
            Some(Err(error)) if error.is_truncation() => {
                report.source_truncated = true;
                break;
            }
            Some(Err(error)) => return Err(error),
        };
        let record = played.record;
        progress((record.offset + record.file_len()) as u64);
        match (record.kind, played.received) {
            (RecordKind::Gamestate, _) => {
                rebaser.reset();
                recorder.record_gamestate(record.server_time, record.payload)?;
            }
            (RecordKind::Configstring, _) => {
                recorder.record_configstring(record.server_time, record.payload)?;
            }
            (_, Received::Snapshot(snapshot)) => {
                let rebased = rebaser.rebase(player.client(), record.payload, &snapshot, false)?;
                report.reencoded += rebased.reencoded as usize;
                recorder.record_snapshot(
                    record.server_time,
                    snapshot.sequence,
                    rebased.bytes,
                    rebased.is_full,
                )?;
                report.snapshots += 1;
                report.last_ms = record.server_time;
            }
            _ => {}
        }
    }
    Ok((recorder.finish()?, report))
}
