//! Quake 3's adaptive Huffman coding of a whole buffer (`Huff_Compress` /
//! `Huff_Decompress`), used for the userinfo string of the `connect` packet.
//!
//! Both ends start from a tree holding only the NYT leaf and update it after
//! every byte with the same FGK-style step [`HuffmanCode::quake3`] replays
//! (so the tree here is that replay's [`AdaptiveTree`]). A byte already in
//! the tree is sent as its path from the root; a new byte as the NYT leaf's
//! path followed by its 8 bits, most significant first. Bits fill each byte
//! from its low bit, like a [`crate::BitWriter`].
//!
//! The compressed form is a big-endian 16-bit count of the original bytes,
//! then the bits, then one more byte (the original's write position is
//! rounded up past a whole extra byte; that byte is zero here).
//!
//! One quirk decides what the receiver gets: the original stops writing tree
//! paths (not the 8 raw bits of new bytes) once its bit position reaches 8
//! times the *uncompressed* length, header included. Short inputs with many
//! distinct bytes hit that bound and come out undecodable, so
//! [`adaptive_compress`] refuses them with [`AdaptiveError::Truncated`]
//! instead of producing a buffer the receiver would misread.
//!
//! [`HuffmanCode::quake3`]: crate::HuffmanCode::quake3

use thiserror::Error;

use super::{AdaptiveTree, NONE, NYT};
use crate::huffman::HuffmanError;

/// Longest input the 16-bit count can describe.
pub const ADAPTIVE_MAX_LEN: usize = u16::MAX as usize;

/// Why a buffer could not be compressed or decompressed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum AdaptiveError {
    /// The input is longer than the 16-bit count allows.
    #[error("{len} bytes is more than the {max} an adaptive Huffman buffer can hold")]
    TooLong {
        /// The input length.
        len: usize,
        /// [`ADAPTIVE_MAX_LEN`].
        max: usize,
    },
    /// Quake 3's coder would cut tree paths short for this input (it is too
    /// short for its number of distinct bytes), so no receiver could decode it.
    #[error("the compressed form of these {len} bytes would be truncated by Quake 3's coder")]
    Truncated {
        /// The input length.
        len: usize,
    },
    /// The declared length is larger than the caller accepts.
    #[error("declared length {len} exceeds the limit of {max} bytes")]
    DeclaredTooLong {
        /// The declared length.
        len: usize,
        /// The caller's limit.
        max: usize,
    },
    /// The compressed bits end before the declared number of bytes.
    #[error("compressed data ends after {decoded} of {declared} bytes")]
    Short {
        /// Bytes decoded.
        decoded: usize,
        /// Bytes declared.
        declared: usize,
    },
    /// The tree update reached a state the original leaves undefined.
    #[error(transparent)]
    Tree(#[from] HuffmanError),
}

/// Appends bits low-bit-first, counting every bit as the original does.
struct BitOut {
    bytes: Vec<u8>,
    bit: usize,
}

impl BitOut {
    fn push(&mut self, bit: bool) {
        if self.bit % 8 == 0 {
            self.bytes.push(0);
        }
        if bit {
            self.bytes[self.bit / 8] |= 1 << (self.bit % 8);
        }
        self.bit += 1;
    }
}

impl AdaptiveTree {
    /// The path from the root to `leaf`, root end first, in `path`.
    fn path_to(&self, leaf: u16, path: &mut Vec<bool>) {
        path.clear();
        let mut child = leaf;
        loop {
            let parent = self.nodes[usize::from(child)].parent;
            if parent == NONE {
                break;
            }
            path.push(self.nodes[usize::from(parent)].right == child);
            child = parent;
        }
        path.reverse();
    }
}

/// Compresses `input` exactly as Quake 3's `Huff_Compress` does (see the
/// module docs for the format and the one input it refuses).
///
/// ```
/// use netq3_fields::huffman::{adaptive_compress, adaptive_decompress};
///
/// let text = b"\\name\\player\\rate\\25000\\snaps\\20\\model\\sarge\\headmodel\\sarge";
/// let packed = adaptive_compress(text)?;
/// assert!(packed.len() < text.len());
/// assert_eq!(adaptive_decompress(&packed, 1024)?, text);
/// # Ok::<(), netq3_fields::huffman::AdaptiveError>(())
/// ```
pub fn adaptive_compress(input: &[u8]) -> Result<Vec<u8>, AdaptiveError> {
    if input.len() > ADAPTIVE_MAX_LEN {
        return Err(AdaptiveError::TooLong {
            len: input.len(),
            max: ADAPTIVE_MAX_LEN,
        });
    }
    let len = input.len() as u16;
    let mut out = BitOut {
        bytes: len.to_be_bytes().to_vec(),
        bit: 16,
    };
    if input.is_empty() {
        // The original leaves an empty buffer untouched.
        return Ok(Vec::new());
    }
    // The original's bound on tree-path bits: the uncompressed size in bits.
    let limit = input.len() * 8;
    let mut tree = AdaptiveTree::new();
    let mut path = Vec::new();
    for &byte in input {
        let leaf = tree.leaf_of[usize::from(byte)];
        let known = leaf != NONE;
        tree.path_to(if known { leaf } else { NYT }, &mut path);
        for &bit in &path {
            if out.bit >= limit {
                return Err(AdaptiveError::Truncated { len: input.len() });
            }
            out.push(bit);
        }
        if !known {
            for shift in (0..8).rev() {
                out.push(byte >> shift & 1 != 0);
            }
        }
        tree.add_reference(byte)?;
    }
    // The original moves one whole byte past the last bit written.
    let total = (out.bit + 8) / 8;
    out.bytes.resize(total, 0);
    Ok(out.bytes)
}

