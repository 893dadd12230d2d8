//! Quake 3's netchan framing, both ends: sequence numbers, the qport,
//! ioquake3's challenge word, fragments and the legacy XOR scrambling.
//!
//! A sequenced datagram starts with a little-endian 32-bit sequence number
//! (its high bit marks a fragment); a client adds its 16-bit qport; the
//! [`Framing::Ioq3`] framing then adds `challenge ^ (sequence * challenge)`
//! so spoofed packets are dropped; a fragment adds its start offset and
//! length (16 bits each). The [`Framing::Legacy`] framing (Quake 3 1.32's:
//! protocol 68, and OpenArena's "71") has no challenge word and scrambles
//! the payloads instead ([`scramble`]).
//!
//! The protocol *number* does not tell the framing: ioquake3 speaks 71 with
//! the challenge word and 68 without, while OpenArena's servers and clients
//! (`com_legacyprotocol 71`) speak 71 without. [`detect_framing`] tells
//! them apart from the first sequenced datagram of the other end.
//! Messages of 1300 bytes or more travel as 1300-byte fragments; the last
//! one is shorter (possibly empty). Packets at or below the last sequence
//! received are dropped, as is a fragment that does not continue the
//! message being reassembled.

use super::error::NetchanError;
use crate::message::MAX_MSGLEN;

/// Largest datagram Quake 3 sends (`MAX_PACKETLEN`).
pub const MAX_PACKETLEN: usize = 1400;
/// Size of every fragment but the last (`FRAGMENT_SIZE`).
pub const FRAGMENT_SIZE: usize = MAX_PACKETLEN - 100;
/// The sequence number's fragment flag.
const FRAGMENT_BIT: u32 = 1 << 31;

/// The two protocols an ioquake3 server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// id's protocol 68: no challenge word, XOR-scrambled payloads.
    V68,
    /// ioquake3's protocol 71: a challenge word in every header, no scrambling.
    V71,
}

impl Protocol {
    /// The protocol number sent in the userinfo.
    pub fn number(self) -> u32 {
        match self {
            Protocol::V68 => 68,
            Protocol::V71 => 71,
        }
    }

    /// The protocol of a number, if it is one of the two.
    pub fn from_number(number: u32) -> Option<Protocol> {
        match number {
            68 => Some(Protocol::V68),
            71 => Some(Protocol::V71),
            _ => None,
        }
    }

    /// The framing a plain ioquake3 speaks with this number: the challenge
    /// word for 71, the legacy framing for 68.
    pub fn default_framing(self) -> Framing {
        match self {
            Protocol::V68 => Framing::Legacy,
            Protocol::V71 => Framing::Ioq3,
        }
    }
}

/// How sequenced packets are framed, whatever the protocol number says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Framing {
    /// Quake 3 1.32's: no challenge word, payloads XOR-scrambled (protocol
    /// 68, and OpenArena's 71).
    Legacy,
    /// ioquake3's: a challenge word in every header, no scrambling.
    Ioq3,
}

impl Framing {
    /// Whether headers carry the challenge word.
    pub fn has_challenge_word(self) -> bool {
        self == Framing::Ioq3
    }

    /// Whether payloads are scrambled.
    pub fn scrambles(self) -> bool {
        self == Framing::Legacy
    }

    /// Its name in summaries: `legacy` or `ioq3`.
    pub fn name(self) -> &'static str {
        match self {
            Framing::Legacy => "legacy",
            Framing::Ioq3 => "ioq3",
        }
    }
}

/// Which end of the channel this is: a client sends its qport, a server
/// reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The client's end (sends the qport).
    Client,
    /// The server's end (reads the qport).
    Server,
}

/// The framing of the first sequenced datagram received from the other end
/// of a connection made with `challenge`: [`Framing::Ioq3`] when the word
/// after the sequence (and, from a client, the qport) is that sequence's
/// challenge word, else [`Framing::Legacy`]. A legacy datagram passes for
/// ioquake3's only when its first four payload bytes happen to equal that
/// word (one chance in 2^32); `None` when the datagram is too short to tell.
pub fn detect_framing(datagram: &[u8], from: Side, challenge: i32) -> Option<Framing> {
    let word_at = match from {
        Side::Server => 4,
        Side::Client => 6,
    };
    let raw = u32::from_le_bytes(datagram.get(..4)?.try_into().ok()?);
    let sequence = (raw & !FRAGMENT_BIT) as i32;
    let word = datagram.get(word_at..word_at + 4)?;
    let word = i32::from_le_bytes(word.try_into().ok()?);
    Some(if word == challenge_word(challenge, sequence) {
        Framing::Ioq3
    } else {
        Framing::Legacy
    })
}

