//! One snapshot message, written and read in either wire format, with an
//! account of where its bits went.
//!
//! A message is a header, the player-state delta, the entity list (the
//! sorted merge of base and snapshot: changed entities as deltas from the
//! client's copy, new ones from their spawn baseline, removals, unchanged
//! ones skipped) and the list's end marker. Two formats:
//!
//! * [`MessageFormat::Q3`] — Quake 3's `svc_snapshot` command exactly: the
//!   command byte, 32-bit server time, delta byte, flags byte, area-mask
//!   length byte and bytes, then the q3 codec, all through Quake 3's Huffman
//!   code in bitstream mode. On a real demo this is bit for bit what
//!   [`q3::reencode::write_snapshot`] writes (a test checks it, and
//!   the report checks it on every snapshot).
//! * [`MessageFormat::NATIVE`] — the native codec as raw bits (it codes
//!   its symbols with trained Huffman codes already, so a second entropy
//!   coder would only cost time), behind the compact header described at
//!   [`write_compact_header`]. It carries the same information as Quake 3's.

use fields::codec::{anchor_of, Held};
use fields::merge::{read_entity_list, ListError};
use fields::range::{RangeReader, RangeWriter};
use fields::varcode::{get_exp_golomb, put_exp_golomb, unzigzag, zigzag};
use fields::{
    BitError, BitReader, BitSink, BitSource, BitWriter, Codec, DeltaContext, EntityUpdate, Fields,
    HuffmanCode, HuffmanReader, HuffmanWriter,
};

use crate::deltas::{delta_context, player_context};
use crate::encode::Breakdown;
use crate::state::{merge, Baselines, Change, Delivery, State, Step, Zeros};

/// Quake 3's `svc_snapshot` command byte (the q3 crate's).
pub const SVC_SNAPSHOT: u8 = q3::svc::SNAPSHOT;

/// Bits of the compact header's message-kind tag (as in the snapshot crate's messages).
pub const COMPACT_KIND_BITS: u32 = 2;

/// Exp-Golomb order of the compact header's elapsed time when it is not a
/// whole number of server frames (50 ms then costs 10 bits).
const ELAPSED_ORDER: u32 = 5;

/// Bits of the compact header's area-mask length (0 to 32 bytes).
const AREAMASK_LEN_BITS: u32 = 6;

/// The snapshot flag a server sets when the client's rate held the
/// snapshot back (Quake 3's `SNAPFLAG_RATE_DELAYED`).
const RATE_DELAYED: u8 = 1;

/// Longest area mask, in bytes (Quake 3's `MAX_MAP_AREA_BYTES`).
pub const MAX_AREAMASK: usize = 32;

/// How a message's header is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderStyle {
    /// Quake 3's `svc_snapshot` header.
    Quake3,
    /// The compact header of [`write_compact_header`].
    Compact,
}

/// A complete wire format for snapshot messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageFormat {
    /// The field codec of the player state and the entities.
    pub codec: Codec,
    /// The header.
    pub header: HeaderStyle,
    /// Whether the whole message goes through Quake 3's Huffman code in
    /// bitstream mode.
    pub huffman: bool,
    /// Whether the whole message is range-coded
    /// ([`fields::range::RangeWriter`]): the native codec's symbols by
    /// their model's frequencies instead of Huffman code words.
    pub range: bool,
}

impl MessageFormat {
    /// Quake 3's `svc_snapshot`, Huffman-coded.
    pub const Q3: MessageFormat = MessageFormat {
        codec: Codec::Q3,
        header: HeaderStyle::Quake3,
        huffman: true,
        range: false,
    };

    /// The native codec behind the compact header, raw bits.
    pub const NATIVE: MessageFormat = MessageFormat {
        codec: Codec::Native,
        header: HeaderStyle::Compact,
        huffman: false,
        range: false,
    };

