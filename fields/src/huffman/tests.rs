//! Unit and property tests of the codes, decoders and bitstream adapters.
//! Checks against real Quake 3 demo files live in `demo_tests.rs`.

use proptest::prelude::*;

use super::*;
use crate::bits::{BitReader, BitSource};

/// Sum over code words of 2^(32 - len): 2^32 exactly when the words fill the
/// code space (every bit pattern starts some word).
fn kraft_sum(words: impl IntoIterator<Item = CodeWord>) -> u64 {
    words.into_iter().map(|w| 1u64 << (32 - w.len)).sum()
}

/// Encodes `input` into a fresh buffer; returns the buffer and its bit length.
fn encode(code: &HuffmanCode, input: &[u8]) -> (Vec<u8>, usize) {
    let mut buf = vec![0u8; code.encoded_bits(input).div_ceil(8)];
    let mut w = BitWriter::new(&mut buf);
    code.encode_bytes(input, &mut w).unwrap();
    let bits = w.bits_written();
    (buf, bits)
}

/// Decodes `count` symbols with both decoders, checking they agree on every
/// result, error and reader position; returns the table decoder's outcome.
fn decode_both(
    code: &HuffmanCode,
    buf: &[u8],
    bits: usize,
    count: usize,
) -> Result<Vec<u8>, BitError> {
    let mut fast = BitReader::with_bit_len(buf, bits);
    let mut slow = fast.clone();
    let tree = code.tree_decoder();
    let mut out = Vec::new();
    for _ in 0..count {
        let a = code.decode_symbol(&mut fast);
        let b = tree.decode_symbol(&mut slow);
        assert_eq!(a, b, "decoders disagree after {} symbols", out.len());
        assert_eq!(fast.bits_read(), slow.bits_read());
        out.push(a?);
    }
    Ok(out)
}

#[test]
fn quake3_code_length_histogram_matches_quake3() {
    let code = HuffmanCode::quake3();
    let mut histogram = [0u32; 33];
    for word in code.code_words() {
        histogram[usize::from(word.len)] += 1;
    }
    let expected = [
        (2, 1),
        (5, 2),
        (6, 7),
        (7, 24),
        (8, 43),
        (9, 49),
        (10, 129),
        (11, 1),
    ];
    for (len, count) in histogram.iter().enumerate() {
        let want = expected.iter().find(|e| e.0 == len).map_or(0, |e| e.1);
        assert_eq!(*count, want, "number of {len}-bit code words");
    }
    assert_eq!(code.max_code_len(), QUAKE3_MAX_CODE_LEN);
    assert_eq!(code.code_word(0).len, 2, "byte 0 is by far the most common");
}

/// The generated source of `quake3/words.rs` for a replay's words.
fn quake3_words_source(replayed: &quake3::Replayed) -> String {
    let word = |w: &CodeWord| format!("CodeWord {{ bits: {:#06x}, len: {} }}", w.bits, w.len);
    let mut source = String::from(
        "//! Generated: Quake 3's code words, as the adaptive replay of\n\
         //! `QUAKE3_FREQUENCIES` produces them. Regenerate with\n\
         //! `NETQ3_REGENERATE_QUAKE3_WORDS=1 cargo test -p netq3-fields quake3_code_words`.\n\n\
         use crate::huffman::CodeWord;\n\n\
         /// Quake 3's code word for each byte value (see [`crate::HuffmanCode::quake3`]).\n\
         #[rustfmt::skip]\n\
         pub const QUAKE3_CODE_WORDS: [CodeWord; 256] = [\n",
    );
    for (byte, w) in replayed.words.iter().enumerate() {
        source += &format!("    {}, // {byte:#04x}\n", word(w));
    }
    source +=
        "];\n\n/// The code word of the \"not yet transmitted\" leaf, which decodes to no byte.\n";
    source += &format!(
        "#[rustfmt::skip]\npub const QUAKE3_NYT_WORD: CodeWord = {};\n",
        word(&replayed.nyt)
    );
    source
}

