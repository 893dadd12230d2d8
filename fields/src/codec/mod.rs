//! Delta codecs over any [`Fields`] value (every `net_struct!` type, and
//! [`DynamicState`](crate::dynamic::DynamicState)).
//!
//! A codec turns "this struct, relative to that baseline" into bits and back.
//! Two codecs share one API:
//!
//! * [`Codec::Q3`] — bit-exact Quake 3 protocol 68: the "last changed" byte,
//!   a changed bit per field up to it, zero bits on entity fields, the
//!   integral-float rule, the 10-bit entity header, and masked arrays.
//! * [`Codec::Native`] — this project's codec: changed fields as a gap-coded
//!   set, integers as zigzag differences from the baseline, floats predicted
//!   from the baseline, entity numbers as gaps. Much smaller on game data.
//!
//! Entities are written in increasing number order, each with
//! [`Codec::write_entity`], followed by [`Codec::write_entities_end`]. A reader
//! calls [`Codec::read_entity_number`] (which returns `None` at the end
//! marker), picks the baseline for that number, then calls
//! [`Codec::read_entity_body`] with the [`EntityHeader`] it got. Player
//! state and other single structs use [`Codec::write_delta`] /
//! [`Codec::read_delta`].
//!
//! The native codec codes a list's entity numbers with the entity type's
//! trained model when it has one, so the list functions that write or read
//! no entity state take a `like` value of that type: any value will do
//! (a baseline, the zeroed dummy), it only carries the model.

mod held;
pub(crate) mod native;
mod q3;

use serde::{Deserialize, Serialize};

use crate::bits::{BitSink, BitSource, Chance};
use crate::error::BitError;
use crate::model::{NativeModel, AXES};
use crate::table::Fields;

pub use held::{Held, HeldNumbers, NothingHeld, NOTHING_HELD};
pub use q3::{Q3_ENTITY_END, Q3_ENTITY_NUMBER_BITS};

/// What a delta is coded in the context of, beyond its baseline: lets the
/// native codec's predictors (see [`crate::model::Predictor`]) use the
/// snapshot's elapsed time. Both ends must pass the same context. The q3
/// codec ignores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeltaContext {
    /// Milliseconds between the baseline's and this snapshot's server time
    /// (0 when unknown: predictions then fall back to the baseline).
    pub elapsed_ms: i32,
    /// The baseline is a spawn baseline or the zeroed dummy (an entity new
    /// to the receiver, a full snapshot), not a state the receiver held:
    /// the native codec then codes with its spawn contexts
    /// ([`crate::model::Origin::Spawn`]). Writer and reader must agree on
    /// it per delta, as on the baseline itself; a list writer sets it for
    /// the entities it writes from spawn baselines.
    pub spawn: bool,
    /// Where the receiving viewer is, in whole units (see [`anchor_of`]):
    /// a model's position fields ([`crate::model::ModelData::axes`]) in a
    /// delta from a spawn baseline that holds zero there are coded against
    /// it. `None`: they are coded against the baseline (zero). The
    /// receiver must know it before it reads the delta, so it is never the
    /// position of the state being coded (a player state's own anchor is
    /// for the entities that follow it).
    pub anchor: Option<[i32; AXES]>,
    /// The snapshot's server time in milliseconds, on the clock the
    /// game's time stamps are taken from (`None` when unknown). A time
    /// stamp entering the view (a missile's launch time) lies a few
    /// hundred milliseconds before it, where coded from its zero baseline
    /// it would cost the whole clock's bits
    /// ([`crate::model::Predictor::Stamp`]). Both ends know it: the
    /// message header carries it.
    pub server_time: Option<u32>,
}

impl DeltaContext {
    /// The same context for a delta from a spawn baseline (`spawn`) or a
    /// held state.
    pub fn with_spawn(self, spawn: bool) -> Self {
        DeltaContext { spawn, ..self }
    }

    /// The same context with the viewer at `anchor`.
    pub fn with_anchor(self, anchor: Option<[i32; AXES]>) -> Self {
        DeltaContext { anchor, ..self }
    }

