//! Embedding the library in a game loop: a server and one client over the
//! in-process link (swap `LocalDriver` for `UdpDriver` to use a socket),
//! with the link conditioner dropping a tenth of the datagrams. The server
//! keeps the master state in a `snapshot::Server`, sends the gamestate on
//! the guaranteed-ordered channel and each tick's snapshot as the state
//! payload, and acknowledges the snapshots netchan reports delivered.
//!
//! ```sh
//! cargo run -p arena --example embed
//! ```

use std::time::{Duration, Instant};

use fields::{net_struct, q3_float, unsigned};
use netchan::{
    ConditionerConfig, ConnectOptions, ConnectionId, Endpoint, EndpointConfig, Event, LocalDriver,
    LocalHub, StateId,
};
use snapshot::{AllInScope, BuildOutcome, Client, ClientId, ClientSettings, Server, ServerConfig};

net_struct! {
    /// A ball rolling across the map.
    pub struct Ball {
        /// Position.
        pub x: f32 = q3_float(),
        /// Position.
        pub y: f32 = q3_float(),
    }
}

net_struct! {
    /// What the player sees of itself.
    pub struct Hud {
        /// Score.
        pub score: u16 = unsigned(10),
    }
}

/// A connected client, server side.
struct Peer {
    conn: ConnectionId,
    id: ClientId,
    in_flight: Vec<(StateId, u32)>,
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Connect: add a snapshot stream, send the gamestate (guaranteed, ordered).
/// Delivered: that snapshot is a valid base for the next delta.
fn handle(
    net: &mut LocalDriver,
    game: &mut Server<Ball, Hud>,
    peers: &mut Vec<Peer>,
    event: Event,
) -> Result<()> {
    match event {
        Event::Connected { conn, .. } => {
            let id = game.add_client(ClientSettings::default())?;
            let mut gamestate = Vec::new();
            game.write_gamestate(&mut gamestate)?;
            let connection = net.endpoint_mut().connection_mut(conn).ok_or("gone")?;
            connection.send_ordered(&gamestate)?;
            peers.push(Peer {
                conn,
                id,
                in_flight: Vec::new(),
            });
        }
        Event::StateDelivered { conn, id: state } => {
            for peer in peers.iter_mut().filter(|p| p.conn == conn) {
                if let Some(&(_, sequence)) = peer.in_flight.iter().find(|(s, _)| *s == state) {
                    game.acknowledge(peer.id, sequence)?;
                }
                peer.in_flight.retain(|(s, _)| *s > state);
            }
        }
        _ => {}
    }
    Ok(())
}

// README:begin
/// One server frame: network in, simulate, one snapshot per client out.
fn server_frame(
    net: &mut LocalDriver,
    game: &mut Server<Ball, Hud>,
    peers: &mut Vec<Peer>,
    now: Instant,
    time_ms: u32,
) -> Result<()> {
    net.pump(now); // receive, run timers, send
    while let Some(event) = net.endpoint_mut().poll_event() {
        handle(net, game, peers, event)?; // connect → gamestate, delivered → acknowledge
    }
    game.entity_mut(1).ok_or("no ball")?.x += 4.0; // your simulation
    game.commit_frame(time_ms)?;
    let mut bytes = Vec::new();
    for peer in peers.iter_mut() {
        let outcome = game.build_snapshot(peer.id, &mut AllInScope, &mut bytes)?;
        if let BuildOutcome::Built(info) = outcome {
            let connection = net.endpoint_mut().connection_mut(peer.conn).ok_or("gone")?;
            let state = connection.send_state(&bytes)?; // delta vs. newest acked
            peer.in_flight.push((state, info.sequence));
        }
    }
    Ok(())
}
// README:end

fn main() -> Result<()> {
    let hub = LocalHub::new();
    let start = Instant::now();
    let mut server =
        LocalDriver::bind_local(&hub, None, Endpoint::new(EndpointConfig::server(), start))?;
    let mut client =
        LocalDriver::bind_local(&hub, None, Endpoint::new(EndpointConfig::client(), start))?;
    let lossy = ConditionerConfig {
        loss: 0.1,
        latency: Duration::from_millis(30),
        ..ConditionerConfig::default()
    };
    server.set_conditioner(lossy.clone(), 1);
    client.set_conditioner(lossy, 2);
    let options = ConnectOptions {
        client_id: 7,
        encrypt: false,
        compress: true,
    };
    client
        .endpoint_mut()
        .connect(start, server.local_addr(), options)?;

    let mut game: Server<Ball, Hud> = Server::new(ServerConfig::default())?;
    game.set_entity(1, Ball { x: 0.0, y: 0.0 })?;
    let mut peers = Vec::new();
    let mut view: Client<Ball, Hud> = Client::new();
    // Simulated time: 5 ms steps, a server frame every 50 ms.
    for step in 0..1000u32 {
        let now = start + Duration::from_millis(step as u64 * 5);
        if step % 10 == 0 {
            server_frame(&mut server, &mut game, &mut peers, now, step * 5)?;
        } else {
            server.pump(now);
        }
        client.pump(now);
        while let Some(event) = client.endpoint_mut().poll_event() {
            if let Event::Message { data, .. } | Event::State { data, .. } = event {
                // The gamestate (ordered) and snapshots (state) both go here.
                let _ = view.read_message(&data);
            }
        }
    }
    let stats = view.stats();
    let newest = view.newest().ok_or("no snapshot arrived")?;
    println!(
        "client: {} snapshots ({} full), ball at x = {} (server: {})",
        stats.snapshots,
        stats.full_updates,
        newest.entity(1).map_or(f32::NAN, |b| b.x),
        game.entity(1).map_or(f32::NAN, |b| b.x),
    );
    Ok(())
}
