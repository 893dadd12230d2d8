//! The server: master gamestate, shared history, per-client rings, acks.
//!
//! A frame of the game loop:
//!
//! 1. change entities ([`Server::set_entity`], [`Server::entity_mut`],
//!    [`Server::remove_entity`]) and player states;
//! 2. [`Server::commit_frame`] stores what changed, once, in the shared
//!    history;
//! 3. [`Server::build_snapshot`] per client (or [`Server::build_snapshots`])
//!    produces the message bytes for the netchan's most-recent-state payload;
//! 4. acknowledgements — the netchan's delivered notify for the datagram
//!    that carried a snapshot, or the sequence a client reports back — go to
//!    [`Server::acknowledge`].

use std::sync::Arc;

use fields::{Codec, Fields};

use crate::adapt::{Adapted, ChainModels};
use crate::bitset::Bitset;
use crate::build::Work;
use crate::checksum::{layout_fingerprint, state_hash};
use crate::config::{ClientSettings, ServerConfig, RING_SIZE};
use crate::error::ServerError;
use crate::frame_store::{Frame, FrameStore, StateSlab, NO_STATE};
use crate::framing::{AreaMask, BaseInfo, Compact, Delivery, Framing};
use crate::gamestate::{
    encode_growing, write_configstring, write_gamestate, Gamestate, GamestateHeader,
};
use crate::models::Models;
use crate::rate::RateState;
use crate::stats::SendStats;

/// Identifies a client (or recorder) of one server. Stale ids of removed
/// clients are rejected, not confused with a later client in the same slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId {
    index: u32,
    generation: u32,
}

impl ClientId {
    /// The slot index (small, dense; reused after removal).
    pub fn index(self) -> usize {
        self.index as usize
    }
}

/// One entity of the master state.
#[derive(Debug, Clone)]
struct MasterEntity<E> {
    state: E,
    /// Its state in the newest committed frame ([`NO_STATE`] before its first commit).
    stored: u32,
    dirty: bool,
    always: bool,
}

/// A snapshot as sent: what the client holds once it decodes it.
#[derive(Debug, Clone)]
pub(crate) struct Sent<P> {
    pub sequence: u32,
    pub frame: u32,
    pub time: u32,
    pub base: Option<u32>,
    pub player: P,
    /// Entity numbers the client holds.
    pub visible: Bitset,
    /// Held entities whose state is not the frame's (their change was left
    /// out for budget): `(number, state)`, sorted, each a counted reference.
    pub overrides: Vec<(u32, u32)>,
    pub bytes: u32,
    pub flags: u8,
    pub area_mask: AreaMask,
    pub delivery: Delivery,
    /// The adaptations the client holds with it (adapting models only).
    pub adapted: Option<Adapted>,
    pub valid: bool,
}

impl<P: Clone> Sent<P> {
    pub(crate) fn blank(limit: u32, zero: &P) -> Self {
        Sent {
            sequence: 0,
            frame: 0,
            time: 0,
            base: None,
            player: zero.clone(),
            visible: Bitset::new(limit),
            overrides: Vec::new(),
            bytes: 0,
            flags: 0,
            area_mask: AreaMask::EMPTY,
            delivery: Delivery::FULL,
            adapted: None,
            valid: false,
        }
    }
}

impl<P> Sent<P> {
    /// What a header coded against it needs of it.
    pub(crate) fn base_info(&self) -> BaseInfo {
        BaseInfo {
            sequence: self.sequence,
            frame: self.frame,
            server_time: self.time,
            flags: self.flags,
            area_mask: self.area_mask,
            delivery: self.delivery,
        }
    }

    /// The state reference the client holds for a visible `number`.
    pub(crate) fn state_of(&self, frame: &Frame, number: u32) -> u32 {
        match self.overrides.binary_search_by_key(&number, |(n, _)| *n) {
            Ok(i) => self.overrides[i].1,
            Err(_) => frame.table[number as usize],
        }
    }

    /// Drops this record's references; it becomes invalid.
    pub(crate) fn release<E>(&mut self, store: &mut FrameStore<E>) {
        if !self.valid {
            return;
        }
        for &(_, state) in &self.overrides {
            store.slab.release(state);
        }
        self.overrides.clear();
        store.release(self.frame);
        self.adapted = None;
        self.valid = false;
    }

