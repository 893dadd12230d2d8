//! The lockstep wire messages: what a participant sends the host
//! ([`ToHost`]) and what the host sends every participant ([`ToPeer`]).
//!
//! Two kinds travel two ways ([`Delivery`]):
//!
//! * **Repeated** — the game itself: command sets up ([`ToHost::Sets`]),
//!   turns down ([`ToPeer::Turns`]). Each message holds *every* set or turn
//!   the receiver has not yet acknowledged, oldest first, and the sender
//!   sends it again every repeat interval until the receiver's own messages
//!   acknowledge them (Quake 3's way with user commands). It travels as
//!   netchan's most-recent-state payload: never resent by netchan, a newer
//!   one supersedes an older one in flight, so one lost datagram costs one
//!   repeat interval, not a round trip. Every repeated message also carries
//!   the acknowledgement of what the sender received: a cumulative "I have
//!   everything below turn N".
//! * **Ordered** — the rare control messages (start, out of sync, leave) on
//!   netchan's guaranteed-ordered class: exactly once, in order.
//!
//! Every message is postcard-encoded. Decoding checks every count and
//! length against the fixed bounds below before the message is used, and
//! rejects trailing bytes, so a malformed message is a [`WireError`], never
//! a panic or an unbounded allocation (netchan already caps a message at
//! its `max_message_size`).

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// A participant's number, `0..MAX_PARTICIPANTS`, given by the host.
pub type ParticipantId = u8;

/// Most participants of one session.
pub const MAX_PARTICIPANTS: usize = 64;
/// Most commands one participant sends for one turn.
pub const MAX_COMMANDS_PER_SET: usize = 32;
/// Most bytes of all commands one participant sends for one turn
/// (so a bundle of 64 participants stays under 16 KiB).
pub const MAX_SET_BYTES: usize = 240;
/// Most bytes of the opaque simulation setup in [`Start`].
pub const MAX_SETUP_LEN: usize = 4096;
/// Most participants named in one out-of-sync report or drop list.
pub const MAX_LISTED: usize = MAX_PARTICIPANTS;
/// Largest turn delay (turns between issuing and executing a command).
pub const MAX_DELAY: u32 = 16;
/// Most sets or turns in one repeated message. A sender with more
/// unacknowledged sends the oldest this many (the rest follow once those
/// are acknowledged).
pub const MAX_REPEATED: usize = 32;
/// Most bytes of turns a host puts in one repeated message (at least one
/// turn goes in whatever its size), so the message stays well inside
/// netchan's 16 KiB payload.
pub const MAX_REPEATED_BYTES: usize = 12 * 1024;

/// How a message travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Netchan's guaranteed-ordered class: exactly once, in order.
    Ordered,
    /// Netchan's most-recent-state class: the sender repeats it (with
    /// whatever is still unacknowledged) until acknowledged.
    Repeated,
}

/// A message to send, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The encoded message.
    pub bytes: Vec<u8>,
    /// How it travels.
    pub delivery: Delivery,
}

/// One participant's commands for one turn: opaque simulation commands, in
/// the order they were issued. Possibly empty: an empty set still tells the
/// host the participant has nothing for that turn.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CommandSet {
    /// The commands.
    pub commands: Vec<Vec<u8>>,
}

impl CommandSet {
    /// Bytes of all commands.
    pub fn bytes(&self) -> usize {
        self.commands.iter().map(Vec::len).sum()
    }

    fn validate(&self) -> Result<(), WireError> {
        if self.commands.len() > MAX_COMMANDS_PER_SET {
            return Err(WireError::TooMany {
                what: "commands in a set",
                count: self.commands.len(),
                max: MAX_COMMANDS_PER_SET,
            });
        }
        if self.bytes() > MAX_SET_BYTES {
            return Err(WireError::TooMany {
                what: "command bytes in a set",
                count: self.bytes(),
                max: MAX_SET_BYTES,
            });
        }
        Ok(())
    }
}

