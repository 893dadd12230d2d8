//! Building one client's snapshot: Quake 3's procedure, with TRIBES' budget.
//!
//! 1. Rate: is a snapshot due, and how many bytes may it use?
//! 2. Base: the newest acknowledged snapshot still in the ring, else none
//!    (a full update from the zeroed dummy).
//! 3. View: the newest frame's entities that the scope query keeps.
//! 4. Merge the base's held set with the view, in number order: *added*
//!    (delta from the spawn baseline or the dummy), *re-entered* (native:
//!    an added entity without a spawn baseline that an older snapshot of
//!    the base's chain holds, a delta from its state there; see
//!    [`crate::history`]), *changed* (the stored
//!    state references differ: an integer compare, no field walk), *removed*
//!    (a remove marker), *unchanged* (nothing).
//! 5. Encode header, player-state delta and every update. If that exceeds
//!    the budget, measure each update, keep the mandatory parts (header,
//!    player state, removals, end), add updates in priority order while they
//!    fit, and encode again; left-out updates accumulate priority.
//! 6. Record exactly what the client will hold — the frame, the held set,
//!    and the old state of every left-out change — in the ring slot.

use fields::codec::Held;
use fields::{
    BitError, BitSink, BitWriter, DeltaContext, EntityUpdate, Fields, ModelCodec, StartChoice,
};

use crate::adapt::{Adapted, Tallies};
use crate::bitset::{Bitset, Ones};
use crate::checksum::{state_hash, SyncChecksum};
use crate::config::{MAX_DELTA_DISTANCE, RING_SIZE};
use crate::entity_cache::{EntityCache, SPAWN_BASE};
use crate::error::ServerError;
use crate::frame_store::{Frame, FrameStore, StateSlab};
use crate::framing::{MessageCoding, SnapshotHeader, RATE_DELAYED};
use crate::gamestate::Gamestate;
use crate::history::{BaseChain, Link};
use crate::list_cache::{ListCache, ListHit};
use crate::rate::RateDecision;
use crate::scope::{sanitize, Scope};
use crate::server::{normalize, ClientId, Sent, Server};
use crate::writer::{MessageWriter, RangeScratch};

/// Priority of always-in-scope entities: ahead of every scoped one.
const ALWAYS: f32 = f32::INFINITY;

/// What [`Server::build_snapshot`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BuildOutcome {
    /// The client's snapshot rate has not come round: nothing to send.
    NotDue,
    /// The client's byte budget is overdrawn: nothing to send now; its next
    /// snapshot carries the rate-delayed flag.
    RateDelayed,
    /// A snapshot was written to the output buffer.
    Built(SnapshotInfo),
}

/// A snapshot that was built.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SnapshotInfo {
    /// Its sequence number: what the client acknowledges.
    pub sequence: u32,
    /// The server frame it shows.
    pub frame: u32,
    /// The snapshot it is a delta from (`None`: a full update).
    pub base: Option<u32>,
    /// Message size in bytes (zero-padded).
    pub bytes: usize,
    /// Message size in bits.
    pub bits: usize,
    /// Entity updates written (added, changed, removed).
    pub entities_written: u32,
    /// Entity updates left out for budget (sent later by priority).
    pub entities_deferred: u32,
    /// Entities the client holds after it.
    pub entities_held: u32,
    /// It tells the client an earlier snapshot was rate-delayed.
    pub rate_delayed: bool,
    /// It carries a sync checksum.
    pub has_checksum: bool,
    /// It is chained: the entity list of the previous snapshot again, then
    /// the list from there (see [`crate::message`]).
    pub chained: bool,
    /// With adapting models ([`Models::with_adaptation`](crate::Models::with_adaptation)):
    /// the ids of the entity and player-state models that coded it, which
    /// the client reports for the same snapshot
    /// ([`SnapshotReport::coded_with`](crate::SnapshotReport::coded_with)).
    pub coded_with: Option<[u64; 2]>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpKind {
    Added,
    /// Added, coded from the state an older snapshot of the base's chain
    /// held (`base`), `elapsed` milliseconds before this one.
    Reentered,
    Changed,
    Removed,
}

/// One entity update of a snapshot under construction.
#[derive(Debug, Clone, Copy)]
struct Op {
    number: u32,
    kind: OpKind,
    /// State the client holds (for `Changed`), or held in an older
    /// snapshot (for `Reentered`).
    base: u32,
    /// For `Reentered`: milliseconds since that snapshot.
    elapsed: i32,
    /// An entity entering the view that the history snapshot holds: the
    /// receiver is offered both starts, and the entry carries the choice
    /// (`Reentered`: its state there, `Added`: the usual one).
    offered: bool,
    /// State to send (for `Added` and `Changed`).
    new: u32,
    /// Upper bound of its encoded size in bits (budget path only).
    cost: u32,
    priority: f32,
    include: bool,
    /// Whether writing it put anything in the message (set by `write_ops`).
    written: bool,
}

/// Scratch space reused across snapshots so building allocates nothing in
/// steady state.
#[derive(Debug, Clone)]
pub(crate) struct Work<P> {
    buf: Vec<u8>,
    measure: Vec<u8>,
    /// The range coder of a split message, and of the measuring one.
    range: RangeScratch,
    measure_range: RangeScratch,
    want: Bitset,
    skipped: Bitset,
    priority: Vec<f32>,
    ops: Vec<Op>,
    order: Vec<u32>,
    pub cache: EntityCache,
    lists: ListCache,
    /// The symbols of the message being built (adapting models only).
    tallies: Tallies,
    _player: std::marker::PhantomData<P>,
}

impl<P> Work<P> {
    pub(crate) fn new(limit: u32) -> Self {
        Work {
            buf: Vec::new(),
            measure: Vec::new(),
            range: RangeScratch::default(),
            measure_range: RangeScratch::default(),
            want: Bitset::new(limit),
            skipped: Bitset::new(limit),
            priority: vec![0.0; limit as usize],
            // At most one update per entity number: sized once.
            ops: Vec::with_capacity(limit as usize),
            order: Vec::with_capacity(limit as usize),
            cache: EntityCache::new(limit),
            lists: ListCache::new(limit),
            tallies: Tallies::default(),
            _player: std::marker::PhantomData,
        }
    }

