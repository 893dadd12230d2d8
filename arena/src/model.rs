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
//! 0.500×, 0.499×, 0.503×; 64 bots, seed 5: 0.540×). They are committed as
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
use fields::model::{Clock, ModelPair, ModelTrainer, NativeModel, PatternKey, Predictor};
use fields::{Codec, DeltaContext, Fields, NetFields};

use crate::config::MatchConfig;
use crate::error::Error;
use crate::game::{Match, Phase};
use crate::protocol::{EntityState, PlayerState};
use crate::transport::TransportKind;

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
    // Change patterns per kind of baseline: an entity's kind (players,
    // projectiles and items change different fields), whether it moves
    // vertically and whether it moves along x (a player standing still
    // changes its facing and events, a running one its position and
    // velocity too); whether a player stands on the ground (in the air its
    // height changes every tick) and whether it is reloading (its timer
    // counts down every tick).
    entity = entity.with_pattern_key(PatternKey {
        field: field(&e, "kind") as u16,
        classes: 4,
        flag: Some(field(&e, "vz") as u16),
        second_flag: Some(field(&e, "vx") as u16),
    });
    player = player.with_pattern_key(PatternKey {
        field: field(&p, "on_ground") as u16,
        classes: 2,
        flag: Some(field(&p, "reload_ms") as u16),
        second_flag: None,
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

/// The networked matches the committed models count: three sizes, none of
/// them a size or seed any measured match uses (the default match is 8
/// bots with seed 1; `delta-size` measures 8 and 64 bots with seed
/// `0xa7e4a`).
pub const TRAINING_MATCHES: [TrainingMatch; 4] = [
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
}
