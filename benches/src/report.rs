//! The delta-size report: every encoding over every workload, summarised.
//!
//! Definitions (the README repeats them):
//!
//! * **bytes per snapshot message** — the snapshot message alone, in whole
//!   bytes (`ceil(bits / 8)`): for `q3` Quake 3's `svc_snapshot` command,
//!   command byte and header included, Huffman-coded; for `native` the
//!   compact header, player-state delta and entity list; for `naive` the
//!   postcard bytes of the full state. The surrounding datagram (netchan
//!   header, reliable acknowledge, other commands) is the same for all and
//!   left out.
//! * **bits per changed entity** — the bits of every entity update that
//!   carries a state (an entity that differs from the client's copy, or is
//!   new to the client and deltas from its spawn baseline), entity header
//!   included, divided by the number of such updates. Removals, unchanged
//!   entities, the end marker, the header and the player state are not
//!   counted. For `naive` it is the serialized size of the same entities.
//! * **kbps** — mean bytes × 8 × the workload's snapshot rate / 1000, the
//!   rate taken from the median gap between snapshot server times.
//! * **ratio to q3** — mean bytes over q3's mean bytes on the same workload.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::encode::Breakdown;
use crate::encode::{Encoder, NaiveEncoder};
use crate::engine::EngineEncoder;
use crate::model_compare::ModelComparison;
use crate::state::Step;
use crate::stats::{bytes_of_bits, kbps, percentile, rate_from_times, Summary};
use crate::workload::{RunEnd, TargetSet, Workload};
use crate::Error;

/// Target: native mean bytes at most this fraction of q3's.
pub const NATIVE_RATIO_TARGET: f64 = 0.6;
/// Target: `native_loo` (models trained without the demo) mean bytes at
/// most this fraction of q3's, on every real demo.
pub const LOO_RATIO_TARGET: f64 = 0.45;
/// Target: bits per changed entity on real demos.
pub const BITS_PER_CHANGED_ENTITY_TARGET: f64 = 60.0;

/// The whole report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// One entry per workload, in the order run.
    pub workloads: Vec<WorkloadReport>,
    /// The model comparison (snapshot deltas vs lockstep), when run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub models: Option<ModelComparison>,
}

/// One workload's results.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadReport {
    /// Its name.
    pub name: String,
    /// What it is.
    pub description: String,
    /// `complete`, or `stopped early: <reason>`.
    pub status: String,
    /// Snapshot messages measured.
    pub snapshots: usize,
    /// Snapshots per second (0 when unknown).
    pub snapshot_rate_hz: f64,
    /// Entity updates over all messages.
    pub entity_updates: UpdateCounts,
    /// How our q3 encoding compares with the recording (real demos only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub q3_check: Option<Q3Check>,
    /// Results per encoding, by name.
    pub encodings: BTreeMap<String, EncodingReport>,
    /// The targets, as measured (reported, not asserted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub targets: Option<Targets>,
    /// Anything a reader should know (training sets, early stops).
    pub notes: Vec<String>,
}

/// Counts of entity updates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct UpdateCounts {
    /// Changed from the client's copy.
    pub changed: u64,
    /// New to the client.
    pub added: u64,
    /// Removed.
    pub removed: u64,
}

/// Our q3 encoding against the original recording.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Q3Check {
    /// Snapshots compared.
    pub snapshots: usize,
    /// Total bits of ours over the original's (1.000 = the same size).
    pub ratio_to_original: f64,
    /// Snapshots whose bit count equals the original's.
    pub same_bit_count: usize,
    /// Snapshots where ours equals the demo crate's re-encoder
    /// (`q3::reencode::write_snapshot`) in bit count.
    pub same_as_reencode: usize,
    /// Mean bytes of the original commands.
    pub original_mean_bytes: f64,
}

