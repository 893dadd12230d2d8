//! Guaranteed delivery classes: ordered messages and quickest items.
//!
//! **Guaranteed ordered** (TRIBES' guaranteed events, Quake 3's reliable
//! commands): a message is cut into pieces as datagram space allows; a piece
//! whose datagram is notified dropped goes back to "unsent" and is sent again
//! before any new data — possibly split further if less space is free then,
//! never merged, so the receiver sees every byte range either whole-new or
//! whole-duplicate. The receiver delivers each message once, in id order.
//!
//! **Guaranteed quickest** (player commands): every datagram repeats all
//! unacknowledged items, oldest first, until a datagram carrying an item is
//! acknowledged. Because an item only leaves the sender once the receiver
//! has it, the receiver never sees a gap and delivers each item once.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::error::FragmentError;
use crate::fragment::{Inserted, Policy, Reassembler, ReassemblyLimits};
use crate::notify::SentRecord;
use crate::packet::{Chunk, Writer, FRAG_CHUNK_OVERHEAD, WHOLE_CHUNK_OVERHEAD};
use crate::pool::BufPool;
use crate::sequence::extend;

/// A piece is only split if at least this many payload bytes fit, so a
/// nearly full datagram does not scatter a message into tiny fragments.
pub const MIN_SPLIT: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PieceState {
    Unsent,
    InFlight,
    Acked,
}

#[derive(Debug, Clone, Copy)]
struct Piece {
    offset: u32,
    len: u32,
    state: PieceState,
}

#[derive(Debug)]
struct OutMessage {
    id: u64,
    data: Vec<u8>,
    pieces: Vec<Piece>,
    unsent: u32,
    unacked: u32,
}

/// Writes as much of `pieces` (unsent ones) as fits into `w`, leaving at
/// least nothing behind in the budget `space`. Shared by ordered messages.
fn write_message(
    msg: &mut OutMessage,
    w: &mut Writer<'_>,
    space: &mut usize,
    record: &mut SentRecord,
    unsent_bytes: &mut usize,
    fragments: &mut u64,
) -> bool {
    let total = msg.data.len() as u32;
    let mut i = 0;
    while i < msg.pieces.len() {
        let piece = msg.pieces[i];
        if piece.state != PieceState::Unsent {
            i += 1;
            continue;
        }
        let whole = piece.offset == 0 && piece.len == total;
        let overhead = if whole {
            WHOLE_CHUNK_OVERHEAD
        } else {
            FRAG_CHUNK_OVERHEAD
        };
        let mut len = piece.len as usize;
        if overhead + len > *space {
            // Split: the first part goes now (as a fragment), the rest waits.
            if *space < FRAG_CHUNK_OVERHEAD + MIN_SPLIT || len <= MIN_SPLIT {
                return false;
            }
            len = *space - FRAG_CHUNK_OVERHEAD;
            let rest = Piece {
                offset: piece.offset + len as u32,
                len: piece.len - len as u32,
                state: PieceState::Unsent,
            };
            msg.pieces[i].len = len as u32;
            msg.pieces.insert(i + 1, rest);
            msg.unsent += 1;
            msg.unacked += 1;
        }
        let (start, end) = (piece.offset as usize, piece.offset as usize + len);
        let chunk = Chunk::Ordered {
            id: msg.id as u16,
            total,
            offset: piece.offset,
            data: &msg.data[start..end],
        };
        let before = w.len();
        if chunk.write(w).is_err() {
            return false;
        }
        *space -= w.len() - before;
        if chunk.encoded_len() > WHOLE_CHUNK_OVERHEAD + len {
            *fragments += 1;
        }
        msg.pieces[i].state = PieceState::InFlight;
        msg.unsent -= 1;
        *unsent_bytes -= len;
        record.ordered.push((msg.id, piece.offset));
        i += 1;
    }
    true
}

/// Bounds of the ordered sender.
#[derive(Debug, Clone, Copy)]
pub struct OrderedLimits {
    /// Most messages queued or in flight before the queue overflows.
    pub max_messages: usize,
    /// Most bytes queued or in flight before the queue overflows.
    pub max_bytes: usize,
    /// Most messages between the oldest unacknowledged one and the newest
    /// sent; the receiver uses the same number to bound what it buffers.
    pub window: u64,
}

/// The queue overflowed (Quake 3's "command overflow").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow;

/// Sending side of guaranteed-ordered messages.
#[derive(Debug)]
pub struct OrderedSender {
    limits: OrderedLimits,
    queue: VecDeque<OutMessage>,
    base_id: u64,
    next_new: usize,
    resend: BinaryHeap<Reverse<u64>>,
    queued_bytes: usize,
    unsent_bytes: usize,
    spare: Vec<Vec<Piece>>,
    /// Pieces sent again after their datagram was dropped.
    pub resends: u64,
    /// Fragment chunks written.
    pub fragments: u64,
    /// Messages fully acknowledged.
    pub acked: u64,
}

