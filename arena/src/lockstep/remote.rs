//! Lockstep across processes: `arena serve --model lockstep` is the relay
//! host on a UDP address, and `arena bots --model lockstep` plays
//! participants against it, each running its own replica of the world, on
//! the real clock.
//!
//! The host starts the session once `--participants` have connected. It
//! also runs a replica of its own — fed with exactly the turns it sends —
//! which records the match (`--record`) and checks every sync checksum the
//! participants agreed on against its own. On SIGINT/SIGTERM (or after
//! `--seconds`) it ends the session at an agreed turn: the last turn it has
//! sent, announced in every message from then on; every participant plays
//! up to it and stops there, the host waits (bounded) until all have
//! acknowledged it, closes the recording and says goodbye. The bots then
//! end on their own. A bots process that gets a signal leaves instead: its
//! participants are dropped at the next turn boundary and the rest play on.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use lockstep::net::{host_endpoint_config, peer_endpoint_config};
use lockstep::{
    Host, HostConfig, HostEvent, HostNode, LockstepError, ParticipantId, Peer, PeerConfig,
    PeerNode, Simulation, SpeedLimits, Turn,
};
use netchan::{Driver, Endpoint};
use serde_json::{json, Value};

use crate::bot::Bot;
use crate::cli::{BotsArgs, ServeArgs};
use crate::error::Error;
use crate::lockstep::run::{
    issue_commands, record_turn, settings, LockstepRecording, RecordedSession,
};
use crate::lockstep::sim::ArenaSim;
use crate::lockstep::summary::{LockstepClient, LockstepSummary};
use crate::shutdown::Shutdown;
use crate::transport::{Metered, Net, Network, TransportKind};

type UdpDriver = Driver<Metered<netchan::UdpTransport>>;

/// A participant the host has not heard from for this long while a turn
/// waits for it is dropped.
const DROP_AFTER: Duration = Duration::from_secs(5);
/// Longest wait, after the end is decided, for every participant to
/// acknowledge the last turn.
const END_LIMIT: Duration = Duration::from_secs(5);
/// Longest wait for the goodbyes to leave the socket.
const GOODBYE_LIMIT: Duration = Duration::from_millis(500);
/// How long a bots process keeps answering after its participants finished
/// (so the host hears their acknowledgement of the last turn), unless the
/// host closes first.
const LINGER: Duration = Duration::from_secs(2);
/// Time between two participants' connects in one bots process.
const JOIN_SPACING: Duration = Duration::from_millis(50);

fn udp(net: Net) -> Result<UdpDriver, Error> {
    match net {
        Net::Udp(driver) => Ok(driver),
        Net::Local(_) => Err(Error::Config("lockstep processes talk over UDP".into())),
    }
}

/// What `arena serve --model lockstep` reports.
#[derive(Debug, Clone, PartialEq)]
pub struct HostSummary {
    /// The address it listened on.
    pub bind: SocketAddr,
    /// Seconds it ran.
    pub seconds: f64,
    /// What ended it: `time`, `SIGINT`, `SIGTERM`, or `session` (everyone left).
    pub stopped_by: String,
    /// Participants at the start (0 if the session never started).
    pub participants: usize,
    /// Turns sent.
    pub turns: u32,
    /// The agreed last turn, if the end was decided.
    pub last_turn: Option<u32>,
    /// Whether every remaining participant acknowledged the last turn.
    pub all_delivered: bool,
    /// Speed control's plan at the end.
    pub plan: lockstep::Plan,
    /// Participants dropped, and the first turn without them.
    pub drops: BTreeMap<ParticipantId, u32>,
    /// Sync turns whose agreed checksum the host's replica reproduced.
    pub sync_verified: u32,
    /// Sync turns where the replica disagreed with the participants.
    pub sync_mismatches: Vec<u32>,
    /// The out-of-sync report, if the participants diverged.
    pub desync: Option<String>,
    /// Turns the replica executed (and recorded).
    pub replica_turns: u32,
    /// The replica's final checksum.
    pub final_checksum: Option<u64>,
    /// The recording, if any.
    pub record: Option<PathBuf>,
    /// Protocol errors of participants.
    pub host_errors: Vec<String>,
}

