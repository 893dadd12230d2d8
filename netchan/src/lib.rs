//! # netq3-netchan
//!
//! A sans-IO network channel for game traffic over UDP, in the tradition of
//! Quake 3's netchan, TRIBES' notify protocol and Torque's connection
//! classes. Two endpoints, with the test itself as the network: it carries
//! every datagram one side sends to the other, and moves the clock.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use netq3_netchan::{ConnectOptions, Endpoint, EndpointConfig, Event, MAX_DATAGRAM};
//!
//! let mut now = Instant::now();
//! let (server_addr, client_addr) = ("10.0.0.1:27960".parse()?, "10.0.0.2:50000".parse()?);
//! let mut server = Endpoint::new(EndpointConfig::server(), now);
//! let mut client = Endpoint::new(EndpointConfig::client(), now);
//! let options = ConnectOptions { client_id: 7, encrypt: false, compress: true };
//! let conn = client.connect(now, server_addr, options)?;
//!
//! let (mut buf, mut sent, mut received) = ([0u8; MAX_DATAGRAM], false, Vec::new());
//! for _ in 0..50 {
//!     while let Some(t) = client.poll_transmit(now, &mut buf) {
//!         server.handle(now, client_addr, &buf[..t.len]);
//!     }
//!     while let Some(t) = server.poll_transmit(now, &mut buf) {
//!         client.handle(now, server_addr, &buf[..t.len]);
//!     }
//!     while let Some(event) = server.poll_event() {
//!         if let Event::Message { data, .. } = event {
//!             received.push(data); // guaranteed, ordered, exactly once
//!         }
//!     }
//!     while client.poll_event().is_some() {}
//!     if let Some(connection) = client.connection_mut(conn).filter(|c| c.is_established()) {
//!         if !sent {
//!             connection.send_ordered(b"hello")?;
//!             sent = true;
//!         }
//!     }
//!     now += Duration::from_millis(10);
//!     client.handle_timeout(now);
//!     server.handle_timeout(now);
//! }
//! assert_eq!(received, [b"hello".to_vec()]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Shape
//!
//! The core never touches a socket or a clock. An [`Endpoint`] is handed the
//! current time and incoming datagrams, and asked for outgoing datagrams,
//! events and its next deadline:
//!
//! | call | what it does |
//! | --- | --- |
//! | [`Endpoint::handle`]`(now, from, bytes)` | feed one received datagram; returns a [`HandleOutcome`] |
//! | [`Endpoint::handle_timeout`]`(now)` | run timers (retries, drop deadlines, idle timeouts) |
//! | [`Endpoint::poll_transmit`]`(now, &mut buf)` | next datagram to send, as a [`Transmit`] `{ destination, len }` |
//! | [`Endpoint::poll_event`]`()` | next [`Event`] for the application |
//! | [`Endpoint::poll_timeout`]`()` | when to call again if nothing arrives |
//!
//! Time is a [`std::time::Instant`]; simulations build it from a base plus
//! offsets, so every test here runs on simulated time with the seeded
//! [`LinkConditioner`]. Drivers supply real time and real I/O: [`UdpDriver`]
//! (one non-blocking `mio` socket for any number of connections) and
//! [`LocalDriver`] (an in-process link with the same API, Torque's
//! short-circuit connection for a listen server). Both can put the link
//! conditioner in front of their send path.
//!
//! ## Per connection
//!
//! Reached with [`Endpoint::connection_mut`], a [`Connection`] carries four
//! delivery classes at once, filled into each datagram in this priority
//! order, up to the rate budget (what does not fit waits):
//!
//! 1. acks and header (always);
//! 2. **guaranteed ordered** — [`Connection::send_ordered`]: resent when the
//!    datagram carrying it is notified dropped, delivered exactly once and in
//!    order as [`Event::Message`]; the queue is bounded and overflow closes
//!    the connection with [`DisconnectReason::OrderedOverflow`];
//! 3. **guaranteed quickest** — [`Connection::send_quickest`]: small items
//!    (player commands) repeated in every datagram until one carrying them is
//!    acknowledged, delivered once and in order as [`Event::Quickest`];
//! 4. **most-recent state** — [`Connection::send_state`]: the snapshot for
//!    the next datagram(s), fragmented when large, never resent; the sender
//!    learns its fate as [`Event::StateDelivered`] or [`Event::StateDropped`]
//!    (exactly once per [`StateId`], in id order) and the receiver gets the
//!    newest as [`Event::State`];
//! 5. **unguaranteed events** — [`Connection::send_unguaranteed`]: sent at most
//!    once, highest priority first, as [`Event::Unguaranteed`].
//!
//! ### How a snapshot layer plugs in
//!
//! Each tick the server calls `send_state(&encoded_snapshot)` per client and
//! remembers `StateId → snapshot number`. When `StateDelivered { id }` comes
//! back, that snapshot is a valid delta base for the client; on
//! `StateDropped { id }` it is not. Because reports come in id order and a
//! superseded payload is reported dropped, the layer above only needs a
//! small ring of outstanding ids.
//!
//! ## Wire
//!
//! No datagram exceeds [`MAX_DATAGRAM`] (1400) bytes, headers, tag and all.
//! Every data datagram has a 13-byte header: type and flags, the client id
//! (Quake 3's qport, so the server follows a NAT port change), a 16-bit
//! sequence number (extended to 64 bits on receipt, wrap-around safe), and
//! the newest remote sequence received with a 32-bit field for the ones
//! before it. From those acks the sender gets exactly one delivered/dropped
//! notification per datagram, in send order ([`notify`]), and measures RTT
//! and loss. Messages up to [`ConnectionConfig::max_message_size`] (16 KiB by
//! default) travel as fragments that may arrive in any order and any number
//! of times ([`fragment`]).
//!
//! Connections start with a stateless cookie handshake ([`handshake`]):
//! challenge → cookie → connect (version, schema fingerprint, client id,
//! receive rate) → accept or reject with a reason; no response is larger than
//! its request, and nothing is allocated before the client proves its address.
//! Bodies may be Huffman-compressed ([`compress`]) and encrypted with
//! ChaCha20-Poly1305 under a pre-shared key ([`crypto`]), chosen per
//! connection.
//!
//! ## A driver loop
//!
//! ```no_run
//! use std::net::SocketAddr;
//! use std::time::{Duration, Instant};
//! use netq3_netchan::{ConnectOptions, Endpoint, EndpointConfig, Event, UdpDriver};
//!
//! let now = Instant::now();
//! let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
//! let mut server = UdpDriver::bind_udp(any, Endpoint::new(EndpointConfig::server(), now))?;
//! let mut client = UdpDriver::bind_udp(any, Endpoint::new(EndpointConfig::client(), now))?;
//! let options = ConnectOptions { client_id: 42, encrypt: false, compress: true };
//! let conn = client.endpoint_mut().connect(now, server.local_addr(), options).unwrap();
//! client.endpoint_mut().connection_mut(conn).unwrap().send_ordered(b"hello").unwrap();
//! loop {
//!     let now = Instant::now();
//!     server.pump(now);
//!     client.pump(now);
//!     while let Some(event) = server.endpoint_mut().poll_event() {
//!         if let Event::Message { data, .. } = event {
//!             println!("{}", String::from_utf8_lossy(&data));
//!             return Ok(());
//!         }
//!     }
//!     server.wait(now, Duration::from_millis(5))?;
//! }
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! ## Security notes
//!
//! The handshake proves the client's address before any state exists, and
//! answers are never larger than requests. Without encryption, though, a
//! party that can spoof the client's address and knows its client id can
//! inject datagrams — e.g. push the receive window forward with a forged
//! sequence number — exactly as in Quake 3. With encryption every datagram is
//! authenticated (header included), so forged, tampered and replayed
//! datagrams are dropped and counted. The connect request itself is not
//! authenticated: a client with a wrong key is accepted, fails to
//! authenticate anything and times out of its pending slot.
//!
//! Runnable versions: `examples/udp_client_server.rs` and
//! `examples/local_listen_server.rs`.
#![forbid(unsafe_code)]

