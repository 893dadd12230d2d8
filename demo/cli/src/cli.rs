//! The `demo` command-line tool: arguments, commands and exit codes.
//!
//! Times on the command line (`--from`, `--to`, `--seek`) are seconds from
//! the demo's first snapshot. Exit codes: [`EXIT_OK`] when the command
//! read its file to the end cleanly, [`EXIT_TRUNCATED`] when `play`,
//! `dump`, `cut` or `convert` met a truncated file (after using every
//! complete record; `info` and `stats` report truncation in their output
//! instead), [`EXIT_ERROR`] for anything else, with the message on stderr.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use fields::Codec;
use indicatif::{ProgressBar, ProgressStyle};

use demo::cut::cut;
use demo::dump::{dump_native, DumpOptions};
use demo::stats::{native_stats, DemoStats, Info};
use demo::{DemoError, DemoReader, Player};
use q3::{Command as Q3Command, Dm68Decoder};

use crate::convert::{convert_dm68, ConvertOptions, ConvertReport};
use crate::detect::Format;
use crate::dm68;
use crate::error::ToolError;

/// Exit code: success.
pub const EXIT_OK: i32 = 0;
/// Exit code: an error other than truncation.
pub const EXIT_ERROR: i32 = 2;
/// Exit code: the file was truncated (every complete record was used).
pub const EXIT_TRUNCATED: i32 = 3;

/// Record, replay, seek and inspect snapshot demos (native and Quake 3 `.dm_68`)
/// and lockstep recordings (`info`, `play`).
#[derive(Debug, Parser)]
#[command(name = "demo", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The codec of a converted demo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CodecArg {
    /// This project's compact codec.
    Native,
    /// Quake 3's bit-exact codec.
    Q3,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Format, version, schema, duration, records, snapshots, keyframes,
    /// bytes per snapshot, truncation.
    Info {
        /// The demo.
        file: PathBuf,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// One line per snapshot: time, player state, entities with fields by name.
    Dump {
        /// The demo.
        file: PathBuf,
        /// JSON lines instead of text.
        #[arg(long)]
        jsonl: bool,
        /// From this time (seconds from the first snapshot).
        #[arg(long)]
        from: Option<f64>,
        /// To this time (seconds from the first snapshot).
        #[arg(long)]
        to: Option<f64>,
    },
    /// Plays the demo through the snapshot client.
    Play {
        /// The demo.
        file: PathBuf,
        /// Check sync checksums (Quake 3 demos: that every delta's base was held).
        #[arg(long)]
        verify: bool,
        /// Report snapshots decoded per second.
        #[arg(long)]
        timedemo: bool,
        /// Start at this time (seconds from the first snapshot).
        #[arg(long)]
        seek: Option<f64>,
    },
    /// Plot of bytes per snapshot and entity count over time, and a summary.
    Stats {
        /// The demo.
        file: PathBuf,
        /// Where to write the SVG plot.
        #[arg(long)]
        svg: PathBuf,
    },
    /// Writes a standalone demo of a span.
    Cut {
        /// The demo (native).
        file: PathBuf,
        /// Start (seconds from the first snapshot).
        #[arg(long)]
        from: f64,
        /// End (seconds from the first snapshot).
        #[arg(long)]
        to: f64,
        /// Output file.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
    },
    /// Converts a Quake 3 demo into a native demo of the same snapshots.
    Convert {
        /// The Quake 3 demo.
        input: PathBuf,
        /// The native demo to write.
        output: PathBuf,
        /// Codec of the native demo.
        #[arg(long, value_enum, default_value_t = CodecArg::Native)]
        codec: CodecArg,
    },
}

/// A byte-offset progress bar on a terminal, nothing when stderr is piped.
struct Bar(Option<ProgressBar>);

