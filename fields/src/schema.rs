//! Owned, serializable description of a field table, with a stable fingerprint.
//!
//! A demo file carries the schema of the structs it encodes so it can be
//! inspected without the game's Rust types, and a connection handshake
//! compares fingerprints so both ends agree on the wire layout.

use serde::{Deserialize, Serialize};

use crate::kind::{FieldKind, ScalarKind};
use crate::table::FieldTable;

/// One field of a [`Schema`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldSchema {
    /// Field name.
    pub name: String,
    /// Wire kind.
    pub kind: FieldKind,
}

/// The wire-relevant part of a [`FieldTable`]: names, kinds and bit widths
/// in wire order. Byte offsets are left out: they describe one build's memory
/// layout, not the protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schema {
    /// Struct name.
    pub name: String,
    /// Fields in wire order.
    pub fields: Vec<FieldSchema>,
}

impl Schema {
    /// The schema of a static table.
    pub fn from_table(table: &FieldTable) -> Self {
        Schema {
            name: table.name.to_owned(),
            fields: table
                .fields
                .iter()
                .map(|f| FieldSchema {
                    name: f.name.to_owned(),
                    kind: f.kind,
                })
                .collect(),
        }
    }

    /// A 64-bit fingerprint that depends only on the names, kinds and
    /// parameters, in order. It is computed with FNV-1a over a fixed byte
    /// encoding (not `std`'s hasher, whose output may change between Rust
    /// releases), so it is stable across builds and platforms.
    pub fn fingerprint(&self) -> u64 {
        let mut hash = Fnv1a::new();
        hash.text(&self.name);
        hash.bytes(&(self.fields.len() as u32).to_le_bytes());
        for field in &self.fields {
            hash.text(&field.name);
            match field.kind {
                FieldKind::Scalar(kind) => {
                    hash.bytes(&[0]);
                    hash.scalar(&kind);
                }
                FieldKind::Array { element, len } => {
                    hash.bytes(&[1, len]);
                    hash.scalar(&element);
                }
            }
        }
        hash.finish()
    }
}

/// Fingerprint of several schemas together (for example the entity and the
/// player-state struct of one protocol), order-sensitive.
pub fn combined_fingerprint(schemas: &[&Schema]) -> u64 {
    let mut hash = Fnv1a::new();
    for schema in schemas {
        hash.bytes(&schema.fingerprint().to_le_bytes());
    }
    hash.finish()
}

struct Fnv1a(u64);

impl Fnv1a {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn new() -> Self {
        Fnv1a(Self::OFFSET)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }

    /// Length-prefixed so that ("ab","c") and ("a","bc") differ.
    fn text(&mut self, text: &str) {
        self.bytes(&(text.len() as u32).to_le_bytes());
        self.bytes(text.as_bytes());
    }

    fn scalar(&mut self, kind: &ScalarKind) {
        match *kind {
            ScalarKind::Unsigned { bits } => self.bytes(&[0, bits]),
            ScalarKind::Signed { bits } => self.bytes(&[1, bits]),
            ScalarKind::Bool => self.bytes(&[2]),
            ScalarKind::Q3Float => self.bytes(&[3]),
            ScalarKind::Quantized { min, max, bits } => {
                self.bytes(&[4, bits]);
                self.bytes(&min.to_bits().to_le_bytes());
                self.bytes(&max.to_bits().to_le_bytes());
            }
        }
    }

    fn finish(self) -> u64 {
        self.0
    }
}
