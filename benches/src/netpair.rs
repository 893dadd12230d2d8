//! Two netchan endpoints joined in memory on simulated time, for timing the
//! sans-IO core alone: no sockets, no clocks, no loss. The server streams
//! snapshot payloads as the most-recent state; the client acknowledges.

use std::time::{Duration, Instant};

use netchan::testing::Pair as Joined;
use netchan::{Connection, Event};

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

/// A connected client and server (netchan's own test pair), counting what
/// each tick moved.
#[derive(Debug)]
pub struct Pair {
    joined: Joined,
}

impl Pair {
    /// Connects a client to a server (Huffman compression if `compress`).
    /// `None` if the handshake does not complete, which would be a netchan bug.
    pub fn connect(compress: bool) -> Option<Self> {
        let joined = Joined::connected(Instant::now(), Joined::options(7, false, compress), None)?;
        Some(Pair { joined })
    }

    /// The server's side of the connection.
    pub fn server_connection(&mut self) -> Option<&mut Connection> {
        self.joined.server_connection()
    }

    /// The client's side of the connection.
    pub fn client_connection(&mut self) -> Option<&mut Connection> {
        self.joined.client_connection()
    }

    /// Advances time by `dt` and passes every datagram both ways, then takes
    /// the events. Returns what moved.
    pub fn tick(&mut self, dt: Duration) -> Moved {
        let datagrams = self.joined.step(dt);
        let (states, delivered, dropped) = self.drain();
        Moved {
            datagrams,
            states,
            delivered,
            dropped,
        }
    }

    /// Takes both endpoints' events, recycling payload buffers.
    fn drain(&mut self) -> (usize, usize, usize) {
        let (mut states, mut delivered, mut dropped) = (0, 0, 0);
        while let Some(event) = self.joined.client.poll_event() {
            match event {
                Event::State { data, .. } => {
                    states += 1;
                    self.joined.client.recycle(data);
                }
                Event::Message { data, .. }
                | Event::Unguaranteed { data, .. }
                | Event::Quickest { data, .. } => self.joined.client.recycle(data),
                _ => {}
            }
        }
        while let Some(event) = self.joined.server.poll_event() {
            match event {
                Event::StateDelivered { .. } => delivered += 1,
                Event::StateDropped { .. } => dropped += 1,
                Event::Message { data, .. }
                | Event::Unguaranteed { data, .. }
                | Event::Quickest { data, .. } => self.joined.server.recycle(data),
                _ => {}
            }
        }
        (states, delivered, dropped)
    }
}
