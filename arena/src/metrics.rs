//! The dedicated server's Prometheus metrics (`prometheus-client`), served
//! as text at `/metrics` by [`crate::http::MetricsServer`].
//!
//! | metric | type | what |
//! | --- | --- | --- |
//! | `arena_connected_clients` | gauge | clients connected now |
//! | `arena_frames_total` | counter | server ticks run |
//! | `arena_frame_seconds` | histogram | wall time of one tick |
//! | `arena_bytes_sent_total` / `arena_bytes_received_total` | counter | UDP payload bytes through the server socket |
//! | `arena_snapshot_bytes` | histogram | size of each snapshot message built |
//! | `arena_snapshots_total{kind="delta"\|"full"}` | counter | snapshots built, by kind |
//! | `arena_reliable_queue_messages` | gauge | guaranteed messages queued or in flight, all clients |
//! | `arena_reliable_queue_max` | gauge | the same for the client with the longest queue |
//! | `arena_timeouts_total` | counter | connections timed out |
//! | `arena_rejected_datagrams_total{reason=…}` | counter | datagrams dropped, by netchan's `DropReason` |
//!
//! Counters that the lower layers already keep as running totals (netchan's
//! metrics, the socket meter) are fed with [`Totals`]: the metric moves by
//! the difference since the last call, so it is never counted twice.

use std::sync::Arc;
use std::time::Duration;

use std::fmt::Write as _;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use netchan::DropReason;

/// Kind of a snapshot.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub enum SnapshotKind {
    /// A delta from an acknowledged snapshot.
    Delta,
    /// A full update (from the zeroed baseline).
    Full,
}

impl SnapshotKind {
    /// Its label value.
    pub fn name(self) -> &'static str {
        match self {
            SnapshotKind::Delta => "delta",
            SnapshotKind::Full => "full",
        }
    }
}

impl EncodeLabelValue for SnapshotKind {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.name())
    }
}

/// netchan's drop reason as a label value.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
struct Reason(DropReason);

impl EncodeLabelValue for Reason {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.0.name())
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: SnapshotKind,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: Reason,
}

/// Running totals kept by lower layers, sampled once in a while.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// UDP payload bytes sent by the server endpoint.
    pub bytes_sent: u64,
    /// UDP payload bytes received.
    pub bytes_received: u64,
    /// Dropped datagrams, indexed like [`DropReason::ALL`].
    pub rejected: [u64; DropReason::ALL.len()],
}

impl Totals {
    /// The totals in netchan's endpoint counters.
    pub fn of(endpoint: &netchan::EndpointMetrics) -> Totals {
        let mut rejected = [0; DropReason::ALL.len()];
        for (slot, (_, count)) in rejected.iter_mut().zip(endpoint.rejected.iter()) {
            *slot = count;
        }
        Totals {
            bytes_sent: endpoint.bytes_sent,
            bytes_received: endpoint.bytes_received,
            rejected,
        }
    }

    /// Sets the total for one reason.
    pub fn set_rejected(&mut self, reason: DropReason, total: u64) {
        self.rejected[reason as usize] = total;
    }
}

/// The server's metrics. Cheap to update from the game loop (atomics);
/// [`ServerMetrics::registry`] is what the HTTP thread encodes.
#[derive(Debug)]
pub struct ServerMetrics {
    registry: Arc<Registry>,
    connected: Gauge,
    frames: Counter,
    frame_seconds: Histogram,
    bytes_sent: Counter,
    bytes_received: Counter,
    snapshot_bytes: Histogram,
    snapshots: Family<KindLabel, Counter>,
    reliable_queue: Gauge,
    reliable_queue_max: Gauge,
    timeouts: Counter,
    rejected: Family<ReasonLabel, Counter>,
    last: Totals,
}

