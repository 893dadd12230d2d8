//! Trained entropy models for the native codec.
//!
//! The native codec turns every delta into a short sequence of *symbols* —
//! which groups of fields changed, the bit-length class of each changed
//! value — plus raw mantissa bits. Without a model the symbols are written
//! with universal (exp-Golomb) codes. A [`NativeModel`] instead holds one
//! Huffman code per symbol context, built from symbol counts observed on real
//! data by a [`ModelTrainer`]: a field that nearly always changes by one
//! class then costs one bit for its class, not five. Contexts split the
//! counts by what both ends know before the symbol ([`Origin`],
//! [`PatternKey`], [`ValueContext`]); a context seen rarely in training
//! backs off to the field's counts over all of them.
//!
//! Models are data ([`ModelData`], serializable), so a demo file can carry
//! the model its snapshots were written with and be decoded without the game.
//!
//! A model trained on other games can also learn the one it codes, with
//! nothing sent: both ends count the symbols along the delta chain and
//! rebuild the codes every so many messages ([`Adaptation`], see the
//! [`adapt`] module).

use serde::{Deserialize, Serialize};

use crate::bits::{low_mask, BitSink, BitSource, Chance};
use crate::codec::HeldNumbers;
use crate::error::BitError;
use crate::huffman::{CodeWord, DecodeTable, HuffmanCode};
use crate::kind::ScalarKind;
use crate::table::{FieldSet, FieldTable, Fields, NetFields, MAX_FIELDS};
use crate::top_bits::{TopBitChances, CLASS_CHANCES, MODELLED_BITS, TOP_BITS, TREE_NODES};
use std::sync::Arc;

pub mod adapt;
mod smooth;
mod zero_runs;

pub use adapt::{AdaptPolicy, Adaptation, SymbolTally};

/// Fields per changed-set group: each group's change pattern is one byte symbol.
pub const GROUP_FIELDS: usize = 8;
/// Value symbols per field: 33 integer classes, 33 float-bits classes, 33
/// grid-step classes, then [`ZERO_SYMBOL`].
pub const VALUE_SYMBOLS: usize = 100;
/// The value symbol of a field set to the all-zero word, whatever its
/// baseline: timers running out, events clearing and a missile stopping
/// reset fields from large values, which would otherwise cost the class and
/// raw bits of the whole baseline.
pub const ZERO_SYMBOL: u8 = 99;
/// Most groups a model may have (255 fields / 8, rounded up).
pub const MAX_GROUPS: usize = crate::table::MAX_FIELDS.div_ceil(GROUP_FIELDS);

/// Value contexts per field (see [`ValueContext`]).
pub const VALUE_CONTEXTS: usize = 4;

/// Contexts of an entity list's number symbol (see [`number_context`]).
pub const NUMBER_CONTEXTS: usize = 12;
/// Number symbols: `2 × class + removed` for the 33 bit-length classes of
/// the gap to the previous number, then [`NUMBER_END`].
pub const NUMBER_SYMBOLS: usize = 67;
/// The number symbol that ends an entity list.
pub const NUMBER_END: u8 = 66;

/// The context an entity list codes its next number symbol in: 0 for the
/// first (which cannot be the end: a bit before it says whether the list
/// is empty), else one more than the bit length of the previous number
/// (capped).
/// Games number their entity kinds in ranges (Quake 3: clients below 64,
/// then items, missiles and short-lived event entities above), so where the
/// list stands says how far the next changed entity is likely to be.
#[inline]
pub fn number_context(last: Option<u32>) -> u8 {
    match last {
        None => 0,
        Some(last) => 1 + (32 - last.leading_zeros()).min(NUMBER_CONTEXTS as u32 - 2) as u8,
    }
}

/// The number symbol of an entry `gap` numbers after the previous one's
/// successor, removed or not.
#[inline]
pub fn number_symbol(gap: u32, removed: bool) -> u8 {
    (2 * (32 - gap.leading_zeros()) + u32::from(removed)) as u8
}

/// What a delta's baseline is: the two kinds change in very different
/// ways, so each has its own change-pattern codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// A state the receiver holds: its copy from an acknowledged snapshot.
    /// Few fields change, by little.
    Held,
    /// A spawn baseline or the zeroed dummy (an entity entering the view,
    /// a full snapshot): most fields differ, by whole values.
    Spawn,
}

/// A field whose baseline value picks the change-pattern codes of a delta
/// from a held state: entities of one kind change the same fields (Quake
/// 3's players with `pos.trType` interpolate change their position; with
/// linear-stop extrapolation their trajectory time as well), and the kinds'
/// mix differs from game to game, so one code for all fits none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatternKey {
    /// The key field (its element 0).
    pub field: u16,
    /// Key classes: values from `classes - 1` up share the last class.
    pub classes: u8,
    /// A second key field, read only as zero or not: with one, each class
    /// of `field` splits in two (a Quake 3 player on the ground or in the
    /// air, firing or not).
    #[serde(default)]
    pub flag: Option<u16>,
    /// A third key field, read like `flag`, splitting every class again (a
    /// Quake 3 player standing still or moving: a still player's deltas
    /// change its time and little else, and priced among a moving one's
    /// that pattern's code flips between two bits and three as the training
    /// games change).
    #[serde(default)]
    pub second_flag: Option<u16>,
}

impl PatternKey {
    /// Most classes a key may have.
    pub const MAX_CLASSES: u8 = 16;

    /// Pattern sets the key tells apart.
    #[inline]
    pub fn held_classes(&self) -> usize {
        let split = |flag: Option<u16>| if flag.is_some() { 2 } else { 1 };
        usize::from(self.classes.max(1)) * split(self.flag) * split(self.second_flag)
    }

    /// The class of a baseline holding `words`: the key field's word and
    /// the flag fields' (each ignored without its field).
    #[inline]
    fn class(&self, [word, flag, second]: [u32; 3]) -> PatternSet {
        let classes = self.classes.max(1);
        let mut class = word.min(u32::from(classes) - 1) as PatternSet;
        let mut scale = classes;
        for (field, value) in [(self.flag, flag), (self.second_flag, second)] {
            if field.is_some() {
                if value != 0 {
                    class += scale;
                }
                scale *= 2;
            }
        }
        class
    }
}

/// When a field's value is decoded within a delta: 0 unpredicted, 1
/// predicted from the delta's context and unpredicted fields alone
/// ([`Predictor::Advance`], [`Predictor::Stamp`], [`Predictor::TickStamp`],
/// [`Predictor::FixedSpeed`], [`Predictor::Fall`]), 2
/// predicted from other fields ([`Predictor::Integrate`],
/// [`Predictor::Countdown`] and [`Predictor::Run`], whose inputs a model
/// may only take from tiers 0 and 1, and [`Predictor::Extrapolate`],
/// which reads its rate's baseline only), 3 predicted from a tier-2 field's
/// new value ([`Predictor::Differentiate`]). Encoder and decoder order the
/// values by it, so a prediction's inputs are always decoded first.
pub fn decode_tier(predictor: Option<Predictor>) -> u8 {
    match predictor {
        None => 0,
        Some(
            Predictor::Advance
            | Predictor::Stamp
            | Predictor::TickStamp { .. }
            | Predictor::FixedSpeed { .. }
            | Predictor::Fall { .. },
        ) => 1,
        Some(
            Predictor::Integrate { .. }
            | Predictor::Extrapolate { .. }
            | Predictor::Countdown { .. }
            | Predictor::Run { .. },
        ) => 2,
        Some(Predictor::Differentiate { .. }) => 3,
    }
}

/// Decode tiers (see [`decode_tier`]).
pub const DECODE_TIERS: usize = 4;

/// What the native codec reads of a model for one field, side by side so
/// a value's coding takes one look-up.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FieldCoding {
    /// The field's predictor, if the model declares one.
    pub predictor: Option<Predictor>,
    /// Its [`decode_tier`].
    pub tier: u8,
    /// Its grid's [`step`](Grid::step) (`None`: no grid, or one without a
    /// usable step).
    pub grid_step: Option<f32>,
    /// The position axis it holds ([`ModelData::axes`]).
    pub axis: Option<u8>,
    /// Whether its predictor is a loose delta's replacement
    /// ([`ModelData::loose_predictors`]): its changed values are then
    /// coded in the [`ValueContext::Spawn`] context (see there).
    pub replaced: bool,
}

/// The [`FieldCoding`] of every field of a model with these grids and
/// predictors (as long as the longer of the two).
pub(crate) fn field_codings(
    grids: &[Option<Grid>],
    predictors: &[Option<Predictor>],
    axes: &[Option<u8>],
) -> Vec<FieldCoding> {
    (0..grids.len().max(predictors.len()).max(axes.len()))
        .map(|field| {
            let predictor = predictors.get(field).copied().flatten();
            FieldCoding {
                predictor,
                tier: decode_tier(predictor),
                grid_step: grids.get(field).copied().flatten().and_then(|g| g.step()),
                axis: axes.get(field).copied().flatten(),
                replaced: false,
            }
        })
        .collect()
}

/// The fields of each tier of `tiers` (a field's tier is below
/// [`DECODE_TIERS`]).
fn tier_sets(tiers: &[u8]) -> [FieldSet; DECODE_TIERS] {
    let mut sets = [[0; MAX_FIELDS.div_ceil(64)]; DECODE_TIERS];
    for (field, &tier) in tiers.iter().enumerate().take(MAX_FIELDS) {
        if let Some(set) = sets.get_mut(usize::from(tier)) {
            set[field / 64] |= 1 << (field % 64);
        }
    }
    sets
}

/// [`decode_tier`] of every field.
pub(crate) fn decode_tiers(predictors: &[Option<Predictor>]) -> Vec<u8> {
    predictors.iter().map(|&p| decode_tier(p)).collect()
}

/// The [`PatternSet`] of a delta of `origin` whose baseline holds `words`
/// in the field and flag fields of `key`, the key of that origin, under a
/// model with `spawn_sets` spawn sets.
#[inline]
pub(crate) fn pattern_set(
    key: Option<PatternKey>,
    spawn_sets: usize,
    origin: Origin,
    words: [u32; 3],
) -> PatternSet {
    let class = key.map_or(0, |key| key.class(words));
    match origin {
        Origin::Spawn => class,
        Origin::Held => spawn_sets as PatternSet + class,
    }
}

/// Which set of change-pattern codes a delta uses: for a delta from a
/// spawn baseline, the class of the baseline under the spawn key (0
/// without one); for one from a held state, the number of spawn sets plus
/// its class under the [`PatternKey`] (0 without one).
pub type PatternSet = u8;

/// What a changed value is coded in the context of: whether its delta is
/// from a spawn baseline and, from a held state, what the baseline value
/// looked like (zero, whole, a fraction). A float whose baseline was a whole number (a snapped
/// velocity) nearly always changes to another whole number, one whose
/// baseline was not nearly never does, whichever game or mod sent it: the
/// baseline tells a stream's habits that counts from other streams cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueContext {
    /// From a spawn baseline ([`Origin::Spawn`]); or, from a held one, a
    /// value a loose delta predicts with a replacement predictor
    /// ([`ModelData::loose_predictors`]). Those errors are of another
    /// size than the field's own predictor's (a position extrapolated
    /// from the baseline's velocity misses by the change of velocity, one
    /// integrated from both velocities by far less), and sharing the
    /// held contexts priced a game that snaps its velocities by another's
    /// that does not. A struct with replacements is a player's state,
    /// whose deltas from a spawn baseline are one a connection.
    Spawn = 0,
    /// The baseline is zero (integers and floats alike).
    Zero = 1,
    /// A whole number (every integer field's non-zero baseline).
    Whole = 2,
    /// A float that is not a whole number; or a whole one, if the field
    /// is a rate that predictions read (a velocity) and another such rate
    /// of the baseline is a fraction: a game that does not snap its
    /// velocities makes one whole only by coincidence.
    Fraction = 3,
}

/// Where a symbol occurs; each context has its own code in a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Context {
    /// One more than the index of the last group with a changed field (0:
    /// none), in a pattern set.
    LastGroup(PatternSet),
    /// The change pattern of group `g` (bit `i` = field `8g + i` changed),
    /// in a pattern set.
    Group(PatternSet, usize),
    /// The class of a changed value of field `f` (or of an element of it).
    Value(usize, ValueContext),
    /// An entity list's next entry: the class of its number's gap and
    /// whether it is removed, or the end of the list, in a
    /// [`number_context`].
    EntityNumber(u8),
    /// The first bits below the leading one of a value of field `f` whose
    /// class is the given symbol ([`crate::top_bits`]), and how many of
    /// them there are: not a coded symbol, but what an adapting model
    /// counts of them. Its "symbol" is those bits, from the top
    /// (`b₁…b₈`: the tree's [`crate::top_bits::TOP_BITS`] and the deep
    /// [`crate::top_bits::DEEP_BITS`], or fewer when the value has fewer
    /// bits). The count is in the context, not a marker one in the symbol,
    /// so all eight bits fit a byte.
    TopBits(usize, u8, u8),
    /// Which elements of array field `f` changed, in a delta of the given
    /// origin: a place in its dictionary of common element sets
    /// ([`ModelData::element_sets`]), plus one, or [`ELEMENTS_ESCAPE`] for
    /// a set written out in full (as nearly every set of a delta from a
    /// spawn baseline or the zeroed dummy is).
    Elements(usize, Origin),
    /// Whether an entity list has entries: [`LIST_ENTRIES`] before its
    /// first entry, [`LIST_EMPTY`] for a list without any.
    ListStart,
}

/// The [`Context::ListStart`] symbol of an empty entity list.
pub const LIST_EMPTY: u8 = 0;

/// The [`Context::ListStart`] symbol of an entity list with entries.
pub const LIST_ENTRIES: u8 = 1;

/// Symbols of a [`Context::ListStart`] code.
pub const LIST_START_SYMBOLS: usize = 2;

