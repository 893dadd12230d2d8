//! Bit-level writer and reader over caller-provided buffers.
//!
//! Bits are packed least-significant-first within each byte, which is the
//! order Quake 3 uses: the first bit written is bit 0 of byte 0. A value of
//! `n` bits is written low bit first, so reading `n` bits back gives the same
//! value.
//!
//! Codecs do not use [`BitWriter`]/[`BitReader`] directly: they write through
//! the [`BitSink`]/[`BitSource`] traits, which the Huffman "bitstream mode"
//! adapters in [`crate::huffman`] also implement. The same codec then produces
//! raw bits or Quake 3's Huffman-coded stream without knowing which.

use crate::error::BitError;
use crate::model::SymbolCode;
use crate::top_bits::TopBitChances;

/// Largest width, in bits, of a single integer read or write.
pub const MAX_WIDTH: u32 = 32;

fn check_width(count: u32) -> Result<(), BitError> {
    if count == 0 || count > MAX_WIDTH {
        Err(BitError::BadWidth(count))
    } else {
        Ok(())
    }
}

/// Mask with the low `count` bits set (`count` in `0..=32`).
#[inline]
pub fn low_mask(count: u32) -> u32 {
    if count >= 32 {
        u32::MAX
    } else {
        (1u32 << count) - 1
    }
}

/// Mask with the low `count` bits of a 64-bit word set, for a `count`
/// below 64 (a count of 64 or more wraps rather than panics). Without
/// [`low_mask`]'s select for a full width: the decoders' hot reads take
/// it where the count is known to be small (a few instructions a value).
#[inline(always)]
pub fn wide_mask(count: u32) -> u64 {
    (1u64 << (count & 63)) - 1
}

/// The set bits of one word, lowest first: one step per set bit, not per
/// bit (sets of fields and entities are mostly empty).
#[derive(Debug, Clone, Copy)]
pub struct Ones(pub u64);

impl Iterator for Ones {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.0 == 0 {
            return None;
        }
        let bit = self.0.trailing_zeros();
        self.0 &= self.0 - 1;
        Some(bit)
    }
}

/// Sign-extends the low `count` bits of `value` (`count` in `1..=32`).
#[inline]
pub fn sign_extend(value: u32, count: u32) -> i32 {
    let shift = 32 - count;
    ((value << shift) as i32) >> shift
}

/// How likely a yes/no answer is to be yes, in 65,536ths (1 to 65,535: no
/// answer is ever impossible): what a range-coding sink prices a
/// [`BitSink::put_decision`] by. A bit stream ignores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chance(u16);

impl Chance {
    /// As likely yes as no: one bit either way.
    pub const EVEN: Chance = Chance(1 << 15);

    /// Yes with `yes` in 65,536 (0 is taken as 1).
    pub const fn in_65536(yes: u16) -> Self {
        Chance(if yes == 0 { 1 } else { yes })
    }

    /// Yes `yes` times in `total` (`total` > 0), rounded to 65,536ths and
    /// kept off both ends.
    pub const fn of(yes: u32, total: u32) -> Self {
        let scaled = (yes as u64 * 65_536 / total as u64) as u32;
        let clamped = if scaled < 1 {
            1
        } else if scaled > 65_535 {
            65_535
        } else {
            scaled
        };
        Chance(clamped as u16)
    }

    /// The answer's span of the coder's 65,536 frequencies: yes is
    /// `0..chance`, no the rest. (start, frequency).
    #[inline]
    pub fn span(self, yes: bool) -> (u32, u32) {
        let p = u32::from(self.0);
        if yes {
            (0, p)
        } else {
            (p, 65_536 - p)
        }
    }

    /// The chance of yes, in 65,536ths.
    pub fn yes(self) -> u32 {
        u32::from(self.0)
    }
}

/// Something bits can be written to: a raw [`BitWriter`] or a Huffman coder.
///
/// Only [`BitSink::put_bits`] and [`BitSink::bits_written`] are required; the
/// rest are built from it, so every sink encodes them identically.
pub trait BitSink {
    /// Writes the low `count` bits of `value` (`count` in `1..=32`), low bit first.
    fn put_bits(&mut self, value: u32, count: u32) -> Result<(), BitError>;

    /// Bits written so far.
    fn bits_written(&self) -> usize;

    /// Writes the low `count` bits of `value` (`count` in `1..=64`), low bit
    /// first: what `put_bits` of the low 32 bits and then of the rest
    /// writes. For a code word and the raw bits after it in one call; a
    /// sink that can store them at once overrides it.
    fn put_wide_bits(&mut self, value: u64, count: u32) -> Result<(), BitError> {
        put_wide_split(self, value, count)
    }

    /// Writes one bit.
    fn put_bit(&mut self, bit: bool) -> Result<(), BitError> {
        self.put_bits(bit as u32, 1)
    }

    /// Writes a yes/no answer the writer expects to be yes with `chance`:
    /// one bit (1 for yes), as [`put_bit`](Self::put_bit), in a bit stream;
    /// a sink that range-codes ([`crate::range::SplitWriter`],
    /// [`crate::range::RangeWriter`]) codes it by its chance, so the
    /// expected answer costs a fraction of a bit. A message's header flags
    /// that are nearly always the same go through here.
    #[inline]
    fn put_decision(&mut self, yes: bool, chance: Chance) -> Result<(), BitError> {
        let _ = chance;
        self.put_bit(yes)
    }

    /// Writes a modelled symbol: `code`'s code word for it (what every
    /// bit sink does), or, for a sink that codes symbols by their
    /// probability ([`crate::range::RangeWriter`]), its span of the model's
    /// frequencies.
    #[inline(always)]
    fn put_coded_symbol(&mut self, code: &SymbolCode, symbol: u8) -> Result<(), BitError> {
        code.encode(self, symbol)
    }

