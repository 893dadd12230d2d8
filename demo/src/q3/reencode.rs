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
use std::fmt;

use fields::codec::Q3_ENTITY_END;
use fields::{
    BitError, BitReader, BitSink, BitSource, BitWriter, Codec, EntityBody, EntityUpdate, FieldKind,
    Fields, HuffmanCode, HuffmanReader, HuffmanWriter, NetFields,
};
use serde::Serialize;

use super::error::Q3Error;
use super::file::{DecodedRecord, Dm68Decoder};
use super::message::{svc, Command, MAX_MSGLEN};
use super::snapshot::{Baselines, Snapshot};
use super::tables::{EntityState, PlayerState, GENTITYNUM_BITS};

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

/// What the server sends for one entity number in the merge.
#[derive(Clone, Copy)]
enum Step<'a> {
    /// In both lists: delta from the old state, skipped when unchanged.
    Delta(u32, &'a EntityState, &'a EntityState),
    /// Only in the new list: delta from the baseline, always sent.
    New(u32, &'a EntityState),
    /// Only in the old list: removal.
    Remove(u32),
}

/// The merge of an old and a new sorted entity list, in number order.
fn merge<'a>(
    old: &'a [(u32, EntityState)],
    new: &'a [(u32, EntityState)],
) -> impl Iterator<Item = Step<'a>> + 'a {
    let (mut o, mut n) = (0, 0);
    std::iter::from_fn(move || {
        let step = match (old.get(o), new.get(n)) {
            (None, None) => return None,
            (Some((on, os)), Some((nn, ns))) if on == nn => {
                o += 1;
                n += 1;
                Step::Delta(*nn, os, ns)
            }
            (Some((on, _)), Some((nn, ns))) if nn < on => {
                n += 1;
                Step::New(*nn, ns)
            }
            (None, Some((nn, ns))) => {
                n += 1;
                Step::New(*nn, ns)
            }
            (Some((on, _)), _) => {
                o += 1;
                Step::Remove(*on)
            }
        };
        Some(step)
    })
}

fn write_step<S: BitSink + ?Sized>(
    sink: &mut S,
    last: Option<u32>,
    step: Step<'_>,
    baselines: &Baselines,
) -> Result<bool, BitError> {
    let zero = EntityState::default();
    let (number, update) = match step {
        Step::Delta(number, base, new) => (
            number,
            EntityUpdate::Delta {
                base,
                new,
                force: false,
            },
        ),
        Step::New(number, new) => (
            number,
            EntityUpdate::Delta {
                base: baselines.get(number).unwrap_or(&zero),
                new,
                force: true,
            },
        ),
        Step::Remove(number) => (number, EntityUpdate::Removed),
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
    for step in merge(old, new) {
        let number = step_number(step);
        if write_step(sink, last, step, baselines)? {
            last = Some(number);
        }
    }
    Codec::Q3.write_entities_end(sink)
}

fn step_number(step: Step<'_>) -> u32 {
    match step {
        Step::Delta(n, _, _) | Step::New(n, _) | Step::Remove(n) => n,
    }
}

/// Why a re-encoded snapshot's size differs from Quake 3's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum CauseKind {
    /// Quake 3 sent a field as changed whose decoded value equals the base
    /// (its server compares raw 32-bit values: `-0.0` vs `0.0`, or bits
    /// above the field's width).
    ChangedButEqual,
    /// The `lc` byte covered fields past the last real change.
    LcLargerThanNeeded,
    /// An entity was sent although nothing about it changed on the wire.
    EntityWithoutChanges,
    /// An entity integer was sent as "non-zero" but its value on the wire
    /// is zero (its raw value had bits above the field width only).
    WideZeroValue,
    /// A removal was sent for an entity the base did not hold.
    RemovedAbsentEntity,
    /// Anything else (a table or codec difference: investigate).
    Other,
}

impl CauseKind {
    /// Whether the difference comes from something the wire cannot show:
    /// Quake 3's server compares raw 32-bit values, so it sends "changes"
    /// between values that decode identically (`0.0` and `-0.0`, integers
    /// differing only above their width). No encoder that sees decoded
    /// states can reproduce those bits; every other cause is a real
    /// disagreement to investigate.
    pub fn is_invisible_on_the_wire(self) -> bool {
        matches!(
            self,
            CauseKind::ChangedButEqual
                | CauseKind::LcLargerThanNeeded
                | CauseKind::EntityWithoutChanges
                | CauseKind::WideZeroValue
        )
    }
}

