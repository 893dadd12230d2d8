//! The writer a message is built in, as its framing codes it: raw bits,
//! Quake 3's bitstream Huffman coding on top of them, or raw bits with the
//! modelled symbols range-coded beside them ([`MessageCoding::Split`]);
//! and the pieces of a message the server's caches keep and copy.

use fields::model::SymbolCode;
use fields::range::{RangeEncoder, SplitWriter};
use fields::top_bits::TopBitChances;
use fields::{BitError, BitSink, BitWriter, Chance, HuffmanCode, HuffmanWriter};

use crate::framing::MessageCoding;

/// What a range-coded message is built with, kept between messages so
/// building allocates nothing in steady state: the coder's output buffer
/// and the log of the symbols it coded (what a cache keeps of them).
#[derive(Debug, Clone, Default)]
pub(crate) struct RangeScratch {
    encoder: RangeEncoder,
    log: Vec<u32>,
}

impl RangeScratch {
    pub fn memory_bytes(&self) -> usize {
        self.log.capacity() * std::mem::size_of::<u32>()
    }
}

#[derive(Debug)]
enum Inner<'a> {
    Bits {
        writer: BitWriter<'a>,
        huffman: Option<&'static HuffmanCode>,
    },
    Split(SplitWriter<'a>),
}

/// A message under construction, coded as its framing says.
///
/// A run of writes can be kept ([`PieceArena::keep`]) and copied into
/// another message ([`PieceArena::copy_to`]) coded the same way: the
/// Huffman-coded bits of a run do not depend on where they stand, so they
/// copy as they are; a split message's raw bits copy as they are, and its
/// symbols are coded again from their logged spans (an arithmetic coder's
/// output depends on everything before it, its spans do not). That is how
/// the server's caches share encodings under every coding.
#[derive(Debug)]
pub(crate) struct MessageWriter<'a> {
    inner: Inner<'a>,
}

/// A place in a message: where a kept run starts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    raw_bits: usize,
    spans: usize,
    bits: usize,
}

impl<'a> MessageWriter<'a> {
    /// Writes into `buf` from its start, coded as `coding` says; a split
    /// message codes its symbols with `range`.
    pub fn new(buf: &'a mut [u8], coding: MessageCoding, range: &'a mut RangeScratch) -> Self {
        let inner = match coding {
            MessageCoding::Bits => Inner::Bits {
                writer: BitWriter::new(buf),
                huffman: None,
            },
            MessageCoding::Huffman(code) => Inner::Bits {
                writer: BitWriter::new(buf),
                huffman: Some(code),
            },
            MessageCoding::Split => {
                let RangeScratch { encoder, log } = range;
                Inner::Split(SplitWriter::new(buf, encoder).with_log(log))
            }
        };
        MessageWriter { inner }
    }

    /// Where the message stands now.
    #[inline]
    pub fn mark(&self) -> Mark {
        match &self.inner {
            Inner::Bits { writer, .. } => {
                let bits = writer.bits_written();
                Mark {
                    raw_bits: bits,
                    spans: 0,
                    bits,
                }
            }
            Inner::Split(split) => Mark {
                raw_bits: split.raw().bits_written(),
                spans: split.spans().len(),
                bits: split.bits_written(),
            },
        }
    }

    /// The raw (or Huffman-coded) bytes written so far, the last one partly.
    fn raw(&self) -> &[u8] {
        match &self.inner {
            Inner::Bits { writer, .. } => writer.written(),
            Inner::Split(split) => split.raw().written(),
        }
    }

    /// The spans of the symbols range-coded since `from`.
    fn spans_since(&self, from: Mark) -> &[u32] {
        match &self.inner {
            Inner::Bits { .. } => &[],
            Inner::Split(split) => split.spans().get(from.spans..).unwrap_or_default(),
        }
    }

    /// Ends the message: its length in bytes (zero-padded) and in bits.
    pub fn finish(self) -> Result<(usize, usize), BitError> {
        match self.inner {
            Inner::Bits { writer, .. } => {
                let bits = writer.bits_written();
                Ok((writer.finish(), bits))
            }
            Inner::Split(split) => split.finish(),
        }
    }
}