    /// [`MessageFormat::NATIVE`], range-coded.
    pub const NATIVE_RANGE: MessageFormat = MessageFormat {
        codec: Codec::Native,
        header: HeaderStyle::Compact,
        huffman: false,
        range: true,
    };

    /// Largest entity number (exclusive) the format can carry.
    pub fn entity_limit(&self) -> u32 {
        self.codec
            .entity_number_limit()
            .unwrap_or(snapshot::config::MAX_ENTITY_LIMIT)
    }

    /// Writes a step's message into `buf` from its start and returns its
    /// size in bits, filling `breakdown`.
    pub fn encode<E: Fields, P: Fields>(
        &self,
        buf: &mut [u8],
        step: &Step<'_, E, P>,
        zeros: &Zeros<E, P>,
        breakdown: &mut Breakdown,
    ) -> Result<usize, BitError> {
        if self.range {
            let mut sink = RangeWriter::new();
            write_message(self, &mut sink, step, zeros, breakdown)?;
            let (bytes, bits) = sink.finish();
            let capacity = 8 * buf.len();
            let out = buf.get_mut(..bytes.len()).ok_or(BitError::Overflow {
                position: 0,
                requested: (8 * bytes.len()).min(u32::MAX as usize) as u32,
                capacity,
            })?;
            out.copy_from_slice(bytes);
            return Ok(bits);
        }
        let mut writer = BitWriter::new(buf);
        if self.huffman {
            let mut sink = HuffmanWriter::new(&mut writer, HuffmanCode::quake3());
            write_message(self, &mut sink, step, zeros, breakdown)?;
            Ok(sink.bits_written())
        } else {
            write_message(self, &mut writer, step, zeros, breakdown)?;
            Ok(writer.bits_written())
        }
    }

    /// Reads a message of `bits` bits written by [`MessageFormat::encode`]
    /// against the same base, frame length and baselines.
    pub fn decode<E: Fields, P: Fields>(
        &self,
        buf: &[u8],
        bits: usize,
        base: Option<&State<E, P>>,
        frame_ms: u32,
        baselines: &dyn Baselines<E>,
        zeros: &Zeros<E, P>,
    ) -> Result<State<E, P>, BitError> {
        if self.range {
            let bytes = buf.get(..bits.div_ceil(8)).unwrap_or(buf);
            let mut source = RangeReader::new(bytes);
            return read_message(self, &mut source, base, frame_ms, baselines, zeros);
        }
        let reader = BitReader::with_bit_len(buf, bits);
        if self.huffman {
            let mut source = HuffmanReader::new(reader, HuffmanCode::quake3());
            read_message(self, &mut source, base, frame_ms, baselines, zeros)
        } else {
            let mut source = reader;
            read_message(self, &mut source, base, frame_ms, baselines, zeros)
        }
    }
}

