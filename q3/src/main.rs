//! `q3`: talk to a live Quake 3 server.
//!
//! * `q3 connect ADDR [--seconds N] [--record FILE] [--name NAME]
//!   [--protocol 68|71] [--framing auto|ioq3|legacy] [--basepath DIR]
//!   [--summary-json FILE] [--capture FILE]` joins the game (answering a
//!   pure server with the checksums of the paks under DIR), plays for N
//!   seconds and leaves; it
//!   exits non-zero if the server dropped it, a message did not decode, or
//!   it never received a gamestate.
//! * `q3 relay --listen ADDR --from SERVER|FILE.dm_68 [--loop] [--seconds N] [--record FILE]`
//!   serves spectators: real Quake 3 clients connect to it and watch the
//!   source's game.
//! * `q3 status ADDR` prints the `getinfo` and `getstatus` answers.

use std::io::BufWriter;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use netq3_q3::live::netchan::Framing;
use netq3_q3::live::pak::{default_basepaths, PakIndex};
use netq3_q3::live::{udp, End, LiveConfig, LiveError, Movement, Protocol, Session};
use netq3_q3::relay::udp::{self as relay_udp, Source};
use netq3_q3::relay::RelayConfig;

#[derive(Parser)]
#[command(
    name = "q3",
    about = "Connect to a Quake 3 server, relay one to spectators, or ask for its status"
)]
struct Cli {
    #[command(subcommand)]
    command: CommandLine,
}

#[derive(Subcommand)]
enum CommandLine {
    /// Joins the game, plays for a while, leaves; reports what came in.
    Connect {
        /// Server address (host:port).
        server: String,
        /// How long to stay.
        #[arg(long, default_value_t = 20.0)]
        seconds: f64,
        /// Write the session as a `.dm_68` demo.
        #[arg(long)]
        record: Option<String>,
        /// Player name.
        #[arg(long, default_value = "netq3")]
        name: String,
        /// Protocol: 71 (ioquake3 and OpenArena; the framing is told apart
        /// by itself) or 68 (id's).
        #[arg(long, default_value_t = 71)]
        protocol: u32,
        /// The framing of protocol 71: `auto` tells ioquake3's from
        /// OpenArena's legacy one by the server's first packet; `ioq3` or
        /// `legacy` force one (68 is always legacy).
        #[arg(long, default_value = "auto", value_parser = ["auto", "ioq3", "legacy"])]
        framing: String,
        /// A folder holding game folders (e.g. `baseoa/`) with the `.pk3`
        /// files a pure server lists, as ioquake3's `fs_basepath`;
        /// repeatable. Default: Debian's Quake 3 and OpenArena folders, then
        /// ~/.openarena and ~/.q3a.
        #[arg(long = "basepath", value_name = "DIR")]
        basepaths: Vec<String>,
        /// Write the summary as JSON.
        #[arg(long)]
        summary_json: Option<String>,
        /// Write every datagram (both ways, timed) as a postcard capture.
        #[arg(long)]
        capture: Option<String>,
        /// Stand still instead of wandering.
        #[arg(long)]
        idle: bool,
        /// A console command sent to the server once in the game (e.g.
        /// `--command "team spectator" --command follownext`); repeatable,
        /// sent in order.
        #[arg(long = "command", value_name = "COMMAND")]
        commands: Vec<String>,
    },
    /// Serves spectators: real Quake 3 clients connect to it as to any
    /// server and watch the game of the source.
    Relay {
        /// Address to listen on (host:port), e.g. 127.0.0.1:27961.
        #[arg(long)]
        listen: String,
        /// The source: a server address (our client joins it as a
        /// spectator following a player) or a `.dm_68` file.
        #[arg(long)]
        from: String,
        /// Play the file again from the start when it ends.
        #[arg(long = "loop")]
        looping: bool,
        /// Stop after this many seconds (default: when the source ends; a
        /// looping file never does).
        #[arg(long)]
        seconds: Option<f64>,
        /// Most spectators at once (1..=64).
        #[arg(long, default_value_t = 64)]
        max_spectators: usize,
        /// The name `getinfo` shows.
        #[arg(long, default_value = "netq3 relay")]
        hostname: String,
        /// Where the source server's paks are, if it is pure (see `connect`).
        #[arg(long = "basepath", value_name = "DIR")]
        basepaths: Vec<String>,
        /// Write each spectator's first datagrams as a fuzz seed into DIR.
        #[arg(long, value_name = "DIR")]
        capture_seeds: Option<String>,
        /// Write the relay's counters as JSON.
        #[arg(long)]
        summary_json: Option<String>,
        /// Record the live source's stream (what spectators are shown) as
        /// a `.dm_68` (a file source is its own record).
        #[arg(long, value_name = "FILE")]
        record: Option<String>,
    },
    /// Prints the server's `getinfo` and `getstatus` answers.
    Status {
        /// Server address (host:port).
        server: String,
    },
}

