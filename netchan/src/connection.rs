//! One connection's state machine: handshake phase, sequencing, notify,
//! the four delivery classes, rate limiting and the optional layers.
//!
//! A [`Connection`] never touches a socket or a clock. The [`crate::Endpoint`]
//! that owns it hands it the current time and the datagrams addressed to it,
//! and asks it for datagrams to send and for its next deadline. The
//! application reaches it through [`crate::Endpoint::connection_mut`] to queue
//! data and read metrics.

use std::collections::{BinaryHeap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::compress::Compressor;
pub use crate::config::ConnectionConfig;
use crate::crypto::{Direction, PresharedKey, SessionCipher, TAG_LEN};
use crate::error::SendError;
pub use crate::event::{codes, DisconnectReason, Event};
use crate::fragment::ReassemblyLimits;
use crate::handshake::{
    ConnectRequest, Cookie, Handshake, RejectReason, OPT_COMPRESS, OPT_ENCRYPT,
};
use crate::metrics::Metrics;
use crate::notify::{RttEstimator, SentTracker};
use crate::outcome::DropReason;
use crate::packet::{
    validate_body, Chunk, Chunks, DataHeader, Writer, DISCONNECT_CHUNK_LEN, EVENT_CHUNK_OVERHEAD,
    FLAG_COMPRESSED, FLAG_HAS_ACK, FRAG_CHUNK_OVERHEAD, HEADER_LEN, MAX_DATAGRAM, RATE_CHUNK_LEN,
    WHOLE_CHUNK_OVERHEAD,
};
use crate::pool::BufPool;
use crate::rate::{RateAnnounce, RateLimiter, MIN_BUDGET};
use crate::reliable::{
    OrderedLimits, OrderedOutcome, OrderedReceiver, OrderedSender, QuickestReceiver, QuickestSender,
};
use crate::sequence::{extend, Membership, SeqWindow};
use crate::state::{StateId, StateReceiver, StateSender};

/// Largest guaranteed-quickest item: small enough that one always fits in
/// the smallest datagram budget ([`MIN_BUDGET`]) with header and tag.
pub const MAX_QUICKEST_ITEM: usize = MIN_BUDGET - HEADER_LEN - TAG_LEN - WHOLE_CHUNK_OVERHEAD;

/// Largest unguaranteed event: events are never fragmented.
pub const MAX_EVENT: usize = MAX_DATAGRAM - HEADER_LEN - TAG_LEN - EVENT_CHUNK_OVERHEAD;

/// Connect requests sent with one cookie before asking for a fresh one. With
/// the retry interval doubling from about an RTT to its 1 s cap, eight tries
/// span about as long as the server keeps an accepted connection pending
/// (5 s): enough for one to get through at 30% loss each way (a round trip
/// fails with probability 0.51, eight in a row with 0.5%), and a fresh
/// cookie is asked for only once the server may have given up.
const CONNECT_ATTEMPTS_PER_COOKIE: u32 = 8;

/// Number of datagrams that carry a disconnect notice, for some chance of one arriving.
const DISCONNECT_REPEATS: u8 = 3;

/// Identifies a connection within its endpoint. Stale ids (of closed
/// connections) never match a newer connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

/// Which side of the handshake a connection is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// It called [`crate::Endpoint::connect`].
    Client,
    /// It was accepted by a server endpoint.
    Server,
}

/// Where a connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Client: asking for a cookie.
    Challenging,
    /// Client: sending the connect request.
    Connecting,
    /// Server: accepted, waiting for the client's first datagram.
    Pending,
    /// Data flows.
    Established,
    /// Sending disconnect notices.
    Closing,
    /// Finished; the endpoint removes it once its events are read.
    Closed,
}

/// Client handshake parameters fixed at connect time.
#[derive(Debug, Clone)]
pub(crate) struct ClientHandshake {
    pub cookie: Option<Cookie>,
    pub next_send: Instant,
    pub interval: Duration,
    pub max_interval: Duration,
    /// Connect requests sent with the current cookie.
    pub connect_attempts: u32,
    /// When the connect request went out, if it went out once only: its
    /// accept then measures a round trip (a resent request would make the
    /// sample ambiguous, as Karn's algorithm says).
    pub connect_sent_at: Option<Instant>,
    pub deadline: Instant,
    pub version: u32,
    pub schema: u64,
    pub psk: Option<PresharedKey>,
}

#[derive(Debug, PartialEq, Eq)]
struct QueuedEvent {
    priority: u8,
    order: std::cmp::Reverse<u64>,
    data: Vec<u8>,
}

impl Ord for QueuedEvent {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.priority, self.order).cmp(&(other.priority, other.order))
    }
}

impl PartialOrd for QueuedEvent {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// Shared scratch space the endpoint lends to a connection for one call.
pub(crate) struct Scratch<'a> {
    pub a: &'a mut [u8; MAX_DATAGRAM],
    pub b: &'a mut [u8; MAX_DATAGRAM],
    pub pool: &'a mut BufPool,
    pub compressor: Option<&'a dyn Compressor>,
}

