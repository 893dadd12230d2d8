//! A range coder for short messages: symbols priced by a model's
//! frequencies, not by whole Huffman code words, and an end that costs a
//! bit or two, not whole words.
//!
//! A Huffman code spends at least one bit on every symbol, and the native
//! codec's symbols are often near-certain (a group of fields that did not
//! change, a list that ends where it usually does): an arithmetic coder
//! spends `-log2 p` on each, a fraction of a bit for those. Snapshot
//! messages are 2 to 200 bytes, so how the coder ends matters as much as
//! how it codes: coders that flush whole 32-bit words (ANS and most range
//! coders) would add more to a three-byte message than they save. This one
//! ends on the value with the most trailing zero bits inside its final
//! interval and drops those zeros: the reader reads zeros past the end, so
//! a message costs its information plus one to two bits.
//!
//! Layout (LZMA's carry-propagating byte output, with neither its leading
//! zero byte nor its five-byte flush): a 32-bit `range`, a 64-bit `low`
//! whose bit 32 is a carry into bytes already produced, and the bytes not
//! yet final (one byte and a run of 0xFF bytes a carry may still change).
//! Frequencies total [`PROB_TOTAL`]; the range stays at least 2^24, so each
//! step's loss from the integer division is below 2^-9 of a bit.

use crate::bits::{BitSink, BitSource, Chance};
use crate::error::BitError;
use crate::model::SymbolCode;
use crate::top_bits::{get_symbol_then_top_bits, put_symbol_then_top_bits, TopBitChances};

/// Bits of a frequency table's total.
pub const PROB_BITS: u32 = 16;
/// A frequency table's total: every table the coder reads sums to this.
pub const PROB_TOTAL: u32 = 1 << PROB_BITS;

/// Below this the range is renormalised (a byte shifted out).
const TOP: u32 = 1 << 24;

/// Writes a message: symbols against cumulative frequencies, and raw bits.
#[derive(Debug, Clone)]
pub struct RangeEncoder {
    low: u64,
    range: u32,
    /// The oldest byte not yet final (valid when `pending > 0`).
    cache: u8,
    /// Bytes not yet final: `cache`, then `pending - 1` bytes of 0xFF.
    pending: u32,
    out: Vec<u8>,
}

impl Default for RangeEncoder {
    fn default() -> Self {
        Self::new()
    }
}

impl RangeEncoder {
    /// An encoder at the start of a message.
    pub fn new() -> Self {
        RangeEncoder {
            low: 0,
            range: u32::MAX,
            cache: 0,
            pending: 0,
            out: Vec::new(),
        }
    }

    /// Starts a new message, keeping the output buffer's capacity.
    pub fn reset(&mut self) {
        self.low = 0;
        self.range = u32::MAX;
        self.cache = 0;
        self.pending = 0;
        self.out.clear();
    }

    /// Codes a symbol whose frequencies start at `cumulative` and span
    /// `frequency` (of [`PROB_TOTAL`]; `frequency` must not be zero).
    #[inline]
    pub fn encode(&mut self, cumulative: u32, frequency: u32) {
        debug_assert!(frequency > 0 && cumulative + frequency <= PROB_TOTAL);
        let r = self.range >> PROB_BITS;
        self.low += u64::from(r) * u64::from(cumulative);
        self.range = r * frequency;
        self.normalize();
    }

    /// Codes the low `count` bits of `value` (`count` up to 32), each
    /// worth one bit, low bit first: one bit at a time, so bits written in
    /// one call read back in any grouping (as from a bit stream).
    #[inline]
    pub fn encode_bits(&mut self, value: u32, count: u32) {
        for i in 0..count.min(32) {
            let half = self.range >> 1;
            if (value >> i) & 1 != 0 {
                self.low += u64::from(half);
                self.range -= half;
            } else {
                self.range = half;
            }
            self.normalize();
        }
    }

    #[inline]
    fn normalize(&mut self) {
        while self.range < TOP {
            self.range <<= 8;
            self.shift_low();
        }
    }

    /// Moves the top byte of the 32-bit window out, settling the pending
    /// bytes once a carry can no longer reach them.
    fn shift_low(&mut self) {
        let carry = (self.low >> 32) as u8;
        let top = (self.low >> 24) as u8;
        if self.low < 0xFF00_0000 || carry != 0 {
            if self.pending > 0 {
                self.out.push(self.cache.wrapping_add(carry));
                for _ in 1..self.pending {
                    self.out.push(0xFFu8.wrapping_add(carry));
                }
            }
            self.cache = top;
            self.pending = 1;
        } else if self.pending == 0 {
            // A first byte of 0xFF: nothing before it for a carry to reach
            // (the coded value never reaches 1.0).
            self.cache = 0xFF;
            self.pending = 1;
        } else {
            self.pending += 1;
        }
        self.low = (self.low & 0x00FF_FFFF) << 8;
    }

    /// An upper bound of the message's length in bits if it ended here,
    /// by either [`finish`](Self::finish) or
    /// [`finish_open`](Self::finish_open): the bytes settled or pending,
    /// and the bits a value inside the window's range needs.
    pub fn bits_bound(&self) -> usize {
        8 * (self.out.len() + self.pending as usize) + self.range.leading_zeros() as usize + 2
    }

