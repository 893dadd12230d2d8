//! How a snapshot message is framed: its header, and the entropy coder the
//! whole message passes through.
//!
//! A snapshot message is a header, the player-state delta, the entity list
//! (or two, for a chained snapshot) and, when the header says so, a sync
//! checksum. The body is the codec's; the header and the coding layer are
//! a [`Framing`]'s. The engine sends [`Compact`] (the default); the `q3`
//! crate implements Quake 3's `svc_snapshot` on the same trait, so a
//! [`Server`](crate::Server) configured with the q3 codec and that framing
//! writes real Quake 3 snapshot commands (see [`Framing`]).
//!
//! ## The sequence is not in the message
//!
//! A snapshot's sequence number is its number in the stream to one client:
//! what the client acknowledges and what a later delta names as its base.
//! The message does not carry it; the transport does, as Quake 3's netchan
//! carries its message number. Over `netchan`, a snapshot is the
//! connection's most-recent-state payload and its sequence is the payload's
//! [`StateId`](https://docs.rs/netq3-netchan) (the session numbers its
//! snapshots so); a native demo stores it in each record's frame. The
//! receiver passes it to [`Client::read_snapshot`](crate::Client::read_snapshot),
//! so before it looks anything up it can tell:
//!
//! * a **stale** snapshot: its sequence is not newer than the newest held
//!   (it arrived late or twice); it is kept only as a possible base, or
//!   ignored;
//! * a snapshot of **another gamestate**: the session prefixes every
//!   snapshot with its gamestate's epoch, and drops one whose epoch is not
//!   the gamestate held;
//! * a **baseless** delta: the base a delta names (its sequence less the
//!   distance at the head of the header) is looked up among the snapshots
//!   the client holds; when it is not there, the snapshot is refused as
//!   [`BaseMissing`](crate::ClientError::BaseMissing) and the client asks
//!   for a full update, and nothing is decoded against a snapshot it does
//!   not hold.
//!
//! ## Deliveries
//!
//! Every snapshot either end holds remembers its [`Delivery`]: how the
//! message that delivered it was coded against its base (delta distance,
//! server frames and milliseconds since the base). The compact header codes
//! a new message's frames and time against its base's delivery, which is
//! what a stream repeats: a client that takes every second frame of a
//! 30 Hz server is sent the same pattern message after message, so the
//! frames cost a bit and the time none. A message that re-encodes a
//! snapshot (a demo's keyframe, a re-based delta) states the original
//! delivery, so the messages that follow it decode as they did live.

use std::fmt;

use fields::varcode::{get_exp_golomb, put_exp_golomb, unzigzag, zigzag};
use fields::{BitError, BitSink, BitSource, Chance, Codec, HuffmanCode};

use crate::config::MAX_DELTA_DISTANCE;
use crate::error::ClientError;
use crate::message::MessageKind;

/// Longest area mask, in bytes (Quake 3's `MAX_MAP_AREA_BYTES`).
pub const MAX_AREA_MASK: usize = 32;

/// The snapshot flag the server sets when the client's byte rate held an
/// earlier snapshot back (Quake 3's `SNAPFLAG_RATE_DELAYED`, the same bit).
pub const RATE_DELAYED: u8 = 1;

/// A client's area visibility mask, as a snapshot carries it: up to
/// [`MAX_AREA_MASK`] bytes the game sets (Quake 3 sends one bit per map
/// area the client's view reaches; a game without areas sends none).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AreaMask {
    len: u8,
    bytes: [u8; MAX_AREA_MASK],
}

impl AreaMask {
    /// No area mask.
    pub const EMPTY: AreaMask = AreaMask {
        len: 0,
        bytes: [0; MAX_AREA_MASK],
    };

    /// The mask `bytes`; `None` when longer than [`MAX_AREA_MASK`].
    pub fn new(bytes: &[u8]) -> Option<AreaMask> {
        if bytes.len() > MAX_AREA_MASK {
            return None;
        }
        let mut mask = AreaMask::EMPTY;
        mask.len = bytes.len() as u8;
        mask.bytes[..bytes.len()].copy_from_slice(bytes);
        Some(mask)
    }

    /// Its bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl fmt::Debug for AreaMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AreaMask({:02x?})", self.as_bytes())
    }
}

/// How the message that delivered a snapshot was coded against its base
/// (see the [module docs](self)). A full update's is all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Delivery {
    /// Snapshots back to the base (0: a full update).
    pub distance: u32,
    /// Server frames since the base's.
    pub frames: u32,
    /// Milliseconds of server time since the base's.
    pub elapsed_ms: u32,
}

impl Delivery {
    /// A full update's delivery.
    pub const FULL: Delivery = Delivery {
        distance: 0,
        frames: 0,
        elapsed_ms: 0,
    };

    /// The delivery of snapshot `sequence` of `frame` at `server_time`, sent
    /// as a delta from `base` (or full, without one).
    pub fn of(sequence: u32, frame: u32, server_time: u32, base: Option<&BaseInfo>) -> Delivery {
        match base {
            None => Delivery::FULL,
            Some(base) => Delivery {
                distance: sequence.wrapping_sub(base.sequence),
                frames: frame.wrapping_sub(base.frame),
                elapsed_ms: server_time.wrapping_sub(base.server_time),
            },
        }
    }

    /// The frames its message skipped: frames since the base less the
    /// distance (a client on every frame skips none; 0 for a full update).
    pub fn skipped_frames(&self) -> u32 {
        if self.distance == 0 {
            0
        } else {
            self.frames.wrapping_sub(self.distance)
        }
    }

    /// The server's frame length it shows, when its frames were equally
    /// long: milliseconds per frame.
    pub fn frame_ms(&self) -> Option<u32> {
        (self.frames > 0 && self.elapsed_ms % self.frames == 0)
            .then(|| self.elapsed_ms / self.frames)
    }
}

/// What a snapshot message's header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotHeader {
    /// The snapshot's sequence number (not in the message: see the
    /// [module docs](self)).
    pub sequence: u32,
    /// The server frame it was taken from.
    pub frame: u32,
    /// That frame's server time, in milliseconds.
    pub server_time: u32,
    /// The snapshot it is a delta from; `None` for a full update (a delta
    /// from the zeroed dummy).
    pub base: Option<u32>,
    /// Snapshot flags: [`RATE_DELAYED`] (set by the server) and whatever
    /// else the game sets (Quake 3: not-active, server-count toggle).
    pub flags: u8,
    /// The client's area mask.
    pub area_mask: AreaMask,
    /// A sync checksum follows the entity list.
    pub has_checksum: bool,
    /// For a chained snapshot, the server time of the frame its first
    /// entity list leads to (the second list goes on from there).
    pub via_time: Option<u32>,
    /// The snapshot's delivery: the message's own unless it re-encodes a
    /// snapshot first delivered otherwise (see the [module docs](self)).
    pub delivery: Delivery,
    /// An older snapshot than the base, which the receiver holds, that
    /// entities re-entering its view are coded from (see
    /// [`crate::history`]); `None` for a full update and most deltas.
    pub history: Option<u32>,
}

