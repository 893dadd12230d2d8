//! What a client decodes from a server: reliable session messages and
//! snapshot payloads. Nothing may panic; decoded messages round-trip.
//! Seeds: `seeds/server_input/` (replayed by `cargo test -p netq3-session`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| session::fuzzing::server_input(data));
