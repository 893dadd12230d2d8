//! The lockstep match loop: a relay host and one participant per bot, over
//! UDP on 127.0.0.1 or the in-process link, every send path through the
//! seeded link conditioner, on the real or a simulated clock.
//!
//! Each participant runs its own replica of the world ([`ArenaSim`]); its
//! bot decides from that replica after each turn and sends only commands.
//! The bots follow the match schedule: a silent bot stops (the host drops
//! it when its turn times out), a leaving bot leaves (dropped at the next
//! turn boundary). At the end the host stops after the turns already sent,
//! every remaining participant executes them, and the final checksums must
//! all agree.

use std::collections::BTreeMap;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use demo::lockstep::{LockstepHeader, LockstepRecorder};
use lockstep::net::{host_endpoint_config, peer_endpoint_config};
use lockstep::{
    Host, HostConfig, HostEvent, HostNode, LockstepError, Peer, PeerConfig, PeerNode, Settings,
    Simulation, SpeedLimits,
};
use netchan::{Driver, Endpoint, Transport};

use crate::bot::{Bot, SelfView};
use crate::config::{ClockKind, MatchConfig};
use crate::error::Error;
use crate::interp::RenderEntity;
use crate::lockstep::sim::ArenaSim;
use crate::lockstep::summary::{Desync, LockstepClient, LockstepSummary};
use crate::output::PendingFile;
use crate::protocol::{kind, MAX_COMMAND_MSEC};
use crate::transport::{Net, Network, TransportKind};
use crate::world::ITEM_BASE;

/// Turns between sync checksums in arena matches.
pub const SYNC_INTERVAL: u32 = 4;
/// Turns between recorded keyframes.
pub const KEYFRAME_INTERVAL: u32 = 20;
/// Most commands a bot sends for one turn (16 bytes each, within a set's 240).
const MAX_COMMANDS_PER_TURN: u32 = 12;

/// `arena --model lockstep`: plays the match, prints the table, writes the
/// JSON summary, and fails (naming the turn on a desync) when an invariant
/// broke. The out-of-sync dump goes to the current directory.
pub fn main(config: &MatchConfig) -> std::process::ExitCode {
    use std::process::ExitCode;
    let summary = match play_lockstep(config, Path::new(".")) {
        Ok(summary) => summary,
        Err(e) => {
            eprintln!("arena: {e}");
            return ExitCode::FAILURE;
        }
    };
    let recording = summary.record.as_deref().map(|p| ("lockstep recording", p));
    let json = config
        .summary_json
        .as_deref()
        .map(|p| (p, summary.to_json()));
    if !crate::output::conclude("arena", &summary.table(), recording, json) {
        return ExitCode::FAILURE;
    }
    let failures = summary.failures();
    if failures.is_empty() {
        return ExitCode::SUCCESS;
    }
    for failure in failures {
        eprintln!("arena: {failure}");
    }
    ExitCode::FAILURE
}

/// Plays a lockstep match. `dump_dir` receives the out-of-sync dump if the
/// participants diverge.
pub fn play_lockstep(config: &MatchConfig, dump_dir: &Path) -> Result<LockstepSummary, Error> {
    let mut network = Network::new(config.transport)?;
    let now = Instant::now();
    let mut nets = Vec::with_capacity(config.clients + 1);
    nets.push(network.bind(Endpoint::new(host_endpoint_config(), now))?);
    for _ in 0..config.clients {
        nets.push(network.bind(Endpoint::new(peer_endpoint_config(), now))?);
    }
    for (i, net) in nets.iter_mut().enumerate() {
        net.set_conditioner(
            config.link.clone(),
            config.seed.wrapping_add(i as u64 * 7919),
        );
    }
    match config.transport {
        TransportKind::Udp => {
            let drivers = nets
                .into_iter()
                .filter_map(|n| match n {
                    Net::Udp(d) => Some(d),
                    Net::Local(_) => None,
                })
                .collect();
            run(config, &mut network, drivers, dump_dir)
        }
        TransportKind::Local => {
            let drivers = nets
                .into_iter()
                .filter_map(|n| match n {
                    Net::Local(d) => Some(d),
                    Net::Udp(_) => None,
                })
                .collect();
            run(config, &mut network, drivers, dump_dir)
        }
    }
}

/// The participant that `--inject-desync` perturbs: the highest-numbered
/// bot that neither leaves nor goes silent, so it is still there (and not
/// the recorder, participant 0, unless it is alone).
pub fn desync_victim(config: &MatchConfig) -> u8 {
    let plan = config.schedule();
    (1..plan.len())
        .rev()
        .find(|&i| plan[i].leave_at.is_none() && plan[i].silent_at.is_none())
        .unwrap_or(0) as u8
}

