//! The session's wire messages, on top of netchan's delivery classes.
//!
//! | direction | netchan class | message |
//! | --- | --- | --- |
//! | server → client | guaranteed ordered | [`ServerMessage`]: gamestate (with its epoch and the client's player slot), configstring change, game command |
//! | client → server | guaranteed ordered | [`ClientMessage`]: hello, begin, full-update request, game command |
//! | server → client | most-recent state | a snapshot: `[epoch u8][snapshot message]` ([`SnapshotPayload`]) |
//! | client → server | most-recent state | a command packet ([`CommandPacket`]) |
//!
//! The epoch numbers gamestates: it changes with every map change or
//! restart, so a snapshot built for the old map that arrives after the new
//! gamestate is recognised and dropped, never decoded against the new map.
//!
//! Command packets are Quake 3's `clc_move`: several commands per datagram,
//! the first delta-coded against a zeroed command and each next one against
//! the one before it (the game's [`net_struct!`](crate::net_struct) type, through its codec).
//! The client repeats every command until netchan reports a packet carrying
//! it delivered, so a lost datagram loses no command; the server executes
//! commands by number, each exactly once and in order. Each command may
//! carry what the client was drawing when it made it (a
//! [`ViewStamp`]: the two snapshots and the render time, Quake 3's
//! `serverTime` made exact), which lag compensation rewinds to.
//!
//! Every decoder returns a [`WireError`] on bad input and never allocates
//! more than a fixed bound.

use fields::varcode::{get_exp_golomb, put_exp_golomb, unzigzag, zigzag};
use fields::{BitReader, BitSink, BitSource, BitWriter, Codec, NetFields};
use snapshot::config::RING_SIZE;
use snapshot::interp::{ViewStamp, MAX_VIEW_OFFSET_MS};

/// Most commands in one packet.
pub const MAX_COMMANDS_PER_PACKET: usize = 64;
/// Largest command packet, bytes (keeps it in one datagram).
pub const MAX_COMMAND_PACKET: usize = 1024;
/// Commands the server keeps after executing them, so a packet may be
/// delta-coded against one the client knows delivered. A client bases a
/// packet only while fewer commands than this wait for acknowledgement,
/// which keeps its base among the server's kept ones.
pub const COMMAND_HISTORY: usize = 256;
/// Longest player name in a hello, bytes.
pub const MAX_NAME: usize = 32;

