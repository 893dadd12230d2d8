//! A session's beginning and end as a game meets them: a server restarted
//! on the same port (gracefully, or after a crash) has every client playing
//! again within 2 s of its start; a client learns its slot from the
//! gamestate; a clean disconnect ends the session the way a kick does; and
//! every reliable send has one shape. Simulated time, seeded loss, no sleeps.

mod support;

use netq3_session::{
    ClientEvent, ClientKey, ClientState, DisconnectReason, ServerEvent, SessionError,
};
use support::{link, Sim};

/// Whether every bot has a session newer than `sessions_before[i]`, holds
/// its gamestate and a snapshot of that session, and the server saw it
/// enter: it is playing on the new server.
fn all_playing_again(sim: &Sim, sessions_before: &[u64]) -> bool {
    let entered = sim
        .server_events
        .iter()
        .filter(|e| matches!(e, ServerEvent::Entered { .. }))
        .count();
    entered >= sim.bots.len()
        && sim.bots.iter().zip(sessions_before).all(|(b, &before)| {
            b.client.stats().sessions > before
                && b.client.state() == ClientState::Active
                && b.client.snapshots().newest().is_some()
        })
}

fn sessions(sim: &Sim) -> Vec<u64> {
    sim.bots.iter().map(|b| b.client.stats().sessions).collect()
}

fn lossy_world(seed: u64) -> Sim {
    let lossy = link(0.1, 40, 10, 0.0, 0.0);
    let mut sim = Sim::new(seed, lossy.clone());
    for name in ["a", "b", "c", "d"] {
        sim.add_bot(name, lossy.clone());
    }
    sim.run_ms(3_000);
    assert!(sim.all_active());
    sim
}

#[test]
fn a_graceful_restart_on_the_same_port_has_every_client_playing_within_2_s() {
    let mut sim = lossy_world(41);
    let before = sessions(&sim);

    // The old server says it restarts and keeps being pumped for a whole
    // second, so its notices go out: every client tries to reconnect at
    // once, to an endpoint about to stop.
    let (server, sv) = (sim.server.as_mut().unwrap(), sim.sv.as_mut().unwrap());
    server.shutdown(sv.endpoint_mut(), true);
    sim.server_events.clear();
    sim.run_ms(1_000);
    assert!(
        !sim.server_events
            .iter()
            .any(|e| matches!(e, ServerEvent::Connected { .. })),
        "the old server accepted nobody new"
    );
    let refused = sim.sv.as_ref().unwrap().endpoint().metrics().refused;
    assert!(refused >= 4, "every client was turned away: {refused}");
    for bot in &sim.bots {
        assert_eq!(bot.client.state(), ClientState::Connecting, "{}", bot.name);
        let refusals = bot.client.stats().connect_refusals;
        // Waits of 0.1, 0.2, 0.4, 0.5 s: a handful of tries in a second.
        assert!((1..=6).contains(&refusals), "{}: {refusals}", bot.name);
        assert!(bot.events.iter().any(|e| matches!(
            e,
            ClientEvent::Reconnecting {
                reason: DisconnectReason::ServerRestarting
            }
        )));
    }

    // The new server binds the same address.
    sim.server = None;
    sim.sv = None;
    sim.server_events.clear();
    sim.start_server();
    let took = sim
        .run_until(5_000, |s| all_playing_again(s, &before))
        .expect("every client plays again");
    println!("graceful restart: every client playing {took} ms after the new server started");
    assert!(took <= 2_000, "{took} ms");
    for bot in &sim.bots {
        assert_eq!(bot.client.stats().reconnects, 1, "{}", bot.name);
        assert_eq!(
            sim.reason(sim.bots.iter().position(|b| b.name == bot.name).unwrap()),
            None
        );
    }
}

#[test]
fn a_crashed_server_restarted_at_once_has_every_client_playing_within_2_s() {
    let mut sim = lossy_world(43);
    let before = sessions(&sim);

    // No notice at all: the process dies and a new one binds the same port.
    // Clients would wait for their 3 s idle timeout; the new server tells
    // them at once that it holds no session of theirs.
    sim.stop_server(false);
    sim.server_events.clear();
    sim.start_server();
    let took = sim
        .run_until(5_000, |s| all_playing_again(s, &before))
        .expect("every client plays again");
    println!("crash and restart: every client playing {took} ms after the new server started");
    assert!(took <= 2_000, "{took} ms");
    for bot in &sim.bots {
        assert_eq!(
            bot.client.disconnect_reason(),
            Some(DisconnectReason::SessionLost),
            "{}",
            bot.name
        );
        assert!(bot.events.iter().any(|e| matches!(
            e,
            ClientEvent::Reconnecting {
                reason: DisconnectReason::SessionLost
            }
        )));
    }
    let answered = sim
        .sv
        .as_ref()
        .unwrap()
        .endpoint()
        .metrics()
        .unknown_connection_replies;
    assert!(answered >= 4, "{answered}");
}

