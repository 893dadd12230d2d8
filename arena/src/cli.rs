//! The command line: the single-process match's flags ([`Args`]) when no
//! subcommand is given, or one of `serve`, `bots`, `status`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::config::{Args, CodecArg, ModelKind, Switch, DEFAULT_MAX_REWIND_MS};
use crate::world::MAX_PLAYERS;

/// `arena [FLAGS]` plays one match in one process; `arena serve`, `arena
/// bots` and `arena status` split it into a dedicated server and remote
/// clients.
#[derive(Debug, Clone, Parser)]
#[command(name = "arena", version, about, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// A dedicated server or remote bots; none plays the single-process match.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The single-process match's flags.
    #[command(flatten)]
    pub local: Args,
}

/// The subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Run a dedicated server until --seconds pass or SIGINT/SIGTERM.
    Serve(ServeArgs),
    /// Run bot clients in this process against a remote server.
    Bots(BotsArgs),
    /// Ask a server for its status (connectionless: map, clients, uptime, tick rate).
    Status(StatusArgs),
}

/// `arena serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// UDP address to listen on (e.g. 127.0.0.1:27960, 0.0.0.0:27960).
    #[arg(long)]
    pub bind: SocketAddr,
    /// Stop after this many seconds (default: run until a signal).
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Most clients at once.
    #[arg(long, default_value_t = 16)]
    pub max_clients: usize,
    /// Record the spectator view to this demo file.
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Write the server's summary as JSON to this file at exit.
    #[arg(long)]
    pub summary_json: Option<PathBuf>,
    /// Serve Prometheus metrics at http://ADDR/metrics.
    #[arg(long)]
    pub metrics_bind: Option<SocketAddr>,
    /// Server ticks per second.
    #[arg(long, default_value_t = 20)]
    pub tick_hz: u32,
    /// Delta codec (clients must use the same).
    #[arg(long, value_enum, default_value_t = CodecArg::Native)]
    pub codec: CodecArg,
    /// Seed of the world.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Multiplayer model: snapshot deltas, or a lockstep relay host (which
    /// also runs and records a replica of the world).
    #[arg(long, value_enum, default_value_t = ModelKind::Snapshot)]
    pub model: ModelKind,
    /// Lockstep: the session starts once this many participants connected.
    #[arg(long, default_value_t = 2)]
    pub participants: usize,
    /// Lag compensation for rail shots.
    #[arg(long, value_enum, default_value_t = Switch::On)]
    pub lag_comp: Switch,
    /// Lag compensation reaches at most this far back, ms (at most 1000).
    #[arg(long, default_value_t = DEFAULT_MAX_REWIND_MS)]
    pub max_rewind_ms: u32,
}

/// `arena bots`.
#[derive(Debug, Clone, clap::Args)]
pub struct BotsArgs {
    /// The server's UDP address.
    #[arg(long)]
    pub connect: SocketAddr,
    /// Bot clients in this process.
    #[arg(long, default_value_t = 4)]
    pub count: usize,
    /// Play this many seconds, then leave cleanly (default: until a signal
    /// or the server ends the match).
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Datagram loss probability, each direction (on the bots' sockets).
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// One-way latency added to every datagram, ms.
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u64,
    /// Extra random one-way delay, up to this many ms.
    #[arg(long, default_value_t = 0)]
    pub jitter_ms: u64,
    /// Seed of the bots and their link conditioners.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the summary as JSON to this file.
    #[arg(long)]
    pub summary_json: Option<PathBuf>,
    /// Delta codec (must be the server's).
    #[arg(long, value_enum, default_value_t = CodecArg::Native)]
    pub codec: CodecArg,
    /// Snapshots per second each bot asks for.
    #[arg(long, default_value_t = 20)]
    pub snaps: u32,
    /// Bytes per second each bot can receive.
    #[arg(long, default_value_t = 25_000)]
    pub rate: u32,
    /// Client frames (commands) per second.
    #[arg(long, default_value_t = 60)]
    pub client_fps: u32,
    /// Multiplayer model (must be the server's): snapshot clients, or
    /// lockstep participants that each run the world.
    #[arg(long, value_enum, default_value_t = ModelKind::Snapshot)]
    pub model: ModelKind,
}

/// `arena status`.
#[derive(Debug, Clone, clap::Args)]
pub struct StatusArgs {
    /// The server's UDP address.
    pub addr: SocketAddr,
    /// Print JSON instead of a line.
    #[arg(long)]
    pub json: bool,
    /// Seconds to wait for each of the three attempts.
    #[arg(long, default_value_t = 1.0)]
    pub wait: f64,
}

impl ServeArgs {
    /// Checks the values, naming the first one out of range.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=MAX_PLAYERS).contains(&self.max_clients) {
            return Err(format!("--max-clients must be 1..={MAX_PLAYERS}"));
        }
        if self
            .seconds
            .is_some_and(|s| !(0.1..=86_400.0 * 365.0).contains(&s))
        {
            return Err("--seconds must be at least 0.1".into());
        }
        if !(1..=1000).contains(&self.tick_hz) {
            return Err("--tick-hz must be 1..=1000".into());
        }
        if self.max_rewind_ms > snapshot::rewind::REWIND_LIMIT_MS {
            return Err(format!(
                "--max-rewind-ms must be at most {}",
                snapshot::rewind::REWIND_LIMIT_MS
            ));
        }
        if self.model == ModelKind::Lockstep && !(1..=MAX_PLAYERS).contains(&self.participants) {
            return Err(format!("--participants must be 1..={MAX_PLAYERS}"));
        }
        Ok(())
    }
}