impl BitSink for MessageWriter<'_> {
    #[inline]
    fn put_bits(&mut self, value: u32, count: u32) -> Result<(), BitError> {
        match &mut self.inner {
            Inner::Bits {
                writer,
                huffman: None,
            } => writer.put_bits(value, count),
            Inner::Bits {
                writer,
                huffman: Some(code),
            } => HuffmanWriter::new(writer, code).put_bits(value, count),
            Inner::Split(split) => split_put_bits(split, value, count),
        }
    }

    #[inline]
    fn put_wide_bits(&mut self, value: u64, count: u32) -> Result<(), BitError> {
        match &mut self.inner {
            Inner::Bits {
                writer,
                huffman: None,
            } => writer.put_wide_bits(value, count),
            Inner::Bits {
                writer,
                huffman: Some(code),
            } => HuffmanWriter::new(writer, code).put_wide_bits(value, count),
            Inner::Split(split) => split_put_wide_bits(split, value, count),
        }
    }

    /// Bits written so far; for a split message an upper bound of its
    /// length if it ended here.
    #[inline]
    fn bits_written(&self) -> usize {
        match &self.inner {
            Inner::Bits { writer, .. } => writer.bits_written(),
            Inner::Split(split) => split.bits_written(),
        }
    }

    #[inline(always)]
    fn put_coded_symbol(&mut self, code: &SymbolCode, symbol: u8) -> Result<(), BitError> {
        match &mut self.inner {
            Inner::Split(split) => split_put_symbol(split, code, symbol, 0, 0),
            Inner::Bits { .. } => code.encode(self, symbol),
        }
    }

    #[inline(always)]
    fn put_coded_symbol_and_raw(
        &mut self,
        code: &SymbolCode,
        symbol: u8,
        raw: u32,
        raw_bits: u32,
    ) -> Result<(), BitError> {
        match &mut self.inner {
            Inner::Split(split) => split_put_symbol(split, code, symbol, raw, raw_bits),
            Inner::Bits { .. } => {
                fields::bits::put_code_word_and_raw(self, code, symbol, raw, raw_bits)
            }
        }
    }
    #[inline]
    fn put_decision(&mut self, yes: bool, chance: Chance) -> Result<(), BitError> {
        match &mut self.inner {
            Inner::Split(split) => split.put_decision(yes, chance),
            Inner::Bits { .. } => self.put_bit(yes),
        }
    }

    #[inline(always)]
    fn put_coded_symbol_and_top_bits(
        &mut self,
        code: &SymbolCode,
        symbol: u8,
        raw: u32,
        raw_bits: u32,
        chances: &TopBitChances,
    ) -> Result<(), BitError> {
        match &mut self.inner {
            Inner::Split(split) => {
                split_put_symbol_top_bits(split, code, symbol, raw, raw_bits, chances)
            }
            Inner::Bits { .. } => {
                fields::bits::put_code_word_and_raw(self, code, symbol, raw, raw_bits)
            }
        }
    }
}

// The split coding's writes, out of line: the dispatch above stays small
// enough to inline into the codec's loops, where the raw and Huffman
// codings spend their time.

#[inline(never)]
fn split_put_bits(split: &mut SplitWriter<'_>, value: u32, count: u32) -> Result<(), BitError> {
    split.put_bits(value, count)
}

#[inline(never)]
fn split_put_wide_bits(
    split: &mut SplitWriter<'_>,
    value: u64,
    count: u32,
) -> Result<(), BitError> {
    split.put_wide_bits(value, count)
}

#[inline(never)]
fn split_put_symbol(
    split: &mut SplitWriter<'_>,
    code: &SymbolCode,
    symbol: u8,
    raw: u32,
    raw_bits: u32,
) -> Result<(), BitError> {
    split.put_coded_symbol_and_raw(code, symbol, raw, raw_bits)
}

#[inline(never)]
fn split_put_symbol_top_bits(
    split: &mut SplitWriter<'_>,
    code: &SymbolCode,
    symbol: u8,
    raw: u32,
    raw_bits: u32,
    chances: &TopBitChances,
) -> Result<(), BitError> {
    split.put_coded_symbol_and_top_bits(code, symbol, raw, raw_bits, chances)
}

/// A kept run of a message (see [`PieceArena`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Piece {
    /// Where its bytes start in the arena.
    start: u32,
    /// The bit offset of its first bit in its first byte.
    lead: u8,
    /// Its raw (or Huffman-coded) bits.
    raw_bits: u32,
    /// Where its symbols' spans start in the arena, and how many.
    spans: (u32, u32),
    /// What it added to the message's length in bits (for a split
    /// message, to the upper bound of it): what a budget counts.
    pub bits: u32,
}

/// The runs of messages a cache keeps, for one frame: their raw bytes and
/// their symbols' spans.
#[derive(Debug, Clone, Default)]
pub(crate) struct PieceArena {
    bytes: Vec<u8>,
    spans: Vec<u32>,
}

