//! The endpoint: demultiplexes datagrams to connections, answers the
//! connectionless handshake, and gathers outgoing datagrams and events.
//!
//! A driver loop (see [`crate::udp`] and [`crate::local`] for real ones):
//!
//! ```no_run
//! # use netq3_netchan::{Endpoint, EndpointConfig, MAX_DATAGRAM};
//! # use std::time::Instant;
//! # fn recv() -> Option<(std::net::SocketAddr, Vec<u8>)> { None }
//! # fn send(_: std::net::SocketAddr, _: &[u8]) {}
//! let mut endpoint = Endpoint::new(EndpointConfig::default(), Instant::now());
//! let mut buf = [0u8; MAX_DATAGRAM];
//! loop {
//!     let now = Instant::now();
//!     while let Some((from, bytes)) = recv() {
//!         endpoint.handle(now, from, &bytes);
//!     }
//!     endpoint.handle_timeout(now);
//!     while let Some(t) = endpoint.poll_transmit(now, &mut buf) {
//!         send(t.destination, &buf[..t.len]);
//!     }
//!     while let Some(event) = endpoint.poll_event() {
//!         println!("{event:?}");
//!     }
//!     // Sleep until endpoint.poll_timeout() or a datagram arrives.
//! #   break;
//! }
//! ```

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use siphasher::sip128::{Hasher128, SipHasher24};
use std::hash::Hasher;

use crate::compress::{Compressor, HuffmanCompressor};
use crate::connection::{
    ClientHandshake, Connection, ConnectionConfig, ConnectionId, DisconnectReason, Event, Phase,
    Role, Scratch,
};
use crate::crypto::{Direction, PresharedKey, SessionCipher};
use crate::error::{ConnectError, SendError};
use crate::handshake::{
    ConnectRequest, CookieError, CookieKey, Handshake, RejectReason, OPT_COMPRESS, OPT_ENCRYPT,
};
use crate::metrics::EndpointMetrics;
use crate::outcome::{DropReason, HandleOutcome};
use crate::packet::{packet_type, DataHeader, MAX_DATAGRAM, TYPE_DATA, TYPE_STATUS_REQUEST};
use crate::pool::BufPool;
use crate::rate::{RateLimiter, MIN_BUDGET};
use crate::status::{StatusLimiter, StatusLimits, StatusReply, StatusRequest, MAX_STATUS_PAYLOAD};

/// Most connectionless responses waiting to be sent; beyond it they are dropped.
const MAX_OUTGOING: usize = 256;
/// Most cookies remembered as used (for replay rejection).
const MAX_USED_COOKIES: usize = 4096;
/// Most status replies waiting to be sent; beyond it requests are dropped.
const MAX_STATUS_OUTGOING: usize = 64;

/// Server-side settings: present only on endpoints that accept connections.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Most connections accepted but not yet confirmed by the client's first datagram.
    pub max_pending: usize,
    /// Most connections in all.
    pub max_clients: usize,
    /// How long a cookie stays valid.
    pub cookie_lifetime: Duration,
    /// How long an accepted connection waits for the client's first datagram.
    pub pending_timeout: Duration,
    /// Cap on the bytes per second sent over all connections together.
    pub total_rate: Option<u32>,
    /// Reject clients that do not ask for encryption.
    pub require_encryption: bool,
    /// Grant compression to clients that ask for it.
    pub allow_compression: bool,
    /// Rate limits on connectionless status replies.
    pub status_limits: StatusLimits,
    /// Answer a data datagram of a connection this server does not hold
    /// with [`RejectReason::UnknownConnection`] (ioquake3 answers such
    /// packets with a `disconnect`), so a client of a restarted server, or
    /// one that missed every disconnect notice, learns it at once instead of
    /// at its idle timeout. `None` (the default): such datagrams get no
    /// reply. The answers (10 bytes) are smaller than what they answer (13
    /// bytes of header at least) and limited per source address and in
    /// total by these limits.
    pub unknown_connection_replies: Option<StatusLimits>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            max_pending: 64,
            max_clients: 64,
            cookie_lifetime: Duration::from_secs(10),
            pending_timeout: Duration::from_secs(5),
            total_rate: None,
            require_encryption: false,
            allow_compression: true,
            status_limits: StatusLimits::default(),
            unknown_connection_replies: None,
        }
    }
}

