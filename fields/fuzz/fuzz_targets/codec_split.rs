//! See [`fields::fuzzing::codec_split`]: the body lives in the library so
//! that `cargo test` replays the seeds and past crashes through the same code.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    fields::fuzzing::codec_split(data);
});
