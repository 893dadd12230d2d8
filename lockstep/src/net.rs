//! Glue between the sans-IO [`Host`]/[`Peer`] and netchan: every lockstep
//! message is one guaranteed-ordered netchan message (exactly once, in
//! order, resent on loss), over any [`Transport`] — UDP or the in-process
//! link — with the seeded link conditioner on the send path if set.
//!
//! A [`HostNode`] is a netchan server endpoint: the first `expected`
//! connections become participants 0, 1, … and the session starts when all
//! are in. A [`PeerNode`] is a netchan client of it.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netchan::{
    codes, ConnectOptions, ConnectionConfig, ConnectionId, DisconnectReason, Driver,
    EndpointConfig, Event, Transport,
};

use crate::error::LockstepError;
use crate::host::{DropReason, Host, HostEvent};
use crate::peer::Peer;
use crate::sim::Simulation;
use crate::wire::ParticipantId;

/// netchan connection settings for lockstep traffic.
///
/// Every turn waits for the slowest of all command sets, so a lost
/// datagram stalls everyone until netchan resends it. Netchan declares a
/// datagram lost once newer ones are acknowledged (or its RTT timer runs
/// out): frequent small datagrams make that happen within about one round
/// trip instead of the timer's several, and give the RTT estimate the
/// samples speed control reads. Lockstep traffic is one small message per
/// turn, so a 25 ms keepalive is the difference between a 100 ms and a
/// 500 ms recovery at little cost (a 13-byte header 40 times a second).
pub fn connection_config() -> ConnectionConfig {
    ConnectionConfig {
        keepalive_interval: Duration::from_millis(25),
        initial_rtt: Duration::from_millis(100),
        ..ConnectionConfig::default()
    }
}

/// A netchan server endpoint configuration for a [`HostNode`].
pub fn host_endpoint_config() -> EndpointConfig {
    EndpointConfig {
        connection: connection_config(),
        ..EndpointConfig::server()
    }
}

/// A netchan client endpoint configuration for a [`PeerNode`].
pub fn peer_endpoint_config() -> EndpointConfig {
    EndpointConfig {
        connection: connection_config(),
        ..EndpointConfig::client()
    }
}

/// Bytes a node's connection(s) moved, as netchan counted them (UDP
/// payload bytes of data datagrams, headers included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Traffic {
    /// Bytes sent.
    pub sent: u64,
    /// Bytes received.
    pub received: u64,
}

/// A host on a netchan server endpoint.
#[derive(Debug)]
pub struct HostNode<T: Transport> {
    driver: Driver<T>,
    host: Host,
    expected: usize,
    by_conn: BTreeMap<ConnectionId, ParticipantId>,
    by_participant: BTreeMap<ParticipantId, ConnectionId>,
    events: VecDeque<HostEvent>,
    errors: Vec<LockstepError>,
}

impl<T: Transport> HostNode<T> {
    /// A host that starts the session once `expected` participants connected.
    pub fn new(driver: Driver<T>, host: Host, expected: usize) -> Self {
        HostNode {
            driver,
            host,
            expected: expected.max(1),
            by_conn: BTreeMap::new(),
            by_participant: BTreeMap::new(),
            events: VecDeque::new(),
            errors: Vec::new(),
        }
    }

    /// The host state machine.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// Ends the session after `turn` ([`Host::end_after`]).
    pub fn end_after(&mut self, turn: u32) {
        self.host.end_after(turn);
    }

    /// The netchan driver.
    pub fn driver(&self) -> &Driver<T> {
        &self.driver
    }

    /// The netchan driver, mutably (to set a conditioner).
    pub fn driver_mut(&mut self) -> &mut Driver<T> {
        &mut self.driver
    }

