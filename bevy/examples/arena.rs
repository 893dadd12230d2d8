//! A headless Bevy server and bot clients (Bevy Apps, one thread) over real
//! UDP on 127.0.0.1, every datagram both ways through the seeded link
//! conditioner (10% loss by default, 20 ms ± 5 ms latency). The game is
//! small but real: players move where their bots steer them and fire
//! projectiles, which fly for a second and vanish.
//!
//! Each client checks every snapshot it receives against what the server's
//! game really had at that server time (every entity and its own player
//! state). The run exits non-zero if a client lost its connection, saw a
//! state the server never had, or got no snapshots; `--summary-json` writes
//! per-client figures (via a temporary file and a rename).
//!
//! ```sh
//! cargo run --release -p bevy_netq3 --example arena -- --bots 4 --seconds 10 --summary-json arena.json
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bevy_app::{App, FixedUpdate};
use bevy_ecs::prelude::*;
use bevy_netq3::*;
use bevy_time::{Fixed, Time, TimePlugin};
use clap::Parser;
use netq3::netchan::SeededRng;
use netq3::{
    boolean, net_struct, signed, unsigned, ClientConfig, ConditionerConfig, Interpolate,
    RenderPoint, ServerConfig,
};

net_struct! {
    /// A player or a projectile.
    struct Thing { kind: u8 = unsigned(2), x: i16 = signed(16), y: i16 = signed(16), }
}
net_struct! {
    /// What a player sees of itself.
    struct Me { x: i16 = signed(16), y: i16 = signed(16), shots: u16 = unsigned(16), }
}
net_struct! {
    /// A bot's input for one tick.
    struct Input { dx: i8 = signed(4), dy: i8 = signed(4), fire: bool = boolean(), }
}

const PLAYER: u8 = 1;
const PROJECTILE: u8 = 2;
/// Projectile entity numbers (players use their slot).
const FIRST_PROJECTILE: u32 = 64;
const PROJECTILE_NUMBERS: u32 = 512;
const PROJECTILE_TICKS: u32 = 20;
const ARENA: i16 = 2000;
/// Server ticks and snapshots a second.
const TICK_HZ: f64 = 20.0;
/// The frame loop's rate.
const FRAME: Duration = Duration::from_millis(5);

impl Interpolate for Thing {
    fn interpolate(newest: &Self, previous: Option<&Self>, at: &RenderPoint) -> Self {
        match previous {
            Some(p) if p.kind == newest.kind => {
                let lerp =
                    |a: i16, b: i16| (a as f32 + (b as f32 - a as f32) * at.fraction).round();
                Thing {
                    kind: newest.kind,
                    x: lerp(p.x, newest.x) as i16,
                    y: lerp(p.y, newest.y) as i16,
                }
            }
            _ => *newest,
        }
    }
}

struct Game;
impl NetGame for Game {
    type Entity = Thing;
    type Player = Me;
    type Command = Input;
    fn translation(thing: &Thing) -> [f32; 3] {
        [thing.x as f32, thing.y as f32, 0.0]
    }
}

#[derive(Parser)]
#[command(about = "Bevy server and bot clients over UDP with loss")]
struct Args {
    /// Bot clients.
    #[arg(long, default_value_t = 4)]
    bots: usize,
    /// How long the game runs, seconds.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Loss on every link, 0..1.
    #[arg(long, default_value_t = 0.1)]
    loss: f64,
    /// Seed of the conditioners and bots.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to write the summary JSON.
    #[arg(long)]
    summary_json: Option<PathBuf>,
}

/// What the server's game had at each server time: every entity, and each
/// slot's player state. Shared with the clients (one process) so they can
/// check what they receive.
#[derive(Default)]
struct History {
    ticks: BTreeMap<u32, Tick>,
}

/// One server tick: every entity by number, every player state by slot.
type Tick = (BTreeMap<u32, Thing>, HashMap<usize, Me>);

#[derive(Resource, Clone, Default)]
struct Truth(Arc<Mutex<History>>);

/// The server game's own state.
#[derive(Resource, Default)]
struct Arena {
    next_projectile: u32,
}

#[derive(Component)]
struct Flight {
    dx: i16,
    dy: i16,
    ticks_left: u32,
}