impl fmt::Display for CauseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CauseKind::ChangedButEqual => "field sent as changed but decodes equal to its base",
            CauseKind::LcLargerThanNeeded => "lc larger than needed",
            CauseKind::EntityWithoutChanges => "entity sent with no changes",
            CauseKind::WideZeroValue => "zero integer sent as non-zero",
            CauseKind::RemovedAbsentEntity => "removal of an entity not in the base",
            CauseKind::Other => "other",
        })
    }
}

/// The part of a snapshot a cause was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Section {
    /// The player-state delta.
    PlayerState,
    /// The entry of one entity.
    Entity(u32),
    /// The snapshot as a whole (header or end marker).
    Snapshot,
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Section::PlayerState => f.write_str("player state"),
            Section::Entity(n) => write!(f, "entity {n}"),
            Section::Snapshot => f.write_str("snapshot"),
        }
    }
}

/// One explained difference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cause {
    /// What kind of difference.
    pub kind: CauseKind,
    /// Where.
    pub section: Section,
    /// The field concerned, if one.
    pub field: Option<&'static str>,
    /// Bits Quake 3 used for the section minus bits we used.
    pub bit_difference: i64,
    /// The value concerned (for a field), as decoded.
    pub detail: String,
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.section, self.kind)?;
        if let Some(field) = self.field {
            write!(f, " ({field})")?;
        }
        if !self.detail.is_empty() {
            write!(f, " [{}]", self.detail)?;
        }
        write!(f, ", {:+} bits", self.bit_difference)
    }
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
                let causes = explain(
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
        snap: &super::SnapshotCommand,
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
                source: super::MessageError::bits("re-encoding the snapshot", source),
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

// ---------------------------------------------------------------------------
// Explaining a mismatch.

/// A field write the decoder made: which element, and the words before and
/// after.
#[derive(Debug, Clone, Copy)]
struct FieldSet {
    field: usize,
    old: u32,
    new: u32,
}

/// Wraps a state and records every field the decoder sets, which is exactly
/// every field the wire marked as changed.
#[derive(Debug, Clone)]
struct Recorder<T> {
    inner: T,
    sets: Vec<FieldSet>,
}

impl<T: NetFields> Fields for Recorder<T> {
    fn type_name(&self) -> &str {
        T::TABLE.name
    }

    fn field_count(&self) -> usize {
        T::TABLE.fields.len()
    }

    fn field_kind(&self, field: usize) -> FieldKind {
        T::TABLE.fields[field].kind
    }

    fn word(&self, field: usize, element: usize) -> u32 {
        self.inner.field_word(field, element)
    }

    fn set_word(&mut self, field: usize, element: usize, word: u32) {
        self.sets.push(FieldSet {
            field,
            old: self.inner.field_word(field, element),
            new: word,
        });
        self.inner.set_field_word(field, element, word);
    }
}

/// A bit source that remembers the last 8-bit read's value: right after a
/// delta is read, the first one was its `lc` byte (kept separately).
struct LcSpy<'s, S> {
    inner: &'s mut S,
    first_byte: Option<u32>,
}

impl<S: BitSource> BitSource for LcSpy<'_, S> {
    fn get_bits(&mut self, count: u32) -> Result<u32, BitError> {
        let value = self.inner.get_bits(count)?;
        if count == 8 && self.first_byte.is_none() {
            self.first_byte = Some(value);
        }
        Ok(value)
    }

    fn bits_read(&self) -> usize {
        self.inner.bits_read()
    }
}

/// What the original stream held for one section.
struct Original {
    bits: usize,
    lc: Option<u32>,
    sets: Vec<FieldSet>,
    body: Option<EntityBody>,
}

