//! Models that adapt to the stream they code, without a byte on the wire.
//!
//! A model trained on other games codes a new game's symbols with the
//! other games' habits: how often its client skips frames, which of its
//! flags toggle, how far its players move between snapshots. Both ends
//! see this game's symbols as they go, so both can count them; the
//! difficulty is that a lossy link makes them see different sets of
//! messages. Counting along the *delta chain* removes the difference:
//!
//! * Every state holds an [`Adaptation`]: the model a message from it is
//!   coded with, and the symbols of the messages that led to it (each
//!   message's base, that base's base, and so on, back to the last
//!   rebuild).
//! * A message from a base is coded with the base's model, and its state's
//!   adaptation is the base's plus the message's own symbols
//!   ([`Adaptation::after`]).
//! * Once a chain is as long as the policy's schedule says
//!   ([`AdaptPolicy::chain_at`]), the next message from it is coded with a
//!   model rebuilt from the chain's model's counts plus the chain's
//!   symbols, each worth [`AdaptPolicy::weight`] training symbols
//!   ([`Adaptation::for_next`]), and starts a new chain, one generation
//!   later.
//! * The schedule adapts fast at a stream's start and then settles: the
//!   first chain is [`AdaptPolicy::first_chain`] messages long and each
//!   later one twice the one before, up to [`AdaptPolicy::chain_length`].
//!   A stream's first messages are where the trained model is furthest
//!   from the game, and a few dozen messages already show its habits; the
//!   later rebuilds each add less, so they come rarer. Each state counts
//!   its chain's generation, so both ends agree on every chain's length.
//!
//! * With [`AdaptPolicy::lead`], the rebuild starts earlier, on a
//!   background thread: when a chain is `lead` messages short of its
//!   length, from the chain as it stands then. A chain shorter than twice
//!   the lead starts it halfway instead ([`AdaptPolicy::lead_at`]), so a
//!   short early chain still gives the rebuild half its messages' time
//!   and its rebuild still holds half its symbols. Every state after it
//!   in the chain shares that rebuild, and the next chain starts with it
//!   and with the symbols of the messages after its start, which the
//!   next rebuild counts: no message's symbols go uncounted. Both ends
//!   start it from the same state, so it holds the same symbols whenever
//!   it finishes; a message only waits for it if it is still not done
//!   when the chain ends ([`Adaptation::would_wait`]).
//!
//! A client decodes a message only from a base it holds, and it holds
//! that base's adaptation because it decoded every message of the chain;
//! the server codes from a base the client acknowledged. So the two ends
//! always rebuild from the same symbols, whatever the link lost, and
//! nothing about the models is ever sent. A full snapshot (no base)
//! starts again from the trained model.

use std::sync::{Arc, Condvar, Mutex, OnceLock};

use crate::codec::{DeltaContext, HeldNumbers};
use crate::error::BitError;
use crate::table::Fields;

use super::{visit_entity_list, Context, ModelData, NativeModel, TableKind, Touched};

/// How a model adapts (see the [module docs](self)). Serializable: a demo
/// of an adapting stream carries it, so its player adapts alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AdaptPolicy {
    /// Messages in a chain before the next one is coded with a rebuilt
    /// model (1 to [`AdaptPolicy::MAX_CHAIN`]; larger values are taken as
    /// that).
    pub chain_length: u32,
    /// Messages in a stream's first chain (and a full snapshot's): each
    /// later chain is twice as long as the one before, until they are
    /// [`AdaptPolicy::chain_length`] long. 0, or not below
    /// `chain_length`: every chain is `chain_length` long.
    pub first_chain: u32,
    /// What one symbol of the stream counts for against one symbol of the
    /// training data. Trained counts come from many games, so a symbol of
    /// the game being coded is worth far more than one of them.
    pub weight: u32,
    /// Messages before a chain's end at which its rebuild starts, on a
    /// background thread, from the chain as it stands then (see the
    /// [module docs](self)); 0: at the chain's end, on the thread that
    /// needs it. An engine that must never stall a frame on a rebuild sets
    /// it to more messages than a rebuild takes to finish.
    pub lead: u32,
}

impl AdaptPolicy {
    /// Longest chain: bounds the symbols a state keeps alive.
    pub const MAX_CHAIN: u32 = 1024;

