//! Statistics of a demo: records, snapshots, keyframes, duration, bytes per
//! snapshot, entities over time, truncation. `demo info` and `demo stats`
//! print them; the numbers are format-neutral, so the tool fills the same
//! [`DemoStats`] from Quake 3 demos too.

use fields::schema::Schema;
use serde::Serialize;

use crate::error::DemoError;
use crate::format::{DemoHeader, RecordKind, FORMAT_NAME, VERSION};
use crate::play::Player;
use crate::reader::DemoReader;

/// One snapshot's numbers, in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sample {
    /// Server time, ms.
    pub time_ms: i64,
    /// Bytes of the record (native: payload; Quake 3: message) that carried it.
    pub bytes: u32,
    /// Entities in the snapshot (`None` when not decoded).
    pub entities: Option<u32>,
}

/// Mean and percentiles of a list of sizes.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Distribution {
    /// Arithmetic mean (0 when empty).
    pub mean: f64,
    /// Median (nearest rank).
    pub p50: u32,
    /// 99th percentile (nearest rank).
    pub p99: u32,
    /// Largest.
    pub max: u32,
}

impl Distribution {
    /// Of `values` (any order).
    pub fn of(values: impl IntoIterator<Item = u32>) -> Self {
        let mut sorted: Vec<u32> = values.into_iter().collect();
        if sorted.is_empty() {
            return Distribution::default();
        }
        sorted.sort_unstable();
        let rank = |p: f64| {
            // Nearest-rank percentile: the smallest value with at least p% at or below it.
            let k = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
            sorted[k.clamp(1, sorted.len()) - 1]
        };
        Distribution {
            mean: sorted.iter().map(|&v| v as f64).sum::<f64>() / sorted.len() as f64,
            p50: rank(50.0),
            p99: rank(99.0),
            max: *sorted.last().unwrap_or(&0),
        }
    }
}

/// What a demo holds, in numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DemoStats {
    /// The format's name: [`FORMAT_NAME`] for native demos.
    pub format: &'static str,
    /// Native: the format version; Quake 3: the protocol (68).
    pub version: u32,
    /// File size.
    pub file_bytes: u64,
    /// Complete records (native: data records; Quake 3: every message record).
    pub records: usize,
    /// Snapshots (native: snapshot records; Quake 3: every `svc_snapshot` parsed).
    pub snapshots: usize,
    /// Full snapshots (native: keyframe records; Quake 3: snapshots without a base).
    pub keyframes: usize,
    /// Gamestates.
    pub gamestates: usize,
    /// Server time from the first to the last snapshot, seconds.
    pub duration_s: f64,
    /// Bytes of the records that carry a snapshot.
    pub snapshot_bytes: Distribution,
    /// Whether the file ends without its end marker.
    pub truncated: bool,
    /// The truncation, described.
    pub truncation: Option<String>,
    /// Per snapshot, in order.
    #[serde(skip)]
    pub samples: Vec<Sample>,
}

impl DemoStats {
    /// Empty statistics of a file of `file_bytes` in format `format`.
    pub fn new(format: &'static str, version: u32, file_bytes: u64) -> Self {
        DemoStats {
            format,
            version,
            file_bytes,
            records: 0,
            snapshots: 0,
            keyframes: 0,
            gamestates: 0,
            duration_s: 0.0,
            snapshot_bytes: Distribution::default(),
            truncated: false,
            truncation: None,
            samples: Vec::new(),
        }
    }

    /// Counts one snapshot.
    pub fn push_snapshot(&mut self, sample: Sample, full: bool) {
        self.snapshots += 1;
        self.keyframes += full as usize;
        self.samples.push(sample);
    }

    /// Computes the summary figures from the samples.
    pub fn finish(mut self) -> Self {
        self.snapshot_bytes = Distribution::of(self.samples.iter().map(|s| s.bytes));
        if let (Some(first), Some(last)) = (self.samples.first(), self.samples.last()) {
            self.duration_s = (last.time_ms - first.time_ms) as f64 / 1000.0;
        }
        self
    }

    /// Records that the file ends early, with why.
    pub fn truncate(&mut self, error: &dyn std::fmt::Display) {
        self.truncated = true;
        self.truncation = Some(error.to_string());
    }

