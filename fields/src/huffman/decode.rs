//! Decoding: the code tree, the multi-level lookup tables built from it, and
//! the plain bit-by-bit tree walk kept as an oracle and benchmark baseline.
//!
//! The tables are indexed by upcoming stream bits. The primary table covers
//! the first `min(depth, 12)` bits, which is every Quake 3 code word (at most
//! 11 bits), so a Quake 3 symbol costs one peek, one lookup and one skip.
//! Deeper codes continue in sub-tables of at most 8 bits each, hung off the
//! tree nodes where the previous table ran out of bits.

use super::{CodeWord, HuffmanCode, HuffmanError};
use crate::bits::{low_mask, BitReader, BitSource};
use crate::error::BitError;

/// Where one branch of a tree node leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    /// No code word continues this way: the bits read so far are invalid.
    Missing,
    /// A complete code word for this byte.
    Leaf(u8),
    /// Another internal node (index into [`Tree::nodes`]).
    Node(u16),
}

/// The code as a binary trie: `nodes[n][bit]` is where `bit` leads from node
/// `n`; node 0 is the root. Children always have larger indices than their
/// parent, which lets [`Tree::heights`] work in one backward pass.
#[derive(Debug, Clone)]
pub(super) struct Tree {
    nodes: Vec<[Link; 2]>,
}

impl Tree {
    /// Inserts every code word (lengths already checked to be `1..=32`),
    /// rejecting any that shares its path with another.
    pub(super) fn from_code_words(words: &[CodeWord; 256]) -> Result<Tree, HuffmanError> {
        let mut nodes = vec![[Link::Missing; 2]];
        for (symbol, word) in words.iter().enumerate() {
            let symbol = symbol as u8;
            let clash = HuffmanError::NotPrefixFree { symbol };
            let mut node = 0;
            for i in 0..word.len - 1 {
                let bit = usize::from(word.bit(i));
                node = match nodes[node][bit] {
                    Link::Node(next) => usize::from(next),
                    Link::Missing => {
                        // At most 256 words of at most 31 internal steps each,
                        // so indices stay far below u16::MAX.
                        let next = nodes.len();
                        nodes.push([Link::Missing; 2]);
                        nodes[node][bit] = Link::Node(next as u16);
                        next
                    }
                    Link::Leaf(_) => return Err(clash),
                };
            }
            let last = &mut nodes[node][usize::from(word.bit(word.len - 1))];
            if *last != Link::Missing {
                return Err(clash);
            }
            *last = Link::Leaf(symbol);
        }
        Ok(Tree { nodes })
    }

    /// For every node, the number of bits from it to its deepest leaf or
    /// missing branch.
    fn heights(&self) -> Vec<u32> {
        let mut heights = vec![0u32; self.nodes.len()];
        for n in (0..self.nodes.len()).rev() {
            heights[n] = self.nodes[n]
                .iter()
                .map(|link| match *link {
                    Link::Node(child) => 1 + heights[usize::from(child)],
                    Link::Leaf(_) | Link::Missing => 1,
                })
                .max()
                .unwrap_or(1);
        }
        heights
    }
}

/// Widest primary table: 4096 entries of 4 bytes, small enough for L1.
const PRIMARY_MAX_BITS: u32 = 12;
/// Widest sub-table; keeps the worst case (deep, sparse codes) to a few
/// hundred kilobytes instead of `2^(32 - 12)` entries per sub-table.
const SUB_MAX_BITS: u32 = 8;

// A table entry is a u32: the top two bits say what it is.
const KIND_MASK: u32 = 3 << 30;
/// Bits 0..8 symbol, bits 8..14 total code length.
const KIND_LEAF: u32 = 0;
/// Bits 0..8 width of the sub-table, bits 8..30 its offset in `entries`.
const KIND_SUB: u32 = 1 << 30;
/// Bits 8..14 how many bits it takes to know the pattern is invalid.
const KIND_INVALID: u32 = 2 << 30;
const OFFSET_LIMIT: usize = 1 << 22;

fn leaf_entry(symbol: u8, len: u32) -> u32 {
    KIND_LEAF | (len << 8) | u32::from(symbol)
}

fn invalid_entry(len: u32) -> u32 {
    KIND_INVALID | (len << 8)
}