impl HostSummary {
    /// Broken invariants, each as a sentence.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(d) = &self.desync {
            out.push(d.clone());
        }
        for turn in &self.sync_mismatches {
            out.push(format!(
                "the host's replica disagrees with the participants at sync turn {turn}"
            ));
        }
        if self.last_turn.is_some() && !self.all_delivered {
            out.push(format!(
                "not every participant acknowledged the last turn within {} s",
                END_LIMIT.as_secs()
            ));
        }
        if let Some(last) = self.last_turn {
            if self.participants > 0 && self.replica_turns != last + 1 {
                out.push(format!(
                    "the replica executed {} turns, the session ended after turn {last}",
                    self.replica_turns
                ));
            }
        }
        out.extend(self.host_errors.iter().map(|e| format!("host: {e}")));
        out
    }

    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.failures().is_empty()
    }

    /// The summary as JSON.
    pub fn to_json(&self) -> String {
        json!({
            "model": "lockstep",
            "bind": self.bind.to_string(),
            "seconds": (self.seconds * 10.0).round() / 10.0,
            "stopped_by": self.stopped_by,
            "participants": self.participants,
            "turns": self.turns,
            "last_turn": self.last_turn,
            "all_delivered": self.all_delivered,
            "turn_ms": self.plan.turn_ms,
            "steps_per_turn": self.plan.steps,
            "dropped": self.drops.iter().map(|(p, t)| json!({"participant": p, "turn": t})).collect::<Vec<_>>(),
            "sync_verified": self.sync_verified,
            "sync_mismatches": self.sync_mismatches,
            "desync": self.desync,
            "replica_turns": self.replica_turns,
            "final_checksum": self.final_checksum.map(|s| format!("{s:016x}")),
            "record": self.record.as_ref().map(|p| p.display().to_string()),
            "ok": self.ok(),
            "failures": self.failures(),
        })
        .to_string()
    }

    /// A readable report.
    pub fn table(&self) -> String {
        let mut out = format!(
            "arena serve --model lockstep on {}: {:.1} s, stopped by {}, {} participants, {} turns \
             (last {}), speed control at the end: {} ms turns of {} step(s)\n",
            self.bind,
            self.seconds,
            self.stopped_by,
            self.participants,
            self.turns,
            self.last_turn
                .map_or_else(|| "not decided".to_string(), |t| t.to_string()),
            self.plan.turn_ms,
            self.plan.steps
        );
        out.push_str(&format!(
            "replica: {} turns, final checksum {}, {} sync turns verified; all delivered: {}\n",
            self.replica_turns,
            self.final_checksum
                .map_or_else(|| "-".to_string(), |s| format!("{s:016x}")),
            self.sync_verified,
            self.all_delivered
        ));
        for (p, t) in &self.drops {
            out.push_str(&format!("participant {p} dropped from turn {t}\n"));
        }
        let failures = self.failures();
        if failures.is_empty() {
            out.push_str("all invariants held\n");
        }
        for f in failures {
            out.push_str(&format!("FAILED: {f}\n"));
        }
        out
    }
}

/// The host's own replica of the world: executes every turn sent, records
/// it, and remembers its checksums at sync turns.
struct Replica {
    sim: Option<ArenaSim>,
    participants: Vec<ParticipantId>,
    seed: u64,
    settings: lockstep::Settings,
    turns: u32,
    checks: BTreeMap<u32, u64>,
    recorder: Option<LockstepRecording>,
    record: Option<PathBuf>,
}

