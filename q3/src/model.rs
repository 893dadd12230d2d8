//! Trained native-codec models for Quake 3's entity and player state.
//!
//! The native codec codes each delta's symbols (changed-field groups, value
//! classes) with Huffman codes built from counts taken on real games, and
//! predicts positions from velocities (see [`fields::model`]). The counts
//! for [`EntityState`] and [`PlayerState`] were taken by [`train`] on the
//! demos in `shared/q3demos` and on this crate's own recordings of bot
//! games ([`RECORDED_DEMOS`]), and are committed as `q3_models.postcard`;
//! regenerate them with `cargo run --release -p netq3-q3 --example train_q3_models`
//! (a test checks the committed file is what training produces).
//!
//! Predictors: a player's `origin` moves at the mean of its two
//! `velocity`s over the change of `commandTime`; from a baseline whose
//! velocities are not whole numbers (a server that does not snap them, as
//! OpenArena's, whose float velocities cost twenty-odd bits each from
//! their baseline) its horizontal `origin` moves at the baseline's
//! `velocity` instead, and the horizontal `velocity` is predicted from
//! that change of `origin`, when `commandTime` advanced by at most the
//! elapsed server time (one move: a frame's, or a client's shorter one;
//! [`fields::model::ModelData::loose_predictors`]);
//! an entity's `pos.trBase` moves at `pos.trDelta` over the
//! snapshot's elapsed server time, which callers pass in a
//! [`DeltaContext`]; `commandTime` and an entity's `pos.trTime` advance by
//! that elapsed time, and a `pos.trTime` entering the view (a missile's
//! launch time) is coded against the snapshot's server time
//! ([`Predictor::Stamp`]); a player's `velocity[2]` and an entity's
//! `pos.trDelta[2]` fall with the gravity over the elapsed time while it
//! stands on nothing before and after ([`Predictor::Fall`]). Grids are learned: view angles, for instance, are
//! 16-bit angles (multiples of 360/65536), coded as such. Change patterns
//! are coded per kind of baseline: an entity's by its `pos.trType` and
//! whether it moves vertically, a player's by whether its vertical velocity
//! is zero (on the ground or not), whether its weapon is cooling down and
//! whether it stands still (`bobCycle` zero).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use fields::codec::anchor_coordinate;
use fields::merge::{merge_by_number, Merged};
use fields::model::{Clock, ModelPair, ModelTrainer, NativeModel, PatternKey, Predictor};
use fields::{DeltaContext, Fields, NetFields};

use crate::error::Q3Error;
use crate::file::Dm68Decoder;
use crate::message::Command;
use crate::snapshot::Snapshot;
use crate::tables::{EntityState, PlayerState};

/// The shared demos (in `shared/q3demos`) the committed models were
/// trained on, in training order, before [`RECORDED_DEMOS`]. Fixed by
/// name so that more demos in that folder do not change what "the
/// committed model" means.
pub const TRAINING_DEMOS: &[&str] = &[
    "dm_68_cpma_core_gameplay_dev.dm_68",
    "dm_68_osp_chat.dm_68",
    "dm_68_osp_duel_2.dm_68",
    "dm_68_osp_gameplay_types.dm_68",
    "door_lift_grenade_100_130.dm_68",
    "invalid_command_byte.dm_68",
    "one_frag_only_with_plasma.dm_68",
    "truncated.dm_68",
];

/// Games recorded for training with this crate's own client (spectating
/// bots on a real ioquake3 server with OpenArena's game; how, in
/// `q3/training/README.md`), committed in `q3/training`.
///
/// The shared demos are few, short and mostly idle besides the duel, so
/// a model trained without the duel had seen little real play: its counts
/// priced the duel's movement, fights and missiles from a few minutes of
/// other mods. The recordings add half an hour of play from another game,
/// and none of them is ever a measured demo. Measured leave-one-out
/// (`delta-size`): the duel 0.555 → 0.529 × q3 and 66.0 → 60.0 bits per
/// changed entity, mostly in change patterns (a player entity's group 0:
/// 2.0 → 0.4 bits a message); door_lift 0.355 → 0.338; the others within
/// 0.004. The duel's velocities lost (10.2 → 12.3 bits each a message):
/// it snaps them to whole numbers, as no other training game does, and
/// OpenArena's coincidentally whole ones taught the opposite, until such
/// a velocity beside fractional ones was coded as a fraction (see
/// [`fields::model::ValueContext::Fraction`]; 11.0–11.2 bits, duel 0.525).
/// Two later recordings snap velocities as Quake 3 does (`pmove_float 0`),
/// and in one this crate's client plays, so its command time runs on a
/// client's clock: the duel 0.5152 → 0.5016 (its velocities 11.2 → 8.4
/// bits each) and every other demo smaller too (`q3/training/README.md`).
/// The last is this crate's client playing on OpenArena's defaults
/// (`pmove_float 1`): a client's own commands with fractional
/// velocities, as a live session's player state is, which no other
/// recording held (its walls' clipped velocities among them).
pub const RECORDED_DEMOS: &[&str] = &[
    "oa_ffa3_czest1tourney.dm_68",
    "oa_ffa3_oa_dm4_unsmoothed.dm_68",
    "oa_ffa5_dm6ish.dm_68",
    "oa_ffa3_czest1tourney_snapped.dm_68",
    "oa_ffa3_oa_dm4_played.dm_68",
    "oa_ffa4_oa_dm4_played_float.dm_68",
];