/// One connection. Reached through [`crate::Endpoint::connection`] and
/// [`crate::Endpoint::connection_mut`].
#[derive(Debug)]
pub struct Connection {
    id: ConnectionId,
    role: Role,
    phase: Phase,
    remote: SocketAddr,
    client_id: u32,
    config: ConnectionConfig,
    /// Options asked for (client) or granted (both, once established).
    options: u8,
    cipher: Option<SessionCipher>,
    pub(crate) handshake: Option<ClientHandshake>,
    /// Server: the MAC of the cookie that created it (to answer connect retries).
    pub(crate) cookie_mac: [u8; 16],
    pub(crate) session_nonce: [u8; 12],
    pending_deadline: Instant,
    /// Server: when the accept went out, if only once: the client answers
    /// it at once, so its first datagram measures a round trip.
    accepted_at: Option<Instant>,
    announced: bool,

    seen: SeqWindow,
    acked: SeqWindow,
    ack_pending_since: Option<Instant>,
    last_received: Instant,
    last_sent: Option<Instant>,

    tracker: SentTracker,
    rtt: RttEstimator,
    limiter: RateLimiter,
    peer_rate: RateAnnounce,
    rate_pending: bool,
    rate_force: bool,

    ordered_tx: OrderedSender,
    ordered_rx: OrderedReceiver,
    quickest_tx: QuickestSender,
    quickest_rx: QuickestReceiver,
    quickest_resend: bool,
    state_tx: StateSender,
    state_rx: StateReceiver,
    unguaranteed: BinaryHeap<QueuedEvent>,
    unguaranteed_bytes: usize,
    unguaranteed_order: u64,
    deferred: Vec<QueuedEvent>,

    state_fragments: u64,
    closing_left: u8,
    disconnect_code: u8,
    pub(crate) events: VecDeque<Event>,
    /// Buffers for outgoing data (copies of what the application queues),
    /// returned here once acknowledged or sent.
    pool: BufPool,
    metrics: Metrics,
}

impl Connection {
    pub(crate) fn new(
        id: ConnectionId,
        role: Role,
        now: Instant,
        remote: SocketAddr,
        client_id: u32,
        config: ConnectionConfig,
    ) -> Self {
        let send_rate = config.send_rate.sanitized();
        let reassembly = config.reassembly();
        Self {
            id,
            role,
            phase: match role {
                Role::Client => Phase::Challenging,
                Role::Server => Phase::Pending,
            },
            remote,
            client_id,
            options: 0,
            cipher: None,
            handshake: None,
            cookie_mac: [0; 16],
            session_nonce: [0; 12],
            pending_deadline: now,
            accepted_at: None,
            announced: false,
            seen: SeqWindow::new(),
            acked: SeqWindow::new(),
            ack_pending_since: None,
            last_received: now,
            last_sent: None,
            tracker: SentTracker::new(),
            rtt: RttEstimator::new(config.initial_rtt),
            limiter: RateLimiter::new(
                now,
                send_rate.bytes_per_sec,
                Some(send_rate.packets_per_sec),
                0,
            ),
            peer_rate: RateAnnounce::UNLIMITED,
            rate_pending: false,
            rate_force: false,
            ordered_tx: OrderedSender::new(OrderedLimits {
                max_messages: config.ordered_max_messages,
                max_bytes: config.ordered_max_bytes,
                window: config.ordered_window,
            }),
            ordered_rx: OrderedReceiver::new(
                config.ordered_window,
                config.ordered_receive_bytes,
                reassembly,
            ),
            quickest_tx: QuickestSender::new(config.quickest_max_bytes),
            quickest_rx: QuickestReceiver::default(),
            quickest_resend: false,
            state_tx: StateSender::new(),
            state_rx: StateReceiver::new(ReassemblyLimits {
                // Most-recent state only ever needs the newest few payloads.
                max_partials: reassembly.max_partials.min(4),
                ..reassembly
            }),
            unguaranteed: BinaryHeap::new(),
            unguaranteed_bytes: 0,
            unguaranteed_order: 0,
            deferred: Vec::new(),
            state_fragments: 0,
            closing_left: 0,
            disconnect_code: codes::NORMAL,
            events: VecDeque::new(),
            pool: BufPool::new(256, config.max_message_size.max(MAX_DATAGRAM)),
            metrics: Metrics {
                send_rate: send_rate.bytes_per_sec as u64,
                ..Metrics::default()
            },
            config,
        }
    }

    // ----- public API -------------------------------------------------------

    /// This connection's id.
    pub fn id(&self) -> ConnectionId {
        self.id
    }

    /// Client or server side.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Where the connection is in its life.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// `true` once data can flow.
    pub fn is_established(&self) -> bool {
        self.phase == Phase::Established
    }

    /// The peer's current address (it may change when a NAT rebinds the client's port).
    pub fn remote_addr(&self) -> SocketAddr {
        self.remote
    }

    /// The client id (Quake 3's qport) of this connection.
    pub fn client_id(&self) -> u32 {
        self.client_id
    }

    /// Whether data datagrams are encrypted.
    pub fn is_encrypted(&self) -> bool {
        self.cipher.is_some()
    }

