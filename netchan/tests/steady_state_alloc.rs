//! Zero allocations per datagram in steady state: once buffers, queues and
//! pools have warmed up, a connection exchanging reliable messages, events,
//! commands and snapshots every tick allocates nothing.
//!
//! This binary's global allocator is dhat's counting allocator, so it holds a
//! single test.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netchan::{ConnectOptions, ConnectionId, Endpoint, EndpointConfig, Event, MAX_DATAGRAM};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

struct Pair {
    now: Instant,
    client: Endpoint,
    server: Endpoint,
    cid: ConnectionId,
    sid: Option<ConnectionId>,
    buf: Box<[u8; MAX_DATAGRAM]>,
    caddr: SocketAddr,
    saddr: SocketAddr,
    received: u64,
}

impl Pair {
    fn tick(&mut self, tick: u32) {
        let payload = [tick as u8; 64];
        let snapshot = [tick as u8; 2500];
        if let Some(c) = self.client.connection_mut(self.cid) {
            if c.is_established() {
                c.send_ordered(&payload).unwrap();
                c.send_quickest(&payload[..16]).unwrap();
                c.send_unguaranteed(&payload[..24], 3).unwrap();
            }
        }
        if let Some(sid) = self.sid {
            let s = self.server.connection_mut(sid).unwrap();
            s.send_state(&snapshot).unwrap();
            s.send_ordered(&payload).unwrap();
        }
        // 20 ms of simulated time per tick, in 1 ms steps.
        for _ in 0..20 {
            self.now += Duration::from_millis(1);
            let now = self.now;
            self.client.handle_timeout(now);
            while let Some(t) = self.client.poll_transmit(now, &mut self.buf) {
                self.server.handle(now, self.caddr, &self.buf[..t.len]);
            }
            self.server.handle_timeout(now);
            while let Some(t) = self.server.poll_transmit(now, &mut self.buf) {
                self.client.handle(now, self.saddr, &self.buf[..t.len]);
            }
            while let Some(e) = self.server.poll_event() {
                match e {
                    Event::Connected { conn, .. } => self.sid = Some(conn),
                    Event::Message { data, .. }
                    | Event::Quickest { data, .. }
                    | Event::Unguaranteed { data, .. } => {
                        self.received += 1;
                        self.server.recycle(data);
                    }
                    _ => {}
                }
            }
            while let Some(e) = self.client.poll_event() {
                if let Event::Message { data, .. } | Event::State { data, .. } = e {
                    self.received += 1;
                    self.client.recycle(data);
                }
            }
        }
    }
}

#[test]
fn steady_state_allocates_nothing() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let now = Instant::now();
    let caddr = SocketAddr::from(([127, 0, 0, 1], 2));
    let saddr = SocketAddr::from(([127, 0, 0, 1], 1));
    let psk = Some(netchan::PresharedKey([9; 32]));
    let mut client = Endpoint::new(
        EndpointConfig {
            secret: [1; 32],
            psk: psk.clone(),
            ..EndpointConfig::client()
        },
        now,
    );
    let server = Endpoint::new(
        EndpointConfig {
            secret: [2; 32],
            psk,
            ..EndpointConfig::server()
        },
        now,
    );
    // Every layer on: compression and encryption.
    let cid = client
        .connect(
            now,
            saddr,
            ConnectOptions {
                client_id: 1,
                encrypt: true,
                compress: true,
            },
        )
        .unwrap();
    let mut pair = Pair {
        now,
        client,
        server,
        cid,
        sid: None,
        buf: Box::new([0; MAX_DATAGRAM]),
        caddr,
        saddr,
        received: 0,
    };
    // Warm-up: handshake, pools, queues and maps reach their working sizes.
    for tick in 0..500 {
        pair.tick(tick);
    }
    assert!(pair.sid.is_some());
    let before = dhat::HeapStats::get();
    let received_before = pair.received;
    for tick in 500..1500 {
        pair.tick(tick);
    }
    let after = dhat::HeapStats::get();
    let datagrams = pair
        .client
        .connection(cid)
        .unwrap()
        .metrics()
        .datagrams_sent;
    assert!(pair.received - received_before > 3000, "traffic flowed");
    assert!(datagrams > 1000);
    assert!(pair.client.connection(cid).unwrap().is_encrypted());
    assert_eq!(
        after.total_blocks - before.total_blocks,
        0,
        "allocations in 1000 steady-state ticks"
    );
}