/// The directory holding [`RECORDED_DEMOS`].
pub fn recordings_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("training")
}

/// Every training demo's path, in training order: [`TRAINING_DEMOS`] in
/// `shared` (the shared demo directory), then [`RECORDED_DEMOS`].
pub fn training_paths(shared: &Path) -> Vec<PathBuf> {
    let recordings = recordings_dir();
    TRAINING_DEMOS
        .iter()
        .map(|name| shared.join(name))
        .chain(RECORDED_DEMOS.iter().map(|name| recordings.join(name)))
        .collect()
}

/// The committed models (postcard-encoded [`Q3Models`]).
pub const MODELS_FILE: &[u8] = include_bytes!("q3_models.postcard");

/// Model counts for both structs: [`EntityState`]'s and [`PlayerState`]'s.
pub type Q3Models = ModelPair;

// Inline (with the two accessors): the native codec looks the entity
// model up twice an entity, and a loaded `OnceLock` is one load and a
// compare where a call is a dozen instructions.
#[inline]
fn loaded() -> Option<&'static (Arc<NativeModel>, Arc<NativeModel>)> {
    static MODELS: OnceLock<Option<(Arc<NativeModel>, Arc<NativeModel>)>> = OnceLock::new();
    MODELS
        .get_or_init(|| {
            ModelPair::load_committed::<EntityState, PlayerState>(
                "q3::model",
                postcard::from_bytes(MODELS_FILE).map_err(|e| e.to_string()),
            )
        })
        .as_ref()
}

/// The model of [`EntityState`] (`None` only if the committed file does not
/// match the tables, which a test rules out).
#[inline]
pub fn entity_model() -> Option<&'static Arc<NativeModel>> {
    loaded().map(|(entity, _)| entity)
}

/// The model of [`PlayerState`].
#[inline]
pub fn player_model() -> Option<&'static Arc<NativeModel>> {
    loaded().map(|(_, player)| player)
}

/// The context a snapshot's deltas are coded in: its elapsed server time
/// since its base (0 for a full snapshot), and the viewer's origin as the
/// anchor of positions entering the view from a zero baseline (what
/// [`fields::codec::anchor_of`] reads from the player state under these
/// models).
pub fn delta_context(snapshot: &Snapshot, base: Option<&Snapshot>) -> DeltaContext {
    let ps = &snapshot.ps;
    let anchor = [ps.origin_0, ps.origin_1, ps.origin_2].map(anchor_coordinate);
    DeltaContext {
        elapsed_ms: base.map_or(0, |base| {
            snapshot.server_time.wrapping_sub(base.server_time)
        }),
        spawn: false,
        anchor: match anchor {
            [Some(x), Some(y), Some(z)] => Some([x, y, z]),
            _ => None,
        },
        server_time: Some(snapshot.server_time as u32),
    }
}

/// `groundEntityNum` of a body standing on nothing (`ENTITYNUM_NONE`,
/// the last entity slot).
const NOTHING_BELOW: u32 = (crate::tables::MAX_GENTITIES - 1) as u32;

/// Quake 3's default gravity (`g_gravity`), in units per second²: the
/// fall of an entity, whose state does not say the server's.
const DEFAULT_GRAVITY: u16 = 800;

fn field(table: &fields::FieldTable, name: &str) -> u16 {
    table
        .field(name)
        .map_or(u16::MAX, |(index, _)| index as u16)
}