impl SnapshotHeader {
    /// Snapshots back to the base (0 for a full update).
    pub fn distance(&self) -> u32 {
        self.base.map_or(0, |base| self.sequence.wrapping_sub(base))
    }

    /// Whether the server said an earlier snapshot was rate-delayed.
    pub fn rate_delayed(&self) -> bool {
        self.flags & RATE_DELAYED != 0
    }

    /// The delivery this message gives its snapshot when sent from `base`.
    pub fn natural_delivery(&self, base: Option<&BaseInfo>) -> Delivery {
        Delivery::of(self.sequence, self.frame, self.server_time, base)
    }
}

/// A snapshot one end holds, which a message may be a delta from: what the
/// header is coded against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BaseInfo {
    /// Its sequence number.
    pub sequence: u32,
    /// Its server frame.
    pub frame: u32,
    /// Its server time.
    pub server_time: u32,
    /// Its flags.
    pub flags: u8,
    /// Its area mask.
    pub area_mask: AreaMask,
    /// How it was delivered.
    pub delivery: Delivery,
}

/// The snapshots one end holds, by sequence: for the server, the ones it
/// sent that are still in the client's ring (what the client may hold); for
/// the client, the ones it decoded.
pub trait Bases {
    /// Snapshot `sequence`, if held.
    fn base(&self, sequence: u32) -> Option<BaseInfo>;
}

/// No snapshots at all.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoBases;

impl Bases for NoBases {
    fn base(&self, _: u32) -> Option<BaseInfo> {
        None
    }
}

/// Snapshots held as a list (any order).
#[derive(Debug, Clone, Copy)]
pub struct BaseList<'a>(pub &'a [BaseInfo]);

impl Bases for BaseList<'_> {
    fn base(&self, sequence: u32) -> Option<BaseInfo> {
        self.0.iter().find(|b| b.sequence == sequence).copied()
    }
}

/// The header and coding layer of snapshot messages.
///
/// The server writes a message as: [`Framing::write_header`], the
/// player-state delta and the entity list in its codec, then (if the
/// header says so and the framing [carries checksums](Framing::carries_checksums))
/// a 32-bit sync checksum, all through [`Framing::huffman`]'s code when it
/// has one. The client reads it back the same way with
/// [`Framing::read_header`]. Both ends must use the same framing; it is a
/// protocol choice, not announced in the gamestate.
///
/// ## Writing into a larger message
///
/// [`Server::build_snapshot_into`](crate::Server::build_snapshot_into)
/// appends a snapshot message to a caller's [`BitWriter`](fields::BitWriter)
/// at its current bit position, after whatever the caller wrote there. A
/// Huffman-coded framing's code words do not depend on where they stand, so
/// the server codes the message in its own buffer (where it can redo it
/// when a byte budget is exceeded) and copies the coded bits. This is how a
/// Quake 3 relay sends a real `svc_snapshot`: it writes the server message's
/// other commands through a
/// [`HuffmanWriter`](fields::HuffmanWriter) on its writer, calls
/// `build_snapshot_into` for the spectator (a server configured with
/// [`Codec::Q3`] and the `q3` crate's Quake 3 framing, the spectator's
/// newest acknowledged snapshot as the base), and goes on writing after it.
pub trait Framing: fmt::Debug + Send + Sync {
    /// A short name (for errors and tools).
    fn name(&self) -> &'static str;

    /// Whether the framing can carry deltas of `codec`.
    fn accepts(&self, codec: Codec) -> bool {
        let _ = codec;
        true
    }

    /// The Huffman code the whole message is written through in Quake 3's
    /// bitstream mode, if any (see [`fields::HuffmanWriter`]).
    fn huffman(&self) -> Option<&'static HuffmanCode> {
        None
    }

    /// How the message's bits are coded: by default raw, or through
    /// [`huffman`](Self::huffman)'s code when there is one.
    fn coding(&self) -> MessageCoding {
        match self.huffman() {
            Some(code) => MessageCoding::Huffman(code),
            None => MessageCoding::Bits,
        }
    }

    /// Whether a message may end with a sync checksum.
    fn carries_checksums(&self) -> bool {
        true
    }

    /// Whether a message may be chained (two entity lists).
    fn carries_chains(&self) -> bool {
        true
    }

    /// Whether a delta may name a history snapshot
    /// ([`SnapshotHeader::history`]) that entities re-entering the view
    /// are coded from.
    fn carries_history(&self) -> bool {
        false
    }

    /// Whether snapshot message `bytes` is a delta or a full update
    /// ([`MessageKind::Delta`] or [`MessageKind::Full`]), read from its
    /// front as [`read_header`](Self::read_header) starts, with no base:
    /// what a tool filing messages (a demo recorder) needs. The default
    /// reads the kind the engine's one format writes first, through this
    /// framing's [`coding`](Self::coding); any other kind is an error.
    fn snapshot_kind(&self, bytes: &[u8]) -> Result<MessageKind, ClientError> {
        let kind = match self.coding() {
            MessageCoding::Bits => get_snapshot_kind(&mut fields::BitReader::new(bytes))?,
            MessageCoding::Huffman(code) => get_snapshot_kind(&mut fields::HuffmanReader::new(
                fields::BitReader::new(bytes),
                code,
            ))?,
            MessageCoding::Split => get_snapshot_kind(&mut fields::range::SplitReader::new(bytes))?,
        };
        match kind {
            MessageKind::Delta | MessageKind::Full => Ok(kind),
            other => Err(ClientError::invalid(
                "snapshot",
                0,
                format!("a {other:?} message is not a snapshot"),
            )),
        }
    }

    /// Writes `header`'s part of a message; `base` is the snapshot
    /// `header.base` names (`None` for a full update).
    fn write_header(
        &self,
        sink: &mut dyn BitSink,
        header: &SnapshotHeader,
        base: Option<&BaseInfo>,
    ) -> Result<(), BitError>;

    /// Reads the header of snapshot `sequence` (given by the transport).
    /// `held` holds the snapshots the receiver decoded; a delta whose base
    /// is not among them is [`ClientError::BaseMissing`].
    fn read_header(
        &self,
        source: &mut dyn BitSource,
        sequence: u32,
        held: &dyn Bases,
    ) -> Result<SnapshotHeader, ClientError>;
}

