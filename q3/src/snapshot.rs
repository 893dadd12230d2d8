//! Parsed snapshots and the spawn baselines they delta from.

use serde::Serialize;

use crate::tables::{EntityState, PlayerState, MAX_GENTITIES};

/// Longest area mask Quake 3 sends (`MAX_MAP_AREA_BYTES`).
pub const MAX_MAP_AREA_BYTES: usize = 32;

/// One `svc_snapshot` as the client reconstructs it: the full state after
/// applying the delta to its base.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    /// The message sequence of the record that carried it (`messageNum`).
    pub message_num: i32,
    /// The delta byte as sent: 0 for a full snapshot, else how many messages
    /// back the base is (see [`Snapshot::base_message`]).
    pub delta_num: u8,
    /// Server time in milliseconds.
    pub server_time: i32,
    /// `snapFlags` (rate-delayed, not-active, server-count toggle).
    pub snap_flags: u8,
    /// Area visibility mask, as many bytes as the server sent (≤ 32).
    pub areamask: Vec<u8>,
    /// The followed client's player state.
    pub ps: PlayerState,
    /// The entities in view, sorted by number (each `< 1023`).
    pub entities: Vec<(u32, EntityState)>,
    /// The last reliable server command sequence seen when it was parsed.
    pub server_command_num: i32,
    /// Whether Quake 3's client would accept it (see [`Validity`]).
    pub validity: Validity,
}

impl Snapshot {
    /// The message number of the delta base, or `None` for a full snapshot.
    /// Like Quake 3, a base at or below message 0 also means "no base".
    pub fn base_message(&self) -> Option<i32> {
        base_message(self.message_num, self.delta_num)
    }

    /// Whether Quake 3's client would keep this snapshot.
    pub fn is_valid(&self) -> bool {
        self.validity == Validity::Valid
    }

    /// The state of entity `number`, if it is in the snapshot.
    pub fn entity(&self, number: u32) -> Option<&EntityState> {
        self.entities
            .binary_search_by_key(&number, |(n, _)| *n)
            .ok()
            .map(|i| &self.entities[i].1)
    }
}

/// The base message number for a record's sequence and delta byte.
pub(crate) fn base_message(message_num: i32, delta_num: u8) -> Option<i32> {
    if delta_num == 0 {
        return None;
    }
    let base = i64::from(message_num) - i64::from(delta_num);
    (base > 0).then_some(base as i32)
}

/// Whether a snapshot's delta base was usable, by Quake 3's client rules.
///
/// An invalid snapshot is still parsed completely (the bit layout does not
/// depend on the base), against whatever the ring slot held, exactly as
/// Quake 3 does; it is then not stored in the ring, so nothing deltas from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Validity {
    /// A full snapshot, or a delta from a snapshot still in the ring.
    Valid,
    /// The ring slot of the base holds no valid snapshot.
    BaseInvalid {
        /// The base message number.
        base: i32,
    },
    /// The ring slot of the base holds a different (older) message.
    BaseTooOld {
        /// The base message number.
        base: i32,
        /// The message number the slot holds.
        found: i32,
    },
    /// The base's entities would already be overwritten in Quake 3's
    /// 2048-entry parse-entities ring.
    ParseEntitiesTooOld {
        /// The base message number.
        base: i32,
    },
}

/// The spawn baselines of the current gamestate: one [`EntityState`] per
/// entity number, all zero unless the gamestate set one. New entities in a
/// snapshot delta from their baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Baselines {
    states: Box<[EntityState]>,
}

impl Default for Baselines {
    fn default() -> Self {
        Baselines {
            states: vec![EntityState::default(); MAX_GENTITIES].into_boxed_slice(),
        }
    }
}

impl Baselines {
    /// The baseline of entity `number`; `None` only for numbers ≥ 1024,
    /// which the 10-bit wire field cannot carry.
    pub fn get(&self, number: u32) -> Option<&EntityState> {
        self.states.get(number as usize)
    }

    /// Sets the baseline of entity `number` (ignored for numbers ≥ 1024,
    /// which the 10-bit wire field cannot carry).
    pub fn set(&mut self, number: u32, state: EntityState) {
        if let Some(slot) = self.states.get_mut(number as usize) {
            *slot = state;
        }
    }

    /// The baselines that are not all-zero, by number.
    pub fn non_zero(&self) -> impl Iterator<Item = (u32, &EntityState)> {
        let zero = EntityState::default();
        self.states
            .iter()
            .enumerate()
            .filter(move |(_, s)| **s != zero)
            .map(|(n, s)| (n as u32, s))
    }
}
