//! The native models a server or client codes snapshots with.
//!
//! By default the native codec codes an entity or player state with the
//! model its type carries (`native_model = …` in
//! [`net_struct!`](fields::net_struct)). A game may give the engine other
//! models instead — trained on its own recordings, or on other games — with
//! [`Server::set_models`](crate::Server::set_models) and
//! [`Client::set_models`](crate::Client::set_models). Both ends must code
//! with the same ones: the models' ids ([`NativeModel::id`]) are folded
//! into the layout fingerprint the gamestate carries
//! ([`Models::fingerprint`]), so a client with other models refuses the
//! gamestate with [`ClientError::FingerprintMismatch`](crate::ClientError)
//! instead of decoding garbage.
//!
//! The gamestate's spawn baselines are always coded with the type's own
//! model: they are read before anything else, and both ends know it.
//!
//! With [`Models::with_adaptation`] the models also adapt to the stream
//! along each client's acknowledged delta chain (see [`crate::adapt`]); the
//! policy is folded into the fingerprint too, so both ends adapt alike.

use std::sync::Arc;

use fields::model::{AdaptPolicy, NativeModel};
use fields::{Codec, Fields, ModelCodec};

use crate::checksum::Fnv32;
use crate::error::ConfigError;

/// The entity and player-state models snapshots are coded with; `None`
/// for either: its type's own.
#[derive(Debug, Clone, Default)]
pub struct Models {
    entity: Option<Arc<NativeModel>>,
    player: Option<Arc<NativeModel>>,
    adapt: Option<AdaptPolicy>,
}

impl PartialEq for Models {
    /// Same models (same ids, or both the types' own) adapting alike.
    fn eq(&self, other: &Self) -> bool {
        let id = |m: &Option<Arc<NativeModel>>| m.as_ref().map(|m| m.id());
        id(&self.entity) == id(&other.entity)
            && id(&self.player) == id(&other.player)
            && self.adapt == other.adapt
    }
}

impl Models {
    /// The types' own models (the default).
    pub fn of_types() -> Self {
        Models::default()
    }

    /// Codes entities with `entity` and player states with `player`.
    pub fn new(entity: Arc<NativeModel>, player: Arc<NativeModel>) -> Self {
        Models {
            entity: Some(entity),
            player: Some(player),
            adapt: None,
        }
    }

    /// These models adapting to the stream under `policy` (`None`: fixed,
    /// the default), along each client's acknowledged delta chain (see
    /// [`crate::adapt`]). Only the native codec has models to adapt; with
    /// the q3 codec the policy changes nothing but the fingerprint.
    pub fn with_adaptation(self, policy: Option<AdaptPolicy>) -> Self {
        Models {
            adapt: policy,
            ..self
        }
    }

    /// How the models adapt (`None`: they do not).
    pub fn adaptation(&self) -> Option<AdaptPolicy> {
        self.adapt
    }

    /// Codes entities with `entity` (`None`: the type's own).
    pub fn with_entity(self, entity: Option<Arc<NativeModel>>) -> Self {
        Models { entity, ..self }
    }

    /// Codes player states with `player` (`None`: the type's own).
    pub fn with_player(self, player: Option<Arc<NativeModel>>) -> Self {
        Models { player, ..self }
    }

    /// The entity model given, if any.
    pub fn entity(&self) -> Option<&Arc<NativeModel>> {
        self.entity.as_ref()
    }

    /// The player-state model given, if any.
    pub fn player(&self) -> Option<&Arc<NativeModel>> {
        self.player.as_ref()
    }

    /// `codec` coding entities with the entity model.
    pub fn entity_codec(&self, codec: Codec) -> ModelCodec<'_> {
        codec.with_model(self.entity.as_deref())
    }

    /// `codec` coding player states with the player-state model.
    pub fn player_codec(&self, codec: Codec) -> ModelCodec<'_> {
        codec.with_model(self.player.as_deref())
    }

    /// Checks that each model fits its type (`entity` and `player` are
    /// values of the types): as many fields as the type. A model of
    /// another type would code fields the type does not have.
    pub fn check<E: Fields, P: Fields>(&self, entity: &E, player: &P) -> Result<(), ConfigError> {
        let fits = |model: &Option<Arc<NativeModel>>, fields: usize| {
            model
                .as_ref()
                .is_none_or(|model| model.data().fields() == fields)
        };
        if !fits(&self.entity, entity.field_count()) {
            return Err(ConfigError::ModelMismatch {
                what: "entity",
                type_name: entity.type_name().to_owned(),
            });
        }
        if !fits(&self.player, player.field_count()) {
            return Err(ConfigError::ModelMismatch {
                what: "player-state",
                type_name: player.type_name().to_owned(),
            });
        }
        Ok(())
    }

    /// The ids of the models coding `entity`'s and `player`'s types: the
    /// given ones, else the types' own (0 for a type without one).
    pub fn ids<E: Fields, P: Fields>(&self, entity: &E, player: &P) -> [u64; 2] {
        [
            id_of(self.entity.as_deref(), entity),
            id_of(self.player.as_deref(), player),
        ]
    }

    /// `layout` (the types' layout fingerprint) with the ids of the models
    /// that code `entity`'s and `player`'s types folded in (the given
    /// ones, else the types' own): both ends agree on it exactly when
    /// their types have the same layout and they code with the same
    /// models, whichever way each end got them (a game's `net_struct!`
    /// types, or a demo player's schema-driven states carrying the
    /// recorded models).
    pub fn fingerprint<E: Fields, P: Fields>(&self, layout: u32, entity: &E, player: &P) -> u32 {
        let mut hash = Fnv32::new();
        hash.u32(layout);
        for id in self.ids(entity, player) {
            hash.u32(id as u32);
            hash.u32((id >> 32) as u32);
        }
        // Fixed models hash as before adaptation existed; an adapting
        // stream adds its policy (the lead too: it decides which symbols
        // a rebuild holds).
        if let Some(policy) = self.adapt {
            hash.u32(policy.chain_length);
            hash.u32(policy.first_chain);
            hash.u32(policy.weight);
            hash.u32(policy.lead);
        }
        hash.finish()
    }
}

/// `given`, else `value`'s type's own model.
pub(crate) fn model_of<T: Fields>(
    given: Option<&Arc<NativeModel>>,
    value: &T,
) -> Option<Arc<NativeModel>> {
    given.cloned().or_else(|| value.native_model())
}

/// The id of `given`, else of `value`'s type's own model (0: none).
fn id_of<T: Fields>(given: Option<&NativeModel>, value: &T) -> u64 {
    match given {
        Some(model) => model.id(),
        None => match value.static_model() {
            Some(model) => model.id(),
            None => value.native_model().map_or(0, |model| model.id()),
        },
    }
}