    /// Whether data datagram bodies may be compressed.
    pub fn is_compressed(&self) -> bool {
        self.options & OPT_COMPRESS != 0
    }

    /// Counters and gauges, updated in place.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Smoothed round-trip time.
    pub fn rtt(&self) -> Duration {
        self.rtt.srtt()
    }

    /// The rate the peer announced it can receive.
    pub fn peer_rate(&self) -> RateAnnounce {
        self.peer_rate
    }

    /// Data may be queued from the moment a connection exists (it waits for
    /// the handshake) until it starts closing.
    fn check_sendable(&self) -> Result<(), SendError> {
        match self.phase {
            Phase::Closing | Phase::Closed => Err(SendError::NotConnected),
            _ => Ok(()),
        }
    }

    /// Queues a guaranteed-ordered message (chat, kill feed, config changes).
    ///
    /// Messages queued before the handshake completes wait for it. If the
    /// queue bound is exceeded the connection closes with
    /// [`DisconnectReason::OrderedOverflow`]: silently losing a guaranteed
    /// message is never an option.
    pub fn send_ordered(&mut self, data: &[u8]) -> Result<(), SendError> {
        self.check_sendable()?;
        if data.len() > self.config.max_message_size {
            return Err(SendError::TooLarge {
                len: data.len(),
                max: self.config.max_message_size,
            });
        }
        // Copying into an owned buffer is unavoidable (the message must
        // outlive the call until acknowledged); `send_ordered_owned` takes a
        // pooled buffer instead.
        let data = self.pool.copy_of(data);
        self.send_ordered_owned(data)
    }

    /// Like [`Self::send_ordered`], taking ownership of the buffer (no copy).
    pub fn send_ordered_owned(&mut self, data: Vec<u8>) -> Result<(), SendError> {
        self.check_sendable()?;
        if data.len() > self.config.max_message_size {
            return Err(SendError::TooLarge {
                len: data.len(),
                max: self.config.max_message_size,
            });
        }
        if self.ordered_tx.push(data).is_err() {
            self.disconnect_code = codes::ORDERED_OVERFLOW;
            self.close(DisconnectReason::OrderedOverflow, true);
            return Err(SendError::OrderedOverflow);
        }
        self.metrics.ordered_queued += 1;
        self.refresh_gauges();
        Ok(())
    }

    /// Queues an unguaranteed event: sent at most once, higher `priority` first.
    /// When the queue is full the event is discarded and counted.
    pub fn send_unguaranteed(&mut self, data: &[u8], priority: u8) -> Result<(), SendError> {
        self.check_sendable()?;
        if data.len() > MAX_EVENT {
            return Err(SendError::TooLarge {
                len: data.len(),
                max: MAX_EVENT,
            });
        }
        if self.unguaranteed.len() >= self.config.unguaranteed_max_queue {
            self.metrics.unguaranteed_discarded += 1;
            return Ok(());
        }
        self.unguaranteed_order += 1;
        self.unguaranteed_bytes += data.len();
        self.unguaranteed.push(QueuedEvent {
            priority,
            order: std::cmp::Reverse(self.unguaranteed_order),
            data: self.pool.copy_of(data),
        });
        self.metrics.unguaranteed_queue_len = self.unguaranteed.len();
        Ok(())
    }

    /// Queues a guaranteed-quickest item (a player command): repeated in
    /// every datagram until one carrying it is acknowledged.
    pub fn send_quickest(&mut self, data: &[u8]) -> Result<(), SendError> {
        self.check_sendable()?;
        if data.len() > MAX_QUICKEST_ITEM {
            return Err(SendError::TooLarge {
                len: data.len(),
                max: MAX_QUICKEST_ITEM,
            });
        }
        let data = self.pool.copy_of(data);
        if let Err(data) = self.quickest_tx.push(data) {
            self.pool.give(data);
            return Err(SendError::QuickestFull);
        }
        self.metrics.quickest_queued += 1;
        self.metrics.quickest_queue_len = self.quickest_tx.len();
        Ok(())
    }

    /// The id the next [`send_state`](Self::send_state) payload gets: ids
    /// count the payloads from 0, so a layer above can number what it sends
    /// as the receiver will see it (the snapshot layer numbers snapshots so).
    pub fn next_state_id(&self) -> StateId {
        self.state_tx.next_id()
    }

    /// Hands over the most-recent-state payload (the snapshot) for the next
    /// datagram(s). An earlier payload not yet fully sent is abandoned and
    /// reported as [`Event::StateDropped`]. The returned id is reported
    /// exactly once as [`Event::StateDelivered`] or [`Event::StateDropped`].
    pub fn send_state(&mut self, data: &[u8]) -> Result<StateId, SendError> {
        if self.phase != Phase::Established {
            return Err(SendError::NotConnected);
        }
        if data.len() > self.config.max_message_size {
            return Err(SendError::TooLarge {
                len: data.len(),
                max: self.config.max_message_size,
            });
        }
        let data = self.pool.copy_of(data);
        let id = self.state_tx.submit(data, &mut self.pool);
        self.metrics.states_sent += 1;
        self.emit_state_reports();
        Ok(id)
    }

