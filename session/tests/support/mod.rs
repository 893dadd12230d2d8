//! A deterministic world for the session tests: a server and clients on
//! netchan's in-process link, a seeded link conditioner on every send
//! path, simulated time in 5 ms steps, and a tiny game whose state both
//! ends can check exactly.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fields::model::NativeModel;
use fields::{net_struct, signed, unsigned, Codec, NetFields};
use netchan::{ConditionerConfig, ConnectionConfig, Endpoint, LocalDriver, LocalHub};
use netq3_session::{
    AllInScope, Client, ClientConfig, ClientEvent, ClientKey, ClientState, DisconnectReason,
    Models, Server, ServerConfig, ServerEvent,
};

net_struct! {
    /// A player's marker in the world.
    pub struct Mark {
        /// Which map it belongs to.
        pub map: u8 = unsigned(4),
        /// Position: the sum of the player's commands.
        pub x: i32 = signed(24),
        /// Its owner's slot.
        pub owner: u8 = unsigned(7),
    }
}

net_struct! {
    /// What a player sees of itself.
    pub struct Me {
        /// The newest command applied.
        pub command: u32 = unsigned(32),
        /// Position.
        pub x: i32 = signed(24),
        /// The map.
        pub map: u8 = unsigned(4),
    }
}

net_struct! {
    /// One frame of input.
    pub struct Cmd {
        /// Movement.
        pub dx: i8 = signed(8),
        /// Buttons.
        pub buttons: u8 = unsigned(4),
        /// Facing.
        pub yaw: u16 = unsigned(16),
    }
}

/// Milliseconds per server tick.
pub const TICK_MS: u64 = 50;
/// Client frames per tick (60 fps against 20 Hz, roughly).
pub const STEP_MS: u64 = 5;

/// A client and its endpoint.
pub struct Bot {
    pub name: String,
    pub client: Client<Mark, Me, Cmd>,
    pub net: Option<LocalDriver>,
    pub events: Vec<ClientEvent>,
    /// Commands queued this session, by number.
    pub sent: Vec<(u32, Cmd)>,
    /// Commands queued over every session (for loss counting).
    pub sessions: Vec<Vec<(u32, Cmd)>>,
    pub next_frame_ms: u64,
    pub frame: u32,
    pub link: ConditionerConfig,
    pub seed: u64,
    /// Snapshots whose content disagreed with the server's record.
    pub divergent: u64,
    /// Snapshots applied that carried another map's marks.
    pub wrong_map: u64,
    /// Snapshots compared with the server's record.
    pub compared: u64,
    /// Stop sending commands.
    pub idle: bool,
}

/// The server's world at one time: the map, the marks, each player's state.
pub type Frame = (u8, BTreeMap<u32, Mark>, HashMap<String, Me>);

/// The whole test world.
pub struct Sim {
    pub hub: LocalHub,
    pub start: Instant,
    pub now: Instant,
    pub server: Option<Server<Mark, Me, Cmd>>,
    pub sv: Option<LocalDriver>,
    pub addr: SocketAddr,
    pub server_config: ServerConfig,
    pub server_link: ConditionerConfig,
    pub bots: Vec<Bot>,
    pub next_tick_ms: u64,
    pub map: u8,
    /// Commands the server delivered, per client name, per session.
    pub received: HashMap<String, Vec<Vec<(u32, Cmd)>>>,
    pub names: HashMap<ClientKey, String>,
    pub server_events: Vec<ServerEvent<Cmd>>,
    /// The server's world at every committed time (for divergence checks).
    pub history: BTreeMap<u32, Frame>,
    pub positions: HashMap<String, i32>,
    pub last_command: HashMap<String, u32>,
    pub seed: u64,
}

pub fn link(
    loss: f64,
    latency_ms: u64,
    jitter_ms: u64,
    dup: f64,
    reorder: f64,
) -> ConditionerConfig {
    let jitter = Duration::from_millis(jitter_ms);
    ConditionerConfig {
        loss,
        latency: Duration::from_millis(latency_ms),
        jitter,
        duplicate: dup,
        reorder,
        reorder_delay: (jitter * 2).max(Duration::from_millis(20)),
        ..ConditionerConfig::default()
    }
}