    /// Grows the message buffers to hold `max_bytes`.
    pub(crate) fn ensure_buffer(&mut self, max_bytes: u32) {
        let max_bytes = max_bytes as usize;
        if self.buf.len() < max_bytes {
            self.buf.resize(max_bytes, 0);
            self.measure.resize(max_bytes, 0);
        }
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.buf.capacity()
            + self.measure.capacity()
            + self.range.memory_bytes()
            + self.measure_range.memory_bytes()
            + self.want.memory_bytes()
            + self.skipped.memory_bytes()
            + self.priority.capacity() * std::mem::size_of::<f32>()
            + self.ops.capacity() * std::mem::size_of::<Op>()
            + self.order.capacity() * std::mem::size_of::<u32>()
            + self.cache.memory_bytes()
            + self.lists.memory_bytes()
    }

    /// Forgets every cached encoding: state references and baselines may
    /// mean something else from now on.
    pub(crate) fn forget_encodings(&mut self) {
        self.cache.invalidate();
        self.lists.invalidate();
    }

    /// Frame `frame` was committed: the entity cache starts again, and
    /// this frame's lists become the previous frame's (kept for chained
    /// snapshots).
    pub(crate) fn next_frame(&mut self, frame: u32) {
        self.cache.invalidate();
        self.lists.next_frame(frame);
    }
}

/// The two cached lists of a chained snapshot.
#[derive(Clone, Copy)]
struct Chain {
    /// Server time of the frame the first list leads to.
    via_time: u32,
    /// The base's entities to that frame's (the previous frame's cache).
    first: ListHit,
    /// Those to this frame's (this frame's cache).
    second: ListHit,
}

/// Everything an entity update is encoded from.
struct Emitter<'a, E> {
    codec: ModelCodec<'a>,
    /// The framing's coding of the message.
    coding: MessageCoding,
    /// The id of the entity model `codec` codes with, for the cache keys
    /// (0 when the models do not adapt).
    model_key: u64,
    /// The snapshot's elapsed time since its base, for the codec's
    /// predictors, and the viewer's anchor, for its spawn deltas.
    context: DeltaContext,
    slab: &'a StateSlab<E>,
    gamestate: &'a Gamestate<E>,
    zero: &'a E,
    /// What the client holds (the base's entities): removals are named by
    /// their place among them.
    held: Held<'a>,
}

