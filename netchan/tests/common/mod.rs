//! A deterministic network simulation: endpoints joined by seeded link
//! conditioners, driven on simulated time (an `Instant` base plus offsets).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netq3_netchan::conditioner::{ConditionerConfig, LinkConditioner};
use netq3_netchan::{Endpoint, EndpointConfig, Event, MAX_DATAGRAM};

/// One datagram that left an endpoint.
#[derive(Debug, Clone)]
pub struct Sent {
    pub at: Duration,
    pub from: SocketAddr,
    pub to: SocketAddr,
    pub bytes: Vec<u8>,
}

pub struct Node {
    pub addr: SocketAddr,
    pub endpoint: Endpoint,
    /// Impairs everything this node sends.
    pub link: LinkConditioner,
    pub events: Vec<Event>,
    pub offline: bool,
}

pub struct Sim {
    pub t0: Instant,
    pub now: Instant,
    pub nodes: Vec<Node>,
    /// Every datagram sent, when logging is on.
    pub sent_log: Option<Vec<Sent>>,
    /// Every datagram delivered, when logging is on.
    pub delivered_log: Option<Vec<Sent>>,
    buf: Box<[u8; MAX_DATAGRAM]>,
    pub largest: usize,
    /// Whether events are collected into `Node::events` (else left in the endpoint).
    pub collect_events: bool,
}

pub fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

pub fn secret(n: u8) -> [u8; 32] {
    [n; 32]
}

pub fn server_config() -> EndpointConfig {
    EndpointConfig {
        secret: secret(1),
        ..EndpointConfig::server()
    }
}

pub fn client_config() -> EndpointConfig {
    EndpointConfig {
        secret: secret(2),
        ..EndpointConfig::client()
    }
}

impl Sim {
    pub fn new() -> Self {
        let t0 = Instant::now();
        Self {
            t0,
            now: t0,
            nodes: Vec::new(),
            sent_log: None,
            delivered_log: None,
            buf: Box::new([0; MAX_DATAGRAM]),
            largest: 0,
            collect_events: true,
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.now - self.t0
    }

    pub fn add(
        &mut self,
        port: u16,
        config: EndpointConfig,
        link: ConditionerConfig,
        seed: u64,
    ) -> usize {
        self.nodes.push(Node {
            addr: addr(port),
            endpoint: Endpoint::new(config, self.now),
            link: LinkConditioner::new(link, seed),
            events: Vec::new(),
            offline: false,
        });
        self.nodes.len() - 1
    }

    /// Does everything due at `now`; returns datagrams moved.
    fn pump(&mut self) -> usize {
        let now = self.now;
        let mut moved = 0;
        for i in 0..self.nodes.len() {
            if self.nodes[i].offline {
                continue;
            }
            let node = &mut self.nodes[i];
            node.endpoint.handle_timeout(now);
            while let Some(t) = node.endpoint.poll_transmit(now, &mut self.buf) {
                moved += 1;
                assert!(t.len <= MAX_DATAGRAM);
                self.largest = self.largest.max(t.len);
                if let Some(log) = self.sent_log.as_mut() {
                    log.push(Sent {
                        at: now - self.t0,
                        from: node.addr,
                        to: t.destination,
                        bytes: self.buf[..t.len].to_vec(),
                    });
                }
                node.link
                    .push(now, node.addr, t.destination, &self.buf[..t.len]);
            }
        }
        for i in 0..self.nodes.len() {
            while let Some(d) = self.nodes[i].link.pop_due(now) {
                moved += 1;
                if let Some(dest) = self.nodes.iter_mut().find(|n| n.addr == d.to && !n.offline) {
                    dest.endpoint.handle(now, d.from, &d.bytes);
                    if let Some(log) = self.delivered_log.as_mut() {
                        log.push(Sent {
                            at: now - self.t0,
                            from: d.from,
                            to: d.to,
                            bytes: d.bytes.clone(),
                        });
                    }
                }
                self.nodes[i].link.recycle(d.bytes);
            }
        }
        if self.collect_events {
            for node in &mut self.nodes {
                while let Some(e) = node.endpoint.poll_event() {
                    node.events.push(e);
                }
            }
        }
        moved
    }

    /// Pumps until nothing moves at the current instant.
    pub fn settle(&mut self) {
        for _ in 0..100_000 {
            if self.pump() == 0 {
                return;
            }
        }
        panic!("network did not settle at {:?}", self.elapsed());
    }

    /// Moves time to the next deadline (at least 50 µs on) and settles.
    pub fn step(&mut self) {
        self.settle();
        let next = self
            .nodes
            .iter()
            .filter(|n| !n.offline)
            .flat_map(|n| [n.endpoint.poll_timeout(), n.link.next_release()])
            .flatten()
            .min();
        let floor = self.now + Duration::from_micros(50);
        self.now = match next {
            Some(t) => t.max(floor),
            None => self.now + Duration::from_millis(10),
        };
        self.settle();
    }

    /// Steps until `done` or until `limit` of simulated time passes; returns whether `done` held.
    pub fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&mut Sim) -> bool) -> bool {
        let end = self.now + limit;
        while self.now < end {
            if done(self) {
                return true;
            }
            self.step();
        }
        done(self)
    }

    /// Runs for `d` of simulated time.
    pub fn run_for(&mut self, d: Duration) {
        self.run_until(d, |_| false);
    }

    pub fn take_events(&mut self, node: usize) -> Vec<Event> {
        std::mem::take(&mut self.nodes[node].events)
    }
}

/// Connects `client` to `server`; returns (client-side id, server-side id).
pub fn connect(
    sim: &mut Sim,
    client: usize,
    server: usize,
    options: netq3_netchan::ConnectOptions,
) -> (netq3_netchan::ConnectionId, netq3_netchan::ConnectionId) {
    let server_addr = sim.nodes[server].addr;
    let now = sim.now;
    let cid = sim.nodes[client]
        .endpoint
        .connect(now, server_addr, options)
        .expect("connect");
    let mut sid = None;
    let mut client_up = false;
    let ok = sim.run_until(Duration::from_secs(20), |sim| {
        for e in sim.nodes[server].events.drain(..) {
            if let Event::Connected { conn, .. } = e {
                sid = Some(conn);
            }
        }
        for e in sim.nodes[client].events.drain(..) {
            if let Event::Connected { conn, .. } = e {
                assert_eq!(conn, cid);
                client_up = true;
            }
        }
        client_up && sid.is_some()
    });
    assert!(ok, "handshake did not complete");
    (cid, sid.unwrap())
}

pub fn opts(client_id: u32) -> netq3_netchan::ConnectOptions {
    netq3_netchan::ConnectOptions {
        client_id,
        encrypt: false,
        compress: false,
    }
}
