//! How far the native codec is from what its own data allows: the entropy
//! bound of a real demo's messages, split into what the coder loses, what
//! the model loses and what the raw value bits cost.
//!
//! Each real demo is sent through the snapshot engine as `native_loo`
//! sends it ([`crate::loo::q3_engine_encoder`]: a [`snapshot::Server`]
//! coding with models trained without the demo, adapting along the delta
//! chain under [`AdaptPolicy::DEFAULT`]), and the engine's reader traces
//! every symbol of every message with the model that coded it
//! ([`snapshot::Client::set_symbol_trace`], which walks the decoded deltas
//! with [`fields::model::trace_delta`] and
//! [`fields::model::trace_entity_list`]). The report prices them four
//! ways:
//!
//! * **today**: the message's whole bytes, and the Huffman code word each
//!   symbol spent in it;
//! * **cross-entropy**: `-log2 p` under the same model's weights (the
//!   smoothed counts its Huffman code was built from): what an ideal
//!   arithmetic coder with the very same model and contexts would spend.
//!   Today minus this is the **coder loss**;
//! * **in-sample conditional entropy**: the demo's own empirical entropy
//!   of each symbol given its context, as if a static model had been
//!   trained on the demo alone. Cross-entropy minus this is the **model
//!   loss** (it can be negative where adapting beats one static model);
//! * the **raw bits** below each value's (or gap's) leading one, written
//!   as they are today, and what they would cost coded bit by bit
//!   conditioned on their class: the in-sample entropy of each bit given
//!   (context, symbol, position below the leading one), and what an
//!   adaptive binary coder would really pay for them in one pass
//!   (Krichevsky–Trofimov counts starting from nothing, with the two bits
//!   above in the context too).
//!
//! The **range coder** column codes each engine message's traced symbols
//! again through a [`fields::range::RangeWriter`] by the models' own
//! frequencies: the message's header bits as they are, then its symbols and
//! raw bits in message order (each list's start symbol before its first
//! entry, or alone for an empty list), then the rest of its bits (see below) as raw ones. The engine
//! has no range-coded framing of its own yet: this is what one would write
//! for the same symbols.
//!
//! The rest of a message — header, the player's arrays' changed-element
//! sets their dictionaries do not hold, whole bytes' padding — is
//! reported as it is.

use std::collections::HashMap;
use std::path::Path;

use fields::model::{AdaptPolicy, Context, SymbolCode, LIST_ENTRIES};
use fields::range::RangeWriter;
use fields::{BitReader, BitSink, BitSource, Chance, NetFields};
use q3::{EntityState, PlayerState};
use serde::Serialize;
use snapshot::{SymbolOf, UpdateKind};

use crate::encode::Breakdown;
use crate::encode::Encoder;
use crate::loo::{q3_engine_encoder, train_without, TrainedModels};
use crate::workload::q3demo::Q3Demo;
use crate::workload::RunEnd;
use crate::{Error, Zeros};

/// Which of a message's two models coded a symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Table {
    Entity,
    Player,
}

impl Table {
    fn of(of: SymbolOf) -> Self {
        match of {
            SymbolOf::PlayerState => Table::Player,
            SymbolOf::Entity { .. } | SymbolOf::ListEnd => Table::Entity,
        }
    }
}

/// How a traced symbol was coded.
#[derive(Clone, Copy)]
enum Coding<'a> {
    /// With a code ([`fields::model::NativeModel::code`]).
    Symbol(&'a SymbolCode),
    /// As a yes/no decision: a list's start
    /// ([`fields::model::NativeModel::list_start`]), yes for entries.
    Decision(Chance),
}