impl BotsArgs {
    /// Checks the values, naming the first one out of range.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=MAX_PLAYERS).contains(&self.count) {
            return Err(format!("--count must be 1..={MAX_PLAYERS}"));
        }
        if self
            .seconds
            .is_some_and(|s| !(0.1..=86_400.0 * 365.0).contains(&s))
        {
            return Err("--seconds must be at least 0.1".into());
        }
        if !(0.0..0.9).contains(&self.loss) {
            return Err("--loss must be in 0..0.9".into());
        }
        if !(1..=1000).contains(&self.snaps) {
            return Err("--snaps must be 1..=1000".into());
        }
        if !(1000..=10_000_000).contains(&self.rate) {
            return Err("--rate must be 1000..=10000000 bytes/s".into());
        }
        if !(1..=250).contains(&self.client_fps) {
            return Err("--client-fps must be 1..=250".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_subcommand_is_the_local_match() {
        let cli = Cli::parse_from(["arena", "--clients", "3"]);
        assert!(cli.command.is_none());
        assert_eq!(cli.local.clients, 3);
    }

    #[test]
    fn subcommands_parse() {
        let cli = Cli::parse_from([
            "arena",
            "serve",
            "--bind",
            "127.0.0.1:27960",
            "--seconds",
            "5",
            "--metrics-bind",
            "127.0.0.1:9100",
        ]);
        let Some(Command::Serve(serve)) = cli.command else {
            panic!("not serve");
        };
        assert_eq!(serve.bind.port(), 27960);
        assert_eq!(serve.seconds, Some(5.0));
        assert_eq!(serve.max_clients, 16);
        assert_eq!(serve.model, ModelKind::Snapshot);
        assert!(serve.validate().is_ok());
        let cli = Cli::parse_from([
            "arena",
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--model",
            "lockstep",
            "--participants",
            "4",
        ]);
        let Some(Command::Serve(lockstep)) = cli.command else {
            panic!("not serve");
        };
        assert_eq!(
            (lockstep.model, lockstep.participants),
            (ModelKind::Lockstep, 4)
        );
        assert!(lockstep.validate().is_ok());
        assert!(ServeArgs {
            participants: 0,
            ..lockstep
        }
        .validate()
        .is_err());
        let cli = Cli::parse_from([
            "arena",
            "bots",
            "--connect",
            "127.0.0.1:27960",
            "--count",
            "3",
            "--loss",
            "0.1",
        ]);
        let Some(Command::Bots(bots)) = cli.command else {
            panic!("not bots");
        };
        assert_eq!((bots.count, bots.loss), (3, 0.1));
        assert!(bots.validate().is_ok());
        let cli = Cli::parse_from(["arena", "status", "127.0.0.1:27960", "--json"]);
        assert!(matches!(
            cli.command,
            Some(Command::Status(StatusArgs { json: true, .. }))
        ));
        // Local-match flags do not mix with a subcommand.
        assert!(Cli::try_parse_from(["arena", "--clients", "3", "status", "127.0.0.1:1"]).is_err());
        let mut bad = BotsArgs { count: 0, ..bots };
        assert!(bad.validate().is_err());
        bad.count = 1;
        bad.loss = 0.95;
        assert!(bad.validate().is_err());
    }
}
