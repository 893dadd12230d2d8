//! Connectionless handshake packets and the stateless cookie.
//!
//! ```text
//! client                                   server
//!   challenge request (padded) ───────────▶  no state kept
//!   ◀─────────── challenge response(cookie)  cookie = ts | MAC(secret; addr, client id, ts)
//!   connect(cookie, version, schema, ...) ─▶ cookie checked: address proven,
//!   ◀──────────────── accept / reject        only now is a connection created
//! ```
//!
//! The cookie is a keyed hash (SipHash-2-4, 128-bit) of the client's address,
//! its client id and a timestamp, under a server secret: the server can
//! verify it without remembering it, a spoofed source address never sees
//! it, and it expires. The challenge request is padded so that no response is
//! larger than the request that caused it (no amplification).

use std::hash::Hasher;
use std::net::{IpAddr, SocketAddr};

use siphasher::sip128::{Hasher128, SipHasher24};

use crate::error::DecodeError;
use crate::packet::{
    Reader, Writer, TYPE_ACCEPT, TYPE_CHALLENGE_REQUEST, TYPE_CHALLENGE_RESPONSE, TYPE_CONNECT,
    TYPE_REJECT,
};
use crate::rate::RateAnnounce;

/// Magic bytes after the type byte of every connectionless packet.
pub const MAGIC: [u8; 4] = *b"nQ3c";

/// Version of this wire protocol (not of the application: that is
/// [`crate::EndpointConfig::protocol_version`]).
pub const WIRE_VERSION: u16 = 1;

/// Size of a challenge request, padding included.
pub const CHALLENGE_REQUEST_LEN: usize = 48;
/// Size of a challenge response.
pub const CHALLENGE_RESPONSE_LEN: usize = 1 + 4 + 4 + COOKIE_LEN;
/// Size of a connect request.
pub const CONNECT_LEN: usize = 1 + 4 + 4 + COOKIE_LEN + 4 + 8 + 1 + 6;
/// Size of an accept.
pub const ACCEPT_LEN: usize = 1 + 4 + 4 + 1 + 12 + 6;
/// Size of a reject.
pub const REJECT_LEN: usize = 1 + 4 + 4 + 1;
/// Size of a cookie: timestamp and MAC.
pub const COOKIE_LEN: usize = 8 + 16;

// No response is larger than the request that caused it: checked at compile time.
const _: () = assert!(CHALLENGE_RESPONSE_LEN <= CHALLENGE_REQUEST_LEN);
const _: () = assert!(ACCEPT_LEN <= CONNECT_LEN);
const _: () = assert!(REJECT_LEN <= CONNECT_LEN);

/// Connect/accept flag: the body of data datagrams may be compressed.
pub const OPT_COMPRESS: u8 = 0x1;
/// Connect/accept flag: data datagrams are encrypted with the pre-shared key.
pub const OPT_ENCRYPT: u8 = 0x2;

/// The server's proof-of-address token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cookie {
    /// Server time (milliseconds since the endpoint started) when it was made.
    pub timestamp_ms: u64,
    /// Keyed hash binding the timestamp to the client's address and id.
    pub mac: [u8; 16],
}

/// The server secret that keys cookies.
#[derive(Clone, PartialEq, Eq)]
pub struct CookieKey(pub [u8; 16]);

impl std::fmt::Debug for CookieKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CookieKey(..)")
    }
}

impl CookieKey {
    fn mac(&self, addr: SocketAddr, client_id: u32, timestamp_ms: u64) -> [u8; 16] {
        let mut h = SipHasher24::new_with_key(&self.0);
        match addr.ip() {
            IpAddr::V4(ip) => {
                h.write_u8(4);
                h.write(&ip.octets());
            }
            IpAddr::V6(ip) => {
                h.write_u8(6);
                h.write(&ip.octets());
            }
        }
        h.write_u16(addr.port());
        h.write_u32(client_id);
        h.write_u64(timestamp_ms);
        h.finish128().as_bytes()
    }

    /// Makes a cookie for `addr` and `client_id` at server time `now_ms`.
    pub fn issue(&self, addr: SocketAddr, client_id: u32, now_ms: u64) -> Cookie {
        Cookie {
            timestamp_ms: now_ms,
            mac: self.mac(addr, client_id, now_ms),
        }
    }

