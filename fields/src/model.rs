//! Trained entropy models for the native codec.
//!
//! The native codec turns every delta into a short sequence of *symbols* —
//! which groups of fields changed, the bit-length class of each changed
//! value — plus raw mantissa bits. Without a model the symbols are written
//! with universal (exp-Golomb) codes. A [`NativeModel`] instead holds one
//! Huffman code per symbol context, built from symbol counts observed on real
//! data by a [`ModelTrainer`]: a field that nearly always changes by one
//! class then costs one bit for its class, not five.
//!
//! Models are data ([`ModelData`], serializable), so a demo file can carry
//! the model its snapshots were written with and be decoded without the game.

use serde::{Deserialize, Serialize};

use crate::bits::{BitSink, BitSource};
use crate::error::BitError;
use crate::huffman::HuffmanCode;
use crate::table::Fields;

/// Fields per changed-set group: each group's change pattern is one byte symbol.
pub const GROUP_FIELDS: usize = 8;
/// Value symbols per field: 33 integer classes, then 33 float-bits classes.
pub const VALUE_SYMBOLS: usize = 66;
/// Most groups a model may have (255 fields / 8, rounded up).
pub const MAX_GROUPS: usize = crate::table::MAX_FIELDS.div_ceil(GROUP_FIELDS);

/// Where a symbol occurs; each context has its own code in a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// One more than the index of the last group with a changed field (0: none).
    LastGroup,
    /// The change pattern of group `g` (bit `i` = field `8g + i` changed).
    Group(usize),
    /// The class of a changed value of field `f` (or of an element of it).
    Value(usize),
}

/// Symbol counts for one struct: what a model is built from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelData {
    /// Fingerprint of the schema the counts were taken on.
    pub schema_fingerprint: u64,
    /// Counts of the [`Context::LastGroup`] symbol (`groups + 1` entries).
    pub last_group: Vec<u32>,
    /// Counts of each group's pattern (256 entries per group).
    pub groups: Vec<Vec<u32>>,
    /// Counts of each field's value classes ([`VALUE_SYMBOLS`] entries per field).
    pub values: Vec<Vec<u32>>,
}

impl ModelData {
    /// All-zero counts for a struct of `fields` fields.
    pub fn empty(schema_fingerprint: u64, fields: usize) -> Self {
        let groups = fields.div_ceil(GROUP_FIELDS);
        ModelData {
            schema_fingerprint,
            last_group: vec![0; groups + 1],
            groups: vec![vec![0; 256]; groups],
            values: vec![vec![0; VALUE_SYMBOLS]; fields],
        }
    }

