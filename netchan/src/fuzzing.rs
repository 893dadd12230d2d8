//! Structure-aware fuzzing bodies, shared by the cargo-fuzz targets in
//! `netchan/fuzz` and by `cargo test` (which replays the committed seeds and
//! runs them under proptest), so both exercise exactly the same code.
//!
//! Random bytes almost never get past a cookie MAC or an AEAD tag, so the
//! code behind them would go unfuzzed. Here the fuzzer *holds the secrets*:
//! its input is read as a list of operations that build valid datagrams —
//! handshake packets carrying cookies made with the server's own key, data
//! datagrams with valid framing and chunks, sealed with the session key —
//! and then mutate fields inside them, before sealing (so the tag is valid
//! over the mutated plaintext) or after (which authentication must catch).
//! Every operation checks what [`Endpoint::handle`] reports against what the
//! datagram is known to be.
//!
//! Invariant violations panic: that is how a fuzzer reports them. Each body
//! returns the outcome of every datagram it forged, so tests can check what
//! an input reaches.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::compress::{Compressor, HuffmanCompressor};
use crate::crypto::{Direction, PresharedKey, SessionCipher, TAG_LEN};
use crate::endpoint::{Endpoint, EndpointConfig};
use crate::handshake::{
    ConnectRequest, CookieKey, Handshake, CHALLENGE_REQUEST_LEN, CONNECT_LEN, OPT_COMPRESS,
    OPT_ENCRYPT,
};
use crate::outcome::{DropReason, HandleOutcome};
use crate::packet::{
    Chunk, DataHeader, Writer, FLAG_COMPRESSED, FLAG_HAS_ACK, HEADER_LEN, MAX_DATAGRAM,
};
use crate::rate::RateAnnounce;
use crate::testing::{Pair, Side};
use crate::Event;

/// Most operations one input runs (keeps each run short and bounded).
const MAX_OPS: usize = 64;

/// The fuzz input, read front to back; past its end every read is zero.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// Reads `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// `true` once every byte was read.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The next byte.
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// The next two bytes, little-endian.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    /// The next four bytes, little-endian.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    /// The next byte's low bit.
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    /// Up to `n` bytes (fewer at the end of the input).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head
    }

    /// One in four: a position and a non-zero XOR mask to flip a byte with.
    pub fn mutation(&mut self) -> Option<(usize, u8)> {
        (self.u8() % 4 == 3).then(|| (self.u16() as usize, self.u8() | 1))
    }
}

/// Applies a mutation to `bytes`; returns the index changed.
fn mutate(bytes: &mut [u8], mutation: Option<(usize, u8)>) -> Option<usize> {
    let (pos, mask) = mutation?;
    if bytes.is_empty() {
        return None;
    }
    let i = pos % bytes.len();
    bytes[i] ^= mask;
    Some(i)
}

/// Writes a valid data body of up to six chunks chosen by the input into
/// `out`; returns its length.
pub fn build_body(input: &mut Input<'_>, out: &mut [u8]) -> usize {
    let mut w = Writer::new(out);
    for _ in 0..input.u8() % 7 {
        let kind = input.u8() % 6;
        let id = input.u16();
        let len = (input.u8() % 96) as usize;
        let data = input.bytes(len);
        // Whole, or (with bytes) a fragment of a larger message at some offset.
        let (total, offset) = if input.bool() || data.is_empty() {
            (data.len() as u32, 0)
        } else {
            // Up to the default 16 KiB message limit.
            let total = data.len() as u32 + u32::from(input.u16() % 16_000);
            (
                total,
                u32::from(input.u16()) % (total - data.len() as u32 + 1),
            )
        };
        let rate = match kind {
            4 => RateAnnounce {
                bytes_per_sec: input.u32(),
                packets_per_sec: input.u16(),
            },
            _ => RateAnnounce::UNLIMITED,
        };
        let reason = if kind == 5 { input.u8() } else { 0 };
        let chunk = chunk_of(kind, id, total, offset, data, rate, reason);
        if chunk.write(&mut w).is_err() {
            break;
        }
    }
    w.len()
}