impl Coding<'_> {
    /// Bits it takes in a bit stream (as
    /// [`fields::model::NativeModel::stream_bits`] says).
    fn bits(self, symbol: u8) -> u32 {
        match self {
            Coding::Symbol(code) => code.bits(symbol),
            Coding::Decision(_) => 1,
        }
    }

    /// `-log2 p` of `symbol`.
    fn ideal_bits(self, symbol: u8) -> f64 {
        match self {
            Coding::Symbol(code) => code.ideal_bits(symbol),
            Coding::Decision(chance) => {
                let (_, frequency) = chance.span(symbol == LIST_ENTRIES);
                16.0 - f64::from(frequency).log2()
            }
        }
    }
}

/// Raw bits counted per (table, context, symbol, position below the
/// leading one, the two bits above it within the value).
type RawKey = (Table, Context, u8, u8, u8);

/// The kinds of symbol a message codes, for [`DemoBound::parts`].
pub const PARTS: [&str; 5] = [
    "player change patterns",
    "player values",
    "entity change patterns",
    "entity values",
    "entity numbers",
];

/// Which of [`PARTS`] a symbol of `table` in `context` is.
fn part_of(table: Table, context: Context) -> usize {
    match (table, context) {
        // Which elements of an array changed is part of the change pattern.
        (Table::Player, Context::LastGroup(_) | Context::Group(..) | Context::Elements(..)) => 0,
        (Table::Player, _) => 1,
        (Table::Entity, Context::LastGroup(_) | Context::Group(..) | Context::Elements(..)) => 2,
        (Table::Entity, Context::Value(..) | Context::TopBits(..)) => 3,
        (Table::Entity, Context::EntityNumber(_) | Context::ListStart) => 4,
    }
}

/// One kind of symbol's share of a demo's bound (bits).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Part {
    /// Which (one of [`PARTS`]).
    pub name: String,
    /// What the Huffman codes spent.
    pub symbol_bits: u64,
    /// Cross-entropy under the coding model.
    pub cross_entropy: f64,
    /// In-sample conditional entropy.
    pub insample_entropy: f64,
    /// Raw bits, today.
    pub raw_bits: u64,
    /// Their in-sample entropy given (context, symbol, position).
    pub raw_entropy: f64,
    /// What an adaptive binary coder would pay for them.
    pub raw_adaptive: f64,
}

/// One field's share of a demo's value symbols (bits).
#[derive(Debug, Clone, Default, Serialize)]
pub struct FieldCost {
    /// `player` or `entity`.
    pub table: String,
    /// The field's name in its `net_struct!` table.
    pub name: String,
    /// Values coded (symbols).
    pub values: u64,
    /// What their Huffman code words spent.
    pub symbol_bits: u64,
    /// Their cross-entropy under the coding model.
    pub cross_entropy: f64,
    /// The raw bits below their leading ones.
    pub raw_bits: u64,
}

/// One kind of entity update's share of a demo's entity bits (each
/// symbol at its cross-entropy, raw bits at one bit each): which entities
/// cost what, entering the view or held.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EntityKindCost {
    /// Entity type (`eType`, events together) and how the update came:
    /// `changed` (held by the receiver), `from baseline` (entering from
    /// its spawn baseline), `from zero` (entering with no baseline), `from
    /// history` (entering from its state in an older snapshot),
    /// `removed`.
    pub kind: String,
    /// Updates of this kind.
    pub updates: u64,
    /// Their entity-number symbols.
    pub number_bits: f64,
    /// Their change patterns.
    pub pattern_bits: f64,
    /// Their values (symbols and raw bits).
    pub value_bits: f64,
    /// The fields whose values cost the most, with their bits.
    pub fields: Vec<(String, f64)>,
}

impl EntityKindCost {
    /// All their bits.
    pub fn bits(&self) -> f64 {
        self.number_bits + self.pattern_bits + self.value_bits
    }
}

/// Quake 3's entity type names (`entityType_t`), events (`ET_EVENTS` and
/// up) together.
fn entity_type_name(e_type: i32) -> &'static str {
    const NAMES: [&str; 13] = [
        "general",
        "player",
        "item",
        "missile",
        "mover",
        "beam",
        "portal",
        "speaker",
        "push trigger",
        "teleport trigger",
        "invisible",
        "grapple",
        "team",
    ];
    match usize::try_from(e_type) {
        Ok(t) if t < NAMES.len() => NAMES[t],
        _ => "event",
    }
}

