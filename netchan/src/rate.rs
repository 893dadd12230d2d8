//! Byte-rate and packet-rate limiting (Tread Marks, TRIBES).
//!
//! A token bucket refills at the byte rate; a datagram may use at most the
//! tokens available, so a connection's long-run output never exceeds its
//! rate. The bucket holds one "packet's worth" (`bytes_per_sec /
//! packets_per_sec`), which is also the largest datagram a slow peer gets:
//! a modem client asking for 10 packets/s at 2000 bytes/s receives
//! 200-byte datagrams ten times a second.

use std::time::{Duration, Instant};

const NANOS: u128 = 1_000_000_000;

/// Smallest per-datagram budget (a modem's 200-byte datagram). Below it a
/// header, tag and one player command would not fit, so a tiny rate would
/// stall instead of slowing down; the long-run byte rate still holds, since
/// the bucket refills at the configured rate.
pub const MIN_BUDGET: usize = 200;

/// The rate a peer says it can receive, sent in the handshake and whenever it changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateAnnounce {
    /// Bytes per second, all headers included.
    pub bytes_per_sec: u32,
    /// Datagrams per second.
    pub packets_per_sec: u16,
}

impl RateAnnounce {
    /// A LAN-class default: 10 MB/s at up to 1000 datagrams/s (so full
    /// 1400-byte datagrams).
    pub const UNLIMITED: RateAnnounce = RateAnnounce {
        bytes_per_sec: 10_000_000,
        packets_per_sec: 1000,
    };

    /// The smaller of two rates, field by field.
    pub fn min(self, other: RateAnnounce) -> RateAnnounce {
        RateAnnounce {
            bytes_per_sec: self.bytes_per_sec.min(other.bytes_per_sec),
            packets_per_sec: self.packets_per_sec.min(other.packets_per_sec),
        }
    }

    /// Zero fields would stop traffic for good; they are raised to one.
    pub fn sanitized(self) -> RateAnnounce {
        RateAnnounce {
            bytes_per_sec: self.bytes_per_sec.max(1),
            packets_per_sec: self.packets_per_sec.max(1),
        }
    }
}

/// A token bucket for bytes plus a minimum spacing between datagrams.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    bytes_per_sec: u64,
    /// Minimum nanoseconds between datagrams; 0 for no packet limit.
    interval_ns: u64,
    /// Tokens in byte-nanoseconds per second units (bytes * 1e9), so refills
    /// stay exact in integers.
    tokens: u128,
    capacity: u128,
    last_refill: Instant,
    next_packet: Instant,
}

impl RateLimiter {
    /// A full bucket for `bytes_per_sec`, with datagrams at most
    /// `packets_per_sec` per second (`None`: no packet limit, bucket of `burst` bytes).
    pub fn new(
        now: Instant,
        bytes_per_sec: u32,
        packets_per_sec: Option<u16>,
        burst: usize,
    ) -> Self {
        let mut limiter = RateLimiter {
            bytes_per_sec: 0,
            interval_ns: 0,
            tokens: 0,
            capacity: 0,
            last_refill: now,
            next_packet: now,
        };
        limiter.set_rate(bytes_per_sec, packets_per_sec, burst);
        limiter.tokens = limiter.capacity;
        limiter
    }

    /// Changes the rate, keeping the tokens already earned (clamped to the new capacity).
    pub fn set_rate(&mut self, bytes_per_sec: u32, packets_per_sec: Option<u16>, burst: usize) {
        self.bytes_per_sec = bytes_per_sec.max(1) as u64;
        let (interval_ns, per_packet) = match packets_per_sec {
            Some(pps) => {
                let pps = pps.max(1) as u64;
                (
                    1_000_000_000 / pps,
                    (self.bytes_per_sec / pps).max(MIN_BUDGET as u64) as usize,
                )
            }
            None => (0, burst.max(MIN_BUDGET)),
        };
        self.interval_ns = interval_ns;
        self.capacity = per_packet as u128 * NANOS;
        self.tokens = self.tokens.min(self.capacity);
    }

    /// Bytes per second.
    pub fn bytes_per_sec(&self) -> u64 {
        self.bytes_per_sec
    }

    /// The bucket size in bytes: the most one datagram may use.
    pub fn capacity(&self) -> usize {
        (self.capacity / NANOS) as usize
    }

    fn refill(&mut self, now: Instant) {
        if now > self.last_refill {
            let elapsed = (now - self.last_refill).as_nanos();
            self.tokens = (self
                .tokens
                .saturating_add(elapsed.saturating_mul(self.bytes_per_sec as u128)))
            .min(self.capacity);
            self.last_refill = now;
        }
    }

    /// Whole bytes available now.
    pub fn available(&mut self, now: Instant) -> usize {
        self.refill(now);
        (self.tokens / NANOS) as usize
    }

    /// Whether the packet spacing allows a datagram at `now`.
    pub fn packet_allowed(&self, now: Instant) -> bool {
        now >= self.next_packet
    }

    /// Earliest time at which a datagram of `want` bytes (capped at the
    /// bucket size) fits both limits.
    pub fn ready_at(&self, want: usize) -> Instant {
        let want = (want.min(self.capacity()) as u128) * NANOS;
        let bytes_ready = if self.tokens >= want {
            self.last_refill
        } else {
            let missing = want - self.tokens;
            let ns = missing.div_ceil(self.bytes_per_sec as u128);
            self.last_refill + Duration::from_nanos(ns.min(u64::MAX as u128) as u64)
        };
        bytes_ready.max(self.next_packet)
    }

    /// Spends `bytes` for a datagram sent at `now`.
    pub fn consume(&mut self, now: Instant, bytes: usize) {
        self.refill(now);
        self.tokens = self.tokens.saturating_sub(bytes as u128 * NANOS);
        self.next_packet = now + Duration::from_nanos(self.interval_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modem_client_gets_small_datagrams() {
        let t0 = Instant::now();
        let mut r = RateLimiter::new(t0, 2000, Some(10), 0);
        assert_eq!(r.capacity(), 200);
        assert_eq!(r.available(t0), 200);
        r.consume(t0, 200);
        assert!(!r.packet_allowed(t0 + Duration::from_millis(50)));
        assert_eq!(r.ready_at(200), t0 + Duration::from_millis(100));
        assert_eq!(r.available(t0 + Duration::from_millis(50)), 100);
    }

    #[test]
    fn long_run_rate_is_respected() {
        let t0 = Instant::now();
        let mut r = RateLimiter::new(t0, 10_000, Some(100), 0);
        let mut now = t0;
        let mut sent = 0usize;
        for _ in 0..10_000 {
            now = r.ready_at(100).max(now);
            let n = r.available(now).min(100);
            r.consume(now, n);
            sent += n;
        }
        let secs = (now - t0).as_secs_f64();
        // One bucket of burst beyond the rate at most.
        assert!(sent as f64 <= 10_000.0 * secs + 100.0 + 1.0);
        assert!(sent as f64 >= 10_000.0 * secs * 0.95);
    }
}
