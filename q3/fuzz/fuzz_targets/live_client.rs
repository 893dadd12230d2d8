//! Fuzzes the live client's receive path: a connected client fed with
//! arbitrary server datagrams (netchan framing, fragments, protocol 68
//! unscrambling, the message parser and the connection state after it).
//! The input format is `q3::live::harness`'s; seeds made from a real
//! session are in `../seeds/live_client`. Nothing may panic, and a session
//! that ended on a decode error must say so.
#![no_main]

use libfuzzer_sys::fuzz_target;
use q3::live::harness::feed_server_datagrams;

fuzz_target!(|data: &[u8]| {
    let outcome = feed_server_datagrams(data);
    assert!(outcome.snapshots <= outcome.messages.saturating_mul(1));
    assert!(!outcome.decode_error || outcome.ended);
});