    /// [`BitSink::put_coded_symbol`], then the low `raw_bits` bits of `raw`
    /// (`raw_bits` up to 32): a value's class and the bits below its
    /// leading one. A bit sink writes both in one call.
    #[inline(always)]
    fn put_coded_symbol_and_raw(
        &mut self,
        code: &SymbolCode,
        symbol: u8,
        raw: u32,
        raw_bits: u32,
    ) -> Result<(), BitError> {
        put_code_word_and_raw(self, code, symbol, raw, raw_bits)
    }

    /// [`BitSink::put_coded_symbol_and_raw`], with chances for the raw
    /// bits' first ones ([`crate::top_bits`]): a sink that range-codes
    /// codes them by the symbol's tree; a bit stream, this default, writes
    /// them as they are (the chances change nothing).
    #[inline(always)]
    fn put_coded_symbol_and_top_bits(
        &mut self,
        code: &SymbolCode,
        symbol: u8,
        raw: u32,
        raw_bits: u32,
        chances: &TopBitChances,
    ) -> Result<(), BitError> {
        let _ = chances;
        self.put_coded_symbol_and_raw(code, symbol, raw, raw_bits)
    }

    /// Writes a signed value in `count` bits (two's complement, truncated).
    fn put_signed(&mut self, value: i32, count: u32) -> Result<(), BitError> {
        self.put_bits(value as u32, count)
    }

    /// Writes an `f32` as its 32 raw IEEE-754 bits.
    fn put_f32(&mut self, value: f32) -> Result<(), BitError> {
        self.put_bits(value.to_bits(), 32)
    }

    /// Writes one byte.
    fn put_u8(&mut self, value: u8) -> Result<(), BitError> {
        self.put_bits(value as u32, 8)
    }

    /// Writes bytes, eight bits each.
    fn put_bytes(&mut self, bytes: &[u8]) -> Result<(), BitError> {
        bytes.iter().try_for_each(|&b| self.put_u8(b))
    }

    /// Writes bits `from..from + bits` of `source` (packed low bit first, as
    /// a [`BitWriter`] leaves them): a stretch of already-encoded bits copied
    /// whole, such as a cached entity update.
    fn put_bit_slice(&mut self, source: &[u8], from: usize, bits: usize) -> Result<(), BitError> {
        if from.saturating_add(bits) > source.len() * 8 {
            return Err(slice_too_short(source, from, bits));
        }
        let mut reader = BitReader::new(source);
        reader.position = from;
        let mut left = bits;
        while left > 0 {
            let take = left.min(32) as u32;
            self.put_bits(reader.get_bits(take)?, take)?;
            left -= take as usize;
        }
        Ok(())
    }

    /// Writes a NUL-terminated string of at most `max` bytes (terminator excluded).
    fn put_str(&mut self, text: &str, max: usize) -> Result<(), BitError> {
        let position = self.bits_written();
        let bytes = text.as_bytes();
        if bytes.len() > max {
            return Err(BitError::StringTooLong { position, max });
        }
        if let Some(index) = bytes.iter().position(|&b| b == 0) {
            return Err(BitError::NulInString { index });
        }
        self.put_bytes(bytes)?;
        self.put_u8(0)
    }

    /// Writes a `debug-keys` check key after an entity or event.
    ///
    /// Without the `debug-keys` feature this writes nothing, so release
    /// streams carry no overhead. `tag` should identify the item just written
    /// (an entity number, an event id) so a misaligned reader fails on it.
    fn put_check_key(&mut self, tag: u16) -> Result<(), BitError> {
        if cfg!(feature = "debug-keys") {
            self.put_bits(check_key(tag) as u32, 16)
        } else {
            let _ = tag;
            Ok(())
        }
    }
}

/// What every bit sink writes for [`BitSink::put_coded_symbol_and_raw`]:
/// `code`'s code word for `symbol` and the low `raw_bits` bits of `raw`,
/// in one write (for a sink that overrides the method for another coding
/// and keeps this one for bits).
#[inline(always)]
pub fn put_code_word_and_raw<S: BitSink + ?Sized>(
    sink: &mut S,
    code: &SymbolCode,
    symbol: u8,
    raw: u32,
    raw_bits: u32,
) -> Result<(), BitError> {
    let word = code.word(symbol);
    if word.len == 0 {
        // A symbol without a code word: the sink refuses the empty word,
        // as it does when the symbol is written alone.
        return sink.put_bits(word.bits, 0);
    }
    sink.put_wide_bits(
        u64::from(word.bits) | u64::from(raw) << word.len,
        u32::from(word.len) + raw_bits,
    )
}

/// The error for a bit slice shorter than the bits asked of it.
fn slice_too_short(source: &[u8], from: usize, bits: usize) -> BitError {
    BitError::EndOfInput {
        position: from,
        requested: bits.min(u32::MAX as usize) as u32,
        available: source.len() * 8,
    }
}

/// Something bits can be read from: a raw [`BitReader`] or a Huffman decoder.
pub trait BitSource {
    /// Reads `count` bits (`count` in `1..=32`), low bit first.
    fn get_bits(&mut self, count: u32) -> Result<u32, BitError>;

    /// Bits consumed so far.
    fn bits_read(&self) -> usize;

    /// What the message spent on everything read so far, in bits: the
    /// difference between two points is what was read between them (a
    /// trace's bits per entity). [`bits_read`](Self::bits_read) for a
    /// bit stream; a reader of range-coded symbols adds what the coder
    /// consumed for them (its interval's narrowing, as the writer's
    /// [`BitSink::bits_written`] counts it), which its `bits_read` does
    /// not say.
    fn bits_spent(&self) -> usize {
        self.bits_read()
    }