impl PieceArena {
    /// Forgets every piece.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }

    /// Keeps what `message` was written with since `from`: its raw bytes
    /// as they are (a plain byte copy, with the bit offset of `from` in the
    /// first byte kept beside it) and its symbols' spans. `None` when the
    /// arena would pass 4 GiB (never for a frame's messages).
    pub fn keep(&mut self, message: &MessageWriter<'_>, from: Mark) -> Option<Piece> {
        let to = message.mark();
        let bytes = message
            .raw()
            .get(from.raw_bits / 8..to.raw_bits.div_ceil(8))?;
        let spans = message.spans_since(from);
        let start = u32::try_from(self.bytes.len()).ok()?;
        let spans_start = u32::try_from(self.spans.len()).ok()?;
        self.bytes.extend_from_slice(bytes);
        self.spans.extend_from_slice(spans);
        Some(Piece {
            start,
            lead: (from.raw_bits % 8) as u8,
            raw_bits: (to.raw_bits - from.raw_bits) as u32,
            spans: (spans_start, spans.len() as u32),
            bits: to.bits.saturating_sub(from.bits) as u32,
        })
    }

    /// Appends a kept piece to `message` (coded as the one it was kept from).
    #[inline]
    pub fn copy_to(&self, piece: Piece, message: &mut MessageWriter<'_>) -> Result<(), BitError> {
        let bytes = self.bytes.get(piece.start as usize..).unwrap_or_default();
        let (first, count) = (piece.spans.0 as usize, piece.spans.1 as usize);
        match &mut message.inner {
            Inner::Bits { writer, .. } => {
                writer.put_bit_slice(bytes, usize::from(piece.lead), piece.raw_bits as usize)
            }
            Inner::Split(split) => {
                split.raw_mut().put_bit_slice(
                    bytes,
                    usize::from(piece.lead),
                    piece.raw_bits as usize,
                )?;
                split.put_spans(self.spans.get(first..first + count).unwrap_or_default());
                Ok(())
            }
        }
    }

    /// Bytes allocated.
    pub fn memory_bytes(&self) -> usize {
        self.bytes.capacity() + self.spans.capacity() * std::mem::size_of::<u32>()
    }
}

/// Encodes a message into `out` (replacing its contents) with `encode`,
/// coded as `coding` says, growing the buffer from `initial` bytes until
/// it fits; `out` holds the bytes sent ([`MessageCoding::sent_len`]).
pub(crate) fn encode_message(
    out: &mut Vec<u8>,
    initial: usize,
    coding: MessageCoding,
    mut encode: impl FnMut(&mut MessageWriter<'_>) -> Result<(), BitError>,
) -> Result<(), BitError> {
    let mut size = initial.max(64);
    let mut range = RangeScratch::default();
    loop {
        out.clear();
        out.resize(size, 0);
        let mut writer = MessageWriter::new(out, coding, &mut range);
        match encode(&mut writer).and_then(|()| writer.finish()) {
            Ok((len, _)) => {
                let len = coding.sent_len(&out[..len]);
                out.truncate(len);
                return Ok(());
            }
            Err(BitError::Overflow { .. }) => size *= 2,
            Err(other) => {
                out.clear();
                return Err(other);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fields::{BitReader, BitSource, HuffmanReader};

    #[test]
    fn coded_runs_copy_raw_into_another_message() {
        let code = HuffmanCode::quake3();
        let coding = MessageCoding::Huffman(code);
        let mut range = RangeScratch::default();
        let mut first = [0u8; 32];
        let mut w = MessageWriter::new(&mut first, coding, &mut range);
        w.put_bits(5, 3).unwrap();
        let from = w.mark();
        w.put_bits(0x1234, 16).unwrap();
        w.put_u8(200).unwrap();
        let mut arena = PieceArena::default();
        let piece = arena.keep(&w, from).unwrap();
        let mut range = RangeScratch::default();
        let mut second = [0u8; 32];
        let mut o = MessageWriter::new(&mut second, coding, &mut range);
        o.put_bit(true).unwrap();
        arena.copy_to(piece, &mut o).unwrap();
        o.put_bits(9, 4).unwrap();
        let (len, _) = o.finish().unwrap();
        let mut r = HuffmanReader::new(BitReader::new(&second[..len]), code);
        assert!(r.get_bit().unwrap());
        assert_eq!(r.get_bits(16).unwrap(), 0x1234);
        assert_eq!(r.get_u8().unwrap(), 200);
        assert_eq!(r.get_bits(4).unwrap(), 9);
    }
}