struct Seat<T: Transport> {
    node: PeerNode<T, ArenaSim>,
    bot: Bot,
    seq: u32,
    left: bool,
    silent: bool,
    leave_at: Option<Duration>,
    silent_at: Option<Duration>,
    traffic_at_end: Option<lockstep::Traffic>,
}

fn run<T: Transport>(
    config: &MatchConfig,
    network: &mut Network,
    mut drivers: Vec<Driver<T>>,
    dump_dir: &Path,
) -> Result<LockstepSummary, Error> {
    if drivers.len() != config.clients + 1 {
        return Err(Error::Config("transport mismatch".into()));
    }
    let settings = settings(config.tick_hz);
    let step_ms = settings.step_ms;
    let host_config = HostConfig {
        settings,
        seed: config.seed,
        setup: ArenaSim::setup(),
        limits: SpeedLimits::default(),
        drop_after: config.timeout,
        ..HostConfig::default()
    };
    let start = Instant::now();
    let mut now = start;
    let host_driver = drivers.remove(0);
    let mut host = HostNode::new(host_driver, Host::new(host_config), config.clients);
    let host_addr = host.local_addr();
    let plan = config.schedule();
    let mut seats = Vec::with_capacity(config.clients);
    for (i, driver) in drivers.into_iter().enumerate() {
        let node = PeerNode::connect(
            driver,
            Peer::new(PeerConfig::default()),
            now,
            host_addr,
            0x4c00 + i as u32,
        )
        .map_err(|e| Error::Config(format!("connect: {e}")))?;
        seats.push(Seat {
            node,
            bot: Bot::new(config.seed ^ (0xb07 + i as u64).wrapping_mul(0x9e37_79b9)),
            seq: 0,
            left: false,
            silent: false,
            leave_at: plan[i].leave_at,
            silent_at: plan[i].silent_at,
            traffic_at_end: None,
        });
    }
    let victim = desync_victim(config);
    let mut recorder: Option<LockstepRecording> = None;
    let mut host_events = Vec::new();
    let mut ended_at: Option<Instant> = None;
    let mut stopped_at: Option<Instant> = None;
    let mut playing_since: Option<Instant> = None;
    let deadline = start + config.duration + config.drain_limit + Duration::from_secs(30);

    loop {
        let mut moved = host.pump(now);
        while let Some(event) = host.poll_event() {
            host_events.push(event);
        }
        let elapsed = now.saturating_duration_since(playing_since.unwrap_or(now));
        for (i, seat) in seats.iter_mut().enumerate() {
            if seat.silent {
                continue;
            }
            moved += seat.node.receive(now);
            if !seat.left && playing_since.is_some() {
                if seat.silent_at.is_some_and(|t| elapsed >= t) {
                    seat.silent = true;
                    seat.traffic_at_end = Some(seat.node.traffic());
                    continue;
                }
                if seat.leave_at.is_some_and(|t| elapsed >= t) {
                    seat.left = true;
                    seat.node.leave(now);
                    seat.traffic_at_end = Some(seat.node.traffic());
                    continue;
                }
            }
            let frame_started = Instant::now();
            while let Some(executed) = seat.node.peer_mut().poll(now) {
                moved += 1;
                playing_since.get_or_insert(now);
                if config.clock == ClockKind::Real {
                    let per_step = frame_started.elapsed() / executed.steps.max(1);
                    seat.node.peer_mut().report_frame_time(per_step);
                }
                let peer = seat.node.peer_mut();
                if config.inject_desync == Some(executed.turn) && i == victim as usize {
                    if let Some(sim) = peer.sim_mut() {
                        sim.perturb();
                    }
                }
                if i == 0 {
                    if let Some(path) = &config.record {
                        record(&mut recorder, path, config, seat.node.peer())?;
                    }
                }
                issue_commands(
                    &mut seat.node,
                    &mut seat.bot,
                    &mut seat.seq,
                    executed.steps,
                    step_ms,
                    now,
                );
            }
            moved += seat.node.flush(now);
        }

        let playing: Vec<&Seat<T>> = seats
            .iter()
            .filter(|s| !s.left && !s.silent && s.node.peer().error().is_none())
            .collect();
        // The end: the host sends no turn after the ones it has sent, and
        // everyone plays up to it.
        if ended_at.is_none()
            && playing_since.is_some_and(|t| now.saturating_duration_since(t) >= config.duration)
        {
            let last = host.host().next_turn().saturating_sub(1);
            host.end_after(last);
            ended_at = Some(now);
        }
        if host.host().is_stopped() {
            stopped_at.get_or_insert(now);
        }
        let all_done = host
            .host()
            .last_turn()
            .is_some_and(|last| playing.iter().all(|s| s.node.peer().next_turn() > last));
        let drained =
            ended_at.is_some_and(|t| now.saturating_duration_since(t) >= config.drain_limit);
        // After a desync, give the report a moment to reach everyone.
        let desync_settled = stopped_at.is_some_and(|t| {
            playing.is_empty() || now.saturating_duration_since(t) >= Duration::from_secs(2)
        });
        if all_done || drained || desync_settled || playing.is_empty() || now >= deadline {
            break;
        }

        let next = seats
            .iter()
            .filter(|s| !s.silent)
            .filter_map(|s| s.node.next_wakeup())
            .chain(host.next_wakeup())
            .min()
            .unwrap_or(now + Duration::from_millis(5));
        match config.clock {
            ClockKind::Sim => {
                now = next
                    .max(now + Duration::from_micros(100))
                    .min(now + Duration::from_millis(10));
            }
            ClockKind::Real => {
                if moved == 0 {
                    let wait = next
                        .saturating_duration_since(Instant::now())
                        .clamp(Duration::from_micros(200), Duration::from_millis(5));
                    network.wait(wait)?;
                }
                now = Instant::now();
            }
        }
    }
    if let Some(recording) = recorder {
        recording.finish()?;
    }

    let desync = host_events.iter().find_map(|e| match e {
        HostEvent::OutOfSync(LockstepError::OutOfSync {
            turn,
            participants,
            last_agreed,
        }) => Some((*turn, participants.clone(), *last_agreed)),
        _ => None,
    });
    let desync = match desync {
        Some((turn, participants, last_agreed)) => {
            let dump = write_dump(dump_dir, turn, &seats)?;
            Some(Desync {
                turn,
                participants,
                last_agreed,
                dump,
                injected_at: config.inject_desync,
            })
        }
        None => None,
    };
    let seconds = playing_since
        .map_or(Duration::ZERO, |t| now.saturating_duration_since(t))
        .as_secs_f64()
        .max(1e-3);
    let clients = seats
        .iter()
        .enumerate()
        .map(|(bot, seat)| {
            let peer = seat.node.peer();
            let stats = peer.stats();
            let traffic = seat.traffic_at_end.unwrap_or_else(|| seat.node.traffic());
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
                silent: seat.silent,
                error: peer.error().map(|e| e.to_string()),
            }
        })
        .collect();
    let drops = host_events
        .iter()
        .filter_map(|e| match e {
            HostEvent::Dropped {
                participant, turn, ..
            } => Some((*participant, *turn)),
            _ => None,
        })
        .collect::<BTreeMap<_, _>>();
    Ok(LockstepSummary {
        transport: config.transport,
        seed: config.seed,
        loss: config.link.loss,
        seconds,
        turns_sent: host.host().next_turn(),
        plan: host.host().plan(),
        drops,
        clients,
        desync,
        host_errors: host.errors().iter().map(ToString::to_string).collect(),
        record: config.record.clone(),
        inject_desync: config.inject_desync,
        left_on_purpose: false,
    })
}

