//! `arena bots`: bot clients in one process against a remote server
//! (`arena serve`), each on its own UDP socket with the link conditioner
//! in front of it, on the real clock.
//!
//! They join a tenth of a second apart, play until `--seconds` pass, a
//! signal arrives or the server ends the session, then leave cleanly. The
//! summary is the single-process match's per-client table and JSON (plus
//! `server_addr`); what only the server knows (its frames, what it sent)
//! is in `arena serve`'s own summary. A server that refuses the bots — a
//! schema or version mismatch, a full server — or never answers is an
//! error with the reason.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fields::Codec;
use netchan::Endpoint;
use serde::Serialize;
use session::DisconnectReason;

use crate::cli::BotsArgs;
use crate::client::{ClientPhase, GameClient};
use crate::config::MatchConfig;
use crate::error::Error;
use crate::game::{bot_config, derive};
use crate::protocol::{Command, EntityState, PlayerState};
use crate::server::PeerStatus;
use crate::shutdown::Shutdown;
use crate::summary::{client_table, ClientSummary, Reliable};
use crate::transport::{Network, TransportKind};

/// Time between two bots' joins.
const JOIN_SPACING: Duration = Duration::from_millis(100);
/// How long a bot keeps trying to connect before it gives up.
const CONNECT_FOR: Duration = Duration::from_secs(10);
/// Longest wait for the goodbyes at the end.
const LEAVE_LIMIT: Duration = Duration::from_secs(2);

/// What `arena bots` prints and writes to `--summary-json`: the match
/// summary's layout without the server's part, plus the server's address.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BotsSummary {
    /// The server they played on.
    pub server_addr: SocketAddr,
    /// Bots.
    pub clients: usize,
    /// Seconds played.
    pub seconds: f64,
    /// Codec name.
    pub codec: &'static str,
    /// Always `udp`.
    pub transport: &'static str,
    /// Seed.
    pub seed: u64,
    /// What ended the session: `time`, `SIGINT`, `SIGTERM` or `server`.
    pub ended_by: String,
    /// Each bot, in order.
    pub per_client: Vec<ClientSummary>,
    /// Broken invariants (empty: all held).
    pub violations: Vec<String>,
}

impl BotsSummary {
    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.violations.is_empty()
    }

    /// The JSON document.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The readable report.
    pub fn table(&self) -> String {
        let mut out = format!(
            "arena bots: {} bots on {}, {:.1} s, {} codec, seed {}, ended by {}\n",
            self.clients, self.server_addr, self.seconds, self.codec, self.seed, self.ended_by
        );
        out.push_str(&client_table(&self.per_client));
        if self.violations.is_empty() {
            out.push_str("invariants: all held\n");
        } else {
            for v in &self.violations {
                out.push_str(&format!("INVARIANT BROKEN: {v}\n"));
            }
        }
        out
    }
}

fn match_config(args: &BotsArgs) -> MatchConfig {
    let jitter = Duration::from_millis(args.jitter_ms);
    MatchConfig {
        clients: args.count,
        codec: Codec::from(args.codec),
        snaps: args.snaps,
        rate: args.rate,
        client_fps: args.client_fps,
        seed: args.seed,
        link: netchan::ConditionerConfig {
            loss: args.loss,
            latency: Duration::from_millis(args.latency_ms),
            jitter,
            ..netchan::ConditionerConfig::default()
        },
        transport: TransportKind::Udp,
        // The server drops an idle client after 5 s; the bots wait as long.
        timeout: Duration::from_secs(5),
        record: None,
        ..MatchConfig::default()
    }
}

/// The bots of one `arena bots` process.
pub struct Bots {
    network: Network,
    config: MatchConfig,
    server: SocketAddr,
    clients: Vec<GameClient>,
    epoch: Instant,
}

impl std::fmt::Debug for Bots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bots")
            .field("server", &self.server)
            .field("clients", &self.clients.len())
            .finish_non_exhaustive()
    }
}

impl Bots {
    /// Bots for `args`, none joined yet.
    pub fn new(args: &BotsArgs, now: Instant) -> Result<Bots, Error> {
        args.validate().map_err(Error::Config)?;
        Ok(Bots {
            network: Network::new(TransportKind::Udp)?,
            config: match_config(args),
            server: args.connect,
            clients: Vec::new(),
            epoch: now,
        })
    }

    fn join(&mut self, now: Instant) -> Result<(), Error> {
        let index = self.clients.len();
        // A loopback server is reached from a loopback socket; anything
        // else from every interface.
        let local: SocketAddr = if self.server.ip().is_loopback() {
            ([127, 0, 0, 1], 0).into()
        } else {
            ([0, 0, 0, 0], 0).into()
        };
        let (options, session) = bot_config(&self.config, index, CONNECT_FOR);
        let endpoint = session.endpoint::<EntityState, PlayerState, Command>();
        let mut net = self
            .network
            .bind_udp_at(local, Endpoint::new(endpoint, now))?;
        net.set_conditioner(
            self.config.link.clone(),
            derive(self.config.seed, 100 + index as u64),
        );
        let mut client = GameClient::new(options, session, net, self.server, self.epoch);
        client.connect(now);
        tracing::debug!("{} connecting to {}", client.name(), self.server);
        self.clients.push(client);
        Ok(())
    }