    /// A stable 64-bit identity of the counts (FNV-1a), so two ends can check
    /// they hold the same model.
    pub fn fingerprint(&self) -> u64 {
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        let mut eat = |value: u64| {
            for byte in value.to_le_bytes() {
                hash ^= byte as u64;
                hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        eat(self.schema_fingerprint);
        for table in std::iter::once(&self.last_group)
            .chain(&self.groups)
            .chain(&self.values)
        {
            eat(table.len() as u64);
            table.iter().for_each(|&count| eat(count as u64));
        }
        hash
    }

    fn count(&mut self, context: Context, symbol: u8) {
        let slot = match context {
            Context::LastGroup => self.last_group.get_mut(symbol as usize),
            Context::Group(g) => self
                .groups
                .get_mut(g)
                .and_then(|t| t.get_mut(symbol as usize)),
            Context::Value(f) => self
                .values
                .get_mut(f)
                .and_then(|t| t.get_mut(symbol as usize)),
        };
        if let Some(slot) = slot {
            *slot = slot.saturating_add(1);
        }
    }
}

/// One context's code: the Huffman code words for writing, and a trie for
/// reading them back through any [`BitSource`] (the native codec may run
/// inside a Huffman bitstream, where raw bits cannot be peeked ahead).
#[derive(Debug, Clone)]
pub struct SymbolCode {
    code: HuffmanCode,
    /// `trie[node][bit]`: a positive value is a child node index, a negative
    /// one is `-(symbol + 1)`, zero is "no code word goes this way".
    trie: Vec<[i16; 2]>,
}

impl SymbolCode {
    fn new(code: HuffmanCode) -> Self {
        let mut trie = vec![[0i16; 2]];
        for (symbol, word) in code.code_words().iter().enumerate() {
            let mut node = 0usize;
            for i in 0..word.len {
                let bit = usize::from(word.bit(i));
                if i + 1 == word.len {
                    trie[node][bit] = -(symbol as i16) - 1;
                } else {
                    if trie[node][bit] <= 0 {
                        trie.push([0; 2]);
                        trie[node][bit] = (trie.len() - 1) as i16;
                    }
                    node = trie[node][bit] as usize;
                }
            }
        }
        SymbolCode { code, trie }
    }

    /// Writes `symbol`'s code word.
    pub fn encode<S: BitSink + ?Sized>(&self, sink: &mut S, symbol: u8) -> Result<(), BitError> {
        let word = self.code.code_word(symbol);
        sink.put_bits(word.bits, u32::from(word.len))
    }

    /// Reads one code word bit by bit.
    pub fn decode<S: BitSource + ?Sized>(&self, source: &mut S) -> Result<u8, BitError> {
        let position = source.bits_read();
        let mut node = 0usize;
        loop {
            let bit = usize::from(source.get_bit()?);
            match self.trie[node][bit] {
                0 => return Err(BitError::InvalidCode { position }),
                next if next > 0 => node = next as usize,
                leaf => return Ok((-(leaf + 1)) as u8),
            }
        }
    }
}

/// Huffman codes for every context of one struct, ready to code with.
#[derive(Debug, Clone)]
pub struct NativeModel {
    data: ModelData,
    id: u64,
    last_group: SymbolCode,
    groups: Vec<SymbolCode>,
    values: Vec<SymbolCode>,
}

impl NativeModel {
    /// Builds the codes. The counts are checked for shape (bounded sizes,
    /// consistent with a struct of `values.len()` fields), since model data
    /// may come from a file.
    pub fn new(data: ModelData) -> Result<Self, BitError> {
        let fields = data.values.len();
        let groups = fields.div_ceil(GROUP_FIELDS);
        let shape_ok = fields <= crate::table::MAX_FIELDS
            && data.groups.len() == groups
            && data.last_group.len() == groups + 1
            && data.groups.iter().all(|g| g.len() == 256)
            && data.values.iter().all(|v| v.len() == VALUE_SYMBOLS);
        if !shape_ok {
            return Err(BitError::invalid(
                "native model",
                0,
                "counts do not have the shape of a model",
            ));
        }
        let code = |counts: &[u32]| {
            let mut table = [0u32; 256];
            table[..counts.len()].copy_from_slice(counts);
            HuffmanCode::from_frequencies(&table)
                .map(SymbolCode::new)
                .map_err(|e| {
                    BitError::invalid("native model", 0, format!("cannot build a code: {e}"))
                })
        };
        Ok(NativeModel {
            id: data.fingerprint(),
            last_group: code(&data.last_group)?,
            groups: data
                .groups
                .iter()
                .map(|g| code(g))
                .collect::<Result<_, _>>()?,
            values: data
                .values
                .iter()
                .map(|v| code(v))
                .collect::<Result<_, _>>()?,
            data,
        })
    }

    /// The counts the model was built from.
    pub fn data(&self) -> &ModelData {
        &self.data
    }

    /// [`ModelData::fingerprint`] of the counts.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The code for a context (`None` for a context outside the model's shape).
    pub fn code(&self, context: Context) -> Option<&SymbolCode> {
        match context {
            Context::LastGroup => Some(&self.last_group),
            Context::Group(g) => self.groups.get(g),
            Context::Value(f) => self.values.get(f),
        }
    }
}

/// Counts the symbols the native codec would write for a stream of deltas.
#[derive(Debug, Clone)]
pub struct ModelTrainer {
    data: ModelData,
}

impl ModelTrainer {
    /// A trainer for structs with `fields` fields and the given schema fingerprint.
    pub fn new(schema_fingerprint: u64, fields: usize) -> Self {
        ModelTrainer {
            data: ModelData::empty(schema_fingerprint, fields),
        }
    }

    /// Counts the symbols of the delta from `base` to `new`.
    pub fn observe<T: Fields>(&mut self, base: &T, new: &T) {
        crate::codec::native::visit_symbols(base, new, &mut |context, symbol| {
            self.data.count(context, symbol)
        });
    }

    /// The counts so far.
    pub fn finish(self) -> ModelData {
        self.data
    }
}