fn read_ps_section<S: BitSource>(src: &mut S, base: PlayerState) -> Result<Original, BitError> {
    let start = src.bits_read();
    let mut recorder = Recorder {
        inner: base,
        sets: Vec::new(),
    };
    let mut spy = LcSpy {
        inner: src,
        first_byte: None,
    };
    Codec::Q3.read_delta(&mut spy, &mut recorder)?;
    let lc = spy.first_byte;
    Ok(Original {
        bits: src.bits_read() - start,
        lc,
        sets: recorder.sets,
        body: None,
    })
}

fn read_entity_section<S: BitSource>(
    src: &mut S,
    start: usize,
    number: u32,
    base: EntityState,
) -> Result<Original, BitError> {
    let mut recorder = Recorder {
        inner: base,
        sets: Vec::new(),
    };
    let mut spy = LcSpy {
        inner: src,
        first_byte: None,
    };
    let body = Codec::Q3.read_entity_body(&mut spy, number, &mut recorder)?;
    let lc = spy.first_byte;
    Ok(Original {
        bits: src.bits_read() - start,
        lc,
        sets: recorder.sets,
        body: Some(body),
    })
}

/// Bits our encoder spends on a section, by writing it to a scratch buffer.
fn scratch_bits(
    write: impl FnOnce(&mut HuffmanWriter<'_, '_>) -> Result<(), BitError>,
) -> Result<usize, BitError> {
    let mut buf = vec![0u8; 2 * MAX_MSGLEN];
    let mut writer = BitWriter::new(&mut buf);
    let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
    write(&mut sink)?;
    Ok(sink.bits_written())
}

/// One past the ordinal of the last scalar field that differs on the wire.
fn needed_lc<T: NetFields>(base: &T, new: &T) -> u32 {
    let mut ordinal = 0;
    let mut lc = 0;
    for (index, field) in T::TABLE.fields.iter().enumerate() {
        if field.kind.is_array() {
            continue;
        }
        ordinal += 1;
        if new.field_differs(base, index) {
            lc = ordinal;
        }
    }
    lc
}

/// Classifies one section that differs in size.
fn classify<T: NetFields>(
    section: Section,
    original: &Original,
    base: &T,
    new: &T,
    ours: usize,
    entity_style: bool,
    causes: &mut Vec<Cause>,
) {
    let bit_difference = original.bits as i64 - ours as i64;
    let cause = |kind, set: Option<&FieldSet>| Cause {
        kind,
        section,
        field: set.map(|s| T::TABLE.fields[s.field].name),
        bit_difference,
        detail: set.map_or_else(String::new, |s| describe_word::<T>(s.field, s.new)),
    };
    let mut found: Vec<Cause> = original
        .sets
        .iter()
        .filter(|set| set.old == set.new)
        .map(|set| cause(CauseKind::ChangedButEqual, Some(set)))
        .collect();
    if found.is_empty() && original.lc.is_some_and(|lc| lc > needed_lc(base, new)) {
        found.push(cause(CauseKind::LcLargerThanNeeded, None));
    }
    if found.is_empty() {
        // In entity style a zero costs one bit; a raw value with bits only
        // above the field width is sent as "non-zero" plus its (zero) bits.
        let zero_integer = original.sets.iter().find(|s| {
            let kind = T::TABLE.fields[s.field].kind;
            s.new == 0 && !kind.is_array() && !kind.element().is_float_bits()
        });
        found.push(match zero_integer {
            Some(set) if entity_style && bit_difference > 0 => {
                cause(CauseKind::WideZeroValue, Some(set))
            }
            _ => cause(CauseKind::Other, None),
        });
    }
    causes.extend(found);
}

/// A field's word as a value, for reports: `0`, `-12`, `0.25`.
fn describe_word<T: NetFields>(field: usize, word: u32) -> String {
    let kind = T::TABLE.fields[field].kind;
    let element = kind.element();
    let raw = element.from_word(word);
    match element {
        fields::ScalarKind::Q3Float => format!("value {}", f32::from_bits(raw)),
        fields::ScalarKind::Signed { .. } => format!("value {}", raw as i32),
        _ => format!("value {raw}"),
    }
}

