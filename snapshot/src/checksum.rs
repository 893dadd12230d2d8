//! Sync checksums (Age of Empires' out-of-sync check) and the layout
//! fingerprint a gamestate carries.
//!
//! Everything hashes field *words* — the values as the wire keeps them — so
//! the server's unrounded state and the client's decoded state hash alike.
//! Every hash is over a fixed little-endian byte encoding with a specified
//! algorithm: stable across builds and platforms, which `std`'s hasher is
//! not promised to be. States and views are hashed with XXH3, which takes
//! eight bytes at a time (the server hashes every changed entity of every
//! frame, and FNV-1a's byte-serial multiply chain made that a tenth of a
//! 64-client frame); the layout fingerprint, computed once, stays FNV-1a.

use fields::{FieldKind, Fields, ScalarKind};
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

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

/// Bytes of words gathered on the stack before they go to the hasher: a
/// state of up to 256 words is hashed in one call.
const GATHER_BYTES: usize = 1024;

/// XXH3-64 of a sequence of little-endian `u32`s, fed in kilobyte chunks:
/// one call over the whole input when it fits, else XXH3's streaming form,
/// which gives the same hash (and no allocation either way).
struct WordHash {
    gathered: [u8; GATHER_BYTES],
    len: usize,
    stream: Option<Xxh3>,
}

impl WordHash {
    fn new() -> Self {
        WordHash {
            gathered: [0; GATHER_BYTES],
            len: 0,
            stream: None,
        }
    }

    #[inline(always)]
    fn u32(&mut self, word: u32) {
        if self.len == GATHER_BYTES {
            self.stream
                .get_or_insert_with(Xxh3::new)
                .update(&self.gathered);
            self.len = 0;
        }
        self.gathered[self.len..self.len + 4].copy_from_slice(&word.to_le_bytes());
        self.len += 4;
    }

    /// The low 32 bits of the hash (by reference: moving the kilobyte
    /// buffer out would cost more than hashing a state).
    fn finish(&mut self) -> u32 {
        let rest = &self.gathered[..self.len];
        let hash = match &mut self.stream {
            None => xxh3_64(rest),
            Some(stream) => {
                stream.update(rest);
                stream.digest()
            }
        };
        hash as u32
    }
}

/// Hash of every field word of `value`, in wire order: the low 32 bits of
/// XXH3-64 over the words as little-endian bytes.
pub fn state_hash<T: Fields>(value: &T) -> u32 {
    let mut hash = WordHash::new();
    value.visit_words(|word| hash.u32(word));
    hash.finish()
}

/// The checksum of a whole client view: the player state's hash, then each
/// held entity's number and state hash in increasing number order (all as
/// little-endian `u32`s), under XXH3-64, cut to 32 bits.
pub struct SyncChecksum(WordHash);

impl std::fmt::Debug for SyncChecksum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncChecksum")
            .field("words", &(self.0.len / 4))
            .finish_non_exhaustive()
    }
}

impl SyncChecksum {
    /// Starts with the hash of the player state.
    pub fn new(player_hash: u32) -> Self {
        let mut hash = WordHash::new();
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
    pub fn finish(mut self) -> u32 {
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
    use fields::{array, net_struct, q3_float, signed, unsigned, NetFields};

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

    /// XXH3-64 of the empty input (the algorithm's published test value):
    /// the hash is the specified one, not a look-alike.
    #[test]
    fn xxh3_matches_the_reference_value() {
        assert_eq!(xxh3_64(b""), 0x2d06_8005_38d3_94c2);
    }

    net_struct! {
        struct Wide {
            a: [i32; 32] = array(signed(32), 32),
            b: [i32; 32] = array(signed(32), 32),
            c: [i32; 32] = array(signed(32), 32),
            d: [i32; 32] = array(signed(32), 32),
            e: [i32; 32] = array(signed(32), 32),
            f: [i32; 32] = array(signed(32), 32),
            g: [i32; 32] = array(signed(32), 32),
            h: [i32; 32] = array(signed(32), 32),
            i: [i32; 32] = array(signed(32), 32),
        }
    }

    /// More words than the stack gathers: the streaming path gives the
    /// hash of all the bytes at once.
    #[test]
    fn a_wide_state_hashes_like_one_call() {
        let mut wide = Wide::default();
        for (i, slot) in wide.c.iter_mut().chain(wide.i.iter_mut()).enumerate() {
            *slot = i as i32 * 7919 - 100;
        }
        let mut bytes = Vec::new();
        wide.visit_words(|word| bytes.extend_from_slice(&word.to_le_bytes()));
        assert_eq!(bytes.len(), 9 * 32 * 4);
        assert_eq!(state_hash(&wide), xxh3_64(&bytes) as u32);
    }

    #[test]
    fn state_hash_is_xxh3_of_the_words() {
        let a = A { x: 1.5, n: -2 };
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&1.5f32.to_bits().to_le_bytes());
        bytes.extend_from_slice(&((-2i32 as u32) & 0x3ff).to_le_bytes());
        assert_eq!(state_hash(&a), xxh3_64(&bytes) as u32);
    }

    #[test]
    fn a_sync_checksum_is_xxh3_of_its_words() {
        let mut checksum = SyncChecksum::new(7);
        checksum.entity(3, 0xdead_beef);
        checksum.entity(9, 1);
        let words: [u32; 5] = [7, 3, 0xdead_beef, 9, 1];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(checksum.finish(), xxh3_64(&bytes) as u32);
    }

    #[test]
    fn state_hash_sees_words_not_bits() {
        let a = A { x: -0.0, n: 3 };
        let b = A { x: 0.0, n: 3 };
        assert_eq!(state_hash(&a), state_hash(&b));
        assert_ne!(state_hash(&a), state_hash(&A { x: 0.0, n: 4 }));
    }
}
