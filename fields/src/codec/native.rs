//! The native delta encoding: Quake 3's structure, with every part coded for
//! what game data actually looks like.
//!
//! * **Changed fields** are a set, sent as a count and the gaps between
//!   successive indices (exp-Golomb). Tables list often-changing fields
//!   first, as Quake 3's do, so the gaps are mostly zero: one bit each,
//!   against Quake 3's 8-bit `lc` plus a bit for every field up to it.
//! * **Integers** are sent as the zigzag of their difference from the
//!   baseline, wrapped to the field width, minus one (a changed field cannot
//!   differ by zero), in a bit-length class code: a counter ticking by one
//!   costs 2 bits instead of its full width.
//! * **Booleans** cost nothing beyond their changed bit: changed means flipped.
//! * **Floats** (Quake 3 kind) that hold an integer — positions and
//!   velocities are snapped to integers in Quake 3 — are sent as an integer
//!   difference from the rounded baseline; other floats as the XOR of their
//!   bits with the baseline's, whose high (sign and exponent) bits are
//!   usually zero and are skipped.
//! * **Arrays** send their element mask as a set too.
//! * **Entity numbers** are gaps from the previous entity in the list.
//!
//! Everything here is lossless with respect to the field words, so decoding
//! gives exactly the state the encoder had, as in the q3 codec.

use crate::bits::{low_mask, sign_extend, BitSink, BitSource};
use crate::codec::{EntityBody, EntityUpdate};
use crate::error::BitError;
use crate::kind::ScalarKind;
use crate::table::Fields;
use crate::varcode::{get_classed, get_exp_golomb, put_classed, put_exp_golomb, unzigzag, zigzag};

/// Integral floats beyond this magnitude go through the XOR path: above
/// 2^24 not every integer is an `f32`.
const INTEGRAL_FLOAT_LIMIT: f32 = 16_777_216.0;

/// Fields a table may have ([`net_struct!`](crate::net_struct) enforces it).
const MAX_FIELDS: usize = crate::table::MAX_FIELDS;

/// Writes the changed-field set, then each changed field's value.
pub(super) fn write_fields<T: Fields, S: BitSink + ?Sized>(
    sink: &mut S,
    base: &T,
    new: &T,
) -> Result<(), BitError> {
    let mut changed = [0u16; MAX_FIELDS];
    let mut count = 0;
    for index in (0..new.field_count().min(MAX_FIELDS)).filter(|&i| new.field_differs(base, i)) {
        changed[count] = index as u16;
        count += 1;
    }
    put_set(sink, changed[..count].iter().map(|&i| i as usize))?;
    for index in changed[..count].iter().map(|&i| i as usize) {
        let kind = new.field_kind(index);
        if kind.is_array() {
            let mask = new.element_changes(base, index);
            put_set(sink, (0..kind.elements()).filter(|e| mask & (1 << e) != 0))?;
            for element in (0..kind.elements()).filter(|e| mask & (1 << e) != 0) {
                put_value(
                    sink,
                    kind.element(),
                    base.word(index, element),
                    new.word(index, element),
                )?;
            }
        } else {
            put_value(
                sink,
                kind.element(),
                base.word(index, 0),
                new.word(index, 0),
            )?;
        }
    }
    Ok(())
}

/// Reads what [`write_fields`] wrote into `out` (which holds the baseline)
/// and returns how many fields changed.
pub(super) fn read_fields<T: Fields, S: BitSource + ?Sized>(
    source: &mut S,
    out: &mut T,
) -> Result<usize, BitError> {
    let mut changed = [0u16; MAX_FIELDS];
    let count = get_set(source, out.field_count(), &mut changed)?;
    for &index in &changed[..count] {
        let index = index as usize;
        let kind = out.field_kind(index);
        if kind.is_array() {
            let mut elements = [0u16; 32];
            let changed_elements = get_set(source, kind.elements(), &mut elements)?;
            for &element in &elements[..changed_elements] {
                let element = element as usize;
                let word = get_value(source, kind.element(), out.word(index, element))?;
                out.set_word(index, element, word);
            }
        } else {
            let word = get_value(source, kind.element(), out.word(index, 0))?;
            out.set_word(index, 0, word);
        }
    }
    Ok(count)
}

/// Writes an ascending set of indices: its size, then the gaps.
fn put_set<S: BitSink + ?Sized>(
    sink: &mut S,
    members: impl Iterator<Item = usize> + Clone,
) -> Result<(), BitError> {
    put_exp_golomb(sink, members.clone().count() as u32, 0)?;
    let mut next = 0;
    for member in members {
        put_exp_golomb(sink, (member - next) as u32, 0)?;
        next = member + 1;
    }
    Ok(())
}

/// Reads a set written by [`put_set`] whose members are below `universe`
/// into `out`, returning its size. Sizes and gaps are checked against
/// `universe` before use, so corrupt input cannot index out of bounds.
fn get_set<S: BitSource + ?Sized>(
    source: &mut S,
    universe: usize,
    out: &mut [u16],
) -> Result<usize, BitError> {
    let position = source.bits_read();
    let count = get_exp_golomb(source, 0)? as usize;
    if count > universe || count > out.len() {
        return Err(BitError::invalid(
            "changed-field count",
            position,
            format!("{count} exceeds the {universe} fields"),
        ));
    }
    let mut next = 0usize;
    for slot in out.iter_mut().take(count) {
        let position = source.bits_read();
        let member = next.saturating_add(get_exp_golomb(source, 0)? as usize);
        if member >= universe {
            return Err(BitError::invalid(
                "changed-field index",
                position,
                format!("{member} is past the last field ({universe})"),
            ));
        }
        *slot = member as u16;
        next = member + 1;
    }
    Ok(count)
}

