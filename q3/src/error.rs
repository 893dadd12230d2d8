//! Errors of the Quake 3 demo reader. Every one says where: the record
//! (index and byte offset in the file) and, inside a message, the bit.

use fields::BitError;
use thiserror::Error;

/// What went wrong inside one server message. Bit positions count from the
/// first bit of the message (after the record header).
#[derive(Debug, Error, Clone, PartialEq)]
pub enum MessageError {
    /// The message is longer than Quake 3's `MAX_MSGLEN`.
    #[error("message of {len} bytes exceeds {max} bytes")]
    TooLong {
        /// Its length in bytes.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// A command byte that is not a protocol 68 server command.
    #[error("bad command byte {byte} at bit {bit}")]
    BadCommand {
        /// The byte read.
        byte: u8,
        /// Where the command byte starts.
        bit: usize,
    },
    /// Inside a gamestate, a byte other than configstring, baseline or end.
    #[error("bad command byte {byte} inside the gamestate at bit {bit}")]
    BadGamestateCommand {
        /// The byte read.
        byte: u8,
        /// Where the command byte starts.
        bit: usize,
    },
    /// The bit stream could not be read: it ended early, held an invalid
    /// Huffman code, or a decoded value was out of range (e.g. `lc` larger
    /// than the field count, an unsorted entity list).
    #[error("{context}: {source}")]
    Bits {
        /// What was being read.
        context: String,
        /// The low-level error, with its bit position.
        #[source]
        source: BitError,
    },
    /// A configstring index outside `0..MAX_CONFIGSTRINGS`.
    #[error("configstring index {index} at bit {bit} is outside 0..{max}")]
    ConfigstringIndex {
        /// The index read (a signed short, as Quake 3 reads it).
        index: i32,
        /// Where the index starts.
        bit: usize,
        /// The bound.
        max: usize,
    },
    /// The gamestate's configstrings exceed Quake 3's `MAX_GAMESTATE_CHARS`.
    #[error("gamestate text exceeds {max} characters at configstring {index} (bit {bit})")]
    GamestateTooLarge {
        /// The configstring that overflowed.
        index: usize,
        /// Where its text starts.
        bit: usize,
        /// The bound.
        max: usize,
    },
    /// An area mask longer than `MAX_MAP_AREA_BYTES`.
    #[error("area mask of {len} bytes at bit {bit} exceeds {max} bytes")]
    AreamaskTooLong {
        /// The length read.
        len: usize,
        /// Where the length starts.
        bit: usize,
        /// The bound.
        max: usize,
    },
    /// A download chunk size outside `0..=MAX_MSGLEN`.
    #[error("download chunk of {size} bytes at bit {bit} is outside 0..={max}")]
    DownloadChunk {
        /// The size read (a signed short).
        size: i32,
        /// Where the size starts.
        bit: usize,
        /// The bound.
        max: usize,
    },
    /// The server refused a download (negative file size and a reason).
    #[error("download refused by the server at bit {bit}: {reason}")]
    DownloadRefused {
        /// The server's text.
        reason: String,
        /// Where the file size starts.
        bit: usize,
    },
}

impl MessageError {
    /// Wraps a [`BitError`] with what was being read.
    pub fn bits(context: impl Into<String>, source: BitError) -> Self {
        MessageError::Bits {
            context: context.into(),
            source,
        }
    }

    /// Bit position of the error inside the message, when known.
    pub fn bit(&self) -> Option<usize> {
        match self {
            MessageError::TooLong { .. } => None,
            MessageError::BadCommand { bit, .. }
            | MessageError::BadGamestateCommand { bit, .. }
            | MessageError::ConfigstringIndex { bit, .. }
            | MessageError::GamestateTooLarge { bit, .. }
            | MessageError::AreamaskTooLong { bit, .. }
            | MessageError::DownloadChunk { bit, .. }
            | MessageError::DownloadRefused { bit, .. } => Some(*bit),
            MessageError::Bits { source, .. } => bit_error_position(source),
        }
    }
}

fn bit_error_position(error: &BitError) -> Option<usize> {
    match error {
        BitError::Overflow { position, .. }
        | BitError::EndOfInput { position, .. }
        | BitError::StringTooLong { position, .. }
        | BitError::InvalidCode { position }
        | BitError::KeyMismatch { position, .. }
        | BitError::Invalid { position, .. } => Some(*position),
        BitError::BadWidth(_) | BitError::NulInString { .. } => None,
    }
}

/// An error reading a `.dm_68` file: its framing or one of its messages.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum Q3Error {
    /// The content is not a Quake 3 demo (detected by content, not name).
    #[error("not a Quake 3 protocol 68 demo: {reason}")]
    NotDm68 {
        /// Why the first record is implausible.
        reason: String,
    },
    /// A record length that is negative (other than the end marker) or
    /// larger than Quake 3's `MAX_MSGLEN`.
    #[error(
        "record {record} at byte offset {offset}: message length {length} is outside 0..={max}"
    )]
    BadLength {
        /// Index of the record (0-based).
        record: usize,
        /// Byte offset of the record header in the file.
        offset: usize,
        /// The length field.
        length: i32,
        /// The bound (`MAX_MSGLEN`).
        max: usize,
    },
    /// The file ends inside a record (or without the end marker) after
    /// `complete_records` whole records.
    #[error(
        "file truncated: record {record} at byte offset {offset} needs {needed} bytes, \
         {available} remain (after {complete_records} complete records, no end marker)"
    )]
    Truncated {
        /// Index of the incomplete record.
        record: usize,
        /// Byte offset where it starts.
        offset: usize,
        /// Records read completely before it.
        complete_records: usize,
        /// Bytes the record needs (header and, when known, message).
        needed: usize,
        /// Bytes left in the file.
        available: usize,
    },
    /// A message failed to parse.
    #[error("{source} in record {record} (sequence {sequence}, byte offset {offset})")]
    Message {
        /// Index of the record (0-based).
        record: usize,
        /// Byte offset of the record header in the file.
        offset: usize,
        /// The record's server message sequence.
        sequence: i32,
        /// What went wrong, with the bit inside the message.
        #[source]
        source: MessageError,
    },
}

impl Q3Error {
    /// Whether this is the truncation outcome (the records before it were
    /// complete and valid; Quake 3 itself stops playback there silently).
    pub fn is_truncation(&self) -> bool {
        matches!(self, Q3Error::Truncated { .. })
    }

    /// Index of the record concerned, if any.
    pub fn record(&self) -> Option<usize> {
        match self {
            Q3Error::NotDm68 { .. } => None,
            Q3Error::BadLength { record, .. }
            | Q3Error::Truncated { record, .. }
            | Q3Error::Message { record, .. } => Some(*record),
        }
    }
}