    /// What the delta-size report uses on Quake 3's demos (see
    /// `benches/README.md`): a first chain of 16 messages, then 32, 64,
    /// and a rebuild every 128 messages from then on; a stream symbol
    /// worth 4096 training ones.
    ///
    /// Leave-one-out, range-coded (delta-size's `native_loo_range`), the
    /// short early chains took the eight shared demos from 501,389 to
    /// 500,556 bytes (0.3976 → 0.3969 × Quake 3's): the short demos most
    /// (one_frag_only_with_plasma 0.3430 → 0.3350, truncated 0.3480 →
    /// 0.3417, cpma_core_gameplay_dev 0.2009 → 0.1795), the duel 0.4091 →
    /// 0.4088. First chains of 4 or 8 did as well (500,395 and 500,529
    /// bytes) for one or two more rebuilds; a weight of 8192 helped the
    /// short demos (plasma 0.3341, truncated 0.3396) and cost the duel
    /// (0.4091; 500,831 bytes in all), 2048 and 16,384 cost more (500,870
    /// and 501,626), chains growing to 256 too (501,230). Earlier, with
    /// fixed 64-message chains, weights of 256 or 1024 saved less (duel
    /// leave-one-out 0.4404 and 0.4362, against 0.4351 at 4096).
    pub const DEFAULT: AdaptPolicy = AdaptPolicy {
        chain_length: 128,
        first_chain: 16,
        weight: 4096,
        lead: 0,
    };

    /// What a live engine uses: [`AdaptPolicy::DEFAULT`]'s chains and
    /// weight, with the rebuild started 16 messages (0.8 s at 20 Hz)
    /// before the chain's end on a background thread, so no frame waits
    /// for it. The first chain's rebuild starts 8 messages early (half its
    /// 16: [`AdaptPolicy::lead_at`]), 0.4 s at 20 Hz, against a rebuild's
    /// few tens of milliseconds.
    ///
    /// On the same demos, leave-one-out and range-coded, this policy took
    /// 499,828 bytes with fixed 128-message chains (one_frag_only_with_plasma,
    /// truncated, door_lift, cpma_core_gameplay_dev and the duel) and
    /// 499,214 with the short early chains. Without the symbols an early
    /// rebuild missed carried to the next chain, short chains (whose
    /// rebuilds miss half their messages) gained little (truncated 0.3497
    /// × Quake 3's bytes, against 0.3499 fixed and 0.3462 carried).
    pub const LIVE: AdaptPolicy = AdaptPolicy {
        lead: 16,
        ..Self::DEFAULT
    };

    fn chain(&self) -> u32 {
        self.chain_length.clamp(1, Self::MAX_CHAIN)
    }

    /// Messages in the chain of `generation` (0: a stream's first chain,
    /// after a full snapshot or the stream's start; each rebuild starts
    /// the next): [`AdaptPolicy::first_chain`] doubled once per
    /// generation, up to [`AdaptPolicy::chain_length`].
    pub fn chain_at(&self, generation: u32) -> u32 {
        let longest = self.chain();
        if self.first_chain == 0 || self.first_chain >= longest {
            return longest;
        }
        let length = u64::from(self.first_chain) << generation.min(32);
        u32::try_from(length).map_or(longest, |length| length.min(longest))
    }

    /// Messages before the end of the chain of `generation` at which its
    /// rebuild starts: [`AdaptPolicy::lead`], but no more than half the
    /// chain (rounded down), so a short early chain's rebuild still holds
    /// its first half. 0: the rebuild is made when the chain ends (no
    /// lead, or a chain of one message).
    pub fn lead_at(&self, generation: u32) -> u32 {
        self.lead.min(self.chain_at(generation) / 2)
    }

    /// The chain length at which the early rebuild of the chain of
    /// `generation` starts (`None`: none starts early).
    fn early_start(&self, generation: u32) -> Option<u32> {
        let lead = self.lead_at(generation);
        (lead > 0).then(|| self.chain_at(generation) - lead)
    }
}

impl Default for AdaptPolicy {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Largest total a table's counts keep after a rebuild: above it, every
/// count of the table is halved (rounding up, so no seen symbol becomes
/// unseen). Bounds the counts however long a stream runs, and lets old
/// habits fade. Low enough that smoothing's code weights (about 80 units
/// per count at most, see `smooth`) stay below `u32::MAX`, so frequent
/// symbols keep their proportions instead of all saturating.
const TABLE_TOTAL_LIMIT: u64 = 1 << 24;

/// The symbols one message coded, in order: what [`Adaptation::after`]
/// adds to a chain. Reuse one between messages.
#[derive(Debug, Clone, Default)]
pub struct SymbolTally {
    symbols: Vec<(Context, u8)>,
}

impl SymbolTally {
    /// An empty tally.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties the tally for the next message.
    pub fn clear(&mut self) {
        self.symbols.clear();
    }

