//! The wire layout of the three messages and of the snapshot header.
//!
//! Every message starts with a 2-bit [`MessageKind`], so a recorded stream
//! of them (a demo) can be replayed through one entry point,
//! [`Client::read_message`](crate::Client::read_message).
//!
//! A snapshot is, in order:
//!
//! | part | bits |
//! | --- | --- |
//! | kind (0) | 2 |
//! | sequence (per client) | 32 |
//! | delta distance: 0 = full update, else base = sequence − distance | 5 |
//! | flags: rate-delayed, has-checksum, chained | 3 |
//! | full update: server frame, server time (ms) | 32 + 32 |
//! | delta: frames since the base's, less the distance, zigzagged | exp-Golomb order 0 (1 bit when a client takes every frame) |
//! | delta: server time since the base's, ms | exp-Golomb order [`TIME_ORDER`] (8 bits for 50 ms, 10 for 200) |
//! | if chained: the intermediate frame's server time since the base's, ms | exp-Golomb order [`TIME_ORDER`] |
//! | player state, codec delta from the base's (or zero) | codec |
//! | entities in increasing number order, codec entity list | codec |
//! | if chained: a second entity list, from the first one's result | codec |
//! | sync checksum, if flagged | 32 |
//!
//! A delta's frame and times are coded against its base's, which the
//! receiver holds (it acknowledged the base): a 20 Hz delta from the
//! previous snapshot has a 51-bit header where writing them whole took 106. The sequence stays
//! whole, so a header's [`HeaderPrefix`] (sequence, base, flags) reads
//! without the base, and a receiver can tell a stale or baseless snapshot
//! before it looks anything up.
//!
//! A chained snapshot carries two entity lists: the base's entities to an
//! intermediate frame's (the server sent that list already, to this client
//! or others, and copies it from its cache), then those to this frame's.
//! The server chains when a client's acknowledgement of its previous
//! snapshot has not arrived, so the client gets two lists already encoded
//! instead of one built for it alone; the receiver applies them in turn.
//!
//! then zero padding to a byte. Gamestate and configstring messages are
//! described in [`crate::gamestate`].

use fields::varcode::{get_exp_golomb, put_exp_golomb, unzigzag, zigzag};
use fields::{BitError, BitSink, BitSource};

use crate::config::MAX_DELTA_DISTANCE;
use crate::error::ClientError;

/// Width of the message kind.
pub const KIND_BITS: u32 = 2;

/// Width of the delta distance.
pub const DISTANCE_BITS: u32 = 5;

/// Bits of a full update's header. A delta's is shorter: its frame and
/// times are coded against the base's (see the module documentation).
pub const SNAPSHOT_HEADER_BITS: u32 = KIND_BITS + 32 * 3 + DISTANCE_BITS + 3;

/// Exp-Golomb order of a delta header's times since the base: 2^5 ms is
/// below one frame of any tick rate a game runs at, so a time of one to
/// a few frames takes one prefix bit per doubling beyond it.
pub const TIME_ORDER: u32 = 5;

const _: () = assert!(MAX_DELTA_DISTANCE < 1 << DISTANCE_BITS);

/// What a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    /// A snapshot (the most-recent-state payload).
    Snapshot = 0,
    /// The initial gamestate: configstrings and spawn baselines (reliable).
    Gamestate = 1,
    /// One configstring change (reliable, ordered).
    Configstring = 2,
}

impl MessageKind {
    /// Writes the kind tag.
    pub fn write<S: BitSink + ?Sized>(self, sink: &mut S) -> Result<(), BitError> {
        sink.put_bits(self as u32, KIND_BITS)
    }

    /// Reads a kind tag.
    pub fn read<S: BitSource + ?Sized>(source: &mut S) -> Result<MessageKind, ClientError> {
        match source.get_bits(KIND_BITS)? {
            0 => Ok(MessageKind::Snapshot),
            1 => Ok(MessageKind::Gamestate),
            2 => Ok(MessageKind::Configstring),
            other => Err(ClientError::UnknownMessageKind(other)),
        }
    }
}