fn sub_entry(offset: usize, width: u32) -> u32 {
    debug_assert!(offset < OFFSET_LIMIT);
    KIND_SUB | ((offset as u32) << 8) | width
}

/// The multi-level decoding tables.
#[derive(Debug, Clone)]
pub(super) struct LookupTable {
    entries: Box<[u32]>,
    primary_bits: u32,
}

impl LookupTable {
    pub(super) fn build(tree: &Tree) -> LookupTable {
        Self::build_with(tree, PRIMARY_MAX_BITS)
    }

    /// Like [`LookupTable::build`] with a primary table of at most
    /// `max_primary_bits` (1 to 12) bits.
    pub(super) fn build_with(tree: &Tree, max_primary_bits: u32) -> LookupTable {
        let heights = tree.heights();
        let primary_bits = heights[0].min(max_primary_bits.clamp(1, PRIMARY_MAX_BITS));
        let mut entries = vec![0; 1 << primary_bits];
        fill(tree, &heights, &mut entries, 0, 0, primary_bits, 0);
        LookupTable {
            entries: entries.into_boxed_slice(),
            primary_bits,
        }
    }

    pub(super) fn primary_bits(&self) -> u32 {
        self.primary_bits
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// What the code word at the start of `window` (upcoming stream bits,
    /// low bit first) is: `Ok((symbol, length))`, or `Err(length)` when the
    /// first `length` bits lead to no code word.
    #[inline]
    pub(super) fn lookup(&self, window: u32) -> Result<(u8, u32), u32> {
        self.resolve(
            self.entries[(window & low_mask(self.primary_bits)) as usize],
            window,
        )
    }

    /// The code word at the start of `window` when the primary table
    /// decodes it whole: `(symbol, length)`, `length <= 12`. `None` for a
    /// word that continues in a sub-table or an invalid pattern, which
    /// [`decode`](Self::decode) then handles with its errors.
    #[inline]
    pub(super) fn primary_leaf(&self, window: u64) -> Option<(u8, u32)> {
        let index = (window & u64::from(low_mask(self.primary_bits))) as usize;
        let entry = *self.entries.get(index)?;
        (entry & KIND_MASK == KIND_LEAF).then_some((entry as u8, (entry >> 8) & 0x3F))
    }

    /// [`lookup`](Self::lookup) from `entry`, the primary table's entry for
    /// `window` (which a caller may keep elsewhere).
    #[inline]
    pub(super) fn resolve(&self, entry: u32, window: u32) -> Result<(u8, u32), u32> {
        let mut entry = entry;
        let mut consumed = self.primary_bits;
        while entry & KIND_MASK == KIND_SUB {
            let width = entry & 0xFF;
            let offset = ((entry & !KIND_MASK) >> 8) as usize;
            let index = window.checked_shr(consumed).unwrap_or(0) & low_mask(width);
            entry = self.entries[offset + index as usize];
            consumed += width;
        }
        let len = (entry >> 8) & 0x3F;
        if entry & KIND_MASK == KIND_INVALID {
            Err(len)
        } else {
            Ok((entry as u8, len))
        }
    }

    #[inline]
    pub(super) fn decode(&self, reader: &mut BitReader<'_>) -> Result<u8, BitError> {
        // No code word is longer than 32 bits, so one peek covers every level.
        // Past the end the peek reads zeros; the length check below decides
        // whether the code word found that way was really all there.
        let found = self.lookup(reader.peek_bits(32));
        let len = match found {
            Ok((_, len)) | Err(len) => len,
        };
        let position = reader.bits_read();
        if len as usize > reader.remaining_bits() {
            return Err(BitError::EndOfInput {
                position,
                requested: len,
                available: reader.bit_len(),
            });
        }
        let (symbol, _) = found.map_err(|_| BitError::InvalidCode { position })?;
        reader.skip(len)?;
        Ok(symbol)
    }
}

/// Fills the table of `1 << width` entries at `offset`, which decodes the
/// `width` bits that follow tree node `root` (itself `depth` bits deep).
fn fill(
    tree: &Tree,
    heights: &[u32],
    entries: &mut Vec<u32>,
    offset: usize,
    root: usize,
    width: u32,
    depth: u32,
) {
    let mut table = SubTable {
        tree,
        heights,
        entries,
        offset,
        width,
        depth,
    };
    table.walk(root, 0, 0);
}

/// One table being filled; a walk over the tree below its root node writes
/// every entry once per code word (replicated over the bits past the word),
/// so building costs the size of the tables rather than size times depth.
struct SubTable<'t, 'e> {
    tree: &'t Tree,
    heights: &'t [u32],
    entries: &'e mut Vec<u32>,
    offset: usize,
    width: u32,
    depth: u32,
}

impl SubTable<'_, '_> {
    /// Visits the children of `node`, reached from the table's root by the
    /// `steps` bits of `prefix`.
    fn walk(&mut self, node: usize, steps: u32, prefix: u32) {
        for bit in 0..2u32 {
            let prefix = prefix | (bit << steps);
            let steps = steps + 1;
            match self.tree.nodes[node][bit as usize] {
                Link::Leaf(symbol) => {
                    self.replicate(prefix, steps, leaf_entry(symbol, self.depth + steps))
                }
                Link::Missing => self.replicate(prefix, steps, invalid_entry(self.depth + steps)),
                Link::Node(child) if steps == self.width => {
                    let child = usize::from(child);
                    let sub_width = self.heights[child].min(SUB_MAX_BITS);
                    let sub_offset = self.entries.len();
                    self.entries.resize(sub_offset + (1 << sub_width), 0);
                    fill(
                        self.tree,
                        self.heights,
                        self.entries,
                        sub_offset,
                        child,
                        sub_width,
                        self.depth + self.width,
                    );
                    self.entries[self.offset + prefix as usize] = sub_entry(sub_offset, sub_width);
                }
                Link::Node(child) => self.walk(usize::from(child), steps, prefix),
            }
        }
    }

