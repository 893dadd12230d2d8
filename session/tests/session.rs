//! The session end to end, sans-IO: netchan's in-process link with seeded
//! loss, duplication and reordering, on simulated time.

mod support;

use std::time::Duration;

use netq3_session::{ClientConfig, ClientEvent, ClientState, DisconnectReason, ServerEvent};
use proptest::prelude::*;
use support::{link, Sim};

/// Every invariant of a finished run: no divergence, no command lost or
/// duplicated, no checksum mismatch.
fn assert_exact(sim: &Sim) {
    assert_exact_from(sim, 0)
}

/// [`assert_exact`], counting commands from session `first_session` on
/// (commands queued while a crashed server was gone die with the session).
fn assert_exact_from(sim: &Sim, first_session: usize) {
    for (index, bot) in sim.bots.iter().enumerate() {
        let stats = bot.client.stats();
        assert_eq!(bot.divergent, 0, "{}: state diverged", bot.name);
        assert!(bot.compared > 20, "{}: compared {}", bot.name, bot.compared);
        assert_eq!(
            bot.wrong_map, 0,
            "{}: a snapshot of another map applied",
            bot.name
        );
        assert_eq!(stats.checksum_mismatches, 0, "{}", bot.name);
        assert!(stats.checksums_matched > 0, "{}", bot.name);
        let (lost, wrong) = sim.command_report(index, first_session);
        assert_eq!((lost, wrong), (0, 0), "{}: commands lost / wrong", bot.name);
        assert!(
            bot.sent.len() + bot.sessions.iter().map(Vec::len).sum::<usize>() > 100,
            "{} sent commands",
            bot.name
        );
    }
}

/// Stop commands, let everything in flight land.
fn drain(sim: &mut Sim) {
    for bot in &mut sim.bots {
        bot.idle = true;
    }
    sim.run_ms(3000);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn random_loss_dup_and_reorder_keep_state_and_commands_exact(
        seed in 1u64..1_000_000,
        loss in 0.0f64..0.3,
        dup in 0.0f64..0.2,
        reorder in 0.0f64..0.2,
        latency in 0u64..120,
        jitter in 0u64..40,
    ) {
        let down = link(loss, latency, jitter, dup, reorder);
        let mut sim = Sim::new(seed, down.clone());
        sim.add_bot("a", down.clone());
        sim.add_bot("b", link(loss * 0.5, latency, jitter, dup, reorder));
        // 2,000 ticks: 100 s of play at 20 Hz.
        sim.run_ms(100_000);
        drain(&mut sim);
        assert_exact(&sim);
        for bot in &sim.bots {
            prop_assert_eq!(bot.client.state(), ClientState::Active);
            prop_assert_eq!(bot.client.pending_commands(), 0);
        }
    }
}

#[test]
fn commands_are_exact_at_20_percent_loss_and_upstream_stays_small() {
    let bad = link(0.2, 60, 10, 0.0, 0.0);
    let mut sim = Sim::new(7, bad.clone());
    for name in ["a", "b", "c"] {
        sim.add_bot(name, bad.clone());
    }
    sim.run_ms(20_000);
    drain(&mut sim);
    assert_exact(&sim);
    for (index, bot) in sim.bots.iter().enumerate() {
        let stats = bot.client.stats();
        // Commands lost at 20% loss each way: exactly none.
        assert_eq!(sim.command_report(index, 0), (0, 0));
        assert_eq!(stats.commands, stats.commands_acked, "{}", bot.name);
        // Quake 3's cl_maxpackets: 60 commands a second travel in at most
        // 30 packets a second (about 21 s of play plus the drain).
        assert!(stats.command_packets <= 30 * 24, "{stats:?}");
        // 60 a second once connected (the handshake itself may take a few
        // seconds at this loss).
        assert!(stats.commands > 800, "{stats:?}");
        // Several commands per packet, delta-coded: a few bytes each.
        let per_packet = stats.command_bytes as f64 / stats.command_packets as f64;
        let per_command = stats.command_bytes as f64 / stats.commands as f64;
        println!(
            "{}: {per_packet:.1} B per packet, {per_command:.1} B per command",
            bot.name
        );
        assert!(per_packet < 64.0, "{per_packet} bytes per packet");
    }
}

