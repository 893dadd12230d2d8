//! Recording a stream from the receiving end, where the recording starts
//! (or is cut) in the middle: [`ClientRecorder`], and the re-basing that it
//! and [`cut`](crate::cut) share.
//!
//! A server-side recorder gets keyframes for free: after
//! `Server::request_full_update` the server never deltas from a snapshot
//! before the full one. A client receives whatever the server sent, so
//! starting a recording mid-game (or cutting one) has two problems:
//!
//! 1. the first recorded snapshot must be full, and the live one is a delta;
//! 2. after a keyframe, the server's next deltas may name bases from
//!    *before* it (the server does not know the client made a keyframe), so
//!    a player that seeks to the keyframe would lack their bases.
//!
//! Both are solved here by re-encoding from the states the client already
//! decoded ([`snapshot::Client::encode_held`]): a keyframe is the client's
//! newest snapshot re-encoded as a full update, and a delta whose base (or
//! history snapshot, see `snapshot::history`) precedes the last keyframe
//! (or was never recorded) is re-encoded against
//! the last snapshot recorded, which the client still holds (its distance is
//! smaller than the original base's). Every other message is recorded as
//! received. So everything after a keyframe depends only on records at or
//! after it, and seeking restores a keyframe and fast-forwards, as for
//! server-side recordings. The alternative — keyframe records carrying the
//! whole ring of 32 snapshots — would make every keyframe up to 32 times
//! larger for the benefit of a handful of deltas.
//!
//! Re-encoded messages decode to exactly the states the client held;
//! their sync checksum (always present on keyframes) is computed from those
//! states.
//!
//! A stream whose models adapt along its delta chain
//! (`snapshot::Models::with_adaptation`) cannot be re-encoded: every
//! message after a re-encoding was coded with models adapted along the
//! server's chain, not the re-encoding's. Re-basing such a stream is
//! refused with [`DemoError::Refused`]; it records server-side (the demo
//! header carries the models and the policy). A client-side recorder
//! starts with a re-encoded keyframe and makes more of them, so it cannot
//! record one.

use std::io::Write;

use fields::Fields;
use snapshot::{Client, EncodeOptions, Received, SnapshotReport, SyncCheck};

use crate::error::DemoError;
use crate::writer::Recorder;

/// Which bytes to record for a snapshot a client just decoded.
#[derive(Debug, Clone, Default)]
pub struct Rebaser {
    /// Sequence of the last keyframe recorded since the gamestate.
    keyframe: Option<u32>,
    /// Sequence of the last snapshot recorded.
    last: Option<u32>,
    /// Bit `d` set: sequence `last - d` was recorded. A client also keeps
    /// snapshots that arrived late (never recorded, since the recording
    /// runs in arrival order), and the server may name one as a base: such
    /// a delta is re-based even though its base follows the keyframe.
    recorded: u64,
    scratch: Vec<u8>,
}

/// A snapshot message to record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rebased<'a> {
    /// The message: the original bytes or a re-encoding.
    pub bytes: &'a [u8],
    /// It is a full update.
    pub is_full: bool,
    /// It was re-encoded (not the bytes as received).
    pub reencoded: bool,
}

impl Rebaser {
    /// Starts over (after a gamestate): the next snapshot is a keyframe.
    pub fn reset(&mut self) {
        self.keyframe = None;
        self.last = None;
        self.recorded = 0;
    }

    /// Notes that `sequence` (newer than any recorded) was recorded.
    fn mark_recorded(&mut self, sequence: u32) {
        let shift = self.last.map_or(64, |last| sequence.wrapping_sub(last));
        self.recorded = if shift >= 64 {
            0
        } else {
            self.recorded << shift
        } | 1;
        self.last = Some(sequence);
    }

    /// Whether `sequence` was recorded since the last keyframe.
    fn was_recorded(&self, sequence: u32) -> bool {
        let after_keyframe = self.keyframe.is_some_and(|keyframe| sequence >= keyframe);
        let distance = self
            .last
            .map_or(u32::MAX, |last| last.wrapping_sub(sequence));
        after_keyframe && distance < 64 && self.recorded & (1 << distance) != 0
    }

    /// Held snapshot `sequence` re-encoded as a full update (with a sync
    /// checksum): a keyframe, from which later deltas are kept playable.
    pub fn keyframe<'s, E: Fields, P: Fields>(
        &'s mut self,
        client: &Client<E, P>,
        sequence: u32,
    ) -> Result<&'s [u8], DemoError> {
        let options = EncodeOptions {
            checksum: true,
            ..EncodeOptions::default()
        };
        reencode(client, sequence, None, options, &mut self.scratch)?;
        self.keyframe = Some(sequence);
        self.mark_recorded(sequence);
        Ok(&self.scratch)
    }

    /// The message to record for the snapshot `report` describes, which
    /// `client` just decoded from `bytes`. With `keyframe`, (or when nothing
    /// was recorded since the gamestate) it is a full update.
    pub fn rebase<'s, E: Fields, P: Fields>(
        &'s mut self,
        client: &Client<E, P>,
        bytes: &'s [u8],
        report: &SnapshotReport,
        keyframe: bool,
    ) -> Result<Rebased<'s>, DemoError> {
        let sequence = report.sequence;
        let checksum = report.sync != SyncCheck::Absent;
        // A delta coding re-entering entities from a history snapshot
        // needs that one recorded too.
        let recorded_base = report.base.is_some_and(|base| self.was_recorded(base))
            && report
                .history
                .is_none_or(|history| self.was_recorded(history));
        let (is_full, reencoded) = if keyframe || self.keyframe.is_none() {
            if report.base.is_some() {
                let options = EncodeOptions {
                    checksum: true,
                    ..EncodeOptions::default()
                };
                reencode(client, sequence, None, options, &mut self.scratch)?;
                (true, true)
            } else {
                (true, false)
            }
        } else if report.base.is_none() {
            (true, false)
        } else if recorded_base {
            (false, false)
        } else {
            let options = EncodeOptions {
                checksum,
                ..EncodeOptions::default()
            };
            reencode(client, sequence, self.last, options, &mut self.scratch)?;
            (false, true)
        };
        if is_full {
            self.keyframe = Some(sequence);
        }
        self.mark_recorded(sequence);
        Ok(Rebased {
            bytes: if reencoded { &self.scratch } else { bytes },
            is_full,
            reencoded,
        })
    }
}

