//! Arbitrary fragment sequences into the reassembler, and bytes through the chunk parser and decompressor: see `netchan::fuzzing::bytes::reassembly` (shared with `cargo test`,
//! which replays the seeds in `fuzz/seeds/reassembly` and past crashes).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    netchan::fuzzing::bytes::reassembly(data);
});