/// One demo's bound (sums over its messages; bits unless named).
#[derive(Debug, Clone, Default, Serialize)]
pub struct DemoBound {
    /// The demo's file name.
    pub name: String,
    /// Messages measured.
    pub messages: u64,
    /// How the run ended (`complete`, or the fault it stopped at).
    pub status: String,
    /// Quake 3's bytes for the same messages (whole bytes per message).
    pub q3_bytes: u64,
    /// The engine's native messages' bytes today (whole bytes per
    /// message): `native_loo` of the delta-size report.
    pub native_bytes: u64,
    /// Their bits, before rounding up to whole bytes.
    pub native_bits: u64,
    /// Header bits.
    pub header_bits: u64,
    /// Symbols coded.
    pub symbols: u64,
    /// What the Huffman codes spent on them.
    pub symbol_bits: u64,
    /// Their cross-entropy under the coding (leave-one-out, adapting) model.
    pub cross_entropy: f64,
    /// Their in-sample conditional entropy (given the context).
    pub insample_entropy: f64,
    /// Raw bits below the leading ones, as written today.
    pub raw_bits: u64,
    /// Their in-sample entropy given (context, symbol, position).
    pub raw_entropy: f64,
    /// What an adaptive binary coder would pay for them in one pass, with
    /// the context above and the two bits above each within its value.
    pub raw_adaptive: f64,
    /// Everything else (`native_bits` less header, symbols and raw bits):
    /// the player's arrays' changed-element sets that their dictionary
    /// does not hold (gap-coded after the escape symbol) and the like.
    pub other_bits: u64,
    /// Changed or added entities (for bits per changed entity).
    pub entity_updates: u64,
    /// The engine's messages range-coded: their header bits, traced
    /// symbols and raw bits, and other bits through a
    /// [`fields::range::RangeWriter`] (symbols by the coding model's
    /// frequencies, quantised to its total; every other bit at one bit),
    /// bits before rounding each message up to whole bytes.
    pub range_bits: u64,
    /// Their whole bytes.
    pub range_bytes: u64,
    /// The same sums per kind of symbol ([`PARTS`]).
    pub parts: Vec<Part>,
    /// The value symbols per field, most bits first: where a better
    /// predictor or context would pay.
    pub fields: Vec<FieldCost>,
    /// Bits per changed entity, today (entity header included).
    pub entity_update_bits: u64,
    /// The same range-coded (bits the writer's
    /// [`fields::BitSink::bits_written`] bound moved by over each update).
    pub range_entity_update_bits: u64,
    /// Entity bits per entity type and kind of update, most bits first.
    pub entity_kinds: Vec<EntityKindCost>,
}

impl DemoBound {
    /// Bytes per message.
    fn per_message(&self, bits: f64) -> f64 {
        bits / 8.0 / self.messages.max(1) as f64
    }

    /// Mean whole bytes per native message today.
    pub fn native_mean_bytes(&self) -> f64 {
        self.native_bytes as f64 / self.messages.max(1) as f64
    }

    /// Mean Quake 3 bytes per message.
    pub fn q3_mean_bytes(&self) -> f64 {
        self.q3_bytes as f64 / self.messages.max(1) as f64
    }

    /// Bytes a message would take with an ideal coder on today's model,
    /// raw bits written as today: header, other bits and raw bits as they
    /// are, symbols at their cross-entropy (fractional bytes: no rounding).
    pub fn ideal_coder_bytes(&self) -> f64 {
        self.per_message(
            self.header_bits as f64
                + self.other_bits as f64
                + self.raw_bits as f64
                + self.cross_entropy,
        )
    }

