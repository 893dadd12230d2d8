//! Rounding of `f32` without a library call.
//!
//! Baseline x86-64 has no instruction for `f32::round` or `f32::trunc`
//! (SSE4.1's `roundss` is not assumed), so each is a call into the
//! compiler's runtime; the native codec rounds on every float it codes.
//! Conversions to integers are single instructions, and for the magnitudes
//! where rounding changes anything they give the same results exactly.

/// `x.round()`: half away from zero; NaN, infinities and every value of
/// magnitude 2^23 or more (already integers) come back unchanged.
#[inline]
pub(crate) fn round(x: f32) -> f32 {
    // NaN fails the comparison too, and comes back unchanged.
    if x.is_nan() || x.abs() >= 8_388_608.0 {
        return x;
    }
    // In f64 the half is added exactly, so no value just below a half
    // rounds up; the result is at most 2^23, exact in an f32.
    let magnitude = (f64::from(x.abs()) + 0.5) as i64;
    (magnitude as f32).copysign(x)
}

/// Whether `x` is a whole number (`x.trunc() == x`), for finite `x`.
#[inline]
pub(crate) fn is_whole(x: f32) -> bool {
    if x.is_nan() || x.abs() >= 8_388_608.0 {
        return x.is_finite();
    }
    (x as i32) as f32 == x
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn edge_values_round_as_the_standard_library_does() {
        let edges = [
            0.0f32,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.5,
            0.49999997,
            -0.49999997,
            8_388_607.5,
            -8_388_607.5,
            8_388_608.0,
            16_777_217.0,
            1.0e30,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1.0e-45,
        ];
        for x in edges {
            assert_eq!(round(x).to_bits(), x.round().to_bits(), "{x}");
            assert_eq!(is_whole(x), x.is_finite() && x.trunc() == x, "{x}");
        }
        assert!(round(f32::NAN).is_nan());
        assert!(!is_whole(f32::NAN));
    }

    proptest! {
        #[test]
        fn every_float_rounds_as_the_standard_library_does(bits in any::<u32>()) {
            let x = f32::from_bits(bits);
            if x.is_nan() {
                prop_assert!(round(x).is_nan());
            } else {
                prop_assert_eq!(round(x).to_bits(), x.round().to_bits());
            }
            prop_assert_eq!(is_whole(x), x.is_finite() && x.trunc() == x);
        }

        #[test]
        fn small_floats_round_as_the_standard_library_does(x in -1.0e7f32..1.0e7) {
            prop_assert_eq!(round(x).to_bits(), x.round().to_bits());
            prop_assert_eq!(is_whole(x), x.trunc() == x);
        }
    }
}
