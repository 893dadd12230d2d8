//! Most-recent state: a per-datagram payload (the snapshot) from the layer above.
//!
//! The application submits a payload with [`crate::Connection::send_state`]
//! and gets a [`StateId`]. The payload goes out in the next datagram — cut
//! into fragments over several datagrams when it is larger than one — and is
//! never resent: the next payload supersedes it. Once every datagram that
//! carried a piece of it is notified, the sender reports
//! [`crate::Event::StateDelivered`] (all pieces arrived) or
//! [`crate::Event::StateDropped`] (any piece lost, or superseded before it
//! was fully sent), exactly once per id and in id order. The receiver
//! delivers a payload only if it is newer than the last one delivered.

use std::collections::VecDeque;

use crate::fragment::{Inserted, Policy, Reassembler, ReassemblyLimits};
use crate::notify::SentRecord;
use crate::packet::{Chunk, Writer, FRAG_CHUNK_OVERHEAD, WHOLE_CHUNK_OVERHEAD};
use crate::pool::BufPool;
use crate::reliable::MIN_SPLIT;
use crate::sequence::extend;

/// Identifies one most-recent-state payload of one connection.
pub type StateId = u64;

#[derive(Debug)]
struct StateRecord {
    id: StateId,
    outstanding: u32,
    finished: bool,
    lost: bool,
}

#[derive(Debug)]
struct Current {
    id: StateId,
    data: Vec<u8>,
    sent: usize,
}

/// Sending side of most-recent state.
#[derive(Debug, Default)]
pub struct StateSender {
    current: Option<Current>,
    records: VecDeque<StateRecord>,
    next_id: StateId,
    /// Payloads submitted.
    pub submitted: u64,
}

impl StateSender {
    /// An empty sender.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes of the current payload not yet sent.
    pub fn unsent_bytes(&self) -> usize {
        self.current.as_ref().map_or(0, |c| c.data.len() - c.sent)
    }

    /// The id the next submitted payload gets.
    pub fn next_id(&self) -> StateId {
        self.next_id
    }

    /// Payloads whose fate is not yet reported.
    pub fn unresolved(&self) -> usize {
        self.records.len()
    }

    /// Takes a new payload; an unfinished previous one is abandoned (reported dropped).
    pub fn submit(&mut self, data: Vec<u8>, pool: &mut BufPool) -> StateId {
        if let Some(old) = self.current.take() {
            if let Some(r) = self.records.iter_mut().find(|r| r.id == old.id) {
                r.finished = true;
                r.lost = true;
            }
            pool.give(old.data);
        }
        let id = self.next_id;
        self.next_id += 1;
        self.submitted += 1;
        self.records.push_back(StateRecord {
            id,
            outstanding: 0,
            finished: false,
            lost: false,
        });
        self.current = Some(Current { id, data, sent: 0 });
        id
    }

    /// Writes the next piece of the current payload if it fits.
    pub fn write(
        &mut self,
        w: &mut Writer<'_>,
        space: &mut usize,
        record: &mut SentRecord,
        fragments: &mut u64,
        pool: &mut BufPool,
    ) {
        let Some(cur) = self.current.as_mut() else {
            return;
        };
        let total = cur.data.len();
        let remaining = total - cur.sent;
        let len = if cur.sent == 0 && WHOLE_CHUNK_OVERHEAD + total <= *space {
            total
        } else if FRAG_CHUNK_OVERHEAD + remaining <= *space {
            remaining
        } else if *space >= FRAG_CHUNK_OVERHEAD + MIN_SPLIT {
            *space - FRAG_CHUNK_OVERHEAD
        } else {
            return;
        };
        let chunk = Chunk::State {
            id: cur.id as u16,
            total: total as u32,
            offset: cur.sent as u32,
            data: &cur.data[cur.sent..cur.sent + len],
        };
        if chunk.write(w).is_err() {
            return;
        }
        *space -= chunk.encoded_len();
        if len != total {
            *fragments += 1;
        }
        cur.sent += len;
        record.state = Some(cur.id);
        let id = cur.id;
        let done = cur.sent == total;
        if let Some(r) = self.records.iter_mut().rev().find(|r| r.id == id) {
            r.outstanding += 1;
            r.finished |= done;
        }
        if done {
            if let Some(cur) = self.current.take() {
                pool.give(cur.data);
            }
        }
    }

    /// A datagram that carried a piece of `id` was notified.
    pub fn on_notify(&mut self, id: StateId, delivered: bool) {
        if let Some(r) = self.records.iter_mut().find(|r| r.id == id) {
            r.outstanding = r.outstanding.saturating_sub(1);
            r.lost |= !delivered;
        }
    }

    /// The next resolved payload in id order: `(id, delivered)`.
    pub fn pop_resolved(&mut self) -> Option<(StateId, bool)> {
        let front = self.records.front()?;
        if !front.finished || front.outstanding > 0 {
            return None;
        }
        let r = self.records.pop_front()?;
        Some((r.id, !r.lost))
    }
}

/// Receiving side of most-recent state.
///
/// Every payload that completes is handed to the application exactly once,
/// even one older than a payload already delivered (it arrived late): the
/// sender is told "delivered" once all its datagrams are acknowledged, so
/// dropping it here would make that report a lie, and the layer above (the
/// snapshot client) may need it as a delta base. The application sees the id
/// and decides what an old payload is worth.
#[derive(Debug)]
pub struct StateReceiver {
    newest_seen: u64,
    /// Newest id delivered; with `delivered`, the window of ids delivered.
    newest_delivered: Option<StateId>,
    /// Bit `d` set: id `newest_delivered - d` was delivered.
    delivered: u64,
    reassembler: Reassembler,
    /// Payloads delivered after a newer one (they completed late).
    pub stale: u64,
    /// Chunks of payloads too old to track (64 ids behind the newest
    /// delivered) or already delivered: ignored.
    pub ignored: u64,
}