/// The session settings of arena matches at `tick_hz`: T+2 turns, a sync
/// checksum every [`SYNC_INTERVAL`] turns, one world tick per step.
pub fn settings(tick_hz: u32) -> Settings {
    Settings {
        delay: 2,
        sync_interval: SYNC_INTERVAL,
        step_ms: (1000 / tick_hz.max(1)).max(1),
        initial_turn_ms: 100,
    }
}

/// `bot` decides from its participant's own replica of the world and issues
/// one command per step of the turn just executed (at most
/// [`MAX_COMMANDS_PER_TURN`]), so its player moves as long as game time
/// passes; `seq` numbers its commands.
pub(crate) fn issue_commands<T: Transport>(
    node: &mut PeerNode<T, ArenaSim>,
    bot: &mut Bot,
    seq: &mut u32,
    steps: u32,
    step_ms: u32,
    now: Instant,
) {
    let peer = node.peer();
    let (Some(id), Some(sim)) = (peer.id(), peer.sim()) else {
        return;
    };
    let world = sim.world();
    let Some(me) = world.player(id) else {
        return;
    };
    let mut view: Vec<RenderEntity> = world
        .players()
        .map(|(slot, p)| RenderEntity {
            number: slot as u32,
            kind: kind::PLAYER,
            pos: p.motion.pos,
            vel: p.motion.vel,
            owner: slot,
            active: p.alive,
            item: 0,
        })
        .collect();
    view.extend(
        world
            .items()
            .iter()
            .enumerate()
            .map(|(i, item)| RenderEntity {
                number: ITEM_BASE + i as u32,
                kind: kind::ITEM,
                pos: [item.pos[0], item.pos[1], 0.0],
                vel: [0.0; 3],
                owner: 0,
                active: item.available,
                item: item.kind,
            }),
    );
    let intent = bot.think(
        SelfView {
            client: id,
            motion: &me.motion,
            alive: me.alive,
            health: me.health.clamp(-511, 511) as i16,
            now_ms: world.time_ms() as u64,
        },
        &view,
        world.map(),
    );
    let total_ms = steps.max(1) * step_ms;
    let count = steps.clamp(1, MAX_COMMANDS_PER_TURN);
    let msec = (total_ms / count).min(MAX_COMMAND_MSEC as u32) as u8;
    for _ in 0..count {
        *seq += 1;
        let command = intent.command(msec);
        let bytes = crate::lockstep::command::encode(*seq, &command);
        if node.peer_mut().issue(now, &bytes).is_err() {
            // The set is full; the bot's later commands wait a turn.
            *seq -= 1;
            break;
        }
    }
}

