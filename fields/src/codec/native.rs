//! The native delta encoding: Quake 3's structure, with every part coded for
//! what game data actually looks like.
//!
//! A delta is a sequence of *symbols* plus raw bits:
//!
//! * **Changed fields.** With a [`NativeModel`], fields are taken in groups
//!   of eight in table order: one symbol says which group holds the last
//!   change, then one symbol per group up to it gives its change pattern.
//!   Without a model the set is sent as a count and the gaps between
//!   indices (exp-Golomb); tables list often-changing fields first, as
//!   Quake 3's do, so gaps are mostly zero.
//! * **Integers** are the zigzag of their difference from the baseline,
//!   wrapped to the field width, minus one (a changed field cannot differ by
//!   zero): a symbol for the bit length (the *class*), then the bits below the
//!   leading one.
//! * **Booleans** cost nothing beyond the changed set: changed means flipped.
//! * **Floats** (Quake 3 kind) holding an integer — Quake 3 snaps positions
//!   and velocities — are an integer difference from the rounded baseline.
//!   Other floats are the difference of the two values' bit patterns mapped
//!   to ordered integers, i.e. the distance in representable floats, which
//!   is small for a small change at any magnitude.
//! * **Arrays** send which elements changed: with a model that learned the
//!   field's common element sets, one symbol naming the set (or an escape
//!   followed by the set gap-coded); otherwise the gap-coded set.
//! * **Entity numbers** are gaps from the previous entity in the list:
//!   with a model, one symbol codes the gap's bit length together with
//!   whether the entity is removed (or the list's end), in the context of
//!   where the list stands; without, a continue bit, an exp-Golomb gap and
//!   a removed bit.
//!
//! Symbols are Huffman-coded with the struct's trained model when it has one
//! (see [`crate::model`]), else with exp-Golomb codes. A model picks each
//! symbol's code by context: the delta's origin (held state or spawn
//! baseline, [`DeltaContext::spawn`]), a key field of the baseline for the
//! changed set, and the baseline value's kind for a value
//! ([`crate::model::ValueContext`]). Everything is lossless with respect to
//! the field words: decoding gives exactly the encoder's state.

use std::cell::Cell;

use crate::bits::{low_mask, sign_extend, wide_mask, BitSink, BitSource, Ones};
use crate::codec::DeltaContext;
use crate::codec::{EntityBody, EntityUpdate, HeldNumbers, StartChoice};
use crate::error::BitError;
use crate::kind::{FieldKind, ScalarKind};
use crate::model::{
    elements_symbol, field_codings, number_context, number_symbol, Clock, Context, FieldCoding,
    Grid, NativeModel, Origin, PatternKey, PatternSet, Predictor, SymbolCode, TracedSymbol,
    ValueContext, DECODE_TIERS, DICTIONARY_SYMBOLS, ELEMENTS_ESCAPE, GROUP_FIELDS, MAX_GROUPS,
    NUMBER_END, VALUE_SYMBOLS, ZERO_SYMBOL,
};
use crate::rounding;
use crate::table::{field_in, FieldSet, Fields, MAX_FIELDS};
use crate::top_bits::TopBitChances;
use crate::varcode::{exp_golomb_bits, get_exp_golomb, put_exp_golomb, unzigzag, zigzag};

/// Integral floats beyond this magnitude take the bit-pattern path: above
/// 2^24 not every integer is an `f32`.
const INTEGRAL_FLOAT_LIMIT: f32 = 16_777_216.0;

/// The smallest rate (units per second) a [`Predictor::Differentiate`]
/// predicts: a position's change slower than this is a clipping residue,
/// and its rate is coded from the baseline.
const MIN_DIFFERENTIATED_RATE: f64 = 1.0;

/// Value symbols from here on are float bit-pattern classes.
const FLOAT_BITS_SYMBOLS: u8 = 33;
/// Value symbols from here on are grid-step classes; for a float field
/// without a grid, coarse bit-pattern classes (see [`COARSE_LOW_BITS`]).
const GRID_SYMBOLS: u8 = 66;

/// A float without a grid whose lowest `COARSE_LOW_BITS` significand bits
/// are zero (and that is not whole) is coded by its bit-pattern distance
/// from the reference in steps of 2^`COARSE_LOW_BITS` patterns, on the
/// grid symbols such a field does not otherwise use. Why: a velocity a
/// wall clipped keeps a residue, `v − v × 1.001` in floats (Quake 3's
/// overbounce), a difference of two nearly equal numbers whose low ten
/// or so significand bits are zero; coded as a plain distance those zeros
/// cost as much as random bits. On live OpenArena sessions (a client
/// sliding along walls, `pmove_float 1`) 91–95% of the velocities under
/// a unit a second have nine or more such zeros, and most messages carry
/// one or two of them. A random float has them once in 512.
const COARSE_LOW_BITS: u32 = 9;
/// The significand bits [`COARSE_LOW_BITS`] covers.
const COARSE_MASK: u32 = (1 << COARSE_LOW_BITS) - 1;

// The top-bit trees span the grid classes and leave the float
// bit-pattern classes uncounted (`crate::model::TOP_BITS_SYMBOLS`).
const _: () = assert!(
    crate::model::FLOAT_BITS_CLASSES.start == FLOAT_BITS_SYMBOLS
        && crate::model::FLOAT_BITS_CLASSES.end == GRID_SYMBOLS
        && crate::model::TOP_BITS_FIRST_SYMBOL as usize + crate::model::TOP_BITS_SYMBOLS
            == GRID_SYMBOLS as usize + 33
);

/// One coded value: a class symbol and the bits below the class's leading one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ValueCode {
    symbol: u8,
    extra: u32,
    extra_bits: u32,
}

impl ValueCode {
    /// Splits `value` into its class (bit length) and the bits below its leading one.
    fn classed(value: u32, symbol_base: u8) -> Self {
        let class = 32 - value.leading_zeros();
        let extra_bits = class.saturating_sub(1);
        ValueCode {
            symbol: symbol_base + class as u8,
            extra: value & low_mask(extra_bits),
            extra_bits,
        }
    }
}

/// Rebuilds a value from its class and `extra`, the bits below the
/// leading one (read as [`class_extra_bits`] says).
#[inline]
fn unclass(class: u32, extra: u32) -> u32 {
    match class {
        0 => 0,
        1 => 1,
        _ => (1u32 << (class - 1)) | extra,
    }
}

/// How many bits follow a value of `class` (its bits below the leading one).
const fn class_extra_bits(class: usize) -> u8 {
    if class >= 2 {
        (class - 1) as u8
    } else {
        0
    }
}

/// Per value symbol, the raw bits that follow it: what
/// [`BitSource::get_coded_symbol_and_raw`] reads with the symbol. A symbol
/// that is not a class of the field (see [`float_from_code`],
/// [`integer_from_code`]) has none, so
/// the decoder refuses it before reading further, as it refuses every
/// other malformed symbol. `float`: a Quake 3 float field; `grid`: one with
/// a grid.
const fn value_extra_bits(float: bool, grid: bool) -> [u8; 256] {
    let mut table = [0u8; 256];
    let mut symbol = 0;
    while symbol < VALUE_SYMBOLS {
        let (path, class) = if symbol >= GRID_SYMBOLS as usize {
            (GRID_SYMBOLS, symbol - GRID_SYMBOLS as usize)
        } else if symbol >= FLOAT_BITS_SYMBOLS as usize {
            (FLOAT_BITS_SYMBOLS, symbol - FLOAT_BITS_SYMBOLS as usize)
        } else {
            (0, symbol)
        };
        // An integer's grid is its ticks (`Predictor::TickStamp`); a
        // float's grid symbols without a grid are its coarse bit patterns
        // (`COARSE_LOW_BITS`).
        let path_is_class = match path {
            0 => true,
            FLOAT_BITS_SYMBOLS => float,
            _ => grid || float,
        };
        let is_class = symbol != ZERO_SYMBOL as usize && class <= 32 && path_is_class;
        if is_class {
            table[symbol] = class_extra_bits(class);
        }
        symbol += 1;
    }
    table
}

/// [`value_extra_bits`] of an integer field.
static INTEGER_EXTRA_BITS: [u8; 256] = value_extra_bits(false, false);
/// [`value_extra_bits`] of an integer field coded on ticks
/// ([`Reference::tick`]).
static TICK_EXTRA_BITS: [u8; 256] = value_extra_bits(false, true);
/// [`value_extra_bits`] of a float field, with a grid or without (its
/// grid symbols then code coarse bit patterns: the same classes).
static FLOAT_EXTRA_BITS: [u8; 256] = value_extra_bits(true, false);

/// Per entity-number symbol, the raw bits that follow it: the gap's bits
/// below its leading one (the class is the symbol halved); none after the
/// end marker or a symbol past it.
static NUMBER_EXTRA_BITS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut symbol = 0;
    while symbol < NUMBER_END as usize {
        table[symbol] = class_extra_bits(symbol / 2);
        symbol += 1;
    }
    table
};

/// The integer a float holds, if the integral path can carry it.
fn integral(value: f32) -> Option<i32> {
    (value.abs() <= INTEGRAL_FLOAT_LIMIT && rounding::is_whole(value)).then_some(value as i32)
}

/// The integer the baseline float predicts (saturating; NaN predicts 0).
///
/// A whole float is its own integer: the truncating conversion gives it
/// without the rounding, and it is the one [`whole_float_bits`] makes of
/// the same float, so a decoder that asked whether the baseline is whole
/// (its value context) has it already.
#[inline]
fn predict(base: f32) -> i32 {
    let truncated = base as i32;
    if truncated as f32 == base {
        truncated
    } else {
        rounding::round(base) as i32
    }
}

/// The integral path's number for `integer` against `reference`: the
/// zigzagged difference, or for a [`Reference::folded`] size its
/// [`fold`].
#[inline]
fn integral_code(integer: i32, reference: Reference<'_>) -> u32 {
    if reference.folded {
        fold(integer, predict(reference.value))
    } else {
        zigzag(integer.wrapping_sub(predict(reference.value)))
    }
}

/// Inverse of [`integral_code`] (`None`: a folded number no value codes).
#[inline]
fn integral_from_code(code: u32, reference: Reference<'_>) -> Option<i32> {
    if reference.folded {
        unfold(code, predict(reference.value))
    } else {
        Some(predict(reference.value).wrapping_add(unzigzag(code)))
    }
}

/// `integer` (a whole value, or a number of grid steps) as its distance
/// from the predicted size `size` and its sign: `2 × zigzag(|integer| −
/// size) + (integer < 0)`. Both terms stay far below 2^31 for the
/// integers the integral path carries (within ±2^24), the grid steps
/// (below [`Grid::MAX_STEPS`]) and the sizes a reference holds (within
/// the same bounds).
#[inline]
fn fold(integer: i32, size: i32) -> u32 {
    let distance = (integer.unsigned_abs() as i32).wrapping_sub(size);
    zigzag(distance).wrapping_shl(1) | u32::from(integer < 0)
}

/// Inverse of [`fold`]: `None` for a negative magnitude or a negative zero,
/// which [`fold`] never produces.
#[inline]
fn unfold(code: u32, size: i32) -> Option<i32> {
    let magnitude = size.checked_add(unzigzag(code >> 1))?;
    match (magnitude, code & 1) {
        (m, _) if m < 0 => None,
        (0, 1) => None,
        (m, 0) => Some(m),
        (m, _) => Some(-m),
    }
}

/// What every value of one delta is coded in the context of, besides its
/// own baseline word: known to both ends before the first value.
#[derive(Debug, Clone, Copy)]
struct Scope {
    /// Whether the delta is from a held state or a spawn baseline.
    origin: Origin,
    /// Whether some float rate the predictors read (a velocity) holds a
    /// fraction in the baseline: then the game does not snap its rates,
    /// and a rate whose baseline happens to be whole is coded as the
    /// fraction it most likely becomes (see [`value_context`]).
    loose_rates: bool,
}

impl Scope {
    /// Whether a whole baseline of `field` counts as a fraction: the field
    /// is a rate and the baseline's rates are not all whole. A game that
    /// snaps its velocities (the OSP duel) has every one whole; one that
    /// does not (CPMA, OpenArena) has one whole now and then, by
    /// coincidence, and its next value is a fraction again. Counted as
    /// one context, the coincidences taught a model that a whole velocity
    /// turns into a fraction, and priced the snapping game's next whole
    /// one at five bits more.
    #[inline]
    fn demotes(&self, model: &Model<'_>, field: usize) -> bool {
        self.loose_rates && model.float_rates.binary_search(&(field as u16)).is_ok()
    }
}

/// Whether some float rate of `model` is in `changed` (`None`: any delta
/// might change one): only then does a value context ask whether the rates
/// are loose ([`Scope::demotes`]).
#[inline]
fn rate_changed(model: &Model<'_>, changed: Option<&FieldSet>) -> bool {
    model
        .float_rates
        .iter()
        .any(|&r| changed.is_none_or(|set| field_in(set, usize::from(r))))
}

/// The clocks a delta of `origin` from `base` codes first
/// ([`Model::loose_clocks`]) and its [`Scope`], with the baseline's rates
/// read once for both, and only when one of them asks (a held baseline of
/// a model with replacement predictors, or a changed rate). Decoding the
/// duel, reading them twice a delta was about 2% of the work.
#[inline]
fn delta_rates<'a, T: Fields>(
    model: &Model<'a>,
    origin: Origin,
    base: &T,
    base_word: impl Fn(usize) -> u32,
    changed: Option<&FieldSet>,
) -> (Option<&'a [u16]>, Scope) {
    let candidate = model.loose.filter(|_| origin == Origin::Held);
    let rate_changed = rate_changed(model, changed);
    let loose = (candidate.is_some() || rate_changed) && rates_loose(model, base, base_word);
    let clocks = candidate.filter(|_| loose).map(|loose| loose.clocks);
    let scope = Scope {
        origin,
        loose_rates: rate_changed && loose,
    };
    (clocks, scope)
}

/// Whether some float rate the predictors read (a velocity) holds a
/// fraction in the baseline `base` (whose element-0 words `base_word`
/// reads): the game does not snap its rates.
#[inline]
fn rates_loose<T: Fields>(model: &Model<'_>, base: &T, base_word: impl Fn(usize) -> u32) -> bool {
    model.float_rates.iter().any(|&rate| {
        let rate = usize::from(rate);
        rate < base.field_count() && !whole_float_bits(base_word(rate))
    })
}

/// The context a changed value is coded in (see [`ValueContext`]), from
/// what both ends know before it: the delta's origin, the baseline word,
/// whether a whole baseline counts as a fraction ([`Scope::demotes`]), and
/// whether a loose delta's replacement predictor predicted it
/// ([`FieldCoding::replaced`]).
#[inline]
fn value_context(
    kind: &ScalarKind,
    base: u32,
    origin: Origin,
    demoted: bool,
    replaced: bool,
) -> ValueContext {
    match kind {
        ScalarKind::Q3Float => float_value_context(base, origin, demoted, replaced),
        _ => integer_value_context(base, origin, replaced),
    }
}

/// [`value_context`] of a Quake 3 float: a decoder that has matched the
/// kind already (once per value, for its context, its extra bits and its
/// word) asks this directly.
#[inline(always)]
fn float_value_context(base: u32, origin: Origin, demoted: bool, replaced: bool) -> ValueContext {
    // Computed, then selected, not branched on: which case a value falls in
    // is data, and mispredicted branches cost more than the tests.
    let zero = base & 0x7fff_ffff == 0;
    let whole = whole_float_bits(base) && !demoted;
    held_or_spawn(zero, whole, origin, replaced)
}

/// [`value_context`] of an integer (every non-zero baseline is whole).
#[inline(always)]
fn integer_value_context(base: u32, origin: Origin, replaced: bool) -> ValueContext {
    held_or_spawn(base == 0, true, origin, replaced)
}

/// The context of a value whose baseline is `zero` or `whole` (see
/// [`ValueContext`]).
#[inline(always)]
fn held_or_spawn(zero: bool, whole: bool, origin: Origin, replaced: bool) -> ValueContext {
    let held = if zero {
        ValueContext::Zero
    } else if whole {
        ValueContext::Whole
    } else {
        ValueContext::Fraction
    };
    if origin == Origin::Spawn || replaced {
        ValueContext::Spawn
    } else {
        held
    }
}