    /// Writes `entry` at every index whose low `steps` bits are `prefix`.
    fn replicate(&mut self, prefix: u32, steps: u32, entry: u32) {
        for high in 0..1u32 << (self.width - steps) {
            self.entries[self.offset + (prefix | (high << steps)) as usize] = entry;
        }
    }
}

/// Decodes by walking the code tree one stream bit at a time, the way Quake 3
/// itself does.
///
/// Results, errors and reader positions are identical to
/// [`HuffmanCode::decode_symbol`]; only the speed differs. Use it as a
/// reference when testing the tables, or as a baseline when measuring them.
#[derive(Debug, Clone, Copy)]
pub struct TreeDecoder<'c> {
    tree: &'c Tree,
}

impl<'c> TreeDecoder<'c> {
    /// A tree-walking decoder for `code`.
    pub fn new(code: &'c HuffmanCode) -> Self {
        TreeDecoder { tree: &code.tree }
    }

    /// Decodes one symbol; see [`HuffmanCode::decode_symbol`] for the errors.
    pub fn decode_symbol(&self, reader: &mut BitReader<'_>) -> Result<u8, BitError> {
        let start = reader.clone();
        let position = reader.bits_read();
        let mut node = 0;
        let mut depth = 0;
        // Once the input runs out, keep walking on zero bits (as the table
        // decoder's zero-filled peek does) to learn how long the code word
        // would have been, so both decoders report the same error.
        let mut truncated = false;
        loop {
            let bit = if reader.remaining_bits() > 0 {
                reader.get_bit()?
            } else {
                truncated = true;
                false
            };
            depth += 1;
            let outcome = match self.tree.nodes[node][usize::from(bit)] {
                Link::Node(child) => {
                    node = usize::from(child);
                    continue;
                }
                _ if truncated => Err(BitError::EndOfInput {
                    position,
                    requested: depth,
                    available: reader.bit_len(),
                }),
                Link::Leaf(symbol) => return Ok(symbol),
                Link::Missing => Err(BitError::InvalidCode { position }),
            };
            *reader = start;
            return outcome;
        }
    }

    /// Fills `out` with decoded symbols; see [`HuffmanCode::decode_bytes`].
    pub fn decode_bytes(&self, reader: &mut BitReader<'_>, out: &mut [u8]) -> Result<(), BitError> {
        for slot in out {
            *slot = self.decode_symbol(reader)?;
        }
        Ok(())
    }
}
