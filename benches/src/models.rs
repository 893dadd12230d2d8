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

use fields::model::{AdaptPolicy, ModelData, ModelTrainer, NativeModel};
use fields::{FieldKind, Fields, Schema};

use crate::adapt::{MessageAdaptation, StreamAdaptation};
use crate::deltas::visit_deltas;
use crate::encode::Breakdown;
use crate::encode::{Encoder, MAX_MESSAGE_BYTES};
use crate::engine::EngineEncoder;
use crate::message::MessageFormat;
use crate::state::{merge, Baselines, Change, SpawnList, State, Step, Zeros};
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

/// The native format coding entities and player states with given models,
/// fixed or adapting to the stream ([`ModelEncoder::adapting`]).
#[derive(Debug)]
pub struct ModelEncoder<E> {
    name: String,
    format: MessageFormat,
    models: Models,
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
            format: MessageFormat::NATIVE,
            models: Models::new(entity, player),
            buf: vec![0; MAX_MESSAGE_BYTES],
            added: Vec::new(),
        })
    }

    /// The same encoder with models that adapt to the stream under
    /// `policy` (see [`crate::adapt`]); a [`ModelDecoder`] adapting under
    /// the same policy reads its messages.
    pub fn adapting(mut self, policy: AdaptPolicy) -> Self {
        self.models.adapt(policy);
        self
    }

    /// The stream's adaptation, if the encoder adapts.
    pub fn adaptation(&self) -> Option<&StreamAdaptation> {
        self.models.adaptation.as_ref()
    }

    /// The same encoder writing range-coded messages
    /// ([`MessageFormat::NATIVE_RANGE`]).
    pub fn range_coded(mut self) -> Self {
        self.format = MessageFormat::NATIVE_RANGE;
        self
    }

    /// The last message written (its first `bits.div_ceil(8)` bytes).
    pub fn buffer(&self) -> &[u8] {
        &self.buf
    }
}

/// `state` with its values coded by the given models.
fn wrap<E: Fields, P: Fields>(
    state: &State<E, P>,
    entity: &Arc<NativeModel>,
    player: &Arc<NativeModel>,
) -> State<Retrained<E>, Retrained<P>> {
    State {
        server_time: state.server_time,
        flags: state.flags,
        areamask: state.areamask.clone(),
        player: Retrained::with(state.player.clone(), player),
        entities: state
            .entities
            .iter()
            .map(|(n, e)| (*n, Retrained::with(e.clone(), entity)))
            .collect(),
        delivery: state.delivery,
    }
}

/// `state` as plain values.
fn unwrap<E, P>(state: State<Retrained<E>, Retrained<P>>) -> State<E, P> {
    State {
        server_time: state.server_time,
        flags: state.flags,
        areamask: state.areamask,
        player: state.player.value,
        entities: state
            .entities
            .into_iter()
            .map(|(n, e)| (n, e.value))
            .collect(),
        delivery: state.delivery,
    }
}

/// The models one message is coded with (entity, player), and the
/// adaptation they come from, if the stream adapts.
struct Coding {
    entity: Arc<NativeModel>,
    player: Arc<NativeModel>,
    adaptation: Option<MessageAdaptation>,
}

/// The models one end of a stream codes with: fixed, or adapting from
/// them.
#[derive(Debug)]
struct Models {
    entity: Arc<NativeModel>,
    player: Arc<NativeModel>,
    adaptation: Option<StreamAdaptation>,
}

impl Models {
    fn new(entity: Arc<NativeModel>, player: Arc<NativeModel>) -> Self {
        Models {
            entity,
            player,
            adaptation: None,
        }
    }

    /// Adapts from the fixed models under `policy`.
    fn adapt(&mut self, policy: AdaptPolicy) {
        self.adaptation = Some(StreamAdaptation::new(
            Arc::clone(&self.entity),
            Arc::clone(&self.player),
            policy,
        ));
    }

    /// The models a message from `base` is coded with: the fixed ones, or
    /// the adaptation's for that base.
    fn for_message<E, P>(&mut self, base: Option<&State<E, P>>) -> Result<Coding, Error> {
        Ok(match self.adaptation.as_mut() {
            None => Coding {
                entity: Arc::clone(&self.entity),
                player: Arc::clone(&self.player),
                adaptation: None,
            },
            Some(adaptation) => {
                let coding = adaptation.coding_for(base)?;
                Coding {
                    entity: Arc::clone(coding.entity.model()),
                    player: Arc::clone(coding.player.model()),
                    adaptation: Some(coding),
                }
            }
        })
    }

