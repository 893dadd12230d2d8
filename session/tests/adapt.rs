//! Sessions whose native models adapt along each client's acknowledged
//! delta chain: over thousands of ticks of loss, duplication and
//! reordering, and a server restart every client reconnects through, the
//! clients decode every snapshot they accept, with the models the server
//! coded it with (no decode error, no divergence, every sync checksum
//! matched), while those models keep changing.

mod support;

use std::collections::HashSet;

use fields::model::AdaptPolicy;
use netq3_session::ClientConfig;
use support::{link, other_habits_models, Sim};

#[test]
fn adapting_models_stay_in_step_through_loss_duplication_reordering_and_a_restart() {
    // Short chains, so a run of a few thousand ticks rebuilds many times:
    // 4, 8, then 16 messages after each full snapshot. The rebuild starts
    // 4 messages early on a background thread (2 in the first chain).
    let policy = AdaptPolicy {
        chain_length: 16,
        first_chain: 4,
        weight: 256,
        lead: 4,
    };
    let models = other_habits_models().with_adaptation(Some(policy));
    let lossy = || link(0.1, 10, 5, 0.05, 0.1);
    let mut sim = Sim::new(23, lossy());
    sim.stop_server(false);
    sim.server_config.models = models.clone();
    sim.start_server();
    for bot in 0..3 {
        let mut config = ClientConfig::named(&format!("adapting{bot}"));
        config.models = models.clone();
        sim.add_bot_with(config, lossy(), bot);
    }
    let mut coded: Vec<HashSet<u64>> = vec![HashSet::new(); 3];
    let mut watch = |sim: &mut Sim, ms: u64| {
        for _ in 0..ms / 250 {
            sim.run_ms(250);
            for (bot, seen) in sim.bots.iter().zip(&mut coded) {
                let snapshots = bot.client.snapshots();
                if let Some(ids) = snapshots.ack().and_then(|s| snapshots.coded_with(s)) {
                    seen.insert(ids[0]);
                }
            }
        }
    };
    watch(&mut sim, 60_000);
    // A restart: every client reconnects, and starts from the trained
    // models with its first (full) snapshot.
    sim.stop_server(true);
    sim.start_server();
    watch(&mut sim, 40_000);

    for (index, bot) in sim.bots.iter().enumerate() {
        let stats = bot.client.stats();
        assert_eq!(sim.reason(index), None, "bot {index}");
        assert_eq!(stats.snapshot_errors, 0, "bot {index}");
        assert_eq!(stats.checksum_mismatches, 0, "bot {index}");
        assert_eq!(bot.divergent, 0, "bot {index}");
        assert!(stats.reconnects >= 1, "bot {index}: {stats:?}");
        assert!(stats.checksums_matched > 50, "bot {index}: {stats:?}");
        assert!(bot.compared > 1_000, "bot {index}: {}", bot.compared);
        // The entity model changed all along (polled four times a second).
        assert!(
            coded[index].len() > 20,
            "bot {index}: {} models",
            coded[index].len()
        );
    }
}