impl Replica {
    fn execute(&mut self, turn: &Turn) -> Result<(), Error> {
        if self.sim.is_none() {
            let sim = ArenaSim::create(self.seed, &ArenaSim::setup(), &self.participants)
                .map_err(|e| Error::Config(format!("replica: {e}")))?;
            self.sim = Some(sim);
        }
        let Some(sim) = self.sim.as_mut() else {
            return Ok(());
        };
        sim.execute(turn, self.settings.step_ms);
        self.turns += 1;
        if (turn.turn + 1) % self.settings.sync_interval == 0 {
            self.checks.insert(turn.turn, sim.checksum());
        }
        if let Some(path) = &self.record {
            let session = RecordedSession {
                seed: self.seed,
                setup: &ArenaSim::setup(),
                participants: &self.participants,
                settings: self.settings,
                metadata: BTreeMap::from([
                    (
                        "recorder".to_string(),
                        "arena serve --model lockstep".to_string(),
                    ),
                    (
                        "participants".to_string(),
                        self.participants.len().to_string(),
                    ),
                    ("transport".to_string(), "udp".to_string()),
                ]),
            };
            record_turn(&mut self.recorder, path, &session, turn, sim)?;
        }
        Ok(())
    }
}

/// Runs `arena serve --model lockstep` until a signal or `--seconds`, then
/// ends the session at an agreed turn. `bound` hears the address first.
pub fn serve(
    args: &ServeArgs,
    shutdown: &Shutdown,
    bound: impl FnOnce(SocketAddr),
) -> Result<HostSummary, Error> {
    args.validate().map_err(Error::Config)?;
    let started = Instant::now();
    let mut network = Network::new(TransportKind::Udp)?;
    let net = network.bind_udp_at(args.bind, Endpoint::new(host_endpoint_config(), started))?;
    let settings = settings(args.tick_hz);
    let config = HostConfig {
        settings,
        seed: args.seed,
        setup: ArenaSim::setup(),
        limits: SpeedLimits::default(),
        drop_after: DROP_AFTER,
        observe: true,
        ..HostConfig::default()
    };
    let mut host = HostNode::new(udp(net)?, Host::new(config), args.participants);
    let bind = host.local_addr();
    bound(bind);
    let mut replica = Replica {
        sim: None,
        participants: Vec::new(),
        seed: args.seed,
        settings,
        turns: 0,
        checks: BTreeMap::new(),
        recorder: None,
        record: args.record.clone(),
    };
    let end_at = args.seconds.map(|s| started + Duration::from_secs_f64(s));
    let mut events = Vec::new();
    let mut ending: Option<(Instant, String)> = None;
    let stopped_by = loop {
        let now = Instant::now();
        if ending.is_none() {
            let why = shutdown
                .signal_name()
                .map(str::to_owned)
                .or_else(|| end_at.is_some_and(|e| now >= e).then(|| "time".to_owned()));
            if let Some(why) = why {
                if !host.host().is_started() {
                    break why;
                }
                let last = host.host().next_turn().saturating_sub(1);
                host.end_after(last);
                tracing::info!("ending the session after turn {last} ({why})");
                ending = Some((now, why));
            }
        }
        host.pump(now);
        while let Some(event) = host.poll_event() {
            if let HostEvent::Dropped {
                participant,
                turn,
                reason,
            } = &event
            {
                tracing::info!("participant {participant} dropped from turn {turn}: {reason:?}");
            }
            events.push(event);
        }
        while let Some(turn) = host.poll_sent_turn() {
            if replica.participants.is_empty() {
                replica.participants = host.host().participants().collect();
                tracing::info!(
                    "session started with {} participants",
                    replica.participants.len()
                );
            }
            replica.execute(&turn)?;
        }
        if let Some((since, why)) = &ending {
            if host.host().all_delivered() || now >= *since + END_LIMIT {
                break why.clone();
            }
        }
        if host.host().is_stopped() {
            // Out of sync, or nobody left.
            break "session".to_owned();
        }
        let mut wake = now + Duration::from_millis(50);
        if let Some(t) = host.next_wakeup() {
            wake = wake.min(t);
        }
        if let Some(e) = end_at {
            wake = wake.min(e);
        }
        let wait = wake.saturating_duration_since(Instant::now());
        if !wait.is_zero() {
            network.wait(wait.min(Duration::from_millis(50)))?;
        }
    };
    let all_delivered = host.host().all_delivered();
    host.shutdown();
    let goodbye_end = Instant::now() + GOODBYE_LIMIT;
    while host.driver().endpoint().connections().count() > 0 && Instant::now() < goodbye_end {
        host.pump(Instant::now());
        network.wait(Duration::from_millis(5))?;
    }
    if let Some(recording) = replica.recorder.take() {
        recording.finish()?;
    }
    let mut sync_verified = 0;
    let mut sync_mismatches = Vec::new();
    let mut desync = None;
    let mut drops = BTreeMap::new();
    for event in &events {
        match event {
            HostEvent::InSync { turn, checksum } => match replica.checks.get(turn) {
                Some(mine) if mine == checksum => sync_verified += 1,
                Some(_) => sync_mismatches.push(*turn),
                None => {}
            },
            HostEvent::OutOfSync(error) => desync = Some(error.to_string()),
            HostEvent::Dropped {
                participant, turn, ..
            } => {
                drops.insert(*participant, *turn);
            }
            HostEvent::TurnSent { .. } => {}
        }
    }
    Ok(HostSummary {
        bind,
        seconds: started.elapsed().as_secs_f64(),
        stopped_by,
        participants: replica.participants.len(),
        turns: host.host().next_turn(),
        last_turn: host.host().last_turn(),
        all_delivered,
        plan: host.host().plan(),
        drops,
        sync_verified,
        sync_mismatches,
        desync,
        replica_turns: replica.turns,
        final_checksum: replica.sim.as_ref().map(Simulation::checksum),
        record: replica.record.clone().filter(|_| replica.turns > 0),
        host_errors: host.errors().iter().map(ToString::to_string).collect(),
    })
}