    /// Checks a cookie: issued by this key for this address and id, not from
    /// the future and not older than `lifetime_ms`.
    pub fn verify(
        &self,
        cookie: &Cookie,
        addr: SocketAddr,
        client_id: u32,
        now_ms: u64,
        lifetime_ms: u64,
    ) -> Result<(), CookieError> {
        let expected = self.mac(addr, client_id, cookie.timestamp_ms);
        // Constant-time comparison: a timing leak would let an attacker forge byte by byte.
        let diff = expected
            .iter()
            .zip(cookie.mac.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if diff != 0 {
            return Err(CookieError::Forged);
        }
        if cookie.timestamp_ms > now_ms {
            return Err(CookieError::FromTheFuture);
        }
        if now_ms - cookie.timestamp_ms > lifetime_ms {
            return Err(CookieError::Expired);
        }
        Ok(())
    }
}

/// Why a cookie was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CookieError {
    /// The MAC does not match: not issued by us, or for another address or id.
    #[error("forged cookie")]
    Forged,
    /// Older than the cookie lifetime.
    #[error("expired cookie")]
    Expired,
    /// Timestamped after the server's clock.
    #[error("cookie from the future")]
    FromTheFuture,
    /// Already used to create a connection.
    #[error("replayed cookie")]
    Replayed,
}

/// Why a server refused a connect request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RejectReason {
    /// The application protocol versions differ.
    VersionMismatch,
    /// The schema fingerprints differ: client and server would disagree on field layouts.
    SchemaMismatch,
    /// The server has no room for another connection.
    ServerFull,
    /// The server only accepts encrypted connections.
    EncryptionRequired,
    /// The client asked for encryption the server cannot provide (no pre-shared key).
    EncryptionUnavailable,
    /// The server is shutting down and accepts no new connection.
    ShuttingDown,
    /// The server is restarting: it accepts no new connection now, but will
    /// again soon (a client backs off and retries).
    Restarting,
    /// The server holds no connection for this client's data: it restarted,
    /// or closed the connection while the client did not hear of it. Sent in
    /// answer to data, not to a handshake; it ends the client's connection.
    UnknownConnection,
}

impl RejectReason {
    fn code(self) -> u8 {
        match self {
            RejectReason::VersionMismatch => 1,
            RejectReason::SchemaMismatch => 2,
            RejectReason::ServerFull => 3,
            RejectReason::EncryptionRequired => 4,
            RejectReason::EncryptionUnavailable => 5,
            RejectReason::ShuttingDown => 6,
            RejectReason::Restarting => 7,
            RejectReason::UnknownConnection => 8,
        }
    }

    fn from_code(code: u8) -> Result<Self, DecodeError> {
        Ok(match code {
            1 => RejectReason::VersionMismatch,
            2 => RejectReason::SchemaMismatch,
            3 => RejectReason::ServerFull,
            4 => RejectReason::EncryptionRequired,
            5 => RejectReason::EncryptionUnavailable,
            6 => RejectReason::ShuttingDown,
            7 => RejectReason::Restarting,
            8 => RejectReason::UnknownConnection,
            other => {
                return Err(DecodeError::BadValue {
                    what: "reject reason",
                    value: other as u32,
                })
            }
        })
    }
}

/// A connect request's contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectRequest {
    /// The client's id (survives NAT port changes).
    pub client_id: u32,
    /// The cookie from the challenge response.
    pub cookie: Cookie,
    /// Application protocol version.
    pub version: u32,
    /// Schema fingerprint.
    pub schema: u64,
    /// [`OPT_COMPRESS`] and [`OPT_ENCRYPT`].
    pub options: u8,
    /// What the client can receive.
    pub rate: RateAnnounce,
}

/// A connectionless packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// Client asks for a cookie.
    ChallengeRequest {
        /// The client's id.
        client_id: u32,
    },
    /// Server hands out a cookie.
    ChallengeResponse {
        /// Echo of the client's id.
        client_id: u32,
        /// The cookie.
        cookie: Cookie,
    },
    /// Client asks to connect.
    Connect(ConnectRequest),
    /// Server accepts.
    Accept {
        /// Echo of the client's id.
        client_id: u32,
        /// Options granted.
        options: u8,
        /// Unique per connection; keys the session cipher.
        session_nonce: [u8; 12],
        /// What the server can receive.
        rate: RateAnnounce,
    },
    /// Server refuses.
    Reject {
        /// Echo of the client's id.
        client_id: u32,
        /// Why.
        reason: RejectReason,
    },
}

