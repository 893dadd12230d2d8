//! Wrap-around sequence numbers and the receive window.
//!
//! Sequence numbers travel as 16 bits to keep the header small, but every
//! side keeps them as `u64` internally: the wire value is *extended* to the
//! full number closest to a reference (the newest value seen). A 64-bit
//! number never wraps in practice, so ordering, replay checks and the AEAD
//! nonce (which must never repeat) all work on the extended value.

/// Number of earlier sequence numbers a [`SeqWindow`] remembers besides the newest.
pub const WINDOW_BITS: u64 = 64;

/// `true` when the 16-bit sequence `a` is newer than `b`, modulo wrap-around.
///
/// Values more than half the space apart are taken to have wrapped.
#[inline]
pub fn seq_greater(a: u16, b: u16) -> bool {
    a != b && a.wrapping_sub(b) < 0x8000
}

/// Extends the 16-bit wire value `wire` to the 64-bit number closest to `reference`.
///
/// The result is within 32768 of `reference`; near zero it never goes negative
/// (the candidate one period up is used instead).
#[inline]
pub fn extend(reference: u64, wire: u16) -> u64 {
    let diff = wire.wrapping_sub(reference as u16) as i16 as i64;
    let candidate = reference as i64 as i128 + diff as i128;
    if candidate < 0 {
        (candidate + 0x1_0000) as u64
    } else {
        candidate as u64
    }
}

/// Where a sequence number stands against a [`SeqWindow`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Membership {
    /// Newer than anything recorded, or older but not yet recorded.
    New,
    /// Already recorded: a duplicate.
    Present,
    /// Too far behind the newest to tell: treated as stale.
    TooOld,
}

/// The newest recorded sequence number and a bitmask of the 64 before it.
///
/// Bit `i` of `bits` stands for `newest - 1 - i`.
#[derive(Debug, Clone, Default)]
pub struct SeqWindow {
    newest: Option<u64>,
    bits: u64,
}

impl SeqWindow {
    /// An empty window.
    pub fn new() -> Self {
        Self::default()
    }

    /// The newest recorded number, if any.
    pub fn newest(&self) -> Option<u64> {
        self.newest
    }

    /// Whether `seq` is new, already recorded, or too old to tell.
    pub fn membership(&self, seq: u64) -> Membership {
        let Some(newest) = self.newest else {
            return Membership::New;
        };
        if seq > newest {
            return Membership::New;
        }
        if seq == newest {
            return Membership::Present;
        }
        let back = newest - seq;
        if back > WINDOW_BITS {
            return Membership::TooOld;
        }
        if self.bits & (1u64 << (back - 1)) != 0 {
            Membership::Present
        } else {
            Membership::New
        }
    }

    /// Records `seq`. Numbers older than the window are ignored.
    pub fn insert(&mut self, seq: u64) {
        match self.newest {
            None => {
                self.newest = Some(seq);
                self.bits = 0;
            }
            Some(newest) if seq > newest => {
                let shift = seq - newest;
                // The old newest becomes bit `shift - 1`.
                self.bits = if shift > WINDOW_BITS {
                    0
                } else if shift == WINDOW_BITS {
                    1u64 << 63
                } else {
                    (self.bits << shift) | (1u64 << (shift - 1))
                };
                self.newest = Some(seq);
            }
            Some(newest) if seq < newest => {
                let back = newest - seq;
                if back <= WINDOW_BITS {
                    self.bits |= 1u64 << (back - 1);
                }
            }
            Some(_) => {}
        }
    }

    /// The ack to put on the wire: newest number and the 32 before it.
    pub fn ack_field(&self) -> Option<(u64, u32)> {
        self.newest.map(|n| (n, self.bits as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn greater_wraps() {
        assert!(seq_greater(1, 0));
        assert!(seq_greater(0, 65535));
        assert!(!seq_greater(65535, 0));
        assert!(!seq_greater(7, 7));
    }

    #[test]
    fn extend_across_wrap() {
        assert_eq!(extend(65535, 0), 65536);
        assert_eq!(extend(65536, 65535), 65535);
        assert_eq!(extend(0, 65535), 65535);
        assert_eq!(extend(10, 5), 5);
        assert_eq!(extend(0x3_fff0, 0x0005), 0x4_0005);
    }

    #[test]
    fn window_classifies() {
        let mut w = SeqWindow::new();
        assert_eq!(w.membership(5), Membership::New);
        w.insert(5);
        assert_eq!(w.membership(5), Membership::Present);
        w.insert(7);
        assert_eq!(w.membership(6), Membership::New);
        assert_eq!(w.membership(5), Membership::Present);
        w.insert(6);
        assert_eq!(w.ack_field(), Some((7, 0b11)));
        w.insert(200);
        assert_eq!(w.membership(100), Membership::TooOld);
        assert_eq!(w.membership(199), Membership::New);
    }

    proptest! {
        #[test]
        fn extend_recovers_nearby(reference in 0u64..1 << 40, delta in -32767i64..32767) {
            let actual = reference as i64 + delta;
            prop_assume!(actual >= 0);
            prop_assert_eq!(extend(reference, actual as u16), actual as u64);
        }

        #[test]
        fn window_matches_set(seqs in proptest::collection::vec(0u64..300, 1..200)) {
            let mut w = SeqWindow::new();
            let mut set = std::collections::BTreeSet::new();
            for s in seqs {
                let newest = set.iter().next_back().copied();
                let m = w.membership(s);
                match newest {
                    Some(n) if s < n && n - s > WINDOW_BITS => prop_assert_eq!(m, Membership::TooOld),
                    _ if set.contains(&s) => prop_assert_eq!(m, Membership::Present),
                    _ => prop_assert_eq!(m, Membership::New),
                }
                w.insert(s);
                set.insert(s);
            }
        }
    }
}
