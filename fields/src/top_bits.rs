//! Chances for the first bits below a value's leading one.
//!
//! The native codec sends a changed value as a class symbol (the bit
//! length of its difference) and the bits below the leading one. Those
//! bits are not even coin flips: small differences are likelier than large
//! ones within a class, and games repeat some differences exactly (a
//! command clock stepping a frame, gravity taking the same speed every
//! move). The entropy bound (`benches`' `entropy-bound`) measures it: on
//! the duel, an adaptive coder of those bits pays 12.98 bytes a message
//! where they take 13.86 as they are.
//!
//! A model keeps, per field and class, a small binary tree of chances: the
//! first bit's chance of being one, then the second's given the first, the
//! third's given both ([`TOP_BITS`] bits, [`TREE_NODES`] chances), and
//! below the tree one chance per position for the next [`DEEP_BITS`] bits.
//! Priced against the bound's trace of the duel, the trees alone took
//! 0.27 bytes a message off the raw bits (13.60); an adaptive coder of the
//! bits below the third, per class and position, would take 0.21 more,
//! and only 0.04 beyond that with the two bits above as context too: how
//! skewed a deep bit is depends on its position far more than on its
//! neighbours. The deep chances took the duel's range-coded messages
//! (`delta-size`'s `native_loo_range`) from 477,310 to 475,486 bytes
//! (0.4091 to 0.4076 × Quake 3). A sink that range-codes
//! ([`crate::range::SplitWriter`], [`crate::range::RangeWriter`]) codes
//! those bits by the chances and the rest as they are; a bit stream writes
//! every bit as it is, so a message framed as plain bits is the same with
//! or without the chances.

use crate::bits::{low_mask, BitSink, BitSource, Chance};
use crate::error::BitError;
use crate::model::SymbolCode;

/// How many bits below the leading one a tree models.
pub const TOP_BITS: u32 = 3;

/// Chances in one tree: one for the first bit, two for the second, four
/// for the third.
pub const TREE_NODES: usize = (1 << TOP_BITS) - 1;

/// How many bits after the tree's have a chance of their own, one per
/// position (whatever the bits above).
pub const DEEP_BITS: u32 = 5;

/// How many bits below the leading one a class's chances model: what an
/// adapting model counts of a value as one symbol (the bits, at most eight
/// to fit a byte; how many is part of the symbol's context).
pub const MODELLED_BITS: u32 = TOP_BITS + DEEP_BITS;

// A model counts a value's modelled bits as one byte.
const _: () = assert!(MODELLED_BITS <= u8::BITS);

/// Chances per class: the tree's nodes, then one per deep position.
pub const CLASS_CHANCES: usize = TREE_NODES + DEEP_BITS as usize;

/// One class's chances: the tree's, node 0 first (a node's children are
/// `2n + 1` after a zero and `2n + 2` after a one), then the deep bits',
/// from the top.
pub type Tree = [Chance; CLASS_CHANCES];

/// Per symbol from a first one on, the tree of chances of the raw bits
/// that follow it, or none: what a model gives a range-coding sink for
/// one field. A symbol without a tree has its bits read as they are, in
/// one step, where an even tree would cost the same bits decided one at a
/// time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopBitChances {
    first: u8,
    trees: Box<[Option<Tree>]>,
}

impl TopBitChances {
    /// Chances for symbols `first`, `first + 1`, … (one tree each, or
    /// none: raw bits).
    pub fn new(first: u8, trees: Vec<Option<Tree>>) -> Self {
        TopBitChances {
            first,
            trees: trees.into_boxed_slice(),
        }
    }