#[test]
fn a_map_change_at_20_percent_loss_moves_everyone_with_no_old_snapshot_applied() {
    let bad = link(0.2, 60, 15, 0.02, 0.05);
    let mut sim = Sim::new(11, bad.clone());
    for name in ["a", "b", "c", "d"] {
        sim.add_bot(name, bad.clone());
    }
    sim.run_ms(4_000);
    assert!(sim.all_active());
    let old_epoch = sim.server_mut().epoch();
    sim.change_map(2);
    let took = sim.run_until(10_000, Sim::all_active);
    assert!(took.is_some(), "every client reached the new map");
    sim.run_ms(4_000);
    drain(&mut sim);
    assert_exact(&sim);
    let epoch = sim.server_mut().epoch();
    assert_ne!(epoch, old_epoch);
    for bot in &sim.bots {
        assert_eq!(bot.client.epoch(), Some(epoch), "{}", bot.name);
        let map = bot
            .client
            .snapshots()
            .gamestate()
            .and_then(|g| g.configstring(0));
        assert_eq!(map, Some("map\\m2"), "{}", bot.name);
        assert_eq!(bot.client.stats().gamestates, 2, "{}", bot.name);
        assert!(bot.client.stats().full_snapshots >= 2, "{}", bot.name);
    }
    // Old-map snapshots did arrive after the new gamestate, and were dropped.
    let dropped: u64 = sim
        .bots
        .iter()
        .map(|b| b.client.stats().old_epoch_snapshots)
        .sum();
    assert!(dropped > 0, "the test exercised the epoch check");
    let entered = sim
        .server_events
        .iter()
        .filter(|e| matches!(e, ServerEvent::Entered { epoch: e, .. } if *e == epoch))
        .count();
    assert_eq!(entered, 4);
}

#[test]
fn clients_reconnect_and_resync_after_a_server_restart() {
    let lossy = link(0.1, 40, 10, 0.0, 0.0);
    let mut sim = Sim::new(3, lossy.clone());
    for name in ["a", "b", "c"] {
        sim.add_bot(name, lossy.clone());
    }
    sim.run_ms(3_000);
    assert!(sim.all_active());

    // A graceful restart: clients are told, the server is back 500 ms later.
    sim.stop_server(true);
    sim.run_ms(500);
    sim.start_server();
    let took = sim.run_until(15_000, Sim::all_active).expect("resynced");
    println!("reconnect after a graceful restart: {took} ms (simulated)");
    assert!(took < 5_000, "{took} ms");
    for bot in &sim.bots {
        assert_eq!(bot.client.stats().reconnects, 1, "{}", bot.name);
        assert!(bot.events.iter().any(|e| matches!(
            e,
            ClientEvent::Reconnecting {
                reason: DisconnectReason::ServerRestarting
            }
        )));
    }

    // A crash: the server vanishes for longer than the idle timeout (3 s);
    // clients time out and come back. (A server back sooner tells them their
    // session is gone: tests/restart.rs.)
    sim.stop_server(false);
    sim.run_ms(3_500);
    sim.start_server();
    let took = sim
        .run_until(20_000, |s| {
            s.all_active() && s.bots.iter().all(|b| b.client.stats().reconnects == 2)
        })
        .expect("resynced");
    println!("reconnect after a crash (3 s idle timeout): {took} ms (simulated)");
    for bot in &sim.bots {
        assert_eq!(bot.client.stats().reconnects, 2, "{}", bot.name);
        assert_eq!(
            bot.client.disconnect_reason(),
            Some(DisconnectReason::TimedOut)
        );
    }
    sim.run_ms(3_000);
    drain(&mut sim);
    // Sessions: the first, after the restart, after the crash.
    assert_exact_from(&sim, 2);

    // A final shutdown: everyone is told why and stays disconnected.
    let (server, sv) = (sim.server.as_mut().unwrap(), sim.sv.as_mut().unwrap());
    server.shutdown(sv.endpoint_mut(), false);
    sim.run_ms(2_000);
    for index in 0..sim.bots.len() {
        assert_eq!(sim.reason(index), Some(DisconnectReason::ServerShutdown));
        assert_eq!(sim.bots[index].client.state(), ClientState::Disconnected);
    }
}

#[test]
fn a_client_with_another_schema_is_told_why() {
    let mut sim = Sim::new(5, link(0.0, 10, 0, 0.0, 0.0));
    let mut config = ClientConfig::named("other");
    config.codec = fields::Codec::Q3;
    sim.add_bot_with(config, link(0.0, 10, 0, 0.0, 0.0), 0);
    sim.run_ms(2_000);
    let reason = sim.reason(0).expect("disconnected");
    assert_eq!(reason, DisconnectReason::SchemaMismatch);
    assert!(reason.to_string().contains("schema mismatch"), "{reason}");
    assert_eq!(sim.bots[0].client.state(), ClientState::Disconnected);
    assert_eq!(sim.bots[0].client.stats().reconnects, 0);
    assert!(sim.server_events.is_empty());
}