    /// Ends the message so that it reads back whatever follows it: returns
    /// its bytes and its length in bits, the shortest prefix every
    /// continuation of which lies inside the final interval. One or two
    /// bits longer than [`finish`](Self::finish)'s end (which relies on
    /// the reader reading zeros), but the bytes after it are free for
    /// something else: a [`SplitReader`] reads this stream backwards from
    /// the end of a message whose front holds raw bits.
    pub fn finish_open(&mut self) -> (&[u8], usize) {
        let start = 8 * (self.out.len() + self.pending as usize);
        let high = self.low + u64::from(self.range);
        // The fewest leading window bits `k` whose every continuation stays
        // in [low, high): a multiple of 2^(32 - k) at or above `low` whose
        // next multiple is at most `high`. The range is at least 2^24, so
        // some k of at most 26 fits.
        let mut value = self.low;
        let mut used = 32;
        for k in 1..=32u32 {
            let step = 1u64 << (32 - k);
            let candidate = self.low.div_ceil(step) * step;
            if candidate + step <= high {
                value = candidate;
                used = k as usize;
                break;
            }
        }
        self.low = value;
        for _ in 0..5 {
            self.shift_low();
        }
        let bits = start + used;
        self.out.truncate(bits.div_ceil(8));
        (&self.out, bits)
    }

    /// Ends the message: returns its bytes and its length in bits (the
    /// bytes past that length are zero, and a reader may be given just
    /// `bits`: it reads zeros past the end). An empty message is 0 bits.
    pub fn finish(&mut self) -> (&[u8], usize) {
        // The value in [low, low + range) with the most trailing zeros.
        let high = self.low + u64::from(self.range) - 1;
        let mut value = self.low;
        for k in 0..=32u32 {
            let step = 1u64 << (32 - k);
            let candidate = self.low.div_ceil(step) * step;
            if candidate <= high {
                value = candidate;
                break;
            }
        }
        self.low = value;
        for _ in 0..5 {
            self.shift_low();
        }
        // Bits are read from each byte's top down: the trailing zeros are
        // the low bits of the last non-zero byte.
        let bits = match self.out.iter().rposition(|&b| b != 0) {
            None => 0,
            Some(last) => 8 * last + 8 - self.out[last].trailing_zeros() as usize,
        };
        let bytes = bits.div_ceil(8);
        self.out.truncate(bytes);
        (&self.out, bits)
    }
}

/// Reads what a [`RangeEncoder`] wrote, from the message's bytes (zeros
/// are read past their end).
#[derive(Debug, Clone)]
pub struct RangeDecoder<'a> {
    input: &'a [u8],
    position: usize,
    code: u32,
    range: u32,
    /// Whether the stream's bytes run from the input's end to its start
    /// (a [`SplitReader`]'s).
    reversed: bool,
}

impl<'a> RangeDecoder<'a> {
    /// A decoder at the start of `input`.
    pub fn new(input: &'a [u8]) -> Self {
        Self::start(input, false)
    }

    /// A decoder of a stream stored backwards: its first byte is `input`'s
    /// last (see [`splice_reversed`]).
    pub fn reversed(input: &'a [u8]) -> Self {
        Self::start(input, true)
    }

    fn start(input: &'a [u8], reversed: bool) -> Self {
        let mut decoder = RangeDecoder {
            input,
            position: 0,
            code: 0,
            range: u32::MAX,
            reversed,
        };
        for _ in 0..4 {
            decoder.code = (decoder.code << 8) | u32::from(decoder.next_byte());
        }
        decoder
    }

    #[inline]
    fn next_byte(&mut self) -> u8 {
        let index = if self.reversed {
            self.input.len().wrapping_sub(1).wrapping_sub(self.position)
        } else {
            self.position
        };
        let byte = self.input.get(index).copied().unwrap_or(0);
        self.position += 1;
        byte
    }

    /// The stream's bits spent so far: the bytes shifted in past the
    /// four-byte window and the bits the range has narrowed by, the very
    /// count [`RangeEncoder::bits_bound`] gives at the same point (encoder
    /// and decoder narrow their ranges alike).
    pub fn bits_spent(&self) -> usize {
        8 * self.position.saturating_sub(4) + self.range.leading_zeros() as usize + 2
    }

    /// Where the next symbol falls among [`PROB_TOTAL`] frequencies: find
    /// the symbol whose span holds it, then call [`RangeDecoder::consume`].
    #[inline]
    pub fn target(&self) -> u32 {
        let r = self.range >> PROB_BITS;
        (self.code / r).min(PROB_TOTAL - 1)
    }

    /// Takes the symbol spanning `cumulative..cumulative + frequency`,
    /// which must hold [`RangeDecoder::target`]. Fails on input no
    /// encoder wrote (the code left outside the range).
    #[inline]
    pub fn consume(&mut self, cumulative: u32, frequency: u32) -> Result<(), BitError> {
        let r = self.range >> PROB_BITS;
        let start = r * cumulative;
        let span = r * frequency;
        let code = self.code.wrapping_sub(start);
        if self.code < start || code >= span {
            return Err(self.invalid());
        }
        self.code = code;
        self.range = span;
        self.normalize();
        Ok(())
    }

    /// Takes the symbol of `code`'s model that the next span holds; fails
    /// (naming `position`) on a span no symbol of the model has, or input
    /// no encoder wrote.
    #[inline]
    pub fn decode_symbol(&mut self, code: &SymbolCode, position: usize) -> Result<u8, BitError> {
        let (symbol, start, frequency) = code.symbol_at(self.target());
        if frequency == 0 {
            return Err(BitError::InvalidCode { position });
        }
        self.consume(start, frequency)?;
        Ok(symbol)
    }

