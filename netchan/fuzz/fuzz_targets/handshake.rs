//! Structure-aware: see `netchan::fuzzing::handshake` (shared with `cargo test`,
//! which replays the seeds in `fuzz/seeds/handshake`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = netchan::fuzzing::handshake(data);
});
