//! `demo info`, `demo stats` and `demo events` of one file, as a
//! [`FileOutcome`] the multi-file runner prints in order.
//!
//! A damaged file is still described: everything decoded before the fault
//! (records, snapshots, duration, events) is reported together with the
//! error (`"error"` in JSON), and the file's status is [`EXIT_ERROR`]. A
//! truncated file is described to its last complete record and says so
//! (`"truncated": true`); it is not an error for these commands.

use std::io::Write;
use std::path::{Path, PathBuf};

use demo::stats::{native_stats_until_error, DemoStats, Info};
use demo::{DemoError, DemoReader};
use serde_json::{Map, Value};

use crate::cli::{EXIT_ERROR, EXIT_OK};
use crate::detect::Format;
use crate::dm68;
use crate::error::ToolError;
use crate::events::{events_of, write_json, write_text};
use crate::multi::FileOutcome;
use crate::output::PendingFile;

/// Reads a file and detects its format.
pub fn read(path: &Path) -> Result<(Vec<u8>, Format), ToolError> {
    let data = std::fs::read(path).map_err(|e| {
        DemoError::Io(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", path.display()),
        ))
    })?;
    let format = Format::detect(&data)?;
    Ok((data, format))
}

/// Statistics of a whole file, partial for a damaged one (with the error).
pub fn gather(data: &[u8], format: Format, decode: bool) -> (DemoStats, Option<ToolError>) {
    match format {
        Format::Native => match DemoReader::new(data) {
            Ok(reader) => {
                let (stats, error) = native_stats_until_error(&reader, decode, &mut |_| {});
                (stats, error.map(ToolError::from))
            }
            Err(error) => (
                DemoStats::new(format.name(), 0, data.len() as u64).finish(),
                Some(error.into()),
            ),
        },
        Format::Dm68 => dm68::stats_until_error(data, &mut |_| {}),
    }
}

fn json_line(mut object: Map<String, Value>, file: &str, error: Option<&ToolError>) -> Vec<u8> {
    object.insert("file".into(), Value::from(file));
    if let Some(error) = error {
        object.insert("error".into(), Value::from(error.to_string()));
    }
    let mut line = serde_json::to_vec(&Value::Object(object)).unwrap_or_default();
    line.push(b'\n');
    line
}

