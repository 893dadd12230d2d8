//! The commands of a protocol 68 server message and the text rules they use.
//!
//! A message is a Huffman bitstream (see [`fields::HuffmanReader`]): a 32-bit
//! reliable acknowledge, then commands, each introduced by a command byte,
//! until `svc_EOF`. [`Q3Client`](crate::Q3Client) parses them, because a
//! snapshot can only be rebuilt from the client's earlier state.

use std::ops::Range;
use std::sync::Arc;

use fields::BitSource;
use serde::Serialize;

use crate::error::MessageError;
use crate::snapshot::{Baselines, Snapshot};
use crate::tables::EntityState;

/// Quake 3's largest message (`MAX_MSGLEN`); longer demo records are rejected.
pub const MAX_MSGLEN: usize = 16384;
/// Number of configstrings (`MAX_CONFIGSTRINGS`).
pub const MAX_CONFIGSTRINGS: usize = 1024;
/// Longest ordinary string, terminator included (`MAX_STRING_CHARS`).
pub const MAX_STRING_CHARS: usize = 1024;
/// Longest configstring in a gamestate, terminator included (`BIG_INFO_STRING`).
pub const BIG_INFO_STRING: usize = 8192;
/// Total text a gamestate may hold (`MAX_GAMESTATE_CHARS`).
pub const MAX_GAMESTATE_CHARS: usize = 16000;

/// The protocol 68 server command bytes (`svc_ops_e`).
pub mod svc {
    /// Never valid.
    pub const BAD: u8 = 0;
    /// Does nothing.
    pub const NOP: u8 = 1;
    /// Configstrings, baselines, client number and checksum feed.
    pub const GAMESTATE: u8 = 2;
    /// One configstring (inside a gamestate; see [`Command::Configstring`]).
    ///
    /// [`Command::Configstring`]: crate::Command::Configstring
    pub const CONFIGSTRING: u8 = 3;
    /// One spawn baseline (inside a gamestate; see [`Command::Baseline`]).
    ///
    /// [`Command::Baseline`]: crate::Command::Baseline
    pub const BASELINE: u8 = 4;
    /// A reliable text command.
    pub const SERVER_COMMAND: u8 = 5;
    /// A block of a file download.
    pub const DOWNLOAD: u8 = 6;
    /// A snapshot.
    pub const SNAPSHOT: u8 = 7;
    /// End of the message (or of the gamestate's list).
    pub const EOF: u8 = 8;

    /// The command's name as Quake 3 spells it, for valid bytes.
    pub fn name(byte: u8) -> Option<&'static str> {
        Some(match byte {
            NOP => "svc_nop",
            GAMESTATE => "svc_gamestate",
            CONFIGSTRING => "svc_configstring",
            BASELINE => "svc_baseline",
            SERVER_COMMAND => "svc_serverCommand",
            DOWNLOAD => "svc_download",
            SNAPSHOT => "svc_snapshot",
            EOF => "svc_EOF",
            _ => return None,
        })
    }
}

/// Everything one server message said.
#[derive(Debug, Clone)]
pub struct ParsedMessage {
    /// The record's message sequence (`serverMessageSequence`).
    pub sequence: i32,
    /// The reliable acknowledge at the start of the message.
    pub reliable_acknowledge: i32,
    /// The commands, in order, without the final `svc_EOF`.
    pub commands: Vec<ParsedCommand>,
    /// Bits read, up to and including the final `svc_EOF`.
    pub bits: usize,
}

impl ParsedMessage {
    /// The snapshots the message carried (at most one in practice).
    pub fn snapshots(&self) -> impl Iterator<Item = &SnapshotCommand> {
        self.commands.iter().filter_map(|c| match &c.command {
            Command::Snapshot(s) => Some(s),
            _ => None,
        })
    }
}

/// One command and where it was in the message.
#[derive(Debug, Clone)]
pub struct ParsedCommand {
    /// Bits of the message the command occupied, its command byte included.
    pub bits: Range<usize>,
    /// What it said.
    pub command: Command,
}