    /// Symbols tallied.
    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    /// Whether no symbol is tallied.
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// Tallies the symbols of the delta from `base` to `new` as `model`
    /// codes it in `context` (what [`super::ModelTrainer::observe`] counts).
    pub fn delta<T: Fields>(
        &mut self,
        model: &NativeModel,
        base: &T,
        new: &T,
        context: &DeltaContext,
    ) {
        let symbols = &mut self.symbols;
        crate::codec::native::visit_native_symbols(base, new, model, context, &mut |c, s| {
            symbols.push((c, s))
        });
    }

    /// Tallies the number symbols of one entity list (what
    /// [`super::ModelTrainer::observe_entity_list`] counts).
    pub fn entity_list(
        &mut self,
        entries: impl IntoIterator<Item = (u32, bool)>,
        held: &dyn HeldNumbers,
    ) {
        let symbols = &mut self.symbols;
        visit_entity_list(entries, held, &mut |c, s| symbols.push((c, s)));
    }

    /// The tallied symbols, in order.
    pub fn symbols(&self) -> &[(Context, u8)] {
        &self.symbols
    }

    /// Tallies `symbols` (from another tally's [`SymbolTally::symbols`]):
    /// a cached part of a message, tallied when it was first coded.
    pub fn extend_from(&mut self, symbols: &[(Context, u8)]) {
        self.symbols.extend_from_slice(symbols);
    }

    /// The bits `model`'s codes spend on the tallied symbols (without the
    /// raw bits below them): what a model change saves on them.
    pub fn price(&self, model: &NativeModel) -> u64 {
        self.symbols
            .iter()
            .filter_map(|&(context, symbol)| model.code(context).map(|c| c.bits(symbol)))
            .map(u64::from)
            .sum()
    }
}

/// One message's symbols, linked to those of its base's chain.
#[derive(Debug)]
struct Link {
    parent: Option<Arc<Link>>,
    symbols: Box<[(Context, u8)]>,
}

/// What a state knows about its stream's model (see the
/// [module docs](self)). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Adaptation {
    /// The model the chain's messages were coded with.
    model: Arc<NativeModel>,
    /// The symbols of the chain's messages, newest first, then those of
    /// the previous chain's messages its early rebuild did not hold.
    chain: Option<Arc<Link>>,
    /// Messages in the chain.
    length: u32,
    /// The model rebuilt from this chain, once a message needed it, and
    /// the symbols the next chain carries: every message sent from the
    /// same base shares them.
    rebuilt: Arc<OnceLock<NextChain>>,
    /// Rebuilds since the trained model: which of the policy's chain
    /// lengths this chain has ([`AdaptPolicy::chain_at`]).
    generation: u32,
    /// The policy of the chain's messages (set by [`Adaptation::for_next`]).
    policy: Option<AdaptPolicy>,
    /// The rebuild started early from a prefix of the chain
    /// ([`AdaptPolicy::lead`]), shared by every state after it.
    early: Option<Arc<EarlyRebuild>>,
}

/// What a chain's rebuild hands the next chain: its model, and the
/// symbols of the messages after the rebuild's start (an early one's),
/// which it did not hold, for the next rebuild to count.
#[derive(Debug)]
struct NextChain {
    model: Arc<NativeModel>,
    carried: Option<Arc<Link>>,
}

/// A rebuild running on a background thread.
struct EarlyRebuild {
    result: Mutex<Option<Result<Arc<NativeModel>, BitError>>>,
    done: Condvar,
    /// The chain as it stood at the start: the messages after it are
    /// carried to the next chain.
    from: Option<Arc<Link>>,
}

impl std::fmt::Debug for EarlyRebuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EarlyRebuild")
            .field("ready", &self.is_ready())
            .finish()
    }
}

impl EarlyRebuild {
    /// Starts rebuilding `model` with the symbols of `chain`.
    fn start(model: Arc<NativeModel>, chain: Option<Arc<Link>>, weight: u32) -> Arc<Self> {
        let job = Arc::new(EarlyRebuild {
            result: Mutex::new(None),
            done: Condvar::new(),
            from: chain.clone(),
        });
        let worker = Arc::clone(&job);
        let inputs = (Arc::clone(&model), chain.clone());
        let spawned = std::thread::Builder::new()
            .name("netq3-model-rebuild".into())
            .spawn(move || {
                let (model, chain) = inputs;
                worker.finish(rebuild(&model, chain.as_deref(), weight));
            });
        if spawned.is_err() {
            // No thread to be had: rebuild here (the same result, later).
            job.finish(rebuild(&model, chain.as_deref(), weight));
        }
        job
    }

    fn finish(&self, result: Result<NativeModel, BitError>) {
        let mut slot = self.result.lock().unwrap_or_else(|e| e.into_inner());
        *slot = Some(result.map(Arc::new));
        self.done.notify_all();
    }

