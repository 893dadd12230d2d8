//! Static Huffman coding of bytes, including Quake 3's exact message code.
//!
//! A [`HuffmanCode`] holds one code word per byte value and a table-driven
//! decoder. There are three ways to get one:
//!
//! * [`HuffmanCode::quake3`] — the code every Quake 3 (protocol 68) client
//!   and server uses for its messages, rebuilt exactly (see below);
//! * [`HuffmanCode::from_frequencies`] — an optimal code for 256 byte counts,
//!   built as the `huffman-compress` crate builds it, bit for bit;
//! * [`HuffmanCode::from_code_words`] — any prefix-free code given word by word.
//!
//! ## Bit order
//!
//! A code word is transmitted from the root of its tree downwards, and each
//! transmitted bit goes into the stream exactly like a [`BitWriter`] bit (low
//! bit of the first byte first). [`CodeWord::bits`] therefore holds the first
//! transmitted bit in its least significant bit, so encoding a symbol is a
//! single `put_bits(word.bits, word.len)` and decoding is a peek into a lookup
//! table followed by a skip.
//!
//! ## Bitstream mode
//!
//! Quake 3 does not Huffman-code whole messages: in "bitstream mode" an
//! `n`-bit value is written as its low `n % 8` bits raw, then each remaining
//! whole byte (low byte first) as a Huffman symbol. [`HuffmanWriter`] and
//! [`HuffmanReader`] implement [`BitSink`]/[`BitSource`](crate::BitSource) that way, so any codec
//! written against those traits produces Quake 3's wire format unchanged.
//!
//! ## Quake 3's code
//!
//! Quake 3 never ships its code words. It feeds the 256 counts in
//! [`QUAKE3_FREQUENCIES`] through an adaptive (FGK-style) Huffman coder one
//! reference at a time and then freezes the resulting tree. That tree is not
//! canonical and not the one a static Huffman builder would pick for the same
//! counts, so this module replays the adaptive construction step by step
//! ([`HuffmanCode::from_adaptive_replay`]). That replay costs a program tens
//! of milliseconds, so its result for Quake 3's table is compiled in as
//! [`QUAKE3_CODE_WORDS`] (generated source, held equal to a fresh replay by
//! a test) and [`HuffmanCode::quake3`] starts from those words. The tree also holds a weight-0 "not yet transmitted" leaf; its
//! code word is valid on the wire but decodes to no byte, so decoding it is a
//! [`BitError::InvalidCode`].
//!
//! ## Adaptive coding of whole buffers
//!
//! Quake 3 also compresses one thing with the adaptive coder itself: the
//! userinfo of the `connect` packet. [`adaptive_compress`] and
//! [`adaptive_decompress`] do what its `Huff_Compress`/`Huff_Decompress` do,
//! on the same tree the replay above uses.
//!
//! ## Example
//!
//! ```
//! use netq3_fields::{BitReader, BitSink, BitSource, BitWriter};
//! use netq3_fields::{HuffmanCode, HuffmanReader, HuffmanWriter};
//!
//! let code = HuffmanCode::quake3();
//! let mut buf = [0u8; 64];
//! let mut writer = BitWriter::new(&mut buf);
//! let mut sink = HuffmanWriter::new(&mut writer, code);
//! sink.put_bits(0x1234, 13)?; // 5 raw bits, then one coded byte
//! sink.put_str("hello", 64)?; // one coded byte per character
//! let bits = sink.bits_written();
//!
//! let mut source = HuffmanReader::new(BitReader::with_bit_len(&buf, bits), code);
//! assert_eq!(source.get_bits(13)?, 0x1234);
//! assert_eq!(source.get_string(64)?, "hello");
//! assert_eq!(source.bits_read(), bits);
//! # Ok::<(), netq3_fields::BitError>(())
//! ```

mod decode;
#[cfg(test)]
mod demo_tests;
mod quake3;
mod stream;
mod table;
#[cfg(test)]
mod tests;

