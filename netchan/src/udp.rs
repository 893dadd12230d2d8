//! The UDP driver: one non-blocking `mio` socket, drained on every pump,
//! carrying any number of connections; [`UdpTransport::wait`] sleeps until
//! the socket is readable or the endpoint's next deadline.
//!
//! A process that runs several endpoints on one thread (a server and bots)
//! registers all their sockets with one `mio::Poll` of its own
//! ([`UdpTransport::bind_registered`]) and sleeps on that until the earliest
//! [`Driver::next_wakeup`] of them all.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};

use crate::driver::{Driver, Transport};
use crate::endpoint::Endpoint;

const SOCKET: Token = Token(0);

/// A non-blocking UDP socket registered with its own `mio` poll, or with
/// the caller's.
#[derive(Debug)]
pub struct UdpTransport {
    socket: UdpSocket,
    poll: Option<Poll>,
    events: Events,
    local: SocketAddr,
}

impl UdpTransport {
    /// Binds a socket at `addr` (port 0 picks a free port).
    pub fn bind(addr: SocketAddr) -> io::Result<Self> {
        let mut socket = UdpSocket::bind(addr)?;
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut socket, SOCKET, Interest::READABLE)?;
        let local = socket.local_addr()?;
        Ok(Self {
            socket,
            poll: Some(poll),
            events: Events::with_capacity(16),
            local,
        })
    }

    /// Binds a socket at `addr` and registers it for reading with the
    /// caller's `registry` under `token`; the caller polls. [`Self::wait`]
    /// then only sleeps for the timeout.
    pub fn bind_registered(
        addr: SocketAddr,
        registry: &mio::Registry,
        token: Token,
    ) -> io::Result<Self> {
        let mut socket = UdpSocket::bind(addr)?;
        registry.register(&mut socket, token, Interest::READABLE)?;
        let local = socket.local_addr()?;
        Ok(Self {
            socket,
            poll: None,
            events: Events::with_capacity(1),
            local,
        })
    }

    /// Blocks until the socket may be readable or `timeout` passes
    /// (`None`: indefinitely, only with an own poll). Spurious wake-ups are
    /// possible and harmless.
    pub fn wait(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        let Some(poll) = self.poll.as_mut() else {
            // Registered with the caller's poll: nothing to wait on here.
            std::thread::sleep(timeout.unwrap_or(Duration::from_millis(1)));
            return Ok(());
        };
        match poll.poll(&mut self.events, timeout) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            other => other,
        }
    }
}

impl Transport for UdpTransport {
    fn local_addr(&self) -> SocketAddr {
        self.local
    }

    fn send_to(&mut self, to: SocketAddr, bytes: &[u8]) -> io::Result<()> {
        self.socket.send_to(bytes, to).map(|_| ())
    }

    fn recv_from(&mut self, buf: &mut [u8]) -> io::Result<Option<(SocketAddr, usize)>> {
        match self.socket.recv_from(buf) {
            Ok((len, from)) => Ok(Some((from, len))),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// An endpoint driven over a real UDP socket.
pub type UdpDriver = Driver<UdpTransport>;

impl Driver<UdpTransport> {
    /// Binds a UDP socket at `addr` for `endpoint`.
    pub fn bind_udp(addr: SocketAddr, endpoint: Endpoint) -> io::Result<Self> {
        Ok(Driver::new(endpoint, UdpTransport::bind(addr)?))
    }

    /// Sleeps until a datagram may have arrived, the next deadline, or
    /// `max_wait` — whichever comes first.
    pub fn wait(&mut self, now: Instant, max_wait: Duration) -> io::Result<()> {
        let timeout = self
            .next_wakeup()
            .map_or(max_wait, |t| t.saturating_duration_since(now).min(max_wait));
        self.transport_mut().wait(Some(timeout))
    }
}