/// The header of a snapshot message (after its kind tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotHeader {
    /// Sequence number of this snapshot in the stream to one client; the
    /// number acknowledged and named as a base.
    pub sequence: u32,
    /// Server frame the snapshot was taken from.
    pub frame: u32,
    /// Server time of that frame, in milliseconds.
    pub server_time: u32,
    /// Sequence of the snapshot this is a delta from; `None` for a full
    /// update (a delta from the zeroed dummy snapshot).
    pub base: Option<u32>,
    /// The server held back an earlier snapshot because the client's byte
    /// rate was used up (Quake 3's `SNAPFLAG_RATE_DELAYED`).
    pub rate_delayed: bool,
    /// A sync checksum follows the entity list.
    pub has_checksum: bool,
    /// For a chained snapshot, the server time of the frame its first entity
    /// list leads to (the second list goes on from there).
    pub via_time: Option<u32>,
}

/// What a delta's header is coded against: its base's frame and server
/// time, which the receiver holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BaseClock {
    /// The base's server frame.
    pub frame: u32,
    /// The base's server time, in milliseconds.
    pub server_time: u32,
}

/// The part of a snapshot header read without the base: which snapshot it
/// is, which base it names, and its flags. The rest is read with
/// [`HeaderPrefix::finish`] once the base is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderPrefix {
    /// The snapshot's sequence number.
    pub sequence: u32,
    /// The sequence of its base; `None` for a full update.
    pub base: Option<u32>,
    /// The rate-delayed flag (see [`SnapshotHeader::rate_delayed`]).
    pub rate_delayed: bool,
    /// A sync checksum follows the entity list.
    pub has_checksum: bool,
    /// The snapshot is chained (see [`SnapshotHeader::via_time`]).
    pub chained: bool,
}

impl HeaderPrefix {
    /// Reads the rest of the header: the frame and times, whole for a full
    /// update, against `base` (the clock of the snapshot [`Self::base`]
    /// names) for a delta. A delta without its base's clock is
    /// [`ClientError::BaseMissing`].
    pub fn finish<S: BitSource + ?Sized>(
        self,
        source: &mut S,
        base: Option<BaseClock>,
    ) -> Result<SnapshotHeader, ClientError> {
        let HeaderPrefix {
            sequence,
            base: base_sequence,
            rate_delayed,
            has_checksum,
            chained,
        } = self;
        let (frame, server_time, via_time) = match base_sequence {
            None => (source.get_bits(32)?, source.get_bits(32)?, None),
            Some(named) => {
                let clock = base.ok_or(ClientError::BaseMissing {
                    sequence,
                    base: named,
                })?;
                let distance = sequence.wrapping_sub(named);
                let frames = unzigzag(get_exp_golomb(source, 0)?);
                let frame = clock
                    .frame
                    .wrapping_add(distance)
                    .wrapping_add(frames as u32);
                let server_time = clock
                    .server_time
                    .wrapping_add(get_exp_golomb(source, TIME_ORDER)?);
                let via_time = if chained {
                    Some(
                        clock
                            .server_time
                            .wrapping_add(get_exp_golomb(source, TIME_ORDER)?),
                    )
                } else {
                    None
                };
                (frame, server_time, via_time)
            }
        };
        Ok(SnapshotHeader {
            sequence,
            frame,
            server_time,
            base: base_sequence,
            rate_delayed,
            has_checksum,
            via_time,
        })
    }
}

impl SnapshotHeader {
    /// Distance to the base (0 for a full update).
    pub fn distance(&self) -> u32 {
        self.base.map_or(0, |base| self.sequence.wrapping_sub(base))
    }