    /// Chances from counts: per symbol from `first` on, [`CLASS_CHANCES`]
    /// pairs of (zeros, ones) seen at each tree node and deep position,
    /// flat. Each chance leans
    /// towards even by `prior` imaginary observations of each answer, so a
    /// node seen a few times does not claim certainty. A symbol whose
    /// counts are all zero gets no tree: its bits would be even anyway
    /// (the float bit-pattern classes no model counts, the classes a
    /// field never used in training), and raw bits decode in one step.
    /// `None` if `counts` holds no observation (nothing to model) or is
    /// not whole trees.
    pub fn from_counts(first: u8, counts: &[u32], prior: u32) -> Option<Self> {
        let per_tree = 2 * CLASS_CHANCES;
        if counts.is_empty()
            || counts.len() % per_tree != 0
            || counts.len() / per_tree > usize::from(u8::MAX - first) + 1
            || counts.iter().all(|&c| c == 0)
        {
            return None;
        }
        let trees = counts
            .chunks_exact(per_tree)
            .map(|tree| {
                if tree.iter().all(|&c| c == 0) {
                    return None;
                }
                Some(std::array::from_fn(|node| {
                    let zeros = u64::from(tree[2 * node]);
                    let ones = u64::from(tree[2 * node + 1]);
                    let prior = u64::from(prior.max(1));
                    // Scaled into u32 without losing the ratio.
                    let total = zeros + ones + 2 * prior;
                    let shift = 64 - total.leading_zeros();
                    let shift = shift.saturating_sub(31);
                    Chance::of(((ones + prior) >> shift) as u32, (total >> shift) as u32)
                }))
            })
            .collect();
        Some(TopBitChances::new(first, trees))
    }

    /// The tree for `symbol`, if these chances cover it and it has one.
    #[inline]
    pub fn tree(&self, symbol: u8) -> Option<&Tree> {
        self.trees
            .get(usize::from(symbol.checked_sub(self.first)?))?
            .as_ref()
    }
}

/// The node a tree walk goes to from `node` after `bit`.
#[inline(always)]
fn child(node: usize, bit: bool) -> usize {
    2 * node + 1 + usize::from(bit)
}

/// Writes the low `raw_bits` bits of `raw` (`raw_bits` in `1..=32`): the
/// first [`TOP_BITS`] from the top as decisions by `tree`'s nodes, the
/// next [`DEEP_BITS`] as decisions by its deep chances, the rest as raw
/// bits.
#[inline]
pub fn put_top_bits<S: BitSink + ?Sized>(
    sink: &mut S,
    raw: u32,
    raw_bits: u32,
    tree: &Tree,
) -> Result<(), BitError> {
    let top = raw_bits.min(TOP_BITS);
    let mut node = 0;
    for below in 1..=top {
        let bit = (raw >> (raw_bits - below)) & 1 == 1;
        sink.put_decision(bit, tree[node])?;
        node = child(node, bit);
    }
    let deep = (raw_bits - top).min(DEEP_BITS);
    for depth in 0..deep {
        let bit = (raw >> (raw_bits - top - 1 - depth)) & 1 == 1;
        sink.put_decision(bit, tree[TREE_NODES + depth as usize])?;
    }
    let rest = raw_bits - top - deep;
    if rest > 0 {
        sink.put_bits(raw & low_mask(rest), rest)?;
    }
    Ok(())
}

/// Reads what [`put_top_bits`] wrote: `raw_bits` bits (`1..=32`).
#[inline]
pub fn get_top_bits<S: BitSource + ?Sized>(
    source: &mut S,
    raw_bits: u32,
    tree: &Tree,
) -> Result<u32, BitError> {
    let top = raw_bits.min(TOP_BITS);
    let mut node = 0;
    let mut value = 0u32;
    for _ in 0..top {
        let bit = source.get_decision(tree[node])?;
        value = value << 1 | u32::from(bit);
        node = child(node, bit);
    }
    let deep = (raw_bits - top).min(DEEP_BITS);
    for depth in 0..deep {
        let bit = source.get_decision(tree[TREE_NODES + depth as usize])?;
        value = value << 1 | u32::from(bit);
    }
    let rest = raw_bits - top - deep;
    if rest > 0 {
        value = value << rest | source.get_bits(rest)?;
    }
    Ok(value)
}

/// A symbol by `code`, then its `raw_bits` raw bits, the first ones by
/// the symbol's tree in `chances` if it has one: what a range-coding sink's
/// [`BitSink::put_coded_symbol_and_top_bits`] does.
#[inline]
pub fn put_symbol_then_top_bits<S: BitSink + ?Sized>(
    sink: &mut S,
    code: &SymbolCode,
    symbol: u8,
    raw: u32,
    raw_bits: u32,
    chances: &TopBitChances,
) -> Result<(), BitError> {
    sink.put_coded_symbol(code, symbol)?;
    if raw_bits == 0 {
        return Ok(());
    }
    match chances.tree(symbol) {
        Some(tree) => put_top_bits(sink, raw, raw_bits, tree),
        None => sink.put_bits(raw, raw_bits),
    }
}

