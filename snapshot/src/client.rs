//! The client: applies gamestates and configstrings, decodes each snapshot
//! against the base it names, keeps a ring of what it decoded, and reports
//! the acknowledgement to send back.
//!
//! The client is generic over any [`Fields`] types, so the same code decodes
//! a live stream into the game's `net_struct!` types and a recorded demo
//! into [`DynamicState`](fields::dynamic::DynamicState) values built from
//! the demo's schema. Every decoding step is bounded: entity numbers are
//! checked against the gamestate's limit (itself at most
//! [`MAX_ENTITY_LIMIT`](crate::config::MAX_ENTITY_LIMIT)), strings against
//! their maximum length, so untrusted input can neither panic the client
//! nor make it allocate beyond those bounds. A rejected message leaves the
//! client as it was and is counted in [`ClientStats`].

use std::sync::Arc;

use fields::merge::{
    merge_by_number, read_entity_list_from, AddedStart, ListError, ListRead, Merged,
};
use fields::range::SplitReader;
use fields::{BitReader, BitSource, Codec, DeltaContext, Fields, HuffmanReader, ModelCodec};

use crate::adapt::{Adapted, ChainModels, Tallies};
use crate::checksum::{layout_fingerprint, state_hash, SyncChecksum};
use crate::config::RING_SIZE;
use crate::error::{ClientError, ConfigError};
use crate::framing::{BaseInfo, Bases, Compact, Framing, MessageCoding, SnapshotHeader};
use crate::gamestate::{read_configstring, read_gamestate, Gamestate};
use crate::message::{expect_end, expect_end_restored, MessageKind};
use crate::models::{model_of, Models};
use crate::received::Snapshot;
use crate::server::zeroed;
use crate::stats::ClientStats;
use crate::trace::{EntityTrace, FieldMask, SnapshotTrace, SymbolTrace, UpdateKind};

/// What a message did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// A gamestate was applied (held snapshots were dropped: they may have
    /// been decoded against other baselines).
    Gamestate,
    /// Configstring `index` changed.
    Configstring {
        /// Its index.
        index: usize,
    },
    /// A snapshot was decoded; it is now [`Client::newest`].
    Snapshot(SnapshotReport),
    /// A snapshot older than the newest held (it arrived late). It does not
    /// become the newest, but when its base is held it is decoded into its
    /// ring slot: the server may have been told it was delivered and use it
    /// as a base. Duplicates and snapshots that cannot be kept are ignored.
    Stale {
        /// Its sequence number.
        sequence: u32,
        /// Whether it was decoded and kept as a possible base.
        kept: bool,
    },
}

/// The outcome of a sync check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncCheck {
    /// The snapshot carried no checksum.
    Absent,
    /// The client's state matches the server's record.
    Matched,
    /// It does not: the client asks for a full update.
    Mismatched,
}

/// A decoded snapshot, in brief.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotReport {
    /// Its sequence number (the client's new ack).
    pub sequence: u32,
    /// Its base (`None`: a full update).
    pub base: Option<u32>,
    /// The older snapshot entities re-entering the view were coded from,
    /// if its header named one (see [`crate::history`]): decoding it
    /// needed that snapshot too.
    pub history: Option<u32>,
    /// The sync check.
    pub sync: SyncCheck,
    /// Entities that entered the view since the previous newest snapshot.
    pub entered: usize,
    /// Entities that left it.
    pub left: usize,
    /// With adapting models: the ids of the entity and player-state models
    /// it was decoded with (the server's
    /// [`SnapshotInfo::coded_with`](crate::SnapshotInfo::coded_with)).
    pub coded_with: Option<[u64; 2]>,
}

/// What the gamestate fixed for the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Setup {
    codec: Codec,
    entity_limit: u32,
}

/// The receiving end of a snapshot stream.
#[derive(Debug, Clone)]
pub struct Client<E, P> {
    framing: Arc<dyn Framing>,
    zero_entity: E,
    zero_player: P,
    fingerprint: u32,
    models: Models,
    /// The models adapting along the stream's chains, when `models` asks.
    adapt: Option<ChainModels>,
    /// The adaptations each ring slot's snapshot holds, and the ids of the
    /// models it was decoded with (adapting only).
    adapted: Vec<Option<Adapted>>,
    coded_with: [Option<[u64; 2]>; RING_SIZE],
    /// The scratch snapshot's adaptations, and the ids of the models that
    /// decoded it.
    scratch_adapted: Option<Adapted>,
    scratch_coded_with: Option<[u64; 2]>,
    tallies: Tallies,
    setup: Option<Setup>,
    gamestate: Gamestate<E>,
    ring: Vec<Snapshot<E, P>>,
    valid: [bool; RING_SIZE],
    /// Where a snapshot is decoded before it replaces a ring slot, so a
    /// rejected message changes nothing.
    scratch: Snapshot<E, P>,
    /// A chained snapshot's entities after its first list.
    via_entities: Vec<(u32, E)>,
    newest: Option<u32>,
    previous: Option<u32>,
    entered: Vec<u32>,
    left: Vec<u32>,
    needs_full_update: bool,
    stats: ClientStats,
    trace: Option<SnapshotTrace>,
    /// The last message's symbols, when tracing them.
    symbols: Option<SymbolTrace>,
    text: Vec<u8>,
    /// The last bit-stream snapshot message with the zero byte its sender
    /// may have left out put back ([`MessageCoding::sent_len`]), and
    /// [`WINDOW_PADDING`] zero bytes after it that are not read.
    restored: Vec<u8>,
}