fn to_object(value: &impl serde::Serialize) -> Map<String, Value> {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// An outcome for a file that could not be read at all.
fn unreadable(path: &Path, error: &ToolError, json: bool) -> FileOutcome {
    let file = path.display().to_string();
    FileOutcome {
        code: EXIT_ERROR,
        stdout: if json {
            json_line(Map::new(), &file, Some(error))
        } else {
            Vec::new()
        },
        stderr: Some(format!("{file}: {error}")),
    }
}

fn finish(path: &Path, stdout: Vec<u8>, error: Option<&ToolError>) -> FileOutcome {
    FileOutcome {
        code: if error.is_some() { EXIT_ERROR } else { EXIT_OK },
        stdout,
        stderr: error.map(|e| format!("{}: {e}", path.display())),
    }
}

/// `demo info` of one file.
pub fn info(path: &Path, json: bool) -> FileOutcome {
    let file = path.display().to_string();
    let lockstep = match crate::lockstep::read_if_lockstep(path) {
        Ok(lockstep) => lockstep,
        Err(error) => return unreadable(path, &error, json),
    };
    if let Some(data) = lockstep {
        let mut text = Vec::new();
        return match crate::lockstep::info(path, &data, json, &mut text) {
            Ok(code) if json => {
                let object = serde_json::from_slice::<Value>(&text)
                    .ok()
                    .and_then(|v| v.as_object().cloned())
                    .unwrap_or_default();
                FileOutcome {
                    code,
                    stdout: json_line(object, &file, None),
                    stderr: None,
                }
            }
            Ok(code) => FileOutcome {
                code,
                stdout: text,
                stderr: None,
            },
            Err(error) => unreadable(path, &error, json),
        };
    }
    let (data, format) = match read(path) {
        Ok(read) => read,
        Err(error) => return unreadable(path, &error, json),
    };
    let (stats, error) = gather(&data, format, false);
    let info = match format {
        Format::Native => match DemoReader::new(&data) {
            Ok(reader) => Info::native(reader.header(), &stats),
            Err(error) => return unreadable(path, &error.into(), json),
        },
        Format::Dm68 => dm68::info(dm68::metadata(&data), &stats),
    };
    let stdout = if json {
        json_line(to_object(&info), &file, error.as_ref())
    } else {
        let mut text = Vec::new();
        // Writing to memory cannot fail.
        let _ = write_info_text(path, &info, error.as_ref(), &mut text);
        text
    };
    finish(path, stdout, error.as_ref())
}

fn write_info_text(
    path: &Path,
    info: &Info,
    error: Option<&ToolError>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(out, "file:       {}", path.display())?;
    writeln!(
        out,
        "format:     {} (version {})",
        info.format, info.version
    )?;
    writeln!(out, "codec:      {}", info.codec)?;
    if let Some(framing) = info.framing {
        writeln!(out, "framing:    {framing}")?;
    }
    if let Some(policy) = info.adaptation {
        writeln!(
            out,
            "adaptation: models rebuilt every {} messages, a stream symbol weighs {}, rebuild lead {}",
            policy.chain_length, policy.weight, policy.lead
        )?;
    }
    if info.tick_hz > 0 || info.snapshot_hz > 0 {
        writeln!(
            out,
            "rates:      {} Hz ticks, {} Hz snapshots",
            info.tick_hz, info.snapshot_hz
        )?;
    }
    for (what, schema) in [
        ("entity", &info.entity_schema),
        ("player", &info.player_schema),
    ] {
        writeln!(
            out,
            "{what:<11} {} ({} fields, fingerprint {}{})",
            schema.name,
            schema.fields.len(),
            schema.fingerprint,
            if schema.has_model {
                ", native model"
            } else {
                ""
            }
        )?;
        writeln!(out, "            {}", schema.fields.join(", "))?;
    }
    for (key, value) in &info.metadata {
        let shown: String = value.chars().take(100).collect();
        writeln!(out, "meta:       {key} = {shown}")?;
    }
    writeln!(out, "bytes:      {}", info.file_bytes)?;
    writeln!(out, "duration:   {:.3} s", info.duration_s)?;
    writeln!(
        out,
        "records:    {} ({} gamestates)",
        info.records, info.gamestates
    )?;
    writeln!(
        out,
        "snapshots:  {} ({} full/keyframes)",
        info.snapshots, info.keyframes
    )?;
    writeln!(
        out,
        "bytes/snap: mean {:.1}, p50 {}, p99 {}, max {}",
        info.mean_snapshot_bytes,
        info.p50_snapshot_bytes,
        info.p99_snapshot_bytes,
        info.max_snapshot_bytes
    )?;
    match &info.truncation {
        Some(why) => writeln!(out, "truncated:  yes: {why}")?,
        None => writeln!(out, "truncated:  no")?,
    }
    if let Some(error) = error {
        writeln!(out, "error:      {error} (the figures above are up to it)")?;
    }
    Ok(())
}

/// Where `demo stats` writes a file's plot: `svg` itself for one file, a
/// file named after the demo inside the folder `svg` for several.
pub fn svg_path(svg: &Path, demo: &Path, several: bool) -> PathBuf {
    if several {
        let name = demo
            .file_name()
            .map_or_else(|| "demo".into(), |n| n.to_string_lossy().into_owned());
        svg.join(format!("{name}.svg"))
    } else {
        svg.to_path_buf()
    }
}

/// The summary `demo stats` prints, in JSON.
#[derive(serde::Serialize)]
struct StatsSummary<'a> {
    #[serde(flatten)]
    stats: &'a DemoStats,
    entities: demo::stats::Distribution,
    snapshot_bytes_per_s: f64,
    svg: Option<String>,
}

