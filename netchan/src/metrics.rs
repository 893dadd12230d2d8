//! Per-connection and per-endpoint counters: plain structs, updated in place
//! and cheap to read at any time.

use std::time::Duration;

use crate::outcome::DropReason;

/// Counters and gauges of one connection.
///
/// Counters only grow; gauges (queue depths, RTT, loss) reflect the moment
/// of reading. Rates such as kbps are left to the reader: sample
/// `bytes_sent` twice and divide by the interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    /// Data datagrams sent.
    pub datagrams_sent: u64,
    /// Data datagrams received and accepted.
    pub datagrams_received: u64,
    /// UDP payload bytes sent (data datagrams).
    pub bytes_sent: u64,
    /// UDP payload bytes received (accepted data datagrams).
    pub bytes_received: u64,
    /// Largest datagram sent, in bytes.
    pub largest_datagram_sent: usize,
    /// Fragment chunks sent (ordered and state).
    pub fragments_sent: u64,
    /// Fragment chunks received.
    pub fragments_received: u64,
    /// Sent datagrams notified delivered.
    pub datagrams_delivered: u64,
    /// Sent datagrams notified dropped.
    pub datagrams_dropped: u64,
    /// Received datagrams dropped as too old for the window.
    pub stale_received: u64,
    /// Received datagrams dropped as duplicates.
    pub duplicates_received: u64,
    /// Received datagrams (or chunks) that failed to parse or broke protocol rules.
    pub malformed_received: u64,
    /// Received datagrams that failed authentication.
    pub auth_failures: u64,
    /// Received datagrams not acknowledged because a receive bound was full.
    pub refused_received: u64,
    /// Guaranteed-ordered pieces sent again after a drop.
    pub resends: u64,
    /// Guaranteed-ordered messages queued by the application.
    pub ordered_queued: u64,
    /// Guaranteed-ordered messages fully acknowledged by the peer.
    pub ordered_acked: u64,
    /// Guaranteed-ordered messages delivered to the application.
    pub ordered_delivered: u64,
    /// Unguaranteed events sent.
    pub unguaranteed_sent: u64,
    /// Unguaranteed events received.
    pub unguaranteed_received: u64,
    /// Unguaranteed events discarded unsent (queue full, or larger than any datagram could carry).
    pub unguaranteed_discarded: u64,
    /// Guaranteed-quickest items queued.
    pub quickest_queued: u64,
    /// Guaranteed-quickest items delivered to the application.
    pub quickest_delivered: u64,
    /// State payloads submitted.
    pub states_sent: u64,
    /// State payloads reported delivered.
    pub states_delivered: u64,
    /// State payloads reported dropped.
    pub states_dropped: u64,
    /// State payloads received and delivered to the application.
    pub states_received: u64,
    /// Smoothed round-trip time.
    pub rtt: Duration,
    /// Round-trip time variation.
    pub rtt_var: Duration,
    /// Smoothed fraction of sent datagrams notified dropped (0..=1).
    pub loss: f32,
    /// Guaranteed-ordered messages queued or in flight.
    pub ordered_queue_len: usize,
    /// Bytes of those messages.
    pub ordered_queue_bytes: usize,
    /// Guaranteed-ordered messages sent at least once and not fully acknowledged.
    pub ordered_in_flight: usize,
    /// Unguaranteed events waiting.
    pub unguaranteed_queue_len: usize,
    /// Guaranteed-quickest items not yet acknowledged.
    pub quickest_queue_len: usize,
    /// Datagrams sent and not yet notified.
    pub datagrams_in_flight: usize,
    /// Partial messages being reassembled (ordered and state).
    pub partial_messages: usize,
    /// Current send byte rate limit (bytes/s), after the peer's announcement.
    pub send_rate: u64,
}

/// Counters of everything an endpoint received and sent.
///
/// What the endpoint *sent* (`datagrams_sent`, `bytes_sent`,
/// `largest_datagram_sent`) is kept apart from what it *received*: a
/// stranger's oversize or garbage datagrams land in [`Self::rejected`], by
/// reason, and never in the sent figures, so a check such as "nothing sent
/// over [`crate::MAX_DATAGRAM`] bytes" holds whatever arrives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointMetrics {
    /// Datagrams received, of any kind (accepted or rejected).
    pub datagrams_received: u64,
    /// UDP payload bytes received, of any kind.
    pub bytes_received: u64,
    /// Datagrams sent, of any kind.
    pub datagrams_sent: u64,
    /// UDP payload bytes sent, of any kind.
    pub bytes_sent: u64,
    /// Largest datagram this endpoint sent, in bytes (never above [`crate::MAX_DATAGRAM`]).
    pub largest_datagram_sent: usize,
    /// Challenge requests answered with a cookie.
    pub challenges_answered: u64,
    /// Connections accepted.
    pub accepted: u64,
    /// Challenge and connect requests refused with a reason sent back
    /// ([`crate::RejectReason`]).
    pub refused: u64,
    /// Data datagrams of a connection this server does not hold, answered
    /// with [`crate::RejectReason::UnknownConnection`] (each is also counted
    /// in [`Self::rejected`] as [`DropReason::UnknownConnection`]).
    pub unknown_connection_replies: u64,
    /// Connections whose client moved to a new port (NAT rebinding).
    pub migrations: u64,
    /// Status requests answered with the status payload.
    pub status_answered: u64,
    /// Status requests answered "too large" (the payload would outgrow the request).
    pub status_too_large: u64,
    /// Status requests refused by the per-source, total or table limits
    /// (also counted in [`Self::rejected`] as [`DropReason::RateLimited`]).
    pub status_rate_limited: u64,
    /// Received datagrams dropped, by reason: without a reply, except
    /// unknown connections' data ([`Self::unknown_connection_replies`]).
    pub rejected: RejectedCounts,
}

/// Received datagrams dropped without a reply, one counter per [`DropReason`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RejectedCounts {
    counts: [u64; DropReason::ALL.len()],
}

impl RejectedCounts {
    /// Datagrams dropped for `reason`.
    pub fn get(&self, reason: DropReason) -> u64 {
        self.counts[reason as usize]
    }

    /// Datagrams dropped for any reason.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Every reason with its count, in [`DropReason::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL.iter().map(|&r| (r, self.get(r)))
    }

    pub(crate) fn add(&mut self, reason: DropReason) {
        self.counts[reason as usize] += 1;
    }
}
