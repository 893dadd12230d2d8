//! Quake 3 protocol 68's two networked structs, declared with the project's
//! own field-table macro.
//!
//! The facts — which fields exist, their wire order, widths, signedness and
//! which are floats — are those of Quake 3's `entityState_t` and
//! `playerState_t` net-field tables (public in the ioquake3 source and in
//! published demo-format write-ups). The Rust names are the C names in
//! snake case with `.` and `[i]` flattened: `pos.trBase[0]` becomes
//! `pos_tr_base_0`; [`ENTITY_STATE_Q3_NAMES`] and [`PLAYER_STATE_Q3_NAMES`]
//! keep the original spellings, field for field.
//!
//! Kinds: a float field (width 0 in the C tables) is [`q3_float`]; a positive
//! width `n` is [`unsigned`]`(n)`, because Quake 3 reads it zero-extended into
//! an `int`; a negative width `-n` is [`signed`]`(n)`. Every integer is an
//! `i32`, like the C `int` it mirrors, so a decoded value is exactly what
//! Quake 3's client holds.
//!
//! The entity number is not a delta field (it travels in the 10-bit entity
//! header), so [`EntityState`] leaves it out; snapshots pair each state with
//! its number.

use fields::{array, net_struct, q3_float, signed, unsigned};
use serde::{Deserialize, Serialize};

/// Bits of an entity number on the wire (`GENTITYNUM_BITS`).
pub const GENTITYNUM_BITS: u8 = 10;
/// Number of entity slots (`MAX_GENTITIES`); number 1023 ends an entity list.
pub const MAX_GENTITIES: usize = 1 << GENTITYNUM_BITS;
/// Length of each player-state array (`MAX_STATS`, `MAX_PERSISTANT`,
/// `MAX_WEAPONS`, `MAX_POWERUPS` are all 16 in protocol 68).
pub const PS_ARRAY_LEN: usize = 16;

