//! Lag compensation's query: the server's rewind reproduces exactly what
//! the client drew, with loss, for every render time; stamps the server
//! cannot verify or that reach too far are bounded.

mod common;

use common::{build, connect, Ent, Player, Rng};
use netq3_snapshot::interp::MAX_VIEW_OFFSET_MS;
use netq3_snapshot::{
    Clamp, Client, ClientSettings, Interpolate, RenderPoint, RewindError, Server, ServerConfig,
    ViewStamp,
};

/// Entities glide in a straight line between snapshots; one whose model
/// changed (a respawn) is drawn where it is now.
impl Interpolate for Ent {
    fn interpolate(newest: &Self, previous: Option<&Self>, at: &RenderPoint) -> Self {
        let mut drawn = *newest;
        if let Some(old) = previous.filter(|o| o.model == newest.model) {
            let f = at.fraction;
            drawn.x = old.x + (newest.x - old.x) * f;
            drawn.y = old.y + (newest.y - old.y) * f;
        }
        drawn
    }
}

const TICK: u32 = 50;
const MAX_REWIND: u32 = 200;

/// A server with one client and a few moving entities, `frames` frames
/// long (a frame every 50 ms), each snapshot lost with probability `loss`
/// (the client then draws between older ones).
fn play(
    frames: u32,
    loss: f64,
    seed: u64,
) -> (
    Server<Ent, Player>,
    netq3_snapshot::ClientId,
    Client<Ent, Player>,
) {
    let mut server: Server<Ent, Player> = Server::new(ServerConfig::default()).unwrap();
    let id = server.add_client(ClientSettings::unlimited()).unwrap();
    let mut client = Client::new();
    connect(&mut server, &mut client);
    let mut rng = Rng::new(seed);
    let mut bytes = Vec::new();
    for frame in 0..frames {
        for number in 1..6u32 {
            let state = Ent {
                x: (frame * (number + 3)) as f32,
                y: 1000.0 - (frame * number * 2) as f32,
                model: (frame / 17 + number) as u16 % 400,
                ..Ent::default()
            };
            server.set_entity(number, state).unwrap();
        }
        server.commit_frame(frame * TICK).unwrap();
        let info = build(&mut server, id, &mut bytes);
        if !rng.chance(loss) {
            client.read_snapshot(info.sequence, &bytes).unwrap();
            server.acknowledge(id, client.ack().unwrap()).unwrap();
        }
    }
    (server, id, client)
}

#[test]
fn the_rewind_is_exactly_what_the_client_drew() {
    let mut drawn = Vec::new();
    let mut rewound = Vec::new();
    let mut compared = 0;
    let (mut stalled, mut between) = (0, 0);
    for seed in 0..4 {
        let (mut server, id, mut client) = play(3, 0.0, seed);
        let mut rng = Rng::new(100 + seed);
        let mut bytes = Vec::new();
        for frame in 3..120u32 {
            server
                .set_entity(
                    1,
                    Ent {
                        x: (frame * 7) as f32,
                        y: (frame % 13) as f32 * 3.5,
                        model: (frame / 40) as u16,
                        ..Ent::default()
                    },
                )
                .unwrap();
            server.commit_frame(frame * TICK).unwrap();
            let info = build(&mut server, id, &mut bytes);
            if !rng.chance(0.25) {
                client.read_snapshot(info.sequence, &bytes).unwrap();
                server.acknowledge(id, client.ack().unwrap()).unwrap();
            }
            // The client draws somewhere around one snapshot behind (or
            // past the newest, a stall), and the command reaches the server
            // a frame or two later.
            let newest = client.newest().unwrap().server_time();
            // Never past the snapshot just sent: nobody can have drawn later.
            let render = (newest + rng.below(70) as u32)
                .saturating_sub(TICK)
                .min(frame * TICK);
            let view = client.render(render, &mut drawn).unwrap();
            assert_eq!(view.point.render_ms, render);
            // (A bound far beyond this test's reach: the rewind is never clamped.)
            let rewind = server.rewind(id, view.stamp, 1000, &mut rewound).unwrap();
            assert_eq!(rewind.clamp, None, "frame {frame}: {rewind:?}");
            assert_eq!(
                (rewind.newest, rewind.previous),
                (view.newest, view.previous)
            );
            assert_eq!(rewind.point, view.point);
            assert_eq!(rewind.rewind_ms, frame * TICK - render);
            // Bit for bit: the same snapshots, the same fraction, the same code.
            assert_eq!(rewound, drawn, "frame {frame}");
            compared += 1;
            stalled += view.point.stalled as u32;
            between += (view.point.fraction > 0.0 && view.point.fraction < 1.0) as u32;
        }
    }
    assert_eq!(compared, 4 * 117);
    // Draws between two snapshots, and stalls past the newest, both checked.
    assert!(
        stalled > 20 && between > 200,
        "{stalled} stalled, {between} between"
    );
}