    /// Writes the kind tag and the header; a delta's frame and times
    /// against `base`, the clock of its base (ignored for a full update).
    /// Fails if the base is not 1 to [`MAX_DELTA_DISTANCE`] snapshots back,
    /// if a delta comes without its base's clock, or if a full update is
    /// chained.
    pub fn write<S: BitSink + ?Sized>(
        &self,
        sink: &mut S,
        base: Option<BaseClock>,
    ) -> Result<(), BitError> {
        let distance = self.distance();
        if self.base.is_some() && !(1..=MAX_DELTA_DISTANCE).contains(&distance) {
            return Err(BitError::invalid(
                "delta distance",
                sink.bits_written(),
                format!("{distance} is outside 1..={MAX_DELTA_DISTANCE}"),
            ));
        }
        let clock = match (self.base, base, self.via_time) {
            (None, _, Some(_)) => {
                return Err(BitError::invalid(
                    "chained snapshot",
                    sink.bits_written(),
                    "a full update has no intermediate frame",
                ))
            }
            (Some(_), None, _) => {
                return Err(BitError::invalid(
                    "snapshot header",
                    sink.bits_written(),
                    "a delta's header is coded against its base's clock, which was not given",
                ))
            }
            (None, _, None) => None,
            (Some(_), Some(clock), _) => Some(clock),
        };
        MessageKind::Snapshot.write(sink)?;
        sink.put_bits(self.sequence, 32)?;
        sink.put_bits(distance, DISTANCE_BITS)?;
        sink.put_bit(self.rate_delayed)?;
        sink.put_bit(self.has_checksum)?;
        sink.put_bit(self.via_time.is_some())?;
        match clock {
            None => {
                sink.put_bits(self.frame, 32)?;
                sink.put_bits(self.server_time, 32)
            }
            Some(clock) => {
                let frames = self.frame.wrapping_sub(clock.frame).wrapping_sub(distance);
                put_exp_golomb(sink, zigzag(frames as i32), 0)?;
                put_exp_golomb(
                    sink,
                    self.server_time.wrapping_sub(clock.server_time),
                    TIME_ORDER,
                )?;
                match self.via_time {
                    Some(via) => {
                        put_exp_golomb(sink, via.wrapping_sub(clock.server_time), TIME_ORDER)
                    }
                    None => Ok(()),
                }
            }
        }
    }

    /// Reads the part of a header (after its kind tag) that needs no base:
    /// see [`HeaderPrefix`].
    pub fn read_prefix<S: BitSource + ?Sized>(source: &mut S) -> Result<HeaderPrefix, ClientError> {
        let sequence = source.get_bits(32)?;
        let distance = source.get_bits(DISTANCE_BITS)?;
        let rate_delayed = source.get_bit()?;
        let has_checksum = source.get_bit()?;
        let chained = source.get_bit()?;
        if chained && distance == 0 {
            return Err(ClientError::ChainedFullUpdate { sequence });
        }
        let base = match distance {
            0 => None,
            _ => Some(
                sequence
                    .checked_sub(distance)
                    .ok_or(ClientError::BadDeltaDistance { sequence, distance })?,
            ),
        };
        Ok(HeaderPrefix {
            sequence,
            base,
            rate_delayed,
            has_checksum,
            chained,
        })
    }

    /// Reads a whole header (after its kind tag), asking `base_clock` for
    /// the clock of the base a delta names.
    pub fn read<S: BitSource + ?Sized>(
        source: &mut S,
        base_clock: impl FnOnce(u32) -> Option<BaseClock>,
    ) -> Result<SnapshotHeader, ClientError> {
        let prefix = Self::read_prefix(source)?;
        let clock = prefix.base.and_then(base_clock);
        prefix.finish(source, clock)
    }
}

