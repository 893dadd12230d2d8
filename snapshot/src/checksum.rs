//! Sync checksums (Age of Empires' out-of-sync check) and the layout
//! fingerprint a gamestate carries.
//!
//! Everything hashes field *words* — the values as the wire keeps them — so
//! the server's unrounded state and the client's decoded state hash alike.
//! The hash is FNV-1a over a fixed little-endian byte encoding: stable
//! across builds and platforms, which `std`'s hasher is not promised to be.

use fields::{FieldKind, Fields, ScalarKind};

/// 32-bit FNV-1a.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fnv32(u32);

impl Default for Fnv32 {
    fn default() -> Self {
        Fnv32::new()
    }
}

impl Fnv32 {
    const OFFSET: u32 = 0x811c_9dc5;
    const PRIME: u32 = 0x0100_0193;

    /// The empty hash.
    pub const fn new() -> Self {
        Fnv32(Self::OFFSET)
    }

    /// Mixes in one byte.
    #[inline]
    pub fn byte(&mut self, byte: u8) {
        self.0 = (self.0 ^ byte as u32).wrapping_mul(Self::PRIME);
    }

    /// Mixes in a `u32` as four little-endian bytes.
    #[inline]
    pub fn u32(&mut self, value: u32) {
        for byte in value.to_le_bytes() {
            self.byte(byte);
        }
    }

    /// The hash value.
    pub const fn finish(self) -> u32 {
        self.0
    }
}

/// Hash of every field word of `value`, in wire order.
pub fn state_hash<T: Fields>(value: &T) -> u32 {
    let mut hash = Fnv32::new();
    value.visit_words(|word| hash.u32(word));
    hash.finish()
}

/// The checksum of a whole client view: the player state's hash, then each
/// held entity's number and state hash in increasing number order.
#[derive(Debug, Clone, Copy)]
pub struct SyncChecksum(Fnv32);

impl SyncChecksum {
    /// Starts with the hash of the player state.
    pub fn new(player_hash: u32) -> Self {
        let mut hash = Fnv32::new();
        hash.u32(player_hash);
        SyncChecksum(hash)
    }

    /// Adds an entity (numbers must be added in increasing order).
    #[inline]
    pub fn entity(&mut self, number: u32, state_hash: u32) {
        self.0.u32(number);
        self.0.u32(state_hash);
    }

    /// The checksum.
    pub fn finish(self) -> u32 {
        self.0.finish()
    }
}

fn hash_scalar(hash: &mut Fnv32, kind: &ScalarKind) {
    match *kind {
        ScalarKind::Unsigned { bits } => {
            hash.byte(0);
            hash.byte(bits);
        }
        ScalarKind::Signed { bits } => {
            hash.byte(1);
            hash.byte(bits);
        }
        ScalarKind::Bool => hash.byte(2),
        ScalarKind::Q3Float => hash.byte(3),
        ScalarKind::Quantized { min, max, bits } => {
            hash.byte(4);
            hash.byte(bits);
            hash.u32(min.to_bits());
            hash.u32(max.to_bits());
        }
    }
}

fn hash_layout<T: Fields>(hash: &mut Fnv32, value: &T) {
    hash.u32(value.field_count() as u32);
    for field in 0..value.field_count() {
        match value.field_kind(field) {
            FieldKind::Scalar(kind) => {
                hash.byte(0);
                hash_scalar(hash, &kind);
            }
            FieldKind::Array { element, len } => {
                hash.byte(1);
                hash.byte(len);
                hash_scalar(hash, &element);
            }
        }
    }
}

/// Fingerprint of the wire layouts of the entity and player-state types:
/// field kinds and widths in order (names do not affect the wire, so a
/// schema-driven [`DynamicState`](fields::dynamic::DynamicState) and the
/// game's own struct agree).
pub fn layout_fingerprint<E: Fields, P: Fields>(entity: &E, player: &P) -> u32 {
    let mut hash = Fnv32::new();
    hash_layout(&mut hash, entity);
    hash_layout(&mut hash, player);
    hash.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fields::dynamic::DynamicLayout;
    use fields::{net_struct, q3_float, signed, unsigned, NetFields};

    net_struct! {
        struct A {
            x: f32 = q3_float(),
            n: i16 = signed(10),
        }
    }
    net_struct! {
        struct B {
            x: f32 = q3_float(),
            n: u16 = unsigned(10),
        }
    }

    #[test]
    fn fnv_matches_the_reference_values() {
        let mut hash = Fnv32::new();
        assert_eq!(hash.finish(), 0x811c_9dc5);
        hash.byte(b'a');
        assert_eq!(hash.finish(), 0xe40c_292c);
    }

    #[test]
    fn fingerprints_follow_kinds_not_names() {
        let a = A::default();
        let b = B::default();
        assert_ne!(layout_fingerprint(&a, &a), layout_fingerprint(&b, &a));
        let dynamic = DynamicLayout::new(A::TABLE.schema()).unwrap().zeroed();
        assert_eq!(layout_fingerprint(&dynamic, &a), layout_fingerprint(&a, &a));
    }

    #[test]
    fn state_hash_sees_words_not_bits() {
        let a = A { x: -0.0, n: 3 };
        let b = A { x: 0.0, n: 3 };
        assert_eq!(state_hash(&a), state_hash(&b));
        assert_ne!(state_hash(&a), state_hash(&A { x: 0.0, n: 4 }));
    }
}
