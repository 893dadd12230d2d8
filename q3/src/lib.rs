//! # netq3-q3
//!
//! Everything specific to Quake 3 protocol 68 in one crate: its networked
//! structs, its server message layouts, its client parse state and `.dm_68`
//! demo files, decoded bit for bit with the project's own field tables,
//! Huffman code and q3 delta codec — and written again bit for bit. An
//! entity update as a Quake 3 server sends it, through Quake 3's Huffman
//! code, and read back:
//!
//! ```
//! use fields::{BitReader, BitSink, BitWriter, Codec, HuffmanCode, HuffmanReader, HuffmanWriter};
//! use netq3_q3::EntityState;
//!
//! // A rocket (eType 3) leaves its baseline: position and velocity change.
//! let baseline = EntityState { e_type: 3, ..EntityState::default() };
//! let rocket = EntityState { pos_tr_base_0: 512.0, pos_tr_delta_0: 900.0, ..baseline };
//!
//! let mut buf = [0u8; 256];
//! let mut writer = BitWriter::new(&mut buf);
//! Codec::Q3.write_delta(&mut HuffmanWriter::new(&mut writer, HuffmanCode::quake3()), &baseline, &rocket)?;
//! let bits = writer.bits_written();
//!
//! let mut reader = HuffmanReader::new(BitReader::with_bit_len(&buf, bits), HuffmanCode::quake3());
//! let mut received = baseline;
//! Codec::Q3.read_delta(&mut reader, &mut received)?;
//! assert_eq!(received, rocket);
//! # Ok::<(), fields::BitError>(())
//! ```
//!
//! Layers, bottom up:
//!
//! * [`EntityState`] and [`PlayerState`] — Quake 3's networked structs,
//!   declared with [`fields::net_struct!`]; their exact wire schemas are
//!   `EntityState::TABLE` and `PlayerState::TABLE` ([`fields::NetFields`]).
//! * [`Dm68Reader`] — the file's records, with truncation detection;
//!   [`looks_like_dm68`] recognises the format by content.
//! * [`Q3Client`] — Quake 3's client parse state (configstrings, baselines,
//!   the ring of 32 snapshots) and the server message parser, which returns
//!   a [`ParsedMessage`] with every [`Snapshot`] fully reconstructed.
//! * [`Dm68Decoder`] — the two together, with errors naming the record.
//! * [`reencode`] — writes each parsed snapshot again with the q3 encoder
//!   and compares bit counts with Quake 3's own, explaining differences.
//! * [`events`] — a match's frags, chat, scores, flags and players, from
//!   the records of a demo ([`events::Dm68Events`]).
//! * [`engine`] — Quake 3's `svc_snapshot` as a framing of the library's
//!   snapshot engine ([`engine::Quake3Framing`]), and a driver that sends
//!   Quake 3's recorded or live snapshot streams through the engine against
//!   the bases Quake 3 used ([`engine::EngineReplay`]).
//! * [`live`] — a client that plays on a real (ioquake3) server over
//!   protocol 71 or 68: handshake, netchan, keyed usercmds, acknowledged
//!   deltas, `.dm_68` recording ([`Dm68Writer`]); the `q3` tool (`q3
//!   connect ADDR`, `q3 status ADDR`) drives it; it answers pure
//!   servers with pak checksums ([`live::pak`], [`live::pure`]).
//! * [`relay`] — `q3 relay`: a Quake 3 server for spectators, fed by a live
//!   server or a recorded match, that real Quake 3 clients connect to.
//!
//! The `q3` tool is this crate's binary behind the non-default `cli`
//! feature, so a library user's build compiles none of its dependencies.
//!
//! Text: Quake 3's client turns `%` and bytes above 127 into `.` when it
//! reads a string; this reader does the same, so every string is ASCII.
//! Allocation is bounded: records longer than [`MAX_MSGLEN`] are rejected,
//! and every list a message builds is bounded by its length.

#![forbid(unsafe_code)]

mod client;
mod commands;
pub mod corpus;
pub mod engine;
mod error;
pub mod events;
mod file;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod info;
pub mod live;
mod message;
pub mod model;
pub mod reencode;
pub mod relay;
mod snapshot;
mod tables;

pub use client::{Q3Client, MAX_PARSE_ENTITIES, MAX_SNAPSHOT_ENTITIES, PACKET_BACKUP};
pub use error::{MessageError, Q3Error};
pub use file::{
    check_dm68, looks_like_dm68, DecodedRecord, Dm68Decoder, Dm68Reader, Dm68Writer, Record,
    END_MARKER_LENGTH, RECORD_HEADER_LEN,
};
pub use message::{
    svc, Command, Download, Gamestate, ParsedCommand, ParsedMessage, ServerCommand,
    SnapshotCommand, BIG_INFO_STRING, MAX_CONFIGSTRINGS, MAX_GAMESTATE_CHARS, MAX_MSGLEN,
    MAX_STRING_CHARS,
};
pub use snapshot::{Baselines, Snapshot, Validity, MAX_MAP_AREA_BYTES};
pub use tables::{
    EntityState, PlayerState, ENTITY_STATE_Q3_NAMES, GENTITYNUM_BITS, MAX_GENTITIES,
    PLAYER_STATE_Q3_NAMES, PS_ARRAY_LEN,
};

/// The `format` name of Quake 3 demos in tools and JSON output.
pub const FORMAT_NAME: &str = "q3-dm68";
