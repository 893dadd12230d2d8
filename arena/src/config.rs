//! The command line and the match configuration it becomes.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use fields::Codec;
use netchan::ConditionerConfig;

use crate::transport::TransportKind;
use crate::world::MAX_PLAYERS;

/// Wire codec, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CodecArg {
    /// Quake 3 protocol 68, bit for bit.
    Q3,
    /// The library's compact codec.
    Native,
}

impl From<CodecArg> for Codec {
    fn from(arg: CodecArg) -> Codec {
        match arg {
            CodecArg::Q3 => Codec::Q3,
            CodecArg::Native => Codec::Native,
        }
    }
}

/// Transport, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TransportArg {
    /// Real UDP sockets on 127.0.0.1.
    Udp,
    /// The in-process link.
    Local,
}

/// Which multiplayer model runs the match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ModelKind {
    /// Quake 3's model: the server simulates and sends delta snapshots.
    #[default]
    Snapshot,
    /// Age of Empires' deterministic lockstep: every bot simulates, only
    /// commands travel.
    Lockstep,
}

/// On or off, as a command line says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    /// On.
    On,
    /// Off.
    Off,
}

impl Switch {
    /// Whether it is on.
    pub fn on(self) -> bool {
        self == Switch::On
    }
}

/// Which clock drives the match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ClockKind {
    /// Real time: ticks paced by the wall clock.
    #[default]
    Real,
    /// Simulated time: the loop jumps to the next deadline (as fast as the
    /// machine goes; what the tests use).
    Sim,
}

/// A headless arena shooter: one server and bot clients over real UDP on
/// 127.0.0.1, through a seeded link conditioner.
#[derive(Debug, Clone, Parser)]
#[command(name = "arena", version, about)]
pub struct Args {
    /// Bot clients (1..=64).
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// Match length in seconds.
    #[arg(long, default_value_t = 20.0)]
    pub seconds: f64,
    /// Server ticks per second (Quake 3's sv_fps).
    #[arg(long, default_value_t = 20)]
    pub tick_hz: u32,
    /// Snapshots per second each client asks for.
    #[arg(long, default_value_t = 20)]
    pub snaps: u32,
    /// Bytes per second each client can receive.
    #[arg(long, default_value_t = 25_000)]
    pub rate: u32,
    /// Delta codec.
    #[arg(long, value_enum, default_value_t = CodecArg::Native)]
    pub codec: CodecArg,
    /// Datagram loss probability, each direction.
    #[arg(long, default_value_t = 0.10)]
    pub loss: f64,
    /// One-way latency added to every datagram, ms.
    #[arg(long, default_value_t = 60)]
    pub latency_ms: u64,
    /// Extra random one-way delay, up to this many ms.
    #[arg(long, default_value_t = 10)]
    pub jitter_ms: u64,
    /// Probability of delivering a datagram twice.
    #[arg(long, default_value_t = 0.0)]
    pub dup: f64,
    /// Probability of holding a datagram back (reordering it).
    #[arg(long, default_value_t = 0.0)]
    pub reorder: f64,
    /// Seed of the game, the bots and the link conditioner.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Record the spectator view to this demo file.
    #[arg(long, default_value = "arena.demo")]
    pub record: PathBuf,
    /// Do not record a demo.
    #[arg(long)]
    pub no_record: bool,
    /// Write the summary as JSON to this file.
    #[arg(long)]
    pub summary_json: Option<PathBuf>,
    /// Datagram transport.
    #[arg(long, value_enum, default_value_t = TransportArg::Udp)]
    pub transport: TransportArg,
    /// Clock: real time, or simulated (runs as fast as it can).
    #[arg(long, value_enum, default_value_t = ClockKind::Real)]
    pub clock: ClockKind,
    /// Client frames (commands) per second.
    #[arg(long, default_value_t = 60)]
    pub client_fps: u32,
    /// Multiplayer model.
    #[arg(long, value_enum, default_value_t = ModelKind::Snapshot)]
    pub model: ModelKind,
    /// Lockstep: perturb one participant's state after this turn (the run
    /// must detect it within one sync interval and fail naming the turn).
    #[arg(long, value_name = "TURN")]
    pub inject_desync: Option<u32>,
    /// Lag compensation: judge rail shots against the players as the
    /// shooter's client drew them.
    #[arg(long, value_enum, default_value_t = Switch::On)]
    pub lag_comp: Switch,
    /// Lag compensation reaches at most this far back, ms (at most 1000).
    #[arg(long, default_value_t = DEFAULT_MAX_REWIND_MS)]
    pub max_rewind_ms: u32,
}