/// Decompresses a buffer written by Quake 3's `Huff_Compress` (or
/// [`adaptive_compress`]), refusing declared lengths above `max_len` before
/// allocating anything.
pub fn adaptive_decompress(input: &[u8], max_len: usize) -> Result<Vec<u8>, AdaptiveError> {
    let Some((&[high, low], bits)) = input.split_first_chunk::<2>() else {
        return Err(AdaptiveError::Short {
            decoded: 0,
            declared: 0,
        });
    };
    let declared = usize::from(u16::from_be_bytes([high, low]));
    if declared > max_len {
        return Err(AdaptiveError::DeclaredTooLong {
            len: declared,
            max: max_len,
        });
    }
    let total_bits = bits.len() * 8;
    let mut position = 0usize;
    let mut next_bit = |decoded: usize| -> Result<bool, AdaptiveError> {
        if position >= total_bits {
            return Err(AdaptiveError::Short { decoded, declared });
        }
        let bit = bits[position / 8] >> (position % 8) & 1 != 0;
        position += 1;
        Ok(bit)
    };
    let mut tree = AdaptiveTree::new();
    let mut out = Vec::with_capacity(declared);
    while out.len() < declared {
        let mut node = tree.root;
        loop {
            let links = &tree.nodes[usize::from(node)];
            if links.left == NONE && links.right == NONE {
                break;
            }
            node = if next_bit(out.len())? {
                links.right
            } else {
                links.left
            };
        }
        let byte = match tree.nodes[usize::from(node)].symbol {
            Some(byte) => byte,
            None => {
                let mut byte = 0u8;
                for _ in 0..8 {
                    byte = byte << 1 | u8::from(next_bit(out.len())?);
                }
                byte
            }
        };
        out.push(byte);
        tree.add_reference(byte)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn first_bytes_are_sent_raw_after_the_empty_nyt_path() {
        // The first byte: the tree is the NYT leaf alone, so no path bits,
        // then its 8 bits most significant first (0x41 = 0100_0001).
        let packed = adaptive_compress(b"AAAAAAAA").unwrap();
        assert_eq!(&packed[..2], &[0, 8]);
        // Bits, low bit of each byte first: 0,1,0,0,0,0,0,1 for 'A'.
        assert_eq!(packed[2], 0b1000_0010);
        assert_eq!(adaptive_decompress(&packed, 8).unwrap(), b"AAAAAAAA");
    }

    #[test]
    fn short_inputs_of_distinct_bytes_are_refused() {
        assert_eq!(
            adaptive_compress(b"abc"),
            Err(AdaptiveError::Truncated { len: 3 })
        );
        assert_eq!(adaptive_compress(b""), Ok(Vec::new()));
    }

    #[test]
    fn decoder_checks_lengths() {
        let packed = adaptive_compress(b"aaaaaaaaaaaaaaaaaaaa").unwrap();
        assert!(matches!(
            adaptive_decompress(&packed, 19),
            Err(AdaptiveError::DeclaredTooLong { len: 20, max: 19 })
        ));
        assert!(matches!(
            adaptive_decompress(&packed[..3], 64),
            Err(AdaptiveError::Short { .. })
        ));
        assert!(matches!(
            adaptive_decompress(&[1], 64),
            Err(AdaptiveError::Short { .. })
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn round_trips_whatever_it_accepts(input in proptest::collection::vec(any::<u8>(), 0..600)) {
            match adaptive_compress(&input) {
                Ok(packed) if input.is_empty() => prop_assert!(packed.is_empty()),
                Ok(packed) => prop_assert_eq!(adaptive_decompress(&packed, 1024).unwrap(), input),
                Err(AdaptiveError::Truncated { .. }) => {}
                Err(e) => prop_assert!(false, "{e}"),
            }
        }

        #[test]
        fn text_of_userinfo_size_always_fits(words in proptest::collection::vec("[a-z0-9]{1,12}", 20..60)) {
            let text = format!("\"\\{}\"", words.join("\\"));
            let packed = adaptive_compress(text.as_bytes()).unwrap();
            prop_assert_eq!(adaptive_decompress(&packed, 4096).unwrap(), text.as_bytes());
        }

        #[test]
        fn decoder_never_panics(input in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = adaptive_decompress(&input, 1024);
        }
    }
}
