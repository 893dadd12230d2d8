//! The arena's wire protocol: the two `net_struct!` tables the snapshot
//! layer sends, the player command carried as guaranteed-quickest data, and
//! the guaranteed-ordered messages in both directions.
//!
//! Every ordered message starts with a per-connection sequence number
//! (`u32`, little endian) chosen by the sender, so the receiver can prove
//! that the guaranteed channel delivered everything, once and in order.
//! Decoders never panic: short, long or nonsensical input is a
//! [`ProtocolError`].

use std::fmt;

use fields::schema::combined_fingerprint;
use fields::{boolean, net_struct, q3_float, signed, unsigned, Codec, NetFields};

/// Entity kinds (`EntityState::kind`).
pub mod kind {
    /// A player.
    pub const PLAYER: u8 = 1;
    /// A projectile in flight.
    pub const PROJECTILE: u8 = 2;
    /// A pickup item.
    pub const ITEM: u8 = 3;
}

/// Item kinds (`EntityState::item`).
pub mod item {
    /// Restores health.
    pub const HEALTH: u8 = 1;
    /// Gives armor.
    pub const ARMOR: u8 = 2;
}

/// Player animations (`EntityState::anim`).
pub mod anim {
    /// Standing still.
    pub const IDLE: u8 = 0;
    /// Running on the ground.
    pub const RUN: u8 = 1;
    /// In the air.
    pub const AIR: u8 = 2;
    /// Dead, waiting to respawn.
    pub const DEAD: u8 = 3;
}

/// Entity events (`EntityState::event`), Quake 3's `EV_*`: the newest one an
/// entity raised, with `event_seq` bumped so a repeat is visible.
pub mod event {
    /// Nothing yet.
    pub const NONE: u8 = 0;
    /// Fired a projectile.
    pub const FIRE: u8 = 1;
    /// Jumped.
    pub const JUMP: u8 = 2;
    /// Took damage.
    pub const PAIN: u8 = 3;
    /// Died.
    pub const DEATH: u8 = 4;
    /// Respawned.
    pub const RESPAWN: u8 = 5;
    /// Picked an item up.
    pub const PICKUP: u8 = 6;
    /// A projectile hit something (on the projectile's last frame).
    pub const IMPACT: u8 = 7;
}

net_struct! {
    /// What every client may see of an entity: players, projectiles, items.
    ///
    /// Projectiles use Quake 3's trajectory encoding: base position,
    /// velocity and launch time never change in flight, so a flying
    /// projectile costs nothing after the snapshot that announced it.
    pub struct EntityState {
        /// One of [`kind`].
        pub kind: u8 = unsigned(2),
        /// Position (projectiles: position at `time`). Whole units.
        pub x: f32 = q3_float(),
        /// Position.
        pub y: f32 = q3_float(),
        /// Position (feet).
        pub z: f32 = q3_float(),
        /// Velocity in units/s (players: for extrapolation).
        pub vx: f32 = q3_float(),
        /// Velocity.
        pub vy: f32 = q3_float(),
        /// Velocity.
        pub vz: f32 = q3_float(),
        /// Projectiles: server time (ms) of the trajectory base.
        pub time: u32 = unsigned(32),
        /// Facing, in 256ths of a turn.
        pub yaw: u8 = unsigned(8),
        /// Players: their client number; projectiles: who fired.
        pub owner: u8 = unsigned(7),
        /// Items: one of [`item`].
        pub item: u8 = unsigned(2),
        /// Items: available; players: alive.
        pub active: bool = boolean(),
        /// Players: one of [`anim`].
        pub anim: u8 = unsigned(2),
        /// The newest event, one of [`event`].
        pub event: u8 = unsigned(3),
        /// Bumped with every event.
        pub event_seq: u8 = unsigned(3),
        /// Players: respawn counter (a change means "teleported, do not interpolate").
        pub spawn: u8 = unsigned(8),
    }
    native_model = crate::model::entity_model();
}