/// The chunk of kind `kind` (0 ordered, 1 state, 2 quickest, 3 event, 4
/// rate, else disconnect) from these parts; each kind takes the ones it has.
pub fn chunk_of(
    kind: u8,
    id: u16,
    total: u32,
    offset: u32,
    data: &[u8],
    rate: RateAnnounce,
    reason: u8,
) -> Chunk<'_> {
    match kind {
        0 => Chunk::Ordered {
            id,
            total,
            offset,
            data,
        },
        1 => Chunk::State {
            id,
            total,
            offset,
            data,
        },
        2 => Chunk::Quickest { id, data },
        3 => Chunk::Event { data },
        4 => Chunk::Rate(rate),
        _ => Chunk::Disconnect { reason },
    }
}

fn data_header(input: &mut Input<'_>, client_id: u32, seq: u16) -> DataHeader {
    DataHeader {
        flags: if input.bool() { FLAG_HAS_ACK } else { 0 },
        client_id,
        seq,
        ack: input.u16(),
        ack_bits: input.u32(),
    }
}

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Takes every datagram the endpoint has queued; checks the connectionless
/// ones are no larger than `request_len` (no amplification) and returns them.
fn responses(server: &mut Endpoint, now: Instant, request_len: usize) -> Vec<Handshake> {
    let mut buf = [0u8; MAX_DATAGRAM];
    let mut out = Vec::new();
    while let Some(t) = server.poll_transmit(now, &mut buf) {
        let bytes = &buf[..t.len];
        if bytes[0] >> 4 != 6 {
            assert!(
                t.len <= request_len,
                "{} byte answer to {request_len}",
                t.len
            );
            out.push(Handshake::parse(bytes).expect("the server's own packet parses"));
        }
    }
    while server.poll_event().is_some() {}
    out
}

