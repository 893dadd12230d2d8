//! The model comparison: bytes per second per client and input latency of
//! snapshot deltas vs deterministic lockstep, for worlds of `n` units that
//! all move every tick.
//!
//! * **Snapshot deltas**: the stress workload's entity ([`StressEntity`]:
//!   position, velocity, angles, a few small integers) with *every* entity
//!   changing every 50 ms frame (positions integrate velocities), each
//!   snapshot a delta from the one before (every snapshot acknowledged: the
//!   best case), encoded with the native codec ([`EngineEncoder::native`]: the snapshot engine's own messages).
//!   Bytes per second = (mean message + netchan's 13-byte header per
//!   1400-byte datagram) × 20 snapshots/s, plus upstream the same orders
//!   the lockstep clients send (one 14-byte order per turn) riding in 20
//!   acknowledging datagrams a second.
//!   Input latency (command issued → its effect in the authoritative state
//!   the client sees) = one round trip + half a server tick (commands apply
//!   on arrival, the snapshot goes out at the next tick) — computed from
//!   the link, not measured.
//! * **Lockstep**: a [`lockstep::session`] of [`Units`] with `n` units
//!   (integer positions, every unit moving every step) over netchan's
//!   in-process link with the same one-way latency, every participant
//!   issuing one order per turn. Bytes per second = what netchan counted
//!   on the participant's connection, both directions, headers and
//!   keepalives included; input latency is measured (issue → execution).
//!
//! Lockstep's traffic does not depend on `n` at all — only on players and
//! commands — while snapshot traffic grows with it: the crossover is where
//! the snapshot line climbs over the flat lockstep one.

use std::path::Path;
use std::time::Duration;

use lockstep::session::{run, SessionConfig};
use lockstep::{HostConfig, PeerConfig, UnitOrder, Units, UnitsSetup};
use netchan::ConditionerConfig;
use serde::Serialize;

use crate::encode::Breakdown;
use crate::encode::Encoder;
use crate::engine::EngineEncoder;
use crate::state::{NoBaselines, State, Step, Zeros};
use crate::workload::stress::{StressEntity, StressPlayer};
use crate::world::World;
use crate::Error;

/// Unit counts of the comparison.
pub const UNIT_COUNTS: [u32; 4] = [16, 256, 4096, 65536];
/// Snapshots per second (and server ticks), as in Quake 3 and the arena.
pub const SNAPSHOT_HZ: u32 = 20;
/// One-way latency of the link both models run over, ms.
pub const LATENCY_MS: u32 = 50;
/// Lockstep participants (each its own client).
pub const PARTICIPANTS: usize = 4;
const NETCHAN_HEADER: usize = 13;
const DATAGRAM_PAYLOAD: usize = 1400 - NETCHAN_HEADER;
/// Bytes of one order (a [`UnitOrder`]), the only command either model sends.
const ORDER_BYTES: f64 = UnitOrder::LEN as f64;
/// Extra unit counts measured (snapshots only) to locate the crossover.
pub const CROSSOVER_PROBES: [u32; 4] = [1, 2, 4, 8];

/// How long each measurement runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effort {
    /// Snapshots encoded per unit count (the first, full one, not counted).
    pub frames: usize,
    /// Lockstep turns per unit count.
    pub turns: u32,
}

impl Effort {
    /// The report's runs.
    pub const REPORT: Effort = Effort {
        frames: 40,
        turns: 200,
    };
    /// Quick runs for tests (bounded ticks even at 65,536 units).
    pub const QUICK: Effort = Effort {
        frames: 3,
        turns: 24,
    };
}

/// One unit count, both models.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ModelRow {
    /// Units, all moving every tick.
    pub units: u32,
    /// Mean snapshot delta, bytes.
    pub snapshot_message_bytes: f64,
    /// Snapshot model, bytes per second per client (down + up).
    pub snapshot_bytes_per_s: f64,
    /// Snapshot model, input latency, ms (computed).
    pub snapshot_input_latency_ms: f64,
    /// Lockstep, bytes per second per client (down + up, measured).
    pub lockstep_bytes_per_s: f64,
    /// Lockstep, input latency, ms (measured).
    pub lockstep_input_latency_ms: f64,
    /// Lockstep, the turn length speed control settled on, ms.
    pub lockstep_turn_ms: u32,
}

