//! The walk every snapshot encoder and decoder makes: a base's entity list
//! against a newer one, both sorted by entity number (Quake 3's
//! `SV_EmitPacketEntities` on the server, `CL_ParsePacketEntities` on the
//! client).
//!
//! * Encoders hold both lists: [`merge_by_number`] yields each number once,
//!   in order, as [`Merged::Added`], [`Merged::Removed`] or [`Merged::Both`]
//!   (whether a `Both` is a change is the caller's test: field words,
//!   `wire_differs`, a cached encoding…).
//! * Decoders learn the new numbers one at a time from the wire: a
//!   [`BaseCursor`] over the base list hands out, for each number read, the
//!   base entries before it (carried over unchanged) and the base state of
//!   that number, if any; [`BaseCursor::rest`] is what follows the last one.
//!
//! ```
//! use fields::merge::{merge_by_number, BaseCursor, Merged};
//!
//! let base = [(1, 'a'), (3, 'b'), (4, 'c')];
//! let new = [(2, 'x'), (3, 'y')];
//! let walk: Vec<(u32, &str)> = merge_by_number(&base, &new)
//!     .map(|m| (m.number(), match m {
//!         Merged::Removed { .. } => "removed",
//!         Merged::Added { .. } => "added",
//!         Merged::Both { .. } => "both",
//!     }))
//!     .collect();
//! assert_eq!(walk, [(1, "removed"), (2, "added"), (3, "both"), (4, "removed")]);
//!
//! // A decoder reads number 3 from the wire: entity 1 carries over, and 3
//! // deltas from its base state 'b'.
//! let mut cursor = BaseCursor::new(&base);
//! let (carried, held) = cursor.advance_to(3);
//! assert_eq!((carried, held), (&[(1, 'a')][..], Some(&'b')));
//! assert_eq!(cursor.rest(), &[(4, 'c')]);
//! ```

/// One entity number of a merge.
#[derive(Debug, PartialEq, Eq)]
pub enum Merged<'a, A, B = A> {
    /// Only in the base list.
    Removed {
        /// Entity number.
        number: u32,
        /// Its state in the base.
        old: &'a A,
    },
    /// Only in the new list.
    Added {
        /// Entity number.
        number: u32,
        /// Its new state.
        new: &'a B,
    },
    /// In both lists.
    Both {
        /// Entity number.
        number: u32,
        /// Its state in the base.
        old: &'a A,
        /// Its new state.
        new: &'a B,
    },
}

// Manual impls: the derive would demand `A: Clone`, but only references are held.
impl<A, B> Clone for Merged<'_, A, B> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A, B> Copy for Merged<'_, A, B> {}

impl<A, B> Merged<'_, A, B> {
    /// The entity number.
    pub fn number(&self) -> u32 {
        match *self {
            Merged::Removed { number, .. }
            | Merged::Added { number, .. }
            | Merged::Both { number, .. } => number,
        }
    }
}

/// The merge of two lists sorted by entity number: see [`merge_by_number`].
#[derive(Debug)]
pub struct MergeByNumber<'a, A, B = A> {
    old: &'a [(u32, A)],
    new: &'a [(u32, B)],
}

// Manual impl for the same reason as `Merged`'s.
impl<A, B> Clone for MergeByNumber<'_, A, B> {
    fn clone(&self) -> Self {
        MergeByNumber {
            old: self.old,
            new: self.new,
        }
    }
}

/// Walks `old` and `new` (each sorted by number, no number twice) in number
/// order, yielding every number that is in either once.
pub fn merge_by_number<'a, A, B>(
    old: &'a [(u32, A)],
    new: &'a [(u32, B)],
) -> MergeByNumber<'a, A, B> {
    MergeByNumber { old, new }
}

impl<'a, A, B> Iterator for MergeByNumber<'a, A, B> {
    type Item = Merged<'a, A, B>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = match (self.old.split_first(), self.new.split_first()) {
            (None, None) => return None,
            (Some(((o, old), old_rest)), Some(((n, new), new_rest))) if o == n => {
                self.old = old_rest;
                self.new = new_rest;
                Merged::Both {
                    number: *n,
                    old,
                    new,
                }
            }
            (Some(((o, old), old_rest)), Some(((n, _), _))) if o < n => {
                self.old = old_rest;
                Merged::Removed { number: *o, old }
            }
            (Some(((o, old), old_rest)), None) => {
                self.old = old_rest;
                Merged::Removed { number: *o, old }
            }
            (_, Some(((n, new), new_rest))) => {
                self.new = new_rest;
                Merged::Added { number: *n, new }
            }
        };
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let (old, new) = (self.old.len(), self.new.len());
        (old.max(new), Some(old + new))
    }
}

