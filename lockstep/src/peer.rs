//! [`Peer`]: one participant. It owns the simulation, executes each turn
//! once the host's turn message (every participant's command set) is in and
//! the turn is due, sends its own command set for `turn + delay − 1` as each
//! turn starts (empty when it has nothing: that is its acknowledgement), and
//! a sync checksum every `sync_interval` turns.
//!
//! Sans-IO: messages in with [`Peer::handle_message`], out with
//! [`Peer::poll_transmit`], turns executed by [`Peer::poll`]; time only as
//! the `now` arguments.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use crate::error::LockstepError;
use crate::sim::Simulation;
use crate::wire::{
    CommandSet, ParticipantId, Settings, SpeedReport, SyncCheck, ToHost, ToPeer, Turn,
    MAX_COMMANDS_PER_SET, MAX_DELAY, MAX_SET_BYTES,
};

/// How a participant keeps evidence for out-of-sync reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerConfig {
    /// Saved states of the newest sync turns kept for a dump (0: none,
    /// which saves the cost of [`Simulation::save`] on big simulations).
    pub keep_sync_states: usize,
}

impl Default for PeerConfig {
    fn default() -> Self {
        PeerConfig {
            keep_sync_states: 4,
        }
    }
}

/// Counters of one participant.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PeerStats {
    /// Turns executed.
    pub turns: u32,
    /// Simulation steps executed.
    pub steps: u64,
    /// The newest turn's length, ms.
    pub turn_ms: u32,
    /// Sum of every executed turn's length, ms.
    pub turn_ms_sum: u64,
    /// Own commands executed, and the sum of their issue → execution times.
    pub commands_executed: u64,
    /// Sum of input latencies, µs.
    pub input_latency_us_sum: u64,
    /// Times a turn was due but its message had not arrived.
    pub stalls: u32,
    /// Total time spent waiting for due turns.
    pub stall_time: Duration,
    /// Sync checksums sent.
    pub checks_sent: u32,
    /// The newest checksum sent.
    pub last_check: Option<SyncCheck>,
}

impl PeerStats {
    /// Mean turn length, ms.
    pub fn mean_turn_ms(&self) -> f64 {
        self.turn_ms_sum as f64 / (self.turns.max(1)) as f64
    }

    /// Mean time from issuing a command to executing it, ms.
    pub fn mean_input_latency_ms(&self) -> f64 {
        self.input_latency_us_sum as f64 / 1000.0 / self.commands_executed.max(1) as f64
    }
}

/// The state of one participant at a sync turn, kept for a dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncState {
    /// The turn.
    pub turn: u32,
    /// The checksum sent for it.
    pub checksum: u64,
    /// [`Simulation::save`] after the turn.
    pub state: Vec<u8>,
}

/// What a participant did in one [`Peer::poll`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Executed {
    /// The turn.
    pub turn: u32,
    /// Its length, ms.
    pub turn_ms: u32,
    /// Its steps.
    pub steps: u32,
    /// Participants dropped at its start.
    pub dropped: Vec<ParticipantId>,
    /// The checksum computed after it, on a sync turn.
    pub check: Option<SyncCheck>,
}

/// One participant of a lockstep session, running simulation `S`.
#[derive(Debug)]
pub struct Peer<S: Simulation> {
    config: PeerConfig,
    id: Option<ParticipantId>,
    participants: Vec<ParticipantId>,
    settings: Option<Settings>,
    seed: u64,
    setup: Vec<u8>,
    sim: Option<S>,
    next_turn: u32,
    next_turn_at: Option<Instant>,
    waiting_since: Option<Instant>,
    turns: BTreeMap<u32, Turn>,
    pending: CommandSet,
    /// Issue times of own commands, with the turn they execute at.
    issued: VecDeque<(u32, Instant)>,
    pending_check: Option<SyncCheck>,
    rtt_ms: u16,
    frame_ms: u16,
    /// Smoothed interval between executed turns, µs.
    period_us: u64,
    last_executed_at: Option<Instant>,
    outbox: VecDeque<Vec<u8>>,
    stats: PeerStats,
    sync_states: VecDeque<SyncState>,
    stopped: Option<LockstepError>,
    last_turn: Option<Turn>,
}

impl<S: Simulation> Peer<S> {
    /// A participant waiting for the host's start.
    pub fn new(config: PeerConfig) -> Self {
        Peer {
            config,
            id: None,
            participants: Vec::new(),
            settings: None,
            seed: 0,
            setup: Vec::new(),
            sim: None,
            next_turn: 0,
            next_turn_at: None,
            waiting_since: None,
            turns: BTreeMap::new(),
            pending: CommandSet::default(),
            issued: VecDeque::new(),
            pending_check: None,
            rtt_ms: 0,
            frame_ms: 0,
            period_us: 0,
            last_executed_at: None,
            outbox: VecDeque::new(),
            stats: PeerStats::default(),
            sync_states: VecDeque::new(),
            stopped: None,
            last_turn: None,
        }
    }

    /// Its participant number, once started.
    pub fn id(&self) -> Option<ParticipantId> {
        self.id
    }

