//! Trained native-codec models for the arena's two tables.
//!
//! The native codec codes each delta's symbols (which fields changed, the
//! size class of each change) with Huffman codes counted on real data, and
//! predicts positions from velocities over the snapshot's elapsed time
//! (see [`fields::model`]). The counts here come from [`train_committed`]:
//! the snapshots the arena's own server sent its clients in networked
//! matches ([`TRAINING_MATCHES`]: bots over the default lossy link on the
//! simulated clock, seeds no measured match uses), each delta counted as
//! the engine codes it — against the base that client acknowledged, with
//! projectiles out of range left out of view, a player's own body left out
//! of its list, a new entity coded from its spawn baseline or the zeroed
//! one. Earlier models were counted on a network-free game observed as
//! deltas 1 to 6 ticks apart, which priced neither the bases a lossy link
//! really leaves (a round trip of about three ticks), nor projectiles
//! entering the view mid-flight, nor a new projectile resent until a
//! snapshot holding it is acknowledged: on the default match (seed 1,
//! `--clock sim --transport local`) native snapshots took 0.526× the q3
//! codec's bytes with them and 0.515× with networked training; 64 bots
//! (seed 5), 0.649× and 0.565×. The models now also hold dictionaries of
//! the integer changes seen most often and split entity change patterns
//! on whether the baseline moves along x: 0.4995× (seeds 2 to 5: 0.491×,
//! 0.500×, 0.499×, 0.503×; 64 bots, seed 5: 0.540×). Entity change
//! patterns are now keyed on the baseline's animation (and whether it has
//! a launch time: a projectile) rather than its kind, new entities' on
//! the kind of their spawn baseline, the player's also on moving along x,
//! and two more training matches (8 and 16 bots) count them: 0.4935×
//! (seeds 2 to 5: 0.485×, 0.493×, 0.493×, 0.496×; 64 bots, seed 5:
//! 0.520×). A projectile's launch time entering the view is coded
//! against the snapshot's server time ([`Predictor::Stamp`]), not from
//! the zeroed baseline's zero: 0.4888× (seeds 2 to 5: 0.480×, 0.488×,
//! 0.488×, 0.491×). A projectile's `vy` is coded as its sign and its
//! distance from the size its fixed speed leaves
//! ([`Predictor::FixedSpeed`]), and its launch time in server ticks
//! against the server time, entering the view or in a held slot
//! ([`Predictor::TickStamp`]): 456 → 434 bits a snapshot, 0.4698× →
//! 0.4497× (seeds 2 and 3: 0.461× → 0.443×, 0.470× → 0.453×). Where the bits go, field by field, is what the `field_bits`
//! example prints ([`trace_match`]). They are committed as
//! `models.json`; regenerate with
//! `cargo run --release -p arena --example train_models` (a test checks the
//! committed file is what training produces).
//!
//! The models are part of the protocol: the handshake fingerprint covers
//! them ([`crate::protocol::schema_fingerprint`]), and demos carry them.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use fields::merge::{merge_by_number, Merged};
use fields::model::{
    trace_delta, trace_entity_list, Clock, ModelPair, ModelTrainer, NativeModel, PatternKey,
    Predictor, TracedSymbol,
};
use fields::{Codec, DeltaContext, Fields, NetFields};

use crate::config::MatchConfig;
use crate::error::Error;
use crate::game::{Match, Phase};
use crate::protocol::{kind, EntityState, PlayerState};
use crate::transport::TransportKind;
use crate::world::PROJECTILE_SPEED;

/// The server frame the models code launch times on: the default
/// `--tick-hz` of 20. At another rate launch times fall off these ticks and
/// cost what [`Predictor::Stamp`] would.
const DEFAULT_TICK_MS: u16 = 50;

/// The committed models.
pub const MODELS_JSON: &str = include_str!("models.json");

/// Model counts for both tables: [`EntityState`]'s and [`PlayerState`]'s.
pub type ArenaModels = ModelPair;

fn loaded() -> Option<&'static (Arc<NativeModel>, Arc<NativeModel>)> {
    static MODELS: OnceLock<Option<(Arc<NativeModel>, Arc<NativeModel>)>> = OnceLock::new();
    MODELS
        .get_or_init(|| {
            ModelPair::load_committed::<EntityState, PlayerState>(
                "arena::model",
                serde_json::from_str(MODELS_JSON).map_err(|e| e.to_string()),
            )
        })
        .as_ref()
}

