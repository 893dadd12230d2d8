//! Byte layout of datagrams: the data header and the chunks inside a data body.
//!
//! ```text
//! data datagram  = header(13) body [tag(16) if encrypted]
//! header         = type/flags u8 | client id u32 | seq u16 | ack u16 | ack bits u32
//! body           = chunk*            (possibly Huffman-compressed, then encrypted)
//! ```
//!
//! All integers are little-endian. Chunks carry the four delivery classes and
//! two control messages; a message too large for one datagram travels as
//! fragment chunks (`total`, `offset`, `len`) that the receiver reassembles.

use crate::error::{DecodeError, FragmentError};
use crate::rate::RateAnnounce;

/// Largest UDP payload this crate ever sends or accepts, headers included.
pub const MAX_DATAGRAM: usize = 1400;

/// Size of the data header.
pub const HEADER_LEN: usize = 13;

/// High nibble of the first byte: the packet type.
pub(crate) const TYPE_CHALLENGE_REQUEST: u8 = 0x1;
pub(crate) const TYPE_CHALLENGE_RESPONSE: u8 = 0x2;
pub(crate) const TYPE_CONNECT: u8 = 0x3;
pub(crate) const TYPE_ACCEPT: u8 = 0x4;
pub(crate) const TYPE_REJECT: u8 = 0x5;
pub(crate) const TYPE_DATA: u8 = 0x6;
pub(crate) const TYPE_STATUS_REQUEST: u8 = 0x7;
pub(crate) const TYPE_STATUS_REPLY: u8 = 0x8;

/// Data-header flag: the ack fields are meaningful.
pub const FLAG_HAS_ACK: u8 = 0x1;
/// Data-header flag: the body is Huffman-compressed.
pub const FLAG_COMPRESSED: u8 = 0x2;

const TAG_ORDERED: u8 = 0x01;
const TAG_ORDERED_FRAG: u8 = 0x02;
const TAG_QUICKEST: u8 = 0x03;
const TAG_STATE: u8 = 0x04;
const TAG_STATE_FRAG: u8 = 0x05;
const TAG_EVENT: u8 = 0x06;
const TAG_RATE: u8 = 0x07;
const TAG_DISCONNECT: u8 = 0x08;

/// Bytes a fragment chunk spends before its payload.
pub const FRAG_CHUNK_OVERHEAD: usize = 13;
/// Bytes a whole-message chunk (ordered, quickest, state) spends before its payload.
pub const WHOLE_CHUNK_OVERHEAD: usize = 5;
/// Bytes an unguaranteed-event chunk spends before its payload.
pub const EVENT_CHUNK_OVERHEAD: usize = 3;
/// Size of a rate-announce chunk.
pub const RATE_CHUNK_LEN: usize = 7;
/// Size of a disconnect chunk.
pub const DISCONNECT_CHUNK_LEN: usize = 2;

/// The packet type stored in the high nibble of a datagram's first byte.
pub fn packet_type(datagram: &[u8]) -> Result<u8, DecodeError> {
    let first = *datagram.first().ok_or(DecodeError::Empty)?;
    Ok(first >> 4)
}

/// Bounds-checked little-endian reader over untrusted bytes.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Reads `n` bytes.
    pub fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if self.remaining() < n {
            return Err(DecodeError::Truncated {
                what,
                needed: n,
                available: self.remaining(),
            });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Reads a fixed-size array.
    pub fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N, what)?);
        Ok(out)
    }

    /// Reads a byte.
    pub fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(what)?[0])
    }

    /// Reads a little-endian `u16`.
    pub fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    /// Reads a little-endian `u32`.
    pub fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    /// Reads a little-endian `u64`.
    pub fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }
}

/// The output buffer ran out of room: callers size their writes first, so
/// this signals a bug in size accounting rather than bad input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("output buffer full")]
pub struct BufferFull;

/// Little-endian writer into a caller-provided buffer.
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    /// A writer at the start of `buf`.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.pos
    }

    /// `true` when nothing has been written.
    pub fn is_empty(&self) -> bool {
        self.pos == 0
    }

    /// Bytes still free.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Appends bytes.
    pub fn put(&mut self, bytes: &[u8]) -> Result<(), BufferFull> {
        let end = self.pos.checked_add(bytes.len()).ok_or(BufferFull)?;
        self.buf
            .get_mut(self.pos..end)
            .ok_or(BufferFull)?
            .copy_from_slice(bytes);
        self.pos = end;
        Ok(())
    }

    /// Appends a byte.
    pub fn u8(&mut self, v: u8) -> Result<(), BufferFull> {
        self.put(&[v])
    }

    /// Appends a little-endian `u16`.
    pub fn u16(&mut self, v: u16) -> Result<(), BufferFull> {
        self.put(&v.to_le_bytes())
    }

    /// Appends a little-endian `u32`.
    pub fn u32(&mut self, v: u32) -> Result<(), BufferFull> {
        self.put(&v.to_le_bytes())
    }

    /// Appends a little-endian `u64`.
    pub fn u64(&mut self, v: u64) -> Result<(), BufferFull> {
        self.put(&v.to_le_bytes())
    }
}