#[test]
fn quake3_code_words_equal_the_replayed_tree() {
    let replayed = quake3::replay(&QUAKE3_FREQUENCIES).unwrap();
    if std::env::var_os("NETQ3_REGENERATE_QUAKE3_WORDS").is_some() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/huffman/quake3/words.rs");
        std::fs::write(path, quake3_words_source(&replayed)).unwrap();
        return;
    }
    for (byte, (compiled, replay)) in QUAKE3_CODE_WORDS.iter().zip(&replayed.words).enumerate() {
        assert_eq!(compiled, replay, "code word of byte {byte:#04x}");
    }
    assert_eq!(QUAKE3_NYT_WORD, replayed.nyt, "the NYT leaf's code word");
    // The shared code is built from the compiled words, and equals the
    // code the replay gives.
    let rebuilt = HuffmanCode::quake3_replayed().unwrap();
    assert_eq!(rebuilt.code_words(), HuffmanCode::quake3().code_words());
    for window in 0..1u32 << QUAKE3_MAX_CODE_LEN {
        assert_eq!(rebuilt.lookup(window), HuffmanCode::quake3().lookup(window));
    }
}

#[test]
fn quake3_nyt_leaf_completes_the_tree() {
    let replayed = quake3::replay(&QUAKE3_FREQUENCIES).unwrap();
    assert_eq!(replayed.words, *HuffmanCode::quake3().code_words());
    // 256 byte leaves plus the NYT leaf fill the code space exactly.
    let all = replayed.words.iter().copied().chain([replayed.nyt]);
    assert_eq!(kraft_sum(all), 1 << 32);
    assert_eq!(u32::from(replayed.nyt.len), QUAKE3_MAX_CODE_LEN);
}

#[test]
fn decoding_the_nyt_code_word_is_an_error() {
    let code = HuffmanCode::quake3();
    let nyt = quake3::replay(&QUAKE3_FREQUENCIES).unwrap().nyt;
    let mut buf = [0u8; 8];
    let mut w = BitWriter::new(&mut buf);
    w.put_bits(0b101, 3).unwrap();
    code.encode_symbol(&mut w, b'q').unwrap();
    let start = w.bits_written();
    w.put_bits(nyt.bits, u32::from(nyt.len)).unwrap();
    let end = w.bits_written();

    let mut reader = BitReader::with_bit_len(&buf, end);
    reader.get_bits(3).unwrap();
    assert_eq!(code.decode_symbol(&mut reader), Ok(b'q'));
    let mut walker = reader.clone();
    let err = Err(BitError::InvalidCode { position: start });
    assert_eq!(code.decode_symbol(&mut reader), err);
    assert_eq!(code.tree_decoder().decode_symbol(&mut walker), err);
    assert_eq!(
        reader.bits_read(),
        start,
        "a failed decode does not move the reader"
    );
    assert_eq!(walker.bits_read(), start);

    // The same bits one short of the end: the input ends inside the word.
    let mut short = BitReader::with_bit_len(&buf, end - 1);
    short.skip(start as u32).unwrap();
    let truncated = Err(BitError::EndOfInput {
        position: start,
        requested: u32::from(nyt.len),
        available: end - 1,
    });
    assert_eq!(code.decode_symbol(&mut short.clone()), truncated);
    assert_eq!(code.tree_decoder().decode_symbol(&mut short), truncated);

    // In bitstream mode the error surfaces from the byte read.
    let mut stream = HuffmanReader::new(BitReader::with_bit_len(&buf, end), code);
    assert_eq!(stream.get_bits(11).unwrap(), 0b101 | (u32::from(b'q') << 3));
    assert_eq!(
        stream.get_u8(),
        Err(BitError::InvalidCode { position: start })
    );
}

#[test]
fn replay_is_deterministic_and_rejects_what_it_cannot_replay() {
    let a = quake3::replay(&QUAKE3_FREQUENCIES).unwrap();
    let b = quake3::replay(&QUAKE3_FREQUENCIES).unwrap();
    assert_eq!((a.words, a.nyt), (b.words, b.nyt));

    let mut zero = QUAKE3_FREQUENCIES;
    zero[200] = 0;
    assert_eq!(
        HuffmanCode::from_adaptive_replay(&zero).unwrap_err(),
        HuffmanError::ZeroFrequency { symbol: 200 }
    );
    let huge = [u32::MAX; 256];
    assert!(matches!(
        HuffmanCode::from_adaptive_replay(&huge),
        Err(HuffmanError::ReplayTooLong { .. })
    ));
}