/// Symbol counts for one struct: what a model is built from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelData {
    /// Fingerprint of the schema the counts were taken on.
    pub schema_fingerprint: u64,
    /// The field picking a held delta's pattern codes, if any.
    pub pattern_key: Option<PatternKey>,
    /// Counts of the [`Context::LastGroup`] symbol per [`PatternSet`]
    /// (tables of `groups + 1` entries).
    pub last_group: Vec<Vec<u32>>,
    /// Counts of each group's pattern, per [`PatternSet`] all its groups
    /// (256 entries per group).
    pub groups: Vec<Vec<u32>>,
    /// Counts of each field's value classes, [`VALUE_CONTEXTS`] tables per
    /// field in [`ValueContext`] order ([`VALUE_SYMBOLS`] entries each).
    pub values: Vec<Vec<u32>>,
    /// Per field: the grid its float values were seen on, if any.
    pub grids: Vec<Option<Grid>>,
    /// Per field: how to predict its new value, if declared.
    pub predictors: Vec<Option<Predictor>>,
    /// Per float field: the median binary exponent of its non-zero values
    /// in training (what one step of its float bits is worth), learned with
    /// the grids. The prior of a value context maps float-bits classes to
    /// whole-number classes through it, so a game that snaps a field codes
    /// it cheaply with counts from games that do not, and the reverse.
    pub magnitudes: Vec<Option<i16>>,
    /// Counts of the [`Context::EntityNumber`] symbol, [`NUMBER_CONTEXTS`]
    /// tables of [`NUMBER_SYMBOLS`] entries (taken by
    /// [`ModelTrainer::observe_entity_list`]; all zero for a struct never
    /// sent in entity lists).
    pub numbers: Vec<Vec<u32>>,
    /// The field picking a spawn delta's pattern codes, if any (see
    /// [`ModelData::spawn_sets`]).
    #[serde(default)]
    pub spawn_key: Option<PatternKey>,
    /// Per field (or empty: none), the axis of the position it holds, 0 to
    /// [`AXES`] − 1: in a player state, the viewer's position, which
    /// [`crate::codec::anchor_of`] reads; in an entity, its position, which
    /// a delta from a zero baseline codes against the viewer's (see
    /// [`crate::codec::DeltaContext::anchor`]).
    #[serde(default)]
    pub axes: Vec<Option<u8>>,
    /// Per field (or empty: none), the integer changes it makes most often
    /// (the new word less the baseline word, in the field's width), at most
    /// [`DICTIONARY_LEN`], most frequent first: a change found here is
    /// coded as its own value symbol, [`DICTIONARY_SYMBOLS`] plus its
    /// place, with no extra bits (Quake 3's event counter stepping by 256,
    /// an animation's toggle bit, a bounding box's packed size). Learned
    /// with [`ModelTrainer::learn_changes`]; only unpredicted integer
    /// fields use one.
    #[serde(default)]
    pub dictionaries: Vec<Vec<u32>>,
    /// Per field (or empty: none), a predictor that replaces the field's
    /// own ([`ModelData::predictors`]) in a delta from a held baseline
    /// whose float rates are loose: one of them (a velocity) holds a
    /// fraction, so the game does not snap its rates (see
    /// [`ValueContext::Fraction`]). `None` keeps the field's own.
    ///
    /// Why per delta: a game that snaps its velocities to whole numbers
    /// (Quake 3's `pmove_float 0`) sends a velocity's change in a few
    /// bits, and the position is best predicted from the mean of the two
    /// velocities ([`Predictor::Integrate`]); one that does not sends
    /// every changed velocity at full float precision, twenty-odd bits,
    /// where the position's change says it to a few
    /// ([`Predictor::Extrapolate`] then [`Predictor::Differentiate`]). The
    /// baseline, which both ends hold, tells which game it is: no counts
    /// from other games can.
    ///
    /// The position's change says the new velocity only when the player
    /// made one move between the two states: a delta whose baseline is
    /// loose first codes the time fields the replacements read as clocks
    /// ([`Clock::Field`]), and takes the replacements only when every one
    /// of them advanced by at most the delta's elapsed time, and by
    /// something if any time elapsed (one move: a server frame's, as a
    /// bot's or a spectated player's, or a client's own shorter one);
    /// otherwise (a client that ran several moves, or none) the field's
    /// own predictors code the rest. Those clock fields must keep their
    /// own predictors, and those read nothing but the elapsed time.
    #[serde(default)]
    pub loose_predictors: Vec<Option<Predictor>>,
    /// Per field (or empty: none; a field's entry empty until training
    /// sees one), counts of the first bits below its values' leading ones
    /// ([`crate::top_bits`]): for each value symbol from
    /// [`TOP_BITS_FIRST_SYMBOL`] on ([`TOP_BITS_SYMBOLS`] of them: the
    /// integer and grid classes, the float bit-pattern classes between
    /// left at zero),
    /// [`CLASS_CHANCES`] pairs of (zeros, ones), one per node of its tree
    /// and per deep position.
    /// A range-coding sink codes those bits by the chances they make; a
    /// bit stream ignores them. Stored with their runs of zeros shortened
    /// (most classes of most fields are never seen).
    #[serde(default, with = "zero_runs::top_bits")]
    pub top_bits: Vec<Vec<u32>>,
    /// Per field (or empty: none; a field's entry empty unless it is an
    /// array), the sets of elements its changes change most often, as
    /// masks (bit `e`: element `e`), at most [`ELEMENT_SETS_LEN`], most
    /// frequent first. A change whose set is one of them is coded as one
    /// [`Context::Elements`] symbol; any other as [`ELEMENTS_ESCAPE`] and
    /// the set's size and gaps in exp-Golomb. Quake 3's player arrays
    /// (`stats`, `persistant`, `ammo`) change one or two elements at a
    /// time, nearly always the same few (health, the score, the held
    /// weapon's ammunition). Learned with [`ModelTrainer::learn_changes`].
    #[serde(default)]
    pub element_sets: Vec<Vec<u32>>,
    /// Per field and origin (or empty: none), at [`elements_table`], counts
    /// of its [`Context::Elements`] symbol ([`ELEMENTS_SYMBOLS`] entries;
    /// a table empty until training counts one). A field codes its
    /// element sets in deltas of an origin as symbols only when it has
    /// both that origin's counts and a dictionary.
    #[serde(default)]
    pub elements: Vec<Vec<u32>>,
    /// Counts of the [`Context::ListStart`] symbol ([`LIST_START_SYMBOLS`]
    /// entries, or empty: none, and an entity list's start is a raw bit).
    /// Whether a snapshot changes any entity depends on the game and its
    /// tick rate (half a 15 Hz duel's lists are empty, nine in ten of a
    /// 30 Hz recording's): what a range coder gains on it comes mostly from
    /// adapting to the stream.
    #[serde(default)]
    pub list_start: Vec<u32>,
}

/// Most element sets an array field's dictionary holds
/// ([`ModelData::element_sets`]).
pub const ELEMENT_SETS_LEN: usize = 16;

/// Symbols of a [`Context::Elements`] code: the escape, then one per
/// dictionary entry.
pub const ELEMENTS_SYMBOLS: usize = ELEMENT_SETS_LEN + 1;

/// The [`Context::Elements`] symbol of a set not in the field's
/// dictionary, which follows it in exp-Golomb (its size, then the gaps).
pub const ELEMENTS_ESCAPE: u8 = 0;

/// Where the [`Context::Elements`] counts of `field` in deltas of `origin`
/// are in [`ModelData::elements`]: two tables per field, held then spawn.
#[inline]
pub fn elements_table(field: usize, origin: Origin) -> usize {
    2 * field
        + match origin {
            Origin::Held => 0,
            Origin::Spawn => 1,
        }
}

/// The [`Context::Elements`] symbol of element set `mask` with dictionary
/// `sets`: its place plus one, or [`ELEMENTS_ESCAPE`].
#[inline]
pub fn elements_symbol(sets: &[u32], mask: u32) -> u8 {
    sets.iter()
        .position(|&set| set == mask)
        .map_or(ELEMENTS_ESCAPE, |place| place as u8 + 1)
}

/// The first value symbol whose raw bits a model's top-bit trees cover:
/// the integer class of two-bit values, the first with a bit below its
/// leading one.
pub const TOP_BITS_FIRST_SYMBOL: u8 = 2;

/// How many value symbols the top-bit trees span: every symbol from
/// [`TOP_BITS_FIRST_SYMBOL`] to the last grid class (symbol 98), so the
/// integer classes of 2 to 32 bits and the grid-step classes (a float's
/// steps, an integer's ticks) each have a tree. A grid class's bits below
/// the leading one lean small like an integer's (a move of 100.125 units
/// is likelier than one of 127.875). Symbols without raw bits (dictionary
/// entries, the classes of zero and one) never use theirs, and the float
/// bit-pattern classes between ([`FLOAT_BITS_CLASSES`]) are never counted,
/// so they have no tree: a class without counts has its bits read raw
/// ([`TopBitChances::from_counts`]).
pub const TOP_BITS_SYMBOLS: usize = 97;

/// The value symbols of float bit-pattern classes (a float neither whole
/// nor on its grid, coded by its distance in representable floats), whose
/// bits no tree counts: below the leading one they are a mantissa's, as
/// good as even, and chances learned from other games' floats cost more
/// than they save. Counted, they cost the leave-one-out duel 543 bytes
/// (`delta-size`'s `native_loo_range`, 475,201 to 475,744) where the grid
/// classes alone save 57.
pub const FLOAT_BITS_CLASSES: std::ops::Range<u8> = 33..66;

/// Counts in one field's [`ModelData::top_bits`].
pub const TOP_BITS_COUNTS: usize = TOP_BITS_SYMBOLS * 2 * CLASS_CHANCES;

/// Imaginary observations of each answer a top-bit chance starts from
/// (see [`TopBitChances::from_counts`]). A node that training saw a few
/// times (a deep position of a class the other games rarely use) should
/// not claim near certainty for a game it was not trained on:
/// leave-one-out and range-coded (`delta-size`'s `native_loo_range`), 6
/// took the eight shared demos 498,632 -> 498,519 bytes, no demo worse
/// (the duel -105, truncated -6); 1 cost 79 bytes.
const TOP_BITS_PRIOR: u32 = 6;

/// Per field, the chances of `data`'s top-bit counts.
fn top_bit_chances(data: &ModelData) -> Vec<Option<TopBitChances>> {
    data.top_bits
        .iter()
        .map(|counts| top_bit_chances_of(counts))
        .collect()
}

/// The chances of one field's top-bit counts (`None` if it has none).
fn top_bit_chances_of(counts: &[u32]) -> Option<TopBitChances> {
    TopBitChances::from_counts(TOP_BITS_FIRST_SYMBOL, counts, TOP_BITS_PRIOR)
}

/// What a model counts of the raw bits after `traced`'s symbol, if they
/// are a value's bits below its leading one that a top-bit tree covers:
/// their [`Context::TopBits`] and the bits seen.
pub(crate) fn top_bits_seen(traced: &TracedSymbol) -> Option<(Context, u8)> {
    let Context::Value(field, _) = traced.context else {
        return None;
    };
    let index = traced.symbol.checked_sub(TOP_BITS_FIRST_SYMBOL)?;
    if traced.raw_bits == 0
        || usize::from(index) >= TOP_BITS_SYMBOLS
        || FLOAT_BITS_CLASSES.contains(&traced.symbol)
    {
        return None;
    }
    let bits = traced.raw_bits.min(MODELLED_BITS);
    let top = (traced.raw >> (traced.raw_bits - bits)) & low_mask(bits);
    Some((
        Context::TopBits(field, traced.symbol, bits as u8),
        top as u8,
    ))
}

/// Most changes a field's dictionary holds ([`ModelData::dictionaries`]).
pub const DICTIONARY_LEN: usize = 16;

/// The first value symbol of a dictionary entry: an integer field's value
/// symbols from here on would be float classes, which integers never use.
pub const DICTIONARY_SYMBOLS: u8 = 33;

/// Fewest times a change must be seen in training to enter a dictionary.
const DICTIONARY_MIN_COUNT: u32 = 4;

/// Axes of a position ([`ModelData::axes`]).
pub const AXES: usize = 3;

/// A float grid: every value the field took was `k × step` for an integer
/// `k`, with `step = odd × 2^exponent` (Quake 3's view angles are multiples
/// of 45 × 2^-13, i.e. 360/65536). Values on the grid are coded as the
/// integer difference of their `k`, a handful of bits instead of a float's
/// 20-odd; values off it take the other paths, so a grid is never wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grid {
    /// Odd factor of the step.
    pub odd: u32,
    /// Power-of-two exponent of the step.
    pub exponent: i8,
}

impl Grid {
    /// Most grid steps from zero a value may be (so `k` is exact in an `f32`).
    pub const MAX_STEPS: i32 = 1 << 24;

    /// The step as an `f32` (`None` if it is not finite and non-zero).
    #[inline]
    pub fn step(&self) -> Option<f32> {
        // 2^exponent built from its bits (exact: an i8 exponent is a normal
        // f64), not with `powi`: values are coded against grids per field.
        let power = f64::from_bits(((i64::from(self.exponent) + 1023) as u64) << 52);
        let exact = self.odd as f64 * power;
        let step = exact as f32;
        (step.is_finite() && step != 0.0 && step as f64 == exact).then_some(step)
    }

    /// `value` as a whole number of steps, if it is one exactly.
    pub fn steps_of(&self, value: f32) -> Option<i32> {
        Self::steps_at(self.step()?, value)
    }

    /// The value `k` steps from zero.
    pub fn value_of(&self, k: i32) -> Option<f32> {
        Self::value_at(self.step()?, k)
    }

    /// [`steps_of`](Self::steps_of) with the grid's [`step`](Self::step)
    /// already worked out (a model keeps it per field).
    #[inline]
    pub fn steps_at(step: f32, value: f32) -> Option<i32> {
        let k = crate::rounding::round(value / step);
        (k.abs() < Self::MAX_STEPS as f32 && k * step == value && value.to_bits() != 0x8000_0000)
            .then_some(k as i32)
    }

    /// [`value_of`](Self::value_of) with the step already worked out.
    #[inline]
    pub fn value_at(step: f32, k: i32) -> Option<f32> {
        (k.abs() < Self::MAX_STEPS).then_some(k as f32 * step)
    }
}