/// Settings of an endpoint.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Settings of every connection.
    pub connection: ConnectionConfig,
    /// Accept incoming connections with these settings; `None` for a pure client.
    pub server: Option<ServerConfig>,
    /// Application protocol version; a mismatch is rejected.
    pub protocol_version: u32,
    /// Fingerprint of the network schema (field tables); a mismatch is rejected.
    pub schema_fingerprint: u64,
    /// Pre-shared key for encrypted connections.
    pub psk: Option<PresharedKey>,
    /// Secret keying handshake cookies and session nonces. Must be
    /// unpredictable; [`EndpointConfig::default`] draws it from the OS.
    pub secret: [u8; 32],
    /// First handshake retry interval (doubling up to `handshake_retry_max`).
    pub handshake_retry: Duration,
    /// Longest handshake retry interval: once reached, the client resends
    /// its challenge (or connect) this often until it gets in or gives up.
    pub handshake_retry_max: Duration,
    /// Give up connecting after this long. Generous by default (a minute):
    /// like Quake 3, a client on a bad link keeps trying, and every retry is
    /// a small datagram the server answers statelessly.
    pub connect_timeout: Duration,
    /// The compression layer; `None` disables compression entirely.
    pub compressor: Option<Arc<dyn Compressor>>,
}

/// 32 bytes from the operating system's random source.
pub fn random_secret() -> [u8; 32] {
    use chacha20poly1305::aead::rand_core::RngCore;
    let mut secret = [0u8; 32];
    chacha20poly1305::aead::OsRng.fill_bytes(&mut secret);
    secret
}

impl Default for EndpointConfig {
    fn default() -> Self {
        Self {
            connection: ConnectionConfig::default(),
            server: None,
            protocol_version: 1,
            schema_fingerprint: 0,
            psk: None,
            secret: random_secret(),
            handshake_retry: Duration::from_millis(250),
            handshake_retry_max: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(60),
            compressor: Some(Arc::new(HuffmanCompressor::quake3())),
        }
    }
}

impl EndpointConfig {
    /// A client endpoint with default settings.
    pub fn client() -> Self {
        Self::default()
    }

    /// A server endpoint with default settings.
    pub fn server() -> Self {
        Self {
            server: Some(ServerConfig::default()),
            ..Self::default()
        }
    }
}

/// How a client wants its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectOptions {
    /// The client id (Quake 3's qport): pick it at random once per client
    /// process so the server can follow a NAT port change. It must differ
    /// between clients behind one IP address (a random `u32` does).
    pub client_id: u32,
    /// Ask for encryption with the endpoint's pre-shared key.
    pub encrypt: bool,
    /// Ask for compressed bodies.
    pub compress: bool,
}

/// A datagram to send: the bytes are in the caller's buffer, `buf[..len]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// Where to send it.
    pub destination: SocketAddr,
    /// Its length.
    pub len: usize,
}

/// How many entries each of an endpoint's internal tables holds: what a
/// flood of input could grow, so tests and monitoring can check it stays bounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableSizes {
    /// Connection slots, live or free (never shrinks).
    pub slots: usize,
    /// Live connections.
    pub connections: usize,
    /// Entries of the address → connection map.
    pub by_addr: usize,
    /// Entries of the (IP, client id) → connection map.
    pub by_client: usize,
    /// Connectionless responses waiting to be sent (at most 256).
    pub outgoing: usize,
    /// Events waiting for [`Endpoint::poll_event`].
    pub events: usize,
    /// Cookies remembered as used (at most 4096).
    pub used_cookies: usize,
}

#[derive(Debug, Default)]
struct Slot {
    generation: u32,
    conn: Option<Connection>,
}

