//! A server App and a client App stepped by hand (10 ms of simulated time a
//! frame, no sleeps) over the in-process link with loss, duplication,
//! reordering and jitter from seeded conditioners on both sides.

use std::time::Duration;

use bevy_app::{App, FixedUpdate};
use bevy_ecs::prelude::*;
use bevy_netq3::*;
use bevy_time::{Fixed, Time, TimePlugin, TimeUpdateStrategy};
use netq3::{
    net_struct, signed, unsigned, ClientConfig, ConditionerConfig, Interpolate, LocalHub,
    RenderPoint, ServerConfig,
};

net_struct! { struct Body { x: i16 = signed(16), y: i16 = signed(16), } }
net_struct! { struct Me { steps: u16 = unsigned(16), } }
net_struct! { struct Step { serial: u16 = unsigned(16), dx: i8 = signed(8), } }

impl Interpolate for Body {
    fn interpolate(newest: &Self, previous: Option<&Self>, at: &RenderPoint) -> Self {
        let Some(previous) = previous else {
            return *newest;
        };
        let lerp = |a: i16, b: i16| (a as f32 + (b as f32 - a as f32) * at.fraction).round() as i16;
        Body {
            x: lerp(previous.x, newest.x),
            y: lerp(previous.y, newest.y),
        }
    }
}

struct Game;
impl NetGame for Game {
    type Entity = Body;
    type Player = Me;
    type Command = Step;
    fn translation(body: &Body) -> [f32; 3] {
        [body.x as f32, body.y as f32, 0.0]
    }
}

/// Fixed ticks the server's three bodies move for (then they stop).
const MOVING_TICKS: i16 = 60;
/// Commands and reliable messages the client sends.
const COMMANDS: u16 = 100;
const MESSAGES: usize = 10;
const FRAMES: usize = 800;

/// What the server's game saw.
#[derive(Resource, Default)]
struct ServerLog {
    commands: Vec<(u32, u16)>,
    messages: Vec<Vec<u8>>,
    entered: usize,
    ticks: i16,
}

/// What the client's game did and saw.
#[derive(Resource, Default)]
struct ClientLog {
    next_serial: u16,
    sent_messages: usize,
    answers: Vec<Vec<u8>>,
    snapshots: usize,
}

fn lossy(seed_offset: u64) -> (ConditionerConfig, u64) {
    let mut link = ConditionerConfig::perfect();
    link.loss = 0.1;
    link.duplicate = 0.05;
    link.reorder = 0.1;
    link.reorder_delay = Duration::from_millis(15);
    link.latency = Duration::from_millis(20);
    link.jitter = Duration::from_millis(5);
    (link, 7 + seed_offset)
}

fn app() -> App {
    let mut app = App::new();
    app.add_plugins(TimePlugin)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(
            10,
        )))
        .insert_resource(Time::<Fixed>::from_hz(20.0));
    app
}

fn server_app(hub: &LocalHub) -> App {
    let (link, seed) = lossy(0);
    let driver = NetDriver::local(hub, None)
        .unwrap()
        .with_conditioner(link, seed);
    let server = NetServer::<Game>::new(ServerConfig::default(), driver).unwrap();
    let mut app = app();
    app.add_plugins(NetServerPlugin::<Game>::default())
        .insert_resource(server)
        .init_resource::<ServerLog>()
        .add_systems(
            FixedUpdate,
            (spawn_players, server_game)
                .chain()
                .before(NetSet::Replicate),
        );
    for i in 0..3 {
        app.world_mut().spawn((
            NetEntity(40 + i),
            NetState(Body {
                x: 0,
                y: 100 * i as i16,
            }),
        ));
    }
    app
}

/// A client that entered gets its player state (applied before its
/// commands are: the chain puts a sync point between the two systems).
fn spawn_players(
    mut log: ResMut<ServerLog>,
    mut commands: Commands,
    mut entered: MessageReader<ClientEntered>,
) {
    for e in entered.read() {
        log.entered += 1;
        commands.entity(e.entity).insert(NetState(Me::default()));
    }
}

fn server_game(
    mut net: ResMut<NetServer<Game>>,
    mut log: ResMut<ServerLog>,
    mut received: MessageReader<CommandReceived<Step>>,
    mut messages: MessageReader<MessageFromClient>,
    mut bodies: Query<(&NetEntity, &mut NetState<Body>)>,
    mut players: Query<&mut NetState<Me>>,
) {
    for c in received.read() {
        log.commands.push((c.number, c.command.serial));
        if let Ok(mut me) = players.get_mut(c.entity) {
            me.0.steps += 1;
        }
    }
    for m in messages.read() {
        log.messages.push(m.data.clone());
        let mut answer = b"echo:".to_vec();
        answer.extend_from_slice(&m.data);
        net.send_reliable(m.client, &answer).unwrap();
    }
    if log.ticks < MOVING_TICKS {
        log.ticks += 1;
        for (number, mut body) in &mut bodies {
            body.0.x += 3 * (number.0 as i16 - 39);
        }
    }
}

