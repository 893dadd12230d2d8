//! The bodies of the `fields/fuzz` targets, as library functions so that the
//! regression test `tests/fuzz_seeds.rs` replays the committed seeds and past
//! crashes through exactly the code the fuzzer runs (on stable, without
//! cargo-fuzz). Not part of the API.
//!
//! Each function panics only when an invariant fails, and returns how much of
//! the input decoded, so a test can tell a valid seed from one rejected at once.

use std::sync::OnceLock;

use crate::dynamic::{DynamicLayout, DynamicState};
use crate::huffman::{CodeWord, HuffmanCode};
use crate::model::{ModelTrainer, PatternKey, Predictor};
use crate::{
    array, boolean, net_struct, q3_float, quantized, signed, unsigned, BitReader, BitSink,
    BitSource, BitWriter, Codec, EntityBody, Fields, HuffmanReader, NetFields,
};

/// `bit_reader`: drives a [`BitReader`] with widths taken from the input
/// itself. Every read returns a value or an error and never moves past the
/// end. Returns the reads that succeeded.
pub fn bit_reader(data: &[u8]) -> usize {
    let Some((&script_len, rest)) = data.split_first() else {
        return 0;
    };
    let split = (script_len as usize).min(rest.len());
    let (script, payload) = rest.split_at(split);
    let mut reader = BitReader::new(payload);
    let mut text = Vec::new();
    let mut ok_reads = 0;
    for &op in script {
        let before = reader.bits_read();
        let ok = match op % 4 {
            0 => reader.get_bits(u32::from(op >> 2)).is_ok(),
            1 => reader.get_signed(u32::from(op >> 2) % 33).is_ok(),
            2 => reader
                .get_cstr_into(&mut text, usize::from(op >> 2))
                .is_ok(),
            _ => reader.get_f32().is_ok(),
        };
        assert!(reader.bits_read() <= payload.len() * 8);
        assert!(text.len() <= 63);
        if ok {
            ok_reads += 1;
        } else if op % 4 != 2 {
            // A failed fixed-width read consumes nothing.
            assert_eq!(reader.bits_read(), before);
        }
    }
    ok_reads
}

net_struct! {
    /// Every field kind, for the codec targets.
    pub struct Everything {
        /// A 32-bit signed field.
        pub time: i32 = signed(32),
        /// A Quake 3 float.
        pub x: f32 = q3_float(),
        /// A narrow unsigned field.
        pub frame: u16 = unsigned(9),
        /// A flag.
        pub on: bool = boolean(),
        /// A quantized float.
        pub yaw: f32 = quantized(-180.0, 180.0, 10),
        /// An array of signed fields.
        pub stats: [i16; 16] = array(signed(16), 16),
        /// An array of 32-bit fields.
        pub power: [u32; 3] = array(unsigned(32), 3),
        /// A Quake 3 float falling while `frame` holds 3 (the fuzzing
        /// model's [`Predictor::Fall`], its gravity from `yaw`).
        pub z: f32 = q3_float(),
    }
}

/// The base every codec input is decoded against.
pub fn everything_base() -> Everything {
    Everything {
        time: 1000,
        x: 16.0,
        frame: 3,
        stats: [7; 16],
        ..Everything::default()
    }
}

/// The viewer position the spawn pass of the codec targets decodes with
/// (see [`crate::DeltaContext::anchor`]).
pub const FUZZ_ANCHOR: [i32; crate::model::AXES] = [1234, -567, 89];

/// `codec_q3` / `codec_native`: `data` as a struct delta from
/// [`everything_base`] (held, then as a spawn baseline) and as an entity
/// list. Whatever decodes must re-encode and decode to the same words (the
/// decoder accepted only states the encoder can express). Returns the
/// deltas that decoded (0 to 2), plus the entities that did.
pub fn codec(codec: Codec, data: &[u8]) -> usize {
    codec_against(codec, &everything_base(), data)
}

