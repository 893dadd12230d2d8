//! Fuzzes Quake 3's adaptive Huffman coder (the `connect` packet's
//! userinfo). The first byte picks the mode:
//!
//! * even — the rest is compressed; whatever is accepted must decompress to
//!   itself, and a refusal must be the documented truncation;
//! * odd — the rest is decompressed as if a server received it; it must
//!   decode or fail with an error, within the declared length cap.
#![no_main]

use fields::huffman::{adaptive_compress, adaptive_decompress, AdaptiveError};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        match adaptive_compress(rest) {
            Ok(packed) if rest.is_empty() => assert!(packed.is_empty()),
            Ok(packed) => assert_eq!(adaptive_decompress(&packed, rest.len()).unwrap(), rest),
            Err(AdaptiveError::Truncated { len }) => assert_eq!(len, rest.len()),
            Err(e) => panic!("{e}"),
        }
    } else if let Ok(text) = adaptive_decompress(rest, 1024) {
        assert!(text.len() <= 1024);
    }
});