#[test]
fn stamps_reaching_too_far_or_naming_what_was_never_sent_are_bounded() {
    let (server, id, client) = play(40, 0.0, 1);
    let now = server.time().unwrap();
    assert_eq!(now, 39 * TICK);
    let mut drawn = Vec::new();
    let mut rewound = Vec::new();
    let honest = client.render(now - TICK, &mut drawn).unwrap();

    // Older than the maximum rewind: clamped to it, drawn between the
    // snapshots sent around then (the ones named do not surround it).
    let old = ViewStamp {
        offset_ms: -1000,
        ..honest.stamp
    };
    let rewind = server.rewind(id, old, MAX_REWIND, &mut rewound).unwrap();
    assert_eq!(rewind.clamp, Some(Clamp::TooOld));
    assert_eq!(rewind.rewind_ms, MAX_REWIND);
    assert_eq!(rewind.point.render_ms, now - MAX_REWIND);
    assert_eq!(rewind.newest, 35);
    assert_eq!(rewind.previous, Some(34));
    // A client on a long round trip a little past the bound, between
    // snapshots that surround it: those, at the bound.
    let long_trip = ViewStamp {
        newest: 35,
        previous_back: 1,
        offset_ms: -30,
    };
    let rewind = server
        .rewind(id, long_trip, MAX_REWIND, &mut rewound)
        .unwrap();
    assert_eq!(rewind.clamp, Some(Clamp::TooOld));
    assert_eq!((rewind.newest, rewind.previous), (35, Some(34)));
    assert_eq!(rewind.point.fraction, 1.0);
    // Naming snapshots older than the bound, drawing at the bound: the
    // snapshots do not show what the render time claims.
    let stale = ViewStamp {
        newest: 30,
        previous_back: 1,
        offset_ms: 250,
    };
    let rewind = server.rewind(id, stale, MAX_REWIND, &mut rewound).unwrap();
    assert_eq!(rewind.clamp, Some(Clamp::TooOld));
    assert_eq!(rewind.newest, 35);

    // Newer than anything sent: clamped to the newest snapshot sent.
    let future = ViewStamp {
        offset_ms: MAX_VIEW_OFFSET_MS,
        ..honest.stamp
    };
    let rewind = server.rewind(id, future, MAX_REWIND, &mut rewound).unwrap();
    assert_eq!(rewind.clamp, Some(Clamp::TooNew));
    assert_eq!(rewind.point.render_ms, now);
    assert_eq!(rewind.rewind_ms, 0);

    // A snapshot never sent (a sequence ahead of the server's): the
    // server's own choice at the oldest view allowed.
    let invented = ViewStamp {
        newest: honest.stamp.newest.wrapping_add(5),
        ..honest.stamp
    };
    let rewind = server
        .rewind(id, invented, MAX_REWIND, &mut rewound)
        .unwrap();
    assert_eq!(rewind.clamp, Some(Clamp::Unverified));
    assert_eq!(rewind.rewind_ms, MAX_REWIND);
    assert_eq!(rewind.point.render_ms, now - MAX_REWIND);
    // ... drawn between the snapshots sent around then: at the bound exactly.
    let newest = server.sent_snapshot(id, rewind.newest).unwrap();
    let previous = server.sent_snapshot(id, rewind.previous.unwrap()).unwrap();
    assert_eq!(newest.server_time(), now - MAX_REWIND);
    let mut expected = Vec::new();
    netq3_snapshot::interp::interpolate_into(
        newest.entities(),
        |n| previous.entity(n),
        &rewind.point,
        &mut expected,
    );
    assert_eq!(rewound, expected);
    assert_eq!(rewound[0].1.x, (35 * 4) as f32);
    // A previous snapshot outside the ring cannot be verified either.
    let far = ViewStamp {
        previous_back: 200,
        ..honest.stamp
    };
    let rewind = server.rewind(id, far, MAX_REWIND, &mut rewound).unwrap();
    assert_eq!(rewind.clamp, Some(Clamp::Unverified));

    // The game's bound is itself bounded.
    let ancient = ViewStamp {
        offset_ms: -5000,
        ..honest.stamp
    };
    let rewind = server.rewind(id, ancient, u32::MAX, &mut rewound).unwrap();
    assert_eq!(rewind.rewind_ms, 1000);
}

#[test]
fn nothing_to_rewind_is_an_error() {
    let mut server: Server<Ent, Player> = Server::new(ServerConfig::default()).unwrap();
    let id = server.add_client(ClientSettings::unlimited()).unwrap();
    let stamp = ViewStamp {
        newest: 0,
        previous_back: 0,
        offset_ms: 0,
    };
    let mut out = Vec::new();
    assert_eq!(
        server.rewind(id, stamp, MAX_REWIND, &mut out),
        Err(RewindError::NoFrame)
    );
    server.commit_frame(0).unwrap();
    assert!(matches!(
        server.rewind(id, stamp, MAX_REWIND, &mut out),
        Err(RewindError::NothingRecent { .. })
    ));
    // Sent once, long ago.
    let (mut server, id, _) = play(2, 0.0, 3);
    server.commit_frame(5000).unwrap();
    assert!(matches!(
        server.rewind(id, stamp, MAX_REWIND, &mut out),
        Err(RewindError::NothingRecent { max_rewind_ms: 200 })
    ));
    server.remove_client(id).unwrap();
    assert_eq!(
        server.rewind(id, stamp, MAX_REWIND, &mut out),
        Err(RewindError::UnknownClient(id))
    );
}
