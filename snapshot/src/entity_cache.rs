//! Per-frame cache of encoded entity updates.
//!
//! In steady state most clients acknowledged the previous frame, so they
//! all need the same delta for a moving entity: same base state, same new
//! state, and (when their views agree) the same previous entity in the
//! list. The codec's output depends on nothing else, so the first encoding
//! is kept as bits and copied for the others. A copy is a few 32-bit moves
//! where an encoding walks every field; that is what keeps 64 clients within
//! the frame budget. The key holds every input of
//! [`Codec::write_entity`](fields::Codec::write_entity) that varies within a
//! frame, and the cache is emptied when a frame is committed (the only time
//! state references are reused), so a hit is always the exact encoding.

use fields::BitError;

use crate::writer::{Mark, MessageWriter, Piece, PieceArena};

/// Base key of an entity new to the client: its spawn baseline, or the
/// zeroed dummy when it has none (the same for every client).
pub(crate) const SPAWN_BASE: u32 = u32::MAX - 1;

const NO_LAST: u32 = u32::MAX;
/// Variants kept per entity number: enough for "most clients" and "the
/// clients one ack behind".
const WAYS: usize = 2;

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    stamp: u32,
    /// The id of the model that coded it (adapting models differ between
    /// clients; 0 when the engine does not adapt).
    model: u64,
    elapsed: i32,
    base: u32,
    new: u32,
    last: u32,
    piece: Piece,
    written: bool,
}

/// A cached encoding.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hit {
    piece: Piece,
    /// What `write_entity` returned.
    pub written: bool,
}

/// Encoded entity updates of the current frame.
#[derive(Debug, Clone)]
pub(crate) struct EntityCache {
    entries: Vec<[Entry; WAYS]>,
    next_way: Vec<u8>,
    arena: PieceArena,
    stamp: u32,
}

impl EntityCache {
    /// An empty cache for entity numbers below `limit`.
    pub fn new(limit: u32) -> Self {
        EntityCache {
            entries: vec![[Entry::default(); WAYS]; limit as usize],
            next_way: vec![0; limit as usize],
            arena: PieceArena::default(),
            stamp: 1,
        }
    }

    /// Forgets everything (a new frame was committed).
    pub fn invalidate(&mut self) {
        self.arena.clear();
        if next_stamp(&mut self.stamp) {
            for ways in &mut self.entries {
                *ways = [Entry::default(); WAYS];
            }
        }
    }

    /// The cached encoding of entity `number` from `base` to `new` after
    /// `last`, in a delta context of `elapsed` milliseconds (the native
    /// codec's predictors make the encoding depend on it), coded with the
    /// model `model` names.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn lookup(
        &self,
        number: u32,
        model: u64,
        elapsed: i32,
        base: u32,
        new: u32,
        last: Option<u32>,
    ) -> Option<Hit> {
        let last = last.unwrap_or(NO_LAST);
        self.entries.get(number as usize)?.iter().find_map(|e| {
            (e.stamp == self.stamp
                && e.model == model
                && e.elapsed == elapsed
                && e.base == base
                && e.new == new
                && e.last == last)
                .then_some(Hit {
                    piece: e.piece,
                    written: e.written,
                })
        })
    }

    /// Keeps what `message` was written with since `from` as the encoding
    /// for the key.
    #[allow(clippy::too_many_arguments)]
    pub fn store(
        &mut self,
        number: u32,
        model: u64,
        elapsed: i32,
        base: u32,
        new: u32,
        last: Option<u32>,
        written: bool,
        message: &MessageWriter<'_>,
        from: Mark,
    ) {
        let Some(ways) = self.entries.get_mut(number as usize) else {
            return;
        };
        let Some(piece) = self.arena.keep(message, from) else {
            return;
        };
        let way = &mut self.next_way[number as usize];
        ways[*way as usize] = Entry {
            stamp: self.stamp,
            model,
            elapsed,
            base,
            new,
            last: last.unwrap_or(NO_LAST),
            piece,
            written,
        };
        *way = (*way + 1) % WAYS as u8;
    }

    /// Appends a cached encoding to `sink`.
    #[inline]
    pub fn copy_to(&self, hit: Hit, sink: &mut MessageWriter<'_>) -> Result<(), BitError> {
        self.arena.copy_to(hit.piece, sink)
    }

    /// Bytes allocated.
    pub fn memory_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<[Entry; WAYS]>()
            + self.next_way.capacity()
            + self.arena.memory_bytes()
    }
}

/// Moves a cache's frame stamp on, so entries stamped earlier stop
/// matching. Returns `true` when the stamps wrapped: the caller must then
/// clear its entries' stamps for real (to 0, which no stamp ever is).
pub(crate) fn next_stamp(stamp: &mut u32) -> bool {
    *stamp = stamp.wrapping_add(1);
    let wrapped = *stamp == 0;
    if wrapped {
        *stamp = 1;
    }
    wrapped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::MessageCoding;
    use crate::writer::RangeScratch;
    use fields::{BitReader, BitSink, BitSource};

    #[test]
    fn a_hit_reproduces_the_stored_bits_at_any_alignment() {
        let mut message = [0u8; 16];
        let mut range = RangeScratch::default();
        let mut w = MessageWriter::new(&mut message, MessageCoding::Bits, &mut range);
        w.put_bits(0b101, 3).unwrap();
        let from = w.mark();
        w.put_bits(0xDEAD_BEEF, 32).unwrap();
        w.put_bits(0x1F, 5).unwrap();
        let mut cache = EntityCache::new(8);
        cache.store(3, 5, 50, 7, 9, None, true, &w, from);
        assert!(cache.lookup(3, 5, 50, 7, 9, Some(1)).is_none());
        // Another elapsed time may predict differently: no hit.
        assert!(cache.lookup(3, 5, 33, 7, 9, None).is_none());
        // Another model codes other bits.
        assert!(cache.lookup(3, 6, 50, 7, 9, None).is_none());
        let hit = cache.lookup(3, 5, 50, 7, 9, None).unwrap();
        let mut out = [0u8; 16];
        let mut range = RangeScratch::default();
        let mut o = MessageWriter::new(&mut out, MessageCoding::Bits, &mut range);
        o.put_bit(true).unwrap();
        cache.copy_to(hit, &mut o).unwrap();
        let mut r = BitReader::new(&out);
        assert!(r.get_bit().unwrap());
        assert_eq!(r.get_bits(32).unwrap(), 0xDEAD_BEEF);
        assert_eq!(r.get_bits(5).unwrap(), 0x1F);
        cache.invalidate();
        assert!(cache.lookup(3, 5, 50, 7, 9, None).is_none());
    }
}
