//! What the endpoint tells the application: events and disconnect reasons.

use std::net::SocketAddr;

use crate::connection::ConnectionId;
use crate::handshake::RejectReason;
use crate::state::StateId;

/// Disconnect codes carried by the disconnect message.
pub mod codes {
    /// An orderly close.
    pub const NORMAL: u8 = 0;
    /// The sender's guaranteed-ordered queue overflowed.
    pub const ORDERED_OVERFLOW: u8 = 1;
    /// The server is shutting down.
    pub const SHUTDOWN: u8 = 2;
    /// The server removed the client (kick).
    pub const KICKED: u8 = 3;
}

/// Why a connection ended (or never started).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DisconnectReason {
    /// This side closed it with [`crate::Endpoint::disconnect`] and this code.
    Local(u8),
    /// The peer sent a disconnect with this code (see [`codes`]).
    Peer(u8),
    /// Nothing was received for the idle timeout.
    TimedOut,
    /// This side's guaranteed-ordered queue overflowed (Quake 3's "command overflow").
    OrderedOverflow,
    /// The server rejected the connect request.
    Rejected(RejectReason),
    /// The handshake did not complete within the connect timeout.
    HandshakeTimedOut,
}

/// Something the application should know about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The connection is established (client: accepted; server: the client's
    /// first datagram arrived after the accept).
    Connected {
        /// The connection.
        conn: ConnectionId,
        /// The peer's address.
        addr: SocketAddr,
    },
    /// The connection ended; its id is no longer valid.
    Disconnected {
        /// The connection.
        conn: ConnectionId,
        /// Why.
        reason: DisconnectReason,
    },
    /// A guaranteed-ordered message, delivered exactly once and in order.
    Message {
        /// The connection.
        conn: ConnectionId,
        /// The message; give it back with [`crate::Endpoint::recycle`] to avoid allocations.
        data: Vec<u8>,
    },
    /// An unguaranteed event.
    Unguaranteed {
        /// The connection.
        conn: ConnectionId,
        /// The event.
        data: Vec<u8>,
    },
    /// A guaranteed-quickest item, delivered once and in order.
    Quickest {
        /// The connection.
        conn: ConnectionId,
        /// The item.
        data: Vec<u8>,
    },
    /// A most-recent-state payload from the peer. Usually newer than any
    /// before it; one that arrived late (older than one already delivered)
    /// is delivered too — the sender is told it was delivered — so compare
    /// ids if only the newest matters.
    State {
        /// The connection.
        conn: ConnectionId,
        /// The peer's id for the payload.
        id: StateId,
        /// The payload.
        data: Vec<u8>,
    },
    /// Every datagram carrying this state payload arrived.
    StateDelivered {
        /// The connection.
        conn: ConnectionId,
        /// The id returned by [`crate::Connection::send_state`].
        id: StateId,
    },
    /// This state payload did not (all) arrive, or was superseded before it was sent.
    StateDropped {
        /// The connection.
        conn: ConnectionId,
        /// The id returned by [`crate::Connection::send_state`].
        id: StateId,
    },
    /// Notification of one sent datagram (only with
    /// [`crate::ConnectionConfig::datagram_notify_events`]): exactly one per datagram,
    /// in send order, for as long as the connection lives (datagrams still in
    /// flight when it closes are not reported).
    Notify {
        /// The connection.
        conn: ConnectionId,
        /// The datagram's full sequence number.
        seq: u64,
        /// Delivered or dropped.
        delivered: bool,
    },
}
