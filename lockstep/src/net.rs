//! Glue between the sans-IO [`Host`]/[`Peer`] and netchan, over any
//! [`Transport`] — UDP or the in-process link — with the seeded link
//! conditioner on the send path if set. Each lockstep message is one netchan
//! message of the class its [`Delivery`] names: the repeated sets and turns
//! as the most-recent-state payload (a newer one supersedes an older one;
//! lockstep repeats them itself), the control messages guaranteed-ordered.
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
use crate::wire::{Delivery, Outgoing, ParticipantId};

/// Sends one lockstep message on a connection, in the class it asks for.
/// An ordered queue overflow closes the connection (its disconnect drops
/// the participant or stops the peer); a repeated message that cannot go
/// out now is repeated later anyway.
fn send(connection: &mut netchan::Connection, message: Outgoing) {
    match message.delivery {
        Delivery::Ordered => {
            let _ = connection.send_ordered_owned(message.bytes);
        }
        Delivery::Repeated => {
            let _ = connection.send_state(&message.bytes);
        }
    }
}

/// netchan connection settings for lockstep traffic.
///
/// Sets and turns repeat themselves every 25 ms until acknowledged, so
/// loss recovery does not wait for netchan. The control messages (start,
/// leave, out of sync) do: netchan declares a datagram lost once newer ones
/// are acknowledged (or its RTT timer runs out), and a 25 ms keepalive
/// makes that happen within about a round trip; it also gives the RTT and
/// loss estimates that speed control reads their samples, at little cost
/// (a 13-byte header 40 times a second when nothing else is sent).
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

/// The disconnect code of a host closing a session whose every turn every
/// remaining participant acknowledged (beyond netchan's own [`codes`]).
pub const SESSION_DELIVERED: u8 = 16;

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

    /// The next turn sent, when the host observes ([`Host::poll_sent_turn`]).
    pub fn poll_sent_turn(&mut self) -> Option<crate::wire::Turn> {
        self.host.poll_sent_turn()
    }

    /// Participants still connected.
    pub fn connected(&self) -> usize {
        self.by_conn.len()
    }

    /// Closes every connection, telling each participant the host shuts
    /// down. Once every participant acknowledged every turn up to the
    /// session's last ([`Host::all_delivered`]) the notice says so
    /// ([`SESSION_DELIVERED`]): a participant whose copy of the last turn's
    /// number was lost then still knows it holds the whole session. Keep
    /// pumping for a moment so the notices go out.
    pub fn shutdown(&mut self) {
        let code = if self.host.all_delivered() {
            SESSION_DELIVERED
        } else {
            codes::SHUTDOWN
        };
        let conns: Vec<ConnectionId> = self.driver.endpoint().connections().collect();
        for conn in conns {
            self.driver.endpoint_mut().disconnect(conn, code);
        }
        self.by_conn.clear();
        self.by_participant.clear();
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
                Event::Message { conn, data } | Event::State { conn, data, .. } => {
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
        while let Some((id, message)) = self.host.poll_transmit(now) {
            let Some(&conn) = self.by_participant.get(&id) else {
                continue;
            };
            if let Some(c) = self.driver.endpoint_mut().connection_mut(conn) {
                send(c, message);
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
                Event::Message { data, .. } | Event::State { data, .. } => {
                    // An error stops the participant; it is kept there.
                    let _ = self.peer.handle_message(now, &data);
                    self.driver.endpoint_mut().recycle(data);
                }
                Event::Disconnected {
                    reason: DisconnectReason::Peer(SESSION_DELIVERED),
                    ..
                } => {
                    // The host closed after this participant acknowledged
                    // every turn up to the last: what it holds is the whole
                    // session, even if the last turn's number never arrived.
                    self.conn = None;
                    if !self.peer.conclude_delivered() {
                        self.peer.stop(LockstepError::HostLost);
                    }
                }
                Event::Disconnected { .. } if self.peer.has_every_turn() => {
                    // Every turn up to the session's last is here: the host
                    // closing is the session's end, and the rest play out.
                    self.conn = None;
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
        while let Some(message) = self.peer.poll_transmit(now) {
            moved += 1;
            if let Some(c) = self
                .conn
                .and_then(|c| self.driver.endpoint_mut().connection_mut(c))
            {
                send(c, message);
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

    /// Whether its connection to the host is open.
    pub fn is_connected(&self) -> bool {
        self.conn.is_some()
    }

    /// When the node next has work without new input.
    pub fn next_wakeup(&self) -> Option<Instant> {
        match (self.driver.next_wakeup(), self.peer.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
