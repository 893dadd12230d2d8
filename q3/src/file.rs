//! The `.dm_68` file: records of (little-endian `i32` message sequence,
//! `i32` length, message bytes), ended by a record whose length is -1.
//!
//! Quake 3 stops playback at a length of -1 (the sequence is -1 too in every
//! recorder, but is not checked), and silently at a record cut short; here
//! a missing end marker is reported as [`Q3Error::Truncated`] after the
//! complete records, so tools can replay them and still tell the user.

use fields::{BitReader, BitSource, HuffmanCode, HuffmanReader};

use crate::client::Q3Client;
use crate::error::Q3Error;
use crate::message::{svc, ParsedMessage, MAX_MSGLEN};

/// Bytes of a record header.
pub const RECORD_HEADER_LEN: usize = 8;
/// The length field of the end marker.
pub const END_MARKER_LENGTH: i32 = -1;

/// One complete record of a demo file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Position in the file, from 0.
    pub index: usize,
    /// Byte offset of the record header in the file.
    pub offset: usize,
    /// The server message sequence (`serverMessageSequence`), which is also
    /// the message number of a snapshot it carries.
    pub sequence: i32,
    /// The message bytes (Huffman bitstream).
    pub message: &'a [u8],
}

/// Iterates over the records of a `.dm_68` file held in memory.
///
/// Yields `Ok(record)` for every complete record; the end marker ends the
/// iteration. A file without one ends with a single `Err(Q3Error::Truncated)`
/// after its complete records; a bad length is `Err(Q3Error::BadLength)`.
/// Nothing follows an error.
#[derive(Debug, Clone)]
pub struct Dm68Reader<'a> {
    data: &'a [u8],
    offset: usize,
    index: usize,
    state: ReaderState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReaderState {
    Reading,
    EndMarker,
    Failed,
}

impl<'a> Dm68Reader<'a> {
    /// A reader over `data`, after checking by content that it is a demo
    /// (see [`check_dm68`]).
    pub fn new(data: &'a [u8]) -> Result<Self, Q3Error> {
        check_dm68(data)?;
        Ok(Self::new_unchecked(data))
    }

    /// A reader over `data` without the content check: any input is still
    /// handled safely, record by record.
    pub fn new_unchecked(data: &'a [u8]) -> Self {
        Dm68Reader {
            data,
            offset: 0,
            index: 0,
            state: ReaderState::Reading,
        }
    }

    /// Complete records returned so far.
    pub fn records_read(&self) -> usize {
        self.index
    }

    /// Byte offset of the next record header.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Whether the end marker has been reached.
    pub fn reached_end_marker(&self) -> bool {
        self.state == ReaderState::EndMarker
    }

    /// Bytes after the end marker (Quake 3 ignores them), once reached.
    pub fn trailing_bytes(&self) -> usize {
        if self.reached_end_marker() {
            self.data.len() - self.offset
        } else {
            0
        }
    }

    fn fail(&mut self, error: Q3Error) -> Option<Result<Record<'a>, Q3Error>> {
        self.state = ReaderState::Failed;
        Some(Err(error))
    }
}

impl<'a> Iterator for Dm68Reader<'a> {
    type Item = Result<Record<'a>, Q3Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.state != ReaderState::Reading {
            return None;
        }
        let rest = &self.data[self.offset..];
        let truncated = |needed: usize| Q3Error::Truncated {
            record: self.index,
            offset: self.offset,
            complete_records: self.index,
            needed,
            available: rest.len(),
        };
        let Some((sequence, length)) = read_header(rest) else {
            return self.fail(truncated(RECORD_HEADER_LEN));
        };
        if length == END_MARKER_LENGTH {
            self.state = ReaderState::EndMarker;
            self.offset += RECORD_HEADER_LEN;
            return None;
        }
        let Some(len) = usize::try_from(length).ok().filter(|&l| l <= MAX_MSGLEN) else {
            let error = Q3Error::BadLength {
                record: self.index,
                offset: self.offset,
                length,
                max: MAX_MSGLEN,
            };
            return self.fail(error);
        };
        let Some(message) = rest.get(RECORD_HEADER_LEN..RECORD_HEADER_LEN + len) else {
            return self.fail(truncated(RECORD_HEADER_LEN + len));
        };
        let record = Record {
            index: self.index,
            offset: self.offset,
            sequence,
            message,
        };
        self.index += 1;
        self.offset += RECORD_HEADER_LEN + len;
        Some(Ok(record))
    }
}

fn read_header(bytes: &[u8]) -> Option<(i32, i32)> {
    let sequence = i32::from_le_bytes(bytes.get(0..4)?.try_into().ok()?);
    let length = i32::from_le_bytes(bytes.get(4..8)?.try_into().ok()?);
    Some((sequence, length))
}

/// Whether `data` (a whole file or its first bytes) looks like a Quake 3
/// protocol 68 demo, judged by content: see [`check_dm68`].
pub fn looks_like_dm68(data: &[u8]) -> bool {
    check_dm68(data).is_ok()
}