    /// As [`DemoBound::ideal_coder_bytes`], with the raw bits coded
    /// adaptively too.
    pub fn ideal_coder_raw_bytes(&self) -> f64 {
        self.per_message(
            self.header_bits as f64
                + self.other_bits as f64
                + self.raw_adaptive
                + self.cross_entropy,
        )
    }

    /// The in-sample floor: symbols at their in-sample conditional
    /// entropy, raw bits at theirs.
    pub fn insample_bytes(&self) -> f64 {
        self.per_message(
            self.header_bits as f64
                + self.other_bits as f64
                + self.raw_entropy
                + self.insample_entropy,
        )
    }

    /// Coder loss in bytes per message: Huffman code words against the
    /// same model's cross-entropy.
    pub fn coder_loss(&self) -> f64 {
        self.per_message(self.symbol_bits as f64 - self.cross_entropy)
    }

    /// Model loss in bytes per message: cross-entropy against the
    /// in-sample conditional entropy.
    pub fn model_loss(&self) -> f64 {
        self.per_message(self.cross_entropy - self.insample_entropy)
    }

    /// Raw-bit cost in bytes per message, as written today.
    pub fn raw_cost(&self) -> f64 {
        self.per_message(self.raw_bits as f64)
    }

    /// Padding to whole bytes, bytes per message.
    pub fn padding(&self) -> f64 {
        self.native_mean_bytes() - self.per_message(self.native_bits as f64)
    }
}

/// Measures one demo: `native_loo`'s messages, with models trained on the
/// training demos in `training_dir` other than this one
/// ([`train_without`]).
pub fn demo_bound(path: &Path, training_dir: &Path) -> Result<DemoBound, Error> {
    let demo = Q3Demo::open(path)?;
    let models = train_without(training_dir, path)?;
    demo_bound_with(&demo, &models)
}