    /// The same context at server time `server_time`.
    pub fn with_server_time(self, server_time: Option<u32>) -> Self {
        DeltaContext {
            server_time,
            ..self
        }
    }

    /// The model origin of deltas in this context.
    #[inline]
    pub fn origin(&self) -> crate::model::Origin {
        if self.spawn {
            crate::model::Origin::Spawn
        } else {
            crate::model::Origin::Held
        }
    }
}

/// The anchor of deltas sent to the viewer whose state is `viewer`: the
/// position its model's axis fields hold ([`crate::model::ModelData::axes`]),
/// rounded to whole units. `None` without a model, without all
/// [`AXES`] axes, or for a position that is not a finite float.
pub fn anchor_of<T: Fields>(viewer: &T) -> Option<[i32; AXES]> {
    anchor_with(None, viewer)
}

/// [`anchor_of`] with the axis fields of `model` (`None`: the viewer
/// type's own model), for an engine coding with a given model.
pub fn anchor_with<T: Fields>(model: Option<&NativeModel>, viewer: &T) -> Option<[i32; AXES]> {
    let fields = native::HeldModel::of(model, viewer)?
        .get()
        .anchor_fields()?;
    let mut anchor = [0; AXES];
    for (slot, field) in anchor.iter_mut().zip(fields) {
        let field = usize::from(field);
        if field >= viewer.field_count() || !viewer.field_kind(field).element().is_float_bits() {
            return None;
        }
        *slot = anchor_coordinate(f32::from_bits(viewer.word(field, 0)))?;
    }
    Some(anchor)
}

/// One coordinate of an anchor: `position` rounded to a whole unit, if it
/// is finite and within ±2^24 (where floats still hold every integer).
pub fn anchor_coordinate(position: f32) -> Option<i32> {
    const LIMIT: f32 = (1 << 24) as f32;
    let rounded = crate::rounding::round(position);
    (rounded.is_finite() && rounded.abs() <= LIMIT).then_some(rounded as i32)
}

/// Which wire format to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Codec {
    /// Bit-exact Quake 3 protocol 68.
    Q3,
    /// This project's compact format.
    #[default]
    Native,
}

