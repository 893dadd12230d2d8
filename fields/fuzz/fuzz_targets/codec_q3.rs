//! Arbitrary bytes through the q3 codec's decoders (see common/mod.rs).
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| common::run(fields::Codec::Q3, data));