/// Whether the float with these bits is a whole number (infinities count,
/// NaNs do not), from the bits alone: no bits of the significand may lie
/// below the binary point.
#[inline]
fn whole_float_bits(bits: u32) -> bool {
    let x = f32::from_bits(bits);
    // From 2^23 on every float is whole (the infinities too); below it the
    // truncating conversion gives back exactly the whole ones, zero and
    // -0 among them. A NaN fails both comparisons. A few instructions
    // against the exponent arithmetic on the bits, and both computed, not
    // branched on: whether a baseline is whole is data.
    let large = x.abs() >= 8_388_608.0;
    let small_whole = (x as i32) as f32 == x;
    large | small_whole
}
/// Maps float bits to integers ordered like the floats (for non-NaN values),
/// so the difference of two mapped values counts the floats between them.
/// The map is its own inverse.
fn ordered(bits: u32) -> i32 {
    let value = bits as i32;
    if value < 0 {
        value ^ 0x7fff_ffff
    } else {
        value
    }
}

/// What a value is coded against: for a float, the baseline or a
/// prediction, and the field's grid; for an integer, the baseline or an
/// [`Predictor::Advance`] prediction.
#[derive(Debug, Clone, Copy)]
struct Reference<'a> {
    /// The predicted (or baseline) float value.
    value: f32,
    /// Whether `value` is the baseline itself; then a changed value cannot
    /// equal it and the bit-pattern distance is at least one.
    is_base: bool,
    /// The field's grid step (see [`Grid::step`]), if it has a grid.
    grid_step: Option<f32>,
    /// An integer field's predicted word (`None`: coded from the baseline).
    advanced: Option<u32>,
    /// An unpredicted integer field's dictionary of common changes (see
    /// [`crate::model::ModelData::dictionaries`]; empty without one).
    dictionary: &'a [u32],
    /// Whether `value` is a predicted magnitude ([`Predictor::FixedSpeed`]):
    /// a whole value is then coded by its distance from it and its sign
    /// ([`fold`]).
    folded: bool,
    /// An integer prediction's tick ([`Predictor::TickStamp`]; 0 or 1:
    /// none): an error of whole ticks is coded in ticks, on the grid's
    /// symbols.
    tick: u32,
}

impl Reference<'_> {
    #[inline]
    fn steps(&self, step: f32) -> i32 {
        let k = rounding::round(self.value / step);
        if k.is_finite() {
            k.clamp(-(Grid::MAX_STEPS as f32), Grid::MAX_STEPS as f32) as i32
        } else {
            0
        }
    }
}

/// The symbol and extra bits of a changed value (`None` for booleans, whose
/// change says everything). `reference` is used for floats. With a model
/// (`modelled`), a value set to the zero word is [`ZERO_SYMBOL`]; without,
/// it would be the largest exp-Golomb symbol, so it takes its class path.
#[inline(always)]
fn value_code(
    kind: &ScalarKind,
    base: u32,
    new: u32,
    reference: Reference<'_>,
    modelled: bool,
) -> Option<ValueCode> {
    if new == 0 && modelled && *kind != ScalarKind::Bool {
        return Some(ValueCode {
            symbol: ZERO_SYMBOL,
            extra: 0,
            extra_bits: 0,
        });
    }
    match kind {
        ScalarKind::Bool => None,
        ScalarKind::Q3Float => {
            let value = f32::from_bits(new);
            if let Some((step, k)) = reference
                .grid_step
                .and_then(|step| Grid::steps_at(step, value).map(|k| (step, k)))
            {
                let steps = if reference.folded {
                    fold(k, reference.steps(step))
                } else {
                    zigzag(k.wrapping_sub(reference.steps(step)))
                };
                // A whole value on a grid finer than one is also an integer,
                // and fewer integers than steps away: a grid learned from
                // games that send a field's fractions (missiles' positions)
                // must not make another game's snapped values cost the
                // grid's extra bits (2^-11 steps: eleven more). The class
                // says which path was taken, so the decoder needs no rule.
                // (On a grid of one or coarser the steps are never more.)
                let integer = (step < 1.0)
                    .then(|| integral(value))
                    .flatten()
                    .map(|i| integral_code(i, reference));
                return Some(match integer {
                    Some(integer) if integer < steps => ValueCode::classed(integer, 0),
                    _ => ValueCode::classed(steps, GRID_SYMBOLS),
                });
            }
            Some(match integral(value) {
                Some(integer) => ValueCode::classed(integral_code(integer, reference), 0),
                None if reference.grid_step.is_none() && new & COARSE_MASK == 0 => {
                    let steps = coarse(new).wrapping_sub(coarse(reference.value.to_bits()));
                    ValueCode::classed(zigzag(steps), GRID_SYMBOLS)
                }
                None => {
                    let distance =
                        zigzag(ordered(new).wrapping_sub(ordered(reference.value.to_bits())));
                    ValueCode::classed(
                        distance.wrapping_sub(reference.is_base as u32),
                        FLOAT_BITS_SYMBOLS,
                    )
                }
            })
        }
        other => {
            let width = other.wire_bits();
            let change = new.wrapping_sub(base) & low_mask(width);
            if let Some(place) = reference.dictionary.iter().position(|&c| c == change) {
                return Some(ValueCode {
                    symbol: DICTIONARY_SYMBOLS + place as u8,
                    extra: 0,
                    extra_bits: 0,
                });
            }
            // From a prediction the difference may be zero; from the
            // baseline it cannot, and the code starts at one.
            let (from, changed) = match reference.advanced {
                Some(predicted) => (predicted, 0),
                None => (base, 1),
            };
            let difference = sign_extend(new.wrapping_sub(from) & low_mask(width), width);
            // A whole number of ticks (never a zero change: from a
            // prediction that is the plain path's zero).
            let tick = reference.tick as i32;
            if tick > 1 && difference != 0 && difference % tick == 0 {
                return Some(ValueCode::classed(zigzag(difference / tick), GRID_SYMBOLS));
            }
            Some(ValueCode::classed(
                zigzag(difference).wrapping_sub(changed),
                0,
            ))
        }
    }
}

/// The low `width` bits set, for a field's wire width (at most 32):
/// [`wide_mask`]'s 64-bit shift needs no select for a full-width field,
/// where [`low_mask`]'s 32-bit one does (a few instructions per value
/// decoded).
#[inline(always)]
fn width_mask(width: u32) -> u32 {
    wide_mask(width) as u32
}

/// Inverse of [`value_code`]: the new word from the baseline word, the float
/// reference, a symbol and its extra bits (read as [`value_extra_bits`]
/// says). For tests: the decoder calls the kind's own ([`float_from_code`],
/// [`integer_from_code`]), having matched the kind already.
#[cfg(test)]
fn value_from_code(
    kind: &ScalarKind,
    base: u32,
    reference: Reference<'_>,
    symbol: u8,
    extra: u32,
    position: usize,
) -> Result<u32, BitError> {
    match kind {
        ScalarKind::Q3Float => float_from_code(base, reference, symbol, extra, position),
        _ => integer_from_code(kind, base, reference, symbol, extra, position),
    }
}

/// The error of a value or number the decoders refuse, built out of line:
/// the hot paths only test and branch here, and keep their registers.
/// Every refusal's error is built here; the named cold builders around
/// (such as [`not_a_class`]) only take an error's scalars for it, which
/// leaves a hot call site a test, a branch and a call (a `format_args!`
/// built at the call site cost the duel's native decode 0.6 M
/// instructions).
#[cold]
#[inline(never)]
pub(super) fn refused(
    what: &'static str,
    position: usize,
    detail: std::fmt::Arguments<'_>,
) -> BitError {
    BitError::invalid(what, position, std::fmt::format(detail))
}

/// A symbol's path (the first symbol of its range: 0, [`FLOAT_BITS_SYMBOLS`]
/// or [`GRID_SYMBOLS`]) and its class within it.
#[inline(always)]
fn path_and_class(symbol: u8) -> (u8, u32) {
    let (path, class) = match symbol {
        s if s >= GRID_SYMBOLS => (GRID_SYMBOLS, s - GRID_SYMBOLS),
        s if s >= FLOAT_BITS_SYMBOLS => (FLOAT_BITS_SYMBOLS, s - FLOAT_BITS_SYMBOLS),
        s => (0, s),
    };
    (path, u32::from(class))
}

/// Inverse of [`value_code`] for a Quake 3 float (see [`value_extra_bits`]
/// for the extra bits).
#[inline(always)]
fn float_from_code(
    base: u32,
    reference: Reference<'_>,
    symbol: u8,
    extra: u32,
    position: usize,
) -> Result<u32, BitError> {
    let (path, class) = path_and_class(symbol);
    if class > 32 {
        return Err(not_a_class(symbol, &ScalarKind::Q3Float, position));
    }
    let value = unclass(class, extra);
    let word = if path == GRID_SYMBOLS {
        match reference.grid_step {
            None => coarse_from_code(base, (reference.value, reference.is_base), value, position)?,
            Some(step) => {
                let k = if reference.folded {
                    unfold(value, reference.steps(step))
                        .ok_or_else(|| not_a_distance("folded grid value", value, position))?
                } else {
                    reference.steps(step).wrapping_add(unzigzag(value))
                };
                Grid::value_at(step, k)
                    .ok_or_else(|| {
                        refused(
                            "grid value",
                            position,
                            format_args!("{k} steps is off the grid"),
                        )
                    })?
                    .to_bits()
            }
        }
    } else if path == FLOAT_BITS_SYMBOLS {
        let zigzagged = value
            .checked_add(reference.is_base as u32)
            .ok_or_else(|| exceeds("float difference", position))?;
        ordered(ordered(reference.value.to_bits()).wrapping_add(unzigzag(zigzagged)) as u32) as u32
    } else {
        let integer = integral_from_code(value, reference)
            .ok_or_else(|| not_a_distance("folded integral float", value, position))?;
        // Every integer up to 2^24 is exactly a float, and those are
        // the ones the integral path carries (see `integral`).
        if integer.unsigned_abs() > INTEGRAL_FLOAT_LIMIT as u32 {
            return Err(refused(
                "integral float",
                position,
                format_args!("{integer} is outside the exactly representable range"),
            ));
        }
        (integer as f32).to_bits()
    };
    checked_word(&ScalarKind::Q3Float, word, position)
}

/// Inverse of [`value_code`] for an integer kind (or a bool, which
/// [`get_value`] answers before reading anything).
#[inline(always)]
fn integer_from_code(
    kind: &ScalarKind,
    base: u32,
    reference: Reference<'_>,
    symbol: u8,
    extra: u32,
    position: usize,
) -> Result<u32, BitError> {
    let width = kind.wire_bits();
    if symbol >= DICTIONARY_SYMBOLS {
        let place = usize::from(symbol - DICTIONARY_SYMBOLS);
        if let Some(&change) = reference.dictionary.get(place) {
            // Within the field's width, so a wire value of an integer kind
            // ([`ScalarKind::word_in_range`]).
            return Ok(base.wrapping_add(change) & width_mask(width));
        }
    }
    let (path, class) = path_and_class(symbol);
    let ticked = path == GRID_SYMBOLS && reference.tick > 1;
    if class > 32 || (path != 0 && !ticked) {
        return Err(not_a_class(symbol, kind, position));
    }
    let value = unclass(class, extra);
    if *kind == ScalarKind::Bool {
        return checked_word(kind, base ^ 1, position);
    }
    let (from, changed) = match reference.advanced {
        Some(predicted) => (predicted, 0),
        None => (base, 1),
    };
    let difference = if ticked {
        // Whole ticks: never zero (the plain path's), and within
        // the field's width like any other change.
        let ticks = unzigzag(value);
        match ticks.checked_mul(reference.tick as i32) {
            Some(difference) if ticks != 0 => difference,
            _ => {
                return Err(refused(
                    "tick difference",
                    position,
                    format_args!("{ticks} ticks is not a change of a stamp"),
                ))
            }
        }
    } else {
        let zigzagged = value
            .checked_add(changed)
            .ok_or_else(|| exceeds("field difference", position))?;
        unzigzag(zigzagged)
    };
    if width < 32 && sign_extend(difference as u32 & width_mask(width), width) != difference {
        return Err(refused(
            "field difference",
            position,
            format_args!("{difference} does not fit a {width}-bit field"),
        ));
    }
    // Masked to the field's width: a wire value of an integer kind.
    Ok(from.wrapping_add(difference as u32) & width_mask(width))
}

/// `word`, if it is a wire value of `kind`.
#[inline(always)]
fn checked_word(kind: &ScalarKind, word: u32, position: usize) -> Result<u32, BitError> {
    if !kind.word_in_range(word) {
        return Err(refused(
            "value",
            position,
            format_args!("word {word:#x} is not a wire value of {kind:?}"),
        ));
    }
    Ok(word)
}

/// The error of a folded value that is no signed distance from the size
/// it was folded about.
#[cold]
#[inline(never)]
fn not_a_distance(what: &'static str, value: u32, position: usize) -> BitError {
    refused(
        what,
        position,
        format_args!("{value} is not a signed distance from the predicted size"),
    )
}

/// The error of a symbol that is no class of a value of `kind`.
#[cold]
#[inline(never)]
fn not_a_class(symbol: u8, kind: &ScalarKind, position: usize) -> BitError {
    refused(
        "value class",
        position,
        format_args!("symbol {symbol} is not a class of {kind:?}"),
    )
}

/// The error of a difference past 32 bits.
#[cold]
#[inline(never)]
fn exceeds(what: &'static str, position: usize) -> BitError {
    refused(what, position, format_args!("exceeds 32 bits"))
}

/// A float's bit pattern in coarse steps ([`COARSE_LOW_BITS`]): its
/// [`ordered`] number shifted down, rounding towards minus infinity. For a
/// pattern whose low bits are zero the shift is exact: a negative float's
/// ordered number has those bits all ones.
#[inline]
fn coarse(bits: u32) -> i32 {
    ordered(bits) >> COARSE_LOW_BITS
}

/// Inverse of the coarse path of [`value_code`]: the float word `value`
/// (zigzagged coarse steps) from the reference's value says (`is_base`:
/// whether it is the baseline). Refused where the encoder would not
/// have taken that path: a word it cannot reach, a whole value (the
/// integral path's), or the baseline itself.
///
/// It takes the two parts of the [`Reference`] it reads, not the whole:
/// out of line, a whole one is passed in memory, and the decoder then
/// stored every value's reference to the stack for this rare call.
fn coarse_from_code(
    base: u32,
    (reference, is_base): (f32, bool),
    value: u32,
    position: usize,
) -> Result<u32, BitError> {
    let steps = coarse(reference.to_bits()).checked_add(unzigzag(value));
    let word = steps
        .filter(|&steps| {
            (i32::MIN >> COARSE_LOW_BITS..=i32::MAX >> COARSE_LOW_BITS).contains(&steps)
        })
        .map(|steps| {
            let low = if steps < 0 { COARSE_MASK as i32 } else { 0 };
            ordered(((steps << COARSE_LOW_BITS) | low) as u32) as u32
        });
    match word {
        Some(word) if integral(f32::from_bits(word)).is_none() && !(is_base && word == base) => {
            Ok(word)
        }
        _ => Err(BitError::invalid(
            "coarse float",
            position,
            format!("{value} is not a coarse float's distance from its reference"),
        )),
    }
}

/// A field's value as a number, for predictions: inline for a Quake 3
/// float (the rates and positions the predictions read), whose word is
/// its bits.
#[inline]
fn numeric(kind: &ScalarKind, word: u32) -> f64 {
    match kind {
        ScalarKind::Q3Float => f32::from_bits(word) as f64,
        _ => numeric_other(kind, word),
    }
}

/// [`numeric`] of any kind.
#[inline(never)]
fn numeric_other(kind: &ScalarKind, word: u32) -> f64 {
    numeric_any(kind, word)
}

/// `numeric(kind, to) − numeric(kind, from)`: the time a clock field's
/// words say elapsed, worked out once a delta ([`ClockMemo`]); one call
/// out of line, where an integer clock's two readings were two.
#[inline(never)]
fn numeric_change(kind: &ScalarKind, from: u32, to: u32) -> f64 {
    numeric_any(kind, to) - numeric_any(kind, from)
}