net_struct! {
    /// What a client sees of itself: exact movement state for prediction,
    /// and its status.
    pub struct PlayerState {
        /// Client number (also its player entity number).
        pub client: u8 = unsigned(7),
        /// The newest command applied (0: none yet).
        pub command: u32 = unsigned(32),
        /// Position (whole units, feet).
        pub x: f32 = q3_float(),
        /// Position.
        pub y: f32 = q3_float(),
        /// Position.
        pub z: f32 = q3_float(),
        /// Velocity (whole units/s).
        pub vx: f32 = q3_float(),
        /// Velocity.
        pub vy: f32 = q3_float(),
        /// Velocity.
        pub vz: f32 = q3_float(),
        /// View yaw in 65536ths of a turn.
        pub yaw: u16 = unsigned(16),
        /// View pitch in 65536ths of a turn.
        pub pitch: i16 = signed(16),
        /// Standing on the floor.
        pub on_ground: bool = boolean(),
        /// The jump button was held in the last command (no auto-bunny-hop).
        pub jump_held: bool = boolean(),
        /// Alive (dead players do not move).
        pub alive: bool = boolean(),
        /// Health.
        pub health: i16 = signed(10),
        /// Armor.
        pub armor: u8 = unsigned(8),
        /// Frags.
        pub score: i16 = signed(12),
        /// Deaths.
        pub deaths: u16 = unsigned(12),
        /// Respawn counter, as in the player's entity.
        pub spawn: u8 = unsigned(8),
        /// Milliseconds until the weapon may fire again.
        pub reload_ms: u16 = unsigned(11),
        /// A spectator: sees everything, plays nothing (the demo's view).
        pub spectator: bool = boolean(),
    }
    native_model = crate::model::player_model();
}

/// The handshake's schema fingerprint: both tables, the codec and (for the
/// native codec) the trained models, so a client that would encode or
/// decode differently is rejected at connect.
pub fn schema_fingerprint(codec: Codec) -> u64 {
    let entity = EntityState::TABLE.schema();
    let player = PlayerState::TABLE.schema();
    let tables = combined_fingerprint(&[&entity, &player]);
    // FNV-style mix of the codec and the models into the table fingerprint.
    let mut hash = tables ^ 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &byte in bytes {
            hash = (hash ^ byte as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    eat(codec.name().as_bytes());
    if codec == Codec::Native {
        for model in [
            EntityState::static_native_model(),
            PlayerState::static_native_model(),
        ] {
            eat(&model.map_or(0, |m| m.id()).to_le_bytes());
        }
    }
    hash
}

/// Version of this protocol, checked in the handshake.
pub const PROTOCOL_VERSION: u32 = 1;

/// Longest chat line or name, in bytes.
pub const MAX_TEXT: usize = 120;

/// A decoding error: what was wrong with which message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    /// The message is shorter than its kind requires.
    Truncated {
        /// Bytes needed.
        needed: usize,
        /// Bytes present.
        len: usize,
    },
    /// A command has the wrong length.
    BadLength {
        /// Bytes expected.
        expected: usize,
        /// Bytes present.
        len: usize,
    },
    /// An unknown message tag.
    UnknownTag(u8),
    /// A text field is not UTF-8 or too long.
    BadText,
    /// A field holds a value out of its range.
    OutOfRange(&'static str),
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::Truncated { needed, len } => {
                write!(f, "message truncated: {len} bytes, need {needed}")
            }
            ProtocolError::BadLength { expected, len } => {
                write!(f, "command of {len} bytes, expected {expected}")
            }
            ProtocolError::UnknownTag(tag) => write!(f, "unknown message tag {tag}"),
            ProtocolError::BadText => {
                write!(f, "text is not UTF-8 or longer than {MAX_TEXT} bytes")
            }
            ProtocolError::OutOfRange(field) => write!(f, "field `{field}` out of range"),
        }
    }
}

impl std::error::Error for ProtocolError {}

/// Command buttons.
pub mod buttons {
    /// Fire the weapon.
    pub const FIRE: u8 = 1;
    /// Jump.
    pub const JUMP: u8 = 2;
}

/// Longest duration one command may cover, in ms; the server clamps to it.
pub const MAX_COMMAND_MSEC: u8 = 50;

/// One client frame of input (Quake 3's `usercmd_t`), sent as
/// guaranteed-quickest data: repeated until acknowledged, applied once and
/// in order by the server, and replayed by the client's prediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Command {
    /// Command number, from 1, consecutive.
    pub seq: u32,
    /// Milliseconds of movement it covers.
    pub msec: u8,
    /// [`buttons`] bits.
    pub buttons: u8,
    /// Forward intent, −127..=127.
    pub forward: i8,
    /// Strafe-right intent, −127..=127.
    pub right: i8,
    /// View yaw in 65536ths of a turn.
    pub yaw: u16,
    /// View pitch in 65536ths of a turn (−16384..=16384).
    pub pitch: i16,
    /// The newest snapshot the client holds (Quake 3's message acknowledge).
    pub ack: Option<u32>,
}