#[test]
fn every_symbol_round_trips_through_both_codes() {
    let static_code = HuffmanCode::from_frequencies(&QUAKE3_FREQUENCIES).unwrap();
    for code in [HuffmanCode::quake3(), &static_code] {
        let all: Vec<u8> = (0..=255).collect();
        let (buf, bits) = encode(code, &all);
        assert_eq!(decode_both(code, &buf, bits, 256).unwrap(), all);
        for byte in 0..=255u8 {
            let (buf, bits) = encode(code, &[byte]);
            assert_eq!(bits, usize::from(code.code_word(byte).len));
            let mut r = BitReader::with_bit_len(&buf, bits);
            assert_eq!(code.decode_symbol(&mut r), Ok(byte));
            assert_eq!(r.remaining_bits(), 0);
        }
    }
}

#[test]
fn static_code_is_complete_and_no_worse_than_quake3s() {
    let static_code = HuffmanCode::from_frequencies(&QUAKE3_FREQUENCIES).unwrap();
    assert_eq!(kraft_sum(static_code.code_words().iter().copied()), 1 << 32);
    // Huffman's code is optimal for these counts; the adaptive one is not
    // (it also spends code space on the NYT leaf).
    let cost = |code: &HuffmanCode| -> u64 {
        (0..256)
            .map(|i| u64::from(QUAKE3_FREQUENCIES[i]) * u64::from(code.code_words()[i].len))
            .sum()
    };
    assert!(cost(&static_code) <= cost(HuffmanCode::quake3()));
}

#[test]
fn zero_frequencies_still_get_code_words() {
    let flat = HuffmanCode::from_frequencies(&[0; 256]).unwrap();
    assert!(flat.code_words().iter().all(|w| w.len == 8));

    let mut one = [0u32; 256];
    one[b'a' as usize] = 1000;
    let code = HuffmanCode::from_frequencies(&one).unwrap();
    assert_eq!(code.code_word(b'a').len, 1);
    let input: Vec<u8> = (0..=255).rev().collect();
    let (buf, bits) = encode(&code, &input);
    assert_eq!(decode_both(&code, &buf, bits, input.len()).unwrap(), input);
}

#[test]
fn skewed_frequencies_are_flattened_to_the_length_cap() {
    // Fibonacci counts give the deepest possible Huffman tree (one more level
    // per symbol), far past the cap; zeros make the tail deeper still.
    let mut fib = [0u32; 256];
    let (mut a, mut b) = (1u32, 1u32);
    for slot in fib.iter_mut().take(46) {
        *slot = a;
        (a, b) = (b, a.saturating_add(b));
    }
    let code = HuffmanCode::from_frequencies(&fib).unwrap();
    assert!(code.max_code_len() <= MAX_FREQUENCY_CODE_LEN);
    assert!(code.max_code_len() > 12, "deep enough to need sub-tables");
    assert_eq!(kraft_sum(code.code_words().iter().copied()), 1 << 32);
    let input: Vec<u8> = (0..=255).collect();
    let (buf, bits) = encode(&code, &input);
    assert_eq!(decode_both(&code, &buf, bits, 256).unwrap(), input);
}

/// A valid but sparse code reaching the full 32 bits: byte `i < 24` is `i`
/// ones then a zero; the other 232 bytes are 24 ones then an 8-bit index, so
/// 24 of the 256 patterns under that prefix are unused (invalid).
fn deep_sparse_code() -> HuffmanCode {
    let mut words = [CodeWord::default(); 256];
    for (i, word) in words.iter_mut().enumerate() {
        *word = if i < 24 {
            CodeWord::from_bits_in_order((0..=i).map(|k| k < i)).unwrap()
        } else {
            let index = (i - 24) as u32;
            CodeWord {
                bits: 0xFF_FFFF | (index << 24),
                len: 32,
            }
        };
    }
    HuffmanCode::from_code_words(&words).unwrap()
}

#[test]
fn deep_codes_use_sub_tables_and_flag_unused_patterns() {
    let code = deep_sparse_code();
    assert_eq!(code.max_code_len(), 32);
    let input: Vec<u8> = (0..=255).rev().collect();
    let (buf, bits) = encode(&code, &input);
    assert_eq!(decode_both(&code, &buf, bits, 256).unwrap(), input);

    // Index 240 under the all-ones prefix is unused.
    let mut buf = [0u8; 5];
    let mut w = BitWriter::new(&mut buf);
    w.put_bit(false).unwrap(); // byte 0
    w.put_bits(0xFF_FFFF | (240 << 24), 32).unwrap();
    let mut r = BitReader::new(&buf);
    assert_eq!(code.decode_symbol(&mut r), Ok(0));
    assert_eq!(
        decode_both(&code, &buf, 33, 2),
        Err(BitError::InvalidCode { position: 1 })
    );
}

