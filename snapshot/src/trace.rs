//! What a decoded snapshot carried, field by field: for tests, demo dumps
//! and debugging. Opt-in ([`Client::set_trace`](crate::Client::set_trace)),
//! since it compares every decoded state with its base. A native
//! message's symbols, with the models that coded them, are a second
//! opt-in ([`SymbolTrace`]), for entropy reports.

use std::fmt;
use std::sync::Arc;

use fields::codec::HeldNumbers;
use fields::model::{trace_delta, trace_entity_list, Context, NativeModel, TracedSymbol};
use fields::{DeltaContext, Fields, StartChoice};

/// A set of field indices (a table has at most 255 fields).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FieldMask([u64; 4]);

impl FieldMask {
    /// The empty set.
    pub const fn new() -> Self {
        FieldMask([0; 4])
    }

    /// The fields whose words differ between `a` and `b`.
    pub fn diff<T: Fields>(a: &T, b: &T) -> Self {
        let mut mask = FieldMask::new();
        for field in 0..a.field_count().min(256) {
            if a.field_differs(b, field) {
                mask.insert(field);
            }
        }
        mask
    }

    /// Adds field `index` (below 256).
    pub fn insert(&mut self, index: usize) {
        if let Some(word) = self.0.get_mut(index / 64) {
            *word |= 1 << (index % 64);
        }
    }

    /// Whether field `index` is in the set.
    pub fn contains(&self, index: usize) -> bool {
        self.0
            .get(index / 64)
            .is_some_and(|word| word & (1 << (index % 64)) != 0)
    }

    /// Members in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..256).filter(move |&i| self.contains(i))
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
}

impl fmt::Debug for FieldMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl FromIterator<usize> for FieldMask {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut mask = FieldMask::new();
        for index in iter {
            mask.insert(index);
        }
        mask
    }
}

/// How an entity appeared in a snapshot message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateKind {
    /// New to the client: a delta from its spawn baseline or the zeroed entity.
    Added,
    /// Held before: a delta from its state in the base snapshot.
    Changed,
    /// New to the base but held in an older snapshot of its chain: a delta
    /// from its state there (see [`crate::history`]).
    Reentered,
    /// Removed from the client's view.
    Removed,
}

/// One entity update of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntityTrace {
    /// Entity number.
    pub number: u32,
    /// What kind of update.
    pub kind: UpdateKind,
    /// Fields that differ from the state it was decoded against.
    pub fields: FieldMask,
    /// Its bits in the message, entity number included.
    pub bits: u32,
}

/// Everything one snapshot message carried.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotTrace {
    /// Its sequence number.
    pub sequence: u32,
    /// Its base (`None`: a full update).
    pub base: Option<u32>,
    /// Player-state fields that differ from the base's player state.
    pub player_fields: FieldMask,
    /// Entity updates in message order.
    pub entities: Vec<EntityTrace>,
    /// Message length in bits, padding excluded.
    pub bits: usize,
    /// Bits of the header.
    pub header_bits: usize,
    /// Bits of the player-state delta.
    pub player_bits: usize,
    /// Bits after the entity updates: the lists' end markers and the
    /// sync checksum.
    pub end_bits: usize,
}

/// What a traced symbol belongs to (see [`SymbolTrace`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolOf {
    /// The player-state delta (coded with the player-state model).
    PlayerState,
    /// One entry of an entity list: its number and, unless it is a
    /// removal, its delta (coded with the entity model); the first entry
    /// also the list's start ([`fields::model::Context::ListStart`]), which
    /// the message writes before its number.
    Entity {
        /// Entity number.
        number: u32,
        /// What kind of update.
        kind: UpdateKind,
    },
    /// An entity list's end marker (coded with the entity model), or an
    /// empty list's start, its one symbol.
    ListEnd,
}

/// One symbol of a message as the native codec coded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodedSymbol {
    /// What it belongs to, which says the model that coded it
    /// ([`SymbolTrace::model_of`]).
    pub of: SymbolOf,
    /// The symbol, its context and the raw bits after it.
    pub symbol: TracedSymbol,
}

/// Every symbol one native snapshot message coded, in the order of the
/// message, with the models that coded them: what an entropy report
/// prices (each symbol's code word, its probability under the model, the
/// raw bits below a value's leading one). Opt-in
/// ([`Client::set_symbol_trace`](crate::Client::set_symbol_trace)): it
/// walks every decoded delta again. Bits the codec writes outside any
/// symbol (the header, an array's changed-element set that its
/// dictionary does not hold, after the escape symbol, the sync checksum)
/// are not in it; nor is a list's start when the entity model has no
/// list-start counts (it is a plain bit then).
///
/// A list's entries are in the message's order, the list's start symbol
/// ([`fields::model::Context::ListStart`], a decision by
/// [`NativeModel::list_start`]) first, each entry's number symbol before
/// its delta's symbols, and the list's end marker last (an empty list is
/// its start alone); a chained snapshot's two lists follow each other.
#[derive(Debug, Clone, Default)]
pub struct SymbolTrace {
    /// The entity model the message was coded with (`None`: the q3 codec,
    /// or a type without a model: no symbols then).
    pub entity_model: Option<Arc<NativeModel>>,
    /// The player-state model.
    pub player_model: Option<Arc<NativeModel>>,
    /// The symbols, in message order.
    pub symbols: Vec<CodedSymbol>,
    /// A list's entries while it is read: number, kind, the choice of
    /// start it carried, and how many delta symbols it pushed.
    entries: Vec<(u32, UpdateKind, Option<StartChoice>, usize)>,
    /// A list's delta symbols while its number symbols are put before them.
    deltas: Vec<CodedSymbol>,
}