impl Codec {
    /// The codec's name as used on command lines and in files (`q3`, `native`).
    pub fn name(self) -> &'static str {
        match self {
            Codec::Q3 => "q3",
            Codec::Native => "native",
        }
    }

    /// Parses a name produced by [`Codec::name`].
    pub fn from_name(name: &str) -> Option<Codec> {
        match name {
            "q3" => Some(Codec::Q3),
            "native" => Some(Codec::Native),
            _ => None,
        }
    }

    /// Largest entity number this codec can carry (exclusive), if bounded.
    pub fn entity_number_limit(self) -> Option<u32> {
        match self {
            Codec::Q3 => Some(Q3_ENTITY_END),
            Codec::Native => None,
        }
    }

    /// This codec coding with `model` instead of the value type's own
    /// native model (`None`: the type's, as every other method of
    /// [`Codec`] does). The Quake 3 codec has no model and ignores it.
    /// Both ends must code with the same model: an engine that takes one
    /// checks it at connect ([`crate::model::NativeModel::id`]).
    pub fn with_model(self, model: Option<&NativeModel>) -> ModelCodec<'_> {
        ModelCodec { codec: self, model }
    }

    /// Writes `new` as a delta from `base` (Quake 3's player-state form for `Q3`).
    /// Something is always written, even when nothing changed.
    pub fn write_delta<T: Fields, S: BitSink + ?Sized>(
        self,
        sink: &mut S,
        base: &T,
        new: &T,
    ) -> Result<(), BitError> {
        self.write_delta_in(&DeltaContext::default(), sink, base, new)
    }

    /// [`Codec::write_delta`] with a [`DeltaContext`].
    pub fn write_delta_in<T: Fields, S: BitSink + ?Sized>(
        self,
        context: &DeltaContext,
        sink: &mut S,
        base: &T,
        new: &T,
    ) -> Result<(), BitError> {
        self.with_model(None)
            .write_delta_in(context, sink, base, new)
    }

    /// Reads a delta written by [`Codec::write_delta`] into `out`, which
    /// must start equal to the baseline (fields the delta does not mention
    /// keep their value).
    pub fn read_delta<T: Fields, S: BitSource + ?Sized>(
        self,
        source: &mut S,
        out: &mut T,
    ) -> Result<(), BitError> {
        self.read_delta_in(&DeltaContext::default(), source, out)
    }

    /// [`Codec::read_delta`] with a [`DeltaContext`].
    pub fn read_delta_in<T: Fields, S: BitSource + ?Sized>(
        self,
        context: &DeltaContext,
        source: &mut S,
        out: &mut T,
    ) -> Result<(), BitError> {
        self.with_model(None).read_delta_in(context, source, out)
    }

    /// Writes one entity of an entity list. `last` is the number of the
    /// previous entity written in this list (`None` for the first).
    ///
    /// Returns whether anything was written: an unchanged entity without
    /// `force` is skipped, and the caller must then not advance `last`.
    pub fn write_entity<T: Fields, S: BitSink + ?Sized>(
        self,
        sink: &mut S,
        last: Option<u32>,
        number: u32,
        update: EntityUpdate<'_, T>,
    ) -> Result<bool, BitError> {
        self.write_entity_in(&DeltaContext::default(), sink, last, number, update)
    }

    /// [`Codec::write_entity`] with a [`DeltaContext`].
    pub fn write_entity_in<T: Fields, S: BitSink + ?Sized>(
        self,
        context: &DeltaContext,
        sink: &mut S,
        last: Option<u32>,
        number: u32,
        update: EntityUpdate<'_, T>,
    ) -> Result<bool, BitError> {
        self.with_model(None)
            .write_entity_in(context, sink, last, number, update)
    }

    /// Ends an entity list whose last entry was `last`. `like` is any
    /// value of the list's entity type: the native codec codes the end with
    /// that type's model.
    pub fn write_entities_end<T: Fields, S: BitSink + ?Sized>(
        self,
        sink: &mut S,
        last: Option<u32>,
        like: &T,
    ) -> Result<(), BitError> {
        self.with_model(None).write_entities_end(sink, last, like)
    }

    /// The most bits [`Codec::write_entities_end`] can write after any
    /// entry, for budgeting a message before its list is written.
    pub fn entities_end_bound_bits<T: Fields>(self, like: &T) -> u32 {
        self.with_model(None).entities_end_bound_bits(like)
    }

    /// Bits to add to the size of entity `number` written first in a list
    /// (`last = None`) to bound its size wherever it stands: the native
    /// codec's number code depends on the entry before it, Quake 3's does
    /// not. A native removal's gap counts held entities, which the bound
    /// does not know: it gets the whole bound of its number on top.
    pub fn entity_position_slack<T: Fields>(self, like: &T, number: u32, removed: bool) -> u32 {
        self.with_model(None)
            .entity_position_slack(like, number, removed)
    }

    /// Whether an entity update's bits depend on where it stands in its list
    /// and on the delta's elapsed time, beyond its number, base and new
    /// state: the native codec codes the number against the entry before it
    /// and predicts from the elapsed time; Quake 3's writes the number
    /// whole and predicts nothing. A cache of encoded updates keys on these
    /// only when they count.
    pub fn entity_bits_depend_on_list(self) -> bool {
        match self {
            Codec::Q3 => false,
            Codec::Native => true,
        }
    }

    /// Whether a delta from spawn baseline `base` (an entity new to the
    /// receiver) is coded against the viewer's anchor
    /// ([`DeltaContext::anchor`]) when it has one: the native codec's model
    /// has a position field ([`crate::model::ModelData::axes`]) that holds
    /// zero in `base`. Such a delta is the receiving viewer's alone; a
    /// writer that shares encodings between receivers keys it by the anchor
    /// or does not share it. Quake 3's codec never reads the anchor.
    pub fn spawn_reads_anchor<T: Fields>(self, base: &T) -> bool {
        self.with_model(None).spawn_reads_anchor(base)
    }

    /// Reads the next entry of a list, or `None` at the end marker.
    /// Numbers must increase and be below `limit`. `like` is any value of
    /// the list's entity type (it carries the native codec's model).
    /// `held` is what the receiver holds (the base's entities): the native
    /// codec names a removal by its place among them.
    pub fn read_entity_number<T: Fields, S: BitSource + ?Sized>(
        self,
        source: &mut S,
        last: Option<u32>,
        limit: u32,
        like: &T,
        held: &dyn HeldNumbers,
    ) -> Result<Option<EntityHeader>, BitError> {
        self.with_model(None)
            .read_entity_number(source, last, limit, like, held)
    }

    /// Reads the body of the entity whose `header` was just read. `out`
    /// must start equal to the baseline chosen for it; on
    /// [`EntityBody::Changed`] it holds the new state, on
    /// [`EntityBody::Unchanged`] it is untouched.
    pub fn read_entity_body<T: Fields, S: BitSource + ?Sized>(
        self,
        source: &mut S,
        header: EntityHeader,
        out: &mut T,
    ) -> Result<EntityBody, BitError> {
        self.read_entity_body_in(&DeltaContext::default(), source, header, out)
    }

    /// [`Codec::read_entity_body`] with a [`DeltaContext`].
    pub fn read_entity_body_in<T: Fields, S: BitSource + ?Sized>(
        self,
        context: &DeltaContext,
        source: &mut S,
        header: EntityHeader,
        out: &mut T,
    ) -> Result<EntityBody, BitError> {
        self.with_model(None)
            .read_entity_body_in(context, source, header, out)
    }
}