/// How a framing codes a message's bits.
#[derive(Debug, Clone, Copy)]
pub enum MessageCoding {
    /// As written: the codec's own codes (the native codec's symbols in
    /// their trained Huffman code words).
    Bits,
    /// Every byte written through a Huffman code, Quake 3's bitstream mode.
    Huffman(&'static HuffmanCode),
    /// Raw bits at the front, the codec's modelled symbols range-coded by
    /// their models' frequencies and stored backwards from the message's
    /// end ([`fields::range::SplitWriter`]): a symbol costs its information,
    /// not a whole code word. The message's length must come from the
    /// transport, and a message cannot be appended to other bits
    /// ([`Server::build_snapshot_into`](crate::Server::build_snapshot_into)
    /// refuses it).
    Split,
}

impl MessageCoding {
    /// How many of a finished message's `bytes` are sent: all of them,
    /// except that a bit stream ([`MessageCoding::Bits`]) leaves out its
    /// last byte when that byte is zero (and not the only one).
    /// [`Client::read_snapshot`](crate::Client::read_snapshot) reads a bit
    /// stream with a zero byte after its end, so it need not be sent: a
    /// message's last bits are mostly zeros (an empty entity list's start,
    /// the padding to a byte), so a quarter of a live Quake 3 stream's
    /// messages, and a third to a half of the shared demos', are a byte
    /// shorter. A Huffman-coded message is read through its code, whose
    /// words a dropped byte would cut, and a split message's range-coded
    /// symbols end at its last byte.
    pub fn sent_len(self, bytes: &[u8]) -> usize {
        match (self, bytes) {
            (MessageCoding::Bits, [.., _, 0]) => bytes.len() - 1,
            _ => bytes.len(),
        }
    }
}

/// The engine's own framing: a compact header, raw bits (the native codec
/// codes its symbols with trained codes already, so a second entropy coder
/// would only cost time).
///
/// | part | bits |
/// | --- | --- |
/// | message kind: delta 0, full 3 | 2 |
/// | **full:** server frame, server time | 32 + 32 |
/// | **full:** flags, area-mask length and bytes | 8 + 6 + 8 × length |
/// | **full:** checksum flag, stated-delivery flag (then distance 5, frames and ms exp-Golomb 0) | 2 (+ …) |
/// | **delta:** distance less one | exp-Golomb 1 |
/// | **delta:** steady | 1 |
/// | **delta, unless steady:** frames since the base less the distance and less the frames the base's message skipped, zigzagged | exp-Golomb 0 |
/// | **delta, unless steady, if frames were skipped:** "as usual" | 1 |
/// | **delta, unless as usual:** the exceptions below | |
///
/// A delta is "as usual" when its time is its base's plus its frames at the
/// base's frame length ([`Delivery::frame_ms`]), its flags and area mask
/// are the base's, and it is neither chained nor checksummed, nor states
/// its delivery; it is steady when it is as usual and skipped no more
/// frames than its base's message did: a stream in steady state sends
/// 5-bit headers (a delta that is not steady and skipped none is not as
/// usual, which then costs no bit). Otherwise
/// one bit says whether the only exception is [`RATE_DELAYED`] toggling
/// (a server short of its client's rate toggles it from message to
/// message), and if not, a flag per exception follows: time (then the milliseconds since the base,
/// zigzagged, exp-Golomb 5), chained (then the intermediate frame's
/// milliseconds since the base the same way), checksum, flags (then one
/// bit for "only [`RATE_DELAYED`] toggled", else the byte), area mask
/// (then its length in 6 bits and its bytes), stated delivery (as for a
/// full update), history (then how many snapshots before the base it is,
/// less one, in 5 bits: see [`crate::history`]).
///
/// **Why the distance is coded alone.** Every other part of the header is
/// coded against the base, which the receiver holds; the distance cannot
/// be, since it is what names the base. Coding it against the base's own
/// delivery distance (as a repeating stream would like) lets two held
/// snapshots match the same code, and a stream whose acknowledgements
/// arrive three or four messages late (the OSP duel) matches twice in two
/// messages of three; against the previous message's distance, a receiver
/// that lost that message would read another base. So the distance is
/// written whole, in a code short for small distances, and the receiver
/// finds exactly the base it names or refuses the snapshot.
#[derive(Debug, Clone, Copy, Default)]
pub struct Compact;

/// Bits of a history snapshot's distance before the base, less one: the
/// ring holds at most [`MAX_DELTA_DISTANCE`] snapshots back.
const HISTORY_BACK_BITS: u32 = 5;

/// Exp-Golomb order of a delta's distance less one: 2 bits for a client
/// acknowledging every snapshot at once (distance 1 or 2), 4 for one that
/// acknowledges three to six snapshots late.
const DISTANCE_ORDER: u32 = 1;
/// Width of a stated delivery's distance.
const DISTANCE_BITS: u32 = 5;
/// Exp-Golomb order of milliseconds in a header: 2^5 ms is below one frame
/// of any tick rate a game runs at.
const TIME_ORDER: u32 = 5;
/// Width of an area mask's length.
const AREA_MASK_LEN_BITS: u32 = 6;

const _: () = assert!(MAX_DELTA_DISTANCE < 1 << DISTANCE_BITS);
const _: () = assert!(MAX_AREA_MASK < 1 << AREA_MASK_LEN_BITS);

// The chances of the header's answers: in a bit stream every answer is one
// bit, as the table above says, whatever its chance; a range-coded message
// ([`CompactRange`]) codes each by its chance, so a header that says what
// the receiver expects costs a fraction of a bit instead of six. They are
// fixed, not learned: the header is read before the base that adapting
// models would key on is known, and they must suit every stream.

/// A snapshot's kind is two bits, low first: Delta 00, Full 11. A full
/// update comes at a connection's start and after a loss the ring cannot
/// bridge, so the low bit is nearly always 0.
const FULL_LOW_BIT: Chance = Chance::of(1, 128);
/// The high bit after a low 0: 1 would be a configstring, never a snapshot.
const HIGH_BIT_AFTER_ZERO: Chance = Chance::of(1, 256);
/// The high bit after a low 1: 1 is a full update; 0 a gamestate.
const HIGH_BIT_AFTER_ONE: Chance = Chance::of(255, 256);
/// The distance's exp-Golomb prefix ends at once (distance 1 or 2): a
/// client on a LAN or a fast link acknowledges every snapshot before the
/// next, one across the internet several frames late, so neither is
/// favoured.
const SHORT_DISTANCE: Chance = Chance::EVEN;
/// Distance 2 among 1 and 2: a client that acknowledges at once mostly
/// names the snapshot just before.
const DISTANCE_TWO: Chance = Chance::of(1, 5);
/// The distance's prefix ends at each further zero (3 to 6, 7 to 14, …):
/// late acknowledgements come three to six frames late far more often
/// than seven or more.
const DISTANCE_PREFIX_ENDS: Chance = Chance::of(4, 5);
/// A steady delta: no frames skipped beyond the usual and as usual (the
/// two chances below together).
const STEADY: Chance = Chance::of(27, 32);
/// No frames skipped beyond the usual, in a delta that is not steady: a
/// server sends every frame its rate allows, so a change in the frames
/// between snapshots is rare, and most deltas that are not steady are
/// not as usual.
const NO_FRAMES_SKIPPED: Chance = Chance::of(4, 5);
/// The "as usual" bit of a delta that skipped frames: a steady stream's
/// deltas are as usual; a server short of its client's rate toggles a
/// flag in a quarter of them (the OSP duel).
const AS_USUAL: Chance = Chance::of(7, 8);
/// A delta with exceptions names a history snapshot: entities re-enter
/// the view in a few messages of a hundred (see [`crate::history`]).
const HISTORY_NAMED: Chance = Chance::of(1, 8);

/// Writes a snapshot's kind (Delta or Full) as two answers: in a bit
/// stream the kind's two bits, low first ([`MessageKind::write`]).
fn put_snapshot_kind(sink: &mut dyn BitSink, kind: MessageKind) -> Result<(), BitError> {
    let (low, high) = (kind as u32 & 1 != 0, kind as u32 & 2 != 0);
    sink.put_decision(low, FULL_LOW_BIT)?;
    sink.put_decision(
        high,
        if low {
            HIGH_BIT_AFTER_ONE
        } else {
            HIGH_BIT_AFTER_ZERO
        },
    )
}

/// Reads what [`put_snapshot_kind`] wrote (any kind: the caller refuses
/// one that is not a snapshot).
fn get_snapshot_kind(source: &mut dyn BitSource) -> Result<MessageKind, ClientError> {
    let low = source.get_decision(FULL_LOW_BIT)?;
    let high = source.get_decision(if low {
        HIGH_BIT_AFTER_ONE
    } else {
        HIGH_BIT_AFTER_ZERO
    })?;
    Ok(match (low, high) {
        (false, false) => MessageKind::Delta,
        (true, false) => MessageKind::Gamestate,
        (false, true) => MessageKind::Configstring,
        (true, true) => MessageKind::Full,
    })
}

/// Writes a delta's distance less one as an exp-Golomb code of order
/// [`DISTANCE_ORDER`] whose prefix and shortest suffix are answers (in a
/// bit stream, exactly [`put_exp_golomb`]'s bits).
fn put_distance(sink: &mut dyn BitSink, less_one: u32) -> Result<(), BitError> {
    if less_one < 2 {
        sink.put_decision(true, SHORT_DISTANCE)?;
        return sink.put_decision(less_one == 1, DISTANCE_TWO);
    }
    sink.put_decision(false, SHORT_DISTANCE)?;
    let shifted = less_one + (1 << DISTANCE_ORDER);
    let width = 31 - shifted.leading_zeros();
    for _ in 1..width - DISTANCE_ORDER {
        sink.put_decision(false, DISTANCE_PREFIX_ENDS)?;
    }
    sink.put_decision(true, DISTANCE_PREFIX_ENDS)?;
    sink.put_bits(shifted & ((1 << width) - 1), width)
}

/// Reads what [`put_distance`] wrote: the distance less one.
fn get_distance(source: &mut dyn BitSource) -> Result<u32, ClientError> {
    let position = source.bits_read();
    if source.get_decision(SHORT_DISTANCE)? {
        return Ok(u32::from(source.get_decision(DISTANCE_TWO)?));
    }
    let mut width = DISTANCE_ORDER + 1;
    while !source.get_decision(DISTANCE_PREFIX_ENDS)? {
        width += 1;
        // No distance needs more: MAX_DELTA_DISTANCE < 2^DISTANCE_BITS.
        if width > DISTANCE_BITS {
            return Err(ClientError::invalid(
                "delta distance",
                position,
                "its code is longer than any distance's",
            ));
        }
    }
    let low = source.get_bits(width)?;
    Ok(((1 << width) | low) - (1 << DISTANCE_ORDER))
}

/// Writes the frames skipped beyond the usual, zigzagged, as an order-0
/// exp-Golomb code whose first bit (none skipped) is an answer.
fn put_skipped(sink: &mut dyn BitSink, skipped: i32) -> Result<(), BitError> {
    let value = zigzag(skipped);
    sink.put_decision(value == 0, NO_FRAMES_SKIPPED)?;
    if value == 0 {
        return Ok(());
    }
    // The rest of the code after its first zero.
    let shifted = u64::from(value) + 1;
    let width = 63 - shifted.leading_zeros();
    for _ in 1..width {
        sink.put_bit(false)?;
    }
    sink.put_bit(true)?;
    sink.put_wide_bits(shifted & ((1 << width) - 1), width)
}

/// Reads what [`put_skipped`] wrote.
fn get_skipped(source: &mut dyn BitSource) -> Result<i32, ClientError> {
    let position = source.bits_read();
    if source.get_decision(NO_FRAMES_SKIPPED)? {
        return Ok(0);
    }
    let mut width = 1u32;
    while !source.get_bit()? {
        width += 1;
        if width > 32 {
            return Err(ClientError::invalid(
                "skipped frames",
                position,
                "its code is longer than any 32-bit value's",
            ));
        }
    }
    let low = u64::from(source.get_bits(width)?);
    let value = ((1u64 << width) | low) - 1;
    let value = u32::try_from(value).map_err(|_| {
        ClientError::invalid("skipped frames", position, "more than a 32-bit value")
    })?;
    Ok(unzigzag(value))
}

fn put_area_mask(sink: &mut dyn BitSink, mask: &AreaMask) -> Result<(), BitError> {
    sink.put_bits(mask.len() as u32, AREA_MASK_LEN_BITS)?;
    sink.put_bytes(mask.as_bytes())
}

fn get_area_mask(source: &mut dyn BitSource) -> Result<AreaMask, ClientError> {
    let position = source.bits_read();
    let len = source.get_bits(AREA_MASK_LEN_BITS)? as usize;
    if len > MAX_AREA_MASK {
        return Err(ClientError::invalid(
            "area mask",
            position,
            format!("{len} bytes exceed {MAX_AREA_MASK}"),
        ));
    }
    let mut bytes = [0u8; MAX_AREA_MASK];
    source.get_bytes(&mut bytes[..len])?;
    Ok(AreaMask::new(&bytes[..len]).unwrap_or_default())
}

fn put_delivery(sink: &mut dyn BitSink, delivery: &Delivery) -> Result<(), BitError> {
    if delivery.distance > MAX_DELTA_DISTANCE {
        return Err(BitError::invalid(
            "stated delivery",
            sink.bits_written(),
            format!(
                "distance {} is outside 0..={MAX_DELTA_DISTANCE}",
                delivery.distance
            ),
        ));
    }
    sink.put_bits(delivery.distance, DISTANCE_BITS)?;
    put_exp_golomb(sink, delivery.frames, 0)?;
    put_exp_golomb(sink, delivery.elapsed_ms, 0)
}

fn get_delivery(source: &mut dyn BitSource) -> Result<Delivery, ClientError> {
    Ok(Delivery {
        distance: source.get_bits(DISTANCE_BITS)?,
        frames: get_exp_golomb(source, 0)?,
        elapsed_ms: get_exp_golomb(source, 0)?,
    })
}

fn put_time(sink: &mut dyn BitSink, time: u32, base: &BaseInfo) -> Result<(), BitError> {
    put_exp_golomb(
        sink,
        zigzag(time.wrapping_sub(base.server_time) as i32),
        TIME_ORDER,
    )
}

fn get_time(source: &mut dyn BitSource, base: &BaseInfo) -> Result<u32, ClientError> {
    let elapsed = unzigzag(get_exp_golomb(source, TIME_ORDER)?);
    Ok(base.server_time.wrapping_add(elapsed as u32))
}

/// The time a delta of `frames` frames from `base` has when the server's
/// frames kept the length the base's delivery shows.
fn usual_time(base: &BaseInfo, frames: u32) -> Option<u32> {
    if frames == 0 {
        return Some(base.server_time);
    }
    let frame_ms = base.delivery.frame_ms()?;
    Some(base.server_time.wrapping_add(frames.wrapping_mul(frame_ms)))
}

impl Compact {
    fn write_full(&self, sink: &mut dyn BitSink, header: &SnapshotHeader) -> Result<(), BitError> {
        if header.via_time.is_some() {
            return Err(BitError::invalid(
                "chained snapshot",
                sink.bits_written(),
                "a full update has no intermediate frame",
            ));
        }
        put_snapshot_kind(sink, MessageKind::Full)?;
        sink.put_bits(header.frame, 32)?;
        sink.put_bits(header.server_time, 32)?;
        sink.put_u8(header.flags)?;
        put_area_mask(sink, &header.area_mask)?;
        sink.put_bit(header.has_checksum)?;
        let stated = header.delivery != Delivery::FULL;
        sink.put_bit(stated)?;
        if stated {
            put_delivery(sink, &header.delivery)?;
        }
        Ok(())
    }

