//! See [`q3::fuzzing::q3_message`]: whole files, messages into primed
//! clients, patched real records, and messages spelled through Quake 3's
//! Huffman bitstream. The body lives in the library so that `cargo test`
//! replays the seeds and past crashes through the same code.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    q3::fuzzing::q3_message(data);
});