/// The body of [`numeric_other`] and [`numeric_change`].
#[inline(always)]
fn numeric_any(kind: &ScalarKind, word: u32) -> f64 {
    let raw = kind.from_word(word);
    match kind {
        ScalarKind::Q3Float | ScalarKind::Quantized { .. } => f32::from_bits(raw) as f64,
        ScalarKind::Signed { .. } => raw as i32 as f64,
        ScalarKind::Unsigned { .. } | ScalarKind::Bool => raw as f64,
    }
}

/// The predictor of a field coded as `coding`, of kind `kind`, if the
/// model declares one that fits the field: [`Predictor::Integrate`] for a
/// scalar float, [`Predictor::Advance`] for a scalar integer (anything else
/// is ignored the same way by encoder and decoder). The caller has the
/// coding and the kind already: no look-up of either here.
#[inline(always)]
fn fitting_predictor(coding: &FieldCoding, kind: &FieldKind) -> Option<Predictor> {
    let predictor = coding.predictor?;
    let fits = !kind.is_array()
        && match predictor {
            Predictor::Integrate { .. }
            | Predictor::Extrapolate { .. }
            | Predictor::Differentiate { .. }
            | Predictor::FixedSpeed { .. }
            | Predictor::Fall { .. } => kind.element().is_float_bits(),
            Predictor::Advance
            | Predictor::Stamp
            | Predictor::TickStamp { .. }
            | Predictor::Countdown { .. }
            | Predictor::Run { .. } => matches!(
                kind.element(),
                ScalarKind::Signed { .. } | ScalarKind::Unsigned { .. }
            ),
        };
    fits.then_some(predictor)
}

/// Whether a spawn delta from `base` reads the context's anchor (see
/// [`Codec::spawn_reads_anchor`](super::Codec::spawn_reads_anchor)): a
/// Quake 3 float holding an axis of a position is zero there, the case
/// [`reference_of`] codes against the anchor.
pub(super) fn spawn_reads_anchor<T: Fields>(given: Option<&NativeModel>, base: &T) -> bool {
    let Some(held) = HeldModel::of(given, base) else {
        return false;
    };
    let codings = held.get().field_codings();
    codings
        .iter()
        .enumerate()
        .take(base.field_count())
        .any(|(field, coding)| {
            coding.axis.is_some()
                && matches!(base.field_kind(field).element(), ScalarKind::Q3Float)
                && base.word(field, 0) & 0x7fff_ffff == 0
        })
}

/// How a delta's predictions get the time elapsed by a clock field
/// ([`Clock::Field`]).
trait ClockReadings {
    /// The elapsed time clock field `field` gives from `base` to `new`;
    /// `work_out` computes it.
    fn elapsed_ms(&self, field: usize, base: u32, new: u32, work_out: impl FnOnce() -> f64) -> f64;
}

/// Works a clock's elapsed time out at each reading: the encoder's way,
/// whose words are plain arrays (a kept reading cost it more than it
/// saved: encoding the duel, +4 M instructions).
struct Unkept;

impl ClockReadings for Unkept {
    #[inline(always)]
    fn elapsed_ms(&self, _: usize, _: u32, _: u32, work_out: impl FnOnce() -> f64) -> f64 {
        work_out()
    }
}

/// One delta's elapsed time by a clock field, worked out on its first
/// use and kept for the delta's other predictions: the decoder's way. A
/// player state's position, velocity and timers all read the same clock,
/// and each reading cost the decoder a field look-up and two conversions.
/// Keyed by the field and both its words, so a reading is exactly what
/// working it out again would give, whatever order the values come in.
struct ClockMemo {
    /// The clock field, its baseline and new words (field `usize::MAX`:
    /// nothing kept yet).
    key: Cell<(usize, u32, u32)>,
    /// The elapsed time they give, in milliseconds.
    elapsed_ms: Cell<f64>,
}

impl ClockMemo {
    fn new() -> Self {
        ClockMemo {
            key: Cell::new((usize::MAX, 0, 0)),
            elapsed_ms: Cell::new(0.0),
        }
    }
}

impl ClockReadings for ClockMemo {
    #[inline]
    fn elapsed_ms(&self, field: usize, base: u32, new: u32, work_out: impl FnOnce() -> f64) -> f64 {
        if self.key.get() == (field, base, new) {
            return self.elapsed_ms.get();
        }
        let elapsed_ms = work_out();
        self.key.set((field, base, new));
        self.elapsed_ms.set(elapsed_ms);
        elapsed_ms
    }
}

/// What the value of `field` is coded against. `new` must already
/// hold the new values of every field the prediction reads; `base_word`
/// gives a field's baseline word (element 0).
///
/// Most values have neither a predictor nor an anchor axis: they are coded
/// against their baseline, settled here in a few instructions; the rest
/// take [`predicted_reference`], out of line, so the common case does
/// not pay for the registers the predictions need.
#[inline]
fn reference_of<'a, T: Fields>(
    model: &Model<'a>,
    base_word: impl Fn(usize) -> u32,
    new_word: impl Fn(usize) -> u32,
    new: &T,
    (field, coding, kind): (usize, &FieldCoding, &FieldKind),
    (context, clocks): (&DeltaContext, &impl ClockReadings),
) -> Reference<'a> {
    if predicts(coding) {
        return predicted_reference(
            model,
            base_word,
            new_word,
            new,
            (field, coding, kind),
            (context, clocks),
        );
    }
    plain_reference(model, (field, coding), kind.element(), base_word(field))
}

/// Whether a field coded as `coding` takes [`predicted_reference`].
#[inline(always)]
fn predicts(coding: &FieldCoding) -> bool {
    coding.predictor.is_some() || coding.axis.is_some()
}

/// [`reference_of`] for a field without a predictor or an anchor axis, of
/// kind `kind` and baseline word `base`: the baseline itself. Inline, so a
/// decoder that builds it beside the value's read keeps it in registers
/// and folds its constant parts into the read.
#[inline(always)]
fn plain_reference<'a>(
    model: &Model<'a>,
    (field, coding): (usize, &FieldCoding),
    kind: &ScalarKind,
    base: u32,
) -> Reference<'a> {
    if matches!(kind, ScalarKind::Q3Float) {
        Reference {
            value: f32::from_bits(base),
            is_base: true,
            grid_step: coding.grid_step,
            advanced: None,
            dictionary: &[],
            folded: false,
            tick: 0,
        }
    } else {
        Reference {
            value: 0.0,
            is_base: true,
            grid_step: None,
            advanced: None,
            dictionary: model.dictionary(field),
            folded: false,
            tick: 0,
        }
    }
}

/// [`reference_of`] for a field with a predictor or an anchor axis, coded
/// as `coding`, of kind `kind` (both the caller's: no look-up here).
#[inline(never)]
fn predicted_reference<'a, T: Fields>(
    model: &Model<'a>,
    base_word: impl Fn(usize) -> u32,
    new_word: impl Fn(usize) -> u32,
    new: &T,
    (field, coding, field_kind): (usize, &FieldCoding, &FieldKind),
    (context, clocks): (&DeltaContext, &impl ClockReadings),
) -> Reference<'a> {
    let elapsed_ms = |clock: Clock| match clock {
        Clock::Elapsed => context.elapsed_ms as f64,
        Clock::Field(time) => {
            let time = usize::from(time);
            let (from, to) = (base_word(time), new_word(time));
            clocks.elapsed_ms(time, from, to, || {
                numeric_change(new.field_kind(time).element(), from, to)
            })
        }
    };
    // Only Quake 3 floats and predicted integers are coded against a
    // reference; skip the work (and the word reads) for everything else.
    let kind = *field_kind.element();
    if !matches!(kind, ScalarKind::Q3Float) {
        // Only a tier-1 or tier-2 integer can hold a prediction.
        let predictor = match coding.tier {
            1 | 2 => fitting_predictor(coding, field_kind),
            _ => None,
        };
        let advanced = match predictor {
            Some(Predictor::Advance) => {
                Some(base_word(field).wrapping_add(context.elapsed_ms as u32))
            }
            Some(Predictor::Stamp) => {
                let base = base_word(field);
                Some(match context.server_time {
                    // Entering the view, or a slot a new entity took:
                    // a moment shortly before the snapshot.
                    Some(now) if context.spawn || base == 0 => now,
                    _ => base.wrapping_add(context.elapsed_ms as u32),
                })
            }
            // A launch time never moves: a changed one is a new
            // entity's, launched shortly before the snapshot.
            Some(Predictor::TickStamp { .. }) => Some(match context.server_time {
                Some(now) => now,
                None => base_word(field).wrapping_add(context.elapsed_ms as u32),
            }),
            Some(Predictor::Countdown { clock }) => {
                let base = numeric(&kind, base_word(field));
                // Whole milliseconds; a timer already at or below zero
                // stays where it is.
                let left = base - elapsed_ms(clock);
                let predicted = if base <= 0.0 { base } else { left.max(0.0) };
                Some(predicted as i64 as u32)
            }
            Some(Predictor::Run { per_1024, clock }) => {
                let steps =
                    rounding::round_to_i64(f64::from(per_1024) * elapsed_ms(clock) / 1024.0);
                // Any clock (even a corrupt one) gives some word: the
                // conversion saturates and the sum wraps in the field's width.
                Some(base_word(field).wrapping_add(steps as u32))
            }
            _ => None,
        };
        // An unpredicted integer may have a dictionary of common changes.
        let dictionary = match coding.predictor {
            None => model.dictionary(field),
            Some(_) => &[],
        };
        let tick = match (advanced, predictor) {
            (Some(_), Some(Predictor::TickStamp { tick_ms })) => u32::from(tick_ms),
            _ => 0,
        };
        return Reference {
            value: 0.0,
            is_base: true,
            grid_step: None,
            advanced,
            dictionary,
            folded: false,
            tick,
        };
    }
    let field_base = base_word(field);
    let grid_step = coding.grid_step;
    // A position entering the view from a zero baseline (a temporary event,
    // a missile) lies near the viewer far more often than near the origin.
    if let (Some(axis), Some(anchor), true, 0) = (
        coding.axis,
        context.anchor,
        context.spawn,
        field_base & 0x7fff_ffff,
    ) {
        return Reference {
            value: anchor[usize::from(axis)] as f32,
            is_base: false,
            grid_step,
            advanced: None,
            dictionary: &[],
            folded: false,
            tick: 0,
        };
    }
    let base_value = f32::from_bits(field_base);
    let predictor = fitting_predictor(coding, field_kind);
    if let Some(Predictor::FixedSpeed {
        speed,
        components,
        gate,
    }) = predictor
    {
        let applies = gate.is_none_or(|(gate, word)| new_word(usize::from(gate)) == word);
        if applies {
            let square = |f: u16| {
                let f = usize::from(f);
                let value = numeric(new.field_kind(f).element(), new_word(f));
                value * value
            };
            let left =
                f64::from(speed) * f64::from(speed) - square(components[0]) - square(components[1]);
            // Correctly rounded on every platform, so both ends agree; a
            // corrupt component (NaN, infinite) predicts a standstill.
            let size = if left > 0.0 { left.sqrt() } else { 0.0 };
            return Reference {
                value: size as f32,
                is_base: false,
                grid_step,
                advanced: None,
                dictionary: &[],
                folded: true,
                tick: 0,
            };
        }
    }
    let predicted = predictor.and_then(|predictor| {
        let value = match predictor {
            Predictor::Integrate { rate, clock } => {
                let rate = usize::from(rate);
                let rate_kind = *new.field_kind(rate).element();
                let speed = (numeric(&rate_kind, base_word(rate))
                    + numeric(&rate_kind, new_word(rate)))
                    / 2.0;
                base_value as f64 + speed * elapsed_ms(clock) / 1000.0
            }
            Predictor::Extrapolate { rate, clock } => {
                let rate = usize::from(rate);
                let rate_kind = *new.field_kind(rate).element();
                base_value as f64
                    + numeric(&rate_kind, base_word(rate)) * elapsed_ms(clock) / 1000.0
            }
            Predictor::Differentiate {
                position,
                clock,
                mean,
            } => {
                let elapsed_ms = elapsed_ms(clock);
                // No time passed (or it ran backwards): the change says
                // nothing of the rate; code from the baseline.
                if elapsed_ms <= 0.0 {
                    return None;
                }
                let position = usize::from(position);
                let kind = *new.field_kind(position).element();
                let moved =
                    numeric(&kind, new_word(position)) - numeric(&kind, base_word(position));
                let rate = moved * 1000.0 / elapsed_ms;
                // A position that barely moved (a body pressed against a
                // wall, which keeps a clipping residue of velocity, a
                // tenth of a unit a second, along it) says nothing of the
                // residue: its change is the trace's rounding, and a
                // prediction of the wrong sign or size costs more than the
                // baseline.
                if rate.abs() < MIN_DIFFERENTIATED_RATE {
                    return None;
                }
                if mean {
                    2.0 * rate - base_value as f64
                } else {
                    rate
                }
            }
            Predictor::Fall {
                gravity,
                acceleration,
                ground: (ground, word),
            } => {
                // Standing on something before or after (on the ground,
                // jumping, landing): no fall to predict.
                let ground = usize::from(ground);
                if base_word(ground) != word || new_word(ground) != word {
                    return None;
                }
                let gravity = match gravity {
                    Some(field) => {
                        let field = usize::from(field);
                        numeric(new.field_kind(field).element(), new_word(field))
                    }
                    None => f64::from(acceleration),
                };
                base_value as f64 - gravity * context.elapsed_ms as f64 / 1000.0
            }
            Predictor::Advance
            | Predictor::Stamp
            | Predictor::TickStamp { .. }
            | Predictor::Countdown { .. }
            | Predictor::Run { .. }
            | Predictor::FixedSpeed { .. } => return None,
        };
        let value = value as f32;
        value.is_finite().then_some(value)
    });
    Reference {
        value: predicted.unwrap_or(base_value),
        is_base: predicted.is_none(),
        grid_step,
        advanced: None,
        dictionary: &[],
        folded: false,
        tick: 0,
    }
}

/// Most predictor inputs a decoder saves before overwriting them; more
/// (not in any committed model) fall back to a copy of the whole baseline.
const SAVED_INPUTS: usize = 8;

/// The baseline words the decoder's predictions read (every predictor
/// input of the model: a few rate and time fields), saved before the loop
/// that overwrites them: cheaper than copying the whole baseline, and the
/// same few reads for every entity, so nothing to mispredict.
struct SavedInputs {
    /// Input field numbers; unused slots hold `usize::MAX`.
    fields: [usize; SAVED_INPUTS],
    words: [u32; SAVED_INPUTS],
}

impl SavedInputs {
    /// Saves the model's predictor inputs from `out`, or `None` if there
    /// are more than [`SAVED_INPUTS`].
    fn save<T: Fields>(model: &Model<'_>, out: &T) -> Option<Self> {
        if model.inputs.len() > SAVED_INPUTS {
            return None;
        }
        let mut saved = SavedInputs {
            fields: [usize::MAX; SAVED_INPUTS],
            words: [0; SAVED_INPUTS],
        };
        for (slot, &input) in model.inputs.iter().enumerate() {
            saved.fields[slot] = usize::from(input);
            saved.words[slot] = out.word(usize::from(input), 0);
        }
        Some(saved)
    }

    /// The saved baseline word of `field` if it is an input, else `current`
    /// (branch-free: a select per slot).
    #[inline]
    fn get(&self, field: usize, current: u32) -> u32 {
        let mut word = current;
        for (&f, &w) in self.fields.iter().zip(&self.words) {
            word = if f == field { w } else { word };
        }
        word
    }
}