    fn read_full(
        &self,
        source: &mut dyn BitSource,
        sequence: u32,
    ) -> Result<SnapshotHeader, ClientError> {
        let frame = source.get_bits(32)?;
        let server_time = source.get_bits(32)?;
        let flags = source.get_u8()?;
        let area_mask = get_area_mask(source)?;
        let has_checksum = source.get_bit()?;
        let delivery = if source.get_bit()? {
            get_delivery(source)?
        } else {
            Delivery::FULL
        };
        Ok(SnapshotHeader {
            sequence,
            frame,
            server_time,
            base: None,
            flags,
            area_mask,
            has_checksum,
            via_time: None,
            delivery,
            history: None,
        })
    }
}

/// [`Compact`]'s header and body, with the native codec's modelled
/// symbols range-coded ([`MessageCoding::Split`]): the same decisions in
/// fewer bits. Raw bits (the header, the values' bits below their leading
/// one, a checksum) stay as they are at the message's front; the symbols
/// (change patterns, value classes, entity-number gaps, list ends) are
/// range-coded with the very models, contexts and adaptation the Huffman
/// code words came from, into the message's end. Both ends must use it.
#[derive(Debug, Clone, Copy, Default)]
pub struct CompactRange;

impl Framing for CompactRange {
    fn name(&self) -> &'static str {
        "compact-range"
    }

