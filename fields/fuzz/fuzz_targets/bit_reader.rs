//! Drives a BitReader with widths taken from the input itself: every read
//! must return a value or an error, never panic, and never move past the end.
#![no_main]

use fields::{BitReader, BitSource};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&script_len, rest)) = data.split_first() else {
        return;
    };
    let split = (script_len as usize).min(rest.len());
    let (script, payload) = rest.split_at(split);
    let mut reader = BitReader::new(payload);
    let mut text = Vec::new();
    for &op in script {
        let before = reader.bits_read();
        let ok = match op % 4 {
            0 => reader.get_bits(u32::from(op >> 2)).is_ok(),
            1 => reader.get_signed(u32::from(op >> 2) % 33).is_ok(),
            2 => reader.get_cstr_into(&mut text, usize::from(op >> 2)).is_ok(),
            _ => reader.get_f32().is_ok(),
        };
        assert!(reader.bits_read() <= payload.len() * 8);
        assert!(text.len() <= 63);
        if !ok && op % 4 != 2 {
            // A failed fixed-width read consumes nothing.
            assert_eq!(reader.bits_read(), before);
        }
    }
});
