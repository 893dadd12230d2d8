//! Sets and turns repeated until acknowledged, driven by hand (no network):
//! a lost message costs one repeat interval, duplicates change nothing, and
//! acknowledgements stop the repeats.

use std::time::{Duration, Instant};

use netq3_lockstep::wire::{Delivery, Outgoing, ParticipantId, ToHost, ToPeer};
use netq3_lockstep::{Host, HostConfig, Peer, PeerConfig, Units, UnitsSetup};

const REPEAT: Duration = Duration::from_millis(25);

fn host() -> Host {
    Host::new(HostConfig {
        setup: UnitsSetup {
            units: 4,
            ..UnitsSetup::default()
        }
        .to_bytes(),
        repeat_interval: REPEAT,
        ..HostConfig::default()
    })
}

/// Everything the host sends at `now`, by receiver.
fn from_host(host: &mut Host, now: Instant) -> Vec<(ParticipantId, Outgoing)> {
    std::iter::from_fn(|| host.poll_transmit(now)).collect()
}

fn from_peer(peer: &mut Peer<Units>, now: Instant) -> Vec<Outgoing> {
    std::iter::from_fn(|| peer.poll_transmit(now)).collect()
}

/// The turn numbers a repeated host message carries.
fn turns_in(message: &Outgoing) -> Vec<u32> {
    match ToPeer::decode(&message.bytes) {
        Ok(ToPeer::Turns { turns, .. }) => turns.iter().map(|t| t.turn).collect(),
        other => panic!("not turns: {other:?}"),
    }
}

/// The set turns a repeated participant message carries.
fn sets_in(message: &Outgoing) -> Vec<u32> {
    match ToHost::decode(&message.bytes) {
        Ok(ToHost::Sets { sets, .. }) => sets.iter().map(|s| s.turn).collect(),
        other => panic!("not sets: {other:?}"),
    }
}

#[test]
fn a_lost_message_costs_one_repeat_interval_and_acknowledgements_stop_the_repeats() {
    let t0 = Instant::now();
    let mut host = host();
    let a = host.add_participant(t0).unwrap();
    let b = host.add_participant(t0).unwrap();
    host.start(t0);
    let mut peers: Vec<Peer<Units>> = (0..2).map(|_| Peer::new(PeerConfig::default())).collect();

    // The start (ordered) and turn 0 (repeated) for each participant.
    let out = from_host(&mut host, t0);
    assert_eq!(out.len(), 4);
    for (to, message) in &out {
        if message.delivery == Delivery::Repeated {
            assert_eq!(turns_in(message), vec![0]);
        }
        peers[*to as usize]
            .handle_message(t0, &message.bytes)
            .unwrap();
    }
    // Nothing new, nothing due: silence until the repeat interval.
    assert!(from_host(&mut host, t0 + REPEAT / 2).is_empty());

    // Both execute turn 0 and send their sets for turn 1; a's is lost.
    for peer in &mut peers {
        assert_eq!(peer.poll(t0).map(|e| e.turn), Some(0));
    }
    let lost = from_peer(&mut peers[a as usize], t0);
    assert_eq!(lost.len(), 1);
    assert_eq!(sets_in(&lost[0]), vec![1]);
    for message in from_peer(&mut peers[b as usize], t0) {
        host.handle_message(t0, b, &message.bytes).unwrap();
        // A duplicate changes nothing.
        host.handle_message(t0, b, &message.bytes).unwrap();
    }
    assert_eq!(host.next_turn(), 1, "turn 1 waits for a's set");

    // One repeat interval later a sends its set again, and turn 1 goes out.
    let t1 = t0 + REPEAT;
    let again = from_peer(&mut peers[a as usize], t1);
    assert_eq!(again.len(), 1);
    assert_eq!(sets_in(&again[0]), vec![1]);
    host.handle_message(t1, a, &again[0].bytes).unwrap();
    assert_eq!(host.next_turn(), 2);

    // Turn 1 reaches a but is lost on the way to b.
    let out = from_host(&mut host, t1);
    assert_eq!(out.len(), 2);
    for (to, message) in &out {
        // Their sets acknowledged turn 0: only turn 1 goes.
        assert_eq!(turns_in(message), vec![1]);
        if *to == a {
            peers[a as usize]
                .handle_message(t1, &message.bytes)
                .unwrap();
        }
    }
    // a acknowledges at once; the host repeats only to b, a repeat interval later.
    let ack = from_peer(&mut peers[a as usize], t1);
    assert_eq!(ack.len(), 1);
    host.handle_message(t1, a, &ack[0].bytes).unwrap();
    let t2 = t1 + REPEAT;
    let out = from_host(&mut host, t2);
    assert_eq!(out.len(), 1);
    let (to, message) = &out[0];
    assert_eq!(*to, b);
    assert_eq!(turns_in(message), vec![1]);
    peers[b as usize]
        .handle_message(t2, &message.bytes)
        .unwrap();
    assert_eq!(peers[b as usize].turns_below(), 2);
    // Delivered twice (netchan may duplicate): still one turn 1.
    peers[b as usize]
        .handle_message(t2, &message.bytes)
        .unwrap();
    assert_eq!(peers[b as usize].turns_below(), 2);
    for message in from_peer(&mut peers[b as usize], t2) {
        host.handle_message(t2, b, &message.bytes).unwrap();
    }
    // Everything acknowledged both ways: no more repeats, however long we wait.
    let much_later = t2 + REPEAT * 40;
    assert!(from_host(&mut host, much_later).is_empty());
    for peer in &mut peers {
        assert_eq!(peer.unacknowledged(), 0);
        assert!(from_peer(peer, much_later).is_empty());
        assert_eq!(peer.poll_timeout(), Some(t0 + Duration::from_millis(100)));
    }
}