/// A [`Codec`] coding with a given native model instead of the value
/// type's own ([`Codec::with_model`]): what an engine that was given
/// models (trained on other games, or adapting to its stream, see
/// [`crate::model::adapt`]) codes with. Its methods are [`Codec`]'s.
#[derive(Debug, Clone, Copy)]
pub struct ModelCodec<'m> {
    codec: Codec,
    model: Option<&'m NativeModel>,
}

impl From<Codec> for ModelCodec<'static> {
    /// The codec with the value types' own models.
    fn from(codec: Codec) -> Self {
        ModelCodec { codec, model: None }
    }
}

impl<'m> ModelCodec<'m> {
    /// The codec.
    pub fn codec(&self) -> Codec {
        self.codec
    }

    /// The model given, if any (`None`: the value type's own).
    pub fn model(&self) -> Option<&'m NativeModel> {
        self.model
    }

    /// [`Codec::write_delta_in`] with this model.
    pub fn write_delta_in<T: Fields, S: BitSink + ?Sized>(
        self,
        context: &DeltaContext,
        sink: &mut S,
        base: &T,
        new: &T,
    ) -> Result<(), BitError> {
        match self.codec {
            Codec::Q3 => q3::write_fields(sink, base, new, q3::Style::Player),
            Codec::Native => native::write_fields(self.model, sink, base, new, context),
        }
    }

    /// [`Codec::read_delta_in`] with this model.
    pub fn read_delta_in<T: Fields, S: BitSource + ?Sized>(
        self,
        context: &DeltaContext,
        source: &mut S,
        out: &mut T,
    ) -> Result<(), BitError> {
        match self.codec {
            Codec::Q3 => q3::read_fields(source, out, q3::Style::Player),
            Codec::Native => native::read_fields(self.model, source, out, context).map(|_| ()),
        }
    }

    /// [`Codec::write_entity_in`] with this model.
    pub fn write_entity_in<T: Fields, S: BitSink + ?Sized>(
        self,
        context: &DeltaContext,
        sink: &mut S,
        last: Option<u32>,
        number: u32,
        update: EntityUpdate<'_, T>,
    ) -> Result<bool, BitError> {
        self.write_entity_choosing(context, sink, last, number, update, None)
    }

    /// [`ModelCodec::write_entity_in`] for an entity new to the receiver
    /// whose reader was offered two states to delta from (see
    /// [`StartChoice`]): `start` says which one `update`'s base is, and is
    /// written between the entry's number and its body. Native codec
    /// only: Quake 3's lists offer no choice.
    pub fn write_entity_from_in<T: Fields, S: BitSink + ?Sized>(
        self,
        context: &DeltaContext,
        sink: &mut S,
        last: Option<u32>,
        number: u32,
        update: EntityUpdate<'_, T>,
        start: StartChoice,
    ) -> Result<bool, BitError> {
        if self.codec == Codec::Q3 || matches!(update, EntityUpdate::Removed { .. }) {
            return Err(BitError::invalid(
                "entity start",
                sink.bits_written(),
                "only a native entity entering the view chooses the state it deltas from",
            ));
        }
        self.write_entity_choosing(context, sink, last, number, update, Some(start))
    }

    fn write_entity_choosing<T: Fields, S: BitSink + ?Sized>(
        self,
        context: &DeltaContext,
        sink: &mut S,
        last: Option<u32>,
        number: u32,
        update: EntityUpdate<'_, T>,
        start: Option<StartChoice>,
    ) -> Result<bool, BitError> {
        let codec = self.codec;
        if let Some(limit) = codec.entity_number_limit() {
            if number >= limit {
                return Err(BitError::invalid(
                    "entity number",
                    sink.bits_written(),
                    format!(
                        "{number} does not fit the {} codec (limit {limit})",
                        codec.name()
                    ),
                ));
            }
        }
        if last.is_some_and(|last| number <= last) {
            return Err(BitError::invalid(
                "entity number",
                sink.bits_written(),
                format!("{number} written after {}", last.unwrap_or_default()),
            ));
        }
        match codec {
            Codec::Q3 => q3::write_entity(sink, number, update),
            Codec::Native => {
                native::write_entity(self.model, sink, last, number, update, context, start)
            }
        }
    }

    /// [`Codec::write_entities_end`] with this model.
    pub fn write_entities_end<T: Fields, S: BitSink + ?Sized>(
        self,
        sink: &mut S,
        last: Option<u32>,
        like: &T,
    ) -> Result<(), BitError> {
        match self.codec {
            Codec::Q3 => sink.put_bits(Q3_ENTITY_END, Q3_ENTITY_NUMBER_BITS),
            Codec::Native => native::write_entities_end(self.model, sink, last, like),
        }
    }

    /// [`Codec::entities_end_bound_bits`] with this model.
    pub fn entities_end_bound_bits<T: Fields>(self, like: &T) -> u32 {
        match self.codec {
            Codec::Q3 => Q3_ENTITY_NUMBER_BITS,
            Codec::Native => native::end_bound_bits(self.model, like),
        }
    }

    /// [`Codec::entity_position_slack`] with this model.
    pub fn entity_position_slack<T: Fields>(self, like: &T, number: u32, removed: bool) -> u32 {
        match self.codec {
            Codec::Q3 => 0,
            Codec::Native if removed => native::number_bound_bits(self.model, like, number),
            Codec::Native => native::number_bound_bits(self.model, like, number)
                .saturating_sub(native::number_bits(self.model, like, None, number)),
        }
    }

    /// [`Codec::entity_bits_depend_on_list`].
    pub fn entity_bits_depend_on_list(self) -> bool {
        self.codec.entity_bits_depend_on_list()
    }

    /// [`Codec::spawn_reads_anchor`] with this model.
    pub fn spawn_reads_anchor<T: Fields>(self, base: &T) -> bool {
        match self.codec {
            Codec::Q3 => false,
            Codec::Native => native::spawn_reads_anchor(self.model, base),
        }
    }

    /// [`Codec::read_entity_number`] with this model.
    pub fn read_entity_number<T: Fields, S: BitSource + ?Sized>(
        self,
        source: &mut S,
        last: Option<u32>,
        limit: u32,
        like: &T,
        held: &dyn HeldNumbers,
    ) -> Result<Option<EntityHeader>, BitError> {
        match self.codec {
            Codec::Q3 => Q3Entries.read_number(source, last, limit, held),
            Codec::Native => {
                let position = source.bits_read();
                let header = native::read_entity_number(self.model, source, last, like, held)?
                    .map(|(number, removed)| EntityHeader { number, removed });
                checked_header(header, position, last, limit)
            }
        }
    }

    /// For an entry read by [`ModelCodec::read_entity_number`] whose reader
    /// offers two states to delta from (an entity new to it: see
    /// [`StartChoice`]): the writer's choice, read between the number and
    /// the body, or `None` when the entry removes the entity (no choice is
    /// written for a removal). Completes `header`'s removed flag where the
    /// codec puts it after the number. Native codec only.
    pub fn read_entity_start<S: BitSource + ?Sized>(
        self,
        source: &mut S,
        header: &mut EntityHeader,
    ) -> Result<Option<StartChoice>, BitError> {
        match self.codec {
            Codec::Q3 => Q3Entries.read_start(source, header),
            Codec::Native => read_native_start(source, header),
        }
    }

    /// [`Codec::read_entity_body_in`] with this model.
    pub fn read_entity_body_in<T: Fields, S: BitSource + ?Sized>(
        self,
        context: &DeltaContext,
        source: &mut S,
        header: EntityHeader,
        out: &mut T,
    ) -> Result<EntityBody, BitError> {
        match self.codec {
            Codec::Q3 => q3::read_entity_body(source, out),
            Codec::Native => native::read_entity_body(
                self.model,
                source,
                header.number,
                header.removed,
                out,
                context,
            ),
        }
    }
}