pub mod compress;
pub mod conditioner;
pub mod config;
pub mod connection;
pub mod crypto;
pub mod driver;
pub mod endpoint;
pub mod error;
pub mod event;
pub mod fragment;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod handshake;
pub mod local;
pub mod metrics;
pub mod notify;
pub mod outcome;
pub mod packet;
pub mod pool;
pub mod rate;
pub mod reliable;
pub mod rng;
pub mod sequence;
pub mod state;
pub mod status;
pub mod testing;
pub mod udp;

pub use compress::{Compressor, HuffmanCompressor};
pub use conditioner::{BurstLoss, ConditionerConfig, LinkConditioner};
pub use connection::{
    codes, Connection, ConnectionConfig, ConnectionId, DisconnectReason, Event, Phase, Role,
    MAX_EVENT, MAX_QUICKEST_ITEM,
};
pub use crypto::PresharedKey;
pub use driver::{Driver, Transport};
pub use endpoint::{
    random_secret, ConnectOptions, Endpoint, EndpointConfig, ServerConfig, TableSizes, Transmit,
};
pub use error::{ConnectError, DecodeError, FragmentError, SendError};
pub use handshake::RejectReason;
pub use local::{LocalDriver, LocalHub};
pub use metrics::{EndpointMetrics, Metrics, RejectedCounts};
pub use outcome::{DropReason, HandleOutcome};
pub use packet::MAX_DATAGRAM;
pub use rate::RateAnnounce;
pub use rng::SeededRng;
pub use state::StateId;
pub use status::{StatusLimits, StatusReply, StatusRequest};
pub use udp::{UdpDriver, UdpTransport};

/// The `mio` version the UDP driver is built on, for callers that share one
/// `mio::Poll` across several sockets ([`UdpTransport::bind_registered`]).
pub use mio;