    fn memory_bytes(&self) -> usize {
        self.visible.memory_bytes() + self.overrides.capacity() * std::mem::size_of::<(u32, u32)>()
    }
}

/// Server-side state of one client.
#[derive(Debug, Clone)]
pub(crate) struct ClientSlot<P> {
    pub id: ClientId,
    pub settings: ClientSettings,
    /// A recorder shows this client's view (scope and player state).
    pub view: Option<ClientId>,
    pub player: P,
    /// The game's snapshot flags (the server adds [`RATE_DELAYED`](crate::framing::RATE_DELAYED)).
    pub flags: u8,
    pub area_mask: AreaMask,
    pub ring: Vec<Sent<P>>,
    /// The record a new snapshot is built in, swapped with the ring slot it
    /// replaces. Per client, so the buffers a client needs (its overrides)
    /// stay with it instead of migrating to clients that never need them.
    pub spare: Sent<P>,
    pub next_sequence: u32,
    pub last_acked: Option<u32>,
    /// Acks below this are ignored: a full update was requested after them.
    pub ack_floor: u32,
    pub full_pending: bool,
    /// Priority accumulated by entities left out for budget.
    pub accum: Vec<f32>,
    /// Numbers whose `accum` is non-zero.
    pub pending: Bitset,
    pub rate: RateState,
    pub stats: SendStats,
}

impl<P> ClientSlot<P> {
    fn memory_bytes(&self) -> usize {
        (self.ring.capacity() + 1) * std::mem::size_of::<Sent<P>>()
            + self.ring.iter().map(Sent::memory_bytes).sum::<usize>()
            + self.spare.memory_bytes()
            + self.accum.capacity() * std::mem::size_of::<f32>()
            + self.pending.memory_bytes()
    }
}

/// Bytes held by a server, by purpose. Sizes are `size_of` × capacity of
/// every allocation; heap memory owned by the entity or player type itself
/// (none for `net_struct!` types) is not included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryReport {
    /// The state slab: every stored entity state, each once.
    pub entity_states: usize,
    /// States currently referenced.
    pub stored_states: usize,
    /// Frame tables (state reference per entity number, live lists).
    pub frame_tables: usize,
    /// Frames still referenced.
    pub frames: usize,
    /// Client rings (player state, held-entity set and overrides per
    /// snapshot) and per-client priority accumulators.
    pub client_rings: usize,
    /// The master state, gamestate and encoding scratch buffers.
    pub other: usize,
}

impl MemoryReport {
    /// The snapshot history: states, frames and client rings.
    pub fn history_bytes(&self) -> usize {
        self.entity_states + self.frame_tables + self.client_rings
    }

    /// Everything counted.
    pub fn total_bytes(&self) -> usize {
        self.history_bytes() + self.other
    }
}

/// The master gamestate and the snapshot streams to every client.
///
/// `E` is the entity type and `P` the player-state type, normally
/// [`net_struct!`](fields::net_struct) structs. See the [crate docs](crate)
/// for a complete loop.
#[derive(Debug)]
pub struct Server<E, P> {
    pub(crate) config: ServerConfig,
    pub(crate) zero_entity: E,
    pub(crate) zero_player: P,
    master: Vec<Option<MasterEntity<E>>>,
    pub(crate) store: FrameStore<E>,
    pub(crate) clients: Vec<Option<ClientSlot<P>>>,
    generations: Vec<u32>,
    pub(crate) gamestate: Gamestate<E>,
    sealed: bool,
    next_frame: u32,
    fingerprint: u32,
    pub(crate) models: Models,
    /// The models adapting along each client's chain, when `models` asks.
    pub(crate) adapt: Option<ChainModels>,
    pub(crate) work: Work<P>,
    pub(crate) framing: Arc<dyn Framing>,
}

/// `prototype` with every field word zero: the dummy baseline.
///
/// "Zeroed" is defined on words, not Rust values, so both ends agree
/// whatever types they use: a quantized field's word 0 is its minimum, which
/// a `Default` struct (value 0.0) would not hold, while a schema-driven
/// [`DynamicState`](fields::dynamic::DynamicState) zeroes words directly.
pub(crate) fn zeroed<T: Fields>(prototype: &T) -> T {
    let mut out = prototype.clone();
    for field in 0..out.field_count() {
        for element in 0..out.field_kind(field).elements() {
            out.set_word(field, element, 0);
        }
    }
    out
}

