//! What lockstep runs: the [`Simulation`] trait, the [`StateHasher`] for
//! sync checksums, and [`Units`], a small built-in deterministic simulation
//! of units that move every step (the example, the tests, the benches and
//! the `demo` tool's replays use it; the arena runs its own world).

use netchan::SeededRng;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::wire::{ParticipantId, Turn};

/// A simulation that can't be built or loaded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SimError {
    /// The setup bytes are not this simulation's.
    #[error("bad {sim} setup: {reason}")]
    Setup {
        /// The simulation's name.
        sim: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A saved state that does not load.
    #[error("bad {sim} state: {reason}")]
    State {
        /// The simulation's name.
        sim: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// A deterministic simulation: the same setup and the same turns give
/// bit-identical states on every machine running the same build (see the
/// crate docs, "Determinism", for what that takes).
pub trait Simulation: Sized {
    /// The name recordings store, so a replay tool can pick the simulation.
    const NAME: &'static str;

    /// The simulation at turn 0, before any turn executed.
    fn create(seed: u64, setup: &[u8], participants: &[ParticipantId]) -> Result<Self, SimError>;

    /// A simulation from [`Self::save`]'s bytes (keyframes, dumps).
    fn load(state: &[u8]) -> Result<Self, SimError>;

    /// Executes one turn: removes `turn.dropped`, applies every set's
    /// commands in participant order, then runs `turn.steps` steps of
    /// `step_ms` simulated milliseconds each.
    fn execute(&mut self, turn: &Turn, step_ms: u32);

    /// A digest of the whole state: equal digests mean equal states.
    fn checksum(&self) -> u64;

    /// The whole state as bytes, for keyframes and out-of-sync dumps.
    fn save(&self) -> Vec<u8>;

    /// A human-readable dump of the state, one fact a line, for comparing
    /// the dumps of participants that went out of sync.
    fn describe(&self) -> String;

    /// A small deliberate change of the state (it must change the
    /// checksum): how tests and `--inject-desync` break determinism.
    fn perturb(&mut self);
}

/// FNV-1a (64-bit) over explicitly little-endian words: the same digest on
/// every platform (`std::hash::Hasher::write_u32` uses native byte order,
/// and `DefaultHasher` is randomly keyed, so neither will do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateHasher(u64);

impl Default for StateHasher {
    fn default() -> Self {
        StateHasher(0xcbf2_9ce4_8422_2325)
    }
}

impl StateHasher {
    /// Adds bytes.
    pub fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// Adds a word.
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }

    /// Adds a signed word.
    pub fn i32(&mut self, v: i32) {
        self.bytes(&v.to_le_bytes());
    }

    /// Adds a 64-bit word.
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    /// The digest.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// Fixed-point scale of [`Units`] positions: 1/16 of a world unit.
pub const UNIT_SCALE: i32 = 16;
/// Most units in a [`Units`] simulation.
pub const MAX_UNITS: u32 = 1 << 20;
/// Most units one [`UnitOrder`] moves.
pub const MAX_ORDER_UNITS: u16 = 1024;

/// Setup of [`Units`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitsSetup {
    /// Units in the world, owned round-robin by the participants.
    pub units: u32,
    /// Half the world's width, world units (positions span `-half..=half`).
    pub half_extent: i32,
    /// Speed, world units per simulated second.
    pub speed: i32,
}

impl Default for UnitsSetup {
    fn default() -> Self {
        UnitsSetup {
            units: 256,
            half_extent: 2000,
            speed: 120,
        }
    }
}

impl UnitsSetup {
    /// The setup as bytes (for [`crate::wire::Start::setup`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_allocvec(self).unwrap_or_default()
    }
}

/// One unit: integer (fixed-point) position and target, so no floating
/// point is involved anywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unit {
    /// Owning participant.
    pub owner: ParticipantId,
    /// Position, 1/16 units.
    pub pos: [i32; 2],
    /// Where it walks to, 1/16 units.
    pub target: [i32; 2],
}

/// A move order, the [`Units`] command: units `first..first + count` that
/// the issuer owns walk to `target` (world units).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnitOrder {
    /// First unit.
    pub first: u32,
    /// How many units from `first`.
    pub count: u16,
    /// Destination, world units.
    pub target: [i32; 2],
}

impl UnitOrder {
    /// Encoded size.
    pub const LEN: usize = 14;

    /// The order's bytes.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        out[0..4].copy_from_slice(&self.first.to_le_bytes());
        out[4..6].copy_from_slice(&self.count.to_le_bytes());
        out[6..10].copy_from_slice(&self.target[0].to_le_bytes());
        out[10..14].copy_from_slice(&self.target[1].to_le_bytes());
        out
    }

    /// An order from its bytes, if they are one.
    pub fn decode(bytes: &[u8]) -> Option<UnitOrder> {
        let bytes: &[u8; Self::LEN] = bytes.try_into().ok()?;
        let word = |at: usize| [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]];
        Some(UnitOrder {
            first: u32::from_le_bytes(word(0)),
            count: u16::from_le_bytes([bytes[4], bytes[5]]),
            target: [i32::from_le_bytes(word(6)), i32::from_le_bytes(word(10))],
        })
    }
}