    /// Takes an answer coded by its `chance` (a span of
    /// [`Chance::span`]).
    ///
    /// The same answer and narrowing as [`RangeDecoder::target`] then
    /// [`RangeDecoder::consume`] with the answer's span, without their
    /// division: the code is below the yes span's end exactly when the
    /// target is below the chance. A decoder of range-coded values takes
    /// several of these a value (their top-bit trees), so it pays.
    #[inline]
    pub fn decode_decision(&mut self, chance: Chance) -> Result<bool, BitError> {
        let r = self.range >> PROB_BITS;
        let yes_end = r * chance.yes();
        let yes = self.code < yes_end;
        if yes {
            self.range = yes_end;
        } else {
            // `r * PROB_TOTAL` is at most the range: no overflow.
            let span = r * PROB_TOTAL - yes_end;
            let code = self.code - yes_end;
            if code >= span {
                return Err(self.invalid());
            }
            self.code = code;
            self.range = span;
        }
        self.normalize();
        Ok(yes)
    }

    /// Reads `count` raw bits (up to 32) coded by
    /// [`RangeEncoder::encode_bits`], low bit first.
    #[inline]
    pub fn decode_bits(&mut self, count: u32) -> Result<u32, BitError> {
        let mut value = 0u32;
        for i in 0..count.min(32) {
            let half = self.range >> 1;
            if self.code >= half {
                self.code -= half;
                self.range -= half;
                value |= 1 << i;
            } else {
                self.range = half;
            }
            self.normalize();
        }
        if self.code >= self.range {
            return Err(self.invalid());
        }
        Ok(value)
    }

    #[inline]
    fn normalize(&mut self) {
        while self.range < TOP {
            self.range <<= 8;
            self.code = (self.code << 8) | u32::from(self.next_byte());
        }
    }

    /// Bytes read past the input's end (zeros): more than the coder's
    /// four-byte window means the message claimed more than it held.
    pub fn overrun(&self) -> usize {
        self.position.saturating_sub(self.input.len())
    }

    fn invalid(&self) -> BitError {
        BitError::invalid(
            "range-coded symbol",
            8 * self.position.min(self.input.len()),
            "the code is outside every span",
        )
    }
}

/// A [`BitSink`] that range-codes everything written to it: modelled
/// symbols by their model's frequencies ([`SymbolCode::span`]), every other
/// bit at one bit. The native codec written through it is the same
/// sequence of decisions as through a [`crate::BitWriter`], coded closer
/// to its information; [`RangeReader`] reads it back.
///
/// Bits copied whole from another stream ([`BitSink::put_bit_slice`]) are
/// coded as raw bits: a slice of Huffman-coded symbols must not be copied
/// into a message its reader range-decodes.
#[derive(Debug, Clone, Default)]
pub struct RangeWriter {
    encoder: RangeEncoder,
}

impl RangeWriter {
    /// A writer at the start of a message.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts a new message, keeping the buffer.
    pub fn reset(&mut self) {
        self.encoder.reset();
    }

    /// Ends the message: its bytes and length in bits (see
    /// [`RangeEncoder::finish`]).
    pub fn finish(&mut self) -> (&[u8], usize) {
        self.encoder.finish()
    }
}

impl BitSink for RangeWriter {
    #[inline]
    fn put_bits(&mut self, value: u32, count: u32) -> Result<(), BitError> {
        if count == 0 || count > 32 {
            return Err(BitError::BadWidth(count));
        }
        self.encoder.encode_bits(value, count);
        Ok(())
    }

    /// An upper bound of the message's length if it ended here: the bytes
    /// settled or pending, the information in the window, and the end's
    /// bit or two.
    fn bits_written(&self) -> usize {
        let e = &self.encoder;
        8 * (e.out.len() + e.pending as usize) + e.range.leading_zeros() as usize + 2
    }

    #[inline]
    fn put_coded_symbol(&mut self, code: &SymbolCode, symbol: u8) -> Result<(), BitError> {
        let (start, frequency) = code.span(symbol).ok_or(BitError::InvalidCode {
            position: self.bits_written(),
        })?;
        self.encoder.encode(start, frequency);
        Ok(())
    }

    #[inline]
    fn put_coded_symbol_and_raw(
        &mut self,
        code: &SymbolCode,
        symbol: u8,
        raw: u32,
        raw_bits: u32,
    ) -> Result<(), BitError> {
        self.put_coded_symbol(code, symbol)?;
        self.encoder.encode_bits(raw, raw_bits);
        Ok(())
    }

    #[inline]
    fn put_decision(&mut self, yes: bool, chance: Chance) -> Result<(), BitError> {
        let (start, frequency) = chance.span(yes);
        self.encoder.encode(start, frequency);
        Ok(())
    }

    #[inline]
    fn put_coded_symbol_and_top_bits(
        &mut self,
        code: &SymbolCode,
        symbol: u8,
        raw: u32,
        raw_bits: u32,
        chances: &TopBitChances,
    ) -> Result<(), BitError> {
        put_symbol_then_top_bits(self, code, symbol, raw, raw_bits, chances)
    }
}