    /// The address participants connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.driver.local_addr()
    }

    /// Protocol errors of participants (each dropped the participant).
    pub fn errors(&self) -> &[LockstepError] {
        &self.errors
    }

    /// The next host event.
    pub fn poll_event(&mut self) -> Option<HostEvent> {
        self.events.pop_front()
    }

    /// Receives, runs the host, sends. Returns the datagrams moved.
    pub fn pump(&mut self, now: Instant) -> usize {
        let mut moved = self.driver.pump(now);
        while let Some(event) = self.driver.endpoint_mut().poll_event() {
            match event {
                Event::Connected { conn, .. } => match self.host.add_participant(now) {
                    Some(id) => {
                        self.by_conn.insert(conn, id);
                        self.by_participant.insert(id, conn);
                    }
                    None => self.driver.endpoint_mut().disconnect(conn, codes::KICKED),
                },
                Event::Message { conn, data } => {
                    if let Some(&id) = self.by_conn.get(&conn) {
                        if let Err(e) = self.host.handle_message(now, id, &data) {
                            self.errors.push(e);
                        }
                    }
                    self.driver.endpoint_mut().recycle(data);
                }
                Event::Disconnected { conn, .. } => {
                    if let Some(id) = self.by_conn.remove(&conn) {
                        self.by_participant.remove(&id);
                        self.host
                            .drop_participant(now, id, DropReason::Disconnected);
                    }
                }
                _ => {}
            }
        }
        if !self.host.is_started() && self.by_conn.len() >= self.expected {
            self.host.start(now);
        }
        for (&id, &conn) in &self.by_participant {
            if let Some(c) = self.driver.endpoint().connection(conn) {
                self.host.set_link(id, c.rtt(), c.metrics().loss);
            }
        }
        self.host.handle_timeout(now);
        while let Some(event) = self.host.poll_event() {
            if let HostEvent::Dropped { participant, .. } = event {
                if let Some(conn) = self.by_participant.remove(&participant) {
                    self.by_conn.remove(&conn);
                    self.driver.endpoint_mut().disconnect(conn, codes::KICKED);
                }
            }
            self.events.push_back(event);
        }
        while let Some((id, bytes)) = self.host.poll_transmit() {
            let Some(&conn) = self.by_participant.get(&id) else {
                continue;
            };
            let sent = self
                .driver
                .endpoint_mut()
                .connection_mut(conn)
                .map(|c| c.send_ordered_owned(bytes));
            if let Some(Err(_)) = sent {
                // The connection's ordered queue overflowed: netchan closes it,
                // and its disconnect drops the participant.
                moved += 1;
            }
        }
        moved + self.driver.pump(now)
    }

    /// When [`Self::pump`] next has work without new input.
    pub fn next_wakeup(&self) -> Option<Instant> {
        match (self.driver.next_wakeup(), self.host.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// A participant on a netchan client endpoint.
#[derive(Debug)]
pub struct PeerNode<T: Transport, S: Simulation> {
    driver: Driver<T>,
    peer: Peer<S>,
    conn: Option<ConnectionId>,
    traffic: Traffic,
}

impl<T: Transport, S: Simulation> PeerNode<T, S> {
    /// Connects `peer` to the host at `host_addr`.
    pub fn connect(
        mut driver: Driver<T>,
        peer: Peer<S>,
        now: Instant,
        host_addr: SocketAddr,
        client_id: u32,
    ) -> Result<Self, netchan::ConnectError> {
        let conn = driver.endpoint_mut().connect(
            now,
            host_addr,
            ConnectOptions {
                client_id,
                encrypt: false,
                compress: true,
            },
        )?;
        Ok(PeerNode {
            driver,
            peer,
            conn: Some(conn),
            traffic: Traffic::default(),
        })
    }

    /// The participant.
    pub fn peer(&self) -> &Peer<S> {
        &self.peer
    }

    /// The participant, mutably: issue commands, execute turns.
    pub fn peer_mut(&mut self) -> &mut Peer<S> {
        &mut self.peer
    }

    /// The netchan driver.
    pub fn driver(&self) -> &Driver<T> {
        &self.driver
    }

    /// The netchan driver, mutably (to set a conditioner).
    pub fn driver_mut(&mut self) -> &mut Driver<T> {
        &mut self.driver
    }

    /// The simulation, taking the node apart.
    pub fn into_sim(self) -> Option<S> {
        self.peer.into_sim()
    }

    /// Bytes moved so far on the connection to the host.
    pub fn traffic(&self) -> Traffic {
        self.traffic
    }

    /// Receives datagrams and hands the host's messages to the participant.
    pub fn receive(&mut self, now: Instant) -> usize {
        let moved = self.driver.pump(now);
        while let Some(event) = self.driver.endpoint_mut().poll_event() {
            match event {
                Event::Message { data, .. } => {
                    // An error stops the participant; it is kept there.
                    let _ = self.peer.handle_message(now, &data);
                    self.driver.endpoint_mut().recycle(data);
                }
                Event::Disconnected { reason, .. } => {
                    self.conn = None;
                    let error = match reason {
                        DisconnectReason::Peer(codes::KICKED) => LockstepError::Dropped {
                            turn: self.peer.next_turn(),
                        },
                        _ => LockstepError::HostLost,
                    };
                    self.peer.stop(error);
                }
                _ => {}
            }
        }
        self.observe();
        moved
    }

    fn observe(&mut self) {
        if let Some(c) = self.conn.and_then(|c| self.driver.endpoint().connection(c)) {
            self.peer.set_rtt(c.rtt());
            let m = c.metrics();
            self.traffic = Traffic {
                sent: m.bytes_sent,
                received: m.bytes_received,
            };
        }
    }

    /// Sends the participant's messages.
    pub fn flush(&mut self, now: Instant) -> usize {
        let mut moved = 0;
        while let Some(bytes) = self.peer.poll_transmit() {
            moved += 1;
            if let Some(c) = self
                .conn
                .and_then(|c| self.driver.endpoint_mut().connection_mut(c))
            {
                // Overflow closes the connection; the disconnect stops the peer.
                let _ = c.send_ordered_owned(bytes);
            }
        }
        moved + self.driver.pump(now)
    }

    /// Leaves the session: tells the host, then closes the connection.
    pub fn leave(&mut self, now: Instant) {
        self.peer.leave();
        self.flush(now);
        if let Some(conn) = self.conn.take() {
            self.driver.endpoint_mut().disconnect(conn, codes::NORMAL);
        }
        self.driver.pump(now);
    }

    /// When the node next has work without new input.
    pub fn next_wakeup(&self) -> Option<Instant> {
        match (self.driver.next_wakeup(), self.peer.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
