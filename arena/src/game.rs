//! The match: one server and its bots in one process, stepped by a real or
//! a simulated clock.
//!
//! The loop is the same for both clocks: at each step it pumps every
//! endpoint, runs the server ticks and client frames that are due, and
//! pumps again until no datagram moves. Only the wait differs: the real
//! clock sleeps on the shared `mio::Poll` until the earliest deadline or a
//! datagram; the simulated clock jumps straight to the earliest deadline.
//!
//! A match runs in three phases: play for the configured time; drain (no
//! ticks, no new commands) until every guaranteed message has been
//! acknowledged, so "lost" means lost and not "still in flight"; then every
//! remaining client disconnects cleanly.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use netchan::{ConnectionConfig, Endpoint};
use session::ClientConfig;

use crate::client::{ClientOptions, ClientPhase, GameClient};
use crate::config::{BotPlan, ClockKind, MatchConfig};
use crate::error::Error;
use crate::protocol::{Command, EntityState, PlayerState, PROTOCOL_VERSION};
use crate::server::{DemoRecorder, GameServer, ServerOptions};
use crate::status::StatusLine;
use crate::transport::{Network, TransportKind};

/// Most datagrams a client sends per second (Quake 3's `cl_maxpackets`):
/// as many as the snapshots it gets, so three 60 fps commands share each
/// packet and a bot sends well under what it receives.
pub const CLIENT_MAX_PACKETS: u16 = 20;

/// Where the match is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Playing.
    Playing,
    /// Waiting for guaranteed messages in flight.
    Draining,
    /// Clients disconnecting.
    Closing,
    /// Over.
    Done,
}

/// One bot's seat: its plan and, once it joined, its client.
#[derive(Debug)]
pub struct Seat {
    /// When it joins, leaves, goes silent.
    pub plan: BotPlan,
    /// Its client, from its join time on.
    pub client: Option<GameClient>,
    /// Guaranteed messages (queued by the server, received by the client)
    /// when the drain ended: what the loss check compares. Messages sent
    /// later (other clients' leave notices while everyone disconnects)
    /// are not waited for.
    pub reliable_at_drain: Option<(u64, u64)>,
}

/// A running match.
#[derive(Debug)]
pub struct Match {
    config: MatchConfig,
    network: Network,
    server: GameServer,
    server_addr: SocketAddr,
    seats: Vec<Seat>,
    epoch: Instant,
    now: Instant,
    next_tick: Instant,
    phase: Phase,
    phase_since: Instant,
    ended_at: Option<Instant>,
    drain_complete: bool,
    steps: u64,
    status: Option<StatusLine>,
}

