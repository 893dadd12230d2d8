//! Status requests and replies into both parsers and a server endpoint: see `netchan::fuzzing::bytes::status` (shared with `cargo test`,
//! which replays the seeds in `fuzz/seeds/status` and past crashes).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    netchan::fuzzing::bytes::status(data);
});