/// `codec_modelled`: [`codec`]'s checks for the native codec with a trained
/// model ([`modelled_base`]), whose symbols, entity numbers included, are
/// Huffman-coded per context rather than exp-Golomb.
pub fn codec_modelled(data: &[u8]) -> usize {
    codec_against(Codec::Native, modelled_base(), data)
}

/// `codec_split`: [`codec_range`]'s checks with the input read as a split
/// message ([`crate::range::SplitReader`], what the engine's
/// `CompactRange` framing sends: raw bits from the front, symbols from a
/// range-coded stream stored backwards from the end) and re-encoded
/// through a [`crate::range::SplitWriter`].
pub fn codec_split(data: &[u8]) -> usize {
    use crate::range::{RangeEncoder, SplitReader, SplitWriter};
    let (codec, base) = (Codec::Native, modelled_base());
    let mut accepted = 0;
    let context = crate::DeltaContext::default();
    let mut decoded = base.clone();
    if codec
        .read_delta_in(&context, &mut SplitReader::new(data), &mut decoded)
        .is_ok()
    {
        accepted += 1;
        let mut buf = vec![0u8; 64 + 4 * data.len()];
        let mut encoder = RangeEncoder::new();
        let mut writer = SplitWriter::new(&mut buf, &mut encoder);
        codec
            .write_delta_in(&context, &mut writer, base, &decoded)
            .expect("a decoded state re-encodes");
        let (len, _) = writer.finish().expect("a re-encoded state fits");
        let mut again = base.clone();
        codec
            .read_delta_in(&context, &mut SplitReader::new(&buf[..len]), &mut again)
            .expect("a re-encoded state decodes");
        assert!(!again.wire_differs(&decoded));
    }
    accepted + modelled_list(&mut SplitReader::new(data))
}

/// `codec_range`: [`codec_modelled`]'s checks with the input read as a
/// range-coded message ([`crate::range::RangeReader`]) and re-encoded
/// through a [`crate::range::RangeWriter`]: the native codec with a model
/// in its range-coded form.
pub fn codec_range(data: &[u8]) -> usize {
    use crate::range::{RangeReader, RangeWriter};
    let (codec, base) = (Codec::Native, modelled_base());
    let mut accepted = 0;
    for context in [
        crate::DeltaContext::default(),
        crate::DeltaContext::default()
            .with_spawn(true)
            .with_anchor(Some(FUZZ_ANCHOR)),
    ] {
        let mut decoded = base.clone();
        if codec
            .read_delta_in(&context, &mut RangeReader::new(data), &mut decoded)
            .is_ok()
        {
            accepted += 1;
            let mut writer = RangeWriter::new();
            codec
                .write_delta_in(&context, &mut writer, base, &decoded)
                .expect("a decoded state re-encodes");
            let (bytes, _) = writer.finish();
            let mut again = base.clone();
            codec
                .read_delta_in(&context, &mut RangeReader::new(bytes), &mut again)
                .expect("a re-encoded state decodes");
            assert!(!again.wire_differs(&decoded));
        }
    }
    accepted + modelled_list(&mut RangeReader::new(data))
}

/// Reads an entity list of [`modelled_base`]'s type from `reader` until
/// it ends or fails, checking every entry; returns the entries read.
fn modelled_list(reader: &mut dyn BitSource) -> usize {
    let (codec, base) = (Codec::Native, modelled_base());
    let mut accepted = 0;
    let mut last = None;
    while let Ok(Some(header)) = codec.read_entity_number(reader, last, 1023, base, &FUZZ_HELD) {
        let number = header.number();
        assert!(number < 1023 && last.is_none_or(|last| number > last));
        let mut entity = base.clone();
        match codec.read_entity_body(reader, header, &mut entity) {
            Ok(EntityBody::Unchanged) | Ok(EntityBody::Removed) => assert_eq!(&entity, base),
            Ok(EntityBody::Changed) => {}
            Err(_) => break,
        }
        accepted += 1;
        last = Some(number);
    }
    accepted
}

