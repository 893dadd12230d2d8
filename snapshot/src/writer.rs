//! The writer a message is built in: raw bits, or Quake 3's bitstream
//! Huffman coding on top of them, chosen by the framing.

use fields::{BitError, BitSink, BitWriter, HuffmanCode, HuffmanWriter};

/// A [`BitWriter`] that codes every write through a Huffman code when it has
/// one (see [`fields::HuffmanWriter`]). The coded bits of a run of writes do
/// not depend on where they stand, so a run kept from one message
/// ([`MessageWriter::coded`]) can be copied into another raw
/// ([`MessageWriter::put_coded`]): that is how the server's caches share
/// encodings under either coding.
#[derive(Debug)]
pub(crate) struct MessageWriter<'a> {
    writer: BitWriter<'a>,
    huffman: Option<&'static HuffmanCode>,
}

impl<'a> MessageWriter<'a> {
    /// Writes into `buf` from its start, through `huffman` if given.
    pub fn new(buf: &'a mut [u8], huffman: Option<&'static HuffmanCode>) -> Self {
        MessageWriter {
            writer: BitWriter::new(buf),
            huffman,
        }
    }

    /// The coded bytes written so far (the last one partly).
    pub fn coded(&self) -> &[u8] {
        self.writer.written()
    }

    /// Appends `bits` coded bits of `source` from bit `from`, as they are.
    #[inline]
    pub fn put_coded(&mut self, source: &[u8], from: usize, bits: usize) -> Result<(), BitError> {
        self.writer.put_bit_slice(source, from, bits)
    }

    /// Ends the message: its length in bytes (zero-padded).
    pub fn finish(self) -> usize {
        self.writer.finish()
    }
}

impl BitSink for MessageWriter<'_> {
    #[inline]
    fn put_bits(&mut self, value: u32, count: u32) -> Result<(), BitError> {
        match self.huffman {
            None => self.writer.put_bits(value, count),
            Some(code) => HuffmanWriter::new(&mut self.writer, code).put_bits(value, count),
        }
    }

    #[inline]
    fn put_wide_bits(&mut self, value: u64, count: u32) -> Result<(), BitError> {
        match self.huffman {
            None => self.writer.put_wide_bits(value, count),
            Some(code) => HuffmanWriter::new(&mut self.writer, code).put_wide_bits(value, count),
        }
    }

    #[inline]
    fn bits_written(&self) -> usize {
        self.writer.bits_written()
    }
}

/// Encodes a message into `out` (replacing its contents) with `encode`,
/// through `huffman` if given, growing the buffer from `initial` bytes
/// until it fits.
pub(crate) fn encode_message(
    out: &mut Vec<u8>,
    initial: usize,
    huffman: Option<&'static HuffmanCode>,
    mut encode: impl FnMut(&mut MessageWriter<'_>) -> Result<(), BitError>,
) -> Result<(), BitError> {
    let mut size = initial.max(64);
    loop {
        out.clear();
        out.resize(size, 0);
        let mut writer = MessageWriter::new(out, huffman);
        match encode(&mut writer) {
            Ok(()) => {
                let len = writer.finish();
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
        let mut first = [0u8; 32];
        let mut w = MessageWriter::new(&mut first, Some(code));
        w.put_bits(5, 3).unwrap();
        let from = w.bits_written();
        w.put_bits(0x1234, 16).unwrap();
        w.put_u8(200).unwrap();
        let to = w.bits_written();
        let run = w.coded().to_vec();
        let mut second = [0u8; 32];
        let mut o = MessageWriter::new(&mut second, Some(code));
        o.put_bit(true).unwrap();
        o.put_coded(&run, from, to - from).unwrap();
        o.put_bits(9, 4).unwrap();
        let len = o.finish();
        let mut r = HuffmanReader::new(BitReader::new(&second[..len]), code);
        assert!(r.get_bit().unwrap());
        assert_eq!(r.get_bits(16).unwrap(), 0x1234);
        assert_eq!(r.get_u8().unwrap(), 200);
        assert_eq!(r.get_bits(4).unwrap(), 9);
    }
}
