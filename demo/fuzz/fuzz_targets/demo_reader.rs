//! See [`demo::fuzzing::demo_reader`]: whole files, or a small valid demo
//! patched byte by byte. The body lives in the library so that `cargo test`
//! replays the seeds and past crashes through the same code.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    demo::fuzzing::demo_reader(data);
});