/// What a bot client saw.
#[derive(Resource, Default)]
struct BotLog {
    rng: Option<SeededRng>,
    heading: (i8, i8),
    ticks: u64,
    wrong_states: u64,
    first_wrong: Option<String>,
    lost: Option<String>,
    max_entities: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("arena: FAILED: {why}");
            ExitCode::FAILURE
        }
    }
}

fn link(loss: f64) -> ConditionerConfig {
    let mut link = ConditionerConfig::perfect();
    link.loss = loss;
    link.latency = Duration::from_millis(20);
    link.jitter = Duration::from_millis(5);
    link
}

fn base_app() -> App {
    let mut app = App::new();
    app.add_plugins(TimePlugin)
        .insert_resource(Time::<Fixed>::from_hz(TICK_HZ));
    app
}

fn run(args: &Args) -> Result<(), String> {
    if !(0.0..1.0).contains(&args.loss)
        || args.bots == 0
        || args.seconds.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater)
    {
        return Err("--bots must be at least 1, --seconds positive, --loss in 0..1".into());
    }
    let truth = Truth::default();
    let localhost = ([127, 0, 0, 1], 0).into();
    let driver = NetDriver::udp(localhost)
        .map_err(|e| format!("binding the server: {e}"))?
        .with_conditioner(link(args.loss), args.seed);
    let server = NetServer::<Game>::new(ServerConfig::default(), driver).map_err(text)?;
    let address = server.local_addr();
    println!("server on udp://{address}");
    let mut server_app = base_app();
    server_app
        .add_plugins(NetServerPlugin::<Game>::default())
        .insert_resource(server)
        .insert_resource(truth.clone())
        .init_resource::<Arena>()
        .add_systems(
            FixedUpdate,
            (spawn_players, play_server, record_truth)
                .chain()
                .before(NetSet::Replicate),
        );

    let mut bots = Vec::new();
    for i in 0..args.bots {
        let driver = NetDriver::udp(localhost)
            .map_err(|e| format!("binding bot {i}: {e}"))?
            .with_conditioner(link(args.loss), args.seed * 1000 + i as u64 + 1);
        let mut client = NetClient::<Game>::new(ClientConfig::named(&format!("bot{i}")), driver);
        client.connect(address).map_err(text)?;
        let mut app = base_app();
        app.add_plugins(NetClientPlugin::<Game>::default())
            .insert_resource(client)
            .insert_resource(truth.clone())
            .insert_resource(BotLog {
                rng: Some(SeededRng::new(args.seed * 7919 + i as u64)),
                ..BotLog::default()
            })
            .add_systems(FixedUpdate, steer.run_if(client_connected))
            .add_systems(bevy_app::Update, check_snapshots);
        bots.push(app);
    }

    let started = Instant::now();
    let end = started + Duration::from_secs_f64(args.seconds);
    let mut next_frame = started;
    while Instant::now() < end {
        step(&mut server_app, &mut bots, &mut next_frame);
    }
    // Leave, and let the leaving notices go out.
    for bot in &mut bots {
        bot.world_mut()
            .resource_mut::<NetClient<Game>>()
            .disconnect();
    }
    let until = Instant::now() + Duration::from_millis(200);
    while Instant::now() < until {
        step(&mut server_app, &mut bots, &mut next_frame);
    }
    let elapsed = started.elapsed().as_secs_f64();
    summarize(args, &mut server_app, &mut bots, elapsed)
}

/// One frame of every App, then a sleep until the next frame.
fn step(server: &mut App, bots: &mut [App], next_frame: &mut Instant) {
    server.update();
    for bot in bots.iter_mut() {
        bot.update();
    }
    // The next frame is due one frame after the last one that was; a wake
    // for a driver deadline in between does not move it.
    let now = Instant::now();
    if now >= *next_frame {
        *next_frame = (*next_frame + FRAME).max(now);
    }
    // Each session keeps its deadlines on its own clock (Bevy's real time
    // from the App's first update), so the loop sleeps to the next frame: at
    // 5 ms that is finer than any deadline of the sessions (20 ms latency,
    // 50 ms ticks).
    std::thread::sleep(next_frame.saturating_duration_since(now));
}

