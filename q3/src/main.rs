//! `q3`: talk to a live Quake 3 server.
//!
//! * `q3 connect ADDR [--seconds N] [--record FILE] [--name NAME]
//!   [--protocol 68|71] [--framing auto|ioq3|legacy] [--basepath DIR]
//!   [--summary-json FILE] [--capture FILE]` joins the game (answering a
//!   pure server with the checksums of the paks under DIR), plays for N
//!   seconds and leaves; it
//!   exits non-zero if the server dropped it, a message did not decode, or
//!   it never received a gamestate.
//! * `q3 status ADDR` prints the `getinfo` and `getstatus` answers.

use std::fs::File;
use std::io::BufWriter;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use netq3_q3::live::netchan::Framing;
use netq3_q3::live::pak::{default_basepaths, PakIndex};
use netq3_q3::live::{udp, End, LiveConfig, LiveError, Movement, Protocol, Session};

#[derive(Parser)]
#[command(
    name = "q3",
    about = "Connect to a Quake 3 server, or ask for its status"
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
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let framing = match framing.as_str() {
                "ioq3" => Some(Framing::Ioq3),
                "legacy" => Some(Framing::Legacy),
                _ => None,
            };
            let paks = if basepaths.is_empty() {
                // A broken pak somewhere in the default folders should not
                // keep the client off servers that are not pure.
                match PakIndex::scan(&default_basepaths()) {
                    Ok(index) => Some(index),
                    Err(e) => {
                        eprintln!("q3: warning: {e}; pure servers cannot be answered");
                        None
                    }
                }
            } else {
                let dirs: Vec<PathBuf> = basepaths.iter().map(PathBuf::from).collect();
                if let Some(missing) = dirs.iter().find(|d| !d.is_dir()) {
                    return Err(format!("--basepath {}: not a folder", missing.display()));
                }
                Some(PakIndex::scan(&dirs).map_err(|e| e.to_string())?)
            };
            let config = LiveConfig {
                protocol: protocol_kind,
                framing,
                paks: paks.map(Arc::new),
                name,
                qport: (nanos & 0xffff) as u16,
                client_challenge: (nanos >> 1) as i32 & 0x7fff_ffff,
                movement: if idle {
                    Movement::Idle
                } else {
                    Movement::Wander
                },
                commands_on_enter: commands,
                ..LiveConfig::default()
            };
            let mut session = Session::new(server.clone(), protocol);
            if let Some(path) = &record {
                let file = File::create(path).map_err(|e| format!("{path}: {e}"))?;
                session = session.record_to(Box::new(BufWriter::new(file)));
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
            if let (Some(path), Some(captured)) = (&capture, &mut captured) {
                captured.snapshots = session.marks().to_vec();
                let bytes = postcard::to_allocvec(captured).map_err(|e| e.to_string())?;
                std::fs::write(path, bytes).map_err(|e| format!("{path}: {e}"))?;
            }
            let summary = session.summary(&client);
            let json = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?;
            if let Some(path) = &summary_json {
                std::fs::write(path, &json).map_err(|e| format!("{path}: {e}"))?;
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
