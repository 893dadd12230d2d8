//! The connectionless status query (Quake 3's `getstatus`, without its
//! reflection problem).
//!
//! ```text
//! anyone                                     server
//!   status request(nonce, zero padding) ───▶  per-source + total rate limit
//!   ◀──────── status reply(nonce, payload)    only if reply ≤ request in size
//!   ◀──────── too large(nonce, needed len)    otherwise: "pad to this much"
//! ```
//!
//! The requester has proven nothing about its address, so the source may be
//! spoofed and the reply may land on a victim. Two rules keep the server
//! useless as a reflector:
//!
//! * **No amplification**: a reply is never larger than the request that
//!   caused it. The requester pads its request to the size of the reply it
//!   expects; when the payload does not fit, the server answers with a
//!   [`STATUS_REPLY_HEADER_LEN`]-byte "too large" reply naming the length
//!   to pad to (a request is always at least that long).
//! * **Rate limits**: replies per source IP address follow a token bucket
//!   (a flood from one address gets `burst` replies and then `rate` per
//!   second), and all replies together follow another, so spoofing many
//!   addresses does not multiply the output. The table of sources is bounded:
//!   a source whose bucket is full again holds no information and is
//!   evicted; when every slot is busy, new sources are refused.
//!
//! The payload is opaque bytes set by the application
//! ([`crate::Endpoint::set_status`]): the arena puts its map, clients, uptime
//! and tick rate there.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::error::DecodeError;
use crate::handshake::{MAGIC, WIRE_VERSION};
use crate::packet::{
    BufferFull, Reader, Writer, MAX_DATAGRAM, TYPE_STATUS_REPLY, TYPE_STATUS_REQUEST,
};

/// Bytes of a status request before its padding: type, magic, wire version, nonce.
pub const STATUS_REQUEST_HEADER_LEN: usize = 1 + 4 + 2 + 4;
/// Shortest status request accepted: long enough for a "too large" reply.
pub const STATUS_REQUEST_MIN_LEN: usize = 32;
/// Bytes of a status reply before its payload: type, magic, nonce, kind, length.
pub const STATUS_REPLY_HEADER_LEN: usize = 1 + 4 + 4 + 1 + 2;
/// Largest status payload: one whole datagram less the reply header.
pub const MAX_STATUS_PAYLOAD: usize = MAX_DATAGRAM - STATUS_REPLY_HEADER_LEN;

// A "too large" reply always fits in the smallest request.
const _: () = assert!(STATUS_REPLY_HEADER_LEN <= STATUS_REQUEST_MIN_LEN);

const KIND_STATUS: u8 = 1;
const KIND_TOO_LARGE: u8 = 2;

/// A status request: a nonce the reply echoes, padded with zeros to `len` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusRequest {
    /// Chosen by the requester; the reply echoes it so stale or forged
    /// replies can be told apart.
    pub nonce: u32,
    /// Whole datagram length, padding included
    /// ([`STATUS_REQUEST_MIN_LEN`]..=[`MAX_DATAGRAM`]).
    pub len: usize,
}

/// A reader past the common start of a status packet of type `ty`: the
/// size limit, the type nibble, no flags, and the magic.
fn open_status_packet(datagram: &[u8], ty: u8) -> Result<Reader<'_>, DecodeError> {
    if datagram.len() > MAX_DATAGRAM {
        return Err(DecodeError::Oversized(datagram.len()));
    }
    let mut r = Reader::new(datagram);
    let first = r.u8("packet type")?;
    if first >> 4 != ty {
        return Err(DecodeError::UnknownPacketType(first >> 4));
    }
    // Status packets carry no flags: a set low nibble is damage, and
    // refusing it keeps the encoding canonical (what parses re-encodes
    // to the same bytes).
    if first & 0x0F != 0 {
        return Err(DecodeError::BadValue {
            what: "status packet flags",
            value: u32::from(first & 0x0F),
        });
    }
    if r.array::<4>("magic")? != MAGIC {
        return Err(DecodeError::BadMagic);
    }
    Ok(r)
}

