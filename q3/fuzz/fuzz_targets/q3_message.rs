//! Fuzzes the Quake 3 message parser and demo reader. The first byte picks
//! how the rest is used:
//!
//! * 0 — a whole `.dm_68` file, decoded record by record;
//! * 1 — one message, parsed by a client primed with the first records of
//!   a real demo (so snapshots have bases and baselines);
//! * 2 — a real record patched with (offset, xor) pairs, parsed in the
//!   state Quake 3 would have before it;
//! * 3 — (width, value) pairs written through Quake 3's Huffman bitstream
//!   after a reliable acknowledge, so the fuzzer can spell structurally valid
//!   messages with arbitrary command bytes, `lc` bytes, lengths and entity
//!   numbers.
//!
//! Every input must parse or fail with an error, never panic; what parses
//! must satisfy the snapshot invariants and re-encode without panicking.
#![no_main]

use std::sync::OnceLock;

use q3::reencode::write_snapshot;
use q3::{Command, Dm68Decoder, Dm68Reader, ParsedMessage, Q3Client, MAX_MSGLEN};
use fields::{BitSink, BitWriter, HuffmanCode, HuffmanWriter};
use libfuzzer_sys::fuzz_target;

/// A small real demo beside the repository (empty if it is not there).
const SEED_DEMO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/q3demos/dm_68_cpma_core_gameplay_dev.dm_68"
);

struct Primed {
    /// (message bytes, sequence, client state before the record).
    records: Vec<(Vec<u8>, i32, Q3Client)>,
}

fn primed() -> &'static Primed {
    static PRIMED: OnceLock<Primed> = OnceLock::new();
    PRIMED.get_or_init(|| {
        let data = std::fs::read(SEED_DEMO).unwrap_or_default();
        let mut client = Q3Client::new();
        let mut records = vec![(Vec::new(), 1, client.clone())];
        for record in Dm68Reader::new_unchecked(&data)
            .map_while(Result::ok)
            .take(32)
        {
            records.push((record.message.to_vec(), record.sequence, client.clone()));
            if client
                .parse_message(record.sequence, record.message)
                .is_err()
            {
                break;
            }
        }
        Primed { records }
    })
}

fn check(result: Result<ParsedMessage, q3::MessageError>, len: usize) {
    match result {
        Ok(parsed) => {
            assert!(parsed.bits <= len * 8);
            for command in &parsed.commands {
                assert!(command.bits.start < command.bits.end);
                assert!(command.bits.end <= parsed.bits);
                if let Command::Snapshot(s) = &command.command {
                    let snap = &s.snapshot;
                    assert!(snap.areamask.len() <= 32);
                    assert!(snap.entities.windows(2).all(|w| w[0].0 < w[1].0));
                    assert!(snap.entities.iter().all(|(n, _)| *n < 1023));
                    let mut buf = vec![0u8; 4 * MAX_MSGLEN];
                    let mut writer = BitWriter::new(&mut buf);
                    let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
                    let _ = write_snapshot(&mut sink, snap, s.base.as_deref(), &s.baselines);
                }
            }
        }
        Err(error) => {
            let _ = error.to_string();
            if let Some(bit) = error.bit() {
                assert!(bit <= len * 8, "{error}");
            }
        }
    }
}

fn pick(index: u8) -> (i32, Q3Client, &'static [u8]) {
    let records = &primed().records;
    let (bytes, sequence, client) = &records[usize::from(index) % records.len()];
    (*sequence, client.clone(), bytes)
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => {
            let mut records = 0;
            for item in Dm68Decoder::from_reader(Dm68Reader::new_unchecked(rest)) {
                match item {
                    Ok(record) => {
                        assert_eq!(record.record.index, records);
                        records += 1;
                    }
                    Err(error) => {
                        let _ = error.to_string();
                        assert!(error.record().is_none_or(|r| r == records));
                    }
                }
            }
        }
        1 => {
            let Some((&index, message)) = rest.split_first() else {
                return;
            };
            let (sequence, mut client, _) = pick(index);
            check(client.parse_message(sequence, message), message.len());
        }
        2 => {
            let Some((&index, patches)) = rest.split_first() else {
                return;
            };
            let (sequence, mut client, original) = pick(index);
            let mut message = original.to_vec();
            if message.is_empty() {
                return;
            }
            for patch in patches.chunks_exact(3) {
                let offset = usize::from(u16::from_le_bytes([patch[0], patch[1]]));
                let len = message.len();
                message[offset % len] ^= patch[2];
            }
            if patches.len() % 3 != 0 {
                // A trailing byte cuts the message short.
                let cut = usize::from(patches[patches.len() - 1]) % (message.len() + 1);
                message.truncate(cut);
            }
            check(client.parse_message(sequence, &message), message.len());
        }
        _ => {
            let Some((&index, ops)) = rest.split_first() else {
                return;
            };
            let mut buf = vec![0u8; MAX_MSGLEN];
            let mut writer = BitWriter::new(&mut buf);
            let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
            if sink.put_bits(0, 32).is_err() {
                return;
            }
            for op in ops.chunks_exact(5) {
                let width = u32::from(op[0] % 32) + 1;
                let value = u32::from_le_bytes([op[1], op[2], op[3], op[4]]);
                if sink.put_bits(value, width).is_err() {
                    break;
                }
            }
            let len = writer.finish();
            let (sequence, mut client, _) = pick(index);
            check(client.parse_message(sequence, &buf[..len]), len);
        }
    }
});
