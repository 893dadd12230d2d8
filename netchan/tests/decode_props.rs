//! Property tests of the untrusted-input paths end to end: arbitrary and
//! mutated datagrams into an endpoint with a live connection never panic,
//! never create connections, and never break the real stream.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netq3_netchan::crypto::{Direction, SessionCipher};
use netq3_netchan::testing::{Pair, Side};
use netq3_netchan::{Event, HandleOutcome, PresharedKey};
use proptest::prelude::*;

/// A connected pair with some traffic behind it, and every datagram the client sent.
struct Live {
    pair: Pair,
    captured: Vec<Vec<u8>>,
}

fn live(encrypt: bool) -> Live {
    let psk = Some(PresharedKey([4; 32]));
    let pair = Pair::new(
        Instant::now(),
        Pair::client_config(psk.clone()),
        Pair::server_config(psk),
        Pair::options(77, encrypt, true),
    )
    .unwrap();
    let mut l = Live {
        pair,
        captured: Vec::new(),
    };
    for i in 0..40u32 {
        if let Some(c) = l.pair.client_connection() {
            if c.is_established() {
                c.send_ordered(&vec![i as u8; (i as usize * 300) % 5000])
                    .unwrap();
            }
        }
        step(&mut l);
    }
    l
}

fn step(l: &mut Live) {
    let captured = &mut l.captured;
    l.pair
        .step_with(Duration::from_millis(10), |side, bytes, _| {
            if side == Side::Client {
                captured.push(bytes.to_vec());
            }
        });
}

fn mutations() -> impl Strategy<Value = Vec<(usize, usize, u8, usize)>> {
    proptest::collection::vec(
        (any::<usize>(), any::<usize>(), any::<u8>(), 0usize..1500),
        1..40,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_datagrams_are_harmless(datagrams in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..1500), 1..30)) {
        let mut l = live(false);
        let before = l.pair.server.connections().count();
        let (now, caddr) = (l.pair.now, l.pair.client_addr);
        for d in &datagrams {
            let stranger = l.pair.server.handle(now, SocketAddr::from(([10, 0, 0, 9], 9)), d);
            prop_assert!(matches!(stranger, HandleOutcome::Rejected(_)), "{:?}", stranger);
            let client = l.pair.server.handle(now, caddr, d);
            prop_assert!(matches!(client, HandleOutcome::Rejected(_)), "{:?}", client);
        }
        prop_assert_eq!(l.pair.server.connections().count(), before);
        let rejected = l.pair.server.metrics().rejected.total();
        prop_assert_eq!(rejected, 2 * datagrams.len() as u64);
    }

    #[test]
    fn mutated_real_datagrams_never_break_the_stream(muts in mutations(), encrypt in any::<bool>()) {
        let mut l = live(encrypt);
        let (now, caddr) = (l.pair.now, l.pair.client_addr);
        for (pick, pos, value, cut) in muts {
            if l.captured.is_empty() {
                break;
            }
            let mut d = l.captured[pick % l.captured.len()].clone();
            if !d.is_empty() {
                let mut i = pos % d.len();
                // Without authentication a forged *sequence number* can jump
                // the receive window (as in Quake 3); that threat needs
                // encryption, so plaintext runs leave those two bytes alone.
                if !encrypt && (5..7).contains(&i) {
                    i = 0;
                }
                d[i] ^= value | 1;
            }
            d.truncate(cut.max(1));
            l.pair.server.handle(now, caddr, &d);
        }
        // The genuine stream still completes, in order, exactly once.
        for _ in 0..300 {
            step(&mut l);
        }
        let mut got = Vec::new();
        while let Some(e) = l.pair.server.poll_event() {
            if let Event::Message { data, .. } = e {
                got.push(data);
            }
        }
        let sent = l.pair.client_connection().unwrap().metrics().ordered_queued as usize;
        prop_assert_eq!(got.len(), sent);
        for (i, m) in got.iter().enumerate() {
            let n = m.first().copied().unwrap_or(0) as usize;
            prop_assert!(m.iter().all(|b| *b as usize == n));
            if i > 0 {
                prop_assert!(n > got[i - 1].first().copied().unwrap_or(0) as usize || m.is_empty() || got[i - 1].is_empty());
            }
        }
    }

    #[test]
    fn decryption_of_arbitrary_bytes_fails_cleanly(body in proptest::collection::vec(any::<u8>(), 0..200), tag in proptest::collection::vec(any::<u8>(), 0..20), seq: u64) {
        let cipher = SessionCipher::derive(&PresharedKey([1; 32]), &[2; 12], 3, Direction::ToClient);
        let mut body = body;
        prop_assert!(cipher.open(seq, &[0; 13], &mut body, &tag).is_err());
    }
}
