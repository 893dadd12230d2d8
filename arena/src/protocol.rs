//! The arena's own protocol on top of `session`: the three `net_struct!`
//! tables (entities, player state, the command) and the game's reliable
//! commands in both directions (chat, kill feed, join/leave notices).
//! Connecting, gamestates, snapshots and command packets are the session's.
//!
//! Every reliable game command starts with a per-connection sequence number
//! (`u32`, little endian) chosen by the sender, so the receiver can prove
//! that the guaranteed channel delivered everything, once and in order.
//! Decoders never panic: short, long or nonsensical input is a
//! [`ProtocolError`].

use std::fmt;
use std::sync::Arc;

use fields::{boolean, net_struct, q3_float, signed, unsigned, Codec};

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

/// How the arena frames snapshot messages under `codec`: the native
/// codec's range-coded ([`session::CompactRange`], the smallest the engine
/// sends), Quake 3's as a bit stream ([`session::Compact`], Quake 3's own
/// coding is what the q3 codec stands for).
pub fn framing(codec: Codec) -> Arc<dyn session::Framing> {
    match codec {
        Codec::Native => Arc::new(session::CompactRange),
        _ => Arc::new(session::Compact),
    }
}

/// The handshake's schema fingerprint: the three tables, the codec, the
/// snapshot framing ([`framing`]) and (for the native codec) the trained
/// models, so a client that would encode or decode differently is
/// rejected at connect.
///
/// The models do not adapt to the stream (`session::Models::with_adaptation`):
/// on the arena's matches adapting saves nothing measurable (delta-size's
/// `native_adapting` column equals `native`; the models were trained on
/// such matches), and a recording's stream would need it too.
pub fn schema_fingerprint(codec: Codec) -> u64 {
    session::schema_fingerprint_with::<EntityState, PlayerState, Command>(
        codec,
        &session::Models::of_types(),
        &*framing(codec),
    )
}

/// Version of the arena's game protocol, checked in the handshake.
/// 3: the command has a third button, the rail.
/// 4: native snapshots are range-coded ([`framing`]).
pub const PROTOCOL_VERSION: u32 = 4;

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
    /// Fire the rocket launcher (a projectile).
    pub const FIRE: u8 = 1;
    /// Jump.
    pub const JUMP: u8 = 2;
    /// Fire the rail (hitscan: an instant trace, judged against what the
    /// shooter saw when lag compensation is on).
    pub const RAIL: u8 = 4;
}

/// Longest duration one command may cover, in ms; the server clamps to it.
pub const MAX_COMMAND_MSEC: u8 = 50;

net_struct! {
    /// One client frame of input (Quake 3's `usercmd_t`): sent by the
    /// session in command packets (several per datagram, delta-coded,
    /// repeated until delivered), applied once and in order by the server,
    /// and replayed by the client's prediction. Its number is the session's.
    pub struct Command {
        /// Milliseconds of movement it covers (the server clamps to
        /// [`MAX_COMMAND_MSEC`]).
        pub msec: u8 = unsigned(8),
        /// [`buttons`] bits.
        pub buttons: u8 = unsigned(3),
        /// Forward intent, −127..=127.
        pub forward: i8 = signed(8),
        /// Strafe-right intent, −127..=127.
        pub right: i8 = signed(8),
        /// View yaw in 65536ths of a turn.
        pub yaw: u16 = unsigned(16),
        /// View pitch in 65536ths of a turn (−16384..=16384).
        pub pitch: i16 = signed(16),
    }
}

impl Command {
    /// The command with every value in its range, as the server applies
    /// it: a client cannot move faster, look further or hold more time
    /// than the rules allow by sending out-of-range values.
    pub fn sanitized(&self) -> Command {
        Command {
            msec: self.msec.min(MAX_COMMAND_MSEC),
            buttons: self.buttons & (buttons::FIRE | buttons::JUMP | buttons::RAIL),
            forward: self.forward.max(-127),
            right: self.right.max(-127),
            yaw: self.yaw,
            pitch: self.pitch.clamp(-16384, 16384),
        }
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

/// A reliable game command from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerMessage<'a> {
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

const TAG_CHAT: u8 = 3;
const TAG_KILL: u8 = 4;
const TAG_JOIN: u8 = 5;
const TAG_LEAVE: u8 = 6;

const TAG_SAY: u8 = 17;

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
    session::wire::clip(text, MAX_TEXT)
}

impl<'a> ServerMessage<'a> {
    /// Encodes the message with sequence number `seq` into `out` (cleared first).
    pub fn encode(&self, seq: u32, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&seq.to_le_bytes());
        match *self {
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

/// A reliable game command from a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientMessage<'a> {
    /// A chat line to broadcast.
    Say {
        /// What.
        text: &'a str,
    },
}

impl<'a> ClientMessage<'a> {
    /// Encodes the message with sequence number `seq` into `out` (cleared first).
    pub fn encode(&self, seq: u32, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&seq.to_le_bytes());
        match *self {
            ClientMessage::Say { text } => {
                out.push(TAG_SAY);
                out.extend_from_slice(clip_text(text).as_bytes());
            }
        }
    }

    /// Decodes `[seq][message]`.
    pub fn decode(bytes: &'a [u8]) -> Result<(u32, ClientMessage<'a>), ProtocolError> {
        let (seq, tag, body) = split(bytes)?;
        let message = match tag {
            TAG_SAY => ClientMessage::Say { text: text(body)? },
            other => return Err(ProtocolError::UnknownTag(other)),
        };
        Ok((seq, message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_sanitized() {
        let wild = Command {
            msec: 255,
            buttons: 3,
            forward: i8::MIN,
            right: 64,
            yaw: 40_000,
            pitch: i16::MIN,
        };
        let clean = wild.sanitized();
        assert_eq!(clean.msec, MAX_COMMAND_MSEC);
        assert_eq!(clean.forward, -127);
        assert_eq!(clean.right, 64);
        assert_eq!(clean.pitch, -16384);
        assert_eq!(clean.sanitized(), clean);
    }

    #[test]
    fn ordered_messages_round_trip() {
        let mut out = Vec::new();
        let messages = [
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
        let say = ClientMessage::Say { text: "hi" };
        say.encode(7, &mut out);
        assert_eq!(ClientMessage::decode(&out), Ok((7, say)));
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
        assert_eq!(
            ClientMessage::decode(&[0, 0, 0, 0, 16, 1]),
            Err(ProtocolError::UnknownTag(16))
        );
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
