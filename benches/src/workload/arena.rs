//! The arena as a workload: a real match of the `arena` crate — bots
//! playing over the in-process link on simulated time, through the seeded
//! link conditioner (10% loss, 60 ms latency) — and every snapshot its
//! server built for every client, with the base it was built against.
//!
//! The snapshots are read back from the arena server's own
//! `snapshot::Server` after each step of the match (`Server::sent_snapshot`:
//! exactly what the client holds after decoding it, and its base), so the
//! delta bases are the ones real acknowledgements over a lossy link gave.
//! Every client's stream is measured; the report pools their messages.
//! New entities delta from the arena's own spawn baselines (its items).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arena::game::{Match, Phase};
use arena::protocol::{EntityState, PlayerState};
use arena::transport::TransportKind;
use arena::MatchConfig;
use fields::dynamic::ScalarValue;
use fields::{FieldKind, Fields, NetFields};
use serde::ser::SerializeTuple;
use serde::{Serialize, Serializer};
use snapshot::ClientId;

use super::{ExtraEncoders, RunEnd, TargetSet, Visit, Workload};
use crate::engine::EngineEncoder;
use crate::models::{build_model, engine_with_models, train_on};
use crate::state::{SpawnList, State, Step, Zeros};
use crate::Error;

/// A value of a type without `Serialize` (the arena's tables), serialized
/// for the naive baseline as the tuple of its field values by wire kind:
/// integers as postcard varints, floats as 4 bytes, booleans as a byte —
/// what a derived `Serialize` gives, except that `u8` fields take 1 byte
/// there and 1–2 here.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Net<T>(pub T);

impl<T: Fields> Fields for Net<T> {
    fn type_name(&self) -> &str {
        self.0.type_name()
    }

    fn field_count(&self) -> usize {
        self.0.field_count()
    }

    fn field_kind(&self, field: usize) -> FieldKind {
        self.0.field_kind(field)
    }

    fn word(&self, field: usize, element: usize) -> u32 {
        self.0.word(field, element)
    }

    fn set_word(&mut self, field: usize, element: usize, word: u32) {
        self.0.set_word(field, element, word)
    }

    fn wire_differs(&self, other: &Self) -> bool {
        self.0.wire_differs(&other.0)
    }

    fn native_model(&self) -> Option<Arc<fields::model::NativeModel>> {
        self.0.native_model()
    }
}

impl<T: Fields> Serialize for Net<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let value = &self.0;
        let elements: usize = (0..value.field_count())
            .map(|f| value.field_kind(f).elements())
            .sum();
        let mut tuple = serializer.serialize_tuple(elements)?;
        for field in 0..value.field_count() {
            let kind = value.field_kind(field);
            for element in 0..kind.elements() {
                match ScalarValue::from_word(kind.element(), value.word(field, element)) {
                    ScalarValue::Unsigned(v) => tuple.serialize_element(&v)?,
                    ScalarValue::Signed(v) => tuple.serialize_element(&v)?,
                    ScalarValue::Bool(v) => tuple.serialize_element(&v)?,
                    ScalarValue::Float(v) => tuple.serialize_element(&v)?,
                }
            }
        }
        tuple.end()
    }
}

/// A snapshot of the arena in the report's terms.
pub type ArenaState = State<Net<EntityState>, Net<PlayerState>>;

/// Seconds of match per arena workload.
pub const ARENA_SECONDS: f64 = 20.0;
/// The match seed.
pub const ARENA_SEED: u64 = 0xa7e4a;
/// The seed of the match `native_trained`'s models learn from: another
/// match, so the measured one is out of sample.
pub const ARENA_TRAINING_SEED: u64 = 0x0007_e412;

/// An arena match of `clients` bots.
#[derive(Debug, Clone)]
pub struct Arena {
    clients: usize,
    seconds: f64,
    seed: u64,
}

impl Arena {
    /// A match of `clients` bots, [`ARENA_SECONDS`] long.
    pub fn new(clients: usize) -> Self {
        Arena {
            clients,
            seconds: ARENA_SECONDS,
            seed: ARENA_SEED,
        }
    }

    /// The same, `seconds` long.
    pub fn with_seconds(mut self, seconds: f64) -> Self {
        self.seconds = seconds;
        self
    }

    /// The same match with another seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    fn config(&self) -> MatchConfig {
        let mut config = MatchConfig::short(TransportKind::Local, self.seconds, self.seed);
        config.clients = self.clients;
        config
    }
}

/// Per client: the next sequence to read and the recent snapshots by sequence.
#[derive(Default)]
struct Stream {
    next: u32,
    held: BTreeMap<u32, Arc<ArenaState>>,
}

/// Snapshots kept per client for base look-ups (bases are at most 31 back).
const KEEP: usize = 64;

impl Workload for Arena {
    type Entity = Net<EntityState>;
    type Player = Net<PlayerState>;

    fn name(&self) -> String {
        format!("arena-{}", self.clients)
    }