    /// Changes what we announce we can receive; the peer is told reliably.
    pub fn set_receive_rate(&mut self, rate: RateAnnounce) {
        self.config.receive_rate = rate.sanitized();
        self.rate_pending = true;
        self.rate_force = true;
    }

    /// Changes our own cap on what we send.
    pub fn set_send_rate(&mut self, rate: RateAnnounce) {
        self.config.send_rate = rate.sanitized();
        self.apply_rate();
    }

    // ----- endpoint-facing ----------------------------------------------------

    pub(crate) fn set_remote(&mut self, addr: SocketAddr) {
        self.remote = addr;
    }

    /// Server: the accept went out at `now` (`None`: it went out again, so
    /// the client's first datagram no longer measures a round trip).
    pub(crate) fn set_accepted_at(&mut self, now: Option<Instant>) {
        self.accepted_at = now;
    }

    pub(crate) fn set_pending_deadline(&mut self, deadline: Instant) {
        self.pending_deadline = deadline;
    }

    pub(crate) fn set_options(&mut self, options: u8, cipher: Option<SessionCipher>) {
        self.options = options;
        self.cipher = cipher;
    }

    pub(crate) fn set_peer_rate(&mut self, rate: RateAnnounce) {
        self.peer_rate = rate.sanitized();
        self.apply_rate();
    }

    fn apply_rate(&mut self) {
        let effective = self.config.send_rate.sanitized().min(self.peer_rate);
        self.limiter
            .set_rate(effective.bytes_per_sec, Some(effective.packets_per_sec), 0);
        self.metrics.send_rate = self.limiter.bytes_per_sec();
    }

    fn tag_len(&self) -> usize {
        if self.cipher.is_some() {
            TAG_LEN
        } else {
            0
        }
    }

    fn emit(&mut self, event: Event) {
        self.events.push_back(event);
    }

    /// Ends the connection, telling the application (and optionally the peer).
    pub(crate) fn close(&mut self, reason: DisconnectReason, notify_peer: bool) {
        if matches!(self.phase, Phase::Closing | Phase::Closed) {
            return;
        }
        // A server-side connection the application never heard of ends silently.
        let tell_app = self.role == Role::Client || self.announced;
        let was_established = self.phase == Phase::Established;
        self.phase = if notify_peer && was_established {
            self.closing_left = DISCONNECT_REPEATS;
            Phase::Closing
        } else {
            Phase::Closed
        };
        if tell_app {
            self.emit(Event::Disconnected {
                conn: self.id,
                reason,
            });
        }
    }

    /// Starts an orderly close with `code`.
    pub(crate) fn disconnect(&mut self, code: u8) {
        self.disconnect_code = code;
        self.close(DisconnectReason::Local(code), true);
    }

    fn establish(&mut self, now: Instant) {
        self.phase = Phase::Established;
        self.announced = true;
        self.last_received = now;
        self.emit(Event::Connected {
            conn: self.id,
            addr: self.remote,
        });
    }

    /// Client: a connectionless packet from the server.
    ///
    /// Returns `false` when the packet does not fit this connection's phase
    /// (or grants what was never asked for) and was ignored.
    pub(crate) fn handle_handshake(&mut self, now: Instant, packet: Handshake) -> bool {
        if let Handshake::Reject {
            client_id,
            reason: reason @ RejectReason::UnknownConnection,
        } = packet
        {
            // The server no longer holds this connection (it restarted, or
            // closed it and every notice was lost): waiting for the idle
            // timeout would only stall the client.
            if client_id == self.client_id && self.phase == Phase::Established {
                self.close(DisconnectReason::Rejected(reason), false);
                return true;
            }
            return false;
        }
        let Some(hs) = self.handshake.as_mut() else {
            return false;
        };
        match packet {
            Handshake::ChallengeResponse { client_id, cookie }
                if client_id == self.client_id && self.phase == Phase::Challenging =>
            {
                hs.cookie = Some(cookie);
                hs.connect_attempts = 0;
                hs.next_send = now;
                hs.interval = self.config.initial_rtt.max(Duration::from_millis(50));
                self.phase = Phase::Connecting;
            }
            Handshake::Accept {
                client_id,
                options,
                session_nonce,
                rate,
            } if client_id == self.client_id && self.phase == Phase::Connecting => {
                let round_trip = hs.connect_sent_at.map(|t| now.saturating_duration_since(t));
                // The server may only grant what was asked for.
                if options & !self.options != 0
                    || (self.options & OPT_ENCRYPT) != (options & OPT_ENCRYPT)
                {
                    return false;
                }
                let cipher = match (&hs.psk, options & OPT_ENCRYPT != 0) {
                    (Some(psk), true) => Some(SessionCipher::derive(
                        psk,
                        &session_nonce,
                        client_id,
                        Direction::ToServer,
                    )),
                    _ => None,
                };
                self.options = options;
                self.cipher = cipher;
                self.session_nonce = session_nonce;
                self.set_peer_rate(rate);
                // The first RTT sample (see `accepted_at` for the server's).
                if let Some(rtt) = round_trip {
                    self.rtt.sample(rtt);
                }
                self.establish(now);
                // The server waits for our first datagram: send one at once.
                self.last_sent = None;
            }
            // A refusing server (shutting down, restarting) answers the
            // challenge itself with a reject.
            Handshake::Reject { client_id, reason }
                if client_id == self.client_id
                    && matches!(self.phase, Phase::Challenging | Phase::Connecting) =>
            {
                self.close(DisconnectReason::Rejected(reason), false);
            }
            _ => return false,
        }
        true
    }

