//! A server and two clients in threads over real UDP sockets on 127.0.0.1
//! and the real clock, each client's link through the seeded conditioner
//! (10% loss, 20 ms ± 5 ms each way). Every loop sleeps until its next
//! frame or its endpoint's next deadline, whichever comes first.
//!
//! Each client walks through a session's whole life: it connects, walks
//! right until its own player state (which the server sets and the
//! snapshots carry) shows it far enough, sends a reliable greeting and waits
//! for the server's reliable answer, leaves, joins again and walks once
//! more. The run is bounded (15 s): it exits 0 when every client did all of
//! that, non-zero with the reason otherwise.
//!
//! ```sh
//! cargo run -p netq3-session --example udp
//! ```

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use netq3_session::{
    net_struct, signed, unsigned, AllInScope, Client, ClientConfig, ClientEvent, ClientKey,
    ClientState, ConditionerConfig, Endpoint, Server, ServerConfig, ServerEvent, UdpDriver,
};

// The game's three types. A player's entity is numbered its slot + 1.
net_struct! { struct Body { x: i16 = signed(16), y: i16 = signed(16), } }
net_struct! { struct Me { x: i16 = signed(16), steps: u16 = unsigned(16), } }
net_struct! { struct Walk { dx: i8 = signed(8), } }

/// 20 frames a second on both sides.
const FRAME: Duration = Duration::from_millis(50);
/// How long the whole run may take.
const LIMIT: Duration = Duration::from_secs(15);
/// How far (in steps the server counted) a client walks in each session.
const WALK: u16 = 20;
const CLIENTS: usize = 2;

type Result<T> = std::result::Result<T, String>;

fn main() -> ExitCode {
    match run() {
        Ok(()) => {
            println!("udp: every client played, messaged, left and rejoined");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("udp: FAILED: {why}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let (addr_tx, addr_rx) = mpsc::channel();
    let server = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || serve(addr_tx, &stop))
    };
    let addr: SocketAddr = addr_rx
        .recv_timeout(Duration::from_secs(5))
        .map_err(|_| "the server did not start".to_string())?;
    println!("server on udp://{addr}");
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| thread::spawn(move || play(i, addr, started + LIMIT)))
        .collect();
    let mut failures = Vec::new();
    for (i, client) in clients.into_iter().enumerate() {
        match client.join() {
            Ok(Ok(())) => {}
            Ok(Err(why)) => failures.push(format!("client {i}: {why}")),
            Err(_) => failures.push(format!("client {i} panicked")),
        }
    }
    stop.store(true, Ordering::Relaxed);
    match server.join() {
        Ok(Ok(stats)) => println!("server: {stats}"),
        Ok(Err(why)) => failures.push(format!("server: {why}")),
        Err(_) => failures.push("the server panicked".into()),
    }
    println!("took {:.2} s", started.elapsed().as_secs_f64());
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

/// The server's thread: plays until told to stop, then shuts down cleanly.
fn serve(addr_tx: mpsc::Sender<SocketAddr>, stop: &AtomicBool) -> Result<String> {
    let now = Instant::now();
    let mut server = Server::<Body, Me, Walk>::new(ServerConfig::default()).map_err(text)?;
    let endpoint = Endpoint::new(server.endpoint_config(), now);
    let mut sv = UdpDriver::bind_udp(([127, 0, 0, 1], 0).into(), endpoint).map_err(text)?;
    addr_tx.send(sv.local_addr()).map_err(text)?;
    let mut players: HashMap<ClientKey, Me> = HashMap::new();
    let (mut tick, mut next_frame) = (0u32, now);
    let mut answered = 0;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        sv.pump(now);
        server.update(sv.endpoint_mut(), now).map_err(text)?;
        while let Some(event) = server.poll_event() {
            match event {
                // Spawn the player once it holds the gamestate.
                ServerEvent::Entered { client, .. } => {
                    let me = Me::default();
                    players.insert(client, me);
                    server.set_player_state(client, me).map_err(text)?;
                    let body = Body { x: me.x, y: 0 };
                    let number = client.slot() as u32 + 1;
                    server.world_mut().set_entity(number, body).map_err(text)?;
                }
                ServerEvent::Command {
                    client, command, ..
                } => {
                    if let Some(me) = players.get_mut(&client) {
                        me.x = me.x.saturating_add(command.dx.into());
                        me.steps = me.steps.saturating_add(1);
                        let me = *me;
                        server.set_player_state(client, me).map_err(text)?;
                        let number = client.slot() as u32 + 1;
                        if let Some(body) = server.world_mut().entity_mut(number) {
                            body.x = me.x;
                        }
                    }
                }
                ServerEvent::Message { client, data } => {
                    let mut reply = b"welcome, ".to_vec();
                    reply.extend_from_slice(&data);
                    server
                        .send_reliable(sv.endpoint_mut(), client, &reply)
                        .map_err(text)?;
                    answered += 1;
                }
                ServerEvent::Disconnected { client, reason, .. } => {
                    println!("server: slot {} left ({reason})", client.slot());
                    players.remove(&client);
                    server.world_mut().remove_entity(client.slot() as u32 + 1);
                }
                ServerEvent::Connected { .. } => {}
            }
        }
        if now >= next_frame {
            tick += 1;
            let time = tick * FRAME.as_millis() as u32;
            server
                .send_snapshots(sv.endpoint_mut(), time, &mut AllInScope)
                .map_err(text)?;
            next_frame += FRAME;
        }
        // Sleep until the next frame or the endpoint's next deadline, or a
        // datagram arrives.
        sv.wait(now, next_frame.saturating_duration_since(now))
            .map_err(text)?;
    }
    server.shutdown(sv.endpoint_mut(), false);
    let until = Instant::now() + Duration::from_millis(200);
    while Instant::now() < until {
        let now = Instant::now();
        sv.pump(now);
        server.update(sv.endpoint_mut(), now).map_err(text)?;
        sv.wait(now, Duration::from_millis(10)).map_err(text)?;
    }
    Ok(format!(
        "{tick} ticks, {answered} messages answered, stats {:?}",
        server.stats()
    ))
}