/// A copy of `value` holding exactly what the wire keeps: what a client
/// decodes. History stores states this way so that "what the client holds"
/// and "what the server recorded" compare equal.
#[inline]
pub(crate) fn normalize<T: Fields>(value: &T, zero: &T) -> T {
    value.wire_normalized(zero)
}

impl<E: Fields + PartialEq + Default, P: Fields + PartialEq + Default> Server<E, P> {
    /// A server for types with a `Default` (every `net_struct!` type). The
    /// dummy baseline is each type with every field word zero.
    pub fn new(config: ServerConfig) -> Result<Self, ServerError> {
        Self::with_prototypes(config, E::default(), P::default())
    }
}

impl<E: Fields + PartialEq, P: Fields + PartialEq> Server<E, P> {
    /// A server with explicit prototypes of the entity and player-state
    /// types. Their values do not matter: the dummy baseline that full
    /// updates are deltas from is each with every field word set to zero.
    pub fn with_prototypes(
        config: ServerConfig,
        zero_entity: E,
        zero_player: P,
    ) -> Result<Self, ServerError> {
        config.validate()?;
        let zero_entity = zeroed(&zero_entity);
        let zero_player = zeroed(&zero_player);
        let limit = config.max_entities;
        let fingerprint = layout_fingerprint(&zero_entity, &zero_player);
        Ok(Server {
            config,
            master: vec![None; limit as usize],
            store: FrameStore::new(limit),
            clients: Vec::new(),
            generations: Vec::new(),
            gamestate: Gamestate::new(),
            sealed: false,
            next_frame: 0,
            fingerprint,
            models: Models::of_types(),
            adapt: None,
            work: Work::new(limit),
            framing: Arc::new(Compact),
            zero_entity,
            zero_player,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The codec of every message.
    pub fn codec(&self) -> Codec {
        self.config.codec
    }

    /// The framing of snapshot messages ([`Compact`] unless set).
    pub fn framing(&self) -> &Arc<dyn Framing> {
        &self.framing
    }

    /// Frames snapshot messages with `framing` (the `q3` crate's Quake 3
    /// `svc_snapshot`, for one). Only before the first gamestate is
    /// written, and only a framing that carries the server's codec.
    pub fn set_framing(&mut self, framing: Arc<dyn Framing>) -> Result<(), ServerError> {
        if self.sealed {
            return Err(ServerError::FramingSealed);
        }
        if !framing.accepts(self.config.codec) {
            return Err(crate::error::ConfigError::FramingRefusesCodec {
                framing: framing.name(),
                codec: self.config.codec.name(),
            }
            .into());
        }
        self.framing = framing;
        self.work.forget_encodings();
        Ok(())
    }

    /// The layout fingerprint clients check in the gamestate (the
    /// models' ids folded in when they are not the types' own: see
    /// [`Models::fingerprint`]).
    pub fn fingerprint(&self) -> u32 {
        self.models
            .fingerprint(self.fingerprint, &self.zero_entity, &self.zero_player)
    }

    /// The native models snapshots are coded with.
    pub fn models(&self) -> &Models {
        &self.models
    }

    /// Codes snapshots with `models` instead of the types' own (see
    /// [`crate::models`]). Only before the first gamestate is written;
    /// clients must be given the same models, or they refuse the
    /// gamestate.
    pub fn set_models(&mut self, models: Models) -> Result<(), ServerError> {
        if self.sealed {
            return Err(ServerError::ModelsSealed);
        }
        models.check(&self.zero_entity, &self.zero_player)?;
        self.adapt = ChainModels::new(
            &models,
            self.config.codec,
            &self.zero_entity,
            &self.zero_player,
        )?;
        self.models = models;
        self.work.forget_encodings();
        Ok(())
    }

    fn check_number(&self, number: u32) -> Result<(), ServerError> {
        if number >= self.config.max_entities {
            return Err(ServerError::EntityOutOfRange {
                number,
                limit: self.config.max_entities,
            });
        }
        Ok(())
    }

    // ----- master entities -----

    /// Spawns or replaces entity `number` in the master state.
    pub fn set_entity(&mut self, number: u32, state: E) -> Result<(), ServerError> {
        self.check_number(number)?;
        match &mut self.master[number as usize] {
            Some(entity) => {
                entity.state = state;
                entity.dirty = true;
            }
            slot @ None => {
                *slot = Some(MasterEntity {
                    state,
                    stored: NO_STATE,
                    dirty: true,
                    always: false,
                })
            }
        }
        Ok(())
    }

    /// Entity `number` of the master state.
    pub fn entity(&self, number: u32) -> Option<&E> {
        self.master.get(number as usize)?.as_ref().map(|e| &e.state)
    }

    /// Mutable access to entity `number`; it is compared with its last
    /// committed state at the next [`commit_frame`](Self::commit_frame).
    pub fn entity_mut(&mut self, number: u32) -> Option<&mut E> {
        let entity = self.master.get_mut(number as usize)?.as_mut()?;
        entity.dirty = true;
        Some(&mut entity.state)
    }

    /// Frees entity `number`, returning its state. Its number may be reused
    /// at once; clients that held it get the new entity as a delta from the
    /// old one, as in Quake 3 (put a spawn counter in the entity if the game
    /// must tell them apart).
    pub fn remove_entity(&mut self, number: u32) -> Option<E> {
        self.master
            .get_mut(number as usize)?
            .take()
            .map(|entity| entity.state)
    }

    /// Marks entity `number` as in scope for every client, ahead of others
    /// when the budget is short (the world, game rules, team flags).
    pub fn set_always_in_scope(&mut self, number: u32, always: bool) -> Result<(), ServerError> {
        self.check_number(number)?;
        if let Some(entity) = &mut self.master[number as usize] {
            entity.always = always;
        }
        Ok(())
    }

    /// Every master entity as `(number, state)`, in number order.
    pub fn entities(&self) -> impl Iterator<Item = (u32, &E)> {
        self.master
            .iter()
            .enumerate()
            .filter_map(|(n, e)| e.as_ref().map(|e| (n as u32, &e.state)))
    }

    // ----- gamestate -----

    /// Sets configstring `index` ("" unsets it). After the gamestate has
    /// been sent, send the change with [`write_configstring`](Self::write_configstring)
    /// on the reliable ordered channel.
    pub fn set_configstring(&mut self, index: usize, value: &str) -> Result<(), ServerError> {
        self.gamestate.set_configstring(index, value)
    }

    /// Configstring `index`, if set.
    pub fn configstring(&self, index: usize) -> Option<&str> {
        self.gamestate.configstring(index)
    }

    /// Sets (or with `None` clears) the spawn baseline of entity `number`:
    /// the state a client starts it from, so an entity that looks like its
    /// baseline costs a few bits to announce. Only before the first gamestate
    /// is written.
    pub fn set_baseline(&mut self, number: u32, state: Option<E>) -> Result<(), ServerError> {
        self.check_number(number)?;
        if self.sealed {
            return Err(ServerError::GamestateSealed);
        }
        let state = state.map(|s| normalize(&s, &self.zero_entity));
        self.gamestate.set_baseline(number, state);
        self.work.forget_encodings();
        Ok(())
    }

    /// The gamestate (configstrings and baselines).
    pub fn gamestate(&self) -> &Gamestate<E> {
        &self.gamestate
    }

    /// Encodes the gamestate message into `out`, for a client's reliable
    /// channel before its first snapshot. Seals the spawn baselines.
    pub fn write_gamestate(&mut self, out: &mut Vec<u8>) -> Result<(), ServerError> {
        self.sealed = true;
        let header = GamestateHeader {
            codec: self.config.codec,
            entity_limit: self.config.max_entities,
            fingerprint: self.fingerprint(),
        };
        encode_growing(out, 1024, |w| {
            write_gamestate(w, &header, &self.gamestate, &self.zero_entity)
        })?;
        Ok(())
    }

    /// Encodes the current value of configstring `index` as a change message.
    pub fn write_configstring(&self, index: usize, out: &mut Vec<u8>) -> Result<(), ServerError> {
        let value = self.gamestate.configstring(index).unwrap_or("");
        if index >= crate::config::MAX_CONFIGSTRINGS {
            return Err(ServerError::ConfigstringIndex { index });
        }
        encode_growing(out, value.len() + 8, |w| {
            write_configstring(w, index, value)
        })?;
        Ok(())
    }

    // ----- frames -----

    /// Stores the master state as a new frame at `time` (ms) and returns its
    /// number. Only entities that changed on the wire get a new stored state.
    pub fn commit_frame(&mut self, time: u32) -> Result<u32, ServerError> {
        if let Some(previous) = self.store.newest() {
            if time < previous.time {
                return Err(ServerError::TimeWentBackwards {
                    previous: previous.time,
                    now: time,
                });
            }
        }
        let number = self.next_frame;
        self.next_frame = self.next_frame.wrapping_add(1);
        let mut frame = self.store.begin(number, time);
        let slab = &mut self.store.slab;
        for (index, slot) in self.master.iter_mut().enumerate() {
            let Some(entity) = slot else {
                continue;
            };
            if entity.dirty || entity.stored == NO_STATE {
                store_if_changed(slab, entity, &self.zero_entity);
            }
            frame.push(slab, index as u32, entity.stored, entity.always);
        }
        self.store.push(frame);
        self.work.next_frame(number);
        Ok(number)
    }

    /// The newest committed frame number.
    pub fn frame(&self) -> Option<u32> {
        self.store.newest().map(|f| f.number)
    }

    /// The newest committed frame's time.
    pub fn time(&self) -> Option<u32> {
        self.store.newest().map(|f| f.time)
    }

    // ----- clients -----

    /// Adds a client. Its first snapshot is a full update.
    pub fn add_client(&mut self, settings: ClientSettings) -> Result<ClientId, ServerError> {
        self.add_slot(settings, None)
    }

    /// Adds a recorder of `viewed`'s view: the same scope queries and player
    /// state, its own stream (usually [`ClientSettings::recorder`]). Force
    /// keyframes with [`request_full_update`](Self::request_full_update).
    pub fn add_recorder(
        &mut self,
        viewed: ClientId,
        settings: ClientSettings,
    ) -> Result<ClientId, ServerError> {
        self.slot(viewed)?;
        self.add_slot(settings, Some(viewed))
    }

    fn add_slot(
        &mut self,
        settings: ClientSettings,
        view: Option<ClientId>,
    ) -> Result<ClientId, ServerError> {
        settings.validate()?;
        let index = match self.clients.iter().position(Option::is_none) {
            Some(index) => index,
            None => {
                self.clients.push(None);
                self.generations.push(0);
                self.clients.len() - 1
            }
        };
        let id = ClientId {
            index: index as u32,
            generation: self.generations[index],
        };
        let limit = self.config.max_entities;
        self.clients[index] = Some(ClientSlot {
            id,
            settings,
            view,
            player: self.zero_player.clone(),
            flags: 0,
            area_mask: AreaMask::EMPTY,
            ring: (0..RING_SIZE)
                .map(|_| Sent::blank(limit, &self.zero_player))
                .collect(),
            spare: Sent::blank(limit, &self.zero_player),
            next_sequence: 0,
            last_acked: None,
            ack_floor: 0,
            full_pending: false,
            accum: vec![0.0; limit as usize],
            pending: Bitset::new(limit),
            rate: RateState::new(&settings),
            stats: SendStats::default(),
        });
        self.work.ensure_buffer(settings.max_snapshot_bytes);
        Ok(id)
    }

    /// Removes a client, releasing its history.
    pub fn remove_client(&mut self, id: ClientId) -> Result<(), ServerError> {
        self.slot(id)?;
        let index = id.index();
        if let Some(mut slot) = self.clients[index].take() {
            for sent in &mut slot.ring {
                sent.release(&mut self.store);
            }
        }
        self.generations[index] = self.generations[index].wrapping_add(1);
        Ok(())
    }

    /// Every client and recorder, in slot order.
    pub fn client_ids(&self) -> impl Iterator<Item = ClientId> + '_ {
        self.clients.iter().flatten().map(|c| c.id)
    }

    pub(crate) fn slot(&self, id: ClientId) -> Result<&ClientSlot<P>, ServerError> {
        self.clients
            .get(id.index())
            .and_then(Option::as_ref)
            .filter(|c| c.id == id)
            .ok_or(ServerError::UnknownClient(id))
    }

    pub(crate) fn slot_mut(&mut self, id: ClientId) -> Result<&mut ClientSlot<P>, ServerError> {
        self.clients
            .get_mut(id.index())
            .and_then(Option::as_mut)
            .filter(|c| c.id == id)
            .ok_or(ServerError::UnknownClient(id))
    }

    /// A client's send settings.
    pub fn settings(&self, id: ClientId) -> Result<&ClientSettings, ServerError> {
        Ok(&self.slot(id)?.settings)
    }

    /// Changes a client's send settings (e.g. its announced rate).
    pub fn set_settings(
        &mut self,
        id: ClientId,
        settings: ClientSettings,
    ) -> Result<(), ServerError> {
        settings.validate()?;
        self.work.ensure_buffer(settings.max_snapshot_bytes);
        self.slot_mut(id)?.settings = settings;
        Ok(())
    }

    /// Sets a client's player state (sent in its next snapshot).
    pub fn set_player_state(&mut self, id: ClientId, state: P) -> Result<(), ServerError> {
        self.slot_mut(id)?.player = state;
        Ok(())
    }

    /// A client's current player state.
    pub fn player_state(&self, id: ClientId) -> Result<&P, ServerError> {
        Ok(&self.slot(id)?.player)
    }

    /// Mutable access to a client's player state.
    pub fn player_state_mut(&mut self, id: ClientId) -> Result<&mut P, ServerError> {
        Ok(&mut self.slot_mut(id)?.player)
    }

    /// Sets the flags of a client's next snapshots: the game's own bits
    /// (Quake 3's not-active and server-count toggle). The server sets
    /// [`RATE_DELAYED`](crate::framing::RATE_DELAYED) itself when the client's byte rate held a snapshot
    /// back, on top of these.
    pub fn set_snapshot_flags(&mut self, id: ClientId, flags: u8) -> Result<(), ServerError> {
        self.slot_mut(id)?.flags = flags;
        Ok(())
    }

    /// Sets the area mask of a client's next snapshots (Quake 3: the map
    /// areas its view reaches), at most
    /// [`MAX_AREA_MASK`](crate::framing::MAX_AREA_MASK) bytes.
    pub fn set_area_mask(&mut self, id: ClientId, mask: &[u8]) -> Result<(), ServerError> {
        let mask = AreaMask::new(mask).ok_or(ServerError::AreaMaskTooLong { len: mask.len() })?;
        self.slot_mut(id)?.area_mask = mask;
        Ok(())
    }

    /// Numbers a client's next snapshot `sequence` (its later ones follow
    /// on), as the transport numbers what carries it: a Quake 3 message
    /// number, a netchan state id. Sequences only grow; the ones skipped
    /// are never sent, and the ring's depth counts them.
    pub fn set_next_sequence(&mut self, id: ClientId, sequence: u32) -> Result<(), ServerError> {
        let slot = self.slot_mut(id)?;
        if sequence < slot.next_sequence {
            return Err(ServerError::SequenceBehind {
                next: slot.next_sequence,
                given: sequence,
            });
        }
        slot.next_sequence = sequence;
        Ok(())
    }

    /// The sequence a client's next snapshot gets.
    pub fn next_sequence(&self, id: ClientId) -> Result<u32, ServerError> {
        Ok(self.slot(id)?.next_sequence)
    }

    /// A client's send statistics.
    pub fn stats(&self, id: ClientId) -> Result<&SendStats, ServerError> {
        Ok(&self.slot(id)?.stats)
    }

    // ----- acknowledgements -----

    /// Records that the client holds snapshot `sequence` (from the netchan's
    /// delivered notify, or the ack the client sends back). Returns whether
    /// it became the newest acknowledged snapshot — the base of the next
    /// delta. Unknown, duplicate, older and out-of-ring sequences are ignored.
    pub fn acknowledge(&mut self, id: ClientId, sequence: u32) -> Result<bool, ServerError> {
        let slot = self.slot_mut(id)?;
        let usable = sequence >= slot.ack_floor
            && sequence < slot.next_sequence
            && slot.last_acked.is_none_or(|acked| sequence > acked);
        if !usable {
            return Ok(false);
        }
        let sent = &slot.ring[sequence as usize % RING_SIZE];
        if !(sent.valid && sent.sequence == sequence) {
            return Ok(false);
        }
        slot.last_acked = Some(sequence);
        slot.stats.acks += 1;
        Ok(true)
    }

    /// The newest acknowledged snapshot of a client.
    pub fn last_acknowledged(&self, id: ClientId) -> Result<Option<u32>, ServerError> {
        Ok(self.slot(id)?.last_acked)
    }

    /// Makes the client's next snapshot a full update and forgets its
    /// earlier acks (a client whose sync checksum disagreed, a restarted
    /// client, or a recorder's keyframe).
    pub fn request_full_update(&mut self, id: ClientId) -> Result<(), ServerError> {
        let slot = self.slot_mut(id)?;
        slot.full_pending = true;
        slot.last_acked = None;
        slot.ack_floor = slot.next_sequence;
        Ok(())
    }

    // ----- inspection -----

    /// Snapshot `sequence` as sent to a client — exactly what the client
    /// holds after decoding it — while it is in the client's ring.
    pub fn sent_snapshot(&self, id: ClientId, sequence: u32) -> Option<SentSnapshot<'_, E, P>> {
        let slot = self.slot(id).ok()?;
        let sent = &slot.ring[sequence as usize % RING_SIZE];
        if !(sent.valid && sent.sequence == sequence) {
            return None;
        }
        let frame = self.store.frame(sent.frame)?;
        Some(SentSnapshot {
            sent,
            frame,
            slab: &self.store.slab,
        })
    }

    /// Bytes held, by purpose.
    pub fn memory(&self) -> MemoryReport {
        let master = self.master.capacity() * std::mem::size_of::<Option<MasterEntity<E>>>();
        MemoryReport {
            entity_states: self.store.slab.memory_bytes(),
            stored_states: self.store.slab.live(),
            frame_tables: self.store.frame_memory_bytes(),
            frames: self.store.frame_count(),
            client_rings: self.clients.capacity() * std::mem::size_of::<Option<ClientSlot<P>>>()
                + self
                    .clients
                    .iter()
                    .flatten()
                    .map(ClientSlot::memory_bytes)
                    .sum::<usize>(),
            other: master
                + self.generations.capacity() * std::mem::size_of::<u32>()
                + self.gamestate.memory_bytes()
                + self.work.memory_bytes(),
        }
    }
}

/// Stores `entity`'s state as a new version if it differs on the wire from
/// its last stored one.
fn store_if_changed<E: Fields>(slab: &mut StateSlab<E>, entity: &mut MasterEntity<E>, zero: &E) {
    let normalized = normalize(&entity.state, zero);
    if entity.stored == NO_STATE || slab.get(entity.stored).wire_differs(&normalized) {
        let hash = state_hash(&normalized);
        entity.stored = slab.insert(normalized, hash);
    }
    entity.dirty = false;
}

/// A snapshot as the server sent it (see [`Server::sent_snapshot`]).
#[derive(Debug, Clone, Copy)]
pub struct SentSnapshot<'a, E, P> {
    sent: &'a Sent<P>,
    frame: &'a Frame,
    slab: &'a StateSlab<E>,
}

