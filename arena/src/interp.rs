//! Rendering everyone else: a server clock estimate and interpolation
//! between the two newest snapshots (Quake 3's `CG_InterpolateEntityPosition`).
//!
//! The client renders the world one snapshot interval in the past, so the
//! render time normally falls between the previous and the newest snapshot
//! and players move smoothly between two known positions. Projectiles are
//! not interpolated at all: their trajectory is in the entity, so they are
//! evaluated at the render time.
//!
//! The rule is the arena's [`Interpolate`] for [`EntityState`]; where the
//! render time falls and the loop over entities are the snapshot crate's
//! (`snapshot::interp`), so the server's rewind for lag compensation runs
//! exactly the code the client drew with.

use snapshot::{Interpolate, RenderPoint};

use crate::client::SessionClient;
use crate::physics::lerp;
use crate::protocol::{kind, EntityState};
use crate::world::position_at;

/// Estimates the server's clock from snapshot arrivals.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerClock {
    /// Server time minus local time, ms.
    offset_ms: Option<f64>,
    /// Times the estimate jumped instead of drifting.
    pub resets: u64,
}

impl ServerClock {
    /// A clock that knows nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes a snapshot stamped `server_ms` that arrived at local `local_ms`.
    pub fn observe(&mut self, server_ms: u32, local_ms: f64) {
        let sample = server_ms as f64 - local_ms;
        self.offset_ms = Some(match self.offset_ms {
            // Far off (first snapshot, a stall): jump there.
            Some(offset) if (sample - offset).abs() < 250.0 => {
                // Drift slowly, but never let the clock run behind a
                // snapshot that already arrived.
                (offset + (sample - offset) * 0.1).max(sample)
            }
            Some(_) => {
                self.resets += 1;
                sample
            }
            None => sample,
        });
    }

    /// The estimated server time at local `local_ms`, if known.
    pub fn server_time(&self, local_ms: f64) -> Option<f64> {
        self.offset_ms.map(|offset| local_ms + offset)
    }
}

/// An entity as the client draws it this frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RenderEntity {
    /// Entity number.
    pub number: u32,
    /// Its kind.
    pub kind: u8,
    /// Where it is drawn.
    pub pos: [f32; 3],
    /// Its velocity (from the newest snapshot).
    pub vel: [f32; 3],
    /// Owner (players: their client number).
    pub owner: u8,
    /// Alive / available.
    pub active: bool,
    /// Item kind.
    pub item: u8,
}

impl RenderEntity {
    /// The entity as drawn from its interpolated state (the position
    /// fields of an interpolated state hold where it is drawn).
    pub fn of(number: u32, e: &EntityState) -> RenderEntity {
        RenderEntity {
            number,
            kind: e.kind,
            pos: [e.x, e.y, e.z],
            vel: [e.vx, e.vy, e.vz],
            owner: e.owner,
            active: e.active,
            item: e.item,
        }
    }
}

/// How the arena draws an entity between two snapshots — the rule both
/// the client's render and the server's rewind (lag compensation) run:
/// players `fraction` of the way from where they were (unless they
/// respawned: a new spawn counter is a teleport, not a move), projectiles
/// on their trajectory at the render time, everything else where it is.
impl Interpolate for EntityState {
    fn interpolate(newest: &Self, previous: Option<&Self>, at: &RenderPoint) -> Self {
        let mut drawn = *newest;
        let now = [newest.x, newest.y, newest.z];
        let pos = match newest.kind {
            kind::PLAYER => match previous {
                Some(old) if old.kind == kind::PLAYER && old.spawn == newest.spawn => {
                    lerp([old.x, old.y, old.z], now, at.fraction)
                }
                _ => now,
            },
            kind::PROJECTILE if newest.active => position_at(
                now,
                [newest.vx, newest.vy, newest.vz],
                newest.time,
                at.render_ms.max(newest.time),
            ),
            _ => now,
        };
        [drawn.x, drawn.y, drawn.z] = pos;
        drawn
    }
}