impl OrderedSender {
    /// An empty sender.
    pub fn new(limits: OrderedLimits) -> Self {
        Self {
            limits,
            queue: VecDeque::new(),
            base_id: 0,
            next_new: 0,
            resend: BinaryHeap::new(),
            queued_bytes: 0,
            unsent_bytes: 0,
            spare: Vec::new(),
            resends: 0,
            fragments: 0,
            acked: 0,
        }
    }

    /// Messages queued or in flight.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// `true` when every message is acknowledged.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Bytes queued or in flight.
    pub fn queued_bytes(&self) -> usize {
        self.queued_bytes
    }

    /// Bytes waiting to be (re)sent.
    pub fn unsent_bytes(&self) -> usize {
        self.unsent_bytes
    }

    /// Messages sent at least once and not yet fully acknowledged.
    pub fn in_flight(&self) -> usize {
        self.next_new
    }

    /// Queues a message. `data` is owned (from the pool) and returned to it once acknowledged.
    pub fn push(&mut self, data: Vec<u8>) -> Result<(), Overflow> {
        if self.queue.len() >= self.limits.max_messages
            || self.queued_bytes + data.len() > self.limits.max_bytes
        {
            return Err(Overflow);
        }
        let mut pieces = self.spare.pop().unwrap_or_default();
        pieces.clear();
        pieces.push(Piece {
            offset: 0,
            len: data.len() as u32,
            state: PieceState::Unsent,
        });
        self.queued_bytes += data.len();
        self.unsent_bytes += data.len();
        self.queue.push_back(OutMessage {
            id: self.base_id + self.queue.len() as u64,
            data,
            pieces,
            unsent: 1,
            unacked: 1,
        });
        Ok(())
    }

    fn new_allowed(&self) -> bool {
        self.next_new < self.queue.len() && (self.next_new as u64) < self.limits.window
    }

    /// Whether anything could be written now.
    pub fn has_sendable(&self) -> bool {
        !self.resend.is_empty() || self.new_allowed()
    }

    /// Writes unsent pieces — resends first, lowest id first — while they fit in `space`.
    pub fn write(&mut self, w: &mut Writer<'_>, space: &mut usize, record: &mut SentRecord) {
        while let Some(&Reverse(id)) = self.resend.peek() {
            let Some(index) = id.checked_sub(self.base_id).map(|i| i as usize) else {
                self.resend.pop();
                continue;
            };
            let Some(msg) = self.queue.get_mut(index) else {
                self.resend.pop();
                continue;
            };
            if msg.unsent == 0 {
                self.resend.pop();
                continue;
            }
            if !write_message(
                msg,
                w,
                space,
                record,
                &mut self.unsent_bytes,
                &mut self.fragments,
            ) {
                return;
            }
            self.resend.pop();
        }
        while self.new_allowed() {
            let msg = &mut self.queue[self.next_new];
            if !write_message(
                msg,
                w,
                space,
                record,
                &mut self.unsent_bytes,
                &mut self.fragments,
            ) {
                return;
            }
            self.next_new += 1;
        }
    }

    /// Applies the notification of a datagram that carried piece `(id, offset)`.
    pub fn on_notify(&mut self, id: u64, offset: u32, delivered: bool, pool: &mut BufPool) {
        let Some(index) = id.checked_sub(self.base_id) else {
            return;
        };
        let Some(msg) = self.queue.get_mut(index as usize) else {
            return;
        };
        let Ok(p) = msg.pieces.binary_search_by_key(&offset, |p| p.offset) else {
            return;
        };
        let piece = &mut msg.pieces[p];
        if piece.state != PieceState::InFlight {
            return;
        }
        if delivered {
            piece.state = PieceState::Acked;
            msg.unacked -= 1;
        } else {
            piece.state = PieceState::Unsent;
            msg.unsent += 1;
            self.unsent_bytes += piece.len as usize;
            self.resends += 1;
            self.resend.push(Reverse(id));
        }
        while self.queue.front().is_some_and(|m| m.unacked == 0) {
            let Some(done) = self.queue.pop_front() else {
                break;
            };
            self.base_id += 1;
            self.next_new -= 1;
            self.acked += 1;
            self.queued_bytes -= done.data.len();
            pool.give(done.data);
            if self.spare.len() < 1024 {
                self.spare.push(done.pieces);
            }
        }
        // Drop resend entries that no longer need anything (a message dropped
        // twice is queued twice), so `has_sendable` does not wake the
        // connection for nothing.
        while let Some(&Reverse(id)) = self.resend.peek() {
            let stale = match id.checked_sub(self.base_id) {
                None => true,
                Some(i) => self.queue.get(i as usize).is_none_or(|m| m.unsent == 0),
            };
            if !stale {
                break;
            }
            self.resend.pop();
        }
    }
}