impl<'a, E, P> SentSnapshot<'a, E, P> {
    /// Its sequence number.
    pub fn sequence(&self) -> u32 {
        self.sent.sequence
    }

    /// The server frame it was taken from.
    pub fn frame(&self) -> u32 {
        self.sent.frame
    }

    /// That frame's time.
    pub fn server_time(&self) -> u32 {
        self.sent.time
    }

    /// The snapshot it was a delta from (`None`: a full update).
    pub fn base(&self) -> Option<u32> {
        self.sent.base
    }

    /// Its size in bytes.
    pub fn bytes(&self) -> u32 {
        self.sent.bytes
    }

    /// Its flags (see [`Server::set_snapshot_flags`]).
    pub fn flags(&self) -> u8 {
        self.sent.flags
    }

    /// Its area mask.
    pub fn area_mask(&self) -> &'a [u8] {
        self.sent.area_mask.as_bytes()
    }

    /// How its message was coded against its base.
    pub fn delivery(&self) -> Delivery {
        self.sent.delivery
    }

    /// The player state sent (normalized to what the wire keeps).
    pub fn player(&self) -> &'a P {
        &self.sent.player
    }

    /// Entities the client holds after it, in number order.
    pub fn entities(&self) -> impl Iterator<Item = (u32, &'a E)> + 'a {
        let sent = self.sent;
        let frame = self.frame;
        let slab = self.slab;
        sent.visible
            .iter()
            .map(move |n| (n, slab.get(sent.state_of(frame, n))))
    }

    /// The state of entity `number` the client holds after it.
    pub fn entity(&self, number: u32) -> Option<&'a E> {
        self.sent
            .visible
            .contains(number)
            .then(|| self.slab.get(self.sent.state_of(self.frame, number)))
    }

    /// Number of entities the client holds after it.
    pub fn len(&self) -> usize {
        self.sent.visible.len()
    }

    /// Whether the client holds no entity after it.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
