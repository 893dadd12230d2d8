//! Arbitrary fragment sequences into the reassembler (both policies), and
//! arbitrary bytes through the chunk parser and the decompressor.
#![no_main]

use libfuzzer_sys::fuzz_target;
use netchan::compress::{Compressor, HuffmanCompressor};
use netchan::fragment::{Inserted, Policy, Reassembler, ReassemblyLimits};
use netchan::packet::Chunks;
use netchan::pool::BufPool;

fuzz_target!(|data: &[u8]| {
    let limits = ReassemblyLimits {
        max_message: 16 * 1024,
        max_partials: 8,
        max_bytes: 64 * 1024,
    };
    let mut r = Reassembler::new(limits);
    let mut pool = BufPool::default();
    // Input: records of [id u8][total u16][offset u16][len u8][policy u8] then `len` bytes.
    let mut rest = data;
    while rest.len() >= 7 {
        let id = rest[0] as u64;
        let total = u16::from_le_bytes([rest[1], rest[2]]) as u32;
        let offset = u16::from_le_bytes([rest[3], rest[4]]) as u32;
        let len = rest[5] as usize;
        let policy = match rest[6] % 3 {
            0 => Policy::Refuse,
            1 => Policy::EvictOldest,
            _ => Policy::Exempt,
        };
        rest = &rest[7..];
        let take = len.min(rest.len());
        let frag = &rest[..take];
        rest = &rest[take..];
        if let Ok(Inserted::Complete(m)) = r.insert(id, total, offset, frag, policy, &mut pool) {
            assert_eq!(m.len() as u32, total);
            pool.give(m);
        }
        if policy != Policy::Exempt {
            assert!(r.partial_count() <= limits.max_partials + 64);
        }
    }
    for chunk in Chunks::new(data) {
        if chunk.is_err() {
            break;
        }
    }
    let mut out = [0u8; 1400];
    if let Ok(n) = HuffmanCompressor::quake3().decompress(data, &mut out) {
        assert!(n <= out.len());
    }
});