/// The zero bytes a restored bit-stream message is followed by, unread:
/// enough that a [`BitReader`]'s 64-bit window from any byte of the message
/// lies in the buffer.
const WINDOW_PADDING: usize = 7;

impl<E: Fields + Default, P: Fields + Default> Default for Client<E, P> {
    fn default() -> Self {
        Client::new()
    }
}

impl<E: Fields + Default, P: Fields + Default> Client<E, P> {
    /// A client for types with a `Default` (every `net_struct!` type).
    pub fn new() -> Self {
        Client::with_prototypes(E::default(), P::default())
    }
}

impl<E: Fields, P: Fields> Client<E, P> {
    /// A client with explicit prototypes of the entity and player-state
    /// types — for types without a `Default`, such as
    /// [`DynamicState`](fields::dynamic::DynamicState) (pass its layout's
    /// `zeroed()`). Their values do not matter: the dummy baseline is each
    /// with every field word zero, as on the server.
    pub fn with_prototypes(zero_entity: E, zero_player: P) -> Self {
        let zero_entity = zeroed(&zero_entity);
        let zero_player = zeroed(&zero_player);
        let fingerprint = layout_fingerprint(&zero_entity, &zero_player);
        Client {
            framing: Arc::new(Compact),
            ring: (0..RING_SIZE)
                .map(|_| Snapshot::empty(zero_player.clone()))
                .collect(),
            valid: [false; RING_SIZE],
            scratch: Snapshot::empty(zero_player.clone()),
            via_entities: Vec::new(),
            zero_entity,
            zero_player,
            fingerprint,
            models: Models::of_types(),
            adapt: None,
            adapted: vec![None; RING_SIZE],
            coded_with: [None; RING_SIZE],
            scratch_adapted: None,
            scratch_coded_with: None,
            tallies: Tallies::default(),
            setup: None,
            gamestate: Gamestate::new(),
            newest: None,
            previous: None,
            entered: Vec::new(),
            left: Vec::new(),
            needs_full_update: false,
            stats: ClientStats::default(),
            trace: None,
            symbols: None,
            text: Vec::new(),
            restored: Vec::new(),
        }
    }

    /// Reads a gamestate or configstring message (the reliable channel's).
    /// A snapshot needs its sequence number and goes to
    /// [`read_snapshot`](Self::read_snapshot). On error the client is
    /// unchanged, and the error is counted.
    pub fn read_message(&mut self, bytes: &[u8]) -> Result<Received, ClientError> {
        let result = self.read_reliable(bytes);
        if let Err(error) = &result {
            self.stats.count(error);
        }
        result
    }

    /// Reads snapshot message `bytes`, snapshot `sequence` of the stream
    /// (the transport's number for it: see [`crate::framing`]). On error
    /// the client is unchanged, and the error is counted; a delta from a
    /// snapshot the client does not hold sets
    /// [`needs_full_update`](Self::needs_full_update).
    pub fn read_snapshot(&mut self, sequence: u32, bytes: &[u8]) -> Result<Received, ClientError> {
        // The trace is kept even for a message rejected part-way: it shows
        // what was decoded up to the error.
        let mut trace = self.trace.take();
        let mut symbols = self.symbols.take();
        let result = self.read_snapshot_traced(sequence, bytes, trace.as_mut(), symbols.as_mut());
        self.trace = trace;
        self.symbols = symbols;
        if let Err(error) = &result {
            self.stats.count(error);
            if matches!(error, ClientError::BaseMissing { .. }) {
                // Only a full update can recover (e.g. after a restart).
                self.needs_full_update = true;
            }
        }
        result
    }

    /// The framing snapshots are read with ([`Compact`] unless set).
    pub fn framing(&self) -> &Arc<dyn Framing> {
        &self.framing
    }

    /// Reads snapshots with `framing` from now on (both ends must use the
    /// same one).
    pub fn set_framing(&mut self, framing: Arc<dyn Framing>) {
        self.framing = framing;
    }

