//! Per-frame cache of whole encoded entity lists.
//!
//! An entity list — every added, changed and removed entity of a snapshot,
//! in number order — is a function of the base frame, the set of entities
//! the client held in that base, the set it sees now and the elapsed time
//! (the native codec's predictors read it). In steady state most clients
//! acknowledged the same frame and see the same entities, so they all need
//! the same list, bit for bit. The first client's list is kept and the
//! others copy it: one bit-shifted copy of a few hundred bytes where a build
//! merges two entity sets and emits every update. Only lists that were sent
//! whole are kept (nothing left out for the byte budget: left-out updates
//! depend on per-client priorities), and only for bases without left-out
//! changes of their own. Like the entity cache, it is emptied when a frame
//! is committed, so a hit is always the exact list.

use fields::{BitError, BitSink};

use crate::bitset::Bitset;
use crate::entity_cache::{keep_bytes, next_stamp};

/// Lists kept per frame: the clients on the previous frame, and a few
/// groups whose acks were lost.
const LISTS: usize = 4;

#[derive(Debug, Clone)]
struct SharedList {
    stamp: u32,
    /// Frame of the base; `None` for a full update from the dummy.
    base_frame: Option<u32>,
    elapsed: i32,
    /// Entities held in the base (empty for a full update).
    base_visible: Bitset,
    /// Entities seen now.
    want: Bitset,
    start: u32,
    lead: u8,
    bits: u32,
    /// Updates in the list.
    written: u32,
    /// The number of its last update (the end marker's context).
    last: Option<u32>,
}

/// A cached list.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListHit {
    start: u32,
    lead: u8,
    /// Its length in bits.
    pub bits: u32,
    /// Updates in it.
    pub written: u32,
    /// The number of its last update.
    pub last: Option<u32>,
}

/// Whole entity lists encoded in the current frame.
#[derive(Debug, Clone)]
pub(crate) struct ListCache {
    lists: Vec<SharedList>,
    next: usize,
    arena: Vec<u8>,
    stamp: u32,
}

/// Whether a base's held set equals a cached one (`None`: the empty set).
fn same_set(cached: &Bitset, set: Option<&Bitset>) -> bool {
    match set {
        Some(set) => cached == set,
        None => cached.words().iter().all(|&word| word == 0),
    }
}

impl ListCache {
    /// An empty cache for entity numbers below `limit`.
    pub fn new(limit: u32) -> Self {
        let blank = SharedList {
            stamp: 0,
            base_frame: None,
            elapsed: 0,
            base_visible: Bitset::new(limit),
            want: Bitset::new(limit),
            start: 0,
            lead: 0,
            bits: 0,
            written: 0,
            last: None,
        };
        ListCache {
            lists: vec![blank; LISTS],
            next: 0,
            arena: Vec::new(),
            stamp: 1,
        }
    }

    /// Forgets everything (a new frame was committed).
    pub fn invalidate(&mut self) {
        self.arena.clear();
        if next_stamp(&mut self.stamp) {
            for list in &mut self.lists {
                list.stamp = 0;
            }
        }
    }

    /// The list from the base (`base_frame`, holding `base_visible`) to
    /// the view `want`, `elapsed` milliseconds apart, if encoded this frame.
    pub fn lookup(
        &self,
        base_frame: Option<u32>,
        base_visible: Option<&Bitset>,
        elapsed: i32,
        want: &Bitset,
    ) -> Option<ListHit> {
        self.lists.iter().find_map(|list| {
            (list.stamp == self.stamp
                && list.base_frame == base_frame
                && list.elapsed == elapsed
                && list.want == *want
                && same_set(&list.base_visible, base_visible))
            .then_some(ListHit {
                start: list.start,
                lead: list.lead,
                bits: list.bits,
                written: list.written,
                last: list.last,
            })
        })
    }