/// The comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelComparison {
    /// One row per unit count.
    pub rows: Vec<ModelRow>,
    /// The unit count from which snapshots cost more bytes than lockstep,
    /// interpolated log-linearly between the measured counts.
    pub crossover_units: Option<f64>,
    /// Lockstep's bytes per second per client, mean over the unit counts.
    pub lockstep_mean_bytes_per_s: f64,
}

/// Most entities encoded in one message: a delta of 65,536 moving entities
/// would overflow the encoder's 1 MiB buffer (and any real server would
/// split it), so large worlds are measured as consecutive runs of this many
/// entities, each a delta from the same run one frame earlier, and summed.
pub const ENTITIES_PER_MESSAGE: usize = 4096;

/// Mean native delta size of `units` all-moving entities over `frames`.
pub fn snapshot_message_bytes(units: u32, frames: usize) -> Result<f64, Error> {
    type Snap = std::sync::Arc<State<StressEntity, StressPlayer>>;
    let mut world: World<StressEntity, StressPlayer> =
        World::new(0x5eed_00c0 ^ units as u64, units, 1, units as usize, 50);
    let mut encoder = EngineEncoder::native().with_entity_limit(snapshot::config::MAX_ENTITY_LIMIT);
    let zeros: Zeros<StressEntity, StressPlayer> = Zeros::default();
    let mut breakdown = Breakdown::default();
    let mut bases: Vec<Option<Snap>> = Vec::new();
    let mut bits = 0usize;
    let mut counted = 0usize;
    for frame in 0..frames.max(1) + 1 {
        world.step();
        let chunks = world.entities.chunks(ENTITIES_PER_MESSAGE);
        bases.resize(chunks.len(), None);
        for (stream, (chunk, base)) in chunks.zip(bases.iter_mut()).enumerate() {
            let snapshot = std::sync::Arc::new(State {
                server_time: world.time_ms,
                flags: 0,
                areamask: Vec::new(),
                player: world.players[0],
                entities: chunk.to_vec(),
            });
            let step = Step {
                snapshot: &snapshot,
                base: base.as_ref(),
                delta_num: u8::from(base.is_some()),
                frame_ms: 50,
                baselines: &NoBaselines,
                reference: None,
                stream,
            };
            let size = encoder.encode(&step, &zeros, &mut breakdown)?;
            if frame > 0 {
                bits += size;
            }
            *base = Some(snapshot);
        }
        if frame > 0 {
            counted += 1;
        }
    }
    Ok(bits as f64 / 8.0 / counted.max(1) as f64)
}

/// Snapshot bytes per second per client for a mean message of `message`
/// bytes, the client sending the same orders as under lockstep (one every
/// `turn_ms`) in the datagrams that acknowledge the snapshots.
pub fn snapshot_bytes_per_second(message: f64, turn_ms: u32) -> f64 {
    let datagrams = (message / DATAGRAM_PAYLOAD as f64).ceil().max(1.0);
    let down = (message + datagrams * NETCHAN_HEADER as f64) * SNAPSHOT_HZ as f64;
    let up =
        SNAPSHOT_HZ as f64 * NETCHAN_HEADER as f64 + ORDER_BYTES * 1000.0 / turn_ms.max(1) as f64;
    down + up
}