net_struct! {
    /// Quake 3's `entityState_t` without its number: the 51 fields of the
    /// entity delta, in wire order.
    #[derive(Serialize, Deserialize)]
    pub struct EntityState {
        /// `pos.trTime`: start time of the position trajectory (ms).
        pub pos_tr_time: i32 = unsigned(32),
        /// `pos.trBase[0]`: trajectory base position, x.
        pub pos_tr_base_0: f32 = q3_float(),
        /// `pos.trBase[1]`: trajectory base position, y.
        pub pos_tr_base_1: f32 = q3_float(),
        /// `pos.trDelta[0]`: trajectory velocity, x.
        pub pos_tr_delta_0: f32 = q3_float(),
        /// `pos.trDelta[1]`: trajectory velocity, y.
        pub pos_tr_delta_1: f32 = q3_float(),
        /// `pos.trBase[2]`: trajectory base position, z.
        pub pos_tr_base_2: f32 = q3_float(),
        /// `apos.trBase[1]`: angular trajectory base, yaw.
        pub apos_tr_base_1: f32 = q3_float(),
        /// `pos.trDelta[2]`: trajectory velocity, z.
        pub pos_tr_delta_2: f32 = q3_float(),
        /// `apos.trBase[0]`: angular trajectory base, pitch.
        pub apos_tr_base_0: f32 = q3_float(),
        /// `event`: entity event (with the two toggle bits on top).
        pub event: i32 = unsigned(10),
        /// `angles2[1]`: secondary angles, yaw.
        pub angles2_1: f32 = q3_float(),
        /// `eType`: entity type.
        pub e_type: i32 = unsigned(8),
        /// `torsoAnim`: torso animation (with the toggle bit).
        pub torso_anim: i32 = unsigned(8),
        /// `eventParm`: event parameter.
        pub event_parm: i32 = unsigned(8),
        /// `legsAnim`: legs animation (with the toggle bit).
        pub legs_anim: i32 = unsigned(8),
        /// `groundEntityNum`: entity stood on (1023 = none).
        pub ground_entity_num: i32 = unsigned(GENTITYNUM_BITS),
        /// `pos.trType`: position trajectory type.
        pub pos_tr_type: i32 = unsigned(8),
        /// `eFlags`: entity flags.
        pub e_flags: i32 = unsigned(19),
        /// `otherEntityNum`: related entity (events, beams).
        pub other_entity_num: i32 = unsigned(GENTITYNUM_BITS),
        /// `weapon`: weapon number.
        pub weapon: i32 = unsigned(8),
        /// `clientNum`: client number for players and their events.
        pub client_num: i32 = unsigned(8),
        /// `angles[1]`: angles, yaw.
        pub angles_1: f32 = q3_float(),
        /// `pos.trDuration`: position trajectory duration (ms).
        pub pos_tr_duration: i32 = unsigned(32),
        /// `apos.trType`: angular trajectory type.
        pub apos_tr_type: i32 = unsigned(8),
        /// `origin[0]`: origin, x.
        pub origin_0: f32 = q3_float(),
        /// `origin[1]`: origin, y.
        pub origin_1: f32 = q3_float(),
        /// `origin[2]`: origin, z.
        pub origin_2: f32 = q3_float(),
        /// `solid`: packed bounding box for client-side prediction.
        pub solid: i32 = unsigned(24),
        /// `powerups`: bit mask of active powerups.
        pub powerups: i32 = unsigned(16),
        /// `modelindex`: model index.
        pub modelindex: i32 = unsigned(8),
        /// `otherEntityNum2`: second related entity.
        pub other_entity_num2: i32 = unsigned(GENTITYNUM_BITS),
        /// `loopSound`: looping sound index.
        pub loop_sound: i32 = unsigned(8),
        /// `generic1`: mod-defined.
        pub generic1: i32 = unsigned(8),
        /// `origin2[2]`: secondary origin, z.
        pub origin2_2: f32 = q3_float(),
        /// `origin2[0]`: secondary origin, x.
        pub origin2_0: f32 = q3_float(),
        /// `origin2[1]`: secondary origin, y.
        pub origin2_1: f32 = q3_float(),
        /// `modelindex2`: second model index.
        pub modelindex2: i32 = unsigned(8),
        /// `angles[0]`: angles, pitch.
        pub angles_0: f32 = q3_float(),
        /// `time`: generic time value.
        pub time: i32 = unsigned(32),
        /// `apos.trTime`: start time of the angular trajectory (ms).
        pub apos_tr_time: i32 = unsigned(32),
        /// `apos.trDuration`: angular trajectory duration (ms).
        pub apos_tr_duration: i32 = unsigned(32),
        /// `apos.trBase[2]`: angular trajectory base, roll.
        pub apos_tr_base_2: f32 = q3_float(),
        /// `apos.trDelta[0]`: angular velocity, pitch.
        pub apos_tr_delta_0: f32 = q3_float(),
        /// `apos.trDelta[1]`: angular velocity, yaw.
        pub apos_tr_delta_1: f32 = q3_float(),
        /// `apos.trDelta[2]`: angular velocity, roll.
        pub apos_tr_delta_2: f32 = q3_float(),
        /// `time2`: second generic time value.
        pub time2: i32 = unsigned(32),
        /// `angles[2]`: angles, roll.
        pub angles_2: f32 = q3_float(),
        /// `angles2[0]`: secondary angles, pitch.
        pub angles2_0: f32 = q3_float(),
        /// `angles2[2]`: secondary angles, roll.
        pub angles2_2: f32 = q3_float(),
        /// `constantLight`: packed RGB + intensity.
        pub constant_light: i32 = unsigned(32),
        /// `frame`: model animation frame.
        pub frame: i32 = unsigned(16),
    }
    native_model = crate::model::entity_model();
}

