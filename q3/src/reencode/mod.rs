//! Re-encoding parsed snapshots with the project's q3 encoder, and checking
//! the result against Quake 3's own bits.
//!
//! [`write_snapshot`] writes an `svc_snapshot` command from a parsed
//! snapshot, its base and the spawn baselines: the header, the player-state
//! delta ([`Codec::write_delta`]) and the packet entities as Quake 3's server
//! emits them (a sorted merge: changed entities delta from the base,
//! entities new to the client from their baseline with `force`, departed
//! ones as removals, then the end marker), all through a [`HuffmanWriter`]
//! with [`HuffmanCode::quake3`].
//!
//! [`Verifier`] compares each re-encoded snapshot with the span the original
//! command occupied in its message. When the bit counts differ it decodes
//! the original again, section by section (player state, each entity), with
//! a recording field wrapper, and names the cause — usually that Quake 3's
//! server compares raw 32-bit values, so it sends "changes" that the wire
//! cannot show (a float going from `0.0` to `-0.0`, an integer differing
//! only above its field width), which our encoder, comparing wire words,
//! rightly leaves out.

use std::collections::BTreeMap;

use fields::codec::{Held, Q3_ENTITY_END};
use fields::merge::{merge_by_number, Merged};
use fields::{
    BitError, BitReader, BitSink, BitSource, BitWriter, Codec, EntityUpdate, HuffmanCode,
    HuffmanWriter,
};
use serde::Serialize;

mod explain;

pub use explain::{Cause, CauseKind, Section};

use crate::error::{MessageError, Q3Error};
use crate::file::{DecodedRecord, Dm68Decoder};
use crate::message::{svc, Command, SnapshotCommand, MAX_MSGLEN};
use crate::snapshot::{Baselines, Snapshot};
use crate::tables::{EntityState, PlayerState};

/// Writes the `svc_snapshot` command (command byte included) for `snapshot`
/// as a delta from `base` (`None`: full snapshot, zeroed player state and no
/// old entities), new entities deltaing from `baselines`.
pub fn write_snapshot<S: BitSink + ?Sized>(
    sink: &mut S,
    snapshot: &Snapshot,
    base: Option<&Snapshot>,
    baselines: &Baselines,
) -> Result<(), BitError> {
    let areamask_len = u8::try_from(snapshot.areamask.len()).map_err(|_| {
        BitError::invalid(
            "area mask",
            sink.bits_written(),
            format!(
                "{} bytes do not fit the length byte",
                snapshot.areamask.len()
            ),
        )
    })?;
    sink.put_u8(svc::SNAPSHOT)?;
    sink.put_bits(snapshot.server_time as u32, 32)?;
    sink.put_u8(snapshot.delta_num)?;
    sink.put_u8(snapshot.snap_flags)?;
    sink.put_u8(areamask_len)?;
    sink.put_bytes(&snapshot.areamask)?;
    let zero = PlayerState::default();
    Codec::Q3.write_delta(sink, base.map_or(&zero, |b| &b.ps), &snapshot.ps)?;
    let old = base.map_or(&[][..], |b| &b.entities[..]);
    write_packet_entities(sink, old, &snapshot.entities, baselines)
}

/// One entity number of the merge of the base's and the snapshot's lists:
/// in both, a delta from the old state (skipped when unchanged); only new,
/// a delta from the baseline (always sent); only old, a removal.
type Step<'a> = Merged<'a, EntityState>;

fn write_step<S: BitSink + ?Sized>(
    sink: &mut S,
    last: Option<u32>,
    step: Step<'_>,
    baselines: &Baselines,
) -> Result<bool, BitError> {
    let zero = EntityState::default();
    let (number, update) = match step {
        Merged::Both { number, old, new } => (
            number,
            EntityUpdate::Delta {
                base: old,
                new,
                force: false,
            },
        ),
        Merged::Added { number, new } => (
            number,
            EntityUpdate::Delta {
                base: baselines.get(number).unwrap_or(&zero),
                new,
                force: true,
            },
        ),
        // Quake 3's codec names a removal by its number: no held set needed.
        Merged::Removed { number, old } => (
            number,
            EntityUpdate::Removed {
                old,
                held: Held::nothing(),
            },
        ),
    };
    // The codec rejects numbers that do not fit 10 bits below the end marker.
    if number >= Q3_ENTITY_END {
        return Err(BitError::invalid(
            "entity number",
            sink.bits_written(),
            format!("{number} is not below {Q3_ENTITY_END}"),
        ));
    }
    Codec::Q3.write_entity(sink, last, number, update)
}