impl Bar {
    fn new(len: usize, what: &str) -> Self {
        // Small files finish before a bar would be seen.
        if !std::io::stderr().is_terminal() || len < (1 << 20) {
            return Bar(None);
        }
        let bar = ProgressBar::new(len as u64);
        if let Ok(style) =
            ProgressStyle::with_template("{msg} [{bar:40}] {bytes}/{total_bytes} ({eta})")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(what.to_string());
        Bar(Some(bar))
    }

    fn update(&self, position: u64) {
        if let Some(bar) = &self.0 {
            bar.set_position(position);
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

/// How a command ended.
type Outcome = Result<i32, ToolError>;

/// Runs the tool; returns the exit code (errors printed to stderr).
pub fn run(cli: Cli) -> i32 {
    let mut stdout = std::io::stdout().lock();
    let result = match cli.command {
        Command::Info { file, json } => info(&file, json, &mut stdout),
        Command::Dump {
            file,
            jsonl,
            from,
            to,
        } => dump(&file, jsonl, from, to, &mut stdout),
        Command::Play {
            file,
            verify,
            timedemo,
            seek,
        } => play(&file, verify, timedemo, seek, &mut stdout),
        Command::Stats { file, svg } => stats(&file, &svg, &mut stdout),
        Command::Cut {
            file,
            from,
            to,
            output,
        } => cut_command(&file, from, to, &output, &mut stdout),
        Command::Convert {
            input,
            output,
            codec,
        } => convert(&input, &output, codec, &mut stdout),
    };
    let _ = stdout.flush();
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("demo: {error}");
            if error.is_truncation() {
                EXIT_TRUNCATED
            } else {
                EXIT_ERROR
            }
        }
    }
}

fn read(path: &Path) -> Result<(Vec<u8>, Format), ToolError> {
    let data = std::fs::read(path).map_err(|e| {
        DemoError::Io(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", path.display()),
        ))
    })?;
    let format = Format::detect(&data)?;
    Ok((data, format))
}

