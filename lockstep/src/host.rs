//! [`Host`]: the relay. It collects every participant's command set for a
//! turn, and once all have arrived (or their senders were dropped) sends
//! the whole turn to everyone; it runs speed control, compares sync
//! checksums and decides at which turn a leaver is dropped.
//!
//! Turns go out redundantly: every message to a participant holds every
//! turn it has not acknowledged, and one goes out whenever there is
//! something new (a turn, an acknowledgement of its sets) and again every
//! [`HostConfig::repeat_interval`] while anything is unacknowledged — so a
//! lost datagram costs a repeat interval, not netchan's round trip to
//! notice the loss and resend.
//!
//! Sans-IO: messages in with [`Host::handle_message`], out with
//! [`Host::poll_transmit`]; time only as the `now` arguments.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use crate::error::LockstepError;
use crate::speed::{Measure, Plan, SpeedControl, SpeedLimits};
use crate::wire::{
    encode_turn, encode_turns_message, CommandSet, Delivery, Outgoing, ParticipantId, Settings,
    SpeedReport, Start, SyncCheck, ToHost, ToPeer, Turn, MAX_DELAY, MAX_PARTICIPANTS, MAX_REPEATED,
    MAX_REPEATED_BYTES, MAX_SETUP_LEN,
};

/// Most turns a participant may leave unacknowledged (far beyond what an
/// honest one can: it cannot send sets for turns it has not reached);
/// beyond it the host drops it rather than keep turns for it.
const MAX_UNACKNOWLEDGED: u32 = 16 * MAX_DELAY;

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
    /// Repeat unacknowledged turns this often (speed control assumes the
    /// participants repeat their sets as often).
    pub repeat_interval: Duration,
    /// Keep a copy of every turn sent for [`Host::poll_sent_turn`]: for a
    /// host that also runs the simulation (a dedicated server's replica,
    /// its recording).
    pub observe: bool,
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
            repeat_interval: Duration::from_millis(25),
            observe: false,
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
    /// The next set expected from it: it holds the acknowledgement of all before.
    next_turn: u32,
    /// It holds every turn below this one.
    turns_below: u32,
    /// Something new to tell it (a turn, an acknowledgement, the end).
    dirty: bool,
    last_sent: Option<Instant>,
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
    /// Turns sent that some live participant has not acknowledged, with
    /// their encoded sizes; the front is the oldest.
    history: VecDeque<(Turn, usize)>,
    /// Turns sent, for an observer ([`HostConfig::observe`]).
    observed: VecDeque<Turn>,
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
        let repeat_ms = config.repeat_interval.as_millis().min(10_000) as u32;
        Host {
            speed: SpeedControl::new(
                config.limits,
                s.delay,
                s.step_ms,
                s.initial_turn_ms,
                repeat_ms,
            ),
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
            history: VecDeque::new(),
            observed: VecDeque::new(),
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
                turns_below: 0,
                dirty: false,
                last_sent: None,
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
        // Everyone is told which turn is the last.
        for member in self.members.values_mut() {
            member.dirty = true;
        }
    }

    /// Whether the session has ended ([`Self::end_after`]) and every
    /// remaining participant acknowledged every turn up to the last (or
    /// nobody remains): nothing is left to deliver.
    pub fn all_delivered(&self) -> bool {
        let Some(end) = self.end else {
            return false;
        };
        self.ended()
            && self
                .members
                .values()
                .filter(|m| m.live)
                .all(|m| m.turns_below > end)
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
            ToHost::Sets { turns_below, sets } => {
                if let Err(reason) = self.take_sets(from, turns_below, sets) {
                    self.drop_participant(now, from, DropReason::Misbehaved);
                    return Err(LockstepError::Protocol {
                        from: format!("participant {from}"),
                        reason,
                    });
                }
                self.prune_history();
                self.flush_turns(now);
            }
        }
        Ok(())
    }

    /// Takes a participant's repeated message: its acknowledgement of turns
    /// and the sets the host does not have yet (repeats are skipped).
    fn take_sets(
        &mut self,
        from: ParticipantId,
        turns_below: u32,
        sets: Vec<crate::wire::SetMessage>,
    ) -> Result<(), String> {
        let sent = self.next_turn;
        let Some(member) = self.members.get_mut(&from) else {
            return Ok(());
        };
        if !self.started && !sets.is_empty() {
            return Err("command sets before the start".into());
        }
        if turns_below > sent {
            return Err(format!(
                "acknowledged turns below {turns_below}, only {sent} sent"
            ));
        }
        // Acknowledgements only grow (an older message is a repeat).
        member.turns_below = member.turns_below.max(turns_below);
        if sent - member.turns_below > MAX_UNACKNOWLEDGED {
            return Err(format!(
                "{} turns unacknowledged",
                sent - member.turns_below
            ));
        }
        let mut checks = Vec::new();
        for entry in sets {
            if entry.turn < member.next_turn {
                continue;
            }
            if entry.turn > member.next_turn {
                return Err(format!(
                    "command set for turn {}, expected turn {}",
                    entry.turn, member.next_turn
                ));
            }
            member.next_turn += 1;
            member.dirty = true;
            member.sets.insert(entry.turn, entry.set);
            member.report = entry.speed;
            member.measure = Measure::from_report(entry.speed, member.host_rtt_ms, member.loss);
            checks.extend(entry.sync);
        }
        for check in checks {
            self.record_check(from, check);
        }
        Ok(())
    }

    /// Forgets turns every live participant acknowledged.
    fn prune_history(&mut self) {
        let oldest_needed = self
            .members
            .values()
            .filter(|m| m.live)
            .map(|m| m.turns_below)
            .min()
            .unwrap_or(self.next_turn);
        while self
            .history
            .front()
            .is_some_and(|(t, _)| t.turn < oldest_needed)
        {
            self.history.pop_front();
        }
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
        self.prune_history();
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

    /// When the host next has work without new input: a repeat of
    /// unacknowledged turns ([`Self::poll_transmit`]) or a drop for silence
    /// ([`Self::handle_timeout`]).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let repeat = self.next_repeat();
        if !self.started || self.stopped || self.ended() {
            return repeat;
        }
        let limit = self.drop_limit();
        let drop = self.waiting_since.and_then(|since| {
            self.members
                .values()
                .filter(|m| m.live && !m.sets.contains_key(&self.next_turn))
                .map(|m| (m.last_heard + limit).max(since + limit))
                .min()
        });
        match (repeat, drop) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// When the next repeat to anyone is due.
    fn next_repeat(&self) -> Option<Instant> {
        if !self.started || self.stopped {
            return None;
        }
        self.members
            .values()
            .filter(|m| m.live && m.turns_below < self.next_turn)
            // A participant never sent to has news (it is dirty), which the
            // same pump sends.
            .filter_map(|m| m.last_sent.map(|t| t + self.config.repeat_interval))
            .min()
    }

    fn drop_limit(&self) -> Duration {
        self.config.drop_after + Duration::from_millis(self.speed.current().turn_ms as u64)
    }

    /// The next message to send at `now`, and to whom: control messages
    /// first, then each participant's repeated turns when something is new
    /// for it or its repeat is due.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<(ParticipantId, Outgoing)> {
        if let Some((to, bytes)) = self.outbox.pop_front() {
            return Some((
                to,
                Outgoing {
                    bytes,
                    delivery: Delivery::Ordered,
                },
            ));
        }
        if !self.started || self.stopped {
            return None;
        }
        let next_turn = self.next_turn;
        let repeat = self.config.repeat_interval;
        let (&id, member) = self.members.iter_mut().find(|(_, m)| {
            m.live
                && (m.dirty
                    || (m.turns_below < next_turn && m.last_sent.is_none_or(|t| now >= t + repeat)))
        })?;
        member.dirty = false;
        member.last_sent = Some(now);
        let sets_below = member.next_turn;
        let from = member.turns_below;
        let first = self
            .history
            .iter()
            .position(|(t, _)| t.turn >= from)
            .unwrap_or(self.history.len());
        let mut count = 0;
        let mut bytes = 0;
        for (_, size) in self.history.iter().skip(first).take(MAX_REPEATED) {
            if count > 0 && bytes + size > MAX_REPEATED_BYTES {
                break;
            }
            bytes += size;
            count += 1;
        }
        let turns = &self.history.make_contiguous()[first..first + count];
        let message = encode_turns_message(sets_below, self.end, turns.iter().map(|(t, _)| t));
        Some((
            id,
            Outgoing {
                bytes: message,
                delivery: Delivery::Repeated,
            },
        ))
    }

    /// The next turn sent, in order, when [`HostConfig::observe`] is set:
    /// exactly what every participant executes.
    pub fn poll_sent_turn(&mut self) -> Option<Turn> {
        self.observed.pop_front()
    }

    /// The participants at the start, in order (the simulation's setup).
    pub fn participants(&self) -> impl Iterator<Item = ParticipantId> + '_ {
        self.members.keys().copied()
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
            let turn_message = Turn {
                turn,
                turn_ms: plan.turn_ms,
                steps: plan.steps,
                dropped: std::mem::take(&mut self.pending_drops),
                sets,
            };
            let size = encode_turn(&turn_message).len();
            if self.config.observe {
                self.observed.push_back(turn_message.clone());
            }
            self.history.push_back((turn_message, size));
            for id in &live {
                if let Some(member) = self.members.get_mut(id) {
                    member.dirty = true;
                }
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