impl Command {
    /// Encoded size.
    pub const LEN: usize = 16;

    /// Encodes the command.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        out[0..4].copy_from_slice(&self.seq.to_le_bytes());
        out[4] = self.msec;
        out[5] = self.buttons;
        out[6] = self.forward as u8;
        out[7] = self.right as u8;
        out[8..10].copy_from_slice(&self.yaw.to_le_bytes());
        out[10..12].copy_from_slice(&self.pitch.to_le_bytes());
        out[12..16].copy_from_slice(&self.ack.unwrap_or(u32::MAX).to_le_bytes());
        out
    }

    /// Decodes a command, rejecting wrong lengths and impossible values.
    pub fn decode(bytes: &[u8]) -> Result<Command, ProtocolError> {
        let bytes: &[u8; Self::LEN] = bytes.try_into().map_err(|_| ProtocolError::BadLength {
            expected: Self::LEN,
            len: bytes.len(),
        })?;
        let word =
            |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let command = Command {
            seq: word(0),
            msec: bytes[4],
            buttons: bytes[5],
            forward: bytes[6] as i8,
            right: bytes[7] as i8,
            yaw: u16::from_le_bytes([bytes[8], bytes[9]]),
            pitch: i16::from_le_bytes([bytes[10], bytes[11]]),
            ack: Some(word(12)).filter(|&a| a != u32::MAX),
        };
        if command.seq == 0 {
            return Err(ProtocolError::OutOfRange("seq"));
        }
        if command.buttons & !(buttons::FIRE | buttons::JUMP) != 0 {
            return Err(ProtocolError::OutOfRange("buttons"));
        }
        if command.forward == i8::MIN || command.right == i8::MIN {
            return Err(ProtocolError::OutOfRange("move"));
        }
        if !(-16384..=16384).contains(&command.pitch) {
            return Err(ProtocolError::OutOfRange("pitch"));
        }
        Ok(command)
    }
}

/// Why a player left, in a [`ServerMessage::Leave`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaveReason {
    /// Disconnected cleanly.
    Disconnected,
    /// Stopped answering and was timed out.
    TimedOut,
}

