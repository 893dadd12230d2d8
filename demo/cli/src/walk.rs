//! One pass over a demo, Quake 3 or native, as a sequence of [`Step`]s:
//! gamestates, configstring changes, reliable server commands and
//! snapshots reduced to what `events` and `view` read ([`Frame`]).
//!
//! Quake 3 demos are decoded with [`Dm68Decoder`]; native demos are played
//! through the demo crate's [`Player`], so whatever the native format
//! becomes, this module reads it through the reader's own API. Entities
//! are read by field name: Quake 3's names (`e_type`, `pos_tr_base_0`, …)
//! in `.dm_68` files and in native demos converted from them, the arena's
//! (`kind`, `x`, `y`, `owner`) in the arena's recordings.

use demo::{DemoReader, Player, RecordKind};
use fields::dynamic::{DynamicState, ScalarValue};
use q3::events::{EventEntity, ET_EVENTS, ET_PLAYER};
use q3::{Command, Dm68Decoder, EntityState, Q3Client};
use snapshot::Received;

use crate::detect::Format;
use crate::error::ToolError;

/// `eType` of a projectile (`ET_MISSILE`).
pub const ET_MISSILE: i32 = 3;
/// `eType` of an item (`ET_ITEM`).
pub const ET_ITEM: i32 = 2;
/// Quake 3's trajectory types that move in a straight line or under
/// gravity from `trBase` with `trDelta` since `trTime` (`TR_LINEAR`,
/// `TR_LINEAR_STOP`, `TR_GRAVITY`).
const MOVING_TRAJECTORIES: [i32; 3] = [2, 3, 5];

/// A source of configstrings by index (empty when unset).
pub trait Configstrings {
    /// Configstring `index`.
    fn get(&self, index: usize) -> &str;
}

impl Configstrings for Q3Client {
    fn get(&self, index: usize) -> &str {
        self.configstring(index)
    }
}

impl Configstrings for snapshot::Gamestate<DynamicState> {
    fn get(&self, index: usize) -> &str {
        self.configstring(index).unwrap_or("")
    }
}

/// What an entity is, for drawing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntityKind {
    /// A player.
    Player,
    /// A projectile.
    Missile,
    /// A pickup.
    Item,
    /// Anything else (movers, triggers, event entities…).
    Other,
}

/// One entity of a [`Frame`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameEntity {
    /// The fields events read (Quake 3's meaning; zero where a game has no
    /// such field).
    pub event: EventEntity,
    /// What it is.
    pub kind: EntityKind,
    /// Position on the map's floor plane at the snapshot's time, when known.
    pub position: Option<[f32; 2]>,
    /// Players: client number; projectiles: who fired (when known).
    pub client: Option<u32>,
}

/// A snapshot as `events` and `view` read it.
#[derive(Debug, Clone, Default)]
pub struct Frame {
    /// Server time, ms.
    pub time_ms: i64,
    /// Bytes of the record that carried it.
    pub bytes: u32,
    /// Its entities.
    pub entities: Vec<FrameEntity>,
    /// The followed player's client number and position.
    pub player: Option<(u32, [f32; 2])>,
}

/// One thing a demo said, in order.
pub enum Step<'a> {
    /// A gamestate: configstrings start over.
    Gamestate {
        /// Server time of the last snapshot before it (0 at the start).
        time_ms: i64,
        /// The configstrings after it.
        configstrings: &'a dyn Configstrings,
    },
    /// Configstrings changed.
    Configstrings {
        /// Server time of the message.
        time_ms: i64,
        /// The configstrings after the change.
        configstrings: &'a dyn Configstrings,
    },
    /// A new reliable server command (Quake 3 demos only).
    Command {
        /// Server time of the message.
        time_ms: i64,
        /// Its text.
        text: &'a str,
    },
    /// A valid snapshot.
    Snapshot(&'a Frame),
}

/// What a walk read.
#[derive(Debug, Clone, Default)]
pub struct Walked {
    /// Complete records read before the end or the fault.
    pub records: usize,
    /// Snapshots stepped through.
    pub snapshots: usize,
    /// Server time of the first and the last snapshot.
    pub first_ms: Option<i64>,
    /// Server time of the last snapshot.
    pub last_ms: i64,
    /// The first player configstring's index.
    pub players_base: usize,
    /// The recording client's number, when the demo names it.
    pub recording_client: Option<u32>,
    /// The file ends without its end marker: why.
    pub truncation: Option<String>,
}