    fn coding(&self) -> MessageCoding {
        MessageCoding::Split
    }

    fn carries_history(&self) -> bool {
        Compact.carries_history()
    }

    fn write_header(
        &self,
        sink: &mut dyn BitSink,
        header: &SnapshotHeader,
        base: Option<&BaseInfo>,
    ) -> Result<(), BitError> {
        Compact.write_header(sink, header, base)
    }

    fn read_header(
        &self,
        source: &mut dyn BitSource,
        sequence: u32,
        held: &dyn Bases,
    ) -> Result<SnapshotHeader, ClientError> {
        Compact.read_header(source, sequence, held)
    }
}

impl Framing for Compact {
    fn name(&self) -> &'static str {
        "compact"
    }

    fn carries_history(&self) -> bool {
        true
    }

    fn write_header(
        &self,
        sink: &mut dyn BitSink,
        header: &SnapshotHeader,
        base: Option<&BaseInfo>,
    ) -> Result<(), BitError> {
        let Some(named) = header.base else {
            return self.write_full(sink, header);
        };
        let distance = header.distance();
        let history_back = header.history.map(|history| named.wrapping_sub(history));
        if let Some(back) = history_back {
            if back == 0 || distance + back > MAX_DELTA_DISTANCE {
                return Err(BitError::invalid(
                    "history snapshot",
                    sink.bits_written(),
                    format!("{back} before the base, {distance} back, is not in the ring"),
                ));
            }
        }
        if !(1..=MAX_DELTA_DISTANCE).contains(&distance) {
            return Err(BitError::invalid(
                "delta distance",
                sink.bits_written(),
                format!("{distance} is outside 1..={MAX_DELTA_DISTANCE}"),
            ));
        }
        let Some(&base) = base.filter(|b| b.sequence == named) else {
            return Err(BitError::invalid(
                "snapshot header",
                sink.bits_written(),
                format!("the base named, {named}, was not given"),
            ));
        };
        put_snapshot_kind(sink, MessageKind::Delta)?;
        put_distance(sink, distance - 1)?;
        let frames = header.frame.wrapping_sub(base.frame);
        let skipped = frames
            .wrapping_sub(distance)
            .wrapping_sub(base.delivery.skipped_frames());

        let time_usual = usual_time(&base, frames) == Some(header.server_time);
        let flags_usual = header.flags == base.flags;
        let mask_usual = header.area_mask == base.area_mask;
        let delivery_usual = header.delivery == header.natural_delivery(Some(&base));
        let usual = time_usual
            && flags_usual
            && mask_usual
            && delivery_usual
            && header.via_time.is_none()
            && !header.has_checksum
            && header.history.is_none();
        let steady = skipped == 0 && usual;
        sink.put_decision(steady, STEADY)?;
        if steady {
            return Ok(());
        }
        put_skipped(sink, skipped as i32)?;
        // Not steady with no frames skipped: not as usual, said already.
        if skipped != 0 {
            sink.put_decision(usual, AS_USUAL)?;
            if usual {
                return Ok(());
            }
        }
        // The OSP duel's flags change in a quarter of its deltas, always
        // the rate-delayed bit alone: that costs one bit more than the
        // skipped frames' answer.
        let toggle_only = time_usual
            && mask_usual
            && delivery_usual
            && header.via_time.is_none()
            && !header.has_checksum
            && header.history.is_none()
            && header.flags ^ base.flags == RATE_DELAYED;
        sink.put_bit(toggle_only)?;
        if toggle_only {
            return Ok(());
        }
        sink.put_bit(!time_usual)?;
        if !time_usual {
            put_time(sink, header.server_time, &base)?;
        }
        sink.put_bit(header.via_time.is_some())?;
        if let Some(via) = header.via_time {
            put_time(sink, via, &base)?;
        }
        sink.put_bit(header.has_checksum)?;
        sink.put_bit(!flags_usual)?;
        if !flags_usual {
            let toggled = header.flags ^ base.flags == RATE_DELAYED;
            sink.put_bit(toggled)?;
            if !toggled {
                sink.put_u8(header.flags)?;
            }
        }
        sink.put_bit(!mask_usual)?;
        if !mask_usual {
            put_area_mask(sink, &header.area_mask)?;
        }
        sink.put_bit(!delivery_usual)?;
        if !delivery_usual {
            put_delivery(sink, &header.delivery)?;
        }
        sink.put_decision(history_back.is_some(), HISTORY_NAMED)?;
        if let Some(back) = history_back {
            sink.put_bits(back - 1, HISTORY_BACK_BITS)?;
        }
        Ok(())
    }

    fn read_header(
        &self,
        source: &mut dyn BitSource,
        sequence: u32,
        held: &dyn Bases,
    ) -> Result<SnapshotHeader, ClientError> {
        match get_snapshot_kind(source)? {
            MessageKind::Full => return self.read_full(source, sequence),
            MessageKind::Delta => {}
            other => return Err(ClientError::NotASnapshot(other)),
        }
        let position = source.bits_read();
        let distance = get_distance(source)?.saturating_add(1);
        if distance > MAX_DELTA_DISTANCE {
            return Err(ClientError::invalid(
                "delta distance",
                position,
                format!("{distance} is outside 1..={MAX_DELTA_DISTANCE}"),
            ));
        }
        let named = sequence
            .checked_sub(distance)
            .ok_or(ClientError::BadDeltaDistance { sequence, distance })?;
        let base = held.base(named).ok_or(ClientError::BaseMissing {
            sequence,
            base: named,
        })?;
        let distance = sequence - base.sequence;
        let steady = source.get_decision(STEADY)?;
        let skipped = if steady {
            0
        } else {
            get_skipped(source)? as u32
        };
        let usual = steady || (skipped != 0 && source.get_decision(AS_USUAL)?);
        let frames = skipped
            .wrapping_add(distance)
            .wrapping_add(base.delivery.skipped_frames());
        let frame = base.frame.wrapping_add(frames);
        let mut header = SnapshotHeader {
            sequence,
            frame,
            server_time: 0,
            base: Some(base.sequence),
            flags: base.flags,
            area_mask: base.area_mask,
            has_checksum: false,
            via_time: None,
            delivery: Delivery::FULL,
            history: None,
        };
        let usual_time = usual_time(&base, frames).ok_or_else(|| {
            ClientError::invalid(
                "snapshot header",
                position,
                "the base's frame length is unknown, but the time is not stated",
            )
        });
        let toggle_only = !usual && source.get_bit()?;
        let time = if usual || toggle_only || !source.get_bit()? {
            usual_time?
        } else {
            get_time(source, &base)?
        };
        header.server_time = time;
        header.delivery = header.natural_delivery(Some(&base));
        if usual {
            return Ok(header);
        }
        if toggle_only {
            header.flags = base.flags ^ RATE_DELAYED;
            return Ok(header);
        }
        if source.get_bit()? {
            header.via_time = Some(get_time(source, &base)?);
        }
        header.has_checksum = source.get_bit()?;
        if source.get_bit()? {
            header.flags = if source.get_bit()? {
                base.flags ^ RATE_DELAYED
            } else {
                source.get_u8()?
            };
        }
        if source.get_bit()? {
            header.area_mask = get_area_mask(source)?;
        }
        if source.get_bit()? {
            header.delivery = get_delivery(source)?;
        }
        if source.get_decision(HISTORY_NAMED)? {
            let position = source.bits_read();
            let back = source.get_bits(HISTORY_BACK_BITS)? + 1;
            if distance + back > MAX_DELTA_DISTANCE {
                return Err(ClientError::invalid(
                    "history snapshot",
                    position,
                    format!("{back} before the base, {distance} back, is not in the ring"),
                ));
            }
            header.history = Some(base.sequence.wrapping_sub(back));
        }
        Ok(header)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fields::varcode::exp_golomb_bits;
    use fields::{BitReader, BitWriter};

    #[test]
    fn a_bit_stream_leaves_out_one_last_zero_byte_and_no_other_coding_does() {
        let bits = MessageCoding::Bits;
        assert_eq!(bits.sent_len(&[7, 0]), 1);
        assert_eq!(bits.sent_len(&[7, 0, 0]), 2);
        assert_eq!(bits.sent_len(&[7, 1]), 2);
        assert_eq!(bits.sent_len(&[0]), 1);
        assert_eq!(bits.sent_len(&[]), 0);
        let huffman = MessageCoding::Huffman(HuffmanCode::quake3());
        assert_eq!(huffman.sent_len(&[7, 0]), 2);
        assert_eq!(MessageCoding::Split.sent_len(&[7, 0]), 2);
    }

    /// A base one 50 ms frame after its own base, one message back.
    fn base(sequence: u32) -> BaseInfo {
        BaseInfo {
            sequence,
            frame: 1000 + sequence,
            server_time: 50 * (1000 + sequence),
            flags: 0,
            area_mask: AreaMask::new(&[0xff, 1]).unwrap(),
            delivery: Delivery {
                distance: 1,
                frames: 1,
                elapsed_ms: 50,
            },
        }
    }

    fn next(base: &BaseInfo, distance: u32) -> SnapshotHeader {
        let mut header = SnapshotHeader {
            sequence: base.sequence + distance,
            frame: base.frame + distance,
            server_time: base.server_time + 50 * distance,
            base: Some(base.sequence),
            flags: base.flags,
            area_mask: base.area_mask,
            has_checksum: false,
            via_time: None,
            delivery: Delivery::FULL,
            history: None,
        };
        header.delivery = header.natural_delivery(Some(base));
        header
    }

    /// Writes `header` against `held` (both ends hold the same), reads it
    /// back and returns its size in bits.
    fn round_trip(header: &SnapshotHeader, held: &[BaseInfo]) -> usize {
        let mut buf = [0u8; 64];
        let mut w = BitWriter::new(&mut buf);
        Compact
            .write_header(
                &mut w,
                header,
                BaseList(held)
                    .base(header.base.unwrap_or(u32::MAX))
                    .as_ref(),
            )
            .unwrap();
        let bits = w.bits_written();
        let mut r = BitReader::with_bit_len(&buf, bits);
        let read = Compact
            .read_header(&mut r, header.sequence, &BaseList(held))
            .unwrap();
        assert_eq!(&read, header);
        assert_eq!(r.bits_read(), bits);
        bits
    }

    /// [`round_trip`] through a range-coded message (raw bits in front, the
    /// header's answers range-coded): returns the message's bits.
    fn split_round_trip(header: &SnapshotHeader, held: &[BaseInfo]) -> usize {
        use fields::range::{RangeEncoder, SplitReader, SplitWriter};
        let mut buf = [0u8; 64];
        let mut encoder = RangeEncoder::new();
        let mut w = SplitWriter::new(&mut buf, &mut encoder);
        CompactRange
            .write_header(
                &mut w,
                header,
                BaseList(held)
                    .base(header.base.unwrap_or(u32::MAX))
                    .as_ref(),
            )
            .unwrap();
        let (len, bits) = w.finish().unwrap();
        let mut r = SplitReader::new(&buf[..len]);
        let read = CompactRange
            .read_header(&mut r, header.sequence, &BaseList(held))
            .unwrap();
        assert_eq!(&read, header);
        assert!(r.fits());
        bits
    }

    #[test]
    fn range_coded_headers_read_back_and_a_steady_one_costs_two_bits() {
        let held: Vec<BaseInfo> = (0..40).map(base).collect();
        // A steady delta: five bits raw, under two range-coded (its answers
        // at their chances, 1.6 bits, and the coder's end).
        let steady = next(&held[39], 1);
        assert_eq!(round_trip(&steady, &held[39..]), 5);
        assert!(split_round_trip(&steady, &held[39..]) <= 3);
        // Every distance the ring allows, as usual and not.
        for distance in 1..=MAX_DELTA_DISTANCE {
            let from = &held[(39 - distance) as usize];
            let header = next(from, distance);
            let raw = round_trip(&header, &held);
            let coded = split_round_trip(&header, &held);
            assert!(coded <= raw + 2, "distance {distance}: {coded} > {raw} + 2");
            let toggled = SnapshotHeader {
                flags: RATE_DELAYED,
                ..header
            };
            split_round_trip(&toggled, &held);
        }
        // Skipped frames either way, checksums, other flags, full updates.
        let plain = next(&held[39], 1);
        for skipped in [1i32, -1, 2, 7, -40, 1000] {
            let header = SnapshotHeader {
                frame: plain.frame.wrapping_add_signed(skipped),
                server_time: plain.server_time.wrapping_add_signed(50 * skipped),
                ..plain
            };
            let header = SnapshotHeader {
                delivery: header.natural_delivery(Some(&held[39])),
                ..header
            };
            // The unexpected answer and the exp-Golomb code's other bits.
            let coded = split_round_trip(&header, &held);
            assert!(
                coded > split_round_trip(&plain, &held) + 4,
                "{skipped}: {coded}"
            );
            round_trip(&header, &held);
        }
        split_round_trip(
            &SnapshotHeader {
                has_checksum: true,
                flags: 6,
                ..plain
            },
            &held,
        );
        let full = SnapshotHeader {
            base: None,
            delivery: Delivery::FULL,
            ..plain
        };
        split_round_trip(&full, &held);
        round_trip(&full, &held);
    }

    #[test]
    fn a_messages_kind_reads_without_its_base_in_either_coding() {
        use fields::range::{RangeEncoder, SplitWriter};
        let held = [base(9)];
        let delta = next(&held[0], 1);
        let full = SnapshotHeader {
            base: None,
            delivery: Delivery::FULL,
            ..delta
        };
        for (header, kind) in [(&delta, MessageKind::Delta), (&full, MessageKind::Full)] {
            let base = BaseList(&held).base(9);
            let base = header.base.and(base.as_ref());
            let mut buf = [0u8; 64];
            let mut w = BitWriter::new(&mut buf);
            Compact.write_header(&mut w, header, base).unwrap();
            let len = w.bits_written().div_ceil(8);
            assert_eq!(Compact.snapshot_kind(&buf[..len]).unwrap(), kind);

            let mut buf = [0u8; 64];
            let mut encoder = RangeEncoder::new();
            let mut w = SplitWriter::new(&mut buf, &mut encoder);
            CompactRange.write_header(&mut w, header, base).unwrap();
            let (len, _) = w.finish().unwrap();
            assert_eq!(CompactRange.snapshot_kind(&buf[..len]).unwrap(), kind);
        }
        // A message of another kind is not a snapshot, nor is nothing.
        let mut buf = [0u8; 8];
        let mut w = BitWriter::new(&mut buf);
        MessageKind::Gamestate.write(&mut w).unwrap();
        assert!(Compact.snapshot_kind(&buf[..1]).is_err());
        assert!(Compact.snapshot_kind(&[]).is_err());
    }

    #[test]
    fn a_steady_delta_header_is_five_bits() {
        let held = [base(9)];
        // Kind 2, distance 2, steady 1.
        assert_eq!(round_trip(&next(&held[0], 1), &held), 5);
    }

    #[test]
    fn each_exception_costs_its_flags_and_fields() {
        let held = [base(9)];
        let plain = next(&held[0], 1);
        // The flags' rate-delayed bit toggles, alone: two bits more than
        // a steady header (no frames skipped, and the toggle).
        let toggled = SnapshotHeader {
            flags: RATE_DELAYED,
            ..plain
        };
        assert_eq!(round_trip(&toggled, &held), 6 + 1);
        // Anything else: the toggle bit, 7 exception flags, and the values.
        let other_flags = SnapshotHeader { flags: 6, ..plain };
        assert_eq!(round_trip(&other_flags, &held), 7 + 7 + 1 + 8);
        let checksummed = SnapshotHeader {
            has_checksum: true,
            ..plain
        };
        assert_eq!(round_trip(&checksummed, &held), 7 + 7);
        let both = SnapshotHeader {
            has_checksum: true,
            flags: RATE_DELAYED,
            ..plain
        };
        assert_eq!(round_trip(&both, &held), 7 + 7 + 1);
        // 20 ms late: its 70 ms since the base, zigzagged, at order 5.
        let late = SnapshotHeader {
            server_time: plain.server_time + 20,
            delivery: Delivery {
                elapsed_ms: 70,
                ..plain.delivery
            },
            ..plain
        };
        assert_eq!(
            round_trip(&late, &held),
            7 + 7 + exp_golomb_bits(zigzag(70), TIME_ORDER) as usize
        );
        let masked = SnapshotHeader {
            area_mask: AreaMask::new(&[1, 2, 3]).unwrap(),
            ..plain
        };
        assert_eq!(round_trip(&masked, &held), 7 + 7 + 6 + 24);
        let chained = SnapshotHeader {
            via_time: Some(plain.server_time - 25),
            ..plain
        };
        round_trip(&chained, &held);
        let stated = SnapshotHeader {
            delivery: Delivery {
                distance: 3,
                frames: 5,
                elapsed_ms: 250,
            },
            ..plain
        };
        round_trip(&stated, &held);
        // A history snapshot, 3 before the base: its flag and 5 bits.
        let history = SnapshotHeader {
            history: Some(6),
            ..plain
        };
        assert_eq!(round_trip(&history, &held), 7 + 7 + 5);
        // One outside the ring, or the base itself, is refused.
        let mut buf = [0u8; 64];
        for history in [Some(9), Some(9u32.wrapping_sub(31))] {
            let header = SnapshotHeader { history, ..plain };
            let mut w = BitWriter::new(&mut buf);
            assert!(Compact
                .write_header(&mut w, &header, Some(&held[0]))
                .is_err());
        }
    }

    #[test]
    fn frames_follow_the_bases_delivery() {
        // The OSP duel's pattern: acknowledged four messages late, every
        // second frame of 33 ms.
        let mut b = base(20);
        b.delivery = Delivery {
            distance: 4,
            frames: 8,
            elapsed_ms: 264,
        };
        let header = SnapshotHeader {
            sequence: 24,
            frame: b.frame + 8,
            server_time: b.server_time + 264,
            base: Some(20),
            flags: 0,
            area_mask: b.area_mask,
            has_checksum: false,
            via_time: None,
            delivery: Delivery {
                distance: 4,
                frames: 8,
                elapsed_ms: 264,
            },
            history: None,
        };
        // The distance in 4 bits (exp-Golomb 1 of 3), steady in 1.
        assert_eq!(round_trip(&header, &[b]), 2 + 4 + 1);
        // One message nearer and one frame fewer skipped: not steady, the
        // frames in 3 bits, then as usual.
        let nearer = SnapshotHeader {
            sequence: 23,
            frame: b.frame + 6,
            server_time: b.server_time + 198,
            delivery: Delivery {
                distance: 3,
                frames: 6,
                elapsed_ms: 198,
            },
            ..header
        };
        assert_eq!(round_trip(&nearer, &[b]), 2 + 4 + 1 + 3 + 1);
    }

    #[test]
    fn a_missing_base_is_refused_before_anything_is_decoded_against_it() {
        let held = [base(10), base(11)];
        let header = next(&held[0], 2);
        let mut buf = [0u8; 16];
        let mut w = BitWriter::new(&mut buf);
        Compact
            .write_header(&mut w, &header, Some(&held[0]))
            .unwrap();
        let bits = w.bits_written();
        let mut r = BitReader::with_bit_len(&buf, bits);
        assert_eq!(
            Compact.read_header(&mut r, 12, &BaseList(&[held[1]])),
            Err(ClientError::BaseMissing {
                sequence: 12,
                base: 10
            })
        );
        // A distance past the ring, or before sequence 0, is malformed.
        for (sequence, distance) in [(100, 32), (3, 5)] {
            let mut buf = [0u8; 16];
            let mut w = BitWriter::new(&mut buf);
            MessageKind::Delta.write(&mut w).unwrap();
            put_exp_golomb(&mut w, distance - 1, DISTANCE_ORDER).unwrap();
            let bits = w.bits_written();
            let mut r = BitReader::with_bit_len(&buf, bits);
            let error = Compact
                .read_header(&mut r, sequence, &BaseList(&held))
                .unwrap_err();
            assert!(
                matches!(
                    error,
                    ClientError::Malformed(_) | ClientError::BadDeltaDistance { .. }
                ),
                "{error}"
            );
        }
    }

    #[test]
    fn full_updates_round_trip_with_a_stated_delivery() {
        let header = SnapshotHeader {
            sequence: 77,
            frame: 5,
            server_time: 250,
            base: None,
            flags: 4,
            area_mask: AreaMask::new(&[9; 32]).unwrap(),
            has_checksum: true,
            via_time: None,
            delivery: Delivery::FULL,
            history: None,
        };
        assert_eq!(round_trip(&header, &[]), 2 + 64 + 8 + 6 + 256 + 2);
        let stated = SnapshotHeader {
            delivery: Delivery {
                distance: 2,
                frames: 2,
                elapsed_ms: 100,
            },
            ..header
        };
        round_trip(&stated, &[]);
        let chained = SnapshotHeader {
            via_time: Some(1),
            ..header
        };
        let mut buf = [0u8; 64];
        assert!(Compact
            .write_header(&mut BitWriter::new(&mut buf), &chained, None)
            .is_err());
    }

    proptest::proptest! {
        /// Any delta header reads back against any held set that holds
        /// its base, whatever the deliveries; a cut one is an error.
        #[test]
        fn any_header_round_trips(
            sequence in 40u32..100_000,
            deliveries in proptest::collection::vec((0u32..=31, 0u32..100, 0u32..5000), 31),
            pick in 0usize..31,
            frames in 0u32..200,
            time in proptest::prelude::any::<u32>(),
            flags in proptest::prelude::any::<u8>(),
            extras in proptest::prelude::any::<(bool, bool, bool)>(),
        ) {
            let held: Vec<BaseInfo> = deliveries
                .iter()
                .enumerate()
                .map(|(i, &(distance, frames, elapsed_ms))| BaseInfo {
                    sequence: sequence - 31 + i as u32,
                    frame: 10 * i as u32,
                    server_time: 333 * i as u32,
                    flags: i as u8,
                    area_mask: AreaMask::new(&[i as u8; 3][..i % 4]).unwrap(),
                    delivery: Delivery { distance, frames, elapsed_ms },
                })
                .collect();
            let b = held[pick];
            let mut header = SnapshotHeader {
                sequence,
                frame: b.frame + frames,
                server_time: time,
                base: Some(b.sequence),
                flags,
                area_mask: if extras.0 { b.area_mask } else { AreaMask::new(&[7]).unwrap() },
                has_checksum: extras.1,
                via_time: extras.2.then_some(time / 2),
                delivery: Delivery::FULL,
                history: None,
            };
            header.delivery = header.natural_delivery(Some(&b));
            let mut buf = [0u8; 128];
            let mut w = BitWriter::new(&mut buf);
            Compact.write_header(&mut w, &header, Some(&b)).unwrap();
            let bits = w.bits_written();
            let mut r = BitReader::with_bit_len(&buf, bits);
            proptest::prop_assert_eq!(Compact.read_header(&mut r, sequence, &BaseList(&held)), Ok(header));
            for cut in [2, bits / 2, bits - 1] {
                let mut r = BitReader::with_bit_len(&buf, cut);
                proptest::prop_assert!(Compact.read_header(&mut r, sequence, &BaseList(&held)).is_err());
            }
        }
    }
}
