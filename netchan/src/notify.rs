//! The notify protocol (TRIBES): per-datagram delivered/dropped notifications.
//!
//! Every data datagram carries the newest remote sequence received and a
//! 32-bit field for the 32 before it. The sender keeps a record of each
//! datagram in flight and resolves it:
//!
//! * **delivered** when an ack covers it with its bit set;
//! * **dropped** when it falls out of the 33-datagram ack window unacked,
//!   when `reorder_threshold` newer datagrams were acked while it was not
//!   *and* it was sent more than `min_age` ago (fast loss detection in the
//!   manner of QUIC's packet and time thresholds, tolerant of reordering by
//!   jitter), or when its RTT-based deadline passes.
//!
//! Records are resolved in any order but *reported* strictly in send order,
//! exactly once each, by [`SentTracker::pop_resolved`].

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Ack window size: the acked sequence plus the 32 in the bitfield.
pub const ACK_WINDOW: u64 = 33;

/// What a sent datagram carried, so its notification can be acted on.
#[derive(Debug, Default)]
pub struct SentRecord {
    /// Full sequence number.
    pub seq: u64,
    /// When it was sent.
    pub sent_at: Option<Instant>,
    /// When it is declared dropped if still unacknowledged.
    pub deadline: Option<Instant>,
    /// Datagram size in bytes.
    pub size: usize,
    /// Whether it carried chunks (and so asks the peer for a prompt ack).
    pub ack_eliciting: bool,
    /// Guaranteed-ordered pieces: (message id, offset).
    pub ordered: Vec<(u64, u32)>,
    /// The most-recent-state id whose piece it carried.
    pub state: Option<u64>,
    /// Highest guaranteed-quickest item id it carried.
    pub quickest_max: Option<u64>,
    /// It carried a rate announcement.
    pub rate_announce: bool,
    resolved: Option<bool>,
}

impl SentRecord {
    fn reset(&mut self) {
        self.seq = 0;
        self.sent_at = None;
        self.deadline = None;
        self.size = 0;
        self.ack_eliciting = false;
        self.ordered.clear();
        self.state = None;
        self.quickest_max = None;
        self.rate_announce = false;
        self.resolved = None;
    }
}

/// An ack that cannot be right: it acknowledges a datagram never sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BogusAck;

/// Datagrams in flight, resolved by acks and timeouts, reported in order.
#[derive(Debug, Default)]
pub struct SentTracker {
    records: VecDeque<SentRecord>,
    spare: Vec<SentRecord>,
    next_seq: u64,
}

impl SentTracker {
    /// An empty tracker whose first datagram gets sequence 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// The sequence number the next datagram will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Datagrams sent but not yet reported.
    pub fn in_flight(&self) -> usize {
        self.records.len()
    }

    /// A cleared record for the next datagram (recycled when possible).
    pub fn blank(&mut self) -> SentRecord {
        let mut r = self.spare.pop().unwrap_or_default();
        r.reset();
        r.seq = self.next_seq;
        r
    }

    /// Registers a sent datagram; its `seq` must be [`Self::next_seq`].
    pub fn push(&mut self, record: SentRecord) {
        debug_assert_eq!(record.seq, self.next_seq);
        self.next_seq += 1;
        self.records.push_back(record);
    }

    /// Returns a reported record for reuse.
    pub fn recycle(&mut self, record: SentRecord) {
        if self.spare.len() < 256 {
            self.spare.push(record);
        }
    }

    /// Applies an ack of `ack` (already extended to 64 bits) with its bitfield.
    ///
    /// Returns the send time of the datagram `ack` itself when this ack
    /// delivered it — the only one whose arrival time the ack pins down, so
    /// the only RTT sample.
    pub fn on_ack(
        &mut self,
        ack: u64,
        bits: u32,
        reorder_threshold: u64,
        now: Instant,
        min_age: Duration,
    ) -> Result<Option<Instant>, BogusAck> {
        if ack >= self.next_seq {
            return Err(BogusAck);
        }
        let Some(front) = self.records.front().map(|r| r.seq) else {
            return Ok(None);
        };
        if ack < front {
            return Ok(None);
        }
        let mut sample = None;
        let start = ack.saturating_sub(ACK_WINDOW - 1).max(front);
        for seq in start..=ack {
            let record = &mut self.records[(seq - front) as usize];
            if record.resolved.is_some() {
                continue;
            }
            let back = ack - seq;
            let delivered = back == 0 || (back <= 32 && bits & (1 << (back - 1)) != 0);
            if delivered {
                record.resolved = Some(true);
                if back == 0 {
                    sample = record.sent_at;
                }
            } else if back >= ACK_WINDOW
                || (back > reorder_threshold
                    && record
                        .sent_at
                        .is_none_or(|t| now.saturating_duration_since(t) >= min_age))
            {
                record.resolved = Some(false);
            }
        }
        // Anything older than the scanned range left the window long ago.
        for seq in front..start {
            let record = &mut self.records[(seq - front) as usize];
            if record.resolved.is_none() {
                record.resolved = Some(false);
            }
        }
        Ok(sample)
    }