/// The fixed header of every data datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataHeader {
    /// [`FLAG_HAS_ACK`] and [`FLAG_COMPRESSED`].
    pub flags: u8,
    /// The client's id (Quake 3's qport): lets the server follow a NAT port change.
    pub client_id: u32,
    /// Low 16 bits of the datagram's sequence number.
    pub seq: u16,
    /// Low 16 bits of the newest remote sequence received (valid with [`FLAG_HAS_ACK`]).
    pub ack: u16,
    /// Bit `i` set: remote sequence `ack - 1 - i` was received.
    pub ack_bits: u32,
}

impl DataHeader {
    /// Writes the header into the first [`HEADER_LEN`] bytes of `out`.
    pub fn write(&self, out: &mut [u8; HEADER_LEN]) {
        out[0] = (TYPE_DATA << 4) | (self.flags & 0x0f);
        out[1..5].copy_from_slice(&self.client_id.to_le_bytes());
        out[5..7].copy_from_slice(&self.seq.to_le_bytes());
        out[7..9].copy_from_slice(&self.ack.to_le_bytes());
        out[9..13].copy_from_slice(&self.ack_bits.to_le_bytes());
    }

    /// Parses the header of a data datagram, returning it and the body after it.
    pub fn parse(datagram: &[u8]) -> Result<(Self, &[u8]), DecodeError> {
        if datagram.len() > MAX_DATAGRAM {
            return Err(DecodeError::Oversized(datagram.len()));
        }
        let mut r = Reader::new(datagram);
        let first = r.u8("data header")?;
        if first >> 4 != TYPE_DATA {
            return Err(DecodeError::UnknownPacketType(first >> 4));
        }
        let flags = first & 0x0f;
        if flags & !(FLAG_HAS_ACK | FLAG_COMPRESSED) != 0 {
            return Err(DecodeError::BadValue {
                what: "header flags",
                value: flags as u32,
            });
        }
        let header = DataHeader {
            flags,
            client_id: r.u32("data header")?,
            seq: r.u16("data header")?,
            ack: r.u16("data header")?,
            ack_bits: r.u32("data header")?,
        };
        Ok((header, &datagram[HEADER_LEN..]))
    }
}

/// One unit inside a data body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk<'a> {
    /// A guaranteed-ordered message, whole or one fragment of it.
    Ordered {
        /// Low 16 bits of the message id.
        id: u16,
        /// Whole message length.
        total: u32,
        /// Offset of `data` in the message.
        offset: u32,
        /// The bytes.
        data: &'a [u8],
    },
    /// A guaranteed-quickest item.
    Quickest {
        /// Low 16 bits of the item id.
        id: u16,
        /// The bytes.
        data: &'a [u8],
    },
    /// A most-recent-state payload, whole or one fragment of it.
    State {
        /// Low 16 bits of the state id.
        id: u16,
        /// Whole payload length.
        total: u32,
        /// Offset of `data` in the payload.
        offset: u32,
        /// The bytes.
        data: &'a [u8],
    },
    /// An unguaranteed event.
    Event {
        /// The bytes.
        data: &'a [u8],
    },
    /// The rate the sender can receive.
    Rate(RateAnnounce),
    /// The sender closes the connection.
    Disconnect {
        /// Wire code of the reason.
        reason: u8,
    },
}

