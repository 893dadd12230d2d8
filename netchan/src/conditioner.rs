//! A seeded, deterministic link conditioner: loss (uniform and bursty),
//! latency, jitter, duplication, reordering and a bandwidth cap.
//!
//! It sits on the send path: datagrams go in with [`LinkConditioner::push`]
//! and come out of [`LinkConditioner::pop_due`] at their release time, or
//! never. Every random choice comes from one [`SplitMix64`] stream drawn in a
//! fixed order per datagram, so the same seed and the same input give the
//! same output — in tests on simulated time and in front of a real socket.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// SplitMix64: a tiny, fast, well-distributed seeded generator.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The generator's whole state: `SplitMix64::new(g.state())` continues
    /// exactly where `g` is (simulations save and restore it).
    pub fn state(&self) -> u64 {
        self.0
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform float in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `true` with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.next_f64() < p
    }

    /// A uniform duration in `[0, max]`.
    pub fn duration_up_to(&mut self, max: Duration) -> Duration {
        if max.is_zero() {
            return Duration::ZERO;
        }
        let nanos = max.as_nanos().min(u64::MAX as u128) as u64;
        Duration::from_nanos(self.next_u64() % (nanos + 1))
    }
}

/// Gilbert–Elliott bursty loss: a good and a bad state with their own loss rates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BurstLoss {
    /// Per-datagram probability of moving from good to bad.
    pub enter_bad: f64,
    /// Per-datagram probability of moving from bad back to good.
    pub leave_bad: f64,
    /// Loss probability while bad (the uniform `loss` applies while good).
    pub loss_in_bad: f64,
}

/// What the conditioner does to traffic.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConditionerConfig {
    /// Probability of dropping a datagram (in the good state, with bursts).
    pub loss: f64,
    /// Bursty loss on top of the uniform rate.
    pub burst: Option<BurstLoss>,
    /// Fixed one-way delay.
    pub latency: Duration,
    /// Extra uniform delay in `[0, jitter]` per datagram (reorders when larger than the spacing).
    pub jitter: Duration,
    /// Probability of delivering a datagram twice.
    pub duplicate: f64,
    /// Probability of holding a datagram back by `reorder_delay`.
    pub reorder: f64,
    /// How long a reordered datagram is held back.
    pub reorder_delay: Duration,
    /// Link bandwidth in bytes/s: datagrams queue behind each other.
    pub bandwidth: Option<u32>,
    /// Bytes the bandwidth queue holds before dropping new datagrams.
    pub queue_limit: usize,
}

impl ConditionerConfig {
    /// No impairment at all.
    pub fn perfect() -> Self {
        Self::default()
    }

    /// `true` when the conditioner would pass everything unchanged.
    pub fn is_perfect(&self) -> bool {
        *self == Self::default()
    }
}

/// A datagram inside (or leaving) the conditioner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram {
    /// Source address.
    pub from: SocketAddr,
    /// Destination address.
    pub to: SocketAddr,
    /// Payload.
    pub bytes: Vec<u8>,
}

#[derive(Debug)]
struct Scheduled {
    release: Instant,
    order: u64,
    datagram: Datagram,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        (self.release, self.order) == (other.release, other.order)
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scheduled {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.release, other.order).cmp(&(self.release, self.order))
    }
}

/// What the conditioner did, for test assertions and logs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConditionerStats {
    /// Datagrams pushed in.
    pub pushed: u64,
    /// Dropped by loss.
    pub lost: u64,
    /// Dropped because the bandwidth queue was full.
    pub overflowed: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Held back for reordering.
    pub reordered: u64,
    /// Released.
    pub released: u64,
}

/// The conditioner itself.
#[derive(Debug)]
pub struct LinkConditioner {
    config: ConditionerConfig,
    rng: SplitMix64,
    bad: bool,
    link_free_at: Option<Instant>,
    queue: BinaryHeap<Scheduled>,
    order: u64,
    spare: Vec<Vec<u8>>,
    stats: ConditionerStats,
}

impl LinkConditioner {
    /// A conditioner with `config`, deterministic for `seed`.
    pub fn new(config: ConditionerConfig, seed: u64) -> Self {
        Self {
            config,
            rng: SplitMix64::new(seed),
            bad: false,
            link_free_at: None,
            queue: BinaryHeap::new(),
            order: 0,
            spare: Vec::new(),
            stats: ConditionerStats::default(),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &ConditionerConfig {
        &self.config
    }

    /// What happened so far.
    pub fn stats(&self) -> &ConditionerStats {
        &self.stats
    }

    /// Datagrams waiting for release.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// `true` when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    fn lost(&mut self) -> bool {
        let mut p = self.config.loss;
        if let Some(burst) = self.config.burst {
            let flip = self.rng.next_f64();
            if self.bad {
                if flip < burst.leave_bad {
                    self.bad = false;
                }
            } else if flip < burst.enter_bad {
                self.bad = true;
            }
            if self.bad {
                p = burst.loss_in_bad;
            }
        }
        self.rng.chance(p)
    }

    fn schedule(&mut self, departure: Instant, from: SocketAddr, to: SocketAddr, bytes: &[u8]) {
        let mut release =
            departure + self.config.latency + self.rng.duration_up_to(self.config.jitter);
        if self.config.reorder > 0.0 && self.rng.chance(self.config.reorder) {
            release += self.config.reorder_delay;
            self.stats.reordered += 1;
        }
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(bytes);
        self.order += 1;
        self.queue.push(Scheduled {
            release,
            order: self.order,
            datagram: Datagram {
                from,
                to,
                bytes: buf,
            },
        });
    }

    /// Sends a datagram into the link at `now`.
    pub fn push(&mut self, now: Instant, from: SocketAddr, to: SocketAddr, bytes: &[u8]) {
        self.stats.pushed += 1;
        if self.lost() {
            self.stats.lost += 1;
            return;
        }
        let departure = match self.config.bandwidth {
            Some(bw) => {
                let start = self.link_free_at.map_or(now, |t| t.max(now));
                let backlog = (start - now).as_secs_f64() * bw as f64;
                if backlog + bytes.len() as f64 > self.config.queue_limit.max(bytes.len()) as f64 {
                    self.stats.overflowed += 1;
                    return;
                }
                let done = start + Duration::from_secs_f64(bytes.len() as f64 / bw.max(1) as f64);
                self.link_free_at = Some(done);
                done
            }
            None => now,
        };
        self.schedule(departure, from, to, bytes);
        if self.config.duplicate > 0.0 && self.rng.chance(self.config.duplicate) {
            self.stats.duplicated += 1;
            self.schedule(departure, from, to, bytes);
        }
    }

    /// When the next datagram is released.
    pub fn next_release(&self) -> Option<Instant> {
        self.queue.peek().map(|s| s.release)
    }

    /// The next datagram whose release time is at or before `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<Datagram> {
        if self.queue.peek()?.release > now {
            return None;
        }
        self.stats.released += 1;
        self.queue.pop().map(|s| s.datagram)
    }

