//! # netq3-fields
//!
//! The bottom layer of the library: how game state becomes bits. Declare a
//! networked struct once and send it as a delta, in Quake 3's bit-exact
//! format or the much smaller native one:
//!
//! ```
//! use netq3_fields::{net_struct, q3_float, signed, unsigned, BitReader, BitSink, BitWriter, Codec};
//!
//! net_struct! {
//!     /// What every client sees of a rocket.
//!     pub struct Rocket {
//!         /// Position.
//!         pub x: f32 = q3_float(),
//!         /// Position.
//!         pub y: f32 = q3_float(),
//!         /// Who fired it.
//!         pub owner: u16 = unsigned(10),
//!         /// Seconds of fuel left, may be negative while exploding.
//!         pub fuel: i8 = signed(6),
//!     }
//! }
//!
//! let before = Rocket { x: 100.0, y: 20.0, owner: 3, fuel: 12 };
//! let after = Rocket { x: 132.0, ..before };
//!
//! for codec in [Codec::Q3, Codec::Native] {
//!     let mut buf = [0u8; 64];
//!     let mut writer = BitWriter::new(&mut buf);
//!     codec.write_delta(&mut writer, &before, &after).unwrap();
//!     let bits = writer.bits_written();
//!
//!     // The receiver starts from its copy of the baseline.
//!     let mut received = before;
//!     codec.read_delta(&mut BitReader::with_bit_len(&buf, bits), &mut received).unwrap();
//!     assert_eq!(received, after);
//!     println!("{}: {bits} bits", codec.name());
//! }
//! ```
//!
//! What it holds:
//!
//! * [`bits`] — [`BitWriter`]/[`BitReader`] over caller buffers (least
//!   significant bit first, Quake 3's order), and the [`BitSink`]/[`BitSource`]
//!   traits every encoder writes through. With the `debug-keys` feature,
//!   writers put a check key after each entity and readers verify it.
//! * [`huffman`] — static Huffman codes with table-driven decoding, Quake 3's
//!   exact code, and the "bitstream mode" adapters that make any encoder emit
//!   Quake 3's message format.
//! * [`net_struct!`] — declares a networked struct once; it gets a static
//!   [`FieldTable`] (name, offset, bits, kind per field) and word accessors.
//! * [`codec`] — two delta codecs over any such struct: [`Codec::Q3`]
//!   (bit-exact Quake 3 protocol 68) and [`Codec::Native`] (much smaller).
//! * [`merge`] — the sorted walk of a base entity list against a newer one
//!   that every snapshot encoder and decoder makes.
//! * [`schema`] and [`dynamic`] — the table as data, with a stable
//!   fingerprint, and values decoded from a schema alone (for demo tools).
//!
//! Every decoder returns `Result<_, BitError>`; no input makes one panic.
#![forbid(unsafe_code)]

pub mod bits;
pub mod codec;
pub mod dynamic;
pub mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod huffman;
pub mod kind;
pub mod merge;
pub mod model;
pub mod range;
mod rounding;
pub mod schema;
pub mod table;
pub mod top_bits;
pub mod varcode;

pub use bits::{BitReader, BitSink, BitSource, BitWriter, Chance};
pub use codec::{
    Codec, DeltaContext, EntityBody, EntityHeader, EntityUpdate, ModelCodec, StartChoice,
};
pub use error::BitError;
pub use huffman::{HuffmanCode, HuffmanReader, HuffmanWriter};
pub use kind::{array, boolean, q3_float, quantized, signed, unsigned, FieldKind, ScalarKind};
pub use schema::{FieldSchema, Schema};
pub use table::{FieldDesc, FieldTable, Fields, NetFields};