net_struct! {
    /// Quake 3's `playerState_t` as the wire carries it: 48 scalar fields in
    /// wire order, then the four 16-entry arrays sent with 16-bit change masks
    /// (stats, persistant and ammo as 16-bit shorts, powerups as 32-bit longs).
    #[derive(Serialize, Deserialize)]
    pub struct PlayerState {
        /// `commandTime`: time of the last user command applied (ms).
        pub command_time: i32 = unsigned(32),
        /// `origin[0]`: position, x.
        pub origin_0: f32 = q3_float(),
        /// `origin[1]`: position, y.
        pub origin_1: f32 = q3_float(),
        /// `bobCycle`: view bob phase.
        pub bob_cycle: i32 = unsigned(8),
        /// `velocity[0]`: velocity, x.
        pub velocity_0: f32 = q3_float(),
        /// `velocity[1]`: velocity, y.
        pub velocity_1: f32 = q3_float(),
        /// `viewangles[1]`: view yaw.
        pub viewangles_1: f32 = q3_float(),
        /// `viewangles[0]`: view pitch.
        pub viewangles_0: f32 = q3_float(),
        /// `weaponTime`: weapon cooldown (ms), signed.
        pub weapon_time: i32 = signed(16),
        /// `origin[2]`: position, z.
        pub origin_2: f32 = q3_float(),
        /// `velocity[2]`: velocity, z.
        pub velocity_2: f32 = q3_float(),
        /// `legsTimer`: legs animation timer.
        pub legs_timer: i32 = unsigned(8),
        /// `pm_time`: movement timer (ms), signed.
        pub pm_time: i32 = signed(16),
        /// `eventSequence`: event sequence counter.
        pub event_sequence: i32 = unsigned(16),
        /// `torsoAnim`: torso animation.
        pub torso_anim: i32 = unsigned(8),
        /// `movementDir`: movement direction (0..7).
        pub movement_dir: i32 = unsigned(4),
        /// `events[0]`: first predictable event.
        pub events_0: i32 = unsigned(8),
        /// `legsAnim`: legs animation.
        pub legs_anim: i32 = unsigned(8),
        /// `events[1]`: second predictable event.
        pub events_1: i32 = unsigned(8),
        /// `pm_flags`: movement flags.
        pub pm_flags: i32 = unsigned(16),
        /// `groundEntityNum`: entity stood on (1023 = none).
        pub ground_entity_num: i32 = unsigned(GENTITYNUM_BITS),
        /// `weaponstate`: weapon state machine.
        pub weaponstate: i32 = unsigned(4),
        /// `eFlags`: entity flags (16 bits in the player state).
        pub e_flags: i32 = unsigned(16),
        /// `externalEvent`: event set from outside movement.
        pub external_event: i32 = unsigned(10),
        /// `gravity`: gravity.
        pub gravity: i32 = unsigned(16),
        /// `speed`: maximum speed.
        pub speed: i32 = unsigned(16),
        /// `delta_angles[1]`: view angle offset, yaw (short angle).
        pub delta_angles_1: i32 = unsigned(16),
        /// `externalEventParm`: parameter of the external event.
        pub external_event_parm: i32 = unsigned(8),
        /// `viewheight`: eye height, signed.
        pub viewheight: i32 = signed(8),
        /// `damageEvent`: damage event counter.
        pub damage_event: i32 = unsigned(8),
        /// `damageYaw`: direction of the last damage, yaw.
        pub damage_yaw: i32 = unsigned(8),
        /// `damagePitch`: direction of the last damage, pitch.
        pub damage_pitch: i32 = unsigned(8),
        /// `damageCount`: amount of the last damage.
        pub damage_count: i32 = unsigned(8),
        /// `generic1`: mod-defined.
        pub generic1: i32 = unsigned(8),
        /// `pm_type`: movement type.
        pub pm_type: i32 = unsigned(8),
        /// `delta_angles[0]`: view angle offset, pitch.
        pub delta_angles_0: i32 = unsigned(16),
        /// `delta_angles[2]`: view angle offset, roll.
        pub delta_angles_2: i32 = unsigned(16),
        /// `torsoTimer`: torso animation timer.
        pub torso_timer: i32 = unsigned(12),
        /// `eventParms[0]`: parameter of the first event.
        pub event_parms_0: i32 = unsigned(8),
        /// `eventParms[1]`: parameter of the second event.
        pub event_parms_1: i32 = unsigned(8),
        /// `clientNum`: the client this state belongs to.
        pub client_num: i32 = unsigned(8),
        /// `weapon`: current weapon.
        pub weapon: i32 = unsigned(5),
        /// `viewangles[2]`: view roll.
        pub viewangles_2: f32 = q3_float(),
        /// `grapplePoint[0]`: grapple hook point, x.
        pub grapple_point_0: f32 = q3_float(),
        /// `grapplePoint[1]`: grapple hook point, y.
        pub grapple_point_1: f32 = q3_float(),
        /// `grapplePoint[2]`: grapple hook point, z.
        pub grapple_point_2: f32 = q3_float(),
        /// `jumppad_ent`: jump pad entity touched.
        pub jumppad_ent: i32 = unsigned(GENTITYNUM_BITS),
        /// `loopSound`: looping sound index.
        pub loop_sound: i32 = unsigned(16),
        /// `stats[16]`: health, items, armor and other stats (shorts).
        pub stats: [i32; PS_ARRAY_LEN] = array(signed(16), PS_ARRAY_LEN as u8),
        /// `persistant[16]`: score, hits, rank and other persistent counters (shorts).
        pub persistant: [i32; PS_ARRAY_LEN] = array(signed(16), PS_ARRAY_LEN as u8),
        /// `ammo[16]`: ammunition per weapon (shorts).
        pub ammo: [i32; PS_ARRAY_LEN] = array(signed(16), PS_ARRAY_LEN as u8),
        /// `powerups[16]`: powerup expiry times (longs).
        pub powerups: [i32; PS_ARRAY_LEN] = array(signed(32), PS_ARRAY_LEN as u8),
    }
    native_model = crate::model::player_model();
}

