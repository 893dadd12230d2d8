//! Rendering everyone else: a server clock estimate and interpolation
//! between the two newest snapshots (Quake 3's `CG_InterpolateEntityPosition`).
//!
//! The client renders the world one snapshot interval in the past, so the
//! render time normally falls between the previous and the newest snapshot
//! and players move smoothly between two known positions. Projectiles are
//! not interpolated at all: their trajectory is in the entity, so they are
//! evaluated at the render time.

use snapshot::Snapshot;

use crate::physics::lerp;
use crate::protocol::{kind, EntityState, PlayerState};
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

/// What one interpolation produced besides positions.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Interpolated {
    /// The fraction of the way from the previous to the newest snapshot.
    pub fraction: f32,
    /// The render time was past the newest snapshot (held at it).
    pub stalled: bool,
}

/// Fills `out` with every entity of `newest`, players placed `fraction` of
/// the way from `previous` (when they were in it and did not respawn),
/// projectiles on their trajectory at `render_ms`.
pub fn interpolate(
    previous: Option<&Snapshot<EntityState, PlayerState>>,
    newest: &Snapshot<EntityState, PlayerState>,
    render_ms: f64,
    out: &mut Vec<RenderEntity>,
) -> Interpolated {
    out.clear();
    let (fraction, stalled) = match previous {
        Some(prev) if newest.server_time() > prev.server_time() => {
            let span = (newest.server_time() - prev.server_time()) as f64;
            let f = (render_ms - prev.server_time() as f64) / span;
            (f.clamp(0.0, 1.0) as f32, f > 1.0)
        }
        _ => (1.0, render_ms > newest.server_time() as f64),
    };
    for (number, e) in newest.entities() {
        let now = [e.x, e.y, e.z];
        let pos = match e.kind {
            kind::PLAYER => match previous.and_then(|p| p.entity(number)) {
                Some(old) if old.kind == kind::PLAYER && old.spawn == e.spawn => {
                    lerp([old.x, old.y, old.z], now, fraction)
                }
                _ => now,
            },
            kind::PROJECTILE if e.active => {
                let at = render_ms.max(e.time as f64).min(u32::MAX as f64) as u32;
                position_at(now, [e.vx, e.vy, e.vz], e.time, at)
            }
            _ => now,
        };
        out.push(RenderEntity {
            number,
            kind: e.kind,
            pos,
            vel: [e.vx, e.vy, e.vz],
            owner: e.owner,
            active: e.active,
            item: e.item,
        });
    }
    Interpolated { fraction, stalled }
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
    fn two_snapshots() -> snapshot::Client<EntityState, PlayerState> {
        use snapshot::{BuildOutcome, ClientSettings, Server, ServerConfig};
        let mut server: Server<EntityState, PlayerState> =
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
            assert!(matches!(outcome, BuildOutcome::Built(_)));
            client.read_message(&bytes).unwrap();
            server.acknowledge(id, client.ack().unwrap()).unwrap();
        }
        client
    }

    #[test]
    fn players_are_interpolated_and_projectiles_follow_their_trajectory() {
        let client = two_snapshots();
        let newest = client.newest().unwrap();
        let mut out = Vec::new();
        let result = interpolate(client.previous(), newest, 25.0, &mut out);
        assert_eq!(
            result,
            Interpolated {
                fraction: 0.5,
                stalled: false
            }
        );
        let player = out.iter().find(|e| e.number == 1).unwrap();
        assert_eq!(player.pos[0], 50.0);
        let projectile = out.iter().find(|e| e.number == 100).unwrap();
        assert!((projectile.pos[0] - 22.5).abs() < 1e-3);

        // Past the newest snapshot the player holds there.
        let result = interpolate(client.previous(), newest, 80.0, &mut out);
        assert!(result.stalled);
        assert_eq!(out.iter().find(|e| e.number == 1).unwrap().pos[0], 100.0);

        // A respawn (new spawn counter) is not interpolated from the old spot.
        let result = interpolate(None, newest, 25.0, &mut out);
        assert_eq!(result.fraction, 1.0);
        assert_eq!(out.iter().find(|e| e.number == 1).unwrap().pos[0], 100.0);
    }
}