/// The native model a delta or list entry is coded with, held for its
/// length: one the caller gives ([`super::ModelCodec`]), else the value
/// type's — a `'static` borrow for a `net_struct!` type (no reference
/// counting per delta), or a counted reference (a
/// [`DynamicState`](crate::dynamic::DynamicState)'s layout). Neither is a
/// borrow of the value, so a decoder may overwrite the value meanwhile.
pub(super) enum HeldModel<'m> {
    Given(&'m NativeModel),
    Static(&'static NativeModel),
    Counted(std::sync::Arc<NativeModel>),
}

impl<'m> HeldModel<'m> {
    /// `given`, or else the native model `value`'s type codes with, if any.
    pub(super) fn of<T: Fields>(given: Option<&'m NativeModel>, value: &T) -> Option<Self> {
        if let Some(model) = given {
            return Some(HeldModel::Given(model));
        }
        match value.static_model() {
            Some(model) => Some(HeldModel::Static(model)),
            None => value.native_model().map(HeldModel::Counted),
        }
    }

    pub(super) fn get(&self) -> &NativeModel {
        match self {
            HeldModel::Given(model) => model,
            HeldModel::Static(model) => model,
            HeldModel::Counted(model) => model,
        }
    }
}

/// The parts of a model the value coder needs, also available without
/// codes (the trainer counts symbols before any code exists).
#[derive(Clone, Copy)]
struct Model<'a> {
    codes: Option<&'a NativeModel>,
    /// Per field, its predictor, tier and grid step (see
    /// [`NativeModel::field_codings`]).
    codings: &'a [FieldCoding],
    /// Every field a predictor reads (see [`NativeModel::predictor_inputs`]).
    inputs: &'a [u16],
    /// The inputs that are float rates (see [`crate::model::float_rates`]).
    float_rates: &'a [u16],
    /// The fields of each tier (see [`NativeModel::tier_sets`]).
    tier_sets: Option<&'a [FieldSet; DECODE_TIERS]>,
    pattern_key: Option<PatternKey>,
    spawn_key: Option<PatternKey>,
    /// Per field, its dictionary of common changes (may be empty).
    dictionaries: &'a [Vec<u32>],
    /// Per field, its dictionary of common changed-element sets (may be
    /// empty; see [`crate::model::ModelData::element_sets`]).
    element_sets: &'a [Vec<u32>],
    /// The codings and tier sets of a delta from a held baseline with
    /// loose rates, if the model replaces predictors for one (see
    /// [`crate::model::ModelData::loose_predictors`]), and the clock
    /// fields that choose them. The trainer, which orders nothing, has no
    /// tier sets.
    loose: Option<Loose<'a>>,
}

/// A model's replacement predictors for loose deltas (see [`Model::loose`]).
#[derive(Clone, Copy)]
struct Loose<'a> {
    codings: &'a [FieldCoding],
    tier_sets: Option<&'a [FieldSet; DECODE_TIERS]>,
    clocks: &'a [u16],
}

impl<'a> Model<'a> {
    fn of(model: Option<&'a NativeModel>) -> Self {
        match model {
            Some(m) => Model {
                codes: Some(m),
                codings: m.field_codings(),
                inputs: m.predictor_inputs(),
                float_rates: m.float_rates(),
                tier_sets: Some(m.tier_sets()),
                pattern_key: m.data().pattern_key,
                spawn_key: m.data().spawn_key,
                dictionaries: &m.data().dictionaries,
                element_sets: &m.data().element_sets,
                loose: m.loose_coding().map(|loose| Loose {
                    codings: &loose.codings,
                    tier_sets: Some(&loose.tier_sets),
                    clocks: &loose.clocks,
                }),
            },
            None => Model {
                codes: None,
                codings: &[],
                inputs: &[],
                float_rates: &[],
                tier_sets: None,
                pattern_key: None,
                spawn_key: None,
                dictionaries: &[],
                element_sets: &[],
                loose: None,
            },
        }
    }

    /// The model that codes a loose-candidate delta's values after its
    /// clocks: the replacement predictors, in their decode order, when
    /// every clock advanced by the elapsed time (`advanced`; one move a
    /// frame, where a position's change says the new velocity), else the
    /// model as it is.
    #[inline]
    fn for_clocks(self, advanced: bool) -> Self {
        match self.loose {
            Some(loose) if advanced => Model {
                codings: loose.codings,
                tier_sets: loose.tier_sets.or(self.tier_sets),
                ..self
            },
            _ => self,
        }
    }

    /// [`Model::for_clocks`] for a coder that knows the new state
    /// (`new_word` reads its element-0 words, `base_word` the baseline's):
    /// `clocks` are the delta's loose clocks ([`delta_rates`]; `None`: no
    /// loose candidate, and the model stays as it is).
    #[inline]
    fn for_delta(
        self,
        clocks: Option<&[u16]>,
        context: &DeltaContext,
        base_word: impl Fn(usize) -> u32,
        new_word: impl Fn(usize) -> u32,
    ) -> Self {
        match clocks {
            Some(clocks) => self.for_clocks(clocks.iter().all(|&clock| {
                let clock = usize::from(clock);
                clock_advanced(context, base_word(clock), new_word(clock))
            })),
            None => self,
        }
    }

    /// `field`'s chances for the bits below its values' leading ones
    /// ([`crate::top_bits`]), if its model has any.
    #[inline(always)]
    fn top_bits(&self, field: usize) -> Option<&'a TopBitChances> {
        self.codes.and_then(|model| model.top_bits(field))
    }

    /// `field`'s dictionary of common changes (empty without one).
    #[inline]
    fn dictionary(&self, field: usize) -> &'a [u32] {
        self.dictionaries.get(field).map_or(&[], Vec::as_slice)
    }

    /// `field`'s dictionary of changed-element sets when its element sets
    /// in deltas of `origin` are coded as [`Context::Elements`] symbols:
    /// it has one and, with codes, a code for them (a trainer, without
    /// codes, counts them whenever it has a dictionary). `None`: the set
    /// is gap-coded.
    #[inline]
    fn element_sets(&self, field: usize, origin: Origin) -> Option<&'a [u32]> {
        let sets = self
            .element_sets
            .get(field)
            .filter(|sets| !sets.is_empty())?;
        match self.codes {
            Some(model) => model
                .code(Context::Elements(field, origin))
                .map(|_| sets.as_slice()),
            None => Some(sets),
        }
    }

    /// How `field` is coded (no predictor, tier 0, no grid beyond the
    /// model's fields). Borrowed, not copied: a value reads one or two of
    /// its parts, and the whole coding is four words.
    #[inline]
    fn coding(&self, field: usize) -> &'a FieldCoding {
        self.codings.get(field).unwrap_or(&UNCODED)
    }

    /// The pattern set of a delta of `origin` from `base` (which must hold
    /// the baseline's key field).
    #[inline]
    fn pattern_set<T: Fields>(&self, origin: Origin, base: &T) -> PatternSet {
        self.pattern_set_of(origin, |field| {
            if field < base.field_count() {
                base.word(field, 0)
            } else {
                0
            }
        })
    }

    /// [`Model::pattern_set`] of a baseline whose element-0 words `word`
    /// reads (zero past its fields): a decoder that has the baseline's
    /// scalar words reads its key fields from them, not through the
    /// struct's accessors.
    #[inline]
    fn pattern_set_of(&self, origin: Origin, word: impl Fn(usize) -> u32) -> PatternSet {
        let word = |field: u16| word(usize::from(field));
        let key = match origin {
            Origin::Spawn => self.spawn_key,
            Origin::Held => self.pattern_key,
        };
        let words = key.map_or([0; 3], |key| {
            [
                word(key.field),
                key.flag.map_or(0, word),
                key.second_flag.map_or(0, word),
            ]
        });
        let spawn_sets = self.spawn_key.map_or(1, |key| key.held_classes());
        crate::model::pattern_set(key, spawn_sets, origin, words)
    }
}

/// The coding of a field past a model's fields (what `FieldCoding`'s
/// default is).
static UNCODED: FieldCoding = FieldCoding {
    predictor: None,
    tier: 0,
    grid_step: None,
    axis: None,
    replaced: false,
};

/// Writes a symbol with the model's code for `context`, or exp-Golomb without one.
fn put_symbol<S: BitSink + ?Sized>(
    sink: &mut S,
    model: Option<&NativeModel>,
    context: Context,
    symbol: u8,
) -> Result<(), BitError> {
    match model.and_then(|m| m.code(context)) {
        Some(code) => sink.put_coded_symbol(code, symbol),
        None => put_exp_golomb(sink, u32::from(symbol), 1),
    }
}

/// Writes a symbol and the raw bits after it ([`put_symbol`], then
/// `code.extra_bits` bits of `code.extra`): with a model's code, both in
/// one write.
#[inline(always)]
fn put_symbol_and_extra<S: BitSink + ?Sized>(
    sink: &mut S,
    model: Option<&NativeModel>,
    context: Context,
    code: ValueCode,
) -> Result<(), BitError> {
    match model.and_then(|m| m.code(context)) {
        Some(symbol_code) => {
            sink.put_coded_symbol_and_raw(symbol_code, code.symbol, code.extra, code.extra_bits)
        }
        None => {
            put_exp_golomb(sink, u32::from(code.symbol), 1)?;
            if code.extra_bits > 0 {
                sink.put_bits(code.extra, code.extra_bits)?;
            }
            Ok(())
        }
    }
}

/// Reads a symbol written by [`put_symbol`].
#[inline(always)]
fn get_symbol<S: BitSource + ?Sized>(
    source: &mut S,
    model: Option<&NativeModel>,
    context: Context,
) -> Result<u8, BitError> {
    match model.and_then(|m| m.code(context)) {
        Some(code) => source.get_coded_symbol(code),
        None => {
            let position = source.bits_read();
            let value = get_exp_golomb(source, 1)?;
            u8::try_from(value).map_err(|_| {
                BitError::invalid("symbol", position, format!("{value} is not a symbol"))
            })
        }
    }
}

/// Reads a symbol and the raw bits after it, as [`put_symbol_and_extra`]
/// wrote them: `extra_bits` says how many follow each symbol.
#[inline(always)]
fn get_symbol_and_extra<S: BitSource + ?Sized>(
    source: &mut S,
    model: Option<&NativeModel>,
    context: Context,
    extra_bits: &[u8; 256],
) -> Result<(u8, u32), BitError> {
    match model.and_then(|m| m.code(context)) {
        Some(code) => source.get_coded_symbol_and_raw(code, extra_bits),
        None => {
            let symbol = get_symbol(source, None, context)?;
            let count = u32::from(extra_bits[usize::from(symbol)]);
            let extra = if count > 0 {
                source.get_bits(count)?
            } else {
                0
            };
            Ok((symbol, extra))
        }
    }
}

/// Writes a changed value: its symbol, then its extra bits.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn put_value<S: BitSink + ?Sized>(
    sink: &mut S,
    model: &Model<'_>,
    field: usize,
    kind: &ScalarKind,
    base: u32,
    new: u32,
    reference: Reference,
    scope: Scope,
) -> Result<(), BitError> {
    let Some(code) = value_code(kind, base, new, reference, model.codes.is_some()) else {
        return Ok(());
    };
    let context = value_context(
        kind,
        base,
        scope.origin,
        scope.demotes(model, field),
        model.coding(field).replaced,
    );
    let context = Context::Value(field, context);
    if let Some(chances) = model.top_bits(field) {
        if let Some(symbol_code) = model.codes.and_then(|m| m.code(context)) {
            return sink.put_coded_symbol_and_top_bits(
                symbol_code,
                code.symbol,
                code.extra,
                code.extra_bits,
                chances,
            );
        }
    }
    put_symbol_and_extra(sink, model.codes, context, code)
}

/// Reads a changed value written by [`put_value`]: the new word of field
/// `field` (`replaced`: its [`FieldCoding::replaced`]) of kind `kind`
/// from the baseline word `base`. The kind is matched once, for the
/// value's context, its extra-bits table and its word.
#[inline(always)]
fn get_value<S: BitSource + ?Sized>(
    source: &mut S,
    model: &Model<'_>,
    (field, replaced): (usize, bool),
    kind: &ScalarKind,
    base: u32,
    reference: Reference,
    scope: Scope,
) -> Result<u32, BitError> {
    match kind {
        ScalarKind::Bool => Ok(base ^ 1),
        ScalarKind::Q3Float => {
            let demoted = scope.demotes(model, field);
            let context = float_value_context(base, scope.origin, demoted, replaced);
            let (symbol, extra, position) =
                get_value_symbol(source, model, field, context, &FLOAT_EXTRA_BITS)?;
            if symbol == ZERO_SYMBOL {
                return zero_word(kind, base, model.codes.is_some(), position);
            }
            float_from_code(base, reference, symbol, extra, position)
        }
        _ => {
            let context = integer_value_context(base, scope.origin, replaced);
            let extra_bits = if reference.tick > 1 {
                &TICK_EXTRA_BITS
            } else {
                &INTEGER_EXTRA_BITS
            };
            let (symbol, extra, position) =
                get_value_symbol(source, model, field, context, extra_bits)?;
            if symbol == ZERO_SYMBOL {
                return zero_word(kind, base, model.codes.is_some(), position);
            }
            integer_from_code(kind, base, reference, symbol, extra, position)
        }
    }
}

/// The symbol of a value of `field` in `context` and its extra bits (read
/// as `extra_bits` says), and the position they start at; a symbol past
/// the value symbols is refused.
#[inline(always)]
fn get_value_symbol<S: BitSource + ?Sized>(
    source: &mut S,
    model: &Model<'_>,
    field: usize,
    context: ValueContext,
    extra_bits: &[u8; 256],
) -> Result<(u8, u32, usize), BitError> {
    let position = source.bits_read();
    let context = Context::Value(field, context);
    // A bit stream reads raw bits whatever the chances: no look-up for it.
    let chances = match source.reads_top_bits() {
        true => model.top_bits(field),
        false => None,
    };
    let (symbol, extra) = match (chances, model.codes.and_then(|m| m.code(context))) {
        (Some(chances), Some(code)) => {
            source.get_coded_symbol_and_top_bits(code, extra_bits, chances)?
        }
        _ => get_symbol_and_extra(source, model.codes, context, extra_bits)?,
    };
    if usize::from(symbol) >= VALUE_SYMBOLS {
        return Err(refused(
            "value class",
            position,
            format_args!("symbol {symbol} out of range"),
        ));
    }
    Ok((symbol, extra, position))
}

/// The word [`ZERO_SYMBOL`] decodes to, if it may stand here: only a model
/// codes it, and only for a change (from a zero baseline it would say
/// "unchanged"). Inline, with the error out of line: one value in thirty
/// of the duel is a reset to zero.
#[inline(always)]
fn zero_word(
    kind: &ScalarKind,
    base: u32,
    modelled: bool,
    position: usize,
) -> Result<u32, BitError> {
    if !modelled || base == 0 || !kind.word_in_range(0) {
        return Err(refused(
            "value class",
            position,
            format_args!("the zero symbol cannot change a {kind:?} from word {base:#x}"),
        ));
    }
    Ok(0)
}

/// The members of `set` in the order their values are sent, into `out`;
/// returns how many (see [`visit_in_value_order`]).
fn value_order(set: &FieldSet, model: &Model<'_>, out: &mut [u16; MAX_FIELDS]) -> usize {
    let mut count = 0;
    let visited: Result<(), std::convert::Infallible> = visit_in_value_order(set, model, |field| {
        out[count] = field as u16;
        count += 1;
        Ok(())
    });
    let Ok(()) = visited;
    count
}

/// Calls `visit` with each member of `set` in the order their values are
/// sent, stopping at its first error. By [`crate::model::decode_tier`], so
/// every prediction's inputs are decoded before it, and within a tier by
/// field. The writer and the reader both take it straight from the set:
/// one step per member, with no per-field look-up of its tier, and no
/// list of members to fill first.
#[inline(always)]
fn visit_in_value_order<E>(
    set: &FieldSet,
    model: &Model<'_>,
    mut visit: impl FnMut(usize) -> Result<(), E>,
) -> Result<(), E> {
    let tiers = model
        .tier_sets
        .map_or(std::slice::from_ref(&EVERY_FIELD), |sets| &sets[..]);
    // Only the words up to the set's last member: a struct of at most 64
    // fields (every Quake 3 one) then walks one word per tier, not four.
    let used = set
        .iter()
        .rposition(|&bits| bits != 0)
        .map_or(0, |last| last + 1);
    let set = &set[..used];
    for tier in tiers {
        for (word, (&bits, &mask)) in set.iter().zip(tier).enumerate() {
            let mut bits = bits & mask;
            while bits != 0 {
                visit(word * 64 + bits.trailing_zeros() as usize)?;
                bits &= bits - 1;
            }
        }
    }
    Ok(())
}

