//! The map and the movement code shared by the server and client
//! prediction (Quake 3's `bg_pmove.c` idea: one function, both ends).
//!
//! Movement is a pure function of the state before, the command and the
//! map. Positions and velocities are snapped to whole units after every
//! command, as Quake 3's `SnapVector` does, so the state the server sends
//! (integral floats: 13 bits each in the q3 codec) is exactly the state it
//! continues from, and a client replaying the same commands from it lands
//! on exactly the same numbers.

use crate::protocol::{buttons, Command, MAX_COMMAND_MSEC};

/// Half the side of the square arena: it spans `-HALF..HALF` on x and y.
pub const ARENA_HALF: f32 = 1024.0;
/// Half the width of a player's box.
pub const PLAYER_HALF: f32 = 15.0;
/// Height of a player's box (from the feet).
pub const PLAYER_HEIGHT: f32 = 56.0;
/// Eye and muzzle height above the feet.
pub const EYE_HEIGHT: f32 = 40.0;
/// Top running speed, units/s.
pub const RUN_SPEED: f32 = 320.0;
/// Ground acceleration factor.
pub const GROUND_ACCEL: f32 = 10.0;
/// Air acceleration factor (a little air control).
pub const AIR_ACCEL: f32 = 1.0;
/// Ground friction factor.
pub const FRICTION: f32 = 6.0;
/// Below this speed friction acts as if at this speed (stops cleanly).
pub const STOP_SPEED: f32 = 100.0;
/// Gravity, units/s².
pub const GRAVITY: f32 = 800.0;
/// Upward speed of a jump, units/s.
pub const JUMP_VELOCITY: f32 = 270.0;

/// A wall: an axis-aligned box on the floor plan, infinitely tall.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wall {
    /// Lower corner (x, y).
    pub min: [f32; 2],
    /// Upper corner (x, y).
    pub max: [f32; 2],
}

/// The arena: an outer square, pillars and walls inside it, spawn points
/// and item spots.
#[derive(Debug, Clone, PartialEq)]
pub struct Map {
    /// Its name (sent in a configstring).
    pub name: &'static str,
    /// Walls inside the outer square.
    pub walls: Vec<Wall>,
    /// Where players (re)spawn.
    pub spawns: Vec<[f32; 2]>,
    /// Item spots: position and item kind.
    pub items: Vec<([f32; 2], u8)>,
}

impl Map {
    /// The one map: four pillars round a central block, two long walls,
    /// twelve spawn points, health packs and armor.
    pub fn arena() -> Map {
        let block = |x0: f32, y0: f32, x1: f32, y1: f32| Wall {
            min: [x0, y0],
            max: [x1, y1],
        };
        use crate::protocol::item::{ARMOR, HEALTH};
        Map {
            name: "q3dm_rust",
            walls: vec![
                block(-96.0, -96.0, 96.0, 96.0),
                block(-480.0, -480.0, -352.0, -352.0),
                block(352.0, -480.0, 480.0, -352.0),
                block(-480.0, 352.0, -352.0, 480.0),
                block(352.0, 352.0, 480.0, 480.0),
                block(-640.0, 650.0, -200.0, 690.0),
                block(200.0, -690.0, 640.0, -650.0),
            ],
            spawns: vec![
                [-900.0, -900.0],
                [900.0, 900.0],
                [-900.0, 900.0],
                [900.0, -900.0],
                [0.0, -900.0],
                [0.0, 900.0],
                [-900.0, 0.0],
                [900.0, 0.0],
                [-600.0, -200.0],
                [600.0, 200.0],
                [-200.0, 600.0],
                [200.0, -600.0],
            ],
            items: vec![
                ([0.0, -560.0], HEALTH),
                ([0.0, 560.0], HEALTH),
                ([-560.0, 0.0], HEALTH),
                ([560.0, 0.0], HEALTH),
                ([-800.0, -800.0], ARMOR),
                ([800.0, 800.0], ARMOR),
            ],
        }
    }

    /// Whether a player box with feet centre `(x, y)` overlaps a wall.
    fn blocked(&self, x: f32, y: f32) -> Option<&Wall> {
        self.walls.iter().find(|w| {
            x + PLAYER_HALF > w.min[0]
                && x - PLAYER_HALF < w.max[0]
                && y + PLAYER_HALF > w.min[1]
                && y - PLAYER_HALF < w.max[1]
        })
    }

