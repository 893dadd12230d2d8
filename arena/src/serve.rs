//! `arena serve`: a dedicated server on a UDP address, for remote clients
//! (`arena bots`), on the real clock until `--seconds` pass or SIGINT /
//! SIGTERM arrives.
//!
//! Besides the game it keeps three windows open: the connectionless status
//! query (netchan answers it from the payload set here every quarter
//! second), Prometheus metrics at `/metrics` (`--metrics-bind`), and logs
//! (`tracing`): connects, disconnects with their reasons, and rejected
//! datagrams summed once a second. At the end it ends the match, waits
//! (bounded) for guaranteed messages in flight, tells every client it shuts
//! down, finalizes the demo, and writes its summary.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fields::Codec;
use netchan::{ConnectionConfig, Endpoint};
use serde::Serialize;

use crate::cli::ServeArgs;
use crate::config::MatchConfig;
use crate::error::Error;
use crate::http::MetricsServer;
use crate::logging::{log_rejected, RejectLog};
use crate::metrics::{ServerMetrics, Totals};
use crate::output::PendingFile;
use crate::physics::Map;
use crate::protocol::{schema_fingerprint, PROTOCOL_VERSION};
use crate::recording;
use crate::server::{GameServer, PeerReport, PeerStatus, ServerOptions};
use crate::server_status::ServerStatus;
use crate::shutdown::Shutdown;
use crate::status::StatusLine;

/// How often the status payload, the metrics gauges and the logs catch up.
const HOUSEKEEPING: Duration = Duration::from_millis(250);
/// Longest wait for guaranteed messages in flight at shutdown.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);
/// Longest wait for the goodbyes to leave the socket.
const GOODBYE_LIMIT: Duration = Duration::from_millis(500);
/// Idle time after which a client is dropped.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(5);

/// One client as the dedicated server saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServedClient {
    /// Its name (from its hello).
    pub name: String,
    /// Its netchan client id.
    pub client_id: u32,
    /// How its session ended.
    pub status: PeerStatus,
    /// Commands applied.
    pub commands: u64,
    /// Snapshots built for it.
    pub snapshots: u64,
    /// Of which full updates.
    pub full_snapshots: u64,
    /// Guaranteed messages queued to it.
    pub reliable_sent: u64,
    /// Its guaranteed messages received out of sequence (must stay 0).
    pub upstream_out_of_order: u64,
    /// Rail shots it fired.
    pub rail_shots: u64,
    /// Of which hit a player.
    pub rail_hits: u64,
}

/// What `arena serve` writes to `--summary-json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServeSummary {
    /// The address it listened on.
    pub bind: SocketAddr,
    /// Seconds it ran.
    pub seconds: f64,
    /// What ended it: `time`, `SIGINT` or `SIGTERM`.
    pub stopped_by: String,
    /// Codec name.
    pub codec: &'static str,
    /// Ticks per second.
    pub tick_hz: u32,
    /// Ticks run.
    pub frames: u64,
    /// Median tick time, ms.
    pub frame_ms_p50: f64,
    /// 99th-percentile tick time, ms.
    pub frame_ms_p99: f64,
    /// Connections timed out.
    pub timeouts: u64,
    /// Connections refused (no free slot).
    pub refused: u64,
    /// Bytes sent by the server socket.
    pub bytes_sent: u64,
    /// Bytes received.
    pub bytes_received: u64,
    /// Largest datagram sent.
    pub max_datagram_bytes: usize,
    /// Datagrams dropped before reaching the game.
    pub rejected_datagrams: u64,
    /// Status queries answered.
    pub status_answered: u64,
    /// Snapshots recorded to the demo.
    pub recorded_snapshots: u64,
    /// Whether every guaranteed message was acknowledged before the goodbyes.
    pub drain_complete: bool,
    /// Whether rail shots were lag compensated.
    pub lag_comp: bool,
    /// Median of how far back rail shots were judged, ms.
    pub rewind_ms_p50: f64,
    /// Furthest a rail shot was judged back, ms.
    pub rewind_ms_max: f64,
    /// Every client that connected.
    pub clients: Vec<ServedClient>,
}