/// What happened to an ordered chunk on arrival.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrderedOutcome {
    /// Accepted (stored or delivered).
    Accepted,
    /// Already received.
    Duplicate,
    /// The receiver's bounds are full: the datagram must not be acknowledged.
    Refused,
    /// An honest peer never sends this; counted and ignored.
    Malformed(FragmentError),
    /// The id is outside the ordered window.
    OutOfWindow,
}

/// Receiving side of guaranteed-ordered messages.
#[derive(Debug)]
pub struct OrderedReceiver {
    expected: u64,
    window: u64,
    buffered: VecDeque<Option<Vec<u8>>>,
    buffered_bytes: usize,
    max_buffered_bytes: usize,
    reassembler: Reassembler,
    /// Messages delivered to the application.
    pub delivered: u64,
}

impl OrderedReceiver {
    /// An empty receiver.
    pub fn new(window: u64, max_buffered_bytes: usize, limits: ReassemblyLimits) -> Self {
        Self {
            expected: 0,
            window,
            buffered: VecDeque::new(),
            buffered_bytes: 0,
            max_buffered_bytes,
            reassembler: Reassembler::new(limits),
            delivered: 0,
        }
    }

    /// Complete messages waiting for an earlier one.
    pub fn buffered(&self) -> usize {
        self.buffered.iter().filter(|m| m.is_some()).count()
    }

    /// Partial (fragmented) messages being reassembled.
    pub fn partials(&self) -> usize {
        self.reassembler.partial_count()
    }

    /// Handles one ordered chunk; delivered messages go to `deliver` in order.
    pub fn on_chunk(
        &mut self,
        id16: u16,
        total: u32,
        offset: u32,
        data: &[u8],
        pool: &mut BufPool,
        mut deliver: impl FnMut(Vec<u8>),
    ) -> OrderedOutcome {
        let id = extend(self.expected, id16);
        if id < self.expected {
            return OrderedOutcome::Duplicate;
        }
        let slot = (id - self.expected) as usize;
        if id - self.expected >= self.window {
            return OrderedOutcome::OutOfWindow;
        }
        if self.buffered.get(slot).is_some_and(|m| m.is_some()) {
            return OrderedOutcome::Duplicate;
        }
        // Only the message the stream waits for may always use memory: it is
        // what lets the stream progress, so refusing it could deadlock.
        let policy = if slot == 0 {
            Policy::Exempt
        } else {
            Policy::Refuse
        };
        let message = match self
            .reassembler
            .insert(id, total, offset, data, policy, pool)
        {
            Ok(Inserted::Complete(m)) => m,
            Ok(Inserted::Incomplete) => return OrderedOutcome::Accepted,
            Ok(Inserted::Duplicate) => return OrderedOutcome::Duplicate,
            Err(e) if e.is_capacity() => return OrderedOutcome::Refused,
            Err(e) => return OrderedOutcome::Malformed(e),
        };
        if slot == 0 {
            self.expected += 1;
            self.delivered += 1;
            deliver(message);
            self.buffered.pop_front();
            while let Some(Some(_)) = self.buffered.front() {
                if let Some(Some(next)) = self.buffered.pop_front() {
                    self.buffered_bytes -= next.len();
                    self.expected += 1;
                    self.delivered += 1;
                    deliver(next);
                }
            }
            return OrderedOutcome::Accepted;
        }
        if self.buffered_bytes + message.len() > self.max_buffered_bytes {
            pool.give(message);
            return OrderedOutcome::Refused;
        }
        if self.buffered.len() <= slot {
            self.buffered.resize_with(slot + 1, || None);
        }
        self.buffered_bytes += message.len();
        self.buffered[slot] = Some(message);
        OrderedOutcome::Accepted
    }
}

/// Sending side of guaranteed-quickest items.
#[derive(Debug)]
pub struct QuickestSender {
    items: VecDeque<(u64, Vec<u8>)>,
    next_id: u64,
    bytes: usize,
    max_bytes: usize,
    never_sent: bool,
}

impl QuickestSender {
    /// An empty sender holding at most `max_bytes` of unacknowledged items.
    pub fn new(max_bytes: usize) -> Self {
        Self {
            items: VecDeque::new(),
            next_id: 0,
            bytes: 0,
            max_bytes,
            never_sent: false,
        }
    }