/// One encoding on one workload.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EncodingReport {
    /// Mean bytes per snapshot message.
    pub mean_bytes: f64,
    /// Median bytes per message.
    pub p50_bytes: u64,
    /// 99th-percentile bytes per message.
    pub p99_bytes: u64,
    /// Largest message.
    pub max_bytes: u64,
    /// Mean bits per changed (or added) entity.
    pub bits_per_changed_entity: f64,
    /// Median bits per changed (or added) entity.
    pub median_bits_per_changed_entity: u64,
    /// Kilobits per second at the workload's snapshot rate.
    pub kbps: f64,
    /// Mean bytes over q3's mean bytes.
    pub ratio_to_q3: f64,
    /// Bytes of all messages.
    pub total_bytes: u64,
    /// Mean bits per message by section (formats that account for them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_bits: Option<SectionBits>,
}

/// Mean bits per message spent on each section.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SectionBits {
    /// Header.
    pub header: f64,
    /// Player-state delta.
    pub player_state: f64,
    /// Entity updates that carry a state.
    pub entity_updates: f64,
    /// Removals.
    pub removals: f64,
    /// End marker.
    pub end: f64,
}

/// The targets on one workload.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Targets {
    /// native mean bytes / q3 mean bytes.
    pub native_ratio_to_q3: f64,
    /// Whether it is at most [`NATIVE_RATIO_TARGET`].
    pub native_ratio_met: bool,
    /// native bits per changed entity (real demos).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub native_bits_per_changed_entity: Option<f64>,
    /// Whether it is at most [`BITS_PER_CHANGED_ENTITY_TARGET`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bits_per_changed_entity_met: Option<bool>,
    /// native_loo mean bytes / q3 mean bytes (real demos with leave-one-out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub native_loo_ratio_to_q3: Option<f64>,
    /// Whether it is at most [`LOO_RATIO_TARGET`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub native_loo_ratio_met: Option<bool>,
}

/// Running totals of one encoding.
#[derive(Debug, Default)]
struct Totals {
    bytes: Vec<u64>,
    updates: Vec<u64>,
    sections: [u64; 5],
    bits: u64,
}

impl Totals {
    fn add(&mut self, bits: usize, breakdown: &Breakdown) {
        self.bits += bits as u64;
        self.bytes.push(
            breakdown
                .sent_bytes
                .map_or_else(|| bytes_of_bits(bits), |bytes| bytes as u64),
        );
        self.updates
            .extend(breakdown.updates.iter().map(|&b| u64::from(b)));
        let sections = [
            breakdown.header_bits as u64,
            breakdown.player_bits as u64,
            breakdown.update_bits(),
            breakdown.removal_bits as u64,
            breakdown.end_bits as u64,
        ];
        for (total, part) in self.sections.iter_mut().zip(sections) {
            *total += part;
        }
    }

    fn report(mut self, rate: f64, q3_mean: f64, sections: bool) -> EncodingReport {
        let summary = Summary::of(&mut self.bytes);
        let total_bytes = self.bytes.iter().sum();
        let update_bits: u64 = self.updates.iter().sum();
        self.updates.sort_unstable();
        let per_message = |bits: u64| {
            if summary.count == 0 {
                0.0
            } else {
                bits as f64 / summary.count as f64
            }
        };
        EncodingReport {
            mean_bytes: summary.mean,
            p50_bytes: summary.p50,
            p99_bytes: summary.p99,
            max_bytes: summary.max,
            bits_per_changed_entity: if self.updates.is_empty() {
                0.0
            } else {
                update_bits as f64 / self.updates.len() as f64
            },
            median_bits_per_changed_entity: percentile(&self.updates, 50.0),
            kbps: kbps(summary.mean, rate),
            ratio_to_q3: if q3_mean > 0.0 {
                summary.mean / q3_mean
            } else {
                0.0
            },
            total_bytes,
            mean_bits: sections.then(|| SectionBits {
                header: per_message(self.sections[0]),
                player_state: per_message(self.sections[1]),
                entity_updates: per_message(self.sections[2]),
                removals: per_message(self.sections[3]),
                end: per_message(self.sections[4]),
            }),
        }
    }
}