/// Lockstep per-client bytes per second, mean input latency and final turn
/// length for `units` units over `turns` turns.
pub fn lockstep_run(units: u32, turns: u32) -> Result<(f64, f64, u32), Error> {
    let config = SessionConfig {
        participants: PARTICIPANTS,
        turns,
        host: HostConfig {
            setup: UnitsSetup {
                units,
                ..UnitsSetup::default()
            }
            .to_bytes(),
            seed: 0xc0de ^ units as u64,
            ..HostConfig::default()
        },
        // Dumps of 65,536 units every sync turn would dominate the run.
        peer: PeerConfig {
            keep_sync_states: 0,
            ..PeerConfig::default()
        },
        link: ConditionerConfig {
            latency: Duration::from_millis(LATENCY_MS as u64),
            ..ConditionerConfig::default()
        },
        ..SessionConfig::default()
    };
    let report = run::<Units>(
        &config,
        |p, peer| {
            let turn = peer.scheduled_turn() as i32;
            vec![UnitOrder {
                first: p as u32,
                count: 16,
                target: [turn * 37 % 2000, -(turn * 53 % 2000)],
            }
            .encode()
            .to_vec()]
        },
        |_, _, _| {},
    )
    .map_err(|source| Error::Io {
        path: "lockstep session".into(),
        source,
    })?;
    if !report.desyncs().is_empty() || report.timed_out {
        return Err(Error::Io {
            path: "lockstep session".into(),
            source: std::io::Error::other("the lockstep session desynced or timed out"),
        });
    }
    let seconds = report.elapsed.as_secs_f64().max(1e-3);
    let n = report.participants.len().max(1) as f64;
    let bytes: f64 = report
        .participants
        .iter()
        .map(|p| (p.traffic.sent + p.traffic.received) as f64)
        .sum::<f64>()
        / n;
    let latency = report
        .participants
        .iter()
        .map(|p| p.stats.mean_input_latency_ms())
        .sum::<f64>()
        / n;
    let turn_ms = report.participants[0].stats.turn_ms;
    Ok((bytes / seconds, latency, turn_ms))
}

/// Measures every unit count, and the snapshot side at
/// [`CROSSOVER_PROBES`] too, to place the crossover.
pub fn compare(units: &[u32], effort: Effort) -> Result<ModelComparison, Error> {
    let mut rows = Vec::with_capacity(units.len());
    for &n in units {
        let message = snapshot_message_bytes(n, effort.frames)?;
        let (lockstep_bytes, lockstep_latency, turn_ms) = lockstep_run(n, effort.turns)?;
        rows.push(ModelRow {
            units: n,
            snapshot_message_bytes: message,
            snapshot_bytes_per_s: snapshot_bytes_per_second(message, turn_ms),
            snapshot_input_latency_ms: 2.0 * LATENCY_MS as f64 + 500.0 / SNAPSHOT_HZ as f64,
            lockstep_bytes_per_s: lockstep_bytes,
            lockstep_input_latency_ms: lockstep_latency,
            lockstep_turn_ms: turn_ms,
        });
    }
    // Lockstep's bytes do not depend on the units: probe small worlds on
    // the snapshot side only, against the mean lockstep figure.
    let n = rows.len().max(1) as f64;
    let lockstep = rows.iter().map(|r| r.lockstep_bytes_per_s).sum::<f64>() / n;
    let turn_ms = rows.first().map_or(150, |r| r.lockstep_turn_ms);
    let mut curve: Vec<(u32, f64)> = Vec::new();
    for &probe in CROSSOVER_PROBES.iter().filter(|p| !units.contains(p)) {
        let message = snapshot_message_bytes(probe, effort.frames)?;
        curve.push((probe, snapshot_bytes_per_second(message, turn_ms)));
    }
    curve.extend(rows.iter().map(|r| (r.units, r.snapshot_bytes_per_s)));
    curve.sort_by_key(|p| p.0);
    Ok(ModelComparison {
        rows,
        crossover_units: crossover(&curve, lockstep),
        lockstep_mean_bytes_per_s: lockstep,
    })
}