#[test]
fn a_final_shutdown_turns_reconnects_away_for_good() {
    let mut sim = lossy_world(45);
    let (server, sv) = (sim.server.as_mut().unwrap(), sim.sv.as_mut().unwrap());
    server.shutdown(sv.endpoint_mut(), false);
    sim.run_ms(2_000);
    for index in 0..sim.bots.len() {
        assert_eq!(sim.reason(index), Some(DisconnectReason::ServerShutdown));
        assert_eq!(sim.bots[index].client.state(), ClientState::Disconnected);
        assert!(sim.bots[index].client.snapshots().newest().is_none());
    }
    // A client that tries anyway is refused with the reason.
    let late = sim.add_bot("late", link(0.0, 10, 0, 0.0, 0.0));
    sim.run_ms(500);
    assert_eq!(sim.reason(late), Some(DisconnectReason::ServerShutdown));
    assert_eq!(sim.bots[late].client.stats().sessions, 0);
}

#[test]
fn each_client_learns_its_slot_from_the_gamestate() {
    let mut sim = Sim::new(47, link(0.05, 20, 5, 0.0, 0.0));
    for name in ["a", "b", "c"] {
        sim.add_bot(name, link(0.05, 20, 5, 0.0, 0.0));
    }
    assert!(sim.bots.iter().all(|b| b.client.slot().is_none()));
    sim.run_ms(2_000);
    assert!(sim.all_active());
    for bot in &sim.bots {
        let key: ClientKey = *sim
            .names
            .iter()
            .find(|(_, name)| **name == bot.name)
            .map(|(key, _)| key)
            .unwrap();
        assert_eq!(bot.client.slot(), Some(key.slot()), "{}", bot.name);
        assert!(bot
            .events
            .iter()
            .any(|e| matches!(e, ClientEvent::Gamestate { slot, .. } if *slot == key.slot())));
        // The test game numbers each player's entity slot + 1: the client
        // finds its own among the snapshot's entities.
        let newest = bot.client.snapshots().newest().unwrap();
        let own = newest
            .entity(key.slot() as u32 + 1)
            .expect("its own entity");
        assert_eq!(own.owner as usize, key.slot());
    }
    let mut slots: Vec<usize> = sim.bots.iter().filter_map(|b| b.client.slot()).collect();
    slots.sort_unstable();
    slots.dedup();
    assert_eq!(slots.len(), 3);
}

