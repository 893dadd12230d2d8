//! What a server decodes from a client: reliable session messages and
//! command packets in both codecs. Nothing may panic; decoded command
//! packets round-trip. Seeds: `seeds/client_input/` (replayed by
//! `cargo test -p netq3-session`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| session::fuzzing::client_input(data));
