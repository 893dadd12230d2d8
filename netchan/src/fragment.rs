//! Reassembly of fragmented messages.
//!
//! Fragments may arrive in any order and any number of times. Each partial
//! message keeps a bitmap with one bit per byte received, so a fragment is
//! classified exactly: all of its bytes new (copied in), all already present
//! (a duplicate, ignored), or a mix — which an honest sender never produces,
//! because it only ever re-splits lost fragments and never merges them — so
//! a mix is reported as [`FragmentError::Overlap`].
//!
//! Memory is bounded before anything is allocated: the announced length is
//! checked against the maximum message size, and the number of partial
//! messages and their total bytes against their limits.

use crate::error::FragmentError;
use crate::pool::BufPool;

/// Bounds on what a [`Reassembler`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReassemblyLimits {
    /// Largest message length accepted.
    pub max_message: u32,
    /// Most partial messages held at once.
    pub max_partials: usize,
    /// Most bytes held by partial messages at once.
    pub max_bytes: usize,
}

/// What to do when a new partial message would exceed the bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Refuse the fragment with a capacity error.
    Refuse,
    /// Discard the partial with the smallest id (right for most-recent
    /// state, where older data is worthless anyway).
    EvictOldest,
    /// Accept beyond the count and byte bounds (the maximum message size
    /// still holds): for the one message an ordered stream waits on, whose
    /// refusal could deadlock the stream.
    Exempt,
}

/// What inserting a fragment achieved.
#[derive(Debug, PartialEq, Eq)]
pub enum Inserted {
    /// Stored; the message still misses bytes.
    Incomplete,
    /// Every byte of the fragment was already present.
    Duplicate,
    /// The message is complete: here it is.
    Complete(Vec<u8>),
}

#[derive(Debug, Default)]
struct Partial {
    id: u64,
    total: u32,
    received: u32,
    data: Vec<u8>,
    bits: Vec<u64>,
}

/// Counts set bits of `bits` in `[start, end)`.
fn count_range(bits: &[u64], start: usize, end: usize) -> usize {
    let mut count = 0;
    let mut i = start;
    while i < end {
        let word = i / 64;
        let lo = i % 64;
        let hi = (end - word * 64).min(64);
        let mask = if hi - lo == 64 {
            u64::MAX
        } else {
            ((1u64 << (hi - lo)) - 1) << lo
        };
        count += (bits[word] & mask).count_ones() as usize;
        i = word * 64 + hi;
    }
    count
}

/// Sets bits of `bits` in `[start, end)`.
fn set_range(bits: &mut [u64], start: usize, end: usize) {
    let mut i = start;
    while i < end {
        let word = i / 64;
        let lo = i % 64;
        let hi = (end - word * 64).min(64);
        let mask = if hi - lo == 64 {
            u64::MAX
        } else {
            ((1u64 << (hi - lo)) - 1) << lo
        };
        bits[word] |= mask;
        i = word * 64 + hi;
    }
}

/// Reassembles fragmented messages keyed by a 64-bit id.
#[derive(Debug)]
pub struct Reassembler {
    limits: ReassemblyLimits,
    partials: Vec<Partial>,
    spare: Vec<Partial>,
    bytes: usize,
}

