//! The server end: player slots over a netchan endpoint, one snapshot
//! stream per client, commands in, reliable commands out, map changes,
//! kicks, shutdown and (feature `record`) recording.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Instant;

use fields::NetFields;
use netchan::{ConnectionId, Endpoint, EndpointConfig, Event, RejectReason, StateId};
use snapshot::{BuildOutcome, ClientSettings, Interpolate, Rewind, Scope, ViewStamp};

use crate::config::{client_settings, ServerConfig};
use crate::error::SessionError;
use crate::reason::{codes, DisconnectReason};
use crate::stats::{ServerClientStats, ServerStats};
#[cfg(feature = "record")]
mod record;
#[cfg(feature = "record")]
pub use record::{RecordView, RecordingStats};

use crate::wire::{
    ClientMessage, CommandPacket, ServerMessage, SnapshotPayload, COMMAND_HISTORY, MAX_NAME,
};

/// A client of the server: its player slot and a generation, so a key of a
/// client that left never reaches the next occupant of the slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientKey {
    slot: u16,
    generation: u32,
}

impl ClientKey {
    /// The player slot, `0..max_clients` (e.g. the player's entity number).
    pub fn slot(self) -> usize {
        self.slot as usize
    }
}

/// What happened on the server, for the game.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent<C> {
    /// A client connected and said who it is; its gamestate is on its way.
    Connected {
        /// The client.
        client: ClientKey,
        /// Its name (clipped to 32 bytes; sanitize it for display).
        name: String,
    },
    /// The client holds the current gamestate and now gets snapshots
    /// (Quake 3's `ClientBegin`): on connect and after every map change.
    ///
    /// This is when a game spawns the player's entity (Quake 3's
    /// `ClientSpawn` runs from `ClientBegin`) and sets its player state with
    /// [`Server::set_player_state`]: the next [`Server::send_snapshots`]
    /// carries both to the client. Spawning at [`ServerEvent::Connected`]
    /// works too, but then other players see an entity whose client is still
    /// loading. After a map change every client enters again: spawn it on the
    /// new map then. The client learns its slot from the gamestate
    /// ([`crate::Client::slot`]), so a game that numbers player entities by
    /// slot lets each client find its own.
    Entered {
        /// The client.
        client: ClientKey,
        /// The gamestate epoch it entered.
        epoch: u8,
    },
    /// The client's next command, in order, exactly once.
    Command {
        /// The client.
        client: ClientKey,
        /// Its number (consecutive from 1 within a session).
        number: u32,
        /// The command.
        command: C,
    },
    /// A reliable game command from the client (chat…).
    Message {
        /// The client.
        client: ClientKey,
        /// The bytes the client passed to `send_reliable`.
        data: Vec<u8>,
    },
    /// The client is gone; its key is no longer valid.
    Disconnected {
        /// The client.
        client: ClientKey,
        /// Why.
        reason: DisconnectReason,
        /// Its final counters.
        stats: ServerClientStats,
    },
}

/// One client as the server sees it.
#[derive(Debug, Clone)]
pub struct ClientInfo {
    /// Its key.
    pub key: ClientKey,
    /// Its netchan client id (qport).
    pub client_id: u32,
    /// Its address.
    pub addr: SocketAddr,
    /// Its name, once its hello arrived.
    pub name: Option<String>,
    /// The gamestate epoch it entered, if any.
    pub entered: Option<u8>,
    /// Its counters.
    pub stats: ServerClientStats,
}

#[derive(Debug)]
struct Slot<C> {
    info: ClientInfo,
    conn: ConnectionId,
    snap: snapshot::ClientId,
    /// Outstanding state payloads and the snapshot each carried.
    states: VecDeque<(StateId, u32)>,
    /// The newest command executed.
    last_command: u32,
    /// The last [`COMMAND_HISTORY`] commands executed, oldest first
    /// (consecutive numbers), with their views: bases of the client's
    /// packets, and what lag compensation rewinds to.
    history: VecDeque<(u32, C, Option<ViewStamp>)>,
    /// Disconnect requested by the server (the event follows).
    closing: bool,
}