/// The challenge word of protocol 71 headers (`NETCHAN_GENCHECKSUM`).
pub fn challenge_word(challenge: i32, sequence: i32) -> i32 {
    challenge ^ sequence.wrapping_mul(challenge)
}

/// A reassembled server message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    /// Its sequence number (`serverMessageSequence`).
    pub sequence: i32,
    /// The message after the netchan header (still scrambled under 68).
    pub payload: Vec<u8>,
    /// Whether it came in fragments.
    pub fragmented: bool,
}

/// Why a datagram produced no message. None of these is an error of the
/// connection: Quake 3 drops such packets silently; they are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// At or below the last sequence received (late or duplicated).
    OutOfOrder,
    /// Protocol 71's challenge word did not match.
    BadChallengeWord,
    /// A fragment of a message still incomplete.
    Fragment,
    /// A fragment that does not continue the message being reassembled.
    MissedFragment,
}

/// Counters of what [`Netchan::process`] saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct NetchanStats {
    /// Messages delivered.
    pub delivered: u64,
    /// Of those, reassembled from fragments.
    pub reassembled: u64,
    /// Fragments received.
    pub fragments: u64,
    /// Packets dropped as late or duplicated.
    pub out_of_order: u64,
    /// Sequence numbers skipped (packets lost on the way).
    pub lost: u64,
    /// Packets with a wrong challenge word.
    pub bad_challenge_word: u64,
    /// Fragments that did not continue their message.
    pub missed_fragments: u64,
}

/// One end of a netchan.
#[derive(Debug, Clone)]
pub struct Netchan {
    framing: Framing,
    side: Side,
    qport: u16,
    challenge: i32,
    outgoing_sequence: i32,
    incoming_sequence: i32,
    fragment_sequence: i32,
    fragments: Vec<u8>,
    stats: NetchanStats,
}

impl Netchan {
    /// A client's channel in the framing ioquake3 uses for `protocol`, as
    /// `Netchan_Setup` opens it: next outgoing sequence 1.
    pub fn new(protocol: Protocol, qport: u16, challenge: i32) -> Self {
        Netchan::client(protocol.default_framing(), qport, challenge)
    }

    /// A client's channel in `framing`.
    pub fn client(framing: Framing, qport: u16, challenge: i32) -> Self {
        Netchan::open(framing, Side::Client, qport, challenge)
    }

    /// A server's channel to a client in `framing` (the qport is the one
    /// the client announced; the server does not send it).
    pub fn server(framing: Framing, qport: u16, challenge: i32) -> Self {
        Netchan::open(framing, Side::Server, qport, challenge)
    }

    fn open(framing: Framing, side: Side, qport: u16, challenge: i32) -> Self {
        Netchan {
            framing,
            side,
            qport,
            challenge,
            outgoing_sequence: 1,
            incoming_sequence: 0,
            fragment_sequence: 0,
            fragments: Vec::new(),
            stats: NetchanStats::default(),
        }
    }

    /// The sequence the next message will carry.
    pub fn outgoing_sequence(&self) -> i32 {
        self.outgoing_sequence
    }

    /// The last sequence received.
    pub fn incoming_sequence(&self) -> i32 {
        self.incoming_sequence
    }

    /// The framing.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// Changes the framing (once the other end's is known).
    pub fn set_framing(&mut self, framing: Framing) {
        self.framing = framing;
    }

    /// The qport: ours on a client, the client's on a server (updated from
    /// each datagram it sends).
    pub fn qport(&self) -> u16 {
        self.qport
    }

    /// What was received so far.
    pub fn stats(&self) -> NetchanStats {
        self.stats
    }

