//! Field kinds: how one networked value is represented on the wire.
//!
//! Every scalar travels through the codecs as a 32-bit *word*: the value's
//! wire representation, already reduced to what the kind keeps (an n-bit
//! integer is masked to n bits, a quantized float is its grid index). Two
//! values are "the same" for delta purposes exactly when their words are
//! equal, so a change the wire cannot show is never sent.

use serde::{Deserialize, Serialize};

use crate::bits::{low_mask, sign_extend};

/// Bias and width of Quake 3's "integral float" form: a float that is an
/// integer in `[-4096, 4095]` is sent as `value + 4096` in 13 bits.
pub const Q3_FLOAT_INT_BITS: u32 = 13;
/// See [`Q3_FLOAT_INT_BITS`].
pub const Q3_FLOAT_INT_BIAS: i32 = 1 << (Q3_FLOAT_INT_BITS - 1);

/// The kind of one scalar value (or of each element of an array field).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum ScalarKind {
    /// An unsigned integer of `bits` bits (1..=32), zero-extended on decode.
    Unsigned {
        /// Width on the wire.
        bits: u8,
    },
    /// A signed integer of `bits` bits (1..=32), sign-extended on decode.
    Signed {
        /// Width on the wire.
        bits: u8,
    },
    /// A single bit.
    Bool,
    /// Quake 3's float: 13 bits when integral and in `[-4096, 4095]`, else 32
    /// raw bits. `-0.0` is sent as `0.0`, as Quake 3 does.
    Q3Float,
    /// A float clamped to `[min, max]` and sent as one of `2^bits` evenly
    /// spaced steps. `bits` is 1..=16 and a step must span several `f32`
    /// ulps of the range's ends, so every decoded value quantizes back to the
    /// same step (otherwise an unchanged value could look changed).
    Quantized {
        /// Lowest representable value.
        min: f32,
        /// Highest representable value.
        max: f32,
        /// Width on the wire.
        bits: u8,
    },
}

/// What kind of Rust value a [`ScalarKind`] accepts; checked at compile time
/// by [`net_struct!`](crate::net_struct).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueClass {
    /// Integer types (`u8`..`u32`, `i8`..`i32`).
    Integer,
    /// `f32`.
    Float,
    /// `bool`.
    Bool,
}

impl ScalarKind {
    /// Bits of the plain (non-delta) encoding of a word: the integer width,
    /// 1 for bools, 32 for Quake 3 floats.
    pub const fn wire_bits(&self) -> u32 {
        match *self {
            ScalarKind::Unsigned { bits }
            | ScalarKind::Signed { bits }
            | ScalarKind::Quantized { bits, .. } => bits as u32,
            ScalarKind::Bool => 1,
            ScalarKind::Q3Float => 32,
        }
    }

    /// Whether the kind's parameters are in range (checked at compile time).
    pub const fn is_valid(&self) -> bool {
        match *self {
            ScalarKind::Unsigned { bits } | ScalarKind::Signed { bits } => bits >= 1 && bits <= 32,
            ScalarKind::Bool | ScalarKind::Q3Float => true,
            ScalarKind::Quantized { min, max, bits } => {
                if !(bits >= 1 && bits <= 16 && min.is_finite() && max.is_finite() && min < max) {
                    return false;
                }
                let step = (max as f64 - min as f64) / ((1u32 << bits) - 1) as f64;
                let magnitude = if min.abs() > max.abs() {
                    min.abs()
                } else {
                    max.abs()
                } as f64;
                // An f32 ulp at `magnitude` is at most magnitude * 2^-23; ask for 4 of them.
                step > magnitude * (4.0 / 8_388_608.0)
            }
        }
    }

    /// The Rust value class this kind stores.
    pub const fn value_class(&self) -> ValueClass {
        match self {
            ScalarKind::Unsigned { .. } | ScalarKind::Signed { .. } => ValueClass::Integer,
            ScalarKind::Bool => ValueClass::Bool,
            ScalarKind::Q3Float | ScalarKind::Quantized { .. } => ValueClass::Float,
        }
    }

    /// Whether the word is an integer whose natural neighbour is word ± 1
    /// (so delta coding of words makes sense), as opposed to float bits.
    pub const fn is_float_bits(&self) -> bool {
        matches!(self, ScalarKind::Q3Float)
    }

    /// Reduces a raw value (see [`Scalar`]) to its word.
    #[inline]
    pub fn to_word(&self, raw: u32) -> u32 {
        match *self {
            ScalarKind::Unsigned { bits } | ScalarKind::Signed { bits } => {
                raw & low_mask(bits as u32)
            }
            ScalarKind::Bool => (raw != 0) as u32,
            ScalarKind::Q3Float => {
                // -0.0 and 0.0 are one value on Quake 3's wire.
                if raw == 0x8000_0000 {
                    0
                } else {
                    raw
                }
            }
            ScalarKind::Quantized { min, max, bits } => {
                let steps = low_mask(bits as u32) as f64;
                let value = f32::from_bits(raw);
                // NaN clamps to the minimum rather than poisoning the index.
                let clamped = if value.is_nan() {
                    min
                } else {
                    value.clamp(min, max)
                } as f64;
                (((clamped - min as f64) / (max as f64 - min as f64)) * steps).round() as u32
            }
        }
    }