/// Reads what [`put_symbol_then_top_bits`] wrote; `extra_bits` says how
/// many raw bits follow each symbol (at most 32).
#[inline]
pub fn get_symbol_then_top_bits<S: BitSource + ?Sized>(
    source: &mut S,
    code: &SymbolCode,
    extra_bits: &[u8; 256],
    chances: &TopBitChances,
) -> Result<(u8, u32), BitError> {
    let symbol = source.get_coded_symbol(code)?;
    let count = u32::from(extra_bits[usize::from(symbol)]);
    if count == 0 {
        return Ok((symbol, 0));
    }
    let raw = match chances.tree(symbol) {
        Some(tree) => get_top_bits(source, count, tree)?,
        None => source.get_bits(count)?,
    };
    Ok((symbol, raw))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::range::{RangeReader, RangeWriter};
    use proptest::prelude::*;

    fn skewed() -> TopBitChances {
        // Symbol 2's first bit is almost always zero.
        let mut counts = vec![0u32; 2 * 2 * CLASS_CHANCES];
        counts[0] = 990;
        counts[1] = 10;
        TopBitChances::from_counts(2, &counts, 1).unwrap()
    }

    #[test]
    fn counts_make_chances_and_nothing_makes_none() {
        let chances = skewed();
        assert!(chances.tree(1).is_none());
        assert!(chances.tree(4).is_none());
        // (10 + 1) / (1000 + 2) of 65,536.
        assert_eq!(chances.tree(2).unwrap()[0].yes(), 719);
        // A node never seen is even.
        assert_eq!(chances.tree(2).unwrap()[1], Chance::EVEN);
        // A symbol never counted has no tree: its bits go raw.
        assert!(chances.tree(3).is_none());
        assert!(TopBitChances::from_counts(2, &[0; 2 * CLASS_CHANCES], 1).is_none());
        assert!(TopBitChances::from_counts(2, &[1; 5], 1).is_none());
        assert!(TopBitChances::from_counts(255, &[1; 4 * CLASS_CHANCES], 1).is_none());
    }

    #[test]
    fn a_symbol_never_counted_writes_its_bits_raw() {
        // Symbol 3 has no counts: after it, the same bytes as a plain
        // symbol and raw bits, where an even tree's decisions would differ
        // (and decode one at a time).
        let chances = skewed();
        let mut weights = [0u32; 256];
        weights[..4].copy_from_slice(&[1, 1, 5, 3]);
        let code = crate::model::code_of(weights, 4).unwrap();
        let values = [(3u8, 0b101_1101u32, 7u32), (3, 0b1_0000_0001, 9)];
        let mut with_chances = RangeWriter::new();
        let mut raw = RangeWriter::new();
        let mut even = RangeWriter::new();
        for _ in 0..16 {
            for (symbol, value, bits) in values {
                put_symbol_then_top_bits(&mut with_chances, &code, symbol, value, bits, &chances)
                    .unwrap();
                raw.put_coded_symbol(&code, symbol).unwrap();
                raw.put_bits(value, bits).unwrap();
                even.put_coded_symbol(&code, symbol).unwrap();
                put_top_bits(&mut even, value, bits, &[Chance::EVEN; CLASS_CHANCES]).unwrap();
            }
        }
        let (with_chances, _) = with_chances.finish();
        let with_chances = with_chances.to_vec();
        assert_eq!(with_chances, raw.finish().0);
        assert_ne!(with_chances, even.finish().0);
        let mut extra_bits = [0u8; 256];
        extra_bits[3] = 7;
        let mut r = RangeReader::new(&with_chances);
        assert_eq!(
            get_symbol_then_top_bits(&mut r, &code, &extra_bits, &chances).unwrap(),
            (3, 0b101_1101)
        );
    }

    #[test]
    fn expected_top_bits_cost_a_fraction_of_a_bit() {
        let chances = skewed();
        let tree = chances.tree(2).unwrap();
        let mut w = RangeWriter::new();
        for _ in 0..64 {
            // One bit, a zero: what symbol 2 is followed by.
            put_top_bits(&mut w, 0, 1, tree).unwrap();
        }
        let (bytes, _) = w.finish();
        assert!(bytes.len() <= 1, "{} bytes", bytes.len());
        // A bit stream writes them as they are.
        let mut buf = [0u8; 16];
        let mut plain = crate::BitWriter::new(&mut buf);
        put_top_bits(&mut plain, 0b101_1101, 7, tree).unwrap();
        assert_eq!(plain.bits_written(), 7);
    }

    #[test]
    fn deep_bits_have_a_chance_each_and_the_rest_go_raw() {
        // Class 12 (eleven bits below the leading one): the tree's three,
        // then five deep positions whose bits are nearly always 1, 0, 1,
        // 1, 0 whatever came above, then three raw bits.
        let mut counts = vec![0u32; 2 * CLASS_CHANCES];
        for (depth, bit) in [1usize, 0, 1, 1, 0].into_iter().enumerate() {
            counts[2 * (TREE_NODES + depth) + bit] = 4000;
        }
        let chances = TopBitChances::from_counts(12, &counts, 1).unwrap();
        let tree = chances.tree(12).unwrap();
        assert_eq!(tree[0], Chance::EVEN);
        // (4000 + 1) / (4000 + 2) of 65,536 (rounded down), and (0 + 1) /
        // (4000 + 2).
        assert_eq!(
            tree[TREE_NODES..]
                .iter()
                .map(|c| c.yes())
                .collect::<Vec<_>>(),
            [65519, 16, 65519, 65519, 16]
        );
        // Tree bits 010 and 110, the deep 10110, raw bits 110 and 001.
        let values = [0b010_1011_0110u32, 0b110_1011_0001];
        let mut w = RangeWriter::new();
        for _ in 0..32 {
            for value in values {
                put_top_bits(&mut w, value, 11, tree).unwrap();
            }
        }
        let (bytes, bits) = w.finish();
        // 64 values of 3 even tree bits and 3 raw ones (384 bits), the
        // deep bits nearly free.
        assert_eq!(bits, 385);
        let mut r = RangeReader::new(bytes);
        for _ in 0..32 {
            for value in values {
                assert_eq!(get_top_bits(&mut r, 11, tree).unwrap(), value);
            }
        }
        // Fewer bits than the tree and the deep positions hold: only the
        // first deep chances are used, and nothing is raw.
        let mut w = RangeWriter::new();
        for _ in 0..64 {
            put_top_bits(&mut w, 0b00010, 5, tree).unwrap();
        }
        let (_, bits) = w.finish();
        assert_eq!(bits, 192);
    }

    proptest! {
        #[test]
        fn top_bits_round_trip(
            values in proptest::collection::vec((any::<u32>(), 1u32..=32), 1..40),
            counts in proptest::collection::vec(0u32..1000, 2 * CLASS_CHANCES),
        ) {
            let chances = TopBitChances::from_counts(0, &counts, 1)
                .unwrap_or_else(|| TopBitChances::new(0, vec![Some([Chance::EVEN; CLASS_CHANCES])]));
            let tree = chances.tree(0).unwrap();
            let mut w = RangeWriter::new();
            for &(value, bits) in &values {
                put_top_bits(&mut w, value & low_mask(bits), bits, tree).unwrap();
            }
            let (bytes, _) = w.finish();
            let mut r = RangeReader::new(bytes);
            for &(value, bits) in &values {
                prop_assert_eq!(get_top_bits(&mut r, bits, tree).unwrap(), value & low_mask(bits));
            }
            let mut buf = [0u8; 256];
            let mut plain = crate::BitWriter::new(&mut buf);
            for &(value, bits) in &values {
                put_top_bits(&mut plain, value & low_mask(bits), bits, tree).unwrap();
            }
            let written = plain.bits_written();
            let mut reader = crate::BitReader::new(&buf);
            for &(value, bits) in &values {
                prop_assert_eq!(get_top_bits(&mut reader, bits, tree).unwrap(), value & low_mask(bits));
            }
            prop_assert_eq!(reader.bits_read(), written);
        }
    }
}
