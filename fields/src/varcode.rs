//! Variable-length integer codes used by the native codec.
//!
//! All of them are prefix codes built on [`BitSink`]/[`BitSource`], so they
//! work over raw bits or Huffman streams alike, and every decoder bounds how
//! far it reads before failing: a run of zero bits in corrupt input is an
//! error after at most 33 bits, never a loop.

use crate::bits::{low_mask, BitSink, BitSource};
use crate::error::BitError;

/// Maps signed to unsigned so small magnitudes get small codes:
/// 0, -1, 1, -2, 2 … become 0, 1, 2, 3, 4 ….
#[inline]
pub fn zigzag(value: i32) -> u32 {
    ((value << 1) ^ (value >> 31)) as u32
}

/// Inverse of [`zigzag`].
#[inline]
pub fn unzigzag(value: u32) -> i32 {
    ((value >> 1) as i32) ^ -((value & 1) as i32)
}

/// Writes an order-`k` exponential-Golomb code of `value` (`k` ≤ 8):
/// `n` zero bits, a one bit, then `n + k` low bits of `value + 2^k`.
pub fn put_exp_golomb<S: BitSink + ?Sized>(
    sink: &mut S,
    value: u32,
    k: u32,
) -> Result<(), BitError> {
    let shifted = value as u64 + (1u64 << k);
    let width = 63 - shifted.leading_zeros(); // bits below the leading one
    let zeros = width - k;
    put_zeros(sink, zeros)?;
    sink.put_bit(true)?;
    put_wide(sink, shifted & ((1u64 << width) - 1), width)
}

/// Length in bits of [`put_exp_golomb`]'s code of `value`.
pub fn exp_golomb_bits(value: u32, k: u32) -> u32 {
    let shifted = value as u64 + (1u64 << k);
    let width = 63 - shifted.leading_zeros();
    2 * width - k + 1
}

/// Reads an order-`k` exponential-Golomb code written by [`put_exp_golomb`].
pub fn get_exp_golomb<S: BitSource + ?Sized>(source: &mut S, k: u32) -> Result<u32, BitError> {
    let position = source.bits_read();
    let mut zeros = 0u32;
    // The prefix in one step when the source can look ahead and the whole
    // valid prefix is there; anything else takes the bit-by-bit loop below,
    // which also reports every error.
    if let Some((window, left)) = source.peek_window() {
        let prefix = window.trailing_zeros();
        if prefix < 32 && prefix + k <= 32 && (prefix as usize) < left {
            // A short code (most are) whole from the same window: prefix,
            // one, then `prefix + k` bits, at most 32 bits in all.
            let len = 2 * prefix + k + 1;
            if len <= 32 && len as usize <= left {
                let low = (u64::from(window) >> (prefix + 1)) & ((1u64 << (prefix + k)) - 1);
                source.skip_bits(len)?;
                // Below 2^32: prefix + k < 32 here.
                return Ok((((1u64 << (prefix + k)) | low) - (1u64 << k)) as u32);
            }
            source.skip_bits(prefix + 1)?;
            return finish_exp_golomb(source, prefix, k, position);
        }
    }
    while !source.get_bit()? {
        zeros += 1;
        // value + 2^k < 2^33 for any u32 value, so more zeros are corrupt.
        if zeros + k > 32 {
            return Err(BitError::invalid(
                "exp-Golomb code",
                position,
                "prefix too long",
            ));
        }
    }
    finish_exp_golomb(source, zeros, k, position)
}

/// The rest of an exp-Golomb code after its prefix of `zeros` zeros and the one.
#[inline]
fn finish_exp_golomb<S: BitSource + ?Sized>(
    source: &mut S,
    zeros: u32,
    k: u32,
    position: usize,
) -> Result<u32, BitError> {
    let width = zeros + k;
    let low = get_wide(source, width)?;
    let shifted = (1u64 << width) | low;
    u32::try_from(shifted - (1u64 << k))
        .map_err(|_| BitError::invalid("exp-Golomb code", position, "value exceeds 32 bits"))
}

