//! A tiny HTTP/1.x responder for `GET /metrics`, on its own thread.
//!
//! It serves one scraper at a time, which is all Prometheus needs: each
//! connection gets one response and is closed. Requests are bounded (the
//! head must fit in [`MAX_REQUEST`] bytes and arrive within [`READ_TIMEOUT`]),
//! so a slow or hostile client holds the thread for at most that long and
//! costs no memory beyond one buffer.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use prometheus_client::registry::Registry;

use crate::metrics::encode;

/// Largest request head accepted.
pub const MAX_REQUEST: usize = 4096;
/// Longest a client may take to send its request.
pub const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// Content type of the OpenMetrics text that `prometheus-client` writes.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The responder thread; dropping it stops the thread.
#[derive(Debug)]
pub struct MetricsServer {
    local: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` (port 0 picks one) and serves `registry` until dropped.
    pub fn spawn(addr: SocketAddr, registry: Arc<Registry>) -> io::Result<MetricsServer> {
        let listener = TcpListener::bind(addr)?;
        let local = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("arena-metrics".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if flag.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    if let Err(e) = serve(stream, &registry) {
                        tracing::debug!("metrics request failed: {e}");
                    }
                }
            })?;
        Ok(MetricsServer {
            local,
            stop,
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept with a connection of our own.
        let wake = match self.local {
            SocketAddr::V4(a) if a.ip().is_unspecified() => {
                SocketAddr::from(([127, 0, 0, 1], a.port()))
            }
            SocketAddr::V6(a) if a.ip().is_unspecified() => {
                SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, a.port()))
            }
            other => other,
        };
        if TcpStream::connect_timeout(&wake, Duration::from_secs(1)).is_ok() {
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }
}

/// What a request head asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// `GET /metrics` (query string ignored).
    Metrics,
    /// `GET` of any other path.
    NotFound,
    /// Another method.
    MethodNotAllowed,
    /// Not HTTP/1.x.
    BadRequest,
}

/// Reads the request line of a head.
pub fn parse_request(head: &[u8]) -> Request {
    let Some(line) = head.split(|&b| b == b'\n').next() else {
        return Request::BadRequest;
    };
    let line = String::from_utf8_lossy(line);
    let mut parts = line.trim_end_matches('\r').split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Request::BadRequest;
    };
    if parts.next().is_some() || !version.starts_with("HTTP/1.") {
        return Request::BadRequest;
    }
    if method != "GET" {
        return Request::MethodNotAllowed;
    }
    let path = target.split('?').next().unwrap_or_default();
    if path == "/metrics" {
        Request::Metrics
    } else {
        Request::NotFound
    }
}

/// Reads a request head (up to the blank line) into `buf`, bounded.
fn read_head(stream: &mut TcpStream, buf: &mut [u8; MAX_REQUEST]) -> io::Result<Option<usize>> {
    let mut len = 0;
    loop {
        if len == buf.len() {
            return Ok(None);
        }
        let n = stream.read(&mut buf[len..])?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        len += n;
        if buf[..len].windows(4).any(|w| w == b"\r\n\r\n") {
            return Ok(Some(len));
        }
    }
}

fn serve(mut stream: TcpStream, registry: &Registry) -> io::Result<()> {
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    stream.set_write_timeout(Some(READ_TIMEOUT))?;
    let mut buf = [0u8; MAX_REQUEST];
    let (status, content_type, body) = match read_head(&mut stream, &mut buf)? {
        None => (
            "413 Payload Too Large",
            "text/plain",
            "request too large\n".into(),
        ),
        Some(len) => match parse_request(&buf[..len]) {
            Request::Metrics => ("200 OK", CONTENT_TYPE, encode(registry)),
            Request::NotFound => ("404 Not Found", "text/plain", "try /metrics\n".into()),
            Request::MethodNotAllowed => {
                ("405 Method Not Allowed", "text/plain", "GET only\n".into())
            }
            Request::BadRequest => ("400 Bad Request", "text/plain", "bad request\n".into()),
        },
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines() {
        assert_eq!(
            parse_request(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Request::Metrics
        );
        assert_eq!(
            parse_request(b"GET /metrics?x=1 HTTP/1.0\r\n\r\n"),
            Request::Metrics
        );
        assert_eq!(parse_request(b"GET / HTTP/1.1\r\n\r\n"), Request::NotFound);
        assert_eq!(
            parse_request(b"POST /metrics HTTP/1.1\r\n\r\n"),
            Request::MethodNotAllowed
        );
        assert_eq!(parse_request(b"GET /metrics\r\n\r\n"), Request::BadRequest);
        assert_eq!(parse_request(b"\xff\xfe"), Request::BadRequest);
    }
}