/// Checks by content that `data` (a whole file or its first bytes) is a
/// `.dm_68` demo: the first record has a plausible sequence and a length in
/// `1..=MAX_MSGLEN`, and its message decodes, through Quake 3's Huffman
/// code, to a reliable acknowledge followed by a valid server command byte.
/// A file that is only an end marker (an empty recording) also passes.
pub fn check_dm68(data: &[u8]) -> Result<(), Q3Error> {
    let not = |reason: String| Err(Q3Error::NotDm68 { reason });
    let Some((sequence, length)) = read_header(data) else {
        return not(format!(
            "{} bytes is shorter than a record header",
            data.len()
        ));
    };
    if length == END_MARKER_LENGTH && sequence == END_MARKER_LENGTH {
        return Ok(());
    }
    if sequence < 0 {
        return not(format!("first record has negative sequence {sequence}"));
    }
    let Some(len) = usize::try_from(length)
        .ok()
        .filter(|&l| (1..=MAX_MSGLEN).contains(&l))
    else {
        return not(format!(
            "first record length {length} is outside 1..={MAX_MSGLEN}"
        ));
    };
    // A sniffing caller may hand over only the start of the file.
    let message = &data[RECORD_HEADER_LEN..data.len().min(RECORD_HEADER_LEN + len)];
    let mut src = HuffmanReader::new(BitReader::new(message), HuffmanCode::quake3());
    let command = src.get_bits(32).and_then(|_| src.get_bits(8));
    match command {
        Ok(byte) if svc::name(byte as u8).is_some() => Ok(()),
        Ok(byte) => not(format!("first message starts with command byte {byte}")),
        Err(e) => not(format!("first message does not decode: {e}")),
    }
}

/// A record and what its message said.
#[derive(Debug, Clone)]
pub struct DecodedRecord<'a> {
    /// The record.
    pub record: Record<'a>,
    /// Its parsed message.
    pub message: ParsedMessage,
}

/// Reads and parses a demo record by record: a [`Dm68Reader`] feeding a
/// [`Q3Client`]. Errors name the record; nothing follows an error.
#[derive(Debug, Clone)]
pub struct Dm68Decoder<'a> {
    reader: Dm68Reader<'a>,
    client: Q3Client,
    failed: bool,
}

impl<'a> Dm68Decoder<'a> {
    /// A decoder over a whole file, after the content check.
    pub fn new(data: &'a [u8]) -> Result<Self, Q3Error> {
        Ok(Self::from_reader(Dm68Reader::new(data)?))
    }

    /// A decoder over the records of `reader`.
    pub fn from_reader(reader: Dm68Reader<'a>) -> Self {
        Dm68Decoder {
            reader,
            client: Q3Client::new(),
            failed: false,
        }
    }

    /// The client state after the records decoded so far.
    pub fn client(&self) -> &Q3Client {
        &self.client
    }

    /// The underlying record reader.
    pub fn reader(&self) -> &Dm68Reader<'a> {
        &self.reader
    }
}

impl<'a> Iterator for Dm68Decoder<'a> {
    type Item = Result<DecodedRecord<'a>, Q3Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let record = match self.reader.next()? {
            Ok(record) => record,
            Err(error) => {
                self.failed = true;
                return Some(Err(error));
            }
        };
        match self.client.parse_message(record.sequence, record.message) {
            Ok(message) => Some(Ok(DecodedRecord { record, message })),
            Err(source) => {
                self.failed = true;
                Some(Err(Q3Error::Message {
                    record: record.index,
                    offset: record.offset,
                    sequence: record.sequence,
                    source,
                }))
            }
        }
    }
}

/// Writes a `.dm_68` file: each message as a record (sequence, length,
/// bytes: all little-endian), then the end marker (`-1`, `-1`), as Quake 3's
/// `record` command does.
#[derive(Debug)]
pub struct Dm68Writer<W: std::io::Write> {
    out: W,
    records: usize,
}

impl<W: std::io::Write> Dm68Writer<W> {
    /// A writer that has written nothing yet.
    pub fn new(out: W) -> Self {
        Dm68Writer { out, records: 0 }
    }

    /// Appends one server message (its bytes after the netchan header).
    /// Messages longer than [`MAX_MSGLEN`] are refused (no reader accepts them).
    pub fn write_message(&mut self, sequence: i32, message: &[u8]) -> std::io::Result<()> {
        if message.len() > MAX_MSGLEN {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("message of {} bytes exceeds {MAX_MSGLEN}", message.len()),
            ));
        }
        self.out.write_all(&sequence.to_le_bytes())?;
        self.out.write_all(&(message.len() as i32).to_le_bytes())?;
        self.out.write_all(message)?;
        self.records += 1;
        Ok(())
    }

    /// Records written so far.
    pub fn records(&self) -> usize {
        self.records
    }

    /// Writes the end marker and returns the output.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.write_all(&END_MARKER_LENGTH.to_le_bytes())?;
        self.out.write_all(&END_MARKER_LENGTH.to_le_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}
