//! The entity numbers a receiver holds: what lets the native codec name a
//! removal by its place among them instead of by its number.
//!
//! A removal can only name an entity the receiver holds (its copy of the
//! base snapshot). Counted in held entities rather than in numbers, the gap
//! from the previous entry of the list is small: in the OSP duel, six in
//! ten removals name the first held entity after the previous entry, where
//! their number gaps were spread over 0–511 (the event entities Quake 3
//! numbers above its items). Measured there: the bits below each gap's
//! leading one fell from 3.10 to 0.51 a message.

use std::fmt;

/// The sorted set of entity numbers the receiver of an entity list holds
/// (the base snapshot's entities; none for a full snapshot).
pub trait HeldNumbers {
    /// How many held numbers lie in `from..to`.
    fn count_in(&self, from: u32, to: u32) -> u32;

    /// The held number `skip` places after the first one at or above
    /// `from` (`skip = 0`: that first one), if there are that many.
    fn nth_from(&self, from: u32, skip: u32) -> Option<u32>;

    /// Whether `number` is held.
    fn holds(&self, number: u32) -> bool;
}

impl<E> HeldNumbers for &[(u32, E)] {
    fn count_in(&self, from: u32, to: u32) -> u32 {
        let start = self.partition_point(|(n, _)| *n < from);
        let end = self.partition_point(|(n, _)| *n < to);
        end.saturating_sub(start) as u32
    }

    fn nth_from(&self, from: u32, skip: u32) -> Option<u32> {
        let start = self.partition_point(|(n, _)| *n < from);
        self.get(start.checked_add(skip as usize)?).map(|(n, _)| *n)
    }

    fn holds(&self, number: u32) -> bool {
        self.binary_search_by_key(&number, |(n, _)| *n).is_ok()
    }
}

impl HeldNumbers for &[u32] {
    fn count_in(&self, from: u32, to: u32) -> u32 {
        let start = self.partition_point(|n| *n < from);
        let end = self.partition_point(|n| *n < to);
        end.saturating_sub(start) as u32
    }

    fn nth_from(&self, from: u32, skip: u32) -> Option<u32> {
        let start = self.partition_point(|n| *n < from);
        self.get(start.checked_add(skip as usize)?).copied()
    }

    fn holds(&self, number: u32) -> bool {
        self.binary_search(&number).is_ok()
    }
}

/// A receiver that holds nothing (see [`NOTHING_HELD`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct NothingHeld;

impl HeldNumbers for NothingHeld {
    fn count_in(&self, _: u32, _: u32) -> u32 {
        0
    }

    fn nth_from(&self, _: u32, _: u32) -> Option<u32> {
        None
    }

    fn holds(&self, _: u32) -> bool {
        false
    }
}

/// What a receiver that holds nothing holds: for a full snapshot's list, a
/// list of spawn baselines. Every removal in such a list is an error.
pub const NOTHING_HELD: &dyn HeldNumbers = &NothingHeld;

/// A [`HeldNumbers`] passed along with an update (a reference, so that
/// [`EntityUpdate`](super::EntityUpdate) stays `Copy` and `Debug`).
#[derive(Clone, Copy)]
pub struct Held<'a>(pub &'a dyn HeldNumbers);

impl fmt::Debug for Held<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Held(..)")
    }
}

impl Held<'_> {
    /// Nothing held (see [`NOTHING_HELD`]).
    pub fn nothing() -> Held<'static> {
        Held(NOTHING_HELD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_numbers_count_and_index_alike_for_both_list_shapes() {
        let numbers: &[u32] = &[3, 7, 8, 70, 200];
        let states: Vec<(u32, char)> = numbers.iter().map(|&n| (n, 'x')).collect();
        let states = &states[..];
        for held in [&numbers as &dyn HeldNumbers, &states as &dyn HeldNumbers] {
            assert_eq!(held.count_in(0, 3), 0);
            assert_eq!(held.count_in(0, 8), 2);
            assert_eq!(held.count_in(4, 201), 4);
            assert_eq!(held.count_in(9, 9), 0);
            assert_eq!(held.nth_from(0, 0), Some(3));
            assert_eq!(held.nth_from(4, 0), Some(7));
            assert_eq!(held.nth_from(4, 3), Some(200));
            assert_eq!(held.nth_from(4, 4), None);
            assert_eq!(held.nth_from(201, 0), None);
            assert_eq!(held.nth_from(0, u32::MAX), None);
            assert!(held.holds(70) && !held.holds(71) && !held.holds(u32::MAX) && held.holds(3));
        }
        assert_eq!(NOTHING_HELD.nth_from(0, 0), None);
        assert!(!NOTHING_HELD.holds(0));
    }
}