impl<E: Fields> Emitter<'_, E> {
    /// Writes one update, from the frame's cache when another client needed
    /// the identical encoding. Returns whether anything was written.
    fn emit(
        &self,
        cache: &mut EntityCache,
        sink: &mut MessageWriter<'_>,
        last: Option<u32>,
        op: &Op,
    ) -> Result<bool, BitError> {
        if op.kind == OpKind::Removed {
            return self.codec.write_entity_in(
                &self.context,
                sink,
                last,
                op.number,
                EntityUpdate::Removed {
                    old: self.zero,
                    held: self.held,
                },
            );
        }
        // A re-entered update is keyed by the state it deltas from and
        // that state's elapsed time, as a change is: the bits of the two
        // are the same for the same key (a change is never of an
        // unchanged state, so forcing one changes nothing).
        let base_key = match op.kind {
            OpKind::Added => SPAWN_BASE,
            _ => op.base,
        };
        let context = self.context_of(op);
        // Quake 3's updates are the same bits wherever they stand: one
        // encoding then serves clients on any base frame with that state.
        let (elapsed, key_last) = if self.codec.entity_bits_depend_on_list() {
            (context.elapsed_ms, last)
        } else {
            (0, None)
        };
        // A spawn delta coded against the viewer's anchor is this viewer's
        // alone: it neither comes from nor goes to the shared cache; nor
        // does an entry carrying a choice of start (its bits differ from
        // the same update's without one).
        let anchored = self.reads_anchor(op) || op.offered;
        if !anchored {
            if let Some(hit) = cache.lookup(
                op.number,
                self.model_key,
                elapsed,
                base_key,
                op.new,
                key_last,
            ) {
                cache.copy_to(hit, sink)?;
                return Ok(hit.written);
            }
        }
        let (base, force) = match op.kind {
            OpKind::Added => (self.spawn_base(op.number), true),
            OpKind::Reentered => (self.slab.get(op.base), true),
            _ => (self.slab.get(op.base), false),
        };
        let update = EntityUpdate::Delta {
            base,
            new: self.slab.get(op.new),
            force,
        };
        let from = sink.mark();
        let written = match (op.offered, op.kind) {
            (false, _) => self
                .codec
                .write_entity_in(&context, sink, last, op.number, update)?,
            (true, kind) => {
                let start = match kind {
                    OpKind::Reentered => StartChoice::Held,
                    _ => StartChoice::Usual,
                };
                self.codec
                    .write_entity_from_in(&context, sink, last, op.number, update, start)?
            }
        };
        if anchored {
            return Ok(written);
        }
        cache.store(
            op.number,
            self.model_key,
            elapsed,
            base_key,
            op.new,
            key_last,
            written,
            sink,
            from,
        );
        Ok(written)
    }

    /// Tallies the symbols of the updates of `ops` that were written, as
    /// `coding`'s entity model codes them (see [`crate::adapt`]).
    fn tally(&self, coding: &Adapted, tallies: &mut Tallies, ops: &[Op]) {
        for op in ops.iter().filter(|op| op.include && op.written) {
            let update = match op.kind {
                OpKind::Removed => None,
                OpKind::Added => Some((self.spawn_base(op.number), self.slab.get(op.new))),
                OpKind::Changed | OpKind::Reentered => {
                    Some((self.slab.get(op.base), self.slab.get(op.new)))
                }
            };
            tallies.entry(coding, op.number, update, &self.context_of(op));
        }
        tallies.end_list(self.held.0);
    }

    /// The context `op`'s delta is coded in.
    fn context_of(&self, op: &Op) -> DeltaContext {
        match op.kind {
            OpKind::Added => self.context.with_spawn(true),
            OpKind::Reentered => DeltaContext {
                elapsed_ms: op.elapsed,
                ..self.context
            },
            OpKind::Changed | OpKind::Removed => self.context,
        }
    }

    /// The baseline of entity `number` when it is new to the client.
    fn spawn_base(&self, number: u32) -> &E {
        self.gamestate.baseline(number).unwrap_or(self.zero)
    }

    /// Whether `op` is a spawn delta the codec codes against the viewer's
    /// anchor (whatever this viewer's is: a list or update encoded for a
    /// viewer without one must not reach a viewer with one either).
    fn reads_anchor(&self, op: &Op) -> bool {
        op.kind == OpKind::Added && self.codec.spawn_reads_anchor(self.spawn_base(op.number))
    }

    /// An upper bound of the bits `op` takes anywhere in a list: encoded as
    /// if first, plus what its number can cost more elsewhere.
    fn measure(&self, buf: &mut [u8], range: &mut RangeScratch, op: &Op) -> u32 {
        let mut writer = MessageWriter::new(buf, self.coding, range);
        let mut scratch = EntityCache::new(0);
        match self.emit(&mut scratch, &mut writer, None, op) {
            Ok(_) => {
                let removed = op.kind == OpKind::Removed;
                writer.bits_written() as u32
                    + self
                        .codec
                        .entity_position_slack(self.zero, op.number, removed)
            }
            // Larger than a whole message: it can never be sent.
            Err(_) => u32::MAX,
        }
    }

    /// Writes the updates of `ops` (all, or the included ones), marking
    /// each written. With a budget, stops and returns `false` as soon as it
    /// is exceeded. `last` is set to the number of the last update written.
    fn write_ops(
        &self,
        cache: &mut EntityCache,
        sink: &mut MessageWriter<'_>,
        ops: &mut [Op],
        budget: Option<usize>,
        last: &mut Option<u32>,
    ) -> Result<bool, BitError> {
        *last = None;
        for op in ops {
            op.written = false;
            if budget.is_none() && !op.include {
                continue;
            }
            match self.emit(cache, sink, *last, op) {
                Ok(true) => {
                    *last = Some(op.number);
                    op.written = true;
                }
                Ok(false) => {}
                Err(BitError::Overflow { .. }) if budget.is_some() => return Ok(false),
                Err(error) => return Err(error),
            }
            if budget.is_some_and(|budget| sink.bits_written() > budget) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The state held for `number`: a left-out change's old state, else the frame's.
#[inline]
fn resolve(overrides: &[(u32, u32)], cursor: &mut usize, table: &[u32], number: u32) -> u32 {
    while overrides.get(*cursor).is_some_and(|&(n, _)| n < number) {
        *cursor += 1;
    }
    match overrides.get(*cursor) {
        Some(&(n, state)) if n == number => state,
        _ => table[number as usize],
    }
}

/// The viewer's priority for each entity it sees.
#[derive(Clone, Copy)]
enum Priorities<'a> {
    /// The scope's one answer for all, except always-in-scope entities.
    Uniform { priority: f32, always: &'a Bitset },
    /// An answer per entity (always-in-scope ones hold [`ALWAYS`]).
    Each(&'a [f32]),
}

impl<'a> Priorities<'a> {
    fn new(uniform: Option<f32>, always: &'a Bitset, each: &'a [f32]) -> Self {
        match uniform {
            Some(priority) => Priorities::Uniform { priority, always },
            None => Priorities::Each(each),
        }
    }

    fn of(&self, number: u32) -> f32 {
        match *self {
            Priorities::Uniform { priority, always } => {
                if always.contains(number) {
                    ALWAYS
                } else {
                    priority
                }
            }
            Priorities::Each(each) => each.get(number as usize).copied().unwrap_or(0.0),
        }
    }
}

/// The updates from the base's held set (`held`: the base and its frame;
/// `None` for a full update) to the view `want` of `frame`, in number order:
/// added (or re-entered, as `history` finds), changed (the held state
/// reference differs) and removed entities.
fn merge<P, E: Fields>(
    ops: &mut Vec<Op>,
    want: &Bitset,
    priorities: Priorities<'_>,
    accum: &[f32],
    held: Option<(&Sent<P>, &Frame)>,
    frame: &Frame,
    history: &History<'_, P, E>,
) {
    let mut cursor = 0;
    for (word_index, &want_word) in want.words().iter().enumerate() {
        let base_word = held.map_or(0, |(sent, _)| sent.visible.words()[word_index]);
        for bit in Ones(base_word | want_word) {
            let number = word_index as u32 * 64 + bit;
            let mask = 1u64 << bit;
            let new = frame.table[number as usize];
            let (kind, held_state) = match (base_word & mask != 0, want_word & mask != 0) {
                (true, true) => {
                    let Some((sent, base_frame)) = held else {
                        continue;
                    };
                    let state = resolve(&sent.overrides, &mut cursor, &base_frame.table, number);
                    if state == new {
                        continue;
                    }
                    (OpKind::Changed, state)
                }
                (true, false) => (OpKind::Removed, 0),
                _ => match history.offer(number, new) {
                    Some(offer) => {
                        ops.push(Op {
                            number,
                            kind: match offer.chosen {
                                true => OpKind::Reentered,
                                false => OpKind::Added,
                            },
                            base: offer.state,
                            elapsed: offer.elapsed,
                            offered: true,
                            new,
                            cost: 0,
                            priority: priorities.of(number) + accum[number as usize],
                            include: true,
                            written: false,
                        });
                        continue;
                    }
                    None => (OpKind::Added, 0),
                },
            };
            ops.push(Op {
                number,
                kind,
                base: held_state,
                elapsed: 0,
                offered: false,
                new,
                cost: 0,
                priority: priorities.of(number) + accum[number as usize],
                include: true,
                written: false,
            });
        }
    }
}

/// The snapshot entities re-entering a client's view are coded from, if
/// any (see [`crate::history`]).
struct History<'a, P, E> {
    /// The history snapshot and its frame.
    held: Option<(&'a Sent<P>, &'a Frame)>,
    costs: StartCosts<'a, E>,
    /// This snapshot's server time.
    now: u32,
}

/// An entity entering the view that the history snapshot holds.
struct Offer {
    /// Its state there.
    state: u32,
    /// Milliseconds since that snapshot.
    elapsed: i32,
    /// Whether its update is coded from that state (cheaper than from the
    /// zeroed dummy).
    chosen: bool,
}

/// What weighs an entering entity's two starts: the bits of its delta
/// from each, as the message's entity codec writes them.
struct StartCosts<'a, E> {
    codec: ModelCodec<'a>,
    context: DeltaContext,
    slab: &'a StateSlab<E>,
    gamestate: &'a Gamestate<E>,
    zero: &'a E,
}

/// Room for one entity delta when weighing starts: one that does not fit
/// (thousands of bits) is not coded from that start.
const WEIGHING_BYTES: usize = 1024;

/// About what naming a history snapshot adds to a delta's header (the
/// header's exceptions, usually skipped, and the snapshot's distance; see
/// [`crate::framing::Compact`]): the entities coded from it must save more.
const NAMING_BITS: i64 = 12;

impl<E: Fields> StartCosts<'_, E> {
    /// The bits of `new` (a state of the slab) coded from the zeroed dummy
    /// in the spawn context, as an entity without a spawn baseline enters.
    fn usual_bits(&self, new: u32) -> i64 {
        self.bits(self.zero, &self.context.with_spawn(true), new)
    }

    /// The bits of `new` coded from `held` (a state of the slab,
    /// `elapsed` milliseconds old).
    fn held_bits(&self, held: u32, elapsed: i32, new: u32) -> i64 {
        let context = DeltaContext {
            elapsed_ms: elapsed,
            ..self.context
        };
        self.bits(self.slab.get(held), &context, new)
    }

    fn bits(&self, base: &E, context: &DeltaContext, new: u32) -> i64 {
        let mut buf = [0u8; WEIGHING_BYTES];
        let mut writer = BitWriter::new(&mut buf);
        match self
            .codec
            .write_delta_in(context, &mut writer, base, self.slab.get(new))
        {
            Ok(()) => writer.bits_written() as i64,
            Err(_) => i64::MAX / 4,
        }
    }
}

