//! A whole session in one process on simulated time: a [`HostNode`] and
//! `n` [`PeerNode`]s over netchan's in-process link, every node's send path
//! through the seeded link conditioner. Deterministic for a given
//! configuration — what the tests, the example and the benches run.
//!
//! Each participant can be given a simulated cost per simulation step: it
//! is busy (receives and sends nothing) for that long after each turn, and
//! reports it to the host for speed control, exactly like a slow machine.

use std::time::{Duration, Instant};

use netchan::{ConditionerConfig, Endpoint, LocalDriver, LocalHub};

use crate::error::LockstepError;
use crate::host::{Host, HostConfig, HostEvent};
use crate::net::{host_endpoint_config, peer_endpoint_config, HostNode, PeerNode, Traffic};
use crate::peer::{Executed, Peer, PeerConfig, PeerStats};
use crate::sim::Simulation;
use crate::wire::ParticipantId;

/// What to run.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// Participants.
    pub participants: usize,
    /// The host's settings, seed and simulation setup.
    pub host: HostConfig,
    /// Each participant's evidence keeping.
    pub peer: PeerConfig,
    /// What the conditioner does to every datagram, both directions.
    pub link: ConditionerConfig,
    /// Seed of the conditioners.
    pub link_seed: u64,
    /// Stop once every remaining participant executed this many turns.
    pub turns: u32,
    /// Simulated cost of one step on each participant's machine (missing: 1 ms).
    pub frame_cost: Vec<Duration>,
    /// Participant `p` leaves after executing turn `t`.
    pub leave: Vec<(ParticipantId, u32)>,
    /// Participant `p` goes silent after executing turn `t`: it keeps its
    /// connection open but never sends or receives again (a hung machine).
    pub silent: Vec<(ParticipantId, u32)>,
    /// Participant `p` perturbs its state after executing turn `t`.
    pub inject_desync: Option<(ParticipantId, u32)>,
    /// Give up after this much simulated time.
    pub time_limit: Duration,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            participants: 4,
            host: HostConfig::default(),
            peer: PeerConfig::default(),
            link: ConditionerConfig::default(),
            link_seed: 1,
            turns: 100,
            frame_cost: Vec::new(),
            leave: Vec::new(),
            silent: Vec::new(),
            inject_desync: None,
            time_limit: Duration::from_secs(600),
        }
    }
}

/// One participant at the end.
#[derive(Debug)]
pub struct ParticipantReport<S: Simulation> {
    /// Its number.
    pub id: ParticipantId,
    /// Its counters.
    pub stats: PeerStats,
    /// Its simulation.
    pub sim: Option<S>,
    /// Why it stopped, if it did.
    pub error: Option<LockstepError>,
    /// Bytes moved on its connection.
    pub traffic: Traffic,
    /// The checksum of its final state.
    pub final_checksum: Option<u64>,
}

/// How a session went.
#[derive(Debug)]
pub struct SessionReport<S: Simulation> {
    /// Every participant, by number.
    pub participants: Vec<ParticipantReport<S>>,
    /// Everything the host reported.
    pub host_events: Vec<HostEvent>,
    /// Simulated time from the first connect to the end.
    pub elapsed: Duration,
    /// Whether the time limit ended it.
    pub timed_out: bool,
}

impl<S: Simulation> SessionReport<S> {
    /// Out-of-sync reports of the host.
    pub fn desyncs(&self) -> Vec<&LockstepError> {
        self.host_events
            .iter()
            .filter_map(|e| match e {
                HostEvent::OutOfSync(error) => Some(error),
                _ => None,
            })
            .collect()
    }
}

struct Slot<S: Simulation> {
    node: PeerNode<netchan::local::LocalTransport, S>,
    busy_until: Instant,
    cost: Duration,
    /// Hung: never pumped again.
    silent: bool,
}