impl StatusRequest {
    /// A request padded to `len`, clamped to the valid range.
    pub fn new(nonce: u32, len: usize) -> Self {
        Self {
            nonce,
            len: len.clamp(STATUS_REQUEST_MIN_LEN, MAX_DATAGRAM),
        }
    }

    /// Parses a status request, checking magic, wire version, length and
    /// that the padding is zeros.
    pub fn parse(datagram: &[u8]) -> Result<Self, DecodeError> {
        let len = datagram.len();
        let mut r = open_status_packet(datagram, TYPE_STATUS_REQUEST)?;
        if len < STATUS_REQUEST_MIN_LEN {
            return Err(DecodeError::BadLength {
                what: "status request",
                len,
                expected: STATUS_REQUEST_MIN_LEN,
            });
        }
        let wire = r.u16("status request")?;
        if wire != WIRE_VERSION {
            return Err(DecodeError::BadValue {
                what: "wire version",
                value: wire as u32,
            });
        }
        let nonce = r.u32("status request")?;
        // Zero padding only: the request carries nothing that could be
        // smuggled, and a bit flip is noticed.
        if let Some(&b) = datagram[STATUS_REQUEST_HEADER_LEN..]
            .iter()
            .find(|&&b| b != 0)
        {
            return Err(DecodeError::BadValue {
                what: "status request padding",
                value: b as u32,
            });
        }
        Ok(Self { nonce, len })
    }

    /// Encodes into `out`, returning the length (`self.len`).
    pub fn write(&self, out: &mut [u8]) -> Result<usize, BufferFull> {
        let len = self.len.clamp(STATUS_REQUEST_MIN_LEN, MAX_DATAGRAM);
        let mut w = Writer::new(out);
        w.u8(TYPE_STATUS_REQUEST << 4)?;
        w.put(&MAGIC)?;
        w.u16(WIRE_VERSION)?;
        w.u32(self.nonce)?;
        while w.len() < len {
            w.u8(0)?;
        }
        Ok(w.len())
    }
}

/// A status reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusReply<'a> {
    /// The application's status payload.
    Status {
        /// Echo of the request's nonce.
        nonce: u32,
        /// The payload set with [`crate::Endpoint::set_status`].
        payload: &'a [u8],
    },
    /// The payload would make the reply larger than the request: send
    /// again padded to `needed` bytes.
    TooLarge {
        /// Echo of the request's nonce.
        nonce: u32,
        /// The request length that would get the payload.
        needed: u16,
    },
}

impl<'a> StatusReply<'a> {
    /// The reply to `request` carrying `payload`, held to the request's size:
    /// the payload itself when it fits, else [`StatusReply::TooLarge`].
    pub fn answer(request: &StatusRequest, payload: &'a [u8]) -> Self {
        let needed = STATUS_REPLY_HEADER_LEN + payload.len();
        if needed <= request.len {
            StatusReply::Status {
                nonce: request.nonce,
                payload,
            }
        } else {
            StatusReply::TooLarge {
                nonce: request.nonce,
                needed: needed.max(STATUS_REQUEST_MIN_LEN).min(u16::MAX as usize) as u16,
            }
        }
    }

    /// Encoded size in bytes.
    pub fn encoded_len(&self) -> usize {
        match self {
            StatusReply::Status { payload, .. } => STATUS_REPLY_HEADER_LEN + payload.len(),
            StatusReply::TooLarge { .. } => STATUS_REPLY_HEADER_LEN,
        }
    }

