//! Why a session ended, in words a player can read.
//!
//! netchan carries a one-byte code in its disconnect message; the session
//! adds its own codes above netchan's ([`codes`]) and turns every netchan
//! [`netchan::DisconnectReason`] into a [`DisconnectReason`] whose
//! `Display` is the sentence to show.

use std::fmt;

use netchan::RejectReason;

/// Disconnect codes: netchan's (0..=3) and the session's.
pub mod codes {
    pub use netchan::codes::{KICKED, NORMAL, ORDERED_OVERFLOW, SHUTDOWN};
    /// The server's queue of reliable commands to this client overflowed.
    pub const RELIABLE_OVERFLOW: u8 = 16;
    /// The server restarts: reconnect.
    pub const RESTARTING: u8 = 17;
    /// Every player slot is taken.
    pub const SERVER_FULL: u8 = 18;
}

/// Why a session ended (or never started).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DisconnectReason {
    /// This side left.
    Left,
    /// The peer left cleanly.
    PeerLeft,
    /// The server shut down for good.
    ServerShutdown,
    /// The server is restarting (the client reconnects on its own).
    ServerRestarting,
    /// The server removed the client.
    Kicked,
    /// Every slot on the server is taken.
    ServerFull,
    /// Client and server were built with different [`net_struct!`](crate::net_struct) tables,
    /// codec or models.
    SchemaMismatch,
    /// Client and server speak different protocol versions.
    VersionMismatch,
    /// The server refused for another reason (encryption settings).
    Rejected(RejectReason),
    /// Nothing arrived for the idle timeout.
    TimedOut,
    /// The connection never completed before the connect deadline.
    ConnectFailed,
    /// The reliable command queue to the client overflowed (a client too
    /// slow to keep up).
    ReliableOverflow,
    /// The server no longer holds this client's session: it restarted, or
    /// dropped the client while every notice of it was lost.
    SessionLost,
    /// Another code from the peer.
    Other(u8),
}

impl DisconnectReason {
    /// The reason for a netchan disconnect.
    pub fn from_netchan(reason: netchan::DisconnectReason) -> DisconnectReason {
        use netchan::DisconnectReason as N;
        match reason {
            N::Local(code) => match code {
                codes::NORMAL => DisconnectReason::Left,
                other => DisconnectReason::from_code(other),
            },
            N::Peer(code) => match code {
                codes::NORMAL => DisconnectReason::PeerLeft,
                other => DisconnectReason::from_code(other),
            },
            N::TimedOut => DisconnectReason::TimedOut,
            N::OrderedOverflow => DisconnectReason::ReliableOverflow,
            N::Rejected(RejectReason::SchemaMismatch) => DisconnectReason::SchemaMismatch,
            N::Rejected(RejectReason::VersionMismatch) => DisconnectReason::VersionMismatch,
            N::Rejected(RejectReason::ServerFull) => DisconnectReason::ServerFull,
            N::Rejected(RejectReason::ShuttingDown) => DisconnectReason::ServerShutdown,
            N::Rejected(RejectReason::Restarting) => DisconnectReason::ServerRestarting,
            N::Rejected(RejectReason::UnknownConnection) => DisconnectReason::SessionLost,
            N::Rejected(other) => DisconnectReason::Rejected(other),
            N::HandshakeTimedOut => DisconnectReason::ConnectFailed,
        }
    }

    fn from_code(code: u8) -> DisconnectReason {
        match code {
            codes::SHUTDOWN => DisconnectReason::ServerShutdown,
            codes::RESTARTING => DisconnectReason::ServerRestarting,
            codes::KICKED => DisconnectReason::Kicked,
            codes::SERVER_FULL => DisconnectReason::ServerFull,
            codes::RELIABLE_OVERFLOW | codes::ORDERED_OVERFLOW => {
                DisconnectReason::ReliableOverflow
            }
            other => DisconnectReason::Other(other),
        }
    }

    /// Whether a client should reconnect on its own after this: the server
    /// restarted, lost the session or stopped answering.
    pub fn reconnects(self) -> bool {
        matches!(
            self,
            DisconnectReason::ServerRestarting
                | DisconnectReason::TimedOut
                | DisconnectReason::SessionLost
        )
    }
}

impl fmt::Display for DisconnectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DisconnectReason::Left => write!(f, "disconnected"),
            DisconnectReason::PeerLeft => write!(f, "the other side disconnected"),
            DisconnectReason::ServerShutdown => write!(f, "the server shut down"),
            DisconnectReason::ServerRestarting => write!(f, "the server is restarting"),
            DisconnectReason::Kicked => write!(f, "kicked by the server"),
            DisconnectReason::ServerFull => write!(f, "the server is full"),
            DisconnectReason::SchemaMismatch => write!(
                f,
                "the server runs a different game version (network schema mismatch)"
            ),
            DisconnectReason::VersionMismatch => {
                write!(f, "the server speaks another protocol version")
            }
            DisconnectReason::Rejected(reason) => write!(f, "the server refused: {reason:?}"),
            DisconnectReason::TimedOut => write!(f, "connection timed out"),
            DisconnectReason::ConnectFailed => write!(f, "could not connect to the server"),
            DisconnectReason::ReliableOverflow => {
                write!(
                    f,
                    "too slow to keep up: the reliable command queue overflowed"
                )
            }
            DisconnectReason::SessionLost => {
                write!(f, "the server lost the session (it restarted)")
            }
            DisconnectReason::Other(code) => write!(f, "disconnected (code {code})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_to_reasons() {
        use netchan::DisconnectReason as N;
        assert_eq!(
            DisconnectReason::from_netchan(N::Peer(codes::RESTARTING)),
            DisconnectReason::ServerRestarting
        );
        assert_eq!(
            DisconnectReason::from_netchan(N::Local(codes::RELIABLE_OVERFLOW)),
            DisconnectReason::ReliableOverflow
        );
        assert_eq!(
            DisconnectReason::from_netchan(N::Rejected(RejectReason::SchemaMismatch)),
            DisconnectReason::SchemaMismatch
        );
        assert_eq!(
            DisconnectReason::from_netchan(N::Peer(200)),
            DisconnectReason::Other(200)
        );
        assert_eq!(
            DisconnectReason::from_netchan(N::Rejected(RejectReason::Restarting)),
            DisconnectReason::ServerRestarting
        );
        assert_eq!(
            DisconnectReason::from_netchan(N::Rejected(RejectReason::ShuttingDown)),
            DisconnectReason::ServerShutdown
        );
        assert_eq!(
            DisconnectReason::from_netchan(N::Rejected(RejectReason::UnknownConnection)),
            DisconnectReason::SessionLost
        );
        assert!(DisconnectReason::SessionLost.reconnects());
        assert!(!DisconnectReason::ServerShutdown.reconnects());
        assert!(DisconnectReason::TimedOut.reconnects());
        assert!(!DisconnectReason::Kicked.reconnects());
        assert!(DisconnectReason::SchemaMismatch
            .to_string()
            .contains("schema mismatch"));
    }
}
