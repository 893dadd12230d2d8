//! Shared history: every entity state stored once, every frame a table of
//! references into that store.
//!
//! Quake 3 copies each visible entity state into each client's snapshot
//! ring; at 64 clients that is over 100 MB. Here a state is stored once when
//! it changes ([`StateSlab`]), each committed frame holds a per-number table
//! of references ([`Frame`]), and a client's snapshot refers to a frame plus
//! the set of numbers it holds. References are counted: a state lives while
//! a frame table or a client's budget-skipped override refers to it, and a
//! frame lives while it is the newest or a client snapshot refers to it. So
//! memory follows how much actually changed within the clients' rings, not
//! clients × entities × frames.

use std::collections::VecDeque;
use std::mem::size_of;

use crate::bitset::Bitset;

/// "No state": the entity number is unused in a frame table.
pub(crate) const NO_STATE: u32 = u32::MAX;

/// Reference-counted storage of entity states, addressed by `u32`.
#[derive(Debug, Clone)]
pub(crate) struct StateSlab<E> {
    states: Vec<E>,
    counts: Vec<u32>,
    /// [`state_hash`](crate::checksum::state_hash) of each state, computed
    /// once when stored so sync checksums cost a lookup per entity.
    hashes: Vec<u32>,
    free: Vec<u32>,
}

impl<E> StateSlab<E> {
    fn new() -> Self {
        StateSlab {
            states: Vec::new(),
            counts: Vec::new(),
            hashes: Vec::new(),
            free: Vec::new(),
        }
    }

    /// Stores a state with no references yet; the caller retains it at once.
    pub fn insert(&mut self, state: E, hash: u32) -> u32 {
        match self.free.pop() {
            Some(index) => {
                let slot = index as usize;
                self.states[slot] = state;
                self.counts[slot] = 0;
                self.hashes[slot] = hash;
                index
            }
            None => {
                self.states.push(state);
                self.counts.push(0);
                self.hashes.push(hash);
                (self.states.len() - 1) as u32
            }
        }
    }

    /// Adds a reference.
    #[inline]
    pub fn retain(&mut self, index: u32) {
        self.counts[index as usize] += 1;
    }

    /// Drops a reference; the slot is reused once none are left.
    #[inline]
    pub fn release(&mut self, index: u32) {
        let count = &mut self.counts[index as usize];
        *count -= 1;
        if *count == 0 {
            self.free.push(index);
        }
    }

    /// The state at `index`.
    #[inline]
    pub fn get(&self, index: u32) -> &E {
        &self.states[index as usize]
    }

    /// The state hash at `index`.
    #[inline]
    pub fn hash(&self, index: u32) -> u32 {
        self.hashes[index as usize]
    }

    /// States currently referenced.
    pub fn live(&self) -> usize {
        self.states.len() - self.free.len()
    }

    /// Bytes allocated (excluding what `E` itself owns on the heap).
    pub fn memory_bytes(&self) -> usize {
        self.states.capacity() * size_of::<E>()
            + (self.counts.capacity() + self.hashes.capacity() + self.free.capacity())
                * size_of::<u32>()
    }
}

/// One committed frame of the master state.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    /// Server frame number.
    pub number: u32,
    /// Server time, milliseconds.
    pub time: u32,
    /// State reference per entity number ([`NO_STATE`] when unused).
    pub table: Vec<u32>,
    /// Numbers in use, increasing.
    pub live: Vec<u32>,
    /// The same numbers as a set, for walking 64 at a time.
    pub live_set: Bitset,
    /// Numbers that are in scope for every client.
    pub always: Bitset,
    /// Client snapshots referring to this frame.
    users: u32,
    alive: bool,
}

impl Frame {
    fn blank(limit: u32) -> Self {
        Frame {
            number: 0,
            time: 0,
            table: vec![NO_STATE; limit as usize],
            live: Vec::new(),
            live_set: Bitset::new(limit),
            always: Bitset::new(limit),
            users: 0,
            alive: false,
        }
    }

    /// Adds entity `number` with state `state` (numbers in increasing order).
    pub fn push<E>(&mut self, slab: &mut StateSlab<E>, number: u32, state: u32, always: bool) {
        slab.retain(state);
        self.table[number as usize] = state;
        self.live.push(number);
        self.live_set.insert(number);
        if always {
            self.always.insert(number);
        }
    }

    fn memory_bytes(&self) -> usize {
        (self.table.capacity() + self.live.capacity()) * size_of::<u32>()
            + self.live_set.memory_bytes()
            + self.always.memory_bytes()
    }
}

/// The state slab and the frames still referred to.
#[derive(Debug, Clone)]
pub(crate) struct FrameStore<E> {
    pub slab: StateSlab<E>,
    /// Consecutive frame numbers from the front; dead frames in the middle
    /// stay as empty husks until they reach the front.
    frames: VecDeque<Frame>,
    /// Buffers of dead frames, reused by [`FrameStore::begin`].
    spare: Vec<Frame>,
    limit: u32,
}

