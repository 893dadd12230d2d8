//! Cache of whole encoded entity lists, for this frame and the one before.
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
//! changes of their own.
//!
//! The lists of the previous frame stay one frame more: a client whose
//! last acknowledgement has not arrived is sent that frame's list again
//! followed by this frame's (a chained snapshot, see `build`), two copies
//! instead of a list of its own. Committing a frame moves the current lists
//! to the previous slot; forgetting (baselines changed) empties both.
//!
//! With adapting models (see [`crate::adapt`]) the key holds the id of the
//! entity model that coded the list, and the list keeps the symbols it
//! coded: a client that copies it adds them to its own chain.

use fields::model::Context;
use fields::BitError;

use crate::bitset::Bitset;
use crate::entity_cache::next_stamp;
use crate::writer::{Mark, MessageWriter, Piece, PieceArena};

/// Lists kept per frame: the clients on the previous frame, and a few
/// groups whose acks were lost.
const LISTS: usize = 4;

#[derive(Debug, Clone)]
struct SharedList {
    stamp: u32,
    /// The id of the entity model that coded it (0: not adapting).
    model: u64,
    /// Frame of the base; `None` for a full update from the dummy.
    base_frame: Option<u32>,
    elapsed: i32,
    /// Entities held in the base (empty for a full update).
    base_visible: Bitset,
    /// Entities seen now.
    want: Bitset,
    piece: Piece,
    /// Updates in the list.
    written: u32,
    /// The number of its last update (the end marker's context).
    last: Option<u32>,
    /// Where its symbols are in the generation's symbol arena.
    symbols: (u32, u32),
}

/// A cached list.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ListHit {
    /// Whether it is one of the previous frame's lists.
    previous: bool,
    symbols: (u32, u32),
    piece: Piece,
    /// Its length in bits (for a range-coded message, what it adds to the
    /// bound of the message's length).
    pub bits: u32,
    /// Updates in it.
    pub written: u32,
    /// The number of its last update.
    pub last: Option<u32>,
}

/// The lists encoded for one frame.
#[derive(Debug, Clone)]
struct Generation {
    /// The frame they lead to (`None`: no frame yet, or forgotten).
    frame: Option<u32>,
    lists: Vec<SharedList>,
    next: usize,
    arena: PieceArena,
    /// The symbols of its lists (adapting models only).
    symbols: Vec<(Context, u8)>,
    stamp: u32,
}

impl Generation {
    fn new(limit: u32) -> Self {
        let blank = SharedList {
            stamp: 0,
            model: 0,
            base_frame: None,
            elapsed: 0,
            base_visible: Bitset::new(limit),
            want: Bitset::new(limit),
            piece: Piece::default(),
            written: 0,
            last: None,
            symbols: (0, 0),
        };
        Generation {
            frame: None,
            lists: vec![blank; LISTS],
            next: 0,
            arena: PieceArena::default(),
            symbols: Vec::new(),
            stamp: 1,
        }
    }