impl<'a, P, E: Fields> History<'a, P, E> {
    /// None: every entering entity is coded as usual.
    fn none(costs: StartCosts<'a, E>, now: u32) -> Self {
        History {
            held: None,
            costs,
            now,
        }
    }

    /// The snapshot of `chain` (in `ring`) that saves the most bits, if
    /// any saves more than naming it costs: the entities of `entering` (the
    /// ones entering the view without a spawn baseline) that it holds, each
    /// coded from the cheaper start (their states in `frame`), one bit of
    /// choice each.
    fn choose(
        chain: &BaseChain,
        ring: &'a [Sent<P>],
        store: &'a FrameStore<E>,
        costs: StartCosts<'a, E>,
        now: u32,
        entering: &Entering,
        frame: &Frame,
    ) -> Self {
        // Each entering entity's usual start is weighed once, not once per
        // snapshot of the chain.
        let mut usual = [0i64; MAX_WEIGHED];
        for (bits, &number) in usual.iter_mut().zip(entering.numbers()) {
            *bits = costs.usual_bits(frame.table[number as usize]);
        }
        let mut best = None;
        let mut best_saving = NAMING_BITS;
        for &member in chain.sequences() {
            let sent = &ring[member as usize % RING_SIZE];
            let Some(held_frame) = store.frame(sent.frame) else {
                continue;
            };
            let elapsed = now.wrapping_sub(sent.time) as i32;
            let mut saved = 0;
            for (&number, &usual_bits) in entering.numbers().iter().zip(&usual) {
                if !sent.visible.contains(number) {
                    continue;
                }
                let new = frame.table[number as usize];
                let from_held = costs.held_bits(sent.state_of(held_frame, number), elapsed, new);
                saved += (usual_bits - from_held).max(0) - 1;
            }
            if saved > best_saving {
                best = Some((sent, held_frame));
                best_saving = saved;
            }
        }
        History {
            held: best,
            costs,
            now,
        }
    }

    /// The history snapshot's sequence number.
    fn sequence(&self) -> Option<u32> {
        self.held.map(|(sent, _)| sent.sequence)
    }

    /// What entity `number`, new to the client's base, is offered when it
    /// enters the view with state `new`: `None` for an entity with a spawn
    /// baseline or that the history snapshot does not hold.
    fn offer(&self, number: u32, new: u32) -> Option<Offer> {
        let (sent, frame) = self.held?;
        if !sent.visible.contains(number) || self.costs.gamestate.baseline(number).is_some() {
            return None;
        }
        let state = sent.state_of(frame, number);
        let elapsed = self.now.wrapping_sub(sent.time) as i32;
        Some(Offer {
            state,
            elapsed,
            chosen: self.costs.held_bits(state, elapsed, new) < self.costs.usual_bits(new),
        })
    }
}

/// Entering entities a history snapshot is weighed for, at most: a
/// snapshot with more entering (a view that changed whole) is weighed on
/// its first ones; each entity's own start is still chosen by
/// [`History::offer`].
const MAX_WEIGHED: usize = 256;

/// The entities entering a client's view (wanted now, not in its base)
/// that have no spawn baseline, in number order: what re-entry from
/// history can code for less. Gathered once a message, so a client
/// without any (the steady state) does not walk its base's chain.
struct Entering {
    numbers: [u32; MAX_WEIGHED],
    len: usize,
}