/// A dedicated server, stepped by [`Dedicated::run`].
pub struct Dedicated {
    network: crate::transport::Network,
    server: GameServer,
    args: ServeArgs,
    metrics: ServerMetrics,
    metrics_http: Option<MetricsServer>,
    reject_log: RejectLog,
    seen: BTreeMap<u32, PeerStatus>,
    timeouts_seen: u64,
    snapshots_seen: BTreeMap<u32, (u64, u64, u64)>,
    started: Instant,
    status_line: Option<StatusLine>,
    next_tick: Instant,
    next_housekeeping: Instant,
    drain_complete: bool,
    /// The demo file, named only once the recording finished.
    recording: Option<PendingFile>,
}

impl std::fmt::Debug for Dedicated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dedicated")
            .field("bind", &self.local_addr())
            .finish_non_exhaustive()
    }
}

fn match_config(args: &ServeArgs) -> MatchConfig {
    let mut config = MatchConfig {
        clients: args.max_clients,
        tick_hz: args.tick_hz,
        codec: Codec::from(args.codec),
        seed: args.seed,
        record: args.record.clone(),
        ..MatchConfig::default()
    };
    // The server's own sockets are unconditioned: loss belongs to the link.
    config.link = netchan::ConditionerConfig::default();
    config
}

impl Dedicated {
    /// Binds the server (and the metrics responder) at `now`.
    pub fn bind(args: &ServeArgs, now: Instant) -> Result<Dedicated, Error> {
        args.validate().map_err(Error::Config)?;
        let config = match_config(args);
        let mut network = crate::transport::Network::new(crate::transport::TransportKind::Udp)?;
        let options = ServerOptions {
            codec: config.codec,
            tick_hz: config.tick_hz,
            checksum_interval: config.checksum_interval,
            seed: config.seed,
            keyframe_ms: config.keyframe_ms,
            connection: ConnectionConfig {
                idle_timeout: CLIENT_TIMEOUT,
                ..ConnectionConfig::default()
            },
            lag_comp: args.lag_comp.on(),
            max_rewind_ms: args.max_rewind_ms,
        };
        let mut endpoint = options.endpoint_config();
        // The session has a slot for every player the world holds; netchan
        // turns away connections beyond --max-clients with "server full".
        if let Some(server) = endpoint.server.as_mut() {
            server.max_clients = args.max_clients;
        }
        let net = network.bind_udp_at(args.bind, Endpoint::new(endpoint, now))?;
        let (demo, recording) = recording::open(&config)?.unzip();
        let server = GameServer::new(net, options, demo)?;
        let metrics = ServerMetrics::new();
        let metrics_http = match args.metrics_bind {
            Some(addr) => Some(MetricsServer::spawn(addr, metrics.registry())?),
            None => None,
        };
        let mut dedicated = Dedicated {
            network,
            server,
            args: args.clone(),
            metrics,
            metrics_http,
            reject_log: RejectLog::new(Duration::from_secs(1)),
            seen: BTreeMap::new(),
            timeouts_seen: 0,
            snapshots_seen: BTreeMap::new(),
            started: now,
            status_line: None,
            next_tick: now + config.tick_interval(),
            next_housekeeping: now,
            drain_complete: false,
            recording,
        };
        dedicated.housekeeping(now);
        Ok(dedicated)
    }

    /// Shows a live status line on stdout (a terminal is assumed).
    pub fn enable_status(&mut self) {
        self.status_line = Some(StatusLine::new(self.started));
    }