    fn clear(&mut self, frame: Option<u32>) {
        self.frame = frame;
        self.arena.clear();
        self.symbols.clear();
        if next_stamp(&mut self.stamp) {
            for list in &mut self.lists {
                list.stamp = 0;
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn lookup(
        &self,
        previous: bool,
        model: u64,
        base_frame: Option<u32>,
        base_visible: Option<&Bitset>,
        elapsed: i32,
        want: &Bitset,
    ) -> Option<ListHit> {
        self.lists.iter().find_map(|list| {
            (list.stamp == self.stamp
                && list.model == model
                && list.base_frame == base_frame
                && list.elapsed == elapsed
                && list.want == *want
                && same_set(&list.base_visible, base_visible))
            .then_some(ListHit {
                previous,
                symbols: list.symbols,
                piece: list.piece,
                bits: list.piece.bits,
                written: list.written,
                last: list.last,
            })
        })
    }

    fn memory_bytes(&self) -> usize {
        self.lists
            .iter()
            .map(|list| list.base_visible.memory_bytes() + list.want.memory_bytes())
            .sum::<usize>()
            + self.lists.capacity() * std::mem::size_of::<SharedList>()
            + self.arena.memory_bytes()
            + self.symbols.capacity() * std::mem::size_of::<(Context, u8)>()
    }
}

/// Whole entity lists encoded in the current frame and the one before.
#[derive(Debug, Clone)]
pub(crate) struct ListCache {
    current: Generation,
    previous: Generation,
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
        ListCache {
            current: Generation::new(limit),
            previous: Generation::new(limit),
        }
    }

    /// Frame `frame` was committed: the current lists become the previous
    /// frame's, and the current set starts empty.
    pub fn next_frame(&mut self, frame: u32) {
        std::mem::swap(&mut self.current, &mut self.previous);
        self.current.clear(Some(frame));
    }

    /// Forgets every list, this frame's and the previous one's (what they
    /// were encoded against may mean something else from now on).
    pub fn invalidate(&mut self) {
        let frame = self.current.frame;
        self.current.clear(frame);
        self.previous.clear(None);
    }

    /// The list from the base (`base_frame`, holding `base_visible`) to
    /// the view `want`, `elapsed` milliseconds apart, coded with the entity
    /// model `model` names, if encoded this frame.
    pub fn lookup(
        &self,
        model: u64,
        base_frame: Option<u32>,
        base_visible: Option<&Bitset>,
        elapsed: i32,
        want: &Bitset,
    ) -> Option<ListHit> {
        self.current
            .lookup(false, model, base_frame, base_visible, elapsed, want)
    }

    /// The same as [`lookup`](Self::lookup) among the lists of the previous
    /// frame, if that was frame `frame`.
    pub fn lookup_previous(
        &self,
        frame: u32,
        base_frame: Option<u32>,
        base_visible: Option<&Bitset>,
        elapsed: i32,
        want: &Bitset,
    ) -> Option<ListHit> {
        if self.previous.frame != Some(frame) {
            return None;
        }
        // Chained snapshots are never sent while adapting: model 0.
        self.previous
            .lookup(true, 0, base_frame, base_visible, elapsed, want)
    }

    /// Keeps what `message` was written with since `from`, which coded
    /// `symbols`, as this frame's list for the key.
    #[allow(clippy::too_many_arguments)]
    pub fn store(
        &mut self,
        model: u64,
        base_frame: Option<u32>,
        base_visible: Option<&Bitset>,
        elapsed: i32,
        want: &Bitset,
        (written, last): (u32, Option<u32>),
        message: &MessageWriter<'_>,
        from: Mark,
        symbols: &[(Context, u8)],
    ) {
        let generation = &mut self.current;
        let (Ok(first), Ok(count)) = (
            u32::try_from(generation.symbols.len()),
            u32::try_from(symbols.len()),
        ) else {
            return;
        };
        let Some(piece) = generation.arena.keep(message, from) else {
            return;
        };
        generation.symbols.extend_from_slice(symbols);
        let list = &mut generation.lists[generation.next];
        generation.next = (generation.next + 1) % LISTS;
        list.stamp = generation.stamp;
        list.model = model;
        list.symbols = (first, count);
        list.base_frame = base_frame;
        list.elapsed = elapsed;
        match base_visible {
            Some(set) => list.base_visible.copy_from(set),
            None => list.base_visible.clear(),
        }
        list.want.copy_from(want);
        list.piece = piece;
        list.written = written;
        list.last = last;
    }

    /// Appends a cached list to `sink`.
    pub fn copy_to(&self, hit: ListHit, sink: &mut MessageWriter<'_>) -> Result<(), BitError> {
        let arena = if hit.previous {
            &self.previous.arena
        } else {
            &self.current.arena
        };
        arena.copy_to(hit.piece, sink)
    }

    /// The symbols a cached list coded (empty when stored without).
    pub fn symbols(&self, hit: ListHit) -> &[(Context, u8)] {
        let generation = if hit.previous {
            &self.previous
        } else {
            &self.current
        };
        let (first, count) = (hit.symbols.0 as usize, hit.symbols.1 as usize);
        generation
            .symbols
            .get(first..first + count)
            .unwrap_or_default()
    }

    /// Bytes allocated.
    pub fn memory_bytes(&self) -> usize {
        self.current.memory_bytes() + self.previous.memory_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::MessageCoding;
    use crate::writer::RangeScratch;
    use fields::{BitReader, BitSink, BitSource};

    const SYMBOLS: [(Context, u8); 2] =
        [(Context::EntityNumber(0), 5), (Context::EntityNumber(1), 0)];

    fn set(members: &[u32]) -> Bitset {
        let mut set = Bitset::new(128);
        for &m in members {
            set.insert(m);
        }
        set
    }

    /// Writes `lead` and then `body` (value, width) raw, and stores what
    /// `body` wrote in `cache` under the rest of the arguments.
    #[allow(clippy::too_many_arguments)]
    fn store(
        cache: &mut ListCache,
        lead: &[(u32, u32)],
        body: &[(u32, u32)],
        model: u64,
        base: (Option<u32>, Option<&Bitset>),
        elapsed: i32,
        want: &Bitset,
        list: (u32, Option<u32>),
        symbols: &[(Context, u8)],
    ) {
        let mut message = [0u8; 16];
        let mut range = RangeScratch::default();
        let mut w = MessageWriter::new(&mut message, MessageCoding::Bits, &mut range);
        for &(value, width) in lead {
            w.put_bits(value, width).unwrap();
        }
        let from = w.mark();
        for &(value, width) in body {
            w.put_bits(value, width).unwrap();
        }
        cache.store(
            model, base.0, base.1, elapsed, want, list, &w, from, symbols,
        );
    }

    #[test]
    fn a_list_is_found_only_under_its_exact_key_and_reproduces_its_bits() {
        let mut cache = ListCache::new(128);
        let held = set(&[1, 2, 70]);
        let want = set(&[1, 2, 71]);
        store(
            &mut cache,
            &[(0b11, 2)],
            &[(0x1234_5678, 32), (0b101, 3)],
            4,
            (Some(9), Some(&held)),
            50,
            &want,
            (2, Some(71)),
            &SYMBOLS,
        );
        assert!(cache.lookup(4, Some(8), Some(&held), 50, &want).is_none());
        assert!(cache.lookup(4, Some(9), Some(&held), 33, &want).is_none());
        assert!(cache.lookup(4, Some(9), Some(&want), 50, &want).is_none());
        assert!(cache.lookup(4, Some(9), Some(&held), 50, &held).is_none());
        assert!(cache.lookup(4, None, None, 50, &want).is_none());
        // Another entity model codes other bits.
        assert!(cache.lookup(3, Some(9), Some(&held), 50, &want).is_none());
        let hit = cache.lookup(4, Some(9), Some(&held), 50, &want).unwrap();
        assert_eq!((hit.bits, hit.written, hit.last), (35, 2, Some(71)));
        assert_eq!(cache.symbols(hit), SYMBOLS);
        let mut out = [0u8; 16];
        let mut range = RangeScratch::default();
        let mut o = MessageWriter::new(&mut out, MessageCoding::Bits, &mut range);
        o.put_bit(false).unwrap();
        cache.copy_to(hit, &mut o).unwrap();
        let mut r = BitReader::new(&out);
        assert!(!r.get_bit().unwrap());
        assert_eq!(r.get_bits(32).unwrap(), 0x1234_5678);
        assert_eq!(r.get_bits(3).unwrap(), 0b101);
        cache.invalidate();
        assert!(cache.lookup(4, Some(9), Some(&held), 50, &want).is_none());
    }

    #[test]
    fn a_list_stays_one_frame_as_the_previous_frames_then_goes() {
        let mut cache = ListCache::new(128);
        cache.next_frame(10);
        let (held, want) = (set(&[1]), set(&[1, 2]));
        store(
            &mut cache,
            &[(0, 1)],
            &[(0b01_0011, 6)],
            0,
            (Some(9), Some(&held)),
            50,
            &want,
            (1, Some(2)),
            &[],
        );
        cache.next_frame(11);
        assert!(cache.lookup(0, Some(9), Some(&held), 50, &want).is_none());
        assert!(cache
            .lookup_previous(9, Some(9), Some(&held), 50, &want)
            .is_none());
        let hit = cache
            .lookup_previous(10, Some(9), Some(&held), 50, &want)
            .unwrap();
        // This frame's own list goes in another arena: the previous
        // frame's bits are still the ones copied.
        store(
            &mut cache,
            &[],
            &[(0, 9)],
            0,
            (Some(10), Some(&want)),
            50,
            &want,
            (0, None),
            &[],
        );
        let mut out = [0u8; 4];
        let mut range = RangeScratch::default();
        let mut o = MessageWriter::new(&mut out, MessageCoding::Bits, &mut range);
        cache.copy_to(hit, &mut o).unwrap();
        assert_eq!(o.bits_written(), 6);
        let mut r = BitReader::new(&out);
        assert_eq!(r.get_bits(6).unwrap(), 0b01_0011);
        cache.next_frame(12);
        assert!(cache
            .lookup_previous(10, Some(9), Some(&held), 50, &want)
            .is_none());
        assert!(cache
            .lookup_previous(11, Some(10), Some(&want), 50, &want)
            .is_some());
        cache.invalidate();
        assert!(cache
            .lookup_previous(11, Some(10), Some(&want), 50, &want)
            .is_none());
    }

    #[test]
    fn a_full_update_list_matches_an_empty_base_only() {
        let mut cache = ListCache::new(128);
        let want = set(&[3]);
        store(
            &mut cache,
            &[],
            &[(0xF_FFFF, 20)],
            0,
            (None, None),
            0,
            &want,
            (1, Some(3)),
            &[],
        );
        assert!(cache.lookup(0, None, None, 0, &want).is_some());
        assert!(cache.lookup(0, None, Some(&set(&[])), 0, &want).is_some());
        assert!(cache.lookup(0, None, Some(&set(&[3])), 0, &want).is_none());
    }
}
