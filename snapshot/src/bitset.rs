//! A fixed-size bit set over entity numbers: which entities a client holds.
//!
//! At the default 1024 numbers it is 128 bytes, against 8 bytes an entry
//! for a list of 256 visible entities, and merging two views is a word-wise
//! OR walked in number order — exactly the order entity lists are written in.

/// A set of entity numbers below a fixed bound.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Bitset {
    words: Vec<u64>,
}

impl Bitset {
    /// An empty set of numbers below `bits`.
    pub fn new(bits: u32) -> Self {
        Bitset {
            words: vec![0; (bits as usize).div_ceil(64)],
        }
    }

    /// Removes every member.
    pub fn clear(&mut self) {
        self.words.fill(0);
    }

    /// Adds `number` (ignored if beyond the bound).
    #[inline]
    pub fn insert(&mut self, number: u32) {
        if let Some(word) = self.words.get_mut((number / 64) as usize) {
            *word |= 1 << (number % 64);
        }
    }

    /// Removes `number`.
    #[inline]
    pub fn remove(&mut self, number: u32) {
        if let Some(word) = self.words.get_mut((number / 64) as usize) {
            *word &= !(1 << (number % 64));
        }
    }

    /// Whether `number` is a member.
    #[inline]
    pub fn contains(&self, number: u32) -> bool {
        self.words
            .get((number / 64) as usize)
            .is_some_and(|word| word & (1 << (number % 64)) != 0)
    }

    /// The words, 64 numbers each, low bit = lowest number.
    #[inline]
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Mutable words.
    #[inline]
    pub fn words_mut(&mut self) -> &mut [u64] {
        &mut self.words
    }

    /// Makes `self` equal to `other` without reallocating when sizes match.
    pub fn copy_from(&mut self, other: &Bitset) {
        self.words.clone_from(&other.words);
    }

    /// Members in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words
            .iter()
            .enumerate()
            .flat_map(|(index, &word)| Ones(word).map(move |bit| index as u32 * 64 + bit))
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Heap bytes.
    pub fn memory_bytes(&self) -> usize {
        self.words.capacity() * std::mem::size_of::<u64>()
    }
}

pub(crate) use fields::bits::Ones;

/// The members as what a receiver holds: a removal in an entity list is
/// named by its place among them (see [`fields::codec::HeldNumbers`]).
impl fields::codec::HeldNumbers for Bitset {
    fn count_in(&self, from: u32, to: u32) -> u32 {
        if from >= to {
            return 0;
        }
        // Bits below `bit` of each end's word; whole words in between.
        let below = |number: u32| -> u32 {
            let (index, bit) = ((number / 64) as usize, number % 64);
            let whole: u32 = self.words.iter().take(index).map(|w| w.count_ones()).sum();
            let partial = self
                .words
                .get(index)
                .map_or(0, |w| (w & ((1u64 << bit) - 1)).count_ones());
            whole + partial
        };
        below(to) - below(from)
    }

    fn nth_from(&self, from: u32, skip: u32) -> Option<u32> {
        let mut left = skip;
        let first = (from / 64) as usize;
        for (index, &word) in self.words.iter().enumerate().skip(first) {
            let word = if index == first {
                word & !((1u64 << (from % 64)) - 1)
            } else {
                word
            };
            let ones = word.count_ones();
            if left < ones {
                let bit = Ones(word).nth(left as usize)?;
                return Some(index as u32 * 64 + bit);
            }
            left -= ones;
        }
        None
    }

    fn holds(&self, number: u32) -> bool {
        self.contains(number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_iterate_in_order() {
        let mut set = Bitset::new(200);
        for n in [199, 0, 64, 63, 130] {
            set.insert(n);
        }
        set.insert(500);
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![0, 63, 64, 130, 199]);
        assert_eq!(set.len(), 5);
        set.remove(64);
        assert!(!set.contains(64));
        assert!(set.contains(63));
        assert!(!set.contains(10_000));
    }

    #[test]
    fn held_numbers_count_and_index_across_words() {
        use fields::codec::HeldNumbers;
        let mut set = Bitset::new(256);
        let members = [0, 5, 63, 64, 130, 191, 192, 255];
        for n in members {
            set.insert(n);
        }
        for from in [0, 1, 63, 64, 65, 129, 191, 200, 255, 256, 1000] {
            for to in [0, 5, 6, 64, 65, 192, 193, 256, 300] {
                let expected = members.iter().filter(|&&n| n >= from && n < to).count();
                assert_eq!(set.count_in(from, to), expected as u32, "{from}..{to}");
            }
            let after: Vec<u32> = members.iter().copied().filter(|&n| n >= from).collect();
            for skip in 0..10 {
                assert_eq!(
                    set.nth_from(from, skip),
                    after.get(skip as usize).copied(),
                    "{from} + {skip}"
                );
            }
        }
        assert!(set.holds(191) && !set.holds(190) && !set.holds(5000));
    }
}