/// Writes a whole message through `sink`, filling `breakdown`.
pub fn write_message<E: Fields, P: Fields, S: BitSink + ?Sized>(
    format: &MessageFormat,
    sink: &mut S,
    step: &Step<'_, E, P>,
    zeros: &Zeros<E, P>,
    breakdown: &mut Breakdown,
) -> Result<(), BitError> {
    breakdown.clear();
    let snapshot = &**step.snapshot;
    let base = step.base.map(|b| &**b);
    let context = delta_context(snapshot, base);
    let start = sink.bits_written();
    match format.header {
        HeaderStyle::Quake3 => write_quake3_header(sink, snapshot, step.delta_num)?,
        HeaderStyle::Compact => {
            write_compact_header(sink, snapshot, base, step.delta_num, step.frame_ms)?
        }
    }
    let mark = sink.bits_written();
    breakdown.header_bits = mark - start;
    let base_player = base.map_or(&zeros.player, |b| &b.player);
    format.codec.write_delta_in(
        &player_context(&context, base.is_none()),
        sink,
        base_player,
        &snapshot.player,
    )?;
    breakdown.player_bits = sink.bits_written() - mark;

    let old = base.map_or(&[][..], |b| &b.entities[..]);
    let mut last = None;
    for change in merge(old, &snapshot.entities) {
        let number = change.number();
        let update = match change {
            Change::Unchanged { .. } => continue,
            Change::Removed { .. } => EntityUpdate::Removed {
                old: &zeros.entity,
                held: Held(&old),
            },
            Change::Changed { old, new, .. } => EntityUpdate::Delta {
                base: old,
                new,
                force: false,
            },
            Change::Added { number, new } => EntityUpdate::Delta {
                base: step.baselines.baseline(number).unwrap_or(&zeros.entity),
                new,
                force: true,
            },
        };
        let before = sink.bits_written();
        let spawn = matches!(update, EntityUpdate::Delta { force: true, .. });
        let written =
            format
                .codec
                .write_entity_in(&context.with_spawn(spawn), sink, last, number, update)?;
        let bits = sink.bits_written() - before;
        if written {
            last = Some(number);
        }
        match change {
            Change::Changed { .. } => {
                breakdown.changed += 1;
                breakdown.updates.push(bits as u32);
            }
            Change::Added { .. } => {
                breakdown.added += 1;
                breakdown.updates.push(bits as u32);
            }
            Change::Removed { .. } => {
                breakdown.removed += 1;
                breakdown.removal_bits += bits;
            }
            Change::Unchanged { .. } => {}
        }
    }
    let before = sink.bits_written();
    format.codec.write_entities_end(sink, last, &zeros.entity)?;
    breakdown.end_bits = sink.bits_written() - before;
    Ok(())
}

/// Quake 3's `svc_snapshot` header, as `SV_WriteSnapshotToClient` writes it.
fn write_quake3_header<E, P, S: BitSink + ?Sized>(
    sink: &mut S,
    snapshot: &State<E, P>,
    delta_num: u8,
) -> Result<(), BitError> {
    let areamask_len = areamask_len(sink, snapshot)?;
    sink.put_u8(SVC_SNAPSHOT)?;
    sink.put_bits(snapshot.server_time as u32, 32)?;
    sink.put_u8(delta_num)?;
    sink.put_u8(snapshot.flags)?;
    sink.put_u8(areamask_len as u8)?;
    sink.put_bytes(&snapshot.areamask)
}

fn areamask_len<E, P, S: BitSink + ?Sized>(
    sink: &S,
    snapshot: &State<E, P>,
) -> Result<usize, BitError> {
    let len = snapshot.areamask.len();
    if len > MAX_AREAMASK {
        return Err(BitError::invalid(
            "area mask",
            sink.bits_written(),
            format!("{len} bytes exceed {MAX_AREAMASK}"),
        ));
    }
    Ok(len)
}