#[test]
fn bad_code_words_are_rejected() {
    let base = *HuffmanCode::from_frequencies(&[1; 256])
        .unwrap()
        .code_words();
    let mut empty = base;
    empty[3].len = 0;
    assert_eq!(
        HuffmanCode::from_code_words(&empty).unwrap_err(),
        HuffmanError::BadLength { symbol: 3, len: 0 }
    );
    let mut long = base;
    long[9].len = 33;
    assert_eq!(
        HuffmanCode::from_code_words(&long).unwrap_err(),
        HuffmanError::BadLength { symbol: 9, len: 33 }
    );
    let mut duplicate = base;
    duplicate[7] = duplicate[5];
    assert_eq!(
        HuffmanCode::from_code_words(&duplicate).unwrap_err(),
        HuffmanError::NotPrefixFree { symbol: 7 }
    );
    let mut prefix = base;
    prefix[200] = CodeWord {
        bits: prefix[4].bits & 0x7F,
        len: prefix[4].len - 1,
    };
    assert_eq!(
        HuffmanCode::from_code_words(&prefix).unwrap_err(),
        HuffmanError::NotPrefixFree { symbol: 200 }
    );
}

#[test]
fn bitstream_mode_writes_raw_low_bits_then_coded_bytes() {
    let code = HuffmanCode::quake3();
    let value = 0b1_0110_1001_1101u32; // 13 bits: 5 raw, then byte 0b1011_0100
    let mut coded = [0u8; 8];
    let mut w = BitWriter::new(&mut coded);
    let mut hw = HuffmanWriter::new(&mut w, code);
    hw.put_bits(value | 0xFFFF_0000, 13).unwrap(); // bits above 13 are ignored
    hw.put_bits(0xA1B2_C3D4, 32).unwrap();
    let coded_bits = hw.bits_written();

    let mut manual = [0u8; 8];
    let mut m = BitWriter::new(&mut manual);
    m.put_bits(value & 0x1F, 5).unwrap();
    code.encode_symbol(&mut m, (value >> 5) as u8).unwrap();
    for byte in [0xD4, 0xC3, 0xB2, 0xA1] {
        code.encode_symbol(&mut m, byte).unwrap();
    }
    assert_eq!(coded_bits, m.bits_written());
    assert_eq!(coded, manual);

    let mut hr = HuffmanReader::new(BitReader::with_bit_len(&coded, coded_bits), code);
    assert_eq!(hr.get_bits(13), Ok(value));
    assert_eq!(hr.get_bits(32), Ok(0xA1B2_C3D4));
    assert_eq!(hr.bits_read(), coded_bits);
}

#[test]
fn bitstream_mode_failures_are_atomic() {
    let code = HuffmanCode::quake3();
    let mut buf = [0u8; 2];
    let mut w = BitWriter::new(&mut buf);
    let mut hw = HuffmanWriter::new(&mut w, code);
    hw.put_bits(0, 16).unwrap(); // two 2-bit zeros
    assert_eq!(hw.put_bits(0, 0), Err(BitError::BadWidth(0)));
    assert_eq!(hw.put_bits(0, 33), Err(BitError::BadWidth(33)));
    // The 3 raw bits would fit, the two coded bytes not: nothing is written.
    let needed = 3 + 2 * u32::from(code.code_word(0xFF).len);
    assert_eq!(
        hw.put_bits(u32::MAX, 19),
        Err(BitError::Overflow {
            position: 4,
            requested: needed,
            capacity: 16
        })
    );
    assert_eq!(hw.bits_written(), 4);
    hw.put_u8(0).unwrap();
    let end = hw.bits_written();
    assert_eq!(end, 6);

    let mut hr = HuffmanReader::new(BitReader::with_bit_len(&buf, end), code);
    assert_eq!(hr.get_bits(33), Err(BitError::BadWidth(33)));
    assert_eq!(hr.get_bits(16), Ok(0));
    // The raw bit is there, the code word after it is cut off: the error
    // names the code word, and nothing is consumed.
    assert!(matches!(
        hr.get_bits(9),
        Err(BitError::EndOfInput { position: 5, .. })
    ));
    assert_eq!(hr.bits_read(), 4);
    assert_eq!(hr.get_u8(), Ok(0));
    assert_eq!(hr.remaining_bits(), 0);
    assert!(hr.get_bit().is_err());
}

