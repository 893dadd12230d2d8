//! Structure-aware: see `netchan::fuzzing::sealed` (shared with `cargo test`,
//! which replays the seeds in `fuzz/seeds/sealed`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = netchan::fuzzing::sealed(data);
});
