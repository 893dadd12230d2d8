//! A small generated match, recorded server-side: ships that fly, turn,
//! get hit, despawn and respawn, seen by one player whose view is limited
//! to a radius, recorded through `Server::add_recorder` with periodic
//! keyframes. Shared by the tests and `examples/record_match.rs`.

#![allow(dead_code)]

use fields::{net_struct, q3_float, quantized, signed, unsigned, Codec, Fields};
use netq3_demo::{DemoHeader, Recorder};
use snapshot::{BuildOutcome, ClientSettings, Models, Server, ServerConfig};

net_struct! {
    /// A ship.
    pub struct Ship {
        /// Position.
        pub x: f32 = q3_float(),
        /// Position.
        pub y: f32 = q3_float(),
        /// Heading, quantized.
        pub heading: f32 = quantized(0.0, 360.0, 10),
        /// Hull points.
        pub hull: u16 = unsigned(9),
        /// Model.
        pub model: u8 = unsigned(4),
    }
}

net_struct! {
    /// The viewing player.
    pub struct Pilot {
        /// Position.
        pub x: f32 = q3_float(),
        /// Position.
        pub y: f32 = q3_float(),
        /// Health (negative when dead).
        pub health: i16 = signed(10),
        /// Ammunition per weapon.
        pub ammo: [u16; 4] = fields::array(unsigned(9), 4),
        /// Score.
        pub score: i16 = signed(12),
    }
}

/// What the recorded client holds after one snapshot, as field words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    /// Snapshot sequence.
    pub sequence: u32,
    /// Server time, ms.
    pub time: u32,
    /// Player-state words.
    pub player: Vec<u32>,
    /// Entities: number and words.
    pub entities: Vec<(u32, Vec<u32>)>,
}

/// Every field word of a state, in order.
pub fn words<T: Fields>(value: &T) -> Vec<u32> {
    let mut out = Vec::new();
    for field in 0..value.field_count() {
        for element in 0..value.field_kind(field).elements() {
            out.push(value.word(field, element));
        }
    }
    out
}

/// A recorded match: the demo bytes and what each snapshot must decode to.
pub struct Match {
    /// The finished demo.
    pub demo: Vec<u8>,
    /// Per snapshot, in order.
    pub expected: Vec<Expected>,
}

/// Plays `frames` frames at 20 Hz (50 ms) with a keyframe every
/// `keyframe_every` frames, recording the player's view.
pub fn record_match(codec: Codec, frames: u32, keyframe_every: u32) -> Match {
    record_match_with(codec, frames, keyframe_every, Models::of_types())
}

/// [`record_match`] with the server coding by `models`; the header says so.
pub fn record_match_with(codec: Codec, frames: u32, keyframe_every: u32, models: Models) -> Match {
    let config = ServerConfig {
        checksum_interval: 8,
        ..ServerConfig::for_codec(codec)
    };
    let mut server: Server<Ship, Pilot> = Server::new(config).unwrap();
    let header = DemoHeader::for_types::<Ship, Pilot>(codec, 20, 20)
        .with_models(&models)
        .with_metadata("map", "asteroids")
        .with_metadata("players", "pilot");
    server.set_models(models).unwrap();
    server.set_configstring(0, "map=asteroids").unwrap();
    server
        .set_baseline(
            1,
            Some(Ship {
                hull: 300,
                model: 2,
                ..Ship::default()
            }),
        )
        .unwrap();
    let player = server.add_client(ClientSettings::unlimited()).unwrap();
    let recorder_id = server
        .add_recorder(player, ClientSettings::recorder())
        .unwrap();
    let mut recorder = Recorder::create(Vec::new(), header).unwrap();
    let mut bytes = Vec::new();
    server.write_gamestate(&mut bytes).unwrap();
    recorder.record_gamestate(0, &bytes).unwrap();

    // Ships within this distance of the pilot are seen.
    let radius = 400.0f32;
    let mut scope = |_: snapshot::ClientId, pilot: &Pilot, _: u32, ship: &Ship| {
        let (dx, dy) = (ship.x - pilot.x, ship.y - pilot.y);
        (dx * dx + dy * dy <= radius * radius).then_some(1.0)
    };
    let mut expected = Vec::new();
    for frame in 0..frames {
        let t = frame as f32 * 0.05;
        for n in 1..24u32 {
            // Each ship lives for a while, then is gone for a while.
            let alive = (frame + n * 13) % 160 < 120;
            if !alive {
                server.remove_entity(n);
                continue;
            }
            let phase = n as f32 * 0.7;
            let ship = Ship {
                x: (phase + t * 0.3).cos() * (150.0 + 20.0 * n as f32),
                y: (phase + t * 0.3).sin() * (150.0 + 20.0 * n as f32),
                heading: ((phase * 57.0 + t * 40.0) % 360.0).abs(),
                hull: (300 - ((frame / 7 + n) % 300)) as u16,
                model: (n % 16) as u8,
            };
            server.set_entity(n, ship).unwrap();
        }
        if frame == frames / 2 {
            server.set_configstring(1, "score=halftime").unwrap();
            server.write_configstring(1, &mut bytes).unwrap();
            recorder.record_configstring(frame * 50, &bytes).unwrap();
        }
        {
            let pilot = server.player_state_mut(player).unwrap();
            pilot.x = (t * 0.5).sin() * 300.0;
            pilot.y = (t * 0.2).cos() * 300.0;
            pilot.health = 100 - (frame % 250) as i16;
            pilot.ammo = [frame as u16 % 200, 50, 0, (frame / 10) as u16 % 100];
            pilot.score = (frame / 40) as i16;
        }
        let time = frame * 50;
        server.commit_frame(time).unwrap();
        if frame > 0 && frame % keyframe_every == 0 {
            server.request_full_update(recorder_id).unwrap();
        }
        // The live client's own stream (its acks keep its view moving).
        if let BuildOutcome::Built(info) = server
            .build_snapshot(player, &mut scope, &mut bytes)
            .unwrap()
        {
            server.acknowledge(player, info.sequence).unwrap();
        }
        let BuildOutcome::Built(info) = server
            .build_snapshot(recorder_id, &mut scope, &mut bytes)
            .unwrap()
        else {
            panic!("a recorder gets every frame");
        };
        recorder
            .record_snapshot(time, info.sequence, &bytes, info.base.is_none())
            .unwrap();
        let sent = server.sent_snapshot(recorder_id, info.sequence).unwrap();
        expected.push(Expected {
            sequence: info.sequence,
            time,
            player: words(sent.player()),
            entities: sent.entities().map(|(n, e)| (n, words(e))).collect(),
        });
    }
    Match {
        demo: recorder.finish().unwrap(),
        expected,
    }
}

/// What a snapshot held by a demo client is, as words.
pub fn held(
    snapshot: &snapshot::Snapshot<fields::dynamic::DynamicState, fields::dynamic::DynamicState>,
) -> Expected {
    Expected {
        sequence: snapshot.sequence(),
        time: snapshot.server_time(),
        player: words(snapshot.player()),
        entities: snapshot.entities().map(|(n, e)| (n, words(e))).collect(),
    }
}