/// How the native codec predicts a field's new value from the baseline and
/// the rest of the delta; only the (small) error from the prediction is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Predictor {
    /// The field is a position that moves at the rate held in field `rate`
    /// (units per second): `new ≈ base + mean(rate_base, rate_new) × elapsed`.
    Integrate {
        /// The velocity field.
        rate: u16,
        /// Where the elapsed time comes from.
        clock: Clock,
    },
    /// The field is an integer time stamp in milliseconds that moves with
    /// the snapshot clock (Quake 3's `commandTime`, a player entity's
    /// `pos.trTime`): `new ≈ base + elapsed`, the
    /// [`DeltaContext`](crate::codec::DeltaContext)'s elapsed time.
    Advance,
    /// The field is a position that moved at the rate its baseline held in
    /// field `rate`: `new ≈ base + rate_base × elapsed`. Unlike
    /// [`Predictor::Integrate`] it does not read the new rate, so the rate
    /// itself can be predicted from this field's change
    /// ([`Predictor::Differentiate`]).
    Extrapolate {
        /// The velocity field (only its baseline is read).
        rate: u16,
        /// Where the elapsed time comes from.
        clock: Clock,
    },
    /// The field is a rate (units per second) of the position in field
    /// `position`, whose new value is decoded first: `new ≈ (position_new −
    /// position_base) / elapsed`, or with `mean` `2 × (position_new −
    /// position_base) / elapsed − base` (a position that moved at the mean
    /// of the two rates, as a body under constant acceleration does). A
    /// game that does not snap its velocities sends them at full float
    /// precision, so a change from the baseline costs twenty-odd bits; the
    /// position's change says the same velocity to a few. A position that
    /// moved slower than one unit a second (a body pressed against a wall,
    /// whose velocity keeps a clipping residue) predicts nothing, and the
    /// rate is coded from its baseline.
    Differentiate {
        /// The position field, predicted with [`Predictor::Extrapolate`] or
        /// unpredicted.
        position: u16,
        /// Where the elapsed time comes from.
        clock: Clock,
        /// Whether the position moved at the mean of the two rates.
        mean: bool,
    },
    /// The field is an integer timer that counts down with the clock and
    /// stops at zero (Quake 3's `weaponTime`, `pm_time`, `legsTimer`,
    /// `torsoTimer`, which every movement command lowers by its
    /// milliseconds): `new ≈ max(0, base − elapsed)`. A timer set again
    /// (a weapon fired, an animation started) is coded from there.
    Countdown {
        /// Where the elapsed time comes from.
        clock: Clock,
    },
    /// The field is an integer counter that runs at `per_1024` / 1024 steps
    /// per millisecond of the clock, wrapping in its width (Quake 3's
    /// `bobCycle`, which a player moving on the ground steps by
    /// ⌊0.4 × msec⌋ a command): `new ≈ base + rate × elapsed`.
    Run {
        /// Steps per 1024 milliseconds.
        per_1024: u16,
        /// Where the elapsed time comes from.
        clock: Clock,
    },
    /// The field is an integer time stamp on the server's clock in
    /// milliseconds (Quake 3's `pos.trTime`: a player entity's command
    /// time, a missile's launch time, a dropped item's drop time). From a
    /// held state that holds one it moves with the snapshot clock, as
    /// [`Predictor::Advance`] does (`new ≈ base + elapsed`); entering the
    /// view (a delta from a spawn baseline or the zeroed dummy) or from a
    /// held zero (an entity slot taken by a new entity), it is a moment
    /// shortly before the snapshot: `new ≈` the
    /// [`DeltaContext`](crate::codec::DeltaContext)'s `server_time`. Coded
    /// from the zero baseline instead, a launch time costs the whole
    /// clock's bits (about 21 for a 20-minute game), and a missile in
    /// view is sent that way until a snapshot holding it is acknowledged.
    Stamp,
    /// The field is a launch time in milliseconds on the server's clock
    /// that never moves while its entity lives and falls on the server's
    /// ticks of `tick_ms` milliseconds (a missile launched in a server
    /// frame, as the arena's are). Whether the entity enters the view or
    /// a new one takes a held slot (the only way the field changes), it is
    /// a moment shortly before the snapshot: `new ≈` the
    /// [`DeltaContext`](crate::codec::DeltaContext)'s `server_time`
    /// (without one, as [`Predictor::Stamp`] predicts a held stamp). An
    /// error from the prediction of whole ticks is coded in ticks, on its
    /// own symbols (the float grid's), any other in milliseconds. A
    /// missile a few ticks old then costs a few bits, not the ten or so of
    /// its age in milliseconds; unlike [`Predictor::Stamp`] it suits no
    /// stamp that advances with the clock (a player's command time).
    TickStamp {
        /// Milliseconds a server tick (2 or more to take effect).
        tick_ms: u16,
    },
    /// The field is one component of a velocity of known magnitude (a
    /// missile flying at its weapon's fixed speed) whose other two
    /// components are the fields `components`, decoded first: its size is
    /// `√(speed² − a² − b²)` and only its sign and the (small) error are
    /// coded. Applies where the new state's field `gate.0` holds the word
    /// `gate.1` (an entity kind: the missile's), or everywhere without a
    /// gate; elsewhere the field is coded from its baseline. The
    /// components and the gate field must be unpredicted (decoded first);
    /// the field itself is decoded with the context-predicted ones, so a
    /// position may [`Predictor::Integrate`] it. A whole value's
    /// integral code then folds the sign in: `2 × zigzag(|new| − size) +
    /// sign`. Coded from zero, a missile's third velocity component
    /// costs its full magnitude's bits (ten or so at 900 units a second).
    FixedSpeed {
        /// The magnitude of the velocity, in the field's units.
        speed: u16,
        /// The velocity's other two components.
        components: [u16; 2],
        /// The field and word that say the velocity has this magnitude
        /// (`None`: always).
        gate: Option<(u16, u32)>,
    },
    /// The field is a vertical velocity (units per second, up positive)
    /// of a body in free fall while both the baseline and the new state
    /// hold the word `ground.1` in the field `ground.0` (Quake 3's
    /// `groundEntityNum` of `ENTITYNUM_NONE`: standing on nothing): it
    /// falls by the gravity over the delta's elapsed time, `new ≈ base −
    /// g × elapsed`, where g is the new value of the field `gravity`
    /// (Quake 3's `ps.gravity`, in units per second²), or `acceleration`
    /// without one. Elsewhere (on the ground, jumping, landing) the field
    /// is coded from its baseline. Coded from the baseline, a player in
    /// the air for a 200 ms delta changes its vertical velocity by 160
    /// units a second, eight bits or so; from the fall, by what its
    /// commands' snapping and timing left, three or four. The gravity and
    /// ground fields must be unpredicted (decoded first); the field
    /// itself is decoded with the context-predicted ones, so a position
    /// may [`Predictor::Integrate`] it.
    Fall {
        /// The field holding the gravity (`None`: `acceleration`).
        gravity: Option<u16>,
        /// The gravity without a gravity field, in units per second².
        acceleration: u16,
        /// The field and word that say the body stands on nothing.
        ground: (u16, u32),
    },
}

/// Every field the predictors read (their rates and clock fields), sorted.
pub(crate) fn predictor_inputs(predictors: &[Option<Predictor>]) -> Vec<u16> {
    let mut inputs: Vec<u16> = predictors
        .iter()
        .flatten()
        .flat_map(|predictor| match *predictor {
            Predictor::Integrate { rate, clock } => {
                let time = match clock {
                    Clock::Field(time) => Some(time),
                    Clock::Elapsed => None,
                };
                [Some(rate), time]
            }
            Predictor::Extrapolate { rate, clock } => [Some(rate), clock_field(clock)],
            Predictor::Countdown { clock } | Predictor::Run { clock, .. } => {
                [clock_field(clock), None]
            }
            Predictor::Differentiate {
                position, clock, ..
            } => [Some(position), clock_field(clock)],
            // Reads only new values, decoded before it is.
            Predictor::Advance
            | Predictor::Stamp
            | Predictor::TickStamp { .. }
            | Predictor::FixedSpeed { .. } => [None, None],
            // The ground's baseline is read; the gravity only new.
            Predictor::Fall { ground, .. } => [Some(ground.0), None],
        })
        .flatten()
        .collect();
    inputs.sort_unstable();
    inputs.dedup();
    inputs
}

/// The time field a clock reads, if any.
fn clock_field(clock: Clock) -> Option<u16> {
    match clock {
        Clock::Field(time) => Some(time),
        Clock::Elapsed => None,
    }
}

/// What a [`ModelData::fingerprint`] eats before a model's loose
/// replacements: no field number is this large.
const LOOSE_MARK: u64 = u64::MAX - 1;

/// What a [`ModelData::fingerprint`] eats before a model's top-bit counts.
const TOP_BITS_MARK: u64 = u64::MAX - 2;

/// Marks the element-set dictionaries and counts in a fingerprint.
const ELEMENTS_MARK: u64 = u64::MAX - 3;

/// Marks the list-start counts in a fingerprint.
const LIST_START_MARK: u64 = u64::MAX - 4;

/// A predictor as four words, for fingerprints: its kind, then its fields.
fn predictor_words(predictor: Predictor) -> [u64; 4] {
    let clock_word = |clock: Clock| match clock {
        Clock::Elapsed => u64::MAX,
        Clock::Field(time) => u64::from(time),
    };
    match predictor {
        Predictor::Integrate { rate, clock } => [0, u64::from(rate), clock_word(clock), 0],
        Predictor::Extrapolate { rate, clock } => [1, u64::from(rate), clock_word(clock), 0],
        Predictor::Differentiate {
            position,
            clock,
            mean,
        } => [2, u64::from(position), clock_word(clock), u64::from(mean)],
        Predictor::Advance => [3, 0, 0, 0],
        Predictor::Countdown { clock } => [4, clock_word(clock), 0, 0],
        Predictor::Run { per_1024, clock } => [5, u64::from(per_1024), clock_word(clock), 0],
        Predictor::Stamp => [6, 0, 0, 0],
        Predictor::TickStamp { tick_ms } => [8, u64::from(tick_ms), 0, 0],
        Predictor::FixedSpeed {
            speed,
            components: [a, b],
            gate,
        } => [
            7,
            u64::from(speed) | u64::from(a) << 16 | u64::from(b) << 32,
            gate.map_or(u64::MAX, |(field, _)| u64::from(field)),
            gate.map_or(0, |(_, word)| u64::from(word)),
        ],
        Predictor::Fall {
            gravity,
            acceleration,
            ground: (ground, word),
        } => [
            9,
            gravity.map_or(u64::MAX, u64::from),
            u64::from(acceleration) | u64::from(ground) << 16,
            u64::from(word),
        ],
    }
}

/// The predictors of a loose delta (see [`ModelData::loose_predictors`]):
/// each field's replacement, or its own; `None` without replacements.
pub(crate) fn loose_predictor_set(
    predictors: &[Option<Predictor>],
    replacements: &[Option<Predictor>],
) -> Option<Vec<Option<Predictor>>> {
    replacements.iter().any(Option::is_some).then(|| {
        predictors
            .iter()
            .enumerate()
            .map(|(field, own)| replacements.get(field).copied().flatten().or(*own))
            .collect()
    })
}

/// Whether every predictor of `predictors` (one set, of a struct of
/// `fields` fields) reads only fields decoded before it.
fn predictors_fit(predictors: &[Option<Predictor>], fields: usize) -> bool {
    predictors.iter().flatten().all(|p| match *p {
        // Inputs of a prediction must be decoded before it: they may
        // only be predicted from the elapsed time, which the codec
        // decodes first.
        Predictor::Integrate { rate, clock } => {
            let input_ok = |f: u16| {
                predictors
                    .get(f as usize)
                    .is_some_and(|&p| decode_tier(p) <= 1)
            };
            input_ok(rate)
                && (clock == Clock::Elapsed || matches!(clock, Clock::Field(f) if input_ok(f)))
        }
        // Only the rate's baseline is read: any rate will do.
        Predictor::Extrapolate { rate, clock } => {
            usize::from(rate) < fields
                && match clock {
                    Clock::Elapsed => true,
                    Clock::Field(f) => predictors
                        .get(f as usize)
                        .is_some_and(|&p| decode_tier(p) <= 1),
                }
        }
        // The position's new value is read: it must be decoded in
        // an earlier tier.
        Predictor::Differentiate {
            position, clock, ..
        } => {
            let early = |f: u16, most: u8| {
                predictors
                    .get(f as usize)
                    .is_some_and(|&p| decode_tier(p) <= most)
            };
            early(position, 2)
                && match clock {
                    Clock::Elapsed => true,
                    Clock::Field(f) => early(f, 1),
                }
        }
        // The clock's new value is read: it may only be predicted from the
        // elapsed time.
        Predictor::Countdown { clock } | Predictor::Run { clock, .. } => match clock {
            Clock::Elapsed => true,
            Clock::Field(f) => predictors
                .get(f as usize)
                .is_some_and(|&p| decode_tier(p) <= 1),
        },
        // The components and the gate are read new, and the field is
        // decoded with the context-predicted ones: they must be
        // unpredicted.
        Predictor::FixedSpeed {
            components, gate, ..
        } => components
            .into_iter()
            .chain(gate.map(|(field, _)| field))
            .all(|f| usize::from(f) < fields && predictors.get(f as usize) == Some(&None)),
        // The gravity and the ground are read new (and the ground's
        // baseline), and the field is decoded with the context-predicted
        // ones: they must be unpredicted.
        Predictor::Fall {
            gravity, ground, ..
        } => gravity
            .into_iter()
            .chain([ground.0])
            .all(|f| usize::from(f) < fields && predictors.get(f as usize) == Some(&None)),
        Predictor::Advance | Predictor::Stamp | Predictor::TickStamp { .. } => true,
    })
}

/// How a loose delta codes its fields (see [`ModelData::loose_predictors`]):
/// the [`FieldCoding`]s and decode-tier sets of the loose predictor set,
/// and the clock fields whose advance chooses it.
#[derive(Debug, Clone)]
pub(crate) struct LooseCoding {
    pub(crate) codings: Vec<FieldCoding>,
    pub(crate) tier_sets: [FieldSet; DECODE_TIERS],
    pub(crate) clocks: Vec<u16>,
}

/// The time fields the replacements read as clocks, sorted: a loose
/// delta codes them first, and takes the replacements only if each
/// advanced by one move (see [`ModelData::loose_predictors`]).
fn loose_clocks(replacements: &[Option<Predictor>]) -> Vec<u16> {
    let mut clocks: Vec<u16> = replacements
        .iter()
        .flatten()
        .filter_map(|predictor| match *predictor {
            Predictor::Integrate { clock, .. }
            | Predictor::Extrapolate { clock, .. }
            | Predictor::Differentiate { clock, .. }
            | Predictor::Countdown { clock }
            | Predictor::Run { clock, .. } => clock_field(clock),
            Predictor::Advance
            | Predictor::Stamp
            | Predictor::TickStamp { .. }
            | Predictor::FixedSpeed { .. }
            | Predictor::Fall { .. } => None,
        })
        .collect();
    clocks.sort_unstable();
    clocks.dedup();
    clocks
}

/// Whether every clock field of the replacements is coded alike in both
/// predictor sets and before anything else: not replaced itself, and
/// predicted from nothing but the elapsed time.
fn loose_clocks_fit(
    predictors: &[Option<Predictor>],
    replacements: &[Option<Predictor>],
    fields: usize,
) -> bool {
    loose_clocks(replacements).iter().all(|&clock| {
        let clock = usize::from(clock);
        clock < fields
            && replacements.get(clock).is_none_or(Option::is_none)
            && predictors.get(clock).is_some_and(|&p| decode_tier(p) <= 1)
    })
}

impl LooseCoding {
    /// The loose coding of a model with these grids, predictors, axes and
    /// replacements (`None` without replacements).
    pub(crate) fn of(
        grids: &[Option<Grid>],
        predictors: &[Option<Predictor>],
        axes: &[Option<u8>],
        replacements: &[Option<Predictor>],
    ) -> Option<Self> {
        let loose = loose_predictor_set(predictors, replacements)?;
        let mut codings = field_codings(grids, &loose, axes);
        for (coding, replacement) in codings.iter_mut().zip(replacements) {
            coding.replaced = replacement.is_some();
        }
        Some(LooseCoding {
            codings,
            tier_sets: tier_sets(&decode_tiers(&loose)),
            clocks: loose_clocks(replacements),
        })
    }
}