/// How the entries of one entity list are read, resolved once per list
/// (the list reader, [`crate::merge::read_entity_list_from`], runs one
/// instance of its loop per codec): [`Q3Entries`] or the native codec's
/// [`native::ListModel`], which resolves its model once for the list
/// rather than once per entry. The methods are
/// [`ModelCodec::read_entity_number`], [`ModelCodec::read_entity_start`]
/// and [`ModelCodec::read_entity_body_in`].
pub(crate) trait ListEntries {
    /// The next entry's header, or `None` at the end marker; numbers must
    /// increase and be below `limit`.
    fn read_number<S: BitSource + ?Sized>(
        &self,
        source: &mut S,
        last: Option<u32>,
        limit: u32,
        held: &dyn HeldNumbers,
    ) -> Result<Option<EntityHeader>, BitError>;

    /// The writer's [`StartChoice`] for an entry offered two states.
    fn read_start<S: BitSource + ?Sized>(
        &self,
        source: &mut S,
        header: &mut EntityHeader,
    ) -> Result<Option<StartChoice>, BitError>;

    /// The body of the entry whose `header` was just read, into `out`
    /// (which holds the state it deltas from).
    fn read_body<T: Fields, S: BitSource + ?Sized>(
        &self,
        context: &DeltaContext,
        source: &mut S,
        header: EntityHeader,
        out: &mut T,
    ) -> Result<EntityBody, BitError>;
}