/// Reads what a [`RangeWriter`] wrote, as a [`BitSource`].
///
/// The writer drops the zero bytes a message ends with, so a reader reads
/// zeros past the input for as long as the codec asks: a message's length
/// must come from its transport (a datagram's), and a message cut short
/// decodes as one that ends in zeros, not as an error. What the codec reads
/// is bounded by its own limits (fields per struct, entities per list);
/// past [`RangeReader::MAX_OVERRUN`] zero bytes the reader fails with
/// [`BitError::EndOfInput`] all the same.
#[derive(Debug, Clone)]
pub struct RangeReader<'a> {
    decoder: RangeDecoder<'a>,
}

impl<'a> RangeReader<'a> {
    /// Most zero bytes read past the input before a read fails.
    pub const MAX_OVERRUN: usize = 1 << 16;

    /// A reader of the message in `input` (its bytes; zeros past them).
    pub fn new(input: &'a [u8]) -> Self {
        RangeReader {
            decoder: RangeDecoder::new(input),
        }
    }

    fn check_end(&self, requested: u32) -> Result<(), BitError> {
        if self.decoder.overrun() > Self::MAX_OVERRUN {
            return Err(BitError::EndOfInput {
                position: 8 * self.decoder.input.len(),
                requested,
                available: 8 * self.decoder.input.len(),
            });
        }
        Ok(())
    }
}

impl BitSource for RangeReader<'_> {
    #[inline]
    fn get_bits(&mut self, count: u32) -> Result<u32, BitError> {
        if count == 0 || count > 32 {
            return Err(BitError::BadWidth(count));
        }
        let value = self.decoder.decode_bits(count)?;
        self.check_end(count)?;
        Ok(value)
    }

    /// Input bytes consumed so far, in bits (the coder reads four bytes
    /// ahead).
    fn bits_read(&self) -> usize {
        8 * self.decoder.position.min(self.decoder.input.len())
    }

    fn bits_spent(&self) -> usize {
        self.decoder.bits_spent()
    }

    #[inline]
    fn get_coded_symbol(&mut self, code: &SymbolCode) -> Result<u8, BitError> {
        let symbol = self.decoder.decode_symbol(code, self.bits_read())?;
        self.check_end(1)?;
        Ok(symbol)
    }
    #[inline]
    fn get_decision(&mut self, chance: Chance) -> Result<bool, BitError> {
        let yes = self.decoder.decode_decision(chance)?;
        self.check_end(1)?;
        Ok(yes)
    }

    /// Its top bits are range-coded by their chances.
    #[inline(always)]
    fn reads_top_bits(&self) -> bool {
        true
    }

    #[inline]
    fn get_coded_symbol_and_top_bits(
        &mut self,
        code: &SymbolCode,
        extra_bits: &[u8; 256],
        chances: &TopBitChances,
    ) -> Result<(u8, u32), BitError> {
        get_symbol_then_top_bits(self, code, extra_bits, chances)
    }
}

/// A symbol's span as a [`SplitWriter`] logs it: its start in the low 16
/// bits, its frequency less one in the high 16.
#[inline]
fn pack_span(start: u32, frequency: u32) -> u32 {
    start | (frequency - 1) << PROB_BITS
}

/// Writes a message for a [`SplitReader`]: raw bits at the front of a
/// buffer, modelled symbols range-coded, the stream spliced backwards into
/// the buffer's end by [`finish`](Self::finish). It can log the spans of
/// the symbols it codes, so that a stretch of a message (raw bits and
/// spans) can be kept and copied into another message
/// ([`put_spans`](Self::put_spans)): how a server shares one encoding of
/// an entity update among clients.
#[derive(Debug)]
pub struct SplitWriter<'a> {
    raw: crate::BitWriter<'a>,
    encoder: &'a mut RangeEncoder,
    log: Option<&'a mut Vec<u32>>,
}

impl<'a> SplitWriter<'a> {
    /// Writes into `buf` from its start, coding symbols with `encoder`
    /// (restarted; its buffer is reused).
    pub fn new(buf: &'a mut [u8], encoder: &'a mut RangeEncoder) -> Self {
        encoder.reset();
        SplitWriter {
            raw: crate::BitWriter::new(buf),
            encoder,
            log: None,
        }
    }

    /// Also logs every symbol's span in `log` (cleared first).
    pub fn with_log(mut self, log: &'a mut Vec<u32>) -> Self {
        log.clear();
        self.log = Some(log);
        self
    }

    /// The raw part written so far (the last byte partly).
    pub fn raw(&self) -> &crate::BitWriter<'a> {
        &self.raw
    }

    /// The raw part, for copying bits into it.
    pub fn raw_mut(&mut self) -> &mut crate::BitWriter<'a> {
        &mut self.raw
    }

    /// The spans logged so far (empty without a log).
    pub fn spans(&self) -> &[u32] {
        self.log.as_deref().map_or(&[], |log| &log[..])
    }

    /// Codes symbols again from their logged spans (another message's,
    /// coded with the same models), logging them too.
    pub fn put_spans(&mut self, spans: &[u32]) {
        for &span in spans {
            self.encoder
                .encode(span & (PROB_TOTAL - 1), (span >> PROB_BITS) + 1);
        }
        if let Some(log) = self.log.as_deref_mut() {
            log.extend_from_slice(spans);
        }
    }

    /// Ends the message: the symbol stream goes into the buffer's end
    /// ([`splice_reversed`]). Returns the message's length in bytes and
    /// in bits; fails when the two parts do not fit the buffer together.
    pub fn finish(self) -> Result<(usize, usize), BitError> {
        let raw_bits = self.raw.bits_written();
        let buf = self.raw.into_buffer();
        let (stream, stream_bits) = self.encoder.finish_open();
        let len = splice_reversed(buf, raw_bits, stream, stream_bits)?;
        Ok((len, raw_bits + stream_bits))
    }
}