    /// Parses a status reply, checking magic, kind and exact length.
    pub fn parse(datagram: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = open_status_packet(datagram, TYPE_STATUS_REPLY)?;
        let nonce = r.u32("status reply")?;
        let kind = r.u8("status reply")?;
        let len = r.u16("status reply")?;
        match kind {
            KIND_STATUS => {
                let expected = STATUS_REPLY_HEADER_LEN + len as usize;
                if datagram.len() != expected {
                    return Err(DecodeError::BadLength {
                        what: "status reply",
                        len: datagram.len(),
                        expected,
                    });
                }
                Ok(StatusReply::Status {
                    nonce,
                    payload: r.bytes(len as usize, "status payload")?,
                })
            }
            KIND_TOO_LARGE => {
                if datagram.len() != STATUS_REPLY_HEADER_LEN {
                    return Err(DecodeError::BadLength {
                        what: "status too-large reply",
                        len: datagram.len(),
                        expected: STATUS_REPLY_HEADER_LEN,
                    });
                }
                if (len as usize) < STATUS_REQUEST_MIN_LEN || len as usize > MAX_DATAGRAM {
                    return Err(DecodeError::BadValue {
                        what: "status needed length",
                        value: len as u32,
                    });
                }
                Ok(StatusReply::TooLarge { nonce, needed: len })
            }
            other => Err(DecodeError::BadValue {
                what: "status reply kind",
                value: other as u32,
            }),
        }
    }

    /// Encodes into `out`, returning the length.
    pub fn write(&self, out: &mut [u8]) -> Result<usize, BufferFull> {
        let mut w = Writer::new(out);
        w.u8(TYPE_STATUS_REPLY << 4)?;
        w.put(&MAGIC)?;
        match *self {
            StatusReply::Status { nonce, payload } => {
                w.u32(nonce)?;
                w.u8(KIND_STATUS)?;
                w.u16(u16::try_from(payload.len()).map_err(|_| BufferFull)?)?;
                w.put(payload)?;
            }
            StatusReply::TooLarge { nonce, needed } => {
                w.u32(nonce)?;
                w.u8(KIND_TOO_LARGE)?;
                w.u16(needed)?;
            }
        }
        Ok(w.len())
    }
}

/// Limits on status replies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusLimits {
    /// Replies per second to one source address, in the long run.
    pub per_source_rate: u32,
    /// Replies one source address may get at once.
    pub per_source_burst: u32,
    /// Replies per second to all sources together.
    pub total_rate: u32,
    /// Replies at once to all sources together.
    pub total_burst: u32,
    /// Most source addresses tracked; beyond it, new sources are refused
    /// until a slot frees.
    pub max_sources: usize,
}

impl Default for StatusLimits {
    /// A browser refreshes a server list a few times a minute; monitoring
    /// polls every few seconds. These leave room for both.
    fn default() -> Self {
        Self {
            per_source_rate: 2,
            per_source_burst: 4,
            total_rate: 200,
            total_burst: 400,
            max_sources: 1024,
        }
    }
}

/// Why a status request got no reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Limited {
    /// That source address used up its budget.
    #[error("per-source status rate exceeded")]
    Source,
    /// All sources together used up the total budget.
    #[error("total status rate exceeded")]
    Total,
    /// Every slot of the source table is held by an active source.
    #[error("status source table full")]
    TableFull,
}

/// One token bucket as the generic cell rate algorithm: the theoretical
/// arrival time of the next conforming request. Exact in integer time and
/// one `Instant` per bucket; a bucket whose time has passed is full.
#[derive(Debug, Clone, Copy)]
struct Gcra {
    /// Time between replies in the long run.
    interval: Duration,
    /// How far ahead of `now` the theoretical time may run: `burst - 1` intervals.
    tolerance: Duration,
}

impl Gcra {
    fn new(rate: u32, burst: u32) -> Self {
        let interval = Duration::from_secs(1) / rate.max(1);
        Self {
            interval,
            tolerance: interval * burst.max(1).saturating_sub(1),
        }
    }

    /// The new theoretical arrival time if a request at `now` conforms.
    fn check(&self, tat: Instant, now: Instant) -> Option<Instant> {
        let tat = tat.max(now);
        (tat.saturating_duration_since(now) <= self.tolerance).then_some(tat + self.interval)
    }
}

/// Per-source and total token buckets for status replies, in bounded memory.
#[derive(Debug, Clone)]
pub struct StatusLimiter {
    max_sources: usize,
    source: Gcra,
    total: Gcra,
    total_tat: Instant,
    sources: HashMap<IpAddr, Instant>,
    /// No sweep of full buckets before this: a flood of new sources costs
    /// one table walk per interval, not one per datagram.
    next_sweep: Instant,
}

