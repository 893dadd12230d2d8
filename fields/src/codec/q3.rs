//! Quake 3 protocol 68 delta encoding, bit for bit.
//!
//! The layout (public in the ioquake3 source and demo format write-ups):
//!
//! * A "last changed" byte `lc`: one more than the index of the last scalar
//!   field that differs from the baseline. Fields from `lc` on are not sent
//!   and keep their baseline value.
//! * For each scalar field below `lc`, a changed bit; a changed field then
//!   carries its value.
//! * Entity fields (not player-state fields) first send a "zero" bit: 0
//!   means the value is zero, so zeroing a field costs two bits.
//! * Floats: 0 + 13 bits of `value + 4096` when the value is an integer in
//!   `[-4096, 4095]`, else 1 + the 32 raw bits.
//! * Arrays (the player state's stats, persistant, ammo and powerups) follow
//!   the scalar fields: one bit "any array changed", then per array one bit,
//!   and for a changed array its element mask and the changed elements.
//! * Entities start with a 10-bit number and a remove bit; a kept entity has
//!   a "has delta" bit, then the fields above. Number 1023 ends the list.

use crate::bits::{BitSink, BitSource};
use crate::codec::{EntityBody, EntityUpdate};
use crate::error::BitError;
use crate::kind::{ScalarKind, Q3_FLOAT_INT_BIAS, Q3_FLOAT_INT_BITS};
use crate::table::{field_in, FieldSet, Fields, MAX_FIELDS};

/// Width of an entity number on Quake 3's wire (`GENTITYNUM_BITS`).
pub const Q3_ENTITY_NUMBER_BITS: u32 = 10;
/// The entity number that ends a list (`MAX_GENTITIES - 1`); real entities are below it.
pub const Q3_ENTITY_END: u32 = (1 << Q3_ENTITY_NUMBER_BITS) - 1;

/// Which of Quake 3's two field encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    /// Entity fields: a zero bit before every changed value.
    Entity,
    /// Player-state fields: values follow their changed bit directly.
    Player,
}

/// The Quake 3 "integral float" test: an integer value in `[-4096, 4095]`.
fn small_integral(value: f32) -> Option<u32> {
    let biased = value + Q3_FLOAT_INT_BIAS as f32;
    let fits =
        value.trunc() == value && (0.0..(1u32 << Q3_FLOAT_INT_BITS) as f32).contains(&biased);
    fits.then_some(biased as u32)
}

fn put_value<S: BitSink + ?Sized>(
    sink: &mut S,
    kind: &ScalarKind,
    word: u32,
    style: Style,
) -> Result<(), BitError> {
    if style == Style::Entity {
        // Words are normalized, so a zero float is word 0 here too.
        if word == 0 {
            return sink.put_bit(false);
        }
        sink.put_bit(true)?;
    }
    match kind {
        ScalarKind::Q3Float => match small_integral(f32::from_bits(word)) {
            Some(biased) => {
                sink.put_bit(false)?;
                sink.put_bits(biased, Q3_FLOAT_INT_BITS)
            }
            None => {
                sink.put_bit(true)?;
                sink.put_bits(word, 32)
            }
        },
        other => sink.put_bits(word, other.wire_bits()),
    }
}

fn get_value<S: BitSource + ?Sized>(
    source: &mut S,
    kind: &ScalarKind,
    style: Style,
) -> Result<u32, BitError> {
    if style == Style::Entity && !source.get_bit()? {
        return Ok(0);
    }
    match kind {
        ScalarKind::Q3Float => {
            if source.get_bit()? {
                // Full float; a stray -0.0 from a foreign encoder is still zero.
                Ok(kind.to_word(source.get_bits(32)?))
            } else {
                let biased = source.get_bits(Q3_FLOAT_INT_BITS)? as i32;
                Ok(((biased - Q3_FLOAT_INT_BIAS) as f32).to_bits())
            }
        }
        other => source.get_bits(other.wire_bits()),
    }
}

/// Indices of the scalar fields, in order: the fields `lc` counts.
fn scalar_fields<T: Fields>(value: &T) -> impl Iterator<Item = usize> + '_ {
    (0..value.field_count()).filter(move |&i| !value.field_kind(i).is_array())
}

/// Indices of the array fields, in order: the trailing array section.
fn array_fields<T: Fields>(value: &T) -> impl Iterator<Item = usize> + '_ {
    (0..value.field_count()).filter(move |&i| value.field_kind(i).is_array())
}

/// Writes the `lc` byte, the scalar fields and the array section.
pub(super) fn write_fields<T: Fields, S: BitSink + ?Sized>(
    sink: &mut S,
    base: &T,
    new: &T,
    style: Style,
) -> Result<(), BitError> {
    let mut changed = [0u64; MAX_FIELDS.div_ceil(64)];
    new.changed_fields(base, &mut changed);
    let last_changed = last_changed_scalar(new, &changed);
    write_scalars(sink, new, &changed, style, last_changed)?;
    write_arrays(sink, base, new, &changed)
}

/// `lc`: one past the ordinal of the last changed scalar field (0 if none).
fn last_changed_scalar<T: Fields>(new: &T, changed: &FieldSet) -> usize {
    scalar_fields(new)
        .enumerate()
        .filter(|&(_, field)| field_in(changed, field))
        .last()
        .map_or(0, |(ordinal, _)| ordinal + 1)
}

