//! Glue between an [`Endpoint`] and something that moves datagrams.
//!
//! A [`Transport`] sends and receives raw datagrams without blocking; a
//! [`Driver`] pumps an endpoint over it, optionally through a
//! [`LinkConditioner`] on the send path. The UDP socket ([`crate::udp`]) and
//! the in-process link ([`crate::local`]) are both transports, so a game
//! switches between them without touching anything else.

use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use crate::conditioner::{ConditionerConfig, LinkConditioner};
use crate::endpoint::Endpoint;
use crate::packet::MAX_DATAGRAM;

/// A non-blocking datagram mover.
pub trait Transport {
    /// The address peers see this transport as.
    fn local_addr(&self) -> SocketAddr;

    /// Sends one datagram (best effort, like UDP).
    fn send_to(&mut self, to: SocketAddr, bytes: &[u8]) -> io::Result<()>;

    /// Receives one datagram into `buf`, or `Ok(None)` when none is waiting.
    /// Datagrams longer than `buf` may be truncated; the endpoint rejects them.
    fn recv_from(&mut self, buf: &mut [u8]) -> io::Result<Option<(SocketAddr, usize)>>;
}

/// Counters of a driver's own work.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriverStats {
    /// Datagrams received from the transport.
    pub received: u64,
    /// Datagrams handed to the transport.
    pub sent: u64,
    /// Sends the transport refused (counted, not fatal: UDP is best effort).
    pub send_errors: u64,
    /// Receive errors other than "nothing waiting" (e.g. ICMP port unreachable).
    pub recv_errors: u64,
}

/// An endpoint pumped over a transport.
#[derive(Debug)]
pub struct Driver<T: Transport> {
    endpoint: Endpoint,
    transport: T,
    conditioner: Option<LinkConditioner>,
    buf: Box<[u8; MAX_DATAGRAM]>,
    recv_buf: Box<[u8; 2048]>,
    stats: DriverStats,
}

impl<T: Transport> Driver<T> {
    /// Drives `endpoint` over `transport`.
    pub fn new(endpoint: Endpoint, transport: T) -> Self {
        Self {
            endpoint,
            transport,
            conditioner: None,
            buf: Box::new([0; MAX_DATAGRAM]),
            recv_buf: Box::new([0; 2048]),
            stats: DriverStats::default(),
        }
    }

    /// Puts a seeded link conditioner in front of the transport's send path
    /// (a perfect configuration removes it).
    pub fn set_conditioner(&mut self, config: ConditionerConfig, seed: u64) {
        self.conditioner = (!config.is_perfect()).then(|| LinkConditioner::new(config, seed));
    }

    /// The conditioner, if any.
    pub fn conditioner(&self) -> Option<&LinkConditioner> {
        self.conditioner.as_ref()
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The endpoint, to connect, queue data and read events.
    pub fn endpoint_mut(&mut self) -> &mut Endpoint {
        &mut self.endpoint
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The transport, mutably.
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// The address peers see.
    pub fn local_addr(&self) -> SocketAddr {
        self.transport.local_addr()
    }

    /// The driver's counters.
    pub fn stats(&self) -> &DriverStats {
        &self.stats
    }

    fn send(&mut self, to: SocketAddr, len: usize) {
        match self.transport.send_to(to, &self.buf[..len]) {
            Ok(()) => self.stats.sent += 1,
            Err(_) => self.stats.send_errors += 1,
        }
    }

    /// Does all work due at `now`: drains received datagrams into the
    /// endpoint, runs its timers, sends what it has (through the conditioner
    /// when set) and releases conditioned datagrams that are due. Returns the
    /// number of datagrams moved, so a caller can tell when it is idle.
    pub fn pump(&mut self, now: Instant) -> usize {
        let mut moved = 0;
        loop {
            match self.transport.recv_from(&mut self.recv_buf[..]) {
                Ok(Some((from, len))) => {
                    self.stats.received += 1;
                    moved += 1;
                    self.endpoint.handle(now, from, &self.recv_buf[..len]);
                }
                Ok(None) => break,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // ICMP errors from earlier sends surface here on some systems; keep going.
                Err(_) => {
                    self.stats.recv_errors += 1;
                    if self.stats.recv_errors % 1024 == 0 {
                        break;
                    }
                }
            }
        }
        self.endpoint.handle_timeout(now);
        let local = self.transport.local_addr();
        while let Some(t) = self.endpoint.poll_transmit(now, &mut self.buf) {
            moved += 1;
            match self.conditioner.as_mut() {
                Some(c) => c.push(now, local, t.destination, &self.buf[..t.len]),
                None => self.send(t.destination, t.len),
            }
        }
        while let Some(d) = self.conditioner.as_mut().and_then(|c| c.pop_due(now)) {
            let len = d.bytes.len();
            self.buf[..len].copy_from_slice(&d.bytes);
            self.send(d.to, len);
            if let Some(c) = self.conditioner.as_mut() {
                c.recycle(d.bytes);
            }
        }
        moved
    }

    /// When [`Self::pump`] next has work without new input.
    pub fn next_wakeup(&self) -> Option<Instant> {
        let endpoint = self.endpoint.poll_timeout();
        let conditioner = self.conditioner.as_ref().and_then(|c| c.next_release());
        match (endpoint, conditioner) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