/// Server time (ms) of the first snapshot.
fn start_ms(data: &[u8], format: Format) -> Result<i64, ToolError> {
    match format {
        Format::Native => {
            let reader = DemoReader::new(data)?;
            for record in reader.records() {
                match record {
                    Ok(record) if record.kind.is_snapshot() => return Ok(record.server_time as i64),
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        }
        Format::Dm68 => {
            for item in Dm68Decoder::new(data)? {
                let Ok(decoded) = item else { break };
                let time = decoded
                    .message
                    .snapshots()
                    .next()
                    .map(|snap| snap.snapshot.server_time as i64);
                if let Some(time) = time {
                    return Ok(time);
                }
            }
        }
    }
    Ok(0)
}

fn at(start: i64, seconds: f64) -> i64 {
    start + (seconds * 1000.0).round() as i64
}

fn gather(data: &[u8], format: Format, decode: bool) -> Result<DemoStats, ToolError> {
    let bar = Bar::new(data.len(), "reading");
    match format {
        Format::Native => Ok(native_stats(&DemoReader::new(data)?, decode, &mut |p| {
            bar.update(p)
        })?),
        Format::Dm68 => dm68::stats(data, &mut |p| bar.update(p)),
    }
}

fn info(path: &Path, json: bool, out: &mut dyn Write) -> Outcome {
    if let Some(data) = crate::lockstep::read_if_lockstep(path)? {
        return crate::lockstep::info(path, &data, json, out);
    }
    let (data, format) = read(path)?;
    let stats = gather(&data, format, false)?;
    let info = match format {
        Format::Native => Info::native(DemoReader::new(&data)?.header(), &stats),
        Format::Dm68 => dm68::info(dm68::metadata(&data), &stats),
    };
    if json {
        serde_json::to_writer(&mut *out, &info).map_err(std::io::Error::other)?;
        writeln!(out)?;
        return Ok(EXIT_OK);
    }
    writeln!(out, "file:       {}", path.display())?;
    writeln!(
        out,
        "format:     {} (version {})",
        info.format, info.version
    )?;
    writeln!(out, "codec:      {}", info.codec)?;
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
    Ok(EXIT_OK)
}

fn dump(
    path: &Path,
    jsonl: bool,
    from: Option<f64>,
    to: Option<f64>,
    out: &mut dyn Write,
) -> Outcome {
    let (data, format) = read(path)?;
    let start = if from.is_some() || to.is_some() {
        start_ms(&data, format)?
    } else {
        0
    };
    let options = DumpOptions {
        jsonl,
        from_ms: from.map(|s| at(start, s)),
        to_ms: to.map(|s| at(start, s)),
    };
    let bar = Bar::new(data.len(), "dumping");
    let mut progress = |p| bar.update(p);
    match format {
        Format::Native => dump_native(&DemoReader::new(&data)?, options, out, &mut progress)?,
        Format::Dm68 => dm68::dump(&data, options, out, &mut progress)?,
    };
    Ok(EXIT_OK)
}

/// Totals of a playback.
#[derive(Debug, Default)]
struct PlayTotals {
    records: usize,
    snapshots: usize,
    checksums: u64,
    first_ms: Option<i64>,
    last_ms: i64,
}

fn play(
    path: &Path,
    verify: bool,
    timedemo: bool,
    seek: Option<f64>,
    out: &mut dyn Write,
) -> Outcome {
    if let Some(data) = crate::lockstep::read_if_lockstep(path)? {
        return crate::lockstep::play(&data, verify, seek, out);
    }
    let (data, format) = read(path)?;
    let seek_ms = match seek {
        Some(seconds) => Some(at(start_ms(&data, format)?, seconds)),
        None => None,
    };
    let bar = Bar::new(data.len(), "playing");
    let mut totals = PlayTotals::default();
    let started = Instant::now();
    let ending = match format {
        Format::Native => play_native(&data, verify, seek_ms, &bar, &mut totals)?,
        Format::Dm68 => play_dm68(&data, verify, seek_ms, &bar, &mut totals)?,
    };
    let elapsed = started.elapsed().as_secs_f64();
    drop(bar);
    writeln!(
        out,
        "played {} records, {} snapshots, {:.3} s of game time{}",
        totals.records,
        totals.snapshots,
        (totals.last_ms - totals.first_ms.unwrap_or(totals.last_ms)) as f64 / 1000.0,
        if verify {
            match format {
                Format::Native => format!(", {} sync checksums verified", totals.checksums),
                Format::Dm68 => ", every delta base verified".to_string(),
            }
        } else {
            String::new()
        }
    )?;
    if timedemo {
        writeln!(
            out,
            "timedemo: {} snapshots in {:.3} s: {:.0} snapshots/s, {:.1} MB/s of file",
            totals.snapshots,
            elapsed,
            totals.snapshots as f64 / elapsed.max(1e-9),
            data.len() as f64 / 1e6 / elapsed.max(1e-9)
        )?;
    }
    match ending {
        None => Ok(EXIT_OK),
        Some(truncation) => {
            eprintln!("demo: {truncation}");
            Ok(EXIT_TRUNCATED)
        }
    }
}

fn play_native(
    data: &[u8],
    verify: bool,
    seek_ms: Option<i64>,
    bar: &Bar,
    totals: &mut PlayTotals,
) -> Result<Option<ToolError>, ToolError> {
    let mut player = Player::new(DemoReader::new(data)?)?;
    player.set_verify(verify);
    if let Some(ms) = seek_ms {
        player.seek(u32::try_from(ms.max(0)).unwrap_or(u32::MAX))?;
        // The snapshot seeked to was decoded by the seek: it is the first played.
        if let Some(snapshot) = player.client().newest() {
            totals.first_ms = Some(snapshot.server_time() as i64);
            totals.last_ms = snapshot.server_time() as i64;
            totals.records += 1;
            totals.snapshots += 1;
        }
    }
    while let Some(played) = player.next_record() {
        match played {
            Ok(played) => {
                totals.records += 1;
                if played.record.kind.is_snapshot() {
                    totals.snapshots += 1;
                    let time = played.record.server_time as i64;
                    totals.first_ms.get_or_insert(time);
                    totals.last_ms = time;
                }
                bar.update((played.record.offset + played.record.file_len()) as u64);
            }
            Err(error) if error.is_truncation() => {
                totals.checksums = player.checksums_verified();
                return Ok(Some(error.into()));
            }
            Err(error) => return Err(error.into()),
        }
    }
    totals.checksums = player.checksums_verified();
    Ok(None)
}

fn play_dm68(
    data: &[u8],
    verify: bool,
    seek_ms: Option<i64>,
    bar: &Bar,
    totals: &mut PlayTotals,
) -> Result<Option<ToolError>, ToolError> {
    for item in Dm68Decoder::new(data)? {
        let decoded = match item {
            Ok(decoded) => decoded,
            Err(error) if error.is_truncation() => return Ok(Some(error.into())),
            Err(error) => return Err(error.into()),
        };
        bar.update((decoded.record.offset + decoded.record.message.len()) as u64);
        for command in &decoded.message.commands {
            let Q3Command::Snapshot(snap) = &command.command else {
                continue;
            };
            let time = snap.snapshot.server_time as i64;
            if seek_ms.is_some_and(|seek| time < seek) {
                continue;
            }
            if verify && !snap.snapshot.is_valid() {
                return Err(ToolError::Q3(q3::Q3Error::Message {
                    record: decoded.record.index,
                    offset: decoded.record.offset,
                    sequence: decoded.record.sequence,
                    source: q3::MessageError::bits(
                        format!("snapshot {:?}", snap.snapshot.validity),
                        fields::BitError::invalid("delta base", 0, "not held by the client"),
                    ),
                }));
            }
            totals.snapshots += 1;
            totals.first_ms.get_or_insert(time);
            totals.last_ms = time;
        }
        if seek_ms.is_none() || totals.first_ms.is_some() {
            totals.records += 1;
        }
    }
    Ok(None)
}

fn stats(path: &Path, svg: &Path, out: &mut dyn Write) -> Outcome {
    let (data, format) = read(path)?;
    let stats = gather(&data, format, true)?;
    let title = format!(
        "{} ({})",
        path.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        stats.format
    );
    crate::plot::write_svg(&stats, &title, svg)?;
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
        let total: u64 = stats.samples.iter().map(|s| s.bytes as u64).sum();
        writeln!(
            out,
            "snapshot data rate: {:.0} bytes/s",
            total as f64 / stats.duration_s
        )?;
    }
    writeln!(out, "plot: {}", svg.display())?;
    Ok(EXIT_OK)
}

fn create(path: &Path) -> Result<std::io::BufWriter<std::fs::File>, ToolError> {
    let file = std::fs::File::create(path).map_err(|e| {
        DemoError::Io(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", path.display()),
        ))
    })?;
    Ok(std::io::BufWriter::new(file))
}