/// Many connections over one socket, demultiplexed by address and client id.
#[derive(Debug)]
pub struct Endpoint {
    config: EndpointConfig,
    epoch: Instant,
    now: Instant,
    slots: Vec<Slot>,
    free: Vec<u32>,
    by_addr: HashMap<SocketAddr, ConnectionId>,
    by_client: HashMap<(IpAddr, u32), ConnectionId>,
    outgoing: VecDeque<(SocketAddr, [u8; 64], usize)>,
    events: VecDeque<Event>,
    cookie_key: CookieKey,
    nonce_key: [u8; 16],
    nonce_counter: u64,
    used_cookies: VecDeque<([u8; 16], Instant)>,
    total_limiter: Option<RateLimiter>,
    round_robin: usize,
    scratch_a: Box<[u8; MAX_DATAGRAM]>,
    scratch_b: Box<[u8; MAX_DATAGRAM]>,
    pool: BufPool,
    metrics: EndpointMetrics,
    /// What status requests are answered with; `None` ignores them.
    status: Option<Vec<u8>>,
    status_limiter: StatusLimiter,
    /// Replies are rendered at send time from the newest payload, so the
    /// queue holds only who asked and how large the reply may be.
    status_out: VecDeque<(SocketAddr, StatusRequest)>,
    /// Why new connections are refused, while they are.
    refusing: Option<RejectReason>,
    /// Limits answers to unknown connections' data, when they are given.
    unknown_limiter: Option<StatusLimiter>,
}

impl Endpoint {
    /// A new endpoint; `now` starts its clock (cookie timestamps count from it).
    pub fn new(config: EndpointConfig, now: Instant) -> Self {
        let mut cookie = [0u8; 16];
        cookie.copy_from_slice(&config.secret[..16]);
        let mut nonce_key = [0u8; 16];
        nonce_key.copy_from_slice(&config.secret[16..]);
        let total_limiter = config
            .server
            .as_ref()
            .and_then(|s| s.total_rate)
            .map(|rate| RateLimiter::new(now, rate, None, (rate as usize / 20).max(MAX_DATAGRAM)));
        Self {
            epoch: now,
            now,
            slots: Vec::new(),
            free: Vec::new(),
            by_addr: HashMap::new(),
            by_client: HashMap::new(),
            outgoing: VecDeque::new(),
            events: VecDeque::new(),
            cookie_key: CookieKey(cookie),
            nonce_key,
            nonce_counter: 0,
            used_cookies: VecDeque::new(),
            total_limiter,
            round_robin: 0,
            scratch_a: Box::new([0; MAX_DATAGRAM]),
            scratch_b: Box::new([0; MAX_DATAGRAM]),
            pool: BufPool::new(4096, config.connection.max_message_size.max(MAX_DATAGRAM)),
            metrics: EndpointMetrics::default(),
            status: None,
            status_limiter: StatusLimiter::new(
                &config
                    .server
                    .as_ref()
                    .map(|s| s.status_limits.clone())
                    .unwrap_or_default(),
                now,
            ),
            status_out: VecDeque::new(),
            refusing: None,
            unknown_limiter: config
                .server
                .as_ref()
                .and_then(|s| s.unknown_connection_replies.as_ref())
                .map(|limits| StatusLimiter::new(limits, now)),
            config,
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &EndpointConfig {
        &self.config
    }

    /// Counters of all traffic received and sent, and of input rejected by reason.
    pub fn metrics(&self) -> &EndpointMetrics {
        &self.metrics
    }

    /// Sets what a server answers connectionless status requests with
    /// (see [`crate::status`]); until it is set they are ignored. Call again
    /// whenever the status changes: replies use the newest payload.
    pub fn set_status(&mut self, payload: &[u8]) -> Result<(), SendError> {
        if payload.len() > MAX_STATUS_PAYLOAD {
            return Err(SendError::TooLarge {
                len: payload.len(),
                max: MAX_STATUS_PAYLOAD,
            });
        }
        let status = self.status.get_or_insert_with(Vec::new);
        status.clear();
        status.extend_from_slice(payload);
        Ok(())
    }

    /// Refuses every new connection from now on, answering challenge and
    /// connect requests with `reason` (typically [`RejectReason::ShuttingDown`]
    /// or [`RejectReason::Restarting`]): a server on its way out must not
    /// accept a client that would then talk to an endpoint nobody pumps.
    /// Existing connections are untouched. Undone by
    /// [`Self::accept_connections`].
    pub fn refuse_connections(&mut self, reason: RejectReason) {
        self.refusing = Some(reason);
    }

    /// Accepts new connections again (after [`Self::refuse_connections`]).
    pub fn accept_connections(&mut self) {
        self.refusing = None;
    }

    /// Why new connections are refused, if they are.
    pub fn refusing(&self) -> Option<RejectReason> {
        self.refusing
    }

    /// The sizes of the endpoint's internal tables.
    pub fn table_sizes(&self) -> TableSizes {
        TableSizes {
            slots: self.slots.len(),
            connections: self.slots.iter().filter(|s| s.conn.is_some()).count(),
            by_addr: self.by_addr.len(),
            by_client: self.by_client.len(),
            outgoing: self.outgoing.len(),
            events: self.events.len(),
            used_cookies: self.used_cookies.len(),
        }
    }

    /// A connection by id (`None` once it is closed and its events were read).
    pub fn connection(&self, id: ConnectionId) -> Option<&Connection> {
        let slot = self.slots.get(id.index as usize)?;
        (slot.generation == id.generation)
            .then_some(slot.conn.as_ref())
            .flatten()
    }

    /// A connection by id, to queue data or change rates.
    pub fn connection_mut(&mut self, id: ConnectionId) -> Option<&mut Connection> {
        let slot = self.slots.get_mut(id.index as usize)?;
        if slot.generation != id.generation {
            return None;
        }
        slot.conn.as_mut()
    }

    /// Ids of all live connections.
    pub fn connections(&self) -> impl Iterator<Item = ConnectionId> + '_ {
        self.slots
            .iter()
            .filter_map(|s| s.conn.as_ref().map(|c| c.id()))
    }

    /// The connection to or from `addr`, if any.
    pub fn connection_by_addr(&self, addr: SocketAddr) -> Option<ConnectionId> {
        self.by_addr.get(&addr).copied()
    }

    /// Gives a buffer from an event back, so later events reuse it.
    pub fn recycle(&mut self, buf: Vec<u8>) {
        self.pool.give(buf);
    }

    /// Starts an orderly close: the peer is told (a few times, unreliably)
    /// and [`Event::Disconnected`] follows with [`DisconnectReason::Local`].
    pub fn disconnect(&mut self, id: ConnectionId, code: u8) {
        if let Some(c) = self.connection_mut(id) {
            c.disconnect(code);
        }
    }

    fn insert(&mut self, make: impl FnOnce(ConnectionId) -> Connection) -> ConnectionId {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot::default());
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[index as usize];
        let id = ConnectionId {
            index,
            generation: slot.generation,
        };
        let conn = make(id);
        self.by_addr.insert(conn.remote_addr(), id);
        if conn.role() == Role::Server {
            self.by_client
                .insert((conn.remote_addr().ip(), conn.client_id()), id);
        }
        slot.conn = Some(conn);
        id
    }

