//! Error types of every decoder and of the sending API.

use thiserror::Error;

/// Why an incoming datagram (or part of one) was rejected.
///
/// Every decoder of untrusted bytes returns this instead of panicking; the
/// connection counts the rejection in its metrics and ignores the input.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The datagram has no bytes at all.
    #[error("empty datagram")]
    Empty,
    /// A field ran past the end of the input.
    #[error("truncated {what}: needed {needed} bytes, {available} available")]
    Truncated {
        /// The field being read.
        what: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// The datagram is larger than [`crate::MAX_DATAGRAM`]; no honest peer sends one.
    #[error("datagram of {0} bytes exceeds the {max}-byte limit", max = crate::MAX_DATAGRAM)]
    Oversized(usize),
    /// The packet type in the first byte is not one this protocol defines.
    #[error("unknown packet type {0:#04x}")]
    UnknownPacketType(u8),
    /// A chunk tag inside a data datagram is not one this protocol defines.
    #[error("unknown chunk tag {0:#04x}")]
    UnknownChunk(u8),
    /// A connectionless packet did not start with the protocol magic.
    #[error("bad protocol magic")]
    BadMagic,
    /// A connectionless packet has the wrong size for its type.
    #[error("{what} has {len} bytes, expected {expected}")]
    BadLength {
        /// The packet type.
        what: &'static str,
        /// Its actual length.
        len: usize,
        /// The length its type requires.
        expected: usize,
    },
    /// A reason or flag byte holds a value outside its enumeration.
    #[error("invalid {what} value {value}")]
    BadValue {
        /// The field.
        what: &'static str,
        /// The value found.
        value: u32,
    },
    /// A fragment header is inconsistent on its own (see [`FragmentError`]).
    #[error("malformed fragment: {0}")]
    Fragment(#[from] FragmentError),
    /// Decryption or authentication of an encrypted datagram failed.
    #[error("authentication failed")]
    Authentication,
    /// The compressed body could not be decoded.
    #[error("compressed body is invalid")]
    Decompress,
}

/// Why a fragment was refused by the reassembler.
///
/// The first group are malformed headers (an honest peer never sends them);
/// [`FragmentError::TooManyPartials`] and [`FragmentError::OutOfMemory`] are
/// capacity refusals that an honest but fast peer can trigger, and which the
/// receiver answers by not acknowledging the datagram so it is sent again.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum FragmentError {
    /// The announced message length exceeds the configured maximum.
    #[error("message length {total} exceeds maximum {max}")]
    TooLarge {
        /// Announced length.
        total: u32,
        /// Configured maximum.
        max: u32,
    },
    /// The fragment reaches past the end of the message (or offset past the maximum).
    #[error("fragment at {offset} of {len} bytes runs past message length {total}")]
    OutOfBounds {
        /// Fragment offset.
        offset: u32,
        /// Fragment length.
        len: u32,
        /// Message length.
        total: u32,
    },
    /// A fragment with no payload bytes.
    #[error("empty fragment")]
    Empty,
    /// The fragment announces a different total length than earlier fragments of the same message.
    #[error("fragment announces length {got}, earlier fragments said {expected}")]
    InconsistentLength {
        /// Length from earlier fragments.
        expected: u32,
        /// Length in this fragment.
        got: u32,
    },
    /// The fragment partly overlaps bytes already received (neither new nor a duplicate).
    #[error("fragment at {offset} of {len} bytes partly overlaps received data")]
    Overlap {
        /// Fragment offset.
        offset: u32,
        /// Fragment length.
        len: u32,
    },
    /// The bound on simultaneous partial messages is reached.
    #[error("too many partial messages")]
    TooManyPartials,
    /// The bound on bytes held by partial messages is reached.
    #[error("partial messages would exceed their byte bound")]
    OutOfMemory,
}

impl FragmentError {
    /// `true` for refusals caused by the receiver's bounds rather than by a malformed header.
    pub fn is_capacity(&self) -> bool {
        matches!(self, Self::TooManyPartials | Self::OutOfMemory)
    }
}

/// Why a message could not be queued for sending.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SendError {
    /// The connection is not (or no longer) established.
    #[error("connection is not established")]
    NotConnected,
    /// The message is larger than the configured maximum message size.
    #[error("message of {len} bytes exceeds the {max}-byte maximum")]
    TooLarge {
        /// Message length.
        len: usize,
        /// The maximum for this delivery class.
        max: usize,
    },
    /// The guaranteed-ordered queue overflowed; the connection has been closed
    /// with [`crate::DisconnectReason::OrderedOverflow`].
    #[error("guaranteed-ordered queue overflow: connection closed")]
    OrderedOverflow,
    /// The guaranteed-quickest queue is full: the peer has not acknowledged
    /// earlier items. Nothing was queued; the caller may retry later.
    #[error("guaranteed-quickest queue is full")]
    QuickestFull,
}

/// Why [`crate::Endpoint::connect`] could not start a connection.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ConnectError {
    /// A connection to that address already exists.
    #[error("already connected or connecting to that address")]
    AlreadyConnected,
    /// The endpoint holds its maximum number of connections.
    #[error("too many connections")]
    TooManyConnections,
    /// Encryption was requested without a pre-shared key.
    #[error("encryption requested without a pre-shared key")]
    MissingKey,
}
