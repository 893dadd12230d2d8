//! Speed control, Age of Empires style: the host picks the turn length from
//! the worst link and the simulation rate from the slowest machine.
//!
//! * **Turn length.** A command set for turn `T + D` leaves its sender when
//!   turn `T + 1` starts, and must be at every participant when turn
//!   `T + D` starts: it has `D − 1` turns to go sender → host → everyone.
//!   That path takes half of two round trips, `(rtt_a + rtt_b) / 2` for the
//!   two worst links; each loss costs about one more round trip before
//!   netchan resends, so the path is stretched by `1 + 2·loss` and a
//!   margin, then divided by `D − 1`.
//! * **Simulation rate.** Each turn runs whole steps of `step_ms` simulated
//!   milliseconds, normally `turn_ms / step_ms` of them (real speed). The
//!   slowest machine reports how long one step takes it; a turn never asks
//!   for more steps than fit in 80% of the turn on that machine (the game
//!   slows down instead of that machine falling behind), and a turn is at
//!   least 1.25 frames of the slowest machine long (the turn rate drops).
//!
//! * **Feedback.** Each participant also reports the smoothed interval
//!   between its turns. Where the estimate falls short — at high loss a
//!   turn waits for the worst of all links and their resends — turns come
//!   further apart than planned, and the plan follows the slowest
//!   participant's interval (95% of it, rounded down to a step, so it
//!   creeps back down when the links allow).
//!
//! The turn length is a whole number of steps. It rises at once when the
//! target rises, and falls by a quarter of the gap per turn, so a single
//! noisy sample neither stalls nor races the game.

use crate::wire::SpeedReport;

/// Bounds of the speed control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpeedLimits {
    /// Shortest turn, ms.
    pub min_turn_ms: u32,
    /// Longest turn, ms.
    pub max_turn_ms: u32,
    /// Safety margin added to the path latency, ms.
    pub margin_ms: u32,
}

impl Default for SpeedLimits {
    fn default() -> Self {
        SpeedLimits {
            min_turn_ms: 50,
            max_turn_ms: 2000,
            margin_ms: 10,
        }
    }
}

/// One participant's link and machine, as the host sees them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Measure {
    /// Round-trip time to the host, ms (the larger of the participant's
    /// report and the host's own measurement).
    pub rtt_ms: u32,
    /// Smoothed fraction of datagrams lost on the link (0..=1).
    pub loss: f32,
    /// Time one step takes on the participant's machine, ms.
    pub frame_ms: u32,
    /// Smoothed interval between the participant's turns, ms.
    pub period_ms: u32,
}

impl Measure {
    /// Merges a participant's report with the host's link measurement.
    pub fn from_report(report: SpeedReport, host_rtt_ms: u32, loss: f32) -> Measure {
        Measure {
            rtt_ms: (report.rtt_ms as u32).max(host_rtt_ms),
            loss,
            frame_ms: report.frame_ms as u32,
            period_ms: report.period_ms as u32,
        }
    }
}

/// What the host decided for a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Wall-clock turn length, ms.
    pub turn_ms: u32,
    /// Simulation steps in the turn.
    pub steps: u32,
}

/// The host's speed controller.
#[derive(Debug, Clone)]
pub struct SpeedControl {
    limits: SpeedLimits,
    delay: u32,
    step_ms: u32,
    current: Plan,
}

impl SpeedControl {
    /// A controller starting at `initial_turn_ms`.
    pub fn new(limits: SpeedLimits, delay: u32, step_ms: u32, initial_turn_ms: u32) -> Self {
        let step_ms = step_ms.max(1);
        let turn_ms = round_up(initial_turn_ms.max(limits.min_turn_ms), step_ms);
        SpeedControl {
            limits,
            delay: delay.max(2),
            step_ms,
            current: Plan {
                turn_ms,
                steps: turn_ms / step_ms,
            },
        }
    }

    /// The plan in force.
    pub fn current(&self) -> Plan {
        self.current
    }

    /// The turn length and steps the measurements call for, before smoothing.
    pub fn target(&self, measures: &[Measure]) -> Plan {
        let mut rtts: Vec<u32> = measures.iter().map(|m| m.rtt_ms).collect();
        rtts.sort_unstable_by(|a, b| b.cmp(a));
        let path = match rtts.as_slice() {
            [] => 0,
            [one] => *one,
            [a, b, ..] => (a + b) / 2,
        };
        let loss = measures.iter().map(|m| m.loss).fold(0.0f32, f32::max);
        // Integer arithmetic on per-mille loss: the plan is the host's alone,
        // but keeping it exact makes it reproducible from a log.
        let loss_permille = (loss.clamp(0.0, 1.0) * 1000.0) as u32;
        let stretched = path * (1000 + 2 * loss_permille) / 1000 + self.limits.margin_ms;
        let latency_turn = stretched.div_ceil(self.delay - 1);
        let slowest = measures.iter().map(|m| m.frame_ms).max().unwrap_or(0);
        let frame_turn = (slowest * 5).div_ceil(4);
        let turn_ms = round_up(
            latency_turn
                .max(frame_turn)
                .clamp(self.limits.min_turn_ms, self.limits.max_turn_ms),
            self.step_ms,
        );
        Plan {
            turn_ms,
            steps: self.steps_for(turn_ms, slowest),
        }
    }