/// Measures one demo sent through the engine with `models` adapting under
/// [`AdaptPolicy::DEFAULT`] (what delta-size's `native_loo` measures with
/// the same models).
pub fn demo_bound_with(demo: &Q3Demo, models: &TrainedModels) -> Result<DemoBound, Error> {
    let mut encoder =
        q3_engine_encoder("native_loo", models, Some(AdaptPolicy::DEFAULT))?.tracing_symbols();
    let zeros: Zeros<EntityState, PlayerState> = Zeros::default();
    let mut bound = DemoBound {
        name: demo.file_name(),
        parts: PARTS
            .iter()
            .map(|name| Part {
                name: (*name).into(),
                ..Part::default()
            })
            .collect(),
        ..DemoBound::default()
    };
    let mut breakdown = Breakdown::default();
    let mut counts: HashMap<(Table, Context), HashMap<u8, u64>> = HashMap::new();
    let mut raw: HashMap<RawKey, [u64; 2]> = HashMap::new();
    let mut adaptive: HashMap<RawKey, [u64; 2]> = HashMap::new();
    let mut range = RangeWriter::new();
    let mut field_costs: HashMap<(Table, usize), FieldCost> = HashMap::new();
    let mut kinds: HashMap<String, (EntityKindCost, HashMap<usize, f64>)> = HashMap::new();
    let end = demo.decode(|owned| {
        let step = owned.step();
        let bits = encoder.encode(&step, &zeros, &mut breakdown)?;
        let time = step.snapshot.server_time;
        let (trace, bytes) = encoder
            .symbol_trace(step.stream)
            .ok_or_else(|| Error::Engine(format!("no symbol trace for the message at {time}")))?;
        let mut symbol_bits = 0u64;
        let mut raw_bits = 0u64;
        // Traced bits by what they code: the player state, the entity
        // lists' entries (the first with its list's start symbol), the
        // lists' end markers (or an empty list's start).
        let (mut player_bits, mut entry_bits, mut end_bits) = (0u64, 0u64, 0u64);
        range.reset();
        let mut header = BitReader::new(bytes);
        let mut left = breakdown.header_bits as u32;
        while left > 0 {
            let take = left.min(32);
            range.put_bits(header.get_bits(take)?, take)?;
            left -= take;
        }
        // The entity update being coded, and the coder's length at its start.
        let mut update: Option<(SymbolOf, usize)> = None;
        for coded in &trace.symbols {
            let s = coded.symbol;
            let table = Table::of(coded.of);
            let model = trace
                .model_of(coded.of)
                .ok_or_else(|| Error::Model(format!("no model for {:?}", coded.of)))?;
            // A list's start is a decision by the model's chance (one bit
            // in a bit stream); every other symbol has a code.
            let coding = match (s.context, model.list_start()) {
                (Context::ListStart, Some(chance)) => Coding::Decision(chance),
                _ => Coding::Symbol(
                    model
                        .code(s.context)
                        .ok_or_else(|| Error::Model(format!("no code for {:?}", s.context)))?,
                ),
            };
            if update.is_some_and(|(of, _)| of != coded.of) {
                close_update(&mut update, &range, &mut bound);
            }
            let kind_key = match coded.of {
                SymbolOf::Entity { number, kind } => {
                    let new = owned
                        .snapshot
                        .entities
                        .binary_search_by_key(&number, |&(n, _)| n)
                        .ok()
                        .map(|i| owned.snapshot.entities[i].1);
                    let baseline = owned.baselines.get(number).copied().unwrap_or_default();
                    let how = match kind {
                        UpdateKind::Removed => "removed",
                        UpdateKind::Changed => "changed",
                        UpdateKind::Reentered => "from history",
                        UpdateKind::Added if baseline != EntityState::default() => "from baseline",
                        UpdateKind::Added => "from zero",
                    };
                    let e_type = new.map_or(baseline.e_type, |new| new.e_type);
                    Some((
                        format!("{} {how}", entity_type_name(e_type)),
                        update.is_none(),
                    ))
                }
                _ => None,
            };
            if matches!(coded.of, SymbolOf::Entity { .. }) && update.is_none() {
                update = Some((coded.of, range.bits_written()));
            }
            let word = u64::from(coding.bits(s.symbol));
            let spent = word + u64::from(s.raw_bits);
            match coded.of {
                SymbolOf::PlayerState => player_bits += spent,
                SymbolOf::Entity { .. } => entry_bits += spent,
                SymbolOf::ListEnd => end_bits += spent,
            }
            symbol_bits += word;
            raw_bits += u64::from(s.raw_bits);
            match coding {
                Coding::Symbol(code) => {
                    range.put_coded_symbol_and_raw(code, s.symbol, s.raw, s.raw_bits)?
                }
                Coding::Decision(chance) => range.put_decision(s.symbol == LIST_ENTRIES, chance)?,
            }
            let ideal = coding.ideal_bits(s.symbol);
            bound.cross_entropy += ideal;
            if let Some((key, first)) = kind_key {
                let (cost, fields) = kinds.entry(key).or_default();
                cost.updates += u64::from(first);
                let spent = ideal + f64::from(s.raw_bits);
                match s.context {
                    Context::EntityNumber(_) | Context::ListStart => cost.number_bits += spent,
                    Context::LastGroup(_) | Context::Group(..) | Context::Elements(..) => {
                        cost.pattern_bits += spent
                    }
                    Context::Value(field, _) | Context::TopBits(field, ..) => {
                        cost.value_bits += spent;
                        *fields.entry(field).or_default() += spent;
                    }
                }
            }
            if let Context::Value(field, _) = s.context {
                let cost = field_costs.entry((table, field)).or_default();
                cost.values += 1;
                cost.symbol_bits += word;
                cost.cross_entropy += ideal;
                cost.raw_bits += u64::from(s.raw_bits);
            }
            let part = &mut bound.parts[part_of(table, s.context)];
            part.symbol_bits += word;
            part.cross_entropy += ideal;
            part.raw_bits += u64::from(s.raw_bits);
            *counts
                .entry((table, s.context))
                .or_default()
                .entry(s.symbol)
                .or_default() += 1;
            for position in 0..s.raw_bits {
                // From the top: position 0 is the bit just below the
                // leading one.
                let shift = s.raw_bits - 1 - position;
                let bit = (s.raw >> shift) & 1;
                let above = if position == 0 {
                    0
                } else {
                    // The (up to) two bits above, with a marker bit so
                    // "no bit" and "zero" differ.
                    let take = position.min(2);
                    (1 << take) | ((s.raw >> (shift + 1)) & ((1 << take) - 1))
                };
                let position8 = position.min(31) as u8;
                raw.entry((table, s.context, s.symbol, position8, 0))
                    .or_default()[bit as usize] += 1;
                let slot = adaptive
                    .entry((table, s.context, s.symbol, position8, above as u8))
                    .or_default();
                // Krichevsky–Trofimov: (count + 1/2) / (total + 1).
                let p = (slot[bit as usize] as f64 + 0.5) / ((slot[0] + slot[1]) as f64 + 1.0);
                bound.raw_adaptive -= p.log2();
                bound.parts[part_of(table, s.context)].raw_adaptive -= p.log2();
                slot[bit as usize] += 1;
            }
        }
        close_update(&mut update, &range, &mut bound);
        // The trace accounts for the message as the engine's reader read
        // it: every bit of the entity entries, and no more than the player
        // state's and the ends' bits (an escaped changed-element set's
        // gaps are no symbols).
        let entries = breakdown.update_bits() + breakdown.removal_bits as u64;
        if entry_bits != entries
            || player_bits > breakdown.player_bits as u64
            || end_bits > breakdown.end_bits as u64
        {
            return Err(Error::Engine(format!(
                "the symbol trace of the message at {time} does not account for it: entries \
                 {entry_bits} of {entries} bits, player state {player_bits} of {}, ends \
                 {end_bits} of {}",
                breakdown.player_bits, breakdown.end_bits
            )));
        }
        bound.messages += 1;
        bound.q3_bytes += owned.reference.reencoded_bits.div_ceil(8) as u64;
        bound.native_bits += bits as u64;
        bound.native_bytes += breakdown.sent_bytes.unwrap_or(bits.div_ceil(8)) as u64;
        bound.header_bits += breakdown.header_bits as u64;
        bound.symbols += trace.symbols.len() as u64;
        bound.symbol_bits += symbol_bits;
        bound.raw_bits += raw_bits;
        bound.entity_updates += breakdown.updates.len() as u64;
        bound.entity_update_bits += breakdown.update_bits();
        let accounted = breakdown.header_bits as u64 + symbol_bits + raw_bits;
        let other = (bits as u64).checked_sub(accounted).ok_or_else(|| {
            Error::Engine(format!(
                "message at {time} traced {accounted} bits of {bits}"
            ))
        })?;
        bound.other_bits += other;
        // The other bits not coded yet, raw, last, as ones: no zeros at
        // the end for the coder to drop.
        encode_ones(&mut range, other)?;
        let (_, coded) = range.finish();
        bound.range_bits += coded as u64;
        bound.range_bytes += coded.div_ceil(8) as u64;
        Ok(())
    })?;
    bound.status = match end {
        RunEnd::Complete => "complete".into(),
        RunEnd::Stopped(why) => format!("stopped: {why}"),
    };
    bound.fields = field_costs
        .into_iter()
        .map(|((table, field), cost)| {
            let (table_name, fields) = match table {
                Table::Player => ("player", PlayerState::TABLE.fields),
                Table::Entity => ("entity", EntityState::TABLE.fields),
            };
            FieldCost {
                table: table_name.into(),
                name: fields
                    .get(field)
                    .map_or_else(|| format!("#{field}"), |f| f.name.to_string()),
                ..cost
            }
        })
        .collect();
    bound
        .fields
        .sort_by_key(|cost| std::cmp::Reverse(cost.symbol_bits + cost.raw_bits));
    bound.entity_kinds = kinds
        .into_iter()
        .map(|(kind, (cost, fields))| {
            let mut fields: Vec<(String, f64)> = fields
                .into_iter()
                .map(|(field, bits)| {
                    let name = EntityState::TABLE
                        .fields
                        .get(field)
                        .map_or_else(|| format!("#{field}"), |f| f.name.to_string());
                    (name, bits)
                })
                .collect();
            fields.sort_by(|a, b| b.1.total_cmp(&a.1));
            fields.truncate(6);
            EntityKindCost {
                kind,
                fields,
                ..cost
            }
        })
        .collect();
    bound
        .entity_kinds
        .sort_by(|a, b| b.bits().total_cmp(&a.bits()));
    for (&(table, context), symbols) in &counts {
        let h = entropy(symbols.values());
        bound.insample_entropy += h;
        bound.parts[part_of(table, context)].insample_entropy += h;
    }
    for (&(table, context, ..), bits) in &raw {
        let h = entropy(bits.iter());
        bound.raw_entropy += h;
        bound.parts[part_of(table, context)].raw_entropy += h;
    }
    Ok(bound)
}

