//! [`Peer`]: one participant. It owns the simulation, executes each turn
//! once the host's turn message (every participant's command set) is in and
//! the turn is due, sends its own command set for `turn + delay − 1` as each
//! turn starts (empty when it has nothing: that is its acknowledgement), and
//! a sync checksum every `sync_interval` turns.
//!
//! Sets go out redundantly: every message to the host holds every set it
//! has not acknowledged, and one goes out whenever there is something new
//! (a set, or turns to acknowledge) and again every
//! [`PeerConfig::repeat_interval`] while a set is unacknowledged.
//!
//! Sans-IO: messages in with [`Peer::handle_message`], out with
//! [`Peer::poll_transmit`], turns executed by [`Peer::poll`]; time only as
//! the `now` arguments.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use crate::error::LockstepError;
use crate::sim::Simulation;
use crate::wire::{
    CommandSet, Delivery, Outgoing, ParticipantId, SetMessage, Settings, SpeedReport, SyncCheck,
    ToHost, ToPeer, Turn, MAX_COMMANDS_PER_SET, MAX_DELAY, MAX_REPEATED, MAX_SET_BYTES,
};

/// How a participant repeats its sets and keeps evidence for out-of-sync
/// reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerConfig {
    /// Saved states of the newest sync turns kept for a dump (0: none,
    /// which saves the cost of [`Simulation::save`] on big simulations).
    pub keep_sync_states: usize,
    /// Repeat unacknowledged sets this often.
    pub repeat_interval: Duration,
}

impl Default for PeerConfig {
    fn default() -> Self {
        PeerConfig {
            keep_sync_states: 4,
            repeat_interval: Duration::from_millis(25),
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
    /// Messages of sets sent again only because their repeat was due
    /// (nothing new in them).
    pub repeats: u64,
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
    /// Sets sent that the host has not acknowledged, oldest first.
    unacked: VecDeque<SetMessage>,
    /// Something new to tell the host (a set, or turns to acknowledge).
    dirty: bool,
    last_sent: Option<Instant>,
    /// The session's last turn, once the host said.
    final_turn: Option<u32>,
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
            unacked: VecDeque::new(),
            dirty: false,
            last_sent: None,
            final_turn: None,
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

    /// Whether it is running turns (started, not stopped, and not past the
    /// session's last turn).
    pub fn is_running(&self) -> bool {
        self.sim.is_some() && self.stopped.is_none() && !self.is_finished()
    }

    /// Whether it executed the session's last turn (the host announced it).
    pub fn is_finished(&self) -> bool {
        self.final_turn.is_some_and(|last| self.next_turn > last)
    }

    /// The session's last turn, once the host announced it.
    pub fn final_turn(&self) -> Option<u32> {
        self.final_turn
    }

    /// Whether every turn up to the session's last is here (executed or
    /// waiting): nothing more is needed from the host.
    pub fn has_every_turn(&self) -> bool {
        self.final_turn
            .is_some_and(|last| self.turns_below() > last)
    }

    /// Every turn below this one is here (executed or waiting).
    pub fn turns_below(&self) -> u32 {
        let mut below = self.next_turn;
        while self.turns.contains_key(&below) {
            below += 1;
        }
        below
    }

    /// Sets sent and not yet acknowledged by the host.
    pub fn unacknowledged(&self) -> usize {
        self.unacked.len()
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
            Ok(ToPeer::Turns {
                sets_below,
                last_turn,
                turns,
            }) => {
                if self.sim.is_none() {
                    // Turns can overtake the start (another delivery class):
                    // nothing is acknowledged, so the host repeats them.
                    Ok(())
                } else {
                    self.take_turns(sets_below, last_turn, turns)
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

    /// Takes the host's repeated message: the acknowledgement of sets, the
    /// last turn if decided, and the turns not yet here (repeats skipped).
    fn take_turns(
        &mut self,
        sets_below: u32,
        last_turn: Option<u32>,
        turns: Vec<Turn>,
    ) -> Result<(), LockstepError> {
        while self.unacked.front().is_some_and(|s| s.turn < sets_below) {
            self.unacked.pop_front();
        }
        if last_turn.is_some() && self.final_turn != last_turn {
            if self.final_turn.is_some() {
                return Err(self.protocol("a second last turn"));
            }
            self.final_turn = last_turn;
        }
        let before = self.turns_below();
        for turn in turns {
            if turn.turn < self.next_turn || self.turns.contains_key(&turn.turn) {
                continue;
            }
            if turn.turn - self.next_turn > 4 * MAX_DELAY {
                return Err(self.protocol(&format!(
                    "turn {} while at turn {}",
                    turn.turn, self.next_turn
                )));
            }
            if self.final_turn.is_some_and(|last| turn.turn > last) {
                return Err(self.protocol(&format!("turn {} after the last", turn.turn)));
            }
            if self.id.is_some_and(|id| turn.dropped.contains(&id)) {
                return Err(LockstepError::Dropped { turn: turn.turn });
            }
            self.turns.insert(turn.turn, turn);
        }
        if self.turns_below() != before {
            // Acknowledge at once: the host stops repeating them sooner.
            self.dirty = true;
        }
        Ok(())
    }

    /// The host closed the session saying every participant acknowledged
    /// every turn up to the last: the turns held are the whole session, so
    /// the last of them is the last turn (if the host's announcement of it
    /// was lost). A participant that already knows the last turn keeps it.
    /// Returns whether the last turn is now known (false only if no turn
    /// is held, which such a close cannot follow).
    pub fn conclude_delivered(&mut self) -> bool {
        if self.final_turn.is_none() {
            self.final_turn = self.turns_below().checked_sub(1);
        }
        self.final_turn.is_some()
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

    /// When the participant next has work without new input: the next
    /// turn, once its message is here and it is due, or the repeat of
    /// unacknowledged sets.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let turn = (self.is_running() && self.turns.contains_key(&self.next_turn))
            .then_some(self.next_turn_at)
            .flatten();
        let repeat = (self.sending() && !self.unacked.is_empty())
            .then(|| self.last_sent.map(|t| t + self.config.repeat_interval))
            .flatten();
        match (turn, repeat) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether it still talks to the host (started and not stopped; a
    /// finished participant still acknowledges).
    fn sending(&self) -> bool {
        self.sim.is_some() && self.stopped.is_none()
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
        self.unacked.push_back(SetMessage {
            turn: turn.turn + settings.delay - 1,
            set,
            speed: SpeedReport {
                rtt_ms: self.rtt_ms,
                frame_ms: self.frame_ms,
                period_ms: (self.period_us / 1000).min(u16::MAX as u64) as u16,
            },
            sync: self.pending_check.take(),
        });
        self.dirty = true;

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

    /// The next message for the host at `now`: a control message, or the
    /// repeated sets when something is new or their repeat is due.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Outgoing> {
        if let Some(bytes) = self.outbox.pop_front() {
            return Some(Outgoing {
                bytes,
                delivery: Delivery::Ordered,
            });
        }
        if !self.sending() {
            return None;
        }
        let due = !self.unacked.is_empty()
            && self
                .last_sent
                .is_none_or(|t| now >= t + self.config.repeat_interval);
        if !(self.dirty || due) {
            return None;
        }
        self.stats.repeats += !self.dirty as u64;
        self.dirty = false;
        self.last_sent = Some(now);
        let message = ToHost::Sets {
            turns_below: self.turns_below(),
            sets: self.unacked.iter().take(MAX_REPEATED).cloned().collect(),
        };
        Some(Outgoing {
            bytes: message.to_bytes(),
            delivery: Delivery::Repeated,
        })
    }
}
