//! [`Host`]: the relay. It collects every participant's command set for a
//! turn, and once all have arrived (or their senders were dropped) sends
//! the whole turn to everyone; it runs speed control, compares sync
//! checksums and decides at which turn a leaver is dropped.
//!
//! Sans-IO: messages in with [`Host::handle_message`], out with
//! [`Host::poll_transmit`]; time only as the `now` arguments.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use crate::error::LockstepError;
use crate::speed::{Measure, Plan, SpeedControl, SpeedLimits};
use crate::wire::{
    CommandSet, ParticipantId, Settings, SpeedReport, Start, SyncCheck, ToHost, ToPeer, Turn,
    MAX_PARTICIPANTS, MAX_SETUP_LEN,
};

/// How the host runs the session.
#[derive(Debug, Clone, PartialEq)]
pub struct HostConfig {
    /// Settings every participant gets.
    pub settings: Settings,
    /// Seed of the simulation.
    pub seed: u64,
    /// The simulation's setup bytes (at most [`MAX_SETUP_LEN`]).
    pub setup: Vec<u8>,
    /// Bounds of speed control.
    pub limits: SpeedLimits,
    /// Drop a participant the host has not heard from for this long while
    /// a turn waits for it.
    pub drop_after: Duration,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            settings: Settings {
                delay: 2,
                sync_interval: 4,
                step_ms: 50,
                initial_turn_ms: 100,
            },
            seed: 1,
            setup: Vec::new(),
            limits: SpeedLimits::default(),
            drop_after: Duration::from_secs(3),
        }
    }
}

/// Why the host dropped a participant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// It said it leaves.
    Left,
    /// Its connection ended.
    Disconnected,
    /// Nothing arrived from it for [`HostConfig::drop_after`].
    TimedOut,
    /// It broke the protocol.
    Misbehaved,
}

/// What the host tells its application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostEvent {
    /// A turn was complete and sent to everyone.
    TurnSent {
        /// The turn.
        turn: u32,
        /// Its length, ms.
        turn_ms: u32,
        /// Its steps.
        steps: u32,
    },
    /// A participant is dropped from `turn` on.
    Dropped {
        /// Who.
        participant: ParticipantId,
        /// The first turn without it.
        turn: u32,
        /// Why.
        reason: DropReason,
    },
    /// Every checksum of a sync turn agreed.
    InSync {
        /// The turn.
        turn: u32,
        /// The agreed checksum.
        checksum: u64,
    },
    /// Checksums disagreed: the session is stopped.
    OutOfSync(LockstepError),
}

#[derive(Debug)]
struct Member {
    live: bool,
    next_turn: u32,
    sets: BTreeMap<u32, CommandSet>,
    measure: Measure,
    host_rtt_ms: u32,
    loss: f32,
    report: SpeedReport,
    last_heard: Instant,
}

/// The relay host of one session.
#[derive(Debug)]
pub struct Host {
    config: HostConfig,
    members: BTreeMap<ParticipantId, Member>,
    started: bool,
    stopped: bool,
    next_turn: u32,
    pending_drops: Vec<ParticipantId>,
    checks: BTreeMap<u32, BTreeMap<ParticipantId, u64>>,
    last_agreed: Option<u32>,
    speed: SpeedControl,
    outbox: VecDeque<(ParticipantId, Vec<u8>)>,
    events: VecDeque<HostEvent>,
    measures: Vec<Measure>,
    turns_sent: u32,
    /// Since when the next turn could have been complete (the previous one was sent).
    waiting_since: Option<Instant>,
    /// No turn after this one is sent.
    end: Option<u32>,
}