/// The predictors of both structs (see the module docs).
fn trainers() -> (ModelTrainer, ModelTrainer) {
    let (entity_table, player_table) = (EntityState::TABLE, PlayerState::TABLE);
    let mut entity = ModelTrainer::new(
        entity_table.schema().fingerprint(),
        entity_table.fields.len(),
    );
    let mut player = ModelTrainer::new(
        player_table.schema().fingerprint(),
        player_table.fields.len(),
    );
    let command_time = field(&player_table, "command_time");
    // Time stamps that move with the server clock: a player's command time,
    // and the trajectory time of a player entity (`pos.trTime` is the
    // command time under `g_smoothClients`).
    player = player.with_predictor(usize::from(command_time), Predictor::Advance);
    // Timers every movement command lowers by its milliseconds, down to
    // zero (Quake 3's pmove): between two snapshots by the command time's
    // change. On the duel, half the weapon timer's changes are exactly that
    // (the rest: a weapon fired again).
    for timer in ["weapon_time", "pm_time", "legs_timer", "torso_timer"] {
        player = player.with_predictor(
            usize::from(field(&player_table, timer)),
            Predictor::Countdown {
                clock: Clock::Field(command_time),
            },
        );
    }
    // The bob cycle steps by ⌊0.4 × msec⌋ a command while the player moves
    // on the ground: 3 per 8 ms command at 125 frames a second (the
    // competitive setting), and as much per millisecond at 60; 384/1024 a
    // millisecond of command time.
    player = player.with_predictor(
        usize::from(field(&player_table, "bob_cycle")),
        Predictor::Run {
            per_1024: 384,
            clock: Clock::Field(command_time),
        },
    );
    // A player whose vertical velocity is zero stands on the ground and
    // keeps its height; one in the air changes its height and vertical
    // velocity every frame; a weapon cooling down (`weaponTime`) changes
    // its timer every frame; one standing still (Quake 3 resets `bobCycle`
    // to zero below 5 units a second) changes its command time and little
    // else: the baseline says which change patterns come. Measured
    // leave-one-out, the still split took every demo down by 0.0002–0.003
    // × q3, and kept the idle demos' most common pattern (the command time
    // alone) from flipping between a two- and a three-bit code as training
    // games were added: with two more recordings and without the split,
    // `osp_gameplay_types` went from 0.171 to 0.196.
    player = player.with_pattern_key(PatternKey {
        field: field(&player_table, "velocity_2"),
        classes: 2,
        flag: Some(field(&player_table, "weapon_time")),
        second_flag: Some(field(&player_table, "bob_cycle")),
    });
    // An entity's trajectory type says which fields its deltas change, and
    // so does moving vertically (falling, jumping, a rising lift).
    entity = entity.with_pattern_key(PatternKey {
        field: field(&entity_table, "pos_tr_type"),
        classes: 6,
        flag: Some(field(&entity_table, "pos_tr_delta_2")),
        second_flag: None,
    });
    // An entity entering the view from the zeroed dummy (a temporary
    // event, a missile, a player who joined after the map loaded) changes
    // its position, type and event fields; one from a player's spawn
    // baseline much of its state; one from an item's often nothing at all.
    // The baseline's type says which.
    entity = entity.with_spawn_key(PatternKey {
        field: field(&entity_table, "e_type"),
        classes: 4,
        flag: None,
        second_flag: None,
    });
    // A trajectory's start time: a player entity's command time moves
    // with the server clock; a missile's launch time (or a dropped item's
    // drop time) entering the view lies a little before the snapshot's
    // server time, where coded from the zero baseline it costs the whole
    // clock (23 bits a missile on the duel).
    entity = entity.with_predictor(
        usize::from(field(&entity_table, "pos_tr_time")),
        Predictor::Stamp,
    );
    // A body standing on nothing (`groundEntityNum` is `ENTITYNUM_NONE`,
    // 1023) before and after the delta falls: Quake 3's movement lowers
    // its vertical velocity by the gravity (`ps.gravity`, 800 units a
    // second² by default) times each command's milliseconds. Measured
    // over the shared demos' own deltas, the fall takes a player's changed
    // vertical velocity in the air from 7.3 to 3.7 bits below its leading
    // one on the duel (4.8 to 0.3–1.3 on the others), and the other
    // player's (its entity's `pos.trDelta[2]`, for which the entity state
    // carries no gravity: the default's) from 7.2 to 3.6 on the duel, 4.8
    // to 0.4–1.3 on plasma and truncated. Jumping and landing are coded
    // from the baseline as before (from a fall they lose a little). The
    // delta's elapsed server time, not the command time, is the fall's
    // clock: the field is then decoded with the context-predicted ones,
    // before the height that integrates it, and on the duel (a recording
    // player's commands) it predicts a little better.
    player = player.with_predictor(
        usize::from(field(&player_table, "velocity_2")),
        Predictor::Fall {
            gravity: Some(field(&player_table, "gravity")),
            acceleration: 0,
            ground: (field(&player_table, "ground_entity_num"), NOTHING_BELOW),
        },
    );
    entity = entity.with_predictor(
        usize::from(field(&entity_table, "pos_tr_delta_2")),
        Predictor::Fall {
            gravity: None,
            acceleration: DEFAULT_GRAVITY,
            ground: (field(&entity_table, "ground_entity_num"), NOTHING_BELOW),
        },
    );
    for axis in 0..3u8 {
        // Where the viewer is, and where an entity is: a temporary event
        // or a missile entering the view from a zero baseline is coded
        // against the viewer's position, not against zero.
        player = player.with_axis(
            usize::from(field(&player_table, &format!("origin_{axis}"))),
            axis,
        );
        entity = entity.with_axis(
            usize::from(field(&entity_table, &format!("pos_tr_base_{axis}"))),
            axis,
        );
        entity = entity.with_predictor(
            usize::from(field(&entity_table, &format!("pos_tr_base_{axis}"))),
            Predictor::Integrate {
                rate: field(&entity_table, &format!("pos_tr_delta_{axis}")),
                clock: Clock::Elapsed,
            },
        );
        let origin = field(&player_table, &format!("origin_{axis}"));
        let velocity = field(&player_table, &format!("velocity_{axis}"));
        player = player.with_predictor(
            usize::from(origin),
            Predictor::Integrate {
                rate: velocity,
                clock: Clock::Field(command_time),
            },
        );
        if axis < 2 {
            // A server that does not snap velocities (OpenArena's
            // `pmove_float 1`; the baseline then holds a fractional one)
            // sends every changed velocity at full float precision,
            // twenty-odd bits from its baseline. There the horizontal
            // position is decoded first, from the baseline's velocity,
            // and the velocity from the position's change: a server
            // moving a player by one move a frame moves it at the new
            // velocity, so the change says it to a few bits. A server
            // that snaps them (Quake 3's `pmove_float 0`, the OSP duel)
            // sends a velocity's change in a few bits, and the mean of
            // the two velocities predicts the position better: such
            // baselines keep the integration. With the split for every
            // delta a live CTF session (ctf_gate1, 10 bots, 60 s,
            // spectating) sent its velocities in 10.5 bits a message per
            // axis, not 23.6, but the duel lost 0.4535 → 0.457 × q3.
            // Chosen by the baseline (`delta-size`, the engine's bytes,
            // fixed / adapting models): the duel 0.4535 / 0.4359 as
            // before, door_lift 0.332 / 0.318 → 0.311 / 0.293, recorded
            // live sessions spectating 0.489 / 0.470 → 0.461 / 0.439
            // (CTF) and 0.429 / 0.420 → 0.360 / 0.343 (oa_dm1); playing
            // oa_dm1, 0.513 / 0.491 → 0.518 / 0.495 (this client's
            // commands run two moves in half its messages). Vertically a
            // player in the air falls at the mean of the two velocities,
            // and the same split lost a little on both: it stays
            // integrated. The split is taken only when `commandTime`
            // advanced by at most the snapshot's elapsed time (one move:
            // a server frame's for bots, a spectated player, door_lift
            // throughout; this client's own 36-46 ms in a 50 ms frame);
            // plasma's and truncated's recording players do not snap
            // either, but their `commandTime` moves by the elapsed time
            // in only about half their deltas, and with the split on
            // every one of them lost 0.0013-0.0029 x q3. Taken at
            // exactly the elapsed time only, this client's one-move
            // deltas, two thirds of them, were integrated; with them
            // (and a position that moved slower than a unit a second,
            // pressed against a wall, predicting no velocity), recorded
            // sessions playing oa_dm1 with 4 / 8 bots went 0.4705 /
            // 0.4563 -> 0.4582 / 0.4428 x q3 (fixed models), and the
            // pooled shared demos 528,998 -> 529,052 bytes.
            player = player.with_loose_predictor(
                usize::from(origin),
                Predictor::Extrapolate {
                    rate: velocity,
                    clock: Clock::Field(command_time),
                },
            );
            player = player.with_loose_predictor(
                usize::from(velocity),
                Predictor::Differentiate {
                    position: origin,
                    clock: Clock::Field(command_time),
                    mean: false,
                },
            );
        }
    }
    (entity, player)
}

