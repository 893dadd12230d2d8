//! Arbitrary datagrams into a server endpoint with one established connection: see `netchan::fuzzing::bytes::datagram` (shared with `cargo test`,
//! which replays the seeds in `fuzz/seeds/datagram` and past crashes).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    netchan::fuzzing::bytes::datagram(data);
});