/// `demo stats` of one file; the plot goes to `svg` when given (written
/// whole or not at all).
pub fn stats(path: &Path, json: bool, svg: Option<&Path>) -> FileOutcome {
    let file = path.display().to_string();
    let (data, format) = match read(path) {
        Ok(read) => read,
        Err(error) => return unreadable(path, &error, json),
    };
    let (stats, mut error) = gather(&data, format, true);
    let mut written = None;
    if let Some(svg) = svg {
        if error.is_none() || stats.snapshots > 0 {
            let title = format!(
                "{} ({})",
                path.file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
                stats.format
            );
            let pending = PendingFile::new(svg);
            let plotted = crate::plot::write_svg(&stats, &title, pending.path())
                .map_err(ToolError::from)
                .and_then(|()| pending.commit().map_err(ToolError::from));
            match plotted {
                Ok(()) => written = Some(svg.display().to_string()),
                Err(plot_error) => error = error.or(Some(plot_error)),
            }
        }
    }
    let entities = stats.entity_counts();
    let total: u64 = stats.samples.iter().map(|s| s.bytes as u64).sum();
    let rate = if stats.duration_s > 0.0 {
        total as f64 / stats.duration_s
    } else {
        0.0
    };
    let stdout = if json {
        let summary = StatsSummary {
            stats: &stats,
            entities,
            snapshot_bytes_per_s: rate,
            svg: written.clone(),
        };
        json_line(to_object(&summary), &file, error.as_ref())
    } else {
        let mut text = Vec::new();
        let _ = write_stats_text(
            path,
            &stats,
            rate,
            written.as_deref(),
            error.as_ref(),
            &mut text,
        );
        text
    };
    finish(path, stdout, error.as_ref())
}

fn write_stats_text(
    path: &Path,
    stats: &DemoStats,
    rate: f64,
    svg: Option<&str>,
    error: Option<&ToolError>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let entities = stats.entity_counts();
    writeln!(
        out,
        "{}: {} snapshots over {:.3} s ({} keyframes){}",
        path.display(),
        stats.snapshots,
        stats.duration_s,
        stats.keyframes,
        if stats.truncated { ", truncated" } else { "" }
    )?;
    writeln!(
        out,
        "bytes per snapshot: mean {:.1}, p50 {}, p99 {}, max {}",
        stats.snapshot_bytes.mean,
        stats.snapshot_bytes.p50,
        stats.snapshot_bytes.p99,
        stats.snapshot_bytes.max
    )?;
    writeln!(
        out,
        "entities per snapshot: mean {:.1}, p50 {}, p99 {}, max {}",
        entities.mean, entities.p50, entities.p99, entities.max
    )?;
    if stats.duration_s > 0.0 {
        writeln!(out, "snapshot data rate: {rate:.0} bytes/s")?;
    }
    if let Some(svg) = svg {
        writeln!(out, "plot: {svg}")?;
    }
    if let Some(error) = error {
        writeln!(out, "error: {error} (the figures above are up to it)")?;
    }
    Ok(())
}

/// `demo events` of one file.
pub fn events(path: &Path, json: bool) -> FileOutcome {
    let file = path.display().to_string();
    let (data, format) = match read(path) {
        Ok(read) => read,
        Err(error) => return unreadable(path, &error, json),
    };
    let (events, error) = events_of(&data, format);
    let mut stdout = Vec::new();
    let written = if json {
        write_json(&file, &events, error.as_ref(), &mut stdout)
    } else {
        write_text(&file, &events, &mut stdout).and_then(|()| {
            if let Some(error) = &error {
                writeln!(stdout, "error: {error} (the events above are up to it)")?;
            }
            Ok(())
        })
    };
    if let Err(write_error) = written {
        return unreadable(path, &write_error, json);
    }
    if let Some(truncation) = &events.walked.truncation {
        let mut outcome = finish(path, stdout, error.as_ref());
        outcome.stderr.get_or_insert(format!(
            "{file}: {truncation}; events up to the last complete record"
        ));
        return outcome;
    }
    finish(path, stdout, error.as_ref())
}