/// Writes `value` as its bit length (exp-Golomb order 1) followed by the
/// bits below its leading one. Cheap for small values, at most 43 bits for
/// any `u32`; the class is what a future per-field entropy model would code.
pub fn put_classed<S: BitSink + ?Sized>(sink: &mut S, value: u32) -> Result<(), BitError> {
    let class = 32 - value.leading_zeros();
    put_exp_golomb(sink, class, 1)?;
    if class >= 2 {
        sink.put_bits(value & low_mask(class - 1), class - 1)?;
    }
    Ok(())
}

/// Reads a value written by [`put_classed`].
pub fn get_classed<S: BitSource + ?Sized>(source: &mut S) -> Result<u32, BitError> {
    let position = source.bits_read();
    let class = get_exp_golomb(source, 1)?;
    match class {
        0 => Ok(0),
        1 => Ok(1),
        2..=32 => Ok((1u32 << (class - 1)) | source.get_bits(class - 1)?),
        _ => Err(BitError::invalid(
            "value class",
            position,
            format!("class {class} exceeds 32 bits"),
        )),
    }
}

fn put_zeros<S: BitSink + ?Sized>(sink: &mut S, mut count: u32) -> Result<(), BitError> {
    while count > 0 {
        let chunk = count.min(32);
        sink.put_bits(0, chunk)?;
        count -= chunk;
    }
    Ok(())
}

fn put_wide<S: BitSink + ?Sized>(sink: &mut S, value: u64, width: u32) -> Result<(), BitError> {
    if width == 0 {
        return Ok(());
    }
    let low = width.min(32);
    sink.put_bits(value as u32, low)?;
    if width > 32 {
        sink.put_bits((value >> 32) as u32, width - 32)?;
    }
    Ok(())
}

fn get_wide<S: BitSource + ?Sized>(source: &mut S, width: u32) -> Result<u64, BitError> {
    if width == 0 {
        return Ok(0);
    }
    let low = source.get_bits(width.min(32))? as u64;
    if width > 32 {
        Ok(low | ((source.get_bits(width - 32)? as u64) << 32))
    } else {
        Ok(low)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bits::{BitReader, BitWriter};
    use proptest::prelude::*;

    #[test]
    fn zigzag_orders_by_magnitude() {
        let order: Vec<u32> = [0, -1, 1, -2, 2, i32::MAX, i32::MIN]
            .iter()
            .map(|&v| zigzag(v))
            .collect();
        assert_eq!(order, [0, 1, 2, 3, 4, u32::MAX - 1, u32::MAX]);
    }

    #[test]
    fn small_values_are_short() {
        let mut buf = [0u8; 16];
        let mut w = BitWriter::new(&mut buf);
        put_exp_golomb(&mut w, 0, 0).unwrap();
        assert_eq!(w.bits_written(), 1);
        put_classed(&mut w, 1).unwrap();
        assert_eq!(w.bits_written(), 3);
    }

    #[test]
    fn endless_zero_prefix_is_an_error() {
        let buf = [0u8; 16];
        let mut r = BitReader::new(&buf);
        assert!(matches!(
            get_exp_golomb(&mut r, 0),
            Err(BitError::Invalid { .. })
        ));
        assert!(r.bits_read() <= 33);
    }

    proptest! {
        #[test]
        fn codes_round_trip(values in prop::collection::vec((any::<u32>(), 0u32..=8), 0..50),
                            signed in any::<i32>()) {
            prop_assert_eq!(unzigzag(zigzag(signed)), signed);
            let mut buf = vec![0u8; 1024];
            let mut w = BitWriter::new(&mut buf);
            for &(v, k) in &values {
                put_exp_golomb(&mut w, v, k).unwrap();
                put_classed(&mut w, v).unwrap();
            }
            let len = w.bits_written();
            let mut r = BitReader::with_bit_len(&buf, len);
            for &(v, k) in &values {
                prop_assert_eq!(get_exp_golomb(&mut r, k).unwrap(), v);
                prop_assert_eq!(get_classed(&mut r).unwrap(), v);
            }
            prop_assert_eq!(r.remaining_bits(), 0);
        }
    }
}