impl Chunk<'_> {
    /// Encoded size in bytes.
    pub fn encoded_len(&self) -> usize {
        match self {
            Chunk::Ordered { total, data, .. } | Chunk::State { total, data, .. } => {
                if *total as usize == data.len() {
                    WHOLE_CHUNK_OVERHEAD + data.len()
                } else {
                    FRAG_CHUNK_OVERHEAD + data.len()
                }
            }
            Chunk::Quickest { data, .. } => WHOLE_CHUNK_OVERHEAD + data.len(),
            Chunk::Event { data } => EVENT_CHUNK_OVERHEAD + data.len(),
            Chunk::Rate(_) => RATE_CHUNK_LEN,
            Chunk::Disconnect { .. } => DISCONNECT_CHUNK_LEN,
        }
    }

    /// Appends the chunk to `w`. Payloads longer than `u16::MAX` are a caller bug.
    pub fn write(&self, w: &mut Writer<'_>) -> Result<(), BufferFull> {
        if w.remaining() < self.encoded_len() {
            return Err(BufferFull);
        }
        let len16 = |d: &[u8]| u16::try_from(d.len()).map_err(|_| BufferFull);
        match *self {
            Chunk::Ordered {
                id,
                total,
                offset,
                data,
            }
            | Chunk::State {
                id,
                total,
                offset,
                data,
            } => {
                let ordered = matches!(self, Chunk::Ordered { .. });
                if total as usize == data.len() {
                    w.u8(if ordered { TAG_ORDERED } else { TAG_STATE })?;
                    w.u16(id)?;
                    w.u16(len16(data)?)?;
                } else {
                    w.u8(if ordered {
                        TAG_ORDERED_FRAG
                    } else {
                        TAG_STATE_FRAG
                    })?;
                    w.u16(id)?;
                    w.u32(total)?;
                    w.u32(offset)?;
                    w.u16(len16(data)?)?;
                }
                w.put(data)
            }
            Chunk::Quickest { id, data } => {
                w.u8(TAG_QUICKEST)?;
                w.u16(id)?;
                w.u16(len16(data)?)?;
                w.put(data)
            }
            Chunk::Event { data } => {
                w.u8(TAG_EVENT)?;
                w.u16(len16(data)?)?;
                w.put(data)
            }
            Chunk::Rate(rate) => {
                w.u8(TAG_RATE)?;
                w.u32(rate.bytes_per_sec)?;
                w.u16(rate.packets_per_sec)
            }
            Chunk::Disconnect { reason } => {
                w.u8(TAG_DISCONNECT)?;
                w.u8(reason)
            }
        }
    }
}

/// Iterates over the chunks of a data body, validating each header.
#[derive(Debug, Clone)]
pub struct Chunks<'a> {
    reader: Reader<'a>,
    failed: bool,
}

impl<'a> Chunks<'a> {
    /// Chunks of `body`.
    pub fn new(body: &'a [u8]) -> Self {
        Self {
            reader: Reader::new(body),
            failed: false,
        }
    }

    fn fragment(
        r: &mut Reader<'a>,
        what: &'static str,
    ) -> Result<(u16, u32, u32, &'a [u8]), DecodeError> {
        let id = r.u16(what)?;
        let total = r.u32(what)?;
        let offset = r.u32(what)?;
        let len = r.u16(what)?;
        if len == 0 {
            return Err(FragmentError::Empty.into());
        }
        if offset as u64 + len as u64 > total as u64 {
            return Err(FragmentError::OutOfBounds {
                offset,
                len: len as u32,
                total,
            }
            .into());
        }
        let data = r.bytes(len as usize, what)?;
        Ok((id, total, offset, data))
    }

    fn read(&mut self) -> Result<Chunk<'a>, DecodeError> {
        let r = &mut self.reader;
        let tag = r.u8("chunk tag")?;
        Ok(match tag {
            TAG_ORDERED | TAG_STATE => {
                let what = if tag == TAG_ORDERED {
                    "ordered chunk"
                } else {
                    "state chunk"
                };
                let id = r.u16(what)?;
                let len = r.u16(what)?;
                let data = r.bytes(len as usize, what)?;
                let (total, offset) = (len as u32, 0);
                if tag == TAG_ORDERED {
                    Chunk::Ordered {
                        id,
                        total,
                        offset,
                        data,
                    }
                } else {
                    Chunk::State {
                        id,
                        total,
                        offset,
                        data,
                    }
                }
            }
            TAG_ORDERED_FRAG => {
                let (id, total, offset, data) = Self::fragment(r, "ordered fragment")?;
                Chunk::Ordered {
                    id,
                    total,
                    offset,
                    data,
                }
            }
            TAG_STATE_FRAG => {
                let (id, total, offset, data) = Self::fragment(r, "state fragment")?;
                Chunk::State {
                    id,
                    total,
                    offset,
                    data,
                }
            }
            TAG_QUICKEST => {
                let id = r.u16("quickest chunk")?;
                let len = r.u16("quickest chunk")?;
                Chunk::Quickest {
                    id,
                    data: r.bytes(len as usize, "quickest chunk")?,
                }
            }
            TAG_EVENT => {
                let len = r.u16("event chunk")?;
                Chunk::Event {
                    data: r.bytes(len as usize, "event chunk")?,
                }
            }
            TAG_RATE => Chunk::Rate(RateAnnounce {
                bytes_per_sec: r.u32("rate chunk")?,
                packets_per_sec: r.u16("rate chunk")?,
            }),
            TAG_DISCONNECT => Chunk::Disconnect {
                reason: r.u8("disconnect chunk")?,
            },
            other => return Err(DecodeError::UnknownChunk(other)),
        })
    }
}