/// The compact header: the same facts as Quake 3's, each coded against what
/// the client already holds with the base (and only the base, so a lost
/// message never breaks it): its state and its [`Delivery`], the distance
/// and elapsed time of the message that brought it.
///
/// | part | bits |
/// | --- | --- |
/// | message kind (as the snapshot crate's messages) | 2 |
/// | delta distance `d` (0 = full snapshot), less the base's own distance `b` (0 without a base) | exp-Golomb order 0 of zigzag(`d` − `b`) (1 bit when the client acknowledges as it did for the base) |
/// | full: server time | 32 |
/// | delta, frame length `f` > 1: frames since the base, less `d`, less the frames the base's message skipped the same way; 0 frames (time not a whole number of frames, or no time passed) escapes to zigzag(time − base time) | exp-Golomb order 0 (1 bit when the server skips frames for this client as it did for the base); the escape adds order 5 |
/// | delta, `f` ≤ 1: zigzag(time − base time) | exp-Golomb order 5 (10 bits for 50 ms) |
/// | flags and area mask as the base's (0 and empty for full)? | 1 |
/// | if not: flags changed? then: only the rate-delayed flag toggled? if not, 8 bits; area mask changed? then length and bytes | 1 (+1, +8), 1 (+6 + 8 × length) |
///
/// `f` is the server's frame length ([`Step::frame_ms`]): its clock moves
/// in whole frames, so the time since the base is a frame count. The count
/// is the distance plus the frames the server did not send this client,
/// and both follow the client's acknowledgement lag and snapshot rate,
/// which change slowly: the OSP duel's client deltas 3 or 4 messages back
/// with 2 frames skipped in 98% of its messages, so coding them against
/// the base's own took its header from 12.6 to about 6 bits. A 30 Hz
/// stream that takes every frame pays 2 bits for both where Quake 3
/// spends 40 on time and delta number.
///
/// The rate-delayed flag gets a bit of its own because a server short of
/// its client's rate toggles it from message to message: the OSP duel's
/// flags change in 4,104 of its 17,757 deltas, all of them that flag, and
/// each change cost 11 bits where it now costs 4.
pub fn write_compact_header<E, P, S: BitSink + ?Sized>(
    sink: &mut S,
    snapshot: &State<E, P>,
    base: Option<&State<E, P>>,
    delta_num: u8,
    frame_ms: u32,
) -> Result<(), BitError> {
    let areamask_len = areamask_len(sink, snapshot)?;
    // Without a base the snapshot is full whatever distance the source
    // named (Quake 3 deltas from an empty ring slot's zeros the same way).
    let distance = match base {
        None => 0,
        Some(_) if delta_num == 0 => {
            return Err(BitError::invalid(
                "delta distance",
                sink.bits_written(),
                "a delta with a base needs a distance of at least 1",
            ))
        }
        Some(_) => u32::from(delta_num),
    };
    let held = held_delivery(base);
    sink.put_bits(0, COMPACT_KIND_BITS)?;
    put_exp_golomb(sink, zigzag(distance.wrapping_sub(held.distance) as i32), 0)?;
    match base {
        None => sink.put_bits(snapshot.server_time as u32, 32)?,
        Some(base) => {
            let elapsed = snapshot.server_time.wrapping_sub(base.server_time);
            if frame_ms > 1 {
                // Zero frames (never a delta's elapsed time in practice)
                // is the escape to milliseconds.
                let frames = whole_frames(elapsed, frame_ms).unwrap_or(0);
                let skipped = frames
                    .wrapping_sub(distance as i32)
                    .wrapping_sub(skipped_frames(held, frame_ms));
                put_exp_golomb(sink, zigzag(skipped), 0)?;
                if frames == 0 {
                    put_exp_golomb(sink, zigzag(elapsed), ELAPSED_ORDER)?;
                }
            } else {
                put_exp_golomb(sink, zigzag(elapsed), ELAPSED_ORDER)?;
            }
        }
    }
    let base_flags = base.map_or(0, |b| b.flags);
    let base_mask = base.map_or(&[][..], |b| &b.areamask[..]);
    let mask_changed = snapshot.areamask != base_mask;
    let flags_changed = snapshot.flags != base_flags;
    sink.put_bit(flags_changed || mask_changed)?;
    if !(flags_changed || mask_changed) {
        return Ok(());
    }
    sink.put_bit(flags_changed)?;
    if flags_changed {
        let rate_toggle = snapshot.flags ^ base_flags == RATE_DELAYED;
        sink.put_bit(rate_toggle)?;
        if !rate_toggle {
            sink.put_u8(snapshot.flags)?;
        }
    }
    sink.put_bit(mask_changed)?;
    if mask_changed {
        sink.put_bits(areamask_len as u32, AREAMASK_LEN_BITS)?;
        sink.put_bytes(&snapshot.areamask)?;
    }
    Ok(())
}

/// The delivery the client holds with `base` (a full snapshot's, without one).
fn held_delivery<E, P>(base: Option<&State<E, P>>) -> Delivery {
    base.map_or_else(Delivery::default, |b| b.delivery)
}