fn write_scalars<T: Fields, S: BitSink + ?Sized>(
    sink: &mut S,
    new: &T,
    changed: &FieldSet,
    style: Style,
    last_changed: usize,
) -> Result<(), BitError> {
    let lc = u8::try_from(last_changed).map_err(|_| {
        BitError::invalid(
            "field table",
            sink.bits_written(),
            "more than 255 scalar fields",
        )
    })?;
    sink.put_u8(lc)?;
    for field in scalar_fields(new).take(last_changed) {
        if !field_in(changed, field) {
            sink.put_bit(false)?;
            continue;
        }
        sink.put_bit(true)?;
        let kind = new.field_kind(field);
        put_value(sink, kind.element(), new.word(field, 0), style)?;
    }
    Ok(())
}

fn write_arrays<T: Fields, S: BitSink + ?Sized>(
    sink: &mut S,
    base: &T,
    new: &T,
    changed: &FieldSet,
) -> Result<(), BitError> {
    if array_fields(new).next().is_none() {
        return Ok(());
    }
    let any = array_fields(new).any(|i| field_in(changed, i));
    sink.put_bit(any)?;
    if !any {
        return Ok(());
    }
    for index in array_fields(new) {
        let mask = if field_in(changed, index) {
            new.element_changes(base, index)
        } else {
            0
        };
        sink.put_bit(mask != 0)?;
        if mask == 0 {
            continue;
        }
        let kind = new.field_kind(index);
        let len = kind.elements() as u32;
        sink.put_bits(mask, len)?;
        for element in (0..len as usize).filter(|e| mask & (1 << e) != 0) {
            put_value(
                sink,
                kind.element(),
                new.word(index, element),
                Style::Player,
            )?;
        }
    }
    Ok(())
}

/// Reads what [`write_fields`] wrote into `out` (which holds the baseline).
pub(super) fn read_fields<T: Fields, S: BitSource + ?Sized>(
    source: &mut S,
    out: &mut T,
    style: Style,
) -> Result<(), BitError> {
    let position = source.bits_read();
    let lc = source.get_u8()? as usize;
    let scalar_count = scalar_fields(out).count();
    if lc > scalar_count {
        return Err(BitError::invalid(
            "last-changed count",
            position,
            format!(
                "{lc} exceeds the {scalar_count} fields of {}",
                out.type_name()
            ),
        ));
    }
    let mut sent = 0;
    for field in 0..out.field_count() {
        if sent == lc {
            break;
        }
        let kind = out.field_kind(field);
        if kind.is_array() {
            continue;
        }
        sent += 1;
        if source.get_bit()? {
            let word = get_value(source, kind.element(), style)?;
            out.set_word(field, 0, word);
        }
    }
    read_arrays(source, out)
}

fn read_arrays<T: Fields, S: BitSource + ?Sized>(
    source: &mut S,
    out: &mut T,
) -> Result<(), BitError> {
    if array_fields(out).next().is_none() || !source.get_bit()? {
        return Ok(());
    }
    for index in 0..out.field_count() {
        let kind = out.field_kind(index);
        if !kind.is_array() || !source.get_bit()? {
            continue;
        }
        let len = kind.elements() as u32;
        let mask = source.get_bits(len)?;
        for element in (0..len as usize).filter(|e| mask & (1 << e) != 0) {
            let word = get_value(source, kind.element(), Style::Player)?;
            out.set_word(index, element, word);
        }
    }
    Ok(())
}

/// Writes an entity header and body (the caller checked the number's range).
pub(super) fn write_entity<T: Fields, S: BitSink + ?Sized>(
    sink: &mut S,
    number: u32,
    update: EntityUpdate<'_, T>,
) -> Result<bool, BitError> {
    match update {
        EntityUpdate::Removed { .. } => {
            sink.put_bits(number, Q3_ENTITY_NUMBER_BITS)?;
            sink.put_bit(true)?;
        }
        EntityUpdate::Delta { base, new, force } => {
            let mut changed = [0u64; MAX_FIELDS.div_ceil(64)];
            new.changed_fields(base, &mut changed);
            let last_changed = last_changed_scalar(new, &changed);
            let arrays_changed = array_fields(new).any(|i| field_in(&changed, i));
            if last_changed == 0 && !arrays_changed {
                if !force {
                    return Ok(false);
                }
                sink.put_bits(number, Q3_ENTITY_NUMBER_BITS)?;
                sink.put_bit(false)?; // not removed
                sink.put_bit(false)?; // no delta
                return Ok(true);
            }
            sink.put_bits(number, Q3_ENTITY_NUMBER_BITS)?;
            sink.put_bit(false)?;
            sink.put_bit(true)?;
            write_scalars(sink, new, &changed, Style::Entity, last_changed)?;
            write_arrays(sink, base, new, &changed)?;
        }
    }
    Ok(true)
}

/// Reads a 10-bit entity number; [`Q3_ENTITY_END`] ends the list.
pub(super) fn read_entity_number<S: BitSource + ?Sized>(
    source: &mut S,
) -> Result<Option<u32>, BitError> {
    let number = source.get_bits(Q3_ENTITY_NUMBER_BITS)?;
    Ok((number != Q3_ENTITY_END).then_some(number))
}

/// Reads an entity body after its number.
pub(super) fn read_entity_body<T: Fields, S: BitSource + ?Sized>(
    source: &mut S,
    out: &mut T,
) -> Result<EntityBody, BitError> {
    if source.get_bit()? {
        return Ok(EntityBody::Removed);
    }
    if !source.get_bit()? {
        return Ok(EntityBody::Unchanged);
    }
    read_fields(source, out, Style::Entity)?;
    Ok(EntityBody::Changed)
}