/// A client that entered gets its player entity (numbered by its slot) and
/// player state.
fn spawn_players(mut commands: Commands, mut entered: MessageReader<ClientEntered>) {
    for e in entered.read() {
        commands.entity(e.entity).insert((
            NetEntity(e.client.slot() as u32),
            NetState(Thing {
                kind: PLAYER,
                x: 0,
                y: 0,
            }),
            NetState(Me::default()),
        ));
    }
}

#[allow(clippy::type_complexity)]
fn play_server(
    mut commands: Commands,
    mut arena: ResMut<Arena>,
    mut inputs: MessageReader<CommandReceived<Input>>,
    mut players: Query<(&mut NetState<Thing>, &mut NetState<Me>), Without<Flight>>,
    mut projectiles: Query<(Entity, &mut NetState<Thing>, &mut Flight)>,
) {
    for (entity, mut thing, mut flight) in &mut projectiles {
        if flight.ticks_left == 0 {
            commands.entity(entity).despawn();
            continue;
        }
        flight.ticks_left -= 1;
        thing.0.x = thing.0.x.saturating_add(flight.dx);
        thing.0.y = thing.0.y.saturating_add(flight.dy);
    }
    for input in inputs.read() {
        let Ok((mut body, mut me)) = players.get_mut(input.entity) else {
            continue;
        };
        let c = input.command;
        me.0.x = (me.0.x + 4 * c.dx as i16).clamp(-ARENA, ARENA);
        me.0.y = (me.0.y + 4 * c.dy as i16).clamp(-ARENA, ARENA);
        body.0.x = me.0.x;
        body.0.y = me.0.y;
        if c.fire && (c.dx != 0 || c.dy != 0) {
            me.0.shots += 1;
            let number = FIRST_PROJECTILE + arena.next_projectile;
            arena.next_projectile = (arena.next_projectile + 1) % PROJECTILE_NUMBERS;
            commands.spawn((
                NetEntity(number),
                NetState(Thing {
                    kind: PROJECTILE,
                    x: me.0.x,
                    y: me.0.y,
                }),
                Flight {
                    dx: 12 * c.dx as i16,
                    dy: 12 * c.dy as i16,
                    ticks_left: PROJECTILE_TICKS,
                },
            ));
        }
    }
}

/// Keeps what the master state is about to hold at this tick's server
/// time (the same clock the snapshots are stamped with).
fn record_truth(
    time: Res<Time<Fixed>>,
    truth: Res<Truth>,
    things: Query<(&NetEntity, &NetState<Thing>)>,
    players: Query<(&RemoteClient, &NetState<Me>)>,
) {
    let server_ms = time.elapsed().as_millis() as u32;
    let entities = things.iter().map(|(n, t)| (n.0, t.0)).collect();
    let states = players
        .iter()
        .filter(|(c, _)| c.entered)
        .map(|(c, me)| (c.key.slot(), me.0))
        .collect();
    let mut history = truth.0.lock().unwrap_or_else(|p| p.into_inner());
    history.ticks.insert(server_ms, (entities, states));
    // Snapshots older than ten seconds are long delivered or lost.
    let keep_from = server_ms.saturating_sub(10_000);
    history.ticks = history.ticks.split_off(&keep_from);
}

fn steer(mut net: ResMut<NetClient<Game>>, mut log: ResMut<BotLog>) {
    log.ticks += 1;
    let Some(rng) = log.rng.as_mut() else { return };
    let turn = rng.next_u32();
    let fire = rng.next_u32() % 8 == 0;
    if log.ticks % 20 == 1 {
        let dx = (turn % 5) as i8 - 2;
        let dy = ((turn / 5) % 5) as i8 - 2;
        log.heading = (dx, dy);
    }
    let (dx, dy) = log.heading;
    // Refused only when too many commands are unacknowledged.
    let _ = net.command(Input { dx, dy, fire });
}

