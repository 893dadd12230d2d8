//! Zero allocations per datagram in steady state: once buffers, queues and
//! pools have warmed up, a connection exchanging reliable messages, events,
//! commands and snapshots every tick allocates nothing.
//!
//! This binary's global allocator is dhat's counting allocator, so it holds a
//! single test.

use std::time::{Duration, Instant};

use netq3_netchan::testing::Pair;
use netq3_netchan::{Event, PresharedKey};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

struct Load {
    pair: Pair,
    received: u64,
}

impl Load {
    fn tick(&mut self, tick: u32) {
        let payload = [tick as u8; 64];
        let snapshot = [tick as u8; 2500];
        if let Some(c) = self.pair.client_connection() {
            if c.is_established() {
                c.send_ordered(&payload).unwrap();
                c.send_quickest(&payload[..16]).unwrap();
                c.send_unguaranteed(&payload[..24], 3).unwrap();
            }
        }
        if let Some(s) = self.pair.server_connection() {
            s.send_state(&snapshot).unwrap();
            s.send_ordered(&payload).unwrap();
        }
        // 20 ms of simulated time per tick, in 1 ms steps.
        for _ in 0..20 {
            self.pair.step(Duration::from_millis(1));
            let pair = &mut self.pair;
            while let Some(e) = pair.server.poll_event() {
                match e {
                    Event::Message { data, .. }
                    | Event::Quickest { data, .. }
                    | Event::Unguaranteed { data, .. } => {
                        self.received += 1;
                        pair.server.recycle(data);
                    }
                    _ => {}
                }
            }
            while let Some(e) = pair.client.poll_event() {
                if let Event::Message { data, .. } | Event::State { data, .. } = e {
                    self.received += 1;
                    pair.client.recycle(data);
                }
            }
        }
    }
}

#[test]
fn steady_state_allocates_nothing() {
    let _profiler = dhat::Profiler::builder().testing().build();
    // Every layer on: compression and encryption.
    let pair = Pair::connected(
        Instant::now(),
        Pair::options(1, true, true),
        Some(PresharedKey([9; 32])),
    )
    .expect("handshake");
    let mut load = Load { pair, received: 0 };
    // Warm-up: pools, queues and maps reach their working sizes.
    for tick in 0..500 {
        load.tick(tick);
    }
    let before = dhat::HeapStats::get();
    let received_before = load.received;
    for tick in 500..1500 {
        load.tick(tick);
    }
    let after = dhat::HeapStats::get();
    let client = load.pair.client_connection().unwrap();
    assert!(client.is_encrypted());
    let datagrams = client.metrics().datagrams_sent;
    // Lossless: every tick delivers its five items (ordered, quickest and
    // unguaranteed up; ordered and state down).
    assert_eq!(
        (load.received - received_before, datagrams),
        (5 * 1000, 3001),
        "items received in the measured ticks, client datagrams in all"
    );
    assert_eq!(
        after.total_blocks - before.total_blocks,
        0,
        "allocations in 1000 steady-state ticks"
    );
}
