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

/// `x.round() as i64` (half away from zero, saturating, NaN to 0)
/// without the library call `f64::round` takes on baseline x86-64.
#[inline]
pub(crate) fn round_to_i64(x: f64) -> i64 {
    // From 2^52 on every f64 is whole; there, and for NaN, the saturating
    // conversion gives what `x.round() as i64` gives.
    if x.is_nan() || x.abs() >= 4_503_599_627_370_496.0 {
        return x as i64;
    }
    // Below 2^52 the truncation and the fraction are exact; the fraction
    // says which way to round, selected, not branched on.
    let truncated = x as i64;
    let fraction = x - truncated as f64;
    truncated + i64::from(fraction >= 0.5) - i64::from(fraction <= -0.5)
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

    #[test]
    fn edge_values_round_to_integers_as_the_standard_library_does() {
        let edges = [
            0.0f64,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.5,
            -2.5,
            0.49999999999999994,
            -0.49999999999999994,
            4_503_599_627_370_495.5,
            -4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            9.3e18,
            -9.3e18,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        for x in edges {
            assert_eq!(round_to_i64(x), x.round() as i64, "{x}");
        }
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
        fn every_double_rounds_to_an_integer_as_the_standard_library_does(bits in any::<u64>()) {
            let x = f64::from_bits(bits);
            prop_assert_eq!(round_to_i64(x), x.round() as i64);
        }

        #[test]
        fn small_doubles_round_to_integers_as_the_standard_library_does(x in -1.0e7f64..1.0e7) {
            prop_assert_eq!(round_to_i64(x), x.round() as i64);
            prop_assert_eq!(round_to_i64(x + 0.5), (x + 0.5).round() as i64);
        }

        #[test]
        fn small_floats_round_as_the_standard_library_does(x in -1.0e7f32..1.0e7) {
            prop_assert_eq!(round(x).to_bits(), x.round().to_bits());
            prop_assert_eq!(is_whole(x), x.trunc() == x);
        }
    }
}