impl BitSink for SplitWriter<'_> {
    #[inline]
    fn put_bits(&mut self, value: u32, count: u32) -> Result<(), BitError> {
        self.raw.put_bits(value, count)
    }

    #[inline]
    fn put_wide_bits(&mut self, value: u64, count: u32) -> Result<(), BitError> {
        self.raw.put_wide_bits(value, count)
    }

    /// An upper bound of the message's length in bits if it ended here.
    #[inline]
    fn bits_written(&self) -> usize {
        self.raw.bits_written() + self.encoder.bits_bound()
    }

    #[inline]
    fn put_coded_symbol(&mut self, code: &SymbolCode, symbol: u8) -> Result<(), BitError> {
        let (start, frequency) = code.span(symbol).ok_or(BitError::InvalidCode {
            position: self.raw.bits_written(),
        })?;
        self.encoder.encode(start, frequency);
        if let Some(log) = self.log.as_deref_mut() {
            log.push(pack_span(start, frequency));
        }
        Ok(())
    }

    #[inline]
    fn put_coded_symbol_and_raw(
        &mut self,
        code: &SymbolCode,
        symbol: u8,
        raw: u32,
        raw_bits: u32,
    ) -> Result<(), BitError> {
        self.put_coded_symbol(code, symbol)?;
        if raw_bits > 0 {
            self.raw.put_bits(raw, raw_bits)?;
        }
        Ok(())
    }

    /// Range-codes the answer (logged like a symbol, so a copy of the
    /// spans codes it again).
    #[inline]
    fn put_decision(&mut self, yes: bool, chance: Chance) -> Result<(), BitError> {
        let (start, frequency) = chance.span(yes);
        self.encoder.encode(start, frequency);
        if let Some(log) = self.log.as_deref_mut() {
            log.push(pack_span(start, frequency));
        }
        Ok(())
    }

    #[inline]
    fn put_coded_symbol_and_top_bits(
        &mut self,
        code: &SymbolCode,
        symbol: u8,
        raw: u32,
        raw_bits: u32,
        chances: &TopBitChances,
    ) -> Result<(), BitError> {
        put_symbol_then_top_bits(self, code, symbol, raw, raw_bits, chances)
    }
}

/// Writes a range-coded stream (bytes from [`RangeEncoder::finish_open`],
/// `range_bits` long) backwards into the end of `buf`, after `raw_bits`
/// raw bits at its front, and returns the message's length in bytes: the
/// fewest that hold both. The stream's first bit is the top bit of the
/// message's last byte; where the two meet they share a byte (the raw
/// bits fill it from the bottom, the stream from the top). The raw bits'
/// last byte must be zero above them, as a [`crate::BitWriter`] leaves
/// it; the bytes after it are overwritten.
pub fn splice_reversed(
    buf: &mut [u8],
    raw_bits: usize,
    range: &[u8],
    range_bits: usize,
) -> Result<usize, BitError> {
    let bits = raw_bits + range_bits;
    let len = bits.div_ceil(8);
    if len > buf.len() {
        return Err(BitError::Overflow {
            position: raw_bits,
            requested: range_bits.min(u32::MAX as usize) as u32,
            capacity: 8 * buf.len(),
        });
    }
    buf[raw_bits.div_ceil(8)..len].fill(0);
    for (index, &byte) in range.iter().enumerate().take(range_bits.div_ceil(8)) {
        buf[len - 1 - index] |= byte;
    }
    Ok(len)
}

/// Reads a message whose front holds raw bits and whose end holds a
/// range-coded stream stored backwards ([`splice_reversed`]): raw reads
/// ([`BitSource::get_bits`]) come from the front, modelled symbols
/// ([`BitSource::get_coded_symbol`]) from the stream. The native codec
/// written through a sink that splits the same way reads back through it:
/// its symbols cost their information, its raw bits what they are, and raw
/// bits are copied and read as fast as from a bit stream.
///
/// Neither part knows where the other starts: the stream ends so that any
/// bits after it read back the same ([`RangeEncoder::finish_open`]), so its
/// decoder reads on into the raw bits, and then zeros, harmlessly. A
/// message's length must come from its transport.
#[derive(Debug, Clone)]
pub struct SplitReader<'a> {
    raw: crate::BitReader<'a>,
    decoder: RangeDecoder<'a>,
}

impl<'a> SplitReader<'a> {
    /// A reader of the message `input` (its whole length).
    pub fn new(input: &'a [u8]) -> Self {
        SplitReader {
            raw: crate::BitReader::new(input),
            decoder: RangeDecoder::reversed(input),
        }
    }

    /// The raw part's reader, where the raw reads left it.
    pub fn raw(&mut self) -> &mut crate::BitReader<'a> {
        &mut self.raw
    }

    /// The stream never reads more than a message's bytes and its window
    /// past them: a longer read is a message that lies.
    fn check_overrun(&self) -> Result<(), BitError> {
        if self.decoder.position > self.decoder.input.len() + 8 {
            return Err(BitError::EndOfInput {
                position: 8 * self.decoder.input.len(),
                requested: 1,
                available: 8 * self.decoder.input.len(),
            });
        }
        Ok(())
    }

    /// Whether the bits read add up: the raw bits read and the symbol
    /// stream's bytes consumed (less the decoder's four-byte window) fit
    /// in the message together. A message claiming more than it holds
    /// fails here, if not before.
    pub fn fits(&self) -> bool {
        let stream = 8 * self.decoder.position.saturating_sub(4);
        self.raw.bits_read() + stream <= 8 * self.decoder.input.len()
    }
}

