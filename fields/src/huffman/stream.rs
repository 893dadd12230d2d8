//! Bitstream mode: [`BitSink`]/[`BitSource`] adapters that write an `n`-bit
//! value as its low `n % 8` bits raw followed by `n / 8` Huffman-coded bytes,
//! low byte first. This is Quake 3's message format, so any codec written
//! against the traits speaks it by writing through these adapters.

use super::HuffmanCode;
use crate::bits::{low_mask, BitReader, BitSink, BitSource, BitWriter, MAX_WIDTH};
use crate::error::BitError;

fn check_width(count: u32) -> Result<(), BitError> {
    if count == 0 || count > MAX_WIDTH {
        Err(BitError::BadWidth(count))
    } else {
        Ok(())
    }
}

/// The bytes of a `count`-bit value that go through the Huffman code: every
/// whole byte above the `count % 8` raw bits, lowest first.
fn coded_bytes(value: u32, count: u32) -> impl Iterator<Item = u8> {
    let raw = count % 8;
    // At most 31 bits of shift: 32-bit values have no raw bits.
    (0..count / 8).map(move |i| (value >> (raw + 8 * i)) as u8)
}

/// Writes in bitstream mode to a [`BitWriter`]. Never allocates.
///
/// [`bits_written`](BitSink::bits_written) is the position in the underlying
/// writer, the unit Quake 3 measures message sizes in.
#[derive(Debug)]
pub struct HuffmanWriter<'w, 'a> {
    writer: &'w mut BitWriter<'a>,
    code: &'w HuffmanCode,
}

impl<'w, 'a> HuffmanWriter<'w, 'a> {
    /// Writes through `code` into `writer`, starting at its current position.
    pub fn new(writer: &'w mut BitWriter<'a>, code: &'w HuffmanCode) -> Self {
        HuffmanWriter { writer, code }
    }

    /// The code in use.
    pub fn code(&self) -> &'w HuffmanCode {
        self.code
    }

    /// The underlying writer (for raw, uncoded writes between coded ones).
    pub fn writer(&mut self) -> &mut BitWriter<'a> {
        self.writer
    }

    /// The bytes written to the underlying writer so far (the last one
    /// partly): coded bits, which can be copied raw into another writer,
    /// since a value's code words do not depend on where they stand.
    pub fn written(&self) -> &[u8] {
        self.writer.written()
    }
}

impl BitSink for HuffmanWriter<'_, '_> {
    /// Writes the low `count` bits of `value` in bitstream mode. All or
    /// nothing: on [`BitError::Overflow`] the writer is left untouched.
    fn put_bits(&mut self, value: u32, count: u32) -> Result<(), BitError> {
        check_width(count)?;
        let value = value & low_mask(count);
        let raw = count % 8;
        // Size the whole value first so a full buffer never gets half of it.
        let needed = raw
            + coded_bytes(value, count)
                .map(|b| u32::from(self.code.code_word(b).len))
                .sum::<u32>();
        let position = self.writer.bits_written();
        let capacity = self.writer.capacity_bits();
        if position + needed as usize > capacity {
            return Err(BitError::Overflow {
                position,
                requested: needed,
                capacity,
            });
        }
        if raw > 0 {
            self.writer.put_bits(value, raw)?;
        }
        for byte in coded_bytes(value, count) {
            self.code.encode_symbol(self.writer, byte)?;
        }
        Ok(())
    }

    fn bits_written(&self) -> usize {
        self.writer.bits_written()
    }
}

/// Reads in bitstream mode from a [`BitReader`] it owns. Never allocates.
///
/// [`bits_read`](BitSource::bits_read) is the position in the underlying
/// reader. A failed read leaves the position where it was, and its error
/// names the bit where the offending raw bits or code word start.
#[derive(Debug, Clone)]
pub struct HuffmanReader<'a, 'c> {
    reader: BitReader<'a>,
    code: &'c HuffmanCode,
}

impl<'a, 'c> HuffmanReader<'a, 'c> {
    /// Reads through `code` from `reader`, starting at its current position.
    pub fn new(reader: BitReader<'a>, code: &'c HuffmanCode) -> Self {
        HuffmanReader { reader, code }
    }

    /// The code in use.
    pub fn code(&self) -> &'c HuffmanCode {
        self.code
    }

    /// Bits left in the underlying reader.
    pub fn remaining_bits(&self) -> usize {
        self.reader.remaining_bits()
    }

    /// The underlying reader.
    pub fn reader(&self) -> &BitReader<'a> {
        &self.reader
    }

    /// The underlying reader, mutably (for raw, uncoded reads between coded ones).
    pub fn reader_mut(&mut self) -> &mut BitReader<'a> {
        &mut self.reader
    }

    /// Gives the underlying reader back, at the current position.
    pub fn into_inner(self) -> BitReader<'a> {
        self.reader
    }

    /// The common case of [`get_bits`](BitSource::get_bits) in one 64-bit
    /// window: the raw bits and every code word of the value found in the
    /// primary table (all of Quake 3's are), and all of it before the end.
    /// `None` otherwise, and the reader has not moved: the careful path
    /// then reads the value or names the fault exactly as before.
    ///
    /// At most 7 raw bits and four words of at most 12 bits: 55 bits, within
    /// the 57 of the window that are always the buffer's.
    #[inline]
    fn read_value_in_window(&mut self, count: u32) -> Option<u32> {
        if count == 0 || count > MAX_WIDTH {
            return None;
        }
        let (mut window, left) = self.reader.wide_window();
        let raw = count % 8;
        let mut value = window as u32 & low_mask(raw);
        window >>= raw;
        let mut used = raw;
        for i in 0..count / 8 {
            let (byte, len) = self.code.table.primary_leaf(window)?;
            value |= u32::from(byte) << (raw + 8 * i);
            window >>= len;
            used += len;
        }
        if used as usize > left {
            return None;
        }
        self.reader.advance_within(used as usize);
        Some(value)
    }

    /// [`get_bits`](BitSource::get_bits) symbol by symbol, with its errors.
    #[cold]
    #[inline(never)]
    fn get_bits_carefully(&mut self, count: u32) -> Result<u32, BitError> {
        check_width(count)?;
        // A reader is three words; restoring it makes failed reads atomic.
        let saved = self.reader.clone();
        let result = self.read_value(count);
        if result.is_err() {
            self.reader = saved;
        }
        result
    }

    fn read_value(&mut self, count: u32) -> Result<u32, BitError> {
        let raw = count % 8;
        let mut value = if raw > 0 {
            self.reader.get_bits(raw)?
        } else {
            0
        };
        for i in 0..count / 8 {
            let byte = self.code.decode_symbol(&mut self.reader)?;
            value |= u32::from(byte) << (raw + 8 * i);
        }
        Ok(value)
    }
}

impl BitSource for HuffmanReader<'_, '_> {
    #[inline]
    fn get_bits(&mut self, count: u32) -> Result<u32, BitError> {
        match self.read_value_in_window(count) {
            Some(value) => Ok(value),
            None => self.get_bits_carefully(count),
        }
    }

    fn bits_read(&self) -> usize {
        self.reader.bits_read()
    }
}
