//! One server frame of the snapshot crate, for the frame benchmark and the
//! memory binary: Quake 3's real entity and player layouts, a synthetic
//! world of `entities` entities of which a quarter change every frame, and
//! `clients` clients seeing all of them, each acknowledging its snapshots
//! (one ack in twenty is lost, so some clients delta from older bases).
//!
//! The world's changes are generated before measuring ([`SCRIPT_FRAMES`]
//! frames, replayed in a loop), so a timed frame is the snapshot crate's
//! work alone: applying the changes to the master state, committing, and
//! building, encoding and acknowledging every client's snapshot.

use std::collections::HashMap;
use std::sync::Arc;

use fields::model::{AdaptPolicy, SymbolTally};
use fields::{Codec, DeltaContext, Fields};
use q3::{EntityState, PlayerState};
use snapshot::{
    AllInScope, BuildOutcome, ClientId, ClientSettings, Framing, Models, Server, ServerConfig,
};

use crate::world::{Rng, World};
use crate::Error;

/// Milliseconds per server frame (20 Hz).
pub const FRAME_MS: i32 = 50;
/// One ack in this many is lost.
pub const ACK_LOSS_ONE_IN: u64 = 20;
/// Frames run before measuring, so every ring is full and every client is
/// on delta snapshots.
pub const WARM_UP_FRAMES: usize = 40;
/// Frames of world changes generated in advance and replayed.
pub const SCRIPT_FRAMES: usize = 128;

/// One frame's changes: the entities that changed and every player state.
#[derive(Debug, Clone)]
struct Changes {
    entities: Vec<(u32, EntityState)>,
    players: Vec<PlayerState>,
}

/// A snapshot server in steady state.
#[derive(Debug)]
pub struct FrameBench {
    /// The server.
    pub server: Server<EntityState, PlayerState>,
    /// Its clients.
    pub clients: Vec<ClientId>,
    world: World<EntityState, PlayerState>,
    script: Vec<Changes>,
    frame: usize,
    loss: Rng,
    bytes: Vec<u8>,
}

/// What one frame sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameSent {
    /// Snapshots built.
    pub snapshots: usize,
    /// Their bytes.
    pub bytes: usize,
}

impl FrameBench {
    /// A server with `clients` clients and `entities` entities, warmed up.
    pub fn new(codec: Codec, clients: usize, entities: u32) -> Result<Self, Error> {
        Self::with_adaptation(codec, clients, entities, None)
    }

    /// The same with the committed models adapting along each client's
    /// chain under `adapt` ([`Models::with_adaptation`]).
    pub fn with_adaptation(
        codec: Codec,
        clients: usize,
        entities: u32,
        adapt: Option<AdaptPolicy>,
    ) -> Result<Self, Error> {
        Self::with_options(codec, clients, entities, adapt, None)
    }

    /// The native codec's messages range-coded ([`snapshot::CompactRange`]).
    pub fn range_coded(clients: usize, entities: u32) -> Result<Self, Error> {
        let framing: Arc<dyn Framing> = Arc::new(snapshot::CompactRange);
        Self::with_options(Codec::Native, clients, entities, None, Some(framing))
    }

    /// [`FrameBench::with_adaptation`], the messages in `framing` if given.
    pub fn with_options(
        codec: Codec,
        clients: usize,
        entities: u32,
        adapt: Option<AdaptPolicy>,
        framing: Option<Arc<dyn Framing>>,
    ) -> Result<Self, Error> {
        let mut world: World<EntityState, PlayerState> = World::new(
            0x0f4a_3e00,
            entities,
            clients as u32,
            entities as usize / 4,
            FRAME_MS,
        );
        let mut server = Server::new(ServerConfig::for_codec(codec))?;
        server.set_models(Models::of_types().with_adaptation(adapt))?;
        if let Some(framing) = framing {
            server.set_framing(framing)?;
        }
        for (number, state) in &world.entities {
            server.set_entity(*number, *state)?;
        }
        let start = world.clone();
        let script = (0..SCRIPT_FRAMES)
            .map(|_| {
                world.step();
                Changes {
                    entities: world.changed.iter().map(|&i| world.entities[i]).collect(),
                    players: world.players.clone(),
                }
            })
            .collect();
        let clients = (0..clients)
            .map(|_| server.add_client(ClientSettings::unlimited()))
            .collect::<Result<Vec<_>, _>>()?;
        let mut bench = FrameBench {
            server,
            clients,
            world: start,
            script,
            frame: 0,
            loss: Rng::new(0xac4),
            bytes: Vec::with_capacity(64 * 1024),
        };
        for _ in 0..WARM_UP_FRAMES {
            bench.frame()?;
        }
        Ok(bench)
    }

