//! Fuzzes Huffman decoding: arbitrary bytes through the table decoder, the
//! tree-walk decoder and the bitstream-mode reader, for three codes of
//! different shapes (see [`codes`]).
//!
//! Besides "never panics", it checks that the two decoders agree on every
//! symbol, error and reader position, and that a failed bitstream read leaves
//! the reader where it was.
//!
//! The codes are built once, not from each input: building goes through
//! `huffman-compress`, whose recursive allocations give AddressSanitizer a new
//! stack trace per tree path, so per-input builds made memory grow without
//! bound (and ran 60 times slower). Code construction is covered by the
//! property tests in `fields`.
#![no_main]

use std::sync::OnceLock;

use fields::huffman::{CodeWord, HuffmanCode};
use fields::{BitReader, BitSource, HuffmanReader};
use libfuzzer_sys::fuzz_target;

/// Quake 3's code (complete except for its NYT leaf, at most 11 bits: the
/// primary table alone); a code for Fibonacci counts (flattened to the
/// 24-bit cap: two levels of sub-tables); and a sparse code whose 232 longest
/// words are 32 bits, with unused 32-bit patterns (invalid deep in the tables).
fn codes() -> [&'static HuffmanCode; 3] {
    static DEEP: OnceLock<HuffmanCode> = OnceLock::new();
    static SPARSE: OnceLock<HuffmanCode> = OnceLock::new();
    let deep = DEEP.get_or_init(|| {
        let mut counts = [0u32; 256];
        let (mut a, mut b) = (1u32, 1u32);
        for count in counts.iter_mut().take(46) {
            *count = a;
            (a, b) = (b, a.saturating_add(b));
        }
        HuffmanCode::from_frequencies(&counts).expect("Fibonacci counts build a code")
    });
    let sparse = SPARSE.get_or_init(|| {
        let mut words = [CodeWord::default(); 256];
        for (i, word) in words.iter_mut().enumerate() {
            // Byte i < 24: i ones then a zero. The rest: 24 ones, then 8 bits.
            *word = if i < 24 {
                CodeWord::from_bits_in_order((0..=i).map(|k| k < i)).unwrap()
            } else {
                CodeWord {
                    bits: 0xFF_FFFF | ((i as u32 - 24) << 24),
                    len: 32,
                }
            };
        }
        HuffmanCode::from_code_words(&words).expect("a prefix-free code")
    });
    [HuffmanCode::quake3(), deep, sparse]
}

/// Decodes symbols until the first error with both decoders in lock step.
fn decoders_agree(code: &HuffmanCode, bytes: &[u8], bit_len: usize) {
    let mut fast = BitReader::with_bit_len(bytes, bit_len);
    let mut slow = fast.clone();
    let tree = code.tree_decoder();
    loop {
        let a = code.decode_symbol(&mut fast);
        let b = tree.decode_symbol(&mut slow);
        assert_eq!(a, b);
        assert_eq!(fast.bits_read(), slow.bits_read());
        if a.is_err() {
            break;
        }
    }
}

/// Reads values of the widths `widths` names, in bitstream mode.
fn read_stream(code: &HuffmanCode, bytes: &[u8], bit_len: usize, widths: &[u8]) {
    let mut reader = HuffmanReader::new(BitReader::with_bit_len(bytes, bit_len), code);
    for &w in widths {
        let before = reader.bits_read();
        // Widths 0 and 33 are included on purpose: they must be errors.
        if reader.get_bits(u32::from(w % 34)).is_err() {
            assert_eq!(reader.bits_read(), before);
        }
    }
    let mut text = Vec::new();
    let _ = reader.get_cstr_into(&mut text, 64);
    assert!(text.len() <= 64);
}

fuzz_target!(|data: &[u8]| {
    let [cut, width_count, rest @ ..] = data else {
        return;
    };
    // The first byte cuts up to 7 bits off the end of the stream, so it can
    // end inside a byte; the second says how many of the following bytes are
    // widths for the bitstream reader rather than stream.
    let split = rest.len().min(usize::from(*width_count));
    let (widths, stream) = rest.split_at(split);
    let bit_len = (stream.len() * 8).saturating_sub(usize::from(cut & 7));
    for code in codes() {
        decoders_agree(code, stream, bit_len);
        read_stream(code, stream, bit_len, widths);
    }
});