impl StateReceiver {
    /// An empty receiver.
    pub fn new(limits: ReassemblyLimits) -> Self {
        Self {
            newest_seen: 0,
            newest_delivered: None,
            delivered: 0,
            reassembler: Reassembler::new(limits),
            stale: 0,
            ignored: 0,
        }
    }

    /// Partial payloads being reassembled.
    pub fn partials(&self) -> usize {
        self.reassembler.partial_count()
    }

    /// Whether `id` was delivered, or is too old to tell (treated alike).
    fn delivered_or_too_old(&self, id: StateId) -> bool {
        match self.newest_delivered {
            None => false,
            Some(newest) if id > newest => false,
            Some(newest) => {
                let distance = newest - id;
                distance >= 64 || self.delivered & (1 << distance) != 0
            }
        }
    }

    fn mark_delivered(&mut self, id: StateId) {
        match self.newest_delivered {
            Some(newest) if id <= newest => self.delivered |= 1 << (newest - id),
            Some(newest) => {
                let shift = id - newest;
                self.delivered = if shift >= 64 {
                    0
                } else {
                    self.delivered << shift
                } | 1;
                self.newest_delivered = Some(id);
            }
            None => {
                self.delivered = 1;
                self.newest_delivered = Some(id);
            }
        }
    }

    /// Handles a state chunk; returns a payload it completed, with its id
    /// (which may be older than one returned before).
    pub fn on_chunk(
        &mut self,
        id16: u16,
        total: u32,
        offset: u32,
        data: &[u8],
        pool: &mut BufPool,
    ) -> Result<Option<(StateId, Vec<u8>)>, crate::error::FragmentError> {
        let id = extend(self.newest_seen, id16);
        self.newest_seen = self.newest_seen.max(id);
        if self.delivered_or_too_old(id) {
            self.ignored += 1;
            return Ok(None);
        }
        match self
            .reassembler
            .insert(id, total, offset, data, Policy::EvictOldest, pool)?
        {
            Inserted::Complete(payload) => {
                if self.newest_delivered.is_some_and(|newest| id < newest) {
                    self.stale += 1;
                }
                self.mark_delivered(id);
                Ok(Some((id, payload)))
            }
            Inserted::Incomplete | Inserted::Duplicate => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn superseded_and_lost_states_report_dropped_in_order() {
        let mut pool = BufPool::default();
        let mut tx = StateSender::new();
        let mut buf = [0u8; 1400];
        let a = tx.submit(vec![1; 3000], &mut pool);
        let mut rec1 = SentRecord::default();
        let mut space = 1300;
        let mut frags = 0;
        tx.write(
            &mut Writer::new(&mut buf),
            &mut space,
            &mut rec1,
            &mut frags,
            &mut pool,
        );
        assert_eq!(rec1.state, Some(a));
        // Superseded before its other pieces went out.
        let b = tx.submit(vec![2; 100], &mut pool);
        let mut rec2 = SentRecord::default();
        let mut space = 1300;
        tx.write(
            &mut Writer::new(&mut buf),
            &mut space,
            &mut rec2,
            &mut frags,
            &mut pool,
        );
        assert_eq!(rec2.state, Some(b));
        assert_eq!(tx.pop_resolved(), None, "a still has a datagram in flight");
        tx.on_notify(b, true);
        assert_eq!(tx.pop_resolved(), None, "reports wait for a, in id order");
        tx.on_notify(a, true);
        assert_eq!(tx.pop_resolved(), Some((a, false)));
        assert_eq!(tx.pop_resolved(), Some((b, true)));
    }

    #[test]
    fn receiver_delivers_late_payloads_once() {
        let limits = ReassemblyLimits {
            max_message: 16384,
            max_partials: 4,
            max_bytes: 65536,
        };
        let mut pool = BufPool::default();
        let mut rx = StateReceiver::new(limits);
        assert_eq!(rx.on_chunk(1, 4, 0, &[1, 2], &mut pool), Ok(None));
        assert_eq!(
            rx.on_chunk(2, 2, 0, &[9, 9], &mut pool),
            Ok(Some((2, vec![9, 9])))
        );
        // State 1 completing now is late, but it arrived: it is delivered
        // (the sender will be told so), once.
        assert_eq!(
            rx.on_chunk(1, 4, 2, &[3, 4], &mut pool),
            Ok(Some((1, vec![1, 2, 3, 4])))
        );
        assert_eq!(rx.stale, 1);
        assert_eq!(rx.on_chunk(1, 4, 2, &[3, 4], &mut pool), Ok(None));
        assert_eq!(rx.on_chunk(2, 2, 0, &[9, 9], &mut pool), Ok(None));
        assert_eq!(rx.ignored, 2);
        // Far behind the newest: ignored.
        assert_eq!(
            rx.on_chunk(100, 1, 0, &[5], &mut pool),
            Ok(Some((100, vec![5])))
        );
        assert_eq!(rx.on_chunk(20, 1, 0, &[6], &mut pool), Ok(None));
    }
}
