//! The deltas a native message carries, without writing one: the player
//! state's and each changed or new entity's, in the context the snapshot
//! engine's writer codes them in, and the entity list's entries — what a
//! model trainer counts and what the adaptation benchmark tallies
//! ([`MessageTally`]).

use fields::codec::anchor_of;
use fields::model::{NativeModel, SymbolTally};
use fields::{DeltaContext, Fields};

use crate::state::{merge, Change, State, Step, Zeros};

/// The context the native codec's predictions use (as
/// `q3::model::delta_context`): the elapsed server time from `base` to
/// `snapshot`, and the viewer's position, which the receiver knows once it
/// has read the player state, as the anchor of positions entering the view
/// ([`fields::codec::anchor_of`]).
pub fn delta_context<E, P: Fields>(
    snapshot: &State<E, P>,
    base: Option<&State<E, P>>,
) -> DeltaContext {
    DeltaContext {
        elapsed_ms: base.map_or(0, |b| snapshot.server_time.wrapping_sub(b.server_time)),
        spawn: false,
        anchor: anchor_of(&snapshot.player),
        server_time: Some(snapshot.server_time as u32),
    }
}

/// The context of a message's player-state delta: its
/// [`delta_context`] without the anchor, which the receiver learns from
/// this very state, not before it; from the zeroed dummy when `full`.
pub fn player_context(context: &DeltaContext, full: bool) -> DeltaContext {
    context.with_spawn(full).with_anchor(None)
}

/// Calls `player` with a message's player-state delta and `entity` with
/// each entity delta it carries (changed from the client's copy, or new
/// from its spawn baseline), each in the context the writer codes it in,
/// and fills `list` with the entity list's entries (number, removed), in
/// order: what a model trainer or an adaptation counts.
pub fn visit_deltas<E: Fields, P: Fields>(
    step: &Step<'_, E, P>,
    zeros: &Zeros<E, P>,
    player: &mut dyn FnMut(&P, &P, &DeltaContext),
    entity: &mut dyn FnMut(&E, &E, &DeltaContext),
    list: &mut Vec<(u32, bool)>,
) {
    let snapshot = &**step.snapshot;
    let base = step.base.map(|b| &**b);
    let context = delta_context(snapshot, base);
    let base_player = base.map_or(&zeros.player, |b| &b.player);
    player(
        base_player,
        &snapshot.player,
        &player_context(&context, base.is_none()),
    );
    list.clear();
    let old = base.map_or(&[][..], |b| &b.entities[..]);
    for change in merge(old, &snapshot.entities) {
        match change {
            Change::Changed { old, new, number } => {
                entity(old, new, &context);
                list.push((number, false));
            }
            Change::Added { number, new } => {
                let baseline = step.baselines.baseline(number).unwrap_or(&zeros.entity);
                entity(baseline, new, &context.with_spawn(true));
                list.push((number, false));
            }
            Change::Removed { number } => list.push((number, true)),
            Change::Unchanged { .. } => {}
        }
    }
}

/// The symbols one message codes, per model (what an adapting model adds
/// to its chain, [`fields::model::Adaptation::after`]): for the criterion
/// benchmark of tallying and rebuilding. Reuse one between messages.
#[derive(Debug, Clone, Default)]
pub struct MessageTally {
    /// The entity model's: the entity deltas and the list's numbers.
    pub entity: SymbolTally,
    /// The player-state model's.
    pub player: SymbolTally,
    list: Vec<(u32, bool)>,
}

impl MessageTally {
    /// An empty tally.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tallies the symbols of `step`'s message as `entity` and `player`
    /// code it (replacing the last message's).
    pub fn message<E: Fields, P: Fields>(
        &mut self,
        step: &Step<'_, E, P>,
        zeros: &Zeros<E, P>,
        entity: &NativeModel,
        player: &NativeModel,
    ) {
        let (entity_tally, player_tally) = (&mut self.entity, &mut self.player);
        entity_tally.clear();
        player_tally.clear();
        visit_deltas(
            step,
            zeros,
            &mut |base, new, context| player_tally.delta(player, base, new, context),
            &mut |base, new, context| entity_tally.delta(entity, base, new, context),
            &mut self.list,
        );
        let held = step.base.map_or(&[][..], |b| &b.entities[..]);
        entity_tally.entity_list(self.list.iter().copied(), &held);
    }
}
