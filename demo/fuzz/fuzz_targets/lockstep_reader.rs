//! Arbitrary bytes as a lockstep recording: the header, every record, the
//! keyframe index, `info`, and a replay with the built-in unit simulation
//! (from the start and from each keyframe) must return values or errors,
//! never panic, and allocate only within the format's bounds.
#![no_main]

use demo::lockstep::{info, replay, LockstepReader};
use libfuzzer_sys::fuzz_target;
use lockstep::Units;

fuzz_target!(|data: &[u8]| {
    let Ok(reader) = LockstepReader::new(data) else {
        return;
    };
    let _ = info(&reader, data.len());
    let _ = replay::<Units>(&reader, None);
    if let Ok(keyframes) = reader.keyframes() {
        for keyframe in keyframes.iter().take(4) {
            let _ = replay::<Units>(&reader, Some(keyframe));
        }
    }
});