/// Held snapshot `sequence` re-encoded into `out` (against held `base`,
/// or full).
///
/// Refused when `client` adapts its models: a re-encoded message is coded
/// with the trained models, but the deltas recorded after it as received
/// were coded with models adapted along the server's chain, which a player
/// starting from the re-encoding would not hold. Such a stream records
/// server-side.
fn reencode<E: Fields, P: Fields>(
    client: &Client<E, P>,
    sequence: u32,
    base: Option<u32>,
    options: EncodeOptions,
    out: &mut Vec<u8>,
) -> Result<(), DemoError> {
    if client.models().adaptation().is_some() {
        return Err(DemoError::Refused(format!(
            "snapshot {sequence} would have to be re-encoded, which breaks an adapting stream's \
             model chain: record adapting streams server-side"
        )));
    }
    client.encode_held(sequence, base, options, out)?;
    Ok(())
}

/// Records what a `snapshot::Client` receives (a client-side demo).
///
/// Hand it every message right after the client read it. Its first
/// snapshot is the client's newest re-encoded as a full update, and a
/// keyframe follows every `keyframe_interval_ms` of server time; see the
/// [module docs](self) for how deltas after a keyframe are kept playable.
#[derive(Debug)]
pub struct ClientRecorder<W: Write> {
    recorder: Recorder<W>,
    rebaser: Rebaser,
    keyframe_interval_ms: u32,
    last_keyframe_time: Option<u32>,
    last_time: u32,
    reencoded: u64,
}

impl<W: Write> ClientRecorder<W> {
    /// A client-side recorder writing through `recorder`, with a keyframe
    /// at least every `keyframe_interval_ms` of server time (0: only the first).
    pub fn new(recorder: Recorder<W>, keyframe_interval_ms: u32) -> Self {
        ClientRecorder {
            recorder,
            rebaser: Rebaser::default(),
            keyframe_interval_ms,
            last_keyframe_time: None,
            last_time: 0,
            reencoded: 0,
        }
    }

    /// Records `bytes`, which `client.read_message` (or `read_snapshot`) just accepted with the
    /// outcome `received`. To start recording a client that already has a
    /// gamestate, call [`start`](Self::start) first.
    pub fn record<E: Fields, P: Fields>(
        &mut self,
        client: &Client<E, P>,
        bytes: &[u8],
        received: &Received,
    ) -> Result<(), DemoError> {
        match received {
            Received::Gamestate => {
                self.rebaser.reset();
                self.last_keyframe_time = None;
                self.recorder.record_gamestate(self.last_time, bytes)
            }
            Received::Configstring { .. } => {
                self.recorder.record_configstring(self.last_time, bytes)
            }
            // Late snapshots are not recorded (see `Rebaser::recorded`).
            Received::Stale { .. } => Ok(()),
            Received::Snapshot(report) => {
                let Some(newest) = client.newest() else {
                    return Ok(());
                };
                let time = newest.server_time();
                self.last_time = time;
                let due = self.keyframe_interval_ms > 0
                    && self
                        .last_keyframe_time
                        .is_some_and(|t| time.wrapping_sub(t) >= self.keyframe_interval_ms);
                let rebased = self.rebaser.rebase(client, bytes, report, due)?;
                if rebased.is_full {
                    self.last_keyframe_time = Some(time);
                }
                self.reencoded += rebased.reencoded as u64;
                self.recorder
                    .record_snapshot(time, report.sequence, rebased.bytes, rebased.is_full)
            }
        }
    }

    /// Starts a recording of a client that is already playing: records the
    /// gamestate it holds now (configstring changes applied) so the demo is
    /// standalone. Its next snapshot becomes the first keyframe.
    pub fn start<E: Fields, P: Fields>(&mut self, client: &Client<E, P>) -> Result<(), DemoError> {
        let mut bytes = Vec::new();
        client.encode_gamestate(&mut bytes)?;
        self.rebaser.reset();
        self.last_keyframe_time = None;
        if let Some(newest) = client.newest() {
            self.last_time = newest.server_time();
        }
        self.recorder.record_gamestate(self.last_time, &bytes)
    }

    /// Snapshots recorded as re-encodings rather than as received.
    pub fn reencoded(&self) -> u64 {
        self.reencoded
    }

    /// Finishes the demo (index and end marker) and returns the writer.
    pub fn finish(self) -> Result<W, DemoError> {
        self.recorder.finish()
    }
}