/// Whether a clock field went from `base` to `new` by at most the delta's
/// elapsed time, and by something if any time elapsed (see
/// [`Model::for_clocks`]): a player's commands then most likely ran one
/// move (a bot's or a spectated player's, timed by the server's frames,
/// one of exactly the elapsed time; a client's whose commands are shorter
/// than a frame, one of its own length), and the position's change over
/// the clock's step says the new rate. Taken only at exactly the elapsed
/// time, a live client's deltas of one 36–46 ms command a 50 ms frame
/// were coded from their baselines (OpenArena's fractional velocities,
/// twenty-odd bits each).
#[inline]
fn clock_advanced(context: &DeltaContext, base: u32, new: u32) -> bool {
    let step = new.wrapping_sub(base);
    let elapsed = context.elapsed_ms as u32;
    step <= elapsed && (step > 0 || elapsed == 0)
}

/// [`value_order`] of `set` without `first` (a loose delta's clocks, coded
/// before it).
fn value_order_after(
    set: &FieldSet,
    first: &[u16],
    model: &Model<'_>,
    out: &mut [u16; MAX_FIELDS],
) -> usize {
    if first.is_empty() {
        return value_order(set, model, out);
    }
    value_order(&without(set, first), model, out)
}

/// `set` without the fields of `first`.
#[inline]
fn without(set: &FieldSet, first: &[u16]) -> FieldSet {
    let mut rest = *set;
    for &field in first {
        let field = usize::from(field);
        if let Some(word) = rest.get_mut(field / 64) {
            *word &= !(1u64 << (field % 64));
        }
    }
    rest
}

/// The indices of the fields that differ, into `out`; returns how many.
fn changed_fields<T: Fields>(base: &T, new: &T, out: &mut [u16; MAX_FIELDS]) -> usize {
    let mut set = [0u64; MAX_FIELDS.div_ceil(64)];
    new.changed_fields(base, &mut set);
    set_members(&set, out)
}

/// Every field, as a set (the one decode tier of a delta without a model).
const EVERY_FIELD: FieldSet = [u64::MAX; MAX_FIELDS.div_ceil(64)];

/// The members of `set`, in increasing order.
fn members(set: &FieldSet) -> impl Iterator<Item = usize> + Clone + '_ {
    set.iter()
        .enumerate()
        .flat_map(|(word, &bits)| Ones(bits).map(move |bit| word * 64 + bit as usize))
}

/// The largest member of `set`.
fn last_member(set: &FieldSet) -> Option<usize> {
    set.iter()
        .enumerate()
        .rev()
        .find(|(_, &bits)| bits != 0)
        .map(|(word, &bits)| word * 64 + 63 - bits.leading_zeros() as usize)
}

/// The members of `set` in increasing order, into `out`; returns how many.
fn set_members(set: &FieldSet, out: &mut [u16; MAX_FIELDS]) -> usize {
    let mut count = 0;
    for (word_index, &word) in set.iter().enumerate() {
        // One step per member, not per field.
        let mut bits = word;
        while bits != 0 {
            out[count] = (word_index * 64 + bits.trailing_zeros() as usize) as u16;
            count += 1;
            bits &= bits - 1;
        }
    }
    count
}

/// Group patterns of a changed set, and one more than the last non-empty group.
fn group_patterns(
    changed: &[u16],
    patterns: &mut [u8; MAX_FIELDS.div_ceil(GROUP_FIELDS)],
) -> usize {
    patterns.fill(0);
    for &field in changed {
        let field = usize::from(field);
        patterns[field / GROUP_FIELDS] |= 1 << (field % GROUP_FIELDS);
    }
    changed
        .last()
        .map_or(0, |&last| usize::from(last) / GROUP_FIELDS + 1)
}

/// What a trainer has fixed before it counts symbols: the grids,
/// predictors and magnitudes of its fields, and its pattern keys.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Learned<'a> {
    pub(crate) grids: &'a [Option<Grid>],
    pub(crate) predictors: &'a [Option<Predictor>],
    pub(crate) magnitudes: &'a [Option<i16>],
    pub(crate) pattern_key: Option<PatternKey>,
    pub(crate) spawn_key: Option<PatternKey>,
    pub(crate) axes: &'a [Option<u8>],
    pub(crate) dictionaries: &'a [Vec<u32>],
    pub(crate) element_sets: &'a [Vec<u32>],
    pub(crate) loose_predictors: &'a [Option<Predictor>],
}

/// Calls `visit` with every modelled symbol the delta from `base` to `new`
/// contains, in the encoder's terms; what [`crate::model::ModelTrainer`] counts.
pub(crate) fn visit_symbols<T: Fields>(
    base: &T,
    new: &T,
    learned: &Learned<'_>,
    context: &DeltaContext,
    visit: &mut dyn FnMut(TracedSymbol),
) {
    let Learned {
        grids,
        predictors,
        magnitudes,
        pattern_key,
        spawn_key,
        axes,
        dictionaries,
        element_sets,
        loose_predictors,
    } = *learned;
    let codings = field_codings(grids, predictors, axes);
    let loose = crate::model::LooseCoding::of(grids, predictors, axes, loose_predictors);
    let float_rates = crate::model::float_rates(predictors, magnitudes);
    let model = Model {
        codes: None,
        codings: &codings,
        inputs: &[],
        float_rates: &float_rates,
        tier_sets: None,
        pattern_key,
        spawn_key,
        dictionaries,
        element_sets,
        loose: loose.as_ref().map(|loose| Loose {
            codings: &loose.codings,
            tier_sets: None,
            clocks: &loose.clocks,
        }),
    };
    visit_model_symbols(base, new, &model, context, visit);
}

/// As [`visit_symbols`], with a built model's field codings, worked out
/// once: what [`crate::model::SymbolTally`] records, allocation-free.
pub(crate) fn visit_native_symbols<T: Fields>(
    base: &T,
    new: &T,
    model: &NativeModel,
    context: &DeltaContext,
    visit: &mut dyn FnMut(Context, u8),
) {
    // An adapting model counts the top bits it codes values' raw bits by
    // (see `crate::top_bits`); a model without them, none.
    let counts_top_bits = !model.data().top_bits.is_empty();
    let visit = &mut |symbol: TracedSymbol| {
        visit(symbol.context, symbol.symbol);
        if counts_top_bits {
            if let Some((context, seen)) = crate::model::top_bits_seen(&symbol) {
                visit(context, seen);
            }
        }
    };
    visit_model_symbols(base, new, &Model::of(Some(model)), context, visit);
}

/// As [`visit_native_symbols`], with the raw bits each symbol carries: what
/// [`crate::model::trace_delta`] reports.
pub(crate) fn trace_native_symbols<T: Fields>(
    base: &T,
    new: &T,
    model: &NativeModel,
    context: &DeltaContext,
    visit: &mut dyn FnMut(TracedSymbol),
) {
    visit_model_symbols(base, new, &Model::of(Some(model)), context, visit);
}

fn visit_model_symbols<T: Fields>(
    base: &T,
    new: &T,
    model: &Model<'_>,
    context: &DeltaContext,
    visit: &mut dyn FnMut(TracedSymbol),
) {
    let mut changed = [0u16; MAX_FIELDS];
    let count = changed_fields(base, new, &mut changed);
    let mut patterns = [0u8; MAX_FIELDS.div_ceil(GROUP_FIELDS)];
    let last_group = group_patterns(&changed[..count], &mut patterns);
    let origin = context.origin();
    let (clocks, scope) = delta_rates(model, origin, base, |f| base.word(f, 0), None);
    let model = &model.for_delta(clocks, context, |f| base.word(f, 0), |f| new.word(f, 0));
    let set = model.pattern_set(origin, base);
    visit(TracedSymbol::bare(
        Context::LastGroup(set),
        last_group as u8,
    ));
    for (group, &pattern) in patterns.iter().enumerate().take(last_group) {
        visit(TracedSymbol::bare(Context::Group(set, group), pattern));
    }
    let clocks = Unkept;
    for &field in &changed[..count] {
        let field = usize::from(field);
        let kind = new.field_kind(field);
        let reference = reference_of(
            model,
            |f| base.word(f, 0),
            |f| new.word(f, 0),
            new,
            (field, model.coding(field), &kind),
            (context, &clocks),
        );
        if let Some(sets) = model.element_sets(field, origin) {
            let mask = new.element_changes(base, field);
            visit(TracedSymbol::bare(
                Context::Elements(field, origin),
                elements_symbol(sets, mask),
            ));
        }
        for element in 0..kind.elements() {
            let (b, n) = (base.word(field, element), new.word(field, element));
            if b != n {
                if let Some(code) = value_code(kind.element(), b, n, reference, true) {
                    let demoted = scope.demotes(model, field);
                    let replaced = model.coding(field).replaced;
                    let value_context = value_context(kind.element(), b, origin, demoted, replaced);
                    visit(TracedSymbol {
                        context: Context::Value(field, value_context),
                        symbol: code.symbol,
                        raw_bits: code.extra_bits,
                        raw: code.extra,
                    });
                }
            }
        }
    }
}

/// Writes the changed-field set, then each changed field's value.
pub(super) fn write_fields<T: Fields, S: BitSink + ?Sized>(
    given: Option<&NativeModel>,
    sink: &mut S,
    base: &T,
    new: &T,
    context: &DeltaContext,
) -> Result<(), BitError> {
    let mut set = [0u64; MAX_FIELDS.div_ceil(64)];
    let mut words = WordPair::new();
    let (_, unpacked) =
        new.changed_fields_and_words(base, &mut set, &mut words.new, &mut words.base);
    let held = HeldModel::of(given, new);
    let model = held.as_ref().map(HeldModel::get);
    write_changed_fields(
        sink,
        model,
        base,
        new,
        &set,
        unpacked.then_some(&words),
        context,
    )
}

/// Both values' scalar words (see [`Fields::scalar_words`]), taken with the
/// changed set: the encoder then reads plain arrays, not an accessor per
/// field.
struct WordPair {
    base: [u32; SCALAR_WORDS],
    new: [u32; SCALAR_WORDS],
}

impl WordPair {
    fn new() -> Self {
        WordPair {
            base: [0; SCALAR_WORDS],
            new: [0; SCALAR_WORDS],
        }
    }
}

/// [`write_fields`] with the changed fields already found, the scalar words
/// when the struct gave them, and the type's model (held by the caller,
/// which codes the entity number with it too).
fn write_changed_fields<T: Fields, S: BitSink + ?Sized>(
    sink: &mut S,
    model: Option<&NativeModel>,
    base: &T,
    new: &T,
    set: &FieldSet,
    words: Option<&WordPair>,
    context: &DeltaContext,
) -> Result<(), BitError> {
    let model = Model::of(model);
    let origin = context.origin();
    match model.codes {
        Some(codes) => {
            let pattern_set = model.pattern_set(origin, base);
            // A group's pattern is a byte of the set, read as it is.
            const _: () = assert!(GROUP_FIELDS == 8, "a group is one byte of a FieldSet word");
            let last_group = last_member(set).map_or(0, |last| last / GROUP_FIELDS + 1);
            put_symbol(
                sink,
                Some(codes),
                Context::LastGroup(pattern_set),
                last_group as u8,
            )?;
            for group in 0..last_group {
                let pattern = (set[group / 8] >> (group % 8 * 8)) as u8;
                put_symbol(
                    sink,
                    Some(codes),
                    Context::Group(pattern_set, group),
                    pattern,
                )?;
            }
        }
        None => put_set(sink, members(set))?,
    }
    // Scalars through plain word arrays when the struct allows it, as the
    // reader does (see `read_scalar_words`): no accessor-table call per
    // changed field.
    let words = words.filter(|_| {
        model
            .inputs
            .iter()
            .all(|&input| !new.field_kind(usize::from(input)).is_array())
    });
    let base_word = |f: usize| match words {
        Some(words) => words.base.get(f).copied().unwrap_or(0),
        None => base.word(f, 0),
    };
    let new_word = |f: usize| match words {
        Some(words) => words.new.get(f).copied().unwrap_or(0),
        None => new.word(f, 0),
    };
    // A loose delta's clocks go first: the reader chooses its predictors
    // by them (see `Model::for_clocks`).
    let (clocks, scope) = delta_rates(&model, origin, base, base_word, Some(set));
    let first = clocks.unwrap_or(&[]);
    let model = model.for_delta(clocks, context, base_word, new_word);
    let clocks = Unkept;
    let mut write_value = |index: usize| -> Result<(), BitError> {
        let kind = new.field_kind(index);
        let reference = reference_of(
            &model,
            base_word,
            new_word,
            new,
            (index, model.coding(index), &kind),
            (context, &clocks),
        );
        if kind.is_array() {
            let mask = new.element_changes(base, index);
            put_elements(sink, &model, (index, origin), kind.elements(), mask)?;
            for element in (0..kind.elements()).filter(|e| mask & (1 << e) != 0) {
                let (b, n) = (base.word(index, element), new.word(index, element));
                put_value(sink, &model, index, kind.element(), b, n, reference, scope)?;
            }
        } else {
            let (b, n) = (base_word(index), new_word(index));
            put_value(sink, &model, index, kind.element(), b, n, reference, scope)?;
        }
        Ok(())
    };
    for &clock in first {
        if field_in(set, usize::from(clock)) {
            write_value(usize::from(clock))?;
        }
    }
    let mut order = [0u16; MAX_FIELDS];
    let count = value_order_after(set, first, &model, &mut order);
    for &index in &order[..count] {
        write_value(usize::from(index))?;
    }
    Ok(())
}

/// Reads what [`write_fields`] wrote into `out` (which holds the baseline)
/// and returns how many fields changed.
pub(super) fn read_fields<T: Fields, S: BitSource + ?Sized>(
    given: Option<&NativeModel>,
    source: &mut S,
    out: &mut T,
    context: &DeltaContext,
) -> Result<usize, BitError> {
    // A `'static` model or an `Arc`, not a borrow of `out`, which the
    // loop below mutates.
    let held = HeldModel::of(given, out);
    let model = Model::of(held.as_ref().map(HeldModel::get));
    read_fields_with(&model, source, out, context)
}

/// [`read_fields`] with the model view resolved (by the caller, once per
/// entity list: see [`ListModel`]).
#[inline(always)]
fn read_fields_with<T: Fields, S: BitSource + ?Sized>(
    model: &Model<'_>,
    source: &mut S,
    out: &mut T,
    context: &DeltaContext,
) -> Result<usize, BitError> {
    let fields = out.field_count();
    let origin = context.origin();
    // The baseline's scalar words when the struct gives them (plain array
    // reads): its pattern key, whether the delta is a loose candidate and
    // the predictions read them.
    let mut base = [0u32; SCALAR_WORDS];
    let scalar = scalar_words_qualify(out, &mut base);
    let mut set: FieldSet = [0; MAX_FIELDS.div_ceil(64)];
    let count = match model.codes {
        Some(codes) => {
            // `out` still holds the baseline, whose key picks the codes.
            let patterns = if scalar {
                model.pattern_set_of(origin, |f| word_of(&base, f))
            } else {
                model.pattern_set(origin, &*out)
            };
            get_grouped_set(source, codes, patterns, fields, &mut set)?
        }
        None => {
            let mut changed = [0u16; MAX_FIELDS];
            let count = get_set(source, fields, &mut changed)?;
            for &field in &changed[..count] {
                set[usize::from(field) / 64] |= 1 << (field % 64);
            }
            count
        }
    };
    // `out` still holds the baseline, which says whether the delta is a
    // loose candidate: its clocks then come first, and choose the
    // predictors of the rest (`Model::for_clocks`).
    if scalar {
        let (clocks, scope) = delta_rates(model, origin, &*out, |f| word_of(&base, f), Some(&set));
        read_scalar_words(source, out, model, &base, clocks, &set, context, scope)?;
        return Ok(count);
    }
    let (clocks, scope) = delta_rates(model, origin, &*out, |f| out.word(f, 0), Some(&set));
    // Predictions read baseline words that `out` loses as it fills with new
    // values: save them first (a whole copy only in the rare case of more
    // inputs than `SAVED_INPUTS`).
    let saved = SavedInputs::save(model, out);
    let base = saved.is_none().then(|| out.clone());
    let held = HeldInputs {
        saved: saved.as_ref(),
        base: base.as_ref(),
    };
    let first = clocks.unwrap_or(&[]);
    let memo = ClockMemo::new();
    let mut advanced = true;
    for &clock in first {
        let clock = usize::from(clock);
        let old = out.word(clock, 0);
        if field_in(&set, clock) {
            read_held_value(source, out, model, clock, held, (context, &memo), scope)?;
        }
        advanced &= clock_advanced(context, old, out.word(clock, 0));
    }
    let model = match clocks {
        Some(_) => model.for_clocks(advanced),
        None => *model,
    };
    let mut order = [0u16; MAX_FIELDS];
    let ordered = value_order_after(&set, first, &model, &mut order);
    for &index in &order[..ordered] {
        read_held_value(
            source,
            out,
            &model,
            usize::from(index),
            held,
            (context, &memo),
            scope,
        )?;
    }
    Ok(count)
}