    /// Starts connecting to a server.
    pub fn connect(
        &mut self,
        now: Instant,
        server: SocketAddr,
        options: ConnectOptions,
    ) -> Result<ConnectionId, ConnectError> {
        self.now = now;
        if self.by_addr.contains_key(&server) {
            return Err(ConnectError::AlreadyConnected);
        }
        if options.encrypt && self.config.psk.is_none() {
            return Err(ConnectError::MissingKey);
        }
        let mut wanted = 0;
        if options.compress && self.config.compressor.is_some() {
            wanted |= OPT_COMPRESS;
        }
        if options.encrypt {
            wanted |= OPT_ENCRYPT;
        }
        let handshake = ClientHandshake {
            cookie: None,
            next_send: now,
            interval: self.config.handshake_retry,
            max_interval: self.config.handshake_retry_max,
            connect_attempts: 0,
            connect_sent_at: None,
            deadline: now + self.config.connect_timeout,
            version: self.config.protocol_version,
            schema: self.config.schema_fingerprint,
            psk: self.config.psk.clone(),
        };
        let config = self.config.connection.clone();
        Ok(self.insert(|id| {
            let mut c = Connection::new(id, Role::Client, now, server, options.client_id, config);
            c.set_options(wanted, None);
            c.handshake = Some(handshake);
            c
        }))
    }