/// What was wrong with a session message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The message ended before its fixed part.
    #[error("message truncated: {len} bytes, need {needed}")]
    Truncated {
        /// Bytes needed.
        needed: usize,
        /// Bytes present.
        len: usize,
    },
    /// An unknown message tag.
    #[error("unknown message tag {0}")]
    UnknownTag(u8),
    /// A name that is not UTF-8 or is too long.
    #[error("name is not UTF-8 or longer than {MAX_NAME} bytes")]
    BadName,
    /// A command packet announced no commands or more than allowed.
    #[error("command packet with {0} commands (1..={MAX_COMMANDS_PER_PACKET} allowed)")]
    BadCount(usize),
    /// A command packet's first command number is 0 or the numbers overflow.
    #[error("command numbers {first}.. (+{count}) out of range")]
    BadNumber {
        /// The first number.
        first: u32,
        /// Commands in the packet.
        count: usize,
    },
    /// A command packet is based on a command the receiver does not hold.
    #[error("command packet based on command {0}, which is not held")]
    MissingBase(u32),
    /// A command packet is larger than [`MAX_COMMAND_PACKET`].
    #[error("command packet of {0} bytes (at most {MAX_COMMAND_PACKET})")]
    TooLarge(usize),
    /// A command's view stamp is out of range or refers to no earlier view.
    #[error("bad view stamp: {0}")]
    BadView(&'static str),
    /// The bit stream of a command packet was malformed.
    #[error("command packet: {0}")]
    Bits(#[from] fields::BitError),
}

const TAG_GAMESTATE: u8 = 1;
const TAG_CONFIGSTRING: u8 = 2;
const TAG_SERVER_GAME: u8 = 3;

const TAG_HELLO: u8 = 16;
const TAG_BEGIN: u8 = 17;
const TAG_FULL_UPDATE: u8 = 18;
const TAG_CLIENT_GAME: u8 = 19;

/// A guaranteed-ordered message from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerMessage<'a> {
    /// A new gamestate (on connect, map change, restart), its epoch, and
    /// the receiving client's player slot.
    Gamestate {
        /// Epoch of every snapshot built against it.
        epoch: u8,
        /// The client's player slot on the server (its
        /// [`ClientKey::slot`](crate::ClientKey::slot)): how a client learns
        /// which player, and by the game's convention which entity, it is.
        slot: u16,
        /// The snapshot layer's gamestate message.
        bytes: &'a [u8],
    },
    /// The snapshot layer's configstring-change message.
    Configstring(&'a [u8]),
    /// A game command (chat, events…), opaque to the session.
    Game(&'a [u8]),
}

impl<'a> ServerMessage<'a> {
    /// Encodes the message into `out` (cleared first).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        match *self {
            ServerMessage::Gamestate { epoch, slot, bytes } => {
                out.extend_from_slice(&[TAG_GAMESTATE, epoch]);
                out.extend_from_slice(&slot.to_le_bytes());
                out.extend_from_slice(bytes);
            }
            ServerMessage::Configstring(bytes) => {
                out.push(TAG_CONFIGSTRING);
                out.extend_from_slice(bytes);
            }
            ServerMessage::Game(bytes) => {
                out.push(TAG_SERVER_GAME);
                out.extend_from_slice(bytes);
            }
        }
    }

    /// Decodes a message.
    pub fn decode(bytes: &'a [u8]) -> Result<ServerMessage<'a>, WireError> {
        let (&tag, body) = bytes
            .split_first()
            .ok_or(WireError::Truncated { needed: 1, len: 0 })?;
        Ok(match tag {
            TAG_GAMESTATE => {
                let [epoch, slot_lo, slot_hi, ..] = *body else {
                    return Err(WireError::Truncated {
                        needed: 4,
                        len: bytes.len(),
                    });
                };
                ServerMessage::Gamestate {
                    epoch,
                    slot: u16::from_le_bytes([slot_lo, slot_hi]),
                    bytes: &body[3..],
                }
            }
            TAG_CONFIGSTRING => ServerMessage::Configstring(body),
            TAG_SERVER_GAME => ServerMessage::Game(body),
            other => return Err(WireError::UnknownTag(other)),
        })
    }
}

/// A guaranteed-ordered message from a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientMessage<'a> {
    /// Sent first: who the client is and the snapshot stream it wants
    /// (Quake 3's userinfo `name`, `snaps`, `rate`).
    Hello {
        /// Snapshots per second wanted.
        snaps: u16,
        /// Bytes per second the client can receive.
        rate: u32,
        /// Player name.
        name: &'a str,
    },
    /// The client holds the gamestate of `epoch`: start its snapshots
    /// (Quake 3's `begin`).
    Begin {
        /// The gamestate's epoch.
        epoch: u8,
    },
    /// The client's snapshots of `epoch` are unusable: send a full update.
    FullUpdate {
        /// The gamestate's epoch.
        epoch: u8,
    },
    /// A game command (chat…), opaque to the session.
    Game(&'a [u8]),
}

impl<'a> ClientMessage<'a> {
    /// Encodes the message into `out` (cleared first); a name is clipped
    /// to [`MAX_NAME`] bytes on a character boundary.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        match *self {
            ClientMessage::Hello { snaps, rate, name } => {
                out.push(TAG_HELLO);
                out.extend_from_slice(&snaps.to_le_bytes());
                out.extend_from_slice(&rate.to_le_bytes());
                out.extend_from_slice(clip(name, MAX_NAME).as_bytes());
            }
            ClientMessage::Begin { epoch } => out.extend_from_slice(&[TAG_BEGIN, epoch]),
            ClientMessage::FullUpdate { epoch } => out.extend_from_slice(&[TAG_FULL_UPDATE, epoch]),
            ClientMessage::Game(bytes) => {
                out.push(TAG_CLIENT_GAME);
                out.extend_from_slice(bytes);
            }
        }
    }

    /// Decodes a message.
    pub fn decode(bytes: &'a [u8]) -> Result<ClientMessage<'a>, WireError> {
        let (&tag, body) = bytes
            .split_first()
            .ok_or(WireError::Truncated { needed: 1, len: 0 })?;
        let need = |n: usize| {
            if body.len() < n {
                Err(WireError::Truncated {
                    needed: n + 1,
                    len: bytes.len(),
                })
            } else {
                Ok(())
            }
        };
        Ok(match tag {
            TAG_HELLO => {
                need(6)?;
                let name = &body[6..];
                if name.len() > MAX_NAME {
                    return Err(WireError::BadName);
                }
                ClientMessage::Hello {
                    snaps: u16::from_le_bytes([body[0], body[1]]),
                    rate: u32::from_le_bytes([body[2], body[3], body[4], body[5]]),
                    name: std::str::from_utf8(name).map_err(|_| WireError::BadName)?,
                }
            }
            TAG_BEGIN => {
                need(1)?;
                ClientMessage::Begin { epoch: body[0] }
            }
            TAG_FULL_UPDATE => {
                need(1)?;
                ClientMessage::FullUpdate { epoch: body[0] }
            }
            TAG_CLIENT_GAME => ClientMessage::Game(body),
            other => return Err(WireError::UnknownTag(other)),
        })
    }
}