/// Quake 3's list entries (see [`ListEntries`]).
pub(crate) struct Q3Entries;

impl ListEntries for Q3Entries {
    // Inlined into the list reader, its caller per entry: the call's
    // register saves and its result through memory cost ~20 instructions
    // a number.
    #[inline(always)]
    fn read_number<S: BitSource + ?Sized>(
        &self,
        source: &mut S,
        last: Option<u32>,
        limit: u32,
        _held: &dyn HeldNumbers,
    ) -> Result<Option<EntityHeader>, BitError> {
        let position = source.bits_read();
        let header = q3::read_entity_number(source)?.map(|number| EntityHeader {
            number,
            removed: None,
        });
        checked_header(header, position, last, limit)
    }

    fn read_start<S: BitSource + ?Sized>(
        &self,
        source: &mut S,
        _header: &mut EntityHeader,
    ) -> Result<Option<StartChoice>, BitError> {
        Err(BitError::invalid(
            "entity start",
            source.bits_read(),
            "Quake 3's lists offer no choice of the state an entity deltas from",
        ))
    }

    #[inline]
    fn read_body<T: Fields, S: BitSource + ?Sized>(
        &self,
        _context: &DeltaContext,
        source: &mut S,
        _header: EntityHeader,
        out: &mut T,
    ) -> Result<EntityBody, BitError> {
        q3::read_entity_body(source, out)
    }
}