    /// The UDP address clients connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.server.net().local_addr()
    }

    /// The metrics responder's address, if it runs.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_http.as_ref().map(MetricsServer::local_addr)
    }

    /// The game server.
    pub fn server(&self) -> &GameServer {
        &self.server
    }

    fn connected(&self) -> usize {
        self.server
            .reports()
            .values()
            .filter(|r| r.status == PeerStatus::Connected)
            .count()
    }

    /// Runs until `--seconds` pass or `shutdown` is requested, then shuts
    /// down gracefully and returns the summary.
    pub fn run(&mut self, shutdown: &Shutdown) -> Result<ServeSummary, Error> {
        let end = self
            .args
            .seconds
            .map(|s| self.started + Duration::from_secs_f64(s));
        let interval = match_config(&self.args).tick_interval();
        loop {
            let now = Instant::now();
            if shutdown.requested() || end.is_some_and(|e| now >= e) {
                break;
            }
            self.server.pump(now)?;
            // Ticks due; after a long stall, skip ahead rather than burst.
            let mut ran = 0;
            while now >= self.next_tick && ran < 5 {
                self.server.tick()?;
                self.next_tick += interval;
                ran += 1;
            }
            if now >= self.next_tick {
                self.next_tick = now + interval;
            }
            if ran > 0 {
                if let Some(took) = self.server.stats().frame_times.last() {
                    self.metrics.frame(*took);
                }
            }
            self.server.pump(now)?;
            if now >= self.next_housekeeping {
                self.housekeeping(now);
                self.next_housekeeping = now + HOUSEKEEPING;
            }
            let mut wake = self.next_tick.min(self.next_housekeeping);
            if let Some(t) = self.server.net().next_wakeup() {
                wake = wake.min(t);
            }
            if let Some(e) = end {
                wake = wake.min(e);
            }
            let wait = wake
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(50));
            if !wait.is_zero() {
                self.network.wait(wait)?;
            }
        }
        if let Some(line) = self.status_line.as_mut() {
            line.clear();
        }
        let stopped_by = shutdown.signal_name().unwrap_or("time").to_owned();
        tracing::info!(
            "shutting down ({stopped_by}), {} clients connected",
            self.connected()
        );
        self.shut_down()?;
        Ok(self.summary(stopped_by))
    }

    /// Ends the match, drains, says goodbye, finalizes the demo.
    fn shut_down(&mut self) -> Result<(), Error> {
        self.server.end_match()?;
        let drain_end = Instant::now() + DRAIN_LIMIT;
        loop {
            let now = Instant::now();
            self.server.pump(now)?;
            if self.server.ordered_idle() {
                self.drain_complete = true;
                break;
            }
            if now >= drain_end {
                break;
            }
            self.network.wait(Duration::from_millis(5))?;
        }
        self.server.shutdown();
        let goodbye_end = Instant::now() + GOODBYE_LIMIT;
        loop {
            let now = Instant::now();
            self.server.pump(now)?;
            let open = self.server.net().endpoint().connections().count();
            if open == 0 || now >= goodbye_end {
                break;
            }
            self.network.wait(Duration::from_millis(5))?;
        }
        self.housekeeping(Instant::now());
        self.server.finish_recording()?;
        if let Some(recording) = self.recording.take() {
            recording.commit()?;
        }
        Ok(())
    }

    /// Status payload, metrics, connect/disconnect logs, reject logs.
    fn housekeeping(&mut self, now: Instant) {
        let connected = self.connected();
        let status = ServerStatus {
            map: Map::arena().name.to_owned(),
            clients: connected as u32,
            max_clients: self.args.max_clients as u32,
            uptime_ms: now.saturating_duration_since(self.started).as_millis() as u64,
            tick_hz: self.args.tick_hz,
            codec: Codec::from(self.args.codec).name().to_owned(),
            protocol: PROTOCOL_VERSION,
            schema: schema_fingerprint(Codec::from(self.args.codec)),
        };
        let endpoint = self.server.net_mut().endpoint_mut();
        // The payload is far below the limit; an error would only mean an
        // absurd map name, and the old status stays.
        let _ = endpoint.set_status(&status.encode());
        let endpoint = self.server.net().endpoint();
        let totals = Totals::of(endpoint.metrics());
        let (mut queued, mut longest) = (0, 0);
        for id in endpoint.connections() {
            if let Some(c) = endpoint.connection(id) {
                let q = c.metrics().ordered_queue_len;
                queued += q;
                longest = longest.max(q);
            }
        }
        self.metrics.set_clients(connected);
        self.metrics.set_reliable_queue(queued, longest);
        self.metrics.update_totals(totals);
        let timeouts = self.server.stats().timeouts;
        for _ in self.timeouts_seen..timeouts {
            self.metrics.timeout();
        }
        self.timeouts_seen = timeouts;
        if let Some(line) = self.reject_log.poll(now, &totals) {
            log_rejected(&line);
        }
        if let Some(line) = self.status_line.as_mut() {
            let frames = self.server.stats().frames;
            let max = self.args.max_clients;
            let uptime = now.saturating_duration_since(self.started).as_secs_f64();
            line.draw(now, self.server.net().meter(), |down, up| {
                format!(
                    "up {uptime:7.1}s | clients {connected:2}/{max} | down {down:7.1} kbps | up {up:6.1} kbps | frames {frames} | rejected {}",
                    totals.rejected.iter().sum::<u64>()
                )
            });
        }
        self.server.refresh_reports();
        let reports: Vec<(u32, PeerReport)> = self
            .server
            .reports()
            .iter()
            .map(|(id, r)| (*id, r.clone()))
            .collect();
        for (id, report) in reports {
            // The session counts snapshots and their bytes per client; each
            // snapshot of the last quarter second is observed at its
            // client's mean size over it.
            let (snaps, fulls, bytes) = self.snapshots_seen.get(&id).copied().unwrap_or_default();
            let s = &report.session;
            let new = s.snapshots.saturating_sub(snaps);
            if let Some(mean) = s.snapshot_bytes.saturating_sub(bytes).checked_div(new) {
                let new_full = s.full_snapshots.saturating_sub(fulls).min(new);
                for i in 0..new {
                    self.metrics.snapshot(mean as usize, i < new_full);
                }
            }
            self.snapshots_seen
                .insert(id, (s.snapshots, s.full_snapshots, s.snapshot_bytes));
            match self.seen.insert(id, report.status) {
                None => tracing::info!(
                    "client {} connected (id {id:08x}, slot {})",
                    report.name,
                    report.slot
                ),
                Some(before) if before != report.status => {
                    let why = match report.status {
                        PeerStatus::Left => "left",
                        PeerStatus::TimedOut => "timed out",
                        PeerStatus::Dropped => "dropped",
                        PeerStatus::Shutdown => "server shutting down",
                        PeerStatus::Connected => "reconnected",
                    };
                    tracing::info!("client {} disconnected: {why}", report.name);
                }
                Some(_) => {}
            }
        }
    }

    fn summary(&self, stopped_by: String) -> ServeSummary {
        let stats = self.server.stats();
        let mut frame_ms: Vec<f64> = stats
            .frame_times
            .iter()
            .map(|d| d.as_secs_f64() * 1000.0)
            .collect();
        frame_ms.sort_by(f64::total_cmp);
        let q = |p: f64| crate::summary::quantile(&frame_ms, p);
        let mut rewinds: Vec<f64> = stats.rewind_ms.iter().map(|&r| r as f64).collect();
        rewinds.sort_by(f64::total_cmp);
        let m = self.server.net().endpoint().metrics();
        ServeSummary {
            bind: self.local_addr(),
            seconds: self.started.elapsed().as_secs_f64(),
            stopped_by,
            codec: Codec::from(self.args.codec).name(),
            tick_hz: self.args.tick_hz,
            frames: stats.frames,
            frame_ms_p50: q(0.5),
            frame_ms_p99: q(0.99),
            timeouts: stats.timeouts,
            refused: self.server.session().stats().refused,
            bytes_sent: m.bytes_sent,
            bytes_received: m.bytes_received,
            max_datagram_bytes: m.largest_datagram_sent,
            rejected_datagrams: m.rejected.total(),
            status_answered: m.status_answered,
            recorded_snapshots: stats.recorded,
            drain_complete: self.drain_complete,
            lag_comp: self.args.lag_comp.on(),
            rewind_ms_p50: crate::summary::quantile(&rewinds, 0.5),
            rewind_ms_max: rewinds.last().copied().unwrap_or(0.0),
            clients: self
                .server
                .reports()
                .iter()
                .map(|(id, r)| ServedClient {
                    name: r.name.clone(),
                    client_id: *id,
                    status: r.status,
                    commands: r.commands,
                    snapshots: r.session.snapshots,
                    full_snapshots: r.session.full_snapshots,
                    reliable_sent: r.reliable_sent,
                    upstream_out_of_order: r.upstream_out_of_order,
                    rail_shots: r.rail_shots,
                    rail_hits: r.rail_hits,
                })
                .collect(),
        }
    }
}

impl ServeSummary {
    /// The JSON document.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// A readable report.
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "arena serve on {}: {:.1} s, stopped by {}, {} frames (p50 {:.3} ms, p99 {:.3} ms), {} clients, {} timeouts, {} rejected datagrams, {} status queries answered",
            self.bind,
            self.seconds,
            self.stopped_by,
            self.frames,
            self.frame_ms_p50,
            self.frame_ms_p99,
            self.clients.len(),
            self.timeouts,
            self.rejected_datagrams,
            self.status_answered
        );
        for c in &self.clients {
            let _ = writeln!(
                out,
                "  {:<8} {:?}: {} commands, {} snapshots ({} full), {} guaranteed sent",
                c.name, c.status, c.commands, c.snapshots, c.full_snapshots, c.reliable_sent
            );
        }
        out
    }
}
