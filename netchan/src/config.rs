//! Per-connection settings.

use std::time::Duration;

use crate::fragment::ReassemblyLimits;
use crate::rate::RateAnnounce;

/// Settings of every connection an endpoint makes or accepts.
///
/// Both peers should use the same limits: the ordered window and receive
/// bounds are what keep each side's memory bounded.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    /// Largest guaranteed-ordered message or state payload (default 16 KiB).
    pub max_message_size: usize,
    /// Most guaranteed-ordered messages queued or in flight before the
    /// connection is closed with [`crate::DisconnectReason::OrderedOverflow`].
    pub ordered_max_messages: usize,
    /// Most guaranteed-ordered bytes queued or in flight before overflow.
    pub ordered_max_bytes: usize,
    /// Most messages between the oldest unacknowledged and the newest sent.
    pub ordered_window: u64,
    /// Most bytes of complete out-of-order messages the receiver holds.
    pub ordered_receive_bytes: usize,
    /// Most partial (fragmented) messages held, per delivery class.
    pub max_partials: usize,
    /// Most bytes held by partial messages, per delivery class.
    pub max_partial_bytes: usize,
    /// Most bytes of unacknowledged guaranteed-quickest items.
    pub quickest_max_bytes: usize,
    /// Most unguaranteed events waiting; beyond it new events are discarded (and counted).
    pub unguaranteed_max_queue: usize,
    /// Our own cap on what we send.
    pub send_rate: RateAnnounce,
    /// What we can receive, announced to the peer.
    pub receive_rate: RateAnnounce,
    /// Send a datagram at least this often, so the peer gets acks and knows we are alive.
    pub keepalive_interval: Duration,
    /// How long an ack may wait for other data to ride along.
    pub ack_delay: Duration,
    /// Close the connection when nothing arrives for this long.
    pub idle_timeout: Duration,
    /// Declare a datagram dropped once this many newer ones were acked without it.
    pub reorder_threshold: u64,
    /// RTT assumed before the first sample.
    pub initial_rtt: Duration,
    /// Lower bound of the RTT variation term in the drop timeout.
    pub timer_granularity: Duration,
    /// Emit [`crate::Event::Notify`] for every sent datagram (tests, diagnostics).
    pub datagram_notify_events: bool,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        Self {
            max_message_size: 16 * 1024,
            ordered_max_messages: 4096,
            ordered_max_bytes: 1 << 20,
            ordered_window: 1024,
            ordered_receive_bytes: 1 << 20,
            max_partials: 64,
            max_partial_bytes: 1 << 20,
            quickest_max_bytes: 1024,
            unguaranteed_max_queue: 256,
            send_rate: RateAnnounce::UNLIMITED,
            receive_rate: RateAnnounce::UNLIMITED,
            keepalive_interval: Duration::from_millis(100),
            ack_delay: Duration::from_millis(5),
            idle_timeout: Duration::from_secs(10),
            reorder_threshold: 3,
            initial_rtt: Duration::from_millis(200),
            timer_granularity: Duration::from_millis(10),
            datagram_notify_events: false,
        }
    }
}

impl ConnectionConfig {
    pub(crate) fn reassembly(&self) -> ReassemblyLimits {
        ReassemblyLimits {
            max_message: self.max_message_size.min(u32::MAX as usize) as u32,
            max_partials: self.max_partials,
            max_bytes: self.max_partial_bytes,
        }
    }
}