/// The `handshake` target (returns the outcome of every datagram it sent): challenges, connects and data datagrams from up
/// to eight addresses and client ids against a small server (4 clients, 2
/// pending), with cookies made with the server's own key — right or wrong
/// address, id or age — and single-byte mutations anywhere.
pub fn handshake(data: &[u8]) -> Vec<HandleOutcome> {
    let mut seen = Vec::new();
    let mut input = Input::new(data);
    let secret = [0x5e; 32];
    let mut config = EndpointConfig {
        secret,
        ..EndpointConfig::server()
    };
    let limits = config.server.as_mut().expect("a server config");
    limits.max_clients = 4;
    limits.max_pending = 2;
    let lifetime_ms = limits.cookie_lifetime.as_millis() as u64;
    let mut key = [0u8; 16];
    key.copy_from_slice(&secret[..16]);
    let key = CookieKey(key);
    let t0 = Instant::now();
    let mut server = Endpoint::new(config, t0);
    let mut elapsed_ms = 0u64;
    let mut body = [0u8; MAX_DATAGRAM];
    for _ in 0..MAX_OPS {
        if input.is_empty() {
            break;
        }
        let now = t0 + Duration::from_millis(elapsed_ms);
        let port = 1 + u16::from(input.u8() % 8);
        let from = addr(port);
        let client_id = u32::from(input.u8() % 8);
        match input.u8() % 4 {
            0 => {
                elapsed_ms += u64::from(input.u16());
                let later = t0 + Duration::from_millis(elapsed_ms);
                server.handle_timeout(later);
                responses(&mut server, later, 0);
            }
            1 => {
                let mut packet = [0u8; 64];
                let len = Handshake::ChallengeRequest { client_id }
                    .write(&mut packet)
                    .expect("fits");
                let mutated = mutate(&mut packet[..len], input.mutation());
                let outcome = server.handle(now, from, &packet[..len]);
                seen.push(outcome);
                let out = responses(&mut server, now, len);
                // Byte 0's low nibble, the client id (bytes 5..9) and the
                // padding (from byte 11) can change and leave a valid
                // request; the type, magic and wire version cannot.
                let still_valid = match mutated {
                    None => true,
                    Some(0) => packet[0] >> 4 == 1,
                    Some(i) => (5..9).contains(&i) || i >= 11,
                };
                if still_valid {
                    assert_eq!(outcome, HandleOutcome::Challenged);
                    let [Handshake::ChallengeResponse {
                        client_id: echoed,
                        cookie,
                    }] = out[..]
                    else {
                        panic!("{out:?}");
                    };
                    if mutated.is_none() {
                        assert_eq!(echoed, client_id);
                    }
                    let verified = key.verify(&cookie, from, echoed, elapsed_ms, lifetime_ms);
                    assert_eq!(verified, Ok(()));
                } else {
                    assert!(matches!(outcome, HandleOutcome::Rejected(_)), "{outcome:?}");
                    assert!(out.is_empty(), "{out:?}");
                }
                assert_eq!(len, CHALLENGE_REQUEST_LEN);
            }
            2 => {
                // The cookie: for this address and id or another, fresh, old or from the future.
                let honest = input.u8() % 4 != 0;
                let (cookie_port, cookie_id) = if honest {
                    (port, client_id)
                } else {
                    (1 + u16::from(input.u8() % 8), u32::from(input.u8() % 8))
                };
                let age = u64::from(input.u16());
                let stamp = if input.u8() % 8 == 0 {
                    elapsed_ms + 1 + age
                } else {
                    elapsed_ms.saturating_sub(age)
                };
                let cookie = key.issue(addr(cookie_port), cookie_id, stamp);
                let request = ConnectRequest {
                    client_id,
                    cookie,
                    version: if input.bool() { input.u32() } else { 1 },
                    schema: if input.bool() {
                        u64::from(input.u32())
                    } else {
                        0
                    },
                    options: input.u8() & (OPT_COMPRESS | OPT_ENCRYPT),
                    rate: RateAnnounce {
                        bytes_per_sec: input.u32(),
                        packets_per_sec: input.u16(),
                    },
                };
                let mut packet = [0u8; 64];
                let len = Handshake::Connect(request)
                    .write(&mut packet)
                    .expect("fits");
                assert_eq!(len, CONNECT_LEN);
                let mutated = mutate(&mut packet[..len], input.mutation());
                let before = server.connections().count();
                let outcome = server.handle(now, from, &packet[..len]);
                seen.push(outcome);
                let out = responses(&mut server, now, len);
                let cookie_bad = (cookie_port, cookie_id) != (port, client_id);
                // Bytes 17..33 are the cookie's MAC: no change there gets in.
                if mutated.is_some_and(|i| (17..33).contains(&i)) {
                    assert_eq!(outcome, HandleOutcome::Rejected(DropReason::BadCookie));
                }
                if mutated.is_none() {
                    let in_time = stamp <= elapsed_ms && elapsed_ms - stamp <= lifetime_ms;
                    match outcome {
                        HandleOutcome::Rejected(DropReason::BadCookie) => assert!(cookie_bad),
                        HandleOutcome::Rejected(DropReason::ExpiredCookie) => {
                            assert!(!cookie_bad && !in_time)
                        }
                        HandleOutcome::Rejected(DropReason::ReplayedCookie) => {
                            assert!(!cookie_bad && in_time)
                        }
                        HandleOutcome::Rejected(other) => panic!("{other:?}"),
                        // A retry is matched by its MAC before the cookie's age
                        // is checked, and follows the connection to the port it
                        // migrated to: the cookie may be for its old port.
                        HandleOutcome::AcceptRepeated(_) => assert_eq!(cookie_id, client_id),
                        _ => assert!(!cookie_bad && in_time, "{outcome:?}"),
                    }
                }
                match outcome {
                    HandleOutcome::Accepted(id) => {
                        let conn = server.connection(id).expect("the accepted connection");
                        assert_eq!(conn.remote_addr(), from);
                        assert!(matches!(out[..], [Handshake::Accept { .. }]), "{out:?}");
                    }
                    HandleOutcome::AcceptRepeated(id) => {
                        assert!(server.connection(id).is_some());
                        assert_eq!(server.connections().count(), before);
                        assert!(matches!(out[..], [Handshake::Accept { .. }]), "{out:?}");
                    }
                    HandleOutcome::Refused(reason) => {
                        assert!(
                            matches!(out[..], [Handshake::Reject { reason: r, .. }] if r == reason),
                            "{out:?}"
                        );
                        assert_eq!(server.connections().count(), before);
                    }
                    HandleOutcome::Rejected(_) => {
                        assert!(out.is_empty(), "{out:?}");
                        assert_eq!(server.connections().count(), before);
                    }
                    other => panic!("{other:?} for a connect"),
                }
            }
            _ => {
                let mut datagram = [0u8; MAX_DATAGRAM];
                let seq = input.u16();
                let header = data_header(&mut input, client_id, seq);
                let mut head = [0u8; HEADER_LEN];
                header.write(&mut head);
                datagram[..HEADER_LEN].copy_from_slice(&head);
                let n = build_body(&mut input, &mut body[..MAX_DATAGRAM - HEADER_LEN]);
                datagram[HEADER_LEN..HEADER_LEN + n].copy_from_slice(&body[..n]);
                let len = HEADER_LEN + n;
                mutate(&mut datagram[..len], input.mutation());
                let before = server.connections().count();
                let outcome = server.handle(now, from, &datagram[..len]);
                seen.push(outcome);
                match outcome {
                    HandleOutcome::Data(id) => {
                        let conn = server.connection(id).expect("live");
                        assert_eq!(conn.remote_addr(), from);
                    }
                    HandleOutcome::Rejected(_) => {}
                    other => panic!("{other:?} for a data datagram"),
                }
                assert!(server.connections().count() <= before);
                responses(&mut server, now, usize::MAX);
            }
        }
        let sizes = server.table_sizes();
        assert!(sizes.connections <= 4 && sizes.by_addr <= 4 && sizes.by_client <= 4);
        assert!(sizes.slots <= 4 && sizes.outgoing == 0 && sizes.events == 0);
    }
    seen
}