fn resolve(server: &str) -> Result<SocketAddr, String> {
    let with_port = if server.contains(':') {
        server.to_owned()
    } else {
        format!("{server}:27960")
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| format!("{server}: {e}"))?
        .next()
        .ok_or_else(|| format!("{server}: no address"))
}

/// The local paks under `basepaths` (default: Debian's folders).
fn scan_paks(basepaths: &[String]) -> Result<Option<PakIndex>, String> {
    if basepaths.is_empty() {
        // A broken pak somewhere in the default folders should not keep
        // the client off servers that are not pure.
        return Ok(match PakIndex::scan(&default_basepaths()) {
            Ok(index) => Some(index),
            Err(e) => {
                eprintln!("q3: warning: {e}; pure servers cannot be answered");
                None
            }
        });
    }
    let dirs: Vec<PathBuf> = basepaths.iter().map(PathBuf::from).collect();
    if let Some(missing) = dirs.iter().find(|d| !d.is_dir()) {
        return Err(format!("--basepath {}: not a folder", missing.display()));
    }
    Ok(Some(PakIndex::scan(&dirs).map_err(|e| e.to_string())?))
}

/// A qport and client challenge that differ between runs.
fn run_nonces() -> (u16, i32) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    ((nanos & 0xffff) as u16, (nanos >> 1) as i32 & 0x7fff_ffff)
}