impl StatusLimiter {
    /// Empty buckets (all full) at `now`.
    pub fn new(limits: &StatusLimits, now: Instant) -> Self {
        let max_sources = limits.max_sources.max(1);
        Self {
            max_sources,
            source: Gcra::new(limits.per_source_rate, limits.per_source_burst),
            total: Gcra::new(limits.total_rate, limits.total_burst),
            total_tat: now,
            sources: HashMap::with_capacity(max_sources),
            next_sweep: now,
        }
    }

    /// Sources currently tracked.
    pub fn tracked(&self) -> usize {
        self.sources.len()
    }

    /// Takes one reply from `ip`'s bucket and the total bucket, or says
    /// which one is empty (and takes nothing).
    pub fn allow(&mut self, now: Instant, ip: IpAddr) -> Result<(), Limited> {
        let known = self.sources.get(&ip).copied();
        if known.is_none() && self.sources.len() >= self.max_sources {
            if now >= self.next_sweep {
                // A bucket whose theoretical time has passed is full: the
                // same as not tracking the source at all.
                self.sources.retain(|_, tat| *tat > now);
                self.next_sweep = now + self.source.interval;
            }
            if self.sources.len() >= self.max_sources {
                return Err(Limited::TableFull);
            }
        }
        let source_tat = self
            .source
            .check(known.unwrap_or(now), now)
            .ok_or(Limited::Source)?;
        let total_tat = self
            .total
            .check(self.total_tat, now)
            .ok_or(Limited::Total)?;
        self.total_tat = total_tat;
        self.sources.insert(ip, source_tat);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ip(n: u32) -> IpAddr {
        IpAddr::from(n.to_be_bytes())
    }

    #[test]
    fn request_round_trip_and_padding() {
        let mut buf = [0u8; MAX_DATAGRAM];
        let req = StatusRequest::new(0xdead_beef, 300);
        let n = req.write(&mut buf).unwrap();
        assert_eq!(n, 300);
        assert_eq!(StatusRequest::parse(&buf[..n]), Ok(req));
        buf[200] = 1;
        assert!(matches!(
            StatusRequest::parse(&buf[..n]),
            Err(DecodeError::BadValue {
                what: "status request padding",
                value: 1
            })
        ));
        // Shorter than a too-large reply: refused, so no reply outgrows its request.
        assert!(matches!(
            StatusRequest::parse(&buf[..STATUS_REQUEST_MIN_LEN - 1]),
            Err(DecodeError::BadLength { .. })
        ));
        assert_eq!(StatusRequest::new(1, 5).len, STATUS_REQUEST_MIN_LEN);
        assert_eq!(StatusRequest::new(1, 99_999).len, MAX_DATAGRAM);
    }

    #[test]
    fn answer_never_outgrows_its_request() {
        let payload = [7u8; 100];
        for len in STATUS_REQUEST_MIN_LEN..=MAX_DATAGRAM {
            let req = StatusRequest::new(9, len);
            let reply = StatusReply::answer(&req, &payload);
            let mut out = [0u8; MAX_DATAGRAM];
            let n = reply.write(&mut out).unwrap();
            assert_eq!(n, reply.encoded_len());
            assert!(n <= len, "reply {n} > request {len}");
            match reply {
                StatusReply::Status { payload: p, .. } => {
                    assert!(len >= STATUS_REPLY_HEADER_LEN + 100);
                    assert_eq!(p, &payload);
                }
                StatusReply::TooLarge { needed, .. } => {
                    assert!(len < STATUS_REPLY_HEADER_LEN + 100);
                    assert_eq!(needed as usize, STATUS_REPLY_HEADER_LEN + 100);
                }
            }
            assert_eq!(StatusReply::parse(&out[..n]), Ok(reply));
        }
    }

    #[test]
    fn one_source_flood_gets_burst_then_rate() {
        let limits = StatusLimits {
            per_source_rate: 2,
            per_source_burst: 4,
            total_rate: 1000,
            total_burst: 1000,
            max_sources: 8,
        };
        let t0 = Instant::now();
        let mut limiter = StatusLimiter::new(&limits, t0);
        // 1000 requests at once: exactly the burst.
        let allowed = (0..1000)
            .filter(|_| limiter.allow(t0, ip(1)).is_ok())
            .count();
        assert_eq!(allowed, 4);
        assert_eq!(limiter.allow(t0, ip(1)), Err(Limited::Source));
        // Another source is unaffected.
        assert_eq!(limiter.allow(t0, ip(2)), Ok(()));
        // 100 requests per second for 10 s: 2 per second refill.
        let mut allowed = 0;
        for i in 1..=1000u64 {
            let now = t0 + Duration::from_millis(10 * i);
            allowed += limiter.allow(now, ip(1)).is_ok() as usize;
        }
        assert_eq!(allowed, 20);
    }

    #[test]
    fn total_limit_caps_many_sources() {
        let limits = StatusLimits {
            per_source_rate: 10,
            per_source_burst: 10,
            total_rate: 5,
            total_burst: 5,
            max_sources: 100,
        };
        let t0 = Instant::now();
        let mut limiter = StatusLimiter::new(&limits, t0);
        let results: Vec<_> = (0..50).map(|n| limiter.allow(t0, ip(n))).collect();
        assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 5);
        assert_eq!(results[5], Err(Limited::Total));
    }