/// The rate fields the predictors read (not the positions a
/// [`Predictor::Differentiate`] reads), sorted.
fn rate_inputs(predictors: &[Option<Predictor>]) -> Vec<u16> {
    let mut rates: Vec<u16> = predictors
        .iter()
        .flatten()
        .filter_map(|predictor| match *predictor {
            Predictor::Integrate { rate, .. } | Predictor::Extrapolate { rate, .. } => Some(rate),
            Predictor::Differentiate { .. }
            | Predictor::Advance
            | Predictor::Stamp
            | Predictor::TickStamp { .. }
            | Predictor::Countdown { .. }
            | Predictor::Run { .. }
            | Predictor::FixedSpeed { .. }
            | Predictor::Fall { .. } => None,
        })
        .collect();
    rates.sort_unstable();
    rates.dedup();
    rates
}

/// The predictor inputs that are float rates (a velocity): those with a
/// learned magnitude, which only float fields get (see
/// [`ModelData::magnitudes`]). A model without magnitudes has none, on
/// both ends alike.
pub(crate) fn float_rates(
    predictors: &[Option<Predictor>],
    magnitudes: &[Option<i16>],
) -> Vec<u16> {
    rate_inputs(predictors)
        .into_iter()
        .filter(|&input| {
            magnitudes
                .get(usize::from(input))
                .is_some_and(Option::is_some)
        })
        .collect()
}

/// The elapsed time of an [`Predictor::Integrate`], in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Clock {
    /// The change of a time field of the same struct (Quake 3's `commandTime`).
    Field(u16),
    /// The elapsed time the caller gives in its
    /// [`DeltaContext`](crate::codec::DeltaContext) (snapshot time minus base time).
    Elapsed,
}

impl ModelData {
    /// All-zero counts for a struct of `fields` fields.
    pub fn empty(schema_fingerprint: u64, fields: usize) -> Self {
        let groups = fields.div_ceil(GROUP_FIELDS);
        ModelData {
            schema_fingerprint,
            pattern_key: None,
            last_group: vec![vec![0; groups + 1]; 2],
            groups: vec![vec![0; 256]; 2 * groups],
            values: vec![vec![0; VALUE_SYMBOLS]; fields * VALUE_CONTEXTS],
            grids: vec![None; fields],
            predictors: vec![None; fields],
            magnitudes: vec![None; fields],
            numbers: vec![vec![0; NUMBER_SYMBOLS]; NUMBER_CONTEXTS],
            spawn_key: None,
            axes: Vec::new(),
            dictionaries: Vec::new(),
            loose_predictors: Vec::new(),
            top_bits: Vec::new(),
            element_sets: Vec::new(),
            elements: Vec::new(),
            list_start: Vec::new(),
        }
    }

    /// The predictors of a delta whose baseline's float rates are loose
    /// (see [`ModelData::loose_predictors`]): each field's replacement, or
    /// its own. `None` for a model without replacements.
    pub fn loose_predictor_set(&self) -> Option<Vec<Option<Predictor>>> {
        loose_predictor_set(&self.predictors, &self.loose_predictors)
    }

    /// A stable 64-bit identity of the counts (FNV-1a), so two ends can check
    /// they hold the same model.
    pub fn fingerprint(&self) -> u64 {
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        let mut eat = |value: u64| {
            for byte in value.to_le_bytes() {
                hash ^= byte as u64;
                hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        eat(self.schema_fingerprint);
        for table in self
            .last_group
            .iter()
            .chain(&self.groups)
            .chain(&self.values)
            .chain(&self.numbers)
        {
            eat(table.len() as u64);
            table.iter().for_each(|&count| eat(count as u64));
        }
        // Models without dictionaries keep the fingerprints they had.
        for dictionary in self.dictionaries.iter().filter(|d| !d.is_empty()) {
            eat(dictionary.len() as u64);
            dictionary.iter().for_each(|&change| eat(u64::from(change)));
        }
        // So do models without the derived predictors; with them, the
        // decode order changes, and two ends must not take the models for
        // one another even were the counts alike.
        for (field, predictor) in self.predictors.iter().enumerate() {
            let words = match *predictor {
                Some(
                    predictor @ (Predictor::Extrapolate { .. }
                    | Predictor::Differentiate { .. }
                    | Predictor::Countdown { .. }
                    | Predictor::Run { .. }
                    | Predictor::Stamp
                    | Predictor::TickStamp { .. }
                    | Predictor::FixedSpeed { .. }),
                ) => predictor_words(predictor),
                _ => continue,
            };
            eat(field as u64);
            words.into_iter().for_each(&mut eat);
        }
        // A model with loose replacements decodes loose deltas in another
        // order: every replacement, whatever its kind, is part of it.
        if self.loose_predictors.iter().any(Option::is_some) {
            eat(LOOSE_MARK);
            for (field, predictor) in self.loose_predictors.iter().enumerate() {
                if let Some(predictor) = predictor {
                    eat(field as u64);
                    predictor_words(*predictor).into_iter().for_each(&mut eat);
                }
            }
        }
        // Models without top-bit counts keep their fingerprints.
        if self.top_bits.iter().any(|counts| !counts.is_empty()) {
            eat(TOP_BITS_MARK);
            for (field, counts) in self.top_bits.iter().enumerate() {
                if !counts.is_empty() {
                    eat(field as u64);
                    counts.iter().for_each(|&count| eat(u64::from(count)));
                }
            }
        }
        // Models without element-set dictionaries keep theirs too.
        if self.element_sets.iter().any(|sets| !sets.is_empty()) {
            eat(ELEMENTS_MARK);
            for (field, sets) in self.element_sets.iter().enumerate() {
                if !sets.is_empty() {
                    eat(field as u64);
                    eat(sets.len() as u64);
                    sets.iter().for_each(|&set| eat(u64::from(set)));
                }
            }
            for (field, counts) in self.elements.iter().enumerate() {
                if !counts.is_empty() {
                    eat(field as u64);
                    counts.iter().for_each(|&count| eat(u64::from(count)));
                }
            }
        }
        // And models without list-start counts.
        if !self.list_start.is_empty() {
            eat(LIST_START_MARK);
            self.list_start
                .iter()
                .for_each(|&count| eat(u64::from(count)));
        }
        hash
    }

    /// Fields the counts are for.
    pub fn fields(&self) -> usize {
        self.values.len() / VALUE_CONTEXTS
    }

    /// Pattern sets: the spawn sets, then one per held key class.
    pub fn pattern_sets(&self) -> usize {
        self.spawn_sets() + self.pattern_key.map_or(1, |key| key.held_classes())
    }

    /// Pattern sets of deltas from a spawn baseline: one per class of the
    /// [`ModelData::spawn_key`] (one without it). The first
    /// [`PatternSet`]s; the held ones follow.
    pub fn spawn_sets(&self) -> usize {
        self.spawn_key.map_or(1, |key| key.held_classes())
    }

    /// The key that picks the pattern set of a delta of `origin`.
    pub fn key_of(&self, origin: Origin) -> Option<PatternKey> {
        match origin {
            Origin::Spawn => self.spawn_key,
            Origin::Held => self.pattern_key,
        }
    }

    /// The pattern set of a delta of `origin` whose baseline holds `words`
    /// in the field and flag fields of that origin's key
    /// ([`ModelData::key_of`]; ignored without one).
    #[inline]
    pub fn pattern_set(&self, origin: Origin, words: [u32; 3]) -> PatternSet {
        pattern_set(self.key_of(origin), self.spawn_sets(), origin, words)
    }

    fn count(&mut self, context: Context, symbol: u8) {
        self.add(context, symbol, 1);
    }

    /// Counts the first raw bits after a value's class symbol in its
    /// field's tree ([`ModelData::top_bits`]); other symbols are ignored.
    fn count_top_bits(&mut self, traced: TracedSymbol) {
        if let Some((context, seen)) = top_bits_seen(&traced) {
            self.add(context, seen, 1);
        }
    }

    /// Adds `weight` along the path of the `bits` bits `seen` (see
    /// [`Context::TopBits`]) of field `field`'s tree for class symbol
    /// `class`, and to its deep positions' counts for the bits after the
    /// tree's (saturating; anything outside the model's shape is ignored).
    fn add_top_bits(&mut self, field: usize, class: u8, bits: u8, seen: u8, weight: u32) {
        let Some(index) = class.checked_sub(TOP_BITS_FIRST_SYMBOL) else {
            return;
        };
        let fields = self.fields();
        let bits = u32::from(bits).min(MODELLED_BITS);
        if usize::from(index) >= TOP_BITS_SYMBOLS || field >= fields || bits == 0 {
            return;
        }
        if self.top_bits.len() != fields {
            self.top_bits = vec![Vec::new(); fields];
        }
        let counts = &mut self.top_bits[field];
        if counts.is_empty() {
            *counts = vec![0; TOP_BITS_COUNTS];
        }
        let class_counts =
            &mut counts[usize::from(index) * 2 * CLASS_CHANCES..][..2 * CLASS_CHANCES];
        let mut node = 0;
        for below in 1..=bits {
            let bit = usize::from((seen >> (bits - below)) & 1);
            // The tree's nodes first, then one chance per deep position.
            let chance = if below <= TOP_BITS {
                node
            } else {
                TREE_NODES + (below - TOP_BITS - 1) as usize
            };
            let slot = &mut class_counts[2 * chance + bit];
            *slot = slot.saturating_add(weight);
            node = 2 * node + 1 + bit;
        }
    }

    /// Adds `weight` to the count of element-set symbol `symbol` of field
    /// `field` in deltas of `origin` (saturating), making the table on its
    /// first count; anything outside the model's shape is ignored.
    fn add_elements(&mut self, field: usize, origin: Origin, symbol: u8, weight: u32) {
        let fields = self.fields();
        if field >= fields || usize::from(symbol) >= ELEMENTS_SYMBOLS {
            return;
        }
        if self.elements.len() != 2 * fields {
            self.elements = vec![Vec::new(); 2 * fields];
        }
        let counts = &mut self.elements[elements_table(field, origin)];
        if counts.is_empty() {
            *counts = vec![0; ELEMENTS_SYMBOLS];
        }
        let slot = &mut counts[usize::from(symbol)];
        *slot = slot.saturating_add(weight);
    }

    /// Adds `weight` to the count of `symbol` in `context` (saturating;
    /// a context or symbol outside the model's shape is ignored).
    pub(crate) fn add(&mut self, context: Context, symbol: u8, weight: u32) {
        if let Context::TopBits(field, class, bits) = context {
            self.add_top_bits(field, class, bits, symbol, weight);
            return;
        }
        if let Context::Elements(field, origin) = context {
            self.add_elements(field, origin, symbol, weight);
            return;
        }
        if context == Context::ListStart {
            // Made on the first count, as a trainer's lists give it.
            if usize::from(symbol) < LIST_START_SYMBOLS {
                self.list_start.resize(LIST_START_SYMBOLS, 0);
                let slot = &mut self.list_start[usize::from(symbol)];
                *slot = slot.saturating_add(weight);
            }
            return;
        }
        let Some((kind, index)) = self.table_of(context) else {
            return;
        };
        let tables = match kind {
            TableKind::LastGroup => &mut self.last_group,
            TableKind::Groups => &mut self.groups,
            TableKind::Values => &mut self.values,
            TableKind::Numbers => &mut self.numbers,
            TableKind::Elements => &mut self.elements,
            TableKind::ListStart => return,
        };
        if let Some(slot) = tables
            .get_mut(index)
            .and_then(|t| t.get_mut(usize::from(symbol)))
        {
            *slot = slot.saturating_add(weight);
        }
    }

    /// Where `context` counts: its kind of table and the table's index
    /// (`None` outside the model's shape).
    pub(crate) fn table_of(&self, context: Context) -> Option<(TableKind, usize)> {
        let groups = self.groups.len() / self.pattern_sets().max(1);
        let (kind, index, len) = match context {
            Context::LastGroup(set) => (
                TableKind::LastGroup,
                usize::from(set),
                self.last_group.len(),
            ),
            Context::Group(set, g) if g < groups => (
                TableKind::Groups,
                usize::from(set) * groups + g,
                self.groups.len(),
            ),
            Context::Group(..) => return None,
            Context::Value(f, c) => (
                TableKind::Values,
                f * VALUE_CONTEXTS + c as usize,
                self.values.len(),
            ),
            Context::EntityNumber(c) => (TableKind::Numbers, usize::from(c), self.numbers.len()),
            Context::TopBits(..) => return None,
            Context::Elements(f, origin) => {
                let index = elements_table(f, origin);
                if self.elements.get(index).is_none_or(|t| t.is_empty()) {
                    return None;
                }
                (TableKind::Elements, index, self.elements.len())
            }
            Context::ListStart => {
                return (!self.list_start.is_empty()).then_some((TableKind::ListStart, 0))
            }
        };
        (index < len).then_some((kind, index))
    }
}

/// One context's code: the Huffman code words for writing, and a trie for
/// reading them back through any [`BitSource`] (the native codec may run
/// inside a Huffman bitstream, where raw bits cannot be peeked ahead).
#[derive(Debug, Clone)]
pub struct SymbolCode {
    /// The decoding side, inline: a model's symbol codes sit side by side
    /// in arrays, and a short code word is read from this alone.
    table: DecodeTable,
    /// The code words (2 KB), behind a pointer for the same reason.
    words: Box<[CodeWord; 256]>,
    /// `trie[node][bit]`: a positive value is a child node index, a negative
    /// one is `-(symbol + 1)`, zero is "no code word goes this way".
    trie: Vec<[i16; 2]>,
    /// The weights the code was built from (smoothed counts), behind a
    /// pointer: what an ideal coder with this model would price symbols by.
    weights: Box<[u32; 256]>,
    /// Their sum.
    total_weight: u64,
    /// The weights quantised for the range coder ([`crate::range::quantize`]):
    /// running sums of [`crate::range::PROB_TOTAL`].
    cumulative: Box<[u32; 257]>,
}

impl SymbolCode {
    fn new(code: HuffmanCode, weights: [u32; 256], alphabet: usize) -> Self {
        let mut trie = vec![[0i16; 2]];
        for (symbol, word) in code.code_words().iter().enumerate() {
            let mut node = 0usize;
            for i in 0..word.len {
                let bit = usize::from(word.bit(i));
                if i + 1 == word.len {
                    trie[node][bit] = -(symbol as i16) - 1;
                } else {
                    if trie[node][bit] <= 0 {
                        trie.push([0; 2]);
                        trie[node][bit] = (trie.len() - 1) as i16;
                    }
                    node = trie[node][bit] as usize;
                }
            }
        }
        SymbolCode {
            table: code.decode_table(),
            words: Box::new(*code.code_words()),
            trie,
            total_weight: weights.iter().map(|&w| u64::from(w)).sum(),
            cumulative: crate::range::quantize(&weights, alphabet),
            weights: Box::new(weights),
        }
    }

    /// `symbol`'s span among the range coder's frequencies (cumulative,
    /// frequency): `None` for a symbol the model gives no weight.
    #[inline]
    pub fn span(&self, symbol: u8) -> Option<(u32, u32)> {
        let s = usize::from(symbol);
        let (start, end) = (self.cumulative[s], self.cumulative[s + 1]);
        (end > start).then_some((start, end - start))
    }

    /// The symbol whose span holds `target` (below
    /// [`crate::range::PROB_TOTAL`]), with its span.
    #[inline]
    pub fn symbol_at(&self, target: u32) -> (u8, u32, u32) {
        // The last running sum at or below the target, among symbols with
        // a span: the first sum above it, less one.
        let above = self.cumulative[1..].partition_point(|&sum| sum <= target);
        let symbol = above.min(255);
        let (start, end) = (self.cumulative[symbol], self.cumulative[symbol + 1]);
        (symbol as u8, start, end - start)
    }

    /// The weight the code gives `symbol` (its smoothed count; 0 for a
    /// symbol without a code word).
    pub fn weight(&self, symbol: u8) -> u32 {
        self.weights[usize::from(symbol)]
    }

    /// The sum of every symbol's [`weight`](Self::weight).
    pub fn total_weight(&self) -> u64 {
        self.total_weight
    }

    /// What an ideal entropy coder with this code's model spends on
    /// `symbol`: `-log2 p`, with `p` as the Huffman code was built from the
    /// weights (a symbol of weight 0 weighs 1/256 of a weight unit there,
    /// so it stays codable). A Huffman code word is at least one bit and a
    /// whole number of them; the difference is the coder's loss.
    pub fn ideal_bits(&self, symbol: u8) -> f64 {
        let unseen = self.weights.iter().filter(|&&w| w == 0).count() as f64;
        let total = self.total_weight as f64 * 256.0 + unseen;
        let weight = match self.weight(symbol) {
            0 => 1.0,
            w => f64::from(w) * 256.0,
        };
        (total / weight).log2()
    }

    /// `symbol`'s code word (empty for a symbol without one).
    #[inline]
    pub fn word(&self, symbol: u8) -> CodeWord {
        self.words[usize::from(symbol)]
    }

    /// Length of `symbol`'s code word, in bits.
    pub fn bits(&self, symbol: u8) -> u32 {
        u32::from(self.words[usize::from(symbol)].len)
    }

    /// Writes `symbol`'s code word.
    pub fn encode<S: BitSink + ?Sized>(&self, sink: &mut S, symbol: u8) -> Result<(), BitError> {
        let word = self.words[usize::from(symbol)];
        sink.put_bits(word.bits, u32::from(word.len))
    }

    /// Reads one code word: through the code's lookup tables when the
    /// source can look ahead, else bit by bit through the trie.
    #[inline(always)]
    pub fn decode<S: BitSource + ?Sized>(&self, source: &mut S) -> Result<u8, BitError> {
        if let Some((window, left)) = source.peek_window() {
            match self.table.lookup(window) {
                Ok((symbol, len)) if len as usize <= left => {
                    source.skip_bits(len)?;
                    return Ok(symbol);
                }
                Err(len) if len as usize <= left => {
                    return Err(BitError::InvalidCode {
                        position: source.bits_read(),
                    })
                }
                // The input ends inside the code word: the walk below
                // reports it exactly as it always has.
                _ => {}
            }
        }
        self.decode_bitwise(source)
    }

    /// The symbol and length of the code word at the start of `window`
    /// (upcoming bits, low bit first), if the bits found there form one:
    /// for a reader that has checked nothing yet, which must still check
    /// that the word's length is within its input.
    #[inline(always)]
    pub(crate) fn leaf(&self, window: u32) -> Option<(u8, u32)> {
        self.table.lookup(window).ok()
    }

    /// Reads one code word bit by bit.
    #[cold]
    #[inline(never)]
    fn decode_bitwise<S: BitSource + ?Sized>(&self, source: &mut S) -> Result<u8, BitError> {
        let position = source.bits_read();
        let mut node = 0usize;
        loop {
            let bit = usize::from(source.get_bit()?);
            match self.trie[node][bit] {
                0 => return Err(BitError::InvalidCode { position }),
                next if next > 0 => node = next as usize,
                leaf => return Ok((-(leaf + 1)) as u8),
            }
        }
    }
}

/// The models a game commits for its two networked structs: counts for the
/// entity type and for the player-state type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelPair {
    /// For the entity type.
    pub entity: ModelData,
    /// For the player-state type.
    pub player: ModelData,
}

impl ModelPair {
    /// Builds both models, checking that each was trained on the schema of
    /// `E` and `P` respectively: counts taken on another layout would point
    /// at the wrong fields.
    pub fn build<E: NetFields, P: NetFields>(
        self,
    ) -> Result<(Arc<NativeModel>, Arc<NativeModel>), BitError> {
        Ok((
            Arc::new(NativeModel::for_table(self.entity, &E::TABLE)?),
            Arc::new(NativeModel::for_table(self.player, &P::TABLE)?),
        ))
    }