fn record(
    recorder: &mut Option<LockstepRecording>,
    path: &Path,
    config: &MatchConfig,
    peer: &Peer<ArenaSim>,
) -> Result<(), Error> {
    let (Some(turn), Some(sim), Some(settings)) = (peer.last_turn(), peer.sim(), peer.settings())
    else {
        return Ok(());
    };
    let (seed, setup) = peer.seed_and_setup();
    let session = RecordedSession {
        seed,
        setup,
        participants: peer.participants(),
        settings,
        metadata: BTreeMap::from([
            ("recorder".to_string(), "arena --model lockstep".to_string()),
            ("bots".to_string(), config.clients.to_string()),
            ("transport".to_string(), config.transport.name().to_string()),
        ]),
    };
    record_turn(recorder, path, &session, turn, sim)
}

/// What a lockstep recording's header says about its session.
pub(crate) struct RecordedSession<'a> {
    pub seed: u64,
    pub setup: &'a [u8],
    pub participants: &'a [lockstep::ParticipantId],
    pub settings: Settings,
    pub metadata: BTreeMap<String, String>,
}

/// Records `turn` (just executed by `sim`) to the recording at `path`,
/// creating it (with its header) on the first turn.
pub(crate) fn record_turn(
    recorder: &mut Option<LockstepRecording>,
    path: &Path,
    session: &RecordedSession<'_>,
    turn: &lockstep::Turn,
    sim: &ArenaSim,
) -> Result<(), Error> {
    let demo_error = |e: demo::DemoError| Error::Demo(e.to_string());
    if recorder.is_none() {
        let header = LockstepHeader {
            simulation: ArenaSim::NAME.into(),
            seed: session.seed,
            setup: session.setup.to_vec(),
            participants: session.participants.to_vec(),
            settings: session.settings,
            keyframe_interval: KEYFRAME_INTERVAL,
            metadata: session.metadata.clone(),
        };
        let file = PendingFile::new(path);
        let recorder_of_file =
            LockstepRecorder::create(file.create()?, header).map_err(demo_error)?;
        *recorder = Some(LockstepRecording {
            recorder: recorder_of_file,
            file,
        });
    }
    if let Some(recording) = recorder.as_mut() {
        recording
            .recorder
            .record_turn(turn, sim)
            .map_err(demo_error)?;
    }
    Ok(())
}

/// A lockstep recording being written: its recorder, over a temporary
/// file that takes the recording's name only once [`finish`](Self::finish)
/// succeeded (a failed match leaves no half-written recording).
pub(crate) struct LockstepRecording {
    recorder: LockstepRecorder<BufWriter<std::fs::File>>,
    file: PendingFile,
}

impl LockstepRecording {
    /// Ends the recording, flushes it and gives it its name.
    pub(crate) fn finish(self) -> Result<(), Error> {
        let writer = self
            .recorder
            .finish()
            .map_err(|e| Error::Demo(e.to_string()))?;
        Ok(self.file.finish(writer)?)
    }
}

/// Writes every participant's saved state of sync turn `turn` (the one
/// whose checksums disagreed), one section each, for comparison.
fn write_dump<T: Transport>(
    dir: &Path,
    turn: u32,
    seats: &[Seat<T>],
) -> Result<Option<PathBuf>, Error> {
    use std::fmt::Write;
    let mut text = String::new();
    for seat in seats {
        let peer = seat.node.peer();
        let id = peer.id().unwrap_or(u8::MAX);
        match peer.sync_state(turn) {
            Some(state) => {
                let _ = writeln!(
                    text,
                    "== participant {id}: turn {turn}, checksum {:016x}",
                    state.checksum
                );
                match ArenaSim::load(&state.state) {
                    Ok(sim) => text.push_str(&sim.describe()),
                    Err(e) => {
                        let _ = writeln!(text, "(state does not load: {e})");
                    }
                }
            }
            None => {
                let _ = writeln!(text, "== participant {id}: no state kept for turn {turn}");
            }
        }
    }
    let path = dir.join(format!("arena-desync-turn-{turn}.txt"));
    std::fs::write(&path, text)?;
    Ok(Some(path))
}