impl<'a> Iterator for Chunks<'a> {
    type Item = Result<Chunk<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.reader.remaining() == 0 {
            return None;
        }
        let item = self.read();
        self.failed = item.is_err();
        Some(item)
    }
}

/// Validates every chunk of `body` without acting on any.
pub fn validate_body(body: &[u8]) -> Result<(), DecodeError> {
    Chunks::new(body).try_for_each(|c| c.map(|_| ()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_chunk() -> impl Strategy<Value = (u8, u16, u32, u32, Vec<u8>)> {
        (
            0u8..8,
            any::<u16>(),
            any::<u32>(),
            any::<u32>(),
            proptest::collection::vec(any::<u8>(), 1..64),
        )
    }

    fn build<'a>(kind: u8, id: u16, a: u32, b: u32, data: &'a [u8]) -> Chunk<'a> {
        // Kinds 6 and 7 are whole ordered and state chunks.
        let (kind, extra) = match kind {
            6 | 7 => (kind - 6, 0),
            k => (k, a % 3000),
        };
        let total = data.len() as u32 + extra;
        let offset = b % (extra + 1);
        let rate = RateAnnounce {
            bytes_per_sec: a,
            packets_per_sec: id,
        };
        crate::fuzzing::chunk_of(kind, id, total, offset, data, rate, id as u8)
    }

    proptest! {
        #[test]
        fn chunks_round_trip(specs in proptest::collection::vec(arb_chunk(), 0..10)) {
            let mut buf = vec![0u8; 4096];
            let chunks: Vec<Chunk<'_>> = specs.iter().map(|(k, id, a, b, d)| build(*k, *id, *a, *b, d)).collect();
            let mut w = Writer::new(&mut buf);
            for c in &chunks {
                let before = w.len();
                c.write(&mut w).unwrap();
                prop_assert_eq!(w.len() - before, c.encoded_len());
            }
            let len = w.len();
            let parsed: Vec<Chunk<'_>> = Chunks::new(&buf[..len]).collect::<Result<_, _>>().unwrap();
            prop_assert_eq!(parsed, chunks);
        }

        #[test]
        fn arbitrary_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..300)) {
            for chunk in Chunks::new(&body) {
                if let Ok(Chunk::Ordered { total, offset, data, .. } | Chunk::State { total, offset, data, .. }) = chunk {
                    prop_assert!(offset as u64 + data.len() as u64 <= total as u64);
                }
            }
        }

        #[test]
        fn header_round_trip(flags in 0u8..4, client_id: u32, seq: u16, ack: u16, ack_bits: u32) {
            let h = DataHeader { flags, client_id, seq, ack, ack_bits };
            let mut out = [0u8; HEADER_LEN];
            h.write(&mut out);
            let (back, body) = DataHeader::parse(&out).unwrap();
            prop_assert_eq!(back, h);
            prop_assert!(body.is_empty());
        }

        #[test]
        fn header_parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..1500)) {
            let _ = DataHeader::parse(&bytes);
        }
    }

    #[test]
    fn rejects_bad_fragments() {
        let mut buf = [0u8; 32];
        let mut w = Writer::new(&mut buf);
        w.u8(TAG_ORDERED_FRAG).unwrap();
        w.u16(1).unwrap();
        w.u32(10).unwrap(); // total
        w.u32(8).unwrap(); // offset
        w.u16(4).unwrap(); // len: 8 + 4 > 10
        w.put(&[0; 4]).unwrap();
        let n = w.len();
        assert!(matches!(
            validate_body(&buf[..n]),
            Err(DecodeError::Fragment(FragmentError::OutOfBounds { .. }))
        ));
        assert!(matches!(
            validate_body(&[0x42]),
            Err(DecodeError::UnknownChunk(0x42))
        ));
        assert!(matches!(
            validate_body(&[TAG_EVENT, 5, 0, 1]),
            Err(DecodeError::Truncated { .. })
        ));
        assert!(DataHeader::parse(&[0u8; 1401]).is_err());
    }
}