/// Checks that at most zero padding (fewer than 8 zero bits) is left.
pub(crate) fn expect_end(reader: &mut fields::BitReader<'_>) -> Result<(), ClientError> {
    let left = reader.remaining_bits();
    if left >= 8 || (left > 0 && reader.peek_bits(left as u32) != 0) {
        return Err(ClientError::TrailingData { bits: left });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fields::{BitReader, BitWriter};

    const BASE: BaseClock = BaseClock {
        frame: 1230,
        server_time: 98_800,
    };

    /// Writes `header` (against `BASE` for a delta), checks its size and
    /// reads it back.
    fn round_trip(header: SnapshotHeader, bits: usize) {
        let mut buf = [0u8; 32];
        let mut w = BitWriter::new(&mut buf);
        header.write(&mut w, Some(BASE)).unwrap();
        assert_eq!(w.bits_written(), bits, "{header:?}");
        let mut r = BitReader::new(&buf);
        assert_eq!(MessageKind::read(&mut r).unwrap(), MessageKind::Snapshot);
        let named = header.base;
        let read = SnapshotHeader::read(&mut r, |base| {
            assert_eq!(Some(base), named);
            Some(BASE)
        });
        assert_eq!(read.unwrap(), header);
        assert_eq!(r.bits_read(), bits);
    }

    #[test]
    fn headers_round_trip_with_the_documented_sizes() {
        let full = SnapshotHeader {
            sequence: 40,
            frame: 1234,
            server_time: 99_000,
            base: None,
            rate_delayed: true,
            has_checksum: false,
            via_time: None,
        };
        round_trip(full, SNAPSHOT_HEADER_BITS as usize);
        // Four frames after a base four snapshots back, 200 ms later: 1
        // bit of frames and 10 of time (200 + 32 takes 8 bits: 2 zeros and
        // the 8) after the 42 of kind, sequence, distance and flags.
        let delta = SnapshotHeader {
            base: Some(36),
            ..full
        };
        round_trip(delta, 42 + 1 + 10);
        // One frame after a base one back, 50 ms later (50 + 32 takes 7
        // bits: one zero and the 7).
        let next = SnapshotHeader {
            frame: 1231,
            server_time: 98_850,
            base: Some(39),
            ..full
        };
        round_trip(next, 42 + 1 + 8);
        // The intermediate frame's time, 150 ms after the base's, 10 more.
        let chained = SnapshotHeader {
            via_time: Some(98_950),
            ..delta
        };
        round_trip(chained, 42 + 1 + 10 + 10);
        // Frames skipped, time going backwards: still exact.
        let odd = SnapshotHeader {
            frame: 1000,
            server_time: 5,
            ..delta
        };
        let mut buf = [0u8; 32];
        let mut w = BitWriter::new(&mut buf);
        odd.write(&mut w, Some(BASE)).unwrap();
        let mut r = BitReader::new(&buf);
        MessageKind::read(&mut r).unwrap();
        assert_eq!(SnapshotHeader::read(&mut r, |_| Some(BASE)).unwrap(), odd);
    }

    #[test]
    fn a_delta_needs_its_base_clock() {
        let header = SnapshotHeader {
            sequence: 40,
            frame: 1234,
            server_time: 99_000,
            base: Some(39),
            rate_delayed: false,
            has_checksum: false,
            via_time: None,
        };
        let mut buf = [0u8; 32];
        assert!(header.write(&mut BitWriter::new(&mut buf), None).is_err());
        header
            .write(&mut BitWriter::new(&mut buf), Some(BASE))
            .unwrap();
        let mut r = BitReader::new(&buf);
        MessageKind::read(&mut r).unwrap();
        let prefix = SnapshotHeader::read_prefix(&mut r).unwrap();
        assert_eq!(
            prefix,
            HeaderPrefix {
                sequence: 40,
                base: Some(39),
                rate_delayed: false,
                has_checksum: false,
                chained: false,
            }
        );
        assert_eq!(
            prefix.finish(&mut r, None),
            Err(ClientError::BaseMissing {
                sequence: 40,
                base: 39
            })
        );
    }

    #[test]
    fn a_full_update_cannot_be_chained() {
        let header = SnapshotHeader {
            sequence: 4,
            frame: 0,
            server_time: 0,
            base: None,
            rate_delayed: false,
            has_checksum: false,
            via_time: Some(1),
        };
        let mut buf = [0u8; 32];
        assert!(header
            .write(&mut BitWriter::new(&mut buf), Some(BASE))
            .is_err());
        // The flag after a zero distance, written by hand.
        let mut w = BitWriter::new(&mut buf);
        w.put_bits(4, 32).unwrap();
        w.put_bits(0, DISTANCE_BITS).unwrap();
        w.put_bits(0b100, 3).unwrap();
        w.put_bits(0, 32).unwrap();
        w.put_bits(0, 32).unwrap();
        let mut r = BitReader::new(&buf);
        assert_eq!(
            SnapshotHeader::read(&mut r, |_| Some(BASE)),
            Err(ClientError::ChainedFullUpdate { sequence: 4 })
        );
    }

    #[test]
    fn distances_outside_the_ring_do_not_encode() {
        let mut buf = [0u8; 32];
        for base in [Some(40), Some(8)] {
            let header = SnapshotHeader {
                sequence: 40,
                frame: 0,
                server_time: 0,
                base,
                rate_delayed: false,
                has_checksum: false,
                via_time: None,
            };
            assert!(header
                .write(&mut BitWriter::new(&mut buf), Some(BASE))
                .is_err());
        }
    }

    #[test]
    fn a_base_before_sequence_zero_is_rejected() {
        let mut buf = [0u8; 32];
        let mut w = BitWriter::new(&mut buf);
        w.put_bits(3, 32).unwrap();
        w.put_bits(5, DISTANCE_BITS).unwrap();
        w.put_bits(0, 3).unwrap();
        let mut r = BitReader::new(&buf);
        assert_eq!(
            SnapshotHeader::read(&mut r, |_| Some(BASE)),
            Err(ClientError::BadDeltaDistance {
                sequence: 3,
                distance: 5
            })
        );
    }

    proptest::proptest! {
        /// Any header reads back as written against any base clock (frames
        /// and times wrapping included), and every cut of it is an error.
        #[test]
        fn any_header_round_trips_and_cuts_are_errors(
            sequence in 31u32..,
            distance in 0u32..=MAX_DELTA_DISTANCE,
            frame in proptest::prelude::any::<u32>(),
            server_time in proptest::prelude::any::<u32>(),
            via in proptest::prelude::any::<Option<u32>>(),
            flags in proptest::prelude::any::<(bool, bool)>(),
            base_frame in proptest::prelude::any::<u32>(),
            base_time in proptest::prelude::any::<u32>(),
        ) {
            let header = SnapshotHeader {
                sequence,
                frame,
                server_time,
                base: (distance > 0).then(|| sequence - distance),
                rate_delayed: flags.0,
                has_checksum: flags.1,
                via_time: via.filter(|_| distance > 0),
            };
            let clock = BaseClock { frame: base_frame, server_time: base_time };
            let mut buf = [0u8; 64];
            let mut w = BitWriter::new(&mut buf);
            header.write(&mut w, Some(clock)).unwrap();
            let bits = w.bits_written();
            let mut r = BitReader::with_bit_len(&buf, bits);
            MessageKind::read(&mut r).unwrap();
            proptest::prop_assert_eq!(SnapshotHeader::read(&mut r, |_| Some(clock)), Ok(header));
            proptest::prop_assert_eq!(r.remaining_bits(), 0);
            for cut in [KIND_BITS as usize, bits / 2, bits - 1] {
                let mut r = BitReader::with_bit_len(&buf, cut);
                MessageKind::read(&mut r).unwrap();
                proptest::prop_assert!(SnapshotHeader::read(&mut r, |_| Some(clock)).is_err());
            }
        }
    }

    #[test]
    fn unknown_kinds_are_rejected() {
        let buf = [3u8];
        assert_eq!(
            MessageKind::read(&mut BitReader::new(&buf)),
            Err(ClientError::UnknownMessageKind(3))
        );
    }
}