fn check_len(what: &'static str, len: usize, expected: usize) -> Result<(), DecodeError> {
    if len != expected {
        return Err(DecodeError::BadLength {
            what,
            len,
            expected,
        });
    }
    Ok(())
}

fn read_cookie(r: &mut Reader<'_>) -> Result<Cookie, DecodeError> {
    Ok(Cookie {
        timestamp_ms: r.u64("cookie")?,
        mac: r.array("cookie")?,
    })
}

fn read_rate(r: &mut Reader<'_>) -> Result<RateAnnounce, DecodeError> {
    Ok(RateAnnounce {
        bytes_per_sec: r.u32("rate")?,
        packets_per_sec: r.u16("rate")?,
    })
}

impl Handshake {
    /// Parses a connectionless packet, checking magic, type and exact length.
    pub fn parse(datagram: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(datagram);
        let ty = r.u8("packet type")? >> 4;
        if r.array::<4>("magic")? != MAGIC {
            return Err(DecodeError::BadMagic);
        }
        let len = datagram.len();
        Ok(match ty {
            TYPE_CHALLENGE_REQUEST => {
                check_len("challenge request", len, CHALLENGE_REQUEST_LEN)?;
                let client_id = r.u32("challenge request")?;
                let wire = r.u16("challenge request")?;
                if wire != WIRE_VERSION {
                    return Err(DecodeError::BadValue {
                        what: "wire version",
                        value: wire as u32,
                    });
                }
                Handshake::ChallengeRequest { client_id }
            }
            TYPE_CHALLENGE_RESPONSE => {
                check_len("challenge response", len, CHALLENGE_RESPONSE_LEN)?;
                Handshake::ChallengeResponse {
                    client_id: r.u32("challenge response")?,
                    cookie: read_cookie(&mut r)?,
                }
            }
            TYPE_CONNECT => {
                check_len("connect", len, CONNECT_LEN)?;
                Handshake::Connect(ConnectRequest {
                    client_id: r.u32("connect")?,
                    cookie: read_cookie(&mut r)?,
                    version: r.u32("connect")?,
                    schema: r.u64("connect")?,
                    options: r.u8("connect")?,
                    rate: read_rate(&mut r)?,
                })
            }
            TYPE_ACCEPT => {
                check_len("accept", len, ACCEPT_LEN)?;
                Handshake::Accept {
                    client_id: r.u32("accept")?,
                    options: r.u8("accept")?,
                    session_nonce: r.array("accept")?,
                    rate: read_rate(&mut r)?,
                }
            }
            TYPE_REJECT => {
                check_len("reject", len, REJECT_LEN)?;
                Handshake::Reject {
                    client_id: r.u32("reject")?,
                    reason: RejectReason::from_code(r.u8("reject")?)?,
                }
            }
            other => return Err(DecodeError::UnknownPacketType(other)),
        })
    }