impl Reassembler {
    /// An empty reassembler with these limits.
    pub fn new(limits: ReassemblyLimits) -> Self {
        Self {
            limits,
            partials: Vec::new(),
            spare: Vec::new(),
            bytes: 0,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> ReassemblyLimits {
        self.limits
    }

    /// Partial messages held.
    pub fn partial_count(&self) -> usize {
        self.partials.len()
    }

    /// Bytes held by partial messages.
    pub fn partial_bytes(&self) -> usize {
        self.bytes
    }

    /// Whether a partial message with this id exists.
    pub fn contains(&self, id: u64) -> bool {
        self.partials.iter().any(|p| p.id == id)
    }

    /// Adds a fragment of message `id`. Whole messages (offset 0, length
    /// `total`) complete at once without taking a partial slot.
    ///
    /// `policy` says what happens when a new partial would exceed the bounds.
    pub fn insert(
        &mut self,
        id: u64,
        total: u32,
        offset: u32,
        data: &[u8],
        policy: Policy,
        pool: &mut BufPool,
    ) -> Result<Inserted, FragmentError> {
        if total > self.limits.max_message {
            return Err(FragmentError::TooLarge {
                total,
                max: self.limits.max_message,
            });
        }
        let len = u32::try_from(data.len()).map_err(|_| FragmentError::OutOfBounds {
            offset,
            len: u32::MAX,
            total,
        })?;
        if offset as u64 + len as u64 > total as u64 {
            return Err(FragmentError::OutOfBounds { offset, len, total });
        }
        if len == 0 && total != 0 {
            return Err(FragmentError::Empty);
        }
        let index = match self.partials.iter().position(|p| p.id == id) {
            Some(i) => {
                let p = &self.partials[i];
                if p.total != total {
                    return Err(FragmentError::InconsistentLength {
                        expected: p.total,
                        got: total,
                    });
                }
                i
            }
            None => {
                if len == total {
                    return Ok(Inserted::Complete(pool.copy_of(data)));
                }
                self.make_room(total as usize, policy, pool)?;
                let mut p = self.spare.pop().unwrap_or_default();
                p.id = id;
                p.total = total;
                p.received = 0;
                p.data = pool.take();
                p.data.resize(total as usize, 0);
                p.bits.clear();
                p.bits.resize((total as usize).div_ceil(64), 0);
                self.bytes += total as usize;
                self.partials.push(p);
                self.partials.len() - 1
            }
        };
        let p = &mut self.partials[index];
        let (start, end) = (offset as usize, offset as usize + data.len());
        match count_range(&p.bits, start, end) {
            0 => {}
            n if n == data.len() => return Ok(Inserted::Duplicate),
            _ => return Err(FragmentError::Overlap { offset, len }),
        }
        p.data[start..end].copy_from_slice(data);
        set_range(&mut p.bits, start, end);
        p.received += len;
        if p.received < p.total {
            return Ok(Inserted::Incomplete);
        }
        let mut done = self.partials.swap_remove(index);
        self.bytes -= done.total as usize;
        let message = std::mem::take(&mut done.data);
        self.spare.push(done);
        Ok(Inserted::Complete(message))
    }

    fn make_room(
        &mut self,
        need: usize,
        policy: Policy,
        pool: &mut BufPool,
    ) -> Result<(), FragmentError> {
        if policy == Policy::Exempt {
            return Ok(());
        }
        loop {
            let count_ok = self.partials.len() < self.limits.max_partials;
            let bytes_ok = self.bytes + need <= self.limits.max_bytes;
            if count_ok && bytes_ok {
                return Ok(());
            }
            if policy == Policy::Refuse || self.partials.is_empty() {
                return Err(if count_ok {
                    FragmentError::OutOfMemory
                } else {
                    FragmentError::TooManyPartials
                });
            }
            let oldest = self
                .partials
                .iter()
                .enumerate()
                .min_by_key(|(_, p)| p.id)
                .map(|(i, _)| i)
                .unwrap_or(0);
            self.remove_at(oldest, pool);
        }
    }

    fn remove_at(&mut self, index: usize, pool: &mut BufPool) {
        let mut p = self.partials.swap_remove(index);
        self.bytes -= p.total as usize;
        pool.give(std::mem::take(&mut p.data));
        self.spare.push(p);
    }

    /// Discards every partial message whose id fails `keep`.
    pub fn retain(&mut self, mut keep: impl FnMut(u64) -> bool, pool: &mut BufPool) {
        let mut i = 0;
        while i < self.partials.len() {
            if keep(self.partials[i].id) {
                i += 1;
            } else {
                self.remove_at(i, pool);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn limits() -> ReassemblyLimits {
        ReassemblyLimits {
            max_message: 16 * 1024,
            max_partials: 4,
            max_bytes: 40 * 1024,
        }
    }

    #[test]
    fn rejects_malformed() {
        let mut r = Reassembler::new(limits());
        let mut pool = BufPool::default();
        assert!(matches!(
            r.insert(1, 100_000, 0, &[1], Policy::Refuse, &mut pool),
            Err(FragmentError::TooLarge { .. })
        ));
        assert!(matches!(
            r.insert(1, 10, 8, &[1, 2, 3], Policy::Refuse, &mut pool),
            Err(FragmentError::OutOfBounds { .. })
        ));
        assert_eq!(
            r.insert(1, 10, 0, &[1, 2, 3, 4], Policy::Refuse, &mut pool),
            Ok(Inserted::Incomplete)
        );
        assert!(matches!(
            r.insert(1, 12, 4, &[1], Policy::Refuse, &mut pool),
            Err(FragmentError::InconsistentLength { .. })
        ));
        assert!(matches!(
            r.insert(1, 10, 2, &[9, 9, 9, 9], Policy::Refuse, &mut pool),
            Err(FragmentError::Overlap { .. })
        ));
        assert_eq!(
            r.insert(1, 10, 1, &[2, 3], Policy::Refuse, &mut pool),
            Ok(Inserted::Duplicate)
        );
        assert_eq!(
            r.insert(1, 10, 4, &[5, 6, 7, 8, 9, 10], Policy::Refuse, &mut pool),
            Ok(Inserted::Complete(vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10]))
        );
        assert_eq!(r.partial_count(), 0);
        assert_eq!(r.partial_bytes(), 0);
    }

    #[test]
    fn bounds_partials() {
        let mut r = Reassembler::new(limits());
        let mut pool = BufPool::default();
        for id in 0..4 {
            r.insert(id, 1000, 0, &[0; 10], Policy::Refuse, &mut pool)
                .unwrap();
        }
        assert_eq!(
            r.insert(9, 1000, 0, &[0; 10], Policy::Refuse, &mut pool),
            Err(FragmentError::TooManyPartials)
        );
        r.insert(9, 1000, 0, &[0; 10], Policy::EvictOldest, &mut pool)
            .unwrap();
        assert!(!r.contains(0));
        assert!(r.contains(9));
    }

    proptest! {
        /// Any split of a message, shuffled and with duplicates, reassembles to the original.
        #[test]
        fn reassembles_any_order(
            message in proptest::collection::vec(any::<u8>(), 2..3000),
            cuts in proptest::collection::vec(any::<u16>(), 0..20),
            order in proptest::collection::vec(any::<u32>(), 1..60),
        ) {
            let mut points: Vec<usize> = cuts.iter().map(|c| *c as usize % message.len()).collect();
            points.push(0);
            points.push(message.len());
            points.sort_unstable();
            points.dedup();
            let pieces: Vec<(usize, usize)> = points.windows(2).map(|w| (w[0], w[1])).collect();
            let mut r = Reassembler::new(limits());
            let mut pool = BufPool::default();
            let mut sequence: Vec<usize> = order.iter().map(|o| *o as usize % pieces.len()).collect();
            sequence.extend(0..pieces.len());
            let mut done = None;
            for i in sequence {
                let (a, b) = pieces[i];
                match r.insert(7, message.len() as u32, a as u32, &message[a..b], Policy::Refuse, &mut pool).unwrap() {
                    Inserted::Complete(m) => { done = Some(m); break; }
                    Inserted::Incomplete | Inserted::Duplicate => {}
                }
            }
            prop_assert_eq!(done, Some(message));
        }

        #[test]
        fn arbitrary_fragments_never_panic(
            frags in proptest::collection::vec((0u64..4, any::<u32>(), any::<u32>(), 0usize..200), 0..100)
        ) {
            let mut r = Reassembler::new(limits());
            let mut pool = BufPool::default();
            let data = [0xAB; 200];
            for (id, total, offset, len) in frags {
                let _ = r.insert(id, total % 20_000, offset % 20_000, &data[..len], if id % 2 == 0 { Policy::EvictOldest } else { Policy::Refuse }, &mut pool);
                prop_assert!(r.partial_count() <= 4);
                prop_assert!(r.partial_bytes() <= 40 * 1024);
            }
        }
    }
}