    fn pump(&mut self, now: Instant) {
        for _ in 0..16 {
            let moved: usize = self.clients.iter_mut().map(|c| c.pump(now)).sum();
            if moved == 0 {
                break;
            }
        }
    }

    /// The first refusal among the bots, as an error.
    fn refusal(&self) -> Option<Error> {
        self.clients
            .iter()
            .find_map(|c| match c.disconnect_reason() {
                Some(
                    reason @ (DisconnectReason::Rejected(_)
                    | DisconnectReason::SchemaMismatch
                    | DisconnectReason::VersionMismatch
                    | DisconnectReason::ServerFull),
                ) => Some(Error::Refused(format!(
                    "{} rejected {}: {reason:?} ({reason})",
                    self.server,
                    c.name()
                ))),
                Some(DisconnectReason::ConnectFailed) => Some(Error::Refused(format!(
                    "no answer from {} ({} gave up connecting)",
                    self.server,
                    c.name()
                ))),
                _ => None,
            })
    }

    /// Plays until `seconds` pass, `shutdown` is requested or the server
    /// ends every session; then leaves and summarizes.
    pub fn run(&mut self, seconds: Option<f64>, shutdown: &Shutdown) -> Result<BotsSummary, Error> {
        let end = seconds.map(|s| self.epoch + Duration::from_secs_f64(s));
        let ended_by = loop {
            let now = Instant::now();
            if let Some(name) = shutdown.signal_name() {
                break name.to_owned();
            }
            if end.is_some_and(|e| now >= e) {
                break "time".to_owned();
            }
            let due = self.clients.len() as u32;
            if self.clients.len() < self.config.clients && now >= self.epoch + JOIN_SPACING * due {
                self.join(now)?;
            }
            self.pump(now);
            for client in &mut self.clients {
                client.frame(now, true);
            }
            self.pump(now);
            if let Some(error) = self.refusal() {
                return Err(error);
            }
            let all_joined = self.clients.len() == self.config.clients;
            if all_joined && self.clients.iter().all(|c| !c.is_active()) {
                break "server".to_owned();
            }
            let mut wake = now + Duration::from_millis(20);
            if !all_joined {
                wake = wake.min(self.epoch + JOIN_SPACING * self.clients.len() as u32);
            }
            for c in self.clients.iter().filter(|c| c.is_active()) {
                if c.phase() == ClientPhase::Playing {
                    wake = wake.min(c.next_frame());
                }
                if let Some(t) = c.next_wakeup() {
                    wake = wake.min(t);
                }
            }
            let wait = wake.saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                self.network.wait(wait)?;
            }
        };
        let now = Instant::now();
        let played = now.saturating_duration_since(self.epoch);
        for client in &mut self.clients {
            if matches!(
                client.phase(),
                ClientPhase::Playing | ClientPhase::Connecting
            ) {
                client.leave(now);
            }
        }
        let leave_end = now + LEAVE_LIMIT;
        while self.clients.iter().any(GameClient::is_active) && Instant::now() < leave_end {
            self.pump(Instant::now());
            self.network.wait(Duration::from_millis(5))?;
        }
        Ok(self.summary(played, ended_by))
    }

    fn summary(&self, played: Duration, ended_by: String) -> BotsSummary {
        let mut violations = Vec::new();
        let mut per_client = Vec::new();
        for (id, client) in self.clients.iter().enumerate() {
            let status = match client.disconnect_reason() {
                None | Some(DisconnectReason::Left) => PeerStatus::Left,
                Some(DisconnectReason::ServerShutdown) => PeerStatus::Shutdown,
                Some(DisconnectReason::TimedOut) => PeerStatus::TimedOut,
                Some(_) => PeerStatus::Dropped,
            };
            if !matches!(status, PeerStatus::Left | PeerStatus::Shutdown) {
                violations.push(format!(
                    "{}: disconnected unexpectedly ({:?})",
                    client.name(),
                    client.disconnect_reason()
                ));
            }
            if client.connected_at().is_none() {
                violations.push(format!("{}: never connected", client.name()));
            }
            let delivered = client.stats().reliable_delivered;
            // The server numbers its guaranteed messages: a gap would show as
            // out of order. What it queued but never sent is in its summary.
            let reliable = Reliable {
                sent: delivered,
                delivered,
                count_lost: true,
                upstream_out_of_order: 0,
            };
            let summary = ClientSummary::of(id, client, status, reliable);
            summary.check(client, &mut violations);
            if client.meter().oversized > 0 {
                violations.push(format!(
                    "{}: {} datagrams over {} bytes",
                    client.name(),
                    client.meter().oversized,
                    netchan::MAX_DATAGRAM
                ));
            }
            per_client.push(summary);
        }
        BotsSummary {
            server_addr: self.server,
            clients: self.clients.len(),
            seconds: played.as_secs_f64(),
            codec: self.config.codec.name(),
            transport: TransportKind::Udp.name(),
            seed: self.config.seed,
            ended_by,
            per_client,
            violations,
        }
    }
}