    /// Whether the straight line between two points (at any height) is
    /// clear of walls: what a bot can see.
    pub fn line_of_sight(&self, from: [f32; 2], to: [f32; 2]) -> bool {
        let a = [from[0], from[1], 0.0];
        let b = [to[0], to[1], 0.0];
        !self.walls.iter().any(|w| {
            segment_box(a, b, [w.min[0], w.min[1], -1.0], [w.max[0], w.max[1], 1.0]).is_some()
        })
    }
}

/// The part of a player's state that movement reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MoveState {
    /// Feet position (whole units after every move).
    pub pos: [f32; 3],
    /// Velocity (whole units/s after every move).
    pub vel: [f32; 3],
    /// Standing on the floor.
    pub on_ground: bool,
    /// Jump was held in the previous command.
    pub jump_held: bool,
}

/// What a move did besides moving.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MoveOutcome {
    /// The player jumped.
    pub jumped: bool,
}

/// Yaw/pitch in 65536ths of a turn to radians.
pub fn angle_to_radians(angle: i32) -> f32 {
    angle as f32 * (std::f32::consts::TAU / 65536.0)
}

/// A unit direction from a yaw and pitch in 65536ths of a turn.
pub fn direction(yaw: u16, pitch: i16) -> [f32; 3] {
    let (sy, cy) = angle_to_radians(yaw as i32).sin_cos();
    let (sp, cp) = angle_to_radians(pitch as i32).sin_cos();
    [cp * cy, cp * sy, sp]
}

/// Applies one command to a living player's movement. Dead players do not
/// move (the caller skips the call); the same function runs on the server
/// and in client prediction.
pub fn pmove(state: &mut MoveState, command: &Command, map: &Map) -> MoveOutcome {
    let dt = command.msec.min(MAX_COMMAND_MSEC) as f32 / 1000.0;
    let mut outcome = MoveOutcome::default();
    let jump = command.buttons & buttons::JUMP != 0;
    if jump && state.on_ground && !state.jump_held {
        state.vel[2] = JUMP_VELOCITY;
        state.on_ground = false;
        outcome.jumped = true;
    }
    state.jump_held = jump;

    if state.on_ground {
        let speed = state.vel[0].hypot(state.vel[1]);
        if speed > 0.0 {
            let drop = speed.max(STOP_SPEED) * FRICTION * dt;
            let scale = (speed - drop).max(0.0) / speed;
            state.vel[0] *= scale;
            state.vel[1] *= scale;
        }
    }

    // Wish direction from the view yaw: forward along it, right 90° clockwise.
    let (sy, cy) = angle_to_radians(command.yaw as i32).sin_cos();
    let f = command.forward as f32 / 127.0;
    let r = command.right as f32 / 127.0;
    let wish = [cy * f + sy * r, sy * f - cy * r];
    let len = wish[0].hypot(wish[1]);
    if len > 0.0 {
        let dir = [wish[0] / len, wish[1] / len];
        let wish_speed = RUN_SPEED * len.min(1.0);
        let accel = if state.on_ground {
            GROUND_ACCEL
        } else {
            AIR_ACCEL
        };
        let current = state.vel[0] * dir[0] + state.vel[1] * dir[1];
        let add = wish_speed - current;
        if add > 0.0 {
            let gain = (accel * dt * wish_speed).min(add);
            state.vel[0] += gain * dir[0];
            state.vel[1] += gain * dir[1];
        }
    }
    if !state.on_ground {
        state.vel[2] -= GRAVITY * dt;
    }

    // Slide: each horizontal axis on its own, stopping at walls.
    let limit = ARENA_HALF - PLAYER_HALF;
    let mut x = (state.pos[0] + state.vel[0] * dt).clamp(-limit, limit);
    if let Some(wall) = map.blocked(x, state.pos[1]) {
        x = if state.vel[0] > 0.0 {
            wall.min[0] - PLAYER_HALF
        } else {
            wall.max[0] + PLAYER_HALF
        };
        state.vel[0] = 0.0;
    } else if x.abs() >= limit {
        state.vel[0] = 0.0;
    }
    state.pos[0] = x;
    let mut y = (state.pos[1] + state.vel[1] * dt).clamp(-limit, limit);
    if let Some(wall) = map.blocked(state.pos[0], y) {
        y = if state.vel[1] > 0.0 {
            wall.min[1] - PLAYER_HALF
        } else {
            wall.max[1] + PLAYER_HALF
        };
        state.vel[1] = 0.0;
    } else if y.abs() >= limit {
        state.vel[1] = 0.0;
    }
    state.pos[1] = y;
    let z = state.pos[2] + state.vel[2] * dt;
    if z <= 0.0 {
        state.pos[2] = 0.0;
        state.vel[2] = 0.0;
        state.on_ground = true;
    } else {
        state.pos[2] = z;
        state.on_ground = false;
    }
    snap(&mut state.pos);
    snap(&mut state.vel);
    outcome
}

