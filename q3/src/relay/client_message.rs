//! What a Quake 3 client sends a server, read as ioquake3's server reads it
//! (`SV_ExecuteClientMessage`): the server id, the message and reliable
//! command it acknowledges, then its reliable commands (`clc_clientCommand`:
//! sequence and text), then at most one block of usercmds (`clc_move`,
//! delta-coded against the acknowledged snapshot, or `clc_moveNoDelta`),
//! then `clc_EOF`.
//!
//! Usercmds are keyed: each changed field is XORed with `checksumFeed ^
//! messageAcknowledge ^ hash(the acknowledged server command)` and the
//! command's time ([`Usercmd::read_delta`]). A message that ends before its
//! `clc_EOF` is accepted as far as it goes, as Quake 3 does; a command or
//! move cut short, a move count outside 1..=32 or an unknown command byte
//! where a move should be is an error. Allocation is bounded by the
//! message's length.

use fields::{BitError, BitReader, BitSource, HuffmanCode, HuffmanReader};
use thiserror::Error;

use crate::live::clc;
use crate::live::usercmd::{hash_key, Usercmd};
use crate::live::{LiveError, MAX_PACKET_USERCMDS, MAX_RELIABLE_COMMANDS};
use crate::message::{MAX_MSGLEN, MAX_STRING_CHARS};

/// Why a client message could not be read.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ClientMessageError {
    /// Longer than Quake 3's `MAX_MSGLEN`.
    #[error("client message of {len} bytes exceeds {max}")]
    TooLong {
        /// Its length.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// The header (server id, acknowledges) or a command ran out of bits.
    #[error("client message cut short in {what}: {source}")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// The bit reader's error.
        #[source]
        source: BitError,
    },
    /// A usercmd block with no commands or more than 32.
    #[error("usercmd count {count} is outside 1..={max}")]
    BadMoveCount {
        /// The count sent.
        count: u8,
        /// The bound (`MAX_PACKET_USERCMDS`).
        max: usize,
    },
    /// A byte that is no client command where one was expected.
    #[error("bad client command byte {byte}")]
    BadCommandByte {
        /// The byte.
        byte: u8,
    },
    /// More reliable commands in one message than the ring holds.
    #[error("more than {max} reliable commands in one message")]
    TooManyCommands {
        /// The bound.
        max: usize,
    },
}

/// A client's block of usercmds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moves {
    /// `clc_move` (the client acknowledged `message_acknowledge` as its
    /// delta base) rather than `clc_moveNoDelta`.
    pub delta: bool,
    /// The usercmds, oldest first.
    pub commands: Vec<Usercmd>,
}

/// A client message, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientMessage {
    /// The server id the client believes current (`sv_serverid`).
    pub server_id: i32,
    /// The last server message it received.
    pub message_acknowledge: i32,
    /// The last reliable server command it received.
    pub reliable_acknowledge: i32,
    /// Its reliable commands in this message: sequence and text.
    pub commands: Vec<(i32, String)>,
    /// Its usercmds, if any.
    pub moves: Option<Moves>,
    /// Whether the message ended with `clc_EOF` (rather than running out).
    pub terminated: bool,
}

fn truncated(what: &'static str) -> impl FnOnce(BitError) -> ClientMessageError {
    move |source| ClientMessageError::Truncated { what, source }
}

/// `MSG_ReadString`: bytes up to a 0 or the end of the data, `%` and bytes
/// above 127 read as `.`, only the first `MAX_STRING_CHARS - 1` kept.
fn read_string<S: BitSource>(source: &mut S) -> String {
    let mut text = String::new();
    while let Ok(byte) = source.get_u8() {
        if byte == 0 {
            break;
        }
        if text.len() < MAX_STRING_CHARS - 1 {
            text.push(if byte > 127 || byte == b'%' {
                '.'
            } else {
                byte as char
            });
        }
    }
    text
}