/// Name of the encoding every ratio is taken against.
pub const Q3: &str = "q3";

/// Runs `q3`, `native`, `naive` and the workload's extra encoders over
/// every step of `workload`.
pub fn measure<W: Workload>(workload: &mut W) -> Result<WorkloadReport, Error> {
    let zeros = workload.zeros();
    let extra = workload.extra_encoders()?;
    let mut encoders: Vec<Box<dyn Encoder<W::Entity, W::Player>>> = vec![
        Box::new(EngineEncoder::q3()),
        Box::new(EngineEncoder::native()),
        Box::new(NaiveEncoder::default()),
    ];
    encoders.extend(extra.encoders);
    let mut totals: Vec<Totals> = encoders.iter().map(|_| Totals::default()).collect();
    let mut breakdown = Breakdown::default();
    let mut times = Vec::new();
    let mut counts = UpdateCounts::default();
    let mut check: Option<(Q3Check, u64, u64)> = None;

    let mut visit = |step: Step<'_, W::Entity, W::Player>| -> Result<(), Error> {
        times.push(step.snapshot.server_time);
        for (index, (encoder, total)) in encoders.iter_mut().zip(&mut totals).enumerate() {
            let bits = encoder.encode(&step, &zeros, &mut breakdown)?;
            total.add(bits, &breakdown);
            if index == 0 {
                counts.changed += u64::from(breakdown.changed);
                counts.added += u64::from(breakdown.added);
                counts.removed += u64::from(breakdown.removed);
                if let Some(reference) = step.reference {
                    let (check, ours, original) = check.get_or_insert_with(Default::default);
                    check.snapshots += 1;
                    check.same_bit_count += usize::from(bits == reference.original_bits);
                    check.same_as_reencode += usize::from(bits == reference.reencoded_bits);
                    *ours += bits as u64;
                    *original += reference.original_bits as u64;
                }
            }
        }
        Ok(())
    };
    let end = workload.run(&mut visit)?;

    let rate = rate_from_times(&times).unwrap_or(0.0);
    let names: Vec<String> = encoders.iter().map(|e| e.name().to_owned()).collect();
    let sections: Vec<bool> = encoders.iter().map(|e| e.accounts_sections()).collect();
    // Ratios are of mean whole-byte sizes, like every other figure.
    let q3_mean = if times.is_empty() {
        0.0
    } else {
        totals[0].bytes.iter().sum::<u64>() as f64 / times.len() as f64
    };
    let mut encodings = BTreeMap::new();
    for ((name, total), sections) in names.into_iter().zip(totals).zip(sections) {
        encodings.insert(name, total.report(rate, q3_mean, sections));
    }
    let q3_check = check.map(|(mut check, ours, original)| {
        check.ratio_to_original = if original == 0 {
            1.0
        } else {
            ours as f64 / original as f64
        };
        check.original_mean_bytes = original as f64 / 8.0 / check.snapshots.max(1) as f64;
        check
    });
    let with_bits = workload.targets() == TargetSet::SizeAndBits;
    let loo = encodings.get("native_loo").map(|loo| loo.ratio_to_q3);
    let targets = match (workload.targets(), encodings.get("native")) {
        (TargetSet::None, _) | (_, None) => None,
        _ if times.is_empty() => None,
        (_, Some(native)) => Some(Targets {
            native_ratio_to_q3: native.ratio_to_q3,
            native_ratio_met: native.ratio_to_q3 <= NATIVE_RATIO_TARGET,
            native_bits_per_changed_entity: with_bits.then_some(native.bits_per_changed_entity),
            bits_per_changed_entity_met: with_bits
                .then_some(native.bits_per_changed_entity <= BITS_PER_CHANGED_ENTITY_TARGET),
            native_loo_ratio_to_q3: loo,
            native_loo_ratio_met: loo.map(|ratio| ratio <= LOO_RATIO_TARGET),
        }),
    };
    if times.is_empty() {
        // Nothing was measured: no figures rather than zeros.
        encodings.clear();
    }
    let mut notes = extra.notes;
    let status = match end {
        RunEnd::Complete => "complete".to_owned(),
        RunEnd::Stopped(reason) => {
            notes.push(format!(
                "the source stopped early; the snapshots before the fault are measured ({reason})"
            ));
            format!("stopped early: {reason}")
        }
    };
    Ok(WorkloadReport {
        name: workload.name(),
        description: workload.description(),
        status,
        snapshots: times.len(),
        snapshot_rate_hz: rate,
        entity_updates: counts,
        q3_check,
        encodings,
        targets,
        notes,
    })
}