    fn header(&self, sequence: u32, out: &mut Vec<u8>) {
        out.extend_from_slice(&sequence.to_le_bytes());
        if self.side == Side::Client {
            out.extend_from_slice(&self.qport.to_le_bytes());
        }
        if self.framing.has_challenge_word() {
            let word = challenge_word(self.challenge, self.outgoing_sequence);
            out.extend_from_slice(&word.to_le_bytes());
        }
    }

    /// Frames `message` as one datagram, or as fragments when it is
    /// [`FRAGMENT_SIZE`] bytes or longer, appending each to `out`.
    pub fn transmit(&mut self, message: &[u8], out: &mut Vec<Vec<u8>>) -> Result<(), NetchanError> {
        if message.len() > MAX_MSGLEN {
            return Err(NetchanError::MessageTooLong {
                len: message.len(),
                max: MAX_MSGLEN,
            });
        }
        if message.len() < FRAGMENT_SIZE {
            let mut datagram = Vec::with_capacity(message.len() + 10);
            self.header(self.outgoing_sequence as u32, &mut datagram);
            datagram.extend_from_slice(message);
            out.push(datagram);
        } else {
            let mut start = 0;
            loop {
                let len = FRAGMENT_SIZE.min(message.len() - start);
                let mut datagram = Vec::with_capacity(len + 14);
                self.header(self.outgoing_sequence as u32 | FRAGMENT_BIT, &mut datagram);
                datagram.extend_from_slice(&(start as u16).to_le_bytes());
                datagram.extend_from_slice(&(len as u16).to_le_bytes());
                datagram.extend_from_slice(&message[start..start + len]);
                out.push(datagram);
                start += len;
                // A message that is a whole number of fragments ends with an
                // empty one, so the receiver knows nothing follows.
                if len < FRAGMENT_SIZE {
                    break;
                }
            }
        }
        self.outgoing_sequence = self.outgoing_sequence.wrapping_add(1);
        Ok(())
    }

    /// Reads a sequenced datagram from the other end: the message it
    /// completes, or why it completes none.
    pub fn process(&mut self, datagram: &[u8]) -> Result<Result<Incoming, Dropped>, NetchanError> {
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8], NetchanError> {
            let bytes = datagram.get(at..at + n).ok_or(NetchanError::Truncated {
                len: datagram.len(),
            })?;
            at += n;
            Ok(bytes)
        };
        let raw = u32::from_le_bytes(take(4)?.try_into().unwrap_or_default());
        let fragmented = raw & FRAGMENT_BIT != 0;
        let sequence = (raw & !FRAGMENT_BIT) as i32;
        if self.side == Side::Server {
            let qport = u16::from_le_bytes(take(2)?.try_into().unwrap_or_default());
            self.qport = qport;
        }
        if self.framing.has_challenge_word() {
            let word = i32::from_le_bytes(take(4)?.try_into().unwrap_or_default());
            if word != challenge_word(self.challenge, sequence) {
                self.stats.bad_challenge_word += 1;
                return Ok(Err(Dropped::BadChallengeWord));
            }
        }
        let fragment = if fragmented {
            let start = u16::from_le_bytes(take(2)?.try_into().unwrap_or_default());
            let len = u16::from_le_bytes(take(2)?.try_into().unwrap_or_default());
            Some((usize::from(start), usize::from(len)))
        } else {
            None
        };
        let body = &datagram[at..];
        if sequence <= self.incoming_sequence {
            self.stats.out_of_order += 1;
            return Ok(Err(Dropped::OutOfOrder));
        }
        let Some((start, len)) = fragment else {
            self.accept(sequence);
            self.stats.delivered += 1;
            return Ok(Ok(Incoming {
                sequence,
                payload: body.to_vec(),
                fragmented: false,
            }));
        };
        self.stats.fragments += 1;
        if sequence != self.fragment_sequence {
            self.fragment_sequence = sequence;
            self.fragments.clear();
        }
        if start != self.fragments.len() {
            // Keep what we have: the missing piece may still be resent.
            self.stats.missed_fragments += 1;
            return Ok(Err(Dropped::MissedFragment));
        }
        if len > body.len() || self.fragments.len() + len > MAX_MSGLEN {
            return Err(NetchanError::BadFragment {
                start,
                len,
                available: body.len(),
            });
        }
        self.fragments.extend_from_slice(&body[..len]);
        if len == FRAGMENT_SIZE {
            return Ok(Err(Dropped::Fragment));
        }
        self.accept(sequence);
        self.stats.delivered += 1;
        self.stats.reassembled += 1;
        Ok(Ok(Incoming {
            sequence,
            payload: std::mem::take(&mut self.fragments),
            fragmented: true,
        }))
    }

    fn accept(&mut self, sequence: i32) {
        let gap = sequence - (self.incoming_sequence + 1);
        self.stats.lost += gap.max(0) as u64;
        self.incoming_sequence = sequence;
    }
}