    /// Handles a data datagram already matched to this connection.
    pub(crate) fn handle_data(
        &mut self,
        now: Instant,
        header: DataHeader,
        datagram: &[u8],
        scratch: &mut Scratch<'_>,
    ) -> Result<(), DropReason> {
        if !matches!(self.phase, Phase::Established | Phase::Pending) {
            return Err(DropReason::Unexpected);
        }
        let reference = self.seen.newest().unwrap_or(0);
        let seq = extend(reference, header.seq);
        match self.seen.membership(seq) {
            Membership::New => {}
            Membership::Present => {
                self.metrics.duplicates_received += 1;
                return Err(DropReason::Duplicate);
            }
            Membership::TooOld => {
                self.metrics.stale_received += 1;
                return Err(DropReason::Stale);
            }
        }
        // Decrypt (authenticating header and body) before trusting anything.
        let body: &[u8] = match &self.cipher {
            Some(cipher) => {
                if datagram.len() < HEADER_LEN + TAG_LEN {
                    self.metrics.auth_failures += 1;
                    return Err(DropReason::Decryption);
                }
                let (head, rest) = datagram.split_at(HEADER_LEN);
                let (sealed, tag) = rest.split_at(rest.len() - TAG_LEN);
                let buf = &mut scratch.a[..sealed.len()];
                buf.copy_from_slice(sealed);
                if cipher.open(seq, head, buf, tag).is_err() {
                    self.metrics.auth_failures += 1;
                    return Err(DropReason::Decryption);
                }
                &scratch.a[..sealed.len()]
            }
            None => &datagram[HEADER_LEN..],
        };
        let body: &[u8] = if header.flags & FLAG_COMPRESSED != 0 {
            let Some(compressor) = scratch.compressor.filter(|_| self.is_compressed()) else {
                self.metrics.malformed_received += 1;
                return Err(DropReason::BadBody);
            };
            match compressor.decompress(body, &mut scratch.b[..]) {
                Ok(n) => &scratch.b[..n],
                Err(_) => {
                    self.metrics.malformed_received += 1;
                    return Err(DropReason::BadBody);
                }
            }
        } else {
            body
        };
        if validate_body(body).is_err() {
            self.metrics.malformed_received += 1;
            return Err(DropReason::BadBody);
        }

        // Accepted: the datagram counts from here on.
        self.seen.insert(seq);
        self.last_received = now;
        self.metrics.datagrams_received += 1;
        self.metrics.bytes_received += datagram.len() as u64;
        if self.phase == Phase::Pending {
            // The first RTT sample: without it the first drop timeouts
            // would assume `initial_rtt` and hold lost messages longer.
            if let Some(accepted) = self.accepted_at.take() {
                self.rtt.sample(now.saturating_duration_since(accepted));
            }
            self.establish(now);
        }
        if header.flags & FLAG_HAS_ACK != 0 {
            let ack = extend(self.tracker.next_seq().saturating_sub(1), header.ack);
            // QUIC's time threshold: a datagram is only presumed lost by
            // reordering once it is older than 9/8 of the RTT.
            let min_age = self.rtt.srtt().max(self.rtt.latest()) * 9 / 8;
            match self.tracker.on_ack(
                ack,
                header.ack_bits,
                self.config.reorder_threshold,
                now,
                min_age,
            ) {
                Ok(Some(sent_at)) => self.rtt.sample(now.saturating_duration_since(sent_at)),
                Ok(None) => {}
                Err(_) => self.metrics.malformed_received += 1,
            }
        }

        let mut refused = false;
        let mut eliciting = false;
        let id = self.id;
        for chunk in Chunks::new(body) {
            let Ok(chunk) = chunk else { break };
            eliciting = true;
            match chunk {
                Chunk::Ordered {
                    id: mid,
                    total,
                    offset,
                    data,
                } => {
                    if data.len() as u64 != total as u64 {
                        self.metrics.fragments_received += 1;
                    }
                    let events = &mut self.events;
                    let outcome =
                        self.ordered_rx
                            .on_chunk(mid, total, offset, data, scratch.pool, |m| {
                                events.push_back(Event::Message { conn: id, data: m })
                            });
                    match outcome {
                        OrderedOutcome::Accepted | OrderedOutcome::Duplicate => {}
                        OrderedOutcome::Refused => refused = true,
                        OrderedOutcome::Malformed(_) | OrderedOutcome::OutOfWindow => {
                            self.metrics.malformed_received += 1
                        }
                    }
                }
                Chunk::Quickest { id: qid, data } => {
                    if self.quickest_rx.accept(qid).is_some() {
                        self.metrics.quickest_delivered += 1;
                        let data = scratch.pool.copy_of(data);
                        self.emit(Event::Quickest { conn: id, data });
                    }
                }
                Chunk::State {
                    id: sid,
                    total,
                    offset,
                    data,
                } => {
                    if data.len() as u64 != total as u64 {
                        self.metrics.fragments_received += 1;
                    }
                    match self
                        .state_rx
                        .on_chunk(sid, total, offset, data, scratch.pool)
                    {
                        Ok(Some((sid, data))) => {
                            self.metrics.states_received += 1;
                            self.emit(Event::State {
                                conn: id,
                                id: sid,
                                data,
                            });
                        }
                        Ok(None) => {}
                        Err(_) => self.metrics.malformed_received += 1,
                    }
                }
                Chunk::Event { data } => {
                    self.metrics.unguaranteed_received += 1;
                    let data = scratch.pool.copy_of(data);
                    self.emit(Event::Unguaranteed { conn: id, data });
                }
                Chunk::Rate(rate) => self.set_peer_rate(rate),
                Chunk::Disconnect { reason } => {
                    self.close(DisconnectReason::Peer(reason), false);
                    return Ok(());
                }
            }
        }
        if refused {
            self.metrics.refused_received += 1;
        } else {
            self.acked.insert(seq);
            if eliciting && self.ack_pending_since.is_none() {
                self.ack_pending_since = Some(now);
            }
        }
        self.process_notifications();
        Ok(())
    }