/// One participant of a bots process.
struct Seat {
    node: PeerNode<Metered<netchan::UdpTransport>, ArenaSim>,
    bot: Bot,
    seq: u32,
    left: bool,
    traffic_at_end: Option<lockstep::Traffic>,
    first_turn_at: Option<Instant>,
    last_turn_at: Option<Instant>,
}

/// What `arena bots --model lockstep` reports: the single-process lockstep
/// match's summary of its participants, plus the host's address and what
/// ended the session.
#[derive(Debug, Clone, PartialEq)]
pub struct BotsSummary {
    /// The host.
    pub server_addr: SocketAddr,
    /// What ended it: `session` (the host's last turn), `time`, `SIGINT`,
    /// `SIGTERM` (the bots left), or `host lost`.
    pub ended_by: String,
    /// The participants of this process.
    pub summary: LockstepSummary,
}

impl BotsSummary {
    /// Broken invariants: the lockstep match's (a desync, participants
    /// ending on different turns or states, errors), and losing the host
    /// before the session's end.
    pub fn failures(&self) -> Vec<String> {
        let mut out = self.summary.failures();
        if self.ended_by == "host lost" {
            out.push(format!(
                "lost the host at {} before the session ended",
                self.server_addr
            ));
        }
        out
    }

    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.failures().is_empty()
    }

    /// The summary as JSON: the lockstep match's fields plus
    /// `server_addr` and `ended_by`.
    pub fn to_json(&self) -> String {
        let mut value: Value =
            serde_json::from_str(&self.summary.to_json()).unwrap_or_else(|_| json!({}));
        if let Value::Object(map) = &mut value {
            map.insert("server_addr".into(), json!(self.server_addr.to_string()));
            map.insert("ended_by".into(), json!(self.ended_by));
            map.insert("ok".into(), json!(self.ok()));
            map.insert("failures".into(), json!(self.failures()));
        }
        value.to_string()
    }

    /// A readable report.
    pub fn table(&self) -> String {
        format!(
            "arena bots --model lockstep on {}: ended by {}\n{}",
            self.server_addr,
            self.ended_by,
            self.summary.table()
        )
    }
}

