//! The native codec with models other than a type's own: a wrapper that
//! attaches a model to values, an encoder that codes a workload through it,
//! and a trainer that learns models from a workload's own deltas.
//!
//! [`Retrained`] answers [`Fields::native_model`] with the given model and
//! delegates everything else: the same effect as decoding into a
//! [`DynamicState`](fields::dynamic::DynamicState) whose layout carries the
//! model (`DynamicLayout::with_model`), without converting every field. A
//! test checks that it writes exactly the bits of the type's own model.

use std::sync::Arc;

use fields::model::{ModelData, ModelTrainer, NativeModel};
use fields::{FieldKind, Fields, Schema};

use crate::encode::{Encoder, MAX_MESSAGE_BYTES};
use crate::message::{delta_context, Breakdown, MessageFormat};
use crate::state::{merge, Change, SpawnList, State, Step, Zeros};
use crate::workload::Workload;
use crate::Error;

/// A value coded with a given native model instead of its type's own.
#[derive(Debug, Clone)]
pub struct Retrained<T> {
    /// The value.
    pub value: T,
    model: Arc<NativeModel>,
}

impl<T> Retrained<T> {
    fn with(value: T, model: &Arc<NativeModel>) -> Self {
        Retrained {
            value,
            model: Arc::clone(model),
        }
    }
}

impl<T: Fields> Fields for Retrained<T> {
    fn type_name(&self) -> &str {
        self.value.type_name()
    }

    fn field_count(&self) -> usize {
        self.value.field_count()
    }

    fn field_kind(&self, field: usize) -> FieldKind {
        self.value.field_kind(field)
    }

    fn word(&self, field: usize, element: usize) -> u32 {
        self.value.word(field, element)
    }

    fn set_word(&mut self, field: usize, element: usize, word: u32) {
        self.value.set_word(field, element, word)
    }

    fn wire_differs(&self, other: &Self) -> bool {
        self.value.wire_differs(&other.value)
    }

    fn native_model(&self) -> Option<Arc<NativeModel>> {
        Some(Arc::clone(&self.model))
    }
}

/// Checks that `model` was trained on `schema`.
pub fn check_model(model: &NativeModel, schema: &Schema) -> Result<(), Error> {
    if model.data().schema_fingerprint != schema.fingerprint()
        || model.data().fields() != schema.fields.len()
    {
        return Err(Error::Model(format!(
            "the model was not trained on {}",
            schema.name
        )));
    }
    Ok(())
}

/// Builds a model from counts, naming the failure.
pub fn build_model(data: ModelData) -> Result<Arc<NativeModel>, Error> {
    NativeModel::new(data)
        .map(Arc::new)
        .map_err(|e| Error::Model(e.to_string()))
}

/// The native format coding entities and player states with given models.
#[derive(Debug)]
pub struct ModelEncoder<E> {
    name: String,
    entity: Arc<NativeModel>,
    player: Arc<NativeModel>,
    buf: Vec<u8>,
    added: Vec<(u32, Retrained<E>)>,
}

impl<E> ModelEncoder<E> {
    /// An encoder named `name`; each model must have been trained on its schema.
    pub fn new(
        name: &str,
        entity: Arc<NativeModel>,
        entity_schema: &Schema,
        player: Arc<NativeModel>,
        player_schema: &Schema,
    ) -> Result<Self, Error> {
        check_model(&entity, entity_schema)?;
        check_model(&player, player_schema)?;
        Ok(ModelEncoder {
            name: name.to_owned(),
            entity,
            player,
            buf: vec![0; MAX_MESSAGE_BYTES],
            added: Vec::new(),
        })
    }
}

