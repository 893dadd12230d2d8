//! Trained native-codec models for the arena's two tables.
//!
//! The native codec codes each delta's symbols (which fields changed, the
//! size class of each change) with Huffman codes counted on real data, and
//! predicts positions from velocities over the snapshot's elapsed time
//! (see [`fields::model`]). The counts here come from [`train`]: a
//! network-free game of bots playing on the true world state, whose entity
//! and player states are observed as deltas 1 to 6 ticks apart — the bases
//! clients acknowledge over a lossy link. They are committed as
//! `models.json`; regenerate with
//! `cargo run --release -p arena --example train_models` (a test checks the
//! committed file is what training produces).
//!
//! The models are part of the protocol: the handshake fingerprint covers
//! them ([`crate::protocol::schema_fingerprint`]), and demos carry them.

use std::sync::{Arc, OnceLock};

use fields::merge::{merge_by_number, Merged};
use fields::model::{Clock, ModelPair, ModelTrainer, NativeModel, PatternKey, Predictor};
use fields::{DeltaContext, Fields, NetFields};

use crate::bot::{Bot, SelfView};
use crate::interp::RenderEntity;
use crate::physics::Map;
use crate::protocol::{EntityState, PlayerState};
use crate::world::{World, ENTITY_LIMIT, ITEM_BASE, PROJECTILE_BASE, PROJECTILE_SLOTS};

/// The committed models.
pub const MODELS_JSON: &str = include_str!("models.json");

/// Seconds of play [`train`] observes for the committed models.
pub const TRAINING_SECONDS: u32 = 60;
/// Players in the training game.
pub const TRAINING_PLAYERS: u8 = 32;
/// Seed of the training game.
pub const TRAINING_SEED: u64 = 0x00a4_e4a0;

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
    // projectiles and items change different fields) and whether it moves
    // vertically; whether a player stands on the ground (in the air its
    // height changes every tick) and whether it is reloading (its timer
    // counts down every tick).
    entity = entity.with_pattern_key(PatternKey {
        field: field(&e, "kind") as u16,
        classes: 4,
        flag: Some(field(&e, "vz") as u16),
        second_flag: None,
    });
    player = player.with_pattern_key(PatternKey {
        field: field(&p, "on_ground") as u16,
        classes: 2,
        flag: Some(field(&p, "reload_ms") as u16),
        second_flag: None,
    });
    (entity, player)
}

/// One tick of the training game: every entity and player state.
struct Frame {
    time: u32,
    entities: Vec<(u32, EntityState)>,
    players: Vec<PlayerState>,
}

fn capture(world: &World) -> Frame {
    let mut entities = Vec::new();
    for (slot, _) in world.players() {
        if let Some(e) = world.player_entity(slot) {
            entities.push((slot as u32, e));
        }
    }
    for index in 0..world.items().len() {
        if let Some(e) = world.item_entity(index) {
            entities.push((ITEM_BASE + index as u32, e));
        }
    }
    for index in 0..PROJECTILE_SLOTS {
        if let Some(e) = world.projectile_entity(index) {
            entities.push((PROJECTILE_BASE + index as u32, e));
        }
    }
    debug_assert!(entities.iter().all(|(n, _)| *n < ENTITY_LIMIT));
    let players = world
        .players()
        .filter_map(|(slot, _)| world.player_state(slot))
        .collect();
    Frame {
        time: world.time_ms(),
        entities,
        players,
    }
}

/// What a bot would render: the true world, no network in between.
fn view_of(frame: &Frame) -> Vec<RenderEntity> {
    frame
        .entities
        .iter()
        .map(|(number, e)| RenderEntity {
            number: *number,
            kind: e.kind,
            pos: [e.x, e.y, e.z],
            vel: [e.vx, e.vy, e.vz],
            owner: e.owner,
            active: e.active,
            item: e.item,
        })
        .collect()
}

/// Counts the symbols of a network-free game of `seconds` at 20 Hz with
/// `players` bots, observing deltas 1 to 6 ticks apart: over a lossy link
/// with Quake-3-like latency a client's base lags by several ticks.
pub fn train(seconds: u32, players: u8, seed: u64) -> ArenaModels {
    let map = Map::arena();
    let mut world = World::new(map.clone(), seed);
    let mut bots: Vec<Bot> = (0..players)
        .map(|slot| {
            world.add_player(slot, &format!("bot{slot}"));
            Bot::new(seed ^ (slot as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15))
        })
        .collect();
    let mut seqs = vec![0u32; players as usize];
    let mut frames: Vec<Frame> = vec![capture(&world)];
    // Three 60 fps commands per 50 ms tick: 17 + 17 + 16 ms.
    for _ in 0..seconds * 20 {
        for msec in [17u8, 17, 16] {
            let view = frames.last().map(view_of).unwrap_or_default();
            for slot in 0..players {
                let Some(player) = world.player(slot) else {
                    continue;
                };
                let me = SelfView {
                    client: slot,
                    motion: &player.motion,
                    alive: player.alive,
                    health: player.health as i16,
                    now_ms: world.time_ms() as u64,
                };
                let intent = bots[slot as usize].think(me, &view, &map);
                seqs[slot as usize] += 1;
                let command = intent.command(msec);
                world.apply_command(slot, seqs[slot as usize], &command);
            }
        }
        world.tick(50);
        world.drain_events().for_each(drop);
        frames.push(capture(&world));
    }

    let (mut entity, mut player) = trainers();
    for frame in &frames {
        frame
            .entities
            .iter()
            .for_each(|(_, e)| entity.learn_grids(e));
        frame.players.iter().for_each(|p| player.learn_grids(p));
    }
    entity.freeze_grids();
    player.freeze_grids();
    let zero_entity = EntityState::default();
    for (i, new) in frames.iter().enumerate() {
        for distance in 1..=6 {
            let Some(base) = i.checked_sub(distance).map(|b| &frames[b]) else {
                continue;
            };
            let context = DeltaContext {
                elapsed_ms: new.time.wrapping_sub(base.time) as i32,
                ..DeltaContext::default()
            };
            let mut list = Vec::new();
            for merged in merge_by_number(&base.entities, &new.entities) {
                let number = merged.number();
                match merged {
                    Merged::Both {
                        old, new: state, ..
                    } => {
                        if old.wire_differs(state) {
                            entity.observe(old, state, &context);
                            list.push((number, false));
                        }
                    }
                    // The server codes an entity new to the client in the
                    // snapshot's context too: train the same way.
                    Merged::Added { new: state, .. } => {
                        entity.observe(&zero_entity, state, &context.with_spawn(true));
                        list.push((number, false));
                    }
                    Merged::Removed { .. } => list.push((number, true)),
                }
            }
            entity.observe_entity_list(list, &&base.entities[..]);
            for state in &new.players {
                if let Some(old) = base.players.iter().find(|p| p.client == state.client) {
                    player.observe(old, state, &context);
                }
            }
        }
    }
    ArenaModels {
        entity: entity.finish(),
        player: player.finish(),
    }
}

/// The committed models' training run.
pub fn train_committed() -> ArenaModels {
    train(TRAINING_SECONDS, TRAINING_PLAYERS, TRAINING_SEED)
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
            train_committed(),
            "regenerate: cargo run --release -p arena --example train_models"
        );
        let x = field(&EntityState::TABLE, "x");
        assert!(entity_model().unwrap().predictor(x).is_some());
    }
}