/// Where [`read_fields`] keeps the baseline words its predictions read
/// while `out` fills with new values.
struct HeldInputs<'s, T> {
    saved: Option<&'s SavedInputs>,
    base: Option<&'s T>,
}

// By hand: a derive would ask `T: Copy`, and only references are held.
impl<T> Clone for HeldInputs<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for HeldInputs<'_, T> {}

/// Reads field `index`'s value into `out` (see [`read_fields`]).
fn read_held_value<T: Fields, S: BitSource + ?Sized>(
    source: &mut S,
    out: &mut T,
    model: &Model<'_>,
    index: usize,
    held: HeldInputs<'_, T>,
    (context, clocks): (&DeltaContext, &ClockMemo),
    scope: Scope,
) -> Result<(), BitError> {
    let kind = out.field_kind(index);
    let reference = {
        let current: &T = out;
        let base_word = |f: usize| match (held.saved, held.base) {
            (Some(saved), _) => saved.get(f, current.word(f, 0)),
            (None, Some(base)) => base.word(f, 0),
            (None, None) => current.word(f, 0),
        };
        reference_of(
            model,
            base_word,
            |f| current.word(f, 0),
            current,
            (index, model.coding(index), &kind),
            (context, clocks),
        )
    };
    if kind.is_array() {
        read_array_elements(
            source,
            out,
            model,
            (index, context.origin()),
            reference,
            scope,
        )?;
    } else {
        let word = get_value(
            source,
            model,
            (index, model.coding(index).replaced),
            kind.element(),
            out.word(index, 0),
            reference,
            scope,
        )?;
        out.set_word(index, 0, word);
    }
    Ok(())
}

/// Reads the changed-element set of array field `index` in a delta of
/// `origin` and each changed element's value into `out` (which holds the
/// baseline).
fn read_array_elements<T: Fields, S: BitSource + ?Sized>(
    source: &mut S,
    out: &mut T,
    model: &Model<'_>,
    (index, origin): (usize, Origin),
    reference: Reference,
    scope: Scope,
) -> Result<(), BitError> {
    let kind = out.field_kind(index);
    let mask = get_elements(source, model, (index, origin), kind.elements())?;
    let value = (index, model.coding(index).replaced);
    for element in Ones(u64::from(mask)) {
        let element = element as usize;
        let old = out.word(index, element);
        let word = get_value(source, model, value, kind.element(), old, reference, scope)?;
        out.set_word(index, element, word);
    }
    Ok(())
}

/// Fields a struct may have for [`read_scalar_words`].
const SCALAR_WORDS: usize = 64;

/// The values of [`read_fields`] for structs of at most [`SCALAR_WORDS`]
/// fields (every Quake 3 layout): the
/// baseline's scalar words are taken in one straight-line pass, values are
/// decoded between two plain arrays (the baseline's, which predictions
/// read, and the new one), and the changed scalars are stored back in one
/// more pass. Reaching a field's accessor through the generated table
/// instead costs an indirect call per read and write whose target depends
/// on the data, mispredicted most of the time. Only for a struct that
/// qualifies ([`scalar_words_qualify`], which takes `base`); array elements
/// are read and stored directly.
#[allow(clippy::too_many_arguments)]
fn read_scalar_words<T: Fields, S: BitSource + ?Sized>(
    source: &mut S,
    out: &mut T,
    model: &Model<'_>,
    base: &[u32; SCALAR_WORDS],
    clocks: Option<&[u16]>,
    set: &FieldSet,
    context: &DeltaContext,
    scope: Scope,
) -> Result<(), BitError> {
    let mut new = *base;
    let memo = ClockMemo::new();
    let first = clocks.unwrap_or(&[]);
    for &clock in first {
        if field_in(set, usize::from(clock)) {
            read_scalar_value(
                source,
                out,
                model,
                usize::from(clock),
                (base, &mut new),
                (context, &memo),
                scope,
            )?;
        }
    }
    // Borrowed unless the clocks replace the codings: the model is too
    // large to copy per delta for nothing.
    let for_clocks;
    let model = match clocks {
        Some(clocks) => {
            for_clocks = model.for_clocks(clocks.iter().all(|&clock| {
                let clock = usize::from(clock);
                clock_advanced(context, word_of(base, clock), word_of(&new, clock))
            }));
            &for_clocks
        }
        None => model,
    };
    let rest = without(set, first);
    visit_in_value_order(&rest, model, |index| {
        read_scalar_value(
            source,
            out,
            model,
            index,
            (base, &mut new),
            (context, &memo),
            scope,
        )
    })?;
    out.store_scalar_words(&new, set);
    Ok(())
}

/// Whether `out` qualifies for [`read_scalar_words`] (at most
/// [`SCALAR_WORDS`] fields); if so its scalar words are in `base`.
///
/// A predictor input that is an array reads its element 0 there as the
/// general path does: `base` holds the baseline's (see
/// [`Fields::scalar_words`]) and [`read_scalar_value`] keeps the new
/// words' slot of an array at its new element 0. So no scan of the
/// model's inputs per delta (it was about 1% of the duel's decode).
#[inline]
fn scalar_words_qualify<T: Fields>(out: &T, base: &mut [u32; SCALAR_WORDS]) -> bool {
    out.scalar_words(base)
}

/// Word `f` of a struct's scalar words; a model's field numbers are
/// checked against the struct when it is attached, but a miss reads as
/// zero rather than panicking.
#[inline]
fn word_of(words: &[u32; SCALAR_WORDS], f: usize) -> u32 {
    words.get(f).copied().unwrap_or(0)
}

/// Reads field `index`'s value for [`read_scalar_words`]: into `words.1`
/// (the new words; `words.0` holds the baseline's), or an array's elements
/// into `out`.
#[inline(always)]
fn read_scalar_value<T: Fields, S: BitSource + ?Sized>(
    source: &mut S,
    out: &mut T,
    model: &Model<'_>,
    index: usize,
    words: (&[u32; SCALAR_WORDS], &mut [u32; SCALAR_WORDS]),
    (context, clocks): (&DeltaContext, &ClockMemo),
    scope: Scope,
) -> Result<(), BitError> {
    let (base, new) = words;
    let kind = out.field_kind(index);
    // One look-up of the field's coding for its reference and its value.
    let coding = model.coding(index);
    let value = (index, coding.replaced);
    let word = if kind.is_array() {
        let reference = reference_of(
            model,
            |f| word_of(base, f),
            |f| word_of(new, f),
            out,
            (index, coding, &kind),
            (context, clocks),
        );
        read_array_elements(
            source,
            out,
            model,
            (index, context.origin()),
            reference,
            scope,
        )?;
        // What a later prediction reads of this field, as the general
        // path's `out.word(index, 0)` would give it (the store skips
        // arrays: their elements are in `out` already).
        out.word(index, 0)
    } else if predicts(coding) {
        let reference = predicted_reference(
            model,
            |f| word_of(base, f),
            |f| word_of(new, f),
            out,
            (index, coding, &kind),
            (context, clocks),
        );
        let base = word_of(base, index);
        get_value(source, model, value, kind.element(), base, reference, scope)?
    } else {
        // Built here, beside the read, not through `reference_of`: the
        // baseline reference's constant parts (no prediction, no fold,
        // no tick) then fold into the value's decoding.
        let base = word_of(base, index);
        let reference = plain_reference(model, (index, coding), kind.element(), base);
        get_value(source, model, value, kind.element(), base, reference, scope)?
    };
    if let Some(slot) = new.get_mut(index) {
        *slot = word;
    }
    Ok(())
}

/// Reads a changed set coded as group patterns into `out` (empty on entry)
/// and returns its size.
///
/// The symbols are short (two or three groups a delta, a few bits each):
/// nearly always every one of them lies in one look-ahead window, and
/// [`grouped_set_in_window`] decodes them from it with no check per
/// symbol but the code's. Anything else (a word past the window, a
/// source that cannot look ahead, a group without a code, a malformed
/// set) takes [`get_grouped_set_stepwise`] from the start, which also
/// reports every error.
#[inline(always)]
fn get_grouped_set<S: BitSource + ?Sized>(
    source: &mut S,
    model: &NativeModel,
    set: PatternSet,
    fields: usize,
    out: &mut FieldSet,
) -> Result<usize, BitError> {
    if let (Some(window), Some(last_code)) =
        (source.peek_window(), model.code(Context::LastGroup(set)))
    {
        let codes = model.group_codes(set);
        if let Some((count, used)) = grouped_set_in_window(window, last_code, codes, fields, out) {
            source.skip_bits(used)?;
            return Ok(count);
        }
    }
    get_grouped_set_stepwise(source, model, set, fields, out)
}

/// Changed fields of each group pattern (its one bits): the set's size
/// summed a group at a time, where a population count of each word of the
/// set costs a dozen instructions without a CPU instruction for it.
const PATTERN_FIELDS: [u8; 256] = {
    let mut counts = [0u8; 256];
    let mut pattern = 0;
    while pattern < 256 {
        counts[pattern] = (pattern as u8).count_ones() as u8;
        pattern += 1;
    }
    counts
};

/// [`get_grouped_set`] from `window` (the source's next 32 bits and how
/// many bits are left, see [`BitSource::peek_window`]): the last group
/// with `last_code`, then each group's pattern with its code of `codes`,
/// into `out`. Returns the set's size and the bits it took, or `None`
/// (and `out` untouched) unless every word lies within the window and the
/// input, every group read has a code, and the set is within the struct's
/// `fields`: what [`get_grouped_set_stepwise`] then reads or refuses.
///
/// A word's symbol depends on its own bits only, so the words are decoded
/// one after the other from the window and checked against what is left
/// once, at the end: a word decoded from bits past it is never used.
#[inline(always)]
fn grouped_set_in_window(
    (window, left): (u32, usize),
    last_code: &SymbolCode,
    codes: &[SymbolCode],
    fields: usize,
    out: &mut FieldSet,
) -> Option<(usize, u32)> {
    // 64 bits wide, so a shift by a word's length (at most 32) is always
    // in range; the bits above the window's read as zeros.
    let mut bits = u64::from(window);
    let (last_group, mut used) = last_code.leaf(bits as u32)?;
    bits >>= used;
    let last_group = usize::from(last_group);
    let groups = fields.div_ceil(GROUP_FIELDS);
    if last_group > groups {
        return None;
    }
    let mut patterns = [0u8; MAX_GROUPS];
    let mut count = 0;
    for (code, slot) in codes.get(..last_group)?.iter().zip(&mut patterns) {
        let (pattern, len) = code.leaf(bits as u32)?;
        bits >>= len;
        used += len;
        *slot = pattern;
        count += usize::from(PATTERN_FIELDS[usize::from(pattern)]);
    }
    if used as usize > left.min(32) {
        return None;
    }
    // Only the struct's last group can name a field past its end.
    if last_group == groups && last_group > 0 {
        let group = last_group - 1;
        let pattern = patterns[group];
        if pattern != 0 && group * GROUP_FIELDS + 7 - pattern.leading_zeros() as usize >= fields {
            return None;
        }
    }
    // A group's pattern is a byte of the set, taken as it is.
    for (word, bytes) in out.iter_mut().zip(patterns.chunks_exact(8)) {
        let mut le = [0u8; 8];
        le.copy_from_slice(bytes);
        *word = u64::from_le_bytes(le);
    }
    Some((count, used))
}

/// [`get_grouped_set`] a symbol at a time, for what
/// [`grouped_set_in_window`] leaves: symbols are still decoded from one
/// look-ahead window ([`Lookahead`]) where they lie in it. Only the
/// struct's last group can name a field past its end, so only that one is
/// checked.
#[cold]
#[inline(never)]
fn get_grouped_set_stepwise<S: BitSource + ?Sized>(
    source: &mut S,
    model: &NativeModel,
    set: PatternSet,
    fields: usize,
    out: &mut FieldSet,
) -> Result<usize, BitError> {
    let position = source.bits_read();
    let groups = fields.div_ceil(GROUP_FIELDS);
    let mut ahead = Lookahead::new(source);
    let last_group = match model.code(Context::LastGroup(set)) {
        Some(code) => ahead.symbol(source, code)?,
        None => {
            ahead.consume(source)?;
            get_symbol(source, None, Context::LastGroup(set))?
        }
    };
    let last_group = usize::from(last_group);
    if last_group > groups {
        return Err(BitError::invalid(
            "changed-field groups",
            position,
            format!("group {last_group} is past the {groups} groups"),
        ));
    }
    let codes = model.group_codes(set);
    // Every group but the struct's last holds fields of the struct only.
    let within = last_group.min(groups.saturating_sub(1));
    for group in 0..within {
        let pattern = group_pattern(&mut ahead, source, codes, (set, group))?;
        // A group's pattern is a byte of the set, taken as it is.
        out[group / 8] |= u64::from(pattern) << (group % 8 * 8);
    }
    if last_group > within {
        let group = within;
        let at = ahead.position(source);
        let pattern = group_pattern(&mut ahead, source, codes, (set, group))?;
        if pattern != 0 {
            let highest = group * GROUP_FIELDS + 7 - pattern.leading_zeros() as usize;
            if highest >= fields {
                return Err(BitError::invalid(
                    "changed-field pattern",
                    at,
                    format!("field {highest} is past the last field ({fields})"),
                ));
            }
        }
        out[group / 8] |= u64::from(pattern) << (group % 8 * 8);
    }
    ahead.consume(source)?;
    let words = last_group.div_ceil(8).min(out.len());
    Ok(out[..words]
        .iter()
        .map(|word| word.count_ones() as usize)
        .sum())
}

/// The change pattern of group `group` of pattern set `set` (see
/// [`get_grouped_set`]).
#[inline(always)]
fn group_pattern<S: BitSource + ?Sized>(
    ahead: &mut Lookahead,
    source: &mut S,
    codes: &[SymbolCode],
    (set, group): (PatternSet, usize),
) -> Result<u8, BitError> {
    match codes.get(group) {
        Some(code) => ahead.symbol(source, code),
        None => {
            ahead.consume(source)?;
            get_symbol(source, None, Context::Group(set, group))
        }
    }
}

/// Up to 32 bits of a source seen ahead of reading them
/// ([`BitSource::peek_window`]), from which several short code words are
/// decoded and then consumed at once ([`Lookahead::consume`]). A word that
/// is not wholly within them (or a source that cannot look ahead) is read
/// from the source itself, after what the window decoded is consumed.
struct Lookahead {
    window: u32,
    /// Bits of `window` that are the source's.
    left: u32,
    /// Bits of `window` decoded but not yet consumed.
    used: u32,
}

impl Lookahead {
    #[inline(always)]
    fn new<S: BitSource + ?Sized>(source: &S) -> Self {
        let (window, left) = source.peek_window().unwrap_or((0, 0));
        Lookahead {
            window,
            left: left.min(32) as u32,
            used: 0,
        }
    }

    /// The next symbol of `code`: from the window when its word lies
    /// wholly within it, else (the rest of the window consumed) from the
    /// source, and the window taken afresh after it.
    #[inline(always)]
    fn symbol<S: BitSource + ?Sized>(
        &mut self,
        source: &mut S,
        code: &SymbolCode,
    ) -> Result<u8, BitError> {
        // A word's symbol depends on its own bits only: one no longer
        // than what is left was decoded from the source's bits.
        if let Some((symbol, len)) = code.leaf(self.window.checked_shr(self.used).unwrap_or(0)) {
            let end = self.used + len;
            if end <= self.left {
                self.used = end;
                return Ok(symbol);
            }
        }
        self.consume(source)?;
        let symbol = source.get_coded_symbol(code)?;
        *self = Lookahead::new(source);
        Ok(symbol)
    }