/// Seeds derived from the match seed, one stream per use.
pub fn derive(seed: u64, stream: u64) -> u64 {
    let mut rng = netchan::SeededRng::new(seed ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    rng.next_u64()
}

impl Match {
    /// Sets a match up at `start`: binds the server, ready to run.
    pub fn new(
        config: MatchConfig,
        demo: Option<DemoRecorder>,
        start: Instant,
    ) -> Result<Match, Error> {
        config.validate().map_err(Error::Config)?;
        let mut network = Network::new(config.transport)?;
        let options = ServerOptions {
            codec: config.codec,
            tick_hz: config.tick_hz,
            checksum_interval: config.checksum_interval,
            seed: derive(config.seed, 2),
            keyframe_ms: config.keyframe_ms,
            connection: connection_config(&config),
            lag_comp: config.lag_comp,
            max_rewind_ms: config.max_rewind_ms,
        };
        let mut net = network.bind(Endpoint::new(options.endpoint_config(), start))?;
        net.set_conditioner(config.link.clone(), derive(config.seed, 1));
        let server_addr = net.local_addr();
        let server = GameServer::new(net, options, demo)?;
        let seats = config
            .schedule()
            .into_iter()
            .map(|plan| Seat {
                plan,
                client: None,
                reliable_at_drain: None,
            })
            .collect();
        Ok(Match {
            network,
            server,
            server_addr,
            seats,
            epoch: start,
            now: start,
            next_tick: start + config.tick_interval(),
            phase: Phase::Playing,
            phase_since: start,
            ended_at: None,
            drain_complete: false,
            steps: 0,
            status: None,
            config,
        })
    }

    /// Shows a live status line while running (a terminal is assumed).
    pub fn enable_status(&mut self) {
        self.status = Some(StatusLine::new(self.epoch));
    }

    /// The configuration.
    pub fn config(&self) -> &MatchConfig {
        &self.config
    }

    /// The server.
    pub fn server(&self) -> &GameServer {
        &self.server
    }

    /// The seats, in bot order.
    pub fn seats(&self) -> &[Seat] {
        &self.seats
    }

    /// The phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// When play ended (the drain began).
    pub fn ended_at(&self) -> Option<Instant> {
        self.ended_at
    }

    /// Whether the drain finished with every guaranteed message acknowledged.
    pub fn drain_complete(&self) -> bool {
        self.drain_complete
    }

    /// The address the server's socket is bound to.
    pub fn server_addr(&self) -> SocketAddr {
        self.server_addr
    }

    /// The transport.
    pub fn transport(&self) -> TransportKind {
        self.network.kind()
    }

    /// Steps taken.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Datagrams the in-process link dropped for lack of a receiver.
    pub fn local_dropped(&self) -> u64 {
        self.network.local_dropped()
    }

    /// Runs the match to the end on the configured clock.
    pub fn run(&mut self) -> Result<(), Error> {
        while self.phase != Phase::Done {
            let deadline = self.next_deadline();
            let now = match self.config.clock {
                ClockKind::Sim => {
                    // Whole milliseconds, always forward: deadlines in the
                    // past (work a pump could not do yet) cost one step.
                    let step = deadline.saturating_duration_since(self.now);
                    let ms = step.as_millis().max(1) as u64;
                    self.now + Duration::from_millis(ms.min(100))
                }
                ClockKind::Real => {
                    let now = Instant::now();
                    let wait = deadline
                        .saturating_duration_since(now)
                        .min(Duration::from_millis(50));
                    if !wait.is_zero() {
                        self.network.wait(wait)?;
                    }
                    Instant::now()
                }
            };
            self.step(now)?;
        }
        if let Some(status) = self.status.as_mut() {
            status.clear();
        }
        Ok(())
    }

    /// The earliest time something is due.
    pub fn next_deadline(&self) -> Instant {
        let mut next = self.now + Duration::from_millis(100);
        let mut consider = |t: Option<Instant>| {
            if let Some(t) = t {
                next = next.min(t);
            }
        };
        if self.phase == Phase::Playing {
            consider(Some(self.next_tick));
            consider(Some(self.epoch + self.config.duration));
            for seat in &self.seats {
                for at in [
                    Some(seat.plan.join_at),
                    seat.plan.leave_at,
                    seat.plan.silent_at,
                ]
                .into_iter()
                .flatten()
                {
                    let t = self.epoch + at;
                    if t > self.now {
                        consider(Some(t));
                    }
                }
                if let Some(c) = &seat.client {
                    if c.phase() == ClientPhase::Playing {
                        consider(Some(c.next_frame()));
                    }
                }
            }
        }
        consider(self.server.net().next_wakeup());
        for seat in &self.seats {
            if let Some(c) = seat.client.as_ref().filter(|c| c.is_active()) {
                consider(c.next_wakeup());
            }
        }
        next
    }

    /// Does everything due at `now`.
    pub fn step(&mut self, now: Instant) -> Result<(), Error> {
        self.now = now;
        self.steps += 1;
        self.pump_all(now)?;
        match self.phase {
            Phase::Playing => self.play(now)?,
            Phase::Draining => {
                let idle = self.server.ordered_idle()
                    && self
                        .seats
                        .iter()
                        .filter_map(|s| s.client.as_ref())
                        .filter(|c| c.is_active())
                        .all(GameClient::queues_idle);
                if idle || now >= self.phase_since + self.config.drain_limit {
                    self.drain_complete = idle;
                    for seat in &mut self.seats {
                        if let Some(client) = seat.client.as_mut() {
                            let sent = self
                                .server
                                .reports()
                                .get(&client.client_id())
                                .map_or(0, |r| r.reliable_sent);
                            seat.reliable_at_drain =
                                Some((sent, client.stats().reliable_delivered));
                            if client.phase() == ClientPhase::Playing
                                || client.phase() == ClientPhase::Connecting
                            {
                                client.leave(now);
                            }
                        }
                    }
                    self.set_phase(Phase::Closing, now);
                }
            }
            Phase::Closing => {
                let open = self
                    .seats
                    .iter()
                    .filter_map(|s| s.client.as_ref())
                    .any(|c| c.phase() == ClientPhase::Leaving);
                if !open || now >= self.phase_since + Duration::from_secs(2) {
                    self.server.finish_recording()?;
                    self.set_phase(Phase::Done, now);
                }
            }
            Phase::Done => {}
        }
        self.pump_all(now)?;
        if let Some(status) = self.status.as_mut() {
            status.update(now, &self.server, &self.seats);
        }
        Ok(())
    }

    fn set_phase(&mut self, phase: Phase, now: Instant) {
        self.phase = phase;
        self.phase_since = now;
    }

    fn play(&mut self, now: Instant) -> Result<(), Error> {
        let elapsed = now.saturating_duration_since(self.epoch);
        self.schedule(now, elapsed)?;
        // Ticks due; after a long stall, skip ahead rather than run a burst.
        let interval = self.config.tick_interval();
        let mut ran = 0;
        while now >= self.next_tick && ran < 5 {
            self.server.tick()?;
            self.next_tick += interval;
            ran += 1;
        }
        if now >= self.next_tick {
            self.next_tick = now + interval;
        }
        for seat in &mut self.seats {
            if let Some(client) = seat.client.as_mut() {
                client.frame(now, true);
            }
        }
        if elapsed >= self.config.duration {
            self.ended_at = Some(now);
            for seat in &mut self.seats {
                if let Some(client) = seat.client.as_mut() {
                    client.freeze(now);
                }
            }
            self.server.end_match()?;
            self.set_phase(Phase::Draining, now);
        }
        Ok(())
    }

    /// Joins, leaves and silences due by `elapsed`.
    fn schedule(&mut self, now: Instant, elapsed: Duration) -> Result<(), Error> {
        for index in 0..self.seats.len() {
            let plan = self.seats[index].plan;
            if self.seats[index].client.is_none() && elapsed >= plan.join_at {
                let client = self.make_client(index, now)?;
                self.seats[index].client = Some(client);
            }
            let Some(client) = self.seats[index].client.as_mut() else {
                continue;
            };
            let live = matches!(
                client.phase(),
                ClientPhase::Connecting | ClientPhase::Playing
            );
            if live && plan.silent_at.is_some_and(|t| elapsed >= t) {
                client.go_silent(now);
            } else if live && plan.leave_at.is_some_and(|t| elapsed >= t) {
                client.leave(now);
            }
        }
        Ok(())
    }

    fn make_client(&mut self, index: usize, now: Instant) -> Result<GameClient, Error> {
        let config = &self.config;
        let (options, session) = bot_config(config, index, config.duration);
        let endpoint = session.endpoint::<EntityState, PlayerState, Command>();
        let mut net = self.network.bind(Endpoint::new(endpoint, now))?;
        net.set_conditioner(config.link.clone(), derive(config.seed, 100 + index as u64));
        let mut client = GameClient::new(options, session, net, self.server_addr, self.epoch);
        client.connect(now);
        Ok(client)
    }

    /// Pumps every endpoint until no datagram moves (bounded).
    fn pump_all(&mut self, now: Instant) -> Result<(), Error> {
        for _ in 0..16 {
            let mut moved = self.server.pump(now)?;
            for seat in &mut self.seats {
                if let Some(client) = seat.client.as_mut() {
                    moved += client.pump(now);
                }
            }
            if moved == 0 {
                break;
            }
        }
        Ok(())
    }
}

/// Bot `index`'s game options and session configuration: its name, a
/// qport and seeds from the match seed; it keeps trying to connect for
/// `connect_for`.
pub fn bot_config(
    config: &MatchConfig,
    index: usize,
    connect_for: Duration,
) -> (ClientOptions, ClientConfig) {
    let options = ClientOptions {
        name: format!("bot{index}"),
        // A qport: random-looking, unique per bot, never zero.
        client_id: (derive(config.seed, 200 + index as u64) as u32) | 1,
        snaps: config.snaps,
        rate: config.rate,
        fps: config.client_fps,
        seed: derive(config.seed, 300 + index as u64),
    };
    let session = ClientConfig {
        name: options.name.clone(),
        client_id: options.client_id,
        snaps: config.snaps,
        rate: config.rate,
        // Quake 3's cl_maxpackets: commands from faster frames share
        // packets instead of each paying for a datagram.
        max_packets: CLIENT_MAX_PACKETS as u32,
        // A bot on a bad link keeps trying, as a Quake 3 client retries
        // until its user gives up.
        connect_deadline: Some(connect_for),
        // The match checks that no bot drops: a bot that reconnected
        // would hide it.
        reconnect: false,
        codec: config.codec,
        game_version: PROTOCOL_VERSION,
        connection: connection_config(config),
        framing: crate::protocol::framing(config.codec),
        ..ClientConfig::default()
    };
    (options, session)
}

/// Connection settings of both ends: the match's idle timeout (the
/// session sets the rates each end announces).
fn connection_config(config: &MatchConfig) -> ConnectionConfig {
    ConnectionConfig {
        idle_timeout: config.timeout,
        ..ConnectionConfig::default()
    }
}