/// Order encodings are printed in.
const PRINT_ORDER: [&str; 10] = [
    "q3",
    "native",
    "native_adapting",
    "native_range",
    "native_adapting_range",
    "native_loo",
    "native_loo_range",
    "native_loo_static",
    "native_trained",
    "naive",
];

/// The report as text tables.
pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    for w in &report.workloads {
        let _ = writeln!(out, "== {} — {}", w.name, w.description);
        let _ = writeln!(
            out,
            "   {} snapshots at {:.1} Hz ({}); updates: {} changed, {} added, {} removed",
            w.snapshots,
            w.snapshot_rate_hz,
            w.status,
            w.entity_updates.changed,
            w.entity_updates.added,
            w.entity_updates.removed
        );
        if let Some(c) = &w.q3_check {
            let _ = writeln!(
                out,
                "   q3 vs the recording: {:.4} of the original bits; same bit count on {}/{} \
                 snapshots; equal to q3::reencode on {}/{}",
                c.ratio_to_original, c.same_bit_count, c.snapshots, c.same_as_reencode, c.snapshots
            );
        }
        if w.encodings.is_empty() {
            let _ = writeln!(out, "   no snapshots measured");
        } else {
            let _ = writeln!(
                out,
                "   {:<17} {:>9} {:>6} {:>6} {:>6} {:>12} {:>9} {:>8} {:>7}",
                "encoding",
                "mean B",
                "p50",
                "p99",
                "max",
                "bits/changed",
                "(median)",
                "kbps",
                "×q3"
            );
            let mut names: Vec<&String> = w.encodings.keys().collect();
            names.sort_by_key(|n| {
                PRINT_ORDER
                    .iter()
                    .position(|p| p == n)
                    .unwrap_or(usize::MAX)
            });
            for name in names {
                let e = &w.encodings[name];
                let _ = writeln!(
                    out,
                    "   {:<17} {:>9.1} {:>6} {:>6} {:>6} {:>12.1} {:>9} {:>8.1} {:>7.3}",
                    name,
                    e.mean_bytes,
                    e.p50_bytes,
                    e.p99_bytes,
                    e.max_bytes,
                    e.bits_per_changed_entity,
                    e.median_bits_per_changed_entity,
                    e.kbps,
                    e.ratio_to_q3
                );
            }
        }
        if let Some(t) = &w.targets {
            let mark = |met: bool| if met { "met" } else { "NOT met" };
            let _ = write!(
                out,
                "   targets: native ≤ {NATIVE_RATIO_TARGET} × q3: {:.3} {}",
                t.native_ratio_to_q3,
                mark(t.native_ratio_met)
            );
            if let (Some(bits), Some(met)) = (
                t.native_bits_per_changed_entity,
                t.bits_per_changed_entity_met,
            ) {
                let _ = write!(
                    out,
                    "; bits/changed entity ≤ {BITS_PER_CHANGED_ENTITY_TARGET}: {bits:.1} {}",
                    mark(met)
                );
            }
            if let (Some(ratio), Some(met)) = (t.native_loo_ratio_to_q3, t.native_loo_ratio_met) {
                let _ = write!(
                    out,
                    "; native_loo ≤ {LOO_RATIO_TARGET} × q3: {ratio:.4} {}",
                    mark(met)
                );
            }
            let _ = writeln!(out);
        }
        for note in &w.notes {
            let _ = writeln!(out, "   note: {note}");
        }
        let _ = writeln!(out);
    }
    out
}