/// Cuts `text` to at most `max` bytes on a character boundary.
pub fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A snapshot as the state payload: the epoch of the gamestate it was
/// built against, then the snapshot layer's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotPayload<'a> {
    /// The gamestate epoch.
    pub epoch: u8,
    /// The snapshot message.
    pub bytes: &'a [u8],
}

impl<'a> SnapshotPayload<'a> {
    /// Writes `[epoch][bytes]` into `out` (cleared first).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        out.push(self.epoch);
        out.extend_from_slice(self.bytes);
    }

    /// Splits a payload.
    pub fn decode(bytes: &'a [u8]) -> Result<SnapshotPayload<'a>, WireError> {
        let (&epoch, bytes) = bytes
            .split_first()
            .ok_or(WireError::Truncated { needed: 1, len: 0 })?;
        Ok(SnapshotPayload { epoch, bytes })
    }
}

/// Quake 3's `clc_move`: consecutive commands `first, first + 1, …`, each
/// delta-coded against the one before, each with an optional [`ViewStamp`].
/// The first is delta-coded against command `first − 1` when the client
/// knows the server holds it (a packet carrying it was reported delivered:
/// the *based* flag), else against a zeroed command as in Quake 3.
///
/// Layout (bits, LSB first): `first` (32), `count − 1` (6), based (1),
/// viewed (1), then each command as a [`Codec::write_delta`], followed —
/// in a viewed packet — by its view:
///
/// * has a view (1); if so, the same snapshots as the previous view in the
///   packet (1), and unless so: for the packet's first view the low 8 bits
///   of the newest snapshot's sequence (the server resolves them against
///   the 32 it still holds), for a later one the difference to the previous
///   view's (zigzag, exp-Golomb order 0), then the distance back to the
///   previous snapshot, xor 1 (exp-Golomb order 0: one bit for the usual 1);
/// * the render offset from the newest snapshot's time, less the previous
///   view's offset in the packet (zigzag, exp-Golomb order 3).
///
/// The packet's first view costs about 22 bits, each next one with the same
/// snapshots about 10.
#[derive(Debug)]
pub struct CommandPacket;

/// The view coding's state within one packet: the previous view.
#[derive(Debug, Default)]
struct ViewChain {
    previous: Option<ViewStamp>,
}

/// Bits of the first view's newest-snapshot sequence (all a stamp has).
const VIEW_SEQUENCE_BITS: u32 = snapshot::interp::STAMP_SEQUENCE_BITS;

impl ViewChain {
    fn write(
        &mut self,
        w: &mut BitWriter<'_>,
        view: Option<&ViewStamp>,
    ) -> Result<(), fields::BitError> {
        let Some(view) = view else {
            return w.put_bit(false);
        };
        w.put_bit(true)?;
        let same = self
            .previous
            .is_some_and(|p| p.newest == view.newest && p.previous_back == view.previous_back);
        w.put_bit(same)?;
        if !same {
            match self.previous {
                None => w.put_bits(view.newest as u32, VIEW_SEQUENCE_BITS)?,
                Some(p) => {
                    let delta = view.newest.wrapping_sub(p.newest) as i8;
                    put_exp_golomb(w, zigzag(delta as i32), 0)?;
                }
            }
            // Usually 1 (the snapshot before): one bit.
            let back = view.previous_back.min(RING_SIZE as u8 - 1);
            put_exp_golomb(w, (back ^ 1) as u32, 0)?;
        }
        let offset = view
            .offset_ms
            .clamp(-MAX_VIEW_OFFSET_MS, MAX_VIEW_OFFSET_MS);
        // Within a packet, the render time moves on by a frame or so.
        let predicted = self.previous.map_or(0, |p| p.offset_ms);
        put_exp_golomb(w, zigzag(offset.wrapping_sub(predicted)), 3)?;
        self.previous = Some(ViewStamp {
            offset_ms: offset,
            previous_back: view.previous_back.min(RING_SIZE as u8 - 1),
            newest: view.newest,
        });
        Ok(())
    }