/// Reads a client message (netchan header removed, unscrambled). The
/// usercmd key needs the checksum `feed` of the gamestate and the text of
/// each server command by sequence (`server_command`: the server's ring of
/// [`MAX_RELIABLE_COMMANDS`]).
pub fn parse_client_message(
    payload: &[u8],
    feed: i32,
    server_command: &dyn Fn(i32) -> String,
) -> Result<ClientMessage, ClientMessageError> {
    if payload.len() > MAX_MSGLEN {
        return Err(ClientMessageError::TooLong {
            len: payload.len(),
            max: MAX_MSGLEN,
        });
    }
    let mut source = HuffmanReader::new(BitReader::new(payload), HuffmanCode::quake3());
    let server_id = source.get_bits(32).map_err(truncated("server id"))? as i32;
    let message_acknowledge = source
        .get_bits(32)
        .map_err(truncated("message acknowledge"))? as i32;
    let reliable_acknowledge = source
        .get_bits(32)
        .map_err(truncated("reliable acknowledge"))? as i32;
    let mut message = ClientMessage {
        server_id,
        message_acknowledge,
        reliable_acknowledge,
        commands: Vec::new(),
        moves: None,
        terminated: false,
    };
    let op = loop {
        // Running out of data ends the message, as Quake 3's -1 byte does.
        let Ok(op) = source.get_u8() else {
            return Ok(message);
        };
        if op != clc::CLIENT_COMMAND {
            break op;
        }
        if message.commands.len() >= MAX_RELIABLE_COMMANDS {
            return Err(ClientMessageError::TooManyCommands {
                max: MAX_RELIABLE_COMMANDS,
            });
        }
        let sequence = source
            .get_bits(32)
            .map_err(truncated("client command sequence"))? as i32;
        message.commands.push((sequence, read_string(&mut source)));
    };
    match op {
        clc::EOF => {
            message.terminated = true;
            return Ok(message);
        }
        clc::MOVE | clc::MOVE_NO_DELTA => {}
        byte => return Err(ClientMessageError::BadCommandByte { byte }),
    }
    let count = source.get_u8().map_err(truncated("usercmd count"))?;
    if count == 0 || usize::from(count) > MAX_PACKET_USERCMDS {
        return Err(ClientMessageError::BadMoveCount {
            count,
            max: MAX_PACKET_USERCMDS,
        });
    }
    let key =
        feed ^ message_acknowledge ^ hash_key(server_command(reliable_acknowledge).as_bytes(), 32);
    let mut commands = Vec::with_capacity(usize::from(count));
    let mut from = Usercmd::default();
    for _ in 0..count {
        let cmd = Usercmd::read_delta(&mut source, key, &from).map_err(|e| match e {
            LiveError::Bits(source) => ClientMessageError::Truncated {
                what: "usercmd",
                source,
            },
            other => ClientMessageError::Truncated {
                what: "usercmd",
                source: BitError::Invalid {
                    what: "usercmd",
                    position: 0,
                    detail: other.to_string(),
                },
            },
        })?;
        commands.push(cmd);
        from = cmd;
    }
    message.moves = Some(Moves {
        delta: op == clc::MOVE,
        commands,
    });
    message.terminated = source.get_u8().is_ok_and(|b| b == clc::EOF);
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fields::{BitSink, BitWriter, HuffmanWriter};

    fn write(
        header: [i32; 3],
        commands: &[(i32, &str)],
        moves: Option<(bool, &[Usercmd])>,
        key: i32,
    ) -> Vec<u8> {
        let mut buf = vec![0u8; 2048];
        let mut writer = BitWriter::new(&mut buf);
        let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
        for value in header {
            sink.put_bits(value as u32, 32).unwrap();
        }
        for (sequence, text) in commands {
            sink.put_u8(clc::CLIENT_COMMAND).unwrap();
            sink.put_bits(*sequence as u32, 32).unwrap();
            sink.put_str(text, 1000).unwrap();
        }
        if let Some((delta, cmds)) = moves {
            sink.put_u8(if delta { clc::MOVE } else { clc::MOVE_NO_DELTA })
                .unwrap();
            sink.put_u8(cmds.len() as u8).unwrap();
            let mut from = Usercmd::default();
            for cmd in cmds {
                cmd.write_delta(&mut sink, key, &from).unwrap();
                from = *cmd;
            }
        }
        sink.put_u8(clc::EOF).unwrap();
        let len = sink.bits_written() / 8 + 1;
        buf.truncate(len);
        buf
    }

    #[test]
    fn reads_commands_and_keyed_moves() {
        let ring = |sequence: i32| format!("print \"command {sequence}\"");
        let feed = 0x1234_5678;
        let key = feed ^ 40 ^ hash_key(ring(7).as_bytes(), 32);
        let cmds = [
            Usercmd {
                server_time: 5000,
                angles: [1, 2, 3],
                forward: 127,
                buttons: 1,
                ..Usercmd::default()
            },
            Usercmd {
                server_time: 5033,
                angles: [1, 900, 3],
                forward: -127,
                weapon: 5,
                ..Usercmd::default()
            },
        ];
        let bytes = write(
            [99, 40, 7],
            &[(3, "say hi"), (4, "cp 99 1 2 @ 3 4")],
            Some((true, &cmds)),
            key,
        );
        let message = parse_client_message(&bytes, feed, &ring).unwrap();
        assert_eq!(
            (
                message.server_id,
                message.message_acknowledge,
                message.reliable_acknowledge
            ),
            (99, 40, 7)
        );
        assert_eq!(
            message.commands,
            vec![(3, "say hi".to_owned()), (4, "cp 99 1 2 @ 3 4".to_owned())]
        );
        let moves = message.moves.unwrap();
        assert!(moves.delta);
        assert_eq!(moves.commands, cmds);
        assert!(message.terminated);
        // With the wrong acknowledged command the key is wrong: garbage.
        let wrong = parse_client_message(&bytes, feed, &|_| String::new()).unwrap();
        assert_ne!(wrong.moves.unwrap().commands[0].angles, cmds[0].angles);
    }

    #[test]
    fn bad_input_is_an_error_or_a_short_message_never_a_panic() {
        let ring = |_: i32| String::new();
        assert!(matches!(
            parse_client_message(&[1, 2, 3], 0, &ring),
            Err(ClientMessageError::Truncated {
                what: "server id",
                ..
            })
        ));
        // Only the header: accepted, not terminated.
        let mut buf = vec![0u8; 64];
        let mut writer = BitWriter::new(&mut buf);
        let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
        for value in [1, 2, 3] {
            sink.put_bits(value, 32).unwrap();
        }
        let len = sink.bits_written().div_ceil(8);
        let message = parse_client_message(&buf[..len], 0, &ring).unwrap();
        assert_eq!(
            (
                message.server_id,
                message.message_acknowledge,
                message.reliable_acknowledge
            ),
            (1, 2, 3)
        );
        assert!(!message.terminated && message.moves.is_none());
        // A zero move count.
        let mut buf = vec![0u8; 64];
        let mut writer = BitWriter::new(&mut buf);
        let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
        for _ in 0..3 {
            sink.put_bits(0, 32).unwrap();
        }
        sink.put_u8(clc::MOVE).unwrap();
        sink.put_u8(0).unwrap();
        let len = sink.bits_written() / 8 + 1;
        assert_eq!(
            parse_client_message(&buf[..len], 0, &ring),
            Err(ClientMessageError::BadMoveCount { count: 0, max: 32 })
        );
        assert!(matches!(
            parse_client_message(&vec![0u8; MAX_MSGLEN + 1], 0, &ring),
            Err(ClientMessageError::TooLong { .. })
        ));
    }
}