/// Where a client is in its script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Walking in its first session, then greeting the server.
    FirstWalk,
    /// Waiting for the server's answer to its greeting.
    AwaitAnswer,
    /// Left; waiting for the client to be disconnected.
    Leaving,
    /// Joined again, walking once more.
    SecondWalk,
    Done,
}

/// One client's thread: the whole script, or why it could not finish it.
fn play(index: usize, server: SocketAddr, deadline: Instant) -> Result<()> {
    let name = format!("walker{index}");
    let mut client = Client::<Body, Me, Walk>::new(ClientConfig::named(&name));
    let endpoint = Endpoint::new(client.endpoint_config(), Instant::now());
    let mut cl = UdpDriver::bind_udp(([127, 0, 0, 1], 0).into(), endpoint).map_err(text)?;
    let mut link = ConditionerConfig::perfect();
    link.loss = 0.1;
    link.latency = Duration::from_millis(20);
    link.jitter = Duration::from_millis(5);
    cl.set_conditioner(link, 100 + index as u64);
    client
        .connect(cl.endpoint_mut(), Instant::now(), server)
        .map_err(text)?;
    let greeting = format!("{name} says hello");
    let mut step = Step::FirstWalk;
    let mut next_frame = Instant::now();
    while step != Step::Done {
        let now = Instant::now();
        if now > deadline {
            return Err(format!("timed out at {step:?} ({:?})", client.state()));
        }
        cl.pump(now);
        client.update(cl.endpoint_mut(), now).map_err(text)?;
        while let Some(event) = client.poll_event() {
            match event {
                ClientEvent::Gamestate { slot, .. } => {
                    println!("{name}: in the game as slot {slot}");
                }
                ClientEvent::Message(data) => {
                    let text = String::from_utf8_lossy(&data);
                    println!("{name}: the server says \"{text}\"");
                    if step == Step::AwaitAnswer && text.ends_with(&greeting) {
                        client.disconnect(cl.endpoint_mut());
                        step = Step::Leaving;
                    }
                }
                ClientEvent::Disconnected { reason } if step != Step::Leaving => {
                    return Err(format!("disconnected at {step:?}: {reason}"));
                }
                ClientEvent::Reconnecting { reason } => {
                    return Err(format!("lost the session at {step:?}: {reason}"));
                }
                _ => {}
            }
        }
        // The client's own player state, as the newest snapshot has it.
        let own = client.snapshots().newest().map(|s| *s.player());
        match step {
            Step::FirstWalk if own.is_some_and(|me| me.steps >= WALK) => {
                let me = own.unwrap_or_default();
                println!("{name}: walked to x = {} in {} steps", me.x, me.steps);
                client
                    .send_reliable(cl.endpoint_mut(), greeting.as_bytes())
                    .map_err(text)?;
                step = Step::AwaitAnswer;
            }
            Step::Leaving if client.state() == ClientState::Disconnected => {
                if client.snapshots().newest().is_some() {
                    return Err("snapshots of the old session are still held".into());
                }
                println!("{name}: left; joining again");
                client
                    .connect(cl.endpoint_mut(), now, server)
                    .map_err(text)?;
                step = Step::SecondWalk;
            }
            // A new session: the player starts over at the spawn point.
            Step::SecondWalk if own.is_some_and(|me| me.steps >= WALK) => {
                let me = own.unwrap_or_default();
                let body = client
                    .slot()
                    .and_then(|slot| client.snapshots().newest()?.entity(slot as u32 + 1));
                if body.map(|b| b.x) != Some(me.x) {
                    return Err(format!("its entity {body:?} is not where it is ({me:?})"));
                }
                println!("{name}: back, walked to x = {} again", me.x);
                client.disconnect(cl.endpoint_mut());
                step = Step::Done;
            }
            _ => {}
        }
        if now >= next_frame {
            if client.state() == ClientState::Active && step != Step::Leaving {
                // Refused only while the server is not answering at all.
                let _ = client.command(Walk { dx: 1 });
                client.update(cl.endpoint_mut(), now).map_err(text)?;
            }
            next_frame += FRAME;
        }
        // Sleep until the next frame, the session's or the endpoint's next
        // deadline, or a datagram.
        let wake = client
            .next_deadline()
            .map_or(next_frame, |d| d.min(next_frame));
        cl.wait(now, wake.saturating_duration_since(now))
            .map_err(text)?;
    }
    // Let the leaving notice go out.
    let until = Instant::now() + Duration::from_millis(100);
    while Instant::now() < until {
        let now = Instant::now();
        cl.pump(now);
        client.update(cl.endpoint_mut(), now).map_err(text)?;
        cl.wait(now, Duration::from_millis(10)).map_err(text)?;
    }
    Ok(())
}

fn text(error: impl std::fmt::Display) -> String {
    error.to_string()
}
