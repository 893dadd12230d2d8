//! Rate limits on connectionless requests, as ioquake3 applies them
//! (`SVC_RateLimit`): a leaky bucket per source address (10 requests, one
//! more each second) so `getstatus` and friends cannot be used as a traffic
//! amplifier, and one global bucket for all answers (10, one more every
//! 100 ms) so a flood of forged requests cannot make the relay flood back.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Requests an address may burst (`SVC_RateLimitAddress(from, 10, 1000)`).
pub const ADDRESS_BURST: u32 = 10;
/// One more request per address this often.
pub const ADDRESS_PERIOD: Duration = Duration::from_millis(1000);
/// Answers the relay may burst in all (`outboundLeakyBucket`, 10, 100).
pub const OUTBOUND_BURST: u32 = 10;
/// One more answer this often.
pub const OUTBOUND_PERIOD: Duration = Duration::from_millis(100);
/// Addresses tracked at most; idle ones are forgotten first, and while
/// every slot is busy new addresses are refused (bounded memory).
pub const MAX_ADDRESSES: usize = 4096;

/// A leaky bucket: `burst` counts requests in the current window.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    burst: u32,
    last: Instant,
}

impl Bucket {
    fn new(now: Instant) -> Bucket {
        Bucket {
            burst: 0,
            last: now,
        }
    }

    /// Whether one more request is allowed at `now` (and counts it).
    fn allow(&mut self, now: Instant, burst: u32, period: Duration) -> bool {
        let interval = now.saturating_duration_since(self.last);
        let period_ms = period.as_millis().max(1);
        let expired = interval.as_millis() / period_ms;
        let remainder = interval.as_millis() % period_ms;
        if expired > u128::from(self.burst) {
            self.burst = 0;
            self.last = now;
        } else {
            self.burst -= expired as u32;
            self.last = now - Duration::from_millis(remainder as u64);
        }
        if self.burst < burst {
            self.burst += 1;
            true
        } else {
            false
        }
    }
}

/// The relay's rate limits.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    addresses: HashMap<IpAddr, Bucket>,
    outbound: Bucket,
    refused: u64,
}

impl RateLimiter {
    /// Limits starting at `now`.
    pub fn new(now: Instant) -> RateLimiter {
        RateLimiter {
            addresses: HashMap::new(),
            outbound: Bucket::new(now),
            refused: 0,
        }
    }

    /// Whether a connectionless request from `address` may be answered at
    /// `now`: within its address's bucket and the global one.
    pub fn allow(&mut self, address: IpAddr, now: Instant) -> bool {
        if !self.addresses.contains_key(&address) && self.addresses.len() >= MAX_ADDRESSES {
            // Forget addresses whose bucket has drained.
            let idle = ADDRESS_PERIOD * ADDRESS_BURST;
            self.addresses
                .retain(|_, b| now.saturating_duration_since(b.last) < idle);
            if self.addresses.len() >= MAX_ADDRESSES {
                self.refused += 1;
                return false;
            }
        }
        let bucket = self
            .addresses
            .entry(address)
            .or_insert_with(|| Bucket::new(now));
        let allowed = bucket.allow(now, ADDRESS_BURST, ADDRESS_PERIOD)
            && self.outbound.allow(now, OUTBOUND_BURST, OUTBOUND_PERIOD);
        self.refused += u64::from(!allowed);
        allowed
    }

    /// Requests refused so far.
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// Addresses tracked now.
    pub fn tracked(&self) -> usize {
        self.addresses.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_gets_ten_then_one_a_second() {
        let t0 = Instant::now();
        let mut limiter = RateLimiter::new(t0);
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        // Spread over time so the global bucket does not interfere.
        let allowed = (0..15)
            .filter(|i| limiter.allow(a, t0 + Duration::from_millis(i * 20)))
            .count();
        assert_eq!(allowed, 10);
        // Another address is not affected once the global bucket refills.
        assert!(limiter.allow(b, t0 + Duration::from_millis(1000)));
        // One second later `a` gets one more, not two.
        let later = t0 + Duration::from_millis(1280);
        assert!(limiter.allow(a, later));
        assert!(!limiter.allow(a, later + Duration::from_millis(150)));
        assert_eq!(limiter.refused(), 6);
    }

    #[test]
    fn the_global_bucket_caps_a_flood_from_many_addresses() {
        let t0 = Instant::now();
        let mut limiter = RateLimiter::new(t0);
        let allowed = (0..100u32)
            .filter(|i| limiter.allow(IpAddr::from(i.to_be_bytes()), t0))
            .count();
        assert_eq!(allowed, 10);
        // 100 ms later one more.
        let next = t0 + Duration::from_millis(100);
        assert!(limiter.allow([9, 9, 9, 9].into(), next));
        assert!(!limiter.allow([9, 9, 9, 8].into(), next));
    }

    #[test]
    fn tracked_addresses_are_bounded() {
        let t0 = Instant::now();
        let mut limiter = RateLimiter::new(t0);
        for i in 0..(MAX_ADDRESSES as u32 + 50) {
            let now = t0 + Duration::from_millis(u64::from(i) * 100);
            limiter.allow(IpAddr::from(i.to_be_bytes()), now);
        }
        assert!(limiter.tracked() <= MAX_ADDRESSES);
    }
}