/// Ends the entity update being range-coded: a changed or added entity's
/// bits count towards bits per changed entity.
fn close_update(
    update: &mut Option<(SymbolOf, usize)>,
    range: &RangeWriter,
    bound: &mut DemoBound,
) {
    if let Some((SymbolOf::Entity { kind, .. }, start)) = update.take() {
        if kind != UpdateKind::Removed {
            bound.range_entity_update_bits += (range.bits_written() - start) as u64;
        }
    }
}

/// Codes `count` raw one bits (standing for bits whose values the trace
/// does not have; ones, so the coder's end gains nothing from them).
fn encode_ones(range: &mut RangeWriter, mut count: u64) -> Result<(), Error> {
    while count > 0 {
        let take = count.min(32) as u32;
        range.put_bits(u32::MAX >> (32 - take), take)?;
        count -= u64::from(take);
    }
    Ok(())
}

/// The total information of counts `counts` under their own frequencies:
/// `sum c log2(n / c)`, in bits.
fn entropy<'a>(counts: impl Iterator<Item = &'a u64> + Clone) -> f64 {
    let total: u64 = counts.clone().sum();
    counts
        .filter(|&&c| c > 0)
        .map(|&c| c as f64 * (total as f64 / c as f64).log2())
        .sum()
}

/// The bound of several demos and their pooled totals.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BoundReport {
    /// One per demo that had messages.
    pub demos: Vec<DemoBound>,
}