    #[test]
    fn source_table_stays_bounded_and_frees_full_buckets() {
        let limits = StatusLimits {
            per_source_rate: 1,
            per_source_burst: 2,
            total_rate: 1_000_000,
            total_burst: 1_000_000,
            max_sources: 16,
        };
        let t0 = Instant::now();
        let mut limiter = StatusLimiter::new(&limits, t0);
        let mut allowed = 0;
        for n in 0..10_000 {
            allowed += limiter.allow(t0, ip(n)).is_ok() as usize;
            assert!(limiter.tracked() <= 16);
        }
        assert_eq!(allowed, 16);
        assert_eq!(limiter.allow(t0, ip(20_000)), Err(Limited::TableFull));
        // One interval later every bucket is full again (burst 2, one taken):
        // the table sweeps and new sources get in.
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(limiter.allow(t1, ip(20_000)), Ok(()));
        assert_eq!(limiter.tracked(), 1);
    }

    proptest! {
        #[test]
        fn request_parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..1500)) {
            if let Ok(req) = StatusRequest::parse(&bytes) {
                let mut out = [0u8; MAX_DATAGRAM];
                let n = req.write(&mut out).unwrap();
                prop_assert_eq!(&out[..n], &bytes[..]);
            }
        }

        #[test]
        fn reply_round_trips(nonce: u32, payload in proptest::collection::vec(any::<u8>(), 0..MAX_STATUS_PAYLOAD), len in STATUS_REQUEST_MIN_LEN..=MAX_DATAGRAM) {
            let req = StatusRequest::new(nonce, len);
            let reply = StatusReply::answer(&req, &payload);
            let mut out = [0u8; MAX_DATAGRAM];
            let n = reply.write(&mut out).unwrap();
            prop_assert!(n <= len);
            prop_assert_eq!(StatusReply::parse(&out[..n]).unwrap(), reply);
        }

        #[test]
        fn mutated_replies_never_panic(payload in proptest::collection::vec(any::<u8>(), 0..64), flip in 0usize..80, bit in 0u8..8, cut in 0usize..80) {
            let req = StatusRequest::new(1, MAX_DATAGRAM);
            let mut out = [0u8; MAX_DATAGRAM];
            let n = StatusReply::answer(&req, &payload).write(&mut out).unwrap();
            let mut bytes = out[..n].to_vec();
            if flip < n { bytes[flip] ^= 1 << bit; }
            bytes.truncate(cut.max(1));
            if let Ok(reply) = StatusReply::parse(&bytes) {
                prop_assert_eq!(reply.encoded_len(), bytes.len());
            }
        }
    }
}