pub fn server_config() -> ServerConfig {
    ServerConfig {
        codec: Codec::Native,
        max_entities: 128,
        connection: ConnectionConfig {
            idle_timeout: Duration::from_secs(3),
            ..ConnectionConfig::default()
        },
        ..ServerConfig::default()
    }
}

impl Sim {
    pub fn new(seed: u64, server_link: ConditionerConfig) -> Sim {
        let hub = LocalHub::new();
        let now = Instant::now();
        let addr: SocketAddr = "127.0.0.1:27960".parse().unwrap();
        let mut sim = Sim {
            hub,
            start: now,
            now,
            server: None,
            sv: None,
            addr,
            server_config: server_config(),
            server_link,
            bots: Vec::new(),
            next_tick_ms: TICK_MS,
            map: 1,
            received: HashMap::new(),
            names: HashMap::new(),
            server_events: Vec::new(),
            history: BTreeMap::new(),
            positions: HashMap::new(),
            last_command: HashMap::new(),
            seed,
        };
        sim.start_server();
        sim
    }

    pub fn ms(&self) -> u64 {
        self.now.duration_since(self.start).as_millis() as u64
    }

    /// (Re)starts the server at the fixed address with a fresh world.
    pub fn start_server(&mut self) {
        let server = Server::new(self.server_config.clone()).unwrap();
        let mut endpoint = server.endpoint_config();
        endpoint.secret = [self.seed as u8; 32];
        let mut sv = LocalDriver::bind_local(
            &self.hub,
            Some(self.addr),
            Endpoint::new(endpoint, self.now),
        )
        .unwrap();
        sv.set_conditioner(self.server_link.clone(), self.seed ^ 0x5eed);
        self.server = Some(server);
        self.sv = Some(sv);
        self.names.clear();
        self.positions.clear();
        self.last_command.clear();
        let map = self.map;
        self.server_mut()
            .world_mut()
            .set_configstring(0, &format!("map\\m{map}"))
            .unwrap();
    }

    /// Stops the server (`notify`: telling clients it restarts; otherwise
    /// it vanishes) and drops it.
    pub fn stop_server(&mut self, notify: bool) {
        if notify {
            if let (Some(server), Some(sv)) = (self.server.as_mut(), self.sv.as_mut()) {
                server.shutdown(sv.endpoint_mut(), true);
            }
            for _ in 0..20 {
                self.step();
            }
        }
        self.server = None;
        self.sv = None;
    }

    pub fn server_mut(&mut self) -> &mut Server<Mark, Me, Cmd> {
        self.server.as_mut().unwrap()
    }

    pub fn add_bot(&mut self, name: &str, link: ConditionerConfig) -> usize {
        let index = self.bots.len();
        let mut config = ClientConfig::named(name);
        config.connection.idle_timeout = Duration::from_secs(3);
        config.connect_deadline = Some(Duration::from_secs(60));
        self.add_bot_with(config, link, index)
    }

    pub fn add_bot_with(
        &mut self,
        config: ClientConfig,
        link: ConditionerConfig,
        index: usize,
    ) -> usize {
        let name = config.name.clone();
        let client = Client::new(config);
        let seed = self.seed.wrapping_mul(31).wrapping_add(index as u64 + 1);
        let mut endpoint = client.endpoint_config();
        endpoint.secret = [seed as u8; 32];
        let mut net =
            LocalDriver::bind_local(&self.hub, None, Endpoint::new(endpoint, self.now)).unwrap();
        net.set_conditioner(link.clone(), seed);
        let mut bot = Bot {
            name,
            client,
            net: Some(net),
            events: Vec::new(),
            sent: Vec::new(),
            sessions: Vec::new(),
            next_frame_ms: self.ms(),
            frame: 0,
            link,
            seed,
            divergent: 0,
            wrong_map: 0,
            compared: 0,
            idle: false,
        };
        let now = self.now;
        let addr = self.addr;
        let net = bot.net.as_mut().unwrap();
        bot.client.connect(net.endpoint_mut(), now, addr).unwrap();
        self.bots.push(bot);
        self.bots.len() - 1
    }

    /// One 5 ms step: pump everything, run the tick and client frames due.
    pub fn step(&mut self) {
        self.now += Duration::from_millis(STEP_MS);
        let ms = self.ms();
        self.pump();
        if ms >= self.next_tick_ms {
            self.next_tick_ms += TICK_MS;
            self.tick(ms as u32);
        }
        for index in 0..self.bots.len() {
            self.frame(index, ms);
        }
        self.pump();
    }