/// The base of `codec_modelled`: [`everything_base`]'s words in a
/// [`DynamicState`] whose layout carries a model trained (once, on a fixed
/// synthetic stream) on [`Everything`]'s schema.
pub fn modelled_base() -> &'static DynamicState {
    static BASE: OnceLock<DynamicState> = OnceLock::new();
    BASE.get_or_init(|| {
        let schema = Everything::TABLE.schema();
        let index = |name: &str| Everything::TABLE.field(name).map_or(0, |(i, _)| i as u16);
        // A key with both flags, so pattern sets are picked from three fields.
        let mut trainer = ModelTrainer::new(schema.fingerprint(), schema.fields.len())
            .with_pattern_key(PatternKey {
                field: index("frame"),
                classes: 4,
                flag: Some(index("on")),
                second_flag: Some(index("x")),
            })
            .with_spawn_key(PatternKey {
                field: index("frame"),
                classes: 3,
                flag: None,
                second_flag: None,
            })
            // x entering from zero is coded against the spawn pass's anchor.
            .with_axis(usize::from(index("x")), 0)
            // The predictors that read other fields of the new state, so
            // the targets reach their paths: x as a velocity of fixed size
            // from frame and yaw while `on` (a square root of any decoded
            // words, NaN and negatives included), the time on 50 ms ticks.
            .with_predictor(
                usize::from(index("x")),
                Predictor::FixedSpeed {
                    speed: 600,
                    components: [index("frame"), index("yaw")],
                    gate: Some((index("on"), 1)),
                },
            )
            .with_predictor(
                usize::from(index("time")),
                Predictor::TickStamp { tick_ms: 50 },
            )
            // z falls while frame holds 3 before and after, at the gravity
            // yaw holds (any decoded word: NaN, infinite, negative).
            .with_predictor(
                usize::from(index("z")),
                Predictor::Fall {
                    gravity: Some(index("yaw")),
                    acceleration: 0,
                    ground: (index("frame"), 3),
                },
            );
        let mut states = vec![everything_base()];
        for i in 0..64u32 {
            let mut next = states[states.len() - 1];
            next.time += 50;
            next.x += (i % 7) as f32 - 3.0;
            next.frame = ((i * 3) % 512) as u16;
            next.on ^= i % 5 == 0;
            next.stats[(i % 16) as usize] -= 1;
            next.z -= (i % 3) as f32;
            states.push(next);
        }
        // Dictionaries of common changes: the time's 50 and the frame's 3.
        for pair in states.windows(2) {
            trainer.learn_changes(&pair[0], &pair[1]);
        }
        trainer.freeze_grids();
        for (i, pair) in (0u32..).zip(states.windows(2)) {
            let (state, next) = (pair[0], pair[1]);
            trainer.observe(&state, &next, &crate::DeltaContext::default());
            // Now and then the same state enters the view from the zeroed
            // dummy, or from the previous state as its spawn baseline.
            let spawn = crate::DeltaContext::default()
                .with_spawn(true)
                .with_anchor(Some(FUZZ_ANCHOR));
            match i % 8 {
                0 => trainer.observe(&Everything::default(), &next, &spawn),
                4 => trainer.observe(&state, &next, &spawn),
                _ => {}
            }
            let held: &[u32] = &[i % 3, 70 + i];
            trainer.observe_entity_list(
                [
                    (i % 3, i % 2 == 0),
                    (5 + i % 4, false),
                    (70 + i, i % 3 == 0),
                ],
                &held,
            );
        }
        let layout = DynamicLayout::with_model(schema, Some(trainer.finish()))
            .expect("a model trained on the schema fits it");
        let mut base = layout.zeroed();
        copy_words(&everything_base(), &mut base);
        base
    })
}

/// `state`'s words as a value of `codec_modelled`'s modelled layout.
pub fn modelled(state: &Everything) -> DynamicState {
    let mut out = modelled_base().clone();
    copy_words(state, &mut out);
    out
}