#[test]
fn a_full_server_says_so() {
    let mut sim = Sim::new(6, link(0.0, 10, 0, 0.0, 0.0));
    sim.server_config.max_clients = 2;
    sim.stop_server(false);
    sim.start_server();
    for name in ["a", "b", "c"] {
        sim.add_bot(name, link(0.0, 10, 0, 0.0, 0.0));
        sim.run_ms(500);
    }
    sim.run_ms(2_000);
    assert_eq!(sim.reason(2), Some(DisconnectReason::ServerFull));
    assert_eq!(sim.bots[0].client.state(), ClientState::Active);
    assert_eq!(sim.bots[1].client.state(), ClientState::Active);
}

#[test]
fn reliable_overflow_disconnects_only_the_slow_client() {
    let mut sim = Sim::new(8, link(0.0, 20, 0, 0.0, 0.0));
    sim.server_config.max_reliable = 32;
    sim.stop_server(false);
    sim.start_server();
    sim.add_bot("fast1", link(0.0, 20, 0, 0.0, 0.0));
    sim.add_bot("fast2", link(0.05, 20, 0, 0.0, 0.0));
    // The slow client's acknowledgements never arrive: nothing sent to it
    // is ever acknowledged, so its reliable queue only grows.
    sim.add_bot("slow", link(0.0, 20, 0, 0.0, 0.0));
    sim.run_ms(1_000);
    assert!(sim.all_active());
    let mut cut = link(1.0, 20, 0, 0.0, 0.0);
    cut.loss = 0.999_999;
    sim.bots[2].net.as_mut().unwrap().set_conditioner(cut, 1);
    for line in 0..100u32 {
        let (server, sv) = (sim.server.as_mut().unwrap(), sim.sv.as_mut().unwrap());
        server
            .broadcast(sv.endpoint_mut(), &line.to_le_bytes())
            .unwrap();
        sim.run_ms(20);
    }
    sim.run_ms(1_000);
    assert_eq!(sim.reason(2), Some(DisconnectReason::ReliableOverflow));
    assert_eq!(sim.server.as_ref().unwrap().stats().overflows, 1);
    assert!(sim.server_events.iter().any(|e| matches!(
        e,
        ServerEvent::Disconnected {
            reason: DisconnectReason::ReliableOverflow,
            ..
        }
    )));
    for index in [0, 1] {
        let got: Vec<u32> = sim.bots[index]
            .events
            .iter()
            .filter_map(|e| match e {
                ClientEvent::Message(data) => {
                    Some(u32::from_le_bytes(data[..4].try_into().unwrap()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            got,
            (0..100).collect::<Vec<_>>(),
            "{}",
            sim.bots[index].name
        );
        assert_eq!(sim.bots[index].client.state(), ClientState::Active);
    }
}

#[test]
fn sixty_four_clients_connect_through_30_percent_loss() {
    let harsh = link(0.3, 100, 30, 0.05, 0.05);
    let mut sim = Sim::new(64, harsh.clone());
    sim.server_config.connection.idle_timeout = Duration::from_secs(10);
    sim.stop_server(false);
    sim.start_server();
    for index in 0..64 {
        let mut config = ClientConfig::named(&format!("bot{index}"));
        config.connection.idle_timeout = Duration::from_secs(10);
        config.connect_deadline = Some(Duration::from_secs(60));
        sim.add_bot_with(config, harsh.clone(), index);
    }
    let took = sim.run_until(60_000, Sim::all_active);
    let attempts: u64 = sim
        .bots
        .iter()
        .map(|b| b.client.stats().connect_attempts)
        .sum();
    println!("64 clients at 30% loss: all active after {took:?} ms, {attempts} handshakes");
    assert!(took.is_some(), "every client connected and got a snapshot");
    for index in 0..64 {
        assert_eq!(sim.reason(index), None);
    }
}

#[test]
fn a_kicked_client_is_told() {
    let mut sim = Sim::new(9, link(0.0, 10, 0, 0.0, 0.0));
    sim.add_bot("a", link(0.0, 10, 0, 0.0, 0.0));
    sim.add_bot("b", link(0.0, 10, 0, 0.0, 0.0));
    sim.run_ms(1_000);
    let key = *sim
        .names
        .iter()
        .find(|(_, n)| n.as_str() == "a")
        .map(|(k, _)| k)
        .unwrap();
    let (server, sv) = (sim.server.as_mut().unwrap(), sim.sv.as_mut().unwrap());
    server.kick(sv.endpoint_mut(), key).unwrap();
    sim.run_ms(1_000);
    assert_eq!(sim.reason(0), Some(DisconnectReason::Kicked));
    assert_eq!(sim.bots[1].client.state(), ClientState::Active);
    assert!(sim.server_events.iter().any(|e| matches!(
        e,
        ServerEvent::Disconnected { client, reason: DisconnectReason::Kicked, .. } if *client == key
    )));
}