    /// Builds the pair a crate commits (`decoded` from its embedded bytes),
    /// meant to run once per program. A pair that does not fit (bytes of an
    /// older model format, or counts trained on another layout) leaves the
    /// native codec without a model: still correct, but larger on the wire
    /// (the arena's default match once sent 45% more that way). That is
    /// logged as a `tracing` warning naming `source`, not left silent, and
    /// `None` is returned.
    pub fn load_committed<E: NetFields, P: NetFields>(
        source: &str,
        decoded: Result<ModelPair, String>,
    ) -> Option<(Arc<NativeModel>, Arc<NativeModel>)> {
        let built = decoded.and_then(|pair| pair.build::<E, P>().map_err(|e| e.to_string()));
        match built {
            Ok(models) => Some(models),
            Err(error) => {
                tracing::warn!(
                    source,
                    %error,
                    "committed native models do not load; the native codec codes without them"
                );
                None
            }
        }
    }
}

/// Huffman codes for every context of one struct, ready to code with.
#[derive(Debug, Clone)]
pub struct NativeModel {
    data: ModelData,
    id: u64,
    /// Every field a predictor reads, once each, in field order.
    inputs: Vec<u16>,
    /// The inputs that are float rates (see [`float_rates`]).
    float_rates: Vec<u16>,
    /// Per field: its [`decode_tier`].
    tiers: Vec<u8>,
    /// The fields of each decode tier, as sets.
    tier_sets: [FieldSet; DECODE_TIERS],
    /// Per field: its predictor, tier and grid step together.
    codings: Vec<FieldCoding>,
    /// How a delta from a baseline with loose rates codes its fields
    /// ([`ModelData::loose_predictors`]), if the model replaces any.
    loose: Option<LooseCoding>,
    /// Groups per pattern set.
    groups_per_set: usize,
    /// Per [`PatternSet`].
    last_group: Vec<SymbolCode>,
    /// Per [`PatternSet`], all its groups.
    groups: Vec<SymbolCode>,
    /// [`VALUE_CONTEXTS`] per field.
    values: Vec<SymbolCode>,
    /// Per [`number_context`].
    numbers: Vec<SymbolCode>,
    /// [`NativeModel::longest_number_code`], computed once.
    longest_number_code: u32,
    /// [`NativeModel::longest_number_end`], computed once.
    longest_number_end: u32,
    /// [`NativeModel::anchor_fields`], found once.
    anchor_fields: Option<[u16; AXES]>,
    /// Per field (or empty: none), the chances its top-bit counts make
    /// ([`ModelData::top_bits`]).
    top_bits: Vec<Option<TopBitChances>>,
    /// Per table of [`ModelData::elements`], its [`Context::Elements`]
    /// code, if it has counts and its field a dictionary.
    elements: Vec<Option<SymbolCode>>,
    /// The chance of [`LIST_ENTRIES`] ([`NativeModel::list_start`]), if
    /// the model has list-start counts.
    list_start: Option<Chance>,
}

impl NativeModel {
    /// Builds the codes. The counts are checked for shape (bounded sizes,
    /// consistent with a struct of `values.len()` fields), since model data
    /// may come from a file.
    pub fn new(data: ModelData) -> Result<Self, BitError> {
        let fields = data.fields();
        let groups = fields.div_ceil(GROUP_FIELDS);
        let shape_ok = fields <= crate::table::MAX_FIELDS
            && data.values.len() == fields * VALUE_CONTEXTS
            && [data.pattern_key, data.spawn_key]
                .iter()
                .flatten()
                .all(|key| {
                    usize::from(key.field) < fields
                        && key.flag.is_none_or(|flag| usize::from(flag) < fields)
                        && key
                            .second_flag
                            .is_none_or(|flag| usize::from(flag) < fields)
                        && (1..=PatternKey::MAX_CLASSES).contains(&key.classes)
                })
            && data.groups.len() == data.pattern_sets() * groups
            && data.last_group.len() == data.pattern_sets()
            && data.last_group.iter().all(|t| t.len() == groups + 1)
            && data.groups.iter().all(|g| g.len() == 256)
            && data.values.iter().all(|v| v.len() == VALUE_SYMBOLS)
            && data.grids.len() == fields
            && data.predictors.len() == fields
            && (data.axes.is_empty() || data.axes.len() == fields)
            && (data.dictionaries.is_empty() || data.dictionaries.len() == fields)
            && data.dictionaries.iter().all(|d| {
                d.len() <= DICTIONARY_LEN
                    && d.iter().all(|&change| change != 0)
                    && d.iter().enumerate().all(|(i, c)| !d[..i].contains(c))
            })
            && data
                .axes
                .iter()
                .flatten()
                .all(|&axis| usize::from(axis) < AXES)
            && data.magnitudes.len() == fields
            && data.numbers.len() == NUMBER_CONTEXTS
            && data.numbers.iter().all(|t| t.len() == NUMBER_SYMBOLS)
            && data.grids.iter().flatten().all(|g| g.step().is_some())
            && predictors_fit(&data.predictors, fields)
            && (data.loose_predictors.is_empty() || data.loose_predictors.len() == fields)
            && data
                .loose_predictor_set()
                .is_none_or(|loose| predictors_fit(&loose, fields))
            && loose_clocks_fit(&data.predictors, &data.loose_predictors, fields)
            && (data.top_bits.is_empty() || data.top_bits.len() == fields)
            && data
                .top_bits
                .iter()
                .all(|counts| counts.is_empty() || counts.len() == TOP_BITS_COUNTS)
            && (data.element_sets.is_empty() || data.element_sets.len() == fields)
            && data.element_sets.iter().all(|sets| {
                sets.len() <= ELEMENT_SETS_LEN
                    && sets.iter().all(|&set| set != 0)
                    && sets.iter().enumerate().all(|(i, s)| !sets[..i].contains(s))
            })
            && (data.elements.is_empty() || data.elements.len() == 2 * fields)
            && data
                .elements
                .iter()
                .all(|counts| counts.is_empty() || counts.len() == ELEMENTS_SYMBOLS)
            && (data.list_start.is_empty() || data.list_start.len() == LIST_START_SYMBOLS);
        if !shape_ok {
            return Err(BitError::invalid(
                "native model",
                0,
                "counts do not have the shape of a model",
            ));
        }
        // A loose delta's predictors read their inputs from the baseline
        // too: the decoder saves both sets' inputs.
        let inputs = match data.loose_predictor_set() {
            Some(loose) => predictor_inputs(&[data.predictors.as_slice(), &loose].concat()),
            None => predictor_inputs(&data.predictors),
        };
        let float_rates = float_rates(&data.predictors, &data.magnitudes);
        let codes = |len: usize, build: fn(&ModelData, usize) -> Result<SymbolCode, BitError>| {
            (0..len)
                .map(|index| build(&data, index))
                .collect::<Result<Vec<_>, _>>()
        };
        let last_group = codes(data.last_group.len(), last_group_code)?;
        let groups_code = codes(data.groups.len(), group_code)?;
        let values = codes(data.values.len(), value_code)?;
        let numbers = codes(data.numbers.len(), number_code)?;
        let elements = (0..data.elements.len())
            .map(|table| elements_code(&data, table))
            .collect::<Result<Vec<_>, _>>()?;
        let list_start = list_start_chance(&data);
        let mut model = NativeModel {
            id: data.fingerprint(),
            anchor_fields: {
                let mut fields = [None; AXES];
                for (field, axis) in data.axes.iter().enumerate() {
                    if let Some(axis) = axis {
                        fields[usize::from(*axis)] = Some(field as u16);
                    }
                }
                match fields {
                    [Some(x), Some(y), Some(z)] => Some([x, y, z]),
                    _ => None,
                }
            },
            inputs,
            float_rates,
            tiers: decode_tiers(&data.predictors),
            tier_sets: tier_sets(&decode_tiers(&data.predictors)),
            codings: field_codings(&data.grids, &data.predictors, &data.axes),
            loose: LooseCoding::of(
                &data.grids,
                &data.predictors,
                &data.axes,
                &data.loose_predictors,
            ),
            groups_per_set: groups,
            last_group,
            groups: groups_code,
            values,
            numbers,
            longest_number_code: 0,
            longest_number_end: 0,
            top_bits: top_bit_chances(&data),
            elements,
            list_start,
            data,
        };
        model.measure_numbers();
        Ok(model)
    }

    /// Finds the longest number codes (see
    /// [`NativeModel::longest_number_code`]) once the codes are built.
    fn measure_numbers(&mut self) {
        self.longest_number_code = self
            .numbers
            .iter()
            .flat_map(|code| (0..NUMBER_SYMBOLS as u8).map(|s| code.bits(s)))
            .max()
            .unwrap_or(0);
        // Context 0 holds no end: an empty list is a bit of its own.
        self.longest_number_end = self
            .numbers
            .iter()
            .skip(1)
            .map(|code| code.bits(NUMBER_END))
            .max()
            .unwrap_or(0);
    }