fn copy_words(from: &Everything, to: &mut DynamicState) {
    for field in 0..from.field_count() {
        for element in 0..from.field_kind(field).elements() {
            to.set_word(field, element, from.word(field, element));
        }
    }
}

/// The entities the receiver of a fuzzed list holds: spread over the
/// number range, so removals (named by their place among these) decode.
pub const FUZZ_HELD: &[u32] = &[0, 1, 2, 5, 9, 64, 70, 100, 255, 256, 500, 1000, 1022];

/// [`codec`]'s checks against any base.
fn codec_against<T: Fields + PartialEq + core::fmt::Debug>(
    codec: Codec,
    base: &T,
    data: &[u8],
) -> usize {
    let mut accepted = 0;
    // As a delta from a held state, and from a spawn baseline (the native
    // codec's spawn pattern sets and value contexts).
    for context in [
        crate::DeltaContext::default(),
        crate::DeltaContext::default()
            .with_spawn(true)
            .with_anchor(Some(FUZZ_ANCHOR)),
    ] {
        let mut decoded = base.clone();
        if codec
            .read_delta_in(&context, &mut BitReader::new(data), &mut decoded)
            .is_ok()
        {
            accepted += 1;
            let mut buf = [0u8; 512];
            let mut writer = BitWriter::new(&mut buf);
            codec
                .write_delta_in(&context, &mut writer, base, &decoded)
                .expect("a decoded state re-encodes");
            let bits = writer.bits_written();
            let mut again = base.clone();
            codec
                .read_delta_in(
                    &context,
                    &mut BitReader::with_bit_len(&buf, bits),
                    &mut again,
                )
                .expect("a re-encoded state decodes");
            assert!(!again.wire_differs(&decoded));
        }
    }

    let mut reader = BitReader::new(data);
    let mut last = None;
    while let Ok(Some(header)) = codec.read_entity_number(&mut reader, last, 1023, base, &FUZZ_HELD)
    {
        let number = header.number();
        assert!(number < 1023 && last.is_none_or(|last| number > last));
        let mut entity = base.clone();
        match codec.read_entity_body(&mut reader, header, &mut entity) {
            Ok(EntityBody::Unchanged) | Ok(EntityBody::Removed) => assert_eq!(&entity, base),
            Ok(EntityBody::Changed) => {}
            Err(_) => break,
        }
        accepted += 1;
        last = Some(number);
    }
    accepted
}