/// Writes a changed value relative to its baseline word.
fn put_value<S: BitSink + ?Sized>(
    sink: &mut S,
    kind: &ScalarKind,
    base: u32,
    new: u32,
) -> Result<(), BitError> {
    match kind {
        ScalarKind::Bool => Ok(()),
        ScalarKind::Q3Float => put_float(sink, base, new),
        other => {
            let width = other.wire_bits();
            let difference = sign_extend(new.wrapping_sub(base) & low_mask(width), width);
            // Non-zero because the field changed; shift so the common ±1 is class 1.
            put_classed(sink, zigzag(difference).wrapping_sub(1))
        }
    }
}

fn get_value<S: BitSource + ?Sized>(
    source: &mut S,
    kind: &ScalarKind,
    base: u32,
) -> Result<u32, BitError> {
    let position = source.bits_read();
    match kind {
        ScalarKind::Bool => Ok(base ^ 1),
        ScalarKind::Q3Float => get_float(source, base),
        other => {
            let width = other.wire_bits();
            let zigzagged = get_classed(source)?.checked_add(1).ok_or_else(|| {
                BitError::invalid("field difference", position, "exceeds 32 bits")
            })?;
            let difference = unzigzag(zigzagged);
            if width < 32 && sign_extend(difference as u32 & low_mask(width), width) != difference {
                return Err(BitError::invalid(
                    "field difference",
                    position,
                    format!("{difference} does not fit a {width}-bit field"),
                ));
            }
            Ok(base.wrapping_add(difference as u32) & low_mask(width))
        }
    }
}

/// The integer a float holds, if it is one that the integral path can carry.
fn integral(value: f32) -> Option<i32> {
    (value.trunc() == value && value.abs() <= INTEGRAL_FLOAT_LIMIT).then_some(value as i32)
}

/// The integer the baseline float predicts (saturating; NaN predicts 0).
fn predict(base: f32) -> i32 {
    base.round() as i32
}

fn put_float<S: BitSink + ?Sized>(sink: &mut S, base: u32, new: u32) -> Result<(), BitError> {
    match integral(f32::from_bits(new)) {
        Some(value) => {
            sink.put_bit(false)?;
            let difference = value.wrapping_sub(predict(f32::from_bits(base)));
            put_classed(sink, zigzag(difference))
        }
        None => {
            sink.put_bit(true)?;
            // Non-zero: the values differ.
            put_classed(sink, base ^ new)
        }
    }
}

fn get_float<S: BitSource + ?Sized>(source: &mut S, base: u32) -> Result<u32, BitError> {
    let position = source.bits_read();
    let word = if source.get_bit()? {
        base ^ get_classed(source)?
    } else {
        let value = predict(f32::from_bits(base)).wrapping_add(unzigzag(get_classed(source)?));
        let float = value as f32;
        if integral(float) != Some(value) {
            return Err(BitError::invalid(
                "integral float",
                position,
                format!("{value} is outside the exactly representable range"),
            ));
        }
        float.to_bits()
    };
    if !ScalarKind::Q3Float.word_in_range(word) {
        return Err(BitError::invalid(
            "float",
            position,
            "negative zero is not a wire value",
        ));
    }
    Ok(word)
}

/// Writes one entity: a continue bit, the number gap, a removed bit and, for
/// a present entity, its changed fields.
pub(super) fn write_entity<T: Fields, S: BitSink + ?Sized>(
    sink: &mut S,
    last: Option<u32>,
    number: u32,
    update: EntityUpdate<'_, T>,
) -> Result<bool, BitError> {
    if let EntityUpdate::Delta {
        base,
        new,
        force: false,
    } = update
    {
        if !new.wire_differs(base) {
            return Ok(false);
        }
    }
    sink.put_bit(true)?;
    let first_candidate = last.map_or(0, |last| last + 1);
    put_exp_golomb(sink, number - first_candidate, 0)?;
    match update {
        EntityUpdate::Removed => sink.put_bit(true)?,
        EntityUpdate::Delta { base, new, .. } => {
            sink.put_bit(false)?;
            write_fields(sink, base, new)?;
        }
    }
    sink.put_check_key(number as u16)?;
    Ok(true)
}

/// Reads the continue bit and number gap; `None` at the end of the list.
pub(super) fn read_entity_number<S: BitSource + ?Sized>(
    source: &mut S,
    last: Option<u32>,
) -> Result<Option<u32>, BitError> {
    if !source.get_bit()? {
        return Ok(None);
    }
    let position = source.bits_read();
    let gap = get_exp_golomb(source, 0)?;
    let first_candidate = last.map_or(0, |last| last.saturating_add(1));
    first_candidate
        .checked_add(gap)
        .map(Some)
        .ok_or_else(|| BitError::invalid("entity number", position, "gap overflows 32 bits"))
}

/// Reads an entity body after its number.
pub(super) fn read_entity_body<T: Fields, S: BitSource + ?Sized>(
    source: &mut S,
    number: u32,
    out: &mut T,
) -> Result<EntityBody, BitError> {
    let body = if source.get_bit()? {
        EntityBody::Removed
    } else {
        match read_fields(source, out)? {
            0 => EntityBody::Unchanged,
            _ => EntityBody::Changed,
        }
    };
    source.expect_check_key(number as u16)?;
    Ok(body)
}