/// Runs `arena bots --model lockstep`: `--count` participants against the
/// host, until the session ends, `--seconds` pass or a signal arrives (then
/// they leave).
pub fn bots(args: &BotsArgs, shutdown: &Shutdown) -> Result<BotsSummary, Error> {
    args.validate().map_err(Error::Config)?;
    let epoch = Instant::now();
    let mut network = Network::new(TransportKind::Udp)?;
    let local: SocketAddr = if args.connect.ip().is_loopback() {
        ([127, 0, 0, 1], 0).into()
    } else {
        ([0, 0, 0, 0], 0).into()
    };
    let link = netchan::ConditionerConfig {
        loss: args.loss,
        latency: Duration::from_millis(args.latency_ms),
        jitter: Duration::from_millis(args.jitter_ms),
        ..netchan::ConditionerConfig::default()
    };
    let end_at = args.seconds.map(|s| epoch + Duration::from_secs_f64(s));
    let mut seats: Vec<Seat> = Vec::with_capacity(args.count);
    let step_ms = settings(20).step_ms;
    let ended_by = loop {
        let now = Instant::now();
        if seats.len() < args.count && now >= epoch + JOIN_SPACING * seats.len() as u32 {
            let index = seats.len() as u64;
            let mut net = network.bind_udp_at(local, Endpoint::new(peer_endpoint_config(), now))?;
            net.set_conditioner(link.clone(), args.seed.wrapping_add(index * 7919));
            // A client id unique per process and bot (a qport).
            let client_id =
                (crate::game::derive(args.seed ^ std::process::id() as u64, index) as u32) | 1;
            let node = PeerNode::connect(
                udp(net)?,
                Peer::new(PeerConfig::default()),
                now,
                args.connect,
                client_id,
            )
            .map_err(|e| Error::Config(format!("connect: {e}")))?;
            seats.push(Seat {
                node,
                bot: Bot::new(args.seed ^ (0xb07 + index).wrapping_mul(0x9e37_79b9)),
                seq: 0,
                left: false,
                traffic_at_end: None,
                first_turn_at: None,
                last_turn_at: None,
            });
        }
        let signal = shutdown.signal_name().map(str::to_owned);
        let timeout = end_at.is_some_and(|e| now >= e).then(|| "time".to_owned());
        if let Some(why) = signal.or(timeout) {
            for seat in seats.iter_mut().filter(|s| !s.left) {
                seat.left = true;
                seat.traffic_at_end = Some(seat.node.traffic());
                seat.node.leave(now);
            }
            break why;
        }
        for seat in &mut seats {
            seat.node.receive(now);
            let frame_started = Instant::now();
            while let Some(executed) = seat.node.peer_mut().poll(now) {
                seat.first_turn_at.get_or_insert(now);
                seat.last_turn_at = Some(now);
                let per_step = frame_started.elapsed() / executed.steps.max(1);
                seat.node.peer_mut().report_frame_time(per_step);
                let step = seat.node.peer().settings().map_or(step_ms, |s| s.step_ms);
                issue_commands(
                    &mut seat.node,
                    &mut seat.bot,
                    &mut seat.seq,
                    executed.steps,
                    step,
                    now,
                );
            }
            seat.node.flush(now);
        }
        let all_joined = seats.len() == args.count;
        let done = |s: &Seat| s.node.peer().is_finished() || s.node.peer().error().is_some();
        if all_joined && seats.iter().all(done) {
            let finished = seats.iter().all(|s| s.node.peer().is_finished());
            let desync = seats
                .iter()
                .any(|s| matches!(s.node.peer().error(), Some(LockstepError::OutOfSync { .. })));
            break if finished {
                "session"
            } else if desync {
                "desync"
            } else {
                "host lost"
            }
            .to_owned();
        }
        let mut wake = now + Duration::from_millis(20);
        for seat in &seats {
            if let Some(t) = seat.node.next_wakeup() {
                wake = wake.min(t);
            }
        }
        if !all_joined {
            wake = wake.min(epoch + JOIN_SPACING * seats.len() as u32);
        }
        let wait = wake.saturating_duration_since(Instant::now());
        if !wait.is_zero() {
            network.wait(wait)?;
        }
    };
    // Keep answering a moment: the host waits for everyone's acknowledgement
    // of the last turn (or for the leave notices), then closes.
    let linger_end = Instant::now() + LINGER;
    while Instant::now() < linger_end && seats.iter().any(|s| s.node.is_connected()) {
        let now = Instant::now();
        for seat in &mut seats {
            seat.node.receive(now);
            seat.node.flush(now);
        }
        network.wait(Duration::from_millis(5))?;
    }
    Ok(summarize(args, seats, ended_by))
}