/// Writes the packet entities of a snapshot and the end marker.
pub fn write_packet_entities<S: BitSink + ?Sized>(
    sink: &mut S,
    old: &[(u32, EntityState)],
    new: &[(u32, EntityState)],
    baselines: &Baselines,
) -> Result<(), BitError> {
    let mut last = None;
    for step in merge_by_number(old, new) {
        let number = step.number();
        if write_step(sink, last, step, baselines)? {
            last = Some(number);
        }
    }
    Codec::Q3.write_entities_end(sink, last, &EntityState::default())
}

/// A snapshot whose re-encoding has a different bit count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    /// Record index in the file.
    pub record: usize,
    /// The snapshot's message number.
    pub message_num: i32,
    /// Bits of Quake 3's command.
    pub original_bits: usize,
    /// Bits of ours.
    pub reencoded_bits: usize,
    /// The differences found, section by section.
    pub causes: Vec<Cause>,
}

/// Result of checking one snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SnapshotCheck {
    /// Bits of Quake 3's command (command byte included).
    pub original_bits: usize,
    /// Bits of the re-encoded command.
    pub reencoded_bits: usize,
    /// Whether the re-encoded bits are identical to the original's, not
    /// only as many.
    pub identical: bool,
}

/// Totals over the snapshots checked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReencodeStats {
    /// Snapshots checked.
    pub snapshots: usize,
    /// Re-encoded with exactly the original bit count.
    pub exact_bits: usize,
    /// Re-encoded bit for bit identical to the original.
    pub identical_bits: usize,
    /// Original bits, summed.
    pub original_bits: u64,
    /// Re-encoded bits, summed.
    pub reencoded_bits: u64,
    /// Every snapshot with a different bit count.
    pub mismatches: Vec<Mismatch>,
}

impl ReencodeStats {
    /// Fraction of snapshots with the exact bit count (1.0 when none).
    pub fn exact_ratio(&self) -> f64 {
        if self.snapshots == 0 {
            1.0
        } else {
            self.exact_bits as f64 / self.snapshots as f64
        }
    }

    /// Mismatching snapshots whose every cause is invisible on the wire
    /// (see [`CauseKind::is_invisible_on_the_wire`]).
    pub fn wire_invisible_mismatches(&self) -> usize {
        self.mismatches
            .iter()
            .filter(|m| m.causes.iter().all(|c| c.kind.is_invisible_on_the_wire()))
            .count()
    }

    /// Fraction of snapshots that are exact or differ only by changes
    /// invisible on the wire (1.0 when none).
    pub fn explained_ratio(&self) -> f64 {
        if self.snapshots == 0 {
            1.0
        } else {
            (self.exact_bits + self.wire_invisible_mismatches()) as f64 / self.snapshots as f64
        }
    }

    /// Adds another file's totals to these.
    pub fn merge(&mut self, other: ReencodeStats) {
        self.snapshots += other.snapshots;
        self.exact_bits += other.exact_bits;
        self.identical_bits += other.identical_bits;
        self.original_bits += other.original_bits;
        self.reencoded_bits += other.reencoded_bits;
        self.mismatches.extend(other.mismatches);
    }

    /// How many mismatching snapshots show each cause (a snapshot counts
    /// once per kind).
    pub fn cause_counts(&self) -> BTreeMap<CauseKind, usize> {
        let mut counts = BTreeMap::new();
        for mismatch in &self.mismatches {
            let mut kinds: Vec<_> = mismatch.causes.iter().map(|c| c.kind).collect();
            kinds.sort();
            kinds.dedup();
            for kind in kinds {
                *counts.entry(kind).or_insert(0) += 1;
            }
        }
        counts
    }
}

/// Checks snapshots one record at a time and keeps the totals.
#[derive(Debug, Default)]
pub struct Verifier {
    stats: ReencodeStats,
    buf: Vec<u8>,
}