/// Bitstream mode read the slow, obvious way: raw bits, then one tree walk
/// per byte, the reader put back on any error. The oracle for
/// `HuffmanReader::get_bits`, whose one-window fast path must agree with it
/// on every value, error and position.
fn stream_read_by_tree(
    code: &HuffmanCode,
    reader: &mut BitReader<'_>,
    count: u32,
) -> Result<u32, BitError> {
    if count == 0 || count > 32 {
        return Err(BitError::BadWidth(count));
    }
    let saved = reader.clone();
    let raw = count % 8;
    let result = (|| {
        let mut value = if raw > 0 { reader.get_bits(raw)? } else { 0 };
        for i in 0..count / 8 {
            let byte = code.tree_decoder().decode_symbol(reader)?;
            value |= u32::from(byte) << (raw + 8 * i);
        }
        Ok(value)
    })();
    if result.is_err() {
        *reader = saved;
    }
    result
}

/// Reads `widths` from `bytes` cut to `bits` through `code` both ways,
/// asserting the same outcome and position after every read.
fn stream_agrees_with_tree(
    code: &HuffmanCode,
    bytes: &[u8],
    bits: usize,
    widths: &[u32],
) -> Result<(), TestCaseError> {
    let mut fast = HuffmanReader::new(BitReader::with_bit_len(bytes, bits), code);
    let mut slow = BitReader::with_bit_len(bytes, bits);
    for &n in widths {
        let expected = stream_read_by_tree(code, &mut slow, n);
        prop_assert_eq!(fast.get_bits(n), expected, "width {}", n);
        prop_assert_eq!(fast.bits_read(), slow.bits_read());
    }
    Ok(())
}

fn frequencies() -> impl Strategy<Value = [u32; 256]> {
    let count = prop_oneof![Just(0u32), 1u32..16, 0u32..100_000, any::<u32>()];
    prop::collection::vec(count, 256).prop_map(|v| v.try_into().unwrap())
}

/// Values of every width with the bits above the width cleared.
fn values() -> impl Strategy<Value = Vec<(u32, u32)>> {
    prop::collection::vec(
        (1u32..=32, any::<u32>()).prop_map(|(n, v)| (v & crate::bits::low_mask(n), n)),
        0..64,
    )
}

fn stream_round_trip(code: &HuffmanCode, values: &[(u32, u32)]) -> Result<(), TestCaseError> {
    let mut buf = vec![0u8; 64 * 32 * 4 + 64];
    let mut w = BitWriter::new(&mut buf);
    let mut hw = HuffmanWriter::new(&mut w, code);
    for &(v, n) in values {
        hw.put_bits(v, n).unwrap();
    }
    hw.put_str("tail", 8).unwrap();
    let end = hw.bits_written();
    let mut hr = HuffmanReader::new(BitReader::with_bit_len(&buf, end), code);
    for &(v, n) in values {
        prop_assert_eq!(hr.get_bits(n).unwrap(), v);
    }
    prop_assert_eq!(hr.get_string(8).unwrap(), "tail");
    prop_assert_eq!(hr.bits_read(), end);
    Ok(())
}