/// The model of [`EntityState`] (`None` if the committed file does not fit
/// the table, which a test rules out).
pub fn entity_model() -> Option<&'static Arc<NativeModel>> {
    loaded().map(|(entity, _)| entity)
}

/// The model of [`PlayerState`].
pub fn player_model() -> Option<&'static Arc<NativeModel>> {
    loaded().map(|(_, player)| player)
}

fn field(table: &fields::FieldTable, name: &str) -> usize {
    table.field(name).map_or(usize::MAX, |(index, _)| index)
}

/// Empty trainers for the arena's entity and player tables, in that order,
/// with everything a model of them declares besides its counts: positions
/// predicted from their velocity over the snapshot's elapsed time, and the
/// pattern keys. The committed models are trained from these, and so is any
/// other arena model (the benches' `native_trained`), so all of them code
/// the same way.
pub fn trainers() -> (ModelTrainer, ModelTrainer) {
    let (e, p) = (EntityState::TABLE, PlayerState::TABLE);
    let mut entity = ModelTrainer::new(e.schema().fingerprint(), e.fields.len());
    let mut player = ModelTrainer::new(p.schema().fingerprint(), p.fields.len());
    for (position, velocity) in [("x", "vx"), ("y", "vy"), ("z", "vz")] {
        entity = entity.with_predictor(
            field(&e, position),
            Predictor::Integrate {
                rate: field(&e, velocity) as u16,
                clock: Clock::Elapsed,
            },
        );
        player = player.with_predictor(
            field(&p, position),
            Predictor::Integrate {
                rate: field(&p, velocity) as u16,
                clock: Clock::Elapsed,
            },
        );
    }
    // A projectile's launch time lies a little before the snapshot's
    // server time when it enters the view (and until a snapshot holding
    // it is acknowledged), where coded from the zeroed baseline it costs
    // the whole clock. The server launches projectiles in its frames, so
    // it lies a whole number of ticks before, and a launch time never
    // moves: one that changes in a held slot is a new projectile's, as
    // recent. Coded in ticks against the server time (`field_bits`, the
    // default match, seed 1): entering the view 11.7 → 5.3 bits a
    // snapshot, in a held slot 6.6 → 2.2 (against the old launch time
    // plus the elapsed time before).
    entity = entity.with_predictor(
        field(&e, "time"),
        Predictor::TickStamp {
            tick_ms: DEFAULT_TICK_MS,
        },
    );
    // A projectile flies at its fixed speed: given its other two velocity
    // components, `vy` is known but for its sign and rounding. Entering
    // the view 12.8 → 4.0 bits a snapshot, in a held slot 5.9 → 3.0
    // (`field_bits`, seed 1). Only projectiles: a player's velocity has
    // no fixed size. (`vy` rather than `vx`: as good, and `vz`, small,
    // would leave a large rounding error.)
    entity = entity.with_predictor(
        field(&e, "vy"),
        Predictor::FixedSpeed {
            speed: PROJECTILE_SPEED as u16,
            components: [field(&e, "vx") as u16, field(&e, "vz") as u16],
            gate: Some((field(&e, "kind") as u16, u32::from(kind::PROJECTILE))),
        },
    );
    // Change patterns per kind of baseline. An entity's animation says
    // more of what its delta changes than its kind does: a player standing
    // still changes its facing and events, a running one its position and
    // velocity too, one in the air its height, a dead one nothing but its
    // events until it respawns. Projectiles are the only entities with a
    // launch time, and moving along x splits running from standing again.
    // Measured with the `field_bits` example on the default match (seed
    // 1), against keying on the kind with a vertical-velocity flag: the
    // entity change patterns 37.6 → 34.7 bits a snapshot, the player's
    // 6.7 → 6.0 (with the player's `vx` flag below and the 8- and 16-bot
    // training matches; every symbol of a snapshot 467.3 → 461.4 bits).
    entity = entity.with_pattern_key(PatternKey {
        field: field(&e, "anim") as u16,
        classes: 4,
        flag: Some(field(&e, "time") as u16),
        second_flag: Some(field(&e, "vx") as u16),
    });
    // An entity entering the view from an item's spawn baseline changes
    // little (whether it is available), one from the zeroed entity (a
    // player or a projectile) nearly everything.
    entity = entity.with_spawn_key(PatternKey {
        field: field(&e, "kind") as u16,
        classes: 4,
        flag: None,
        second_flag: None,
    });
    // Whether a player stands on the ground (in the air its height changes
    // every tick), whether it is reloading (its timer counts down every
    // tick) and whether it moves along x (a still player changes its view
    // and little else).
    player = player.with_pattern_key(PatternKey {
        field: field(&p, "on_ground") as u16,
        classes: 2,
        flag: Some(field(&p, "reload_ms") as u16),
        second_flag: Some(field(&p, "vx") as u16),
    });
    (entity, player)
}