    /// Expands a word back to a raw value (see [`Scalar`]).
    #[inline]
    pub fn from_word(&self, word: u32) -> u32 {
        match *self {
            ScalarKind::Unsigned { bits } => word & low_mask(bits as u32),
            ScalarKind::Signed { bits } => sign_extend(word, bits as u32) as u32,
            ScalarKind::Bool => (word & 1 != 0) as u32,
            ScalarKind::Q3Float => word,
            ScalarKind::Quantized { min, max, bits } => {
                let steps = low_mask(bits as u32);
                let index = word.min(steps);
                let value = if index == steps {
                    max
                } else {
                    (min as f64 + (max as f64 - min as f64) * (index as f64 / steps as f64)) as f32
                };
                value.to_bits()
            }
        }
    }

    /// Whether `word` is a value [`ScalarKind::to_word`] could have produced;
    /// decoders reject anything else.
    pub fn word_in_range(&self, word: u32) -> bool {
        match *self {
            ScalarKind::Q3Float => word != 0x8000_0000,
            _ => word <= low_mask(self.wire_bits()),
        }
    }
}

/// The kind of a field: a scalar, or a fixed array of scalars sent with a
/// per-element change mask (Quake 3's 16-entry stats arrays).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum FieldKind {
    /// One value.
    Scalar(ScalarKind),
    /// `len` values (1..=32) of one kind.
    Array {
        /// Kind of every element.
        element: ScalarKind,
        /// Number of elements; also the width of the change mask.
        len: u8,
    },
}

impl FieldKind {
    /// Number of scalar elements (1 for a scalar).
    pub const fn elements(&self) -> usize {
        match self {
            FieldKind::Scalar(_) => 1,
            FieldKind::Array { len, .. } => *len as usize,
        }
    }

    /// The kind of each element.
    pub const fn element(&self) -> &ScalarKind {
        match self {
            FieldKind::Scalar(kind) => kind,
            FieldKind::Array { element, .. } => element,
        }
    }

    /// Whether this is an array field.
    pub const fn is_array(&self) -> bool {
        matches!(self, FieldKind::Array { .. })
    }

    /// Whether the parameters are in range.
    pub const fn is_valid(&self) -> bool {
        match self {
            FieldKind::Scalar(kind) => kind.is_valid(),
            FieldKind::Array { element, len } => element.is_valid() && *len >= 1 && *len <= 32,
        }
    }

    /// Whether a Rust field of class `class` with `elements` scalars
    /// (1 for a non-array) can hold this kind.
    pub const fn accepts(&self, class: ValueClass, elements: usize, is_array: bool) -> bool {
        let class_ok = matches!(
            (self.element().value_class(), class),
            (ValueClass::Integer, ValueClass::Integer)
                | (ValueClass::Float, ValueClass::Float)
                | (ValueClass::Bool, ValueClass::Bool)
        );
        class_ok && self.is_array() == is_array && self.elements() == elements
    }
}

/// An unsigned integer field of `bits` bits.
pub const fn unsigned(bits: u8) -> FieldKind {
    FieldKind::Scalar(ScalarKind::Unsigned { bits })
}

/// A signed integer field of `bits` bits.
pub const fn signed(bits: u8) -> FieldKind {
    FieldKind::Scalar(ScalarKind::Signed { bits })
}

/// A one-bit field.
pub const fn boolean() -> FieldKind {
    FieldKind::Scalar(ScalarKind::Bool)
}

/// A Quake 3 float field.
pub const fn q3_float() -> FieldKind {
    FieldKind::Scalar(ScalarKind::Q3Float)
}

/// A quantized float field.
pub const fn quantized(min: f32, max: f32, bits: u8) -> FieldKind {
    FieldKind::Scalar(ScalarKind::Quantized { min, max, bits })
}

/// An array field of `len` elements, each of the scalar kind `element`
/// (itself written with one of the scalar constructors, e.g. `array(signed(16), 16)`).
pub const fn array(element: FieldKind, len: u8) -> FieldKind {
    match element {
        FieldKind::Scalar(element) => FieldKind::Array { element, len },
        // Nested arrays are not a wire form; an invalid length makes the
        // compile-time validity check reject the declaration.
        FieldKind::Array { element, .. } => FieldKind::Array { element, len: 0 },
    }
}

/// A Rust scalar type that can be a networked field: converts to and from a
/// 32-bit raw value (integers as two's complement, floats as IEEE bits).
pub trait Scalar: Copy {
    /// The value class, matched against the field kind at compile time.
    const CLASS: ValueClass;
    /// The raw 32 bits.
    fn to_raw(self) -> u32;
    /// Back from raw bits (truncating to the type's width).
    fn from_raw(raw: u32) -> Self;
}