impl Default for ServerMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerMetrics {
    /// All metrics at zero, registered under the `arena_` prefix.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("arena");
        let connected = Gauge::default();
        let frames = Counter::default();
        // 50 µs .. ~100 ms: a tick is well under a millisecond normally;
        // the top buckets catch stalls.
        let frame_seconds = Histogram::new(exponential_buckets(50e-6, 2.0, 12));
        let bytes_sent = Counter::default();
        let bytes_received = Counter::default();
        // 16 B .. 16 KiB (the largest message netchan carries).
        let snapshot_bytes = Histogram::new(exponential_buckets(16.0, 2.0, 11));
        let snapshots = Family::<KindLabel, Counter>::default();
        let reliable_queue = Gauge::default();
        let reliable_queue_max = Gauge::default();
        let timeouts = Counter::default();
        let rejected = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "connected_clients",
            "Clients connected now",
            connected.clone(),
        );
        registry.register("frames", "Server ticks run", frames.clone());
        registry.register(
            "frame_seconds",
            "Wall time of one server tick",
            frame_seconds.clone(),
        );
        registry.register(
            "bytes_sent",
            "UDP payload bytes sent by the server socket",
            bytes_sent.clone(),
        );
        registry.register(
            "bytes_received",
            "UDP payload bytes received by the server socket",
            bytes_received.clone(),
        );
        registry.register(
            "snapshot_bytes",
            "Size of each snapshot message built",
            snapshot_bytes.clone(),
        );
        registry.register("snapshots", "Snapshots built, by kind", snapshots.clone());
        registry.register(
            "reliable_queue_messages",
            "Guaranteed messages queued or in flight to all clients",
            reliable_queue.clone(),
        );
        registry.register(
            "reliable_queue_max",
            "Guaranteed messages queued or in flight to the most backed-up client",
            reliable_queue_max.clone(),
        );
        registry.register("timeouts", "Connections timed out", timeouts.clone());
        registry.register(
            "rejected_datagrams",
            "Datagrams dropped before reaching the game, by reason",
            rejected.clone(),
        );
        // Every label set exists from the start, so a scrape shows zeros
        // rather than missing series.
        for kind in [SnapshotKind::Delta, SnapshotKind::Full] {
            let _ = snapshots.get_or_create(&KindLabel { kind });
        }
        for reason in DropReason::ALL {
            let _ = rejected.get_or_create(&ReasonLabel {
                reason: Reason(reason),
            });
        }
        Self {
            registry: Arc::new(registry),
            connected,
            frames,
            frame_seconds,
            bytes_sent,
            bytes_received,
            snapshot_bytes,
            snapshots,
            reliable_queue,
            reliable_queue_max,
            timeouts,
            rejected,
            last: Totals::default(),
        }
    }

    /// The registry, shared with the HTTP thread.
    pub fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry)
    }

    /// One tick ran, taking `took`.
    pub fn frame(&self, took: Duration) {
        self.frames.inc();
        self.frame_seconds.observe(took.as_secs_f64());
    }

    /// One snapshot message of `bytes` was built.
    pub fn snapshot(&self, bytes: usize, full: bool) {
        self.snapshot_bytes.observe(bytes as f64);
        let kind = if full {
            SnapshotKind::Full
        } else {
            SnapshotKind::Delta
        };
        self.snapshots.get_or_create(&KindLabel { kind }).inc();
    }

    /// One connection timed out.
    pub fn timeout(&self) {
        self.timeouts.inc();
    }

    /// Clients connected now.
    pub fn set_clients(&self, n: usize) {
        self.connected.set(n as i64);
    }

    /// Guaranteed messages queued: all clients together, and the longest queue.
    pub fn set_reliable_queue(&self, total: usize, max: usize) {
        self.reliable_queue.set(total as i64);
        self.reliable_queue_max.set(max as i64);
    }

    /// Moves the total-backed counters to `now`'s values. A total that went
    /// down (a connection's counters left with it) moves nothing until it
    /// passes its old value.
    pub fn update_totals(&mut self, now: Totals) {
        let step = |counter: &Counter, last: &mut u64, value: u64| {
            if value > *last {
                counter.inc_by(value - *last);
                *last = value;
            }
        };
        step(&self.bytes_sent, &mut self.last.bytes_sent, now.bytes_sent);
        step(
            &self.bytes_received,
            &mut self.last.bytes_received,
            now.bytes_received,
        );
        for (i, reason) in DropReason::ALL.into_iter().enumerate() {
            let counter = self.rejected.get_or_create(&ReasonLabel {
                reason: Reason(reason),
            });
            step(&counter, &mut self.last.rejected[i], now.rejected[i]);
        }
    }

    /// The text exposition of every metric.
    pub fn encode(&self) -> String {
        encode(&self.registry)
    }
}

/// The text exposition of `registry` (OpenMetrics text, which Prometheus reads).
pub fn encode(registry: &Registry) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, registry);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line {prefix} in\n{text}"))
    }

    #[test]
    fn totals_move_counters_by_their_difference() {
        let mut m = ServerMetrics::new();
        let mut t = Totals {
            bytes_sent: 1000,
            bytes_received: 10,
            ..Totals::default()
        };
        t.set_rejected(DropReason::BadFraming, 3);
        m.update_totals(t);
        t.bytes_sent = 1500;
        t.set_rejected(DropReason::BadFraming, 5);
        m.update_totals(t);
        // A total going down moves nothing.
        t.bytes_received = 4;
        m.update_totals(t);
        let text = m.encode();
        assert_eq!(
            line(&text, "arena_bytes_sent_total"),
            "arena_bytes_sent_total 1500"
        );
        assert_eq!(
            line(&text, "arena_bytes_received_total"),
            "arena_bytes_received_total 10"
        );
        assert_eq!(
            line(
                &text,
                "arena_rejected_datagrams_total{reason=\"bad_framing\"}"
            ),
            "arena_rejected_datagrams_total{reason=\"bad_framing\"} 5"
        );
        assert_eq!(
            line(&text, "arena_rejected_datagrams_total{reason=\"stale\"}"),
            "arena_rejected_datagrams_total{reason=\"stale\"} 0"
        );
    }

    #[test]
    fn endpoint_counters_become_totals() {
        let mut endpoint =
            netchan::Endpoint::new(netchan::EndpointConfig::server(), std::time::Instant::now());
        let from = std::net::SocketAddr::from(([127, 0, 0, 1], 9));
        let now = std::time::Instant::now();
        endpoint.handle(now, from, &[]);
        endpoint.handle(now, from, &[0xff; 20]);
        endpoint.handle(now, from, &[0x10; 2000]);
        let t = Totals::of(endpoint.metrics());
        assert_eq!(t.bytes_received, 2020);
        assert_eq!(t.rejected[DropReason::TooShort as usize], 1);
        assert_eq!(t.rejected[DropReason::BadFraming as usize], 1);
        assert_eq!(t.rejected[DropReason::Oversize as usize], 1);
        assert_eq!(t.rejected.iter().sum::<u64>(), 3);
    }
}