    /// Entities per snapshot, when decoded.
    pub fn entity_counts(&self) -> Distribution {
        Distribution::of(self.samples.iter().filter_map(|s| s.entities))
    }
}

/// Called with the byte offset reached, for progress bars.
pub type Progress<'a> = &'a mut dyn FnMut(u64);

/// Statistics of a native demo. With `decode`, every snapshot is played
/// (entity counts; messages checked), else only the framing is read.
pub fn native_stats(
    reader: &DemoReader<'_>,
    decode: bool,
    progress: Progress<'_>,
) -> Result<DemoStats, DemoError> {
    match native_stats_until_error(reader, decode, progress) {
        (_, Some(error)) => Err(error),
        (stats, None) => Ok(stats),
    }
}

/// As [`native_stats`], but a damaged file still gives the statistics of
/// every record before the fault, beside the error (a truncated file is no
/// error: its statistics say so).
pub fn native_stats_until_error(
    reader: &DemoReader<'_>,
    decode: bool,
    progress: Progress<'_>,
) -> (DemoStats, Option<DemoError>) {
    let mut stats = DemoStats::new(FORMAT_NAME, VERSION as u32, reader.data().len() as u64);
    let count = |stats: &mut DemoStats, kind: RecordKind, time: u32, bytes: usize, entities| {
        stats.records += 1;
        match kind {
            RecordKind::Gamestate => stats.gamestates += 1,
            RecordKind::Keyframe | RecordKind::Delta => {
                let sample = Sample {
                    time_ms: time as i64,
                    bytes: bytes as u32,
                    entities,
                };
                stats.push_snapshot(sample, kind == RecordKind::Keyframe);
            }
            _ => {}
        }
    };
    if decode {
        let mut player = match Player::new(reader.clone()) {
            Ok(player) => player,
            Err(error) => return (stats.finish(), Some(error)),
        };
        while let Some(played) = player.next_record() {
            match played {
                Ok(played) => {
                    let record = played.record;
                    let entities = record
                        .kind
                        .is_snapshot()
                        .then(|| player.client().newest().map_or(0, |s| s.len() as u32));
                    count(
                        &mut stats,
                        record.kind,
                        record.server_time,
                        record.payload.len(),
                        entities,
                    );
                    progress((record.offset + record.file_len()) as u64);
                }
                Err(error) if error.is_truncation() => {
                    stats.truncate(&error);
                    break;
                }
                Err(error) => return (stats.finish(), Some(error)),
            }
        }
    } else {
        for record in reader.records() {
            match record {
                Ok(record) => {
                    count(
                        &mut stats,
                        record.kind,
                        record.server_time,
                        record.payload.len(),
                        None,
                    );
                    progress((record.offset + record.file_len()) as u64);
                }
                Err(error) if error.is_truncation() => {
                    stats.truncate(&error);
                    break;
                }
                Err(error) => return (stats.finish(), Some(error)),
            }
        }
    }
    (stats.finish(), None)
}

/// A schema as `info` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct SchemaInfo {
    /// Struct name.
    pub name: String,
    /// Fingerprint, hex.
    pub fingerprint: String,
    /// Whether a native-codec model comes with it.
    pub has_model: bool,
    /// `name: kind` per field.
    pub fields: Vec<String>,
}

impl SchemaInfo {
    /// Describes `schema`.
    pub fn new(schema: &Schema, has_model: bool) -> Self {
        SchemaInfo {
            name: schema.name.clone(),
            fingerprint: format!("{:016x}", schema.fingerprint()),
            has_model,
            fields: schema
                .fields
                .iter()
                .map(|f| format!("{}: {}", f.name, describe_kind(&f.kind)))
                .collect(),
        }
    }
}

fn describe_scalar(kind: &fields::ScalarKind) -> String {
    use fields::ScalarKind::*;
    match *kind {
        Unsigned { bits } => format!("u{bits}"),
        Signed { bits } => format!("i{bits}"),
        Bool => "bool".into(),
        Q3Float => "q3float".into(),
        Quantized { min, max, bits } => format!("quantized({min}..{max}, {bits} bits)"),
    }
}