impl BitSource for SplitReader<'_> {
    #[inline]
    fn get_bits(&mut self, count: u32) -> Result<u32, BitError> {
        self.raw.get_bits(count)
    }

    /// Raw bits read so far (the symbol stream is not counted).
    fn bits_read(&self) -> usize {
        self.raw.bits_read()
    }

    /// Raw bits read and the symbol stream's bits spent.
    fn bits_spent(&self) -> usize {
        self.raw.bits_read() + self.decoder.bits_spent()
    }

    #[inline]
    fn get_coded_symbol(&mut self, code: &SymbolCode) -> Result<u8, BitError> {
        let symbol = self.decoder.decode_symbol(code, self.bits_read())?;
        self.check_overrun()?;
        Ok(symbol)
    }

    #[inline]
    fn get_decision(&mut self, chance: Chance) -> Result<bool, BitError> {
        let yes = self.decoder.decode_decision(chance)?;
        self.check_overrun()?;
        Ok(yes)
    }

    /// Its top bits are range-coded by their chances.
    #[inline(always)]
    fn reads_top_bits(&self) -> bool {
        true
    }

    #[inline]
    fn get_coded_symbol_and_top_bits(
        &mut self,
        code: &SymbolCode,
        extra_bits: &[u8; 256],
        chances: &TopBitChances,
    ) -> Result<(u8, u32), BitError> {
        get_symbol_then_top_bits(self, code, extra_bits, chances)
    }
}