impl Entering {
    fn gather<E>(want: &Bitset, held: &Bitset, gamestate: &Gamestate<E>) -> Self {
        let mut entering = Entering {
            numbers: [0; MAX_WEIGHED],
            len: 0,
        };
        for (index, (&want, &held)) in want.words().iter().zip(held.words()).enumerate() {
            for bit in Ones(want & !held) {
                let number = index as u32 * 64 + bit;
                if gamestate.baseline(number).is_some() {
                    continue;
                }
                if entering.len == MAX_WEIGHED {
                    return entering;
                }
                entering.numbers[entering.len] = number;
                entering.len += 1;
            }
        }
        entering
    }

    fn numbers(&self) -> &[u32] {
        &self.numbers[..self.len]
    }
}

fn too_large(bits: usize, max_bytes: u32) -> ServerError {
    ServerError::SnapshotTooLarge { bits, max_bytes }
}

impl<E: Fields + PartialEq, P: Fields + PartialEq> Server<E, P> {
    /// Builds client `id`'s snapshot of the newest committed frame into
    /// `out` (cleared first), if its rates allow one now. `scope` decides
    /// which entities it sees.
    ///
    /// Put the bytes in the netchan's most-recent-state payload and pass the
    /// returned sequence to [`acknowledge`](Self::acknowledge) when that
    /// payload is reported delivered. The sequence does not travel in the
    /// message: the receiver passes it to
    /// [`Client::read_snapshot`](crate::Client::read_snapshot) (see
    /// [`crate::framing`]; [`set_next_sequence`](Self::set_next_sequence)
    /// numbers snapshots as the transport does).
    pub fn build_snapshot<S: Scope<E, P>>(
        &mut self,
        id: ClientId,
        scope: &mut S,
        out: &mut Vec<u8>,
    ) -> Result<BuildOutcome, ServerError> {
        let outcome = self.build(id, scope)?;
        out.clear();
        if let BuildOutcome::Built(info) = outcome {
            out.extend_from_slice(&self.work.buf[..info.bytes]);
        }
        Ok(outcome)
    }

    /// Builds client `id`'s snapshot like [`build_snapshot`](Self::build_snapshot),
    /// appending the message to `out` at its current bit position, after
    /// whatever its owner wrote there (for a Huffman-coded framing, its
    /// coded bits: see [`Framing`](crate::framing::Framing); a range-coded
    /// framing's messages cannot follow other bits:
    /// [`ServerError::NotAppendable`]). On any outcome
    /// but [`BuildOutcome::Built`], and on error, `out` is untouched; a
    /// message that does not fit in `out` is an error
    /// ([`ServerError::Encode`]), and the snapshot then counts as built and
    /// lost (its successor deltas from the last acknowledged one).
    pub fn build_snapshot_into<S: Scope<E, P>>(
        &mut self,
        id: ClientId,
        scope: &mut S,
        out: &mut BitWriter<'_>,
    ) -> Result<BuildOutcome, ServerError> {
        if matches!(self.framing.coding(), MessageCoding::Split) {
            return Err(ServerError::NotAppendable {
                framing: self.framing.name(),
            });
        }
        let outcome = self.build(id, scope)?;
        if let BuildOutcome::Built(info) = outcome {
            out.put_bit_slice(&self.work.buf, 0, info.bits)?;
        }
        Ok(outcome)
    }

