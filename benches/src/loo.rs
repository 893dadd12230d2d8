//! Leave-one-out: the native codec on a real demo with models trained
//! without that demo.
//!
//! The committed Quake 3 models (`demo::q3::model`) were trained on the very
//! demos the report measures, so the `native` numbers there are in-sample.
//! For an honest out-of-sample number, [`train_without`] retrains both
//! models exactly as the committed ones were made
//! ([`demo::q3::model::train`]: same predictors, same grid learning) on the
//! other demos only, and [`ModelEncoder`] encodes with them.
//!
//! The models are attached to values by [`Retrained`], a wrapper that
//! answers [`Fields::native_model`] with the given model and delegates
//! everything else: the same effect as decoding into a
//! [`DynamicState`](fields::dynamic::DynamicState) whose layout carries the
//! model (`DynamicLayout::with_model`), without converting every field.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use demo::q3::model::TRAINING_DEMOS;
use demo::q3::{EntityState, PlayerState};
use fields::model::NativeModel;
use fields::{FieldKind, Fields, NetFields};

use crate::encode::{Encoder, MAX_MESSAGE_BYTES};
use crate::message::{Breakdown, MessageFormat};
use crate::state::{Baselines, State, Step, Zeros};
use crate::Error;

/// A value coded with a given native model instead of its type's own.
#[derive(Debug, Clone)]
pub struct Retrained<T> {
    /// The value.
    pub value: T,
    model: Arc<NativeModel>,
}

impl<T: NetFields> Retrained<T> {
    /// Wraps `value`; fails if `model` was trained on another schema.
    pub fn new(value: T, model: Arc<NativeModel>) -> Result<Self, Error> {
        check_schema::<T>(&model)?;
        Ok(Retrained { value, model })
    }

    /// Wraps `value` with a model already checked by [`Retrained::new`] or
    /// [`ModelEncoder::new`].
    fn checked(value: T, model: &Arc<NativeModel>) -> Self {
        Retrained {
            value,
            model: Arc::clone(model),
        }
    }
}

fn check_schema<T: NetFields>(model: &NativeModel) -> Result<(), Error> {
    let schema = T::TABLE.schema();
    if model.data().schema_fingerprint != schema.fingerprint()
        || model.data().values.len() != schema.fields.len()
    {
        return Err(Error::Model(format!(
            "the model was not trained on {}",
            T::TABLE.name
        )));
    }
    Ok(())
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

/// Trains both models on the committed training demos found in `dir`
/// ([`TRAINING_DEMOS`]) except `excluded` — matched by file name and by
/// content, so a renamed copy is excluded too.
pub fn train_without(dir: &Path, excluded: &Path) -> Result<TrainedModels, Error> {
    let excluded_bytes = crate::read_file(excluded)?;
    let excluded_name = excluded
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let mut files = Vec::new();
    let mut trained_on = Vec::new();
    for name in TRAINING_DEMOS {
        let path: PathBuf = dir.join(name);
        if excluded_name.as_deref() == Some(*name) || !path.exists() {
            continue;
        }
        let bytes = crate::read_file(&path)?;
        if bytes == excluded_bytes {
            continue;
        }
        files.push(bytes);
        trained_on.push((*name).to_owned());
    }
    let models = demo::q3::model::train(files.iter().map(Vec::as_slice))?;
    let build = |data| NativeModel::new(data).map_err(|e| Error::Model(e.to_string()));
    Ok(TrainedModels {
        entity: Arc::new(build(models.entity)?),
        player: Arc::new(build(models.player)?),
        trained_on,
    })
}

/// The native format with given models: `native_loo` in the report.
#[derive(Debug)]
pub struct ModelEncoder {
    name: String,
    models: TrainedModels,
    buf: Vec<u8>,
    added: Vec<(u32, Retrained<EntityState>)>,
}

impl ModelEncoder {
    /// An encoder named `name` coding with `models`.
    pub fn new(name: &str, models: TrainedModels) -> Result<Self, Error> {
        check_schema::<EntityState>(&models.entity)?;
        check_schema::<PlayerState>(&models.player)?;
        Ok(ModelEncoder {
            name: name.to_owned(),
            models,
            buf: vec![0; MAX_MESSAGE_BYTES],
            added: Vec::new(),
        })
    }

    fn wrap(&self, state: &State<EntityState, PlayerState>) -> Arc<RetrainedState> {
        Arc::new(State {
            server_time: state.server_time,
            flags: state.flags,
            areamask: state.areamask.clone(),
            player: Retrained::checked(state.player, &self.models.player),
            entities: state
                .entities
                .iter()
                .map(|(n, e)| (*n, Retrained::checked(*e, &self.models.entity)))
                .collect(),
        })
    }
}

type RetrainedState = State<Retrained<EntityState>, Retrained<PlayerState>>;

/// The spawn baselines a step needs, wrapped (only new entities use any).
struct AddedBaselines<'a>(&'a [(u32, Retrained<EntityState>)]);

impl Baselines<Retrained<EntityState>> for AddedBaselines<'_> {
    fn baseline(&self, number: u32) -> Option<&Retrained<EntityState>> {
        self.0
            .binary_search_by_key(&number, |(n, _)| *n)
            .ok()
            .map(|i| &self.0[i].1)
    }
}

impl Encoder<EntityState, PlayerState> for ModelEncoder {
    fn name(&self) -> &str {
        &self.name
    }

    fn encode(
        &mut self,
        step: &Step<'_, EntityState, PlayerState>,
        _zeros: &Zeros<EntityState, PlayerState>,
        breakdown: &mut Breakdown,
    ) -> Result<usize, Error> {
        let snapshot = self.wrap(step.snapshot);
        let base = step.base.map(|b| self.wrap(b));
        // Baselines of the numbers the base does not hold, in number order.
        let mut added = std::mem::take(&mut self.added);
        added.clear();
        for (number, _) in &step.snapshot.entities {
            let held = step
                .base
                .is_some_and(|b| b.entities.binary_search_by_key(number, |(n, _)| *n).is_ok());
            if let (false, Some(baseline)) = (held, step.baselines.baseline(*number)) {
                added.push((*number, Retrained::checked(*baseline, &self.models.entity)));
            }
        }
        let wrapped = Step {
            snapshot: &snapshot,
            base: base.as_ref(),
            delta_num: step.delta_num,
            baselines: &AddedBaselines(&added),
            reference: step.reference,
        };
        let zeros = Zeros {
            entity: Retrained::checked(EntityState::default(), &self.models.entity),
            player: Retrained::checked(PlayerState::default(), &self.models.player),
        };
        let bits = MessageFormat::NATIVE.encode(&mut self.buf, &wrapped, &zeros, breakdown);
        self.added = added;
        Ok(bits?)
    }
}