    /// Keeps bits `from..to` of `message` as the list for the key.
    #[allow(clippy::too_many_arguments)]
    pub fn store(
        &mut self,
        base_frame: Option<u32>,
        base_visible: Option<&Bitset>,
        elapsed: i32,
        want: &Bitset,
        (written, last): (u32, Option<u32>),
        message: &[u8],
        from: usize,
        to: usize,
    ) -> Result<(), BitError> {
        let Some((start, lead)) = keep_bytes(&mut self.arena, message, from, to) else {
            return Ok(());
        };
        let list = &mut self.lists[self.next];
        self.next = (self.next + 1) % LISTS;
        list.stamp = self.stamp;
        list.base_frame = base_frame;
        list.elapsed = elapsed;
        match base_visible {
            Some(set) => list.base_visible.copy_from(set),
            None => list.base_visible.clear(),
        }
        list.want.copy_from(want);
        list.start = start;
        list.lead = lead;
        list.bits = (to - from) as u32;
        list.written = written;
        list.last = last;
        Ok(())
    }

    /// Appends a cached list to `sink`.
    pub fn copy_to<S: BitSink + ?Sized>(&self, hit: ListHit, sink: &mut S) -> Result<(), BitError> {
        let bytes = &self.arena[hit.start as usize..];
        sink.put_bit_slice(bytes, usize::from(hit.lead), hit.bits as usize)
    }

    /// Bytes allocated.
    pub fn memory_bytes(&self) -> usize {
        self.lists
            .iter()
            .map(|list| list.base_visible.memory_bytes() + list.want.memory_bytes())
            .sum::<usize>()
            + self.lists.capacity() * std::mem::size_of::<SharedList>()
            + self.arena.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fields::{BitReader, BitSource, BitWriter};

    fn set(members: &[u32]) -> Bitset {
        let mut set = Bitset::new(128);
        for &m in members {
            set.insert(m);
        }
        set
    }

    #[test]
    fn a_list_is_found_only_under_its_exact_key_and_reproduces_its_bits() {
        let mut message = [0u8; 16];
        let mut w = BitWriter::new(&mut message);
        w.put_bits(0b11, 2).unwrap();
        w.put_bits(0x1234_5678, 32).unwrap();
        w.put_bits(0b101, 3).unwrap();
        let mut cache = ListCache::new(128);
        let held = set(&[1, 2, 70]);
        let want = set(&[1, 2, 71]);
        cache
            .store(
                Some(9),
                Some(&held),
                50,
                &want,
                (2, Some(71)),
                w.written(),
                2,
                37,
            )
            .unwrap();
        assert!(cache.lookup(Some(8), Some(&held), 50, &want).is_none());
        assert!(cache.lookup(Some(9), Some(&held), 33, &want).is_none());
        assert!(cache.lookup(Some(9), Some(&want), 50, &want).is_none());
        assert!(cache.lookup(Some(9), Some(&held), 50, &held).is_none());
        assert!(cache.lookup(None, None, 50, &want).is_none());
        let hit = cache.lookup(Some(9), Some(&held), 50, &want).unwrap();
        assert_eq!((hit.bits, hit.written, hit.last), (35, 2, Some(71)));
        let mut out = [0u8; 16];
        let mut o = BitWriter::new(&mut out);
        o.put_bit(false).unwrap();
        cache.copy_to(hit, &mut o).unwrap();
        let mut r = BitReader::new(&out);
        assert!(!r.get_bit().unwrap());
        assert_eq!(r.get_bits(32).unwrap(), 0x1234_5678);
        assert_eq!(r.get_bits(3).unwrap(), 0b101);
        cache.invalidate();
        assert!(cache.lookup(Some(9), Some(&held), 50, &want).is_none());
    }

    #[test]
    fn a_full_update_list_matches_an_empty_base_only() {
        let mut cache = ListCache::new(128);
        let want = set(&[3]);
        cache
            .store(None, None, 0, &want, (1, Some(3)), &[0xff; 4], 0, 20)
            .unwrap();
        assert!(cache.lookup(None, None, 0, &want).is_some());
        assert!(cache.lookup(None, Some(&set(&[])), 0, &want).is_some());
        assert!(cache.lookup(None, Some(&set(&[3])), 0, &want).is_none());
    }
}