/// The server frames `delivery`'s message skipped: its frames since its base
/// less its distance (0 for a full snapshot or a time off the frame grid).
fn skipped_frames(delivery: Delivery, frame_ms: u32) -> i32 {
    match whole_frames(delivery.elapsed_ms, frame_ms) {
        Some(frames) if delivery.distance > 0 => frames.wrapping_sub(delivery.distance as i32),
        _ => 0,
    }
}

/// `elapsed` as a number of frames of `frame_ms`, if it is a whole number
/// of them and frames are longer than a millisecond.
fn whole_frames(elapsed: i32, frame_ms: u32) -> Option<i32> {
    let frame = i32::try_from(frame_ms).ok().filter(|&f| f > 1)?;
    (elapsed % frame == 0).then_some(elapsed / frame)
}

/// Reads a message written by [`write_message`].
pub fn read_message<E: Fields, P: Fields, S: BitSource + ?Sized>(
    format: &MessageFormat,
    source: &mut S,
    base: Option<&State<E, P>>,
    frame_ms: u32,
    baselines: &dyn Baselines<E>,
    zeros: &Zeros<E, P>,
) -> Result<State<E, P>, BitError> {
    let Header {
        server_time,
        flags,
        areamask,
        delivery,
    } = match format.header {
        HeaderStyle::Quake3 => read_quake3_header(source, base)?,
        HeaderStyle::Compact => read_compact_header(source, base, frame_ms)?,
    };
    let mut player = base.map_or(&zeros.player, |b| &b.player).clone();
    let context = DeltaContext {
        elapsed_ms: base.map_or(0, |b| server_time.wrapping_sub(b.server_time)),
        spawn: false,
        anchor: None,
    };
    format
        .codec
        .read_delta_in(&context.with_spawn(base.is_none()), source, &mut player)?;
    // The entities' anchor is the player state just read.
    let context = context.with_anchor(anchor_of(&player));

    let old = base.map_or(&[][..], |b| &b.entities[..]);
    let mut entities = Vec::with_capacity(old.len() + 8);
    read_entity_list(
        format.codec,
        &context,
        source,
        format.entity_limit(),
        old,
        &zeros.entity,
        |number| baselines.baseline(number),
        &mut entities,
        |read| match read.removes_absent() {
            Some((number, at)) => Err(BitError::invalid(
                "entity",
                at,
                format!("removal of {number}, which the client does not hold"),
            )),
            None => Ok(()),
        },
    )
    .map_err(|error| match error {
        ListError::Number(error) | ListError::Body { error, .. } | ListError::Refused(error) => {
            error
        }
    })?;
    Ok(State {
        server_time,
        flags,
        areamask,
        player,
        entities,
        delivery,
    })
}

/// A message header as read: the snapshot's clock, flags and area mask, and
/// how its message was coded against the base.
struct Header {
    server_time: i32,
    flags: u8,
    areamask: Vec<u8>,
    delivery: Delivery,
}

fn read_quake3_header<E, P, S: BitSource + ?Sized>(
    source: &mut S,
    base: Option<&State<E, P>>,
) -> Result<Header, BitError> {
    let position = source.bits_read();
    let command = source.get_u8()?;
    if command != SVC_SNAPSHOT {
        return Err(BitError::invalid(
            "command byte",
            position,
            format!("{command} is not svc_snapshot"),
        ));
    }
    let server_time = source.get_bits(32)? as i32;
    let delta_num = source.get_u8()?;
    let flags = source.get_u8()?;
    let len = usize::from(source.get_u8()?);
    Ok(Header {
        server_time,
        flags,
        areamask: read_areamask(source, len)?,
        delivery: Delivery::of(server_time, base, delta_num),
    })
}

fn read_areamask<S: BitSource + ?Sized>(source: &mut S, len: usize) -> Result<Vec<u8>, BitError> {
    if len > MAX_AREAMASK {
        return Err(BitError::invalid(
            "area mask",
            source.bits_read(),
            format!("{len} bytes exceed {MAX_AREAMASK}"),
        ));
    }
    let mut areamask = vec![0; len];
    source.get_bytes(&mut areamask)?;
    Ok(areamask)
}

