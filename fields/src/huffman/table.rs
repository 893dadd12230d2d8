//! Static codes from byte frequencies: Huffman's construction, as the
//! `huffman-compress` crate makes it (its tests hold this to that crate).

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

/// An optimal prefix code for 256 weights, as `huffman-compress` 0.7 builds
/// it, bit for bit (a property test checks it against that crate), in a
/// few microseconds and without allocating: models that adapt to a stream
/// rebuild hundreds of codes at a time, and the crate's per-node
/// allocations made that take tens of milliseconds.
///
/// The tree is Huffman's: repeatedly merge the two lightest nodes, ties
/// going to the node whose smallest symbol is larger; a merged node's
/// smallest symbol is its children's smaller one (so live nodes never tie
/// completely). The first node taken is the `1` branch, the second the
/// `0`.
///
/// Words longer than 32 bits are reported as length 33 with no bits: the
/// caller only needs to know they are too long.
fn code_words(weights: &[u64; 256]) -> Result<[CodeWord; 256], HuffmanError> {
    const LEAVES: usize = 256;
    // A node's order: lighter first, then the larger smallest symbol.
    type Key = (u64, usize);
    let key = |weight: u64, symbol: usize| -> Key { (weight, LEAVES - 1 - symbol) };
    // Leaves in that order. Merged nodes come out of the merges already in
    // it: a merged node outweighs every node taken before it, and two of
    // equal weight are made of four equal-weight nodes taken in order, so
    // the earlier one has the larger smallest symbol. Two queues then take
    // the nodes in the order a single heap would (Huffman's linear method
    // for sorted weights).
    let mut leaves = [(0u64, 0usize); LEAVES];
    for (symbol, &weight) in weights.iter().enumerate() {
        leaves[symbol] = key(weight, symbol);
    }
    leaves.sort_unstable();
    // Node ids: leaves are their symbols, merged nodes follow.
    let mut children = [[0u16; 2]; LEAVES - 1];
    let mut merged: [(Key, u16); LEAVES - 1] = [((0, 0), 0); LEAVES - 1];
    let (mut next_leaf, mut next_merged, mut made) = (0usize, 0usize, 0usize);
    let mut take = |merged: &[(Key, u16); LEAVES - 1], made: usize| -> (Key, u16) {
        let leaf = leaves.get(next_leaf).copied();
        let node = (next_merged < made).then(|| merged[next_merged]);
        match (leaf, node) {
            (Some(l), Some((k, id))) if k < l => {
                next_merged += 1;
                (k, id)
            }
            (Some(l), _) => {
                next_leaf += 1;
                (l, (LEAVES - 1 - l.1) as u16)
            }
            (None, Some((k, id))) => {
                next_merged += 1;
                (k, id)
            }
            (None, None) => ((0, 0), 0),
        }
    };
    while made < LEAVES - 1 {
        let ((w1, k1), id1) = take(&merged, made);
        let ((w2, k2), id2) = take(&merged, made);
        children[made] = [id1, id2];
        // The merged node's smallest symbol is the larger of the two
        // order values.
        merged[made] = ((w1.saturating_add(w2), k1.max(k2)), (LEAVES + made) as u16);
        made += 1;
    }
    let next = LEAVES + made;
    let too_long = CodeWord {
        bits: 0,
        len: super::MAX_CODE_LEN as u8 + 1,
    };
    let mut words = [too_long; LEAVES];
    // Depth-first from the root with the path so far (transmission order:
    // bit i of the word is the i-th branch taken).
    let mut stack = [(0u16, 0u32, 0u32); LEAVES];
    stack[0] = ((next - 1) as u16, 0, 0);
    let mut depth = 1;
    while depth > 0 {
        depth -= 1;
        let (node, bits, len) = stack[depth];
        let node = usize::from(node);
        if node < LEAVES {
            if len <= super::MAX_CODE_LEN {
                words[node] = CodeWord {
                    bits,
                    len: len as u8,
                };
            }
            continue;
        }
        let [one, zero] = children[node - LEAVES];
        let bit = |b: u32| if len < 32 { bits | (b << len) } else { bits };
        // Push the `0` branch first so the `1` branch is walked first
        // (the order does not change the words).
        stack[depth] = (zero, bit(0), len + 1);
        stack[depth + 1] = (one, bit(1), len + 1);
        depth += 2;
    }
    if words.iter().any(|w| w.len == 0) {
        return Err(HuffmanError::BadLength { symbol: 0, len: 0 });
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What `huffman-compress` builds for the same weights.
    fn reference_words(weights: &[u64; 256]) -> [CodeWord; 256] {
        let (book, _) =
            huffman_compress::CodeBuilder::from_iter((0..=255u8).zip(weights.iter().copied()))
                .finish();
        let mut words = [CodeWord::default(); 256];
        for (symbol, word) in words.iter_mut().enumerate() {
            let bits = book.get(&(symbol as u8)).expect("every byte has a word");
            *word = CodeWord::from_bits_in_order(bits.iter()).unwrap_or(CodeWord {
                bits: 0,
                len: crate::huffman::MAX_CODE_LEN as u8 + 1,
            });
        }
        words
    }

    #[test]
    fn ties_and_deep_trees_match_huffman_compress() {
        let flat = [7u64; 256];
        assert_eq!(code_words(&flat).unwrap(), reference_words(&flat));
        let mut fibonacci = [1u64; 256];
        let (mut a, mut b) = (1u64, 1u64);
        for w in fibonacci.iter_mut().take(60) {
            *w = a;
            (a, b) = (b, a + b);
        }
        let words = code_words(&fibonacci).unwrap();
        assert_eq!(words, reference_words(&fibonacci));
        assert!(words
            .iter()
            .any(|w| u32::from(w.len) > crate::huffman::MAX_CODE_LEN));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn any_weights_give_huffman_compress_words(
            weights in proptest::collection::vec(
                prop_oneof![Just(1u64), 1u64..8, 1u64..1_000_000, Just(256u64), 1u64..(1 << 40)],
                256,
            )
        ) {
            let weights: [u64; 256] = weights.try_into().unwrap();
            prop_assert_eq!(code_words(&weights).unwrap(), reference_words(&weights));
        }
    }
}