impl SymbolTrace {
    /// The model that coded symbols of `of`, if the trace has it.
    pub fn model_of(&self, of: SymbolOf) -> Option<&Arc<NativeModel>> {
        match of {
            SymbolOf::PlayerState => self.player_model.as_ref(),
            SymbolOf::Entity { .. } | SymbolOf::ListEnd => self.entity_model.as_ref(),
        }
    }

    /// Starts a message coded with `entity` and `player`.
    pub(crate) fn start(
        &mut self,
        entity: Option<Arc<NativeModel>>,
        player: Option<Arc<NativeModel>>,
    ) {
        self.entity_model = entity;
        self.player_model = player;
        self.symbols.clear();
        self.entries.clear();
        self.deltas.clear();
    }

    /// Traces the player-state delta from `base` to `new`.
    pub(crate) fn player<P: Fields>(&mut self, base: &P, new: &P, context: &DeltaContext) {
        let Some(model) = self.player_model.as_deref() else {
            return;
        };
        let symbols = &mut self.symbols;
        trace_delta(model, base, new, context, &mut |symbol| {
            symbols.push(CodedSymbol {
                of: SymbolOf::PlayerState,
                symbol,
            })
        });
    }

    /// Traces one entry of the entity list being read: a delta from `base`
    /// to `new` (`None`: the entity was removed) in `context`, after the
    /// choice of start its number carried, if any.
    pub(crate) fn entry<E: Fields>(
        &mut self,
        number: u32,
        kind: UpdateKind,
        choice: Option<StartChoice>,
        update: Option<(&E, &E)>,
        context: &DeltaContext,
    ) {
        let Some(model) = self.entity_model.as_deref() else {
            return;
        };
        let before = self.deltas.len();
        if let Some((base, new)) = update {
            let deltas = &mut self.deltas;
            let of = SymbolOf::Entity { number, kind };
            trace_delta(model, base, new, context, &mut |symbol| {
                deltas.push(CodedSymbol { of, symbol })
            });
        }
        self.entries
            .push((number, kind, choice, self.deltas.len() - before));
    }

    /// Ends the list whose entries were given since the last call, against
    /// a receiver holding `held`: each entry's number symbol goes before
    /// its delta's symbols, the end marker after them.
    pub(crate) fn end_list(&mut self, held: &dyn HeldNumbers) {
        if self.entity_model.is_none() {
            return;
        }
        // A model without list-start counts writes it as a plain bit: no
        // symbol.
        let coded_start = self
            .entity_model
            .as_deref()
            .is_some_and(|model| model.list_start().is_some());
        let (symbols, entries, deltas) = (&mut self.symbols, &self.entries, &self.deltas);
        let mut next = 0;
        let mut taken = 0;
        let numbers = entries
            .iter()
            .map(|&(number, kind, _, _)| (number, kind == UpdateKind::Removed));
        // One number symbol per entry, in order (the client refuses the
        // removal of an entity it does not hold, the one entry without a
        // symbol, before the list ends), then the end marker.
        trace_entity_list(numbers, held, &mut |mut symbol| match entries.get(next) {
            _ if symbol.context == Context::ListStart && !coded_start => {}
            // The list's start goes with its first entry (an empty list's
            // with its end, as the message's bits go).
            Some(&(number, kind, _, _)) if symbol.context == Context::ListStart => {
                symbols.push(CodedSymbol {
                    of: SymbolOf::Entity { number, kind },
                    symbol,
                })
            }
            Some(&(number, kind, choice, count)) => {
                // A choice of start is the one bit after the number's raw
                // bits: traced as one more of them (a bit stream's exact
                // bits; a range coder codes it by its chance).
                if let Some(choice) = choice {
                    symbol.raw |= u32::from(choice == StartChoice::Held) << symbol.raw_bits;
                    symbol.raw_bits += 1;
                }
                symbols.push(CodedSymbol {
                    of: SymbolOf::Entity { number, kind },
                    symbol,
                });
                symbols.extend_from_slice(&deltas[taken..taken + count]);
                taken += count;
                next += 1;
            }
            None => symbols.push(CodedSymbol {
                of: SymbolOf::ListEnd,
                symbol,
            }),
        });
        self.entries.clear();
        self.deltas.clear();
    }
}