/// Rounds to whole units (Quake 3's `SnapVector`); `-0.0` becomes `0.0`.
pub fn snap(v: &mut [f32; 3]) {
    for c in v {
        *c = c.round() + 0.0;
    }
}

/// Where a segment `from → to` first enters the box `min..max`, as a
/// fraction of its length in `0..=1` (slab method); `None` if it misses.
pub fn segment_box(from: [f32; 3], to: [f32; 3], min: [f32; 3], max: [f32; 3]) -> Option<f32> {
    let mut enter = 0.0f32;
    let mut exit = 1.0f32;
    for axis in 0..3 {
        let d = to[axis] - from[axis];
        if d.abs() < 1e-6 {
            if from[axis] < min[axis] || from[axis] > max[axis] {
                return None;
            }
            continue;
        }
        let mut t0 = (min[axis] - from[axis]) / d;
        let mut t1 = (max[axis] - from[axis]) / d;
        if t0 > t1 {
            std::mem::swap(&mut t0, &mut t1);
        }
        enter = enter.max(t0);
        exit = exit.min(t1);
        if enter > exit {
            return None;
        }
    }
    Some(enter)
}

/// Fraction of `from → to` at which a projectile of radius `radius` hits the
/// world: a wall, the outer walls or the floor.
pub fn trace_world(map: &Map, from: [f32; 3], to: [f32; 3], radius: f32) -> Option<f32> {
    let mut best: Option<f32> = None;
    let mut consider = |t: Option<f32>| {
        if let Some(t) = t {
            best = Some(best.map_or(t, |b| b.min(t)));
        }
    };
    for wall in &map.walls {
        consider(segment_box(
            from,
            to,
            [wall.min[0] - radius, wall.min[1] - radius, f32::MIN],
            [wall.max[0] + radius, wall.max[1] + radius, f32::MAX],
        ));
    }
    // Leaving the arena or going through the floor: the first axis to cross.
    let limit = ARENA_HALF - radius;
    for axis in 0..2 {
        let d = to[axis] - from[axis];
        if to[axis].abs() > limit && d != 0.0 {
            let edge = limit.copysign(d);
            consider(Some(((edge - from[axis]) / d).clamp(0.0, 1.0)));
        }
    }
    if to[2] < radius && to[2] < from[2] {
        consider(Some(
            ((radius - from[2]) / (to[2] - from[2])).clamp(0.0, 1.0),
        ));
    }
    best
}

/// Fraction of `from → to` at which a projectile of radius `radius` hits a
/// player standing at `feet`.
pub fn trace_player(from: [f32; 3], to: [f32; 3], radius: f32, feet: [f32; 3]) -> Option<f32> {
    let reach = PLAYER_HALF + radius;
    segment_box(
        from,
        to,
        [feet[0] - reach, feet[1] - reach, feet[2] - radius],
        [
            feet[0] + reach,
            feet[1] + reach,
            feet[2] + PLAYER_HEIGHT + radius,
        ],
    )
}

/// Linear interpolation of two points.
pub fn lerp(a: [f32; 3], b: [f32; 3], t: f32) -> [f32; 3] {
    [
        a[0] + (b[0] - a[0]) * t,
        a[1] + (b[1] - a[1]) * t,
        a[2] + (b[2] - a[2]) * t,
    ]
}