proptest! {
    #[test]
    fn random_tables_build_and_round_trip(freqs in frequencies(),
                                          input in prop::collection::vec(any::<u8>(), 0..512)) {
        let code = HuffmanCode::from_frequencies(&freqs).unwrap();
        prop_assert!(code.max_code_len() <= MAX_FREQUENCY_CODE_LEN);
        prop_assert_eq!(kraft_sum(code.code_words().iter().copied()), 1 << 32);
        let (buf, bits) = encode(&code, &input);
        prop_assert_eq!(decode_both(&code, &buf, bits, input.len()).unwrap(), input);
    }

    /// Every table layout reads every window as the default one does:
    /// narrow primary tables of each width, and the compact `DecodeTable`
    /// with its first level inline.
    #[test]
    fn every_table_layout_looks_up_alike(freqs in frequencies(),
                                         windows in prop::collection::vec(any::<u32>(), 64)) {
        let random = HuffmanCode::from_frequencies(&freqs).unwrap();
        for code in [random, deep_sparse_code()] {
            let compact = code.decode_table();
            let narrow: Vec<HuffmanCode> = (1..=12).map(|b| code.clone().with_table_bits(b)).collect();
            // Short windows too: the low bits pick the first-level entry.
            for window in windows.iter().flat_map(|&w| [w, w & 0x1f, w & 0xff]) {
                let expected = code.lookup(window);
                prop_assert_eq!(compact.lookup(window), expected);
                for table in &narrow {
                    prop_assert_eq!(table.lookup(window), expected);
                }
            }
        }
    }

    #[test]
    fn random_tables_replay_adaptively(freqs in prop::collection::vec(1u32..64, 256),
                                       input in prop::collection::vec(any::<u8>(), 0..256)) {
        let freqs: [u32; 256] = freqs.try_into().unwrap();
        let replayed = quake3::replay(&freqs).unwrap();
        let all = replayed.words.iter().copied().chain([replayed.nyt]);
        prop_assert_eq!(kraft_sum(all), 1 << 32);
        let code = HuffmanCode::from_code_words(&replayed.words).unwrap();
        let (buf, bits) = encode(&code, &input);
        prop_assert_eq!(decode_both(&code, &buf, bits, input.len()).unwrap(), input);
    }

    #[test]
    fn bitstream_mode_round_trips_with_quake3(values in values()) {
        stream_round_trip(HuffmanCode::quake3(), &values)?;
    }

    #[test]
    fn bitstream_mode_round_trips_with_random_tables(freqs in frequencies(), values in values()) {
        stream_round_trip(&HuffmanCode::from_frequencies(&freqs).unwrap(), &values)?;
    }

    /// The fast path of bitstream reads (one window, primary-table words)
    /// gives what the tree walk gives, on valid streams of Quake 3's code
    /// and on garbage cut anywhere, for Quake 3's code, narrow primary
    /// tables (whose long words fall back to sub-tables) and a deep code.
    #[test]
    fn bitstream_reads_agree_with_the_tree_walk(values in values(),
                                                garbage in prop::collection::vec(any::<u8>(), 0..64),
                                                cut in 0usize..80,
                                                widths in prop::collection::vec(0u32..40, 0..48),
                                                table_bits in 1u32..=12) {
        let code = HuffmanCode::quake3();
        let mut buf = vec![0u8; 512];
        let mut w = BitWriter::new(&mut buf);
        let mut hw = HuffmanWriter::new(&mut w, code);
        for &(v, n) in &values {
            hw.put_bits(v, n).unwrap();
        }
        let end = hw.bits_written().saturating_sub(cut);
        let valid_widths: Vec<u32> = values.iter().map(|&(_, n)| n).chain([8, 1]).collect();
        let narrow = code.clone().with_table_bits(table_bits);
        let deep = deep_sparse_code();
        for code in [code, &narrow] {
            stream_agrees_with_tree(code, &buf, end, &valid_widths)?;
        }
        let bits = (garbage.len() * 8).saturating_sub(cut % 8);
        for code in [code, &narrow, &deep] {
            stream_agrees_with_tree(code, &garbage, bits, &widths)?;
        }
    }

    #[test]
    fn decoders_agree_and_never_panic_on_garbage(bytes in prop::collection::vec(any::<u8>(), 0..128),
                                                 cut in 0usize..8,
                                                 widths in prop::collection::vec(0u32..40, 0..64)) {
        let bits = (bytes.len() * 8).saturating_sub(cut);
        let deep = deep_sparse_code();
        for code in [HuffmanCode::quake3(), &deep] {
            // decode_both asserts agreement symbol by symbol until an error.
            let _ = decode_both(code, &bytes, bits, bytes.len() * 8 + 1);
            let mut hr = HuffmanReader::new(BitReader::with_bit_len(&bytes, bits), code);
            for &n in &widths {
                let before = hr.bits_read();
                if hr.get_bits(n).is_err() {
                    prop_assert_eq!(hr.bits_read(), before);
                }
            }
            let _ = hr.get_string(16);
        }
    }
}
