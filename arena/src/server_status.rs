//! What `arena status ADDR` shows, and how it asks: the server puts a
//! [`ServerStatus`] (postcard) into its endpoint with
//! `Endpoint::set_status`; [`query`] sends netchan's padded status request
//! from a plain UDP socket, pads more when told the reply would not fit, and
//! decodes the answer. No connection, no handshake, no amplification (see
//! `netchan::status`).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use netchan::status::{StatusReply, StatusRequest, MAX_STATUS_PAYLOAD};
use netchan::MAX_DATAGRAM;
use serde::{Deserialize, Serialize};

/// A dedicated server's public status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStatus {
    /// Map name.
    pub map: String,
    /// Clients connected.
    pub clients: u32,
    /// Most clients accepted.
    pub max_clients: u32,
    /// Milliseconds since the server started.
    pub uptime_ms: u64,
    /// Server ticks per second.
    pub tick_hz: u32,
    /// Delta codec name.
    pub codec: String,
    /// Application protocol version.
    pub protocol: u32,
    /// Schema fingerprint a client must match.
    pub schema: u64,
}

impl ServerStatus {
    /// The payload bytes (postcard).
    pub fn encode(&self) -> Vec<u8> {
        // Serializing plain fields into a Vec cannot fail.
        postcard::to_allocvec(self).unwrap_or_default()
    }

    /// Decodes a payload; its size is bounded by the datagram it came in.
    pub fn decode(payload: &[u8]) -> Result<ServerStatus, QueryError> {
        if payload.len() > MAX_STATUS_PAYLOAD {
            return Err(QueryError::Payload(format!(
                "{} bytes, over {MAX_STATUS_PAYLOAD}",
                payload.len()
            )));
        }
        postcard::from_bytes(payload).map_err(|e| QueryError::Payload(e.to_string()))
    }

    /// One readable line.
    pub fn line(&self) -> String {
        format!(
            "map {} | clients {}/{} | uptime {:.1} s | {} Hz ticks | {} codec",
            self.map,
            self.clients,
            self.max_clients,
            self.uptime_ms as f64 / 1000.0,
            self.tick_hz,
            self.codec
        )
    }
}

/// Why a status query failed.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The socket failed.
    #[error("i/o: {0}")]
    Io(#[from] io::Error),
    /// No answer within the time allowed (server down, or rate-limited).
    #[error("no status reply from {0} after {1} attempts")]
    NoReply(SocketAddr, u32),
    /// The payload did not decode.
    #[error("status payload: {0}")]
    Payload(String),
}

/// Asks `server` for its status: up to `attempts` requests, `wait` apart.
pub fn query(
    server: SocketAddr,
    wait: Duration,
    attempts: u32,
) -> Result<ServerStatus, QueryError> {
    let bind: SocketAddr = if server.is_ipv4() {
        ([127, 0, 0, 1], 0).into()
    } else {
        (std::net::Ipv6Addr::LOCALHOST, 0).into()
    };
    let socket = UdpSocket::bind(bind)?;
    socket.connect(server)?;
    let nonce = u32::from_le_bytes(netchan::random_secret()[..4].try_into().unwrap_or([1; 4]));
    // Room for a typical status; a "too large" answer says how much more.
    let mut len = 160;
    let mut buf = [0u8; MAX_DATAGRAM];
    let mut sent = 0;
    let mut resized = 0;
    while sent < attempts {
        let n = StatusRequest::new(nonce, len)
            .write(&mut buf)
            .map_err(|_| QueryError::Payload("request does not fit".into()))?;
        socket.send(&buf[..n])?;
        sent += 1;
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            socket.set_read_timeout(Some(left))?;
            let got = match socket.recv(&mut buf) {
                Ok(got) => got,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    break
                }
                // ICMP port unreachable surfaces as a refused recv: no server.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => break,
                Err(e) => return Err(e.into()),
            };
            match StatusReply::parse(&buf[..got]) {
                Ok(StatusReply::Status { nonce: n, payload }) if n == nonce => {
                    return ServerStatus::decode(payload);
                }
                Ok(StatusReply::TooLarge { nonce: n, needed }) if n == nonce && resized < 2 => {
                    // Not a lost attempt: ask again at once, padded as told.
                    len = needed as usize;
                    resized += 1;
                    sent -= 1;
                    break;
                }
                // Stale, foreign or malformed: keep waiting.
                _ => {}
            }
        }
    }
    Err(QueryError::NoReply(server, attempts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_round_trips_and_fits_a_small_request() {
        let status = ServerStatus {
            map: "arena".into(),
            clients: 12,
            max_clients: 64,
            uptime_ms: 3_600_000,
            tick_hz: 20,
            codec: "native".into(),
            protocol: 3,
            schema: u64::MAX,
        };
        let bytes = status.encode();
        assert_eq!(ServerStatus::decode(&bytes).unwrap(), status);
        // The first request (160 bytes) gets the payload without a resize.
        assert!(bytes.len() + netchan::status::STATUS_REPLY_HEADER_LEN <= 160);
        assert!(ServerStatus::decode(&bytes[..bytes.len() - 3]).is_err());
        assert!(ServerStatus::decode(&[0xff; 2000]).is_err());
    }

    #[test]
    fn query_reaches_a_server_endpoint_over_udp() {
        use netchan::{Endpoint, EndpointConfig, UdpDriver};
        let now = Instant::now();
        let mut server = UdpDriver::bind_udp(
            "127.0.0.1:0".parse().unwrap(),
            Endpoint::new(EndpointConfig::server(), now),
        )
        .unwrap();
        // A long map name forces the "too large, pad more" round.
        let status = ServerStatus {
            map: "m".repeat(300),
            clients: 2,
            max_clients: 8,
            uptime_ms: 1234,
            tick_hz: 20,
            codec: "native".into(),
            protocol: 1,
            schema: 42,
        };
        server.endpoint_mut().set_status(&status.encode()).unwrap();
        let addr = server.local_addr();
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&done);
        let thread = std::thread::spawn(move || {
            // Bounded: at most 10 s of pumping.
            let end = Instant::now() + Duration::from_secs(10);
            while !flag.load(std::sync::atomic::Ordering::SeqCst) && Instant::now() < end {
                let now = Instant::now();
                server.pump(now);
                let _ = server.wait(now, Duration::from_millis(5));
            }
            server.endpoint().metrics().clone()
        });
        let got = query(addr, Duration::from_secs(2), 3).unwrap();
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        let metrics = thread.join().unwrap();
        assert_eq!(got, status);
        assert_eq!(metrics.status_too_large, 1);
        assert_eq!(metrics.status_answered, 1);
    }
}