/// Every new snapshot must be exactly what the server's game had at its
/// server time; a lost session is a failure.
fn check_snapshots(
    net: Res<NetClient<Game>>,
    truth: Res<Truth>,
    mut log: ResMut<BotLog>,
    mut snapshots: MessageReader<SnapshotReceived>,
    mut gone: MessageReader<DisconnectedFromServer>,
    mut reconnecting: MessageReader<Reconnecting>,
    mirrored: Query<&NetEntity>,
) {
    for g in gone.read() {
        if g.reason != netq3::DisconnectReason::Left {
            log.lost
                .get_or_insert(format!("disconnected: {}", g.reason));
        }
    }
    for r in reconnecting.read() {
        log.lost
            .get_or_insert(format!("reconnecting: {}", r.reason));
    }
    log.max_entities = log.max_entities.max(mirrored.iter().count());
    if snapshots.read().count() == 0 {
        return;
    }
    let Some(snapshot) = net.newest() else { return };
    let history = truth.0.lock().unwrap_or_else(|p| p.into_inner());
    let why = match history.ticks.get(&snapshot.server_time()) {
        None => Some(format!("no server tick at {} ms", snapshot.server_time())),
        Some((entities, players)) => {
            let got: BTreeMap<u32, Thing> = snapshot.entities().map(|(n, t)| (n, *t)).collect();
            let me = net.slot().and_then(|slot| players.get(&slot));
            if got != *entities {
                Some(format!("entities at {} ms differ", snapshot.server_time()))
            } else if me.is_some_and(|me| me != snapshot.player()) {
                Some(format!(
                    "player state at {} ms differs",
                    snapshot.server_time()
                ))
            } else {
                None
            }
        }
    };
    if let Some(why) = why {
        log.wrong_states += 1;
        log.first_wrong.get_or_insert(why);
    }
}

fn summarize(args: &Args, server: &mut App, bots: &mut [App], elapsed: f64) -> Result<(), String> {
    let net = server.world().resource::<NetServer<Game>>();
    let ticks = net.ticks();
    let mut failures = Vec::new();
    if net.errors() > 0 {
        failures.push(format!("the server met {} session errors", net.errors()));
    }
    let mut clients = Vec::new();
    for (i, bot) in bots.iter_mut().enumerate() {
        let mirrored = {
            let world = bot.world_mut();
            let mut q = world.query::<&NetEntity>();
            q.iter(world).count()
        };
        let log = bot.world().resource::<BotLog>();
        let net = bot.world().resource::<NetClient<Game>>();
        let stats = net.stats();
        let interp = net.interpolation_stats();
        if let Some(lost) = &log.lost {
            failures.push(format!("bot{i} lost its connection ({lost})"));
        }
        if let Some(wrong) = &log.first_wrong {
            failures.push(format!(
                "bot{i} saw {} states the server never had (first: {wrong})",
                log.wrong_states
            ));
        }
        if stats.snapshots == 0 || stats.commands_acked == 0 {
            failures.push(format!(
                "bot{i} got no snapshots or no acknowledged commands"
            ));
        }
        if net.errors() > 0 {
            failures.push(format!("bot{i} met {} session errors", net.errors()));
        }
        println!(
            "bot{i}: {} snapshots ({} deltas), {} of {} commands acknowledged, up to {} entities, {} of {} frames stalled",
            stats.snapshots, interp.delta_snapshots, stats.commands_acked, stats.commands,
            log.max_entities, interp.stalls, interp.frames
        );
        clients.push(serde_json::json!({
            "name": format!("bot{i}"),
            "snapshots": stats.snapshots,
            "delta_snapshots": interp.delta_snapshots,
            "commands_sent": stats.commands,
            "commands_acknowledged": stats.commands_acked,
            "replicated_entities": log.max_entities,
            "entities_at_end": mirrored,
            "interpolation_frames": interp.frames,
            "interpolation_stalls": interp.stalls,
            "wrong_states": log.wrong_states,
            "lost_connection": log.lost.is_some(),
        }));
    }
    println!("server: {ticks} ticks in {elapsed:.2} s");
    let summary = serde_json::json!({
        "ticks": ticks,
        "seconds": elapsed,
        "bots": args.bots,
        "loss": args.loss,
        "seed": args.seed,
        "ok": failures.is_empty(),
        "failures": failures,
        "clients": clients,
    });
    if let Some(path) = &args.summary_json {
        write_atomically(path, &summary).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

/// Writes via a temporary file beside `path` and a rename, so a failed run
/// leaves no half-written summary.
fn write_atomically(path: &Path, value: &serde_json::Value) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    std::fs::write(&tmp, text + "\n")?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

fn text(error: impl std::fmt::Display) -> String {
    error.to_string()
}
