//! Models that adapt along each client's acknowledged delta chain.
//!
//! With [`Models::with_adaptation`], a snapshot is coded not with the
//! trained models but with the ones its base holds, and the snapshot it
//! delivers holds those plus the symbols it coded
//! ([`fields::model::adapt`]). Once a chain is as long as the policy's
//! schedule makes it ([`AdaptPolicy::chain_at`]: short chains at a
//! stream's start, doubling up to [`AdaptPolicy::chain_length`]), the
//! next message is coded with models rebuilt from the trained counts plus
//! the chain's symbols. A full snapshot starts again from the trained
//! models and the first chain's length.
//!
//! Both ends keep an adaptation per snapshot of their ring: the server per
//! record it sent, the client per snapshot it decoded. The server codes
//! only from a base the client acknowledged, and the client decodes only
//! from a base it holds, which it holds because it decoded every message of
//! that base's chain, so both rebuild from the same symbols whatever the
//! link lost, duplicated or reordered; nothing about the models travels.
//!
//! **Sharing.** The server shares encoded entity updates and whole entity
//! lists among clients within a frame. Their cache keys hold the id of the
//! entity model that coded them, and a cached list keeps the symbols it
//! coded, so a client copying it adds them to its chain as if it had coded
//! the list itself. Clients whose chains coded the same symbols rebuild the
//! same model, with the same id, and go on sharing; clients whose views
//! differ code with their own models.
//!
//! **Rebuilds off the frame path.** With [`AdaptPolicy::lead`] (as in
//! [`AdaptPolicy::LIVE`]) a chain's rebuild starts on a background thread
//! `lead` messages before the chain's end; a snapshot waits for it only if
//! it is still running then ([`SendStats::adapt_waits`] counts those).
//!
//! Chained snapshots (two lists through an intermediate frame) are not
//! sent while adapting: a client holding the first list's target could
//! not tell which of its two chains the message continues.
//!
//! [`SendStats::adapt_waits`]: crate::SendStats::adapt_waits

use fields::codec::HeldNumbers;
use fields::model::{AdaptPolicy, Adaptation, SymbolTally};
use fields::{BitError, Codec, DeltaContext, Fields, ModelCodec};

use crate::error::ConfigError;
use crate::models::{model_of, Models};

/// The adaptations of one snapshot's two models.
#[derive(Debug, Clone)]
pub(crate) struct Adapted {
    pub entity: Adaptation,
    pub player: Adaptation,
}

impl Adapted {
    /// The entity codec of a message coded with these adaptations.
    pub fn entity_codec(&self, codec: Codec) -> ModelCodec<'_> {
        codec.with_model(Some(self.entity.model()))
    }

    /// The player-state codec of a message coded with these adaptations.
    pub fn player_codec(&self, codec: Codec) -> ModelCodec<'_> {
        codec.with_model(Some(self.player.model()))
    }

    /// The ids of the entity and player-state models.
    pub fn ids(&self) -> [u64; 2] {
        [self.entity.model().id(), self.player.model().id()]
    }

    /// What the entity caches key an encoding by: the entity model's id.
    pub fn entity_key(&self) -> u64 {
        self.entity.model().id()
    }

    /// The adaptations of the snapshot a message coded with these (from
    /// [`ChainModels::coding`]) delivers, whose symbols `tallies` holds.
    pub fn after(&self, tallies: &Tallies) -> Adapted {
        Adapted {
            entity: self.entity.after(&tallies.entity),
            player: self.player.after(&tallies.player),
        }
    }
}

/// A stream's adapting models: the policy and where a full snapshot starts.
#[derive(Debug, Clone)]
pub(crate) struct ChainModels {
    policy: AdaptPolicy,
    start: Adapted,
}

impl ChainModels {
    /// The adapting models `models` asks for, for `entity`'s and `player`'s
    /// types under `codec` (`None`: no adaptation, or a codec without
    /// models).
    pub fn new<E: Fields, P: Fields>(
        models: &Models,
        codec: Codec,
        entity: &E,
        player: &P,
    ) -> Result<Option<Self>, ConfigError> {
        let Some(policy) = models.adaptation() else {
            return Ok(None);
        };
        if codec != Codec::Native {
            return Ok(None);
        }
        let nothing = |what, type_name: &str| ConfigError::NothingToAdapt {
            what,
            type_name: type_name.to_owned(),
        };
        let entity_model = model_of(models.entity(), entity)
            .ok_or_else(|| nothing("entity", entity.type_name()))?;
        let player_model = model_of(models.player(), player)
            .ok_or_else(|| nothing("player-state", player.type_name()))?;
        Ok(Some(ChainModels {
            policy,
            start: Adapted {
                entity: Adaptation::new(entity_model),
                player: Adaptation::new(player_model),
            },
        }))
    }

    /// The adaptations a message from a base holding `base` (`None`: a
    /// full snapshot) is coded with. Waits for a rebuild still running.
    pub fn coding(&self, base: Option<&Adapted>) -> Result<Adapted, BitError> {
        let from = base.unwrap_or(&self.start);
        Ok(Adapted {
            entity: from.entity.for_next(&self.policy)?,
            player: from.player.for_next(&self.policy)?,
        })
    }

    /// Whether [`ChainModels::coding`] from `base` would wait for a rebuild.
    pub fn would_wait(&self, base: Option<&Adapted>) -> bool {
        base.is_some_and(|base| {
            base.entity.would_wait(&self.policy) || base.player.would_wait(&self.policy)
        })
    }
}

/// The symbols one message coded, per model: what its snapshot's
/// adaptations add. Reused between messages.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tallies {
    pub entity: SymbolTally,
    pub player: SymbolTally,
    /// The entity list's entries, `(number, removed)`, in order.
    list: Vec<(u32, bool)>,
}

impl Tallies {
    /// Empties every tally for the next message.
    pub fn clear(&mut self) {
        self.entity.clear();
        self.player.clear();
        self.list.clear();
    }

    /// Tallies the player-state delta.
    pub fn player<P: Fields>(
        &mut self,
        coding: &Adapted,
        base: &P,
        new: &P,
        context: &DeltaContext,
    ) {
        self.player.delta(coding.player.model(), base, new, context);
    }

    /// Tallies one entry of an entity list: a delta from `base` to `new`
    /// (`None`: the entity was removed) in `context`.
    pub fn entry<E: Fields>(
        &mut self,
        coding: &Adapted,
        number: u32,
        update: Option<(&E, &E)>,
        context: &DeltaContext,
    ) {
        if let Some((base, new)) = update {
            self.entity.delta(coding.entity.model(), base, new, context);
        }
        self.list.push((number, update.is_none()));
    }

    /// Tallies the numbers of the list whose entries were given since the
    /// last call, against a receiver holding `held`.
    pub fn end_list(&mut self, held: &dyn HeldNumbers) {
        self.entity.entity_list(self.list.drain(..), held);
    }
}