/// Where the snapshot bytes (`curve`: units → bytes/s, sorted) first exceed
/// `lockstep`, interpolating `log(units)` linearly between points; `None`
/// if they never do, or already do at the smallest count measured.
pub fn crossover(curve: &[(u32, f64)], lockstep: f64) -> Option<f64> {
    curve.windows(2).find_map(|w| {
        let (a, b) = (w[0].1 - lockstep, w[1].1 - lockstep);
        (a < 0.0 && b >= 0.0).then(|| {
            let (la, lb) = ((w[0].0 as f64).ln(), (w[1].0 as f64).ln());
            (la + (lb - la) * (-a / (b - a))).exp()
        })
    })
}

/// The comparison as a table.
pub fn render_text(comparison: &ModelComparison) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "model comparison: {PARTICIPANTS} clients, {LATENCY_MS} ms one way, every unit moving every 50 ms tick"
    );
    let _ = writeln!(
        out,
        "{:>7} {:>14} {:>16} {:>16} {:>14} {:>16} {:>10}",
        "units",
        "delta bytes",
        "snapshot B/s",
        "lockstep B/s",
        "snap lat ms",
        "lockstep lat ms",
        "turn ms"
    );
    for r in &comparison.rows {
        let _ = writeln!(
            out,
            "{:>7} {:>14.1} {:>16.0} {:>16.0} {:>14.0} {:>16.0} {:>10}",
            r.units,
            r.snapshot_message_bytes,
            r.snapshot_bytes_per_s,
            r.lockstep_bytes_per_s,
            r.snapshot_input_latency_ms,
            r.lockstep_input_latency_ms,
            r.lockstep_turn_ms
        );
    }
    match comparison.crossover_units {
        Some(n) => {
            let _ = writeln!(
                out,
                "crossover: snapshots cost more bytes per client than lockstep ({:.0} B/s) from about {n:.1} moving units",
                comparison.lockstep_mean_bytes_per_s
            );
        }
        None => {
            let _ = writeln!(
                out,
                "crossover: none in the measured range (1 to 65,536 units)"
            );
        }
    }
    out
}

/// Writes the comparison as an SVG plot: bytes per second per client of
/// both models against units (both axes logarithmic).
pub fn write_svg(comparison: &ModelComparison, path: &Path) -> Result<(), Error> {
    use plotters::prelude::*;
    let plot_error = |e: &dyn std::fmt::Display| Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(format!("plotting: {e}")),
    };
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plot_error(&e))?;
    let max_bytes = comparison
        .rows
        .iter()
        .map(|r| r.snapshot_bytes_per_s.max(r.lockstep_bytes_per_s))
        .fold(1.0, f64::max);
    let max_units = comparison.rows.iter().map(|r| r.units).max().unwrap_or(1) as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "bytes per second per client: snapshot deltas vs lockstep",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (8.0..max_units * 2.0).log_scale(),
            (100.0..max_bytes * 2.0).log_scale(),
        )
        .map_err(|e| plot_error(&e))?;
    chart
        .configure_mesh()
        .x_desc("moving units")
        .y_desc("bytes/s per client")
        .draw()
        .map_err(|e| plot_error(&e))?;
    let snapshot: Vec<(f64, f64)> = comparison
        .rows
        .iter()
        .map(|r| (r.units as f64, r.snapshot_bytes_per_s))
        .collect();
    let lockstep: Vec<(f64, f64)> = comparison
        .rows
        .iter()
        .map(|r| (r.units as f64, r.lockstep_bytes_per_s))
        .collect();
    chart
        .draw_series(LineSeries::new(snapshot.clone(), &BLUE))
        .map_err(|e| plot_error(&e))?
        .label("snapshot deltas (native codec)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
    chart
        .draw_series(snapshot.iter().map(|&p| Circle::new(p, 4, BLUE.filled())))
        .map_err(|e| plot_error(&e))?;
    chart
        .draw_series(LineSeries::new(lockstep.clone(), &RED))
        .map_err(|e| plot_error(&e))?
        .label("lockstep (commands only)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    chart
        .draw_series(lockstep.iter().map(|&p| Circle::new(p, 4, RED.filled())))
        .map_err(|e| plot_error(&e))?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| plot_error(&e))?;
    root.present().map_err(|e| plot_error(&e))?;
    Ok(())
}