/// `--max-rewind-ms`'s default: 300 ms, above the library's 200. An arena
/// client's view is about 2 × one-way latency + 50 ms (it draws one
/// snapshot interval behind its estimate of the server clock, which itself
/// trails by the one-way latency) + up to 50 ms waiting for a packet (20 a
/// second) − the age of the server's newest frame: about 250 ms at 75 ms
/// one way, which 200 ms would cut short for most shots.
pub const DEFAULT_MAX_REWIND_MS: u32 = 300;

/// One bot's part in the match.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BotPlan {
    /// When it connects, from the start of the match.
    pub join_at: Duration,
    /// When it disconnects cleanly, if before the end.
    pub leave_at: Option<Duration>,
    /// When it goes silent (stops sending, keeps its socket).
    pub silent_at: Option<Duration>,
}

/// Everything a match needs to know.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchConfig {
    /// Bot clients.
    pub clients: usize,
    /// Match length.
    pub duration: Duration,
    /// Server ticks per second.
    pub tick_hz: u32,
    /// Snapshots per second each client asks for.
    pub snaps: u32,
    /// Bytes per second each client can receive.
    pub rate: u32,
    /// Delta codec.
    pub codec: Codec,
    /// What the link conditioner does to every datagram, both directions.
    pub link: ConditionerConfig,
    /// Seed of everything random.
    pub seed: u64,
    /// Demo file to record, if any.
    pub record: Option<PathBuf>,
    /// JSON summary file, if any.
    pub summary_json: Option<PathBuf>,
    /// Datagram transport.
    pub transport: TransportKind,
    /// Which clock drives the loop.
    pub clock: ClockKind,
    /// Client frames per second.
    pub client_fps: u32,
    /// Idle time after which either end drops a connection.
    pub timeout: Duration,
    /// A sync checksum every this many snapshots.
    pub checksum_interval: u32,
    /// A recording keyframe every this many ms.
    pub keyframe_ms: u32,
    /// Longest the end-of-match drain waits for guaranteed messages.
    pub drain_limit: Duration,
    /// Multiplayer model.
    pub model: ModelKind,
    /// Lockstep: the turn after which one participant's state is perturbed.
    pub inject_desync: Option<u32>,
    /// Lag compensation for rail shots.
    pub lag_comp: bool,
    /// How far back lag compensation reaches, ms.
    pub max_rewind_ms: u32,
}

impl Default for MatchConfig {
    /// The default match: 8 bots, 20 s, 10% loss, 60 ms latency, 10 ms
    /// jitter, recording to `arena.demo`.
    fn default() -> Self {
        MatchConfig::from_args(&Args::parse_from(["arena"]))
    }
}

impl MatchConfig {
    /// The configuration the command line asks for.
    pub fn from_args(args: &Args) -> MatchConfig {
        let duration = Duration::from_secs_f64(args.seconds.clamp(0.0, 86_400.0));
        let jitter = Duration::from_millis(args.jitter_ms);
        MatchConfig {
            clients: args.clients,
            duration,
            tick_hz: args.tick_hz,
            snaps: args.snaps,
            rate: args.rate,
            codec: args.codec.into(),
            link: ConditionerConfig {
                loss: args.loss,
                latency: Duration::from_millis(args.latency_ms),
                jitter,
                duplicate: args.dup,
                reorder: args.reorder,
                // A reordered datagram is held back past the ones after it.
                reorder_delay: (jitter * 2).max(Duration::from_millis(20)),
                ..ConditionerConfig::default()
            },
            seed: args.seed,
            record: (!args.no_record).then(|| args.record.clone()),
            summary_json: args.summary_json.clone(),
            transport: match args.transport {
                TransportArg::Udp => TransportKind::Udp,
                TransportArg::Local => TransportKind::Local,
            },
            clock: args.clock,
            client_fps: args.client_fps,
            timeout: default_timeout(duration),
            checksum_interval: 8,
            keyframe_ms: 5000,
            drain_limit: Duration::from_secs(5),
            model: args.model,
            inject_desync: args.inject_desync,
            lag_comp: args.lag_comp.on(),
            max_rewind_ms: args.max_rewind_ms,
        }
    }

    /// A short match on simulated time for tests: `seconds` long, 4 bots,
    /// 10% loss, 60 ms latency, 10 ms jitter, no recording.
    pub fn short(transport: TransportKind, seconds: f64, seed: u64) -> MatchConfig {
        let mut config = MatchConfig::from_args(&Args::parse_from(["arena", "--clients", "4"]));
        config.duration = Duration::from_secs_f64(seconds);
        config.timeout = default_timeout(config.duration);
        config.transport = transport;
        config.clock = ClockKind::Sim;
        config.seed = seed;
        config.record = None;
        config
    }

