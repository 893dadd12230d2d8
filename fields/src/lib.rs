//! # fields
//!
//! Bit-level streams, Huffman coding and the field-table machinery that the
//! snapshot layer uses to send entity and player state as deltas.
#![forbid(unsafe_code)]

pub mod bits;
pub mod error;

pub use bits::{BitReader, BitSink, BitSource, BitWriter};
pub use error::BitError;