impl ListEntries for native::ListModel<'_> {
    // Inlined as Quake 3's is.
    #[inline(always)]
    fn read_number<S: BitSource + ?Sized>(
        &self,
        source: &mut S,
        last: Option<u32>,
        limit: u32,
        held: &dyn HeldNumbers,
    ) -> Result<Option<EntityHeader>, BitError> {
        let position = source.bits_read();
        let header = self
            .read_entity_number(source, last, held)?
            .map(|(number, removed)| EntityHeader { number, removed });
        checked_header(header, position, last, limit)
    }

    fn read_start<S: BitSource + ?Sized>(
        &self,
        source: &mut S,
        header: &mut EntityHeader,
    ) -> Result<Option<StartChoice>, BitError> {
        read_native_start(source, header)
    }

    #[inline]
    fn read_body<T: Fields, S: BitSource + ?Sized>(
        &self,
        context: &DeltaContext,
        source: &mut S,
        header: EntityHeader,
        out: &mut T,
    ) -> Result<EntityBody, BitError> {
        // A removal its number announced (two in five of the duel's
        // entries) reads only its check key: no call for it.
        if header.removes() {
            source.expect_check_key(header.number as u16)?;
            return Ok(EntityBody::Removed);
        }
        self.read_entity_body(source, header.number, header.removed, out, context)
    }
}

/// `header` (read at bit `position`) once its number is checked: below
/// `limit` and after `last`.
#[inline(always)]
fn checked_header(
    header: Option<EntityHeader>,
    position: usize,
    last: Option<u32>,
    limit: u32,
) -> Result<Option<EntityHeader>, BitError> {
    let Some(header) = header else {
        return Ok(None);
    };
    let number = header.number;
    if number >= limit {
        return Err(number_past_limit(position, number, limit));
    }
    match last {
        Some(last) if number <= last => Err(number_out_of_order(position, number, last)),
        _ => Ok(Some(header)),
    }
}

/// The native codec's [`ModelCodec::read_entity_start`].
fn read_native_start<S: BitSource + ?Sized>(
    source: &mut S,
    header: &mut EntityHeader,
) -> Result<Option<StartChoice>, BitError> {
    let removed = match header.removed {
        Some(removed) => removed,
        None => {
            let removed = source.get_bit()?;
            header.removed = Some(removed);
            removed
        }
    };
    if removed {
        return Ok(None);
    }
    StartChoice::read(source).map(Some)
}

/// Which of two states an entity entering the receiver's view deltas
/// from, when the receiver holds a second one besides the usual (its spawn
/// baseline or the zeroed dummy): a state it held for that number in an
/// older snapshot. The writer picks the cheaper; the choice is one
/// decision between the entry's number and its body
/// ([`ModelCodec::write_entity_from_in`], [`ModelCodec::read_entity_start`]).
///
/// **Why a choice, not a rule.** An entity re-entering the view (a player
/// back from behind a wall) is far cheaper from its old state, but an
/// event or missile that reuses a freed number is an unrelated entity,
/// cheaper from the dummy; the receiver cannot tell them apart before the
/// body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartChoice {
    /// Its spawn baseline or the zeroed dummy, in the spawn context.
    Usual,
    /// The older state the receiver held.
    Held,
}