/// A guaranteed-ordered message from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerMessage<'a> {
    /// The snapshot layer's gamestate message.
    Gamestate(&'a [u8]),
    /// The snapshot layer's configstring-change message.
    Configstring(&'a [u8]),
    /// A chat line.
    Chat {
        /// Who said it.
        from: u8,
        /// What.
        text: &'a str,
    },
    /// Kill feed: `killer` fragged `victim` (equal for a suicide).
    Kill {
        /// The killer.
        killer: u8,
        /// The victim.
        victim: u8,
    },
    /// A player joined.
    Join {
        /// Their client number.
        client: u8,
        /// Their name.
        name: &'a str,
    },
    /// A player left.
    Leave {
        /// Their client number.
        client: u8,
        /// Why.
        reason: LeaveReason,
    },
}

const TAG_GAMESTATE: u8 = 1;
const TAG_CONFIGSTRING: u8 = 2;
const TAG_CHAT: u8 = 3;
const TAG_KILL: u8 = 4;
const TAG_JOIN: u8 = 5;
const TAG_LEAVE: u8 = 6;

const TAG_HELLO: u8 = 16;
const TAG_SAY: u8 = 17;
const TAG_FULL_UPDATE: u8 = 18;
const TAG_BEGIN: u8 = 19;

/// Splits `[seq u32][tag u8][body]`.
fn split(bytes: &[u8]) -> Result<(u32, u8, &[u8]), ProtocolError> {
    if bytes.len() < 5 {
        return Err(ProtocolError::Truncated {
            needed: 5,
            len: bytes.len(),
        });
    }
    let seq = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    Ok((seq, bytes[4], &bytes[5..]))
}

fn text(bytes: &[u8]) -> Result<&str, ProtocolError> {
    if bytes.len() > MAX_TEXT {
        return Err(ProtocolError::BadText);
    }
    std::str::from_utf8(bytes).map_err(|_| ProtocolError::BadText)
}

fn need(body: &[u8], needed: usize) -> Result<(), ProtocolError> {
    if body.len() < needed {
        return Err(ProtocolError::Truncated {
            needed: needed + 5,
            len: body.len() + 5,
        });
    }
    Ok(())
}

/// Cuts `text` to at most [`MAX_TEXT`] bytes on a character boundary.
pub fn clip_text(text: &str) -> &str {
    if text.len() <= MAX_TEXT {
        return text;
    }
    let mut end = MAX_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl<'a> ServerMessage<'a> {
    /// Encodes the message with sequence number `seq` into `out` (cleared first).
    pub fn encode(&self, seq: u32, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&seq.to_le_bytes());
        match *self {
            ServerMessage::Gamestate(bytes) => {
                out.push(TAG_GAMESTATE);
                out.extend_from_slice(bytes);
            }
            ServerMessage::Configstring(bytes) => {
                out.push(TAG_CONFIGSTRING);
                out.extend_from_slice(bytes);
            }
            ServerMessage::Chat { from, text } => {
                out.extend_from_slice(&[TAG_CHAT, from]);
                out.extend_from_slice(clip_text(text).as_bytes());
            }
            ServerMessage::Kill { killer, victim } => {
                out.extend_from_slice(&[TAG_KILL, killer, victim]);
            }
            ServerMessage::Join { client, name } => {
                out.extend_from_slice(&[TAG_JOIN, client]);
                out.extend_from_slice(clip_text(name).as_bytes());
            }
            ServerMessage::Leave { client, reason } => {
                let reason = match reason {
                    LeaveReason::Disconnected => 0,
                    LeaveReason::TimedOut => 1,
                };
                out.extend_from_slice(&[TAG_LEAVE, client, reason]);
            }
        }
    }

    /// Decodes `[seq][message]`.
    pub fn decode(bytes: &'a [u8]) -> Result<(u32, ServerMessage<'a>), ProtocolError> {
        let (seq, tag, body) = split(bytes)?;
        let message = match tag {
            TAG_GAMESTATE => ServerMessage::Gamestate(body),
            TAG_CONFIGSTRING => ServerMessage::Configstring(body),
            TAG_CHAT => {
                need(body, 1)?;
                ServerMessage::Chat {
                    from: body[0],
                    text: text(&body[1..])?,
                }
            }
            TAG_KILL => {
                need(body, 2)?;
                ServerMessage::Kill {
                    killer: body[0],
                    victim: body[1],
                }
            }
            TAG_JOIN => {
                need(body, 1)?;
                ServerMessage::Join {
                    client: body[0],
                    name: text(&body[1..])?,
                }
            }
            TAG_LEAVE => {
                need(body, 2)?;
                let reason = match body[1] {
                    0 => LeaveReason::Disconnected,
                    1 => LeaveReason::TimedOut,
                    _ => return Err(ProtocolError::OutOfRange("reason")),
                };
                ServerMessage::Leave {
                    client: body[0],
                    reason,
                }
            }
            other => return Err(ProtocolError::UnknownTag(other)),
        };
        Ok((seq, message))
    }
}

/// A guaranteed-ordered message from a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientMessage<'a> {
    /// Sent first: who the client is and the snapshot stream it wants
    /// (Quake 3's userinfo `name`, `snaps` and `rate`).
    Hello {
        /// Snapshots per second wanted.
        snaps: u16,
        /// Bytes per second the client can receive.
        rate: u32,
        /// Player name.
        name: &'a str,
    },
    /// The client holds the gamestate: start its snapshots and spawn its
    /// player (Quake 3's `begin`).
    Begin,
    /// A chat line to broadcast.
    Say {
        /// What.
        text: &'a str,
    },
    /// The client's snapshot state is unusable (sync checksum mismatch or
    /// missing base): send a full update.
    FullUpdate,
}