/// A world of units that walk to their targets every step and pick a new
/// random target on arrival; participants redirect their own units with
/// [`UnitOrder`]s. Integer arithmetic only, one seeded generator, units in a
/// `Vec` (never a hash map): deterministic by construction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Units {
    setup: UnitsSetup,
    rng: u64,
    time_ms: u64,
    turn: u32,
    participants: Vec<ParticipantId>,
    units: Vec<Unit>,
    /// Orders applied (a counter folded into the checksum).
    orders: u64,
    /// Orders refused (unit not the issuer's, malformed).
    refused: u64,
}

impl Units {
    /// The setup.
    pub fn setup(&self) -> &UnitsSetup {
        &self.setup
    }

    /// The units.
    pub fn units(&self) -> &[Unit] {
        &self.units
    }

    /// Simulated time, ms.
    pub fn time_ms(&self) -> u64 {
        self.time_ms
    }

    /// The last turn executed (0 before any).
    pub fn turn(&self) -> u32 {
        self.turn
    }

    /// Orders applied and refused so far.
    pub fn orders(&self) -> (u64, u64) {
        (self.orders, self.refused)
    }

    /// The participants still playing.
    pub fn participants(&self) -> &[ParticipantId] {
        &self.participants
    }

    fn random_target(&mut self) -> [i32; 2] {
        // The simulation's whole random state is one u64 (it is hashed into
        // the sync checksum and saved in keyframes): each draw seeds the
        // workspace's generator from it and keeps the generator's next word.
        let mut rng = SeededRng::new(self.rng);
        let span = (self.setup.half_extent as i64 * 2 + 1).max(1) as u64;
        let x = rng.below(span) as i64 - self.setup.half_extent as i64;
        let y = rng.below(span) as i64 - self.setup.half_extent as i64;
        self.rng = rng.next_u64();
        [x as i32 * UNIT_SCALE, y as i32 * UNIT_SCALE]
    }

    fn apply(&mut self, issuer: ParticipantId, command: &[u8]) {
        let Some(order) = UnitOrder::decode(command) else {
            self.refused += 1;
            return;
        };
        let half = self.setup.half_extent;
        let target = [
            order.target[0].clamp(-half, half) * UNIT_SCALE,
            order.target[1].clamp(-half, half) * UNIT_SCALE,
        ];
        let count = order.count.min(MAX_ORDER_UNITS) as u32;
        let end = order
            .first
            .saturating_add(count)
            .min(self.units.len() as u32);
        let mut moved = false;
        for unit in &mut self.units[(order.first as usize).min(end as usize)..end as usize] {
            if unit.owner == issuer {
                unit.target = target;
                moved = true;
            }
        }
        if moved {
            self.orders += 1;
        } else {
            self.refused += 1;
        }
    }

    fn step(&mut self, step_ms: u32) {
        let reach = (self.setup.speed as i64 * UNIT_SCALE as i64 * step_ms as i64 / 1000)
            .clamp(1, i32::MAX as i64) as i32;
        for i in 0..self.units.len() {
            if self.units[i].pos == self.units[i].target {
                self.units[i].target = self.random_target();
            }
            let unit = &mut self.units[i];
            for axis in 0..2 {
                let d = unit.target[axis].saturating_sub(unit.pos[axis]);
                unit.pos[axis] += d.clamp(-reach, reach);
            }
        }
        self.time_ms += step_ms as u64;
    }
}

impl Simulation for Units {
    const NAME: &'static str = "units";

    fn create(seed: u64, setup: &[u8], participants: &[ParticipantId]) -> Result<Self, SimError> {
        let setup: UnitsSetup = postcard::from_bytes(setup).map_err(|e| SimError::Setup {
            sim: Self::NAME,
            reason: e.to_string(),
        })?;
        if setup.units > MAX_UNITS || !(1..=1_000_000).contains(&setup.half_extent) {
            return Err(SimError::Setup {
                sim: Self::NAME,
                reason: format!(
                    "{} units (at most {MAX_UNITS}), half extent {} (1..=1000000)",
                    setup.units, setup.half_extent
                ),
            });
        }
        if participants.is_empty() {
            return Err(SimError::Setup {
                sim: Self::NAME,
                reason: "no participants".into(),
            });
        }
        let mut sim = Units {
            setup,
            rng: seed,
            time_ms: 0,
            turn: 0,
            participants: participants.to_vec(),
            units: Vec::with_capacity(setup.units as usize),
            orders: 0,
            refused: 0,
        };
        for i in 0..setup.units {
            let pos = sim.random_target();
            let target = sim.random_target();
            sim.units.push(Unit {
                owner: participants[i as usize % participants.len()],
                pos,
                target,
            });
        }
        Ok(sim)
    }

