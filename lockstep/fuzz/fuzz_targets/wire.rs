//! Arbitrary bytes as lockstep messages, both directions: decoding must
//! return a value or a `WireError`, never panic or allocate without bound;
//! whatever decodes re-encodes to the same bytes; and the bytes fed to a
//! started host and a started participant are errors or valid moves, never
//! panics. Seeds: `fuzz/seeds/wire/` (replayed by `tests/wire.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    lockstep::fuzzing::exercise(data);
});