/// Distance between two points.
pub fn distance(a: [f32; 3], b: [f32; 3]) -> f32 {
    let d = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(forward: i8, right: i8, yaw: u16) -> Command {
        Command {
            msec: 16,
            forward,
            right,
            yaw,
            ..Command::default()
        }
    }

    fn on_ground_at(x: f32, y: f32) -> MoveState {
        MoveState {
            pos: [x, y, 0.0],
            on_ground: true,
            ..MoveState::default()
        }
    }

    #[test]
    fn running_accelerates_to_top_speed_and_friction_stops() {
        let map = Map::arena();
        let mut state = on_ground_at(-700.0, -300.0);
        for _ in 0..60 {
            pmove(&mut state, &run(127, 0, 0), &map);
        }
        assert!((state.vel[0] - RUN_SPEED).abs() <= 1.0, "{:?}", state.vel);
        assert_eq!(state.vel[1], 0.0);
        assert!(state.pos[0] > -700.0 + 250.0);
        for _ in 0..30 {
            pmove(&mut state, &run(0, 0, 0), &map);
        }
        assert_eq!(state.vel, [0.0, 0.0, 0.0]);
    }

    #[test]
    fn right_is_clockwise_from_the_view() {
        let map = Map::arena();
        let mut state = on_ground_at(-700.0, -300.0);
        // Facing +x, strafing right goes towards -y.
        pmove(&mut state, &run(0, 127, 0), &map);
        assert!(state.vel[1] < 0.0 && state.vel[0] == 0.0, "{:?}", state.vel);
        // Facing +y (a quarter turn), forward goes towards +y.
        let mut state = on_ground_at(-700.0, -300.0);
        pmove(&mut state, &run(127, 0, 16384), &map);
        assert!(state.vel[1] > 0.0 && state.vel[0] == 0.0, "{:?}", state.vel);
    }

    #[test]
    fn a_jump_goes_up_and_lands_once_per_press() {
        let map = Map::arena();
        let mut state = on_ground_at(-700.0, -300.0);
        let mut jump = run(0, 0, 0);
        jump.buttons = buttons::JUMP;
        assert!(pmove(&mut state, &jump, &map).jumped);
        let mut peak: f32 = 0.0;
        let mut jumps = 0;
        for _ in 0..100 {
            jumps += pmove(&mut state, &jump, &map).jumped as u32;
            peak = peak.max(state.pos[2]);
        }
        // Holding the button does not jump again.
        assert_eq!(jumps, 0);
        assert!(state.on_ground && state.pos[2] == 0.0);
        // v²/2g = 45.6 units, within the step discretisation.
        assert!((40.0..=50.0).contains(&peak), "peak {peak}");
    }

    #[test]
    fn walls_and_the_arena_edge_stop_players() {
        let map = Map::arena();
        // Run into the central block from the west.
        let mut state = on_ground_at(-200.0, 0.0);
        for _ in 0..100 {
            pmove(&mut state, &run(127, 0, 0), &map);
        }
        assert_eq!(state.pos[0], -96.0 - PLAYER_HALF);
        assert_eq!(state.vel[0], 0.0);
        // And into the outer wall.
        let mut state = on_ground_at(900.0, 0.0);
        for _ in 0..100 {
            pmove(&mut state, &run(127, 0, 0), &map);
        }
        assert_eq!(state.pos[0], ARENA_HALF - PLAYER_HALF);
    }

    #[test]
    fn movement_is_snapped_and_deterministic() {
        let map = Map::arena();
        let mut a = on_ground_at(0.0, -800.0);
        let mut b = a;
        for i in 0..200u32 {
            let mut command = run(127, if i % 40 < 20 { 127 } else { -127 }, (i * 300) as u16);
            command.buttons = if i % 25 == 0 { buttons::JUMP } else { 0 };
            pmove(&mut a, &command, &map);
            pmove(&mut b, &command, &map);
            for v in a.pos.iter().chain(&a.vel) {
                assert_eq!(v.fract(), 0.0);
            }
        }
        assert_eq!(a, b);
    }

    #[test]
    fn segments_hit_boxes_where_they_enter() {
        let t = segment_box(
            [0.0, 0.0, 0.0],
            [10.0, 0.0, 0.0],
            [5.0, -1.0, -1.0],
            [6.0, 1.0, 1.0],
        );
        assert_eq!(t, Some(0.5));
        assert_eq!(
            segment_box(
                [0.0, 5.0, 0.0],
                [10.0, 5.0, 0.0],
                [5.0, -1.0, -1.0],
                [6.0, 1.0, 1.0]
            ),
            None
        );
        let map = Map::arena();
        // From the west into the central block at x = -96 - radius.
        let t = trace_world(&map, [-300.0, 0.0, 40.0], [-50.0, 0.0, 40.0], 4.0).unwrap();
        assert!((-300.0 + 250.0 * t - (-100.0)).abs() < 0.01);
        // Out through the outer wall.
        assert!(trace_world(&map, [1000.0, 800.0, 40.0], [1040.0, 800.0, 40.0], 4.0).is_some());
        assert!(trace_world(&map, [-800.0, -200.0, 40.0], [-700.0, -200.0, 40.0], 4.0).is_none());
        assert!(
            trace_player([0.0, 0.0, 40.0], [100.0, 0.0, 40.0], 4.0, [60.0, 0.0, 0.0]).is_some()
        );
        assert!(!map.line_of_sight([-300.0, 0.0], [300.0, 0.0]));
        assert!(map.line_of_sight([-300.0, -300.0], [300.0, -300.0]));
    }
}
