//! Two netchan endpoints joined in memory on simulated time, for timing the
//! sans-IO core alone: no sockets, no clocks, no loss. The server streams
//! snapshot payloads as the most-recent state; the client acknowledges.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netchan::{
    ConnectOptions, Connection, ConnectionId, Endpoint, EndpointConfig, Event, MAX_DATAGRAM,
};

/// What a [`Pair::tick`] moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Moved {
    /// Datagrams passed between the endpoints (both ways).
    pub datagrams: usize,
    /// State payloads the client received.
    pub states: usize,
    /// State payloads the server learnt were delivered.
    pub delivered: usize,
    /// State payloads the server learnt were dropped (or superseded).
    pub dropped: usize,
}

/// A connected client and server.
#[derive(Debug)]
pub struct Pair {
    now: Instant,
    client: Endpoint,
    server: Endpoint,
    server_conn: ConnectionId,
    client_conn: ConnectionId,
    buf: Box<[u8; MAX_DATAGRAM]>,
    client_addr: SocketAddr,
    server_addr: SocketAddr,
}

impl Pair {
    /// Connects a client to a server (Huffman compression if `compress`).
    /// `None` if the handshake does not complete, which would be a netchan bug.
    pub fn connect(compress: bool) -> Option<Self> {
        let now = Instant::now();
        let client_addr = SocketAddr::from(([127, 0, 0, 1], 27961));
        let server_addr = SocketAddr::from(([127, 0, 0, 1], 27960));
        // Fixed secrets: the benchmark must not depend on the OS's randomness.
        let mut client = Endpoint::new(
            EndpointConfig {
                secret: [1; 32],
                ..EndpointConfig::client()
            },
            now,
        );
        let server = Endpoint::new(
            EndpointConfig {
                secret: [2; 32],
                ..EndpointConfig::server()
            },
            now,
        );
        let options = ConnectOptions {
            client_id: 7,
            encrypt: false,
            compress,
        };
        let client_conn = client.connect(now, server_addr, options).ok()?;
        let mut pair = Pair {
            now,
            client,
            server,
            // Replaced by the server's own id once it reports the connection.
            server_conn: client_conn,
            client_conn,
            buf: Box::new([0; MAX_DATAGRAM]),
            client_addr,
            server_addr,
        };
        for _ in 0..200 {
            pair.exchange(Duration::from_millis(1));
            while let Some(event) = pair.server.poll_event() {
                if let Event::Connected { conn, .. } = event {
                    pair.server_conn = conn;
                    pair.drain();
                    return Some(pair);
                }
            }
        }
        None
    }

    /// The server's side of the connection.
    pub fn server_connection(&mut self) -> Option<&mut Connection> {
        self.server.connection_mut(self.server_conn)
    }

    /// The client's side of the connection.
    pub fn client_connection(&mut self) -> Option<&mut Connection> {
        self.client.connection_mut(self.client_conn)
    }

    /// Advances time by `dt` and passes every datagram both ways (server
    /// first), then takes the events. Returns what moved.
    pub fn tick(&mut self, dt: Duration) -> Moved {
        let datagrams = self.exchange(dt);
        let (states, delivered, dropped) = self.drain();
        Moved {
            datagrams,
            states,
            delivered,
            dropped,
        }
    }

    fn exchange(&mut self, dt: Duration) -> usize {
        self.now += dt;
        let now = self.now;
        let mut moved = 0;
        self.server.handle_timeout(now);
        while let Some(t) = self.server.poll_transmit(now, &mut self.buf) {
            self.client
                .handle(now, self.server_addr, &self.buf[..t.len]);
            moved += 1;
        }
        self.client.handle_timeout(now);
        while let Some(t) = self.client.poll_transmit(now, &mut self.buf) {
            self.server
                .handle(now, self.client_addr, &self.buf[..t.len]);
            moved += 1;
        }
        moved
    }

    /// Takes both endpoints' events, recycling payload buffers.
    fn drain(&mut self) -> (usize, usize, usize) {
        let (mut states, mut delivered, mut dropped) = (0, 0, 0);
        while let Some(event) = self.client.poll_event() {
            match event {
                Event::State { data, .. } => {
                    states += 1;
                    self.client.recycle(data);
                }
                Event::Message { data, .. }
                | Event::Unguaranteed { data, .. }
                | Event::Quickest { data, .. } => self.client.recycle(data),
                _ => {}
            }
        }
        while let Some(event) = self.server.poll_event() {
            match event {
                Event::StateDelivered { .. } => delivered += 1,
                Event::StateDropped { .. } => dropped += 1,
                Event::Message { data, .. }
                | Event::Unguaranteed { data, .. }
                | Event::Quickest { data, .. } => self.server.recycle(data),
                _ => {}
            }
        }
        (states, delivered, dropped)
    }
}