    /// This model with counts `data` — its own with some added, as
    /// [`Adaptation`] adds a stream's — rebuilding only the codes of the
    /// tables `touched` marks (their smoothing reads the new counts of
    /// every table they pool with); the others keep their codes. Much
    /// cheaper than [`NativeModel::new`] when a few tables changed, and as
    /// deterministic.
    pub(crate) fn with_counts(
        &self,
        data: ModelData,
        touched: &Touched,
    ) -> Result<NativeModel, BitError> {
        let same_shape = data.last_group.len() == self.last_group.len()
            && data.groups.len() == self.groups.len()
            && data.values.len() == self.values.len()
            && data.numbers.len() == self.numbers.len()
            && data.elements.len() == self.elements.len()
            && data
                .elements
                .iter()
                .zip(&self.data.elements)
                .all(|(new, old)| new.is_empty() == old.is_empty())
            && data.element_sets == self.data.element_sets
            && data.list_start.len() == self.data.list_start.len();
        if !same_shape {
            return NativeModel::new(data);
        }
        let mut next = NativeModel {
            id: data.fingerprint(),
            data,
            ..self.clone()
        };
        let rebuild =
            |codes: &mut [SymbolCode],
             touched: &[bool],
             data: &ModelData,
             build: fn(&ModelData, usize) -> Result<SymbolCode, BitError>| {
                for (index, code) in codes.iter_mut().enumerate() {
                    if touched.get(index).copied().unwrap_or(false) {
                        *code = build(data, index)?;
                    }
                }
                Ok::<(), BitError>(())
            };
        rebuild(
            &mut next.last_group,
            &touched.last_group,
            &next.data,
            last_group_code,
        )?;
        rebuild(&mut next.groups, &touched.groups, &next.data, group_code)?;
        rebuild(&mut next.values, &touched.values, &next.data, value_code)?;
        rebuild(&mut next.numbers, &touched.numbers, &next.data, number_code)?;
        if touched.list_start {
            next.list_start = list_start_chance(&next.data);
        }
        for (table, code) in next.elements.iter_mut().enumerate() {
            if touched.elements.get(table).copied().unwrap_or(false) {
                *code = elements_code(&next.data, table)?;
            }
        }
        next.top_bits
            .resize(next.data.top_bits.len().max(next.top_bits.len()), None);
        for (field, counts) in next.data.top_bits.iter().enumerate() {
            if touched.top_bits.get(field).copied().unwrap_or(false) {
                next.top_bits[field] = top_bit_chances_of(counts);
            }
        }
        next.measure_numbers();
        Ok(next)
    }

    /// Like [`NativeModel::new`], for a struct with table `table`: the counts
    /// must have been taken on its schema.
    pub fn for_table(data: ModelData, table: &FieldTable) -> Result<Self, BitError> {
        if data.schema_fingerprint != table.schema().fingerprint() {
            return Err(BitError::invalid(
                "native model",
                0,
                format!("trained on another schema than {}'s", table.name),
            ));
        }
        Self::new(data)
    }

    /// A model of `T` counted on the deltas `pairs` gives, `(base, new)`,
    /// each in the default context (no elapsed time, not from a spawn
    /// baseline), without predictors or learned grids: the quickest way
    /// to a model of a game's own struct from a stream of its changes.
    /// [`ModelTrainer`] does more (predictors, pattern keys, grids, entity
    /// lists).
    pub fn train_on_deltas<T: NetFields>(
        pairs: impl IntoIterator<Item = (T, T)>,
    ) -> Result<Self, BitError> {
        let schema = T::TABLE.schema();
        let mut trainer = ModelTrainer::new(schema.fingerprint(), schema.fields.len());
        for (base, new) in pairs {
            trainer.observe(&base, &new, &crate::codec::DeltaContext::default());
        }
        Self::for_table(trainer.finish(), &T::TABLE)
    }

    /// The chances for the bits below `field`'s values' leading ones
    /// ([`ModelData::top_bits`]), if the model has any for it.
    #[inline]
    pub fn top_bits(&self, field: usize) -> Option<&TopBitChances> {
        self.top_bits.get(field)?.as_ref()
    }

    /// The grid of field `field`, if any.
    pub fn grid(&self, field: usize) -> Option<Grid> {
        self.data.grids.get(field).copied().flatten()
    }

    /// The predictor of field `field`, if any.
    pub fn predictor(&self, field: usize) -> Option<Predictor> {
        self.data.predictors.get(field).copied().flatten()
    }

    /// Per field, when its value is decoded (see [`decode_tier`]).
    pub fn decode_tiers(&self) -> &[u8] {
        &self.tiers
    }

    /// Per field, how the native codec codes it (see [`FieldCoding`]),
    /// worked out once.
    pub fn field_codings(&self) -> &[FieldCoding] {
        &self.codings
    }

    /// How a delta from a baseline with loose rates codes its fields, if
    /// the model replaces any predictor for it.
    pub(crate) fn loose_coding(&self) -> Option<&LooseCoding> {
        self.loose.as_ref()
    }

    /// The fields holding each axis of a position ([`ModelData::axes`]), if
    /// the model declares all [`AXES`] of them.
    pub fn anchor_fields(&self) -> Option<[u16; AXES]> {
        self.anchor_fields
    }

    /// The fields of each decode tier (see [`decode_tier`]), as sets: an
    /// encoder takes a delta's values tier by tier by intersecting its
    /// changed set with each.
    pub fn tier_sets(&self) -> &[FieldSet; DECODE_TIERS] {
        &self.tier_sets
    }

    /// Every field a predictor reads (a velocity, a time), once each, in
    /// field order.
    pub fn predictor_inputs(&self) -> &[u16] {
        &self.inputs
    }

    /// The predictor inputs that are float rates, in field order.
    pub(crate) fn float_rates(&self) -> &[u16] {
        &self.float_rates
    }

    /// The counts the model was built from.
    pub fn data(&self) -> &ModelData {
        &self.data
    }

    /// [`ModelData::fingerprint`] of the counts.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The [`Context::Group`] codes of pattern set `set`, by group: what
    /// [`code`](Self::code) gives for each group, looked up once for a
    /// whole changed set (empty, or short, where the model has none).
    #[inline]
    pub(crate) fn group_codes(&self, set: PatternSet) -> &[SymbolCode] {
        let start = usize::from(set) * self.groups_per_set;
        let end = (start + self.groups_per_set).min(self.groups.len());
        self.groups.get(start..end).unwrap_or(&[])
    }

    /// The code for a context (`None` for a context outside the model's shape).
    // Inline: every symbol the native decoder reads looks its code up here,
    // and out of line the match costs a call per symbol (≈ 9 M instructions
    // over the duel's 17,757 snapshots).
    #[inline]
    pub fn code(&self, context: Context) -> Option<&SymbolCode> {
        match context {
            Context::LastGroup(set) => self.last_group.get(usize::from(set)),
            Context::Group(set, g) => {
                let groups = self.groups_per_set;
                (g < groups)
                    .then(|| self.groups.get(usize::from(set) * groups + g))
                    .flatten()
            }
            Context::Value(f, c) => self.values.get(f * VALUE_CONTEXTS + c as usize),
            Context::EntityNumber(c) => self.numbers.get(usize::from(c)),
            Context::TopBits(..) => None,
            Context::Elements(f, origin) => self.elements.get(elements_table(f, origin))?.as_ref(),
            // A decision, not a symbol: see `NativeModel::list_start`.
            Context::ListStart => None,
        }
    }

    /// How likely an entity list is to have entries, if the model counts
    /// [`Context::ListStart`]: the native codec writes a list's start as a
    /// [`BitSink::put_decision`] with it, one bit in a bit stream (a code
    /// word of a two-answer symbol could only be longer) and priced by
    /// the chance in a range-coded one.
    pub fn list_start(&self) -> Option<Chance> {
        self.list_start
    }

    /// The bits a traced `symbol` of `context` takes in a bit stream: its
    /// code word's, or one for a list's start when the model makes it a
    /// decision ([`NativeModel::list_start`]). `None` for a context the
    /// model does not code.
    pub fn stream_bits(&self, context: Context, symbol: u8) -> Option<u32> {
        match (context, self.list_start) {
            (Context::ListStart, Some(_)) => Some(1),
            _ => self.code(context).map(|code| code.bits(symbol)),
        }
    }

    /// The longest code word of any [`Context::EntityNumber`] symbol: with
    /// the bits below a gap's leading one, what bounds an entry's number
    /// wherever it stands in a list.
    pub fn longest_number_code(&self) -> u32 {
        self.longest_number_code
    }

    /// The longest code word of a non-empty list's end: what bounds the end
    /// marker before the list is written.
    pub fn longest_number_end(&self) -> u32 {
        self.longest_number_end
    }
}

/// Which tables of a [`ModelData`] changed: what
/// [`NativeModel::with_counts`] rebuilds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Touched {
    pub(crate) last_group: Vec<bool>,
    pub(crate) groups: Vec<bool>,
    pub(crate) values: Vec<bool>,
    pub(crate) numbers: Vec<bool>,
    /// Per field, whether its top-bit counts changed.
    pub(crate) top_bits: Vec<bool>,
    /// Per table of [`ModelData::elements`], whether its counts changed.
    pub(crate) elements: Vec<bool>,
    /// Whether the list-start counts changed.
    pub(crate) list_start: bool,
}

impl Touched {
    /// Nothing touched, for counts shaped like `data`.
    pub(crate) fn none(data: &ModelData) -> Self {
        Touched {
            last_group: vec![false; data.last_group.len()],
            groups: vec![false; data.groups.len()],
            values: vec![false; data.values.len()],
            numbers: vec![false; data.numbers.len()],
            top_bits: vec![false; data.fields()],
            elements: vec![false; data.elements.len()],
            list_start: false,
        }
    }

    /// Marks the table of `context` (in counts shaped like `data`), and
    /// every table whose smoothing pools it: a table's code reads its
    /// pool's counts too.
    pub(crate) fn mark(&mut self, data: &ModelData, context: Context) {
        if let Context::TopBits(field, ..) = context {
            if let Some(t) = self.top_bits.get_mut(field) {
                *t = true;
            }
            return;
        }
        if let Some((kind, index)) = data.table_of(context) {
            self.mark_table(data, kind, index);
        }
    }

    /// Marks table `index` of `kind` and every table pooling it (see
    /// [`Touched::mark`]).
    pub(crate) fn mark_table(&mut self, data: &ModelData, kind: TableKind, index: usize) {
        let spawn_sets = data.spawn_sets();
        let groups = data.groups.len() / data.pattern_sets().max(1);
        let same_half = |a: usize, b: usize| (a < spawn_sets) == (b < spawn_sets);
        match kind {
            TableKind::LastGroup => {
                for (set, t) in self.last_group.iter_mut().enumerate() {
                    *t |= same_half(set, index);
                }
            }
            TableKind::Groups => {
                let (set, g) = (index / groups.max(1), index % groups.max(1));
                for (i, t) in self.groups.iter_mut().enumerate() {
                    *t |= i % groups.max(1) == g && same_half(i / groups.max(1), set);
                }
            }
            TableKind::Values => {
                let field = index / VALUE_CONTEXTS;
                for t in self
                    .values
                    .iter_mut()
                    .skip(field * VALUE_CONTEXTS)
                    .take(VALUE_CONTEXTS)
                {
                    *t = true;
                }
            }
            TableKind::Numbers => self.numbers.iter_mut().for_each(|t| *t = true),
            TableKind::Elements => {
                if let Some(t) = self.elements.get_mut(index) {
                    *t = true;
                }
            }
            TableKind::ListStart => self.list_start = true,
        }
    }
}

/// Which kind of table of a [`ModelData`] a context counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TableKind {
    LastGroup,
    Groups,
    Values,
    Numbers,
    Elements,
    ListStart,
}

/// The code of counts `weights` (already smoothed) of a context whose
/// symbols are below `alphabet`.
pub(crate) fn code_of(weights: [u32; 256], alphabet: usize) -> Result<SymbolCode, BitError> {
    HuffmanCode::from_frequencies(&weights)
        .map(|code| SymbolCode::new(code, weights, alphabet))
        .map_err(|e| BitError::invalid("native model", 0, format!("cannot build a code: {e}")))
}

/// The sets of the same kind as `set` (spawn sets back off to all spawn
/// deltas, held sets to all held deltas).
fn half_of(data: &ModelData, set: usize) -> std::ops::Range<usize> {
    let spawn_sets = data.spawn_sets();
    if set < spawn_sets {
        0..spawn_sets
    } else {
        spawn_sets..data.pattern_sets()
    }
}

/// The code of [`Context::LastGroup`] in pattern set `set`.
fn last_group_code(data: &ModelData, set: usize) -> Result<SymbolCode, BitError> {
    let pooled = smooth::pooled(&data.last_group[half_of(data, set)]);
    code_of(
        smooth::last_group(&data.last_group[set], &pooled),
        data.last_group[set].len(),
    )
}

/// The code of the group pattern table `index` (set-major).
fn group_code(data: &ModelData, index: usize) -> Result<SymbolCode, BitError> {
    let groups = data.fields().div_ceil(GROUP_FIELDS).max(1);
    let (set, g) = (index / groups, index % groups);
    let tables: Vec<Vec<u32>> = half_of(data, set)
        .map(|set| data.groups[set * groups + g].clone())
        .collect();
    code_of(
        smooth::pattern(&data.groups[index], &smooth::pooled(&tables)),
        256,
    )
}

/// The code of value table `index` (field-major, [`VALUE_CONTEXTS`] per
/// field).
fn value_code(data: &ModelData, index: usize) -> Result<SymbolCode, BitError> {
    let field = index / VALUE_CONTEXTS;
    let start = field * VALUE_CONTEXTS;
    let pooled = smooth::pooled(&data.values[start..start + VALUE_CONTEXTS]);
    // One float step at the field's magnitude is 2^(e - 23): a change of
    // 2^i units spans about 2^(i + 23 - e) steps.
    let shift = data.magnitudes[field].map(|e| (23 - i32::from(e)).clamp(0, 32) as usize);
    code_of(
        smooth::value(&data.values[index], &pooled, shift),
        VALUE_SYMBOLS,
    )
}

/// The code of [`Context::EntityNumber`] context `index`.
fn number_code(data: &ModelData, index: usize) -> Result<SymbolCode, BitError> {
    code_of(
        smooth::numbers(&data.numbers[index], &smooth::pooled(&data.numbers)),
        NUMBER_SYMBOLS,
    )
}

/// The [`Context::Elements`] code of table `table` of
/// [`ModelData::elements`]: `None` unless it has counts and its field a
/// dictionary.
fn elements_code(data: &ModelData, table: usize) -> Result<Option<SymbolCode>, BitError> {
    let sets = data.element_sets.get(table / 2).map_or(0, Vec::len);
    match data.elements.get(table) {
        Some(counts) if !counts.is_empty() && sets > 0 => {
            code_of(smooth::elements(counts, sets), ELEMENTS_SYMBOLS).map(Some)
        }
        _ => Ok(None),
    }
}

/// The chance of [`LIST_ENTRIES`] by the list-start counts, each answer
/// with half a count more (so neither is ever certain): `None` without
/// counts.
fn list_start_chance(data: &ModelData) -> Option<Chance> {
    let [empty, entries] = data.list_start[..] else {
        return None;
    };
    let (empty, entries) = (f64::from(empty) + 0.5, f64::from(entries) + 0.5);
    let yes = (entries / (empty + entries) * 65_536.0)
        .round()
        .clamp(1.0, 65_535.0);
    Some(Chance::in_65536(yes as u16))
}

/// Counts the symbols the native codec would write for a stream of deltas,
/// and learns each float field's grid.
#[derive(Debug, Clone)]
pub struct ModelTrainer {
    data: ModelData,
    grid_evidence: Vec<GridEvidence>,
    /// Per field, how often each integer change was seen (see
    /// [`ModelTrainer::learn_changes`]).
    change_counts: Vec<std::collections::HashMap<u32, u32>>,
    /// Per array field, how often each set of changed elements was seen
    /// (see [`ModelTrainer::learn_changes`]).
    element_set_counts: Vec<std::collections::HashMap<u32, u32>>,
}