use std::fmt;

use thiserror::Error;

use crate::bits::{low_mask, BitReader, BitSink, BitWriter};
use crate::error::BitError;

pub use decode::TreeDecoder;
pub use quake3::adaptive::{
    adaptive_compress, adaptive_decompress, AdaptiveError, ADAPTIVE_MAX_LEN,
};
pub use quake3::{
    MAX_REPLAY_TOTAL, QUAKE3_CODE_WORDS, QUAKE3_FREQUENCIES, QUAKE3_MAX_CODE_LEN, QUAKE3_NYT_WORD,
};
pub use stream::{HuffmanReader, HuffmanWriter};
pub use table::MAX_FREQUENCY_CODE_LEN;

/// Longest code word any [`HuffmanCode`] can hold, in bits: a word must fit
/// the 32-bit [`CodeWord::bits`] and a single [`BitSink::put_bits`] call.
pub const MAX_CODE_LEN: u32 = 32;

/// The code word of one symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CodeWord {
    /// The code bits; bit 0 is transmitted first (it picks the child of the
    /// root: 0 = left, 1 = right). Bits at and above `len` are zero.
    pub bits: u32,
    /// Length of the code word in bits (`1..=32` in a valid code).
    pub len: u8,
}

impl CodeWord {
    /// Builds a code word from its bits in transmission order (the first item
    /// is sent first). Returns `None` for more than [`MAX_CODE_LEN`] bits.
    pub fn from_bits_in_order(bits: impl IntoIterator<Item = bool>) -> Option<CodeWord> {
        let mut word = CodeWord::default();
        for bit in bits {
            if u32::from(word.len) == MAX_CODE_LEN {
                return None;
            }
            word.bits |= u32::from(bit) << word.len;
            word.len += 1;
        }
        Some(word)
    }

    /// Bit `index` in transmission order (`false` at and past `len`).
    pub fn bit(self, index: u8) -> bool {
        self.bits.checked_shr(u32::from(index)).unwrap_or(0) & 1 != 0
    }
}

/// Why a [`HuffmanCode`] could not be built.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum HuffmanError {
    /// A symbol's code word is empty or longer than [`MAX_CODE_LEN`] bits.
    #[error("code word of symbol {symbol} has length {len}, outside 1..=32")]
    BadLength {
        /// The symbol.
        symbol: u8,
        /// Its code length in bits.
        len: u32,
    },
    /// A symbol's code word equals another one or is a prefix of it (or the
    /// other way round), so a decoder could not tell them apart.
    #[error("code word of symbol {symbol} collides with another code word")]
    NotPrefixFree {
        /// The symbol whose code word was being added when the clash was found.
        symbol: u8,
    },
    /// An adaptive replay was asked for a symbol that is never referenced: it
    /// would get no code word at all (Quake 3 cannot send such a byte either).
    #[error("symbol {symbol} has frequency zero, so the adaptive tree has no code for it")]
    ZeroFrequency {
        /// The symbol.
        symbol: u8,
    },
    /// An adaptive replay would take too long: its cost grows with the sum of
    /// the frequencies, which is capped at [`MAX_REPLAY_TOTAL`].
    #[error("frequencies sum to {total}, more than an adaptive replay accepts")]
    ReplayTooLong {
        /// Sum of the frequencies.
        total: u64,
    },
    /// The adaptive construction reached a state in which the original
    /// algorithm would read freed or inconsistent memory, so there is no
    /// well-defined result to reproduce.
    #[error("adaptive Huffman replay became inconsistent: {0}")]
    ReplayInconsistent(&'static str),
}

/// A Huffman code for the 256 byte values with a table-driven decoder.
///
/// Cheap to share (`&HuffmanCode` is all the encoders and decoders need) and
/// immutable once built. Encoding and decoding never allocate.
#[derive(Clone)]
pub struct HuffmanCode {
    words: [CodeWord; 256],
    tree: decode::Tree,
    table: decode::LookupTable,
}