/// A networked training match: bots playing over the default link
/// (10% loss each way, 60 ms latency, the simulated clock) for a while.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrainingMatch {
    /// Bot clients.
    pub bots: usize,
    /// Seconds of play.
    pub seconds: u32,
    /// The match seed.
    pub seed: u64,
}

/// The networked matches the committed models count: six sizes from 5 to
/// 48 bots, none of them with a seed any measured match uses (the default
/// match is 8 bots with seed 1, the README also reports seeds 2 to 5 and
/// 16 and 64 bots; `delta-size` measures 8 and 64 bots with seed
/// `0xa7e4a`). The 8- and 16-bot matches were added with the animation
/// pattern key: more of the sizes games are played at, and more data
/// (on the default match, seed 1, about half of the 6 bits a snapshot
/// that change saved; seeds 2 and 3 alike).
pub const TRAINING_MATCHES: [TrainingMatch; 6] = [
    TrainingMatch {
        bots: 5,
        seconds: 30,
        seed: 0x00a4_e4a1,
    },
    TrainingMatch {
        bots: 12,
        seconds: 20,
        seed: 0x00a4_e4a2,
    },
    TrainingMatch {
        bots: 24,
        seconds: 10,
        seed: 0x00a4_e4a3,
    },
    TrainingMatch {
        bots: 48,
        seconds: 6,
        seed: 0x00a4_e4a4,
    },
    TrainingMatch {
        bots: 8,
        seconds: 30,
        seed: 0x00a4_e4a5,
    },
    TrainingMatch {
        bots: 16,
        seconds: 20,
        seed: 0x00a4_e4a6,
    },
];

/// What one client held after one snapshot of a training match.
struct SentState {
    time: u32,
    player: PlayerState,
    entities: Vec<(u32, EntityState)>,
}

/// Every snapshot a training match's server sent, per client, as deltas.
struct MatchCapture {
    states: Vec<SentState>,
    /// (snapshot, its base; `None`: a full update), indices into `states`.
    deltas: Vec<(usize, Option<usize>)>,
    /// The spawn baselines new entities are coded from.
    baselines: BTreeMap<u32, EntityState>,
}

/// Plays `training` and keeps every snapshot its server sent. The match
/// runs with the q3 codec, so what it sends (and so what the models learn)
/// does not depend on the models themselves; which bases clients hold
/// depends only on the link.
fn capture_match(training: TrainingMatch) -> Result<MatchCapture, Error> {
    let mut config = MatchConfig::short(
        TransportKind::Local,
        f64::from(training.seconds),
        training.seed,
    );
    config.clients = training.bots;
    config.codec = Codec::Q3;
    let start = Instant::now();
    let mut game = Match::new(config, None, start)?;
    let baselines = game
        .server()
        .snapshots()
        .gamestate()
        .baselines()
        .map(|(number, state)| (number, *state))
        .collect();
    let mut capture = MatchCapture {
        states: Vec::new(),
        deltas: Vec::new(),
        baselines,
    };
    // Per client: the next sequence to read, and where each sequence it
    // was sent is kept (bases lie at most a ring back).
    let mut streams: BTreeMap<u32, (u32, BTreeMap<u32, usize>)> = BTreeMap::new();
    let mut now = start;
    while game.phase() != Phase::Done {
        // The arena's simulated clock: whole milliseconds, forward.
        let step = game.next_deadline().saturating_duration_since(now);
        now += Duration::from_millis((step.as_millis().max(1) as u64).min(100));
        game.step(now)?;
        let server = game.server().snapshots();
        for id in server.client_ids() {
            let built = server.stats(id)?.snapshots as u32;
            let (next, held) = streams.entry(id.index() as u32).or_default();
            for sequence in *next..built {
                let Some(sent) = server.sent_snapshot(id, sequence) else {
                    continue;
                };
                let base = match sent.base() {
                    None => None,
                    Some(base) => match held.get(&base) {
                        Some(&index) => Some(index),
                        None => continue,
                    },
                };
                capture.states.push(SentState {
                    time: sent.server_time(),
                    player: *sent.player(),
                    entities: sent.entities().map(|(n, e)| (n, *e)).collect(),
                });
                let index = capture.states.len() - 1;
                capture.deltas.push((index, base));
                held.insert(sequence, index);
                while held.len() > 64 {
                    held.pop_first();
                }
            }
            *next = (*next).max(built);
        }
    }
    Ok(capture)
}

