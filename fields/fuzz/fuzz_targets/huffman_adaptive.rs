//! Fuzzes Quake 3's adaptive Huffman coder (the `connect` packet's
//! userinfo) through `fields::fuzzing::huffman_adaptive`, which the seed
//! replay test (`tests/fuzz_seeds.rs`) runs on the committed seeds in
//! `fuzz/seeds/huffman_adaptive`. The first byte picks the mode:
//!
//! * even — the rest is compressed; whatever is accepted must decompress to
//!   itself, and a refusal must be the documented truncation;
//! * odd — the rest is decompressed as if a server received it; it must
//!   decode or fail with an error, within the declared length cap.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    fields::fuzzing::huffman_adaptive(data);
});
