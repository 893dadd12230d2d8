//! Leave-one-out: the native codec on a real demo with models trained
//! without that demo.
//!
//! The committed Quake 3 models (`q3::model`) were trained on the very
//! demos the report measures, so the `native` numbers there are in-sample.
//! For an honest out-of-sample number, [`train_without`] retrains both
//! models exactly as the committed ones were made
//! ([`q3::model::train`]: same predictors, same grid learning) on the
//! other demos only, and [`q3_engine_encoder`] sends the demo through the
//! snapshot engine coding with them ([`snapshot::Server::set_models`]).

use std::path::Path;
use std::sync::Arc;

use fields::model::{AdaptPolicy, NativeModel};
use fields::NetFields;
use q3::model::training_paths;
use q3::{EntityState, PlayerState};

use crate::engine::EngineEncoder;
use crate::models::{build_model, engine_with_models};
use crate::Error;

/// Models for Quake 3's two structs, and what they were trained on.
#[derive(Debug, Clone)]
pub struct TrainedModels {
    /// For [`EntityState`].
    pub entity: Arc<NativeModel>,
    /// For [`PlayerState`].
    pub player: Arc<NativeModel>,
    /// File names of the demos trained on.
    pub trained_on: Vec<String>,
}

/// Trains both models on the committed training set — the shared demos
/// found in `dir` ([`q3::model::TRAINING_DEMOS`]) and the q3 crate's own
/// recordings ([`q3::model::RECORDED_DEMOS`]) — except `excluded`, matched by file name and by
/// content, so a renamed copy is excluded too.
pub fn train_without(dir: &Path, excluded: &Path) -> Result<TrainedModels, Error> {
    let excluded_bytes = crate::read_file(excluded)?;
    let excluded_name = excluded.file_name();
    let mut files = Vec::new();
    let mut trained_on = Vec::new();
    for path in training_paths(dir) {
        if path.file_name() == excluded_name || !path.exists() {
            continue;
        }
        let bytes = crate::read_file(&path)?;
        if bytes == excluded_bytes {
            continue;
        }
        files.push(bytes);
        trained_on.push(
            path.file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        );
    }
    let models = q3::model::train(files.iter().map(Vec::as_slice))?;
    Ok(TrainedModels {
        entity: build_model(models.entity)?,
        player: build_model(models.player)?,
        trained_on,
    })
}

/// The engine's native messages with models for Quake 3's structs, fixed
/// or adapting under `adapt` ([`snapshot::Models::with_adaptation`]).
pub fn q3_engine_encoder(
    name: &str,
    models: &TrainedModels,
    adapt: Option<AdaptPolicy>,
) -> Result<EngineEncoder<EntityState, PlayerState>, Error> {
    Ok(engine_with_models(
        name,
        Arc::clone(&models.entity),
        &EntityState::TABLE.schema(),
        Arc::clone(&models.player),
        &PlayerState::TABLE.schema(),
    )?
    .adapting(adapt))
}