    fn load(state: &[u8]) -> Result<Self, SimError> {
        let sim: Units = postcard::from_bytes(state).map_err(|e| SimError::State {
            sim: Self::NAME,
            reason: e.to_string(),
        })?;
        if sim.units.len() > MAX_UNITS as usize {
            return Err(SimError::State {
                sim: Self::NAME,
                reason: format!("{} units", sim.units.len()),
            });
        }
        Ok(sim)
    }

    fn execute(&mut self, turn: &Turn, step_ms: u32) {
        self.turn = turn.turn;
        if !turn.dropped.is_empty() {
            // A leaver's units leave with it.
            self.participants.retain(|p| !turn.dropped.contains(p));
            self.units.retain(|u| !turn.dropped.contains(&u.owner));
        }
        for (issuer, set) in &turn.sets {
            for command in &set.commands {
                self.apply(*issuer, command);
            }
        }
        for _ in 0..turn.steps {
            self.step(step_ms);
        }
    }

    fn checksum(&self) -> u64 {
        let mut h = StateHasher::default();
        h.u64(self.rng);
        h.u64(self.time_ms);
        h.u32(self.turn);
        h.u64(self.orders);
        h.u64(self.refused);
        h.bytes(&self.participants);
        for unit in &self.units {
            h.bytes(&[unit.owner]);
            for v in unit.pos.iter().chain(&unit.target) {
                h.i32(*v);
            }
        }
        h.finish()
    }

    fn save(&self) -> Vec<u8> {
        postcard::to_allocvec(self).unwrap_or_default()
    }

    fn describe(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "units: turn {} time {} ms rng {:016x} orders {} refused {} participants {:?} checksum {:016x}",
            self.turn,
            self.time_ms,
            self.rng,
            self.orders,
            self.refused,
            self.participants,
            self.checksum()
        );
        for (i, u) in self.units.iter().enumerate() {
            let _ = writeln!(
                out,
                "unit {i} owner {} pos {} {} target {} {}",
                u.owner, u.pos[0], u.pos[1], u.target[0], u.target[1]
            );
        }
        out
    }

    fn perturb(&mut self) {
        // One sixteenth of a unit on one unit, or the clock when there is none.
        match self.units.first_mut() {
            Some(unit) => unit.pos[0] = unit.pos[0].wrapping_add(1),
            None => self.time_ms += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::CommandSet;

    fn world(units: u32) -> Units {
        let setup = UnitsSetup {
            units,
            ..UnitsSetup::default()
        };
        Units::create(9, &setup.to_bytes(), &[0, 1, 2]).unwrap()
    }

    #[test]
    fn units_move_every_step_and_orders_only_move_the_issuers_units() {
        let mut sim = world(30);
        let before = sim.units.clone();
        let order = UnitOrder {
            first: 0,
            count: 3,
            target: [10, 10],
        };
        let turn = Turn {
            turn: 1,
            turn_ms: 100,
            steps: 2,
            dropped: vec![],
            sets: vec![(
                1,
                CommandSet {
                    commands: vec![order.encode().to_vec()],
                },
            )],
        };
        sim.execute(&turn, 50);
        // Only unit 1 of units 0..3 belongs to participant 1.
        assert_eq!(sim.units[1].target, [160, 160]);
        assert_eq!(sim.units[0].target, before[0].target);
        assert_eq!(sim.orders(), (1, 0));
        assert!(sim.units.iter().zip(&before).all(|(a, b)| a.pos != b.pos));
        assert_eq!(sim.time_ms(), 100);
        // Save and load give the same state and checksum.
        let loaded = Units::load(&sim.save()).unwrap();
        assert_eq!(loaded, sim);
        assert_eq!(loaded.checksum(), sim.checksum());
        // A dropped participant's units leave.
        let drop = Turn {
            turn: 2,
            turn_ms: 100,
            steps: 1,
            dropped: vec![2],
            sets: vec![],
        };
        sim.execute(&drop, 50);
        assert_eq!(sim.units.len(), 20);
        assert_eq!(sim.participants(), &[0, 1]);
    }

    #[test]
    fn same_seed_same_state_and_perturbing_changes_the_checksum() {
        let mut a = world(100);
        let mut b = world(100);
        let turn = Turn {
            turn: 1,
            turn_ms: 100,
            steps: 40,
            ..Turn::default()
        };
        a.execute(&turn, 50);
        b.execute(&turn, 50);
        assert_eq!(a.checksum(), b.checksum());
        b.perturb();
        assert_ne!(a.checksum(), b.checksum());
        assert!(Units::load(b"\xff\xff").is_err());
        assert!(Units::create(1, b"", &[0]).is_err());
    }
}