    /// The native models snapshots are decoded with.
    pub fn models(&self) -> &Models {
        &self.models
    }

    /// Decodes snapshots with `models` instead of the types' own (see
    /// [`crate::models`]): the server's, which its gamestate's fingerprint
    /// checks. Forgets every snapshot held (they were decoded with the
    /// models before), so the next gamestate starts the stream again.
    pub fn set_models(&mut self, models: Models) -> Result<(), ConfigError> {
        models.check(&self.zero_entity, &self.zero_player)?;
        // The codec is the gamestate's; a q3 stream has no models to adapt
        // and the native codec is checked when snapshots are read.
        self.adapt =
            ChainModels::new(&models, Codec::Native, &self.zero_entity, &self.zero_player)?;
        self.models = models;
        self.clear_snapshots();
        Ok(())
    }

    /// The fingerprint a gamestate must carry: the layout's, with the
    /// models folded in (see [`Models::fingerprint`]).
    pub fn fingerprint(&self) -> u32 {
        self.models
            .fingerprint(self.fingerprint, &self.zero_entity, &self.zero_player)
    }

    fn read_reliable(&mut self, bytes: &[u8]) -> Result<Received, ClientError> {
        let mut reader = BitReader::new(bytes);
        match MessageKind::read(&mut reader)? {
            MessageKind::Gamestate => {
                let (header, gamestate) =
                    read_gamestate(&mut reader, &self.zero_entity, self.fingerprint())?;
                self.setup = Some(Setup {
                    codec: header.codec,
                    entity_limit: header.entity_limit,
                });
                self.gamestate = gamestate;
                self.clear_snapshots();
                self.stats.gamestates += 1;
                Ok(Received::Gamestate)
            }
            MessageKind::Configstring => {
                let index = read_configstring(&mut reader, &mut self.gamestate, &mut self.text)?;
                self.stats.configstrings += 1;
                Ok(Received::Configstring { index })
            }
            MessageKind::Delta | MessageKind::Full => Err(ClientError::SnapshotWithoutSequence),
        }
    }

    /// Decodes a bit-stream snapshot message. The sender leaves a last zero
    /// byte out: the message is read with one after it, which may be read
    /// or left as padding; and from a buffer [`WINDOW_PADDING`] zero bytes
    /// longer, not read, so that every read finds its eight-byte window in
    /// the buffer, where the message's last entities (read with fewer than
    /// eight bytes left) took the reader's slower tail path. Out of line,
    /// so the other codings' path is as it was.
    #[inline(never)]
    fn read_bit_stream(
        &mut self,
        framing: &dyn Framing,
        sequence: u32,
        bytes: &[u8],
        trace: Option<&mut SnapshotTrace>,
        symbols: Option<&mut SymbolTrace>,
    ) -> Result<Decoded, ClientError> {
        let mut restored = std::mem::take(&mut self.restored);
        restored.clear();
        restored.extend_from_slice(bytes);
        restored.extend_from_slice(&[0; 1 + WINDOW_PADDING]);
        let mut reader = BitReader::with_bit_len(&restored, 8 * (bytes.len() + 1));
        let decoded = self
            .decode_snapshot(framing, &mut reader, sequence, trace, symbols)
            .and_then(|decoded| decoded.ended(|| expect_end_restored(&mut reader)));
        self.restored = restored;
        decoded
    }

    fn read_snapshot_traced(
        &mut self,
        sequence: u32,
        bytes: &[u8],
        trace: Option<&mut SnapshotTrace>,
        symbols: Option<&mut SymbolTrace>,
    ) -> Result<Received, ClientError> {
        let reader = BitReader::new(bytes);
        let framing = Arc::clone(&self.framing);
        let decoded = match framing.coding() {
            MessageCoding::Bits => {
                self.read_bit_stream(&*framing, sequence, bytes, trace, symbols)?
            }
            MessageCoding::Huffman(code) => {
                let mut source = HuffmanReader::new(reader, code);
                let decoded =
                    self.decode_snapshot(&*framing, &mut source, sequence, trace, symbols)?;
                decoded.ended(|| expect_end(&mut source.into_inner()))?
            }
            MessageCoding::Split => {
                // The two parts meet somewhere inside the message: what it
                // can be checked for is that they fit in it together.
                let mut source = SplitReader::new(bytes);
                let decoded =
                    self.decode_snapshot(&*framing, &mut source, sequence, trace, symbols)?;
                decoded.ended(|| match source.fits() {
                    true => Ok(()),
                    false => Err(ClientError::invalid(
                        "snapshot",
                        8 * bytes.len(),
                        "its raw bits and range-coded symbols overlap",
                    )),
                })?
            }
        };
        match decoded {
            Decoded::Stale(received) => Ok(received),
            Decoded::Ready { header, sync } => Ok(self.commit(header, sync)),
        }
    }