    /// Reads one bit.
    fn get_bit(&mut self) -> Result<bool, BitError> {
        Ok(self.get_bits(1)? != 0)
    }

    /// Reads an answer written by [`BitSink::put_decision`] with the same
    /// `chance`: one bit in a bit stream, a range-decoded decision from a
    /// source that range-codes.
    #[inline]
    fn get_decision(&mut self, chance: Chance) -> Result<bool, BitError> {
        let _ = chance;
        self.get_bit()
    }

    /// Reads a symbol written by [`BitSink::put_coded_symbol`] with `code`.
    #[inline(always)]
    fn get_coded_symbol(&mut self, code: &SymbolCode) -> Result<u8, BitError> {
        code.decode(self)
    }

    /// Reads a symbol with `code` ([`get_coded_symbol`](Self::get_coded_symbol)),
    /// then as many raw bits as `extra_bits` gives for that symbol (at most
    /// 32; none for 0): the reading side of
    /// [`BitSink::put_coded_symbol_and_raw`]. Returns the symbol and the raw
    /// bits. A reader that can look ahead takes both from one window.
    #[inline(always)]
    fn get_coded_symbol_and_raw(
        &mut self,
        code: &SymbolCode,
        extra_bits: &[u8; 256],
    ) -> Result<(u8, u32), BitError> {
        coded_symbol_then_raw(self, code, extra_bits)
    }

    /// Whether this source reads the bits below a value's leading one by
    /// their chances ([`get_coded_symbol_and_top_bits`](Self::get_coded_symbol_and_top_bits)
    /// differs from [`get_coded_symbol_and_raw`](Self::get_coded_symbol_and_raw)):
    /// false for a bit stream, whose raw bits are raw whatever the chances,
    /// so a decoder need not look a field's chances up for it (a bounds
    /// check and an option per value of the native decoder). A source that
    /// overrides `get_coded_symbol_and_top_bits` must answer true.
    #[inline(always)]
    fn reads_top_bits(&self) -> bool {
        false
    }

    /// Reads what [`BitSink::put_coded_symbol_and_top_bits`] wrote with the
    /// same chances: [`BitSource::get_coded_symbol_and_raw`] for a bit
    /// stream, this default.
    #[inline(always)]
    fn get_coded_symbol_and_top_bits(
        &mut self,
        code: &SymbolCode,
        extra_bits: &[u8; 256],
        chances: &TopBitChances,
    ) -> Result<(u8, u32), BitError> {
        let _ = chances;
        self.get_coded_symbol_and_raw(code, extra_bits)
    }

    /// Reads a `count`-bit two's-complement value and sign-extends it.
    fn get_signed(&mut self, count: u32) -> Result<i32, BitError> {
        Ok(sign_extend(self.get_bits(count)?, count))
    }

    /// Reads an `f32` from its 32 raw bits.
    fn get_f32(&mut self) -> Result<f32, BitError> {
        Ok(f32::from_bits(self.get_bits(32)?))
    }

    /// Reads one byte.
    fn get_u8(&mut self) -> Result<u8, BitError> {
        Ok(self.get_bits(8)? as u8)
    }

    /// Fills `out` with bytes.
    fn get_bytes(&mut self, out: &mut [u8]) -> Result<(), BitError> {
        for slot in out {
            *slot = self.get_u8()?;
        }
        Ok(())
    }

    /// Reads a NUL-terminated string of at most `max` bytes into `out`
    /// (cleared first). More than `max` bytes before the terminator is an error,
    /// so `out` never grows past `max`.
    fn get_cstr_into(&mut self, out: &mut Vec<u8>, max: usize) -> Result<(), BitError> {
        let position = self.bits_read();
        out.clear();
        loop {
            let byte = self.get_u8()?;
            if byte == 0 {
                return Ok(());
            }
            if out.len() == max {
                return Err(BitError::StringTooLong { position, max });
            }
            out.push(byte);
        }
    }