/// The report as a Markdown table (bytes per message; ×q3 in brackets).
pub fn render_markdown(report: &BoundReport) -> String {
    let mut out = String::new();
    out.push_str(
        "| demo | msgs | q3 B | today B | range coder B | ideal coder B | + raw bits coded B | in-sample floor B | coder loss | model loss | raw bits (today → adaptive) | header + other + padding | bits/changed entity: today → range |\n",
    );
    out.push_str("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |\n");
    let mut pooled = DemoBound {
        name: "pooled".into(),
        ..DemoBound::default()
    };
    for d in &report.demos {
        out.push_str(&row(d));
        pooled.messages += d.messages;
        pooled.q3_bytes += d.q3_bytes;
        pooled.native_bytes += d.native_bytes;
        pooled.native_bits += d.native_bits;
        pooled.header_bits += d.header_bits;
        pooled.symbols += d.symbols;
        pooled.symbol_bits += d.symbol_bits;
        pooled.cross_entropy += d.cross_entropy;
        pooled.insample_entropy += d.insample_entropy;
        pooled.raw_bits += d.raw_bits;
        pooled.raw_entropy += d.raw_entropy;
        pooled.raw_adaptive += d.raw_adaptive;
        pooled.other_bits += d.other_bits;
        pooled.entity_updates += d.entity_updates;
        pooled.range_bits += d.range_bits;
        pooled.entity_update_bits += d.entity_update_bits;
        pooled.range_entity_update_bits += d.range_entity_update_bits;
        pooled.range_bytes += d.range_bytes;
    }
    if report.demos.len() > 1 {
        out.push_str(&row(&pooled));
    }
    for d in &report.demos {
        if d.name.contains("duel") {
            out.push('\n');
            out.push_str(&parts_table(d));
            out.push('\n');
            out.push_str(&fields_table(d, 16));
            out.push('\n');
            out.push_str(&entity_kinds_table(d));
        }
    }
    out
}

