//! Per-client rate control: a snapshot cadence and a byte token bucket.
//!
//! The cadence says when a snapshot is due (`snapshot_rate` per second, kept
//! on schedule rather than drifting by frame rounding). The bucket fills at
//! `byte_rate` up to `burst_bytes`; a due snapshot may use what is in it (up
//! to the message bound) as its budget, and entities that do not fit wait by
//! priority. A snapshot can overdraw the bucket (header, player state and
//! removals are never cut); while it is in debt the client is *rate-delayed*:
//! no snapshot until it is paid off, and the next one says so.
//!
//! All times are the server's frame times in milliseconds, so the behaviour
//! is deterministic and testable without a clock.

use crate::config::ClientSettings;

/// Token amounts are kept in byte·milliseconds per second ("millibytes"),
/// so refilling `elapsed_ms × byte_rate` is exact integer arithmetic.
const MILLI: i64 = 1000;

/// What the rate state allows now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RateDecision {
    /// The snapshot cadence has not come round yet.
    NotDue,
    /// Due, but the byte budget is overdrawn: try again next frame.
    Delayed,
    /// Send, with at most this many bytes of entity data wanted.
    Send {
        /// Bytes the snapshot should stay within.
        budget: u32,
    },
}

/// Rate bookkeeping of one client.
#[derive(Debug, Clone)]
pub(crate) struct RateState {
    /// Next due time × `snapshot_rate` (ms·Hz), exact for any rate; `None`
    /// until the first snapshot, so each client's cadence starts when it
    /// joins (clients are staggered, not all due on the same frame).
    due_scaled: Option<u64>,
    tokens: i64,
    refilled_at: Option<u32>,
    /// A due snapshot was held back since the last one sent.
    pub delayed: bool,
}

impl RateState {
    /// A client with a full bucket, due at once.
    pub fn new(settings: &ClientSettings) -> Self {
        RateState {
            due_scaled: None,
            tokens: settings.burst_bytes as i64 * MILLI,
            refilled_at: None,
            delayed: false,
        }
    }

    fn refill(&mut self, settings: &ClientSettings, now: u32) {
        if let Some(then) = self.refilled_at {
            let elapsed = now.saturating_sub(then) as i64;
            let cap = settings.burst_bytes as i64 * MILLI;
            self.tokens = (self.tokens + elapsed * settings.byte_rate as i64).min(cap);
        }
        self.refilled_at = Some(now);
    }

    /// Whether a snapshot may be sent at `now`, and its budget.
    pub fn check(&mut self, settings: &ClientSettings, now: u32) -> RateDecision {
        let now_scaled = now as u64 * settings.snapshot_rate as u64;
        if settings.snapshot_rate > 0 && self.due_scaled.is_some_and(|due| now_scaled < due) {
            return RateDecision::NotDue;
        }
        if settings.byte_rate == 0 {
            return RateDecision::Send {
                budget: settings.max_snapshot_bytes,
            };
        }
        self.refill(settings, now);
        if self.tokens <= 0 {
            self.delayed = true;
            return RateDecision::Delayed;
        }
        let available = (self.tokens / MILLI).min(u32::MAX as i64) as u32;
        RateDecision::Send {
            budget: available.min(settings.max_snapshot_bytes),
        }
    }

    /// Records a snapshot of `bytes` sent at `now`.
    pub fn sent(&mut self, settings: &ClientSettings, now: u32, bytes: usize) {
        if settings.snapshot_rate > 0 {
            let now_scaled = now as u64 * settings.snapshot_rate as u64;
            // Keep the cadence when less than one interval late; a client
            // that fell further behind restarts it from now.
            self.due_scaled = Some(match self.due_scaled {
                Some(due) if now_scaled < due + 1000 => due + 1000,
                _ => now_scaled + 1000,
            });
        }
        if settings.byte_rate > 0 {
            self.refill(settings, now);
            self.tokens -= bytes as i64 * MILLI;
        }
        self.delayed = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(snapshot_rate: u32, byte_rate: u32, burst: u32) -> ClientSettings {
        ClientSettings {
            snapshot_rate,
            byte_rate,
            burst_bytes: burst,
            ..ClientSettings::default()
        }
    }

    #[test]
    fn cadence_holds_for_rates_that_do_not_divide_a_second() {
        let s = settings(30, 0, 0);
        let mut rate = RateState::new(&s);
        let mut sent = Vec::new();
        // A 100 Hz server frame clock for one second.
        for now in (0..1000).step_by(10) {
            if let RateDecision::Send { .. } = rate.check(&s, now) {
                rate.sent(&s, now, 100);
                sent.push(now);
            }
        }
        assert_eq!(sent.len(), 30, "{sent:?}");
    }

    #[test]
    fn each_client_keeps_its_own_phase() {
        let s = settings(20, 0, 0);
        let mut rate = RateState::new(&s);
        let mut sent = Vec::new();
        // Joins at 16 ms on a 60 Hz clock: due every 50 ms from then on.
        for frame in 1..13u32 {
            let now = frame * 50 / 3;
            if let RateDecision::Send { .. } = rate.check(&s, now) {
                rate.sent(&s, now, 10);
                sent.push(now);
            }
        }
        assert_eq!(sent, vec![16, 66, 116, 166]);
    }

    #[test]
    fn an_overdrawn_bucket_delays_and_flags_the_client() {
        let s = settings(0, 1000, 500);
        let mut rate = RateState::new(&s);
        assert_eq!(rate.check(&s, 0), RateDecision::Send { budget: 500 });
        rate.sent(&s, 0, 800); // overdraws by 300 bytes
        assert_eq!(rate.check(&s, 100), RateDecision::Delayed);
        assert!(rate.delayed);
        assert_eq!(rate.check(&s, 300), RateDecision::Delayed);
        // 301 ms at 1000 B/s repays 301 bytes.
        assert_eq!(rate.check(&s, 301), RateDecision::Send { budget: 1 });
        rate.sent(&s, 301, 1);
        assert!(!rate.delayed);
        // The bucket never holds more than the burst.
        assert_eq!(rate.check(&s, 10_000), RateDecision::Send { budget: 500 });
    }

    #[test]
    fn budget_is_capped_by_the_message_bound() {
        let s = ClientSettings {
            max_snapshot_bytes: 1000,
            ..settings(0, 100_000, 50_000)
        };
        let mut rate = RateState::new(&s);
        assert_eq!(rate.check(&s, 0), RateDecision::Send { budget: 1000 });
    }
}
