//! Test support: a client and a server endpoint joined in memory on
//! simulated time, with no loss and no sockets. Tests, benchmarks and fuzz
//! targets all build their connected pair here.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use netq3_netchan::testing::Pair;
//!
//! let mut pair = Pair::connected(Instant::now(), Pair::options(7, false, true), None)
//!     .expect("handshake");
//! pair.client_connection().unwrap().send_ordered(b"hi").unwrap();
//! pair.step(Duration::from_millis(10));
//! assert!(matches!(
//!     pair.server.poll_event(),
//!     Some(netq3_netchan::Event::Message { data, .. }) if data == b"hi"
//! ));
//! ```

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::connection::{Connection, ConnectionId, Event};
use crate::crypto::PresharedKey;
use crate::endpoint::{ConnectOptions, Endpoint, EndpointConfig};
use crate::outcome::HandleOutcome;
use crate::packet::MAX_DATAGRAM;

/// Which endpoint of a [`Pair`] sent a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The client endpoint.
    Client,
    /// The server endpoint.
    Server,
}

/// Most steps [`Pair::connected`] waits for the handshake.
const CONNECT_STEPS: usize = 200;

/// A client and a server endpoint, passing datagrams to each other directly.
#[derive(Debug)]
pub struct Pair {
    /// The simulated clock.
    pub now: Instant,
    /// The client endpoint.
    pub client: Endpoint,
    /// The server endpoint.
    pub server: Endpoint,
    /// The client's address, as the server sees it.
    pub client_addr: SocketAddr,
    /// The server's address.
    pub server_addr: SocketAddr,
    /// The client's side of the connection.
    pub client_conn: ConnectionId,
    /// The server's side, once the server reported it connected.
    pub server_conn: Option<ConnectionId>,
    buf: Box<[u8; MAX_DATAGRAM]>,
}

impl Pair {
    /// Connect options with these settings.
    pub fn options(client_id: u32, encrypt: bool, compress: bool) -> ConnectOptions {
        ConnectOptions {
            client_id,
            encrypt,
            compress,
        }
    }

    /// The client's default configuration: fixed secret `[1; 32]` (a test
    /// must not depend on the OS's randomness) and the pre-shared key.
    pub fn client_config(psk: Option<PresharedKey>) -> EndpointConfig {
        EndpointConfig {
            secret: [1; 32],
            psk,
            ..EndpointConfig::client()
        }
    }

    /// The server's default configuration: fixed secret `[2; 32]` and the pre-shared key.
    pub fn server_config(psk: Option<PresharedKey>) -> EndpointConfig {
        EndpointConfig {
            secret: [2; 32],
            psk,
            ..EndpointConfig::server()
        }
    }

    /// Two endpoints with these configurations; the client has started
    /// connecting with `options`. `None` if `connect` refuses (e.g.
    /// encryption asked for without a key).
    pub fn new(
        now: Instant,
        client: EndpointConfig,
        server: EndpointConfig,
        options: ConnectOptions,
    ) -> Option<Self> {
        let client_addr = SocketAddr::from(([127, 0, 0, 1], 27961));
        let server_addr = SocketAddr::from(([127, 0, 0, 1], 27960));
        let mut client = Endpoint::new(client, now);
        let server = Endpoint::new(server, now);
        let client_conn = client.connect(now, server_addr, options).ok()?;
        Some(Self {
            now,
            client,
            server,
            client_addr,
            server_addr,
            client_conn,
            server_conn: None,
            buf: Box::new([0; MAX_DATAGRAM]),
        })
    }

    /// A pair with the default configurations ([`Self::client_config`],
    /// [`Self::server_config`]), connected. `None` if the handshake does not
    /// complete, which would be a netchan bug.
    pub fn connected(
        now: Instant,
        options: ConnectOptions,
        psk: Option<PresharedKey>,
    ) -> Option<Self> {
        let mut pair = Self::new(
            now,
            Self::client_config(psk.clone()),
            Self::server_config(psk),
            options,
        )?;
        pair.finish_handshake(Duration::from_millis(1), |_, _, _| {})
            .then_some(pair)
    }