/// The C names of [`EntityState`]'s fields, index for index.
pub const ENTITY_STATE_Q3_NAMES: [&str; 51] = [
    "pos.trTime",
    "pos.trBase[0]",
    "pos.trBase[1]",
    "pos.trDelta[0]",
    "pos.trDelta[1]",
    "pos.trBase[2]",
    "apos.trBase[1]",
    "pos.trDelta[2]",
    "apos.trBase[0]",
    "event",
    "angles2[1]",
    "eType",
    "torsoAnim",
    "eventParm",
    "legsAnim",
    "groundEntityNum",
    "pos.trType",
    "eFlags",
    "otherEntityNum",
    "weapon",
    "clientNum",
    "angles[1]",
    "pos.trDuration",
    "apos.trType",
    "origin[0]",
    "origin[1]",
    "origin[2]",
    "solid",
    "powerups",
    "modelindex",
    "otherEntityNum2",
    "loopSound",
    "generic1",
    "origin2[2]",
    "origin2[0]",
    "origin2[1]",
    "modelindex2",
    "angles[0]",
    "time",
    "apos.trTime",
    "apos.trDuration",
    "apos.trBase[2]",
    "apos.trDelta[0]",
    "apos.trDelta[1]",
    "apos.trDelta[2]",
    "time2",
    "angles[2]",
    "angles2[0]",
    "angles2[2]",
    "constantLight",
    "frame",
];