/// One snapshot's deltas, as the encoder sends them.
struct Deltas {
    context: DeltaContext,
    player: (PlayerState, PlayerState),
    /// Whether the player state deltas from the zeroed dummy (a full snapshot).
    player_spawn: bool,
    /// (base, new, from a spawn baseline) of every entity written: changed,
    /// or new to the client.
    entities: Vec<(EntityState, EntityState, bool)>,
    /// The entity list's entries in order: (number, removed).
    list: Vec<(u32, bool)>,
    /// The numbers of the base's entities (what a removal is named among).
    held: Vec<u32>,
    /// Whether the recording sent this delta (not one from an older base
    /// that training adds, see [`OLDER_BASES`]).
    recorded: bool,
}

/// Counts symbols over every snapshot of the given demos. Files that fail
/// to decode contribute the snapshots before the failure.
pub fn train<'a>(demos: impl IntoIterator<Item = &'a [u8]>) -> Result<Q3Models, Q3Error> {
    let deltas = deltas_of(demos, &OLDER_BASES)?;
    let (mut entity, mut player) = trainers();
    for delta in &deltas {
        player.learn_grids(&delta.player.1);
        player.learn_changes(&delta.player.0, &delta.player.1);
        for (base, new, _) in &delta.entities {
            entity.learn_grids(new);
            entity.learn_changes(base, new);
        }
    }
    entity.freeze_grids();
    player.freeze_grids();
    Ok(count_deltas(&deltas, entity, player))
}