fn describe_kind(kind: &fields::FieldKind) -> String {
    match kind {
        fields::FieldKind::Scalar(s) => describe_scalar(s),
        fields::FieldKind::Array { element, len } => {
            format!("[{}; {len}]", describe_scalar(element))
        }
    }
}

/// Everything `demo info` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Info {
    /// The format's name (`native`, `q3-dm68`, …).
    pub format: &'static str,
    /// Native: format version; Quake 3: protocol.
    pub version: u32,
    /// The codec of the messages.
    pub codec: &'static str,
    /// How a native demo's snapshot messages are framed
    /// ([`crate::MessageFraming::name`]); `None` for a Quake 3 demo.
    pub framing: Option<&'static str>,
    /// How a native demo's models adapt along its delta chain; `None`:
    /// fixed models, or a Quake 3 demo.
    pub adaptation: Option<fields::model::AdaptPolicy>,
    /// Server frames per second (0: unknown).
    pub tick_hz: u32,
    /// Snapshots per second (0: unknown).
    pub snapshot_hz: u32,
    /// Entity schema.
    pub entity_schema: SchemaInfo,
    /// Player-state schema.
    pub player_schema: SchemaInfo,
    /// Header metadata (Quake 3: map and players from the configstrings).
    pub metadata: std::collections::BTreeMap<String, String>,
    /// File size.
    pub file_bytes: u64,
    /// Complete records.
    pub records: usize,
    /// Snapshots.
    pub snapshots: usize,
    /// Full snapshots.
    pub keyframes: usize,
    /// Gamestates.
    pub gamestates: usize,
    /// First to last snapshot, seconds.
    pub duration_s: f64,
    /// Mean bytes of the records that carry a snapshot.
    pub mean_snapshot_bytes: f64,
    /// Median.
    pub p50_snapshot_bytes: u32,
    /// 99th percentile.
    pub p99_snapshot_bytes: u32,
    /// Largest.
    pub max_snapshot_bytes: u32,
    /// Ends without its end marker.
    pub truncated: bool,
    /// The truncation, described.
    pub truncation: Option<String>,
}

impl Info {
    /// Info of a native demo from its header and statistics.
    pub fn native(header: &DemoHeader, stats: &DemoStats) -> Self {
        let info = Info::new(
            header.codec.name(),
            header.tick_hz,
            header.snapshot_hz,
            SchemaInfo::new(&header.entity_schema, header.entity_model.is_some()),
            SchemaInfo::new(&header.player_schema, header.player_model.is_some()),
            header.metadata.clone(),
            stats,
        );
        Info {
            framing: Some(header.framing.name()),
            adaptation: header.adaptation,
            ..info
        }
    }

    /// Info of any demo from its parts.
    pub fn new(
        codec: &'static str,
        tick_hz: u32,
        snapshot_hz: u32,
        entity_schema: SchemaInfo,
        player_schema: SchemaInfo,
        metadata: std::collections::BTreeMap<String, String>,
        stats: &DemoStats,
    ) -> Self {
        Info {
            format: stats.format,
            version: stats.version,
            codec,
            framing: None,
            adaptation: None,
            tick_hz,
            snapshot_hz,
            entity_schema,
            player_schema,
            metadata,
            file_bytes: stats.file_bytes,
            records: stats.records,
            snapshots: stats.snapshots,
            keyframes: stats.keyframes,
            gamestates: stats.gamestates,
            duration_s: stats.duration_s,
            mean_snapshot_bytes: stats.snapshot_bytes.mean,
            p50_snapshot_bytes: stats.snapshot_bytes.p50,
            p99_snapshot_bytes: stats.snapshot_bytes.p99,
            max_snapshot_bytes: stats.snapshot_bytes.max,
            truncated: stats.truncated,
            truncation: stats.truncation.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let d = Distribution::of((1..=100).rev());
        assert_eq!((d.p50, d.p99, d.max), (50, 99, 100));
        assert_eq!(d.mean, 50.5);
        assert_eq!(Distribution::of([]), Distribution::default());
        let one = Distribution::of([7]);
        assert_eq!((one.p50, one.p99, one.max, one.mean), (7, 7, 7, 7.0));
    }
}