/// Fills `view` with every entity of the newest snapshot drawn at
/// `render_ms` (the server time the client renders), through the session
/// ([`session::Client::render`]: the shared interpolation, and the view
/// stamp every command then carries); `scratch` holds the interpolated
/// states. `None` before the first snapshot.
pub fn render(
    session: &mut SessionClient,
    render_ms: u32,
    scratch: &mut Vec<(u32, EntityState)>,
    view: &mut Vec<RenderEntity>,
) -> Option<RenderPoint> {
    let rendered = session.render(render_ms, scratch)?;
    view.clear();
    view.extend(scratch.iter().map(|(n, e)| RenderEntity::of(*n, e)));
    Some(rendered.point)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_follows_snapshots_and_jumps_after_a_stall() {
        let mut clock = ServerClock::new();
        assert_eq!(clock.server_time(0.0), None);
        clock.observe(1000, 50.0);
        assert_eq!(clock.server_time(60.0), Some(1010.0));
        // A late snapshot does not pull the clock back.
        clock.observe(1050, 130.0);
        assert!(clock.server_time(130.0).unwrap() >= 1050.0 - 30.0);
        clock.observe(9000, 200.0);
        assert_eq!(clock.resets, 1);
        assert_eq!(clock.server_time(200.0), Some(9000.0));
    }

    /// A snapshot client holding two snapshots 50 ms apart, in which player
    /// 1 moved from x = 0 to x = 100 and projectile 100 flies along x.
    fn two_snapshots() -> snapshot::Client<EntityState, crate::protocol::PlayerState> {
        use snapshot::{BuildOutcome, ClientSettings, Server, ServerConfig};
        let mut server: Server<EntityState, crate::protocol::PlayerState> =
            Server::new(ServerConfig::default()).unwrap();
        let id = server.add_client(ClientSettings::unlimited()).unwrap();
        let mut client = snapshot::Client::new();
        let mut bytes = Vec::new();
        server.write_gamestate(&mut bytes).unwrap();
        client.read_message(&bytes).unwrap();
        let player = EntityState {
            kind: kind::PLAYER,
            active: true,
            spawn: 1,
            ..EntityState::default()
        };
        let projectile = EntityState {
            kind: kind::PROJECTILE,
            active: true,
            vx: 900.0,
            ..EntityState::default()
        };
        server.set_entity(1, player).unwrap();
        server.set_entity(100, projectile).unwrap();
        for time in [0, 50] {
            server.entity_mut(1).unwrap().x = time as f32 * 2.0;
            server.commit_frame(time).unwrap();
            let outcome = server
                .build_snapshot(id, &mut snapshot::AllInScope, &mut bytes)
                .unwrap();
            let BuildOutcome::Built(info) = outcome else {
                panic!("an unlimited client gets every frame")
            };
            client.read_snapshot(info.sequence, &bytes).unwrap();
            server.acknowledge(id, client.ack().unwrap()).unwrap();
        }
        client
    }

    #[test]
    fn players_are_interpolated_and_projectiles_follow_their_trajectory() {
        let client = two_snapshots();
        let mut out = Vec::new();
        let drawn = |out: &Vec<(u32, EntityState)>, number: u32| {
            let (n, e) = out.iter().find(|(n, _)| *n == number).unwrap();
            RenderEntity::of(*n, e)
        };
        let result = client.render(25, &mut out).unwrap();
        assert_eq!((result.point.fraction, result.point.stalled), (0.5, false));
        assert_eq!(drawn(&out, 1).pos[0], 50.0);
        assert!((drawn(&out, 100).pos[0] - 22.5).abs() < 1e-3);

        // Past the newest snapshot the player holds there.
        let result = client.render(80, &mut out).unwrap();
        assert!(result.point.stalled);
        assert_eq!(drawn(&out, 1).pos[0], 100.0);

        // A respawn (new spawn counter) is not interpolated from the old spot.
        let newest = client.newest().unwrap();
        let mut moved = *newest.entity(1).unwrap();
        let respawned = EntityState { spawn: 2, ..moved };
        let at = RenderPoint::between(Some(0), 50, 25);
        moved.x = 0.0;
        assert_eq!(
            EntityState::interpolate(&respawned, Some(&moved), &at).x,
            100.0
        );
        assert_eq!(
            EntityState::interpolate(newest.entity(1).unwrap(), Some(&moved), &at).x,
            50.0
        );
    }
}