    pub fn run_ms(&mut self, ms: u64) {
        for _ in 0..ms / STEP_MS {
            self.step();
        }
    }

    /// Steps until `done` holds or `limit_ms` passes; returns the ms taken.
    pub fn run_until(&mut self, limit_ms: u64, mut done: impl FnMut(&Sim) -> bool) -> Option<u64> {
        let start = self.ms();
        while self.ms() - start < limit_ms {
            if done(self) {
                return Some(self.ms() - start);
            }
            self.step();
        }
        done(self).then(|| self.ms() - start)
    }

    fn pump(&mut self) {
        let now = self.now;
        for _ in 0..3 {
            if let Some(sv) = self.sv.as_mut() {
                sv.pump(now);
                let server = self.server.as_mut().unwrap();
                server.update(sv.endpoint_mut(), now).unwrap();
            }
            self.server_events();
            for index in 0..self.bots.len() {
                let bot = &mut self.bots[index];
                let Some(net) = bot.net.as_mut() else {
                    continue;
                };
                net.pump(now);
                bot.client.update(net.endpoint_mut(), now).unwrap();
                while let Some(event) = self.bots[index].client.poll_event() {
                    self.client_event(index, event);
                }
            }
        }
    }

    fn server_events(&mut self) {
        while let Some(event) = self.server.as_mut().and_then(|s| s.poll_event()) {
            match &event {
                ServerEvent::Connected { client, name } => {
                    self.names.insert(*client, name.clone());
                    self.received
                        .entry(name.clone())
                        .or_default()
                        .push(Vec::new());
                    self.positions.insert(name.clone(), 0);
                    self.last_command.insert(name.clone(), 0);
                }
                ServerEvent::Command {
                    client,
                    number,
                    command,
                } => {
                    let name = &self.names[client];
                    if let Some(list) = self.received.get_mut(name).and_then(|s| s.last_mut()) {
                        list.push((*number, *command));
                    }
                    *self.positions.get_mut(name).unwrap() += command.dx as i32;
                    self.last_command.insert(name.clone(), *number);
                }
                ServerEvent::Disconnected { client, .. } => {
                    if let Some(name) = self.names.remove(client) {
                        self.positions.remove(&name);
                    }
                }
                ServerEvent::Entered { .. } | ServerEvent::Message { .. } => {}
            }
            self.server_events.push(event);
        }
    }

    fn tick(&mut self, time: u32) {
        let map = self.map;
        let Some(server) = self.server.as_mut() else {
            return;
        };
        let keys: Vec<ClientKey> = self.names.keys().copied().collect();
        let mut marks = BTreeMap::new();
        let mut players = HashMap::new();
        for number in 0..64u32 {
            server.world_mut().remove_entity(number);
        }
        for key in keys {
            let name = &self.names[&key];
            let x = self.positions[name];
            let mark = Mark {
                map,
                x,
                owner: key.slot() as u8,
            };
            let number = key.slot() as u32 + 1;
            server.world_mut().set_entity(number, mark).unwrap();
            marks.insert(number, mark);
            let me = Me {
                command: self.last_command[name],
                x,
                map,
            };
            server.set_player_state(key, me).unwrap();
            players.insert(name.clone(), me);
        }
        let sv = self.sv.as_mut().unwrap();
        server
            .send_snapshots(sv.endpoint_mut(), time, &mut AllInScope)
            .unwrap();
        self.history.insert(time, (map, marks, players));
    }

    fn frame(&mut self, index: usize, ms: u64) {
        let bot = &mut self.bots[index];
        if ms < bot.next_frame_ms {
            return;
        }
        // 60 frames a second: 17, 17, 16 ms.
        bot.frame += 1;
        bot.next_frame_ms += if bot.frame % 3 == 0 { 16 } else { 17 };
        if bot.idle || bot.client.state() != ClientState::Active {
            return;
        }
        let f = bot.frame;
        let command = Cmd {
            dx: ((f.wrapping_mul(2_654_435_761) >> 28) as i8) - 8,
            buttons: (f / 7 % 3) as u8,
            yaw: (f.wrapping_mul(97) % 65536) as u16,
        };
        if let Ok(number) = bot.client.command(command) {
            bot.sent.push((number, command));
        }
    }

