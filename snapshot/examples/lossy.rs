//! A server and two clients exchanging snapshots in memory over a link
//! that loses a fifth of the snapshots and a third of the acks. Nothing is
//! retransmitted: each snapshot is a delta from the newest one the client
//! acknowledged, so it carries whatever the client missed.
//!
//! ```sh
//! cargo run -p netq3-snapshot --example lossy
//! ```

use fields::{net_struct, q3_float, signed, unsigned, Codec};
use netq3_snapshot::{
    BuildOutcome, Client, ClientId, ClientSettings, Received, Server, ServerConfig, SyncCheck,
};

net_struct! {
    /// A ball rolling around the arena.
    pub struct Ball {
        /// Position.
        pub x: f32 = q3_float(),
        /// Position.
        pub y: f32 = q3_float(),
        /// The player who last touched it.
        pub owner: u8 = unsigned(6),
    }
}

net_struct! {
    /// What each player sees of themselves.
    pub struct Hud {
        /// The player's position.
        pub x: f32 = q3_float(),
        /// The player's score.
        pub score: i16 = signed(16),
    }
}

struct Peer {
    name: &'static str,
    id: ClientId,
    client: Client<Ball, Hud>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut server: Server<Ball, Hud> = Server::new(ServerConfig::for_codec(Codec::Native))?;
    server.set_configstring(0, "example arena")?;
    // Balls start at the centre: a spawn baseline makes their arrival cheap.
    for number in 0..32 {
        server.set_baseline(number, Some(Ball::default()))?;
    }
    let mut gamestate = Vec::new();
    server.write_gamestate(&mut gamestate)?;

    let modem = ClientSettings {
        snapshot_rate: 20,
        byte_rate: 600,
        burst_bytes: 300,
        ..ClientSettings::default()
    };
    let mut peers = Vec::new();
    for (name, settings) in [("lan", ClientSettings::unlimited()), ("modem", modem)] {
        let mut client = Client::new();
        // The gamestate goes on the reliable channel, so it always arrives.
        client.read_message(&gamestate)?;
        peers.push(Peer {
            name,
            id: server.add_client(settings)?,
            client,
        });
    }

    // Clients see balls within 600 units of their x.
    let mut scope = |_: ClientId, hud: &Hud, _: u32, ball: &Ball| {
        let distance = (ball.x - hud.x).abs();
        (distance < 600.0).then_some(1.0 / (1.0 + distance))
    };
    // The workspace's seeded generator drives the simulated network.
    let mut net = netchan::SeededRng::new(42);
    let mut bytes = Vec::new();
    for frame in 0..600u32 {
        // Balls roll; one is spawned or removed now and then.
        for number in 0..32 {
            if let Some(ball) = server.entity_mut(number) {
                ball.x += ((number % 7) as f32 - 3.0) * 2.0;
                ball.y += 1.0;
            } else if net.chance(0.02) {
                server.set_entity(
                    number,
                    Ball {
                        x: (number * 40) as f32,
                        y: 0.0,
                        owner: (number % 2) as u8,
                    },
                )?;
            }
        }
        if net.chance(0.03) {
            server.remove_entity(frame % 32);
        }
        for (index, peer) in peers.iter().enumerate() {
            let hud = server.player_state_mut(peer.id)?;
            hud.x = 400.0 + 300.0 * ((frame as f32 / 100.0) + index as f32).sin();
            hud.score = (frame / 50) as i16;
        }
        server.commit_frame(frame * 16)?;

        for peer in &mut peers {
            let BuildOutcome::Built(info) =
                server.build_snapshot(peer.id, &mut scope, &mut bytes)?
            else {
                continue;
            };
            if net.chance(0.20) {
                continue; // the snapshot is lost
            }
            // The transport carries the sequence (netchan's state id).
            match peer.client.read_snapshot(info.sequence, &bytes)? {
                Received::Snapshot(report) => {
                    assert_eq!(report.sequence, info.sequence);
                    if report.sync == SyncCheck::Mismatched {
                        server.request_full_update(peer.id)?;
                    }
                }
                other => println!("{}: {other:?}", peer.name),
            }
            if let Some(ack) = peer.client.ack() {
                if !net.chance(0.33) {
                    server.acknowledge(peer.id, ack)?;
                }
            }
        }
    }

    for peer in &peers {
        let sent = server.stats(peer.id)?;
        let received = peer.client.stats();
        let newest = peer.client.newest().ok_or("no snapshot arrived")?;
        let record = server
            .sent_snapshot(peer.id, newest.sequence())
            .ok_or("record left the ring")?;
        let same = newest.player() == record.player() && newest.entities().eq(record.entities());
        println!("{}:", peer.name);
        println!(
            "  sent {} snapshots ({} full updates, {} bytes, {} rate-delayed, {} budget-limited)",
            sent.snapshots, sent.full_updates, sent.bytes, sent.rate_delayed, sent.budget_limited
        );
        println!(
            "  received {} ({} sync checks matched, {} mismatched, {} rejected)",
            received.snapshots,
            received.checksums_matched,
            received.checksum_mismatches,
            received.rejected()
        );
        println!(
            "  holds {} balls at server time {} ms; identical to the server's record: {same}",
            newest.len(),
            newest.server_time()
        );
        println!(
            "  map: {}",
            peer.client
                .gamestate()
                .and_then(|g| g.configstring(0))
                .unwrap_or("?")
        );
    }
    Ok(())
}