    fn process_notifications(&mut self) {
        while let Some((record, delivered)) = self.tracker.pop_resolved() {
            if delivered {
                self.metrics.datagrams_delivered += 1;
            } else {
                self.metrics.datagrams_dropped += 1;
            }
            // Exponential average over ~32 datagrams.
            let sample = if delivered { 0.0 } else { 1.0 };
            self.metrics.loss += (sample - self.metrics.loss) / 32.0;
            for &(mid, offset) in &record.ordered {
                self.ordered_tx
                    .on_notify(mid, offset, delivered, &mut self.pool);
            }
            if let Some(sid) = record.state {
                self.state_tx.on_notify(sid, delivered);
            }
            if let Some(max) = record.quickest_max {
                if delivered {
                    self.quickest_tx.on_delivered(max, &mut self.pool);
                } else {
                    self.quickest_resend = true;
                }
            }
            if record.rate_announce {
                if delivered {
                    self.rate_pending = false;
                } else if self.rate_pending {
                    self.rate_force = true;
                }
            }
            if self.config.datagram_notify_events {
                self.events.push_back(Event::Notify {
                    conn: self.id,
                    seq: record.seq,
                    delivered,
                });
            }
            self.tracker.recycle(record);
        }
        self.emit_state_reports();
        self.refresh_gauges();
    }

    fn emit_state_reports(&mut self) {
        while let Some((sid, delivered)) = self.state_tx.pop_resolved() {
            if delivered {
                self.metrics.states_delivered += 1;
                self.events.push_back(Event::StateDelivered {
                    conn: self.id,
                    id: sid,
                });
            } else {
                self.metrics.states_dropped += 1;
                self.events.push_back(Event::StateDropped {
                    conn: self.id,
                    id: sid,
                });
            }
        }
    }

    fn refresh_gauges(&mut self) {
        let m = &mut self.metrics;
        m.rtt = self.rtt.srtt();
        m.rtt_var = self.rtt.rttvar();
        m.ordered_queue_len = self.ordered_tx.len();
        m.ordered_queue_bytes = self.ordered_tx.queued_bytes();
        m.ordered_in_flight = self.ordered_tx.in_flight();
        m.ordered_acked = self.ordered_tx.acked;
        m.ordered_delivered = self.ordered_rx.delivered;
        m.resends = self.ordered_tx.resends;
        m.fragments_sent = self.ordered_tx.fragments + self.state_fragments;
        m.unguaranteed_queue_len = self.unguaranteed.len();
        m.quickest_queue_len = self.quickest_tx.len();
        m.datagrams_in_flight = self.tracker.in_flight();
        m.partial_messages = self.ordered_rx.partials() + self.state_rx.partials();
    }