/// The `sealed` target (returns the outcome of every datagram it forged): an encrypted, compressed connection whose session
/// key the fuzzer derives itself (it holds the pre-shared key and reads the
/// session nonce from the accept). It seals datagrams of valid chunks under
/// fresh, repeated or old sequence numbers, mutating the plaintext before
/// sealing or the datagram after it, between steps of genuine traffic.
pub fn sealed(data: &[u8]) -> Vec<HandleOutcome> {
    let mut seen = Vec::new();
    let mut input = Input::new(data);
    let psk = PresharedKey([0x42; 32]);
    let client_id = 77;
    let mut pair = Pair::new(
        Instant::now(),
        Pair::client_config(Some(psk.clone())),
        Pair::server_config(Some(psk.clone())),
        Pair::options(client_id, true, true),
    )
    .expect("a key is configured");
    let mut nonce = None;
    let mut next_seq = 0u64;
    let mut watch = |side: Side, bytes: &[u8], _: HandleOutcome| match side {
        Side::Server => {
            if let Ok(Handshake::Accept { session_nonce, .. }) = Handshake::parse(bytes) {
                nonce = Some(session_nonce);
            }
        }
        Side::Client => {
            if let Ok((header, _)) = DataHeader::parse(bytes) {
                next_seq = next_seq.max(u64::from(header.seq) + 1);
            }
        }
    };
    assert!(pair.finish_handshake(Duration::from_millis(1), &mut watch));
    let nonce = nonce.expect("the accept was seen");
    let sid = pair.server_conn.expect("connected");
    let cipher = SessionCipher::derive(&psk, &nonce, client_id, Direction::ToServer);
    let compressor = HuffmanCompressor::quake3();
    let max_message = pair.server.config().connection.max_message_size;
    let mut plain = [0u8; MAX_DATAGRAM];
    let mut packed = [0u8; MAX_DATAGRAM];
    for _ in 0..MAX_OPS {
        if input.is_empty() {
            break;
        }
        if input.u8() % 4 == 0 {
            // Genuine traffic in between: the client's own datagrams move the window.
            let dt = Duration::from_millis(u64::from(input.u8()));
            let mut client_seq = 0;
            pair.step_with(dt, |side, bytes, outcome| {
                if side == Side::Client {
                    if let Ok((header, _)) = DataHeader::parse(bytes) {
                        client_seq = client_seq.max(u64::from(header.seq) + 1);
                    }
                    if let HandleOutcome::Data(id) = outcome {
                        assert_eq!(id, sid);
                    }
                }
            });
            next_seq = next_seq.max(client_seq);
            while let Some(event) = pair.server.poll_event() {
                if let Event::Message { data, .. } | Event::State { data, .. } = &event {
                    assert!(data.len() <= max_message);
                }
            }
            while pair.client.poll_event().is_some() {}
            continue;
        }
        // A fresh sequence number (at most 3 ahead), or one already used.
        let fresh = input.u8() % 4 != 0;
        let seq = if fresh {
            next_seq + u64::from(input.u8() % 4)
        } else {
            next_seq.saturating_sub(1 + u64::from(input.u8() % 40))
        };
        let mut header = data_header(&mut input, client_id, seq as u16);
        let n = build_body(
            &mut input,
            &mut plain[..MAX_DATAGRAM - HEADER_LEN - TAG_LEN],
        );
        let plain_mutated = mutate(&mut plain[..n], input.mutation()).is_some();
        let mut body: &mut [u8] = &mut plain[..n];
        if input.bool() {
            if let Some(m) =
                compressor.compress(body, &mut packed[..MAX_DATAGRAM - HEADER_LEN - TAG_LEN])
            {
                header.flags |= FLAG_COMPRESSED;
                body = &mut packed[..m];
            }
        }
        let mut head = [0u8; HEADER_LEN];
        header.write(&mut head);
        let tag = cipher.seal(seq, &head, body);
        let mut datagram = Vec::with_capacity(HEADER_LEN + body.len() + TAG_LEN);
        datagram.extend_from_slice(&head);
        datagram.extend_from_slice(body);
        datagram.extend_from_slice(&tag);
        let sealed_mutated = mutate(&mut datagram, input.mutation()).is_some();
        let outcome = pair.server.handle(pair.now, pair.client_addr, &datagram);
        seen.push(outcome);
        let open = pair
            .server
            .connection(sid)
            .is_some_and(|c| c.is_established());
        if sealed_mutated {
            // Authentication catches every change to header, body or tag.
            assert!(!matches!(outcome, HandleOutcome::Data(_)), "{outcome:?}");
        } else if fresh {
            assert_ne!(outcome, HandleOutcome::Rejected(DropReason::Decryption));
            assert_ne!(outcome, HandleOutcome::Rejected(DropReason::Duplicate));
            if !plain_mutated && open {
                // Valid chunks, sealed right, fresh: accepted.
                assert_eq!(outcome, HandleOutcome::Data(sid));
            }
        }
        if let HandleOutcome::Data(id) = outcome {
            assert_eq!(id, sid);
        }
        if fresh {
            next_seq = next_seq.max(seq + 1);
        }
        while pair.server.poll_event().is_some() {}
    }
    seen
}