fn client_app(hub: &LocalHub, server: std::net::SocketAddr) -> App {
    let (link, seed) = lossy(1);
    let driver = NetDriver::local(hub, None)
        .unwrap()
        .with_conditioner(link, seed);
    let mut client = NetClient::<Game>::new(ClientConfig::named("bot"), driver);
    client.connect(server).unwrap();
    let mut app = app();
    app.add_plugins(NetClientPlugin::<Game>::default())
        .insert_resource(client)
        .init_resource::<ClientLog>()
        .add_systems(FixedUpdate, client_game.run_if(client_connected));
    app
}

fn client_game(
    mut net: ResMut<NetClient<Game>>,
    mut log: ResMut<ClientLog>,
    mut answers: MessageReader<MessageFromServer>,
    mut snapshots: MessageReader<SnapshotReceived>,
    mut gone: MessageReader<DisconnectedFromServer>,
) {
    assert_eq!(gone.read().count(), 0, "the client lost its session");
    log.snapshots += snapshots.read().count();
    for a in answers.read() {
        log.answers.push(a.0.clone());
    }
    if log.next_serial < COMMANDS {
        let serial = log.next_serial;
        net.command(Step { serial, dx: 1 }).unwrap();
        log.next_serial += 1;
    }
    if log.sent_messages < MESSAGES && log.next_serial % 5 == 0 {
        let text = format!("m{}", log.sent_messages);
        net.send_reliable(text.as_bytes()).unwrap();
        log.sent_messages += 1;
    }
}

#[test]
fn two_apps_over_a_lossy_link() {
    let hub = LocalHub::new();
    let mut server = server_app(&hub);
    let address = server.world().resource::<NetServer<Game>>().local_addr();
    let mut client = client_app(&hub, address);
    let mut max_error_while_moving = 0f32;
    for frame in 0..FRAMES {
        server.update();
        client.update();
        // While the bodies move, the client draws them a little in the past,
        // never far from where the server has them.
        if frame % 10 == 0 {
            let truth = positions(&mut server);
            for (number, at) in positions(&mut client) {
                if let Some((_, want)) = truth.iter().find(|(n, _)| *n == number) {
                    max_error_while_moving = max_error_while_moving.max((want[0] - at[0]).abs());
                }
            }
        }
    }

    let (slog, clog) = (
        server.world().resource::<ServerLog>(),
        client.world().resource::<ClientLog>(),
    );
    // Every command exactly once, in order, numbered from 1.
    let expected: Vec<(u32, u16)> = (0..COMMANDS).map(|s| (s as u32 + 1, s)).collect();
    assert_eq!(slog.commands, expected);
    // Reliable messages both ways, in order, exactly once.
    let sent: Vec<Vec<u8>> = (0..MESSAGES)
        .map(|i| format!("m{i}").into_bytes())
        .collect();
    assert_eq!(slog.messages, sent);
    let echoed: Vec<Vec<u8>> = (0..MESSAGES)
        .map(|i| format!("echo:m{i}").into_bytes())
        .collect();
    assert_eq!(clog.answers, echoed);
    assert_eq!(slog.entered, 1);
    assert_eq!(slog.ticks, MOVING_TICKS);
    assert!(clog.snapshots > 0);

    // The client's interpolated transforms converged on the server's.
    let mut truth = positions(&mut server);
    let mut seen = positions(&mut client);
    truth.sort_by_key(|(n, _)| *n);
    seen.sort_by_key(|(n, _)| *n);
    assert_eq!(truth.len(), 3);
    assert_eq!(seen, truth);
    assert_eq!(truth[2].1, [3.0 * 3.0 * MOVING_TICKS as f32, 200.0, 0.0]);
    // Drawn a snapshot interval or so behind a body moving 9 units a tick.
    // (The seeded links and simulated time make every count below exact.)
    assert_eq!(max_error_while_moving, 18.0);

    // The player state the server kept from the commands reached the client.
    let net = client.world().resource::<NetClient<Game>>();
    assert_eq!(net.newest().map(|s| s.player().steps), Some(COMMANDS));
    assert_eq!(net.stats().commands_acked, COMMANDS as u64);
    let interp = net.interpolation_stats();
    let stats = net.stats();
    assert_eq!((stats.snapshots, stats.full_snapshots), (132, 2));
    assert_eq!(
        (stats.checksums_matched, stats.checksum_mismatches),
        (15, 0)
    );
    assert_eq!(
        interp,
        InterpolationStats {
            frames: 735,
            stalls: 84,
            delta_snapshots: 130
        }
    );
    assert_eq!(net.errors(), 0);
    assert_eq!(server.world().resource::<NetServer<Game>>().errors(), 0);
}

/// Every replicated body's place: the server's state, or the client's
/// interpolated transform.
fn positions(app: &mut App) -> Vec<(u32, [f32; 3])> {
    let world = app.world_mut();
    if world.contains_resource::<NetServer<Game>>() {
        let mut q = world.query::<(&NetEntity, &NetState<Body>)>();
        q.iter(world)
            .map(|(n, s)| (n.0, Game::translation(&s.0)))
            .collect()
    } else {
        let mut q = world.query::<(&NetEntity, &NetTransform)>();
        q.iter(world).map(|(n, t)| (n.0, t.translation)).collect()
    }
}
