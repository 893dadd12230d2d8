//! Static codes from byte frequencies, built with the `huffman-compress` crate.

use huffman_compress::CodeBuilder;

use super::{CodeWord, HuffmanCode, HuffmanError};

/// Longest code word [`HuffmanCode::from_frequencies`] produces, in bits.
///
/// Very skewed counts (Fibonacci-like) can make an optimal Huffman tree up to
/// about 60 levels deep. Capping the length keeps every word in one
/// `put_bits` call and bounds the decoder's sub-tables; the cap is only hit by
/// distributions where the longest words are astronomically rare, so the cost
/// in compression is negligible.
pub const MAX_FREQUENCY_CODE_LEN: u32 = 24;

/// How much an observed count outweighs an unobserved byte (see
/// [`HuffmanCode::from_frequencies`]).
const OBSERVED_SCALE: u64 = 256;

impl HuffmanCode {
    /// Builds an optimal prefix code for the byte counts `frequencies`
    /// (`frequencies[b]` for byte `b`).
    ///
    /// Every byte gets a code word, even one with count zero, so any input can
    /// be encoded: counts are scaled by 256 and a zero count becomes weight 1.
    /// All unobserved bytes together then weigh less than one observed
    /// occurrence, so they share a deep subtree and barely disturb the code of
    /// the observed bytes.
    ///
    /// No code word is longer than [`MAX_FREQUENCY_CODE_LEN`] bits: if the
    /// optimal code is deeper, the weights are flattened to `(w >> s) + 1`,
    /// which keeps their order but shrinks their ratios, with the shift `s`
    /// picked by binary search as the smallest that fits (depth falls as `s`
    /// grows, though not strictly, so "smallest" is up to that noise).
    ///
    /// The result is deterministic: equal weights are ordered by byte value.
    pub fn from_frequencies(frequencies: &[u32; 256]) -> Result<HuffmanCode, HuffmanError> {
        let weights = frequencies.map(|f| match f {
            0 => 1,
            f => u64::from(f) * OBSERVED_SCALE,
        });
        let words = code_words(&weights)?;
        if max_len(&words) <= MAX_FREQUENCY_CODE_LEN {
            return HuffmanCode::from_code_words(&words);
        }
        // Shift 0 is too deep (just built); shift 64 makes every weight 1, a
        // flat 8-bit code. At most 6 more builds find a shift in between.
        let (mut too_deep, mut fits) = (0u32, 64u32);
        let mut fitting = None;
        while fits - too_deep > 1 {
            let shift = (too_deep + fits) / 2;
            let words = code_words(&flatten(&weights, shift))?;
            if max_len(&words) <= MAX_FREQUENCY_CODE_LEN {
                fits = shift;
                fitting = Some(words);
            } else {
                too_deep = shift;
            }
        }
        let words = match fitting {
            Some(words) => words,
            None => code_words(&flatten(&weights, fits))?,
        };
        HuffmanCode::from_code_words(&words)
    }
}

fn flatten(weights: &[u64; 256], shift: u32) -> [u64; 256] {
    weights.map(|w| w.checked_shr(shift).unwrap_or(0) + 1)
}

fn max_len(words: &[CodeWord; 256]) -> u32 {
    words.iter().map(|w| u32::from(w.len)).max().unwrap_or(0)
}

/// Runs `huffman-compress` on the weights and converts its code book.
///
/// Words longer than 32 bits are reported as length 33 with no bits: the
/// caller only needs to know they are too long.
fn code_words(weights: &[u64; 256]) -> Result<[CodeWord; 256], HuffmanError> {
    let (book, _tree) = CodeBuilder::from_iter((0..=255u8).zip(weights.iter().copied())).finish();
    let mut words = [CodeWord::default(); 256];
    for (symbol, word) in words.iter_mut().enumerate() {
        let symbol = symbol as u8;
        // With 256 symbols of positive weight every byte is in the book; a
        // missing one would be a bug in the builder, reported rather than
        // unwrapped.
        let bits = book
            .get(&symbol)
            .ok_or(HuffmanError::BadLength { symbol, len: 0 })?;
        *word = CodeWord::from_bits_in_order(bits.iter()).unwrap_or(CodeWord {
            bits: 0,
            len: super::MAX_CODE_LEN as u8 + 1,
        });
    }
    Ok(words)
}
