//! The `demo` command-line tool: arguments, commands and exit codes.
//!
//! Times on the command line (`--from`, `--to`, `--seek`) are seconds from
//! the demo's first snapshot. Exit codes: [`EXIT_OK`] when the command
//! read its file to the end cleanly, [`EXIT_TRUNCATED`] when `play`,
//! `dump`, `cut` or `convert` met a truncated file (after using every
//! complete record; `info`, `stats` and `events` report truncation in their
//! output instead), [`EXIT_ERROR`] for anything else, with the message on
//! stderr. `info`, `stats` and `events` take several files and folders and
//! exit with the worst status of the files ([`crate::multi::worst`]); a
//! damaged file is still reported up to its fault, with the error.
//! Commands that write files write them whole or not at all
//! ([`crate::output`]).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use fields::Codec;
use indicatif::{ProgressBar, ProgressStyle};

use demo::cut::cut;
use demo::dump::{dump_native, DumpOptions};
use demo::{DemoError, DemoReader, Player};
use q3::{Command as Q3Command, Dm68Decoder};

use crate::convert::{convert_dm68, ConvertOptions, ConvertReport};
use crate::detect::Format;
use crate::dm68;
use crate::error::ToolError;
use crate::multi::FileOutcome;
use crate::output::PendingFile;

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
    /// bytes per snapshot, truncation; of every file and folder given.
    Info {
        /// Demos, and folders to search for demos.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// One JSON object per file (JSON Lines) instead of text.
        #[arg(long)]
        json: bool,
        /// Files read at once (default: every core).
        #[arg(long, short = 'j')]
        jobs: Option<usize>,
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
    /// Bytes per snapshot and entity counts (a summary, and a plot over
    /// time with --svg); of every file and folder given.
    Stats {
        /// Demos, and folders to search for demos.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Where to write the SVG plot (with several files: a folder, one
        /// plot per demo).
        #[arg(long)]
        svg: Option<PathBuf>,
        /// One JSON object per file (JSON Lines) instead of text.
        #[arg(long)]
        json: bool,
        /// Files read at once (default: every core).
        #[arg(long, short = 'j')]
        jobs: Option<usize>,
    },
    /// The match's events: frags, chat, score changes, CTF flags, players
    /// joining, leaving and renaming; of every file and folder given.
    Events {
        /// Demos, and folders to search for demos.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// One JSON object per event (JSON Lines) instead of text.
        #[arg(long)]
        json: bool,
        /// Files read at once (default: every core).
        #[arg(long, short = 'j')]
        jobs: Option<usize>,
    },
    /// Writes a standalone demo of a span: --from/--to, or around one of
    /// `demo events`' events. A Quake 3 demo is converted to a native one.
    Cut {
        /// The demo.
        file: PathBuf,
        /// Start (seconds from the first snapshot).
        #[arg(
            long,
            required_unless_present = "around_event",
            conflicts_with = "around_event"
        )]
        from: Option<f64>,
        /// End (seconds from the first snapshot).
        #[arg(
            long,
            required_unless_present = "around_event",
            conflicts_with = "around_event"
        )]
        to: Option<f64>,
        /// The index of an event (as `demo events FILE` numbers them) to
        /// cut around.
        #[arg(long)]
        around_event: Option<usize>,
        /// Seconds kept before the event.
        #[arg(long, default_value_t = 5.0, requires = "around_event")]
        before: f64,
        /// Seconds kept after the event.
        #[arg(long, default_value_t = 5.0, requires = "around_event")]
        after: f64,
        /// Output file.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
    },
    /// Writes a self-contained HTML page that plays the match back as a
    /// top-down map, with a timeline of its events and a plot of bytes per
    /// snapshot.
    View {
        /// The demo.
        file: PathBuf,
        /// The page to write.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        /// Most snapshots the page holds; longer demos are thinned evenly.
        #[arg(long, default_value_t = crate::view::DEFAULT_MAX_SNAPSHOTS)]
        max_snapshots: usize,
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
        Command::Info { files, json, jobs } => many(&files, jobs, json, &mut stdout, &|path| {
            crate::inspect::info(path, json)
        }),
        Command::Stats {
            files,
            svg,
            json,
            jobs,
        } => stats(&files, svg.as_deref(), json, jobs, &mut stdout),
        Command::Events { files, json, jobs } => many(&files, jobs, json, &mut stdout, &|path| {
            crate::inspect::events(path, json)
        }),
        Command::View {
            file,
            output,
            max_snapshots,
        } => crate::view::view(&file, &output, max_snapshots, &mut stdout),
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
        Command::Cut {
            file,
            from,
            to,
            around_event,
            before,
            after,
            output,
        } => {
            let span = match (around_event, from, to) {
                (Some(index), _, _) => Span::AroundEvent {
                    index,
                    before,
                    after,
                },
                (None, Some(from), Some(to)) => Span::Times { from, to },
                _ => Span::Times { from: 0.0, to: 0.0 },
            };
            cut_command(&file, span, &output, &mut stdout)
        }
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
    crate::inspect::read(path)
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

/// Runs a per-file command over every file and folder in `paths` (see
/// [`crate::multi`]); text blocks of several files are separated by a
/// blank line.
fn many(
    paths: &[PathBuf],
    jobs: Option<usize>,
    json: bool,
    out: &mut dyn Write,
    work: &(dyn Fn(&Path) -> FileOutcome + Sync),
) -> Outcome {
    let files = crate::multi::expand(paths)?;
    if files.len() > 1 && !json {
        let separated = |path: &Path| {
            let mut outcome = work(path);
            if !outcome.stdout.is_empty() {
                outcome.stdout.push(b'\n');
            }
            outcome
        };
        return crate::multi::run_files(&files, jobs, &separated, out);
    }
    crate::multi::run_files(&files, jobs, work, out)
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

fn stats(
    paths: &[PathBuf],
    svg: Option<&Path>,
    json: bool,
    jobs: Option<usize>,
    out: &mut dyn Write,
) -> Outcome {
    let files = crate::multi::expand(paths)?;
    let several = files.len() > 1 || paths.iter().any(|p| p.is_dir());
    if let (Some(svg), true) = (svg, several) {
        std::fs::create_dir_all(svg).map_err(|e| {
            DemoError::Io(std::io::Error::new(
                e.kind(),
                format!("{}: {e}", svg.display()),
            ))
        })?;
    }
    many(&files, jobs, json, out, &|path| {
        let svg = svg.map(|svg| crate::inspect::svg_path(svg, path, several));
        crate::inspect::stats(path, json, svg.as_deref())
    })
}

/// What `cut` keeps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Span {
    /// From `from` to `to` seconds after the first snapshot.
    Times {
        /// Start, seconds.
        from: f64,
        /// End, seconds.
        to: f64,
    },
    /// Around event `index` of `demo events`.
    AroundEvent {
        /// The event's index.
        index: usize,
        /// Seconds before it.
        before: f64,
        /// Seconds after it.
        after: f64,
    },
}

fn cut_command(path: &Path, span: Span, output: &Path, out: &mut dyn Write) -> Outcome {
    let (data, format) = read(path)?;
    let start = start_ms(&data, format)?;
    let (from_ms, to_ms, event) = match span {
        Span::Times { from, to } => (at(start, from), at(start, to), None),
        Span::AroundEvent {
            index,
            before,
            after,
        } => {
            let (events, error) = crate::events::events_of(&data, format);
            let Some(event) = events.events.get(index) else {
                return Err(error.unwrap_or_else(|| {
                    ToolError::Demo(DemoError::Span(format!(
                        "{} has {} events (see demo events): there is no event {index}",
                        path.display(),
                        events.events.len()
                    )))
                }));
            };
            let time = i64::from(event.server_time);
            (
                time - (before.max(0.0) * 1000.0).round() as i64,
                time + (after.max(0.0) * 1000.0).round() as i64,
                Some((index, event.clone())),
            )
        }
    };
    // A Quake 3 demo is converted (in memory, checked as `convert` checks
    // it) and the native result cut: the output stands alone either way.
    let (native, source_truncated) = match format {
        Format::Native => (None, false),
        Format::Dm68 => {
            let (converted, _, ending) =
                convert_dm68(&data, Vec::new(), ConvertOptions::default(), &mut |_| {})?;
            (Some(converted), ending.is_some())
        }
    };
    let native_data = native.as_deref().unwrap_or(&data);
    let clamp = |ms: i64| u32::try_from(ms.max(0)).unwrap_or(u32::MAX);
    let reader = DemoReader::new(native_data)?;
    let bar = Bar::new(native_data.len(), "cutting");
    let pending = PendingFile::new(output);
    let (writer, report) = cut(
        &reader,
        clamp(from_ms),
        clamp(to_ms),
        pending.create()?,
        &mut |p| bar.update(p),
    )?;
    pending.finish(writer)?;
    drop(bar);
    if let Some((index, event)) = event {
        writeln!(
            out,
            "event {index} at {:.3} s: {} {}",
            (i64::from(event.server_time) - start) as f64 / 1000.0,
            event.kind.type_name(),
            crate::events::describe(&event.kind)
        )?;
    }
    writeln!(
        out,
        "wrote {}: {} snapshots from {:.3} s to {:.3} s ({} re-encoded)",
        output.display(),
        report.snapshots,
        (report.first_ms as i64 - start) as f64 / 1000.0,
        (report.last_ms as i64 - start) as f64 / 1000.0,
        report.reencoded
    )?;
    if report.source_truncated || source_truncated {
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
    // Written to a temporary file, renamed only once all of it converted.
    let pending = PendingFile::new(output);
    let (writer, report, ending) =
        convert_dm68(&data, pending.create()?, options, &mut |p| bar.update(p))?;
    pending.finish(writer)?;
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