    /// Returns a released datagram's buffer for reuse.
    pub fn recycle(&mut self, bytes: Vec<u8>) {
        if self.spare.len() < 1024 {
            self.spare.push(bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(p: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], p))
    }

    fn run(config: ConditionerConfig, seed: u64) -> Vec<(Duration, Vec<u8>)> {
        let t0 = Instant::now();
        let mut c = LinkConditioner::new(config, seed);
        for i in 0..2000u32 {
            c.push(
                t0 + Duration::from_millis(i as u64),
                addr(1),
                addr(2),
                &i.to_le_bytes(),
            );
        }
        let mut out = Vec::new();
        while let Some(d) = c.pop_due(t0 + Duration::from_secs(100)) {
            out.push((Duration::ZERO, d.bytes));
        }
        out
    }

    #[test]
    fn deterministic_per_seed() {
        let config = ConditionerConfig {
            loss: 0.2,
            jitter: Duration::from_millis(30),
            duplicate: 0.1,
            reorder: 0.1,
            reorder_delay: Duration::from_millis(50),
            ..ConditionerConfig::default()
        };
        assert_eq!(run(config.clone(), 7), run(config.clone(), 7));
        assert_ne!(run(config.clone(), 7), run(config, 8));
    }

    #[test]
    fn loss_rate_and_duplication_are_roughly_right() {
        let config = ConditionerConfig {
            loss: 0.3,
            duplicate: 0.1,
            ..ConditionerConfig::default()
        };
        let t0 = Instant::now();
        let mut c = LinkConditioner::new(config, 1);
        for _ in 0..10_000 {
            c.push(t0, addr(1), addr(2), &[0]);
        }
        let lost = c.stats().lost as f64 / 10_000.0;
        assert!((0.27..0.33).contains(&lost), "{lost}");
        let dup = c.stats().duplicated as f64 / (10_000.0 - c.stats().lost as f64);
        assert!((0.08..0.12).contains(&dup), "{dup}");
    }

    #[test]
    fn bursty_loss_clusters() {
        let config = ConditionerConfig {
            burst: Some(BurstLoss {
                enter_bad: 0.02,
                leave_bad: 0.2,
                loss_in_bad: 1.0,
            }),
            ..ConditionerConfig::default()
        };
        let t0 = Instant::now();
        let mut c = LinkConditioner::new(config, 3);
        let mut pattern = Vec::new();
        for i in 0..20_000u32 {
            let before = c.stats().lost;
            c.push(t0, addr(1), addr(2), &i.to_le_bytes());
            pattern.push(c.stats().lost > before);
        }
        let losses = pattern.iter().filter(|l| **l).count();
        let runs = pattern.windows(2).filter(|w| !w[0] && w[1]).count();
        // Mean burst length is 1 / leave_bad = 5: far above uniform loss's ~1.
        assert!(losses as f64 / runs as f64 > 3.0);
    }

    #[test]
    fn bandwidth_spaces_and_drops() {
        let config = ConditionerConfig {
            bandwidth: Some(1000),
            queue_limit: 500,
            ..ConditionerConfig::default()
        };
        let t0 = Instant::now();
        let mut c = LinkConditioner::new(config, 0);
        for _ in 0..10 {
            c.push(t0, addr(1), addr(2), &[0; 100]);
        }
        // 100 bytes at 1000 B/s is 100 ms each; the queue holds 500 bytes.
        assert_eq!(c.stats().overflowed, 5);
        assert_eq!(c.next_release(), Some(t0 + Duration::from_millis(100)));
        assert!(c.pop_due(t0 + Duration::from_millis(250)).is_some());
        assert!(c.pop_due(t0 + Duration::from_millis(250)).is_some());
        assert!(c.pop_due(t0 + Duration::from_millis(250)).is_none());
    }

    #[test]
    fn latency_and_reorder() {
        let config = ConditionerConfig {
            latency: Duration::from_millis(40),
            reorder: 1.0,
            reorder_delay: Duration::from_millis(10),
            ..ConditionerConfig::default()
        };
        let t0 = Instant::now();
        let mut c = LinkConditioner::new(config, 0);
        c.push(t0, addr(1), addr(2), &[1]);
        assert_eq!(c.next_release(), Some(t0 + Duration::from_millis(50)));
        assert!(c.pop_due(t0 + Duration::from_millis(49)).is_none());
        assert_eq!(
            c.pop_due(t0 + Duration::from_millis(50)).map(|d| d.bytes),
            Some(vec![1])
        );
    }
}