impl<E> FrameStore<E> {
    /// An empty store for entity numbers below `limit`.
    pub fn new(limit: u32) -> Self {
        FrameStore {
            slab: StateSlab::new(),
            frames: VecDeque::new(),
            spare: Vec::new(),
            limit,
        }
    }

    /// The newest committed frame.
    pub fn newest(&self) -> Option<&Frame> {
        self.frames.back()
    }

    /// Frame `number`, if still stored.
    pub fn frame(&self, number: u32) -> Option<&Frame> {
        let front = self.frames.front()?.number;
        let frame = self.frames.get(number.wrapping_sub(front) as usize)?;
        (frame.alive && frame.number == number).then_some(frame)
    }

    /// A blank frame to fill and [`push`](Self::push), reusing dead buffers.
    pub fn begin(&mut self, number: u32, time: u32) -> Frame {
        let mut frame = self.spare.pop().unwrap_or_else(|| Frame::blank(self.limit));
        frame.number = number;
        frame.time = time;
        frame.users = 0;
        frame.alive = true;
        frame
    }

    /// Makes `frame` the newest; the previous newest dies if no client
    /// snapshot refers to it.
    pub fn push(&mut self, frame: Frame) {
        let previous = self.frames.len().checked_sub(1);
        self.frames.push_back(frame);
        if let Some(index) = previous {
            if self.frames[index].users == 0 {
                self.kill(index);
            }
        }
    }

    /// A client snapshot now refers to frame `number`.
    pub fn acquire(&mut self, number: u32) {
        if let Some(index) = self.index(number) {
            self.frames[index].users += 1;
        }
    }

    /// A client snapshot no longer refers to frame `number`.
    pub fn release(&mut self, number: u32) {
        let Some(index) = self.index(number) else {
            return;
        };
        let frame = &mut self.frames[index];
        frame.users -= 1;
        if frame.users == 0 && index + 1 < self.frames.len() {
            self.kill(index);
        }
    }

    fn index(&self, number: u32) -> Option<usize> {
        let front = self.frames.front()?.number;
        let index = number.wrapping_sub(front) as usize;
        (self
            .frames
            .get(index)
            .is_some_and(|f| f.alive && f.number == number))
        .then_some(index)
    }

    /// Releases a frame's states and recycles its buffers.
    fn kill(&mut self, index: usize) {
        let frame = &mut self.frames[index];
        frame.alive = false;
        for &number in &frame.live {
            let state = frame.table[number as usize];
            self.slab.release(state);
            frame.table[number as usize] = NO_STATE;
        }
        frame.live.clear();
        frame.live_set.clear();
        frame.always.clear();
        let husk = Frame {
            table: std::mem::take(&mut frame.table),
            live: std::mem::take(&mut frame.live),
            live_set: std::mem::take(&mut frame.live_set),
            always: std::mem::take(&mut frame.always),
            ..Frame::blank(0)
        };
        self.spare.push(husk);
        while self.frames.front().is_some_and(|f| !f.alive) {
            self.frames.pop_front();
        }
    }

    /// Frames still stored.
    pub fn frame_count(&self) -> usize {
        self.frames.iter().filter(|f| f.alive).count()
    }

    /// Bytes of frame tables (including spares and husks).
    pub fn frame_memory_bytes(&self) -> usize {
        self.frames.capacity() * size_of::<Frame>()
            + self.spare.capacity() * size_of::<Frame>()
            + self
                .frames
                .iter()
                .chain(&self.spare)
                .map(Frame::memory_bytes)
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(store: &mut FrameStore<u64>, number: u32, states: &[(u32, u32)]) {
        let mut frame = store.begin(number, number * 50);
        for &(n, s) in states {
            frame.push(&mut store.slab, n, s, false);
        }
        store.push(frame);
    }

    #[test]
    fn states_live_exactly_as_long_as_a_frame_refers_to_them() {
        let mut store = FrameStore::new(8);
        let a = store.slab.insert(10, 0);
        let b = store.slab.insert(20, 0);
        commit(&mut store, 0, &[(1, a), (2, b)]);
        store.acquire(0);
        let c = store.slab.insert(21, 0);
        commit(&mut store, 1, &[(1, a), (2, c)]);
        // Frame 0 is held by a client snapshot, so b survives.
        assert_eq!(store.slab.live(), 3);
        assert!(store.frame(0).is_some());
        commit(&mut store, 2, &[(1, a)]);
        // Frame 1 was never acquired: it died when frame 2 arrived, but c is gone only now.
        assert!(store.frame(1).is_none());
        assert_eq!(store.slab.live(), 2);
        store.release(0);
        assert!(store.frame(0).is_none());
        assert_eq!(store.slab.live(), 1);
        assert_eq!(store.frame_count(), 1);
        assert_eq!(*store.slab.get(store.newest().unwrap().table[1]), 10);
        // Freed slots are reused.
        let d = store.slab.insert(30, 0);
        assert!(d == b || d == c);
    }
}