/// Primes whose powers a learned grid's odd factor may contain.
const GRID_PRIMES: [u32; 5] = [3, 5, 7, 11, 13];
/// Highest power of each prime considered.
const GRID_POWERS: usize = 4;
/// Share of a field's values a grid must hold.
const GRID_COVERAGE: f64 = 0.99;
/// Finest step kept (2^-14): finer grids are no cheaper than the float bits.
const GRID_MIN_EXPONENT: i32 = -14;

/// What a field's non-zero float values say about a grid: how many had each
/// lowest exponent, and how many had odd parts divisible by each small prime
/// power. A grid is then chosen by majority, so stray values off the grid
/// (Quake 3 sends a few) do not destroy it.
#[derive(Debug, Clone)]
struct GridEvidence {
    values: u64,
    /// `exponents[e - MIN_EXPONENT]`: values whose lowest set bit is 2^e.
    exponents: Vec<u64>,
    /// `magnitudes[e - MIN_EXPONENT]`: values whose highest set bit is 2^e.
    magnitudes: Vec<u64>,
    divisible: [[u64; GRID_POWERS]; GRID_PRIMES.len()],
}

impl GridEvidence {
    const MIN_EXPONENT: i32 = -149;
    const MAX_EXPONENT: i32 = 104;
    const MAX_MAGNITUDE: i32 = 127;

    fn new() -> Self {
        GridEvidence {
            values: 0,
            exponents: vec![0; (Self::MAX_EXPONENT - Self::MIN_EXPONENT + 1) as usize],
            magnitudes: vec![0; (Self::MAX_MAGNITUDE - Self::MIN_EXPONENT + 1) as usize],
            divisible: [[0; GRID_POWERS]; GRID_PRIMES.len()],
        }
    }

    fn add(&mut self, odd: u32, exponent: i32) {
        self.values += 1;
        let magnitude = exponent + 31 - odd.leading_zeros() as i32;
        if let Some(slot) = self
            .magnitudes
            .get_mut((magnitude - Self::MIN_EXPONENT) as usize)
        {
            *slot += 1;
        }
        if let Some(slot) = self
            .exponents
            .get_mut((exponent - Self::MIN_EXPONENT) as usize)
        {
            *slot += 1;
        }
        for (counts, prime) in self.divisible.iter_mut().zip(GRID_PRIMES) {
            let mut power = prime;
            for count in counts.iter_mut() {
                if odd % power != 0 {
                    break;
                }
                *count += 1;
                power *= prime;
            }
        }
    }

    /// The median binary exponent of the values.
    fn magnitude(&self) -> Option<i16> {
        let mut seen = 0;
        for (i, &count) in self.magnitudes.iter().enumerate() {
            seen += count;
            if seen * 2 > self.values {
                return Some((Self::MIN_EXPONENT + i as i32) as i16);
            }
        }
        None
    }

    /// The coarsest grid that at least [`GRID_COVERAGE`] of the values lie on.
    fn grid(&self) -> Option<Grid> {
        if self.values == 0 {
            return None;
        }
        let allowed_off = ((1.0 - GRID_COVERAGE) * self.values as f64) as u64;
        // The exponent: values below it are off the grid; at most 1% may be.
        let mut below = 0;
        let mut exponent = Self::MIN_EXPONENT;
        for (i, &count) in self.exponents.iter().enumerate() {
            if below + count > allowed_off {
                exponent = Self::MIN_EXPONENT + i as i32;
                break;
            }
            below += count;
        }
        let mut odd = 1u32;
        for (counts, prime) in self.divisible.iter().zip(GRID_PRIMES) {
            for &count in counts {
                if count + allowed_off < self.values {
                    break;
                }
                odd *= prime;
            }
        }
        let grid = Grid {
            odd,
            exponent: i8::try_from(exponent).ok()?,
        };
        (exponent >= GRID_MIN_EXPONENT || odd > 1 && exponent >= GRID_MIN_EXPONENT - 4)
            .then_some(grid)
            .filter(|g| g.step().is_some())
    }
}

impl ModelTrainer {
    /// A trainer for structs with `fields` fields and the given schema fingerprint.
    pub fn new(schema_fingerprint: u64, fields: usize) -> Self {
        ModelTrainer {
            data: ModelData::empty(schema_fingerprint, fields),
            grid_evidence: vec![GridEvidence::new(); fields],
            change_counts: vec![std::collections::HashMap::new(); fields],
            element_set_counts: vec![std::collections::HashMap::new(); fields],
        }
    }

    /// A trainer that counts symbols as `model` codes them: its grids
    /// (already frozen) and predictors, no counts. Observing a stream with
    /// it gives that stream's symbols in the model's terms, to price them
    /// with the model's codes.
    pub fn counting_for(model: &ModelData) -> Self {
        let mut trainer = ModelTrainer::new(model.schema_fingerprint, model.fields());
        if let Some(key) = model.pattern_key {
            trainer = trainer.with_pattern_key(key);
        }
        if let Some(key) = model.spawn_key {
            trainer = trainer.with_spawn_key(key);
        }
        trainer.data.grids.clone_from(&model.grids);
        trainer.data.predictors.clone_from(&model.predictors);
        trainer.data.axes.clone_from(&model.axes);
        trainer.data.dictionaries.clone_from(&model.dictionaries);
        trainer.data.element_sets.clone_from(&model.element_sets);
        trainer.data.magnitudes.clone_from(&model.magnitudes);
        trainer
            .data
            .loose_predictors
            .clone_from(&model.loose_predictors);
        trainer
    }

    /// Declares the field whose baseline value picks a held delta's
    /// change-pattern codes (see [`PatternKey`]), before observing.
    pub fn with_pattern_key(mut self, key: PatternKey) -> Self {
        self.data.pattern_key = Some(key);
        self.reset_patterns();
        self
    }

    /// Declares the field whose baseline value picks a spawn delta's
    /// change-pattern codes (see [`ModelData::spawn_sets`]), before
    /// observing: an entity entering the view from the zeroed dummy (a
    /// temporary event, a player who joined after the map loaded) changes
    /// other fields than one from a placed item's spawn baseline.
    pub fn with_spawn_key(mut self, key: PatternKey) -> Self {
        self.data.spawn_key = Some(key);
        self.reset_patterns();
        self
    }

    /// Sizes the pattern tables for the declared keys (all counts zero).
    fn reset_patterns(&mut self) {
        let groups = self.data.fields().div_ceil(GROUP_FIELDS);
        let sets = self.data.pattern_sets();
        self.data.last_group = vec![vec![0; groups + 1]; sets];
        self.data.groups = vec![vec![0; 256]; sets * groups];
    }

    /// Declares that field `field` holds the position on `axis` (below
    /// [`AXES`]; see [`ModelData::axes`]), before observing: an entity's
    /// position deltas from a zero baseline are then coded against the
    /// context's anchor.
    pub fn with_axis(mut self, field: usize, axis: u8) -> Self {
        let fields = self.data.fields();
        if field < fields && usize::from(axis) < AXES {
            self.data.axes.resize(fields, None);
            self.data.axes[field] = Some(axis);
        }
        self
    }

    /// Declares a predictor for field `field` (before observing: the
    /// symbols counted depend on it).
    pub fn with_predictor(mut self, field: usize, predictor: Predictor) -> Self {
        if let Some(slot) = self.data.predictors.get_mut(field) {
            *slot = Some(predictor);
        }
        self
    }

    /// Declares a predictor that replaces field `field`'s own in deltas
    /// from a baseline whose float rates are loose (see
    /// [`ModelData::loose_predictors`]; before observing).
    pub fn with_loose_predictor(mut self, field: usize, predictor: Predictor) -> Self {
        let fields = self.data.fields();
        if field < fields {
            self.data.loose_predictors.resize(fields, None);
            self.data.loose_predictors[field] = Some(predictor);
        }
        self
    }

    /// Gathers grid evidence from one value. Grids are learned in a first
    /// pass over the data, then frozen with [`ModelTrainer::freeze_grids`]
    /// before [`ModelTrainer::observe`] counts symbols, which depend on them.
    pub fn learn_grids<T: Fields>(&mut self, value: &T) {
        for field in 0..value.field_count().min(self.grid_evidence.len()) {
            let kind = value.field_kind(field);
            if !kind.element().is_float_bits() || kind.is_array() {
                continue;
            }
            if let Some((odd, exponent)) = odd_and_exponent(f32::from_bits(value.word(field, 0))) {
                self.grid_evidence[field].add(odd, exponent);
            }
        }
    }

    /// Gathers dictionary evidence from one delta (before
    /// [`ModelTrainer::freeze_grids`], like [`ModelTrainer::learn_grids`]):
    /// the changes of its unpredicted integer fields, and which elements
    /// of each changed array field changed. A change to zero is left out
    /// (the zero symbol codes it), and so are changes of one (their class
    /// costs no extra bits).
    pub fn learn_changes<T: Fields>(&mut self, base: &T, new: &T) {
        for field in 0..new.field_count().min(self.element_set_counts.len()) {
            if new.field_kind(field).is_array() {
                let mask = new.element_changes(base, field);
                if mask != 0 {
                    *self.element_set_counts[field].entry(mask).or_default() += 1;
                }
            }
        }
        for field in 0..new.field_count().min(self.change_counts.len()) {
            let kind = new.field_kind(field);
            let element = kind.element();
            let predicted = self.data.predictors.get(field).copied().flatten().is_some();
            if predicted || element.is_float_bits() || *element == ScalarKind::Bool {
                continue;
            }
            let mask = crate::bits::low_mask(element.wire_bits());
            for index in 0..kind.elements() {
                let (b, n) = (base.word(field, index), new.word(field, index));
                let change = n.wrapping_sub(b) & mask;
                if b != n && n != 0 && change != 1 && change != mask {
                    *self.change_counts[field].entry(change).or_default() += 1;
                }
            }
        }
    }

    /// Freezes the learned grids (and dictionaries, of changes and of
    /// element sets, if [`ModelTrainer::learn_changes`] saw any) into the
    /// model data.
    pub fn freeze_grids(&mut self) {
        if self
            .element_set_counts
            .iter()
            .any(|counts| !counts.is_empty())
        {
            self.data.element_sets = self
                .element_set_counts
                .iter()
                .map(|counts| most_common(counts, ELEMENT_SETS_LEN))
                .collect();
        }
        if self.change_counts.iter().any(|counts| !counts.is_empty()) {
            self.data.dictionaries = self
                .change_counts
                .iter()
                .map(|counts| most_common(counts, DICTIONARY_LEN))
                .collect();
        }
        for (slot, evidence) in self.data.grids.iter_mut().zip(&self.grid_evidence) {
            *slot = evidence.grid();
        }
        for (slot, evidence) in self.data.magnitudes.iter_mut().zip(&self.grid_evidence) {
            *slot = evidence.magnitude();
        }
    }

    /// Counts the symbols of the delta from `base` to `new`.
    pub fn observe<T: Fields>(&mut self, base: &T, new: &T, context: &crate::codec::DeltaContext) {
        let data = &mut self.data;
        let grids = data.grids.clone();
        let predictors = data.predictors.clone();
        let magnitudes = data.magnitudes.clone();
        let axes = data.axes.clone();
        let dictionaries = data.dictionaries.clone();
        let element_sets = data.element_sets.clone();
        let loose_predictors = data.loose_predictors.clone();
        let learned = crate::codec::native::Learned {
            loose_predictors: &loose_predictors,
            grids: &grids,
            predictors: &predictors,
            magnitudes: &magnitudes,
            pattern_key: data.pattern_key,
            spawn_key: data.spawn_key,
            axes: &axes,
            dictionaries: &dictionaries,
            element_sets: &element_sets,
        };
        crate::codec::native::visit_symbols(base, new, &learned, context, &mut |traced| {
            data.count(traced.context, traced.symbol);
            data.count_top_bits(traced);
        });
    }

    /// Counts the number symbols of one entity list, as the native codec
    /// writes it: every entry in increasing number order (`true` for a
    /// removal), then the end. Only entries the list actually carries: a
    /// changed or new entity, or a removed one, not the unchanged ones.
    /// `held` is what the receiver holds (the base's entities): a removal's
    /// gap counts those (a removal of an entity not held cannot be written,
    /// and is not counted).
    pub fn observe_entity_list(
        &mut self,
        entries: impl IntoIterator<Item = (u32, bool)>,
        held: &dyn HeldNumbers,
    ) {
        let data = &mut self.data;
        visit_entity_list(entries, held, &mut |context, symbol| {
            data.add(context, symbol, 1)
        });
    }

    /// Counts the number symbols of one entity list as
    /// [`ModelTrainer::observe_entity_list`] does, but not its start
    /// ([`Context::ListStart`]): for a list no stream sends as it stands,
    /// such as a delta from an older base that training adds for its
    /// entries, whose lists are seldom empty where the stream's often are.
    pub fn observe_entity_list_entries(
        &mut self,
        entries: impl IntoIterator<Item = (u32, bool)>,
        held: &dyn HeldNumbers,
    ) {
        let data = &mut self.data;
        visit_entity_list(entries, held, &mut |context, symbol| {
            if context != Context::ListStart {
                data.add(context, symbol, 1)
            }
        });
    }

    /// The counts and grids so far.
    pub fn finish(self) -> ModelData {
        self.data
    }
}

/// The keys of `counts` seen at least [`DICTIONARY_MIN_COUNT`] times, at
/// most `len` of them, most frequent first (ties by value, so training is
/// deterministic whatever the map's order).
fn most_common(counts: &std::collections::HashMap<u32, u32>, len: usize) -> Vec<u32> {
    let mut common: Vec<(u32, u32)> = counts
        .iter()
        .filter(|&(_, &count)| count >= DICTIONARY_MIN_COUNT)
        .map(|(&key, &count)| (key, count))
        .collect();
    common.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    common.truncate(len);
    common.into_iter().map(|(key, _)| key).collect()
}

/// Calls `visit` with the number symbols of one entity list: what
/// [`ModelTrainer::observe_entity_list`] counts.
pub(crate) fn visit_entity_list(
    entries: impl IntoIterator<Item = (u32, bool)>,
    held: &dyn HeldNumbers,
    visit: &mut dyn FnMut(Context, u8),
) {
    trace_entity_list(entries, held, &mut |traced| {
        visit(traced.context, traced.symbol)
    });
}

/// One symbol as the native codec codes it with a model, and the raw bits
/// written after it (the bits below a value's or a gap's leading one):
/// what [`trace_delta`] and [`trace_entity_list`] report, so a report can
/// price a message's symbols and raw bits apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TracedSymbol {
    /// Where the symbol occurs.
    pub context: Context,
    /// The symbol.
    pub symbol: u8,
    /// How many raw bits follow it.
    pub raw_bits: u32,
    /// Those bits (the low `raw_bits` of it).
    pub raw: u32,
}