/// Bodies of the byte-level targets (`datagram`, `reassembly`, `status`):
/// each takes the raw fuzz input and panics on a broken invariant.
pub mod bytes {
    /// Arbitrary datagrams into a server endpoint that has one established
    /// connection, so the data path (sequence window, ack processing, chunk
    /// parsing, reassembly, decompression) is reached as well as the handshake
    /// parser. Nothing may panic; memory stays bounded by the configured limits.
    pub fn datagram(data: &[u8]) {
        use crate::testing::Pair;
        use crate::{Event, MAX_DATAGRAM};
        use std::time::{Duration, Instant};
        const CLIENT_ID: u32 = 0x1234_5678;
        let pair = Pair::connected(Instant::now(), Pair::options(CLIENT_ID, false, true), None)
            .expect("handshake");
        let (mut server, mut now, caddr) = (pair.server, pair.now, pair.client_addr);
        let mut buf = [0u8; MAX_DATAGRAM];
        // Input: a sequence of [len u16][bytes] datagrams.
        let mut rest = data;
        while rest.len() >= 2 {
            let len = u16::from_le_bytes([rest[0], rest[1]]) as usize % 1500;
            rest = &rest[2..];
            let take = len.min(rest.len());
            let mut datagram = rest[..take].to_vec();
            rest = &rest[take..];
            // Aim data datagrams at the live connection so the deep path is fuzzed.
            if datagram.len() >= 5 && datagram[0] >> 4 == 6 {
                datagram[1..5].copy_from_slice(&CLIENT_ID.to_le_bytes());
            }
            now += Duration::from_millis(3);
            server.handle(now, caddr, &datagram);
            server.handle_timeout(now);
            while server.poll_transmit(now, &mut buf).is_some() {}
            while let Some(e) = server.poll_event() {
                if let Event::Message { data, .. } | Event::State { data, .. } = e {
                    assert!(data.len() <= 16 * 1024);
                }
            }
        }
    }