    /// Reads a NUL-terminated UTF-8 string of at most `max` bytes; invalid
    /// UTF-8 is replaced rather than rejected, since the bound is what matters.
    fn get_string(&mut self, max: usize) -> Result<String, BitError> {
        let mut bytes = Vec::new();
        self.get_cstr_into(&mut bytes, max)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The next 32 bits without consuming them and how many bits are left,
    /// for sources that can look ahead; the bits past what is left are
    /// unspecified, so a caller decides from the first `left` bits alone (a
    /// prefix code's word found in the window is real only if its length
    /// is at most `left`). `None` (the default) for those that cannot, such
    /// as a Huffman bitstream, whose bits exist only once decoded. Lets
    /// table-driven decoders (the native codec's symbol codes) read a whole
    /// code word at once.
    #[inline]
    fn peek_window(&self) -> Option<(u32, usize)> {
        None
    }

    /// Consumes `count` bits (`count <= 32`) already seen through
    /// [`peek_window`](Self::peek_window).
    #[inline]
    fn skip_bits(&mut self, count: u32) -> Result<(), BitError> {
        if count > 0 {
            self.get_bits(count)?;
        }
        Ok(())
    }

    /// Verifies a `debug-keys` check key written by [`BitSink::put_check_key`].
    fn expect_check_key(&mut self, tag: u16) -> Result<(), BitError> {
        if cfg!(feature = "debug-keys") {
            let position = self.bits_read();
            let found = self.get_bits(16)? as u16;
            let expected = check_key(tag);
            if found != expected {
                return Err(BitError::KeyMismatch {
                    position,
                    expected,
                    found,
                });
            }
        } else {
            let _ = tag;
        }
        Ok(())
    }
}

/// [`BitSource::get_coded_symbol_and_raw`] as two reads: the symbol, then
/// its raw bits.
#[inline(always)]
fn coded_symbol_then_raw<S: BitSource + ?Sized>(
    source: &mut S,
    code: &SymbolCode,
    extra_bits: &[u8; 256],
) -> Result<(u8, u32), BitError> {
    let symbol = source.get_coded_symbol(code)?;
    let count = u32::from(extra_bits[usize::from(symbol)]);
    let raw = if count > 0 {
        source.get_bits(count)?
    } else {
        0
    };
    Ok((symbol, raw))
}

/// The 16-bit key for `tag`: a fixed pattern mixed with the tag, so both a
/// shifted stream and a wrong item are caught.
fn check_key(tag: u16) -> u16 {
    0xA55A ^ tag.rotate_left(5)
}

/// Most bits one 64-bit store can take at any bit offset.
const WINDOW_BITS: u32 = 57;

/// [`BitSink::put_wide_bits`] as two [`BitSink::put_bits`] calls.
fn put_wide_split<S: BitSink + ?Sized>(
    sink: &mut S,
    value: u64,
    count: u32,
) -> Result<(), BitError> {
    if count == 0 || count > 64 {
        return Err(BitError::BadWidth(count));
    }
    sink.put_bits(value as u32, count.min(32))?;
    if count > 32 {
        sink.put_bits((value >> 32) as u32, count - 32)?;
    }
    Ok(())
}

/// Writes bits into a caller-provided byte buffer. Never allocates.
#[derive(Debug)]
pub struct BitWriter<'a> {
    buf: &'a mut [u8],
    position: usize,
}

impl<'a> BitWriter<'a> {
    /// A writer that starts at bit 0 of `buf`. Bytes are overwritten as they
    /// are reached, so `buf` need not be zeroed.
    pub fn new(buf: &'a mut [u8]) -> Self {
        BitWriter { buf, position: 0 }
    }

    /// Capacity in bits.
    pub fn capacity_bits(&self) -> usize {
        self.buf.len() * 8
    }

    /// Bytes touched so far (the last one may be partly filled, padded with zeros).
    pub fn byte_len(&self) -> usize {
        self.position.div_ceil(8)
    }

    /// The bytes written so far.
    pub fn written(&self) -> &[u8] {
        &self.buf[..self.byte_len()]
    }

    /// Ends writing and returns the number of bytes used.
    pub fn finish(self) -> usize {
        self.byte_len()
    }

    /// Ends writing and hands the whole buffer back (bytes past
    /// [`byte_len`](Self::byte_len) hold whatever they held before).
    pub fn into_buffer(self) -> &'a mut [u8] {
        self.buf
    }

    /// Writes `count` (≤ 32) raw bits without width checks; callers validate.
    #[inline]
    fn write_unchecked(&mut self, value: u32, count: u32) {
        if !self.write_in_window(u64::from(value), count) {
            self.write_bytewise(value, count);
            self.position += count as usize;
        }
    }

    /// Writes the low `count` (at most [`WINDOW_BITS`]) bits of `value` in
    /// one 64-bit read-modify-write, if the buffer holds eight bytes from
    /// the write position's byte on; `false` (nothing written) if not.
    #[inline]
    fn write_in_window(&mut self, value: u64, count: u32) -> bool {
        let byte = self.position >> 3;
        let offset = self.position & 7;
        let Some(window) = self.buf.get_mut(byte..byte + 8) else {
            return false;
        };
        // Keep the bits already written in the first byte, put the value
        // above them. Bytes past the new position are zeroed, which is
        // fine: they are not written yet.
        let window: &mut [u8; 8] = window.try_into().unwrap_or_else(|_| unreachable!());
        let value = value & (u64::MAX >> (64 - count.max(1)));
        let kept = u64::from_le_bytes(*window) & ((1u64 << offset) - 1);
        *window = (kept | value << offset).to_le_bytes();
        self.position += count as usize;
        true
    }

    /// The same near the end of the buffer, a byte at a time.
    fn write_bytewise(&mut self, mut value: u32, mut count: u32) {
        let mut position = self.position;
        while count > 0 {
            let byte = position >> 3;
            let offset = (position & 7) as u32;
            let take = count.min(8 - offset);
            let chunk = (value & low_mask(take)) as u8;
            if offset == 0 {
                self.buf[byte] = chunk;
            } else {
                self.buf[byte] |= chunk << offset;
            }
            value = value.checked_shr(take).unwrap_or(0);
            count -= take;
            position += take as usize;
        }
    }
}