/// The server end of the session, generic over the game's entity `E`,
/// player state `P` and command `C` (all [`net_struct!`](crate::net_struct) types).
///
/// Sans-IO: every call that talks to clients takes the netchan
/// [`Endpoint`] (from any driver: `driver.endpoint_mut()`).
pub struct Server<E, P, C> {
    config: ServerConfig,
    snap: snapshot::Server<E, P>,
    slots: Vec<Option<Slot<C>>>,
    generations: Vec<u32>,
    epoch: u8,
    events: VecDeque<ServerEvent<C>>,
    #[cfg(feature = "record")]
    recording: Option<record::Recording<P>>,
    time_ms: u32,
    stats: ServerStats,
    buf: Vec<u8>,
    payload: Vec<u8>,
    message: Vec<u8>,
    commands: Vec<(u32, C, Option<ViewStamp>)>,
}

impl<E, P, C> std::fmt::Debug for Server<E, P, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("session::Server")
            .field("epoch", &self.epoch)
            .field("clients", &self.slots.iter().flatten().count())
            .finish_non_exhaustive()
    }
}

type Result<T> = std::result::Result<T, SessionError>;

impl<E, P, C> Server<E, P, C>
where
    E: NetFields,
    P: NetFields,
    C: NetFields,
{
    /// A server with an empty world.
    pub fn new(config: ServerConfig) -> Result<Self> {
        let mut snap = snapshot::Server::new(snapshot::ServerConfig {
            codec: config.codec,
            max_entities: config.max_entities,
            checksum_interval: config.checksum_interval,
        })?;
        snap.set_models(config.models.clone())?;
        snap.set_framing(config.framing.clone())?;
        Ok(Server {
            slots: (0..config.max_clients).map(|_| None).collect(),
            generations: vec![0; config.max_clients],
            config,
            snap,
            epoch: 0,
            events: VecDeque::new(),
            #[cfg(feature = "record")]
            recording: None,
            time_ms: 0,
            stats: ServerStats::default(),
            buf: Vec::new(),
            payload: Vec::new(),
            message: Vec::new(),
            commands: Vec::new(),
        })
    }

    /// The netchan endpoint configuration this server needs (schema
    /// fingerprint, version, capacity).
    pub fn endpoint_config(&self) -> EndpointConfig {
        self.config.endpoint::<E, P, C>()
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The master state: entities, baselines, configstrings. Change
    /// configstrings after clients connected with [`Self::set_configstring`]
    /// (which tells them); before a map change, anything goes.
    pub fn world(&self) -> &snapshot::Server<E, P> {
        &self.snap
    }

    /// The master state, mutably (see [`Self::world`]).
    pub fn world_mut(&mut self) -> &mut snapshot::Server<E, P> {
        &mut self.snap
    }

    /// The current gamestate epoch (bumped by every map change).
    pub fn epoch(&self) -> u8 {
        self.epoch
    }

    /// Server-wide counters.
    pub fn stats(&self) -> &ServerStats {
        &self.stats
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<ServerEvent<C>> {
        self.events.pop_front()
    }

    /// Every connected client.
    pub fn clients(&self) -> impl Iterator<Item = &ClientInfo> {
        self.slots.iter().flatten().map(|s| &s.info)
    }

    /// One client.
    pub fn client(&self, key: ClientKey) -> Option<&ClientInfo> {
        self.slot(key).map(|s| &s.info)
    }

    fn slot(&self, key: ClientKey) -> Option<&Slot<C>> {
        self.slots
            .get(key.slot())?
            .as_ref()
            .filter(|s| s.info.key == key)
    }

    fn index_of(&self, key: ClientKey) -> Result<usize> {
        self.slot(key)
            .map(|_| key.slot())
            .ok_or(SessionError::UnknownClient(key))
    }

    fn index_by_conn(&self, conn: ConnectionId) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| s.conn == conn))
    }

    /// Sets a client's player state (sent with its next snapshot).
    pub fn set_player_state(&mut self, key: ClientKey, state: P) -> Result<()> {
        let index = self.index_of(key)?;
        if let Some(slot) = &self.slots[index] {
            self.snap.set_player_state(slot.snap, state)?;
        }
        Ok(())
    }

    /// Reads what arrived: handles every netchan event, turning it into
    /// [`ServerEvent`]s. Call after pumping the driver.
    pub fn update(&mut self, endpoint: &mut Endpoint, now: Instant) -> Result<()> {
        let _ = now;
        while let Some(event) = endpoint.poll_event() {
            self.handle(endpoint, event)?;
        }
        Ok(())
    }

    fn handle(&mut self, endpoint: &mut Endpoint, event: Event) -> Result<()> {
        match event {
            Event::Connected { conn, addr } => self.connected(endpoint, conn, addr)?,
            Event::Disconnected { conn, reason } => {
                self.disconnected(conn, DisconnectReason::from_netchan(reason))?
            }
            Event::Message { conn, data } => {
                self.message(endpoint, conn, &data)?;
                endpoint.recycle(data);
            }
            Event::State { conn, data, .. } => {
                self.command_packet(conn, &data);
                endpoint.recycle(data);
            }
            Event::StateDelivered { conn, id } => self.state_report(conn, id, true)?,
            Event::StateDropped { conn, id } => self.state_report(conn, id, false)?,
            Event::Quickest { data, .. } | Event::Unguaranteed { data, .. } => {
                self.stats.stray_events += 1;
                endpoint.recycle(data);
            }
            Event::Notify { .. } => {}
        }
        Ok(())
    }

    fn connected(
        &mut self,
        endpoint: &mut Endpoint,
        conn: ConnectionId,
        addr: SocketAddr,
    ) -> Result<()> {
        let Some(client_id) = endpoint.connection(conn).map(|c| c.client_id()) else {
            return Ok(());
        };
        let Some(index) = self.slots.iter().position(Option::is_none) else {
            self.stats.refused += 1;
            endpoint.disconnect(conn, codes::SERVER_FULL);
            return Ok(());
        };
        // A snapshot travels after the epoch byte in one state payload, so
        // it may take the connection's largest message less that byte.
        let max_payload = self
            .config
            .connection
            .max_message_size
            .min(u32::MAX as usize) as u32;
        let settings = ClientSettings {
            max_snapshot_bytes: ClientSettings::default()
                .max_snapshot_bytes
                .min(max_payload.saturating_sub(1)),
            ..ClientSettings::default()
        };
        let snap = self.snap.add_client(settings)?;
        let key = ClientKey {
            slot: index as u16,
            generation: self.generations[index],
        };
        self.slots[index] = Some(Slot {
            info: ClientInfo {
                key,
                client_id,
                addr,
                name: None,
                entered: None,
                stats: ServerClientStats::default(),
            },
            conn,
            snap,
            states: VecDeque::new(),
            last_command: 0,
            history: VecDeque::new(),
            closing: false,
        });
        self.stats.connects += 1;
        Ok(())
    }

    fn disconnected(&mut self, conn: ConnectionId, reason: DisconnectReason) -> Result<()> {
        let Some(index) = self.index_by_conn(conn) else {
            self.stats.stray_events += 1;
            return Ok(());
        };
        let Some(slot) = self.slots[index].take() else {
            return Ok(());
        };
        self.generations[index] = self.generations[index].wrapping_add(1);
        if reason == DisconnectReason::TimedOut {
            self.stats.timeouts += 1;
        }
        #[cfg(feature = "record")]
        self.recorded_client_left(slot.info.key)?;
        self.snap.remove_client(slot.snap)?;
        // Only a client the game heard of is announced as gone.
        if slot.info.name.is_some() {
            self.events.push_back(ServerEvent::Disconnected {
                client: slot.info.key,
                reason,
                stats: slot.info.stats,
            });
        }
        Ok(())
    }

    fn message(&mut self, endpoint: &mut Endpoint, conn: ConnectionId, data: &[u8]) -> Result<()> {
        let Some(index) = self.index_by_conn(conn) else {
            self.stats.stray_events += 1;
            return Ok(());
        };
        let epoch = self.epoch;
        let Some(slot) = self.slots[index].as_mut() else {
            return Ok(());
        };
        let Ok(message) = ClientMessage::decode(data) else {
            slot.info.stats.bad_messages += 1;
            return Ok(());
        };
        let key = slot.info.key;
        match message {
            ClientMessage::Hello { snaps, rate, name } if slot.info.name.is_none() => {
                slot.info.name = Some(crate::wire::clip(name, MAX_NAME).to_owned());
                self.snap
                    .set_settings(slot.snap, client_settings(snaps as u32, rate))?;
                self.events.push_back(ServerEvent::Connected {
                    client: key,
                    name: name.to_owned(),
                });
                self.send_gamestate(endpoint, index)?;
            }
            ClientMessage::Begin { epoch: e } if slot.info.name.is_some() => {
                if e == epoch && slot.info.entered != Some(epoch) {
                    slot.info.entered = Some(epoch);
                    self.events
                        .push_back(ServerEvent::Entered { client: key, epoch });
                } else {
                    slot.info.stats.stale_messages += 1;
                }
            }
            ClientMessage::FullUpdate { epoch: e } if slot.info.name.is_some() => {
                if e == epoch {
                    slot.info.stats.full_requests += 1;
                    self.snap.request_full_update(slot.snap)?;
                } else {
                    slot.info.stats.stale_messages += 1;
                }
            }
            ClientMessage::Game(bytes) if slot.info.name.is_some() => {
                slot.info.stats.reliable_received += 1;
                self.events.push_back(ServerEvent::Message {
                    client: key,
                    data: bytes.to_vec(),
                });
            }
            // Anything before the hello, or a second hello.
            _ => slot.info.stats.bad_messages += 1,
        }
        Ok(())
    }

    fn command_packet(&mut self, conn: ConnectionId, data: &[u8]) {
        let Some(index) = self.index_by_conn(conn) else {
            self.stats.stray_events += 1;
            return;
        };
        let Some(slot) = self.slots[index].as_mut() else {
            return;
        };
        if slot.info.name.is_none() {
            slot.info.stats.bad_packets += 1;
            return;
        }
        let history = &slot.history;
        let base = |number: u32| {
            let oldest = history.front()?.0;
            let index = number.checked_sub(oldest)? as usize;
            history.get(index).map(|(_, c, _)| c.clone())
        };
        if CommandPacket::decode_viewed(self.config.codec, data, base, &mut self.commands).is_err()
        {
            slot.info.stats.bad_packets += 1;
            return;
        }
        slot.info.stats.command_packets += 1;
        for (number, command, view) in self.commands.drain(..) {
            if number <= slot.last_command {
                // A repeat for loss: already executed.
                slot.info.stats.repeated_commands += 1;
                continue;
            }
            // Commands are only dropped by the client once a packet holding
            // them was delivered, so a gap cannot happen; count it if it does.
            slot.info.stats.missed_commands += (number - slot.last_command - 1) as u64;
            slot.last_command = number;
            slot.info.stats.commands += 1;
            // Keep a run of consecutive numbers (a gap, which cannot happen,
            // restarts it).
            if slot.history.back().is_some_and(|(n, _, _)| n + 1 != number) {
                slot.history.clear();
            }
            if slot.history.len() == COMMAND_HISTORY {
                slot.history.pop_front();
            }
            slot.history.push_back((number, command.clone(), view));
            self.events.push_back(ServerEvent::Command {
                client: slot.info.key,
                number,
                command,
            });
        }
    }

    fn state_report(&mut self, conn: ConnectionId, id: StateId, delivered: bool) -> Result<()> {
        let Some(index) = self.index_by_conn(conn) else {
            self.stats.stray_events += 1;
            return Ok(());
        };
        let Some(slot) = self.slots[index].as_mut() else {
            return Ok(());
        };
        // Reports come once per id, in id order; ids sent before a map
        // change were forgotten with it.
        while slot.states.front().is_some_and(|(s, _)| *s < id) {
            slot.states.pop_front();
        }
        let Some(&(front, sequence)) = slot.states.front() else {
            return Ok(());
        };
        if front != id {
            return Ok(());
        }
        slot.states.pop_front();
        if delivered && self.snap.acknowledge(slot.snap, sequence)? {
            slot.info.stats.acks += 1;
        }
        Ok(())
    }

    /// Queues a session message to a client, enforcing the reliable bound:
    /// a client whose queue is full is disconnected instead.
    fn send(
        &mut self,
        endpoint: &mut Endpoint,
        index: usize,
        message: ServerMessage<'_>,
    ) -> Result<()> {
        let Some(slot) = self.slots[index].as_mut() else {
            return Err(SessionError::NotConnected);
        };
        let key = slot.info.key;
        if slot.closing {
            return Err(SessionError::ClientClosing(key));
        }
        let Some(connection) = endpoint.connection_mut(slot.conn) else {
            return Err(SessionError::ClientClosing(key));
        };
        if connection.metrics().ordered_queue_len >= self.config.max_reliable {
            slot.closing = true;
            self.stats.overflows += 1;
            endpoint.disconnect(slot.conn, codes::RELIABLE_OVERFLOW);
            return Err(SessionError::ReliableOverflow(key));
        }
        message.encode(&mut self.message);
        connection.send_ordered(&self.message)?;
        slot.info.stats.reliable_sent += 1;
        Ok(())
    }

    /// Queues a session message to every client that said hello. A client
    /// on its way out is skipped (its `Disconnected` event tells the game);
    /// only what is wrong with the message itself is an error.
    fn send_to_all(&mut self, endpoint: &mut Endpoint, message: ServerMessage<'_>) -> Result<()> {
        for index in 0..self.slots.len() {
            if self.slots[index]
                .as_ref()
                .is_some_and(|s| s.info.name.is_some())
            {
                client_fate(self.send(endpoint, index, message))?;
            }
        }
        Ok(())
    }

    fn send_gamestate(&mut self, endpoint: &mut Endpoint, index: usize) -> Result<()> {
        let mut bytes = std::mem::take(&mut self.buf);
        self.snap.write_gamestate(&mut bytes)?;
        let epoch = self.epoch;
        let sent = self.send(
            endpoint,
            index,
            ServerMessage::Gamestate {
                epoch,
                slot: index as u16,
                bytes: &bytes,
            },
        );
        self.buf = bytes;
        client_fate(sent)
    }

    /// Sends a reliable game command to one client: delivered once, in
    /// order. `Ok` once it is queued. Errors: [`SessionError::UnknownClient`]
    /// (gone), [`SessionError::ClientClosing`] (being disconnected),
    /// [`SessionError::ReliableOverflow`] (this message found its queue full:
    /// it is disconnected now), [`SessionError::Send`] (the message itself
    /// is refused, e.g. too large). The same shape as
    /// [`crate::Client::send_reliable`] and [`Self::broadcast`].
    pub fn send_reliable(
        &mut self,
        endpoint: &mut Endpoint,
        client: ClientKey,
        data: &[u8],
    ) -> Result<()> {
        let index = self.index_of(client)?;
        self.send(endpoint, index, ServerMessage::Game(data))
    }

    /// Sends a reliable game command to every client that said hello. `Ok`
    /// once it is queued to every client still in the game; a client being
    /// disconnected, or one whose queue this message overflowed (it is
    /// disconnected now), is skipped and its [`ServerEvent::Disconnected`]
    /// tells the game. An error is about the message itself (e.g. too large
    /// for [`SessionError::Send`]).
    pub fn broadcast(&mut self, endpoint: &mut Endpoint, data: &[u8]) -> Result<()> {
        self.send_to_all(endpoint, ServerMessage::Game(data))
    }

    /// Changes a configstring and tells every client (and the recording).
    pub fn set_configstring(
        &mut self,
        endpoint: &mut Endpoint,
        index: usize,
        value: &str,
    ) -> Result<()> {
        self.snap.set_configstring(index, value)?;
        let mut bytes = std::mem::take(&mut self.buf);
        self.snap.write_configstring(index, &mut bytes)?;
        let sent = self.send_to_all(endpoint, ServerMessage::Configstring(&bytes));
        #[cfg(feature = "record")]
        let sent = sent.and_then(|()| self.record_configstring(&bytes));
        self.buf = bytes;
        sent
    }

    /// Starts a new gamestate — a map change or restart: call it after
    /// setting the new map's configstrings, baselines and entities through
    /// [`Self::world_mut`]. The epoch changes, every client's snapshot
    /// stream restarts (no old snapshot is a base any more, the next one is
    /// full), every client gets the new gamestate and must enter again
    /// ([`ServerEvent::Entered`]) before it gets snapshots, and a snapshot
    /// of the old map still in flight is dropped by the client on arrival.
    pub fn change_map(&mut self, endpoint: &mut Endpoint) -> Result<()> {
        self.epoch = self.epoch.wrapping_add(1);
        self.stats.map_changes += 1;
        for index in 0..self.slots.len() {
            let Some(slot) = self.slots[index].as_mut() else {
                continue;
            };
            slot.states.clear();
            slot.info.entered = None;
            self.snap.request_full_update(slot.snap)?;
            if slot.info.name.is_some() {
                self.send_gamestate(endpoint, index)?;
            }
        }
        #[cfg(feature = "record")]
        self.record_map_change()?;
        Ok(())
    }

    /// Commits the master state as the frame at `time_ms` and sends every
    /// client that entered the current gamestate its snapshot (as the
    /// rate it asked for allows); records the frame if recording.
    pub fn send_snapshots<S: Scope<E, P>>(
        &mut self,
        endpoint: &mut Endpoint,
        time_ms: u32,
        scope: &mut S,
    ) -> Result<()> {
        self.snap.commit_frame(time_ms)?;
        self.time_ms = time_ms;
        self.stats.frames += 1;
        for index in 0..self.slots.len() {
            let Some(slot) = self.slots[index].as_mut() else {
                continue;
            };
            if slot.info.entered != Some(self.epoch) || slot.closing {
                continue;
            }
            let Some(connection) = endpoint.connection_mut(slot.conn) else {
                continue;
            };
            if !connection.is_established() {
                continue;
            }
            // A snapshot's sequence is the state id netchan gives its
            // payload: the client reads it off the payload, not the bytes.
            let sequence = connection.next_state_id() as u32;
            self.snap.set_next_sequence(slot.snap, sequence)?;
            let outcome = self.snap.build_snapshot(slot.snap, scope, &mut self.buf)?;
            let BuildOutcome::Built(info) = outcome else {
                continue;
            };
            SnapshotPayload {
                epoch: self.epoch,
                bytes: &self.buf,
            }
            .encode(&mut self.payload);
            // Established and within the message size (the snapshot
            // layer's limit is below netchan's), so it is taken and gets
            // the id the snapshot was numbered with.
            let id = connection.send_state(&self.payload)?;
            debug_assert_eq!(id as u32, info.sequence);
            slot.states.push_back((id, info.sequence));
            slot.info.stats.snapshots += 1;
            slot.info.stats.full_snapshots += info.base.is_none() as u64;
            slot.info.stats.snapshot_bytes += self.buf.len() as u64;
        }
        #[cfg(feature = "record")]
        self.record_frame(time_ms, scope)?;
        Ok(())
    }

    /// Disconnects a client (it is told it was kicked).
    pub fn kick(&mut self, endpoint: &mut Endpoint, client: ClientKey) -> Result<()> {
        let index = self.index_of(client)?;
        if let Some(slot) = self.slots[index].as_mut() {
            slot.closing = true;
            endpoint.disconnect(slot.conn, codes::KICKED);
        }
        Ok(())
    }

    /// Disconnects every client, telling each that the server shuts down
    /// (`restarting`: that it restarts, so clients reconnect on their own),
    /// and refuses every new connection from now on with the same reason: a
    /// client reconnecting at once is turned away (and backs off) instead
    /// of joining an endpoint that is about to stop. Keep pumping the
    /// endpoint for a moment so the notices go out; a new server may then
    /// bind the same address, and clients join it within a second or so.
    pub fn shutdown(&mut self, endpoint: &mut Endpoint, restarting: bool) {
        let (code, refusal) = if restarting {
            (codes::RESTARTING, RejectReason::Restarting)
        } else {
            (codes::SHUTDOWN, RejectReason::ShuttingDown)
        };
        endpoint.refuse_connections(refusal);
        for slot in self.slots.iter_mut().flatten() {
            slot.closing = true;
            endpoint.disconnect(slot.conn, code);
        }
        // Handshakes in progress and connections the game never heard of go too.
        let rest: Vec<ConnectionId> = endpoint.connections().collect();
        for conn in rest {
            endpoint.disconnect(conn, code);
        }
    }

    /// Whether every reliable command to every client has been
    /// acknowledged.
    pub fn reliable_idle(&self, endpoint: &Endpoint) -> bool {
        self.slots.iter().flatten().all(|s| {
            endpoint
                .connection(s.conn)
                .is_none_or(|c| c.metrics().ordered_queue_len == 0)
        })
    }

    /// What client `client` was drawing when it made command `number` (as
    /// it says: unchecked), while the command is among the last
    /// [`COMMAND_HISTORY`] executed.
    pub fn command_view(&self, client: ClientKey, number: u32) -> Option<ViewStamp> {
        let slot = self.slot(client)?;
        let oldest = slot.history.front()?.0;
        let index = number.checked_sub(oldest)? as usize;
        slot.history.get(index).and_then(|(_, _, view)| *view)
    }

    /// Lag compensation: every entity as `client` drew it when it made
    /// command `number` — the two snapshots it was drawing between, as they
    /// were sent to it, interpolated by the game's [`Interpolate`] at its
    /// render time — into `out` (number order, cleared first). Bounded by
    /// [`ServerConfig::max_rewind_ms`] behind the newest frame and checked
    /// against what was really sent ([`snapshot::rewind`]: a client cannot
    /// claim a view it could not have had). Call it while handling the
    /// command's [`ServerEvent::Command`], before the next frame.
    pub fn rewind(&self, client: ClientKey, number: u32, out: &mut Vec<(u32, E)>) -> Result<Rewind>
    where
        E: Interpolate,
    {
        out.clear();
        let slot = self
            .slot(client)
            .ok_or(SessionError::UnknownClient(client))?;
        let view = self
            .command_view(client, number)
            .ok_or(SessionError::NoView { command: number })?;
        Ok(self
            .snap
            .rewind(slot.snap, view, self.config.max_rewind_ms, out)?)
    }

    /// The netchan connection of a client (RTT, metrics).
    pub fn connection<'a>(
        &self,
        endpoint: &'a Endpoint,
        client: ClientKey,
    ) -> Option<&'a netchan::Connection> {
        endpoint.connection(self.slot(client)?.conn)
    }
}

/// A send to one client whose failure is that client's own fate (it is
/// being disconnected, and its event will say so) is not an error of a call
/// that sends to several; what is wrong with the message itself is.
fn client_fate(sent: Result<()>) -> Result<()> {
    match sent {
        Err(SessionError::ClientClosing(_) | SessionError::ReliableOverflow(_)) => Ok(()),
        other => other,
    }
}
