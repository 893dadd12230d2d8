//! Checks of [`HuffmanCode::quake3`] against real Quake 3 demo files.
//!
//! A `.dm_68` demo is a sequence of records: a little-endian `i32` message
//! sequence, an `i32` length, then that many bytes of a server message in
//! bitstream mode, exactly as the client received it after the netchan
//! header. The file ends with a record of sequence and length -1.
//!
//! The messages start with fields that need no entity tables to parse: a
//! 32-bit reliable acknowledge, then commands. The first record is the
//! gamestate, a run of configstrings (16-bit index and NUL-terminated text);
//! later ones usually open with reliable server commands (32-bit sequence and
//! text). Decoding hundreds of such strings to clean ASCII is only possible
//! with the exact tree Quake 3 used: one wrong code word derails the rest.

use super::*;
use crate::bits::{BitReader, BitSink, BitSource, BitWriter};

/// The demos' directory, found as `q3::corpus::dir` finds it (this crate
/// sits below `q3`): `NETQ3_Q3DEMOS`, else `shared/q3demos` beside the checkout.
fn demo_dir() -> std::path::PathBuf {
    match std::env::var_os("NETQ3_Q3DEMOS") {
        Some(dir) => dir.into(),
        None => concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/q3demos").into(),
    }
}

/// Whether the demos are here; if not, says that `test` is skipped.
fn demos_here(test: &str) -> bool {
    let dir = demo_dir();
    if dir.is_dir() {
        return true;
    }
    eprintln!(
        "skipping {test}: the Quake 3 demos are not in {} (put them there or set NETQ3_Q3DEMOS)",
        dir.display()
    );
    false
}

const SVC_GAMESTATE: u8 = 2;
const SVC_CONFIGSTRING: u8 = 3;
const SVC_BASELINE: u8 = 4;
const SVC_SERVER_COMMAND: u8 = 5;
const SVC_SNAPSHOT: u8 = 7;
const SVC_EOF: u8 = 8;
/// Quake 3's `MAX_CONFIGSTRINGS`.
const MAX_CONFIGSTRINGS: u32 = 1024;
/// Quake 3's `BIG_INFO_STRING`, the longest string in a message.
const BIG_INFO_STRING: usize = 8192;

fn read_demo(name: &str) -> Vec<u8> {
    let path = demo_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn demo_names() -> Vec<String> {
    let dir = demo_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".dm_68"))
        .collect();
    names.sort();
    names
}

/// The messages of a demo, up to the end marker or a record that is cut off.
fn records(data: &[u8]) -> Vec<(i32, &[u8])> {
    let mut out = Vec::new();
    let mut rest = data;
    while rest.len() >= 8 {
        let sequence = i32::from_le_bytes(rest[0..4].try_into().unwrap());
        let len = i32::from_le_bytes(rest[4..8].try_into().unwrap());
        let Ok(len) = usize::try_from(len) else { break };
        let Some(message) = rest.get(8..8 + len) else {
            break;
        };
        out.push((sequence, message));
        rest = &rest[8 + len..];
    }
    out
}

/// Reads a NUL-terminated string and checks it is what Quake 3's
/// `MSG_WriteString` sends: 7-bit text with `%` already replaced.
fn read_text(reader: &mut HuffmanReader<'_, '_>) -> String {
    let mut bytes = Vec::new();
    reader.get_cstr_into(&mut bytes, BIG_INFO_STRING).unwrap();
    assert!(
        bytes.iter().all(|&b| b < 0x80 && b != b'%'),
        "not Quake 3 text: {:?}",
        String::from_utf8_lossy(&bytes)
    );
    String::from_utf8(bytes).unwrap()
}

/// Parses the gamestate in the first record of `name` up to the baselines:
/// returns its configstrings and the command that ended them.
fn gamestate(name: &str) -> (Vec<(u32, String)>, u8) {
    let data = read_demo(name);
    let (_, message) = records(&data)[0];
    let mut reader = HuffmanReader::new(BitReader::new(message), HuffmanCode::quake3());
    let _reliable_acknowledge = reader.get_bits(32).unwrap();
    assert_eq!(reader.get_u8().unwrap(), SVC_GAMESTATE, "{name}");
    let _command_sequence = reader.get_bits(32).unwrap();
    let mut strings = Vec::new();
    loop {
        let command = reader.get_u8().unwrap();
        if command != SVC_CONFIGSTRING {
            return (strings, command);
        }
        let index = reader.get_bits(16).unwrap();
        strings.push((index, read_text(&mut reader)));
    }
}

