//! Sessions coding snapshots with given native models: clients given the
//! server's models play exactly, and a client given other models is
//! refused at connect with a reason, never fed snapshots it would decode
//! wrong; the same for the snapshot framing.

mod support;

use std::sync::Arc;

use fields::model::NativeModel;
use fields::NetFields;
use netq3_session::{ClientConfig, CompactRange, DisconnectReason, Models};
use support::{link, Mark, Me, Sim};

/// A model of `T` trained on the deltas `pairs` gives.
fn trained<T: NetFields>(pairs: impl Iterator<Item = (T, T)>) -> Arc<NativeModel> {
    Arc::new(NativeModel::train_on_deltas(pairs).unwrap())
}

fn models() -> Models {
    let mark = |x: i32| Mark {
        map: 1,
        x,
        owner: (x % 7) as u8,
    };
    let me = |c: u32| Me {
        command: c,
        x: c as i32 * 3,
        map: 1,
    };
    Models::new(
        trained((1..200).map(|x| (mark(x - 1), mark(x)))),
        trained((1..200).map(|c| (me(c - 1), me(c)))),
    )
}

#[test]
fn clients_with_the_servers_models_play_and_others_are_told_why() {
    let mut sim = Sim::new(11, link(0.0, 10, 0, 0.0, 0.0));
    sim.stop_server(false);
    sim.server_config.models = models();
    sim.start_server();
    let mut given = ClientConfig::named("given");
    given.models = models();
    sim.add_bot_with(given, link(0.05, 10, 0, 0.0, 0.0), 0);
    sim.add_bot_with(ClientConfig::named("plain"), link(0.0, 10, 0, 0.0, 0.0), 1);
    sim.run_ms(4_000);

    let bot = &sim.bots[0];
    assert_eq!(sim.reason(0), None, "the client with the server's models");
    assert_eq!(bot.divergent, 0);
    assert!(bot.compared > 20, "compared {}", bot.compared);
    assert_eq!(bot.client.stats().checksum_mismatches, 0);
    assert!(bot.client.stats().checksums_matched > 0);

    let reason = sim
        .reason(1)
        .expect("the client with the types' models is refused");
    assert_eq!(reason, DisconnectReason::SchemaMismatch);
}

#[test]
fn clients_framing_snapshots_as_the_server_play_and_others_are_told_why() {
    let mut sim = Sim::new(12, link(0.0, 10, 0, 0.0, 0.0));
    sim.stop_server(false);
    sim.server_config.framing = Arc::new(CompactRange);
    sim.start_server();
    let mut ranged = ClientConfig::named("ranged");
    ranged.framing = Arc::new(CompactRange);
    sim.add_bot_with(ranged, link(0.05, 10, 0, 0.0, 0.0), 0);
    sim.add_bot_with(ClientConfig::named("plain"), link(0.0, 10, 0, 0.0, 0.0), 1);
    sim.run_ms(4_000);

    let bot = &sim.bots[0];
    assert_eq!(sim.reason(0), None, "the client framing as the server does");
    assert_eq!(bot.divergent, 0);
    assert!(bot.compared > 20, "compared {}", bot.compared);
    assert_eq!(bot.client.stats().checksum_mismatches, 0);
    assert!(bot.client.stats().checksums_matched > 0);

    let reason = sim
        .reason(1)
        .expect("the client reading bit streams is refused");
    assert_eq!(reason, DisconnectReason::SchemaMismatch);
}