fn cut_command(path: &Path, from: f64, to: f64, output: &Path, out: &mut dyn Write) -> Outcome {
    let (data, format) = read(path)?;
    if format != Format::Native {
        return Err(ToolError::Demo(DemoError::Span(
            "cut works on native demos: convert a Quake 3 demo first (demo convert)".into(),
        )));
    }
    let start = start_ms(&data, format)?;
    let clamp = |ms: i64| u32::try_from(ms.max(0)).unwrap_or(u32::MAX);
    let reader = DemoReader::new(&data)?;
    let bar = Bar::new(data.len(), "cutting");
    let (writer, report) = cut(
        &reader,
        clamp(at(start, from)),
        clamp(at(start, to)),
        create(output)?,
        &mut |p| bar.update(p),
    )?;
    writer
        .into_inner()
        .map_err(|e| DemoError::Io(e.into_error()))?;
    drop(bar);
    writeln!(
        out,
        "wrote {}: {} snapshots from {:.3} s to {:.3} s ({} re-encoded)",
        output.display(),
        report.snapshots,
        (report.first_ms as i64 - start) as f64 / 1000.0,
        (report.last_ms as i64 - start) as f64 / 1000.0,
        report.reencoded
    )?;
    if report.source_truncated {
        eprintln!("demo: the source is truncated; the cut ends at its last complete record");
        return Ok(EXIT_TRUNCATED);
    }
    Ok(EXIT_OK)
}

