//! Errors of the live client.

use fields::huffman::AdaptiveError;
use fields::BitError;
use thiserror::Error;

use crate::error::MessageError;

/// A datagram the netchan could not read at all.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum NetchanError {
    /// Shorter than its header.
    #[error("datagram of {len} bytes is shorter than its netchan header")]
    Truncated {
        /// Its length.
        len: usize,
    },
    /// A fragment claiming more bytes than it holds, or overflowing a message.
    #[error("fragment at {start} of {len} bytes is invalid ({available} bytes present)")]
    BadFragment {
        /// Its start offset.
        start: usize,
        /// Its claimed length.
        len: usize,
        /// Bytes actually present.
        available: usize,
    },
    /// A message longer than Quake 3's `MAX_MSGLEN` to send.
    #[error("message of {len} bytes exceeds {max} bytes")]
    MessageTooLong {
        /// Its length.
        len: usize,
        /// The bound.
        max: usize,
    },
}

/// What ends or breaks a live session.
#[derive(Debug, Error)]
pub enum LiveError {
    /// The server refused the connection with a `print` packet.
    #[error("the server refused the connection: {0}")]
    Rejected(String),
    /// No answer to the handshake after every retry.
    #[error("no {stage} from the server after {attempts} attempts")]
    NoAnswer {
        /// What was awaited.
        stage: &'static str,
        /// Packets sent.
        attempts: u32,
    },
    /// Nothing from the server for too long.
    #[error("no packet from the server for {seconds:.1} s")]
    TimedOut {
        /// How long it was silent.
        seconds: f64,
    },
    /// Connected, but the server never sent the gamestate.
    #[error("no gamestate from the server after {seconds:.1} s connected ({datagrams} datagrams received): the session never entered the game")]
    NoGamestate {
        /// How long the client waited.
        seconds: f64,
        /// Datagrams received in all.
        datagrams: u64,
    },
    /// The pure server requires a pak this client does not have (or has in
    /// another version).
    #[error("{}", missing_pak(.name, *.checksum, .other_version.as_deref(), .searched))]
    MissingPak {
        /// The pak, as `game/basename.pk3`.
        name: String,
        /// Its checksum on the server.
        checksum: i32,
        /// A local pak of that name with another checksum, if any.
        other_version: Option<String>,
        /// The base paths searched.
        searched: String,
    },
    /// The pure server's pak lists cannot be answered.
    #[error("pure server: {0}")]
    Pure(String),
    /// A local pak could not be read.
    #[error("pak: {0}")]
    Pak(#[from] super::pak::PakError),
    /// The server dropped the client.
    #[error("the server disconnected the client: {0}")]
    Disconnected(String),
    /// A server message that did not decode.
    #[error("server message {sequence} does not decode: {source}")]
    Decode {
        /// Its sequence number.
        sequence: i32,
        /// The parser's error.
        #[source]
        source: MessageError,
    },
    /// The server needs something this client does not do.
    #[error("unsupported server: {0}")]
    Unsupported(String),
    /// Writing a message failed.
    #[error("bit stream: {0}")]
    Bits(#[from] BitError),
    /// The userinfo could not be compressed.
    #[error("userinfo: {0}")]
    Adaptive(#[from] AdaptiveError),
    /// Framing failed.
    #[error("netchan: {0}")]
    Netchan(#[from] NetchanError),
    /// A call the client cannot honour.
    #[error("{0}")]
    Usage(&'static str),
    /// The socket failed.
    #[error("socket: {0}")]
    Io(#[from] std::io::Error),
}

fn missing_pak(name: &str, checksum: i32, other: Option<&str>, searched: &str) -> String {
    match other {
        Some(path) => format!(
            "the server is pure and requires {name} (checksum {checksum}), but {path} is another version of it; \
             install the server's version, or point --basepath at a folder holding it"
        ),
        None => format!(
            "the server is pure and requires {name} (checksum {checksum}), which is not in {searched}; \
             point --basepath at the folder holding its game folder"
        ),
    }
}
