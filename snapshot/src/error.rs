//! Errors of configuration, of the server's API, and of decoding on the client.

use fields::BitError;
use thiserror::Error;

use crate::message::MessageKind;
use crate::server::ClientId;

/// A [`ServerConfig`](crate::ServerConfig) or
/// [`ClientSettings`](crate::ClientSettings) that cannot work.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// `max_entities` is zero.
    #[error("max_entities must be at least 1")]
    NoEntities,
    /// Adapting models were asked for a type with no native model to start
    /// from (give one with [`Models::new`](crate::Models::new)).
    #[error("the {what} type {type_name} has no native model to adapt")]
    NothingToAdapt {
        /// "entity" or "player-state".
        what: &'static str,
        /// The type's name.
        type_name: String,
    },
    /// `max_entities` exceeds [`MAX_ENTITY_LIMIT`](crate::config::MAX_ENTITY_LIMIT).
    #[error(
        "max_entities {limit} exceeds the protocol bound of {}",
        crate::config::MAX_ENTITY_LIMIT
    )]
    EntityLimitTooLarge {
        /// The configured value.
        limit: u32,
    },
    /// The codec cannot number every entity.
    #[error(
        "the {codec} codec can only send entity numbers below {codec_limit}, \
         but max_entities is {limit}: set max_entities to at most {codec_limit} \
         or use the native codec"
    )]
    EntityLimitExceedsCodec {
        /// Codec name.
        codec: &'static str,
        /// Numbers the codec can send (exclusive).
        codec_limit: u32,
        /// The configured value.
        limit: u32,
    },
    /// `max_snapshot_bytes` is below [`MIN_SNAPSHOT_BYTES`](crate::config::MIN_SNAPSHOT_BYTES).
    #[error(
        "max_snapshot_bytes {bytes} is below the minimum of {}",
        crate::config::MIN_SNAPSHOT_BYTES
    )]
    SnapshotBytesTooSmall {
        /// The configured value.
        bytes: u32,
    },
    /// A byte rate with `burst_bytes` below
    /// [`MIN_SNAPSHOT_BYTES`](crate::config::MIN_SNAPSHOT_BYTES): the bucket
    /// could never hold a snapshot, so the client would wait forever.
    #[error(
        "burst_bytes {bytes} is below the minimum of {} for a client with a byte rate",
        crate::config::MIN_SNAPSHOT_BYTES
    )]
    BurstTooSmall {
        /// The configured value.
        bytes: u32,
    },
    /// A native model given to the engine does not fit its type.
    #[error("the {what} model does not fit {type_name}: it was trained on another schema")]
    ModelMismatch {
        /// Which model: `entity` or `player-state`.
        what: &'static str,
        /// The type it was given for.
        type_name: String,
    },
    /// The framing cannot carry the codec's deltas (Quake 3's
    /// `svc_snapshot` carries only its own codec).
    #[error("the {framing} framing cannot carry {codec} deltas")]
    FramingRefusesCodec {
        /// The framing's name.
        framing: &'static str,
        /// The codec's name.
        codec: &'static str,
    },
}

/// A server call that could not be carried out. The server is unchanged.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ServerError {
    /// The configuration is invalid.
    #[error("invalid configuration: {0}")]
    Config(#[from] ConfigError),
    /// No such client (never added, or removed).
    #[error("unknown client {0:?}")]
    UnknownClient(ClientId),
    /// An entity number outside `0..max_entities`.
    #[error("entity number {number} is outside 0..{limit}")]
    EntityOutOfRange {
        /// The number given.
        number: u32,
        /// `max_entities`.
        limit: u32,
    },
    /// A configstring index outside `0..MAX_CONFIGSTRINGS`.
    #[error(
        "configstring index {index} is outside 0..{}",
        crate::config::MAX_CONFIGSTRINGS
    )]
    ConfigstringIndex {
        /// The index given.
        index: usize,
    },
    /// A configstring longer than [`MAX_CONFIGSTRING_LEN`](crate::config::MAX_CONFIGSTRING_LEN).
    #[error(
        "configstring {index} is {len} bytes, more than the limit of {}",
        crate::config::MAX_CONFIGSTRING_LEN
    )]
    ConfigstringTooLong {
        /// Its index.
        index: usize,
        /// Its length in bytes.
        len: usize,
    },
    /// A configstring containing a NUL byte (its terminator on the wire).
    #[error("configstring {index} contains a NUL byte")]
    ConfigstringNul {
        /// Its index.
        index: usize,
    },
    /// Spawn baselines cannot change once a gamestate has been written:
    /// clients decode new entities against the baselines they were sent.
    #[error("spawn baselines are sealed: a gamestate has already been sent")]
    GamestateSealed,
    /// Server time must not go backwards.
    #[error("server time went backwards from {previous} to {now}")]
    TimeWentBackwards {
        /// Time of the previous frame.
        previous: u32,
        /// Time given.
        now: u32,
    },
    /// No frame has been committed yet.
    #[error("no frame committed yet: call commit_frame first")]
    NoFrame,
    /// A recorder's viewed client has been removed.
    #[error("recorder {recorder:?} views client {viewed:?}, which is gone")]
    ViewerGone {
        /// The recorder.
        recorder: ClientId,
        /// The client it viewed.
        viewed: ClientId,
    },
    /// Header, player state and removals alone exceed the client's
    /// `max_snapshot_bytes`.
    #[error("the mandatory part of a snapshot needs {bits} bits, more than {max_bytes} bytes")]
    SnapshotTooLarge {
        /// Bits needed.
        bits: usize,
        /// The client's `max_snapshot_bytes`.
        max_bytes: u32,
    },
    /// An area mask longer than [`MAX_AREA_MASK`](crate::framing::MAX_AREA_MASK) bytes.
    #[error(
        "an area mask of {len} bytes is longer than {}",
        crate::framing::MAX_AREA_MASK
    )]
    AreaMaskTooLong {
        /// Its length.
        len: usize,
    },
    /// A sequence number below the client's next one: sequences only grow.
    #[error("snapshot sequence {given} is below the client's next, {next}")]
    SequenceBehind {
        /// The client's next sequence.
        next: u32,
        /// The sequence given.
        given: u32,
    },
    /// The framing cannot change once a gamestate has been written: clients
    /// read snapshots with the framing they were set up with.
    #[error("the framing is fixed once a gamestate has been written")]
    FramingSealed,
    /// [`Server::set_models`](crate::Server::set_models) after the first
    /// gamestate was written: clients decode with the models the
    /// gamestate's fingerprint promised.
    #[error("the native models are fixed once a gamestate has been written")]
    ModelsSealed,
    /// [`Server::build_snapshot_into`](crate::Server::build_snapshot_into)
    /// with a framing whose messages cannot follow other bits (a
    /// range-coded one: its symbols run backwards from the message's end).
    #[error("the {framing} framing's messages cannot be appended to other bits")]
    NotAppendable {
        /// The framing's name.
        framing: &'static str,
    },
    /// The codec refused to encode a value (it should not, for valid states).
    #[error("encoding failed: {0}")]
    Encode(#[from] BitError),
}