    fn description(&self) -> String {
        let config = self.config();
        format!(
            "arena match: {} bots, {} s, {} Hz ticks, {} snapshots/s, {}% loss, {} ms latency, \
             in-process link on simulated time, seed {:#x}; every client's stream",
            self.clients,
            self.seconds,
            config.tick_hz,
            config.snaps,
            config.link.loss * 100.0,
            config.link.latency.as_millis(),
            self.seed
        )
    }

    fn zeros(&self) -> Zeros<Net<EntityState>, Net<PlayerState>> {
        Zeros::default()
    }

    fn targets(&self) -> TargetSet {
        TargetSet::Size
    }

    /// `native_trained`: `native` codes the arena's tables with whatever
    /// models they declare; this trains one per table on another match of
    /// the same size and link (as the Quake 3 models were made: learned
    /// grids, and the arena's predictors and pattern keys from
    /// [`arena::model::trainers`]), so the measured match is out of sample.
    fn extra_encoders(&self) -> Result<ExtraEncoders<Net<EntityState>, Net<PlayerState>>, Error> {
        let mut training = self.clone().with_seed(ARENA_TRAINING_SEED);
        // The arena's own trainers: its predictors and pattern keys.
        let (entity, player) = arena::model::trainers();
        let (entity, player) = train_on(&mut training, entity, player)?;
        let encoder = engine_with_models(
            "native_trained",
            build_model(entity)?,
            &EntityState::TABLE.schema(),
            build_model(player)?,
            &PlayerState::TABLE.schema(),
        )?;
        Ok(ExtraEncoders {
            encoders: vec![
                Box::new(EngineEncoder::native_adapting()),
                Box::new(EngineEncoder::native_range()),
                Box::new(encoder),
            ],
            notes: vec![
                "native_adapting: the arena's models adapting to the stream (AdaptPolicy::LIVE); \
                 native_range: native range-coded (CompactRange)"
                    .to_owned(),
                format!(
                "native_trained: models trained on another {}-bot match (seed {ARENA_TRAINING_SEED:#x}), not on this one",
                self.clients
            ),
            ],
        })
    }

    fn run(
        &mut self,
        visit: &mut Visit<'_, Net<EntityState>, Net<PlayerState>>,
    ) -> Result<RunEnd, Error> {
        let start = Instant::now();
        let mut game = Match::new(self.config(), None, start).map_err(arena_error)?;
        // The arena's spawn baselines (its items), set before any snapshot.
        let mut spawn: Vec<(u32, Net<EntityState>)> = game
            .server()
            .snapshots()
            .gamestate()
            .baselines()
            .map(|(n, e)| (n, Net(*e)))
            .collect();
        spawn.sort_by_key(|(n, _)| *n);
        let spawn = SpawnList(spawn);
        // The server's clock advances one tick per frame.
        let frame_ms = 1000 / self.config().tick_hz.max(1);
        let mut now = start;
        let mut streams: HashMap<ClientId, Stream> = HashMap::new();
        let mut missing_bases = 0u64;
        while game.phase() != Phase::Done {
            // The arena's own simulated clock: whole milliseconds, forward.
            let step = game.next_deadline().saturating_duration_since(now);
            now += Duration::from_millis((step.as_millis().max(1) as u64).min(100));
            game.step(now).map_err(arena_error)?;
            let server = game.server().snapshots();
            for id in server.client_ids() {
                let built = server.stats(id)?.snapshots as u32;
                let stream = streams.entry(id).or_default();
                for sequence in stream.next..built {
                    let Some(sent) = server.sent_snapshot(id, sequence) else {
                        continue;
                    };
                    let base = match sent.base() {
                        None => None,
                        Some(b) => match stream.held.get(&b) {
                            Some(base) => Some((Arc::clone(base), sequence - b)),
                            None => {
                                missing_bases += 1;
                                continue;
                            }
                        },
                    };
                    let server_time = sent.server_time() as i32;
                    let state = Arc::new(State {
                        server_time,
                        flags: 0,
                        areamask: Vec::new(),
                        player: Net(*sent.player()),
                        entities: sent.entities().map(|(n, e)| (n, Net(*e))).collect(),
                    });
                    visit(Step {
                        snapshot: &state,
                        base: base.as_ref().map(|(b, _)| b),
                        delta_num: base.as_ref().map_or(0, |(_, d)| *d as u8),
                        frame_ms,
                        baselines: &spawn,
                        reference: None,
                        stream: id.index(),
                    })?;
                    stream.held.insert(sequence, state);
                    while stream.held.len() > KEEP {
                        stream.held.pop_first();
                    }
                }
                stream.next = stream.next.max(built);
            }
        }
        Ok(if missing_bases == 0 {
            RunEnd::Complete
        } else {
            RunEnd::Stopped(format!(
                "{missing_bases} snapshots skipped: their base was not captured"
            ))
        })
    }
}

fn arena_error(error: arena::Error) -> Error {
    Error::Arena(error.to_string())
}