impl BitSink for BitWriter<'_> {
    #[inline]
    fn put_bits(&mut self, value: u32, count: u32) -> Result<(), BitError> {
        check_width(count)?;
        if self.position + count as usize > self.capacity_bits() {
            return Err(BitError::Overflow {
                position: self.position,
                requested: count,
                capacity: self.capacity_bits(),
            });
        }
        self.write_unchecked(value, count);
        Ok(())
    }

    fn bits_written(&self) -> usize {
        self.position
    }

    /// Up to 57 bits (a 64-bit window less the bit offset in its first
    /// byte) go in one read-modify-write when the buffer has eight bytes
    /// from the write position on.
    #[inline]
    fn put_wide_bits(&mut self, value: u64, count: u32) -> Result<(), BitError> {
        if (1..=WINDOW_BITS).contains(&count) && self.write_in_window(value, count) {
            return Ok(());
        }
        put_wide_split(self, value, count)
    }

    /// Eight source bytes at a time, each shifted into place with the
    /// previous word's carry: a few instructions per 64 bits.
    fn put_bit_slice(&mut self, source: &[u8], from: usize, bits: usize) -> Result<(), BitError> {
        if from.saturating_add(bits) > source.len() * 8 {
            return Err(slice_too_short(source, from, bits));
        }
        if self.position + bits > self.capacity_bits() {
            return Err(BitError::Overflow {
                position: self.position,
                requested: bits.min(u32::MAX as usize) as u32,
                capacity: self.capacity_bits(),
            });
        }
        // Up to the source's next byte boundary bit by bit, then whole bytes.
        let mut source = &source[from / 8..];
        let mut bits = bits;
        let lead = from % 8;
        if lead > 0 && bits > 0 {
            let take = (8 - lead).min(bits);
            self.write_unchecked(u32::from(source[0]) >> lead, take as u32);
            source = &source[1..];
            bits -= take;
        }
        let offset = (self.position & 7) as u32;
        let mut out = self.position >> 3;
        let words = bits / 64;
        if words > 0 {
            // Bits below the write position in its byte stay; everything
            // from there on is overwritten (it is not written yet).
            let mut carry = u64::from(self.buf[out]) & ((1u64 << offset) - 1);
            // Every whole word ends at or before position + bits, which fits
            // the buffer: these bytes exist (checked once, not per word).
            let dest = &mut self.buf[out..out + words * 8];
            let from = &source[..words * 8];
            for (to, chunk) in dest.chunks_exact_mut(8).zip(from.chunks_exact(8)) {
                let word = u64::from_le_bytes(chunk.try_into().unwrap_or_else(|_| unreachable!()));
                to.copy_from_slice(&(carry | word << offset).to_le_bytes());
                carry = word.checked_shr(64 - offset).unwrap_or(0);
            }
            out += words * 8;
            if offset > 0 {
                self.buf[out] = carry as u8;
            }
            self.position += words * 64;
        }
        let mut rest = &source[words * 8..];
        let mut left = bits % 64;
        while left > 0 {
            let take = left.min(32);
            let mut word = [0u8; 4];
            let len = take.div_ceil(8);
            word[..len].copy_from_slice(&rest[..len]);
            self.write_unchecked(u32::from_le_bytes(word), take as u32);
            rest = &rest[len..];
            left -= take;
        }
        Ok(())
    }
}

/// Reads bits from a byte slice. Reading past the end is an error, never a panic.
#[derive(Debug, Clone)]
pub struct BitReader<'a> {
    buf: &'a [u8],
    position: usize,
    end: usize,
}

impl<'a> BitReader<'a> {
    /// A reader over all bits of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        BitReader {
            buf,
            position: 0,
            end: buf.len() * 8,
        }
    }

    /// A reader over the first `bit_len` bits of `buf` (clamped to its length).
    pub fn with_bit_len(buf: &'a [u8], bit_len: usize) -> Self {
        BitReader {
            buf,
            position: 0,
            end: bit_len.min(buf.len() * 8),
        }
    }

    /// Bits left to read.
    pub fn remaining_bits(&self) -> usize {
        self.end - self.position
    }

    /// Total length of the input in bits.
    pub fn bit_len(&self) -> usize {
        self.end
    }

    /// Returns the next `count` bits (`count <= 32`) without consuming them;
    /// bits past the end read as zero. Used by table-driven Huffman decoding,
    /// which then [`skip`](Self::skip)s only the length of the code it found.
    #[inline]
    pub fn peek_bits(&self, count: u32) -> u32 {
        let mut bits = self.raw_window();
        // Zero anything past the logical end, which may sit inside the last byte.
        let left = self.remaining_bits();
        if left < 64 {
            bits &= (1u64 << left) - 1;
        }
        (bits as u32) & low_mask(count)
    }

    /// The next 64 bits from the read position, low bit first. Bits past the
    /// logical end are whatever the buffer holds there (zeros past the
    /// buffer): callers that read only bits they know are in range (a
    /// checked `get_bits`, a prefix code whose length is checked against
    /// what is left) skip [`peek_bits`](Self::peek_bits)'s masking.
    #[inline]
    fn raw_window(&self) -> u64 {
        let byte = self.position >> 3;
        let offset = (self.position & 7) as u32;
        let window = match self.buf.get(byte..byte + 8) {
            // The common case: one unaligned 64-bit load.
            Some(bytes) => u64::from_le_bytes(bytes.try_into().unwrap_or_else(|_| unreachable!())),
            None => self.tail_window(byte),
        };
        window >> offset
    }

    /// [`raw_window`](Self::raw_window)'s bytes from `byte` on when fewer
    /// than eight are left: zeros past the buffer. Out of line, so the
    /// inlined common case stays as small as it was; and from a buffer of
    /// eight bytes or more, its last eight shifted down rather than the
    /// tail copied out, which was a `memcpy` call each time (a snapshot's
    /// last entities are read here).
    #[cold]
    #[inline(never)]
    fn tail_window(&self, byte: usize) -> u64 {
        let len = self.buf.len();
        if let (true, Some(last)) = (byte < len, len.checked_sub(8)) {
            let bytes = self.buf.get(last..).unwrap_or(&[0; 8]);
            let window = u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8]));
            // `byte` is past `last` (eight bytes from it would not fit)
            // and before the end: a shift of 8 to 56 bits.
            return window >> ((byte - last) * 8);
        }
        let mut window = [0u8; 8];
        let tail = self.buf.get(byte..).unwrap_or(&[]);
        window[..tail.len()].copy_from_slice(tail);
        u64::from_le_bytes(window)
    }

    /// Consumes `count` bits already inspected with [`peek_bits`](Self::peek_bits).
    #[inline]
    pub fn skip(&mut self, count: u32) -> Result<(), BitError> {
        if count as usize > self.remaining_bits() {
            return Err(self.end_of_input(count));
        }
        self.position += count as usize;
        Ok(())
    }

    /// The next 64 bits from the read position (low bit first) and the bits
    /// left. At least the first 57 are the buffer's; past the logical end
    /// they are unmasked, so a caller may use only bits it then finds to be
    /// in range (see [`advance_within`](Self::advance_within)).
    #[inline]
    pub(crate) fn wide_window(&self) -> (u64, usize) {
        (self.raw_window(), self.remaining_bits())
    }

    /// Consumes `count` bits the caller has checked are there (`count <=
    /// remaining_bits()`): what a decoder that read them from
    /// [`wide_window`](Self::wide_window) does.
    #[inline]
    pub(crate) fn advance_within(&mut self, count: usize) {
        debug_assert!(count <= self.remaining_bits());
        self.position += count.min(self.remaining_bits());
    }

    fn end_of_input(&self, requested: u32) -> BitError {
        BitError::EndOfInput {
            position: self.position,
            requested,
            available: self.end,
        }
    }
}