/// Protocol 68's XOR scrambling of `payload[start..]` (its own inverse).
///
/// The key starts as the low byte of `seed` and, before each byte, takes in
/// one character of `text` (cycled; `%` and bytes above 127 count as `.`),
/// shifted left by one at odd positions.
pub fn scramble(payload: &mut [u8], start: usize, seed: i32, text: &[u8]) {
    let mut key = seed as u8;
    let mut index = 0usize;
    for (i, byte) in payload.iter_mut().enumerate().skip(start) {
        if index >= text.len() || text[index] == 0 {
            index = 0;
        }
        let c = match text.get(index).copied().unwrap_or(0) {
            c if c > 127 || c == b'%' => b'.',
            c => c,
        };
        key ^= c << (i & 1);
        index += 1;
        *byte ^= key;
    }
}

/// Where scrambling starts in a client message (after serverId, message
/// acknowledge and reliable acknowledge: `CL_ENCODE_START`).
pub const CLIENT_SCRAMBLE_START: usize = 12;
/// Where scrambling starts in a server message (after the reliable
/// acknowledge: `SV_ENCODE_START`).
pub const SERVER_SCRAMBLE_START: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn server_datagrams(
        protocol: Protocol,
        challenge: i32,
        sequence: i32,
        message: &[u8],
    ) -> Vec<Vec<u8>> {
        // The server's framing: no qport.
        let word = |out: &mut Vec<u8>| {
            if protocol.default_framing().has_challenge_word() {
                out.extend_from_slice(&challenge_word(challenge, sequence).to_le_bytes());
            }
        };
        if message.len() < FRAGMENT_SIZE {
            let mut d = (sequence as u32).to_le_bytes().to_vec();
            word(&mut d);
            d.extend_from_slice(message);
            return vec![d];
        }
        let mut out = Vec::new();
        let mut start = 0;
        loop {
            let len = FRAGMENT_SIZE.min(message.len() - start);
            let mut d = (sequence as u32 | FRAGMENT_BIT).to_le_bytes().to_vec();
            word(&mut d);
            d.extend_from_slice(&(start as u16).to_le_bytes());
            d.extend_from_slice(&(len as u16).to_le_bytes());
            d.extend_from_slice(&message[start..start + len]);
            out.push(d);
            start += len;
            if len < FRAGMENT_SIZE {
                return out;
            }
        }
    }

    #[test]
    fn client_header_has_qport_and_challenge_word() {
        let mut chan = Netchan::new(Protocol::V71, 0x1234, 77);
        let mut out = Vec::new();
        chan.transmit(&[9, 8, 7], &mut out).unwrap();
        assert_eq!(out.len(), 1);
        let d = &out[0];
        assert_eq!(&d[..4], &1u32.to_le_bytes());
        assert_eq!(&d[4..6], &0x1234u16.to_le_bytes());
        assert_eq!(&d[6..10], &challenge_word(77, 1).to_le_bytes());
        assert_eq!(&d[10..], &[9, 8, 7]);
        let mut chan = Netchan::new(Protocol::V68, 5, 77);
        let mut out = Vec::new();
        chan.transmit(&[1], &mut out).unwrap();
        assert_eq!(out[0], vec![1, 0, 0, 0, 5, 0, 1]);
        assert_eq!(chan.outgoing_sequence(), 2);
    }

    #[test]
    fn exact_multiples_of_the_fragment_size_end_with_an_empty_fragment() {
        let mut chan = Netchan::new(Protocol::V68, 1, 0);
        let mut out = Vec::new();
        chan.transmit(&vec![3u8; 2 * FRAGMENT_SIZE], &mut out)
            .unwrap();
        assert_eq!(out.len(), 3);
        assert_eq!(out[2].len(), 4 + 2 + 4);
        assert_eq!(&out[2][6..10], &[0x28, 0x0a, 0, 0]); // start 2600, length 0
    }

    #[test]
    fn drops_duplicates_late_packets_and_spoofed_words() {
        let mut chan = Netchan::new(Protocol::V71, 1, 4242);
        let d5 = server_datagrams(Protocol::V71, 4242, 5, b"five").remove(0);
        let d3 = server_datagrams(Protocol::V71, 4242, 3, b"three").remove(0);
        let got = chan.process(&d5).unwrap().unwrap();
        assert_eq!((got.sequence, got.payload.as_slice()), (5, &b"five"[..]));
        assert_eq!(chan.process(&d5).unwrap(), Err(Dropped::OutOfOrder));
        assert_eq!(chan.process(&d3).unwrap(), Err(Dropped::OutOfOrder));
        let spoofed = server_datagrams(Protocol::V71, 1, 6, b"six").remove(0);
        assert_eq!(
            chan.process(&spoofed).unwrap(),
            Err(Dropped::BadChallengeWord)
        );
        let stats = chan.stats();
        assert_eq!(
            (
                stats.delivered,
                stats.out_of_order,
                stats.lost,
                stats.bad_challenge_word
            ),
            (1, 2, 4, 1)
        );
        assert!(chan.process(&[1, 2]).is_err());
    }

    #[test]
    fn a_missing_fragment_holds_the_message_back() {
        let message: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
        let parts = server_datagrams(Protocol::V68, 0, 9, &message);
        assert_eq!(parts.len(), 3);
        let mut chan = Netchan::new(Protocol::V68, 1, 0);
        assert_eq!(chan.process(&parts[0]).unwrap(), Err(Dropped::Fragment));
        assert_eq!(
            chan.process(&parts[2]).unwrap(),
            Err(Dropped::MissedFragment)
        );
        assert_eq!(chan.process(&parts[1]).unwrap(), Err(Dropped::Fragment));
        let got = chan.process(&parts[2]).unwrap().unwrap();
        assert_eq!(got.payload, message);
        assert!(got.fragmented);
    }

    #[test]
    fn scrambling_is_its_own_inverse_and_keeps_the_head() {
        let original: Vec<u8> = (0..40).collect();
        let mut data = original.clone();
        scramble(&mut data, 12, 0x1_2345, b"cs 5 \"%\xff\"");
        assert_eq!(&data[..12], &original[..12]);
        assert_ne!(data, original);
        scramble(&mut data, 12, 0x1_2345, b"cs 5 \"%\xff\"");
        assert_eq!(data, original);
        // With no text the key stays the seed's low byte.
        let mut zeros = [0u8; 6];
        scramble(&mut zeros, 4, 0x0155, b"");
        assert_eq!(zeros, [0, 0, 0, 0, 0x55, 0x55]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_message_survives_framing_in_order(
            sizes in proptest::collection::vec(0usize..4000, 1..6),
            v71 in any::<bool>(),
            challenge in any::<i32>(),
        ) {
            let protocol = if v71 { Protocol::V71 } else { Protocol::V68 };
            let mut chan = Netchan::new(protocol, 1, challenge);
            for (i, size) in sizes.iter().enumerate() {
                let message: Vec<u8> = (0..*size).map(|b| (b * 7 + i) as u8).collect();
                let sequence = i as i32 + 1;
                let parts = server_datagrams(protocol, challenge, sequence, &message);
                let mut got = None;
                for part in &parts {
                    if let Ok(incoming) = chan.process(part).unwrap() {
                        got = Some(incoming);
                    }
                }
                let got = got.expect("the last part completes the message");
                prop_assert_eq!(got.sequence, sequence);
                prop_assert_eq!(got.payload, message);
            }
        }

        #[test]
        fn process_never_panics(datagram in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut chan = Netchan::new(Protocol::V68, 1, 3);
            let _ = chan.process(&datagram);
        }
    }
}