    /// Encodes into `out`, returning the length. `out` must hold 64 bytes.
    pub fn write(&self, out: &mut [u8]) -> Result<usize, crate::packet::BufferFull> {
        let mut w = Writer::new(out);
        let ty = match self {
            Handshake::ChallengeRequest { .. } => TYPE_CHALLENGE_REQUEST,
            Handshake::ChallengeResponse { .. } => TYPE_CHALLENGE_RESPONSE,
            Handshake::Connect(_) => TYPE_CONNECT,
            Handshake::Accept { .. } => TYPE_ACCEPT,
            Handshake::Reject { .. } => TYPE_REJECT,
        };
        w.u8(ty << 4)?;
        w.put(&MAGIC)?;
        match *self {
            Handshake::ChallengeRequest { client_id } => {
                w.u32(client_id)?;
                w.u16(WIRE_VERSION)?;
                while w.len() < CHALLENGE_REQUEST_LEN {
                    w.u8(0)?;
                }
            }
            Handshake::ChallengeResponse { client_id, cookie } => {
                w.u32(client_id)?;
                w.u64(cookie.timestamp_ms)?;
                w.put(&cookie.mac)?;
            }
            Handshake::Connect(c) => {
                w.u32(c.client_id)?;
                w.u64(c.cookie.timestamp_ms)?;
                w.put(&c.cookie.mac)?;
                w.u32(c.version)?;
                w.u64(c.schema)?;
                w.u8(c.options)?;
                w.u32(c.rate.bytes_per_sec)?;
                w.u16(c.rate.packets_per_sec)?;
            }
            Handshake::Accept {
                client_id,
                options,
                session_nonce,
                rate,
            } => {
                w.u32(client_id)?;
                w.u8(options)?;
                w.put(&session_nonce)?;
                w.u32(rate.bytes_per_sec)?;
                w.u16(rate.packets_per_sec)?;
            }
            Handshake::Reject { client_id, reason } => {
                w.u32(client_id)?;
                w.u8(reason.code())?;
            }
        }
        Ok(w.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn cookie_checks() {
        let key = CookieKey([3; 16]);
        let c = key.issue(addr(1000), 7, 5_000);
        assert_eq!(key.verify(&c, addr(1000), 7, 6_000, 10_000), Ok(()));
        assert_eq!(
            key.verify(&c, addr(1001), 7, 6_000, 10_000),
            Err(CookieError::Forged)
        );
        assert_eq!(
            key.verify(&c, addr(1000), 8, 6_000, 10_000),
            Err(CookieError::Forged)
        );
        assert_eq!(
            key.verify(&c, addr(1000), 7, 16_000, 10_000),
            Err(CookieError::Expired)
        );
        assert_eq!(
            key.verify(&c, addr(1000), 7, 4_000, 10_000),
            Err(CookieError::FromTheFuture)
        );
        let other = CookieKey([4; 16]);
        assert_eq!(
            other.verify(&c, addr(1000), 7, 6_000, 10_000),
            Err(CookieError::Forged)
        );
    }

    fn arb_packet() -> impl Strategy<Value = Handshake> {
        let rate = (any::<u32>(), any::<u16>()).prop_map(|(b, p)| RateAnnounce {
            bytes_per_sec: b,
            packets_per_sec: p,
        });
        let cookie = (any::<u64>(), any::<[u8; 16]>()).prop_map(|(t, m)| Cookie {
            timestamp_ms: t,
            mac: m,
        });
        prop_oneof![
            any::<u32>().prop_map(|client_id| Handshake::ChallengeRequest { client_id }),
            (any::<u32>(), cookie.clone())
                .prop_map(|(client_id, cookie)| Handshake::ChallengeResponse { client_id, cookie }),
            (
                any::<u32>(),
                cookie,
                any::<u32>(),
                any::<u64>(),
                any::<u8>(),
                rate.clone()
            )
                .prop_map(|(client_id, cookie, version, schema, options, rate)| {
                    Handshake::Connect(ConnectRequest {
                        client_id,
                        cookie,
                        version,
                        schema,
                        options,
                        rate,
                    })
                }),
            (any::<u32>(), any::<u8>(), any::<[u8; 12]>(), rate).prop_map(
                |(client_id, options, session_nonce, rate)| Handshake::Accept {
                    client_id,
                    options,
                    session_nonce,
                    rate
                }
            ),
            (any::<u32>(), 0usize..8).prop_map(|(client_id, r)| Handshake::Reject {
                client_id,
                reason: [
                    RejectReason::VersionMismatch,
                    RejectReason::SchemaMismatch,
                    RejectReason::ServerFull,
                    RejectReason::EncryptionRequired,
                    RejectReason::EncryptionUnavailable,
                    RejectReason::ShuttingDown,
                    RejectReason::Restarting,
                    RejectReason::UnknownConnection,
                ][r]
            }),
        ]
    }

    proptest! {
        #[test]
        fn packets_round_trip(p in arb_packet()) {
            let mut buf = [0u8; 64];
            let n = p.write(&mut buf).unwrap();
            prop_assert_eq!(Handshake::parse(&buf[..n]), Ok(p));
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = Handshake::parse(&bytes);
        }

        #[test]
        fn forged_cookies_fail(mac: [u8; 16], ts in 0u64..20_000) {
            let key = CookieKey([9; 16]);
            let real = key.issue(addr(5), 1, ts);
            prop_assume!(real.mac != mac);
            let forged = Cookie { timestamp_ms: ts, mac };
            prop_assert_eq!(key.verify(&forged, addr(5), 1, 20_000, 100_000), Err(CookieError::Forged));
        }
    }
}