impl TracedSymbol {
    /// A symbol without raw bits.
    pub(crate) fn bare(context: Context, symbol: u8) -> Self {
        TracedSymbol {
            context,
            symbol,
            raw_bits: 0,
            raw: 0,
        }
    }
}

/// Calls `visit` with every symbol, and its raw bits, of the delta from
/// `base` to `new` as the native codec codes it with `model` in `context`
/// (in the order the codec writes them, within a delta: the change
/// patterns, then the values).
pub fn trace_delta<T: Fields>(
    model: &NativeModel,
    base: &T,
    new: &T,
    context: &crate::codec::DeltaContext,
    visit: &mut dyn FnMut(TracedSymbol),
) {
    crate::codec::native::trace_native_symbols(base, new, model, context, visit);
}

/// Calls `visit` with every symbol of an entity list whose entries
/// (number, removed) are `entries` against a receiver holding `held`: its
/// [`Context::ListStart`] symbol, then each entry's number symbol and the
/// raw bits below its gap's leading one, then (after an entry) the end.
pub fn trace_entity_list(
    entries: impl IntoIterator<Item = (u32, bool)>,
    held: &dyn HeldNumbers,
    visit: &mut dyn FnMut(TracedSymbol),
) {
    let mut last = None;
    for (number, removed) in entries {
        let first_candidate = last.map_or(0, |l: u32| l.wrapping_add(1));
        let gap = if !removed {
            number.wrapping_sub(first_candidate)
        } else if held.holds(number) {
            held.count_in(first_candidate, number)
        } else {
            continue;
        };
        if last.is_none() {
            visit(TracedSymbol::bare(Context::ListStart, LIST_ENTRIES));
        }
        let raw_bits = (32 - gap.leading_zeros()).saturating_sub(1);
        visit(TracedSymbol {
            context: Context::EntityNumber(number_context(last)),
            symbol: number_symbol(gap, removed),
            raw_bits,
            raw: gap & ((1u64 << raw_bits) - 1) as u32,
        });
        last = Some(number);
    }
    // An empty list is its start symbol alone (see the native codec's
    // `put_number`).
    match last {
        Some(_) => visit(TracedSymbol::bare(
            Context::EntityNumber(number_context(last)),
            NUMBER_END,
        )),
        None => visit(TracedSymbol::bare(Context::ListStart, LIST_EMPTY)),
    }
}

/// A finite float as `odd × 2^exponent`.
fn odd_and_exponent(value: f32) -> Option<(u32, i32)> {
    if !value.is_finite() || value == 0.0 {
        return None;
    }
    let bits = value.to_bits();
    let exponent_bits = ((bits >> 23) & 0xff) as i32;
    let (mantissa, exponent) = if exponent_bits == 0 {
        (bits & 0x7f_ffff, -149)
    } else {
        ((bits & 0x7f_ffff) | 0x80_0000, exponent_bits - 150)
    };
    let shift = mantissa.trailing_zeros();
    Some((mantissa >> shift, exponent + shift as i32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_angles_have_the_short_angle_grid() {
        let grid = Grid {
            odd: 45,
            exponent: -13,
        };
        assert_eq!(grid.step(), Some(360.0 / 65536.0));
        for short in [-32768i32, -1, 1, 300, 16383, 32767] {
            let angle = short as f32 * (360.0 / 65536.0);
            assert_eq!(grid.steps_of(angle), Some(short));
            assert_eq!(grid.value_of(short), Some(angle));
        }
        assert_eq!(grid.steps_of(0.001), None);
    }

    crate::net_struct! {
        struct Small { a: u8 = crate::kind::unsigned(8), b: f32 = crate::kind::q3_float() }
    }
    crate::net_struct! {
        struct Other { a: u8 = crate::kind::unsigned(7), b: f32 = crate::kind::q3_float() }
    }

    #[test]
    fn top_bit_counts_take_the_tree_path_then_the_deep_positions() {
        let mut data = ModelTrainer::new(Small::TABLE.schema().fingerprint(), 2).finish();
        // Class 12 of field 1: tree bits 010, deep bits 10110.
        data.add(Context::TopBits(1, 12, 8), 0b0101_0110, 3);
        // Class 12 again, only two bits seen: 11.
        data.add(Context::TopBits(1, 12, 2), 0b11, 1);
        assert!(data.top_bits[0].is_empty());
        let counts = &data.top_bits[1];
        assert_eq!(counts.len(), TOP_BITS_COUNTS);
        let class = &counts[10 * 2 * CLASS_CHANCES..][..2 * CLASS_CHANCES];
        let mut expected = [0u32; 2 * CLASS_CHANCES];
        // Root: a zero (3), a one (1); node 1 (after a zero): a one;
        // node 2 (after a one): a one; node 4 (after 01): a zero.
        expected[0] = 3;
        expected[1] = 1;
        expected[3] = 3;
        expected[2 * 2 + 1] = 1;
        expected[2 * 4] = 3;
        // The deep positions: 1, 0, 1, 1, 0.
        for (depth, bit) in [1usize, 0, 1, 1, 0].into_iter().enumerate() {
            expected[2 * (TREE_NODES + depth) + bit] = 3;
        }
        assert_eq!(class, expected);
        assert_eq!(counts.iter().sum::<u32>(), 3 * 8 + 2);
        // The traced value a model counts: the class's first eight bits.
        let traced = TracedSymbol {
            context: Context::Value(1, ValueContext::Zero),
            symbol: 12,
            raw: 0b010_1011_0110,
            raw_bits: 11,
        };
        assert_eq!(
            top_bits_seen(&traced),
            Some((Context::TopBits(1, 12, 8), 0b0101_0110))
        );
        // A grid class's bits are counted like an integer class's (grid
        // class 12 is symbol 78); a float bit-pattern class's (symbol 45)
        // are not, nor those of a symbol past the grid classes.
        let with_symbol = |symbol| TracedSymbol { symbol, ..traced };
        assert_eq!(
            top_bits_seen(&with_symbol(78)),
            Some((Context::TopBits(1, 78, 8), 0b0101_0110))
        );
        assert_eq!(top_bits_seen(&with_symbol(45)), None);
        assert_eq!(top_bits_seen(&with_symbol(99)), None);
    }

    #[test]
    fn models_are_checked_against_their_table() {
        let data = ModelTrainer::new(Small::TABLE.schema().fingerprint(), 2).finish();
        assert!(NativeModel::for_table(data.clone(), &Small::TABLE).is_ok());
        assert!(NativeModel::for_table(data.clone(), &Other::TABLE).is_err());
        let pair = ModelPair {
            entity: data.clone(),
            player: data,
        };
        assert!(pair.clone().build::<Small, Small>().is_ok());
        assert!(pair.build::<Small, Other>().is_err());
    }

    /// Counts the warnings logged while it is the default subscriber.
    struct WarningCounter(std::sync::Arc<std::sync::atomic::AtomicUsize>);

    impl tracing::Subscriber for WarningCounter {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            if *event.metadata().level() == tracing::Level::WARN {
                self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    #[test]
    fn a_committed_pair_that_does_not_load_is_warned_about() {
        let warnings = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = WarningCounter(warnings.clone());
        let data = ModelTrainer::new(Small::TABLE.schema().fingerprint(), 2).finish();
        let pair = ModelPair {
            entity: data.clone(),
            player: data,
        };
        tracing::subscriber::with_default(counter, || {
            let count = || warnings.load(std::sync::atomic::Ordering::SeqCst);
            assert!(ModelPair::load_committed::<Small, Small>("test", Ok(pair.clone())).is_some());
            assert_eq!(count(), 0);
            assert!(ModelPair::load_committed::<Small, Other>("test", Ok(pair)).is_none());
            assert_eq!(count(), 1);
            let undecodable = Err("unexpected end of input".to_string());
            assert!(ModelPair::load_committed::<Small, Small>("test", undecodable).is_none());
            assert_eq!(count(), 2);
        });
    }

    /// A bit source that cannot look ahead, like a Huffman bitstream.
    struct NoPeek<'a>(crate::bits::BitReader<'a>);

    impl BitSource for NoPeek<'_> {
        fn get_bits(&mut self, count: u32) -> Result<u32, BitError> {
            self.0.get_bits(count)
        }
        fn bits_read(&self) -> usize {
            self.0.bits_read()
        }
    }

    #[test]
    fn table_and_bitwise_symbol_decoding_agree() {
        let mut counts = [0u32; 256];
        for (symbol, count) in counts.iter_mut().enumerate().take(40) {
            *count = 1 + (symbol as u32 * 7919) % 1000;
        }
        let code = SymbolCode::new(HuffmanCode::from_frequencies(&counts).unwrap(), counts, 256);
        let symbols: Vec<u8> = (0..=255u8).chain([3, 3, 17, 39, 0, 255]).collect();
        let mut buf = [0u8; 1024];
        let mut writer = crate::bits::BitWriter::new(&mut buf);
        for &symbol in &symbols {
            code.encode(&mut writer, symbol).unwrap();
        }
        let bits = writer.bits_written();
        // Ones past the end, where a lookahead window reads them: a word
        // found in the window is real only if it ends within the input.
        if bits % 8 != 0 {
            buf[bits / 8] |= 0xFF << (bits % 8);
        }
        buf[bits.div_ceil(8)..].fill(0xFF);
        // Whole input, then every truncation: same symbols, same errors.
        for end in [bits, bits - 1, bits / 2, 5, 0] {
            let mut table = crate::bits::BitReader::with_bit_len(&buf, end);
            let mut walk = NoPeek(crate::bits::BitReader::with_bit_len(&buf, end));
            let mut decoded = 0;
            loop {
                let (a, b) = (code.decode(&mut table), code.decode(&mut walk));
                assert_eq!(a, b, "symbol {decoded} of input cut at {end}");
                assert_eq!(table.bits_read(), walk.bits_read());
                match a {
                    Ok(symbol) => assert_eq!(symbol, symbols[decoded]),
                    Err(_) => break,
                }
                decoded += 1;
            }
            if end == bits {
                assert_eq!(decoded, symbols.len());
            }
        }
    }

    #[test]
    fn a_key_flag_splits_every_class_in_two() {
        let mut data = ModelData::empty(0, 4);
        data.pattern_key = Some(PatternKey {
            field: 0,
            classes: 3,
            flag: Some(1),
            second_flag: None,
        });
        // Spawn, then three classes of the key field, twice.
        assert_eq!(data.pattern_sets(), 7);
        assert_eq!(data.pattern_set(Origin::Spawn, [1, 1, 0]), 0);
        assert_eq!(data.pattern_set(Origin::Held, [0, 0, 0]), 1);
        assert_eq!(data.pattern_set(Origin::Held, [9, 0, 0]), 3);
        assert_eq!(data.pattern_set(Origin::Held, [1, 5, 0]), 5);
        assert_eq!(data.pattern_set(Origin::Held, [9, 0x8000_0000, 0]), 6);
        // Without a second flag field its word is ignored.
        assert_eq!(data.pattern_set(Origin::Held, [9, 0x8000_0000, 7]), 6);
        data.pattern_key = Some(PatternKey {
            field: 0,
            classes: 3,
            flag: None,
            second_flag: None,
        });
        assert_eq!(data.pattern_sets(), 4);
        assert_eq!(data.pattern_set(Origin::Held, [9, 5, 5]), 3);
    }

    #[test]
    fn a_second_key_flag_splits_every_class_again() {
        let mut data = ModelData::empty(0, 4);
        data.pattern_key = Some(PatternKey {
            field: 0,
            classes: 2,
            flag: Some(1),
            second_flag: Some(2),
        });
        // Spawn, then two classes × two flags × two second flags.
        assert_eq!(data.pattern_sets(), 9);
        assert_eq!(data.pattern_set(Origin::Held, [0, 0, 0]), 1);
        assert_eq!(data.pattern_set(Origin::Held, [1, 0, 0]), 2);
        assert_eq!(data.pattern_set(Origin::Held, [0, 1, 0]), 3);
        assert_eq!(data.pattern_set(Origin::Held, [1, 1, 0]), 4);
        assert_eq!(data.pattern_set(Origin::Held, [0, 0, 1]), 5);
        assert_eq!(data.pattern_set(Origin::Held, [7, 1, 1]), 8);
        // A second flag alone splits the key's classes in two.
        data.pattern_key = Some(PatternKey {
            field: 0,
            classes: 2,
            flag: None,
            second_flag: Some(2),
        });
        assert_eq!(data.pattern_sets(), 5);
        assert_eq!(data.pattern_set(Origin::Held, [1, 9, 1]), 4);
    }

    #[test]
    fn spawn_sets_come_first_and_held_sets_follow() {
        let mut data = ModelData::empty(0, 4);
        data.pattern_key = Some(PatternKey {
            field: 0,
            classes: 2,
            flag: None,
            second_flag: None,
        });
        assert_eq!(data.spawn_sets(), 1);
        assert_eq!(data.pattern_set(Origin::Spawn, [5, 5, 5]), 0);
        assert_eq!(data.pattern_set(Origin::Held, [1, 0, 0]), 2);
        data.spawn_key = Some(PatternKey {
            field: 3,
            classes: 3,
            flag: None,
            second_flag: None,
        });
        // Three spawn classes, then the two held ones.
        assert_eq!(data.spawn_sets(), 3);
        assert_eq!(data.pattern_sets(), 5);
        assert_eq!(data.pattern_set(Origin::Spawn, [0, 0, 0]), 0);
        assert_eq!(data.pattern_set(Origin::Spawn, [1, 0, 0]), 1);
        assert_eq!(data.pattern_set(Origin::Spawn, [9, 0, 0]), 2);
        assert_eq!(data.pattern_set(Origin::Held, [0, 0, 0]), 3);
        assert_eq!(data.pattern_set(Origin::Held, [1, 0, 0]), 4);
        assert_eq!(data.key_of(Origin::Spawn), data.spawn_key);
        assert_eq!(data.key_of(Origin::Held), data.pattern_key);
    }

    #[test]
    fn grids_are_learned_by_majority() {
        let mut evidence = GridEvidence::new();
        for short in -20_000i32..20_000 {
            let angle = short as f32 * (360.0 / 65536.0);
            if let Some((odd, exponent)) = odd_and_exponent(angle) {
                evidence.add(odd, exponent);
            }
        }
        // A few stray values off the grid do not change it.
        for stray in [24.994f32, -7.839, 0.1, 1e-6] {
            let (odd, exponent) = odd_and_exponent(stray).unwrap();
            evidence.add(odd, exponent);
        }
        assert_eq!(
            evidence.grid(),
            Some(Grid {
                odd: 45,
                exponent: -13
            })
        );

        // Continuous values have no useful grid.
        let mut continuous = GridEvidence::new();
        for i in 1..5000 {
            let (odd, exponent) = odd_and_exponent(i as f32 * 0.7093).unwrap();
            continuous.add(odd, exponent);
        }
        assert_eq!(continuous.grid(), None);
    }
}