/// The symbols the given demos' deltas take when coded with `models`
/// (their grids and predictors), as counts: priced with `models`' codes,
/// they are what those demos cost under them (see the `field_bits` example).
pub fn count<'a>(
    demos: impl IntoIterator<Item = &'a [u8]>,
    models: &Q3Models,
) -> Result<Q3Models, Q3Error> {
    // What the demos sent, and nothing more: these counts price them.
    let deltas = deltas_of(demos, &[])?;
    Ok(count_deltas(
        &deltas,
        ModelTrainer::counting_for(&models.entity),
        ModelTrainer::counting_for(&models.player),
    ))
}

/// Counts the symbols of `deltas` with trainers whose grids are frozen.
fn count_deltas(deltas: &[Deltas], mut entity: ModelTrainer, mut player: ModelTrainer) -> Q3Models {
    for delta in deltas {
        let context = delta.context.with_spawn(delta.player_spawn);
        // The viewer's own state is read before its anchor is known.
        player.observe(&delta.player.0, &delta.player.1, &context.with_anchor(None));
        for (base, new, spawn) in &delta.entities {
            entity.observe(base, new, &delta.context.with_spawn(*spawn));
        }
        // Whether a list is empty is the recording's habit: deltas from
        // older bases, seldom empty, count their entries only.
        if delta.recorded {
            entity.observe_entity_list(delta.list.iter().copied(), &&delta.held[..]);
        } else {
            entity.observe_entity_list_entries(delta.list.iter().copied(), &&delta.held[..]);
        }
    }
    Q3Models {
        entity: entity.finish(),
        player: player.finish(),
    }
}

/// How many snapshots back the extra training deltas of each snapshot
/// reach, besides the delta the recording sent.
///
/// A server deltas against the newest snapshot the client acknowledged,
/// and with latency that is several snapshots back: the 15 Hz duel's
/// recorded bases are three to four messages and 165–200 ms old, where
/// the 30 Hz recordings' are one snapshot and 33 ms. Over a longer span
/// more fields change, and by more, so counts taken only from the short
/// deltas price the long ones badly. Each snapshot therefore also trains
/// as a delta from the snapshots 2, 4 and 6 back (66–200 ms at 30 Hz).
/// Measured leave-one-out (`delta-size`): the duel 0.586 → 0.555 × q3;
/// plasma 0.421 → 0.426, door_lift 0.350 → 0.355 (a quarter of their
/// training is now short deltas, not all of it); the others within 0.001.
const OLDER_BASES: [usize; 3] = [2, 4, 6];

