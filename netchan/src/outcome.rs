//! What [`crate::Endpoint::handle`] did with one received datagram.
//!
//! Every datagram ends in exactly one [`HandleOutcome`]. Input that is
//! dropped without any reply is [`HandleOutcome::Rejected`] with a
//! [`DropReason`], and counted by that reason in
//! [`crate::EndpointMetrics::rejected`], so a stranger's traffic is told
//! apart from what the endpoint itself sends.

use crate::connection::ConnectionId;
use crate::handshake::RejectReason;

/// The result of feeding one datagram to [`crate::Endpoint::handle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HandleOutcome {
    /// Server: a connect request with a valid cookie was accepted; this
    /// (pending) connection now exists and an accept is queued.
    Accepted(ConnectionId),
    /// Server: a retried connect request for a connection already accepted;
    /// the accept is queued again, nothing new is created.
    AcceptRepeated(ConnectionId),
    /// Server: a challenge request was answered with a cookie; no state was kept.
    Challenged,
    /// Server: a status request was taken; its reply (the status payload,
    /// or "too large" when that would outgrow the request) is queued.
    Status,
    /// Server: a connect request with a valid cookie was refused, and the
    /// client is told why with a reject packet.
    Refused(RejectReason),
    /// Client: a challenge response, accept or reject advanced this
    /// connection's handshake.
    Handshake(ConnectionId),
    /// A data datagram was authenticated, decoded and accepted by this connection.
    Data(ConnectionId),
    /// Dropped without any reply.
    Rejected(DropReason),
}

impl HandleOutcome {
    /// The reason, when the datagram was dropped.
    pub fn rejection(self) -> Option<DropReason> {
        match self {
            HandleOutcome::Rejected(reason) => Some(reason),
            _ => None,
        }
    }
}

/// Why a received datagram was dropped without a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Larger than [`crate::MAX_DATAGRAM`]: no honest peer sends one.
    Oversize,
    /// Empty, or ends before its header (or a field its type requires) does.
    TooShort,
    /// Wrong magic, packet type, exact length or field value for its type.
    BadFraming,
    /// A data datagram or handshake response from an address (or client id)
    /// with no connection here.
    UnknownConnection,
    /// A well-formed packet this endpoint does not take in its role or the
    /// connection's phase (a challenge sent to a client, an accept for a
    /// connection that is not connecting, a grant that was never asked for).
    Unexpected,
    /// A connect request whose cookie this server did not issue (for that
    /// address and client id).
    BadCookie,
    /// A connect request whose cookie is older than its lifetime, or from the future.
    ExpiredCookie,
    /// A connect request whose cookie already created a connection.
    ReplayedCookie,
    /// An encrypted data datagram that failed authentication.
    Decryption,
    /// A data datagram whose sequence number was already received.
    Duplicate,
    /// A data datagram too old for the receive window.
    Stale,
    /// A data datagram whose body failed to decompress or to parse.
    BadBody,
    /// A challenge or connect that would be answered, but the queue of
    /// connectionless responses is full: answers are rate-limited to what
    /// the application sends between polls. Also a status request over its
    /// per-source or total limits ([`crate::status`]).
    RateLimited,
}

impl DropReason {
    /// Every reason, in declaration order.
    pub const ALL: [DropReason; 13] = [
        DropReason::Oversize,
        DropReason::TooShort,
        DropReason::BadFraming,
        DropReason::UnknownConnection,
        DropReason::Unexpected,
        DropReason::BadCookie,
        DropReason::ExpiredCookie,
        DropReason::ReplayedCookie,
        DropReason::Decryption,
        DropReason::Duplicate,
        DropReason::Stale,
        DropReason::BadBody,
        DropReason::RateLimited,
    ];

    /// A short snake_case name, for logs and metric labels.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Oversize => "oversize",
            DropReason::TooShort => "too_short",
            DropReason::BadFraming => "bad_framing",
            DropReason::UnknownConnection => "unknown_connection",
            DropReason::Unexpected => "unexpected",
            DropReason::BadCookie => "bad_cookie",
            DropReason::ExpiredCookie => "expired_cookie",
            DropReason::ReplayedCookie => "replayed_cookie",
            DropReason::Decryption => "decryption",
            DropReason::Duplicate => "duplicate",
            DropReason::Stale => "stale",
            DropReason::BadBody => "bad_body",
            DropReason::RateLimited => "rate_limited",
        }
    }

    /// The reason a decode error stands for.
    pub fn of_decode(error: &crate::DecodeError) -> Self {
        use crate::DecodeError as E;
        match error {
            E::Empty | E::Truncated { .. } => DropReason::TooShort,
            E::Oversized(_) => DropReason::Oversize,
            E::Authentication => DropReason::Decryption,
            E::Decompress | E::UnknownChunk(_) | E::Fragment(_) => DropReason::BadBody,
            E::BadLength { len, expected, .. } if len < expected => DropReason::TooShort,
            E::UnknownPacketType(_) | E::BadMagic | E::BadLength { .. } | E::BadValue { .. } => {
                DropReason::BadFraming
            }
        }
    }
}

impl std::fmt::Display for DropReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::RejectedCounts;

    #[test]
    fn every_reason_has_its_own_counter_and_name() {
        let mut counts = RejectedCounts::default();
        for (i, reason) in DropReason::ALL.iter().enumerate() {
            // The counters are indexed by discriminant: ALL must follow declaration order.
            assert_eq!(*reason as usize, i);
            for _ in 0..=i {
                counts.add(*reason);
            }
        }
        for (i, (reason, n)) in counts.iter().enumerate() {
            assert_eq!((reason, n), (DropReason::ALL[i], i as u64 + 1));
        }
        assert_eq!(counts.total(), (1..=13).sum::<u64>());
        let names: std::collections::HashSet<_> =
            DropReason::ALL.iter().map(|r| r.name()).collect();
        assert_eq!(names.len(), DropReason::ALL.len());
    }

    #[test]
    fn decode_errors_map_to_reasons() {
        use crate::DecodeError as E;
        let short = E::BadLength {
            what: "challenge request",
            len: 20,
            expected: 48,
        };
        let long = E::BadLength {
            what: "challenge request",
            len: 49,
            expected: 48,
        };
        assert_eq!(DropReason::of_decode(&short), DropReason::TooShort);
        assert_eq!(DropReason::of_decode(&long), DropReason::BadFraming);
        assert_eq!(DropReason::of_decode(&E::Empty), DropReason::TooShort);
        assert_eq!(DropReason::of_decode(&E::BadMagic), DropReason::BadFraming);
        assert_eq!(
            DropReason::of_decode(&E::Oversized(2000)),
            DropReason::Oversize
        );
        assert_eq!(
            DropReason::of_decode(&E::Authentication),
            DropReason::Decryption
        );
        assert_eq!(DropReason::of_decode(&E::Decompress), DropReason::BadBody);
    }
}
