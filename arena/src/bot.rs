//! Bot brains: what a bot does each client frame, decided only from what
//! its client knows — its predicted self and the interpolated view of the
//! others — and its own seeded random stream, so a bot is a real client of
//! the library, not a puppet of the server.

use netchan::SeededRng;

use crate::interp::RenderEntity;
use crate::physics::{Map, MoveState, EYE_HEIGHT, PLAYER_HEIGHT};
use crate::protocol::{item, kind};
use crate::world::{PROJECTILE_SPEED, RAIL_RELOAD_MS};

/// Lines bots say now and then.
const CHAT: &[&str] = &[
    "gg",
    "nice shot",
    "where is everyone?",
    "rocket dodge!",
    "lag?",
    "one more round",
    "armor is up",
    "that was close",
];

/// How far bots see and shoot.
const ENGAGE_RANGE: f32 = 1300.0;

/// What a bot wants to do this frame.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Intent {
    /// Forward, −127..=127.
    pub forward: i8,
    /// Strafe right, −127..=127.
    pub right: i8,
    /// View yaw, 65536ths of a turn.
    pub yaw: u16,
    /// View pitch.
    pub pitch: i16,
    /// Fire a rocket.
    pub fire: bool,
    /// Fire the rail.
    pub rail: bool,
    /// Jump.
    pub jump: bool,
    /// Something to say.
    pub say: Option<&'static str>,
}

impl Intent {
    /// The command that carries this intent for `msec` milliseconds (one
    /// conversion for the session's bots, the lockstep bots and the model
    /// trainer's game).
    pub fn command(&self, msec: u8) -> crate::protocol::Command {
        use crate::protocol::buttons;
        crate::protocol::Command {
            msec,
            buttons: if self.fire { buttons::FIRE } else { 0 }
                | if self.jump { buttons::JUMP } else { 0 }
                | if self.rail { buttons::RAIL } else { 0 },
            forward: self.forward,
            right: self.right,
            yaw: self.yaw,
            pitch: self.pitch,
        }
    }
}

/// What a bot knows about itself this frame.
#[derive(Debug, Clone, Copy)]
pub struct SelfView<'a> {
    /// Its client number.
    pub client: u8,
    /// Its predicted movement state.
    pub motion: &'a MoveState,
    /// Alive.
    pub alive: bool,
    /// Health.
    pub health: i16,
    /// Local time, ms.
    pub now_ms: u64,
}

/// One bot's decision state.
#[derive(Debug, Clone)]
pub struct Bot {
    rng: SeededRng,
    waypoint: [f32; 2],
    waypoint_until: u64,
    strafe: i8,
    strafe_until: u64,
    next_chat: u64,
    stuck_since: Option<u64>,
    /// Local time from which the bot believes its rail is loaded again
    /// (the server keeps the real reload; a little margin for the clocks).
    rail_ready_at: u64,
}

/// How far a bot's rail aim strays from the point it aims at, radians
/// (either way): about 9 units at 600 units, a player is 30 wide.
const RAIL_AIM_NOISE: f32 = 0.015;

/// Radians to 65536ths of a turn.
fn to_angle(radians: f32) -> i32 {
    (radians / std::f32::consts::TAU * 65536.0).round() as i32
}

impl Bot {
    /// A bot whose choices come from `seed`.
    pub fn new(seed: u64) -> Bot {
        let mut rng = SeededRng::new(seed);
        let next_chat = 2000 + rng.next_u64() % 6000;
        Bot {
            rng,
            waypoint: [0.0, 0.0],
            waypoint_until: 0,
            strafe: 127,
            strafe_until: 0,
            next_chat,
            stuck_since: None,
            rail_ready_at: 0,
        }
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.rng.next_u64() % (hi - lo).max(1)
    }

    /// Somewhere to run to: most often where the nearest enemy was last
    /// seen (everyone is in every snapshot), else a random open spot.
    fn pick_waypoint(&mut self, map: &Map, now: u64, hunt: Option<[f32; 3]>) {
        if let Some(enemy) = hunt.filter(|_| self.rng.chance(0.6)) {
            self.waypoint = [enemy[0], enemy[1]];
            self.waypoint_until = now + self.range(1500, 3000);
            return;
        }
        let spots = map.spawns.len() + map.items.len();
        let i = (self.rng.next_u64() % spots as u64) as usize;
        self.waypoint = match map.spawns.get(i) {
            Some(s) => *s,
            None => map.items[i - map.spawns.len()].0,
        };
        self.waypoint_until = now + self.range(3000, 7000);
    }