    /// Checks the values, naming the first one out of range.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=MAX_PLAYERS).contains(&self.clients) {
            return Err(format!("--clients must be 1..={MAX_PLAYERS}"));
        }
        if self.duration < Duration::from_millis(500) {
            return Err("--seconds must be at least 0.5".into());
        }
        if !(1..=1000).contains(&self.tick_hz) {
            return Err("--tick-hz must be 1..=1000".into());
        }
        if !(1..=1000).contains(&self.snaps) {
            return Err("--snaps must be 1..=1000".into());
        }
        if !(1000..=10_000_000).contains(&self.rate) {
            return Err("--rate must be 1000..=10000000 bytes/s".into());
        }
        for (name, p) in [
            ("--loss", self.link.loss),
            ("--dup", self.link.duplicate),
            ("--reorder", self.link.reorder),
        ] {
            if !(0.0..0.9).contains(&p) {
                return Err(format!("{name} must be in 0..0.9"));
            }
        }
        if !(1..=250).contains(&self.client_fps) {
            return Err("--client-fps must be 1..=250".into());
        }
        if self.inject_desync.is_some() && self.model != ModelKind::Lockstep {
            return Err("--inject-desync needs --model lockstep".into());
        }
        if self.max_rewind_ms > snapshot::rewind::REWIND_LIMIT_MS {
            return Err(format!(
                "--max-rewind-ms must be at most {}",
                snapshot::rewind::REWIND_LIMIT_MS
            ));
        }
        Ok(())
    }

    /// Who joins, leaves and goes silent when. Bots join staggered over the
    /// first seconds; with two or more, bot 1 goes silent a little before
    /// half time (the server must time it out); with three or more the last
    /// bot leaves cleanly at 70%, with six or more the one before it at 80%.
    pub fn schedule(&self) -> Vec<BotPlan> {
        let n = self.clients;
        let spread = self.duration.mul_f64(0.2).min(Duration::from_secs(2));
        (0..n)
            .map(|i| BotPlan {
                join_at: spread.mul_f64(i as f64 / n as f64),
                silent_at: (n >= 2 && i == 1).then(|| self.duration.mul_f64(0.45)),
                leave_at: if n >= 3 && i == n - 1 {
                    Some(self.duration.mul_f64(0.7))
                } else if n >= 6 && i == n - 2 {
                    Some(self.duration.mul_f64(0.8))
                } else {
                    None
                },
            })
            .collect()
    }

    /// Milliseconds per server tick.
    pub fn tick_interval(&self) -> Duration {
        Duration::from_millis((1000 / self.tick_hz.max(1)).max(1) as u64)
    }
}

/// A connection idle timeout that fits the match: a fifth of it, between
/// 0.5 and 3 seconds, so the silent bot is timed out well before the end.
fn default_timeout(duration: Duration) -> Duration {
    duration
        .mul_f64(0.2)
        .clamp(Duration::from_millis(500), Duration::from_secs(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_match_is_the_issues() {
        let config = MatchConfig::default();
        assert_eq!(config.clients, 8);
        assert_eq!(config.duration, Duration::from_secs(20));
        assert_eq!(config.tick_hz, 20);
        assert_eq!(config.codec, Codec::Native);
        assert_eq!(config.link.loss, 0.1);
        assert_eq!(config.link.latency, Duration::from_millis(60));
        assert_eq!(config.link.jitter, Duration::from_millis(10));
        assert_eq!(config.record, Some(PathBuf::from("arena.demo")));
        assert_eq!(config.transport, TransportKind::Udp);
        assert!(config.validate().is_ok());
    }

    #[test]
    fn flags_are_parsed_and_checked() {
        let args = Args::parse_from([
            "arena",
            "--clients",
            "16",
            "--codec",
            "q3",
            "--transport",
            "local",
            "--loss",
            "0.2",
            "--no-record",
        ]);
        let config = MatchConfig::from_args(&args);
        assert_eq!(config.clients, 16);
        assert_eq!(config.codec, Codec::Q3);
        assert_eq!(config.transport, TransportKind::Local);
        assert_eq!(config.record, None);
        let mut bad = config.clone();
        bad.clients = 65;
        assert!(bad.validate().is_err());
        let mut bad = config;
        bad.link.loss = 1.0;
        assert!(bad.validate().is_err());
    }

    #[test]
    fn the_schedule_staggers_joins_and_times_out_before_the_end() {
        let config = MatchConfig::default();
        let plan = config.schedule();
        assert_eq!(plan.len(), 8);
        assert!(plan.windows(2).all(|w| w[0].join_at < w[1].join_at));
        assert!(plan[7].join_at < Duration::from_secs(2));
        let silent = plan[1].silent_at.unwrap();
        assert!(silent + config.timeout < config.duration);
        assert_eq!(plan.iter().filter(|p| p.leave_at.is_some()).count(), 2);
        assert!(
            MatchConfig::short(TransportKind::Local, 3.0, 1).schedule()[1]
                .silent_at
                .is_some_and(
                    |s| s + default_timeout(Duration::from_secs(3)) < Duration::from_secs(3)
                )
        );
    }
}
