//! See [`q3::fuzzing::dm68_structured`]: the input chooses a valid `.dm_68`
//! (a gamestate and the snapshots of a small game) and mutations that keep
//! its record framing valid.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    q3::fuzzing::dm68_structured(data);
});
