//! Lag compensation end to end, deterministic: a server and a client over
//! netchan's in-process link on simulated time, the link conditioner adding
//! latency. The target glides at 320 units/s; the client draws it between
//! its two newest snapshots and "fires" at exactly where it drew it. The
//! server judges each shot against the rewind (what the client drew) or
//! against the target's present position.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fields::{net_struct, q3_float, unsigned};
use netchan::{ConditionerConfig, Endpoint, LocalDriver, LocalHub};
use netq3_session::{
    AllInScope, Clamp, Client, ClientConfig, ClientEvent, Interpolate, RenderPoint, Rewind, Server,
    ServerConfig, ServerEvent, SessionError, ViewStamp,
};

net_struct! {
    /// The target (or anything else that moves).
    pub struct Body {
        /// Position.
        pub x: f32 = q3_float(),
        /// Position.
        pub y: f32 = q3_float(),
        /// Bumped by a teleport: never interpolated across.
        pub spawn: u8 = unsigned(8),
    }
}

net_struct! {
    /// Nothing a player needs of itself here.
    pub struct Me {
        /// Unused.
        pub alive: u8 = unsigned(1),
    }
}

net_struct! {
    /// A shot at a point.
    pub struct Shot {
        /// Fired this frame.
        pub fire: u8 = unsigned(1),
        /// Aimed at this point.
        pub x: f32 = q3_float(),
        /// Aimed at this point.
        pub y: f32 = q3_float(),
    }
}

impl Interpolate for Body {
    fn interpolate(newest: &Self, previous: Option<&Self>, at: &RenderPoint) -> Self {
        let mut drawn = *newest;
        if let Some(old) = previous.filter(|o| o.spawn == newest.spawn) {
            drawn.x = old.x + (newest.x - old.x) * at.fraction;
            drawn.y = old.y + (newest.y - old.y) * at.fraction;
        }
        drawn
    }
}

const TARGET: u32 = 7;
const TICK_MS: u32 = 50;
/// Client frames: every 16 ms, as at 60 fps.
const FRAME_MS: u32 = 16;

/// What one match produced.
#[derive(Default)]
struct Outcome {
    shots: u32,
    hits_rewound: u32,
    hits_present: u32,
    /// Commands whose rewind equalled the client's own render.
    identical: u32,
    /// Commands whose rewind differed from it.
    different: u32,
    rewinds: Vec<Rewind>,
    clamped: Vec<Clamp>,
    /// The rewind of every shot.
    shot_rewinds: Vec<Rewind>,
    /// Shots whose rewind did not hit: (shot, rewound target, rewind).
    missed: Vec<(Shot, Option<Body>, Option<Rewind>)>,
}

/// Plays `seconds` of a target gliding along x, one client `latency_ms`
/// away each way (jitter `jitter_ms`), the server rewinding up to
/// `max_rewind_ms`. `lie`, if set, replaces the stamp of every shot.
fn play(
    latency_ms: u64,
    jitter_ms: u64,
    max_rewind_ms: u32,
    seconds: u32,
    lie: Option<fn(ViewStamp) -> ViewStamp>,
) -> Outcome {
    let hub = LocalHub::new();
    let mut now = Instant::now();
    let config = ServerConfig {
        max_entities: 64,
        max_rewind_ms,
        ..ServerConfig::default()
    };
    let mut server = Server::<Body, Me, Shot>::new(config).unwrap();
    let mut client = Client::<Body, Me, Shot>::new(ClientConfig::named("shooter"));
    let mut sv =
        LocalDriver::bind_local(&hub, None, Endpoint::new(server.endpoint_config(), now)).unwrap();
    let mut cl =
        LocalDriver::bind_local(&hub, None, Endpoint::new(client.endpoint_config(), now)).unwrap();
    let link = ConditionerConfig {
        latency: Duration::from_millis(latency_ms),
        jitter: Duration::from_millis(jitter_ms),
        ..ConditionerConfig::perfect()
    };
    sv.set_conditioner(link.clone(), 11);
    cl.set_conditioner(link, 12);
    client
        .connect(cl.endpoint_mut(), now, sv.local_addr())
        .unwrap();
    server
        .world_mut()
        .set_entity(TARGET, Body::default())
        .unwrap();

    let mut outcome = Outcome::default();
    // What the client drew for each command, by number.
    let mut drawn_for: BTreeMap<u32, Vec<(u32, Body)>> = BTreeMap::new();
    let mut drawn = Vec::new();
    let mut rewound = Vec::new();
    // The client's clock: the newest snapshot's server time when it arrived.
    let mut clock: Option<(u32, u32)> = None;
    let mut frame = 0u32;
    for ms in 1..=seconds * 1000 {
        now += Duration::from_millis(1);
        sv.pump(now);
        server.update(sv.endpoint_mut(), now).unwrap();
        while let Some(event) = server.poll_event() {
            let ServerEvent::Command {
                client: key,
                number,
                command,
            } = event
            else {
                continue;
            };
            let result = server.rewind(key, number, &mut rewound);
            match &result {
                Ok(rewind) => {
                    let rewind = *rewind;
                    outcome.rewinds.push(rewind);
                    outcome.clamped.extend(rewind.clamp);
                    if drawn_for.get(&number) == Some(&rewound) {
                        outcome.identical += 1;
                    } else {
                        outcome.different += 1;
                    }
                }
                Err(SessionError::NoView { .. }) => {}
                Err(e) => panic!("{e}"),
            }
            if command.fire == 1 {
                outcome.shots += 1;
                let at =
                    |x: f32, y: f32| (command.x - x).abs() < 0.5 && (command.y - y).abs() < 0.5;
                let then = rewound.iter().find(|(n, _)| *n == TARGET).map(|(_, b)| b);
                let hit = then.is_some_and(|b| at(b.x, b.y));
                outcome.hits_rewound += hit as u32;
                outcome.shot_rewinds.extend(result.as_ref().ok().copied());
                if !hit {
                    outcome
                        .missed
                        .push((command, then.copied(), result.as_ref().ok().copied()));
                }
                let present = server.world().entity(TARGET).unwrap();
                outcome.hits_present += at(present.x, present.y) as u32;
            }
        }
        if ms % TICK_MS == 0 {
            // 320 units/s along x, with a sideways wobble.
            let target = server.world_mut().entity_mut(TARGET).unwrap();
            target.x += 16.0;
            target.y = ((ms / 200) % 5) as f32 * 8.0;
            server
                .send_snapshots(sv.endpoint_mut(), ms, &mut AllInScope)
                .unwrap();
        }
        sv.pump(now);
        cl.pump(now);
        client.update(cl.endpoint_mut(), now).unwrap();
        while let Some(event) = client.poll_event() {
            if let ClientEvent::Snapshot { .. } = event {
                let newest = client.snapshots().newest().unwrap().server_time();
                if clock.is_none_or(|(t, _)| newest > t) {
                    clock = Some((newest, ms));
                }
            }
        }
        if ms % FRAME_MS == 0 {
            if let Some((server_ms, at)) = clock {
                // One snapshot interval behind the estimated server time.
                let render = (server_ms + (ms - at)).saturating_sub(TICK_MS);
                let view = client.render(render, &mut drawn);
                frame += 1;
                let target = drawn.iter().find(|(n, _)| *n == TARGET).map(|(_, b)| *b);
                let fire = view.is_some() && frame % 5 == 0;
                if let (true, Some(lie)) = (fire, lie) {
                    client.set_view(client.view().map(lie));
                }
                let shot = Shot {
                    fire: fire as u8,
                    x: target.as_ref().map_or(0.0, |t| t.x),
                    y: target.as_ref().map_or(0.0, |t| t.y),
                };
                if let Ok(number) = client.command(shot) {
                    drawn_for.insert(number, drawn.clone());
                }
            }
        }
        client.update(cl.endpoint_mut(), now).unwrap();
        cl.pump(now);
    }
    outcome
}