    /// Decodes a snapshot into the scratch slot (nothing is committed).
    fn decode_snapshot<S: BitSource>(
        &mut self,
        framing: &dyn Framing,
        reader: &mut S,
        sequence: u32,
        mut trace: Option<&mut SnapshotTrace>,
        mut symbols: Option<&mut SymbolTrace>,
    ) -> Result<Decoded, ClientError> {
        let Setup {
            codec,
            entity_limit,
        } = self.setup.ok_or(ClientError::NoGamestate)?;
        let slot = sequence as usize % RING_SIZE;
        let late = self.newest.is_some_and(|newest| sequence <= newest);
        // A late snapshot is kept only if its slot holds nothing newer (or
        // the same one: a duplicate).
        let slot_taken = self.valid[slot] && self.ring[slot].sequence >= sequence;
        let stale = Decoded::Stale(Received::Stale {
            sequence,
            kept: false,
        });
        if late && slot_taken {
            self.stats.stale += 1;
            return Ok(stale);
        }
        let held = HeldRing {
            ring: &self.ring,
            valid: &self.valid,
        };
        let header = match framing.read_header(reader, sequence, &held) {
            Ok(header) => header,
            Err(ClientError::BaseMissing { .. }) if late => {
                // Not needed to move forward: no error, no repair.
                self.stats.stale += 1;
                return Ok(stale);
            }
            Err(error) => return Err(error),
        };
        let base = match header.base {
            None => None,
            Some(named) => Some(held.get(named).ok_or(ClientError::BaseMissing {
                sequence,
                base: named,
            })?),
        };
        // Entities re-entering the view are coded from the history
        // snapshot the header names (see `crate::history`).
        let history = match header.history {
            None => None,
            Some(_) if codec != Codec::Native || base.is_none() => {
                return Err(ClientError::invalid(
                    "snapshot header",
                    0,
                    "names a history snapshot, which only a native delta may",
                ))
            }
            Some(named) => match held.get(named) {
                Some(snapshot) => Some(snapshot),
                // As for a missing base: not needed to move forward.
                None if late => {
                    self.stats.stale += 1;
                    return Ok(stale);
                }
                None => {
                    return Err(ClientError::BaseMissing {
                        sequence,
                        base: named,
                    })
                }
            },
        };
        let header_end = reader.bits_spent();
        if let Some(trace) = trace.as_deref_mut() {
            trace.sequence = sequence;
            trace.base = header.base;
            trace.entities.clear();
            trace.header_bits = header_end;
        }

        // Adapting models: the message was coded with the ones its base's
        // chain holds (see `crate::adapt`).
        let coding = match (&self.adapt, codec) {
            (Some(chain), Codec::Native) => {
                let base_adapted = header
                    .base
                    .and_then(|named| self.adapted[named as usize % RING_SIZE].as_ref());
                Some(chain.coding(base_adapted)?)
            }
            _ => None,
        };
        let (entity_codec, player_codec) = match &coding {
            Some(coding) => (coding.entity_codec(codec), coding.player_codec(codec)),
            None => (
                self.models.entity_codec(codec),
                self.models.player_codec(codec),
            ),
        };
        if let Some(symbols) = symbols.as_deref_mut() {
            let (entity, player) = match (&coding, codec) {
                (Some(coding), _) => (
                    Some(Arc::clone(coding.entity.model())),
                    Some(Arc::clone(coding.player.model())),
                ),
                (None, Codec::Native) => (
                    model_of(self.models.entity(), &self.zero_entity),
                    model_of(self.models.player(), &self.zero_player),
                ),
                (None, Codec::Q3) => (None, None),
            };
            symbols.start(entity, player);
        }
        let tallies = &mut self.tallies;
        tallies.clear();

        // The player state has no anchor; the entities after it take the
        // viewer's position it holds as theirs (see `build.rs`).
        let context = DeltaContext {
            elapsed_ms: base.map_or(0, |b| header.server_time.wrapping_sub(b.server_time) as i32),
            spawn: false,
            anchor: None,
            server_time: Some(header.server_time),
        };
        let out = &mut self.scratch;
        let base_player = base.map_or(&self.zero_player, |b| &b.player);
        out.player.clone_from(base_player);
        let player_context = context.with_spawn(base.is_none());
        player_codec.read_delta_in(&player_context, reader, &mut out.player)?;
        if let Some(coding) = &coding {
            tallies.player(coding, base_player, &out.player, &player_context);
        }
        if let Some(symbols) = symbols.as_deref_mut() {
            symbols.player(base_player, &out.player, &player_context);
        }
        let anchor = fields::codec::anchor_with(self.models.player().map(|m| &**m), &out.player);
        let context = context.with_anchor(anchor);
        if let Some(trace) = trace.as_deref_mut() {
            trace.player_fields = FieldMask::diff(base_player, &out.player);
            trace.player_bits = reader.bits_spent() - header_end;
        }

        // Merge the base's entities with the message's updates, in number
        // order: for a chained snapshot, through the intermediate frame.
        let held_entities: &[(u32, E)] = base.map_or(&[], |b| &b.entities);
        let mut lists = EntityLists {
            codec: entity_codec,
            tally: coding.as_ref().map(|coding| (coding, tallies)),
            symbols,
            entity_limit,
            gamestate: &self.gamestate,
            zero: &self.zero_entity,
            history,
        };
        match (header.via_time, base) {
            (Some(via_time), Some(base)) => {
                let first = DeltaContext {
                    elapsed_ms: via_time.wrapping_sub(base.server_time) as i32,
                    server_time: Some(via_time),
                    ..context
                };
                let second = DeltaContext {
                    elapsed_ms: header.server_time.wrapping_sub(via_time) as i32,
                    ..context
                };
                let via = &mut self.via_entities;
                lists.read(reader, &first, held_entities, via, trace.as_deref_mut())?;
                lists.read(
                    reader,
                    &second,
                    via,
                    &mut out.entities,
                    trace.as_deref_mut(),
                )?;
            }
            _ => lists.read(
                reader,
                &context,
                held_entities,
                &mut out.entities,
                trace.as_deref_mut(),
            )?,
        }

        let sync = if header.has_checksum {
            let expected = reader.get_bits(32)?;
            let mut checksum = SyncChecksum::new(state_hash(&out.player));
            for (number, state) in &out.entities {
                checksum.entity(*number, state_hash(state));
            }
            if checksum.finish() == expected {
                SyncCheck::Matched
            } else {
                SyncCheck::Mismatched
            }
        } else {
            SyncCheck::Absent
        };
        self.scratch_coded_with = coding.as_ref().map(Adapted::ids);
        self.scratch_adapted = coding.map(|coding| coding.after(&self.tallies));
        if let Some(trace) = trace {
            trace.bits = reader.bits_spent();
            let entity_bits: usize = trace.entities.iter().map(|e| e.bits as usize).sum();
            trace.end_bits = trace
                .bits
                .saturating_sub(trace.header_bits + trace.player_bits + entity_bits);
        }
        Ok(Decoded::Ready { header, sync })
    }