/// A model's weights quantised to [`PROB_TOTAL`], and their running sums:
/// what the range coder reads. Every symbol below `alphabet` keeps at
/// least 1 (a Huffman code gives every symbol a code word, the unseen ones
/// long ones, so a stream of any symbols of the context stays codable);
/// the others get none. Weights of all zero share the total evenly.
pub fn quantize(weights: &[u32; 256], alphabet: usize) -> Box<[u32; 257]> {
    let alphabet = alphabet.clamp(1, 256);
    let total: u64 = weights[..alphabet].iter().map(|&w| u64::from(w)).sum();
    // Each symbol of the alphabet gets 1, the rest is shared by weight.
    let spare = u64::from(PROB_TOTAL) - alphabet as u64;
    let mut frequencies = [0u32; 256];
    let mut given = 0u64;
    for (frequency, &weight) in frequencies.iter_mut().zip(weights).take(alphabet) {
        let share = (u64::from(weight) * spare)
            .checked_div(total)
            .unwrap_or(spare / alphabet as u64);
        *frequency = 1 + share as u32;
        given += 1 + share;
    }
    // Rounding down left some over: to the most weighted symbol.
    let largest = (0..alphabet).max_by_key(|&s| weights[s]).unwrap_or(0);
    frequencies[largest] += (u64::from(PROB_TOTAL) - given) as u32;
    let mut cumulative = Box::new([0u32; 257]);
    let mut sum = 0u32;
    for (symbol, &frequency) in frequencies.iter().enumerate() {
        cumulative[symbol] = sum;
        sum += frequency;
    }
    cumulative[256] = sum;
    cumulative
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A frequency table as (cumulative, frequency) spans.
    fn spans(frequencies: &[u32]) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        let mut sum = 0;
        for &f in frequencies {
            out.push((sum, f));
            sum += f;
        }
        assert_eq!(sum, PROB_TOTAL);
        out
    }

    enum Item {
        Symbol(usize),
        Bits(u32, u32),
    }

    fn round_trip(table: &[(u32, u32)], items: &[Item]) -> usize {
        let mut encoder = RangeEncoder::new();
        for item in items {
            match *item {
                Item::Symbol(s) => encoder.encode(table[s].0, table[s].1),
                Item::Bits(v, n) => encoder.encode_bits(v, n),
            }
        }
        let (bytes, bits) = encoder.finish();
        assert_eq!(bytes.len(), bits.div_ceil(8));
        let mut decoder = RangeDecoder::new(bytes);
        for item in items {
            match *item {
                Item::Symbol(s) => {
                    let target = decoder.target();
                    let found = table
                        .iter()
                        .position(|&(c, f)| (c..c + f).contains(&target))
                        .unwrap();
                    assert_eq!(found, s);
                    decoder.consume(table[s].0, table[s].1).unwrap();
                }
                Item::Bits(v, n) => {
                    let mask = if n >= 32 { u32::MAX } else { (1 << n) - 1 };
                    assert_eq!(decoder.decode_bits(n).unwrap(), v & mask);
                }
            }
        }
        bits
    }

    /// Codes `items`, ends the stream open, fills every bit after it with
    /// `noise`, and decodes it back; returns the stream's length in bits.
    fn round_trip_open(table: &[(u32, u32)], items: &[Item], noise: u8) -> usize {
        let mut encoder = RangeEncoder::new();
        for item in items {
            match *item {
                Item::Symbol(s) => encoder.encode(table[s].0, table[s].1),
                Item::Bits(v, n) => encoder.encode_bits(v, n),
            }
        }
        let bound = encoder.bits_bound();
        let (bytes, bits) = encoder.finish_open();
        assert!(bits <= bound, "{bits} > {bound}");
        assert_eq!(bytes.len(), bits.div_ceil(8));
        let mut noisy = bytes.to_vec();
        if bits % 8 != 0 {
            let free = 8 - bits % 8;
            let last = noisy.len() - 1;
            noisy[last] |= noise & ((1u8 << free) - 1);
        }
        noisy.extend([noise, !noise, noise.rotate_left(3), 0xFF, noise]);
        // Stored backwards, as a split message keeps it.
        noisy.reverse();
        let mut decoder = RangeDecoder::reversed(&noisy);
        for item in items {
            match *item {
                Item::Symbol(s) => {
                    let target = decoder.target();
                    assert!((table[s].0..table[s].0 + table[s].1).contains(&target));
                    decoder.consume(table[s].0, table[s].1).unwrap();
                }
                Item::Bits(v, n) => {
                    let mask = if n >= 32 { u32::MAX } else { (1 << n) - 1 };
                    assert_eq!(decoder.decode_bits(n).unwrap(), v & mask);
                }
            }
        }
        bits
    }

    #[test]
    fn an_open_end_reads_back_whatever_follows_it() {
        let table = spans(&[PROB_TOTAL - 1, 1]);
        for noise in [0u8, 0xFF, 0xA5, 0x5A] {
            let items: Vec<Item> = (0..100).map(|_| Item::Symbol(0)).collect();
            assert!(round_trip_open(&table, &items, noise) <= 3);
            let items = [
                Item::Symbol(1),
                Item::Bits(0b1_0110_1101, 9),
                Item::Symbol(0),
            ];
            let bits = round_trip_open(&table, &items, noise);
            assert!((25..=28).contains(&bits), "{bits}");
        }
    }

    #[test]
    fn a_spliced_stream_shares_the_meeting_byte_with_the_raw_bits() {
        // 11 raw bits, then a 5-bit stream: two bytes, not three.
        let mut buf = [0xEEu8; 4];
        buf[0] = 0xFF;
        buf[1] = 0b0000_0111;
        let len = splice_reversed(&mut buf, 11, &[0b1011_0000], 5).unwrap();
        assert_eq!(len, 2);
        assert_eq!(buf[..2], [0xFF, 0b1011_0111]);
        let mut buf = [0u8; 1];
        assert!(matches!(
            splice_reversed(&mut buf, 7, &[0x80], 2),
            Err(BitError::Overflow { .. })
        ));
    }

    #[test]
    fn an_empty_message_is_no_bits() {
        let mut encoder = RangeEncoder::new();
        assert_eq!(encoder.finish().1, 0);
    }

    #[test]
    fn near_certain_symbols_cost_a_fraction_of_a_bit() {
        // 1 in 65536 for the rare symbol: a hundred certain ones cost
        // about 0.002 bits, and the end a bit or two.
        let table = spans(&[PROB_TOTAL - 1, 1]);
        let items: Vec<Item> = (0..100).map(|_| Item::Symbol(0)).collect();
        assert!(round_trip(&table, &items) <= 2);
        // Raw bits cost what they are.
        let items = [Item::Bits(0b1_0110_1101, 9)];
        let bits = round_trip(&table, &items);
        assert!((9..=11).contains(&bits), "{bits}");
    }

    /// Writes `answers` (answer, chance in 65,536ths) interleaved with raw
    /// bits through a [`SplitWriter`], reads them back through a
    /// [`SplitReader`]; returns the message's bits.
    fn split_decisions(answers: &[(bool, u16)], raw_every: usize) -> usize {
        let mut buf = [0u8; 4096];
        let mut encoder = RangeEncoder::new();
        let mut log = Vec::new();
        let mut writer = SplitWriter::new(&mut buf, &mut encoder).with_log(&mut log);
        // What the message had cost after each answer (and its raw bits).
        let mut written = Vec::new();
        for (i, &(yes, chance)) in answers.iter().enumerate() {
            writer.put_decision(yes, Chance::in_65536(chance)).unwrap();
            if raw_every > 0 && i % raw_every == 0 {
                writer.put_bits(i as u32 & 7, 3).unwrap();
            }
            written.push(writer.bits_written());
        }
        assert_eq!(writer.spans().len(), answers.len(), "every answer logged");
        let (len, bits) = writer.finish().unwrap();
        let mut reader = SplitReader::new(&buf[..len]);
        for (i, &(yes, chance)) in answers.iter().enumerate() {
            assert_eq!(
                reader.get_decision(Chance::in_65536(chance)).unwrap(),
                yes,
                "answer {i}"
            );
            if raw_every > 0 && i % raw_every == 0 {
                assert_eq!(reader.get_bits(3).unwrap(), i as u32 & 7);
            }
            // The reader counts the bits spent as the writer did: a trace
            // attributes each part of a message its own bits.
            assert_eq!(reader.bits_spent(), written[i], "after answer {i}");
        }
        assert!(reader.fits());
        bits
    }

    #[test]
    fn expected_answers_cost_a_fraction_of_a_bit_and_a_bit_stream_one_bit() {
        // 64 answers expected at 31 in 32: 64 × 0.046 bits and the end.
        let answers = vec![(true, 63_488); 64];
        let bits = split_decisions(&answers, 0);
        assert!(bits <= 5, "{bits}");
        // The unexpected answer costs its information: 5 bits each.
        let answers = vec![(false, 63_488); 8];
        let bits = split_decisions(&answers, 0);
        assert!((40..=42).contains(&bits), "{bits}");
        // A bit stream writes each answer as its bit, whatever the chance.
        let mut buf = [0u8; 8];
        let mut writer = crate::BitWriter::new(&mut buf);
        for yes in [true, false, true, true] {
            writer.put_decision(yes, Chance::of(1, 1000)).unwrap();
        }
        assert_eq!(writer.bits_written(), 4);
        assert_eq!(buf[0], 0b1101);
        let mut reader = crate::BitReader::new(&buf);
        assert!(reader.get_decision(Chance::EVEN).unwrap());
        assert!(!reader.get_decision(Chance::of(999, 1000)).unwrap());
    }

    #[test]
    fn chances_stay_off_both_ends() {
        assert_eq!(Chance::of(0, 10).yes(), 1);
        assert_eq!(Chance::of(10, 10).yes(), 65_535);
        assert_eq!(Chance::in_65536(0).yes(), 1);
        assert_eq!(Chance::of(1, 4).span(true), (0, 16_384));
        assert_eq!(Chance::of(1, 4).span(false), (16_384, 49_152));
    }

    proptest! {
        #[test]
        fn a_decision_narrows_as_its_span_would(
            input in proptest::collection::vec(any::<u8>(), 0..24),
            chances in proptest::collection::vec(1u16..=65_535, 1..40),
        ) {
            // The division-free decision and the general span path agree
            // on every answer, every state and every refusal, on any input.
            let mut fast = RangeDecoder::new(&input);
            let mut general = fast.clone();
            for &yes in &chances {
                let chance = Chance::in_65536(yes);
                let answer = general.target() < chance.yes();
                let (start, frequency) = chance.span(answer);
                let expected = general.consume(start, frequency).map(|()| answer);
                let got = fast.decode_decision(chance);
                prop_assert_eq!(got.is_ok(), expected.is_ok());
                let refused = expected.is_err();
                if let (Ok(got), Ok(expected)) = (got, expected) {
                    prop_assert_eq!(got, expected);
                }
                prop_assert_eq!(
                    (fast.code, fast.range, fast.position),
                    (general.code, general.range, general.position)
                );
                if refused {
                    break;
                }
            }
        }
    }

    proptest! {
        #[test]
        fn answers_round_trip_through_a_split_message(
            answers in proptest::collection::vec((any::<bool>(), any::<u16>()), 0..300),
            raw_every in 0usize..5,
        ) {
            split_decisions(&answers, raw_every);
        }

        #[test]
        fn answers_round_trip_through_a_range_writer(
            answers in proptest::collection::vec((any::<bool>(), any::<u16>()), 0..300),
        ) {
            let mut writer = RangeWriter::new();
            for &(yes, chance) in &answers {
                writer.put_decision(yes, Chance::in_65536(chance)).unwrap();
            }
            let (bytes, _) = writer.finish();
            let mut reader = RangeReader::new(bytes);
            for &(yes, chance) in &answers {
                prop_assert_eq!(reader.get_decision(Chance::in_65536(chance)).unwrap(), yes);
            }
        }
    }

    #[test]
    fn quantized_tables_sum_to_the_total_and_keep_every_symbol() {
        let mut weights = [0u32; 256];
        weights[0] = u32::MAX / 2;
        weights[7] = 1;
        weights[200] = 5;
        let cumulative = quantize(&weights, 201);
        let frequency = |s: usize| cumulative[s + 1] - cumulative[s];
        assert_eq!(cumulative[256], PROB_TOTAL);
        assert!(frequency(7) >= 1 && frequency(200) >= 1);
        // Unseen in the alphabet: the least there is; beyond it: nothing.
        assert_eq!((frequency(1), frequency(201)), (1, 0));
        assert!(frequency(0) > PROB_TOTAL - 256);
        let even = quantize(&[0; 256], 4);
        assert_eq!(even[4], PROB_TOTAL);
        assert!((0..4).all(|s| even[s + 1] - even[s] >= PROB_TOTAL / 4));
    }

    proptest! {
        #[test]
        fn any_sequence_round_trips_within_two_bits_of_its_information(
            frequencies in proptest::collection::vec(1u32..4000, 2..20),
            picks in proptest::collection::vec((any::<u8>(), any::<u32>(), 0u32..=32), 0..300),
        ) {
            // Scale the frequencies to the total.
            let sum: u32 = frequencies.iter().sum();
            let mut scaled: Vec<u32> = frequencies
                .iter()
                .map(|&f| (f * (PROB_TOTAL - frequencies.len() as u32) / sum).max(1))
                .collect();
            let given: u32 = scaled.iter().sum();
            scaled[0] += PROB_TOTAL - given;
            let table = spans(&scaled);
            let mut information = 0.0f64;
            let items: Vec<Item> = picks
                .iter()
                .map(|&(s, v, n)| {
                    if s % 4 == 0 {
                        information += f64::from(n);
                        Item::Bits(v, n)
                    } else {
                        let s = usize::from(s) % table.len();
                        information += (f64::from(PROB_TOTAL) / f64::from(table[s].1)).log2();
                        Item::Symbol(s)
                    }
                })
                .collect();
            let bits = round_trip(&table, &items) as f64;
            prop_assert!(bits <= information * 1.001 + 2.0, "{bits} > {information}");
            let open = round_trip_open(&table, &items, picks.len() as u8) as f64;
            prop_assert!(open <= information * 1.001 + 3.0, "{open} > {information}");
        }
    }
}