/// What a participant measured, reported with every command set: the
/// inputs of the host's speed control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SpeedReport {
    /// The participant's smoothed round-trip time to the host, ms.
    pub rtt_ms: u16,
    /// How long one simulation step (plus its frame) takes on its machine,
    /// ms (smoothed).
    pub frame_ms: u16,
    /// The interval between its turns, ms (smoothed): the turn length plus
    /// any wait for a turn that was due but had not arrived — what the
    /// links really allow, losses and resends included.
    pub period_ms: u16,
}

/// A sync checksum of the simulation state after a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncCheck {
    /// The turn after which the state was summed.
    pub turn: u32,
    /// The checksum.
    pub checksum: u64,
}

/// One participant's command set for one turn, as sent to the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetMessage {
    /// The turn the commands execute at.
    pub turn: u32,
    /// The commands (empty: the participant has nothing for that turn, which
    /// it must say all the same).
    pub set: CommandSet,
    /// Measurements for speed control, as of when the set was made.
    pub speed: SpeedReport,
    /// The state checksum of a sync turn, if one was executed since the
    /// previous set.
    pub sync: Option<SyncCheck>,
}

/// Participant → host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToHost {
    /// Repeated: every set the host has not acknowledged, for consecutive
    /// turns, oldest first (possibly none), and the acknowledgement of the
    /// host's turns.
    Sets {
        /// The participant holds every turn below this one (executed or
        /// waiting): the host stops repeating them.
        turns_below: u32,
        /// The unacknowledged sets, consecutive turns, oldest first.
        sets: Vec<SetMessage>,
    },
    /// Ordered: the participant leaves the session on purpose.
    Leave,
}

/// Session settings every participant must share, sent in [`Start`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    /// Turns between issuing a command and executing it (2 = Age of Empires'
    /// T+2; at least 2, so a command set has a whole turn to travel).
    pub delay: u32,
    /// A sync checksum every this many turns.
    pub sync_interval: u32,
    /// Simulated milliseconds of one simulation step.
    pub step_ms: u32,
    /// The first turn's wall-clock length, ms.
    pub initial_turn_ms: u32,
}

impl Settings {
    fn validate(&self) -> Result<(), WireError> {
        let bad = |reason: &str| Err(WireError::Invalid(reason.into()));
        if !(2..=MAX_DELAY).contains(&self.delay) {
            return bad("turn delay out of 2..=16");
        }
        if self.sync_interval == 0 {
            return bad("sync interval 0");
        }
        if !(1..=10_000).contains(&self.step_ms) || !(1..=10_000).contains(&self.initial_turn_ms) {
            return bad("step or turn length out of 1..=10000 ms");
        }
        Ok(())
    }
}

/// The host's start message: who you are, who plays, and the game.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Start {
    /// The receiver's participant number.
    pub you: ParticipantId,
    /// Every participant, in increasing order.
    pub participants: Vec<ParticipantId>,
    /// Seed of the simulation's randomness.
    pub seed: u64,
    /// Shared settings.
    pub settings: Settings,
    /// The simulation's own setup (opaque to lockstep).
    pub setup: Vec<u8>,
}

/// Everything that happens at one turn, as the host decided it: the same
/// bytes reach every participant, so every participant executes the same.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Turn {
    /// The turn number.
    pub turn: u32,
    /// Wall-clock length of this turn, ms (speed control).
    pub turn_ms: u32,
    /// Simulation steps this turn runs (speed control).
    pub steps: u32,
    /// Participants removed at the start of this turn, in increasing order.
    pub dropped: Vec<ParticipantId>,
    /// Every remaining participant's command set, in increasing participant order.
    pub sets: Vec<(ParticipantId, CommandSet)>,
}

impl Turn {
    fn validate(&self) -> Result<(), WireError> {
        if self.sets.len() > MAX_PARTICIPANTS || self.dropped.len() > MAX_LISTED {
            return Err(WireError::TooMany {
                what: "participants in a turn",
                count: self.sets.len().max(self.dropped.len()),
                max: MAX_PARTICIPANTS,
            });
        }
        if !(1..=60_000).contains(&self.turn_ms) || !(1..=1000).contains(&self.steps) {
            return Err(WireError::Invalid(format!(
                "turn {}: length {} ms or {} steps out of range",
                self.turn, self.turn_ms, self.steps
            )));
        }
        increasing(self.sets.iter().map(|(p, _)| *p), "turn sets")?;
        increasing(self.dropped.iter().copied(), "dropped participants")?;
        for (_, set) in &self.sets {
            set.validate()?;
        }
        Ok(())
    }
}