    /// Steps by `dt` until both sides report the connection (consuming the
    /// two `Connected` events), handing every datagram to `watch`. Returns
    /// whether it completed within 200 steps.
    pub fn finish_handshake(
        &mut self,
        dt: Duration,
        mut watch: impl FnMut(Side, &[u8], HandleOutcome),
    ) -> bool {
        let mut client_up = false;
        for _ in 0..CONNECT_STEPS {
            self.step_with(dt, &mut watch);
            while let Some(event) = self.client.poll_event() {
                client_up |=
                    matches!(event, Event::Connected { conn, .. } if conn == self.client_conn);
            }
            while let Some(event) = self.server.poll_event() {
                if let Event::Connected { conn, .. } = event {
                    self.server_conn = Some(conn);
                }
            }
            if client_up && self.server_conn.is_some() {
                return true;
            }
        }
        false
    }

    /// The client's side of the connection.
    pub fn client_connection(&mut self) -> Option<&mut Connection> {
        self.client.connection_mut(self.client_conn)
    }

    /// The server's side of the connection.
    pub fn server_connection(&mut self) -> Option<&mut Connection> {
        self.server.connection_mut(self.server_conn?)
    }

    /// Advances time by `dt`, then passes every datagram due: the client's
    /// to the server, then the server's to the client. Events stay in the
    /// endpoints. Returns the datagrams moved.
    pub fn step(&mut self, dt: Duration) -> usize {
        self.step_with(dt, |_, _, _| {})
    }

    /// [`Self::step`], handing each datagram, who sent it and what the
    /// receiver did with it to `watch`.
    pub fn step_with(
        &mut self,
        dt: Duration,
        mut watch: impl FnMut(Side, &[u8], HandleOutcome),
    ) -> usize {
        self.now += dt;
        let now = self.now;
        let mut moved = 0;
        self.client.handle_timeout(now);
        while let Some(t) = self.client.poll_transmit(now, &mut self.buf) {
            let bytes = &self.buf[..t.len];
            let outcome = self.server.handle(now, self.client_addr, bytes);
            watch(Side::Client, bytes, outcome);
            moved += 1;
        }
        self.server.handle_timeout(now);
        while let Some(t) = self.server.poll_transmit(now, &mut self.buf) {
            let bytes = &self.buf[..t.len];
            let outcome = self.client.handle(now, self.server_addr, bytes);
            watch(Side::Server, bytes, outcome);
            moved += 1;
        }
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::DropReason;

    #[test]
    fn connects_and_reports_every_datagram() {
        let now = Instant::now();
        let mut pair = Pair::new(
            now,
            Pair::client_config(None),
            Pair::server_config(None),
            Pair::options(9, false, false),
        )
        .unwrap();
        let mut seen = Vec::new();
        assert!(
            pair.finish_handshake(Duration::from_millis(1), |side, bytes, outcome| {
                seen.push((side, bytes[0] >> 4, outcome))
            })
        );
        let sid = pair.server_conn.unwrap();
        // Challenge, cookie, connect, accept, then the client's first data datagram.
        assert_eq!(
            seen[..4].iter().map(|s| (s.0, s.1)).collect::<Vec<_>>(),
            vec![
                (Side::Client, 1),
                (Side::Server, 2),
                (Side::Client, 3),
                (Side::Server, 4)
            ]
        );
        assert_eq!(seen[0].2, HandleOutcome::Challenged);
        assert_eq!(seen[2].2, HandleOutcome::Accepted(sid));
        assert_eq!(seen[3].2, HandleOutcome::Handshake(pair.client_conn));
        assert_eq!(seen[4], (Side::Client, 6, HandleOutcome::Data(sid)));
        // A replayed copy of an accepted datagram is a duplicate.
        assert_eq!(
            pair.server.handle(
                pair.now,
                pair.client_addr,
                &[0x60, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
            ),
            HandleOutcome::Rejected(DropReason::Duplicate)
        );
        assert!(Pair::connected(now, Pair::options(1, true, true), None).is_none());
    }
}
