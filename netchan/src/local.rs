//! An in-process link (Torque's short-circuit connection for a listen
//! server): datagrams move between endpoints of one process through shared
//! queues instead of a socket, with the same [`Driver`] API as UDP.
//!
//! Datagrams are still fully encoded and decoded, so the in-process link
//! exercises exactly the code real traffic does; it only skips the kernel.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::driver::{Driver, Transport};
use crate::endpoint::Endpoint;

/// Most datagrams queued for one address, like a socket's receive buffer.
const QUEUE_LIMIT: usize = 8192;

#[derive(Debug, Default)]
struct HubInner {
    queues: HashMap<SocketAddr, VecDeque<(SocketAddr, Vec<u8>)>>,
    next_port: u16,
    spare: Vec<Vec<u8>>,
    dropped: u64,
}

/// The shared medium of in-process transports. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct LocalHub {
    inner: Arc<Mutex<HubInner>>,
}

impl LocalHub {
    /// An empty hub.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HubInner> {
        // A panic while holding the lock cannot leave the queues inconsistent
        // (every operation is a single push or pop), so poisoning is ignored.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A transport at `addr`, or at a fresh `127.0.0.1` port when `None`.
    pub fn bind(&self, addr: Option<SocketAddr>) -> io::Result<LocalTransport> {
        let mut inner = self.lock();
        let addr = match addr {
            Some(a) => a,
            None => loop {
                inner.next_port = inner.next_port.wrapping_add(1).max(20_000);
                let a = SocketAddr::from(([127, 0, 0, 1], inner.next_port));
                if !inner.queues.contains_key(&a) {
                    break a;
                }
            },
        };
        if inner.queues.contains_key(&addr) {
            return Err(io::Error::new(io::ErrorKind::AddrInUse, "address in use"));
        }
        inner.queues.insert(addr, VecDeque::new());
        Ok(LocalTransport {
            hub: self.clone(),
            addr,
        })
    }

    /// Datagrams dropped because a queue was full or nobody was bound.
    pub fn dropped(&self) -> u64 {
        self.lock().dropped
    }
}

/// One endpoint's attachment to a [`LocalHub`].
#[derive(Debug)]
pub struct LocalTransport {
    hub: LocalHub,
    addr: SocketAddr,
}

impl Transport for LocalTransport {
    fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    fn send_to(&mut self, to: SocketAddr, bytes: &[u8]) -> io::Result<()> {
        let mut inner = self.hub.lock();
        let mut buf = inner.spare.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(bytes);
        let from = self.addr;
        match inner.queues.get_mut(&to) {
            Some(q) if q.len() < QUEUE_LIMIT => q.push_back((from, buf)),
            // Like UDP: nobody listening, or the buffer is full, drops silently.
            _ => inner.dropped += 1,
        }
        Ok(())
    }

    fn recv_from(&mut self, buf: &mut [u8]) -> io::Result<Option<(SocketAddr, usize)>> {
        let mut inner = self.hub.lock();
        let Some((from, bytes)) = inner.queues.get_mut(&self.addr).and_then(|q| q.pop_front())
        else {
            return Ok(None);
        };
        let len = bytes.len().min(buf.len());
        buf[..len].copy_from_slice(&bytes[..len]);
        if inner.spare.len() < 1024 {
            inner.spare.push(bytes);
        }
        Ok(Some((from, len)))
    }
}

impl Drop for LocalTransport {
    fn drop(&mut self) {
        let addr = self.addr;
        self.hub.lock().queues.remove(&addr);
    }
}

/// An endpoint driven over the in-process link.
pub type LocalDriver = Driver<LocalTransport>;

impl Driver<LocalTransport> {
    /// Binds a new endpoint on `hub` (at `addr`, or a fresh port).
    pub fn bind_local(
        hub: &LocalHub,
        addr: Option<SocketAddr>,
        endpoint: Endpoint,
    ) -> io::Result<Self> {
        Ok(Driver::new(endpoint, hub.bind(addr)?))
    }
}