    fn is_ready(&self) -> bool {
        self.result
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// The rebuilt model, waiting for it if it is not done.
    fn wait(&self) -> Result<Arc<NativeModel>, BitError> {
        let mut slot = self.result.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(result) = slot.as_ref() {
                return result.clone();
            }
            slot = self.done.wait(slot).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Adaptation {
    /// The start of a stream (or a full snapshot): the trained model, no
    /// symbols.
    pub fn new(model: Arc<NativeModel>) -> Self {
        Adaptation {
            model,
            chain: None,
            length: 0,
            rebuilt: Arc::default(),
            generation: 0,
            policy: None,
            early: None,
        }
    }

    /// Whether [`Adaptation::for_next`] under `policy` would have to wait
    /// for a rebuild: the chain is due and its rebuild is not done (an
    /// early one still running, or none started).
    pub fn would_wait(&self, policy: &AdaptPolicy) -> bool {
        self.length >= policy.chain_at(self.generation)
            && match &self.early {
                Some(early) => !early.is_ready(),
                None => self.rebuilt.get().is_none(),
            }
    }

    /// The model a message coded with this adaptation uses.
    pub fn model(&self) -> &Arc<NativeModel> {
        &self.model
    }

    /// Messages in the chain so far.
    pub fn length(&self) -> u32 {
        self.length
    }

    /// Rebuilds since the trained model (0: the stream's first chain).
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The adaptation that codes a message from a base holding this one:
    /// this one, or, once its chain is as long as `policy` makes its
    /// generation's chains ([`AdaptPolicy::chain_at`]), a new chain with
    /// the rebuilt model, one generation later. Fails only if the rebuilt
    /// counts make no model (they cannot, from a valid one).
    pub fn for_next(&self, policy: &AdaptPolicy) -> Result<Adaptation, BitError> {
        if self.length < policy.chain_at(self.generation) {
            return Ok(Adaptation {
                policy: Some(*policy),
                ..self.clone()
            });
        }
        let next = match self.rebuilt.get() {
            Some(next) => next,
            None => {
                let next = match &self.early {
                    Some(early) => NextChain {
                        model: early.wait()?,
                        carried: carried_after(self.chain.as_ref(), early.from.as_ref()),
                    },
                    None => NextChain {
                        model: Arc::new(rebuild(
                            &self.model,
                            self.chain.as_deref(),
                            policy.weight,
                        )?),
                        carried: None,
                    },
                };
                self.rebuilt.get_or_init(|| next)
            }
        };
        Ok(Adaptation {
            chain: next.carried.clone(),
            policy: Some(*policy),
            generation: self.generation.saturating_add(1),
            ..Adaptation::new(Arc::clone(&next.model))
        })
    }

    /// The adaptation of a state reached by a message coded with this one
    /// (from [`Adaptation::for_next`]), whose symbols `tally` holds.
    /// With a policy that has a [`AdaptPolicy::lead`], the state that
    /// reaches the chain length where the early rebuild starts starts it.
    pub fn after(&self, tally: &SymbolTally) -> Adaptation {
        let chain = Some(Arc::new(Link {
            parent: self.chain.clone(),
            symbols: tally.symbols.clone().into_boxed_slice(),
        }));
        let length = self.length.saturating_add(1);
        let early = match (&self.early, self.policy) {
            (Some(early), _) => Some(Arc::clone(early)),
            (None, Some(policy)) if policy.early_start(self.generation) == Some(length) => Some(
                EarlyRebuild::start(Arc::clone(&self.model), chain.clone(), policy.weight),
            ),
            _ => None,
        };
        Adaptation {
            model: Arc::clone(&self.model),
            chain,
            length,
            rebuilt: Arc::default(),
            generation: self.generation,
            policy: self.policy,
            early,
        }
    }
}

/// The symbols of the links of `chain` newer than `from`, in one link:
/// what an early rebuild started at `from` did not hold. `None` if there
/// are none.
fn carried_after(chain: Option<&Arc<Link>>, from: Option<&Arc<Link>>) -> Option<Arc<Link>> {
    let mut symbols = Vec::new();
    let mut link = chain;
    while let Some(l) = link {
        if from.is_some_and(|from| Arc::ptr_eq(l, from)) {
            break;
        }
        symbols.extend_from_slice(&l.symbols);
        link = l.parent.as_ref();
    }
    (!symbols.is_empty()).then(|| {
        Arc::new(Link {
            parent: None,
            symbols: symbols.into_boxed_slice(),
        })
    })
}

/// `model`'s counts plus the symbols of `chain`, `weight` each; only the
/// codes of the tables they touch are rebuilt.
fn rebuild(
    model: &NativeModel,
    chain: Option<&Link>,
    weight: u32,
) -> Result<NativeModel, BitError> {
    let mut data = model.data().clone();
    let mut touched = Touched::none(&data);
    let mut link = chain;
    while let Some(l) = link {
        for &(context, symbol) in l.symbols.iter() {
            // A list's start is tallied whatever the model; one that
            // writes it as a raw bit does not count it.
            if context == Context::ListStart && model.list_start().is_none() {
                continue;
            }
            data.add(context, symbol, weight);
            touched.mark(&data, context);
        }
        link = l.parent.as_deref();
    }
    for (kind, index) in halve_full_tables(&mut data) {
        touched.mark_table(&data, kind, index);
    }
    for field in halve_full_top_bits(&mut data) {
        touched.top_bits[field] = true;
    }
    model.with_counts(data, &touched)
}

/// Halves every table of `data` whose total is above
/// [`TABLE_TOTAL_LIMIT`], until it is not, and returns which it halved.
fn halve_full_tables(data: &mut ModelData) -> Vec<(TableKind, usize)> {
    let mut halved = Vec::new();
    let kinds = [
        (TableKind::LastGroup, &mut data.last_group),
        (TableKind::Groups, &mut data.groups),
        (TableKind::Values, &mut data.values),
        (TableKind::Numbers, &mut data.numbers),
        (TableKind::Elements, &mut data.elements),
    ];
    for (kind, tables) in kinds {
        for (index, table) in tables.iter_mut().enumerate() {
            while table.iter().map(|&c| u64::from(c)).sum::<u64>() > TABLE_TOTAL_LIMIT {
                table.iter_mut().for_each(|c| *c = c.div_ceil(2));
                if halved.last() != Some(&(kind, index)) {
                    halved.push((kind, index));
                }
            }
        }
    }
    while data.list_start.iter().map(|&c| u64::from(c)).sum::<u64>() > TABLE_TOTAL_LIMIT {
        data.list_start.iter_mut().for_each(|c| *c = c.div_ceil(2));
        if halved.last() != Some(&(TableKind::ListStart, 0)) {
            halved.push((TableKind::ListStart, 0));
        }
    }
    halved
}

/// Halves every top-bit node of `data` ([`ModelData::top_bits`]) seen
/// more than [`TABLE_TOTAL_LIMIT`] times, keeping its chance, and returns
/// the fields it halved.
fn halve_full_top_bits(data: &mut ModelData) -> Vec<usize> {
    let mut halved = Vec::new();
    for (field, counts) in data.top_bits.iter_mut().enumerate() {
        for node in counts.chunks_exact_mut(2) {
            while u64::from(node[0]) + u64::from(node[1]) > TABLE_TOTAL_LIMIT {
                node.iter_mut().for_each(|c| *c = c.div_ceil(2));
                if halved.last() != Some(&field) {
                    halved.push(field);
                }
            }
        }
    }
    halved
}

impl Drop for Link {
    /// Unlinks the chain iteratively: a long chain dropped at once would
    /// otherwise recurse once per message.
    fn drop(&mut self) {
        let mut parent = self.parent.take();
        while let Some(link) = parent {
            match Arc::try_unwrap(link) {
                Ok(mut link) => parent = link.parent.take(),
                Err(_) => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ModelTrainer, ValueContext};
    use crate::table::NetFields;

    crate::net_struct! {
        struct Pair { a: u8 = crate::kind::unsigned(8), b: u8 = crate::kind::unsigned(8) }
    }

    /// A model trained on streams where only `b` changes, by one.
    fn trained() -> Arc<NativeModel> {
        let mut trainer = ModelTrainer::new(Pair::TABLE.schema().fingerprint(), 2);
        for i in 0..200u8 {
            let base = Pair { a: 0, b: i };
            let new = Pair {
                a: 0,
                b: i.wrapping_add(1),
            };
            trainer.observe(&base, &new, &DeltaContext::default());
        }
        Arc::new(NativeModel::new(trainer.finish()).unwrap())
    }

    /// One message of a stream where only `a` changes, to 77: never seen
    /// in training.
    fn tally_of(model: &NativeModel) -> SymbolTally {
        let mut tally = SymbolTally::new();
        let base = Pair { a: 0, b: 9 };
        let new = Pair { a: 77, b: 9 };
        tally.delta(model, &base, &new, &DeltaContext::default());
        tally
    }

    const POLICY: AdaptPolicy = AdaptPolicy {
        chain_length: 4,
        first_chain: 0,
        weight: 16,
        lead: 0,
    };

    #[test]
    fn a_chain_is_rebuilt_after_its_length_with_its_symbols_weighted() {
        let start = Adaptation::new(trained());
        let mut state = start.clone();
        for message in 0..4 {
            let coding = state.for_next(&POLICY).unwrap();
            assert!(
                Arc::ptr_eq(coding.model(), start.model()),
                "message {message}"
            );
            state = coding.after(&tally_of(coding.model()));
        }
        assert_eq!(state.length(), 4);
        let next = state.for_next(&POLICY).unwrap();
        assert!(!Arc::ptr_eq(next.model(), start.model()));
        assert_eq!(next.length(), 0);
        // `a`'s value class from a zero baseline: never counted in
        // training, 4 messages × 16 now.
        let tally = tally_of(start.model());
        assert_eq!(tally.len(), 3, "last group, group pattern, a's value");
        let (Context::Value(0, ValueContext::Zero), class) = tally.symbols[2] else {
            panic!("a's value comes last: {:?}", tally.symbols);
        };
        let values =
            |m: &NativeModel| m.data().values[ValueContext::Zero as usize][usize::from(class)];
        assert_eq!(values(start.model()), 0);
        assert_eq!(values(next.model()), 4 * 16);
        // The stream's own symbols got cheaper: 21 bits before (a class
        // training never saw), 4 after.
        assert_eq!(tally.price(start.model()), 21);
        assert_eq!(tally.price(next.model()), 4);
    }

    #[test]
    fn every_message_from_one_base_shares_its_rebuilt_model() {
        let mut state = Adaptation::new(trained());
        for _ in 0..4 {
            let coding = state.for_next(&POLICY).unwrap();
            state = coding.after(&tally_of(coding.model()));
        }
        let first = state.for_next(&POLICY).unwrap();
        let second = state.for_next(&POLICY).unwrap();
        assert!(Arc::ptr_eq(first.model(), second.model()));
        // A sibling chain with other symbols rebuilds another model.
        let mut other = Adaptation::new(trained());
        for _ in 0..4 {
            let coding = other.for_next(&POLICY).unwrap();
            other = coding.after(&SymbolTally::new());
        }
        let rebuilt = other.for_next(&POLICY).unwrap();
        assert_eq!(rebuilt.model().data(), trained().data());
        assert_ne!(rebuilt.model().data(), first.model().data());
    }

    #[test]
    fn a_rebuilt_model_codes_as_one_built_from_its_counts() {
        let mut state = Adaptation::new(trained());
        for _ in 0..4 {
            let coding = state.for_next(&POLICY).unwrap();
            state = coding.after(&tally_of(coding.model()));
        }
        let rebuilt = state.for_next(&POLICY).unwrap();
        let rebuilt = rebuilt.model();
        let fresh = NativeModel::new(rebuilt.data().clone()).unwrap();
        let data = rebuilt.data();
        let groups = data.groups.len() / data.pattern_sets();
        let contexts = (0..data.pattern_sets())
            .flat_map(|set| {
                let set = set as u8;
                std::iter::once(Context::LastGroup(set))
                    .chain((0..groups).map(move |g| Context::Group(set, g)))
            })
            .chain((0..2).flat_map(|f| {
                [
                    ValueContext::Spawn,
                    ValueContext::Zero,
                    ValueContext::Whole,
                    ValueContext::Fraction,
                ]
                .map(|c| Context::Value(f, c))
            }))
            .chain((0..crate::model::NUMBER_CONTEXTS as u8).map(Context::EntityNumber));
        let mut checked = 0;
        for context in contexts {
            let (a, b) = (rebuilt.code(context).unwrap(), fresh.code(context).unwrap());
            assert!((0..=255u8).all(|s| a.word(s) == b.word(s)), "{context:?}");
            checked += 1;
        }
        assert_eq!(checked, 2 + 2 + 8 + 12, "every table of a two-field model");
        assert_eq!(rebuilt.id(), fresh.id());
    }

    #[test]
    fn top_bit_counts_adapt_along_the_chain() {
        // Trained where `b` steps by 6: its change codes as class symbol 4
        // with raw bits 011 (zigzag 12, less one: 0b1011).
        let mut trainer = ModelTrainer::new(Pair::TABLE.schema().fingerprint(), 2);
        for i in 0..100u8 {
            let base = Pair { a: 0, b: i };
            let new = Pair {
                a: 0,
                b: i.wrapping_add(6),
            };
            trainer.observe(&base, &new, &DeltaContext::default());
        }
        let trained = Arc::new(NativeModel::new(trainer.finish()).unwrap());
        // The first bit's (zeros, ones) in class 4's tree of field `b`.
        let root = |model: &NativeModel| {
            let tree = &model.data().top_bits[1][2 * crate::top_bits::CLASS_CHANCES * 2..];
            (tree[0], tree[1])
        };
        assert_eq!(root(&trained), (100, 0));
        // The stream steps by 7: the same class, raw bits 101.
        let mut state = Adaptation::new(trained.clone());
        for _ in 0..4 {
            let coding = state.for_next(&POLICY).unwrap();
            let mut tally = SymbolTally::new();
            let (base, new) = (Pair { a: 0, b: 9 }, Pair { a: 0, b: 16 });
            tally.delta(coding.model(), &base, &new, &DeltaContext::default());
            // The class symbol, and the top bits seen.
            assert_eq!(tally.len(), 4);
            state = coding.after(&tally);
        }
        let rebuilt = state.for_next(&POLICY).unwrap();
        let rebuilt = rebuilt.model();
        assert_eq!(root(rebuilt), (100, 4 * POLICY.weight));
        let fresh = NativeModel::new(rebuilt.data().clone()).unwrap();
        assert_eq!(rebuilt.top_bits(1), fresh.top_bits(1));
        assert_ne!(rebuilt.top_bits(1), trained.top_bits(1));
        assert!(rebuilt.top_bits(0).is_none());
        assert_eq!(rebuilt.id(), fresh.id());
        assert_ne!(rebuilt.id(), trained.id());
        // A tally given entries no visit makes (no bits, another
        // field's class out of range) changes nothing.
        let mut odd = SymbolTally::new();
        odd.extend_from(&[
            (Context::TopBits(1, 4, 0), 0),
            (Context::TopBits(9, 4, 3), 0b101),
            (Context::TopBits(1, 200, 3), 0b101),
        ]);
        let state = Adaptation::new(trained.clone());
        let mut state = state.for_next(&POLICY).unwrap().after(&odd);
        for _ in 0..3 {
            state = state.for_next(&POLICY).unwrap().after(&SymbolTally::new());
        }
        assert_eq!(
            state.for_next(&POLICY).unwrap().model().data(),
            trained.data()
        );
    }

    #[test]
    fn an_early_rebuild_holds_the_chain_as_it_stood_when_it_started() {
        let early = AdaptPolicy { lead: 2, ..POLICY };
        let (mut early_state, mut late_state) =
            (Adaptation::new(trained()), Adaptation::new(trained()));
        for message in 0..4 {
            // Every message of the early chain has symbols, but only the
            // first two go into its rebuild, started at length 2; the
            // synchronous chain gets the same two and two empty ones.
            let coding = early_state.for_next(&early).unwrap();
            early_state = coding.after(&tally_of(coding.model()));
            let coding = late_state.for_next(&POLICY).unwrap();
            let tally = if message < 2 {
                tally_of(coding.model())
            } else {
                SymbolTally::new()
            };
            late_state = coding.after(&tally);
        }
        let rebuilt = early_state.for_next(&early).unwrap();
        assert!(!early_state.would_wait(&early), "done once waited for");
        assert_eq!(rebuilt.length(), 0, "a new chain");
        let synchronous = late_state.for_next(&POLICY).unwrap();
        assert_eq!(rebuilt.model().id(), synchronous.model().id());
        assert_ne!(rebuilt.model().id(), trained().id());
        // A synchronous rebuild of the early chain holds all four.
        let all_four = early_state.for_next(&POLICY).unwrap();
        assert_eq!(all_four.model().id(), rebuilt.model().id(), "shared");
        let mut whole = Adaptation::new(trained());
        for _ in 0..4 {
            let coding = whole.for_next(&POLICY).unwrap();
            whole = coding.after(&tally_of(coding.model()));
        }
        let whole = whole.for_next(&POLICY).unwrap();
        assert_ne!(whole.model().id(), rebuilt.model().id());
    }

    /// The message counts after which `policy` rebuilt, over `messages`
    /// messages of one chain-following stream.
    fn rebuilds(policy: &AdaptPolicy, messages: u32) -> Vec<u32> {
        let mut state = Adaptation::new(trained());
        let mut at = Vec::new();
        for message in 0..messages {
            let coding = state.for_next(policy).unwrap();
            if !Arc::ptr_eq(coding.model(), state.model()) {
                assert_eq!(coding.generation(), state.generation() + 1);
                at.push(message);
            }
            state = coding.after(&tally_of(coding.model()));
        }
        at
    }

    #[test]
    fn early_chains_are_short_and_double_up_to_the_chain_length() {
        let policy = AdaptPolicy {
            chain_length: 16,
            first_chain: 2,
            ..POLICY
        };
        assert_eq!(
            (0..6).map(|g| policy.chain_at(g)).collect::<Vec<_>>(),
            [2, 4, 8, 16, 16, 16]
        );
        // Chains of 2, 4, 8, then 16 each.
        assert_eq!(rebuilds(&policy, 64), [2, 6, 14, 30, 46, 62]);
        // Without a first chain, every chain is the chain length.
        let fixed = AdaptPolicy {
            first_chain: 0,
            ..policy
        };
        assert_eq!(rebuilds(&fixed, 64), [16, 32, 48]);
        let too_long = AdaptPolicy {
            first_chain: 20,
            ..policy
        };
        assert_eq!(rebuilds(&too_long, 64), [16, 32, 48]);
        // The shipped schedules: 16, 32, 64, then every 128 messages.
        for shipped in [AdaptPolicy::DEFAULT, AdaptPolicy::LIVE] {
            assert_eq!(
                (0..5).map(|g| shipped.chain_at(g)).collect::<Vec<_>>(),
                [16, 32, 64, 128, 128]
            );
        }
        assert_eq!(
            rebuilds(&AdaptPolicy::DEFAULT, 400),
            [16, 48, 112, 240, 368]
        );
        // Far generations stay at the chain length.
        assert_eq!(policy.chain_at(u32::MAX), 16);
    }

    #[test]
    fn a_short_chain_starts_its_early_rebuild_halfway() {
        let policy = AdaptPolicy {
            chain_length: 64,
            first_chain: 4,
            lead: 16,
            ..POLICY
        };
        // Chains of 4, 8, 16, 32, 64: leads of 2, 4, 8, 16, 16.
        assert_eq!(
            (0..5).map(|g| policy.lead_at(g)).collect::<Vec<_>>(),
            [2, 4, 8, 16, 16]
        );
        let single = AdaptPolicy {
            first_chain: 1,
            ..policy
        };
        assert_eq!(single.lead_at(0), 0, "a chain of one rebuilds at its end");
        // The first chain's rebuild starts after 2 of its 4 messages, so
        // it holds those two: `a`'s class counted 2 × the weight.
        let mut state = Adaptation::new(trained());
        for _ in 0..4 {
            let coding = state.for_next(&policy).unwrap();
            state = coding.after(&tally_of(coding.model()));
        }
        let next = state.for_next(&policy).unwrap();
        assert_eq!(next.generation(), 1);
        let class = tally_of(&trained()).symbols[2].1;
        let count = |model: &NativeModel| {
            model.data().values[ValueContext::Zero as usize][usize::from(class)]
        };
        assert_eq!(count(next.model()), 2 * policy.weight);
        // The two it missed are carried to the next chain (of 8, rebuilt
        // from its first 4): its rebuild counts 2 + 4 more, and misses
        // only the 4 the chain after it carries.
        let mut state = next.after(&tally_of(next.model()));
        for _ in 1..8 {
            let coding = state.for_next(&policy).unwrap();
            state = coding.after(&tally_of(coding.model()));
        }
        let next = state.for_next(&policy).unwrap();
        assert_eq!(next.generation(), 2);
        assert_eq!(count(next.model()), (4 + 8 - 4) * policy.weight);
        // The same stream rebuilds at the schedule's lengths with a lead.
        assert_eq!(rebuilds(&policy, 64), [4, 12, 28, 60]);
    }

    #[test]
    fn full_tables_are_halved_below_the_limit() {
        let mut data = trained().data().clone();
        data.values[0][3] = u32::MAX;
        data.values[0][4] = 1;
        assert_eq!(halve_full_tables(&mut data), [(TableKind::Values, 0)]);
        let total: u64 = data.values[0].iter().map(|&c| u64::from(c)).sum();
        assert!(total <= TABLE_TOTAL_LIMIT);
        // 2^32 − 1 halves to 2^24, which with the other count is still over.
        assert_eq!(data.values[0][3], u32::MAX.div_ceil(512));
        assert_eq!(data.values[0][4], 1, "a seen symbol stays seen");
    }

    #[test]
    fn a_long_chain_drops_without_recursing() {
        let model = trained();
        let mut state = Adaptation::new(model);
        let policy = AdaptPolicy {
            chain_length: u32::MAX,
            first_chain: 0,
            weight: 1,
            lead: 0,
        };
        let tally = SymbolTally::new();
        for _ in 0..200_000 {
            // Past the longest chain, keep linking by hand.
            state = state.after(&tally);
        }
        assert_eq!(state.length(), 200_000);
        assert_eq!(policy.chain(), AdaptPolicy::MAX_CHAIN);
        drop(state);
    }
}
