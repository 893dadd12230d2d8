//! Fuzzes the relay's receive path for a connected spectator: arbitrary
//! client datagrams through the server end of the netchan (either framing,
//! fragments, legacy unscrambling), the client-message parser (reliable
//! commands, keyed usercmds) and the spectator state after it. The input
//! format is `q3::relay::fuzzing`'s; seeds are datagrams of the real
//! OpenArena client captured by `q3 relay --capture-seeds`, in
//! `../seeds/relay_client`. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use q3::relay::fuzzing::feed_client_datagrams;

fuzz_target!(|data: &[u8]| {
    let outcome = feed_client_datagrams(data);
    // Usercmds come at most 32 to a message.
    assert!(outcome.usercmds <= outcome.messages.saturating_mul(32));
});
