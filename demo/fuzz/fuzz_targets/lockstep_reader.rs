//! Arbitrary bytes as a lockstep recording, through
//! `demo::fuzzing::lockstep_reader` (which the seed replay test in
//! `tests/lockstep.rs` runs on the committed seeds in
//! `fuzz/seeds/lockstep_reader`): the header, every record, the keyframe
//! index, `info`, and a replay with the built-in unit simulation (from the
//! start and from each keyframe) must return values or errors, never
//! panic, and allocate only within the format's bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    demo::fuzzing::lockstep_reader(data);
});
