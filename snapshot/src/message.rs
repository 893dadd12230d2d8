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
//! | server frame | 32 |
//! | server time, ms | 32 |
//! | delta distance: 0 = full update, else base = sequence − distance | 5 |
//! | flags: rate-delayed, has-checksum, chained | 3 |
//! | if chained: server time of the intermediate frame, ms | 32 |
//! | player state, codec delta from the base's (or zero) | codec |
//! | entities in increasing number order, codec entity list | codec |
//! | if chained: a second entity list, from the first one's result | codec |
//! | sync checksum, if flagged | 32 |
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

use fields::{BitError, BitSink, BitSource};

use crate::config::MAX_DELTA_DISTANCE;
use crate::error::ClientError;

/// Width of the message kind.
pub const KIND_BITS: u32 = 2;

/// Width of the delta distance.
pub const DISTANCE_BITS: u32 = 5;

/// Bits of a snapshot header (a chained one has 32 more).
pub const SNAPSHOT_HEADER_BITS: u32 = KIND_BITS + 32 * 3 + DISTANCE_BITS + 3;

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

/// The fixed part of a snapshot message (after its kind tag).
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

impl SnapshotHeader {
    /// Distance to the base (0 for a full update).
    pub fn distance(&self) -> u32 {
        self.base.map_or(0, |base| self.sequence.wrapping_sub(base))
    }

    /// Writes the kind tag and the header. Fails if the base is not 1 to
    /// [`MAX_DELTA_DISTANCE`] snapshots back.
    pub fn write<S: BitSink + ?Sized>(&self, sink: &mut S) -> Result<(), BitError> {
        let distance = self.distance();
        if self.base.is_some() && !(1..=MAX_DELTA_DISTANCE).contains(&distance) {
            return Err(BitError::invalid(
                "delta distance",
                sink.bits_written(),
                format!("{distance} is outside 1..={MAX_DELTA_DISTANCE}"),
            ));
        }
        MessageKind::Snapshot.write(sink)?;
        sink.put_bits(self.sequence, 32)?;
        sink.put_bits(self.frame, 32)?;
        sink.put_bits(self.server_time, 32)?;
        sink.put_bits(distance, DISTANCE_BITS)?;
        sink.put_bit(self.rate_delayed)?;
        sink.put_bit(self.has_checksum)?;
        sink.put_bit(self.via_time.is_some())?;
        match self.via_time {
            Some(time) if self.base.is_some() => sink.put_bits(time, 32),
            Some(_) => Err(BitError::invalid(
                "chained snapshot",
                sink.bits_written(),
                "a full update has no intermediate frame",
            )),
            None => Ok(()),
        }
    }

    /// Reads a header after its kind tag.
    pub fn read<S: BitSource + ?Sized>(source: &mut S) -> Result<SnapshotHeader, ClientError> {
        let sequence = source.get_bits(32)?;
        let frame = source.get_bits(32)?;
        let server_time = source.get_bits(32)?;
        let distance = source.get_bits(DISTANCE_BITS)?;
        let rate_delayed = source.get_bit()?;
        let has_checksum = source.get_bit()?;
        let via_time = if source.get_bit()? {
            if distance == 0 {
                return Err(ClientError::ChainedFullUpdate { sequence });
            }
            Some(source.get_bits(32)?)
        } else {
            None
        };
        let base = match distance {
            0 => None,
            _ => Some(
                sequence
                    .checked_sub(distance)
                    .ok_or(ClientError::BadDeltaDistance { sequence, distance })?,
            ),
        };
        Ok(SnapshotHeader {
            sequence,
            frame,
            server_time,
            base,
            rate_delayed,
            has_checksum,
            via_time,
        })
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

    #[test]
    fn header_round_trips_and_has_the_documented_size() {
        let header = SnapshotHeader {
            sequence: 40,
            frame: 1234,
            server_time: 99_000,
            base: Some(9),
            rate_delayed: true,
            has_checksum: false,
            via_time: None,
        };
        let mut buf = [0u8; 32];
        let mut w = BitWriter::new(&mut buf);
        header.write(&mut w).unwrap();
        assert_eq!(w.bits_written(), SNAPSHOT_HEADER_BITS as usize);
        let mut r = BitReader::new(&buf);
        assert_eq!(MessageKind::read(&mut r).unwrap(), MessageKind::Snapshot);
        assert_eq!(SnapshotHeader::read(&mut r).unwrap(), header);
        let chained = SnapshotHeader {
            via_time: Some(98_950),
            ..header
        };
        let mut w = BitWriter::new(&mut buf);
        chained.write(&mut w).unwrap();
        assert_eq!(w.bits_written(), SNAPSHOT_HEADER_BITS as usize + 32);
        let mut r = BitReader::new(&buf);
        MessageKind::read(&mut r).unwrap();
        assert_eq!(SnapshotHeader::read(&mut r).unwrap(), chained);
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
        assert!(header.write(&mut BitWriter::new(&mut buf)).is_err());
        // The flag after a zero distance, written by hand.
        let mut w = BitWriter::new(&mut buf);
        w.put_bits(4, 32).unwrap();
        w.put_bits(0, 32).unwrap();
        w.put_bits(0, 32).unwrap();
        w.put_bits(0, DISTANCE_BITS).unwrap();
        w.put_bits(0b100, 3).unwrap();
        w.put_bits(7, 32).unwrap();
        let mut r = BitReader::new(&buf);
        assert_eq!(
            SnapshotHeader::read(&mut r),
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
            assert!(header.write(&mut BitWriter::new(&mut buf)).is_err());
        }
    }

    #[test]
    fn a_base_before_sequence_zero_is_rejected() {
        let mut buf = [0u8; 32];
        let mut w = BitWriter::new(&mut buf);
        w.put_bits(3, 32).unwrap();
        w.put_bits(0, 32).unwrap();
        w.put_bits(0, 32).unwrap();
        w.put_bits(5, DISTANCE_BITS).unwrap();
        w.put_bits(0, 3).unwrap();
        let mut r = BitReader::new(&buf);
        assert_eq!(
            SnapshotHeader::read(&mut r),
            Err(ClientError::BadDeltaDistance {
                sequence: 3,
                distance: 5
            })
        );
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