fn summarize(args: &BotsArgs, seats: Vec<Seat>, ended_by: String) -> BotsSummary {
    let mut drops = BTreeMap::new();
    let mut plan = lockstep::Plan {
        turn_ms: 0,
        steps: 0,
    };
    let mut turns_sent = 0;
    let mut first = None;
    let mut last = None;
    let clients: Vec<LockstepClient> = seats
        .iter()
        .enumerate()
        .map(|(bot, seat)| {
            let peer = seat.node.peer();
            let stats = peer.stats();
            if let Some(turn) = peer.last_turn() {
                for &p in &turn.dropped {
                    drops.insert(p, turn.turn);
                }
                plan = lockstep::Plan {
                    turn_ms: turn.turn_ms,
                    steps: turn.steps,
                };
                turns_sent = turns_sent.max(turn.turn + 1);
            }
            first = match (first, seat.first_turn_at) {
                (Some(a), Some(b)) => Some(std::cmp::min(a, b)),
                (a, b) => a.or(b),
            };
            last = last.max(seat.last_turn_at);
            let seconds = match (seat.first_turn_at, seat.last_turn_at) {
                (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64().max(1e-3),
                _ => 1e-3,
            };
            let traffic = seat.traffic_at_end.unwrap_or_else(|| seat.node.traffic());
            // A participant that left on a signal is not an error of the run.
            let error = peer
                .error()
                .filter(|e| !(seat.left && matches!(e, LockstepError::Dropped { .. })))
                .map(|e| e.to_string());
            LockstepClient {
                bot,
                id: peer.id().unwrap_or(u8::MAX),
                turns: stats.turns,
                turn_ms: stats.mean_turn_ms(),
                last_turn_ms: stats.turn_ms,
                input_latency_ms: stats.mean_input_latency_ms(),
                stalls: stats.stalls,
                desyncs: matches!(peer.error(), Some(LockstepError::OutOfSync { .. })) as u32,
                final_checksum: peer.sim().map(Simulation::checksum),
                final_turn: peer.next_turn().checked_sub(1),
                kbps_up: traffic.sent as f64 * 8.0 / 1000.0 / seconds,
                kbps_down: traffic.received as f64 * 8.0 / 1000.0 / seconds,
                commands: seat.seq,
                left: seat.left,
                silent: false,
                error,
            }
        })
        .collect();
    // Participants of this process that left were dropped by the host after
    // they went: say so, so the match summary does not count them missing.
    for c in clients.iter().filter(|c| c.left) {
        drops.entry(c.id).or_insert(turns_sent);
    }
    let seconds = match (first, last) {
        (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
        _ => 0.0,
    };
    let desync = seats.iter().find_map(|s| match s.node.peer().error() {
        Some(LockstepError::OutOfSync {
            turn,
            participants,
            last_agreed,
        }) => Some(crate::lockstep::summary::Desync {
            turn: *turn,
            participants: participants.clone(),
            last_agreed: *last_agreed,
            dump: None,
            injected_at: None,
        }),
        _ => None,
    });
    let left_on_purpose = ended_by != "session" && clients.iter().all(|c| c.left);
    BotsSummary {
        server_addr: args.connect,
        ended_by,
        summary: LockstepSummary {
            transport: TransportKind::Udp,
            seed: args.seed,
            loss: args.loss,
            seconds,
            turns_sent,
            plan,
            drops,
            clients,
            desync,
            host_errors: Vec::new(),
            record: None,
            inject_desync: None,
            left_on_purpose,
        },
    }
}
