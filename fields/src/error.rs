//! The one error type of every decoder in this crate.

use thiserror::Error;

/// What went wrong while writing or reading a bit stream, and where.
///
/// Positions are bit offsets from the start of the stream, so a report can be
/// matched against a hex dump (`position / 8` is the byte).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum BitError {
    /// A write did not fit in the caller's buffer.
    #[error("writing {requested} bits at bit {position} overflows the {capacity}-bit buffer")]
    Overflow {
        /// Bit offset of the write.
        position: usize,
        /// Bits the write needed.
        requested: u32,
        /// Capacity of the buffer in bits.
        capacity: usize,
    },
    /// A read ran past the end of the input.
    #[error(
        "reading {requested} bits at bit {position} runs past the end of the {available}-bit input"
    )]
    EndOfInput {
        /// Bit offset of the read.
        position: usize,
        /// Bits the read needed.
        requested: u32,
        /// Length of the input in bits.
        available: usize,
    },
    /// A bit count outside `1..=32` was asked for.
    #[error("bit width {0} is outside 1..=32")]
    BadWidth(u32),
    /// A string was longer than its bound (or was not terminated within it).
    #[error("string at bit {position} exceeds its bound of {max} bytes")]
    StringTooLong {
        /// Bit offset where the string starts.
        position: usize,
        /// The bound in bytes, terminator excluded.
        max: usize,
    },
    /// A string to be written contains a NUL byte, which is its terminator on the wire.
    #[error("string contains a NUL byte at index {index}")]
    NulInString {
        /// Byte index of the NUL.
        index: usize,
    },
    /// The bits at `position` are not a valid Huffman code word.
    #[error("invalid Huffman code at bit {position}")]
    InvalidCode {
        /// Bit offset where the code word starts.
        position: usize,
    },
    /// A `debug-keys` check key did not match: the reader and writer disagree
    /// about the layout of the entity or event just before `position`.
    #[error("debug key mismatch at bit {position}: expected {expected:#06x}, found {found:#06x}")]
    KeyMismatch {
        /// Bit offset of the key.
        position: usize,
        /// Key the reader expected.
        expected: u16,
        /// Key found in the stream.
        found: u16,
    },
    /// A decoded value is outside what the format allows.
    #[error("{what} at bit {position}: {detail}")]
    Invalid {
        /// What was being decoded (a field name, "entity number", ...).
        what: &'static str,
        /// Bit offset at which the value was read.
        position: usize,
        /// Human-readable reason.
        detail: String,
    },
}

impl BitError {
    /// Builds an [`BitError::Invalid`] for a value that decoded but is not allowed.
    pub fn invalid(what: &'static str, position: usize, detail: impl Into<String>) -> Self {
        BitError::Invalid {
            what,
            position,
            detail: detail.into(),
        }
    }
}
