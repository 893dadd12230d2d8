//! Replays the committed seed corpus of every fuzz target in
//! `session/fuzz` (and any crash saved next to it) through the same entry
//! points the targets call, on the stable toolchain. The seeds are valid
//! inputs written by `write_seeds` below (run it with `--ignored` after a
//! wire change).

use std::path::{Path, PathBuf};

use fields::Codec;
use netq3_session::fuzzing::{client_input, server_input, FuzzCommand};
use netq3_session::wire::{
    ClientMessage, CommandPacket, ServerMessage, SnapshotPayload, MAX_COMMAND_PACKET,
};
use netq3_session::ViewStamp;

fn seeds_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target)
}

fn replay(target: &str, run: fn(&[u8])) -> usize {
    let mut count = 0;
    for dir in [
        seeds_dir(target),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/artifacts")
            .join(target),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("readable directory").path();
            let data = std::fs::read(&path).expect("readable seed");
            run(&data);
            count += 1;
        }
    }
    count
}

#[test]
fn every_seed_replays() {
    assert!(replay("server_input", server_input) >= 4);
    assert!(replay("client_input", client_input) >= 9);
}

/// The seed inputs: one valid input per message kind.
fn seeds() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    let mut out = Vec::new();
    let mut push_server = |name: &'static str, message: ServerMessage<'_>| {
        let mut bytes = Vec::new();
        message.encode(&mut bytes);
        let mut input = vec![0];
        input.extend_from_slice(&bytes);
        out.push(("server_input", name, input));
    };
    push_server(
        "gamestate",
        ServerMessage::Gamestate {
            epoch: 3,
            slot: 5,
            bytes: &[0, 1, 2, 3, 4],
        },
    );
    push_server("configstring", ServerMessage::Configstring(&[1, 9, 9]));
    push_server("game", ServerMessage::Game(b"chat line"));
    let mut bytes = Vec::new();
    SnapshotPayload {
        epoch: 1,
        bytes: &[2, 0x55, 0xaa],
    }
    .encode(&mut bytes);
    let mut input = vec![1];
    input.extend_from_slice(&bytes);
    out.push(("server_input", "snapshot", input));

    for (name, message) in [
        (
            "hello",
            ClientMessage::Hello {
                snaps: 20,
                rate: 25_000,
                name: "player",
            },
        ),
        ("begin", ClientMessage::Begin { epoch: 2 }),
        ("full_update", ClientMessage::FullUpdate { epoch: 2 }),
        ("game", ClientMessage::Game(b"say hi")),
    ] {
        let mut bytes = Vec::new();
        message.encode(&mut bytes);
        let mut input = vec![0];
        input.extend_from_slice(&bytes);
        out.push(("client_input", name, input));
    }
    let commands: Vec<FuzzCommand> = (0..12u16)
        .map(|i| FuzzCommand {
            msec: 16 + (i % 2) as u8,
            buttons: (i / 4) as u8,
            forward: 127,
            right: -40,
            yaw: 1000 + i * 90,
            pitch: -200,
        })
        .collect();
    for (name, tag, codec, base) in [
        ("commands_native", 1u8, Codec::Native, None),
        ("commands_q3", 2, Codec::Q3, None),
        (
            "commands_native_based",
            1,
            Codec::Native,
            Some(&commands[0]),
        ),
        ("commands_q3_based", 2, Codec::Q3, Some(&commands[0])),
    ] {
        let mut buf = [0u8; MAX_COMMAND_PACKET];
        let (len, _) =
            CommandPacket::encode_from(codec, 40, base, commands[1..].iter(), &mut buf).unwrap();
        let mut input = vec![tag];
        input.extend_from_slice(&buf[..len]);
        out.push(("client_input", name, input));
    }
    // Commands with the views they were made from: the same snapshots for
    // a while, then a newer one, one without a view.
    let views: Vec<Option<ViewStamp>> = (0..11u16)
        .map(|i| {
            (i != 3).then_some(ViewStamp {
                newest: 250u8.wrapping_add((i / 3) as u8),
                previous_back: 1 + (i % 2) as u8,
                offset_ms: -50 + 16 * (i % 3) as i32,
            })
        })
        .collect();
    let mut buf = [0u8; MAX_COMMAND_PACKET];
    let (len, _) = CommandPacket::encode_viewed(
        Codec::Native,
        40,
        Some(&commands[0]),
        commands[1..].iter().zip(views.iter().map(Option::as_ref)),
        &mut buf,
    )
    .unwrap();
    let mut input = vec![1];
    input.extend_from_slice(&buf[..len]);
    out.push(("client_input", "commands_native_viewed", input));
    out
}

#[test]
fn committed_seeds_are_current() {
    for (target, name, bytes) in seeds() {
        let path = seeds_dir(target).join(name);
        let committed = std::fs::read(&path)
            .unwrap_or_else(|_| panic!("{} missing: run write_seeds", path.display()));
        assert_eq!(committed, bytes, "{}: run write_seeds", path.display());
    }
}

#[test]
#[ignore = "writes the seed corpus; run after a wire change"]
fn write_seeds() {
    for (target, name, bytes) in seeds() {
        std::fs::create_dir_all(seeds_dir(target)).unwrap();
        std::fs::write(seeds_dir(target).join(name), bytes).unwrap();
    }
}