    /// Builds client `id`'s snapshot into the work buffer.
    fn build<S: Scope<E, P>>(
        &mut self,
        id: ClientId,
        scope: &mut S,
    ) -> Result<BuildOutcome, ServerError> {
        let (frame_number, now) = {
            let frame = self.store.newest().ok_or(ServerError::NoFrame)?;
            (frame.number, frame.time)
        };
        let slot = self.slot(id)?;
        let (viewer, player) = match slot.view {
            None => (id, normalize(&slot.player, &self.zero_player)),
            Some(viewed) => {
                let viewed_slot = self.slot(viewed).map_err(|_| ServerError::ViewerGone {
                    recorder: id,
                    viewed,
                })?;
                (viewed, normalize(&viewed_slot.player, &self.zero_player))
            }
        };
        let Server {
            config,
            zero_entity,
            zero_player,
            store,
            clients,
            gamestate,
            work,
            framing,
            models,
            adapt,
            ..
        } = self;
        let framing: &dyn crate::framing::Framing = &**framing;
        let message_coding = framing.coding();
        let Some(slot) = clients[id.index()].as_mut() else {
            return Err(ServerError::UnknownClient(id));
        };
        let budget = match slot.rate.check(&slot.settings, now) {
            RateDecision::NotDue => return Ok(BuildOutcome::NotDue),
            RateDecision::Delayed => {
                slot.stats.rate_delayed += 1;
                return Ok(BuildOutcome::RateDelayed);
            }
            RateDecision::Send { budget } => budget,
        };
        let sequence = slot.next_sequence;
        let base_index = if slot.full_pending {
            None
        } else {
            slot.last_acked.and_then(|acked| {
                let distance = sequence.wrapping_sub(acked);
                let index = acked as usize % RING_SIZE;
                let sent = &slot.ring[index];
                ((1..=MAX_DELTA_DISTANCE).contains(&distance)
                    && sent.valid
                    && sent.sequence == acked)
                    .then_some(index)
            })
        };

        let frame = store.newest().ok_or(ServerError::NoFrame)?;
        let slab = &store.slab;

        // 3. The view: which entities the viewer sees, with priorities.
        // This runs for every client and live entity. A scope that answers
        // for all entities at once costs a copy of the live set; otherwise
        // the live set is walked 64 numbers at a time: always-in-scope
        // entities are taken a word at a time, and only the others ask.
        work.want.clear();
        // A uniform answer is kept as it is, not spread over a priority per
        // entity: most snapshots fit whole and never read a priority.
        let uniform = scope.uniform_priority(viewer, &player).map(sanitize);
        if uniform.is_some() {
            work.want.copy_from(&frame.live_set);
        } else {
            let want = work.want.words_mut();
            let priorities = &mut work.priority[..];
            let table = &frame.table[..];
            let words = frame.live_set.words().iter().zip(frame.always.words());
            for (index, (want_word, (&live, &always))) in want.iter_mut().zip(words).enumerate() {
                let always = live & always;
                let mut seen = always;
                for bit in Ones(live & !always) {
                    let n = index * 64 + bit as usize;
                    let (Some(&state), Some(slot)) = (table.get(n), priorities.get_mut(n)) else {
                        continue;
                    };
                    if let Some(priority) =
                        scope.priority(viewer, &player, n as u32, slab.get(state))
                    {
                        *slot = sanitize(priority);
                        seen |= 1 << bit;
                    }
                }
                for bit in Ones(always) {
                    if let Some(slot) = priorities.get_mut(index * 64 + bit as usize) {
                        *slot = ALWAYS;
                    }
                }
                *want_word = seen;
            }
        }

        // 4. The updates: another client's identical list of this frame,
        // else a merge of the base's held set with the view.
        let base = base_index.map(|index| &slot.ring[index]);
        let held = match base {
            Some(sent) => Some((sent, store.frame(sent.frame).ok_or(ServerError::NoFrame)?)),
            None => None,
        };
        // Adapting models: the message is coded with the ones its base's
        // chain holds (see `crate::adapt`), the trained ones for a full
        // snapshot.
        let base_adapted = base.and_then(|sent| sent.adapted.as_ref());
        let waited = adapt
            .as_ref()
            .is_some_and(|chain| chain.would_wait(base_adapted));
        let coding = match adapt {
            Some(chain) => Some(chain.coding(base_adapted)?),
            None => None,
        };
        let coded_with = coding.as_ref().map(Adapted::ids);
        let (codec, player_codec, model_key) = match &coding {
            Some(coding) => (
                coding.entity_codec(config.codec),
                coding.player_codec(config.codec),
                coding.entity_key(),
            ),
            None => (
                models.entity_codec(config.codec),
                models.player_codec(config.codec),
                0,
            ),
        };
        // The entities are coded with the viewer's position as their anchor
        // (`DeltaContext::anchor`), which the receiver reads in the player
        // state before them. A list holding a delta coded against it is
        // this viewer's alone: it is never stored for sharing (see below),
        // so every shared list reads no anchor and serves any viewer.
        let context = DeltaContext {
            elapsed_ms: base.map_or(0, |sent| now.wrapping_sub(sent.time) as i32),
            spawn: false,
            anchor: fields::codec::anchor_with(models.player().map(|m| &**m), &player),
            server_time: Some(now),
        };
        // A full snapshot's player state deltas from the zeroed dummy, and
        // without an anchor (the receiver learns it from this very state).
        let player_context = context.with_spawn(base.is_none()).with_anchor(None);
        // Native entities re-entering the view code from a snapshot of the
        // base's chain (see `crate::history`).
        let ring = &slot.ring[..];
        let costs = StartCosts {
            codec,
            context,
            slab,
            gamestate,
            zero: zero_entity,
        };
        let entering = match (config.codec, base) {
            (fields::Codec::Native, Some(sent)) if framing.carries_history() => {
                Entering::gather(&work.want, &sent.visible, gamestate)
            }
            _ => Entering {
                numbers: [0; MAX_WEIGHED],
                len: 0,
            },
        };
        let history = match (config.codec, base) {
            (fields::Codec::Native, Some(sent))
                if framing.carries_history() && !entering.numbers().is_empty() =>
            {
                let chain = BaseChain::walk(sequence, sent.sequence, sent.base, |member| {
                    let sent = &ring[member as usize % RING_SIZE];
                    match sent.valid && sent.sequence == member {
                        true => Link::Held(sent.base),
                        false => Link::Missing,
                    }
                });
                History::choose(&chain, ring, store, costs, now, &entering, frame)
            }
            _ => History::none(costs, now),
        };
        // A client with an entity re-entering needs a list of its own: a
        // shared list codes it from its spawn baseline.
        let reenters = history.sequence().is_some();
        // A base holding left-out changes gives a list of its own.
        let shareable = base.is_none_or(|sent| sent.overrides.is_empty()) && !reenters;
        let list_key = (base.map(|sent| sent.frame), base.map(|sent| &sent.visible));
        let cached = if shareable {
            work.lists.lookup(
                model_key,
                list_key.0,
                list_key.1,
                context.elapsed_ms,
                &work.want,
            )
        } else {
            None
        };
        // A client whose acknowledgement of its previous snapshot has not
        // come back holds an older base; that snapshot was built from the
        // same base, and its list and the list from it to this frame are
        // both cached (the others on the previous frame needed them): a
        // chained snapshot copies the two, a few more bytes than a list of
        // its own and none of its encoding.
        let chain = match (base, cached) {
            // Not while adapting: see `crate::adapt`.
            (Some(sent), None) if shareable && framing.carries_chains() && coding.is_none() => {
                let previous = &slot.ring[sequence.wrapping_sub(1) as usize % RING_SIZE];
                let from_base = previous.valid
                    && previous.sequence == sequence.wrapping_sub(1)
                    && previous.base == Some(sent.sequence)
                    && previous.overrides.is_empty()
                    && previous.frame != frame_number;
                from_base
                    .then(|| {
                        let first = work.lists.lookup_previous(
                            previous.frame,
                            Some(sent.frame),
                            Some(&sent.visible),
                            previous.time.wrapping_sub(sent.time) as i32,
                            &previous.visible,
                        )?;
                        let second = work.lists.lookup(
                            model_key,
                            Some(previous.frame),
                            Some(&previous.visible),
                            now.wrapping_sub(previous.time) as i32,
                            &work.want,
                        )?;
                        Some(Chain {
                            via_time: previous.time,
                            first,
                            second,
                        })
                    })
                    .flatten()
            }
            _ => None,
        };
        work.ops.clear();
        if cached.is_none() && chain.is_none() {
            let priorities = Priorities::new(uniform, &frame.always, &work.priority);
            merge(
                &mut work.ops,
                &work.want,
                priorities,
                &slot.accum,
                held,
                frame,
                &history,
            );
        }

        // 5. Encode everything; if over budget, select by priority and encode again.
        let has_checksum = framing.carries_checksums()
            && config.checksum_interval > 0
            && slot.stats.snapshots % config.checksum_interval as u64 == 0;
        let mut header = SnapshotHeader {
            sequence,
            frame: frame_number,
            server_time: now,
            base: base.map(|sent| sent.sequence),
            flags: if slot.rate.delayed {
                slot.flags | RATE_DELAYED
            } else {
                slot.flags
            },
            area_mask: slot.area_mask,
            has_checksum,
            via_time: chain.map(|chain| chain.via_time),
            delivery: crate::framing::Delivery::FULL,
            history: history.sequence(),
        };
        let base_info = base.map(Sent::base_info);
        header.delivery = header.natural_delivery(base_info.as_ref());
        let base_player = base.map_or(&*zero_player, |sent| &sent.player);
        let max_bytes = slot.settings.max_snapshot_bytes;
        let hard_bits = max_bytes as usize * 8;
        let budget_bits = (budget as usize * 8).min(hard_bits);
        let tail_bits =
            codec.entities_end_bound_bits(zero_entity) as usize + if has_checksum { 32 } else { 0 };
        let emitter = Emitter {
            codec,
            coding: message_coding,
            model_key,
            context,
            slab,
            gamestate,
            zero: zero_entity,
            held: base.map_or(Held::nothing(), |sent| Held(&sent.visible)),
        };
        let Work {
            buf,
            measure,
            range,
            measure_range,
            want,
            priority,
            ops,
            order,
            cache,
            lists,
            tallies,
            ..
        } = work;
        let buf = &mut buf[..max_bytes as usize];

        let mut writer = MessageWriter::new(buf, message_coding, range);
        let prefix = framing
            .write_header(&mut writer, &header, base_info.as_ref())
            .and_then(|()| {
                player_codec.write_delta_in(&player_context, &mut writer, base_player, &player)
            });
        match prefix {
            Ok(()) => {}
            Err(BitError::Overflow { .. }) => {
                return Err(too_large(writer.bits_written(), max_bytes))
            }
            Err(error) => return Err(error.into()),
        }
        let mut prefix_bits = writer.bits_written();
        let mut prefix_mark = writer.mark();
        let shared =
            cached.filter(|hit| prefix_bits + hit.bits as usize + tail_bits <= budget_bits);
        let mut chained = None;
        if let Some(chain) = chain {
            let end_bits = codec.entities_end_bound_bits(zero_entity) as usize;
            let fits = prefix_bits + (chain.first.bits + chain.second.bits) as usize + end_bits
                <= budget_bits.saturating_sub(tail_bits);
            if fits {
                chained = Some(chain);
            } else {
                // Over this client's budget: an unchained snapshot, with
                // its updates selected by priority.
                header.via_time = None;
                writer = MessageWriter::new(&mut buf[..], message_coding, range);
                framing.write_header(&mut writer, &header, base_info.as_ref())?;
                player_codec.write_delta_in(&player_context, &mut writer, base_player, &player)?;
                prefix_bits = writer.bits_written();
                prefix_mark = writer.mark();
                let priorities = Priorities::new(uniform, &frame.always, priority);
                merge(ops, want, priorities, &slot.accum, held, frame, &history);
            }
        }
        let mut last = None;
        let all_fit = if let Some(chain) = chained {
            lists.copy_to(chain.first, &mut writer)?;
            codec.write_entities_end(&mut writer, chain.first.last, zero_entity)?;
            lists.copy_to(chain.second, &mut writer)?;
            last = chain.second.last;
            true
        } else if let Some(hit) = shared {
            lists.copy_to(hit, &mut writer)?;
            last = hit.last;
            if coding.is_some() {
                tallies.clear();
                tallies.entity.extend_from(lists.symbols(hit));
            }
            true
        } else {
            if cached.is_some() {
                // The shared list was over this client's budget: select from
                // the updates themselves.
                let priorities = Priorities::new(uniform, &frame.always, priority);
                merge(ops, want, priorities, &slot.accum, held, frame, &history);
            }
            let fit = prefix_bits + tail_bits <= budget_bits
                && emitter.write_ops(
                    cache,
                    &mut writer,
                    ops,
                    Some(budget_bits - tail_bits),
                    &mut last,
                )?;
            if let (true, Some(coding)) = (fit, &coding) {
                tallies.clear();
                emitter.tally(coding, tallies, ops);
            }
            let anchored = || ops.iter().any(|op| emitter.reads_anchor(op));
            if fit && shareable && !anchored() {
                lists.store(
                    model_key,
                    list_key.0,
                    list_key.1,
                    context.elapsed_ms,
                    want,
                    (ops.len() as u32, last),
                    &writer,
                    prefix_mark,
                    tallies.entity.symbols(),
                );
            }
            fit
        };
        let mut deferred = 0;
        if !all_fit {
            let mut mandatory = prefix_bits + tail_bits;
            for op in ops.iter_mut() {
                op.cost = emitter.measure(measure, measure_range, op);
                if op.kind == OpKind::Removed {
                    mandatory += op.cost as usize;
                }
            }
            if mandatory > hard_bits {
                return Err(too_large(mandatory, max_bytes));
            }
            order.clear();
            order
                .extend((0..ops.len() as u32).filter(|&i| ops[i as usize].kind != OpKind::Removed));
            order.sort_unstable_by(|&a, &b| {
                let (a, b) = (&ops[a as usize], &ops[b as usize]);
                b.priority
                    .total_cmp(&a.priority)
                    .then(a.number.cmp(&b.number))
            });
            let mut used = mandatory;
            let mut any = false;
            for &index in order.iter() {
                let op = &mut ops[index as usize];
                let cost = op.cost as usize;
                // The first entity goes in even over the rate budget (if it
                // fits the message), so a large one cannot be starved.
                op.include = used + cost <= budget_bits || (!any && used + cost <= hard_bits);
                if op.include {
                    used += cost;
                    any = true;
                } else {
                    deferred += 1;
                }
            }
            writer = MessageWriter::new(&mut buf[..], message_coding, range);
            framing.write_header(&mut writer, &header, base_info.as_ref())?;
            player_codec.write_delta_in(&player_context, &mut writer, base_player, &player)?;
            emitter.write_ops(cache, &mut writer, ops, None, &mut last)?;
            if let Some(coding) = &coding {
                tallies.clear();
                emitter.tally(coding, tallies, ops);
            }
        }

        // 6. What the client will hold: the view, less left-out additions,
        // with left-out changes held at their old state.
        let record = &mut slot.spare;
        record.visible.copy_from(want);
        record.overrides.clear();
        for op in ops.iter().filter(|op| !op.include) {
            match op.kind {
                OpKind::Added | OpKind::Reentered => record.visible.remove(op.number),
                OpKind::Changed => record.overrides.push((op.number, op.base)),
                OpKind::Removed => {}
            }
        }
        codec.write_entities_end(&mut writer, last, zero_entity)?;
        if has_checksum {
            let mut checksum = SyncChecksum::new(state_hash(&player));
            let mut cursor = 0;
            for number in record.visible.iter() {
                let state = resolve(&record.overrides, &mut cursor, &frame.table, number);
                checksum.entity(number, slab.hash(state));
            }
            writer.put_bits(checksum.finish(), 32)?;
        }
        let bound = writer.bits_written();
        let (len, bits) = writer.finish().map_err(|error| match error {
            BitError::Overflow { .. } => too_large(bound, max_bytes),
            error => error.into(),
        })?;
        // What is sent: a bit stream's trailing zero byte is left out
        // (`build_snapshot_into` copies the coded bits, not the bytes).
        let len = message_coding.sent_len(&buf[..len]);

        let base_sequence = base.map(|sent| sent.sequence);
        let held = record.visible.len() as u32;
        let written = match (chained, shared) {
            (Some(chain), _) => chain.first.written + chain.second.written,
            (None, Some(hit)) => hit.written,
            (None, None) => ops.iter().filter(|op| op.include).count() as u32,
        };
        record.adapted = coding.map(|coding| {
            tallies.player.clear();
            tallies.player(&coding, base_player, &player, &player_context);
            coding.after(tallies)
        });
        record.sequence = sequence;
        record.frame = frame_number;
        record.time = now;
        record.base = base_sequence;
        record.player = player;
        record.bytes = len as u32;
        record.flags = header.flags;
        record.area_mask = header.area_mask;
        record.delivery = header.delivery;
        record.valid = true;

        // Priority bookkeeping: left-out updates accumulate, everything else resets.
        work.skipped.clear();
        let priorities = Priorities::new(uniform, &frame.always, &work.priority);
        for op in work.ops.iter().filter(|op| !op.include) {
            let priority = priorities.of(op.number);
            if priority.is_finite() {
                let accum = &mut slot.accum[op.number as usize];
                *accum = sanitize(*accum + priority);
            }
            slot.pending.insert(op.number);
            work.skipped.insert(op.number);
        }
        for (word_index, (pending, &skipped)) in slot
            .pending
            .words_mut()
            .iter_mut()
            .zip(work.skipped.words())
            .enumerate()
        {
            for bit in Ones(*pending & !skipped) {
                slot.accum[word_index * 64 + bit as usize] = 0.0;
            }
            *pending &= skipped;
        }

        // References: the new record holds its frame and its old states.
        for &(_, state) in &slot.spare.overrides {
            store.slab.retain(state);
        }
        store.acquire(frame_number);
        std::mem::swap(
            &mut slot.ring[sequence as usize % RING_SIZE],
            &mut slot.spare,
        );
        slot.spare.release(store);

        slot.rate.sent(&slot.settings, now, len);
        slot.next_sequence = sequence.wrapping_add(1);
        slot.full_pending = false;
        if slot.settings.auto_ack {
            slot.last_acked = Some(sequence);
        }
        let stats = &mut slot.stats;
        stats.snapshots += 1;
        stats.full_updates += base_sequence.is_none() as u64;
        stats.bytes += len as u64;
        stats.checksums += has_checksum as u64;
        stats.chained += chained.is_some() as u64;
        stats.adapt_waits += waited as u64;
        stats.budget_limited += (deferred > 0) as u64;
        stats.entities_deferred += deferred as u64;

        Ok(BuildOutcome::Built(SnapshotInfo {
            sequence,
            frame: frame_number,
            base: base_sequence,
            bytes: len,
            bits,
            entities_written: written,
            entities_deferred: deferred,
            entities_held: held,
            rate_delayed: header.rate_delayed(),
            has_checksum,
            chained: chained.is_some(),
            coded_with,
        }))
    }

    /// Builds the snapshot of every client that is due one, handing each to
    /// `sink` as `(client, bytes, info)`. Stops at the first error.
    pub fn build_snapshots<S: Scope<E, P>>(
        &mut self,
        scope: &mut S,
        out: &mut Vec<u8>,
        mut sink: impl FnMut(ClientId, &[u8], &SnapshotInfo),
    ) -> Result<(), ServerError> {
        for index in 0..self.clients.len() {
            let Some(id) = self.clients[index].as_ref().map(|slot| slot.id) else {
                continue;
            };
            if let BuildOutcome::Built(info) = self.build_snapshot(id, scope, out)? {
                sink(id, out, &info);
            }
        }
        Ok(())
    }
}
