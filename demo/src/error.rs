//! Errors of recording, reading and playing native demos.

use snapshot::{ClientError, EncodeError};
use thiserror::Error;

/// Anything that can go wrong with a demo. Errors about a place in a file
/// name the record and its byte offset.
#[derive(Debug, Error)]
pub enum DemoError {
    /// Reading or writing the underlying file failed.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    /// The bytes are not a demo this tool reads.
    #[error("not a demo: {reason}")]
    NotADemo {
        /// What the first bytes looked like.
        reason: String,
    },
    /// A native demo of a format version this build cannot read.
    #[error("unsupported demo format version {found} (this build reads version {supported})")]
    UnknownVersion {
        /// The version in the file.
        found: u16,
        /// The version this build reads and writes.
        supported: u16,
    },
    /// The file header is damaged or inconsistent.
    #[error("bad demo header: {reason}")]
    BadHeader {
        /// What is wrong with it.
        reason: String,
    },
    /// A record whose framing or checksum is wrong.
    #[error("corrupted record {record} at byte offset {offset}: {reason}")]
    Corrupt {
        /// Index of the record (0-based, counting every record).
        record: usize,
        /// Byte offset of the record in the file.
        offset: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The file ends inside a record or without its end marker; every
    /// complete record before `offset` was read.
    #[error(
        "file truncated at byte offset {offset}: {complete_records} complete records, \
         no end marker ({reason})"
    )]
    Truncated {
        /// Byte offset of the incomplete record (the end of the good data).
        offset: usize,
        /// Records read completely (every kind, a complete index record included).
        complete_records: usize,
        /// What was missing.
        reason: String,
    },
    /// A record's message was rejected by the snapshot client.
    #[error("record {record} at byte offset {offset}: {source}")]
    Message {
        /// Index of the record.
        record: usize,
        /// Byte offset of the record.
        offset: usize,
        /// The client's error.
        #[source]
        source: ClientError,
    },
    /// A snapshot's sync checksum disagreed with the decoded state (`--verify`).
    #[error(
        "record {record} at byte offset {offset}: snapshot {sequence} failed its sync checksum"
    )]
    ChecksumMismatch {
        /// Index of the record.
        record: usize,
        /// Byte offset of the record.
        offset: usize,
        /// The snapshot's sequence.
        sequence: u32,
    },
    /// A snapshot could not be re-encoded.
    #[error("{0}")]
    Encode(#[from] EncodeError),
    /// The recorder was used out of order (a snapshot before a gamestate,
    /// a delta before any full snapshot, bytes that disagree with the call).
    #[error("recording refused: {0}")]
    Refused(String),
    /// A snapshot whose time is before the span asked for, or a span with nothing in it.
    #[error("{0}")]
    Span(String),
}

impl DemoError {
    /// Whether this is the truncation outcome: every complete record before
    /// it was good.
    pub fn is_truncation(&self) -> bool {
        matches!(self, DemoError::Truncated { .. })
    }
}