macro_rules! integer_scalar {
    ($($t:ty => $wide:ty),*) => {$(
        impl Scalar for $t {
            const CLASS: ValueClass = ValueClass::Integer;
            #[inline]
            fn to_raw(self) -> u32 {
                // Widen through the same-signed 32-bit type so negative
                // values keep their sign bits.
                self as $wide as u32
            }
            #[inline]
            fn from_raw(raw: u32) -> Self {
                raw as $t
            }
        }
    )*};
}
integer_scalar!(u8 => u32, u16 => u32, u32 => u32, i8 => i32, i16 => i32, i32 => i32);

impl Scalar for bool {
    const CLASS: ValueClass = ValueClass::Bool;
    #[inline]
    fn to_raw(self) -> u32 {
        self as u32
    }
    #[inline]
    fn from_raw(raw: u32) -> Self {
        raw != 0
    }
}

impl Scalar for f32 {
    const CLASS: ValueClass = ValueClass::Float;
    #[inline]
    fn to_raw(self) -> u32 {
        self.to_bits()
    }
    #[inline]
    fn from_raw(raw: u32) -> Self {
        f32::from_bits(raw)
    }
}

/// A Rust field type: a [`Scalar`] or a fixed array of them. The generated
/// accessors of [`net_struct!`](crate::net_struct) go through this trait.
pub trait FieldValue {
    /// Value class of the scalars.
    const CLASS: ValueClass;
    /// Number of scalars.
    const ELEMENTS: usize;
    /// Whether this is an array type.
    const IS_ARRAY: bool;
    /// The word of element `element` under `kind`.
    fn word(&self, kind: &ScalarKind, element: usize) -> u32;
    /// Stores a word into element `element` under `kind`.
    fn set_word(&mut self, kind: &ScalarKind, element: usize, word: u32);
}

impl<T: Scalar> FieldValue for T {
    const CLASS: ValueClass = T::CLASS;
    const ELEMENTS: usize = 1;
    const IS_ARRAY: bool = false;
    #[inline]
    fn word(&self, kind: &ScalarKind, _element: usize) -> u32 {
        kind.to_word(self.to_raw())
    }
    #[inline]
    fn set_word(&mut self, kind: &ScalarKind, _element: usize, word: u32) {
        *self = T::from_raw(kind.from_word(word));
    }
}

impl<T: Scalar, const N: usize> FieldValue for [T; N] {
    const CLASS: ValueClass = T::CLASS;
    const ELEMENTS: usize = N;
    const IS_ARRAY: bool = true;
    #[inline]
    fn word(&self, kind: &ScalarKind, element: usize) -> u32 {
        self.get(element).map_or(0, |v| kind.to_word(v.to_raw()))
    }
    #[inline]
    fn set_word(&mut self, kind: &ScalarKind, element: usize, word: u32) {
        if let Some(slot) = self.get_mut(element) {
            *slot = T::from_raw(kind.from_word(word));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_words_sign_extend_on_the_way_back() {
        let kind = ScalarKind::Signed { bits: 16 };
        let word = kind.to_word((-3i32) as u32);
        assert_eq!(word, 0xFFFD);
        assert_eq!(kind.from_word(word) as i32, -3);
    }

    #[test]
    fn quantized_ends_are_exact() {
        let kind = ScalarKind::Quantized {
            min: -10.0,
            max: 30.0,
            bits: 8,
        };
        assert_eq!(kind.to_word((-10.0f32).to_bits()), 0);
        assert_eq!(kind.to_word(30.0f32.to_bits()), 255);
        assert_eq!(kind.to_word(99.0f32.to_bits()), 255);
        assert_eq!(f32::from_bits(kind.from_word(255)), 30.0);
        assert_eq!(f32::from_bits(kind.from_word(0)), -10.0);
        // Re-quantizing a decoded value is the identity.
        for word in 0..=255 {
            assert_eq!(kind.to_word(kind.from_word(word)), word);
        }
    }

    #[test]
    fn negative_zero_is_zero_for_q3_floats() {
        assert_eq!(ScalarKind::Q3Float.to_word((-0.0f32).to_bits()), 0);
    }

    #[test]
    fn kinds_check_rust_types() {
        assert!(signed(16).accepts(ValueClass::Integer, 1, false));
        assert!(!q3_float().accepts(ValueClass::Integer, 1, false));
        assert!(array(signed(16), 16).accepts(ValueClass::Integer, 16, true));
        assert!(!array(signed(16), 16).accepts(ValueClass::Integer, 8, true));
        assert!(!array(array(signed(4), 2), 2).is_valid());
        assert!(!unsigned(0).is_valid());
        assert!(!quantized(1.0, 1.0, 8).is_valid());
        assert!(!quantized(1000.0, 1001.0, 16).is_valid());
        assert!(quantized(-4096.0, 4096.0, 16).is_valid());
    }
}