/// How often an entity entering the view with an older state on offer
/// takes it: nearly always, since an older state is offered only when the
/// entities offered it save more than naming it costs (mostly players back
/// in view; on the OSP duel 612 of 657 offers took it, 0.93). A range
/// coder codes it by this chance; a bit stream in one bit.
///
/// **Why fixed, not learned.** At 7/8 the duel's choices cost 0.39 bits
/// each where their in-sample entropy is 0.37; a learned chance could gain
/// only that difference, about 15 bits on the whole duel.
const HELD_START: Chance = Chance::of(7, 8);

impl StartChoice {
    fn write<S: BitSink + ?Sized>(self, sink: &mut S) -> Result<(), BitError> {
        sink.put_decision(self == StartChoice::Held, HELD_START)
    }

    fn read<S: BitSource + ?Sized>(source: &mut S) -> Result<Self, BitError> {
        Ok(match source.get_decision(HELD_START)? {
            true => StartChoice::Held,
            false => StartChoice::Usual,
        })
    }
}

/// An entry of an entity list as [`Codec::read_entity_number`] read it:
/// its number and, where the codec put it there, whether it is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntityHeader {
    number: u32,
    /// `None`: the removed flag is read with the body.
    removed: Option<bool>,
}

impl EntityHeader {
    /// The header of entity `number` whose removed flag comes with the body,
    /// as in every Quake 3 entity: for a caller that reads the number by
    /// other means (Quake 3's spawn baselines carry it outside any list).
    pub fn with_flag_in_body(number: u32) -> Self {
        EntityHeader {
            number,
            removed: None,
        }
    }

    /// The entity number.
    pub fn number(&self) -> u32 {
        self.number
    }

    /// Whether the header already says the entry removes its entity (the
    /// native codec's numbers carry the flag): its body then changes no
    /// state.
    pub(crate) fn removes(&self) -> bool {
        self.removed == Some(true)
    }
}

/// What to write for one entity.
#[derive(Debug, Clone, Copy)]
pub enum EntityUpdate<'a, T> {
    /// The entity left the client's view (or was freed).
    Removed {
        /// The state the client held for it (any value of the type will do:
        /// it carries the native codec's model for the number).
        old: &'a T,
        /// Every entity the client holds (the base's): the native codec
        /// names the removal by its place among them, so the entity must
        /// be one of them.
        held: Held<'a>,
    },
    /// The entity's state, as a delta from `base`.
    Delta {
        /// What the client holds for this entity: its previous state, or a
        /// spawn baseline or the zeroed dummy when it is new to the client.
        base: &'a T,
        /// The state to send.
        new: &'a T,
        /// Write the entity even when nothing changed (an entity entering
        /// the view must be announced even if it equals its baseline).
        force: bool,
    },
}

impl<'a, T> EntityUpdate<'a, T> {
    /// A state of the update: the new one of a delta, the old one of a removal.
    pub fn state(&self) -> &'a T {
        match *self {
            EntityUpdate::Removed { old, .. } => old,
            EntityUpdate::Delta { new, .. } => new,
        }
    }
}

/// What an entity body said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntityBody {
    /// Remove the entity.
    Removed,
    /// The entity is present and equals its baseline.
    Unchanged,
    /// The entity is present with the decoded changes.
    Changed,
}

/// The error for an entry's number at or past the list's limit (out of
/// line: [`ModelCodec::read_entity_number`] runs once per entry).
#[cold]
#[inline(never)]
fn number_past_limit(position: usize, number: u32, limit: u32) -> BitError {
    native::refused(
        "entity number",
        position,
        format_args!("{number} is not below the limit {limit}"),
    )
}

/// The error for an entry's number not after the previous entry's.
#[cold]
#[inline(never)]
fn number_out_of_order(position: usize, number: u32, last: u32) -> BitError {
    native::refused(
        "entity number",
        position,
        format_args!("{number} follows {last}: entity lists must be sorted"),
    )
}

#[cfg(test)]
mod tests;