    /// Items not yet acknowledged.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// `true` when every item is acknowledged.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Bytes on the wire for all pending items.
    pub fn wire_bytes(&self) -> usize {
        self.bytes + self.items.len() * WHOLE_CHUNK_OVERHEAD
    }

    /// Whether an item has never been put in a datagram.
    pub fn has_unsent(&self) -> bool {
        self.never_sent
    }

    /// Queues an item; `false` (nothing queued) if the bound would be exceeded.
    pub fn push(&mut self, data: Vec<u8>) -> Result<(), Vec<u8>> {
        if self.bytes + data.len() > self.max_bytes {
            return Err(data);
        }
        self.bytes += data.len();
        self.items.push_back((self.next_id, data));
        self.next_id += 1;
        self.never_sent = true;
        Ok(())
    }

    /// Writes pending items oldest first while they fit.
    pub fn write(&mut self, w: &mut Writer<'_>, space: &mut usize, record: &mut SentRecord) {
        let mut all = true;
        for (id, data) in &self.items {
            let chunk = Chunk::Quickest {
                id: *id as u16,
                data,
            };
            if chunk.encoded_len() > *space || chunk.write(w).is_err() {
                all = false;
                break;
            }
            *space -= chunk.encoded_len();
            record.quickest_max = Some(*id);
        }
        if all {
            self.never_sent = false;
        }
    }

    /// A datagram carrying items up to `max_id` was delivered.
    pub fn on_delivered(&mut self, max_id: u64, pool: &mut BufPool) {
        while self.items.front().is_some_and(|(id, _)| *id <= max_id) {
            if let Some((_, data)) = self.items.pop_front() {
                self.bytes -= data.len();
                pool.give(data);
            }
        }
    }
}

/// Receiving side of guaranteed-quickest items: delivers each id once, in order.
#[derive(Debug, Default)]
pub struct QuickestReceiver {
    last: Option<u64>,
}

impl QuickestReceiver {
    /// Returns the item's full id if it is new (and should be delivered).
    pub fn accept(&mut self, id16: u16) -> Option<u64> {
        let reference = self.last.map_or(0, |l| l + 1);
        let id = extend(reference, id16);
        if self.last.is_some_and(|l| id <= l) {
            return None;
        }
        self.last = Some(id);
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Chunks;

    fn limits() -> ReassemblyLimits {
        ReassemblyLimits {
            max_message: 16 * 1024,
            max_partials: 64,
            max_bytes: 1 << 20,
        }
    }

    /// Drives sender and receiver directly, dropping every third datagram.
    #[test]
    fn ordered_survives_drops_and_splits() {
        let mut pool = BufPool::default();
        let mut tx = OrderedSender::new(OrderedLimits {
            max_messages: 1000,
            max_bytes: 1 << 20,
            window: 64,
        });
        let mut rx = OrderedReceiver::new(64, 1 << 20, limits());
        let messages: Vec<Vec<u8>> = (0..200u32)
            .map(|i| (0..(i * 37 % 3000)).map(|b| (b ^ i) as u8).collect())
            .collect();
        for m in &messages {
            tx.push(m.clone()).unwrap();
        }
        let mut got = Vec::new();
        let mut buf = [0u8; 1400];
        let mut n = 0u64;
        while !tx.is_empty() {
            n += 1;
            assert!(n < 100_000, "no progress");
            let mut record = SentRecord::default();
            let mut space = 300 + (n as usize * 97) % 1000;
            let len = {
                let mut w = Writer::new(&mut buf);
                tx.write(&mut w, &mut space, &mut record);
                w.len()
            };
            let delivered = n % 3 != 0;
            if delivered {
                for chunk in Chunks::new(&buf[..len]) {
                    if let Ok(Chunk::Ordered {
                        id,
                        total,
                        offset,
                        data,
                    }) = chunk
                    {
                        let outcome =
                            rx.on_chunk(id, total, offset, data, &mut pool, |m| got.push(m));
                        assert!(matches!(
                            outcome,
                            OrderedOutcome::Accepted | OrderedOutcome::Duplicate
                        ));
                    }
                }
            }
            for &(id, offset) in &record.ordered {
                tx.on_notify(id, offset, delivered, &mut pool);
            }
        }
        assert_eq!(got, messages);
        assert!(tx.resends > 0);
    }

    #[test]
    fn quickest_dedups() {
        let mut rx = QuickestReceiver::default();
        assert_eq!(rx.accept(0), Some(0));
        assert_eq!(rx.accept(0), None);
        assert_eq!(rx.accept(1), Some(1));
        assert_eq!(rx.accept(2), Some(2));
        assert_eq!(rx.accept(1), None);
    }
}