/// Observes a match's deltas as the snapshot server codes them (see
/// [`visit_deltas`]).
fn observe_match(capture: &MatchCapture, entity: &mut ModelTrainer, player: &mut ModelTrainer) {
    // The lists are counted after the deltas (the counts are sums, so the
    // order does not matter; both visitors would borrow `entity`).
    let mut lists = Vec::new();
    visit_deltas(
        capture,
        |base, new, context| player.observe(base, new, context),
        |base, new, context| entity.observe(base, new, context),
        |entries, held| lists.push((entries, held.to_vec())),
    );
    for (entries, held) in lists {
        entity.observe_entity_list(entries, &&held[..]);
    }
}

/// Calls `visit` with every delta of a match as the snapshot server codes
/// it: the player state's (against the base's, or the zeroed one in a full
/// update), then each changed entity's against its state in the base and
/// each new one's against its spawn baseline or the zeroed entity, each with
/// its context, and last the entity list's entries against the entities
/// the receiver holds.
fn visit_deltas(
    capture: &MatchCapture,
    mut player: impl FnMut(&PlayerState, &PlayerState, &DeltaContext),
    mut entity: impl FnMut(&EntityState, &EntityState, &DeltaContext),
    mut list: impl FnMut(Vec<(u32, bool)>, &[(u32, EntityState)]),
) {
    let zero_entity = EntityState::default();
    let zero_player = PlayerState::default();
    let empty: Vec<(u32, EntityState)> = Vec::new();
    for &(index, base) in &capture.deltas {
        let new = &capture.states[index];
        let base = base.map(|b| &capture.states[b]);
        let context = DeltaContext {
            elapsed_ms: base.map_or(0, |b| new.time.wrapping_sub(b.time) as i32),
            server_time: Some(new.time),
            ..DeltaContext::default()
        };
        let base_player = base.map_or(&zero_player, |b| &b.player);
        player(
            base_player,
            &new.player,
            &context.with_spawn(base.is_none()),
        );
        let old = base.map_or(&empty, |b| &b.entities);
        let mut entries = Vec::new();
        for merged in merge_by_number(old, &new.entities) {
            let number = merged.number();
            match merged {
                Merged::Both {
                    old, new: state, ..
                } => {
                    if old.wire_differs(state) {
                        entity(old, state, &context);
                        entries.push((number, false));
                    }
                }
                Merged::Added { new: state, .. } => {
                    let from = capture.baselines.get(&number).unwrap_or(&zero_entity);
                    entity(from, state, &context.with_spawn(true));
                    entries.push((number, false));
                }
                Merged::Removed { .. } => entries.push((number, true)),
            }
        }
        list(entries, old);
    }
}

/// Counts the snapshots the server sent in `matches`, with grids and
/// dictionaries of common integer changes learned from them (a player's
/// reload timer counting down a tick or three, its command number moving
/// on by the commands of a snapshot interval, an event counter's step:
/// each one symbol without extra bits; on the default match, seed 1,
/// native 0.515× → 0.502× the q3 codec's bytes).
pub fn train_on_matches(matches: &[TrainingMatch]) -> Result<ArenaModels, Error> {
    let (mut entity, mut player) = trainers();
    let captures = matches
        .iter()
        .map(|&training| capture_match(training))
        .collect::<Result<Vec<_>, _>>()?;
    for capture in &captures {
        for state in &capture.states {
            player.learn_grids(&state.player);
            state
                .entities
                .iter()
                .for_each(|(_, e)| entity.learn_grids(e));
        }
        visit_deltas(
            capture,
            |base, new, _| player.learn_changes(base, new),
            |base, new, _| entity.learn_changes(base, new),
            |_, _| {},
        );
    }
    entity.freeze_grids();
    player.freeze_grids();
    for capture in &captures {
        observe_match(capture, &mut entity, &mut player);
    }
    Ok(ArenaModels {
        entity: entity.finish(),
        player: player.finish(),
    })
}