    /// Arbitrary fragment sequences into the reassembler (both policies), and
    /// arbitrary bytes through the chunk parser and the decompressor.
    pub fn reassembly(data: &[u8]) {
        use crate::compress::{Compressor, HuffmanCompressor};
        use crate::fragment::{Inserted, Policy, Reassembler, ReassemblyLimits};
        use crate::packet::Chunks;
        use crate::pool::BufPool;
        let limits = ReassemblyLimits {
            max_message: 16 * 1024,
            max_partials: 8,
            max_bytes: 64 * 1024,
        };
        let mut r = Reassembler::new(limits);
        let mut pool = BufPool::default();
        // Input: records of [id u8][total u16][offset u16][len u8][policy u8] then `len` bytes.
        let mut rest = data;
        while rest.len() >= 7 {
            let id = rest[0] as u64;
            let total = u16::from_le_bytes([rest[1], rest[2]]) as u32;
            let offset = u16::from_le_bytes([rest[3], rest[4]]) as u32;
            let len = rest[5] as usize;
            let policy = match rest[6] % 3 {
                0 => Policy::Refuse,
                1 => Policy::EvictOldest,
                _ => Policy::Exempt,
            };
            rest = &rest[7..];
            let take = len.min(rest.len());
            let frag = &rest[..take];
            rest = &rest[take..];
            if let Ok(Inserted::Complete(m)) = r.insert(id, total, offset, frag, policy, &mut pool)
            {
                assert_eq!(m.len() as u32, total);
                pool.give(m);
            }
            if policy != Policy::Exempt {
                assert!(r.partial_count() <= limits.max_partials + 64);
            }
        }
        for chunk in Chunks::new(data) {
            if chunk.is_err() {
                break;
            }
        }
        let mut out = [0u8; 1400];
        if let Ok(n) = HuffmanCompressor::quake3().decompress(data, &mut out) {
            assert!(n <= out.len());
        }
    }

    /// Status requests and replies: arbitrary bytes, and valid packets with one
    /// byte changed, into both parsers and a server endpoint. Nothing may panic,
    /// whatever parses re-encodes to the same bytes, and no reply the endpoint
    /// sends is larger than the request that caused it.
    pub fn status(data: &[u8]) {
        use crate::status::{StatusReply, StatusRequest};
        use crate::{Endpoint, EndpointConfig, MAX_DATAGRAM};
        use std::net::SocketAddr;
        use std::time::{Duration, Instant};
        let Some((&head, rest)) = data.split_first() else {
            return;
        };
        let mut datagram = rest.to_vec();
        // Half the inputs start from a valid request padded to the input's
        // length, then flip the byte the input names, so the deep checks
        // (version, padding) are reached.
        if head & 1 == 0 {
            let mut buf = [0u8; MAX_DATAGRAM];
            let n = StatusRequest::new(u32::from(head), rest.len())
                .write(&mut buf)
                .unwrap();
            datagram = buf[..n].to_vec();
            if let Some(&pos) = rest.first() {
                let i = pos as usize % n;
                datagram[i] ^= rest.get(1).copied().unwrap_or(1);
            }
        }
        let mut out = [0u8; MAX_DATAGRAM];
        if let Ok(req) = StatusRequest::parse(&datagram) {
            let n = req.write(&mut out).unwrap();
            assert_eq!(&out[..n], &datagram[..]);
        }
        if let Ok(reply) = StatusReply::parse(&datagram) {
            let n = reply.write(&mut out).unwrap();
            assert_eq!(&out[..n], &datagram[..]);
        }
        let now = Instant::now();
        let mut server = Endpoint::new(
            EndpointConfig {
                secret: [3; 32],
                ..EndpointConfig::server()
            },
            now,
        );
        server.set_status(&rest[..rest.len().min(300)]).unwrap();
        let from = SocketAddr::from(([127, 0, 0, 1], 9));
        server.handle(now + Duration::from_millis(1), from, &datagram);
        while let Some(t) = server.poll_transmit(now, &mut out) {
            assert!(t.len <= datagram.len());
        }
    }
}
