//! What every workload produces and every encoder consumes: snapshots as the
//! client holds them, and the steps of a stream — a snapshot plus the base
//! it is sent as a delta from.

use std::sync::Arc;

use fields::merge::{merge_by_number, Merged};
use fields::Fields;

/// One snapshot's content, as the client holds it after decoding it.
#[derive(Debug, Clone, PartialEq)]
pub struct State<E, P> {
    /// Server time in milliseconds.
    pub server_time: i32,
    /// Snapshot flags (Quake 3's `snapFlags`: rate-delayed, not-active,
    /// server-count toggle).
    pub flags: u8,
    /// Area visibility mask (Quake 3 sends up to 32 bytes; empty when the
    /// game has no areas).
    pub areamask: Vec<u8>,
    /// The receiving client's player state.
    pub player: P,
    /// Entities in view, sorted by number.
    pub entities: Vec<(u32, E)>,
}

/// The spawn baselines an entity new to the client is sent as a delta from.
pub trait Baselines<E> {
    /// The baseline of entity `number`, or `None` to use the zeroed dummy.
    fn baseline(&self, number: u32) -> Option<&E>;

    /// Calls `f` with every baseline there is, by number (what a server's
    /// gamestate announces).
    fn each(&self, f: &mut dyn FnMut(u32, &E));
}

/// No spawn baselines: every new entity deltas from the zeroed dummy.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoBaselines;

impl<E> Baselines<E> for NoBaselines {
    fn baseline(&self, _: u32) -> Option<&E> {
        None
    }

    fn each(&self, _: &mut dyn FnMut(u32, &E)) {}
}

/// Spawn baselines as a list of `(number, state)` sorted by number.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpawnList<E>(pub Vec<(u32, E)>);

impl<E> Baselines<E> for SpawnList<E> {
    fn baseline(&self, number: u32) -> Option<&E> {
        self.0
            .binary_search_by_key(&number, |(n, _)| *n)
            .ok()
            .map(|i| &self.0[i].1)
    }

    fn each(&self, f: &mut dyn FnMut(u32, &E)) {
        for (number, state) in &self.0 {
            f(*number, state);
        }
    }
}

impl Baselines<q3::EntityState> for q3::Baselines {
    fn baseline(&self, number: u32) -> Option<&q3::EntityState> {
        self.get(number)
    }

    fn each(&self, f: &mut dyn FnMut(u32, &q3::EntityState)) {
        for (number, state) in self.non_zero() {
            f(number, state);
        }
    }
}

/// What the original stream spent on a step, when the workload is a
/// recording of one (real Quake 3 demos).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reference {
    /// Bits Quake 3's `svc_snapshot` command occupied in the recorded
    /// message, command byte included ([`q3::ParsedCommand::bits`]).
    pub original_bits: usize,
    /// Bits of the same command written again by the demo crate's own
    /// re-encoder ([`q3::reencode::write_snapshot`]).
    pub reencoded_bits: usize,
}

/// One message of a workload: a snapshot and what it is a delta from.
pub struct Step<'a, E, P> {
    /// The snapshot to send.
    pub snapshot: &'a Arc<State<E, P>>,
    /// The snapshot the client acknowledged that this one deltas from
    /// (`None`: a full snapshot from the zeroed dummy).
    pub base: Option<&'a Arc<State<E, P>>>,
    /// How many messages back the base is, as Quake 3 sends it (0: full).
    pub delta_num: u8,
    /// The server's frame length in milliseconds: its clock advances in
    /// whole frames (Quake 3: `1000 / sv_fps`), so elapsed times are whole
    /// numbers of frames. A stream constant both ends know (a session's
    /// gamestate would carry it); 1 when unknown.
    pub frame_ms: u32,
    /// Spawn baselines for entities new to the client.
    pub baselines: &'a dyn Baselines<E>,
    /// The original stream's cost, for recordings.
    pub reference: Option<Reference>,
    /// Which of the workload's streams it belongs to (one per client of a
    /// multi-client workload; 0 otherwise). An encoder that keeps state
    /// per stream, as the engine does, keys it by this.
    pub stream: usize,
}