impl fmt::Debug for HuffmanCode {
    // The tables are thousands of entries; a summary is more useful in logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HuffmanCode")
            .field("max_code_len", &self.max_code_len())
            .field("primary_table_bits", &self.table.primary_bits())
            .field("table_entries", &self.table.len())
            .finish_non_exhaustive()
    }
}

/// Window bits the first level of a [`DecodeTable`] decodes.
const HEAD_BITS: u32 = 6;

/// Window bits of the table behind a [`DecodeTable`]'s head (its first
/// level), which decodes the longer code words.
const REST_BITS: u32 = 5;

/// A [`DecodeTable`] head entry whose code word is longer than the head
/// (or invalid): the look-up continues in the table behind it. No code word
/// has the length its bits 8..16 would give (255).
const HEAD_MISS: u16 = u16::MAX;

/// A code's decoding table without its code words and tree (see
/// [`HuffmanCode::decode_table`]), for a program that holds many codes and
/// decodes a few symbols with each, such as one code per symbol context.
///
/// Its first level (the code words of at most six bits, which are most
/// of what a skewed code reads) lies inline, on two cache lines of its
/// own, a symbol and a length in 16 bits an entry; longer code words
/// continue in tables behind a pointer. A symbol read from a code not
/// used lately then costs one cache miss, not one for the table's address
/// and another for its entry. (The head held 32-bit entries of five bits
/// before, on the same two lines: a six-bit word took a second level's
/// walk; decoding the duel, 3.9 M instructions more. Seven bits, on four
/// lines, saved no more.)
#[derive(Debug, Clone)]
#[repr(align(64))]
pub struct DecodeTable {
    head: [u16; 1 << HEAD_BITS],
    rest: decode::LookupTable,
}

impl DecodeTable {
    fn new(tree: &decode::Tree) -> Self {
        let rest = decode::LookupTable::build_with(tree, REST_BITS);
        // A window whose low bits hold a whole code word decodes the same
        // whatever the bits above them.
        let head = std::array::from_fn(|i| match rest.lookup(i as u32) {
            Ok((symbol, len)) if len <= HEAD_BITS => u16::from(symbol) | (len as u16) << 8,
            _ => HEAD_MISS,
        });
        DecodeTable { head, rest }
    }

    /// As [`HuffmanCode::lookup`].
    #[inline]
    pub fn lookup(&self, window: u32) -> Result<(u8, u32), u32> {
        let entry = self.head[(window & low_mask(HEAD_BITS)) as usize];
        if entry != HEAD_MISS {
            return Ok((entry as u8, u32::from(entry >> 8)));
        }
        self.rest.lookup(window)
    }
}

impl HuffmanCode {
    /// Builds a code from one code word per byte value (`words[b]` for byte
    /// `b`). The words must be prefix-free and `1..=32` bits long; they need
    /// not fill the code space: bit patterns that lead nowhere decode as
    /// [`BitError::InvalidCode`].
    pub fn from_code_words(words: &[CodeWord; 256]) -> Result<HuffmanCode, HuffmanError> {
        let mut words = *words;
        for (symbol, word) in words.iter_mut().enumerate() {
            let len = u32::from(word.len);
            if len == 0 || len > MAX_CODE_LEN {
                return Err(HuffmanError::BadLength {
                    symbol: symbol as u8,
                    len,
                });
            }
            // Normalise so callers can rely on the documented zero high bits.
            word.bits &= low_mask(len);
        }
        let tree = decode::Tree::from_code_words(&words)?;
        let table = decode::LookupTable::build(&tree);
        Ok(HuffmanCode { words, tree, table })
    }

    /// The same code with a decoding table of at most `bits` primary bits
    /// (1 to 12; the default is 12). Longer code words take a second
    /// look-up. A program holding hundreds of codes (one per symbol
    /// context) keeps them in cache with small tables; one hot code is
    /// fastest with a wide one.
    pub fn with_table_bits(mut self, bits: u32) -> HuffmanCode {
        self.table = decode::LookupTable::build_with(&self.tree, bits);
        self
    }