    /// Records the state `step` delivers, if adapting.
    fn record<E: Fields, P: Fields>(
        &mut self,
        step: &Step<'_, E, P>,
        zeros: &Zeros<E, P>,
        coding: Option<MessageAdaptation>,
    ) {
        if let (Some(adaptation), Some(coding)) = (self.adaptation.as_mut(), coding) {
            adaptation.record(step, zeros, &coding);
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
        let Coding {
            entity,
            player,
            adaptation: coding,
        } = self.models.for_message(step.base.map(|b| &**b))?;
        let snapshot = Arc::new(wrap(step.snapshot, &entity, &player));
        let base = step.base.map(|b| Arc::new(wrap(b, &entity, &player)));
        // Only entities new to the client use a spawn baseline: wrap those.
        let mut added = std::mem::take(&mut self.added);
        added.clear();
        let old = step.base.map_or(&[][..], |b| &b.entities[..]);
        for change in merge(old, &step.snapshot.entities) {
            if let Change::Added { number, .. } = change {
                if let Some(baseline) = step.baselines.baseline(number) {
                    added.push((number, Retrained::with(baseline.clone(), &entity)));
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
            stream: step.stream,
        };
        let wrapped_zeros = Zeros {
            entity: Retrained::with(zeros.entity.clone(), &entity),
            player: Retrained::with(zeros.player.clone(), &player),
        };
        let bits = self
            .format
            .encode(&mut self.buf, &wrapped, &wrapped_zeros, breakdown);
        self.added = spawn.0;
        let bits = bits?;
        self.models.record(step, zeros, coding);
        Ok(bits)
    }
}

/// Reads what a [`ModelEncoder`] with the same models (and policy) wrote.
#[derive(Debug)]
pub struct ModelDecoder<E> {
    format: MessageFormat,
    models: Models,
    /// The spawn baselines wrapped with a model, and what they were made
    /// from (the baselines' address, the model): rewrapped when either
    /// changes.
    spawn: Option<(usize, Arc<NativeModel>, SpawnList<Retrained<E>>)>,
}

impl<E: Fields> ModelDecoder<E> {
    /// A decoder with fixed models.
    pub fn new(entity: Arc<NativeModel>, player: Arc<NativeModel>) -> Self {
        ModelDecoder {
            format: MessageFormat::NATIVE,
            models: Models::new(entity, player),
            spawn: None,
        }
    }

    /// The same decoder with models adapting under `policy`.
    pub fn adapting(mut self, policy: AdaptPolicy) -> Self {
        self.models.adapt(policy);
        self
    }

    /// The same decoder reading range-coded messages
    /// ([`MessageFormat::NATIVE_RANGE`]).
    pub fn range_coded(mut self) -> Self {
        self.format = MessageFormat::NATIVE_RANGE;
        self
    }

    /// The stream's adaptation, if the decoder adapts.
    pub fn adaptation(&self) -> Option<&StreamAdaptation> {
        self.models.adaptation.as_ref()
    }

    /// Decodes a message of `bits` bits sent from `base` (and records the
    /// state it delivers, when adapting). `baselines` must answer for
    /// entity numbers below the format's limit.
    #[allow(clippy::too_many_arguments)]
    pub fn decode<P: Fields>(
        &mut self,
        buf: &[u8],
        bits: usize,
        base: Option<&Arc<State<E, P>>>,
        delta_num: u8,
        frame_ms: u32,
        baselines: &dyn Baselines<E>,
        zeros: &Zeros<E, P>,
    ) -> Result<State<E, P>, Error> {
        let Coding {
            entity,
            player,
            adaptation: coding,
        } = self.models.for_message(base.map(|b| &**b))?;
        let source = baselines as *const dyn Baselines<E> as *const () as usize;
        let fresh =
            matches!(&self.spawn, Some((s, m, _)) if *s == source && Arc::ptr_eq(m, &entity));
        if !fresh {
            let limit = MessageFormat::NATIVE.entity_limit();
            let list = (0..limit)
                .filter_map(|n| {
                    baselines
                        .baseline(n)
                        .map(|b| (n, Retrained::with(b.clone(), &entity)))
                })
                .collect();
            self.spawn = Some((source, Arc::clone(&entity), SpawnList(list)));
        }
        let Some((_, _, spawn)) = &self.spawn else {
            return Err(Error::Model("no spawn baselines".into()));
        };
        let wrapped_base = base.map(|b| wrap(b, &entity, &player));
        let wrapped_zeros = Zeros {
            entity: Retrained::with(zeros.entity.clone(), &entity),
            player: Retrained::with(zeros.player.clone(), &player),
        };
        let state = unwrap(self.format.decode(
            buf,
            bits,
            wrapped_base.as_ref(),
            frame_ms,
            spawn,
            &wrapped_zeros,
        )?);
        if coding.is_some() {
            let state = Arc::new(state.clone());
            let step = Step {
                snapshot: &state,
                base,
                delta_num,
                frame_ms,
                baselines,
                reference: None,
                stream: 0,
            };
            self.models.record(&step, zeros, coding);
        }
        Ok(state)
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
