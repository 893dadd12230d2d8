//! # fields
//!
//! Bit-level streams, Huffman coding and the field-table machinery that the
//! snapshot layer uses to send entity and player state as deltas.
#![forbid(unsafe_code)]

pub mod bits;
pub mod codec;
pub mod dynamic;
pub mod error;
pub mod kind;
pub mod schema;
pub mod table;
pub mod varcode;

pub use bits::{BitReader, BitSink, BitSource, BitWriter};
pub use codec::{Codec, EntityBody, EntityUpdate};
pub use error::BitError;
pub use kind::{array, boolean, q3_float, quantized, signed, unsigned, FieldKind, ScalarKind};
pub use schema::{FieldSchema, Schema};
pub use table::{FieldDesc, FieldTable, Fields, NetFields};