    /// Decides this frame's input.
    pub fn think(&mut self, me: SelfView<'_>, view: &[RenderEntity], map: &Map) -> Intent {
        let now = me.now_ms;
        let mut intent = Intent::default();
        if now >= self.next_chat {
            intent.say = Some(CHAT[(self.rng.next_u64() % CHAT.len() as u64) as usize]);
            self.next_chat = now + self.range(4000, 12000);
        }
        if !me.alive {
            return intent;
        }
        let pos = me.motion.pos;
        let eye = [pos[0], pos[1], pos[2] + EYE_HEIGHT];
        if now >= self.strafe_until {
            self.strafe = if self.rng.chance(0.5) { 127 } else { -127 };
            self.strafe_until = now + self.range(300, 1200);
        }

        let enemies = || {
            view.iter()
                .filter(|e| e.kind == kind::PLAYER && e.active && e.owner != me.client)
                .map(|e| (e, dist2(e.pos, pos)))
        };
        let target = enemies()
            .filter(|(e, d)| {
                *d < ENGAGE_RANGE && map.line_of_sight([pos[0], pos[1]], [e.pos[0], e.pos[1]])
            })
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let nearest = enemies()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(e, _)| e.pos);

        if let Some((enemy, d)) = target.filter(|_| now >= self.rail_ready_at) {
            // The rail hits at once: aim at the middle of the body exactly
            // where it is drawn (lag compensation makes that a hit).
            let aim = [
                enemy.pos[0],
                enemy.pos[1],
                enemy.pos[2] + PLAYER_HEIGHT * 0.5,
            ];
            let noise = |rng: &mut SeededRng| (rng.next_f64() as f32 - 0.5) * 2.0 * RAIL_AIM_NOISE;
            let yaw = (aim[1] - eye[1]).atan2(aim[0] - eye[0]) + noise(&mut self.rng);
            let flat = (aim[0] - eye[0]).hypot(aim[1] - eye[1]);
            let pitch = (aim[2] - eye[2]).atan2(flat) + noise(&mut self.rng);
            intent.yaw = to_angle(yaw) as u16;
            intent.pitch = to_angle(pitch).clamp(-16384, 16384) as i16;
            intent.rail = true;
            intent.forward = if d > 600.0 { 127 } else { 0 };
            intent.right = self.strafe;
            self.rail_ready_at = now + RAIL_RELOAD_MS as u64 + 50;
        } else if let Some((enemy, d)) = target {
            // Lead the target by the projectile's flight time, and aim at
            // the feet when close enough: a miss still explodes by them.
            let flight = d / PROJECTILE_SPEED;
            let height = if d < 700.0 { 2.0 } else { PLAYER_HEIGHT * 0.5 };
            let aim = [
                enemy.pos[0] + enemy.vel[0] * flight,
                enemy.pos[1] + enemy.vel[1] * flight,
                enemy.pos[2] + height,
            ];
            let noise = (self.rng.next_f64() as f32 - 0.5) * 0.06;
            let yaw = (aim[1] - eye[1]).atan2(aim[0] - eye[0]) + noise;
            let flat = (aim[0] - eye[0]).hypot(aim[1] - eye[1]);
            let pitch = (aim[2] - eye[2]).atan2(flat);
            intent.yaw = to_angle(yaw) as u16;
            intent.pitch = to_angle(pitch).clamp(-16384, 16384) as i16;
            intent.fire = true;
            intent.forward = if d > 600.0 {
                127
            } else if d < 250.0 {
                -127
            } else {
                0
            };
            intent.right = self.strafe;
        } else {
            // Hurt: go for a health pack we can see.
            if me.health < 50 {
                if let Some(pack) = view
                    .iter()
                    .filter(|e| e.kind == kind::ITEM && e.item == item::HEALTH && e.active)
                    .min_by(|a, b| dist2(a.pos, pos).total_cmp(&dist2(b.pos, pos)))
                {
                    self.waypoint = [pack.pos[0], pack.pos[1]];
                    self.waypoint_until = now + 3000;
                }
            }
            let to_go = (self.waypoint[0] - pos[0]).hypot(self.waypoint[1] - pos[1]);
            if to_go < 48.0 || now >= self.waypoint_until {
                self.pick_waypoint(map, now, nearest);
            }
            let yaw = (self.waypoint[1] - pos[1]).atan2(self.waypoint[0] - pos[0]);
            intent.yaw = to_angle(yaw) as u16;
            intent.forward = 127;
            intent.right = self.strafe / 3;
        }