#[test]
fn first_record_of_a_real_demo_decodes_to_its_gamestate() {
    if !demos_here("first_record_of_a_real_demo_decodes_to_its_gamestate") {
        return;
    }
    let data = read_demo("one_frag_only_with_plasma.dm_68");
    let (_, message) = records(&data)[0];
    let code = HuffmanCode::quake3();
    let mut reader = HuffmanReader::new(BitReader::new(message), code);
    // 32 bits are 4 coded bytes and no raw bits.
    let _reliable_acknowledge = reader.get_bits(32).unwrap();
    assert_eq!(reader.get_u8().unwrap(), SVC_GAMESTATE);
    let _command_sequence = reader.get_bits(32).unwrap();
    assert_eq!(reader.get_u8().unwrap(), SVC_CONFIGSTRING);
    assert_eq!(
        reader.get_bits(16).unwrap(),
        0,
        "configstring 0 is the server info"
    );
    let server_info = read_text(&mut reader);
    assert!(server_info.starts_with("\\sv_fps\\30\\"), "{server_info}");
    assert!(
        server_info.contains("\\sv_hostname\\mooooh!\\"),
        "{server_info}"
    );
    assert_eq!(reader.get_u8().unwrap(), SVC_CONFIGSTRING);
    assert_eq!(
        reader.get_bits(16).unwrap(),
        1,
        "configstring 1 is the system info"
    );
    assert!(read_text(&mut reader).starts_with("\\sv_referencedPakNames\\"));
}

#[test]
fn re_encoding_a_gamestate_reproduces_quake3s_bits() {
    if !demos_here("re_encoding_a_gamestate_reproduces_quake3s_bits") {
        return;
    }
    let code = HuffmanCode::quake3();
    for name in demo_names() {
        let data = read_demo(&name);
        let (_, message) = records(&data)[0];
        // Read the gamestate up to the baselines as (value, width) pairs...
        let mut reader = HuffmanReader::new(BitReader::new(message), code);
        let mut fields = Vec::new();
        let mut read = |reader: &mut HuffmanReader<'_, '_>, width| {
            let value = reader.get_bits(width).unwrap();
            fields.push((value, width));
            value
        };
        read(&mut reader, 32);
        read(&mut reader, 8);
        read(&mut reader, 32);
        while read(&mut reader, 8) == u32::from(SVC_CONFIGSTRING) {
            read(&mut reader, 16);
            while read(&mut reader, 8) != 0 {}
        }
        let end = reader.bits_read();

        // ...and write them back: the bits must be exactly the server's.
        let mut buf = vec![0u8; message.len()];
        let mut writer = BitWriter::new(&mut buf);
        let mut sink = HuffmanWriter::new(&mut writer, code);
        for &(value, width) in &fields {
            sink.put_bits(value, width).unwrap();
        }
        assert_eq!(sink.bits_written(), end, "{name}");
        let whole = end / 8;
        assert_eq!(buf[..whole], message[..whole], "{name}");
        let mask = crate::bits::low_mask((end % 8) as u32) as u8;
        assert_eq!(buf[whole] & mask, message[whole] & mask, "{name}");
    }
}

#[test]
fn every_demo_gamestate_decodes_to_clean_configstrings() {
    if !demos_here("every_demo_gamestate_decodes_to_clean_configstrings") {
        return;
    }
    let names = demo_names();
    assert!(names.iter().any(|n| n == "one_frag_only_with_plasma.dm_68"));
    for name in &names {
        let (strings, next) = gamestate(name);
        assert!(
            strings.len() >= 10,
            "{name}: only {} configstrings",
            strings.len()
        );
        assert!(
            strings.windows(2).all(|w| w[0].0 < w[1].0),
            "{name}: configstring indices must increase"
        );
        assert!(
            strings.iter().all(|(i, _)| *i < MAX_CONFIGSTRINGS),
            "{name}"
        );
        assert!(
            next == SVC_BASELINE || next == SVC_EOF,
            "{name}: then {next}"
        );
        let server_info = &strings[0].1;
        assert!(
            server_info.contains("\\sv_hostname\\"),
            "{name}: {server_info}"
        );
    }
}

#[test]
fn every_demo_record_opens_with_clean_server_commands() {
    if !demos_here("every_demo_record_opens_with_clean_server_commands") {
        return;
    }
    let code = HuffmanCode::quake3();
    let (mut messages, mut commands) = (0, 0);
    for name in demo_names() {
        let data = read_demo(&name);
        for (sequence, message) in records(&data).into_iter().skip(1) {
            let mut reader = HuffmanReader::new(BitReader::new(message), code);
            let _reliable_acknowledge = reader.get_bits(32).unwrap();
            let mut previous = None;
            let next = loop {
                let command = reader.get_u8().unwrap();
                if command != SVC_SERVER_COMMAND {
                    break command;
                }
                let command_sequence = reader.get_bits(32).unwrap();
                if let Some(previous) = previous {
                    assert_eq!(command_sequence, previous + 1, "{name} message {sequence}");
                }
                previous = Some(command_sequence);
                read_text(&mut reader);
                commands += 1;
            };
            assert_eq!(next, SVC_SNAPSHOT, "{name} message {sequence}");
            messages += 1;
        }
    }
    // Counts for the eight demos in shared/q3demos.
    assert_eq!(messages, 21_517);
    assert_eq!(commands, 2_289);
}
