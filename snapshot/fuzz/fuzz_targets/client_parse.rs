//! See [`snapshot::fuzzing::client_parse`]: messages into clients that hold a
//! gamestate and two snapshots, for both codecs. The body lives in the
//! library so that `cargo test` replays the seeds and past crashes through it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    snapshot::fuzzing::client_parse(data);
});