    /// Commits the decoded scratch snapshot to the ring.
    fn commit(&mut self, header: SnapshotHeader, sync: SyncCheck) -> Received {
        let sequence = header.sequence;
        let slot = sequence as usize % RING_SIZE;
        let late = self.newest.is_some_and(|newest| sequence <= newest);
        let out = &mut self.scratch;
        out.sequence = sequence;
        out.frame = header.frame;
        out.server_time = header.server_time;
        out.base = header.base;
        out.flags = header.flags;
        out.area_mask = header.area_mask;
        out.delivery = header.delivery;
        std::mem::swap(&mut self.ring[slot], &mut self.scratch);
        self.adapted[slot] = self.scratch_adapted.take();
        self.coded_with[slot] = self.scratch_coded_with;
        self.valid[slot] = true;
        if !late {
            self.previous = self.newest;
            self.newest = Some(sequence);
            self.update_entered_left();
        }

        self.stats.snapshots += 1;
        self.stats.full_updates += header.base.is_none() as u64;
        self.stats.rate_delayed += header.rate_delayed() as u64;
        self.stats.chained += header.via_time.is_some() as u64;
        match sync {
            SyncCheck::Matched => self.stats.checksums_matched += 1,
            SyncCheck::Mismatched => self.stats.checksum_mismatches += 1,
            SyncCheck::Absent => {}
        }
        if sync == SyncCheck::Mismatched {
            self.needs_full_update = true;
        } else if header.base.is_none() && !late {
            self.needs_full_update = false;
        }
        if late {
            self.stats.stale += 1;
            self.stats.late_kept += 1;
            return Received::Stale {
                sequence,
                kept: true,
            };
        }
        Received::Snapshot(SnapshotReport {
            sequence,
            base: header.base,
            history: header.history,
            sync,
            entered: self.entered.len(),
            left: self.left.len(),
            coded_with: self.scratch_coded_with,
        })
    }

