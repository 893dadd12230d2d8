//! Lag compensation in the arena, deterministic (the in-process link on
//! simulated time): bots fire the rail at the players as they draw them,
//! 75 ± 10 ms away; with the server judging each shot against the rewind of
//! what the shooter drew, far more of them hit than against the present.

use std::time::Duration;

use arena::config::MatchConfig;
use arena::transport::TransportKind;
use arena::Summary;

fn rail_match(lag_comp: bool) -> Summary {
    let mut config = MatchConfig::short(TransportKind::Local, 12.0, 4);
    config.clients = 8;
    config.link.loss = 0.0;
    config.link.latency = Duration::from_millis(75);
    config.link.jitter = Duration::from_millis(10);
    config.lag_comp = lag_comp;
    let summary = arena::play(config).unwrap();
    assert!(summary.ok(), "{}", summary.table());
    summary
}

#[test]
fn rail_shots_judged_by_what_the_shooter_drew_hit_far_more_often() {
    let on = rail_match(true);
    let off = rail_match(false);
    println!("{}\n{}", on.table(), off.table());
    for summary in [&on, &off] {
        assert!(summary.server.rail_shots >= 25, "{}", summary.table());
        let per_client: u64 = summary.per_client.iter().map(|c| c.rail_shots).sum();
        assert_eq!(per_client, summary.server.rail_shots);
        let hits: u64 = summary.per_client.iter().map(|c| c.rail_hits).sum();
        assert_eq!(hits, summary.server.rail_hits);
    }
    assert!(
        on.rail_hit_ratio() >= 1.5 * off.rail_hit_ratio(),
        "on {:.2}, off {:.2}",
        on.rail_hit_ratio(),
        off.rail_hit_ratio()
    );
    // About two 75 ms trips, the 50 ms drawing delay and a packet's wait;
    // never beyond the arena's 300 ms bound.
    assert!(
        (150.0..=300.0).contains(&on.server.rewind_ms_p50),
        "{}",
        on.server.rewind_ms_p50
    );
    assert!(on.server.rewind_ms_max <= 300.0);
    assert_eq!(off.server.rewind_ms_max, 0.0);

    let json: serde_json::Value = serde_json::from_str(&on.to_json()).unwrap();
    assert_eq!(json["lag_comp"], true);
    for field in ["rail_shots", "rail_hits", "rewind_ms_p50", "rewind_ms_max"] {
        assert!(json["server"][field].is_number(), "{field}");
    }
    for field in ["rail_shots", "rail_hits"] {
        assert!(json["per_client"][0][field].is_number(), "{field}");
    }
    let json: serde_json::Value = serde_json::from_str(&off.to_json()).unwrap();
    assert_eq!(json["lag_comp"], false);
}