    /// Advances timers: handshake and idle timeouts, notify drop deadlines.
    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        match self.phase {
            Phase::Challenging | Phase::Connecting => {
                if self.handshake.as_ref().is_some_and(|h| now >= h.deadline) {
                    self.close(DisconnectReason::HandshakeTimedOut, false);
                }
            }
            Phase::Pending => {
                if now >= self.pending_deadline {
                    self.close(DisconnectReason::HandshakeTimedOut, false);
                }
            }
            Phase::Established => {
                if now >= self.last_received + self.config.idle_timeout {
                    self.close(DisconnectReason::TimedOut, false);
                    return;
                }
                self.tracker.on_timeout(now);
                self.process_notifications();
            }
            Phase::Closing | Phase::Closed => {}
        }
    }

    fn wants_data(&self) -> bool {
        self.ordered_tx.has_sendable()
            || self.quickest_tx.has_unsent()
            || (self.quickest_resend && !self.quickest_tx.is_empty())
            || self.state_tx.unsent_bytes() > 0
            || !self.unguaranteed.is_empty()
            || self.rate_force
    }

    /// Bytes a datagram would like to carry, for the rate threshold.
    fn wanted_bytes(&self) -> usize {
        let mut want = HEADER_LEN + self.tag_len();
        if self.ordered_tx.has_sendable() {
            want += self.ordered_tx.unsent_bytes() + FRAG_CHUNK_OVERHEAD;
        }
        want += self.quickest_tx.wire_bytes();
        let state = self.state_tx.unsent_bytes();
        if state > 0 {
            want += state + FRAG_CHUNK_OVERHEAD;
        }
        want += self.unguaranteed_bytes + self.unguaranteed.len() * EVENT_CHUNK_OVERHEAD;
        if self.rate_pending {
            want += RATE_CHUNK_LEN;
        }
        want.min(MAX_DATAGRAM)
    }

    fn threshold(&self) -> usize {
        self.wanted_bytes().min(self.limiter.capacity())
    }

    fn ack_due_at(&self) -> Option<Instant> {
        self.ack_pending_since.map(|t| t + self.config.ack_delay)
    }

    fn keepalive_due_at(&self, now: Instant) -> Instant {
        self.last_sent
            .map_or(now, |t| t + self.config.keepalive_interval)
    }

    /// The earliest time this connection needs attention.
    pub(crate) fn poll_timeout(&self, now: Instant) -> Option<Instant> {
        match self.phase {
            Phase::Challenging | Phase::Connecting => {
                let hs = self.handshake.as_ref()?;
                Some(hs.next_send.min(hs.deadline))
            }
            Phase::Pending => Some(self.pending_deadline),
            Phase::Closing => Some(now),
            Phase::Closed => None,
            Phase::Established => {
                let mut t = self.last_received + self.config.idle_timeout;
                if let Some(d) = self.tracker.next_deadline() {
                    t = t.min(d);
                }
                let small = self.limiter.ready_at(HEADER_LEN + self.tag_len());
                if self.wants_data() {
                    t = t.min(self.limiter.ready_at(self.threshold()));
                }
                if let Some(ack) = self.ack_due_at() {
                    t = t.min(ack.max(small));
                }
                t = t.min(self.keepalive_due_at(now).max(small));
                Some(t)
            }
        }
    }

    /// Client: the next handshake packet, if one is due.
    fn poll_handshake(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let hs = self.handshake.as_mut()?;
        if now < hs.next_send || now >= hs.deadline {
            return None;
        }
        hs.next_send = now + hs.interval;
        hs.interval = (hs.interval * 2).min(hs.max_interval);
        if self.phase == Phase::Connecting {
            hs.connect_attempts += 1;
            hs.connect_sent_at = (hs.connect_attempts == 1).then_some(now);
            if hs.connect_attempts > CONNECT_ATTEMPTS_PER_COOKIE {
                // The accept keeps getting lost; by now the server may have
                // dropped the pending slot and would refuse the used cookie.
                // Start over with a fresh one.
                hs.cookie = None;
                hs.connect_attempts = 0;
                self.phase = Phase::Challenging;
            }
        }
        let packet = match (self.phase, hs.cookie) {
            (Phase::Challenging, _) => Handshake::ChallengeRequest {
                client_id: self.client_id,
            },
            (Phase::Connecting, Some(cookie)) => Handshake::Connect(ConnectRequest {
                client_id: self.client_id,
                cookie,
                version: hs.version,
                schema: hs.schema,
                options: self.options,
                rate: self.config.receive_rate.sanitized(),
            }),
            _ => return None,
        };
        packet.write(buf).ok()
    }

    /// The next datagram to send, written into `buf`. `cap` is the most
    /// bytes the endpoint's total rate allows right now.
    pub(crate) fn poll_transmit(
        &mut self,
        now: Instant,
        cap: usize,
        buf: &mut [u8; MAX_DATAGRAM],
        scratch: &mut Scratch<'_>,
    ) -> Option<usize> {
        match self.phase {
            Phase::Challenging | Phase::Connecting => return self.poll_handshake(now, buf),
            Phase::Established | Phase::Closing => {}
            Phase::Pending | Phase::Closed => return None,
        }
        let closing = self.phase == Phase::Closing;
        let tag_len = self.tag_len();
        let ack_due = self.ack_due_at().is_some_and(|t| now >= t);
        let keepalive_due = now >= self.keepalive_due_at(now);
        let wants = self.wants_data();
        if !(closing || ack_due || keepalive_due || wants) {
            return None;
        }
        let mut budget = MAX_DATAGRAM.min(cap);
        if !closing {
            if !self.limiter.packet_allowed(now) {
                return None;
            }
            let available = self.limiter.available(now);
            let needed = if wants {
                self.threshold()
            } else {
                HEADER_LEN + tag_len
            };
            if available < needed {
                return None;
            }
            budget = budget.min(available);
        }
        if budget < HEADER_LEN + tag_len + DISCONNECT_CHUNK_LEN {
            return None;
        }

        let mut record = self.tracker.blank();
        let seq = record.seq;
        let mut space = budget - HEADER_LEN - tag_len;
        let body_len = {
            let mut w = Writer::new(&mut buf[HEADER_LEN..MAX_DATAGRAM - tag_len]);
            if closing {
                let _ = Chunk::Disconnect {
                    reason: self.disconnect_code,
                }
                .write(&mut w);
                space = space.saturating_sub(DISCONNECT_CHUNK_LEN);
            }
            if self.rate_pending && space >= RATE_CHUNK_LEN {
                let rate = Chunk::Rate(self.config.receive_rate.sanitized());
                if rate.write(&mut w).is_ok() {
                    space -= RATE_CHUNK_LEN;
                    record.rate_announce = true;
                    self.rate_force = false;
                }
            }
            if !closing {
                self.ordered_tx.write(&mut w, &mut space, &mut record);
                let had_quickest = !self.quickest_tx.is_empty();
                self.quickest_tx.write(&mut w, &mut space, &mut record);
                if had_quickest && record.quickest_max.is_some() {
                    self.quickest_resend = false;
                }
                let mut fragments = 0;
                self.state_tx.write(
                    &mut w,
                    &mut space,
                    &mut record,
                    &mut fragments,
                    &mut self.pool,
                );
                self.state_fragments += fragments;
                self.write_unguaranteed(&mut w, &mut space);
            }
            w.len()
        };
        record.ack_eliciting = body_len > 0;

        // Compress the body when that makes it smaller.
        let mut flags = 0;
        let mut body_len = body_len;
        if body_len > 0 && self.is_compressed() {
            if let Some(c) = scratch.compressor {
                if let Some(n) = c.compress(&buf[HEADER_LEN..HEADER_LEN + body_len], scratch.b) {
                    buf[HEADER_LEN..HEADER_LEN + n].copy_from_slice(&scratch.b[..n]);
                    body_len = n;
                    flags |= FLAG_COMPRESSED;
                }
            }
        }
        let (ack, ack_bits) = match self.acked.ack_field() {
            Some((ack, bits)) => {
                flags |= FLAG_HAS_ACK;
                (ack as u16, bits)
            }
            None => (0, 0),
        };
        let header = DataHeader {
            flags,
            client_id: self.client_id,
            seq: seq as u16,
            ack,
            ack_bits,
        };
        let mut head = [0u8; HEADER_LEN];
        header.write(&mut head);
        buf[..HEADER_LEN].copy_from_slice(&head);
        let mut len = HEADER_LEN + body_len;
        if let Some(cipher) = &self.cipher {
            let tag = cipher.seal(seq, &head, &mut buf[HEADER_LEN..len]);
            buf[len..len + TAG_LEN].copy_from_slice(&tag);
            len += TAG_LEN;
        }

        // Book-keeping.
        let timeout = self.rtt.drop_timeout(self.config.timer_granularity)
            + self.config.ack_delay
            + if record.ack_eliciting {
                Duration::ZERO
            } else {
                // Nothing asks the peer to ack this one promptly; its next
                // keepalive will.
                self.config.keepalive_interval
            };
        record.sent_at = Some(now);
        record.deadline = Some(now + timeout);
        record.size = len;
        self.tracker.push(record);
        if !closing {
            self.limiter.consume(now, len);
        }
        self.last_sent = Some(now);
        self.ack_pending_since = None;
        self.metrics.datagrams_sent += 1;
        self.metrics.bytes_sent += len as u64;
        self.metrics.largest_datagram_sent = self.metrics.largest_datagram_sent.max(len);
        if closing {
            self.closing_left = self.closing_left.saturating_sub(1);
            if self.closing_left == 0 {
                self.phase = Phase::Closed;
            }
        }
        self.refresh_gauges();
        Some(len)
    }

    fn write_unguaranteed(&mut self, w: &mut Writer<'_>, space: &mut usize) {
        // Highest priority first; an event that does not fit waits, but a few
        // smaller ones behind it may still go.
        const LOOKAHEAD: usize = 8;
        while let Some(ev) = self.unguaranteed.pop() {
            let chunk = Chunk::Event { data: &ev.data };
            let len = chunk.encoded_len();
            if len <= *space && chunk.write(w).is_ok() {
                *space -= len;
                self.unguaranteed_bytes -= ev.data.len();
                self.metrics.unguaranteed_sent += 1;
                self.pool.give(ev.data);
                continue;
            }
            if len > MAX_DATAGRAM - HEADER_LEN - self.tag_len()
                || len + HEADER_LEN + self.tag_len() > self.limiter.capacity().max(MIN_BUDGET)
            {
                // Can never fit this connection's datagrams: discard rather than block.
                self.unguaranteed_bytes -= ev.data.len();
                self.metrics.unguaranteed_discarded += 1;
                self.pool.give(ev.data);
                continue;
            }
            self.deferred.push(ev);
            if self.deferred.len() >= LOOKAHEAD {
                break;
            }
        }
        self.unguaranteed.extend(self.deferred.drain(..));
        self.metrics.unguaranteed_queue_len = self.unguaranteed.len();
    }

    /// Whether the endpoint may forget this connection.
    pub(crate) fn is_finished(&self) -> bool {
        self.phase == Phase::Closed && self.events.is_empty()
    }
}