/// Runs a session. `commands(participant, peer)` is asked after each turn a
/// participant executes for the commands it issues during the next turn;
/// `observe(participant, peer, executed)` sees every executed turn.
pub fn run<S: Simulation>(
    config: &SessionConfig,
    mut commands: impl FnMut(ParticipantId, &Peer<S>) -> Vec<Vec<u8>>,
    mut observe: impl FnMut(ParticipantId, &Peer<S>, &Executed),
) -> Result<SessionReport<S>, std::io::Error> {
    let t0 = Instant::now();
    let mut now = t0;
    let hub = LocalHub::new();
    let mut server = host_endpoint_config();
    server.secret = [7; 32];
    let mut host_driver = LocalDriver::bind_local(&hub, None, Endpoint::new(server, now))?;
    host_driver.set_conditioner(config.link.clone(), config.link_seed);
    let mut host = HostNode::new(
        host_driver,
        Host::new(config.host.clone()),
        config.participants,
    );
    let mut slots: Vec<Slot<S>> = Vec::with_capacity(config.participants);
    for i in 0..config.participants {
        let mut client = peer_endpoint_config();
        client.secret = [i as u8 + 8; 32];
        let mut driver = LocalDriver::bind_local(&hub, None, Endpoint::new(client, now))?;
        driver.set_conditioner(
            config.link.clone(),
            config.link_seed.wrapping_add(1 + i as u64),
        );
        let node = PeerNode::connect(
            driver,
            Peer::new(config.peer),
            now,
            host.local_addr(),
            1000 + i as u32,
        )
        .map_err(|e| std::io::Error::other(e.to_string()))?;
        slots.push(Slot {
            node,
            busy_until: now,
            cost: config
                .frame_cost
                .get(i)
                .copied()
                .unwrap_or(Duration::from_millis(1)),
            silent: false,
        });
    }
    let mut host_events = Vec::new();
    let mut timed_out = false;
    loop {
        // Move everything due now until the network is quiet.
        for _ in 0..64 {
            let mut moved = host.pump(now);
            for slot in slots
                .iter_mut()
                .filter(|s| !s.silent && now >= s.busy_until)
            {
                moved += slot.node.receive(now);
                if let Some(executed) = slot.node.peer_mut().poll(now) {
                    moved += 1;
                    let peer = slot.node.peer_mut();
                    let id = peer.id().unwrap_or(0);
                    if config.inject_desync == Some((id, executed.turn)) {
                        if let Some(sim) = peer.sim_mut() {
                            sim.perturb();
                        }
                    }
                    observe(id, slot.node.peer(), &executed);
                    let steps = executed.steps.max(1);
                    slot.busy_until = now + slot.cost * steps;
                    slot.node.peer_mut().report_frame_time(slot.cost);
                    if config.leave.contains(&(id, executed.turn)) {
                        // It stays pumped (its leave and disconnect notices
                        // must get out) but executes nothing more.
                        slot.node.leave(now);
                        continue;
                    }
                    if config.silent.contains(&(id, executed.turn)) {
                        slot.silent = true;
                        continue;
                    }
                    for command in commands(id, slot.node.peer()) {
                        // A full set keeps the rest for the next turn's set.
                        if slot.node.peer_mut().issue(now, &command).is_err() {
                            break;
                        }
                    }
                }
                moved += slot.node.flush(now);
            }
            while let Some(event) = host.poll_event() {
                host_events.push(event);
            }
            if moved == 0 {
                break;
            }
        }
        let running: Vec<&Slot<S>> = slots
            .iter()
            .filter(|s| !s.silent && s.node.peer().error().is_none())
            .collect();
        let done = running
            .iter()
            .all(|s| s.node.peer().stats().turns >= config.turns);
        if done || running.is_empty() || host.host().is_stopped() {
            // Let the out-of-sync notice reach everyone before stopping.
            if host.host().is_stopped() && !running.is_empty() && now - t0 < config.time_limit {
                now += Duration::from_millis(10);
                continue;
            }
            break;
        }
        if now - t0 >= config.time_limit {
            timed_out = true;
            break;
        }
        let next = slots
            .iter()
            .filter(|s| !s.silent)
            .flat_map(|s| [s.node.next_wakeup(), Some(s.busy_until)])
            .flatten()
            .filter(|&t| t > now)
            .chain(host.next_wakeup())
            .min()
            .unwrap_or(now + Duration::from_millis(1));
        now = next
            .max(now + Duration::from_micros(100))
            .min(now + Duration::from_millis(20));
    }
    let participants = slots
        .into_iter()
        .enumerate()
        .map(|(i, slot)| {
            let traffic = slot.node.traffic();
            let peer = slot.node.peer();
            let id = peer.id().unwrap_or(i as ParticipantId);
            let stats = *peer.stats();
            let final_checksum = peer.sim().map(S::checksum);
            let error = peer.error().cloned();
            ParticipantReport {
                id,
                stats,
                sim: slot.node.into_sim(),
                error,
                traffic,
                final_checksum,
            }
        })
        .collect();
    Ok(SessionReport {
        participants,
        host_events,
        elapsed: now - t0,
        timed_out,
    })
}
