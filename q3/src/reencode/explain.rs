//! Explaining a re-encoded snapshot whose size differs from Quake 3's: the
//! original command is decoded again section by section (player state, each
//! entity) with a recording field wrapper, each section is written again
//! alone, and the sections that differ are classified.

use std::collections::BTreeMap;
use std::fmt;

use fields::codec::Q3_ENTITY_END;
use fields::merge::merge_by_number;
use fields::{
    BitError, BitReader, BitSink, BitSource, BitWriter, Codec, EntityBody, FieldKind, Fields,
    HuffmanCode, HuffmanReader, HuffmanWriter, NetFields,
};
use serde::Serialize;

use super::{write_step, Step};
use crate::message::MAX_MSGLEN;
use crate::snapshot::{Baselines, Snapshot};
use crate::tables::{EntityState, PlayerState, GENTITYNUM_BITS};

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
    let body = Codec::Q3.read_entity_body(
        &mut spy,
        fields::EntityHeader::with_flag_in_body(number),
        &mut recorder,
    )?;
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
pub(super) fn explain(
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
    let mut steps: BTreeMap<u32, Step<'_>> = merge_by_number(old, &snapshot.entities)
        .map(|s| (s.number(), s))
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