/// The Huffman codes `huffman_decode` runs: Quake 3's (complete except for
/// its NYT leaf, at most 11 bits: the primary table alone); one for Fibonacci
/// counts (flattened to the 24-bit cap: two levels of sub-tables); and a
/// sparse code whose 232 longest words are 32 bits, with unused 32-bit
/// patterns (invalid deep in the tables).
///
/// Built once, not from each input: the target is the decoder, and
/// construction is covered by the property tests.
pub fn huffman_codes() -> [&'static HuffmanCode; 3] {
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
                CodeWord::from_bits_in_order((0..=i).map(|k| k < i)).expect("at most 24 bits")
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

/// Decodes symbols until the first error with both decoders in lock step;
/// returns the symbols decoded.
fn decoders_agree(code: &HuffmanCode, bytes: &[u8], bit_len: usize) -> usize {
    let mut fast = BitReader::with_bit_len(bytes, bit_len);
    let mut slow = fast.clone();
    let tree = code.tree_decoder();
    // The compact table a native model decodes through reads every window
    // as the code's own table does.
    let compact = code.decode_table();
    let mut symbols = 0;
    loop {
        let window = fast.peek_bits(32);
        assert_eq!(compact.lookup(window), code.lookup(window));
        let a = code.decode_symbol(&mut fast);
        let b = tree.decode_symbol(&mut slow);
        assert_eq!(a, b);
        assert_eq!(fast.bits_read(), slow.bits_read());
        if a.is_err() {
            return symbols;
        }
        symbols += 1;
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

/// `huffman_decode`: bytes through the table decoder, the tree-walk decoder
/// and the bitstream-mode reader of every [`huffman_codes`] code. The two
/// decoders (and the compact [`crate::huffman::DecodeTable`]) must agree on
/// every symbol, error and position, and a failed
/// bitstream read leaves the reader where it was.
///
/// Input: a byte whose low 3 bits cut that many bits off the end of the
/// stream, a count of width bytes, the widths, the stream. Returns the
/// symbols Quake 3's code decoded.
pub fn huffman_decode(data: &[u8]) -> usize {
    let [cut, width_count, rest @ ..] = data else {
        return 0;
    };
    let split = rest.len().min(usize::from(*width_count));
    let (widths, stream) = rest.split_at(split);
    let bit_len = (stream.len() * 8).saturating_sub(usize::from(cut & 7));
    let mut quake3_symbols = None;
    for code in huffman_codes() {
        let symbols = decoders_agree(code, stream, bit_len);
        quake3_symbols.get_or_insert(symbols);
        read_stream(code, stream, bit_len, widths);
    }
    quake3_symbols.unwrap_or(0)
}

/// `huffman_adaptive`: Quake 3's adaptive Huffman coder (a `connect`
/// packet's userinfo). The first byte picks the mode: even, the rest is
/// compressed, and whatever is accepted must decompress to itself (a
/// refusal must be the documented truncation); odd, the rest is
/// decompressed as a server would, within a 1,024-byte cap. Returns the
/// bytes that came back: the text round-tripped, or the text decompressed.
pub fn huffman_adaptive(data: &[u8]) -> usize {
    use crate::huffman::{adaptive_compress, adaptive_decompress, AdaptiveError};
    let Some((&mode, rest)) = data.split_first() else {
        return 0;
    };
    if mode % 2 == 0 {
        match adaptive_compress(rest) {
            Ok(packed) if rest.is_empty() => {
                assert!(packed.is_empty());
                0
            }
            Ok(packed) => {
                let text = adaptive_decompress(&packed, rest.len())
                    .expect("a compressed text decompresses");
                assert_eq!(text, rest);
                text.len()
            }
            Err(AdaptiveError::Truncated { len }) => {
                assert_eq!(len, rest.len());
                0
            }
            Err(error) => panic!("{error}"),
        }
    } else {
        match adaptive_decompress(rest, 1024) {
            Ok(text) => {
                assert!(text.len() <= 1024);
                text.len()
            }
            Err(_) => 0,
        }
    }
}

/// The files of a fuzz target's committed inputs: `<crate>/fuzz/seeds/<target>/`
/// (valid inputs) or `<crate>/fuzz/regressions/<target>/` (past crashes), sorted
/// by name. A missing directory has no files. Used by every crate's
/// `tests/fuzz_seeds.rs`.
pub fn corpus_files(
    crate_dir: &str,
    kind: &str,
    target: &str,
) -> std::io::Result<Vec<(std::path::PathBuf, Vec<u8>)>> {
    let dir = std::path::Path::new(crate_dir)
        .join("fuzz")
        .join(kind)
        .join(target);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut files = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.is_file() {
            let data = std::fs::read(&path)?;
            files.push((path, data));
        }
    }
    files.sort();
    Ok(files)
}

/// Writes `seeds` as `<crate>/fuzz/seeds/<target>/seed-NN` when the
/// environment variable `FUZZ_SEEDS_WRITE` is set (how the committed seeds
/// were made); otherwise does nothing. Returns whether it wrote.
pub fn write_seeds(crate_dir: &str, target: &str, seeds: &[Vec<u8>]) -> std::io::Result<bool> {
    if std::env::var_os("FUZZ_SEEDS_WRITE").is_none() {
        return Ok(false);
    }
    let dir = std::path::Path::new(crate_dir)
        .join("fuzz")
        .join("seeds")
        .join(target);
    std::fs::create_dir_all(&dir)?;
    for (n, seed) in seeds.iter().enumerate() {
        std::fs::write(dir.join(format!("seed-{n:02}")), seed)?;
    }
    Ok(true)
}
