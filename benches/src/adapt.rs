//! A stream's models adapting as it goes ([`fields::model::Adaptation`]),
//! kept per state as both ends of the native format keep them.
//!
//! Each state the stream delivers holds the adaptations of its two models
//! (entity and player). A message from a base is coded with the base's
//! adaptations ([`StreamAdaptation::coding_for`]); the state it delivers
//! then holds them plus the message's symbols
//! ([`StreamAdaptation::record`]). The encoder and the decoder run the same
//! steps on the same states, so they always code with the same models.

use std::collections::VecDeque;
use std::sync::Arc;

use fields::model::{AdaptPolicy, Adaptation, NativeModel, SymbolTally};
use fields::Fields;

use crate::deltas::visit_deltas;
use crate::state::{State, Step, Zeros};
use crate::Error;

/// States whose adaptations are remembered: as many as a base can be
/// back (twice Quake 3's ring, as the demo workload remembers).
const REMEMBERED: usize = 2 * q3::PACKET_BACKUP;

/// The adaptations of one message's two models.
#[derive(Debug, Clone)]
pub struct MessageAdaptation {
    /// The entity model's.
    pub entity: Adaptation,
    /// The player-state model's.
    pub player: Adaptation,
}

/// The symbols one message codes, per model. Reuse one between messages.
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

/// One end's adaptations of a stream.
#[derive(Debug)]
pub struct StreamAdaptation {
    policy: AdaptPolicy,
    /// Where a full snapshot starts: the trained models.
    start: MessageAdaptation,
    /// The adaptation each recent state holds, by its server time, oldest
    /// first.
    recent: VecDeque<(i32, MessageAdaptation)>,
    tally: MessageTally,
    rebuilds: u64,
}

impl StreamAdaptation {
    /// A stream starting from trained models.
    pub fn new(entity: Arc<NativeModel>, player: Arc<NativeModel>, policy: AdaptPolicy) -> Self {
        StreamAdaptation {
            policy,
            start: MessageAdaptation {
                entity: Adaptation::new(entity),
                player: Adaptation::new(player),
            },
            recent: VecDeque::with_capacity(REMEMBERED),
            tally: MessageTally::new(),
            rebuilds: 0,
        }
    }

    /// The policy.
    pub fn policy(&self) -> AdaptPolicy {
        self.policy
    }

    /// Models rebuilt so far (each message whose base's chain was due
    /// counts once, even if it shares the rebuild of an earlier message
    /// from the same base).
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds
    }

    /// The adaptations that code a message from `base` (`None`: a full
    /// snapshot, from the trained models). The base must be a state this
    /// end recorded recently.
    pub fn coding_for<E, P>(
        &mut self,
        base: Option<&State<E, P>>,
    ) -> Result<MessageAdaptation, Error> {
        let held = match base {
            None => &self.start,
            Some(base) => self
                .recent
                .iter()
                .rev()
                .find(|(time, _)| *time == base.server_time)
                .map(|(_, adaptation)| adaptation)
                .ok_or_else(|| {
                    Error::Model(format!(
                        "no adaptation for the base at server time {}",
                        base.server_time
                    ))
                })?,
        };
        let coding = MessageAdaptation {
            entity: held.entity.for_next(&self.policy)?,
            player: held.player.for_next(&self.policy)?,
        };
        if coding.player.length() < held.player.length() {
            self.rebuilds += 1;
        }
        Ok(coding)
    }

    /// Records the state `step` delivers, coded with `coding` (from
    /// [`StreamAdaptation::coding_for`] its base): its adaptations are
    /// `coding`'s plus the message's symbols.
    pub fn record<E: Fields, P: Fields>(
        &mut self,
        step: &Step<'_, E, P>,
        zeros: &Zeros<E, P>,
        coding: &MessageAdaptation,
    ) {
        self.tally
            .message(step, zeros, coding.entity.model(), coding.player.model());
        let delivered = MessageAdaptation {
            entity: coding.entity.after(&self.tally.entity),
            player: coding.player.after(&self.tally.player),
        };
        if self.recent.len() == REMEMBERED {
            self.recent.pop_front();
        }
        self.recent
            .push_back((step.snapshot.server_time, delivered));
    }
}