    fn read(&mut self, r: &mut BitReader<'_>) -> Result<Option<ViewStamp>, WireError> {
        if !r.get_bit()? {
            return Ok(None);
        }
        let same = r.get_bit()?;
        let (newest, previous_back) = if same {
            let p = self
                .previous
                .ok_or(WireError::BadView("the same snapshots as no earlier view"))?;
            (p.newest, p.previous_back)
        } else {
            let newest = match self.previous {
                None => r.get_bits(VIEW_SEQUENCE_BITS)? as u8,
                Some(p) => {
                    let delta = unzigzag(get_exp_golomb(r, 0)?);
                    let delta = i8::try_from(delta)
                        .map_err(|_| WireError::BadView("snapshot difference out of range"))?;
                    p.newest.wrapping_add(delta as u8)
                }
            };
            let back = get_exp_golomb(r, 0)? ^ 1;
            if back >= RING_SIZE as u32 {
                return Err(WireError::BadView("previous snapshot beyond the ring"));
            }
            (newest, back as u8)
        };
        let predicted = self.previous.map_or(0, |p| p.offset_ms) as i64;
        let offset_ms = predicted + unzigzag(get_exp_golomb(r, 3)?) as i64;
        if !(-(MAX_VIEW_OFFSET_MS as i64)..=MAX_VIEW_OFFSET_MS as i64).contains(&offset_ms) {
            return Err(WireError::BadView("render offset out of range"));
        }
        let view = ViewStamp {
            newest,
            previous_back,
            offset_ms: offset_ms as i32,
        };
        self.previous = Some(view);
        Ok(Some(view))
    }
}

impl CommandPacket {
    /// Writes as many of `commands` (numbered from `first`) as fit in
    /// `buf` (at most [`MAX_COMMANDS_PER_PACKET`]), the first against a
    /// zeroed command, and returns the bytes used and the commands written.
    /// Writes nothing when not even one fits.
    pub fn encode<'c, C: NetFields + 'c>(
        codec: Codec,
        first: u32,
        commands: impl IntoIterator<Item = &'c C>,
        buf: &mut [u8],
    ) -> Result<(usize, usize), WireError> {
        Self::encode_from(codec, first, None, commands, buf)
    }

    /// [`Self::encode`] with the first command delta-coded against `base`,
    /// which must be command `first − 1` and held by the receiver.
    pub fn encode_from<'c, C: NetFields + 'c>(
        codec: Codec,
        first: u32,
        base: Option<&C>,
        commands: impl IntoIterator<Item = &'c C>,
        buf: &mut [u8],
    ) -> Result<(usize, usize), WireError> {
        Self::encode_inner(
            codec,
            first,
            base,
            false,
            commands.into_iter().map(|c| (c, None)),
            buf,
        )
    }

    /// [`Self::encode_from`] for commands with the views they were made
    /// from (a viewed packet).
    pub fn encode_viewed<'c, C: NetFields + 'c>(
        codec: Codec,
        first: u32,
        base: Option<&C>,
        commands: impl IntoIterator<Item = (&'c C, Option<&'c ViewStamp>)>,
        buf: &mut [u8],
    ) -> Result<(usize, usize), WireError> {
        Self::encode_inner(codec, first, base, true, commands, buf)
    }