    /// Where the next symbol starts in the source.
    #[inline(always)]
    fn position<S: BitSource + ?Sized>(&self, source: &S) -> usize {
        source.bits_read() + self.used as usize
    }

    /// Consumes what the window decoded; the window is then empty.
    #[inline(always)]
    fn consume<S: BitSource + ?Sized>(&mut self, source: &mut S) -> Result<(), BitError> {
        if self.used > 0 {
            source.skip_bits(self.used)?;
        }
        self.window = 0;
        self.left = 0;
        self.used = 0;
        Ok(())
    }
}

/// Writes which elements of array field `field` (of `elements` elements)
/// changed in a delta of origin `origin`, bit `e` of `mask` for element
/// `e`: as a [`Context::Elements`] symbol when the model codes the field's
/// sets so ([`Model::element_sets`]), the set itself gap-coded after the
/// escape; otherwise gap-coded alone.
fn put_elements<S: BitSink + ?Sized>(
    sink: &mut S,
    model: &Model<'_>,
    (field, origin): (usize, Origin),
    elements: usize,
    mask: u32,
) -> Result<(), BitError> {
    let members = (0..elements.min(32)).filter(|e| mask & (1 << e) != 0);
    match model.element_sets(field, origin) {
        Some(sets) => {
            let symbol = elements_symbol(sets, mask);
            put_symbol(sink, model.codes, Context::Elements(field, origin), symbol)?;
            if symbol == ELEMENTS_ESCAPE {
                put_set(sink, members)?;
            }
            Ok(())
        }
        None => put_set(sink, members),
    }
}

/// Reads what [`put_elements`] wrote for array field `field` of
/// `elements` elements in a delta of origin `origin`: the changed
/// elements' mask. A dictionary entry naming an element past the array is
/// refused, as a corrupt model or stream would make it.
fn get_elements<S: BitSource + ?Sized>(
    source: &mut S,
    model: &Model<'_>,
    (field, origin): (usize, Origin),
    elements: usize,
) -> Result<u32, BitError> {
    let position = source.bits_read();
    let escaped = match model.element_sets(field, origin) {
        Some(sets) => {
            let symbol = get_symbol(source, model.codes, Context::Elements(field, origin))?;
            if symbol == ELEMENTS_ESCAPE {
                None
            } else {
                let mask = sets.get(usize::from(symbol) - 1).copied().ok_or_else(|| {
                    BitError::invalid(
                        "changed-element set",
                        position,
                        format!(
                            "symbol {symbol} is past the field's {} common sets",
                            sets.len()
                        ),
                    )
                })?;
                Some(mask)
            }
        }
        None => None,
    };
    let mask = match escaped {
        Some(mask) => mask,
        None => {
            let mut members = [0u16; 32];
            let count = get_set(source, elements.min(32), &mut members)?;
            members[..count]
                .iter()
                .fold(0u32, |mask, &member| mask | 1 << member)
        }
    };
    if elements < 32 && mask >> elements != 0 {
        return Err(BitError::invalid(
            "changed-element set",
            position,
            format!("set {mask:#x} names an element past the {elements} of the array"),
        ));
    }
    Ok(mask)
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

/// Writes whether an entity list has entries before its first entry, or
/// as an empty list's whole: a decision by the model's chance of entries
/// ([`NativeModel::list_start`]; one bit, one for entries, in a bit
/// stream), or without list-start counts the bit itself.
fn put_list_start<S: BitSink + ?Sized>(
    sink: &mut S,
    model: &NativeModel,
    entries: bool,
) -> Result<(), BitError> {
    match model.list_start() {
        Some(chance) => sink.put_decision(entries, chance),
        None => sink.put_bit(entries),
    }
}

/// Reads what [`put_list_start`] wrote: whether the list has entries.
fn get_list_start<S: BitSource + ?Sized>(
    source: &mut S,
    model: &NativeModel,
) -> Result<bool, BitError> {
    match model.list_start() {
        Some(chance) => source.get_decision(chance),
        None => source.get_bit(),
    }
}

/// The most bits [`put_list_start`] can take for `entries` in any sink:
/// one in a bit stream, what its chance prices it at in a range-coded
/// one (more for an unlikely answer), whichever is more.
fn list_start_bound_bits(model: &NativeModel, entries: bool) -> u32 {
    match model.list_start() {
        Some(chance) => {
            let (_, frequency) = chance.span(entries);
            (crate::range::PROB_BITS + 1 - frequency.max(1).ilog2()).max(1)
        }
        None => 1,
    }
}

/// Writes an entry's number and whether it is removed. With a model: one
/// symbol, the gap's class and the removed flag, in the context of the
/// previous number, then the gap's bits below its leading one; the first
/// entry is preceded by the list's start (see [`put_list_start`]). A present
/// entry's gap counts entity numbers after the previous entry; a removed
/// one's counts the entities the receiver holds there (see
/// [`HeldNumbers`]), since only those can be removed. Without a model: a
/// continue bit, the gap in numbers (exp-Golomb) and a removed bit.
///
/// Why the first entry's bit: whether a snapshot changes any entity at all
/// depends on the game and its tick rate far more than on anything a
/// trained count can carry over (half a 15 Hz duel's lists are empty, nine
/// in ten of a 30 Hz recording's), and a Huffman code cannot price an empty
/// list below the one bit Quake 3's end marker would take in our place.
fn put_number<S: BitSink + ?Sized>(
    sink: &mut S,
    model: Option<&NativeModel>,
    last: Option<u32>,
    number: u32,
    removed: Option<&dyn HeldNumbers>,
) -> Result<(), BitError> {
    let first_candidate = last.map_or(0, |last| last + 1);
    let gap = number - first_candidate;
    match model {
        Some(model) => {
            let gap = match removed {
                Some(held) if held.holds(number) => held.count_in(first_candidate, number),
                Some(_) => {
                    return Err(BitError::invalid(
                        "entity number",
                        sink.bits_written(),
                        format!("removes {number}, which the receiver does not hold"),
                    ))
                }
                None => gap,
            };
            let removed = removed.is_some();
            if last.is_none() {
                put_list_start(sink, model, true)?;
            }
            let code = ValueCode {
                symbol: number_symbol(gap, removed),
                ..ValueCode::classed(gap, 0)
            };
            put_symbol_and_extra(
                sink,
                Some(model),
                Context::EntityNumber(number_context(last)),
                code,
            )
        }
        None => {
            sink.put_bit(true)?;
            put_exp_golomb(sink, gap, 0)?;
            sink.put_bit(removed.is_some())
        }
    }
}

/// Writes one entity: its number and removed flag (see [`put_number`])
/// and, for a present entity, its changed fields.
pub(super) fn write_entity<T: Fields, S: BitSink + ?Sized>(
    given: Option<&NativeModel>,
    sink: &mut S,
    last: Option<u32>,
    number: u32,
    update: EntityUpdate<'_, T>,
    context: &DeltaContext,
    start: Option<StartChoice>,
) -> Result<bool, BitError> {
    // The changed fields are found once: to skip an unchanged entity and
    // to write a changed one.
    let mut set = [0u64; MAX_FIELDS.div_ceil(64)];
    let mut words = WordPair::new();
    let mut unpacked = false;
    if let EntityUpdate::Delta { base, new, force } = update {
        let (count, have_words) =
            new.changed_fields_and_words(base, &mut set, &mut words.new, &mut words.base);
        if count == 0 && !force {
            return Ok(false);
        }
        unpacked = have_words;
    }
    let numbers = HeldModel::of(given, update.state());
    let model = numbers.as_ref().map(HeldModel::get);
    match update {
        EntityUpdate::Removed { held, .. } => put_number(sink, model, last, number, Some(held.0))?,
        EntityUpdate::Delta { base, new, .. } => {
            put_number(sink, model, last, number, None)?;
            if let Some(start) = start {
                start.write(sink)?;
            }
            let words = unpacked.then_some(&words);
            write_changed_fields(sink, model, base, new, &set, words, context)?;
        }
    }
    sink.put_check_key(number as u16)?;
    Ok(true)
}

/// Ends an entity list whose last entry was `last`.
pub(super) fn write_entities_end<T: Fields, S: BitSink + ?Sized>(
    given: Option<&NativeModel>,
    sink: &mut S,
    last: Option<u32>,
    like: &T,
) -> Result<(), BitError> {
    match HeldModel::of(given, like) {
        Some(model) if last.is_some() => put_symbol(
            sink,
            Some(model.get()),
            Context::EntityNumber(number_context(last)),
            NUMBER_END,
        ),
        Some(model) => put_list_start(sink, model.get(), false),
        // Any list without a model: one bit.
        None => sink.put_bit(false),
    }
}

/// Bits of a present entry's number as [`put_number`] writes it after `last`.
pub(super) fn number_bits<T: Fields>(
    given: Option<&NativeModel>,
    like: &T,
    last: Option<u32>,
    number: u32,
) -> u32 {
    let gap = number - last.map_or(0, |last| last + 1);
    match HeldModel::of(given, like) {
        Some(model) => {
            model
                .get()
                .code(Context::EntityNumber(number_context(last)))
                .map_or(0, |code| code.bits(number_symbol(gap, false)))
                + (32 - gap.leading_zeros()).saturating_sub(1)
                + u32::from(last.is_none())
        }
        None => 2 + exp_golomb_bits(gap, 0),
    }
}

/// The most bits an entry's number can take, wherever it stands in a list.
pub(super) fn number_bound_bits<T: Fields>(
    given: Option<&NativeModel>,
    like: &T,
    number: u32,
) -> u32 {
    match HeldModel::of(given, like) {
        // The gap is at most the number itself.
        Some(model) => {
            let model = model.get();
            list_start_bound_bits(model, true)
                + model.longest_number_code()
                + (32 - number.leading_zeros()).saturating_sub(1)
        }
        None => 2 + exp_golomb_bits(number, 0),
    }
}

/// The most bits the end of a list can take, whatever its last entry.
pub(super) fn end_bound_bits<T: Fields>(given: Option<&NativeModel>, like: &T) -> u32 {
    match HeldModel::of(given, like) {
        // An empty list's end is its start.
        Some(model) => {
            let model = model.get();
            model
                .longest_number_end()
                .max(list_start_bound_bits(model, false))
        }
        None => 1,
    }
}

/// Reads an entry's number and, with a model, its removed flag (without
/// one the flag follows in the body); `None` at the end of the list.
///
/// The entity-list reader takes [`ListModel::read_entity_number`], which
/// resolves the model once per list.
pub(super) fn read_entity_number<T: Fields, S: BitSource + ?Sized>(
    given: Option<&NativeModel>,
    source: &mut S,
    last: Option<u32>,
    like: &T,
    held: &dyn HeldNumbers,
) -> Result<Option<(u32, Option<bool>)>, BitError> {
    let model = HeldModel::of(given, like);
    read_number_with(model.as_ref().map(HeldModel::get), source, last, held)
}

/// [`read_entity_number`] with its model resolved. Inlined into the list
/// reader, its caller per entry, with every error built out of line: a
/// list reads one number per entry plus its end, and the two calls'
/// register saves and the result copied between them were a quarter of a
/// number's cost.
#[inline(always)]
fn read_number_with<S: BitSource + ?Sized>(
    model: Option<&NativeModel>,
    source: &mut S,
    last: Option<u32>,
    held: &dyn HeldNumbers,
) -> Result<Option<(u32, Option<bool>)>, BitError> {
    let first_candidate = last.map_or(0, |last| last.saturating_add(1));
    let position = source.bits_read();
    let Some(model) = model else {
        return read_unmodelled_number(source, first_candidate, position);
    };
    if last.is_none() && !get_list_start(source, model)? {
        return Ok(None);
    }
    let (symbol, extra) = get_symbol_and_extra(
        source,
        Some(model),
        Context::EntityNumber(number_context(last)),
        &NUMBER_EXTRA_BITS,
    )?;
    if symbol >= NUMBER_END {
        if symbol == NUMBER_END && last.is_some() {
            return Ok(None);
        }
        return Err(not_a_number_symbol(position, symbol));
    }
    let gap = unclass(u32::from(symbol / 2), extra);
    if symbol % 2 == 1 {
        // A removal's gap counts held entities (see `put_number`).
        return match held.nth_from(first_candidate, gap) {
            Some(number) => Ok(Some((number, Some(true)))),
            None => Err(removal_past_held(position, gap, first_candidate)),
        };
    }
    match first_candidate.checked_add(gap) {
        Some(number) => Ok(Some((number, Some(false)))),
        None => Err(gap_overflow(position)),
    }
}

/// [`read_entity_number`] without a model: a continue bit and the gap in
/// numbers (exp-Golomb); the removed flag follows in the body.
#[inline(never)]
fn read_unmodelled_number<S: BitSource + ?Sized>(
    source: &mut S,
    first_candidate: u32,
    position: usize,
) -> Result<Option<(u32, Option<bool>)>, BitError> {
    if !source.get_bit()? {
        return Ok(None);
    }
    let gap = get_exp_golomb(source, 0)?;
    match first_candidate.checked_add(gap) {
        Some(number) => Ok(Some((number, None))),
        None => Err(gap_overflow(position)),
    }
}

/// The error for a number symbol past the number symbols.
#[cold]
#[inline(never)]
fn not_a_number_symbol(position: usize, symbol: u8) -> BitError {
    refused(
        "entity number",
        position,
        format_args!("symbol {symbol} is not a number symbol"),
    )
}

/// The error for a removal of a held entity the receiver does not hold.
#[cold]
#[inline(never)]
fn removal_past_held(position: usize, gap: u32, first_candidate: u32) -> BitError {
    refused(
        "entity number",
        position,
        format_args!(
            "removes the held entity {gap} places after {first_candidate}, \
             past the last one the receiver holds"
        ),
    )
}

/// The error for a gap past the largest number.
#[cold]
#[inline(never)]
fn gap_overflow(position: usize) -> BitError {
    refused(
        "entity number",
        position,
        format_args!("gap overflows 32 bits"),
    )
}

/// Reads an entity body after its number; `removed` is the flag the number
/// carried, if it did.
pub(super) fn read_entity_body<T: Fields, S: BitSource + ?Sized>(
    given: Option<&NativeModel>,
    source: &mut S,
    number: u32,
    removed: Option<bool>,
    out: &mut T,
    context: &DeltaContext,
) -> Result<EntityBody, BitError> {
    let removed = match removed {
        Some(removed) => removed,
        None => source.get_bit()?,
    };
    let body = if removed {
        EntityBody::Removed
    } else {
        match read_fields(given, source, out, context)? {
            0 => EntityBody::Unchanged,
            _ => EntityBody::Changed,
        }
    };
    source.expect_check_key(number as u16)?;
    Ok(body)
}

/// One entity list's model, resolved once for the whole list instead of
/// once per entry: the model its numbers are coded with (that of the
/// list's `like` value) and, when every body is coded with the same one
/// (the caller's, or the entity type's `'static` model), the view of it
/// that [`read_fields`] would otherwise build per delta, built at the
/// list's first delta (half the duel's lists have none).
pub(crate) struct ListModel<'m> {
    given: Option<&'m NativeModel>,
    /// The model of the numbers and of every body when it is the same
    /// for all: the given one or the type's `'static` one.
    fixed: Option<&'m NativeModel>,
    /// Else the numbers' counted model (a dynamic layout's): the bodies'
    /// is then looked up per delta, as each value's own.
    counted: Option<std::sync::Arc<NativeModel>>,
    /// The view of `fixed`, built at the first delta that codes with it.
    view: std::cell::OnceCell<Model<'m>>,
}

impl<'m> ListModel<'m> {
    /// The list model of `given` (`None`: the entity type's own) for a
    /// list of `like`'s type.
    #[inline]
    pub(crate) fn new<T: Fields>(given: Option<&'m NativeModel>, like: &T) -> Self {
        let (fixed, counted) = match HeldModel::of(given, like) {
            Some(HeldModel::Given(model)) => (Some(model), None),
            Some(HeldModel::Static(model)) => (Some(model), None),
            Some(HeldModel::Counted(model)) => (None, Some(model)),
            None => (None, None),
        };
        ListModel {
            given,
            fixed,
            counted,
            view: std::cell::OnceCell::new(),
        }
    }