impl BitSource for BitReader<'_> {
    #[inline]
    fn get_bits(&mut self, count: u32) -> Result<u32, BitError> {
        check_width(count)?;
        if count as usize > self.remaining_bits() {
            return Err(self.end_of_input(count));
        }
        // In range: the count was just checked against what is left.
        let value = self.raw_window() as u32 & low_mask(count);
        self.position += count as usize;
        Ok(value)
    }

    fn bits_read(&self) -> usize {
        self.position
    }

    /// One byte load and a shift: the trait's default goes through
    /// [`get_bits`](BitSource::get_bits)' width check and mask, out of line,
    /// and a snapshot reads a dozen single bits (its header's decisions,
    /// the entity list's start): about 30 instructions each on the duel.
    #[inline]
    fn get_bit(&mut self) -> Result<bool, BitError> {
        if self.position >= self.end {
            return Err(self.end_of_input(1));
        }
        let byte = self.buf.get(self.position >> 3).copied().unwrap_or(0);
        let bit = (byte >> (self.position & 7)) & 1 != 0;
        self.position += 1;
        Ok(bit)
    }

    /// A bit stream's decision is one bit ([`BitSource::get_decision`]).
    #[inline(always)]
    fn get_decision(&mut self, chance: Chance) -> Result<bool, BitError> {
        let _ = chance;
        self.get_bit()
    }

    #[inline]
    fn peek_window(&self) -> Option<(u32, usize)> {
        Some((self.raw_window() as u32, self.remaining_bits()))
    }

    #[inline]
    fn skip_bits(&mut self, count: u32) -> Result<(), BitError> {
        self.skip(count)
    }

    /// The code word from one window, consumed without a second check when
    /// it lies within the input (the common case); else the code's own
    /// decoding, out of line, which reports any error as it always has.
    #[inline(always)]
    fn get_coded_symbol(&mut self, code: &SymbolCode) -> Result<u8, BitError> {
        let (window, left) = self.wide_window();
        if let Some((symbol, len)) = code.leaf(window as u32) {
            if len as usize <= left {
                self.position += len as usize;
                return Ok(symbol);
            }
        }
        self.coded_symbol_slow(code)
    }

    /// The code word and the raw bits after it from one 64-bit window when
    /// both are in it (the common case), else the two reads of the trait's
    /// default, out of line, which also report any error.
    #[inline(always)]
    fn get_coded_symbol_and_raw(
        &mut self,
        code: &SymbolCode,
        extra_bits: &[u8; 256],
    ) -> Result<(u8, u32), BitError> {
        let (window, left) = self.wide_window();
        if let Some((symbol, len)) = code.leaf(window as u32) {
            let count = u32::from(extra_bits[usize::from(symbol)]);
            let total = len + count;
            // At least the window's first 57 bits are the buffer's.
            if total <= 57 && total as usize <= left {
                self.position += total as usize;
                // `count` is at most 57 here: `wide_mask`, no select.
                let raw = (window >> len) & wide_mask(count);
                return Ok((symbol, raw as u32));
            }
        }
        self.coded_symbol_then_raw_slow(code, extra_bits)
    }
}