impl<E: Fields> ModelEncoder<E> {
    fn wrap<P: Fields>(&self, state: &State<E, P>) -> State<Retrained<E>, Retrained<P>> {
        State {
            server_time: state.server_time,
            flags: state.flags,
            areamask: state.areamask.clone(),
            player: Retrained::with(state.player.clone(), &self.player),
            entities: state
                .entities
                .iter()
                .map(|(n, e)| (*n, Retrained::with(e.clone(), &self.entity)))
                .collect(),
            delivery: state.delivery,
        }
    }
}

impl<E: Fields, P: Fields> Encoder<E, P> for ModelEncoder<E> {
    fn name(&self) -> &str {
        &self.name
    }

    fn encode(
        &mut self,
        step: &Step<'_, E, P>,
        zeros: &Zeros<E, P>,
        breakdown: &mut Breakdown,
    ) -> Result<usize, Error> {
        let snapshot = Arc::new(self.wrap(step.snapshot));
        let base = step.base.map(|b| Arc::new(self.wrap(b)));
        // Only entities new to the client use a spawn baseline: wrap those.
        let mut added = std::mem::take(&mut self.added);
        added.clear();
        let old = step.base.map_or(&[][..], |b| &b.entities[..]);
        for change in merge(old, &step.snapshot.entities) {
            if let Change::Added { number, .. } = change {
                if let Some(baseline) = step.baselines.baseline(number) {
                    added.push((number, Retrained::with(baseline.clone(), &self.entity)));
                }
            }
        }
        let spawn = SpawnList(added);
        let wrapped = Step {
            snapshot: &snapshot,
            base: base.as_ref(),
            delta_num: step.delta_num,
            frame_ms: step.frame_ms,
            baselines: &spawn,
            reference: step.reference,
        };
        let zeros = Zeros {
            entity: Retrained::with(zeros.entity.clone(), &self.entity),
            player: Retrained::with(zeros.player.clone(), &self.player),
        };
        let bits = MessageFormat::NATIVE.encode(&mut self.buf, &wrapped, &zeros, breakdown);
        self.added = spawn.0;
        Ok(bits?)
    }
}

/// Trains an entity and a player model on every delta a workload's native
/// messages contain — the player-state delta and each changed or added
/// entity, from the same base the encoder uses — as
/// `q3::model::train` does for Quake 3: a first run learns the float
/// grids, a second counts symbols. The workload must replay identically.
pub fn train_on<W: Workload>(
    workload: &mut W,
    mut entity: ModelTrainer,
    mut player: ModelTrainer,
) -> Result<(ModelData, ModelData), Error> {
    let zeros = workload.zeros();
    workload.run(&mut |step| {
        player.learn_grids(&step.snapshot.player);
        let old = step.base.map_or(&[][..], |b| &b.entities[..]);
        for change in merge(old, &step.snapshot.entities) {
            if let Change::Changed { new, .. } | Change::Added { new, .. } = change {
                entity.learn_grids(new);
            }
        }
        Ok(())
    })?;
    entity.freeze_grids();
    player.freeze_grids();
    workload.run(&mut |step| {
        let snapshot = &**step.snapshot;
        let context = delta_context(snapshot, step.base.map(|b| &**b));
        let base_player = step.base.map_or(&zeros.player, |b| &b.player);
        let full = step.base.is_none();
        player.observe(base_player, &snapshot.player, &context.with_spawn(full));
        let old = step.base.map_or(&[][..], |b| &b.entities[..]);
        let mut list = Vec::new();
        for change in merge(old, &snapshot.entities) {
            match change {
                Change::Changed { old, new, number } => {
                    entity.observe(old, new, &context);
                    list.push((number, false));
                }
                Change::Added { number, new } => {
                    let base = step.baselines.baseline(number).unwrap_or(&zeros.entity);
                    entity.observe(base, new, &context.with_spawn(true));
                    list.push((number, false));
                }
                Change::Removed { number } => list.push((number, true)),
                Change::Unchanged { .. } => {}
            }
        }
        entity.observe_entity_list(list, &old);
        Ok(())
    })?;
    Ok((entity.finish(), player.finish()))
}