/// Decodes the original command again section by section and compares each
/// with what our encoder writes for it.
fn explain(
    message: &[u8],
    start: usize,
    snapshot: &Snapshot,
    base: Option<&Snapshot>,
    baselines: &Baselines,
) -> Result<Vec<Cause>, BitError> {
    let mut reader = BitReader::new(message);
    let mut skip = start;
    while skip > 0 {
        let step = skip.min(32) as u32;
        reader.skip(step)?;
        skip -= step as usize;
    }
    let mut src = HuffmanReader::new(reader, HuffmanCode::quake3());
    // Header: command, server time, delta, flags, area mask.
    src.get_bits(8)?;
    src.get_bits(32)?;
    src.get_bits(8)?;
    src.get_bits(8)?;
    let len = src.get_bits(8)? as usize;
    for _ in 0..len {
        src.get_bits(8)?;
    }

    let mut causes = Vec::new();
    let zero_ps = PlayerState::default();
    let base_ps = base.map_or(zero_ps, |b| b.ps);
    let original = read_ps_section(&mut src, base_ps)?;
    let ours = scratch_bits(|sink| Codec::Q3.write_delta(sink, &base_ps, &snapshot.ps))?;
    if original.bits != ours {
        classify(
            Section::PlayerState,
            &original,
            &base_ps,
            &snapshot.ps,
            ours,
            false,
            &mut causes,
        );
    }

    let old = base.map_or(&[][..], |b| &b.entities[..]);
    let mut steps: BTreeMap<u32, Step<'_>> = merge(old, &snapshot.entities)
        .map(|s| (step_number(s), s))
        .collect();
    let zero = EntityState::default();
    let mut last = None;
    loop {
        let start = src.bits_read();
        let number = src.get_bits(u32::from(GENTITYNUM_BITS))?;
        if number == Q3_ENTITY_END {
            break;
        }
        let step = steps.remove(&number);
        let (entity_base, in_old) = match old.binary_search_by_key(&number, |(n, _)| *n) {
            Ok(i) => (old[i].1, true),
            Err(_) => (*baselines.get(number).unwrap_or(&zero), false),
        };
        let original = read_entity_section(&mut src, start, number, entity_base)?;
        let ours = match step {
            Some(step) => {
                let mut written = false;
                let bits = scratch_bits(|sink| {
                    written = write_step(sink, last, step, baselines)?;
                    Ok(())
                })?;
                if written {
                    bits
                } else {
                    0
                }
            }
            None => 0,
        };
        last = Some(number);
        if original.bits == ours {
            continue;
        }
        let section = Section::Entity(number);
        let new = snapshot.entity(number).copied().unwrap_or_default();
        let bit_difference = original.bits as i64 - ours as i64;
        match original.body {
            Some(EntityBody::Removed) if !in_old => causes.push(Cause {
                kind: CauseKind::RemovedAbsentEntity,
                section,
                field: None,
                bit_difference,
                detail: String::new(),
            }),
            Some(_) if ours == 0 => {
                // We skip the entity: nothing differs on the wire, yet Quake 3
                // sent it. Name the fields it claimed changed, if any.
                let before = causes.len();
                classify(
                    section,
                    &original,
                    &entity_base,
                    &new,
                    ours,
                    true,
                    &mut causes,
                );
                causes.truncate(before);
                causes.push(Cause {
                    kind: CauseKind::EntityWithoutChanges,
                    section,
                    field: original
                        .sets
                        .iter()
                        .find(|s| s.old == s.new)
                        .map(|s| EntityState::TABLE.fields[s.field].name),
                    bit_difference,
                    detail: String::new(),
                });
            }
            _ => classify(
                section,
                &original,
                &entity_base,
                &new,
                ours,
                true,
                &mut causes,
            ),
        }
    }
    // Entities we write that Quake 3 did not send.
    for (number, step) in steps {
        let bits = scratch_bits(|sink| write_step(sink, None, step, baselines).map(|_| ()))?;
        if bits > 0 {
            causes.push(Cause {
                kind: CauseKind::Other,
                section: Section::Entity(number),
                field: None,
                bit_difference: -(bits as i64),
                detail: "written by us, not sent by Quake 3".to_owned(),
            });
        }
    }
    if causes.is_empty() {
        causes.push(Cause {
            kind: CauseKind::Other,
            section: Section::Snapshot,
            field: None,
            bit_difference: 0,
            detail: "no section differs".to_owned(),
        });
    }
    Ok(causes)
}