impl BitReader<'_> {
    /// The fallback of [`BitSource::get_coded_symbol_and_raw`]: a code word
    /// or raw bits past the window or the input, or an invalid word.
    #[cold]
    #[inline(never)]
    fn coded_symbol_then_raw_slow(
        &mut self,
        code: &SymbolCode,
        extra_bits: &[u8; 256],
    ) -> Result<(u8, u32), BitError> {
        coded_symbol_then_raw(self, code, extra_bits)
    }

    /// The fallback of [`BitSource::get_coded_symbol`]: a code word past
    /// the input, or an invalid one.
    #[cold]
    #[inline(never)]
    fn coded_symbol_slow(&mut self, code: &SymbolCode) -> Result<u8, BitError> {
        code.decode(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A wide write leaves exactly the bits of a 32-bit write of its
        /// low half and one of the rest, at any offset, up to the last
        /// byte of the buffer.
        #[test]
        fn a_wide_write_is_two_narrow_ones(
            lead in 0u32..80,
            value in any::<u64>(),
            count in 1u32..=64,
            len in 8usize..24,
        ) {
            let lead = lead.min(len as u32 * 8);
            let mut wide = vec![0xAAu8; len];
            let mut narrow = vec![0xAAu8; len];
            let mut w = BitWriter::new(&mut wide);
            let mut n = BitWriter::new(&mut narrow);
            for _ in 0..lead {
                w.put_bit(true).unwrap();
                n.put_bit(true).unwrap();
            }
            let wide_result = w.put_wide_bits(value, count);
            let narrow_result = put_wide_split(&mut n, value, count);
            prop_assert_eq!(wide_result.is_ok(), narrow_result.is_ok());
            if wide_result.is_ok() {
                prop_assert_eq!(w.bits_written(), n.bits_written());
                prop_assert_eq!(w.written(), n.written());
            }
        }
    }

    #[test]
    fn a_wide_write_refuses_bad_widths() {
        let mut buf = [0u8; 16];
        let mut w = BitWriter::new(&mut buf);
        assert!(matches!(w.put_wide_bits(1, 0), Err(BitError::BadWidth(0))));
        assert!(matches!(
            w.put_wide_bits(1, 65),
            Err(BitError::BadWidth(65))
        ));
        assert_eq!(w.bits_written(), 0);
    }

    #[test]
    fn ones_are_the_set_bits_lowest_first() {
        assert_eq!(Ones(0).count(), 0);
        let word = 1 | 1 << 5 | 1 << 63;
        assert_eq!(Ones(word).collect::<Vec<_>>(), vec![0, 5, 63]);
        assert_eq!(Ones(u64::MAX).count(), 64);
    }

    #[test]
    fn first_bit_is_least_significant_bit_of_first_byte() {
        let mut buf = [0xFFu8; 2];
        let mut w = BitWriter::new(&mut buf);
        w.put_bit(true).unwrap();
        w.put_bits(0, 2).unwrap();
        w.put_bits(0b1_0110, 5).unwrap();
        w.put_bits(0b101, 3).unwrap();
        assert_eq!(w.finish(), 2);
        assert_eq!(buf, [0b1011_0001, 0b0000_0101]);
    }

    #[test]
    fn a_bit_slice_longer_than_its_source_or_the_room_is_an_error() {
        let mut buf = [0u8; 2];
        let mut w = BitWriter::new(&mut buf);
        assert!(matches!(
            w.put_bit_slice(&[0xFF], 0, 9),
            Err(BitError::EndOfInput { .. })
        ));
        assert!(matches!(
            w.put_bit_slice(&[0xFF, 0xFF], 3, 14),
            Err(BitError::EndOfInput { position: 3, .. })
        ));
        assert!(matches!(
            w.put_bit_slice(&[0xFF; 3], 0, 17),
            Err(BitError::Overflow { .. })
        ));
        // Bits 4..13 of 0x1FF0 (low bit first): nine ones.
        w.put_bit_slice(&[0xF0, 0x1F, 0x00], 4, 9).unwrap();
        assert_eq!(w.finish(), 2);
        assert_eq!(buf, [0xFF, 0x01]);
    }

    #[test]
    fn reading_past_the_end_is_an_error() {
        let buf = [0xAB];
        let mut r = BitReader::new(&buf);
        assert_eq!(r.get_bits(5).unwrap(), 0b01011);
        assert_eq!(
            r.get_bits(4),
            Err(BitError::EndOfInput {
                position: 5,
                requested: 4,
                available: 8
            })
        );
        assert_eq!(r.get_bits(3).unwrap(), 0b101);
        assert!(r.get_bit().is_err());
    }

    #[test]
    fn widths_outside_1_to_32_are_rejected() {
        let mut buf = [0u8; 8];
        let mut w = BitWriter::new(&mut buf);
        assert_eq!(w.put_bits(0, 0), Err(BitError::BadWidth(0)));
        assert_eq!(w.put_bits(0, 33), Err(BitError::BadWidth(33)));
        let mut r = BitReader::new(&buf);
        assert_eq!(r.get_bits(33), Err(BitError::BadWidth(33)));
    }

    #[test]
    fn full_buffer_reports_overflow() {
        let mut buf = [0u8; 1];
        let mut w = BitWriter::new(&mut buf);
        w.put_bits(0x7F, 7).unwrap();
        assert!(matches!(w.put_bits(0, 2), Err(BitError::Overflow { .. })));
        w.put_bit(true).unwrap();
        assert_eq!(buf, [0xFF]);
    }

    #[test]
    fn strings_are_bounded_on_both_sides() {
        let mut buf = [0u8; 32];
        let mut w = BitWriter::new(&mut buf);
        w.put_bits(1, 3).unwrap();
        w.put_str("hello", 5).unwrap();
        assert!(matches!(
            w.put_str("toolong", 5),
            Err(BitError::StringTooLong { max: 5, .. })
        ));
        assert_eq!(
            w.put_str("a\0b", 5),
            Err(BitError::NulInString { index: 1 })
        );
        let len = w.finish();
        let mut r = BitReader::new(&buf[..len]);
        r.get_bits(3).unwrap();
        let mut out = Vec::new();
        let mut short = r.clone();
        assert!(matches!(
            short.get_cstr_into(&mut out, 4),
            Err(BitError::StringTooLong { max: 4, .. })
        ));
        assert_eq!(r.get_string(5).unwrap(), "hello");
    }

    #[test]
    fn unterminated_string_is_end_of_input() {
        let buf = *b"abc";
        let mut r = BitReader::new(&buf);
        assert!(matches!(
            r.get_string(100),
            Err(BitError::EndOfInput { .. })
        ));
    }

    #[test]
    fn fast_and_bytewise_paths_write_the_same_bits() {
        // Writes that cross the point where fewer than 8 bytes remain, over
        // a dirty buffer, read back exactly.
        let mut buf = [0xA5u8; 12];
        let mut w = BitWriter::new(&mut buf);
        let values: Vec<(u32, u32)> = (0..20)
            .map(|i| ((0x9E37_79B9u32).rotate_left(i), 1 + (i * 7) % 32))
            .collect();
        let mut written = Vec::new();
        for &(v, n) in &values {
            if w.put_bits(v, n).is_err() {
                break;
            }
            written.push((v & low_mask(n), n));
        }
        let bits = w.bits_written();
        assert!(bits > 64, "the bytewise path was reached");
        let mut r = BitReader::with_bit_len(&buf, bits);
        for (v, n) in written {
            assert_eq!(r.get_bits(n).unwrap(), v);
        }
    }

    #[test]
    fn peek_zero_fills_past_the_logical_end() {
        let buf = [0xFF, 0xFF];
        let mut r = BitReader::with_bit_len(&buf, 10);
        r.skip(4).unwrap();
        assert_eq!(r.peek_bits(12), 0b11_1111);
        assert!(r.skip(7).is_err());
    }

    #[cfg(feature = "debug-keys")]
    #[test]
    fn debug_keys_catch_a_misaligned_reader() {
        let mut buf = [0u8; 16];
        let mut w = BitWriter::new(&mut buf);
        w.put_bits(5, 4).unwrap();
        w.put_check_key(7).unwrap();
        let len = w.finish();
        let mut r = BitReader::new(&buf[..len]);
        r.get_bits(3).unwrap();
        assert!(matches!(
            r.expect_check_key(7),
            Err(BitError::KeyMismatch { position: 3, .. })
        ));
    }

    #[derive(Debug, Clone)]
    enum Op {
        Bits(u32, u32),
        Signed(i32, u32),
        Float(f32),
        Text(String),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (1u32..=32, any::<u32>()).prop_map(|(n, v)| Op::Bits(v & low_mask(n), n)),
            (1u32..=32, any::<i32>()).prop_map(|(n, v)| Op::Signed(sign_extend(v as u32, n), n)),
            any::<f32>().prop_map(Op::Float),
            "[a-zA-Z0-9 ]{0,20}".prop_map(Op::Text),
        ]
    }

    proptest! {
        #[test]
        fn any_sequence_round_trips(ops in prop::collection::vec(op(), 0..64)) {
            let mut buf = vec![0u8; 4096];
            let mut w = BitWriter::new(&mut buf);
            for op in &ops {
                match op {
                    Op::Bits(v, n) => w.put_bits(*v, *n).unwrap(),
                    Op::Signed(v, n) => w.put_signed(*v, *n).unwrap(),
                    Op::Float(f) => w.put_f32(*f).unwrap(),
                    Op::Text(s) => w.put_str(s, 20).unwrap(),
                }
                w.put_check_key(ops.len() as u16).unwrap();
            }
            let bits = w.bits_written();
            let mut r = BitReader::with_bit_len(&buf, bits);
            for op in &ops {
                match op {
                    Op::Bits(v, n) => prop_assert_eq!(r.get_bits(*n).unwrap(), *v),
                    Op::Signed(v, n) => prop_assert_eq!(r.get_signed(*n).unwrap(), *v),
                    Op::Float(f) => prop_assert_eq!(r.get_f32().unwrap().to_bits(), f.to_bits()),
                    Op::Text(s) => prop_assert_eq!(&r.get_string(20).unwrap(), s),
                }
                r.expect_check_key(ops.len() as u16).unwrap();
            }
            prop_assert_eq!(r.remaining_bits(), 0);
        }

        /// The writer's 56-bit fast path equals the trait's 32-bit default
        /// at every alignment, up to the buffer's last byte.
        #[test]
        fn a_bit_slice_is_copied_exactly(lead in 0u32..=32, source in prop::collection::vec(any::<u8>(), 0..80),
                                         skip in 0usize..20, cut in 0usize..640, room in 0usize..24) {
            let from = skip.min(source.len() * 8);
            let bits = cut.min(source.len() * 8 - from);
            let total = lead as usize + bits;
            // A buffer that ends right after the copy (plus a little room),
            // so the bytewise tail is exercised too.
            let mut fast = vec![0u8; total.div_ceil(8) + room % 3];
            let mut slow = fast.clone();
            let mut w = BitWriter::new(&mut fast);
            if lead > 0 { w.put_bits(0x5555_5555 & low_mask(lead), lead).unwrap(); }
            w.put_bit_slice(&source, from, bits).unwrap();
            prop_assert_eq!(w.bits_written(), total);
            struct Plain<'a>(BitWriter<'a>);
            impl BitSink for Plain<'_> {
                fn put_bits(&mut self, value: u32, count: u32) -> Result<(), BitError> { self.0.put_bits(value, count) }
                fn bits_written(&self) -> usize { self.0.bits_written() }
            }
            let mut p = Plain(BitWriter::new(&mut slow));
            if lead > 0 { p.put_bits(0x5555_5555 & low_mask(lead), lead).unwrap(); }
            p.put_bit_slice(&source, from, bits).unwrap();
            let len = total.div_ceil(8);
            prop_assert_eq!(&fast[..len], &slow[..len]);
            let mut r = BitReader::with_bit_len(&fast, total);
            r.skip(lead).unwrap();
            let mut s = BitReader::with_bit_len(&source, from + bits);
            s.skip(from as u32).unwrap();
            while s.remaining_bits() > 0 {
                let n = s.remaining_bits().min(32) as u32;
                prop_assert_eq!(r.get_bits(n).unwrap(), s.get_bits(n).unwrap());
            }
        }

        #[test]
        fn arbitrary_input_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64),
                                         widths in prop::collection::vec(0u32..40, 0..64)) {
            let mut r = BitReader::new(&bytes);
            for n in widths {
                let _ = r.get_bits(n);
                let _ = r.get_string(8);
            }
        }
    }
}