impl Walked {
    fn snapshot(&mut self, time_ms: i64) {
        self.snapshots += 1;
        self.first_ms.get_or_insert(time_ms);
        self.last_ms = time_ms;
    }
}

/// Walks a whole demo; returns what was read and, for a damaged file, the
/// error that stopped it (everything before it was stepped through).
pub fn walk(
    data: &[u8],
    format: Format,
    visit: &mut dyn FnMut(Step<'_>),
) -> (Walked, Option<ToolError>) {
    let mut walked = Walked::default();
    let error = match format {
        Format::Dm68 => walk_dm68(data, &mut walked, visit).err(),
        Format::Native => walk_native(data, &mut walked, visit).err(),
    };
    (walked, error)
}

fn walk_dm68(
    data: &[u8],
    walked: &mut Walked,
    visit: &mut dyn FnMut(Step<'_>),
) -> Result<(), ToolError> {
    walked.players_base = q3::events::CS_PLAYERS;
    let mut decoder = Dm68Decoder::new(data)?;
    let mut frame = Frame::default();
    while let Some(item) = decoder.next() {
        let decoded = match item {
            Ok(decoded) => decoded,
            Err(error) if error.is_truncation() => {
                walked.truncation = Some(error.to_string());
                return Ok(());
            }
            Err(error) => return Err(error.into()),
        };
        walked.records += 1;
        let client = decoder.client();
        let message = &decoded.message;
        let time_ms = message
            .snapshots()
            .next()
            .map_or(walked.last_ms, |s| i64::from(s.snapshot.server_time));
        let mut configstrings_changed = false;
        for command in &message.commands {
            match &command.command {
                Command::Gamestate(gamestate) => {
                    walked.recording_client = u32::try_from(gamestate.client_num).ok();
                    visit(Step::Gamestate {
                        time_ms: walked.last_ms,
                        configstrings: client,
                    });
                }
                Command::ServerCommand(text) if text.is_new => {
                    visit(Step::Command {
                        time_ms,
                        text: &text.text,
                    });
                    configstrings_changed |=
                        text.text.starts_with("cs ") || text.text.starts_with("bcs2 ");
                }
                Command::Configstring { .. } => configstrings_changed = true,
                _ => {}
            }
        }
        if configstrings_changed {
            visit(Step::Configstrings {
                time_ms,
                configstrings: client,
            });
        }
        for snap in message.snapshots() {
            let snapshot = &snap.snapshot;
            if !snapshot.is_valid() {
                continue;
            }
            let time = i64::from(snapshot.server_time);
            frame.time_ms = time;
            frame.bytes = decoded.record.message.len() as u32;
            frame.entities.clear();
            frame.entities.extend(
                snapshot
                    .entities
                    .iter()
                    .map(|(number, state)| q3_entity(*number, state, time)),
            );
            frame.player = Some((
                snapshot.ps.client_num as u32,
                [snapshot.ps.origin_0, snapshot.ps.origin_1],
            ));
            walked.snapshot(time);
            visit(Step::Snapshot(&frame));
        }
    }
    Ok(())
}

fn q3_kind(e_type: i32) -> EntityKind {
    match e_type {
        ET_PLAYER => EntityKind::Player,
        ET_MISSILE => EntityKind::Missile,
        ET_ITEM => EntityKind::Item,
        _ => EntityKind::Other,
    }
}

/// Where a Quake 3 trajectory puts an entity at `time_ms`.
fn trajectory(
    base: [f32; 2],
    delta: [f32; 2],
    tr_type: i32,
    tr_time: i32,
    time_ms: i64,
) -> [f32; 2] {
    if !MOVING_TRAJECTORIES.contains(&tr_type) {
        return base;
    }
    let seconds = (time_ms - i64::from(tr_time)).max(0) as f32 / 1000.0;
    [base[0] + delta[0] * seconds, base[1] + delta[1] * seconds]
}

fn q3_entity(number: u32, state: &EntityState, time_ms: i64) -> FrameEntity {
    let kind = q3_kind(state.e_type);
    let position = (kind != EntityKind::Other && state.e_type < ET_EVENTS).then(|| {
        trajectory(
            [state.pos_tr_base_0, state.pos_tr_base_1],
            [state.pos_tr_delta_0, state.pos_tr_delta_1],
            state.pos_tr_type,
            state.pos_tr_time,
            time_ms,
        )
    });
    FrameEntity {
        event: EventEntity::of(number, state),
        kind,
        position,
        client: match kind {
            EntityKind::Player => Some(state.client_num as u32),
            EntityKind::Missile => Some(state.other_entity_num as u32),
            _ => None,
        },
    }
}

/// Field indices of a native demo's schemas, by the names this module
/// knows.
#[derive(Debug, Clone, Default)]
struct NativeFields {
    /// Quake 3's entity fields (a demo converted from `.dm_68`).
    q3: Option<Q3Fields>,
    /// The arena's entity fields.
    arena: Option<ArenaFields>,
    /// Player state: client number, x, y.
    player: Option<(usize, usize, usize)>,
}

#[derive(Debug, Clone, Copy)]
struct Q3Fields {
    e_type: usize,
    event_parm: usize,
    other: usize,
    other2: usize,
    powerups: usize,
    client_num: usize,
    base: [usize; 2],
    delta: [usize; 2],
    tr_type: usize,
    tr_time: usize,
}

#[derive(Debug, Clone, Copy)]
struct ArenaFields {
    kind: usize,
    x: usize,
    y: usize,
    owner: usize,
}

fn find(schema: &fields::schema::Schema, name: &str) -> Option<usize> {
    schema.fields.iter().position(|f| f.name == name)
}

impl NativeFields {
    fn of(entity: &fields::schema::Schema, player: &fields::schema::Schema) -> Self {
        let f = |name| find(entity, name);
        let q3 = (|| {
            Some(Q3Fields {
                e_type: f("e_type")?,
                event_parm: f("event_parm")?,
                other: f("other_entity_num")?,
                other2: f("other_entity_num2")?,
                powerups: f("powerups")?,
                client_num: f("client_num")?,
                base: [f("pos_tr_base_0")?, f("pos_tr_base_1")?],
                delta: [f("pos_tr_delta_0")?, f("pos_tr_delta_1")?],
                tr_type: f("pos_tr_type")?,
                tr_time: f("pos_tr_time")?,
            })
        })();
        let arena = (|| {
            Some(ArenaFields {
                kind: f("kind")?,
                x: f("x")?,
                y: f("y")?,
                owner: f("owner")?,
            })
        })();
        let p = |name| find(player, name);
        let player = (|| Some((p("client_num")?, p("origin_0")?, p("origin_1")?)))()
            .or_else(|| Some((p("client")?, p("x")?, p("y")?)));
        NativeFields {
            q3,
            arena: if q3.is_none() { arena } else { None },
            player,
        }
    }

    fn entity(&self, number: u32, state: &DynamicState, time_ms: i64) -> FrameEntity {
        let int = |field: usize| scalar_i64(state, field) as i32;
        let float = |field: usize| scalar_f32(state, field);
        if let Some(q) = self.q3 {
            let e_type = int(q.e_type);
            let kind = q3_kind(e_type);
            let position = (kind != EntityKind::Other).then(|| {
                trajectory(
                    [float(q.base[0]), float(q.base[1])],
                    [float(q.delta[0]), float(q.delta[1])],
                    int(q.tr_type),
                    int(q.tr_time),
                    time_ms,
                )
            });
            return FrameEntity {
                event: EventEntity {
                    number,
                    e_type,
                    event_parm: int(q.event_parm),
                    other_entity_num: int(q.other),
                    other_entity_num2: int(q.other2),
                    powerups: int(q.powerups),
                },
                kind,
                position,
                client: match kind {
                    EntityKind::Player => Some(int(q.client_num) as u32),
                    EntityKind::Missile => Some(int(q.other) as u32),
                    _ => None,
                },
            };
        }
        if let Some(a) = self.arena {
            let kind = match int(a.kind) as u8 {
                arena::protocol::kind::PLAYER => EntityKind::Player,
                arena::protocol::kind::PROJECTILE => EntityKind::Missile,
                arena::protocol::kind::ITEM => EntityKind::Item,
                _ => EntityKind::Other,
            };
            return FrameEntity {
                event: EventEntity {
                    number,
                    e_type: if kind == EntityKind::Player {
                        ET_PLAYER
                    } else {
                        0
                    },
                    ..EventEntity::default()
                },
                kind,
                position: Some([float(a.x), float(a.y)]),
                client: matches!(kind, EntityKind::Player | EntityKind::Missile)
                    .then(|| int(a.owner) as u32),
            };
        }
        FrameEntity {
            event: EventEntity {
                number,
                ..EventEntity::default()
            },
            kind: EntityKind::Other,
            position: None,
            client: None,
        }
    }
}

fn scalar_i64(state: &DynamicState, field: usize) -> i64 {
    match state.value(field).scalar() {
        ScalarValue::Unsigned(v) => i64::from(v),
        ScalarValue::Signed(v) => i64::from(v),
        ScalarValue::Bool(v) => i64::from(v),
        ScalarValue::Float(v) => v as i64,
    }
}

fn scalar_f32(state: &DynamicState, field: usize) -> f32 {
    match state.value(field).scalar() {
        ScalarValue::Float(v) => v,
        ScalarValue::Unsigned(v) => v as f32,
        ScalarValue::Signed(v) => v as f32,
        ScalarValue::Bool(v) => f32::from(u8::from(v)),
    }
}

/// The first player configstring of a demo: Quake 3's, or the arena's for
/// the arena's native recordings.
pub fn players_base(data: &[u8], format: Format) -> usize {
    match (format, DemoReader::new(data)) {
        (Format::Native, Ok(reader)) => native_players_base(&reader),
        _ => q3::events::CS_PLAYERS,
    }
}

/// The first player configstring of a native demo: Quake 3's for demos
/// converted from `.dm_68`, the arena's for the arena's recordings.
fn native_players_base(reader: &DemoReader<'_>) -> usize {
    let metadata = &reader.header().metadata;
    if metadata.get("game").map(String::as_str) == Some("arena") {
        arena::server::CS_PLAYERS
    } else {
        q3::events::CS_PLAYERS
    }
}

fn walk_native(
    data: &[u8],
    walked: &mut Walked,
    visit: &mut dyn FnMut(Step<'_>),
) -> Result<(), ToolError> {
    let reader = DemoReader::new(data)?;
    walked.players_base = native_players_base(&reader);
    let header = reader.header();
    let fields = NativeFields::of(&header.entity_schema, &header.player_schema);
    walked.recording_client = header
        .metadata
        .get("recording_client")
        .and_then(|c| c.parse().ok());
    let mut player = Player::new(reader)?;
    let mut frame = Frame::default();
    while let Some(played) = player.next_record() {
        let played = match played {
            Ok(played) => played,
            Err(error) if error.is_truncation() => {
                walked.truncation = Some(error.to_string());
                return Ok(());
            }
            Err(error) => return Err(error.into()),
        };
        walked.records += 1;
        let time_ms = i64::from(played.record.server_time);
        let client = player.client();
        match (played.record.kind, played.received) {
            (RecordKind::Gamestate, _) => {
                if let Some(gamestate) = client.gamestate() {
                    visit(Step::Gamestate {
                        time_ms: walked.last_ms,
                        configstrings: gamestate,
                    });
                }
            }
            (RecordKind::Configstring, _) => {
                if let Some(gamestate) = client.gamestate() {
                    visit(Step::Configstrings {
                        time_ms,
                        configstrings: gamestate,
                    });
                }
            }
            (_, Received::Snapshot(_)) => {
                let Some(snapshot) = client.newest() else {
                    continue;
                };
                let time = i64::from(snapshot.server_time());
                frame.time_ms = time;
                frame.bytes = played.record.payload.len() as u32;
                frame.entities.clear();
                frame.entities.extend(
                    snapshot
                        .entities()
                        .map(|(number, state)| fields.entity(number, state, time)),
                );
                frame.player = fields.player.map(|(c, x, y)| {
                    let ps = snapshot.player();
                    (
                        scalar_i64(ps, c) as u32,
                        [scalar_f32(ps, x), scalar_f32(ps, y)],
                    )
                });
                walked.snapshot(time);
                visit(Step::Snapshot(&frame));
            }
            _ => {}
        }
    }
    Ok(())
}