/// What a traced symbol was coded for (see [`trace_match`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Coded {
    /// The player state's delta; `true` from the zeroed one (a full update).
    Player(bool),
    /// An entity's delta: its [`kind`] and `true`
    /// from a spawn baseline or the zeroed entity (new to the client).
    Entity(u8, bool),
    /// An entity list's numbers and end.
    List,
}

/// Plays `training` and calls `visit` with every symbol its server's
/// snapshots code under `models` (as the training counts them: the player
/// state's delta, each changed or new entity's, each entity list's
/// numbers), with what it was coded for: where the native bytes of a
/// match go, field by field (the `field_bits` example). Returns the
/// number of snapshots.
pub fn trace_match(
    training: TrainingMatch,
    models: &ArenaModels,
    mut visit: impl FnMut(Coded, TracedSymbol),
) -> Result<usize, Error> {
    let unusable = |e: fields::BitError| Error::Config(format!("unusable model: {e}"));
    let entity = NativeModel::new(models.entity.clone()).map_err(unusable)?;
    let player = NativeModel::new(models.player.clone()).map_err(unusable)?;
    let capture = capture_match(training)?;
    let mut lists = Vec::new();
    let (mut players, mut entities) = (Vec::new(), Vec::new());
    visit_deltas(
        &capture,
        |base, new, context| {
            let of = Coded::Player(context.spawn);
            trace_delta(&player, base, new, context, &mut |s| players.push((of, s)))
        },
        |base, new, context| {
            let of = Coded::Entity(new.kind, context.spawn);
            trace_delta(&entity, base, new, context, &mut |s| entities.push((of, s)))
        },
        |entries, held| lists.push((entries, held.iter().map(|(n, _)| *n).collect::<Vec<_>>())),
    );
    for (of, symbol) in players.into_iter().chain(entities) {
        visit(of, symbol);
    }
    for (entries, held) in lists {
        trace_entity_list(entries, &&held[..], &mut |s| visit(Coded::List, s));
    }
    Ok(capture.deltas.len())
}

/// The committed models' training run: the [`TRAINING_MATCHES`].
pub fn train_committed() -> Result<ArenaModels, Error> {
    train_on_matches(&TRAINING_MATCHES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_models_load_and_are_what_training_produces() {
        assert!(entity_model().is_some(), "models.json fits the tables");
        assert!(player_model().is_some());
        let committed: ArenaModels = serde_json::from_str(MODELS_JSON).unwrap();
        assert_eq!(
            committed,
            train_committed().unwrap(),
            "regenerate: cargo run --release -p arena --example train_models"
        );
        let x = field(&EntityState::TABLE, "x");
        assert!(entity_model().unwrap().predictor(x).is_some());
    }

    #[test]
    fn a_trace_prices_every_kind_of_symbol_with_the_models_codes() {
        let models: ArenaModels = serde_json::from_str(MODELS_JSON).unwrap();
        let entity = NativeModel::new(models.entity.clone()).unwrap();
        let player = NativeModel::new(models.player.clone()).unwrap();
        let training = TrainingMatch {
            bots: 4,
            seconds: 5,
            seed: 7,
        };
        let mut seen = std::collections::BTreeSet::new();
        let mut bits = 0u64;
        let snapshots = trace_match(training, &models, |of, symbol| {
            let model = match of {
                Coded::Player(_) => &player,
                Coded::Entity(..) | Coded::List => &entity,
            };
            let word = model
                .stream_bits(symbol.context, symbol.symbol)
                .expect("a context of the model");
            assert!(word > 0, "{of:?} {symbol:?} has a code word");
            bits += u64::from(word + symbol.raw_bits);
            seen.insert(match of {
                Coded::Player(_) => "player",
                Coded::Entity(kind::PLAYER, _) => "player entity",
                Coded::Entity(kind::PROJECTILE, _) => "projectile",
                Coded::Entity(..) => "item",
                Coded::List => "list",
            });
        })
        .unwrap();
        assert!(snapshots > 100, "{snapshots} snapshots");
        for part in ["player", "player entity", "projectile", "list"] {
            assert!(seen.contains(part), "no {part} symbols: {seen:?}");
        }
        // Four bots' snapshots: tens of bits each, not thousands.
        let mean = bits / snapshots as u64;
        assert!((20..400).contains(&mean), "{mean} bits a snapshot");
    }
}
