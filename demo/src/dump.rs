//! One line per snapshot — time, player state, entities with their fields
//! by name — as text or JSON lines. The tool dumps Quake 3 demos through the
//! same [`DumpLine`].
//!
//! A JSON line is an object: `time_ms`, `sequence`, `base` (null for a full
//! snapshot), `player` (field name → value), and `entities`, each with its
//! `number` and `state` (field name → value). For native demos each entity
//! also lists `sent`: the fields its update carried in this message
//! (absent when it was not in the message). The text form shows the same
//! with zero fields left out, to keep lines readable.

use std::io::Write;

use serde::Serialize;
use serde_json::Value;

use crate::error::DemoError;
use crate::play::Player;
use crate::reader::DemoReader;
use crate::stats::Progress;

/// What to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DumpOptions {
    /// JSON lines instead of text.
    pub jsonl: bool,
    /// Only snapshots at or after this server time (ms).
    pub from_ms: Option<i64>,
    /// Only snapshots at or before this server time (ms).
    pub to_ms: Option<i64>,
}

impl DumpOptions {
    /// Whether a snapshot at `time` is in the span.
    pub fn wants(&self, time: i64) -> bool {
        self.from_ms.is_none_or(|from| time >= from) && self.to_ms.is_none_or(|to| time <= to)
    }

    /// Whether `time` is after the span (nothing more to print).
    pub fn past(&self, time: i64) -> bool {
        self.to_ms.is_some_and(|to| time > to)
    }
}

/// One entity of a dumped snapshot.
#[derive(Debug, Clone, Serialize)]
pub struct DumpEntity {
    /// Entity number.
    pub number: u32,
    /// Field name → value.
    pub state: Value,
    /// Fields this message carried for it (native demos).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent: Option<Vec<String>>,
}

/// One dumped snapshot.
#[derive(Debug, Clone, Serialize)]
pub struct DumpLine {
    /// Server time, ms.
    pub time_ms: i64,
    /// Snapshot sequence (Quake 3: message number).
    pub sequence: i64,
    /// The base it was a delta from (`None`: full).
    pub base: Option<i64>,
    /// Player state: field name → value.
    pub player: Value,
    /// Entities in number order.
    pub entities: Vec<DumpEntity>,
}

impl DumpLine {
    /// Writes the line in the chosen form.
    pub fn write(&self, jsonl: bool, out: &mut dyn Write) -> Result<(), DemoError> {
        if jsonl {
            serde_json::to_writer(&mut *out, self).map_err(std::io::Error::other)?;
            out.write_all(b"\n")?;
            return Ok(());
        }
        let base = self
            .base
            .map_or_else(|| "full".to_string(), |b| format!("base={b}"));
        write!(
            out,
            "t={} seq={} {base} player{{{}}} entities={}",
            self.time_ms,
            self.sequence,
            non_zero_fields(&self.player),
            self.entities.len()
        )?;
        for entity in &self.entities {
            write!(
                out,
                " {}{{{}}}",
                entity.number,
                non_zero_fields(&entity.state)
            )?;
        }
        out.write_all(b"\n")?;
        Ok(())
    }
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Bool(b) => !b,
        Value::Array(items) => items.iter().all(is_zero),
        Value::Null => true,
        _ => false,
    }
}

fn non_zero_fields(value: &Value) -> String {
    let Value::Object(map) = value else {
        return value.to_string();
    };
    map.iter()
        .filter(|(_, v)| !is_zero(v))
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A value as JSON (field name → value for states).
pub fn to_value<T: Serialize>(value: &T) -> Result<Value, DemoError> {
    serde_json::to_value(value).map_err(|e| DemoError::Io(std::io::Error::other(e)))
}

/// Dumps a native demo; returns the lines written. A truncated file is
/// dumped to its last complete record, then reported as the error.
pub fn dump_native(
    reader: &DemoReader<'_>,
    options: DumpOptions,
    out: &mut dyn Write,
    progress: Progress<'_>,
) -> Result<usize, DemoError> {
    let mut player = Player::new(reader.clone())?;
    player.client_mut().set_trace(true);
    let mut lines = 0;
    let mut print = |player: &Player<'_>, traced: bool| -> Result<(), DemoError> {
        let client = player.client();
        let Some(snapshot) = client.newest() else {
            return Ok(());
        };
        let names = &reader.header().entity_schema.fields;
        let trace = client.trace().filter(|_| traced);
        let entities = snapshot
            .entities()
            .map(|(number, state)| {
                let sent = trace.and_then(|t| {
                    t.entities.iter().find(|e| e.number == number).map(|e| {
                        e.fields
                            .iter()
                            .filter_map(|i| names.get(i).map(|f| f.name.clone()))
                            .collect()
                    })
                });
                Ok(DumpEntity {
                    number,
                    state: to_value(state)?,
                    sent,
                })
            })
            .collect::<Result<Vec<_>, DemoError>>()?;
        let line = DumpLine {
            time_ms: snapshot.server_time() as i64,
            sequence: snapshot.sequence() as i64,
            base: snapshot.base().map(i64::from),
            player: to_value(snapshot.player())?,
            entities,
        };
        line.write(options.jsonl, out)?;
        lines += 1;
        Ok(())
    };
    if let Some(from) = options.from_ms {
        player.seek(u32::try_from(from.max(0)).unwrap_or(u32::MAX))?;
        // The snapshot seeked to is the last one at or before `from`: print
        // it only if it is exactly there (or the demo starts later).
        if let Some(time) = player.client().newest().map(|s| s.server_time() as i64) {
            if options.wants(time) {
                print(&player, false)?;
            }
        }
    }
    while let Some(played) = player.next_record() {
        let played = played?;
        progress((played.record.offset + played.record.file_len()) as u64);
        if !played.record.kind.is_snapshot() {
            continue;
        }
        let time = played.record.server_time as i64;
        if options.past(time) {
            break;
        }
        if options.wants(time) {
            print(&player, true)?;
        }
    }
    Ok(lines)
}
