//! Eight participants play the built-in unit simulation over netchan's
//! in-process link on simulated time, through the link conditioner, at 0%
//! and 20% loss; prints the turn length speed control chose, the input
//! latency, the traffic per participant and the final checksums.
//!
//! `cargo run --release -p netq3-lockstep --example units_session`

use std::time::Duration;

use netchan::ConditionerConfig;
use netq3_lockstep::session::{run, SessionConfig};
use netq3_lockstep::{HostConfig, UnitOrder, Units, UnitsSetup};

fn main() -> Result<(), std::io::Error> {
    for loss in [0.0, 0.2] {
        let config = SessionConfig {
            participants: 8,
            turns: 200,
            host: HostConfig {
                setup: UnitsSetup {
                    units: 4096,
                    ..UnitsSetup::default()
                }
                .to_bytes(),
                seed: 5,
                ..HostConfig::default()
            },
            link: ConditionerConfig {
                loss,
                latency: Duration::from_millis(40),
                jitter: Duration::from_millis(10),
                ..ConditionerConfig::default()
            },
            ..SessionConfig::default()
        };
        // Every participant orders one of its units somewhere every turn.
        let report = run::<Units>(
            &config,
            |p, peer| {
                let turn = peer.scheduled_turn() as i32;
                let order = UnitOrder {
                    first: p as u32,
                    count: 1,
                    target: [turn * 7 % 2000, -(turn * 13 % 2000)],
                };
                vec![order.encode().to_vec()]
            },
            |_, _, _| {},
        )?;
        let seconds = report.elapsed.as_secs_f64();
        println!(
            "loss {:>3.0}%: {} turns in {:.1} s simulated, {} desyncs",
            loss * 100.0,
            config.turns,
            seconds,
            report.desyncs().len()
        );
        for p in &report.participants {
            println!(
                "  participant {}: turn {} ms (mean {:.0}), input latency {:.0} ms, \
                 {:.2} kbps up, {:.2} kbps down, {} stalls, checksum {:016x}",
                p.id,
                p.stats.turn_ms,
                p.stats.mean_turn_ms(),
                p.stats.mean_input_latency_ms(),
                p.traffic.sent as f64 * 8.0 / 1000.0 / seconds,
                p.traffic.received as f64 * 8.0 / 1000.0 / seconds,
                p.stats.stalls,
                p.final_checksum.unwrap_or(0)
            );
        }
    }
    Ok(())
}