fn read_compact_header<E, P, S: BitSource + ?Sized>(
    source: &mut S,
    base: Option<&State<E, P>>,
    frame_ms: u32,
) -> Result<Header, BitError> {
    let position = source.bits_read();
    let kind = source.get_bits(COMPACT_KIND_BITS)?;
    if kind != 0 {
        return Err(BitError::invalid(
            "message kind",
            position,
            format!("{kind} is not a snapshot"),
        ));
    }
    let held = held_delivery(base);
    let distance = i64::from(held.distance) + i64::from(unzigzag(get_exp_golomb(source, 0)?));
    if !(0..=i64::from(u8::MAX)).contains(&distance) || (distance == 0) != base.is_none() {
        return Err(BitError::invalid(
            "delta distance",
            position,
            format!("distance {distance} does not match the base given"),
        ));
    }
    let distance = distance as u32;
    let (server_time, elapsed) = match base {
        None => (source.get_bits(32)? as i32, 0),
        Some(base) => {
            let frames = if frame_ms > 1 {
                unzigzag(get_exp_golomb(source, 0)?)
                    .wrapping_add(distance as i32)
                    .wrapping_add(skipped_frames(held, frame_ms))
            } else {
                0
            };
            let elapsed = if frames != 0 {
                frames.wrapping_mul(frame_ms as i32)
            } else {
                unzigzag(get_exp_golomb(source, ELAPSED_ORDER)?)
            };
            (base.server_time.wrapping_add(elapsed), elapsed)
        }
    };
    let delivery = Delivery {
        distance,
        elapsed_ms: elapsed,
    };
    let changed = source.get_bit()?;
    let base_flags = base.map_or(0, |b| b.flags);
    let flags = if changed && source.get_bit()? {
        if source.get_bit()? {
            base_flags ^ RATE_DELAYED
        } else {
            source.get_u8()?
        }
    } else {
        base_flags
    };
    let areamask = if changed && source.get_bit()? {
        let len = source.get_bits(AREAMASK_LEN_BITS)? as usize;
        read_areamask(source, len)?
    } else {
        base.map_or_else(Vec::new, |b| b.areamask.clone())
    };
    Ok(Header {
        server_time,
        flags,
        areamask,
        delivery,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    type Bare = State<(), ()>;

    fn state(server_time: i32, flags: u8) -> Bare {
        State {
            server_time,
            flags,
            areamask: vec![0xff, 0x01],
            player: (),
            entities: Vec::new(),
            // As if it came one 50 ms frame after its own base.
            delivery: Delivery {
                distance: 1,
                elapsed_ms: 50,
            },
        }
    }

    /// Writes `snapshot`'s compact header against `base`, `distance`
    /// messages back with `frame_ms` frames, returns its bits, and checks
    /// that it reads back, delivery included.
    fn coded_bits(snapshot: &Bare, base: &Bare, distance: u8, frame_ms: u32) -> usize {
        let mut buf = [0u8; 64];
        let mut writer = BitWriter::new(&mut buf);
        write_compact_header(&mut writer, snapshot, Some(base), distance, frame_ms).unwrap();
        let bits = writer.bits_written();
        let mut reader = BitReader::with_bit_len(&buf, bits);
        let read = read_compact_header(&mut reader, Some(base), frame_ms).unwrap();
        assert_eq!(read.server_time, snapshot.server_time);
        assert_eq!(read.flags, snapshot.flags);
        assert_eq!(read.areamask, snapshot.areamask);
        assert_eq!(
            read.delivery,
            Delivery::of(snapshot.server_time, Some(base), distance)
        );
        assert_eq!(reader.bits_read(), bits);
        bits
    }

    /// [`coded_bits`] one message back with 50 ms frames.
    fn header_bits(snapshot: &Bare, base: &Bare) -> usize {
        coded_bits(snapshot, base, 1, 50)
    }

    #[test]
    fn a_toggled_rate_delayed_flag_costs_three_bits_other_flags_eleven() {
        let base = state(1000, 4);
        // Kind 2, distance as the base's (1 bit), one frame per message as
        // the base's (1 bit), and "flags and mask as the base's" (1 bit).
        let same = header_bits(&state(1050, 4), &base);
        assert_eq!(same, 5);
        // Either way the rate-delayed flag turns: 3 bits more.
        assert_eq!(header_bits(&state(1050, 5), &base), same + 3);
        assert_eq!(header_bits(&state(1050, 4), &state(1000, 5)), same + 3);
        // Any other change of the flags writes them whole: 11 bits more.
        assert_eq!(header_bits(&state(1050, 6), &base), same + 11);
        assert_eq!(header_bits(&state(1050, 1), &base), same + 11);
        assert_eq!(header_bits(&state(1050, 0), &base), same + 11);
    }

    #[test]
    fn distance_and_skipped_frames_are_coded_against_the_bases_delivery() {
        // The OSP duel's pattern: 33 ms frames, the client acknowledges
        // 3 or 4 messages late and takes every second frame or so, so a
        // delta 4 messages back spans 6 frames and one 3 back spans 5.
        let mut base = state(10_000, 0);
        base.delivery = Delivery {
            distance: 4,
            elapsed_ms: 198,
        };
        // As the base: 1 bit each.
        assert_eq!(coded_bits(&state(10_198, 0), &base, 4, 33), 2 + 1 + 1 + 1);
        // One message nearer, the same 2 frames skipped: 3 bits for the
        // distance, 1 for the frames.
        assert_eq!(coded_bits(&state(10_165, 0), &base, 3, 33), 2 + 3 + 1 + 1);
        // One more frame skipped than the base's message: 3 bits.
        assert_eq!(coded_bits(&state(10_231, 0), &base, 4, 33), 2 + 1 + 3 + 1);
        // A time off the frame grid escapes to milliseconds, and a full
        // base (distance 0) predicts nothing skipped.
        assert!(coded_bits(&state(10_200, 0), &base, 4, 33) > 2 + 1 + 3 + 1);
        base.delivery = Delivery::default();
        assert_eq!(coded_bits(&state(10_033, 0), &base, 1, 33), 2 + 3 + 1 + 1);
    }

    #[test]
    fn a_distance_that_contradicts_the_base_is_refused() {
        let base = state(1000, 0);
        // Zigzag(-1) = 1: distance 0 against a base of distance 1, i.e. a
        // full snapshot's distance where a base was given.
        for code in [1u32, 1 << 20] {
            let mut buf = [0u8; 32];
            let mut writer = BitWriter::new(&mut buf);
            writer.put_bits(0, COMPACT_KIND_BITS).unwrap();
            put_exp_golomb(&mut writer, code, 0).unwrap();
            writer.put_bits(0, 32).unwrap();
            let bits = writer.bits_written();
            let mut reader = BitReader::with_bit_len(&buf, bits);
            let error = read_compact_header(&mut reader, Some(&base), 50)
                .err()
                .expect("refused");
            assert!(error.to_string().contains("delta distance"), "{error}");
        }
    }

    proptest::proptest! {
        /// Any header round-trips against any base delivery: distances
        /// and times far from the base's, off the frame grid, or with no
        /// frames at all.
        #[test]
        fn any_header_reads_back_against_any_base_delivery(
            held_distance in 0u32..=255,
            held_elapsed in -1000i32..100_000,
            distance in 1u8..=255,
            elapsed in -1000i32..100_000,
            frame_ms in 0u32..100,
            flags: u8,
        ) {
            let mut base = state(50_000, 0);
            base.delivery = Delivery {
                distance: held_distance,
                elapsed_ms: held_elapsed,
            };
            coded_bits(&state(50_000 + elapsed, flags), &base, distance, frame_ms);
        }
    }
}