/// Every delta the demos' snapshots send, in order, each followed by the
/// snapshot's deltas from the snapshots `older` back (see [`OLDER_BASES`]).
fn deltas_of<'a>(
    demos: impl IntoIterator<Item = &'a [u8]>,
    older: &[usize],
) -> Result<Vec<Deltas>, Q3Error> {
    let mut deltas = Vec::new();
    let deepest = older.iter().copied().max().unwrap_or(0);
    for demo in demos {
        let mut recent: std::collections::VecDeque<Arc<Snapshot>> = Default::default();
        for record in Dm68Decoder::new(demo)? {
            let Ok(record) = record else { break };
            for command in &record.message.commands {
                let snap = match &command.command {
                    Command::Snapshot(snap) => snap,
                    // A new gamestate (a map change) starts a new world.
                    Command::Gamestate(_) => {
                        recent.clear();
                        continue;
                    }
                    _ => continue,
                };
                deltas.push(deltas_between(
                    snap.base.as_deref(),
                    &snap.snapshot,
                    &snap.baselines,
                ));
                for &back in older {
                    if let Some(base) = recent.len().checked_sub(back).map(|i| &recent[i]) {
                        deltas.push(Deltas {
                            recorded: false,
                            ..deltas_between(Some(base), &snap.snapshot, &snap.baselines)
                        });
                    }
                }
                if deepest > 0 {
                    if recent.len() == deepest {
                        recent.pop_front();
                    }
                    recent.push_back(snap.snapshot.clone());
                }
            }
        }
    }
    Ok(deltas)
}

/// The deltas a message from `base` (none: a full snapshot) to `snapshot`
/// sends.
fn deltas_between(
    base: Option<&Snapshot>,
    snapshot: &Snapshot,
    baselines: &crate::snapshot::Baselines,
) -> Deltas {
    let old = base.map_or(&[][..], |b| &b.entities[..]);
    let mut entities = Vec::new();
    let mut list = Vec::new();
    for merged in merge_by_number(old, &snapshot.entities) {
        let number = merged.number();
        match merged {
            Merged::Removed { .. } => list.push((number, true)),
            // Old ones are written only when changed.
            Merged::Both { old, new, .. } => {
                if new.wire_differs(old) {
                    entities.push((*old, *new, false));
                    list.push((number, false));
                }
            }
            // New ones always, from their spawn baseline.
            Merged::Added { new, .. } => {
                if let Some(from) = baselines.get(number) {
                    entities.push((*from, *new, true));
                    list.push((number, false));
                }
            }
        }
    }
    Deltas {
        context: delta_context(snapshot, base),
        player: (base.map(|b| b.ps).unwrap_or_default(), snapshot.ps),
        player_spawn: base.is_none(),
        entities,
        list,
        held: old.iter().map(|(number, _)| *number).collect(),
        recorded: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn training_adds_deltas_from_older_snapshots() {
        if !crate::corpus::available_or_skip("training_adds_deltas_from_older_snapshots") {
            return;
        }
        let demo = std::fs::read(crate::corpus::path("dm_68_osp_chat.dm_68")).unwrap();
        let recorded = deltas_of([&demo[..]], &[]).unwrap();
        let snapshots = recorded.len();
        assert_eq!(snapshots, 532);
        let trained = deltas_of([&demo[..]], &[2, 4]).unwrap();
        // Each snapshot from the third on also deltas from two back, and
        // from the fifth on from four back.
        assert_eq!(trained.len(), snapshots + (snapshots - 2) + (snapshots - 4));
        // The tenth snapshot's: what it sent, then from the eighth and the
        // sixth, after the nine before it and their 7 + 5 older deltas.
        let tenth = 9 + (9 - 2) + (9 - 4);
        let recorded_times = |i: usize| recorded[i].player.1.command_time;
        assert_eq!(trained[tenth].player.1.command_time, recorded_times(9));
        assert_eq!(trained[tenth + 1].player.0.command_time, recorded_times(7));
        assert_eq!(trained[tenth + 2].player.0.command_time, recorded_times(5));
        assert!(trained[tenth + 2].context.elapsed_ms > trained[tenth + 1].context.elapsed_ms);
    }

    #[test]
    fn committed_models_load_and_fit_the_tables() {
        let entity = entity_model().expect("the committed entity model loads");
        let player = player_model().expect("the committed player model loads");
        assert!(entity
            .predictor(usize::from(field(&EntityState::TABLE, "pos_tr_base_0")))
            .is_some());
        let viewangle = usize::from(field(&PlayerState::TABLE, "viewangles_0"));
        let grid = player.grid(viewangle).expect("view angles are on a grid");
        assert_eq!(grid.step(), Some(360.0 / 65536.0));
    }
}
