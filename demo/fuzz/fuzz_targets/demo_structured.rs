//! See [`demo::fuzzing::demo_structured`]: the input chooses a valid demo
//! (a recorded game) and mutations of its fields, with every checksum
//! recomputed, so the decoders behind the checksums are reached.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    demo::fuzzing::demo_structured(data);
});
