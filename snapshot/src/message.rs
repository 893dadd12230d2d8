//! The messages of a snapshot stream and their leading kind tag.
//!
//! The engine's messages start with a 2-bit [`MessageKind`], so a recorded
//! stream of them (a demo) can be told apart record by record:
//!
//! * a **gamestate** (kind 1) and **configstring** changes (kind 2) go on
//!   the reliable ordered channel and are read by
//!   [`Client::read_message`](crate::Client::read_message); their layout is
//!   in [`crate::gamestate`];
//! * a **snapshot** is a delta (kind 0) or a full update (kind 3) in the
//!   engine's [`Compact`](crate::framing::Compact) framing: the header
//!   described there, the player-state delta and the entity list in the
//!   stream's codec (two lists for a chained snapshot), and a 32-bit sync
//!   checksum when the header says so, then zero padding to a byte. It is
//!   read by [`Client::read_snapshot`](crate::Client::read_snapshot) with
//!   its sequence number, which the transport carries (see
//!   [`crate::framing`]). Another [`Framing`](crate::framing::Framing), such
//!   as the `q3` crate's Quake 3 `svc_snapshot`, lays the header out its
//!   own way.
//!
//! A chained snapshot carries two entity lists: the base's entities to an
//! intermediate frame's (the server sent that list already, to this client
//! or others, and copies it from its cache), then those to this frame's.
//! The server chains when a client's acknowledgement of its previous
//! snapshot has not arrived, so the client gets two lists already encoded
//! instead of one built for it alone; the receiver applies them in turn.

use fields::{BitError, BitSink, BitSource};

use crate::error::ClientError;

/// Width of the message kind.
pub const KIND_BITS: u32 = 2;

/// What a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    /// A snapshot that is a delta from one the client holds (the
    /// most-recent-state payload).
    Delta = 0,
    /// The initial gamestate: configstrings and spawn baselines (reliable).
    Gamestate = 1,
    /// One configstring change (reliable, ordered).
    Configstring = 2,
    /// A snapshot that is a full update (a delta from the zeroed dummy).
    Full = 3,
}

impl MessageKind {
    /// Writes the kind tag.
    pub fn write<S: BitSink + ?Sized>(self, sink: &mut S) -> Result<(), BitError> {
        sink.put_bits(self as u32, KIND_BITS)
    }

    /// Reads a kind tag.
    pub fn read<S: BitSource + ?Sized>(source: &mut S) -> Result<MessageKind, ClientError> {
        Ok(match source.get_bits(KIND_BITS)? {
            0 => MessageKind::Delta,
            1 => MessageKind::Gamestate,
            2 => MessageKind::Configstring,
            _ => MessageKind::Full,
        })
    }

    /// Whether it is a snapshot (delta or full).
    pub fn is_snapshot(self) -> bool {
        matches!(self, MessageKind::Delta | MessageKind::Full)
    }
}

/// Checks that at most zero padding (fewer than 8 zero bits) is left.
pub(crate) fn expect_end(reader: &mut fields::BitReader<'_>) -> Result<(), ClientError> {
    expect_zeros_below(reader, 8)
}

/// [`expect_end`] for a message read with the zero byte its sender may have
/// left out put back ([`MessageCoding::sent_len`](crate::framing::MessageCoding::sent_len)):
/// fewer than 16 zero bits, that byte and the padding before it.
pub(crate) fn expect_end_restored(reader: &mut fields::BitReader<'_>) -> Result<(), ClientError> {
    expect_zeros_below(reader, 16)
}

fn expect_zeros_below(reader: &mut fields::BitReader<'_>, limit: usize) -> Result<(), ClientError> {
    let left = reader.remaining_bits();
    if left >= limit || (left > 0 && reader.peek_bits(left as u32) != 0) {
        return Err(ClientError::TrailingData { bits: left });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use fields::{BitReader, BitWriter};

    #[test]
    fn every_kind_round_trips_in_two_bits() {
        for kind in [
            MessageKind::Delta,
            MessageKind::Gamestate,
            MessageKind::Configstring,
            MessageKind::Full,
        ] {
            let mut buf = [0u8; 1];
            let mut w = BitWriter::new(&mut buf);
            kind.write(&mut w).unwrap();
            assert_eq!(w.bits_written(), 2);
            assert_eq!(MessageKind::read(&mut BitReader::new(&buf)).unwrap(), kind);
        }
        assert!(MessageKind::read(&mut BitReader::new(&[])).is_err());
    }
}