/// A decoder's position in a base entity list (sorted by number) while it
/// reads the new numbers from the wire in increasing order.
#[derive(Debug)]
pub struct BaseCursor<'a, E> {
    rest: &'a [(u32, E)],
}

impl<'a, E> BaseCursor<'a, E> {
    /// At the start of `base`.
    pub fn new(base: &'a [(u32, E)]) -> Self {
        BaseCursor { rest: base }
    }

    /// Moves past `number`: returns the base entries before it (unchanged by
    /// this message) and the base state of `number` itself, if the base has
    /// it. Numbers must be passed in increasing order; a number at or below
    /// one already passed finds nothing and carries nothing over.
    pub fn advance_to(&mut self, number: u32) -> (&'a [(u32, E)], Option<&'a E>) {
        let before = self.rest.partition_point(|(n, _)| *n < number);
        let (carried, rest) = self.rest.split_at(before);
        match rest.split_first() {
            Some(((n, state), after)) if *n == number => {
                self.rest = after;
                (carried, Some(state))
            }
            _ => {
                self.rest = rest;
                (carried, None)
            }
        }
    }

    /// The base entries after every number passed so far.
    pub fn rest(&self) -> &'a [(u32, E)] {
        self.rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn sorted(map: &BTreeMap<u32, u8>) -> Vec<(u32, u8)> {
        map.iter().map(|(&n, &v)| (n, v)).collect()
    }

    proptest! {
        /// Against a model: every number of either list exactly once, in
        /// order, classified by which lists hold it, with the right states.
        #[test]
        fn the_merge_visits_the_union_in_order(
            old in proptest::collection::btree_map(0u32..64, any::<u8>(), 0..24),
            new in proptest::collection::btree_map(0u32..64, any::<u8>(), 0..24),
        ) {
            let (o, n) = (sorted(&old), sorted(&new));
            let walked: Vec<(u32, Option<u8>, Option<u8>)> = merge_by_number(&o, &n)
                .map(|m| match m {
                    Merged::Removed { number, old } => (number, Some(*old), None),
                    Merged::Added { number, new } => (number, None, Some(*new)),
                    Merged::Both { number, old, new } => (number, Some(*old), Some(*new)),
                })
                .collect();
            let mut numbers: Vec<u32> = old.keys().chain(new.keys()).copied().collect();
            numbers.sort_unstable();
            numbers.dedup();
            let expected: Vec<(u32, Option<u8>, Option<u8>)> = numbers
                .iter()
                .map(|n| (*n, old.get(n).copied(), new.get(n).copied()))
                .collect();
            prop_assert_eq!(walked, expected);
        }

        /// A decoder walking the new numbers with a cursor rebuilds the same
        /// list as the merge: carried-over entries, then each new number.
        #[test]
        fn the_cursor_agrees_with_the_merge(
            old in proptest::collection::btree_map(0u32..64, any::<u8>(), 0..24),
            new in proptest::collection::btree_set(0u32..64, 0..24),
        ) {
            let o = sorted(&old);
            let mut cursor = BaseCursor::new(&o);
            let mut seen = Vec::new();
            for &number in &new {
                let (carried, held) = cursor.advance_to(number);
                seen.extend(carried.iter().map(|(n, v)| (*n, Some(*v), false)));
                seen.push((number, held.copied(), true));
            }
            seen.extend(cursor.rest().iter().map(|(n, v)| (*n, Some(*v), false)));
            let n: Vec<(u32, ())> = new.iter().map(|&n| (n, ())).collect();
            let expected: Vec<(u32, Option<u8>, bool)> = merge_by_number(&o, &n)
                .map(|m| match m {
                    Merged::Removed { number, old } => (number, Some(*old), false),
                    Merged::Added { number, .. } => (number, None, true),
                    Merged::Both { number, old, .. } => (number, Some(*old), true),
                })
                .collect();
            prop_assert_eq!(seen, expected);
        }
    }

    #[test]
    fn a_number_passed_twice_finds_nothing() {
        let base = [(2, 'a'), (5, 'b')];
        let mut cursor = BaseCursor::new(&base);
        assert_eq!(cursor.advance_to(5), (&base[..1], Some(&'b')));
        assert_eq!(cursor.advance_to(5), (&[][..], None));
        assert_eq!(cursor.advance_to(1), (&[][..], None));
        assert!(cursor.rest().is_empty());
    }
}
