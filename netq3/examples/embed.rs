//! Embedding the library in a game loop: a server and a client over the
//! in-process link (a `UdpDriver` works the same), the link conditioner
//! dropping a tenth of the client's datagrams. The session does the wiring
//! — handshake, gamestate, snapshot acknowledgements, command packets — so
//! the game only moves its ball and reads what arrives.
//!
//! One dependency, `netq3` with its default features:
//!
//! ```sh
//! cargo run -p netq3 --example embed
//! ```

// README:begin
use std::time::{Duration, Instant};

use netq3::{net_struct, q3_float, signed, unsigned};
use netq3::{AllInScope, Client, ClientConfig, Server, ServerConfig, ServerEvent};
use netq3::{ConditionerConfig, Endpoint, LocalDriver, LocalHub};

// The game's three types: the entity, the player state, the command.
net_struct! { struct Ball { x: f32 = q3_float(), } }
net_struct! { struct Score { points: u16 = unsigned(10), } }
net_struct! { struct Push { dx: i8 = signed(8), } }

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (hub, mut now) = (LocalHub::new(), Instant::now());
    let mut server = Server::<Ball, Score, Push>::new(ServerConfig::default())?;
    let mut client = Client::<Ball, Score, Push>::new(ClientConfig::named("player"));
    let mut sv = LocalDriver::bind_local(&hub, None, Endpoint::new(server.endpoint_config(), now))?;
    let mut cl = LocalDriver::bind_local(&hub, None, Endpoint::new(client.endpoint_config(), now))?;
    let mut link = ConditionerConfig::perfect();
    link.loss = 0.1; // a tenth of the client's datagrams are lost
    cl.set_conditioner(link, 7);
    client.connect(cl.endpoint_mut(), now, sv.local_addr())?;
    server.world_mut().set_entity(1, Ball::default())?;
    for tick in 1..=100u32 {
        now += Duration::from_millis(50);
        sv.pump(now);
        server.update(sv.endpoint_mut(), now)?;
        while let Some(event) = server.poll_event() {
            if let ServerEvent::Command { command, .. } = event {
                server.world_mut().entity_mut(1).ok_or("no ball")?.x += command.dx as f32;
            }
        }
        server.send_snapshots(sv.endpoint_mut(), tick * 50, &mut AllInScope)?;
        cl.pump(now);
        client.update(cl.endpoint_mut(), now)?;
        while client.poll_event().is_some() {} // gamestate, snapshots, reasons
        if let Some(ball) = client.snapshots().newest().and_then(|s| s.entity(1)) {
            println!("tick {tick}: the client sees the ball at x = {}", ball.x);
        }
        let _ = client.command(Push { dx: 4 }); // refused until the gamestate is in
    }
    Ok(())
}
// README:end