/// Host → participant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToPeer {
    /// Ordered: the session starts.
    Start(Start),
    /// Repeated: every turn (all participants' sets in) the participant has
    /// not acknowledged, consecutive, oldest first (possibly none), and the
    /// acknowledgement of its sets.
    Turns {
        /// The host holds every set of this participant for the turns below
        /// this one: it stops repeating them.
        sets_below: u32,
        /// The last turn of the session, once the host decided it: no turn
        /// after it will come.
        last_turn: Option<u32>,
        /// The unacknowledged turns, consecutive, oldest first.
        turns: Vec<Turn>,
    },
    /// Ordered: checksums of `turn` disagreed: the session stops.
    OutOfSync {
        /// The sync turn whose checksums disagreed.
        turn: u32,
        /// The participants whose checksum differs from the majority
        /// (everyone in a tie).
        participants: Vec<ParticipantId>,
    },
}

/// A malformed lockstep message.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    /// The bytes are not a message (postcard's reason).
    #[error("undecodable lockstep message: {0}")]
    Decode(String),
    /// Bytes after the message.
    #[error("{0} bytes after the lockstep message")]
    Trailing(usize),
    /// A count or length beyond its bound.
    #[error("{count} {what} exceed the limit of {max}")]
    TooMany {
        /// What was counted.
        what: &'static str,
        /// How many there were.
        count: usize,
        /// The bound.
        max: usize,
    },
    /// A value out of its range or lists out of order.
    #[error("invalid lockstep message: {0}")]
    Invalid(String),
}

fn increasing(ids: impl Iterator<Item = ParticipantId>, what: &str) -> Result<(), WireError> {
    let mut last: Option<ParticipantId> = None;
    for id in ids {
        if id as usize >= MAX_PARTICIPANTS || last.is_some_and(|l| l >= id) {
            return Err(WireError::Invalid(format!(
                "{what}: participant {id} out of order or range"
            )));
        }
        last = Some(id);
    }
    Ok(())
}

fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, WireError> {
    let (value, rest) =
        postcard::take_from_bytes::<T>(bytes).map_err(|e| WireError::Decode(e.to_string()))?;
    if !rest.is_empty() {
        return Err(WireError::Trailing(rest.len()));
    }
    Ok(value)
}

fn encode<T: Serialize>(value: &T, out: &mut Vec<u8>) {
    out.clear();
    // Serializing plain data into a growable buffer cannot fail.
    if let Ok(bytes) = postcard::to_extend(value, std::mem::take(out)) {
        *out = bytes;
    }
}

/// Checks that `turns` are consecutive and at most [`MAX_REPEATED`].
fn consecutive(
    turns: impl ExactSizeIterator<Item = u32>,
    what: &'static str,
) -> Result<(), WireError> {
    if turns.len() > MAX_REPEATED {
        return Err(WireError::TooMany {
            what,
            count: turns.len(),
            max: MAX_REPEATED,
        });
    }
    let mut last: Option<u32> = None;
    for turn in turns {
        if last.is_some_and(|l| l.checked_add(1) != Some(turn)) {
            return Err(WireError::Invalid(format!(
                "{what}: turn {turn} does not follow"
            )));
        }
        last = Some(turn);
    }
    Ok(())
}

impl ToHost {
    /// Decodes and checks a participant's message.
    pub fn decode(bytes: &[u8]) -> Result<ToHost, WireError> {
        let message: ToHost = decode(bytes)?;
        if let ToHost::Sets { sets, .. } = &message {
            consecutive(sets.iter().map(|s| s.turn), "sets in a message")?;
            for entry in sets {
                entry.set.validate()?;
            }
        }
        Ok(message)
    }