    /// The code's decoding table on its own, laid out for programs that
    /// keep many codes and want the decoding side compact (see
    /// [`DecodeTable`]).
    pub fn decode_table(&self) -> DecodeTable {
        DecodeTable::new(&self.tree)
    }

    /// The code word of `byte`.
    #[inline]
    pub fn code_word(&self, byte: u8) -> CodeWord {
        self.words[usize::from(byte)]
    }

    /// All 256 code words, indexed by byte value.
    pub fn code_words(&self) -> &[CodeWord; 256] {
        &self.words
    }

    /// Code length of every byte value, in bits.
    pub fn code_lengths(&self) -> [u8; 256] {
        self.words.map(|w| w.len)
    }

    /// Length of the longest code word, in bits.
    pub fn max_code_len(&self) -> u32 {
        self.words
            .iter()
            .map(|w| u32::from(w.len))
            .max()
            .unwrap_or(0)
    }

    /// Total length in bits of `input` once encoded.
    pub fn encoded_bits(&self, input: &[u8]) -> usize {
        input
            .iter()
            .map(|&b| usize::from(self.words[usize::from(b)].len))
            .sum()
    }

    /// Writes the code word of `byte` to `sink`.
    #[inline]
    pub fn encode_symbol(&self, sink: &mut impl BitSink, byte: u8) -> Result<(), BitError> {
        let word = self.words[usize::from(byte)];
        sink.put_bits(word.bits, u32::from(word.len))
    }

    /// Encodes every byte of `input` into `out`. All or nothing: if the
    /// encoded bytes do not fit, nothing is written and the error is
    /// [`BitError::Overflow`] for the whole input.
    pub fn encode_bytes(&self, input: &[u8], out: &mut BitWriter<'_>) -> Result<(), BitError> {
        let needed = self.encoded_bits(input);
        let position = out.bits_written();
        if position + needed > out.capacity_bits() {
            return Err(BitError::Overflow {
                position,
                requested: u32::try_from(needed).unwrap_or(u32::MAX),
                capacity: out.capacity_bits(),
            });
        }
        input.iter().try_for_each(|&b| self.encode_symbol(out, b))
    }

    /// Decodes one symbol with the lookup tables.
    ///
    /// On error the reader has not moved, and the error's position is where
    /// the offending code word starts: [`BitError::InvalidCode`] for a bit
    /// pattern that is not a code word (such as Quake 3's NYT code), or
    /// [`BitError::EndOfInput`] when the input ends inside a code word.
    #[inline]
    pub fn decode_symbol(&self, reader: &mut BitReader<'_>) -> Result<u8, BitError> {
        self.table.decode(reader)
    }

    /// The code word at the start of `window`, 32 upcoming stream bits
    /// (low bit first, zeros past the end): `Ok((symbol, length))`, or
    /// `Err(length)` when the first `length` bits are no code word's. The
    /// caller checks `length` against the bits really left.
    #[inline]
    pub fn lookup(&self, window: u32) -> Result<(u8, u32), u32> {
        self.table.lookup(window)
    }

    /// Fills `out` with decoded symbols. On error, the bytes before the failing
    /// symbol are decoded and the reader stands at the start of that symbol.
    pub fn decode_bytes(&self, reader: &mut BitReader<'_>, out: &mut [u8]) -> Result<(), BitError> {
        for slot in out {
            *slot = self.decode_symbol(reader)?;
        }
        Ok(())
    }

    /// A decoder that walks the code tree one bit at a time. It gives exactly
    /// the same results as [`decode_symbol`](Self::decode_symbol), only
    /// slower: it exists as a test oracle and a benchmark baseline.
    pub fn tree_decoder(&self) -> TreeDecoder<'_> {
        TreeDecoder::new(self)
    }
}