    /// [`read_entity_number`] with this list's model.
    #[inline(always)]
    pub(crate) fn read_entity_number<S: BitSource + ?Sized>(
        &self,
        source: &mut S,
        last: Option<u32>,
        held: &dyn HeldNumbers,
    ) -> Result<Option<(u32, Option<bool>)>, BitError> {
        let model = self.fixed.or(self.counted.as_deref());
        read_number_with(model, source, last, held)
    }

    /// [`read_entity_body`] with this list's model view when `out` codes
    /// with it (always for a given model; for a static one, when `out`'s
    /// type has that one, which the check keeps exact for any `Fields`).
    /// Its steps (removed flag, fields, check key) are written out as
    /// [`read_entity_body`]'s are: one inline helper taking the fields'
    /// read as a closure, shared by both, cost the duel's native decode
    /// 1.07 M instructions (callgrind, `frame_profile decode-native 1`).
    pub(crate) fn read_entity_body<T: Fields, S: BitSource + ?Sized>(
        &self,
        source: &mut S,
        number: u32,
        removed: Option<bool>,
        out: &mut T,
        context: &DeltaContext,
    ) -> Result<EntityBody, BitError> {
        let removed = match removed {
            Some(removed) => removed,
            None => source.get_bit()?,
        };
        let body = if removed {
            EntityBody::Removed
        } else {
            let count = match self.fixed {
                Some(model) if self.given.is_some() || same_model(model, out.static_model()) => {
                    let view = self.view.get_or_init(|| Model::of(Some(model)));
                    read_fields_with(view, source, out, context)?
                }
                _ => read_fields(self.given, source, out, context)?,
            };
            match count {
                0 => EntityBody::Unchanged,
                _ => EntityBody::Changed,
            }
        };
        source.expect_check_key(number as u16)?;
        Ok(body)
    }
}

/// Whether `other` is `model`.
#[inline(always)]
fn same_model(model: &NativeModel, other: Option<&NativeModel>) -> bool {
    other.is_some_and(|other| std::ptr::eq(model, other))
}

#[cfg(test)]
mod zero_symbol_tests {
    use super::*;

    fn from_base() -> Reference<'static> {
        Reference {
            value: 0.0,
            is_base: true,
            grid_step: None,
            advanced: None,
            dictionary: &[],
            folded: false,
            tick: 0,
        }
    }

    #[test]
    fn a_modelled_reset_is_the_zero_symbol_whatever_the_baseline() {
        let int = ScalarKind::Signed { bits: 32 };
        for base in [1u32, 5, 0x7fff_ffff, 0x8000_0000] {
            let code = value_code(&int, base, 0, from_base(), true).unwrap();
            assert_eq!((code.symbol, code.extra_bits), (ZERO_SYMBOL, 0));
        }
        let float = ScalarKind::Q3Float;
        let reference = Reference {
            value: 900.0,
            ..from_base()
        };
        let code = value_code(&float, 900f32.to_bits(), 0, reference, true).unwrap();
        assert_eq!(code.symbol, ZERO_SYMBOL);
        // Negative zero is not the zero word: it keeps its class path.
        let code = value_code(&float, 900f32.to_bits(), (-0f32).to_bits(), reference, true);
        assert_ne!(code.unwrap().symbol, ZERO_SYMBOL);
        // Booleans send no value at all.
        assert_eq!(value_code(&ScalarKind::Bool, 1, 0, from_base(), true), None);
    }

    #[test]
    fn without_a_model_a_reset_takes_its_class_path() {
        let int = ScalarKind::Signed { bits: 32 };
        // zigzag(0 - 5) - 1 = 8: class 4, three raw bits.
        let code = value_code(&int, 5, 0, from_base(), false).unwrap();
        assert_eq!((code.symbol, code.extra, code.extra_bits), (4, 0, 3));
    }

    #[test]
    fn the_zero_symbol_is_refused_where_it_cannot_be_a_change() {
        let int = ScalarKind::Signed { bits: 32 };
        assert_eq!(zero_word(&int, 7, true, 0).unwrap(), 0);
        assert!(zero_word(&int, 0, true, 0).is_err(), "from a zero baseline");
        assert!(zero_word(&int, 7, false, 0).is_err(), "without a model");
    }
}

#[cfg(test)]
mod grid_path_tests {
    use super::*;
    use crate::bits::{BitReader, BitWriter};

    /// A float reference at `value` with a grid of `step`.
    fn on_grid(value: f32, step: f32) -> Reference<'static> {
        Reference {
            value,
            is_base: true,
            grid_step: Some(step),
            advanced: None,
            dictionary: &[],
            folded: false,
            tick: 0,
        }
    }

    /// Codes `new` against `reference` and decodes it again.
    fn round_trip(reference: Reference<'_>, new: f32) -> (ValueCode, f32) {
        let kind = ScalarKind::Q3Float;
        let base = reference.value.to_bits();
        let code = value_code(&kind, base, new.to_bits(), reference, true).unwrap();
        let mut buf = [0u8; 8];
        let mut writer = BitWriter::new(&mut buf);
        writer.put_bits(code.extra, code.extra_bits).unwrap();
        let bits = writer.bits_written();
        let mut reader = BitReader::with_bit_len(&buf, bits);
        // The decoder's table of extra bits agrees with the encoder's class.
        let table = &FLOAT_EXTRA_BITS;
        let count = u32::from(table[usize::from(code.symbol)]);
        assert_eq!(count, code.extra_bits);
        let extra = if count > 0 {
            reader.get_bits(count).unwrap()
        } else {
            0
        };
        let word = value_from_code(&kind, base, reference, code.symbol, extra, 0).unwrap();
        (code, f32::from_bits(word))
    }

    #[test]
    fn whole_values_on_a_fine_grid_take_the_integer_path() {
        // 3 units on a 2^-11 grid: 6144 steps (zigzag 12288, class 14), or the integer
        // 3 (zigzag 6, class 3, two raw bits).
        let (code, back) = round_trip(on_grid(1000.0, 2f32.powi(-11)), 1003.0);
        assert_eq!((code.symbol, code.extra_bits), (3, 2));
        assert_eq!(back, 1003.0);
        // A fraction on that grid keeps the grid path: 1024 steps, class 12.
        let (code, back) = round_trip(on_grid(1000.0, 2f32.powi(-11)), 1000.5);
        assert_eq!((code.symbol, code.extra_bits), (GRID_SYMBOLS + 12, 11));
        assert_eq!(back, 1000.5);
    }

    /// A velocity a wall clipped: what is left of `into` (the velocity
    /// into the wall) after Quake 3's overbounce, in floats.
    fn clipped(into: f32) -> f32 {
        into - into * 1.001
    }

    /// A float field's baseline `value` without a grid, as the reference.
    fn gridless(value: f32) -> Reference<'static> {
        Reference {
            value,
            ..on_grid(value, 1.0)
        }
        .without_grid()
    }

    impl Reference<'_> {
        fn without_grid(self) -> Self {
            Reference {
                grid_step: None,
                ..self
            }
        }
    }

    #[test]
    fn a_clipped_residue_takes_coarse_steps() {
        let (base, new) = (clipped(-97.28241), clipped(-116.3788));
        // Both residues keep their low nine (here ten) significand bits zero.
        assert_eq!((base.to_bits() & 0x3ff, new.to_bits() & 0x3ff), (0, 0));
        let plain = zigzag(ordered(new.to_bits()).wrapping_sub(ordered(base.to_bits()))) - 1;
        let (code, back) = round_trip(gridless(base), new);
        assert_eq!(back.to_bits(), new.to_bits());
        // Class 14 in coarse steps, where the plain distance is class 23:
        // nine raw bits fewer.
        assert_eq!(
            (code.symbol, code.extra_bits, 32 - plain.leading_zeros()),
            (GRID_SYMBOLS + 14, 13, 23)
        );
        // Positive residues, and from a baseline of another sign.
        let (code, back) = round_trip(gridless(base), clipped(3.25));
        assert_eq!(back, clipped(3.25));
        assert!(code.symbol >= GRID_SYMBOLS);
        let (_, back) = round_trip(gridless(clipped(3.25)), clipped(-0.5));
        assert_eq!(back, clipped(-0.5));
        // A float with low bits set keeps the plain path; so does a
        // residue of a field with a grid (its grid symbols are steps).
        let (code, _) = round_trip(gridless(base), f32::from_bits(new.to_bits() | 1));
        assert!((FLOAT_BITS_SYMBOLS..GRID_SYMBOLS).contains(&code.symbol));
        let (code, back) = round_trip(on_grid(base, 0.25), new);
        assert!((FLOAT_BITS_SYMBOLS..GRID_SYMBOLS).contains(&code.symbol));
        assert_eq!(back, new);
    }

    #[test]
    fn a_coarse_code_the_encoder_cannot_write_is_refused() {
        let kind = ScalarKind::Q3Float;
        let base = clipped(-97.28241);
        // Zero steps from a baseline that is itself coarse: the baseline,
        // which a changed value cannot be.
        let decode = |reference: Reference<'_>, symbol: u8, extra: u32| {
            value_from_code(&kind, base.to_bits(), reference, symbol, extra, 0)
        };
        assert!(decode(gridless(base), GRID_SYMBOLS, 0).is_err());
        // From another reference the same steps are a value.
        let predicted = Reference {
            is_base: false,
            ..gridless(base)
        };
        assert_eq!(decode(predicted, GRID_SYMBOLS, 0).unwrap(), base.to_bits());
        // Steps from 1.5 landing on 2.0, a whole number: the integral
        // path's, refused here.
        let half = Reference {
            is_base: false,
            ..gridless(1.5)
        };
        let to_two = (2.0f32.to_bits() - 1.5f32.to_bits()) >> COARSE_LOW_BITS;
        let class = 32 - (2 * to_two).leading_zeros();
        let extra = (2 * to_two) & low_mask(class - 1);
        assert!(decode(half, GRID_SYMBOLS + class as u8, extra).is_err());
        // Steps past the largest float pattern are refused, not wrapped.
        let top = Reference {
            is_base: false,
            ..gridless(f32::from_bits(0x7fff_fe00))
        };
        assert!(decode(top, GRID_SYMBOLS + 2, 0).is_err());
    }

    #[test]
    fn a_coarse_grid_keeps_whole_values_on_the_grid() {
        // On a grid of 2, 6 units are 3 steps (zigzag 6) but 6 integers
        // (zigzag 12): the grid is cheaper. On a grid of 1 both tie, and
        // the grid is kept.
        let (code, back) = round_trip(on_grid(100.0, 2.0), 106.0);
        assert_eq!(code.symbol, GRID_SYMBOLS + 3);
        assert_eq!(back, 106.0);
        let (code, _) = round_trip(on_grid(100.0, 1.0), 106.0);
        assert_eq!(code.symbol, GRID_SYMBOLS + 4);
    }
}

#[cfg(test)]
mod whole_tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn whole_float_edges() {
        for (x, whole) in [
            (0.0f32, true),
            (-0.0, true),
            (1.0, true),
            (-3.0, true),
            (0.5, false),
            (1.5, false),
            (8_388_607.5, false),
            (8_388_608.0, true),
            (1e30, true),
            (f32::MIN_POSITIVE, false),
            (f32::from_bits(1), false),
            (f32::INFINITY, true),
            (f32::NAN, false),
        ] {
            assert_eq!(whole_float_bits(x.to_bits()), whole, "{x}");
        }
    }

    proptest! {
        #[test]
        fn whole_float_bits_agree_with_rounding(bits in any::<u32>()) {
            let x = f32::from_bits(bits);
            if x.is_finite() {
                prop_assert_eq!(whole_float_bits(bits), rounding::is_whole(x));
            }
        }

        /// The whole-float shortcut of `predict` rounds like the rounding
        /// it skips, for every float (NaNs, infinities and the saturating
        /// magnitudes among them).
        #[test]
        fn a_prediction_is_the_rounded_float(bits in any::<u32>()) {
            let x = f32::from_bits(bits);
            prop_assert_eq!(predict(x), rounding::round(x) as i32);
        }
    }

    #[test]
    fn predictions_at_the_edges() {
        for (x, integer) in [
            (2.5f32, 3),
            (-2.5, -3),
            (-0.4, 0),
            (-0.0, 0),
            (7.0, 7),
            (-7.0, -7),
            (8_388_609.0, 8_388_609),
            (2_147_483_648.0, i32::MAX),
            (-2_147_483_648.0, i32::MIN),
            (1e30, i32::MAX),
            (f32::NEG_INFINITY, i32::MIN),
            (f32::NAN, 0),
        ] {
            assert_eq!(predict(x), integer, "{x}");
        }
    }
}

#[cfg(test)]
mod fold_and_tick_tests {
    use super::*;

    #[test]
    fn a_clock_reading_is_kept_for_its_field_and_words_only() {
        let memo = ClockMemo::new();
        let calls = Cell::new(0);
        let read = |field, base, new, ms| {
            memo.elapsed_ms(field, base, new, || {
                calls.set(calls.get() + 1);
                ms
            })
        };
        assert_eq!(read(4, 100, 150, 50.0), 50.0);
        // Kept: the same field and words are not worked out again.
        assert_eq!(read(4, 100, 150, -1.0), 50.0);
        assert_eq!(calls.get(), 1);
        // Another new word, another field: worked out again.
        assert_eq!(read(4, 100, 175, 75.0), 75.0);
        assert_eq!(read(5, 100, 175, 9.0), 9.0);
        assert_eq!(calls.get(), 3);
        // The encoder's way keeps nothing.
        assert_eq!(Unkept.elapsed_ms(4, 100, 150, || 1.0), 1.0);
        assert_eq!(Unkept.elapsed_ms(4, 100, 150, || 2.0), 2.0);
    }

    #[test]
    fn a_field_past_the_model_is_coded_as_the_default_says() {
        assert_eq!(UNCODED, FieldCoding::default());
        let model = Model::of(None);
        assert_eq!(*model.coding(3), FieldCoding::default());
    }

    #[test]
    fn a_fold_is_the_distance_from_the_size_and_the_sign() {
        assert_eq!(fold(329, 329), 0);
        assert_eq!(fold(-329, 329), 1);
        assert_eq!(fold(-328, 329), 3);
        assert_eq!(fold(331, 329), 8);
        assert_eq!(fold(0, 5), 18);
        for size in [0, 1, 329, 900, 65_535] {
            for integer in -70_000..70_000 {
                assert_eq!(unfold(fold(integer, size), size), Some(integer));
            }
        }
        // No value folds to a negative size or to a negative zero.
        assert_eq!(unfold(2 * zigzag(-6) + 1, 5), None);
        assert_eq!(unfold(2 * zigzag(-5) + 1, 5), None);
        assert_eq!(unfold(2 * zigzag(-5), 5), Some(0));
    }

    fn ticked(tick: u32, advanced: u32) -> Reference<'static> {
        Reference {
            value: 0.0,
            is_base: true,
            grid_step: None,
            advanced: Some(advanced),
            dictionary: &[],
            folded: false,
            tick,
        }
    }

    #[test]
    fn whole_ticks_take_the_grid_symbols_and_zero_ticks_is_refused() {
        let kind = ScalarKind::Unsigned { bits: 32 };
        let code = |new: u32| value_code(&kind, 0, new, ticked(50, 1000), true).unwrap();
        // Three ticks early, then 33 ms early (off the ticks).
        assert_eq!((code(850).symbol, code(850).extra), (GRID_SYMBOLS + 3, 1));
        assert_eq!(code(967).symbol, 7);
        assert_eq!(u32::from(TICK_EXTRA_BITS[usize::from(GRID_SYMBOLS + 3)]), 2);
        let decode = |symbol, extra| value_from_code(&kind, 0, ticked(50, 1000), symbol, extra, 0);
        assert_eq!(decode(GRID_SYMBOLS + 3, 1).unwrap(), 850);
        assert!(
            decode(GRID_SYMBOLS, 0).is_err(),
            "zero ticks is the plain path's"
        );
        // Without a tick the grid symbols are no integer's.
        assert!(value_from_code(&kind, 0, ticked(0, 1000), GRID_SYMBOLS + 3, 1, 0).is_err());
    }
}