        // Stuck against a wall: new waypoint and a hop.
        let speed = me.motion.vel[0].hypot(me.motion.vel[1]);
        if speed < 40.0 && me.motion.on_ground && intent.forward != 0 {
            let since = *self.stuck_since.get_or_insert(now);
            if now - since > 400 {
                self.pick_waypoint(map, now, None);
                intent.jump = true;
                self.stuck_since = None;
            }
        } else {
            self.stuck_since = None;
        }
        intent.jump |= self.rng.chance(0.01);
        intent
    }
}

/// Horizontal distance.
fn dist2(a: [f32; 3], b: [f32; 3]) -> f32 {
    (a[0] - b[0]).hypot(a[1] - b[1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me(motion: &MoveState, now_ms: u64) -> SelfView<'_> {
        SelfView {
            client: 0,
            motion,
            alive: true,
            health: 100,
            now_ms,
        }
    }

    fn player(number: u32, pos: [f32; 3]) -> RenderEntity {
        RenderEntity {
            number,
            kind: kind::PLAYER,
            pos,
            vel: [0.0; 3],
            owner: number as u8,
            active: true,
            item: 0,
        }
    }

    #[test]
    fn bots_aim_and_fire_at_a_visible_enemy() {
        let map = Map::arena();
        let motion = MoveState {
            pos: [-800.0, -200.0, 0.0],
            on_ground: true,
            ..MoveState::default()
        };
        let mut bot = Bot::new(1);
        let enemy = [player(3, [-400.0, -200.0, 0.0])];
        // The rail first, straight at the body as drawn (noise of at most
        // 0.015 rad ≈ 157 sixty-five-thousandths of a turn).
        let intent = bot.think(me(&motion, 0), &enemy, &map);
        assert!(intent.rail && !intent.fire);
        let yaw = intent.yaw as i16 as i32;
        assert!(yaw.abs() <= 157, "yaw {yaw}");
        // Pitch: from the eye (40) down to mid-body (28) over 400 units,
        // −0.03 rad ≈ −313, ± the noise.
        let pitch = intent.pitch as i32;
        assert!((-313 - 157..=-313 + 157).contains(&pitch), "pitch {pitch}");
        // Reloading the rail: rockets, led and noisier (0.03 rad ≈ 313).
        let intent = bot.think(me(&motion, 16), &enemy, &map);
        assert!(intent.fire && !intent.rail);
        let yaw = intent.yaw as i16 as i32;
        assert!(yaw.abs() < 350, "yaw {yaw}");
        // Loaded again after the rail's reload.
        let later = crate::world::RAIL_RELOAD_MS as u64 + 100;
        assert!(bot.think(me(&motion, later), &enemy, &map).rail);
        // Nobody in sight (behind the central block): no shooting.
        let motion = MoveState {
            pos: [-300.0, 0.0, 0.0],
            ..motion
        };
        let intent = bot.think(me(&motion, 10), &[player(3, [300.0, 0.0, 0.0])], &map);
        assert!(!intent.fire);
        assert_eq!(intent.forward, 127);
    }

    #[test]
    fn same_seed_same_decisions() {
        let map = Map::arena();
        let motion = MoveState::default();
        let view = [player(2, [500.0, 500.0, 0.0])];
        let run = |seed| {
            let mut bot = Bot::new(seed);
            (0..200)
                .map(|i| bot.think(me(&motion, i * 16), &view, &map))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
    }
}