    fn update_entered_left(&mut self) {
        self.entered.clear();
        self.left.clear();
        let empty: &[(u32, E)] = &[];
        let ring = &self.ring;
        let valid = &self.valid;
        let old = self
            .previous
            .and_then(|sequence| held(ring, valid, sequence))
            .map_or(empty, |s| &s.entities);
        let Some(new) = self
            .newest
            .and_then(|sequence| held(ring, valid, sequence))
            .map(|s| &s.entities)
        else {
            return;
        };
        for merged in merge_by_number(old, new) {
            match merged {
                Merged::Removed { number, .. } => self.left.push(number),
                Merged::Added { number, .. } => self.entered.push(number),
                Merged::Both { .. } => {}
            }
        }
    }

    /// The sequence to acknowledge to the server: the newest snapshot held.
    pub fn ack(&self) -> Option<u32> {
        self.newest
    }

    /// The newest snapshot.
    pub fn newest(&self) -> Option<&Snapshot<E, P>> {
        self.snapshot(self.newest?)
    }

    /// The snapshot that was newest before [`newest`](Self::newest): with it,
    /// the game interpolates between the two server times.
    pub fn previous(&self) -> Option<&Snapshot<E, P>> {
        self.snapshot(self.previous?)
    }

    /// Snapshot `sequence`, while it is in the ring.
    pub fn snapshot(&self, sequence: u32) -> Option<&Snapshot<E, P>> {
        held(&self.ring, &self.valid, sequence)
    }

    /// With adapting models: the ids of the entity and player-state models
    /// held snapshot `sequence` was decoded with (see [`crate::adapt`]).
    pub fn coded_with(&self, sequence: u32) -> Option<[u64; 2]> {
        self.snapshot(sequence)?;
        self.coded_with[sequence as usize % RING_SIZE]
    }

    /// Entity numbers that entered the view with the newest snapshot.
    pub fn entered(&self) -> &[u32] {
        &self.entered
    }

    /// Entity numbers that left the view with the newest snapshot.
    pub fn left(&self) -> &[u32] {
        &self.left
    }

    /// Whether the client needs a full update: a sync checksum disagreed or
    /// a base was missing. Tell the server (which then calls
    /// [`Server::request_full_update`](crate::Server::request_full_update));
    /// this stays set until a full update is decoded.
    pub fn needs_full_update(&self) -> bool {
        self.needs_full_update
    }

    /// The gamestate received, if any.
    pub fn gamestate(&self) -> Option<&Gamestate<E>> {
        self.setup.map(|_| &self.gamestate)
    }

    /// The codec the gamestate announced.
    pub fn codec(&self) -> Option<Codec> {
        self.setup.map(|s| s.codec)
    }

    /// The entity-number limit the gamestate announced.
    pub fn entity_limit(&self) -> Option<u32> {
        self.setup.map(|s| s.entity_limit)
    }

    /// The zeroed prototypes and the layout fingerprint of what a
    /// re-encoding writes: the models without their adaptation (a
    /// re-encoded snapshot is coded with the trained models, see
    /// [`Client::encode_held`]).
    pub(crate) fn zero_and_fingerprint(&self) -> (&E, &P, u32) {
        let fixed = self.models.clone().with_adaptation(None);
        let fingerprint = fixed.fingerprint(self.fingerprint, &self.zero_entity, &self.zero_player);
        (&self.zero_entity, &self.zero_player, fingerprint)
    }

    /// Counters of what was received and rejected.
    pub fn stats(&self) -> &ClientStats {
        &self.stats
    }

    /// Drops every held snapshot, keeping the gamestate: the next snapshot
    /// must be a full update (a demo player seeking to a keyframe).
    pub fn clear_snapshots(&mut self) {
        self.valid = [false; RING_SIZE];
        self.adapted.iter_mut().for_each(|adapted| *adapted = None);
        self.newest = None;
        self.previous = None;
        self.entered.clear();
        self.left.clear();
    }

    /// Turns per-message tracing on or off (see [`trace`](Self::trace)).
    pub fn set_trace(&mut self, on: bool) {
        self.trace = on.then(SnapshotTrace::default);
    }

    /// What the last snapshot message read carried, when tracing is on
    /// (for a rejected message: what was decoded before the error).
    pub fn trace(&self) -> Option<&SnapshotTrace> {
        self.trace.as_ref()
    }

    /// Turns the tracing of each native message's symbols on or off (see
    /// [`symbol_trace`](Self::symbol_trace)). Off by default: it walks
    /// every decoded delta a second time.
    pub fn set_symbol_trace(&mut self, on: bool) {
        self.symbols = on.then(SymbolTrace::default);
    }

    /// Every symbol the last snapshot message read coded, with the models
    /// that coded it (with adapting models, the ones the message's chain
    /// held: [`SnapshotReport::coded_with`] are their ids), when tracing
    /// symbols is on. For a rejected message: what was decoded before the
    /// error.
    pub fn symbol_trace(&self) -> Option<&SymbolTrace> {
        self.symbols.as_ref()
    }
}