/// A parsed server command.
#[derive(Debug, Clone)]
pub enum Command {
    /// `svc_nop`.
    Nop,
    /// `svc_gamestate`: the client state was reset to it.
    Gamestate(Box<Gamestate>),
    /// `svc_configstring` outside a gamestate. Quake 3's own client rejects
    /// this form (configstring changes travel as `cs` server commands); it is
    /// accepted here because the byte is part of protocol 68 and other demo
    /// tools write it.
    Configstring {
        /// Configstring index.
        index: u16,
        /// New text.
        text: String,
    },
    /// `svc_baseline` outside a gamestate (accepted for the same reason).
    Baseline {
        /// Entity number.
        number: u32,
        /// New baseline.
        state: Box<EntityState>,
    },
    /// `svc_serverCommand`.
    ServerCommand(ServerCommand),
    /// `svc_download`.
    Download(Download),
    /// `svc_snapshot`.
    Snapshot(SnapshotCommand),
}

impl Command {
    /// The command byte that introduces this command.
    pub fn byte(&self) -> u8 {
        match self {
            Command::Nop => svc::NOP,
            Command::Gamestate(_) => svc::GAMESTATE,
            Command::Configstring { .. } => svc::CONFIGSTRING,
            Command::Baseline { .. } => svc::BASELINE,
            Command::ServerCommand(_) => svc::SERVER_COMMAND,
            Command::Download(_) => svc::DOWNLOAD,
            Command::Snapshot(_) => svc::SNAPSHOT,
        }
    }
}

/// The contents of an `svc_gamestate`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gamestate {
    /// The reliable server command sequence it marks.
    pub server_command_sequence: i32,
    /// Configstrings as sent (index, text), in wire order.
    pub configstrings: Vec<(u16, String)>,
    /// Spawn baselines as sent (number, state), in wire order.
    pub baselines: Vec<(u32, EntityState)>,
    /// The recording client's number.
    pub client_num: i32,
    /// The pure-server checksum feed.
    pub checksum_feed: i32,
}

/// An `svc_serverCommand`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerCommand {
    /// Its reliable sequence number.
    pub sequence: i32,
    /// The command text (`print`, `cs`, `scores`, ...).
    pub text: String,
    /// False when the client had already seen this sequence (servers resend
    /// reliable commands until acknowledged; Quake 3 ignores the repeats).
    pub is_new: bool,
}

/// An `svc_download` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Download {
    /// Block number.
    pub block: u16,
    /// Size of the whole file, sent with the first block only.
    pub file_size: Option<i32>,
    /// The block's bytes (at most [`MAX_MSGLEN`]; empty marks the end).
    pub data: Vec<u8>,
}

/// An `svc_snapshot` with what it was decoded against.
#[derive(Debug, Clone)]
pub struct SnapshotCommand {
    /// The reconstructed snapshot.
    pub snapshot: Arc<Snapshot>,
    /// The ring entry it was decoded against: the base snapshot for a valid
    /// delta, whatever the ring slot held for an invalid one, `None` for a
    /// full snapshot (or an empty slot, which is all-zero state).
    pub base: Option<Arc<Snapshot>>,
    /// The spawn baselines in force (new entities delta from these).
    pub baselines: Arc<Baselines>,
}

/// Reads a NUL-terminated string the way Quake 3's `MSG_ReadString` does:
/// `%` and bytes above 127 become `.`, and text past `limit - 1` characters
/// is read but dropped. The result is therefore always ASCII, and its
/// length is bounded whatever the input (the message length bounds the loop).
pub(crate) fn read_string<S: BitSource + ?Sized>(
    source: &mut S,
    limit: usize,
    context: &str,
) -> Result<String, MessageError> {
    let mut text = String::new();
    loop {
        let byte = source
            .get_u8()
            .map_err(|e| MessageError::bits(format!("{context}: string"), e))?;
        if byte == 0 {
            return Ok(text);
        }
        let ch = if byte == b'%' || byte > 127 {
            '.'
        } else {
            byte as char
        };
        if text.len() + 1 < limit {
            text.push(ch);
        }
    }
}

/// Reads `count` bits, naming what was read in the error.
pub(crate) fn read_bits<S: BitSource + ?Sized>(
    source: &mut S,
    count: u32,
    context: &str,
) -> Result<u32, MessageError> {
    source
        .get_bits(count)
        .map_err(|e| MessageError::bits(context.to_owned(), e))
}
