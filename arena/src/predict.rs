//! Client-side prediction and reconciliation (Quake 3's `CG_PredictPlayerState`).
//!
//! The client runs its own commands through the shared [`pmove`] the moment
//! it makes them, keeping each unacknowledged command with the state it
//! predicted after it. When a snapshot arrives, its player state says which
//! command the server applied last: the prediction for that command is
//! compared with the server's result (the prediction error), then the
//! client restarts from the server's state and replays the commands the
//! server has not applied yet.
//!
//! Because movement is deterministic and the state is sent exactly, the
//! error is zero unless something the client could not know happened: a
//! hit's knockback, a death. Respawns teleport: they are counted, not
//! scored as errors.

use std::collections::VecDeque;

use crate::physics::{distance, pmove, Map, MoveState};
use crate::protocol::{Command, PlayerState};

/// Most unacknowledged commands remembered (over 8 s at 60 fps).
const MAX_PENDING: usize = 512;

/// A sent command and what the client predicted after it.
#[derive(Debug, Clone, Copy)]
struct Pending {
    /// The session's number for it.
    number: u32,
    command: Command,
    state: MoveState,
    /// Respawn counter the prediction was made under.
    spawn: u8,
}

/// Prediction error statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PredictionStats {
    /// Comparisons made (snapshots that showed a predicted command).
    pub samples: u64,
    /// Sum of the errors, units.
    pub error_sum: f64,
    /// Largest error.
    pub error_max: f32,
    /// Comparisons with a non-zero error.
    pub corrections: u64,
    /// Snapshots that showed a respawn (not scored).
    pub teleports: u64,
}

impl PredictionStats {
    /// Mean error in units (0 without samples).
    pub fn mean(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.error_sum / self.samples as f64
        }
    }
}

/// The predicted local player.
#[derive(Debug, Clone, Default)]
pub struct Predictor {
    pending: VecDeque<Pending>,
    current: MoveState,
    alive: bool,
    spawn: u8,
    started: bool,
    stats: PredictionStats,
}

/// A player state's movement part.
pub fn move_state(ps: &PlayerState) -> MoveState {
    MoveState {
        pos: [ps.x, ps.y, ps.z],
        vel: [ps.vx, ps.vy, ps.vz],
        on_ground: ps.on_ground,
        jump_held: ps.jump_held,
    }
}

impl Predictor {
    /// A predictor with nothing known yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The predicted movement state now.
    pub fn current(&self) -> &MoveState {
        &self.current
    }

    /// Whether the player is (as far as the client knows) alive.
    pub fn alive(&self) -> bool {
        self.alive
    }

    /// Whether a snapshot has given it a starting point.
    pub fn started(&self) -> bool {
        self.started
    }

    /// Error statistics.
    pub fn stats(&self) -> &PredictionStats {
        &self.stats
    }

    /// Commands sent but not yet shown applied by a snapshot.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Predicts the effect of command `number`, which the client is sending now.
    pub fn predict(&mut self, number: u32, command: Command, map: &Map) {
        if self.alive {
            pmove(&mut self.current, &command, map);
        }
        if self.pending.len() == MAX_PENDING {
            self.pending.pop_front();
        }
        self.pending.push_back(Pending {
            number,
            command,
            state: self.current,
            spawn: self.spawn,
        });
    }

    /// Takes the server's player state from a new snapshot: measures the
    /// error of the command it shows applied, then replays the rest.
    pub fn reconcile(&mut self, ps: &PlayerState, map: &Map) {
        let server = move_state(ps);
        let mut shown = None;
        while let Some(front) = self.pending.front() {
            if front.number > ps.command {
                break;
            }
            if front.number == ps.command {
                shown = Some(*front);
            }
            self.pending.pop_front();
        }
        if let Some(predicted) = shown {
            if predicted.spawn != ps.spawn {
                self.stats.teleports += 1;
            } else {
                let error = distance(predicted.state.pos, server.pos);
                self.stats.samples += 1;
                self.stats.error_sum += error as f64;
                self.stats.error_max = self.stats.error_max.max(error);
                self.stats.corrections += (error > 0.0) as u64;
            }
        }
        self.current = server;
        self.alive = ps.alive;
        self.spawn = ps.spawn;
        self.started = true;
        for pending in &mut self.pending {
            if self.alive {
                pmove(&mut self.current, &pending.command, map);
            }
            pending.state = self.current;
            pending.spawn = self.spawn;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::buttons;

    fn command(seq: u32) -> Command {
        Command {
            msec: 16,
            forward: 127,
            right: if seq % 20 < 10 { 60 } else { -60 },
            yaw: (seq * 500) as u16,
            buttons: if seq % 15 == 0 { buttons::JUMP } else { 0 },
            ..Command::default()
        }
    }

    fn player_state(state: &MoveState, command: u32) -> PlayerState {
        PlayerState {
            command,
            x: state.pos[0],
            y: state.pos[1],
            z: state.pos[2],
            vx: state.vel[0],
            vy: state.vel[1],
            vz: state.vel[2],
            on_ground: state.on_ground,
            jump_held: state.jump_held,
            alive: true,
            spawn: 1,
            ..PlayerState::default()
        }
    }

    #[test]
    fn exact_replay_has_no_error_and_knockback_does() {
        let map = Map::arena();
        let start = MoveState {
            pos: [-700.0, -250.0, 0.0],
            on_ground: true,
            ..MoveState::default()
        };
        let mut server = start;
        let mut predictor = Predictor::new();
        predictor.reconcile(&player_state(&start, 0), &map);
        let mut acked = 0;
        for seq in 1..=120 {
            predictor.predict(seq, command(seq), &map);
            if seq % 3 == 0 {
                // The server applies commands with some lag and reports.
                while acked + 6 < seq {
                    acked += 1;
                    pmove(&mut server, &command(acked), &map);
                }
                predictor.reconcile(&player_state(&server, acked), &map);
            }
        }
        let stats = *predictor.stats();
        assert!(stats.samples > 30);
        assert_eq!(stats.error_max, 0.0);
        assert_eq!(predictor.pending(), (120 - acked) as usize);

        // A hit the client could not know about: the server's state moves.
        acked += 1;
        pmove(&mut server, &command(acked), &map);
        server.vel[0] += 250.0;
        acked += 1;
        pmove(&mut server, &command(acked), &map);
        predictor.reconcile(&player_state(&server, acked), &map);
        assert!(predictor.stats().error_max > 0.0);
        assert_eq!(predictor.stats().corrections, 1);
        // After reconciling, the replayed prediction matches the server again.
        let mut replay = server;
        for seq in acked + 1..=120 {
            pmove(&mut replay, &command(seq), &map);
        }
        assert_eq!(*predictor.current(), replay);
    }

    #[test]
    fn respawns_count_as_teleports() {
        let map = Map::arena();
        let start = MoveState {
            pos: [0.0, -800.0, 0.0],
            on_ground: true,
            ..MoveState::default()
        };
        let mut predictor = Predictor::new();
        predictor.reconcile(&player_state(&start, 0), &map);
        predictor.predict(1, command(1), &map);
        let mut respawned = player_state(&start, 1);
        respawned.x = 900.0;
        respawned.spawn = 2;
        predictor.reconcile(&respawned, &map);
        assert_eq!(predictor.stats().teleports, 1);
        assert_eq!(predictor.stats().samples, 0);
        assert_eq!(predictor.current().pos[0], 900.0);
    }
}