impl Host {
    /// A host that has not started; add participants, then [`Self::start`].
    pub fn new(mut config: HostConfig) -> Host {
        config.setup.truncate(MAX_SETUP_LEN);
        let s = config.settings;
        Host {
            speed: SpeedControl::new(config.limits, s.delay, s.step_ms, s.initial_turn_ms),
            config,
            members: BTreeMap::new(),
            started: false,
            stopped: false,
            next_turn: 0,
            pending_drops: Vec::new(),
            checks: BTreeMap::new(),
            last_agreed: None,
            outbox: VecDeque::new(),
            events: VecDeque::new(),
            measures: Vec::new(),
            turns_sent: 0,
            waiting_since: None,
            end: None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// A new participant (before the start), or `None` when the session
    /// started or is full.
    pub fn add_participant(&mut self, now: Instant) -> Option<ParticipantId> {
        if self.started || self.members.len() >= MAX_PARTICIPANTS {
            return None;
        }
        let id = self.members.len() as ParticipantId;
        self.members.insert(
            id,
            Member {
                live: true,
                next_turn: 0,
                sets: BTreeMap::new(),
                measure: Measure::default(),
                host_rtt_ms: 0,
                loss: 0.0,
                report: SpeedReport::default(),
                last_heard: now,
            },
        );
        Some(id)
    }

    /// Whether the session started.
    pub fn is_started(&self) -> bool {
        self.started
    }

    /// Whether the session stopped (out of sync, or nobody left).
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// The next turn to be sent.
    pub fn next_turn(&self) -> u32 {
        self.next_turn
    }

    /// The speed plan in force.
    pub fn plan(&self) -> Plan {
        self.speed.current()
    }

    /// Participants still in the session.
    pub fn live(&self) -> impl Iterator<Item = ParticipantId> + '_ {
        self.members
            .iter()
            .filter(|(_, m)| m.live)
            .map(|(id, _)| *id)
    }

    /// Ends the session after turn `turn` (at least the turns already
    /// sent): every participant can execute up to it, none beyond, so all
    /// end on the same state. Nobody is dropped for silence after it.
    pub fn end_after(&mut self, turn: u32) {
        self.end = Some(turn.max(self.next_turn.saturating_sub(1)));
    }

    /// The last turn, once [`Self::end_after`] was called.
    pub fn last_turn(&self) -> Option<u32> {
        self.end
    }

    fn ended(&self) -> bool {
        self.end.is_some_and(|end| self.next_turn > end)
    }

    /// Sends the start to everyone, and the first `delay − 1` turns, which
    /// nobody can have commands for.
    pub fn start(&mut self, now: Instant) {
        if self.started {
            return;
        }
        self.started = true;
        let participants: Vec<ParticipantId> = self.members.keys().copied().collect();
        for (&id, member) in &mut self.members {
            member.last_heard = now;
            member.next_turn = self.config.settings.delay - 1;
            let start = ToPeer::Start(Start {
                you: id,
                participants: participants.clone(),
                seed: self.config.seed,
                settings: self.config.settings,
                setup: self.config.setup.clone(),
            });
            self.outbox.push_back((id, start.to_bytes()));
        }
        for turn in 0..self.config.settings.delay - 1 {
            for member in self.members.values_mut() {
                member.sets.insert(turn, CommandSet::default());
            }
        }
        self.flush_turns(now);
    }

    /// The host's own measurement of a participant's link (from netchan).
    pub fn set_link(&mut self, participant: ParticipantId, rtt: Duration, loss: f32) {
        if let Some(m) = self.members.get_mut(&participant) {
            m.host_rtt_ms = rtt.as_millis().min(u32::MAX as u128) as u32;
            m.loss = loss;
            m.measure = Measure::from_report(m.report, m.host_rtt_ms, m.loss);
        }
    }

    /// A message from `from`. A malformed or out-of-order message drops
    /// the sender (and is returned as the error).
    pub fn handle_message(
        &mut self,
        now: Instant,
        from: ParticipantId,
        bytes: &[u8],
    ) -> Result<(), LockstepError> {
        let Some(member) = self.members.get_mut(&from) else {
            return Ok(());
        };
        if !member.live || self.stopped {
            return Ok(());
        }
        member.last_heard = now;
        let message = match ToHost::decode(bytes) {
            Ok(m) => m,
            Err(source) => {
                self.drop_participant(now, from, DropReason::Misbehaved);
                return Err(LockstepError::Wire {
                    from: format!("participant {from}"),
                    source,
                });
            }
        };
        match message {
            ToHost::Leave => self.drop_participant(now, from, DropReason::Left),
            ToHost::Commands {
                turn,
                set,
                speed,
                sync,
            } => {
                if !self.started || turn != member.next_turn {
                    let reason = format!(
                        "command set for turn {turn}, expected turn {}",
                        member.next_turn
                    );
                    self.drop_participant(now, from, DropReason::Misbehaved);
                    return Err(LockstepError::Protocol {
                        from: format!("participant {from}"),
                        reason,
                    });
                }
                member.next_turn += 1;
                member.sets.insert(turn, set);
                member.report = speed;
                member.measure = Measure::from_report(speed, member.host_rtt_ms, member.loss);
                if let Some(check) = sync {
                    self.record_check(from, check);
                }
                self.flush_turns(now);
            }
        }
        Ok(())
    }

    /// Drops `participant` at the next turn boundary not yet sent: every
    /// participant executes its last turn with it, then the same turn
    /// without it.
    pub fn drop_participant(
        &mut self,
        now: Instant,
        participant: ParticipantId,
        reason: DropReason,
    ) {
        let Some(member) = self.members.get_mut(&participant) else {
            return;
        };
        if !member.live {
            return;
        }
        member.live = false;
        member.sets.clear();
        self.pending_drops.push(participant);
        self.events.push_back(HostEvent::Dropped {
            participant,
            turn: self.next_turn,
            reason,
        });
        self.evaluate_checks();
        self.flush_turns(now);
    }

    /// Drops participants whose command set the next turn has waited for
    /// longer than a turn plus [`HostConfig::drop_after`], and that the
    /// host has not heard from for that long.
    pub fn handle_timeout(&mut self, now: Instant) {
        if !self.started || self.stopped || self.ended() {
            return;
        }
        let turn = self.next_turn;
        let Some(since) = self.waiting_since else {
            return;
        };
        let limit = self.drop_limit();
        if now.saturating_duration_since(since) < limit {
            return;
        }
        let silent: Vec<ParticipantId> = self
            .members
            .iter()
            .filter(|(_, m)| {
                m.live
                    && !m.sets.contains_key(&turn)
                    && now.saturating_duration_since(m.last_heard) >= limit
            })
            .map(|(id, _)| *id)
            .collect();
        for id in silent {
            self.drop_participant(now, id, DropReason::TimedOut);
        }
    }

    /// When [`Self::handle_timeout`] may next drop someone.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.started || self.stopped || self.ended() {
            return None;
        }
        let limit = self.drop_limit();
        let since = self.waiting_since?;
        self.members
            .values()
            .filter(|m| m.live && !m.sets.contains_key(&self.next_turn))
            .map(|m| (m.last_heard + limit).max(since + limit))
            .min()
    }

    fn drop_limit(&self) -> Duration {
        self.config.drop_after + Duration::from_millis(self.speed.current().turn_ms as u64)
    }

    /// The next message to send, and to whom.
    pub fn poll_transmit(&mut self) -> Option<(ParticipantId, Vec<u8>)> {
        self.outbox.pop_front()
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<HostEvent> {
        self.events.pop_front()
    }

    fn record_check(&mut self, from: ParticipantId, check: SyncCheck) {
        if self.last_agreed.is_some_and(|t| check.turn <= t) {
            return;
        }
        self.checks
            .entry(check.turn)
            .or_default()
            .insert(from, check.checksum);
        self.evaluate_checks();
    }

    /// Compares every sync turn all live participants have reported.
    fn evaluate_checks(&mut self) {
        while let Some((&turn, sums)) = self.checks.first_key_value() {
            let complete = self
                .members
                .iter()
                .filter(|(_, m)| m.live)
                .all(|(id, _)| sums.contains_key(id));
            if !complete || self.stopped {
                return;
            }
            let sums = self.checks.pop_first().map(|(_, s)| s).unwrap_or_default();
            let mut tally: BTreeMap<u64, Vec<ParticipantId>> = BTreeMap::new();
            // A participant dropped since it reported is not judged.
            let judged = sums.iter().filter(|(id, _)| self.members[*id].live);
            for (&id, &sum) in judged {
                tally.entry(sum).or_default().push(id);
            }
            if tally.len() <= 1 {
                if let Some(&checksum) = tally.keys().next() {
                    self.events.push_back(HostEvent::InSync { turn, checksum });
                }
                self.last_agreed = Some(turn);
                continue;
            }
            let largest = tally.values().map(Vec::len).max().unwrap_or(0);
            let majorities = tally.values().filter(|v| v.len() == largest).count();
            let mut participants: Vec<ParticipantId> = tally
                .values()
                .filter(|v| majorities > 1 || v.len() < largest)
                .flatten()
                .copied()
                .collect();
            participants.sort_unstable();
            let message = ToPeer::OutOfSync {
                turn,
                participants: participants.clone(),
            }
            .to_bytes();
            for id in self.live().collect::<Vec<_>>() {
                self.outbox.push_back((id, message.clone()));
            }
            self.stopped = true;
            self.events
                .push_back(HostEvent::OutOfSync(LockstepError::OutOfSync {
                    turn,
                    participants,
                    last_agreed: self.last_agreed,
                }));
            return;
        }
    }

    /// Sends every turn whose command sets are all in.
    fn flush_turns(&mut self, now: Instant) {
        while self.started && !self.stopped && !self.ended() {
            let turn = self.next_turn;
            let live: Vec<ParticipantId> = self.live().collect();
            if live.is_empty() {
                self.stopped = true;
                return;
            }
            if !live
                .iter()
                .all(|id| self.members[id].sets.contains_key(&turn))
            {
                return;
            }
            self.measures.clear();
            self.measures
                .extend(self.members.values().filter(|m| m.live).map(|m| m.measure));
            let plan = if turn < self.config.settings.delay {
                self.speed.current()
            } else {
                self.speed.update(&self.measures)
            };
            let sets = live
                .iter()
                .map(|id| {
                    let set = self
                        .members
                        .get_mut(id)
                        .and_then(|m| m.sets.remove(&turn))
                        .unwrap_or_default();
                    (*id, set)
                })
                .collect();
            self.pending_drops.sort_unstable();
            let message = ToPeer::Turn(Turn {
                turn,
                turn_ms: plan.turn_ms,
                steps: plan.steps,
                dropped: std::mem::take(&mut self.pending_drops),
                sets,
            })
            .to_bytes();
            for id in &live {
                self.outbox.push_back((*id, message.clone()));
            }
            self.events.push_back(HostEvent::TurnSent {
                turn,
                turn_ms: plan.turn_ms,
                steps: plan.steps,
            });
            self.next_turn += 1;
            self.turns_sent += 1;
            self.waiting_since = Some(now);
        }
    }
}