/// Why a client rejected a message. Every variant is counted in
/// [`ClientStats`](crate::ClientStats); the client's state is unchanged.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ClientError {
    /// The bits do not form a valid message (truncated, a value out of
    /// range, an unsorted list...). The wrapped error gives the bit position.
    #[error("malformed message: {0}")]
    Malformed(#[from] BitError),
    /// A message other than a snapshot was handed to
    /// [`Client::read_snapshot`](crate::Client::read_snapshot).
    #[error("a {0:?} message is not a snapshot")]
    NotASnapshot(MessageKind),
    /// A snapshot was handed to [`Client::read_message`](crate::Client::read_message),
    /// which cannot know its sequence: it goes to
    /// [`Client::read_snapshot`](crate::Client::read_snapshot).
    #[error("a snapshot needs its sequence number: read it with read_snapshot")]
    SnapshotWithoutSequence,
    /// A snapshot arrived before any gamestate.
    #[error("snapshot received before the gamestate")]
    NoGamestate,
    /// The snapshot is a delta from a snapshot this client does not hold
    /// (lost, too old for the ring, or received before a restart).
    #[error(
        "snapshot {sequence} is a delta from snapshot {base}, which this client does not hold"
    )]
    BaseMissing {
        /// The snapshot's sequence number.
        sequence: u32,
        /// The base it names.
        base: u32,
    },
    /// The delta distance points before sequence 0.
    #[error("snapshot {sequence} names a base {distance} snapshots earlier, before the first")]
    BadDeltaDistance {
        /// The snapshot's sequence number.
        sequence: u32,
        /// The distance it gives.
        distance: u32,
    },
    /// An entity number outside the gamestate's entity range.
    #[error("entity number {number} is outside 0..{limit}")]
    EntityOutOfRange {
        /// The number read.
        number: u32,
        /// The gamestate's entity limit.
        limit: u32,
    },
    /// A removal of an entity the base does not hold.
    #[error("removal of entity {number}, which the base snapshot does not hold")]
    RemovedUnknownEntity {
        /// The number read.
        number: u32,
    },
    /// A gamestate states an entity range outside `1..=MAX_ENTITY_LIMIT` or
    /// beyond what its codec can number.
    #[error("gamestate entity limit {limit} is not allowed")]
    EntityLimit {
        /// The limit read.
        limit: u32,
    },
    /// A gamestate names a codec this build does not know.
    #[error("gamestate names unknown codec {0}")]
    UnknownCodec(u32),
    /// The gamestate was made for other entity or player-state layouts.
    #[error(
        "gamestate layout fingerprint {found:#010x} does not match this client's \
         {expected:#010x}: the server codes other types or other native models"
    )]
    FingerprintMismatch {
        /// This client's fingerprint.
        expected: u32,
        /// The gamestate's.
        found: u32,
    },
    /// More than padding follows the end of the message.
    #[error("{bits} bits of trailing data after the message")]
    TrailingData {
        /// Bits left over.
        bits: usize,
    },
}

impl ClientError {
    /// The malformed-message error for a value that decoded but is not allowed.
    pub(crate) fn invalid(what: &'static str, position: usize, detail: impl Into<String>) -> Self {
        ClientError::Malformed(BitError::invalid(what, position, detail))
    }
}