    /// The participants at the start.
    pub fn participants(&self) -> &[ParticipantId] {
        &self.participants
    }

    /// The session settings, once started.
    pub fn settings(&self) -> Option<Settings> {
        self.settings
    }

    /// The seed and setup the host sent.
    pub fn seed_and_setup(&self) -> (u64, &[u8]) {
        (self.seed, &self.setup)
    }

    /// The simulation, once started.
    pub fn sim(&self) -> Option<&S> {
        self.sim.as_ref()
    }

    /// The simulation, taking the participant apart.
    pub fn into_sim(self) -> Option<S> {
        self.sim
    }

    /// The simulation, mutably (to inject a desync in tests).
    pub fn sim_mut(&mut self) -> Option<&mut S> {
        self.sim.as_mut()
    }

    /// The next turn to execute.
    pub fn next_turn(&self) -> u32 {
        self.next_turn
    }

    /// The newest executed turn as the host sent it (to record it).
    pub fn last_turn(&self) -> Option<&Turn> {
        self.last_turn.as_ref()
    }

    /// Counters.
    pub fn stats(&self) -> &PeerStats {
        &self.stats
    }

    /// Why it stopped, if it did.
    pub fn error(&self) -> Option<&LockstepError> {
        self.stopped.as_ref()
    }

    /// Whether it is running turns.
    pub fn is_running(&self) -> bool {
        self.sim.is_some() && self.stopped.is_none()
    }

    /// Saved states of the newest sync turns, oldest first: what to dump
    /// when the host reports the session out of sync.
    pub fn sync_states(&self) -> impl Iterator<Item = &SyncState> {
        self.sync_states.iter()
    }

    /// The saved state of sync turn `turn`, if still kept.
    pub fn sync_state(&self, turn: u32) -> Option<&SyncState> {
        self.sync_states.iter().find(|s| s.turn == turn)
    }

    /// The round-trip time to the host (from netchan), for speed control.
    pub fn set_rtt(&mut self, rtt: Duration) {
        self.rtt_ms = rtt.as_millis().min(u16::MAX as u128) as u16;
    }

    /// How long one simulation step took on this machine (smoothed here),
    /// for speed control.
    pub fn report_frame_time(&mut self, frame: Duration) {
        let ms = frame.as_millis().min(u16::MAX as u128) as u16;
        self.frame_ms = if self.frame_ms == 0 {
            ms
        } else {
            ((self.frame_ms as u32 * 7 + ms as u32).div_ceil(8)) as u16
        };
    }

    /// The turn a command issued now executes at.
    pub fn scheduled_turn(&self) -> u32 {
        let delay = self.settings.map_or(2, |s| s.delay);
        // Commands issued now are sent when the next turn starts, for
        // that turn + delay − 1: "issued during turn T, executed at T + delay".
        self.next_turn + delay - 1
    }

    /// Queues a command for the set sent when the next turn starts; returns
    /// the turn it will execute at.
    pub fn issue(&mut self, now: Instant, command: &[u8]) -> Result<u32, LockstepError> {
        let turn = self.scheduled_turn();
        if self.pending.commands.len() >= MAX_COMMANDS_PER_SET
            || self.pending.bytes() + command.len() > MAX_SET_BYTES
        {
            return Err(LockstepError::SetFull { turn });
        }
        self.pending.commands.push(command.to_vec());
        self.issued.push_back((turn, now));
        Ok(turn)
    }

    /// Commands queued for the next set.
    pub fn pending(&self) -> &CommandSet {
        &self.pending
    }

    /// A message from the host. A malformed one stops the participant.
    pub fn handle_message(&mut self, now: Instant, bytes: &[u8]) -> Result<(), LockstepError> {
        if self.stopped.is_some() {
            return Ok(());
        }
        let message = ToPeer::decode(bytes).map_err(|source| LockstepError::Wire {
            from: "host".into(),
            source,
        });
        let result = match message {
            Ok(ToPeer::Start(start)) => {
                if self.sim.is_some() {
                    Err(self.protocol("a second start"))
                } else {
                    match S::create(start.seed, &start.setup, &start.participants) {
                        Ok(sim) => {
                            self.sim = Some(sim);
                            self.id = Some(start.you);
                            self.participants = start.participants;
                            self.settings = Some(start.settings);
                            self.seed = start.seed;
                            self.setup = start.setup;
                            self.next_turn_at = Some(now);
                            Ok(())
                        }
                        Err(e) => Err(e.into()),
                    }
                }
            }
            Ok(ToPeer::Turn(turn)) => {
                let ahead = turn.turn.checked_sub(self.next_turn);
                if self.sim.is_none() {
                    Err(self.protocol("a turn before the start"))
                } else if ahead.is_none_or(|a| a > 4 * MAX_DELAY)
                    || self.turns.contains_key(&turn.turn)
                {
                    Err(self.protocol(&format!(
                        "turn {} while at turn {}",
                        turn.turn, self.next_turn
                    )))
                } else if self.id.is_some_and(|id| turn.dropped.contains(&id)) {
                    Err(LockstepError::Dropped { turn: turn.turn })
                } else {
                    self.turns.insert(turn.turn, turn);
                    Ok(())
                }
            }
            Ok(ToPeer::OutOfSync { turn, participants }) => {
                let last_agreed = self
                    .settings
                    .and_then(|s| turn.checked_sub(s.sync_interval));
                Err(LockstepError::OutOfSync {
                    turn,
                    participants,
                    last_agreed,
                })
            }
            Err(e) => Err(e),
        };
        if let Err(e) = &result {
            self.stopped = Some(e.clone());
        }
        result
    }