/// Snapshot `sequence` of a ring, if its slot holds it.
fn held<'a, E, P>(
    ring: &'a [Snapshot<E, P>],
    valid: &[bool; RING_SIZE],
    sequence: u32,
) -> Option<&'a Snapshot<E, P>> {
    let index = sequence as usize % RING_SIZE;
    (valid[index] && ring[index].sequence == sequence).then(|| &ring[index])
}

/// What decoding a snapshot came to before it is committed.
enum Decoded {
    /// Nothing to commit.
    Stale(Received),
    /// The scratch slot holds the snapshot.
    Ready {
        header: SnapshotHeader,
        sync: SyncCheck,
    },
}

impl Decoded {
    /// Itself, once `check` found the message's end as it should be (a
    /// stale message is not read to its end, so not checked).
    fn ended(
        self,
        check: impl FnOnce() -> Result<(), ClientError>,
    ) -> Result<Decoded, ClientError> {
        if let Decoded::Ready { .. } = self {
            check()?;
        }
        Ok(self)
    }
}

/// The client's ring as the snapshots a message may be a delta from.
struct HeldRing<'a, E, P> {
    ring: &'a [Snapshot<E, P>],
    valid: &'a [bool; RING_SIZE],
}

impl<'a, E, P> HeldRing<'a, E, P> {
    fn get(&self, sequence: u32) -> Option<&'a Snapshot<E, P>> {
        held(self.ring, self.valid, sequence)
    }
}

impl<E, P> Bases for HeldRing<'_, E, P> {
    fn base(&self, sequence: u32) -> Option<BaseInfo> {
        self.get(sequence).map(Snapshot::base_info)
    }
}

/// What reading an entity list needs besides the bits.
struct EntityLists<'a, 't, E, P> {
    codec: ModelCodec<'a>,
    /// Adapting models: the message's and the tally of its symbols.
    tally: Option<(&'a Adapted, &'t mut Tallies)>,
    /// Tracing symbols: the trace.
    symbols: Option<&'t mut SymbolTrace>,
    entity_limit: u32,
    gamestate: &'a Gamestate<E>,
    zero: &'a E,
    /// The snapshot entities re-entering the view are coded from.
    history: Option<&'a Snapshot<E, P>>,
}