#[allow(clippy::too_many_arguments)]
fn relay(
    listen: &str,
    from: &str,
    looping: bool,
    seconds: Option<f64>,
    max_spectators: usize,
    hostname: String,
    basepaths: &[String],
    capture_seeds: Option<&str>,
    summary_json: Option<&str>,
    record: Option<&str>,
) -> Result<ExitCode, String> {
    if !(1..=64).contains(&max_spectators) {
        return Err("--max-spectators must be between 1 and 64".into());
    }
    let duration = match seconds {
        Some(s) if !(s.is_finite() && s > 0.0 && s < 86_400.0 * 365.0) => {
            return Err("--seconds must be positive".into())
        }
        Some(s) => Some(Duration::from_secs_f64(s)),
        None => None,
    };
    let listen_address = resolve(listen)?;
    let socket = UdpSocket::bind(listen_address).map_err(|e| format!("{listen}: {e}"))?;
    let (qport, client_challenge) = run_nonces();
    let source = if std::path::Path::new(from).is_file() {
        if record.is_some() {
            return Err("--record is for a live source (a file is its own record)".into());
        }
        let bytes = std::fs::read(from).map_err(|e| format!("{from}: {e}"))?;
        Source::File {
            bytes: Arc::new(bytes),
            looping,
        }
    } else {
        if looping {
            return Err("--loop is for a file source".into());
        }
        let config = LiveConfig {
            name: "netq3-relay".into(),
            qport,
            client_challenge,
            movement: Movement::Idle,
            commands_on_enter: vec!["team spectator".into(), "follownext".into()],
            paks: scan_paks(basepaths)?.map(Arc::new),
            ..LiveConfig::default()
        };
        Source::Server {
            address: resolve(from)?,
            config,
            record: record.map(std::path::PathBuf::from),
        }
    };
    let config = RelayConfig {
        max_spectators,
        hostname,
        seed: u64::from(client_challenge as u32) << 16 | u64::from(qport),
        ..RelayConfig::default()
    };
    let bound = socket.local_addr().map_err(|e| format!("{listen}: {e}"))?;
    eprintln!("q3 relay: listening on {bound}, source {from}");
    let outcome = relay_udp::run(
        socket,
        config,
        source,
        duration,
        capture_seeds.is_some(),
        &mut |_, event| eprintln!("q3 relay: {event:?}"),
    )
    .map_err(|e| e.to_string())?;
    if let Some(dir) = capture_seeds {
        std::fs::create_dir_all(dir).map_err(|e| format!("{dir}: {e}"))?;
        for (i, seed) in outcome.captured.iter().enumerate() {
            let path = std::path::Path::new(dir).join(format!("spectator-{i}"));
            write_whole(&path.to_string_lossy(), seed)?;
        }
    }
    let json = serde_json::json!({
        "stats": outcome.stats,
        "source_snapshots": outcome.source_snapshots,
        "source_end": outcome.source_end,
    });
    let text = serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?;
    if let Some(path) = summary_json {
        write_whole(path, text.as_bytes())?;
    }
    println!("{text}");
    match outcome.source_end {
        Some(end) => {
            eprintln!("q3 relay: the source ended: {end}");
            Ok(ExitCode::from(1))
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("q3: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        CommandLine::Relay {
            listen,
            from,
            looping,
            seconds,
            max_spectators,
            hostname,
            basepaths,
            capture_seeds,
            summary_json,
            record,
        } => relay(
            &listen,
            &from,
            looping,
            seconds,
            max_spectators,
            hostname,
            &basepaths,
            capture_seeds.as_deref(),
            summary_json.as_deref(),
            record.as_deref(),
        ),
        CommandLine::Status { server } => {
            let address = resolve(&server)?;
            let status =
                udp::query_status(address, Duration::from_secs(1)).map_err(|e| e.to_string())?;
            println!("info:   {}", status.info);
            println!("status: {}", status.status);
            for player in &status.players {
                println!("player: {player}");
            }
            Ok(ExitCode::SUCCESS)
        }
        CommandLine::Connect {
            server,
            seconds,
            record,
            name,
            protocol,
            framing,
            basepaths,
            summary_json,
            capture,
            idle,
            commands,
        } => {
            let address = resolve(&server)?;
            let protocol_kind =
                Protocol::from_number(protocol).ok_or("--protocol must be 68 or 71")?;
            if !(seconds.is_finite() && seconds > 0.0 && seconds < 86_400.0) {
                return Err("--seconds must be between 0 and 86400".into());
            }
            let (qport, client_challenge) = run_nonces();
            let framing = match framing.as_str() {
                "ioq3" => Some(Framing::Ioq3),
                "legacy" => Some(Framing::Legacy),
                _ => None,
            };
            let paks = scan_paks(&basepaths)?;
            let config = LiveConfig {
                protocol: protocol_kind,
                framing,
                paks: paks.map(Arc::new),
                name,
                qport,
                client_challenge,
                movement: if idle {
                    Movement::Idle
                } else {
                    Movement::Wander
                },
                commands_on_enter: commands,
                ..LiveConfig::default()
            };
            let mut session = Session::new(server.clone(), protocol);
            // The demo is written under a temporary name beside its
            // destination and takes that name only once it is finished.
            let mut recording = None;
            if let Some(path) = &record {
                let file = pending_file(path)?;
                let writer = file.reopen().map_err(|e| format!("{path}: {e}"))?;
                session = session.record_to(Box::new(BufWriter::new(writer)));
                recording = Some((file, path));
            }
            let mut captured = capture.as_ref().map(|_| udp::Capture::default());
            let client = udp::run(
                address,
                config,
                Duration::from_secs_f64(seconds),
                captured.as_mut(),
                &mut |client, event, now| session.observe(client, event, now),
            )
            .map_err(|e| e.to_string())?;
            session.finish_recording().map_err(|e| e.to_string())?;
            // A session that never entered the game recorded nothing to
            // play: its temporary file is dropped, not kept.
            if let (Some((file, path)), true) = (recording, session.gamestates() > 0) {
                file.persist(path).map_err(|e| format!("{path}: {e}"))?;
            }
            if let (Some(path), Some(captured)) = (&capture, &mut captured) {
                captured.snapshots = session.marks().to_vec();
                let bytes = postcard::to_allocvec(captured).map_err(|e| e.to_string())?;
                write_whole(path, &bytes)?;
            }
            let summary = session.summary(&client);
            let json = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?;
            if let Some(path) = &summary_json {
                write_whole(path, json.as_bytes())?;
            }
            println!("{json}");
            let stats = client.stats();
            let chan = client.netchan_stats();
            let (sent, acked) = client.reliable_sequences();
            eprintln!(
                "datagrams {} sent / {} received; gamestates {}; pure answers {}; map_restarts {}; fragments {}; out-of-order {}; lost {}; \
                 moves {} delta / {} full; reliable commands {sent} sent, {acked} acknowledged; server command gaps {}",
                stats.datagrams_sent, stats.datagrams_received, stats.gamestates, stats.pure_answers, session.map_restarts(), chan.fragments,
                chan.out_of_order, chan.lost, stats.delta_moves, stats.full_moves, stats.server_command_gaps
            );
            match client.end() {
                Some(End::Quit) | None if session.gamestates() == 0 => {
                    eprintln!(
                        "q3: the session never entered the game: no gamestate from {server} in {seconds} s \
                         ({} datagrams received: {} unreadable, {} with a wrong challenge word)",
                        stats.datagrams_received, stats.bad_datagrams, chan.bad_challenge_word
                    );
                    Ok(ExitCode::from(1))
                }
                Some(End::Quit) | None => Ok(ExitCode::SUCCESS),
                Some(End::Error(e)) => {
                    eprintln!("q3: {e}");
                    Ok(ExitCode::from(match e {
                        LiveError::Decode { .. } => 3,
                        _ => 1,
                    }))
                }
            }
        }
    }
}

/// A temporary file beside `path`, for output that must appear whole or
/// not at all: it is deleted unless persisted to `path`.
fn pending_file(path: &str) -> Result<tempfile::NamedTempFile, String> {
    let destination = std::path::Path::new(path);
    let directory = match destination.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => std::path::Path::new("."),
    };
    tempfile::Builder::new()
        .prefix(".q3-")
        .suffix(".partial")
        .tempfile_in(directory)
        .map_err(|e| format!("{path}: {e}"))
}

/// Writes `bytes` to `path` whole or not at all.
fn write_whole(path: &str, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write as _;
    let mut file = pending_file(path)?;
    file.write_all(bytes)
        .and_then(|()| file.as_file().sync_all())
        .map_err(|e| format!("{path}: {e}"))?;
    file.persist(path).map_err(|e| format!("{path}: {e}"))?;
    Ok(())
}