    /// Declares dropped every unresolved record at the front whose deadline has passed.
    pub fn on_timeout(&mut self, now: Instant) {
        for record in self.records.iter_mut() {
            match (record.resolved, record.deadline) {
                (Some(_), _) => continue,
                (None, Some(deadline)) if deadline <= now => record.resolved = Some(false),
                _ => break,
            }
        }
    }

    /// The next notification in send order, if the oldest record is resolved:
    /// the record and `true` for delivered, `false` for dropped.
    pub fn pop_resolved(&mut self) -> Option<(SentRecord, bool)> {
        let delivered = self.records.front()?.resolved?;
        let record = self.records.pop_front()?;
        Some((record, delivered))
    }

    /// Deadline of the oldest unresolved record, for the connection's timer.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.records
            .iter()
            .find(|r| r.resolved.is_none())
            .and_then(|r| r.deadline)
    }
}

/// Smoothed round-trip time (RFC 6298 style) and the drop timeout derived from it.
#[derive(Debug, Clone)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    latest: Duration,
    initial: Duration,
}

impl RttEstimator {
    /// An estimator that assumes `initial` until the first sample.
    pub fn new(initial: Duration) -> Self {
        Self {
            srtt: None,
            rttvar: initial / 2,
            latest: initial,
            initial,
        }
    }

    /// Adds a sample.
    pub fn sample(&mut self, rtt: Duration) {
        self.latest = rtt;
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                let err = srtt.abs_diff(rtt);
                self.rttvar = (self.rttvar * 3 + err) / 4;
                self.srtt = Some((srtt * 7 + rtt) / 8);
            }
        }
    }

    /// Smoothed RTT (the initial guess before any sample).
    pub fn srtt(&self) -> Duration {
        self.srtt.unwrap_or(self.initial)
    }

    /// RTT variation.
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// The most recent sample.
    pub fn latest(&self) -> Duration {
        self.latest
    }

    /// How long to wait for an ack before declaring a datagram dropped.
    pub fn drop_timeout(&self, granularity: Duration) -> Duration {
        self.srtt() + (self.rttvar * 4).max(granularity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn send(t: &mut SentTracker, now: Instant, timeout: Duration) -> u64 {
        let mut r = t.blank();
        r.sent_at = Some(now);
        r.deadline = Some(now + timeout);
        let seq = r.seq;
        t.push(r);
        seq
    }

    #[test]
    fn acks_bits_and_window() {
        let t0 = Instant::now();
        let mut t = SentTracker::new();
        for _ in 0..40 {
            send(&mut t, t0, Duration::from_secs(1));
        }
        // Ack 39 with 38 received, 37 missing: 0..=6 leave the window.
        assert_eq!(t.on_ack(39, 0b01, 3, t0, Duration::ZERO), Ok(Some(t0)));
        let mut seen = Vec::new();
        while let Some((r, d)) = t.pop_resolved() {
            seen.push((r.seq, d));
        }
        // 0..=35 dropped (out of window or past the reorder threshold).
        assert_eq!(seen.len(), 36);
        assert!(seen.iter().all(|&(_, d)| !d));
        // 36 and 37 are within the reorder threshold: unresolved.
        assert!(t.pop_resolved().is_none());
        assert_eq!(t.on_ack(40, 0, 3, t0, Duration::ZERO), Err(BogusAck));
        t.on_timeout(t0 + Duration::from_secs(2));
        let rest: Vec<_> = std::iter::from_fn(|| t.pop_resolved())
            .map(|(r, d)| (r.seq, d))
            .collect();
        assert_eq!(rest, vec![(36, false), (37, false), (38, true), (39, true)]);
    }

    proptest! {
        /// Whatever acks arrive, each datagram is reported once, in send order,
        /// and never reported delivered unless some ack said so.
        #[test]
        fn one_notification_each_in_order(
            events in proptest::collection::vec((any::<bool>(), any::<u16>(), any::<u32>()), 1..300)
        ) {
            let t0 = Instant::now();
            let mut t = SentTracker::new();
            let mut acked = std::collections::HashSet::new();
            let mut reported = Vec::new();
            let mut now = t0;
            for (is_send, a, bits) in events {
                now += Duration::from_millis(5);
                if is_send || t.next_seq() == 0 {
                    send(&mut t, now, Duration::from_millis(200));
                } else {
                    let ack = a as u64 % t.next_seq();
                    if t.on_ack(ack, bits, 3, now, Duration::from_millis(20)).is_ok() {
                        acked.insert(ack);
                        for back in 1..=32u64 {
                            if bits & (1 << (back - 1)) != 0 && back <= ack {
                                acked.insert(ack - back);
                            }
                        }
                    }
                }
                t.on_timeout(now);
                while let Some((r, d)) = t.pop_resolved() {
                    prop_assert!(!d || acked.contains(&r.seq));
                    reported.push(r.seq);
                    t.recycle(r);
                }
            }
            t.on_timeout(now + Duration::from_secs(10));
            while let Some((r, _)) = t.pop_resolved() {
                reported.push(r.seq);
            }
            let expected: Vec<u64> = (0..t.next_seq()).collect();
            prop_assert_eq!(reported, expected);
        }
    }
}
