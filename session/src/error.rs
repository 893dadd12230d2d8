//! Errors of the session layer's calls (bad input from the network is
//! never an error of a call: it is counted and dropped).

use crate::server::ClientKey;
use crate::wire::WireError;

/// Why a session call failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The snapshot server refused (an entity number out of range, …).
    #[error("snapshot server: {0}")]
    Snapshot(#[from] snapshot::ServerError),
    /// The snapshot server configuration is invalid.
    #[error("snapshot configuration: {0}")]
    Config(#[from] snapshot::ConfigError),
    /// No such client (it left, or the key is from an earlier occupant).
    #[error("no client {0:?}")]
    UnknownClient(ClientKey),
    /// The client is not in a game (not connected, or no gamestate yet).
    #[error("not connected")]
    NotConnected,
    /// The server is disconnecting this client (kicked, shut down, or its
    /// reliable queue overflowed earlier): nothing more is sent to it.
    #[error("client {0:?} is being disconnected")]
    ClientClosing(ClientKey),
    /// This message would have overflowed the client's reliable queue
    /// ([`crate::ServerConfig::max_reliable`]): the client is being
    /// disconnected with [`crate::DisconnectReason::ReliableOverflow`].
    #[error("client {0:?} fell too far behind: its reliable queue overflowed")]
    ReliableOverflow(ClientKey),
    /// Too many commands wait for acknowledgement (the server stopped
    /// answering): the command was not queued.
    #[error("{pending} commands wait for acknowledgement; the command was not queued")]
    CommandQueueFull {
        /// Commands waiting.
        pending: usize,
    },
    /// netchan refused to connect.
    #[error("connect: {0}")]
    Connect(#[from] netchan::ConnectError),
    /// netchan refused to send.
    #[error("send: {0}")]
    Send(#[from] netchan::SendError),
    /// The recording failed.
    #[cfg(feature = "record")]
    #[error("recording: {0}")]
    Demo(#[from] demo::DemoError),
    /// A message could not be encoded.
    #[error("wire: {0}")]
    Wire(#[from] WireError),
    /// The command carried no view (the client drew nothing before it, or
    /// it is no longer among the commands kept).
    #[error("command {command} has no view to rewind to")]
    NoView {
        /// The command's number.
        command: u32,
    },
    /// The rewind query failed (nothing sent to the client recently).
    #[error("rewind: {0}")]
    Rewind(#[from] snapshot::RewindError),
}