    fn millis(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.epoch).as_millis() as u64
    }

    /// Queues a connectionless response; `false` when the queue is full and
    /// it was dropped (answers are bounded, not the traffic that asks for them).
    fn queue_response(&mut self, to: SocketAddr, packet: Handshake) -> bool {
        if self.outgoing.len() >= MAX_OUTGOING {
            return false;
        }
        let mut buf = [0u8; 64];
        match packet.write(&mut buf) {
            Ok(len) => {
                self.outgoing.push_back((to, buf, len));
                true
            }
            Err(_) => false,
        }
    }

    /// Feeds one received datagram and says what became of it. Malformed or
    /// unwanted input is dropped without a reply and counted by reason in
    /// [`EndpointMetrics::rejected`].
    pub fn handle(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) -> HandleOutcome {
        self.now = now;
        self.metrics.datagrams_received += 1;
        self.metrics.bytes_received += datagram.len() as u64;
        let outcome = self.classify(now, from, datagram);
        if let HandleOutcome::Rejected(reason) = outcome {
            self.metrics.rejected.add(reason);
        }
        outcome
    }

    fn classify(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) -> HandleOutcome {
        if datagram.len() > MAX_DATAGRAM {
            return HandleOutcome::Rejected(DropReason::Oversize);
        }
        match packet_type(datagram) {
            Ok(TYPE_DATA) => self.handle_data(now, from, datagram),
            Ok(TYPE_STATUS_REQUEST) => self.handle_status(now, from, datagram),
            Ok(_) => match Handshake::parse(datagram) {
                Ok(packet) => self.handle_handshake(now, from, packet, datagram.len()),
                Err(e) => HandleOutcome::Rejected(DropReason::of_decode(&e)),
            },
            Err(e) => HandleOutcome::Rejected(DropReason::of_decode(&e)),
        }
    }

    fn handle_data(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) -> HandleOutcome {
        let header = match DataHeader::parse(datagram) {
            Ok((header, _)) => header,
            Err(e) => return HandleOutcome::Rejected(DropReason::of_decode(&e)),
        };
        let unknown = HandleOutcome::Rejected(DropReason::UnknownConnection);
        let (id, migrated) = match self.by_addr.get(&from) {
            Some(&id) => (id, false),
            None => match self.by_client.get(&(from.ip(), header.client_id)) {
                Some(&id) => (id, true),
                None => {
                    self.answer_unknown(from, header.client_id);
                    return unknown;
                }
            },
        };
        let Some(conn) = self
            .slots
            .get_mut(id.index as usize)
            .and_then(|slot| slot.conn.as_mut())
        else {
            return unknown;
        };
        if conn.client_id() != header.client_id {
            return unknown;
        }
        let mut scratch = Scratch {
            a: &mut self.scratch_a,
            b: &mut self.scratch_b,
            pool: &mut self.pool,
            compressor: self.config.compressor.as_deref(),
        };
        let result = conn.handle_data(now, header, datagram, &mut scratch);
        if migrated && result.is_ok() {
            // Quake 3's qport: same client, same IP, new port after a NAT rebinding.
            let old = conn.remote_addr();
            conn.set_remote(from);
            self.by_addr.remove(&old);
            self.by_addr.insert(from, id);
            self.metrics.migrations += 1;
        }
        self.drain_events(id);
        match result {
            Ok(()) => HandleOutcome::Data(id),
            Err(reason) => HandleOutcome::Rejected(reason),
        }
    }

    /// Tells the sender of data for a connection this server does not hold
    /// (it restarted, or closed it unheard), when the server is configured to
    /// ([`ServerConfig::unknown_connection_replies`]) and the sender is
    /// within its limits.
    fn answer_unknown(&mut self, from: SocketAddr, client_id: u32) {
        let now = self.now;
        let Some(limiter) = self.unknown_limiter.as_mut() else {
            return;
        };
        if limiter.allow(now, from.ip()).is_err() {
            return;
        }
        let reject = Handshake::Reject {
            client_id,
            reason: RejectReason::UnknownConnection,
        };
        if self.queue_response(from, reject) {
            self.metrics.unknown_connection_replies += 1;
        }
    }

    fn handle_status(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) -> HandleOutcome {
        let request = match StatusRequest::parse(datagram) {
            Ok(request) => request,
            Err(e) => return HandleOutcome::Rejected(DropReason::of_decode(&e)),
        };
        if self.config.server.is_none() || self.status.is_none() {
            return HandleOutcome::Rejected(DropReason::Unexpected);
        }
        if self.status_out.len() >= MAX_STATUS_OUTGOING
            || self.status_limiter.allow(now, from.ip()).is_err()
        {
            self.metrics.status_rate_limited += 1;
            return HandleOutcome::Rejected(DropReason::RateLimited);
        }
        self.status_out.push_back((from, request));
        HandleOutcome::Status
    }

    fn handle_handshake(
        &mut self,
        now: Instant,
        from: SocketAddr,
        packet: Handshake,
        len: usize,
    ) -> HandleOutcome {
        match packet {
            Handshake::ChallengeRequest { client_id } => {
                if self.config.server.is_none() {
                    return HandleOutcome::Rejected(DropReason::Unexpected);
                }
                if let Some(reason) = self.refusing {
                    // No cookie: this server takes nobody new. The reject is
                    // smaller than the padded request, so it amplifies nothing.
                    let reject = Handshake::Reject { client_id, reason };
                    if !self.queue_response(from, reject) {
                        return HandleOutcome::Rejected(DropReason::RateLimited);
                    }
                    self.metrics.refused += 1;
                    return HandleOutcome::Refused(reason);
                }
                let cookie = self.cookie_key.issue(from, client_id, self.millis(now));
                let response = Handshake::ChallengeResponse { client_id, cookie };
                debug_assert!(crate::handshake::CHALLENGE_RESPONSE_LEN <= len);
                if !self.queue_response(from, response) {
                    return HandleOutcome::Rejected(DropReason::RateLimited);
                }
                self.metrics.challenges_answered += 1;
                HandleOutcome::Challenged
            }
            Handshake::Connect(request) => self.handle_connect(now, from, request),
            Handshake::ChallengeResponse { .. }
            | Handshake::Accept { .. }
            | Handshake::Reject { .. } => {
                let Some(&id) = self.by_addr.get(&from) else {
                    return HandleOutcome::Rejected(DropReason::UnknownConnection);
                };
                let used = match self.connection_mut(id) {
                    Some(conn) if conn.role() == Role::Client => conn.handle_handshake(now, packet),
                    _ => false,
                };
                self.drain_events(id);
                if used {
                    HandleOutcome::Handshake(id)
                } else {
                    HandleOutcome::Rejected(DropReason::Unexpected)
                }
            }
        }
    }

    fn handle_connect(
        &mut self,
        now: Instant,
        from: SocketAddr,
        req: ConnectRequest,
    ) -> HandleOutcome {
        let Some(server) = self.config.server.clone() else {
            return HandleOutcome::Rejected(DropReason::Unexpected);
        };
        let lifetime = server.cookie_lifetime.as_millis() as u64;
        // A retry of a connect we already accepted: answer again, create nothing.
        if let Some(&id) = self.by_addr.get(&from) {
            if let Some(conn) = self.connection(id) {
                if conn.role() == Role::Server
                    && conn.client_id() == req.client_id
                    && conn.cookie_mac == req.cookie.mac
                {
                    let accept = self.accept_packet(conn);
                    if !self.queue_response(from, accept) {
                        return HandleOutcome::Rejected(DropReason::RateLimited);
                    }
                    if let Some(conn) = self.connection_mut(id) {
                        conn.set_accepted_at(None);
                    }
                    return HandleOutcome::AcceptRepeated(id);
                }
            }
        }
        match self
            .cookie_key
            .verify(&req.cookie, from, req.client_id, self.millis(now), lifetime)
        {
            Ok(()) => {}
            Err(CookieError::Forged) => return HandleOutcome::Rejected(DropReason::BadCookie),
            Err(CookieError::Replayed) => {
                return HandleOutcome::Rejected(DropReason::ReplayedCookie)
            }
            Err(CookieError::Expired | CookieError::FromTheFuture) => {
                return HandleOutcome::Rejected(DropReason::ExpiredCookie)
            }
        }
        while self
            .used_cookies
            .front()
            .is_some_and(|(_, expiry)| *expiry <= now)
        {
            self.used_cookies.pop_front();
        }
        if self
            .used_cookies
            .iter()
            .any(|(mac, _)| *mac == req.cookie.mac)
        {
            return HandleOutcome::Rejected(DropReason::ReplayedCookie);
        }
        // The address is proven from here on, so a reject may be sent.
        let wants_encrypt = req.options & OPT_ENCRYPT != 0;
        let reason = if let Some(refusing) = self.refusing {
            Some(refusing)
        } else if req.version != self.config.protocol_version {
            Some(RejectReason::VersionMismatch)
        } else if req.schema != self.config.schema_fingerprint {
            Some(RejectReason::SchemaMismatch)
        } else if wants_encrypt && self.config.psk.is_none() {
            Some(RejectReason::EncryptionUnavailable)
        } else if server.require_encryption && !wants_encrypt {
            Some(RejectReason::EncryptionRequired)
        } else {
            // A client starting over from the same address replaces its old
            // connection below, so that one does not count against the limits
            // (else a full server would lock out a client whose accepts were lost).
            let replaced = self.by_addr.get(&from).copied();
            let mut live = 0;
            let mut pending = 0;
            for c in self.slots.iter().filter_map(|s| s.conn.as_ref()) {
                if c.role() == Role::Server
                    && c.phase() != Phase::Closed
                    && Some(c.id()) != replaced
                {
                    live += 1;
                    pending += usize::from(c.phase() == Phase::Pending);
                }
            }
            if live >= server.max_clients
                || pending >= server.max_pending
                || self.used_cookies.len() >= MAX_USED_COOKIES
            {
                Some(RejectReason::ServerFull)
            } else {
                None
            }
        };
        if let Some(reason) = reason {
            let reject = Handshake::Reject {
                client_id: req.client_id,
                reason,
            };
            if !self.queue_response(from, reject) {
                return HandleOutcome::Rejected(DropReason::RateLimited);
            }
            self.metrics.refused += 1;
            return HandleOutcome::Refused(reason);
        }
        // A client reconnecting from the same address replaces its old connection.
        if let Some(&old) = self.by_addr.get(&from) {
            if let Some(c) = self.connection_mut(old) {
                c.close(
                    DisconnectReason::Peer(crate::connection::codes::NORMAL),
                    false,
                );
            }
            self.drain_events(old);
            self.remove(old);
        }
        self.used_cookies
            .push_back((req.cookie.mac, now + server.cookie_lifetime));
        let session_nonce = self.next_session_nonce();
        let mut options = req.options & (OPT_COMPRESS | OPT_ENCRYPT);
        if !server.allow_compression || self.config.compressor.is_none() {
            options &= !OPT_COMPRESS;
        }
        let cipher = match (&self.config.psk, options & OPT_ENCRYPT != 0) {
            (Some(psk), true) => Some(SessionCipher::derive(
                psk,
                &session_nonce,
                req.client_id,
                Direction::ToClient,
            )),
            _ => None,
        };
        let config = self.config.connection.clone();
        let id = self.insert(|id| {
            let mut c = Connection::new(id, Role::Server, now, from, req.client_id, config);
            c.set_options(options, cipher);
            c.set_peer_rate(req.rate);
            c.cookie_mac = req.cookie.mac;
            c.session_nonce = session_nonce;
            c.set_pending_deadline(now + server.pending_timeout);
            c.set_accepted_at(Some(now));
            c
        });
        self.metrics.accepted += 1;
        if let Some(conn) = self.connection(id) {
            let accept = self.accept_packet(conn);
            // A full queue loses this accept; the client's retry gets another.
            self.queue_response(from, accept);
        }
        HandleOutcome::Accepted(id)
    }

    fn accept_packet(&self, conn: &Connection) -> Handshake {
        let mut options = 0;
        if conn.is_compressed() {
            options |= OPT_COMPRESS;
        }
        if conn.is_encrypted() {
            options |= OPT_ENCRYPT;
        }
        Handshake::Accept {
            client_id: conn.client_id(),
            options,
            session_nonce: conn.session_nonce,
            rate: self.config.connection.receive_rate.sanitized(),
        }
    }

    /// Unique per connection for this secret: a keyed hash of a counter.
    fn next_session_nonce(&mut self) -> [u8; 12] {
        self.nonce_counter += 1;
        let mut h = SipHasher24::new_with_key(&self.nonce_key);
        h.write_u64(self.nonce_counter);
        let full = h.finish128().as_bytes();
        let mut nonce = [0u8; 12];
        nonce.copy_from_slice(&full[..12]);
        nonce
    }

    fn drain_events(&mut self, id: ConnectionId) {
        if let Some(slot) = self.slots.get_mut(id.index as usize) {
            if let Some(conn) = slot.conn.as_mut() {
                self.events.extend(conn.events.drain(..));
            }
        }
    }

    fn remove(&mut self, id: ConnectionId) {
        let Some(slot) = self.slots.get_mut(id.index as usize) else {
            return;
        };
        if slot.generation != id.generation {
            return;
        }
        if let Some(conn) = slot.conn.take() {
            if self.by_addr.get(&conn.remote_addr()) == Some(&id) {
                self.by_addr.remove(&conn.remote_addr());
            }
            let key = (conn.remote_addr().ip(), conn.client_id());
            if self.by_client.get(&key) == Some(&id) {
                self.by_client.remove(&key);
            }
            slot.generation = slot.generation.wrapping_add(1);
            self.free.push(id.index);
        }
    }

    /// Advances every connection's timers. Call when [`Self::poll_timeout`] passes
    /// (calling more often is harmless).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.now = now;
        for index in 0..self.slots.len() {
            let Some(conn) = self.slots[index].conn.as_mut() else {
                continue;
            };
            conn.handle_timeout(now);
            let id = conn.id();
            self.drain_events(id);
        }
        self.collect_finished();
    }

    fn collect_finished(&mut self) {
        for index in 0..self.slots.len() {
            let finished = self.slots[index]
                .conn
                .as_ref()
                .filter(|c| c.is_finished())
                .map(|c| c.id());
            if let Some(id) = finished {
                self.remove(id);
            }
        }
    }

    fn count_sent(&mut self, len: usize) {
        self.metrics.datagrams_sent += 1;
        self.metrics.bytes_sent += len as u64;
        self.metrics.largest_datagram_sent = self.metrics.largest_datagram_sent.max(len);
    }

    /// The next datagram to send, written into `buf`.
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        buf: &mut [u8; MAX_DATAGRAM],
    ) -> Option<Transmit> {
        self.now = now;
        if let Some((to, bytes, len)) = self.outgoing.pop_front() {
            buf[..len].copy_from_slice(&bytes[..len]);
            self.count_sent(len);
            return Some(Transmit {
                destination: to,
                len,
            });
        }
        if let Some((to, request)) = self.status_out.pop_front() {
            let payload = self.status.as_deref().unwrap_or_default();
            let reply = StatusReply::answer(&request, payload);
            // Cannot fail: the reply is at most the request's length, which
            // is at most MAX_DATAGRAM.
            if let Ok(len) = reply.write(buf) {
                debug_assert!(len <= request.len);
                match reply {
                    StatusReply::Status { .. } => self.metrics.status_answered += 1,
                    StatusReply::TooLarge { .. } => self.metrics.status_too_large += 1,
                }
                self.count_sent(len);
                return Some(Transmit {
                    destination: to,
                    len,
                });
            }
        }
        let n = self.slots.len();
        for step in 0..n {
            let index = (self.round_robin + step) % n;
            let cap = match self.total_limiter.as_mut() {
                Some(l) => l.available(now),
                None => MAX_DATAGRAM,
            };
            if cap < MIN_BUDGET {
                break;
            }
            let Some(conn) = self.slots[index].conn.as_mut() else {
                continue;
            };
            let mut scratch = Scratch {
                a: &mut self.scratch_a,
                b: &mut self.scratch_b,
                pool: &mut self.pool,
                compressor: self.config.compressor.as_deref(),
            };
            let sent = conn.poll_transmit(now, cap, buf, &mut scratch);
            let destination = conn.remote_addr();
            let id = conn.id();
            self.drain_events(id);
            if let Some(len) = sent {
                if let Some(l) = self.total_limiter.as_mut() {
                    l.consume(now, len);
                }
                self.round_robin = (index + 1) % n;
                self.count_sent(len);
                return Some(Transmit { destination, len });
            }
        }
        self.collect_finished();
        None
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        if self.events.is_empty() {
            // Events raised by calls on a connection (e.g. an overflow in
            // `send_ordered`) wait in the connection until now.
            for slot in &mut self.slots {
                if let Some(conn) = slot.conn.as_mut() {
                    self.events.extend(conn.events.drain(..));
                }
            }
        }
        self.events.pop_front()
    }

    /// The earliest time [`Self::handle_timeout`] or [`Self::poll_transmit`] has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.outgoing.is_empty() || !self.status_out.is_empty() {
            return Some(self.now);
        }
        let mut earliest = self
            .slots
            .iter()
            .filter_map(|s| s.conn.as_ref())
            .filter_map(|c| c.poll_timeout(self.now))
            .min();
        if let (Some(t), Some(limiter)) = (earliest, self.total_limiter.as_ref()) {
            earliest = Some(t.max(limiter.ready_at(MIN_BUDGET)));
        }
        earliest
    }
}