    /// Stops the participant (its connection to the host ended).
    pub fn stop(&mut self, error: LockstepError) {
        if self.stopped.is_none() {
            self.stopped = Some(error);
        }
    }

    /// Tells the host this participant leaves, and stops.
    pub fn leave(&mut self) {
        self.outbox.push_back(ToHost::Leave.to_bytes());
        self.stop(LockstepError::Dropped {
            turn: self.next_turn,
        });
    }

    fn protocol(&self, reason: &str) -> LockstepError {
        LockstepError::Protocol {
            from: "host".into(),
            reason: reason.into(),
        }
    }

    /// When the next turn is due (`None` while waiting for the host).
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.is_running() || !self.turns.contains_key(&self.next_turn) {
            return None;
        }
        self.next_turn_at
    }

    /// Executes the next turn if it is due and its message is in: sends
    /// this participant's command set for `turn + delay − 1`, runs the
    /// simulation, and on a sync turn computes the checksum (sent with the
    /// next set).
    pub fn poll(&mut self, now: Instant) -> Option<Executed> {
        if !self.is_running() {
            return None;
        }
        let settings = self.settings?;
        let due = self.next_turn_at?;
        if now < due {
            return None;
        }
        let Some(turn) = self.turns.remove(&self.next_turn) else {
            if self.waiting_since.is_none() {
                self.waiting_since = Some(due);
                self.stats.stalls += 1;
            }
            return None;
        };
        let stall = self
            .waiting_since
            .take()
            .map_or(Duration::ZERO, |since| now.saturating_duration_since(since));
        self.stats.stall_time += stall;
        // An average over about four turns; one sample counts at most two
        // turns (a hung participant's long wait before its drop says
        // nothing about the links).
        if let Some(last) = self.last_executed_at {
            let sample = now
                .saturating_duration_since(last)
                .min(Duration::from_millis(2 * turn.turn_ms as u64));
            let sample = sample.as_micros() as u64;
            self.period_us = if self.period_us == 0 {
                sample
            } else {
                (self.period_us * 3 + sample) / 4
            };
        }
        self.last_executed_at = Some(now);
        let set = std::mem::take(&mut self.pending);
        let message = ToHost::Commands {
            turn: turn.turn + settings.delay - 1,
            set,
            speed: SpeedReport {
                rtt_ms: self.rtt_ms,
                frame_ms: self.frame_ms,
                period_ms: (self.period_us / 1000).min(u16::MAX as u64) as u16,
            },
            sync: self.pending_check.take(),
        };
        self.outbox.push_back(message.to_bytes());

        let sim = self.sim.as_mut()?;
        sim.execute(&turn, settings.step_ms);
        let mine = self.id.and_then(|id| {
            turn.sets
                .iter()
                .find(|(p, _)| *p == id)
                .map(|(_, s)| s.commands.len())
        });
        for _ in 0..mine.unwrap_or(0) {
            if let Some(&(at, issued)) = self.issued.front() {
                if at == turn.turn {
                    self.issued.pop_front();
                    self.stats.commands_executed += 1;
                    self.stats.input_latency_us_sum +=
                        now.saturating_duration_since(issued).as_micros() as u64;
                }
            }
        }
        let check = ((turn.turn + 1) % settings.sync_interval == 0).then(|| SyncCheck {
            turn: turn.turn,
            checksum: sim.checksum(),
        });
        if let Some(check) = check {
            self.pending_check = Some(check);
            self.stats.checks_sent += 1;
            self.stats.last_check = Some(check);
            if self.config.keep_sync_states > 0 {
                if self.sync_states.len() >= self.config.keep_sync_states {
                    self.sync_states.pop_front();
                }
                self.sync_states.push_back(SyncState {
                    turn: turn.turn,
                    checksum: check.checksum,
                    state: sim.save(),
                });
            }
        }
        self.stats.turns += 1;
        self.stats.steps += turn.steps as u64;
        self.stats.turn_ms = turn.turn_ms;
        self.stats.turn_ms_sum += turn.turn_ms as u64;
        // Keep the schedule when a turn was a little late; after a stall
        // longer than a turn, the schedule starts again from now (no burst
        // of catch-up turns).
        let next = due + Duration::from_millis(turn.turn_ms as u64);
        self.next_turn_at = Some(next.max(now));
        self.next_turn += 1;
        let executed = Executed {
            turn: turn.turn,
            turn_ms: turn.turn_ms,
            steps: turn.steps,
            dropped: turn.dropped.clone(),
            check,
        };
        self.last_turn = Some(turn);
        Some(executed)
    }

    /// The next message for the host.
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.outbox.pop_front()
    }
}