    fn steps_for(&self, turn_ms: u32, slowest_frame_ms: u32) -> u32 {
        let real_speed = (turn_ms / self.step_ms).max(1);
        if slowest_frame_ms == 0 {
            return real_speed;
        }
        let affordable = (turn_ms * 4 / 5 / slowest_frame_ms).max(1);
        real_speed.min(affordable)
    }

    /// Recomputes the plan for the next turn from the current measurements.
    pub fn update(&mut self, measures: &[Measure]) -> Plan {
        let mut target = self.target(measures);
        // Turns arriving late despite the estimate (losses cost a resend,
        // and every turn waits for the worst of all links) show as turns
        // further apart than planned: plan what the links really give, a
        // little less so the turn creeps back down when they give more.
        // Bounded by what was measured, it cannot run away.
        let period = measures.iter().map(|m| m.period_ms).max().unwrap_or(0);
        let achieved = period * 19 / 20 / self.step_ms * self.step_ms;
        target.turn_ms = target.turn_ms.max(achieved.min(self.limits.max_turn_ms));
        let turn_ms = if target.turn_ms >= self.current.turn_ms {
            target.turn_ms
        } else {
            let gap = self.current.turn_ms - target.turn_ms;
            // Round down, so a gap smaller than a step still closes.
            ((self.current.turn_ms - gap.div_ceil(4)) / self.step_ms * self.step_ms)
                .max(target.turn_ms)
        };
        let slowest = measures.iter().map(|m| m.frame_ms).max().unwrap_or(0);
        self.current = Plan {
            turn_ms,
            steps: self.steps_for(turn_ms, slowest),
        };
        self.current
    }
}

fn round_up(ms: u32, step: u32) -> u32 {
    ms.div_ceil(step).max(1) * step
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(rtt_ms: u32, loss: f32, frame_ms: u32) -> Measure {
        Measure {
            rtt_ms,
            loss,
            frame_ms,
            period_ms: 0,
        }
    }

    #[test]
    fn the_worst_links_set_the_turn_and_the_slowest_machine_the_steps() {
        let control = SpeedControl::new(SpeedLimits::default(), 2, 50, 100);
        // Two 120 ms links, no loss: 120 + 10 margin over one turn of transit → 150 ms.
        let plan = control.target(&[link(120, 0.0, 5), link(120, 0.0, 5), link(20, 0.0, 5)]);
        assert_eq!(
            plan,
            Plan {
                turn_ms: 150,
                steps: 3
            }
        );
        // 20% loss stretches the path by 40%: 168 + 10 → 200 ms.
        let plan = control.target(&[link(120, 0.2, 5), link(120, 0.0, 5)]);
        assert_eq!(
            plan,
            Plan {
                turn_ms: 200,
                steps: 4
            }
        );
        // A machine taking 60 ms a step affords 2 steps of a 150 ms turn (120 ms).
        let plan = control.target(&[link(120, 0.0, 60), link(120, 0.0, 5)]);
        assert_eq!(
            plan,
            Plan {
                turn_ms: 150,
                steps: 2
            }
        );
        // One taking 300 ms a step makes the turn 375 → 400 ms, one step.
        let plan = control.target(&[link(120, 0.0, 300), link(120, 0.0, 5)]);
        assert_eq!(
            plan,
            Plan {
                turn_ms: 400,
                steps: 1
            }
        );
        // Delay 3 gives the path two turns.
        let control = SpeedControl::new(SpeedLimits::default(), 3, 50, 100);
        assert_eq!(control.target(&[link(180, 0.0, 1)]).turn_ms, 100);
    }

    #[test]
    fn the_turn_rises_at_once_and_falls_gradually() {
        let mut control = SpeedControl::new(SpeedLimits::default(), 2, 50, 50);
        assert_eq!(control.update(&[link(400, 0.0, 1)]).turn_ms, 450);
        let falling: Vec<u32> = (0..4)
            .map(|_| control.update(&[link(10, 0.0, 1)]).turn_ms)
            .collect();
        assert_eq!(falling, vec![350, 250, 200, 150]);
        // Turns 330 ms apart at a plan of 150: 95% of 330 → 300.
        let late = Measure {
            period_ms: 330,
            ..link(10, 0.0, 1)
        };
        assert_eq!(control.update(&[late]).turn_ms, 300);
        // At the plan's own pace (300 apart) it creeps down a step: 285 → 250.
        let paced = Measure {
            period_ms: 300,
            ..link(10, 0.0, 1)
        };
        assert_eq!(control.update(&[paced]).turn_ms, 250);
    }
}