    fn client_event(&mut self, index: usize, event: ClientEvent) {
        let bot = &mut self.bots[index];
        match &event {
            ClientEvent::Connected => {
                bot.sessions.push(std::mem::take(&mut bot.sent));
            }
            ClientEvent::Snapshot { .. } => {
                let snap = bot.client.snapshots().newest().unwrap();
                let map_now = bot
                    .client
                    .snapshots()
                    .gamestate()
                    .and_then(|g| g.configstring(0))
                    .and_then(|m| m.strip_prefix("map\\m"))
                    .and_then(|m| m.parse::<u8>().ok());
                if snap.entities().any(|(_, m)| Some(m.map) != map_now)
                    || Some(snap.player().map) != map_now
                {
                    bot.wrong_map += 1;
                }
                if let Some((_, marks, players)) = self.history.get(&snap.server_time()) {
                    bot.compared += 1;
                    let got: BTreeMap<u32, Mark> = snap.entities().map(|(n, m)| (n, *m)).collect();
                    let me = players.get(&bot.name);
                    if &got != marks || me != Some(snap.player()) {
                        bot.divergent += 1;
                    }
                }
            }
            _ => {}
        }
        bot.events.push(event);
    }

    /// Changes the map: every mark moves to map `map`.
    pub fn change_map(&mut self, map: u8) {
        self.map = map;
        let server = self.server.as_mut().unwrap();
        server
            .world_mut()
            .set_configstring(0, &format!("map\\m{map}"))
            .unwrap();
        for number in 0..64u32 {
            server.world_mut().remove_entity(number);
        }
        let sv = self.sv.as_mut().unwrap();
        server.change_map(sv.endpoint_mut()).unwrap();
    }

    /// Every bot is active with a snapshot of the current map.
    pub fn all_active(&self) -> bool {
        let map = self.map;
        self.bots.iter().all(|b| {
            b.client.state() == ClientState::Active
                && b.client
                    .snapshots()
                    .newest()
                    .is_some_and(|s| s.player().map == map)
        })
    }

    /// Commands the bot queued that the server never delivered, and ones
    /// delivered twice or out of order, over the sessions so far.
    pub fn command_report(&self, index: usize, first_session: usize) -> (usize, usize) {
        let bot = &self.bots[index];
        let mut sent: Vec<&Vec<(u32, Cmd)>> = bot.sessions.iter().collect();
        sent.push(&bot.sent);
        // Sessions[0] holds what was queued before the first connect (none).
        let sent: Vec<&Vec<(u32, Cmd)>> = sent.into_iter().filter(|s| !s.is_empty()).collect();
        let empty = Vec::new();
        let received = self.received.get(&bot.name).unwrap_or(&empty);
        let received: Vec<&Vec<(u32, Cmd)>> = received.iter().filter(|s| !s.is_empty()).collect();
        let mut lost = 0;
        let mut wrong = 0;
        for (i, s) in sent.iter().enumerate().skip(first_session) {
            match received.get(i) {
                Some(r) => {
                    lost += s.len().saturating_sub(r.len());
                    wrong += r.iter().zip(s.iter()).filter(|(a, b)| a != b).count();
                    wrong += r.len().saturating_sub(s.len());
                }
                None => lost += s.len(),
            }
        }
        (lost, wrong)
    }

    pub fn reason(&self, index: usize) -> Option<DisconnectReason> {
        self.bots[index].events.iter().find_map(|e| match e {
            ClientEvent::Disconnected { reason } => Some(*reason),
            _ => None,
        })
    }
}

/// A model of `T` trained on the deltas `pairs` gives.
fn trained<T: NetFields>(pairs: impl Iterator<Item = (T, T)>) -> Arc<NativeModel> {
    Arc::new(NativeModel::train_on_deltas(pairs).unwrap())
}

/// Native models trained on other habits than the simulation's (steps of
/// 5 and 2 where the game moves by its commands), so adapting to the
/// game's own stream changes them.
pub fn other_habits_models() -> Models {
    let mark = |x: i32| Mark {
        map: 1,
        x: x * 5,
        owner: (x % 3) as u8,
    };
    let me = |c: u32| Me {
        command: c * 2,
        x: c as i32,
        map: 1,
    };
    Models::new(
        trained((1..200).map(|x| (mark(x - 1), mark(x)))),
        trained((1..200).map(|c| (me(c - 1), me(c)))),
    )
}
