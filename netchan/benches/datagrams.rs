//! Throughput of the sans-IO core: datagrams through send + receive, and
//! fragmentation plus reassembly of 16 KiB messages. Two endpoints talk over
//! an in-memory hand-off on simulated time, so only the protocol code is timed.
#![allow(missing_docs)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use netchan::fragment::{Policy, Reassembler, ReassemblyLimits};
use netchan::pool::BufPool;
use netchan::{ConnectOptions, ConnectionId, Endpoint, EndpointConfig, Event, MAX_DATAGRAM};

struct Pair {
    now: Instant,
    client: Endpoint,
    server: Endpoint,
    cid: ConnectionId,
    sid: ConnectionId,
    buf: Box<[u8; MAX_DATAGRAM]>,
    caddr: SocketAddr,
    saddr: SocketAddr,
}

impl Pair {
    fn new(compress: bool) -> Self {
        let now = Instant::now();
        let caddr = SocketAddr::from(([127, 0, 0, 1], 2));
        let saddr = SocketAddr::from(([127, 0, 0, 1], 1));
        let mut client = Endpoint::new(
            EndpointConfig {
                secret: [1; 32],
                ..EndpointConfig::client()
            },
            now,
        );
        let server = Endpoint::new(
            EndpointConfig {
                secret: [2; 32],
                ..EndpointConfig::server()
            },
            now,
        );
        let cid = client
            .connect(
                now,
                saddr,
                ConnectOptions {
                    client_id: 1,
                    encrypt: false,
                    compress,
                },
            )
            .unwrap();
        let mut pair = Pair {
            now,
            client,
            server,
            cid,
            sid: cid,
            buf: Box::new([0; MAX_DATAGRAM]),
            caddr,
            saddr,
        };
        for _ in 0..100 {
            pair.exchange();
            while let Some(e) = pair.server.poll_event() {
                if let Event::Connected { conn, .. } = e {
                    pair.sid = conn;
                    return pair;
                }
            }
        }
        panic!("no handshake");
    }

    /// Moves time 1 ms on and passes every datagram both ways; returns datagrams moved.
    fn exchange(&mut self) -> usize {
        self.now += Duration::from_millis(1);
        let now = self.now;
        let mut moved = 0;
        self.client.handle_timeout(now);
        while let Some(t) = self.client.poll_transmit(now, &mut self.buf) {
            self.server.handle(now, self.caddr, &self.buf[..t.len]);
            moved += 1;
        }
        self.server.handle_timeout(now);
        while let Some(t) = self.server.poll_transmit(now, &mut self.buf) {
            self.client.handle(now, self.saddr, &self.buf[..t.len]);
            moved += 1;
        }
        moved
    }

    fn drain(&mut self) -> usize {
        let mut n = 0;
        while let Some(e) = self.server.poll_event() {
            if let Event::Message { data, .. } | Event::Unguaranteed { data, .. } = e {
                self.server.recycle(data);
                n += 1;
            }
        }
        while let Some(e) = self.client.poll_event() {
            if let Event::Message { data, .. } = e {
                self.client.recycle(data);
            }
        }
        n
    }
}

fn datagrams(c: &mut Criterion) {
    let mut group = c.benchmark_group("sans_io");
    group.throughput(Throughput::Elements(1));
    for compress in [false, true] {
        let name = if compress {
            "datagram_round_compressed"
        } else {
            "datagram_round"
        };
        let mut pair = Pair::new(compress);
        let message = [7u8; 100];
        group.bench_function(name, |b| {
            b.iter(|| {
                // One tick: a reliable message and an event go out, the ack comes back.
                let conn = pair.client.connection_mut(pair.cid).unwrap();
                conn.send_ordered(&message).unwrap();
                conn.send_unguaranteed(&message[..50], 1).unwrap();
                pair.exchange();
                pair.drain()
            })
        });
    }
    group.finish();
}

fn fragmentation(c: &mut Criterion) {
    let mut group = c.benchmark_group("fragmentation");
    let big: Vec<u8> = (0..16 * 1024u32).map(|i| (i * 31) as u8).collect();
    group.throughput(Throughput::Bytes(big.len() as u64));

    group.bench_function("reassemble_16k_reversed", |b| {
        let mut r = Reassembler::new(ReassemblyLimits {
            max_message: 16 * 1024,
            max_partials: 8,
            max_bytes: 1 << 20,
        });
        let mut pool = BufPool::default();
        let mut id = 0u64;
        b.iter(|| {
            id += 1;
            let mut out = None;
            for start in (0..big.len()).step_by(1300).rev() {
                let end = (start + 1300).min(big.len());
                if let Ok(netchan::fragment::Inserted::Complete(m)) = r.insert(
                    id,
                    big.len() as u32,
                    start as u32,
                    &big[start..end],
                    Policy::Refuse,
                    &mut pool,
                ) {
                    out = Some(m);
                }
            }
            let m = out.expect("complete");
            pool.give(m);
        })
    });

    group.bench_function("send_receive_16k_message", |b| {
        b.iter_batched_ref(
            || Pair::new(false),
            |pair| {
                pair.client
                    .connection_mut(pair.cid)
                    .unwrap()
                    .send_ordered(&big)
                    .unwrap();
                let mut got = 0;
                while got == 0 {
                    pair.exchange();
                    got = pair.drain();
                }
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, datagrams, fragmentation);
criterion_main!(benches);