impl<'a> ClientMessage<'a> {
    /// Encodes the message with sequence number `seq` into `out` (cleared first).
    pub fn encode(&self, seq: u32, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&seq.to_le_bytes());
        match *self {
            ClientMessage::Hello { snaps, rate, name } => {
                out.push(TAG_HELLO);
                out.extend_from_slice(&snaps.to_le_bytes());
                out.extend_from_slice(&rate.to_le_bytes());
                out.extend_from_slice(clip_text(name).as_bytes());
            }
            ClientMessage::Say { text } => {
                out.push(TAG_SAY);
                out.extend_from_slice(clip_text(text).as_bytes());
            }
            ClientMessage::FullUpdate => out.push(TAG_FULL_UPDATE),
            ClientMessage::Begin => out.push(TAG_BEGIN),
        }
    }

    /// Decodes `[seq][message]`.
    pub fn decode(bytes: &'a [u8]) -> Result<(u32, ClientMessage<'a>), ProtocolError> {
        let (seq, tag, body) = split(bytes)?;
        let message = match tag {
            TAG_HELLO => {
                need(body, 6)?;
                ClientMessage::Hello {
                    snaps: u16::from_le_bytes([body[0], body[1]]),
                    rate: u32::from_le_bytes([body[2], body[3], body[4], body[5]]),
                    name: text(&body[6..])?,
                }
            }
            TAG_SAY => ClientMessage::Say { text: text(body)? },
            TAG_FULL_UPDATE => ClientMessage::FullUpdate,
            TAG_BEGIN => ClientMessage::Begin,
            other => return Err(ProtocolError::UnknownTag(other)),
        };
        Ok((seq, message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip_and_garbage_is_rejected() {
        let command = Command {
            seq: 77,
            msec: 16,
            buttons: buttons::FIRE | buttons::JUMP,
            forward: -127,
            right: 64,
            yaw: 40_000,
            pitch: -1200,
            ack: Some(12),
        };
        assert_eq!(Command::decode(&command.encode()), Ok(command));
        let no_ack = Command {
            ack: None,
            ..command
        };
        assert_eq!(Command::decode(&no_ack.encode()), Ok(no_ack));
        assert!(matches!(
            Command::decode(&[0; 15]),
            Err(ProtocolError::BadLength { .. })
        ));
        let mut bad = command.encode();
        bad[5] = 0xff;
        assert_eq!(
            Command::decode(&bad),
            Err(ProtocolError::OutOfRange("buttons"))
        );
        let mut bad = command.encode();
        bad[0..4].copy_from_slice(&0u32.to_le_bytes());
        assert!(Command::decode(&bad).is_err());
    }

    #[test]
    fn ordered_messages_round_trip() {
        let mut out = Vec::new();
        let messages = [
            ServerMessage::Gamestate(&[1, 2, 3]),
            ServerMessage::Configstring(&[]),
            ServerMessage::Chat {
                from: 3,
                text: "gg",
            },
            ServerMessage::Kill {
                killer: 1,
                victim: 2,
            },
            ServerMessage::Join {
                client: 4,
                name: "bot4",
            },
            ServerMessage::Leave {
                client: 4,
                reason: LeaveReason::TimedOut,
            },
        ];
        for (seq, message) in messages.iter().enumerate() {
            message.encode(seq as u32, &mut out);
            assert_eq!(ServerMessage::decode(&out), Ok((seq as u32, *message)));
        }
        let messages = [
            ClientMessage::Hello {
                snaps: 20,
                rate: 25_000,
                name: "bot1",
            },
            ClientMessage::Say { text: "hi" },
            ClientMessage::FullUpdate,
            ClientMessage::Begin,
        ];
        for (seq, message) in messages.iter().enumerate() {
            message.encode(seq as u32, &mut out);
            assert_eq!(ClientMessage::decode(&out), Ok((seq as u32, *message)));
        }
    }

    #[test]
    fn malformed_ordered_messages_are_errors() {
        assert!(ServerMessage::decode(&[]).is_err());
        assert_eq!(
            ServerMessage::decode(&[0, 0, 0, 0, 99]),
            Err(ProtocolError::UnknownTag(99))
        );
        assert!(ServerMessage::decode(&[0, 0, 0, 0, TAG_KILL, 1]).is_err());
        assert_eq!(
            ServerMessage::decode(&[0, 0, 0, 0, TAG_CHAT, 1, 0xff, 0xfe]),
            Err(ProtocolError::BadText)
        );
        assert!(ClientMessage::decode(&[0, 0, 0, 0, TAG_HELLO, 1]).is_err());
        let long = vec![b'a'; MAX_TEXT + 1];
        let mut bytes = vec![0, 0, 0, 0, TAG_SAY];
        bytes.extend_from_slice(&long);
        assert_eq!(ClientMessage::decode(&bytes), Err(ProtocolError::BadText));
    }

    #[test]
    fn text_is_clipped_on_a_character_boundary() {
        let text = "é".repeat(MAX_TEXT);
        let clipped = clip_text(&text);
        assert!(clipped.len() <= MAX_TEXT);
        assert!(clipped.chars().all(|c| c == 'é'));
    }

    #[test]
    fn the_fingerprint_covers_the_codec() {
        assert_ne!(
            schema_fingerprint(Codec::Q3),
            schema_fingerprint(Codec::Native)
        );
        assert_eq!(
            schema_fingerprint(Codec::Native),
            schema_fingerprint(Codec::Native)
        );
    }
}
