//! Whole sessions over netchan's in-process link on simulated time, through
//! the seeded link conditioner.

use std::collections::BTreeMap;
use std::time::Duration;

use netchan::ConditionerConfig;
use netq3_lockstep::session::{run, SessionConfig};
use netq3_lockstep::{
    DropReason, HostConfig, HostEvent, LockstepError, ParticipantId, SimError, Simulation, Turn,
    UnitOrder, Units, UnitsSetup,
};

/// [`Units`] that also logs every command it executes, with the turn.
#[derive(Debug, Clone)]
struct Logged {
    units: Units,
    log: Vec<(u32, ParticipantId, Vec<u8>)>,
}

impl Simulation for Logged {
    const NAME: &'static str = "logged-units";

    fn create(seed: u64, setup: &[u8], participants: &[ParticipantId]) -> Result<Self, SimError> {
        Ok(Logged {
            units: Units::create(seed, setup, participants)?,
            log: Vec::new(),
        })
    }

    fn load(state: &[u8]) -> Result<Self, SimError> {
        Ok(Logged {
            units: Units::load(state)?,
            log: Vec::new(),
        })
    }

    fn execute(&mut self, turn: &Turn, step_ms: u32) {
        for (p, set) in &turn.sets {
            for c in &set.commands {
                self.log.push((turn.turn, *p, c.clone()));
            }
        }
        self.units.execute(turn, step_ms);
    }

    fn checksum(&self) -> u64 {
        self.units.checksum()
    }

    fn save(&self) -> Vec<u8> {
        self.units.save()
    }

    fn describe(&self) -> String {
        self.units.describe()
    }

    fn perturb(&mut self) {
        self.units.perturb()
    }
}

fn config(participants: usize, turns: u32) -> SessionConfig {
    SessionConfig {
        participants,
        turns,
        host: HostConfig {
            setup: UnitsSetup {
                units: 64,
                ..UnitsSetup::default()
            }
            .to_bytes(),
            seed: 42,
            ..HostConfig::default()
        },
        link: ConditionerConfig {
            latency: Duration::from_millis(30),
            jitter: Duration::from_millis(5),
            ..ConditionerConfig::default()
        },
        ..SessionConfig::default()
    }
}

/// One order per participant per turn, unique: participant `p` sends its
/// own unit `p` to `(turn, p)`.
fn order(p: ParticipantId, turn: u32) -> Vec<u8> {
    UnitOrder {
        first: p as u32,
        count: 1,
        target: [turn as i32, p as i32],
    }
    .encode()
    .to_vec()
}

#[test]
fn eight_participants_at_20_percent_loss_stay_in_sync_and_execute_every_command_once() {
    let mut config = config(8, 120);
    config.link = ConditionerConfig {
        loss: 0.2,
        latency: Duration::from_millis(30),
        jitter: Duration::from_millis(10),
        duplicate: 0.05,
        reorder: 0.1,
        reorder_delay: Duration::from_millis(40),
        ..ConditionerConfig::default()
    };
    config.link_seed = 2024;
    // (participant, command) → the turn it was scheduled for.
    let mut scheduled: BTreeMap<(ParticipantId, Vec<u8>), u32> = BTreeMap::new();
    let mut report = run::<Logged>(
        &config,
        |p, peer| {
            let turn = peer.scheduled_turn();
            let command = order(p, turn);
            assert!(scheduled.insert((p, command.clone()), turn).is_none());
            vec![command]
        },
        |_, _, _| {},
    )
    .unwrap();
    assert!(!report.timed_out);
    assert_eq!(report.desyncs().len(), 0);
    let checksums: Vec<Option<u64>> = report
        .participants
        .iter()
        .map(|p| p.final_checksum)
        .collect();
    assert!(checksums[0].is_some());
    assert!(
        checksums.iter().all(|c| *c == checksums[0]),
        "{checksums:?}"
    );
    // Everyone stopped at turn 120 exactly, so everyone executed the same turns.
    let last_turn = 119;
    for p in &report.participants {
        assert!(p.error.is_none(), "{:?}", p.error);
        assert_eq!(p.stats.turns, 120);
        // Sync checks every 4 turns: 30 sent, the last carried with turn 120's set (unsent).
        assert_eq!(p.stats.checks_sent, 30);
    }
    let expected: Vec<(u32, ParticipantId, Vec<u8>)> = {
        let mut v: Vec<_> = scheduled
            .iter()
            .filter(|(_, &turn)| turn <= last_turn)
            .map(|((p, c), &turn)| (turn, *p, c.clone()))
            .collect();
        v.sort();
        v
    };
    // Turns 2..=119 carry one command from each of the 8: every one, once, at its turn.
    assert_eq!(expected.len(), 118 * 8);
    for p in report.participants.iter_mut() {
        let mut log = p.sim.take().unwrap().log;
        assert_eq!(log.len(), 118 * 8);
        log.sort();
        assert_eq!(log, expected, "participant {}", p.id);
    }
    // The loss was real, and the sets were repeated until acknowledged.
    let sent: u64 = report.participants.iter().map(|p| p.traffic.sent).sum();
    assert!(sent > 0);
    for p in &report.participants {
        assert!(p.stats.repeats > 100, "{}: {:?}", p.id, p.stats);
    }
    let turns_sent = report
        .host_events
        .iter()
        .filter(|e| matches!(e, HostEvent::TurnSent { .. }))
        .count();
    assert!(turns_sent >= 120);
}

