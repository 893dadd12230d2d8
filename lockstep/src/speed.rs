//! Speed control, Age of Empires style: the host picks the turn length from
//! the worst link and the simulation rate from the slowest machine.
//!
//! * **Turn length.** A command set for turn `T + D` leaves its sender when
//!   turn `T + 1` starts, and must be at every participant when turn
//!   `T + D` starts: it has `D − 1` turns to go sender → host → everyone.
//!   That path takes half of two round trips, `(rtt_a + rtt_b) / 2` for the
//!   two worst links, plus a margin. Sets and turns are repeated every
//!   repeat interval `R` until acknowledged, so a loss on either hop costs
//!   one repeat interval, not a round trip. Each hop's budget gets `k`
//!   repeat intervals, the `k` that costs the least input latency: `k`
//!   repeats lengthen every turn by `2kR`, while a copy that needs more than
//!   `k` repeats (chance `loss^(k+1)` on each of the `2n` hops of `n`
//!   participants) stalls a turn by about `R` per extra repeat, so the
//!   expected cost is `2R·(k + Σ lossᵢ^(k+1) / (1 − lossᵢ))` over every
//!   participant's link. That is no repeat at all at 10% loss on 8 links
//!   (the rare late turn costs less than longer turns would), one at 20%.
//!   A sum rather than the worst link's loss keeps one noisy estimate from
//!   setting the pace. The sum is divided by `D − 1`.
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
    repeat_ms: u32,
    current: Plan,
}

/// Most repeat intervals a hop's budget gets.
const MAX_REPEATS: u32 = 8;

/// The repeat intervals to budget per hop for links losing
/// `losses_permille`: the `k` minimising `k + Σ lossᵢ^(k+1) / (1 − lossᵢ)`,
/// the turn lengthened by `k` repeats against the expected stalls of copies
/// that needed more (both in units of `2R`; see the module docs).
pub fn repeats_budgeted(losses_permille: &[u32]) -> u32 {
    const ONE: u64 = 1_000_000;
    let mut best = (u64::MAX, 0);
    for k in 0..=MAX_REPEATS {
        let late: u64 = losses_permille
            .iter()
            .map(|&p| {
                let p = p.min(999) as u64;
                // p^(k+1), in parts per million.
                let mut all_lost = p * 1000;
                for _ in 0..k {
                    all_lost = all_lost * p / 1000;
                }
                all_lost * 1000 / (1000 - p)
            })
            .sum();
        let cost = k as u64 * ONE + late;
        if cost < best.0 {
            best = (cost, k);
        }
    }
    best.1
}

impl SpeedControl {
    /// A controller starting at `initial_turn_ms`, for sets and turns
    /// repeated every `repeat_ms` until acknowledged.
    pub fn new(
        limits: SpeedLimits,
        delay: u32,
        step_ms: u32,
        initial_turn_ms: u32,
        repeat_ms: u32,
    ) -> Self {
        let step_ms = step_ms.max(1);
        let turn_ms = round_up(initial_turn_ms.max(limits.min_turn_ms), step_ms);
        SpeedControl {
            limits,
            delay: delay.max(2),
            step_ms,
            repeat_ms,
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
        // Integer arithmetic on per-mille loss: the plan is the host's alone,
        // but keeping it exact makes it reproducible from a log.
        let losses: Vec<u32> = measures
            .iter()
            .map(|m| (m.loss.clamp(0.0, 1.0) * 1000.0) as u32)
            .collect();
        // Two hops (sender → host → everyone), each with its repeats.
        let repeats = 2 * repeats_budgeted(&losses) * self.repeat_ms;
        let stretched = path + self.limits.margin_ms + repeats;
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
        let control = SpeedControl::new(SpeedLimits::default(), 2, 50, 100, 25);
        // Two 120 ms links, no loss: 120 + 10 margin over one turn of transit → 150 ms.
        let plan = control.target(&[link(120, 0.0, 5), link(120, 0.0, 5), link(20, 0.0, 5)]);
        assert_eq!(
            plan,
            Plan {
                turn_ms: 150,
                steps: 3
            }
        );
        // Eight links at 20% loss: one repeat on each hop, 120 + 10 + 2 × 25 → 200 ms.
        let plan = control.target(&[link(120, 0.2, 5); 8]);
        assert_eq!(
            plan,
            Plan {
                turn_ms: 200,
                steps: 4
            }
        );
        // At 10% a late turn now and then costs less than a repeat in every turn.
        assert_eq!(control.target(&[link(120, 0.1, 5); 8]).turn_ms, 150);
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
        let control = SpeedControl::new(SpeedLimits::default(), 3, 50, 100, 25);
        assert_eq!(control.target(&[link(180, 0.0, 1)]).turn_ms, 100);
    }

    #[test]
    fn repeats_are_budgeted_where_they_cost_less_than_the_stalls_they_save() {
        let eight = |p: u32| repeats_budgeted(&[p; 8]);
        assert_eq!(eight(0), 0);
        assert_eq!(eight(100), 0);
        assert_eq!(eight(200), 1);
        assert_eq!(eight(300), 1);
        assert_eq!(eight(500), 2);
        // A lone link never: a repeat in every turn costs as much as the
        // stalls it saves on average. Many middling links add up.
        assert_eq!(repeats_budgeted(&[0, 0, 0, 600]), 0);
        assert_eq!(repeats_budgeted(&[150; 32]), 1);
        assert_eq!(repeats_budgeted(&[1000; 2]), MAX_REPEATS);
        assert_eq!(repeats_budgeted(&[]), 0);
    }

    #[test]
    fn the_turn_rises_at_once_and_falls_gradually() {
        let mut control = SpeedControl::new(SpeedLimits::default(), 2, 50, 50, 25);
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