/// Where a demo's symbol and raw bits go, per kind of symbol: bits per
/// message.
pub fn parts_table(d: &DemoBound) -> String {
    let per = |bits: f64| bits / d.messages.max(1) as f64;
    let mut out = format!(
        "| {} (bits per message) | Huffman today | cross-entropy | in-sample | raw today | raw adaptive | raw in-sample |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
        d.name
    );
    for p in &d.parts {
        out.push_str(&format!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
            p.name,
            per(p.symbol_bits as f64),
            per(p.cross_entropy),
            per(p.insample_entropy),
            per(p.raw_bits as f64),
            per(p.raw_adaptive),
            per(p.raw_entropy),
        ));
    }
    out
}

/// Where a demo's entity bits go, per entity type and kind of update:
/// updates and bits per update (symbols at their cross-entropy).
pub fn entity_kinds_table(d: &DemoBound) -> String {
    let mut out = format!(
        "| {} entities | updates | bits/update | number | pattern | values | costliest values (bits/update) |\n| --- | ---: | ---: | ---: | ---: | ---: | --- |\n",
        d.name
    );
    for k in &d.entity_kinds {
        let per = |bits: f64| bits / k.updates.max(1) as f64;
        let fields: Vec<String> = k
            .fields
            .iter()
            .map(|(name, bits)| format!("{name} {:.1}", per(*bits)))
            .collect();
        out.push_str(&format!(
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {} |\n",
            k.kind,
            k.updates,
            per(k.bits()),
            per(k.number_bits),
            per(k.pattern_bits),
            per(k.value_bits),
            fields.join(", "),
        ));
    }
    out
}

/// The `top` fields whose values cost the most: bits per message.
pub fn fields_table(d: &DemoBound, top: usize) -> String {
    let per = |bits: f64| bits / d.messages.max(1) as f64;
    let mut out = format!(
        "| {} (bits per message) | values | Huffman today | cross-entropy | raw bits |\n| --- | ---: | ---: | ---: | ---: |\n",
        d.name
    );
    for cost in d.fields.iter().take(top) {
        out.push_str(&format!(
            "| {} {} | {:.2} | {:.1} | {:.1} | {:.1} |\n",
            cost.table,
            cost.name,
            per(cost.values as f64),
            per(cost.symbol_bits as f64),
            per(cost.cross_entropy),
            per(cost.raw_bits as f64),
        ));
    }
    out
}

fn row(d: &DemoBound) -> String {
    let q3 = d.q3_mean_bytes();
    let ratio = |b: f64| format!("{b:.2} ({:.3})", b / q3);
    format!(
        "| {} | {} | {:.1} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.2} → {:.2} | {:.2} | {:.1} → {:.1} |\n",
        d.name,
        d.messages,
        q3,
        ratio(d.native_mean_bytes()),
        ratio(d.range_bytes as f64 / d.messages.max(1) as f64),
        ratio(d.ideal_coder_bytes()),
        ratio(d.ideal_coder_raw_bytes()),
        ratio(d.insample_bytes()),
        d.coder_loss(),
        d.model_loss(),
        d.raw_cost(),
        d.per_message(d.raw_adaptive),
        d.per_message((d.header_bits + d.other_bits) as f64) + d.padding(),
        d.entity_update_bits as f64 / d.entity_updates.max(1) as f64,
        d.range_entity_update_bits as f64 / d.entity_updates.max(1) as f64,
    )
}
