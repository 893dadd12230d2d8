//! The engine with models other than a type's own, and a trainer that
//! learns models from a workload's own deltas.

use std::sync::Arc;

use fields::model::{ModelData, ModelTrainer, NativeModel};
use fields::Schema;

use crate::deltas::visit_deltas;
use crate::engine::EngineEncoder;
use crate::state::{merge, Change};
use crate::workload::Workload;
use crate::Error;

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

/// The engine's native messages with given models: a
/// [`snapshot::Server`] and [`snapshot::Client`] coding entities with
/// `entity` and player states with `player` ([`snapshot::Models`]) instead
/// of the types' own, named `name`; each model must have been trained on
/// its schema.
pub fn engine_with_models<E, P>(
    name: &str,
    entity: Arc<NativeModel>,
    entity_schema: &Schema,
    player: Arc<NativeModel>,
    player_schema: &Schema,
) -> Result<EngineEncoder<E, P>, Error> {
    check_model(&entity, entity_schema)?;
    check_model(&player, player_schema)?;
    Ok(
        EngineEncoder::new(name, fields::Codec::Native, Arc::new(snapshot::Compact))
            .with_models(snapshot::Models::new(entity, player)),
    )
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
    let mut list = Vec::new();
    workload.run(&mut |step| {
        visit_deltas(
            &step,
            &zeros,
            &mut |base, new, context| player.observe(base, new, context),
            &mut |base, new, context| entity.observe(base, new, context),
            &mut list,
        );
        let old = step.base.map_or(&[][..], |b| &b.entities[..]);
        entity.observe_entity_list(list.iter().copied(), &old);
        Ok(())
    })?;
    Ok((entity.finish(), player.finish()))
}