impl Verifier {
    /// A verifier with empty totals.
    pub fn new() -> Self {
        Verifier {
            stats: ReencodeStats::default(),
            // Twice Quake 3's largest message: ours can only be a few bits longer.
            buf: vec![0; 2 * MAX_MSGLEN],
        }
    }

    /// Checks every snapshot of a decoded record.
    pub fn check_record(&mut self, record: &DecodedRecord<'_>) -> Result<(), BitError> {
        for command in &record.message.commands {
            let Command::Snapshot(snap) = &command.command else {
                continue;
            };
            let span = command.bits.clone();
            let check = self.check_snapshot(record.record.message, span.clone(), snap)?;
            let stats = &mut self.stats;
            stats.snapshots += 1;
            stats.original_bits += check.original_bits as u64;
            stats.reencoded_bits += check.reencoded_bits as u64;
            stats.identical_bits += usize::from(check.identical);
            if check.original_bits == check.reencoded_bits {
                stats.exact_bits += 1;
            } else {
                let causes = explain::explain(
                    record.record.message,
                    span.start,
                    &snap.snapshot,
                    snap.base.as_deref(),
                    &snap.baselines,
                )?;
                self.stats.mismatches.push(Mismatch {
                    record: record.record.index,
                    message_num: snap.snapshot.message_num,
                    original_bits: check.original_bits,
                    reencoded_bits: check.reencoded_bits,
                    causes,
                });
            }
        }
        Ok(())
    }

    /// Re-encodes one snapshot and compares it with the bits `span` of
    /// `message` that Quake 3's command occupied.
    pub fn check_snapshot(
        &mut self,
        message: &[u8],
        span: std::ops::Range<usize>,
        snap: &SnapshotCommand,
    ) -> Result<SnapshotCheck, BitError> {
        if self.buf.is_empty() {
            self.buf = vec![0; 2 * MAX_MSGLEN];
        }
        let mut writer = BitWriter::new(&mut self.buf);
        let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
        write_snapshot(
            &mut sink,
            &snap.snapshot,
            snap.base.as_deref(),
            &snap.baselines,
        )?;
        let reencoded_bits = sink.bits_written();
        let original_bits = span.len();
        let identical = original_bits == reencoded_bits
            && same_bits(message, span.start, &self.buf, reencoded_bits);
        Ok(SnapshotCheck {
            original_bits,
            reencoded_bits,
            identical,
        })
    }

    /// The totals so far.
    pub fn stats(&self) -> &ReencodeStats {
        &self.stats
    }

    /// The totals, consuming the verifier.
    pub fn into_stats(self) -> ReencodeStats {
        self.stats
    }
}

/// Decodes a whole demo and checks every snapshot. A truncated file is
/// checked up to its last complete record and then reported as the error,
/// like any other; use [`Verifier`] directly to keep partial totals.
pub fn verify_demo(data: &[u8]) -> Result<ReencodeStats, Q3Error> {
    let mut verifier = Verifier::new();
    for item in Dm68Decoder::new(data)? {
        let record = item?;
        verifier
            .check_record(&record)
            .map_err(|source| Q3Error::Message {
                record: record.record.index,
                offset: record.record.offset,
                sequence: record.record.sequence,
                source: MessageError::bits("re-encoding the snapshot", source),
            })?;
    }
    Ok(verifier.into_stats())
}

/// Whether `len` bits of `a` from bit `a_start` equal the first `len` bits of `b`.
fn same_bits(a: &[u8], a_start: usize, b: &[u8], len: usize) -> bool {
    let mut ra = BitReader::new(a);
    let mut rb = BitReader::new(b);
    let mut skip = a_start;
    while skip > 0 {
        let step = skip.min(32) as u32;
        if ra.skip(step).is_err() {
            return false;
        }
        skip -= step as usize;
    }
    let mut left = len;
    while left > 0 {
        let step = left.min(32) as u32;
        match (ra.get_bits(step), rb.get_bits(step)) {
            (Ok(x), Ok(y)) if x == y => {}
            _ => return false,
        }
        left -= step as usize;
    }
    true
}