/// The C names of [`PlayerState`]'s fields, index for index (the four
/// arrays last).
pub const PLAYER_STATE_Q3_NAMES: [&str; 52] = [
    "commandTime",
    "origin[0]",
    "origin[1]",
    "bobCycle",
    "velocity[0]",
    "velocity[1]",
    "viewangles[1]",
    "viewangles[0]",
    "weaponTime",
    "origin[2]",
    "velocity[2]",
    "legsTimer",
    "pm_time",
    "eventSequence",
    "torsoAnim",
    "movementDir",
    "events[0]",
    "legsAnim",
    "events[1]",
    "pm_flags",
    "groundEntityNum",
    "weaponstate",
    "eFlags",
    "externalEvent",
    "gravity",
    "speed",
    "delta_angles[1]",
    "externalEventParm",
    "viewheight",
    "damageEvent",
    "damageYaw",
    "damagePitch",
    "damageCount",
    "generic1",
    "pm_type",
    "delta_angles[0]",
    "delta_angles[2]",
    "torsoTimer",
    "eventParms[0]",
    "eventParms[1]",
    "clientNum",
    "weapon",
    "viewangles[2]",
    "grapplePoint[0]",
    "grapplePoint[1]",
    "grapplePoint[2]",
    "jumppad_ent",
    "loopSound",
    "stats",
    "persistant",
    "ammo",
    "powerups",
];

#[cfg(test)]
mod tests {
    use super::*;
    use fields::{FieldKind, NetFields, ScalarKind};

    /// `pos.trBase[0]` → `pos_tr_base_0`: the naming rule of this module.
    fn snake(c_name: &str) -> String {
        let mut out = String::new();
        for ch in c_name.chars() {
            match ch {
                '.' | '[' => out.push('_'),
                ']' => {}
                c if c.is_ascii_uppercase() => {
                    out.push('_');
                    out.push(c.to_ascii_lowercase());
                }
                c => out.push(c),
            }
        }
        out
    }

    #[test]
    fn rust_names_follow_the_c_names() {
        for (field, c) in EntityState::TABLE.fields.iter().zip(ENTITY_STATE_Q3_NAMES) {
            assert_eq!(field.name, snake(c));
        }
        for (field, c) in PlayerState::TABLE.fields.iter().zip(PLAYER_STATE_Q3_NAMES) {
            assert_eq!(field.name, snake(c));
        }
        assert_eq!(EntityState::TABLE.fields.len(), ENTITY_STATE_Q3_NAMES.len());
        assert_eq!(PlayerState::TABLE.fields.len(), PLAYER_STATE_Q3_NAMES.len());
    }

    #[test]
    fn entity_table_has_protocol_68_shape() {
        let fields = EntityState::TABLE.fields;
        assert_eq!(fields.len(), 51);
        let floats = fields
            .iter()
            .filter(|f| f.kind == FieldKind::Scalar(ScalarKind::Q3Float))
            .count();
        assert_eq!(floats, 24);
        let width = |name: &str| EntityState::TABLE.field(name).unwrap().1.bits();
        assert_eq!(width("pos_tr_time"), 32);
        assert_eq!(width("event"), 10);
        assert_eq!(width("e_flags"), 19);
        assert_eq!(width("solid"), 24);
        assert_eq!(width("frame"), 16);
        assert_eq!(fields.last().unwrap().name, "frame");
    }

    #[test]
    fn player_table_has_protocol_68_shape() {
        let table = PlayerState::TABLE;
        assert_eq!(table.scalar_count(), 48);
        assert_eq!(table.fields.len(), 52);
        let kind = |name: &str| table.field(name).unwrap().1.kind;
        assert_eq!(kind("pm_time"), signed(16));
        assert_eq!(kind("weapon_time"), signed(16));
        assert_eq!(kind("viewheight"), signed(8));
        assert_eq!(kind("weapon"), unsigned(5));
        assert_eq!(kind("stats"), array(signed(16), 16));
        assert_eq!(kind("powerups"), array(signed(32), 16));
        let arrays: Vec<_> = table
            .fields
            .iter()
            .filter(|f| f.kind.is_array())
            .map(|f| f.name)
            .collect();
        assert_eq!(arrays, ["stats", "persistant", "ammo", "powerups"]);
    }
}