#[test]
fn a_participant_acknowledging_turns_never_sent_is_dropped() {
    let t0 = Instant::now();
    let mut host = host();
    host.add_participant(t0).unwrap();
    host.add_participant(t0).unwrap();
    host.start(t0);
    let lie = ToHost::Sets {
        turns_below: 50,
        sets: Vec::new(),
    };
    assert!(host.handle_message(t0, 1, &lie.to_bytes()).is_err());
    assert_eq!(host.live().collect::<Vec<_>>(), vec![0]);
}

#[test]
fn a_close_after_every_turn_was_acknowledged_ends_a_participant_that_missed_the_last_turns_number()
{
    let t0 = Instant::now();
    let mut host = host();
    let a = host.add_participant(t0).unwrap();
    host.start(t0);
    let mut peer: Peer<Units> = Peer::new(PeerConfig::default());
    for (_, message) in from_host(&mut host, t0) {
        peer.handle_message(t0, &message.bytes).unwrap();
    }
    assert_eq!(peer.poll(t0).map(|e| e.turn), Some(0));
    // Its set for turn 1 acknowledges turn 0; turn 1 goes out and arrives.
    for message in from_peer(&mut peer, t0) {
        host.handle_message(t0, a, &message.bytes).unwrap();
    }
    for (_, message) in from_host(&mut host, t0) {
        peer.handle_message(t0, &message.bytes).unwrap();
    }
    // Holding turn 1, it acknowledges it at once.
    assert_eq!(peer.turns_below(), 2);
    for message in from_peer(&mut peer, t0) {
        host.handle_message(t0, a, &message.bytes).unwrap();
    }
    // The host ends after turn 1, which the participant already acknowledged:
    // everything is delivered, but the message naming the last turn is lost.
    host.end_after(1);
    assert!(host.all_delivered());
    let lost = from_host(&mut host, t0 + REPEAT);
    assert!(!lost.is_empty(), "the end is announced");
    assert_eq!(peer.final_turn(), None);
    assert!(!peer.has_every_turn());
    // The host's close says everything was delivered: the participant holds
    // the whole session, and the last turn is the last it holds.
    assert!(peer.conclude_delivered());
    assert_eq!(peer.final_turn(), Some(1));
    assert!(peer.has_every_turn());
    let later = t0 + Duration::from_secs(1);
    assert_eq!(peer.poll(later).map(|e| e.turn), Some(1));
    assert!(peer.is_finished());
}