    fn encode_inner<'c, C: NetFields + 'c>(
        codec: Codec,
        first: u32,
        base: Option<&C>,
        viewed: bool,
        commands: impl IntoIterator<Item = (&'c C, Option<&'c ViewStamp>)>,
        buf: &mut [u8],
    ) -> Result<(usize, usize), WireError> {
        let limit = buf.len().min(MAX_COMMAND_PACKET);
        let zero = C::default();
        let mut count = 0usize;
        let mut end_bits = 0usize;
        {
            let mut writer = BitWriter::new(&mut buf[..limit]);
            if writer.put_bits(first, 32).is_err()
                || writer.put_bits(0, 6).is_err()
                || writer.put_bit(base.is_some()).is_err()
                || writer.put_bit(viewed).is_err()
            {
                return Ok((0, 0));
            }
            let mut previous = base.unwrap_or(&zero);
            let mut views = ViewChain::default();
            for (command, view) in commands.into_iter().take(MAX_COMMANDS_PER_PACKET) {
                if first.checked_add(count as u32).is_none() {
                    break;
                }
                let written = codec
                    .write_delta(&mut writer, previous, command)
                    .and_then(|()| {
                        if viewed {
                            views.write(&mut writer, view)
                        } else {
                            Ok(())
                        }
                    });
                match written {
                    Ok(()) => {
                        count += 1;
                        end_bits = writer.bits_written();
                        previous = command;
                    }
                    Err(fields::BitError::Overflow { .. }) => break,
                    Err(e) => return Err(e.into()),
                }
            }
        }
        if count == 0 {
            return Ok((0, 0));
        }
        if first == 0 || (base.is_some() && first == 1) {
            return Err(WireError::BadNumber { first, count });
        }
        // The count sits in bits 0..6 of byte 4 (LSB first); it is patched
        // in once known, and bits of a command that did not fit are cleared.
        buf[4] = (buf[4] & !0x3f) | (count - 1) as u8;
        let used = end_bits.div_ceil(8);
        if end_bits % 8 != 0 {
            buf[used - 1] &= (1u8 << (end_bits % 8)) - 1;
        }
        Ok((used, count))
    }

    /// Decodes a packet into `out` (cleared first) as `(number, command)`
    /// pairs, dropping any views; a based packet is an error
    /// ([`WireError::MissingBase`]).
    pub fn decode<C: NetFields>(
        codec: Codec,
        bytes: &[u8],
        out: &mut Vec<(u32, C)>,
    ) -> Result<(), WireError> {
        Self::decode_with(codec, bytes, |_| None, out).map(|_| ())
    }

    /// [`Self::decode`], looking the base of a based packet up with `base`
    /// (called with its number, `first − 1`). Returns whether the packet was
    /// based.
    pub fn decode_with<C: NetFields>(
        codec: Codec,
        bytes: &[u8],
        base: impl FnOnce(u32) -> Option<C>,
        out: &mut Vec<(u32, C)>,
    ) -> Result<bool, WireError> {
        out.clear();
        Self::decode_inner(codec, bytes, base, |number, command, _| {
            out.push((number, command))
        })
    }

    /// [`Self::decode_with`] keeping each command's view (`None` in a
    /// packet without views, or for a command made before the client drew
    /// anything).
    pub fn decode_viewed<C: NetFields>(
        codec: Codec,
        bytes: &[u8],
        base: impl FnOnce(u32) -> Option<C>,
        out: &mut Vec<(u32, C, Option<ViewStamp>)>,
    ) -> Result<bool, WireError> {
        out.clear();
        Self::decode_inner(codec, bytes, base, |number, command, view| {
            out.push((number, command, view))
        })
    }

    fn decode_inner<C: NetFields>(
        codec: Codec,
        bytes: &[u8],
        base: impl FnOnce(u32) -> Option<C>,
        mut sink: impl FnMut(u32, C, Option<ViewStamp>),
    ) -> Result<bool, WireError> {
        if bytes.len() > MAX_COMMAND_PACKET {
            return Err(WireError::TooLarge(bytes.len()));
        }
        let mut reader = BitReader::new(bytes);
        let first = reader.get_bits(32)?;
        let count = reader.get_bits(6)? as usize + 1;
        let based = reader.get_bit()?;
        let viewed = reader.get_bit()?;
        if first == 0 || first.checked_add(count as u32 - 1).is_none() || (based && first == 1) {
            return Err(WireError::BadNumber { first, count });
        }
        let mut command = if based {
            base(first - 1).ok_or(WireError::MissingBase(first - 1))?
        } else {
            C::default()
        };
        let mut views = ViewChain::default();
        for i in 0..count {
            codec.read_delta(&mut reader, &mut command)?;
            let view = if viewed {
                views.read(&mut reader)?
            } else {
                None
            };
            sink(first + i as u32, command.clone(), view);
        }
        Ok(based)
    }
}