#[test]
fn a_shot_at_what_the_client_drew_hits_with_the_rewind_and_misses_without() {
    // 30 ms each way: the view is ~100–170 ms old when the shot is read,
    // within the default 200 ms rewind.
    let outcome = play(30, 0, 200, 6, None);
    assert!(outcome.shots > 50, "{} shots", outcome.shots);
    assert_eq!(outcome.hits_rewound, outcome.shots, "{:?}", outcome.missed);
    assert_eq!(outcome.hits_present, 0);
    assert!(outcome.clamped.is_empty(), "{:?}", outcome.clamped);
    let rewind_ms: Vec<u32> = outcome.rewinds.iter().map(|r| r.rewind_ms).collect();
    // Two trips, the 50 ms drawing delay, waits for a packet and a tick.
    assert!(
        rewind_ms.iter().all(|&r| (90..=200).contains(&r)),
        "{rewind_ms:?}"
    );
}

#[test]
fn the_rewind_is_exactly_the_clients_render_for_every_command() {
    // 75 ± 10 ms each way, a bound that never bites: every command's
    // rewind equals, entity for entity and bit for bit, what the client
    // drew when it made the command.
    let outcome = play(75, 10, 1000, 6, None);
    assert!(outcome.identical > 300, "{}", outcome.identical);
    assert_eq!(outcome.different, 0);
    assert_eq!(outcome.hits_rewound, outcome.shots);
    // The same bound at the default 200 ms: 75 ms each way is too far, and
    // the shots are judged 200 ms back — which no longer hits exactly.
    let bounded = play(75, 10, 200, 6, None);
    assert!(bounded.clamped.len() > bounded.rewinds.len() / 2);
    assert!(bounded.rewinds.iter().all(|r| r.rewind_ms <= 200));
    assert!(bounded.hits_rewound < bounded.shots);
}

#[test]
fn claims_older_than_the_bound_or_newer_than_anything_sent_are_clamped() {
    fn ancient(v: ViewStamp) -> ViewStamp {
        ViewStamp {
            offset_ms: v.offset_ms - 10_000,
            ..v
        }
    }
    fn future(v: ViewStamp) -> ViewStamp {
        ViewStamp {
            offset_ms: v.offset_ms + 10_000,
            ..v
        }
    }
    let old = play(30, 0, 200, 3, Some(ancient));
    assert!(old.shots > 20);
    assert_eq!(old.shot_rewinds.len() as u32, old.shots);
    assert!(old
        .shot_rewinds
        .iter()
        .all(|r| r.clamp == Some(Clamp::TooOld) && r.rewind_ms == 200));
    let new = play(30, 0, 200, 3, Some(future));
    assert_eq!(new.shot_rewinds.len() as u32, new.shots);
    // Clamped to the newest snapshot sent, never to a time not yet sent.
    assert!(new
        .shot_rewinds
        .iter()
        .all(|r| r.clamp == Some(Clamp::TooNew) && r.rewind_ms < TICK_MS));
    // The honest commands in between were not clamped.
    assert_eq!(old.clamped.len() as u32, old.shots);
}