#[test]
fn an_injected_desync_is_detected_within_one_sync_interval_naming_the_turn() {
    let mut config = config(5, 200);
    config.host.settings.sync_interval = 4;
    config.inject_desync = Some((3, 21));
    let report = run::<Units>(&config, |_, _| Vec::new(), |_, _, _| {}).unwrap();
    // Sync turns are 3, 7, …, 19, 23: the first after turn 21 is 23.
    let expected = LockstepError::OutOfSync {
        turn: 23,
        participants: vec![3],
        last_agreed: Some(19),
    };
    assert_eq!(report.desyncs(), vec![&expected]);
    for p in &report.participants {
        assert_eq!(p.error.as_ref(), Some(&expected), "participant {}", p.id);
        assert!(p.stats.turns < 30, "participant {} ran on", p.id);
    }
    let message = expected.to_string();
    assert!(
        message.contains("turn 23") && message.contains("[3]"),
        "{message}"
    );
    // Everyone agreed at turn 19, and the host said so.
    assert!(report
        .host_events
        .iter()
        .any(|e| matches!(e, HostEvent::InSync { turn: 19, .. })));
}

#[test]
fn a_slow_participant_lowers_the_turn_rate_instead_of_stalling() {
    let run_with = |slow: Option<Duration>| {
        let mut config = config(4, 60);
        if let Some(cost) = slow {
            config.frame_cost = vec![Duration::from_millis(1), cost];
        }
        run::<Units>(&config, |_, _| Vec::new(), |_, _, _| {}).unwrap()
    };
    let fast = run_with(None);
    let slow = run_with(Some(Duration::from_millis(150)));
    for report in [&fast, &slow] {
        assert!(!report.timed_out);
        assert_eq!(report.desyncs().len(), 0);
        assert!(report.participants.iter().all(|p| p.stats.turns == 60));
    }
    let last = |r: &netq3_lockstep::session::SessionReport<Units>| {
        r.host_events
            .iter()
            .rev()
            .find_map(|e| match e {
                HostEvent::TurnSent { turn_ms, steps, .. } => Some((*turn_ms, *steps)),
                _ => None,
            })
            .unwrap()
    };
    // 30 ms links: 60 ms round trips + 10 ms margin → 70 → 100 ms turns of two 50 ms steps.
    assert_eq!(last(&fast), (100, 2));
    // 150 ms a step: turns of at least 1.25 × 150 → 200 ms, one step each
    // (the game slows to a quarter speed or less). The busy machine acks
    // late, so its measured round trip, and the turn, come out longer still.
    let (turn_ms, steps) = last(&slow);
    assert_eq!(steps, 1);
    assert!((200..=300).contains(&turn_ms), "{turn_ms}");
    assert!(slow.elapsed > fast.elapsed);
    let fast_p = &fast.participants[0].stats;
    let slow_p = &slow.participants[0].stats;
    assert!(slow_p.mean_turn_ms() > fast_p.mean_turn_ms());
}

#[test]
fn a_leaver_and_a_silent_participant_are_dropped_and_the_rest_go_on() {
    let mut config = config(6, 80);
    config.leave = vec![(5, 20)];
    config.silent = vec![(2, 30)];
    config.host.drop_after = Duration::from_millis(1500);
    let report = run::<Units>(&config, |_, _| Vec::new(), |_, _, _| {}).unwrap();
    assert!(!report.timed_out);
    assert_eq!(report.desyncs().len(), 0);
    let drops: Vec<(ParticipantId, DropReason)> = report
        .host_events
        .iter()
        .filter_map(|e| match e {
            HostEvent::Dropped {
                participant,
                reason,
                ..
            } => Some((*participant, *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(drops.len(), 2, "{drops:?}");
    assert_eq!(drops[0].0, 5);
    assert!(
        matches!(drops[0].1, DropReason::Left | DropReason::Disconnected),
        "{drops:?}"
    );
    assert_eq!(drops[1], (2, DropReason::TimedOut));
    let rest: Vec<_> = report
        .participants
        .iter()
        .filter(|p| p.id != 5 && p.id != 2)
        .collect();
    assert_eq!(rest.len(), 4);
    for p in &rest {
        assert_eq!(p.stats.turns, 80);
        assert!(p.error.is_none());
        assert_eq!(p.final_checksum, rest[0].final_checksum);
        let sim = p.sim.as_ref().unwrap();
        assert_eq!(sim.participants(), &[0, 1, 3, 4]);
        // 64 units round-robin over 6: the leavers' 10 + 11 are gone.
        assert_eq!(sim.units().len(), 64 - 10 - 11);
    }
}