impl<E: std::fmt::Debug, P: std::fmt::Debug> std::fmt::Debug for Step<'_, E, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Step")
            .field("snapshot", &self.snapshot)
            .field("base", &self.base)
            .field("delta_num", &self.delta_num)
            .field("frame_ms", &self.frame_ms)
            .field("reference", &self.reference)
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl<E, P> Clone for Step<'_, E, P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E, P> Copy for Step<'_, E, P> {}

/// The zeroed dummy values full snapshots and new entities delta from.
#[derive(Debug, Clone)]
pub struct Zeros<E, P> {
    /// The dummy entity.
    pub entity: E,
    /// The dummy player state.
    pub player: P,
}

impl<E: Default, P: Default> Default for Zeros<E, P> {
    fn default() -> Self {
        Zeros {
            entity: E::default(),
            player: P::default(),
        }
    }
}

/// What happens to one entity number between a base and a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change<'a, E> {
    /// In both, different on the wire: a delta from the old state.
    Changed {
        /// Entity number.
        number: u32,
        /// The client's copy.
        old: &'a E,
        /// The new state.
        new: &'a E,
    },
    /// Only in the snapshot: new to the client, a delta from its baseline.
    Added {
        /// Entity number.
        number: u32,
        /// The new state.
        new: &'a E,
    },
    /// Only in the base: the client must drop it.
    Removed {
        /// Entity number.
        number: u32,
    },
    /// In both and equal on the wire: nothing is sent.
    Unchanged {
        /// Entity number.
        number: u32,
        /// The (unchanged) state.
        state: &'a E,
    },
}

impl<E> Change<'_, E> {
    /// The entity number.
    pub fn number(&self) -> u32 {
        match *self {
            Change::Changed { number, .. }
            | Change::Added { number, .. }
            | Change::Removed { number }
            | Change::Unchanged { number, .. } => number,
        }
    }

    /// Whether the update carries a state: the entities "bits per changed
    /// entity" counts (changed and added).
    pub fn is_update(&self) -> bool {
        matches!(self, Change::Changed { .. } | Change::Added { .. })
    }
}

/// The sorted merge of a base's and a snapshot's entity lists, in number
/// order: exactly the walk Quake 3's `SV_EmitPacketEntities` makes.
pub fn merge<'a, E: Fields>(
    old: &'a [(u32, E)],
    new: &'a [(u32, E)],
) -> impl Iterator<Item = Change<'a, E>> + 'a {
    merge_by_number(old, new).map(|merged| match merged {
        Merged::Both { number, old, new } if new.wire_differs(old) => {
            Change::Changed { number, old, new }
        }
        Merged::Both { number, new, .. } => Change::Unchanged { number, state: new },
        Merged::Added { number, new } => Change::Added { number, new },
        Merged::Removed { number, .. } => Change::Removed { number },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fields::{net_struct, unsigned};

    net_struct! {
        struct Thing {
            value: u16 = unsigned(8),
        }
    }

    #[test]
    fn the_merge_classifies_every_number_in_order() {
        let t = |value| Thing { value };
        let old = vec![(1, t(1)), (3, t(3)), (5, t(5)), (9, t(9))];
        let new = vec![(0, t(0)), (3, t(3)), (5, t(6)), (7, t(7))];
        let kinds: Vec<(u32, &str)> = merge(&old, &new)
            .map(|c| {
                let kind = match c {
                    Change::Changed { .. } => "changed",
                    Change::Added { .. } => "added",
                    Change::Removed { .. } => "removed",
                    Change::Unchanged { .. } => "unchanged",
                };
                (c.number(), kind)
            })
            .collect();
        assert_eq!(
            kinds,
            [
                (0, "added"),
                (1, "removed"),
                (3, "unchanged"),
                (5, "changed"),
                (7, "added"),
                (9, "removed")
            ]
        );
    }
}