#[test]
fn a_clean_disconnect_ends_the_session_as_a_kick_does_and_rejoining_works() {
    let mut sim = Sim::new(49, link(0.0, 10, 0, 0.0, 0.0));
    sim.add_bot("leaver", link(0.0, 10, 0, 0.0, 0.0));
    sim.add_bot("kicked", link(0.0, 10, 0, 0.0, 0.0));
    sim.run_ms(1_000);
    assert!(sim.all_active());

    let leaver = &mut sim.bots[0];
    let net = leaver.net.as_mut().unwrap();
    leaver.client.disconnect(net.endpoint_mut());
    // At once, before any pump: the event is queued and nothing of the
    // session is held.
    assert_eq!(
        leaver.client.poll_event(),
        Some(ClientEvent::Disconnected {
            reason: DisconnectReason::Left
        })
    );
    assert!(leaver.client.snapshots().newest().is_none());
    assert!(leaver.client.snapshots().gamestate().is_none());
    assert_eq!(leaver.client.state(), ClientState::Leaving);
    assert_eq!(leaver.client.slot(), None);

    let kicked_key = *sim
        .names
        .iter()
        .find(|(_, n)| n.as_str() == "kicked")
        .map(|(k, _)| k)
        .unwrap();
    let (server, sv) = (sim.server.as_mut().unwrap(), sim.sv.as_mut().unwrap());
    server.kick(sv.endpoint_mut(), kicked_key).unwrap();
    sim.run_ms(500);
    assert_eq!(sim.bots[0].client.state(), ClientState::Disconnected);
    assert_eq!(sim.bots[1].client.state(), ClientState::Disconnected);
    // Both ended the same way: one Disconnected event, nothing held.
    let kicked_ends: Vec<&ClientEvent> = sim.bots[1]
        .events
        .iter()
        .filter(|e| matches!(e, ClientEvent::Disconnected { .. }))
        .collect();
    assert_eq!(
        kicked_ends,
        [&ClientEvent::Disconnected {
            reason: DisconnectReason::Kicked
        }]
    );
    assert!(sim.bots[1].client.snapshots().newest().is_none());
    // The leaver's event was taken above; no second one came.
    assert!(!sim.bots[0]
        .events
        .iter()
        .any(|e| matches!(e, ClientEvent::Disconnected { .. })));
    assert!(sim.server_events.iter().any(|e| matches!(
        e,
        ServerEvent::Disconnected {
            reason: DisconnectReason::PeerLeft,
            ..
        }
    )));

    // Leaving and rejoining: a new session, a new gamestate, snapshots again.
    let (now, addr) = (sim.now, sim.addr);
    let leaver = &mut sim.bots[0];
    let net = leaver.net.as_mut().unwrap();
    leaver
        .client
        .connect(net.endpoint_mut(), now, addr)
        .unwrap();
    sim.run_ms(1_000);
    let leaver = &sim.bots[0].client;
    assert_eq!(leaver.state(), ClientState::Active);
    assert_eq!(leaver.stats().sessions, 2);
    assert!(leaver.snapshots().newest().is_some());
}

#[test]
fn reliable_sends_share_one_shape() {
    let mut sim = Sim::new(51, link(0.0, 10, 0, 0.0, 0.0));
    sim.add_bot("a", link(0.0, 10, 0, 0.0, 0.0));
    sim.add_bot("b", link(0.0, 10, 0, 0.0, 0.0));
    sim.run_ms(1_000);
    let key_a = *sim
        .names
        .iter()
        .find(|(_, n)| n.as_str() == "a")
        .map(|(k, _)| k)
        .unwrap();

    let (server, sv) = (sim.server.as_mut().unwrap(), sim.sv.as_mut().unwrap());
    let endpoint = sv.endpoint_mut();
    server.send_reliable(endpoint, key_a, b"to a").unwrap();
    server.broadcast(endpoint, b"to all").unwrap();
    // Too large for netchan: an error of the message, for one or for all.
    let huge = vec![0u8; 1 << 20];
    assert!(matches!(
        server.send_reliable(endpoint, key_a, &huge),
        Err(SessionError::Send(_))
    ));
    assert!(matches!(
        server.broadcast(endpoint, &huge),
        Err(SessionError::Send(_))
    ));
    // A client being kicked: sending to it says so; a broadcast skips it.
    server.kick(endpoint, key_a).unwrap();
    assert!(matches!(
        server.send_reliable(endpoint, key_a, b"late"),
        Err(SessionError::ClientClosing(k)) if k == key_a
    ));
    server.broadcast(endpoint, b"still to b").unwrap();
    sim.run_ms(1_000);
    // Gone: unknown.
    let (server, sv) = (sim.server.as_mut().unwrap(), sim.sv.as_mut().unwrap());
    assert!(matches!(
        server.send_reliable(sv.endpoint_mut(), key_a, b"gone"),
        Err(SessionError::UnknownClient(k)) if k == key_a
    ));

    // The client side: the same Result<(), SessionError>.
    let bot = &mut sim.bots[0];
    let net = bot.net.as_mut().unwrap();
    assert!(matches!(
        bot.client
            .send_reliable(net.endpoint_mut(), b"after the kick"),
        Err(SessionError::NotConnected)
    ));
    let bot = &mut sim.bots[1];
    let net = bot.net.as_mut().unwrap();
    bot.client
        .send_reliable(net.endpoint_mut(), b"from b")
        .unwrap();
    let received: Vec<&Vec<u8>> = sim.bots[1]
        .events
        .iter()
        .filter_map(|e| match e {
            ClientEvent::Message(data) => Some(data),
            _ => None,
        })
        .collect();
    assert_eq!(received, [&b"to all".to_vec(), &b"still to b".to_vec()]);
}
