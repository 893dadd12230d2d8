//! Moving datagrams: real UDP sockets on 127.0.0.1 sharing one `mio::Poll`,
//! or netchan's in-process link; either way through a metering wrapper
//! that checks the size of every datagram the engine sends (and counts
//! oversized ones it receives as rejected input), and the seeded link
//! conditioner on every send path.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netchan::driver::DriverStats;
use netchan::local::LocalTransport;
use netchan::mio::{Events, Poll, Token};
use netchan::{
    ConditionerConfig, Driver, Endpoint, LocalHub, Transport, UdpTransport, MAX_DATAGRAM,
};

/// Which medium carries the datagrams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TransportKind {
    /// Real UDP sockets on 127.0.0.1 (the default).
    #[default]
    Udp,
    /// The in-process link.
    Local,
}

impl TransportKind {
    /// Its command-line name.
    pub fn name(self) -> &'static str {
        match self {
            TransportKind::Udp => "udp",
            TransportKind::Local => "local",
        }
    }
}

/// What crossed one transport, counted at the socket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Meter {
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams received.
    pub received: u64,
    /// Bytes sent (UDP payload).
    pub bytes_sent: u64,
    /// Bytes received (UDP payload).
    pub bytes_received: u64,
    /// Largest datagram sent.
    pub largest: usize,
    /// Datagrams sent over [`MAX_DATAGRAM`] bytes (must stay 0: the
    /// engine's own promise).
    pub oversized: u64,
    /// Largest datagram received (anyone may send anything).
    pub largest_received: usize,
    /// Datagrams received over [`MAX_DATAGRAM`] bytes: rejected input (a
    /// stranger's), counted, never an invariant of ours.
    pub oversized_received: u64,
}

/// A transport that counts and sizes every datagram through it.
#[derive(Debug)]
pub struct Metered<T> {
    inner: T,
    meter: Meter,
}

impl<T> Metered<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> Self {
        Metered {
            inner,
            meter: Meter::default(),
        }
    }

    /// The counters so far.
    pub fn meter(&self) -> Meter {
        self.meter
    }
}

impl<T: Transport> Transport for Metered<T> {
    fn local_addr(&self) -> SocketAddr {
        self.inner.local_addr()
    }

    fn send_to(&mut self, to: SocketAddr, bytes: &[u8]) -> io::Result<()> {
        self.meter.largest = self.meter.largest.max(bytes.len());
        self.meter.oversized += (bytes.len() > MAX_DATAGRAM) as u64;
        self.inner.send_to(to, bytes)?;
        self.meter.sent += 1;
        self.meter.bytes_sent += bytes.len() as u64;
        Ok(())
    }

    fn recv_from(&mut self, buf: &mut [u8]) -> io::Result<Option<(SocketAddr, usize)>> {
        let got = self.inner.recv_from(buf)?;
        if let Some((_, len)) = got {
            self.meter.largest_received = self.meter.largest_received.max(len);
            self.meter.oversized_received += (len > MAX_DATAGRAM) as u64;
            self.meter.received += 1;
            self.meter.bytes_received += len as u64;
        }
        Ok(got)
    }
}

/// One endpoint with its transport: UDP or in-process.
#[derive(Debug)]
pub enum Net {
    /// Over a UDP socket.
    Udp(Driver<Metered<UdpTransport>>),
    /// Over the in-process link.
    Local(Driver<Metered<LocalTransport>>),
}

macro_rules! each {
    ($self:expr, $d:ident => $body:expr) => {
        match $self {
            Net::Udp($d) => $body,
            Net::Local($d) => $body,
        }
    };
}

impl Net {
    /// The endpoint.
    pub fn endpoint(&self) -> &Endpoint {
        each!(self, d => d.endpoint())
    }

    /// The endpoint, mutably.
    pub fn endpoint_mut(&mut self) -> &mut Endpoint {
        each!(self, d => d.endpoint_mut())
    }

    /// The address peers reach it at.
    pub fn local_addr(&self) -> SocketAddr {
        each!(self, d => d.local_addr())
    }

    /// Receives, runs timers, sends; returns the datagrams moved.
    pub fn pump(&mut self, now: Instant) -> usize {
        each!(self, d => d.pump(now))
    }

    /// When it next has work without new input.
    pub fn next_wakeup(&self) -> Option<Instant> {
        each!(self, d => d.next_wakeup())
    }

    /// Puts the link conditioner on its send path.
    pub fn set_conditioner(&mut self, config: ConditionerConfig, seed: u64) {
        each!(self, d => d.set_conditioner(config, seed))
    }

    /// What crossed its socket.
    pub fn meter(&self) -> Meter {
        each!(self, d => d.transport().meter())
    }

    /// The driver's own counters.
    pub fn driver_stats(&self) -> DriverStats {
        each!(self, d => d.stats().clone())
    }
}

/// Makes endpoints on one medium and waits for traffic on all of them.
#[derive(Debug)]
pub struct Network {
    kind: TransportKind,
    poll: Option<Poll>,
    events: Events,
    hub: LocalHub,
    next_token: usize,
}

impl Network {
    /// A medium of the given kind.
    pub fn new(kind: TransportKind) -> io::Result<Network> {
        let poll = match kind {
            TransportKind::Udp => Some(Poll::new()?),
            TransportKind::Local => None,
        };
        Ok(Network {
            kind,
            poll,
            events: Events::with_capacity(256),
            hub: LocalHub::new(),
            next_token: 0,
        })
    }

    /// Its kind.
    pub fn kind(&self) -> TransportKind {
        self.kind
    }

    /// Binds a new endpoint on 127.0.0.1 (a fresh port).
    pub fn bind(&mut self, endpoint: Endpoint) -> io::Result<Net> {
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        match (&self.poll, self.kind) {
            (Some(poll), TransportKind::Udp) => {
                self.next_token += 1;
                let socket = UdpTransport::bind_registered(
                    loopback,
                    poll.registry(),
                    Token(self.next_token),
                )?;
                Ok(Net::Udp(Driver::new(endpoint, Metered::new(socket))))
            }
            _ => {
                let link = self.hub.bind(None)?;
                Ok(Net::Local(Driver::new(endpoint, Metered::new(link))))
            }
        }
    }

    /// Binds a new endpoint on a UDP socket at `addr` (a dedicated server's
    /// `--bind`, or port 0 for a client). UDP networks only.
    pub fn bind_udp_at(&mut self, addr: SocketAddr, endpoint: Endpoint) -> io::Result<Net> {
        let Some(poll) = self.poll.as_ref() else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the in-process link has no addresses to bind",
            ));
        };
        self.next_token += 1;
        let socket = UdpTransport::bind_registered(addr, poll.registry(), Token(self.next_token))?;
        Ok(Net::Udp(Driver::new(endpoint, Metered::new(socket))))
    }

    /// Sleeps until a socket may be readable or `timeout` passes (UDP), or
    /// for `timeout` (the in-process link has nothing to wait on: every
    /// datagram is queued by the time the sender's pump returns).
    pub fn wait(&mut self, timeout: Duration) -> io::Result<()> {
        match self.poll.as_mut() {
            Some(poll) => match poll.poll(&mut self.events, Some(timeout)) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
                other => other,
            },
            None => {
                std::thread::sleep(timeout);
                Ok(())
            }
        }
    }

    /// Datagrams the in-process link dropped (full queue or nobody bound).
    pub fn local_dropped(&self) -> u64 {
        self.hub.dropped()
    }
}