    /// Encodes the message into `out` (cleared first).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        encode(self, out);
    }

    /// The encoded message.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }
}

impl ToPeer {
    /// Decodes and checks a host message.
    pub fn decode(bytes: &[u8]) -> Result<ToPeer, WireError> {
        let message: ToPeer = decode(bytes)?;
        match &message {
            ToPeer::Start(start) => {
                start.settings.validate()?;
                if start.setup.len() > MAX_SETUP_LEN {
                    return Err(WireError::TooMany {
                        what: "setup bytes",
                        count: start.setup.len(),
                        max: MAX_SETUP_LEN,
                    });
                }
                if start.participants.len() > MAX_PARTICIPANTS {
                    return Err(WireError::TooMany {
                        what: "participants",
                        count: start.participants.len(),
                        max: MAX_PARTICIPANTS,
                    });
                }
                increasing(start.participants.iter().copied(), "participants")?;
                if !start.participants.contains(&start.you) {
                    return Err(WireError::Invalid(format!(
                        "participant {} is not in the session",
                        start.you
                    )));
                }
            }
            ToPeer::Turns { turns, .. } => {
                consecutive(turns.iter().map(|t| t.turn), "turns in a message")?;
                for turn in turns {
                    turn.validate()?;
                }
            }
            ToPeer::OutOfSync { participants, .. } => {
                increasing(participants.iter().copied(), "out-of-sync participants")?
            }
        }
        Ok(message)
    }

    /// Encodes the message into `out` (cleared first).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        encode(self, out);
    }

    /// The encoded message.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }
}

/// Serializes the turns of a [`ToPeer::Turns`] without owning them.
struct TurnSeq<I>(I);

impl<'a, I: Iterator<Item = &'a Turn> + Clone> Serialize for TurnSeq<I> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.clone())
    }
}

/// [`ToPeer::Turns`] as the host encodes it, borrowing the turns it keeps.
struct TurnsMessage<I> {
    sets_below: u32,
    last_turn: Option<u32>,
    turns: TurnSeq<I>,
}

impl<'a, I: Iterator<Item = &'a Turn> + Clone> Serialize for TurnsMessage<I> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStructVariant;
        // Variant 1 of `ToPeer`: the same bytes as `ToPeer::Turns { .. }`.
        let mut v = serializer.serialize_struct_variant("ToPeer", 1, "Turns", 3)?;
        v.serialize_field("sets_below", &self.sets_below)?;
        v.serialize_field("last_turn", &self.last_turn)?;
        v.serialize_field("turns", &self.turns)?;
        v.end()
    }
}

/// Encodes `ToPeer::Turns { sets_below, last_turn, turns }` from borrowed
/// turns (the host keeps its unacknowledged turns and repeats them often;
/// this spares a copy per message).
pub fn encode_turns_message<'a>(
    sets_below: u32,
    last_turn: Option<u32>,
    turns: impl ExactSizeIterator<Item = &'a Turn> + Clone,
) -> Vec<u8> {
    let mut out = Vec::new();
    encode(
        &TurnsMessage {
            sets_below,
            last_turn,
            turns: TurnSeq(turns),
        },
        &mut out,
    );
    out
}

/// Decodes a turn on its own (recordings store turns in this encoding).
pub fn decode_turn(bytes: &[u8]) -> Result<Turn, WireError> {
    let turn: Turn = decode(bytes)?;
    turn.validate()?;
    Ok(turn)
}

/// Encodes a turn on its own.
pub fn encode_turn(turn: &Turn) -> Vec<u8> {
    let mut out = Vec::new();
    encode(turn, &mut out);
    out
}

/// Decodes any lockstep message — either direction — the way a receiver
/// would (the fuzz target and its seed replay test call this).
pub fn decode_any(bytes: &[u8]) -> Result<(), WireError> {
    let to_host = ToHost::decode(bytes).map(drop);
    let to_peer = ToPeer::decode(bytes).map(drop);
    let turn = decode_turn(bytes).map(drop);
    to_host.or(to_peer).or(turn)
}