    /// One server frame: the next scripted changes are applied, the frame
    /// is committed, every client's snapshot is built and encoded, and acks
    /// come back.
    pub fn frame(&mut self) -> Result<FrameSent, Error> {
        let changes = &self.script[self.frame % self.script.len()];
        self.frame += 1;
        for (number, state) in &changes.entities {
            if let Some(entity) = self.server.entity_mut(*number) {
                *entity = *state;
            }
        }
        for (id, player) in self.clients.iter().zip(&changes.players) {
            self.server.set_player_state(*id, *player)?;
        }
        self.server
            .commit_frame((self.frame as i64 * i64::from(FRAME_MS)) as u32)?;
        let mut sent = FrameSent::default();
        for &id in &self.clients {
            let outcome = self
                .server
                .build_snapshot(id, &mut AllInScope, &mut self.bytes)?;
            if let BuildOutcome::Built(info) = outcome {
                sent.snapshots += 1;
                sent.bytes += info.bytes;
                if self.loss.below(ACK_LOSS_ONE_IN) != 0 {
                    self.server.acknowledge(id, info.sequence)?;
                }
            }
        }
        Ok(sent)
    }

    /// Snapshots, over every client, that waited for their chain's model
    /// rebuild (see [`snapshot::adapt`]).
    pub fn adapt_waits(&self) -> u64 {
        self.clients
            .iter()
            .filter_map(|&id| self.server.stats(id).ok())
            .map(|stats| stats.adapt_waits)
            .sum()
    }

    /// The entity symbols of each scripted frame's changes, one tally per
    /// frame, as the committed entity model codes them from the frame
    /// before: a chain of [`SCRIPT_FRAMES`] messages to rebuild a model
    /// from. Empty without a committed model.
    pub fn chain_tallies(&self) -> Vec<SymbolTally> {
        let Some(model) = EntityState::default().native_model() else {
            return Vec::new();
        };
        let mut current: HashMap<u32, EntityState> = self.world.entities.iter().copied().collect();
        let context = DeltaContext {
            elapsed_ms: FRAME_MS,
            ..DeltaContext::default()
        };
        self.script
            .iter()
            .map(|changes| {
                let mut tally = SymbolTally::new();
                for (number, state) in &changes.entities {
                    if let Some(base) = current.insert(*number, *state) {
                        tally.delta(&model, &base, state, &context);
                    }
                }
                tally
            })
            .collect()
    }

    /// The world's entities at the start, and after one frame of changes,
    /// as bytes (their wire words, little endian): what the memcmp floor
    /// compares.
    pub fn entity_images(&self) -> (Vec<u8>, Vec<u8>) {
        let before = image_of(&self.world.entities);
        let mut after = self.world.entities.clone();
        for (number, state) in &self.script[0].entities {
            if let Ok(i) = after.binary_search_by_key(number, |(n, _)| *n) {
                after[i].1 = *state;
            }
        }
        (before, image_of(&after))
    }
}

/// Entities as their wire words, little endian, back to back.
pub fn image_of<E: Fields>(entities: &[(u32, E)]) -> Vec<u8> {
    let mut image = Vec::new();
    for (_, entity) in entities {
        for field in 0..entity.field_count() {
            for element in 0..entity.field_kind(field).elements() {
                image.extend_from_slice(&entity.word(field, element).to_le_bytes());
            }
        }
    }
    image
}

/// The physical floor of a server frame: for every client, one `memcmp`
/// per entity between the frame's bytes and the client's base's bytes —
/// the least work that can find what changed, before encoding anything.
/// Returns how many entity comparisons differed.
pub fn memcmp_floor(current: &[u8], base: &[u8], entity_bytes: usize, clients: usize) -> usize {
    let mut differing = 0;
    for _ in 0..clients {
        // Every client compares again; keep the compiler from sharing one
        // comparison among them.
        let current = std::hint::black_box(current);
        differing += current
            .chunks_exact(entity_bytes)
            .zip(base.chunks_exact(entity_bytes))
            .filter(|(a, b)| a != b)
            .count();
    }
    differing
}