impl<E: Fields, P> EntityLists<'_, '_, E, P> {
    /// Reads one entity list (through its end marker) and merges it with
    /// the `held` entities into `out` (cleared first), in number order.
    fn read<S: BitSource>(
        &mut self,
        reader: &mut S,
        context: &DeltaContext,
        held: &[(u32, E)],
        out: &mut Vec<(u32, E)>,
        mut trace: Option<&mut SnapshotTrace>,
    ) -> Result<(), ClientError> {
        let limit = self.entity_limit;
        let (gamestate, zero, history) = (self.gamestate, self.zero, self.history);
        let spawn = context.with_spawn(true);
        let added = |number| {
            Ok::<_, ClientError>(match gamestate.baseline(number) {
                Some(baseline) => AddedStart::Only(baseline, spawn),
                None => match history.and_then(|snapshot| snapshot.entity_entry(number)) {
                    // Held in the history snapshot: the writer chose
                    // between a change from there and the dummy.
                    Some((state, server_time)) => {
                        let elapsed_ms = context
                            .server_time
                            .map_or(0, |now| now.wrapping_sub(server_time) as i32);
                        let held = DeltaContext {
                            elapsed_ms,
                            spawn: false,
                            ..*context
                        };
                        AddedStart::Either {
                            usual: (zero, spawn),
                            held: (state, held),
                        }
                    }
                    None => AddedStart::Only(zero, spawn),
                },
            })
        };
        let list_error = |error| match error {
            ListError::Number(error) | ListError::Body { error, .. } => error.into(),
            ListError::Refused(error) => error,
        };
        if self.tally.is_none() && self.symbols.is_none() && trace.is_none() {
            // Nothing to tally, trace or record: only the checks, small
            // enough to inline into the list reader, where the visit
            // below is two calls an entry.
            let visit = |read: ListRead<'_, E>| match read {
                ListRead::Number(number) if number >= limit => {
                    Err(ClientError::EntityOutOfRange { number, limit })
                }
                ListRead::Entry {
                    number,
                    held: false,
                    new: None,
                    ..
                } => Err(ClientError::RemovedUnknownEntity { number }),
                _ => Ok(()),
            };
            return read_entity_list_from(
                self.codec,
                context,
                reader,
                u32::MAX,
                held,
                zero,
                added,
                out,
                visit,
            )
            .map_err(list_error);
        }
        let mut tally = self.tally.as_mut();
        let mut symbols = self.symbols.as_deref_mut();
        let visit = |read: ListRead<'_, E>| -> Result<(), ClientError> {
            let (number, held, start, context, choice, new, bits) = match read {
                ListRead::Number(number) if number >= limit => {
                    return Err(ClientError::EntityOutOfRange { number, limit })
                }
                ListRead::Number(_) => return Ok(()),
                ListRead::Entry {
                    number,
                    held,
                    start,
                    context,
                    choice,
                    new,
                    from,
                    to,
                    ..
                } => (number, held, start, context, choice, new, to - from),
            };
            let kind = match (new, held) {
                (None, false) => return Err(ClientError::RemovedUnknownEntity { number }),
                (None, true) => UpdateKind::Removed,
                (Some(_), true) => UpdateKind::Changed,
                (Some(_), false) if context.spawn => UpdateKind::Added,
                (Some(_), false) => UpdateKind::Reentered,
            };
            let update = new.map(|new| (start, new));
            if let Some((coding, tallies)) = tally.as_mut() {
                tallies.entry(coding, number, update, &context);
            }
            if let Some(symbols) = symbols.as_deref_mut() {
                symbols.entry(number, kind, choice, update, &context);
            }
            if let Some(trace) = trace.as_deref_mut() {
                let fields = new.map_or_else(FieldMask::new, |new| FieldMask::diff(start, new));
                trace.entities.push(EntityTrace {
                    number,
                    kind,
                    fields,
                    bits: bits as u32,
                });
            }
            Ok(())
        };
        read_entity_list_from(
            self.codec,
            context,
            reader,
            u32::MAX,
            held,
            zero,
            added,
            out,
            visit,
        )
        .map_err(list_error)?;
        if let Some((_, tallies)) = self.tally.as_mut() {
            tallies.end_list(&held);
        }
        if let Some(symbols) = self.symbols.as_deref_mut() {
            symbols.end_list(&held);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AllInScope, BuildOutcome, ClientSettings, Server, ServerConfig};
    use fields::{net_struct, q3_float, signed, unsigned};

    net_struct! {
        struct Thing {
            a: u16 = unsigned(12),
            b: f32 = q3_float(),
        }
    }
    net_struct! {
        struct Me {
            h: i16 = signed(10),
        }
    }

    fn send(server: &mut Server<Thing, Me>, id: crate::ClientId, time: u32) -> (u32, Vec<u8>) {
        server.commit_frame(time).unwrap();
        let mut bytes = Vec::new();
        let outcome = server
            .build_snapshot(id, &mut AllInScope, &mut bytes)
            .unwrap();
        let BuildOutcome::Built(info) = outcome else {
            panic!("unlimited clients get every frame")
        };
        (info.sequence, bytes)
    }

    #[test]
    fn a_desynced_client_detects_it_and_a_full_update_repairs_it() {
        for codec in [Codec::Q3, Codec::Native] {
            let config = ServerConfig {
                checksum_interval: 1,
                ..ServerConfig::for_codec(codec)
            };
            let mut server: Server<Thing, Me> = Server::new(config).unwrap();
            let id = server.add_client(ClientSettings::unlimited()).unwrap();
            server.set_entity(3, Thing { a: 7, b: 1.5 }).unwrap();
            let mut client: Client<Thing, Me> = Client::new();
            let mut gamestate = Vec::new();
            server.write_gamestate(&mut gamestate).unwrap();
            client.read_message(&gamestate).unwrap();

            let (sequence, bytes) = send(&mut server, id, 0);
            let Received::Snapshot(report) = client.read_snapshot(sequence, &bytes).unwrap() else {
                panic!()
            };
            assert_eq!(report.sync, SyncCheck::Matched);
            server.acknowledge(id, 0).unwrap();

            // A bug corrupts the client's copy of entity 3; deltas keep
            // building on it, and the next checksum exposes it.
            client.ring[0].entities[0].1.a = 999;
            let (sequence, bytes) = send(&mut server, id, 50);
            let Received::Snapshot(report) = client.read_snapshot(sequence, &bytes).unwrap() else {
                panic!()
            };
            assert_eq!(report.sync, SyncCheck::Mismatched);
            assert!(client.needs_full_update());
            assert_eq!(client.stats().checksum_mismatches, 1);

            server.request_full_update(id).unwrap();
            let (sequence, bytes) = send(&mut server, id, 100);
            let Received::Snapshot(report) = client.read_snapshot(sequence, &bytes).unwrap() else {
                panic!()
            };
            assert_eq!(report.base, None);
            assert_eq!(report.sync, SyncCheck::Matched);
            assert!(!client.needs_full_update());
            assert_eq!(client.newest().unwrap().entity(3).unwrap().a, 7);
            assert_eq!(client.stats().checksums_matched, 2);
        }
    }
}