fn convert(input: &Path, output: &Path, codec: CodecArg, out: &mut dyn Write) -> Outcome {
    let (data, format) = read(input)?;
    if format != Format::Dm68 {
        return Err(ToolError::Demo(DemoError::Span(format!(
            "{} is not a Quake 3 demo: convert reads .dm_68 demos",
            input.display()
        ))));
    }
    let options = ConvertOptions {
        codec: match codec {
            CodecArg::Native => Codec::Native,
            CodecArg::Q3 => Codec::Q3,
        },
        ..ConvertOptions::default()
    };
    let bar = Bar::new(data.len(), "converting");
    let (writer, report, ending) =
        convert_dm68(&data, create(output)?, options, &mut |p| bar.update(p))?;
    writer
        .into_inner()
        .map_err(|e| DemoError::Io(e.into_error()))?;
    drop(bar);
    print_convert_report(input, output, options.codec, &report, out)?;
    match ending {
        Some(truncation) => {
            eprintln!("demo: {truncation}; converted every complete record");
            Ok(EXIT_TRUNCATED)
        }
        None => Ok(EXIT_OK),
    }
}

fn print_convert_report(
    input: &Path,
    output: &Path,
    codec: Codec,
    report: &ConvertReport,
    out: &mut dyn Write,
) -> Result<(), ToolError> {
    writeln!(
        out,
        "{} -> {} ({} codec): {} records, {} snapshots ({} full), {} verified identical field for field",
        input.display(),
        output.display(),
        codec.name(),
        report.records,
        report.snapshots,
        report.full_snapshots,
        report.verified_snapshots
    )?;
    writeln!(
        out,
        "snapshot bytes: {} written vs {} in Quake 3's records ({:.1} vs {:.1} per snapshot)",
        report.snapshot_bytes,
        report.original_record_bytes,
        report.snapshot_bytes as f64 / report.snapshots.max(1) as f64,
        report.original_record_bytes as f64 / report.snapshots.max(1) as f64
    )?;
    writeln!(
        out,
        "configstrings: {} changes, {} too long for a native gamestate kept in metadata, {} dropped; \
         {} invalid snapshots skipped, {} first deltas made full",
        report.configstrings,
        report.configstrings_in_metadata,
        report.configstrings_dropped,
        report.skipped_invalid,
        report.rebased
    )?;
    if let Some(reencode) = &report.reencode {
        writeln!(
            out,
            "q3 re-encode: {}/{} snapshots with exactly Quake 3's bit count ({:.3}%), {} bit-identical",
            reencode.exact_bits,
            reencode.snapshots,
            100.0 * reencode.exact_ratio(),
            reencode.identical_bits
        )?;
        for (cause, count) in reencode.cause_counts() {
            writeln!(out, "  {count} snapshots differ because: {cause}")?;
        }
        for mismatch in reencode.mismatches.iter().take(20) {
            let causes: Vec<String> = mismatch.causes.iter().map(|c| c.to_string()).collect();
            writeln!(
                out,
                "  record {} message {}: {} vs {} bits: {}",
                mismatch.record,
                mismatch.message_num,
                mismatch.original_bits,
                mismatch.reencoded_bits,
                causes.join("; ")
            )?;
        }
        if reencode.mismatches.len() > 20 {
            writeln!(out, "  ... {} more", reencode.mismatches.len() - 20)?;
        }
    }
    Ok(())
}
