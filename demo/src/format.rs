//! The native demo file format (version [`VERSION`]).
//!
//! All integers are little-endian.
//!
//! | part | bytes |
//! | --- | --- |
//! | magic [`MAGIC`] | 8 |
//! | format version ([`VERSION`]) | 2 |
//! | header length `h` (at most [`MAX_HEADER_LEN`]) | 4 |
//! | [`DemoHeader`], postcard-encoded | `h` |
//! | CRC-32 of version, length and header | 4 |
//! | records | … |
//!
//! A record is a frame of [`FRAME_LEN`] bytes, its payload, and the CRC-32
//! of the frame and payload:
//!
//! | part | bytes |
//! | --- | --- |
//! | kind ([`RecordKind`]) | 1 |
//! | payload length (at most [`MAX_RECORD_LEN`]) | 4 |
//! | server time, ms | 4 |
//! | sequence (snapshots; 0 otherwise) | 4 |
//! | low 16 bits of the CRC-32 of the 13 bytes above | 2 |
//! | payload | length |
//! | CRC-32 of frame and payload | 4 |
//!
//! The frame has its own check so a damaged length is reported as a
//! corrupted record, not mistaken for a file cut short. Payloads of
//! gamestate, configstring, delta and keyframe records are the messages a
//! [`snapshot::Client`] reads, exactly as received; a keyframe is a full
//! snapshot (no base). The file ends with an index record (the keyframes,
//! postcard-encoded [`KeyframeEntry`] list) and an end record whose payload
//! is the index record's offset and the number of records before it. A file
//! without the end record is truncated: every complete record is still good.

use std::collections::BTreeMap;
use std::sync::Arc;

use fields::model::{AdaptPolicy, ModelData, NativeModel};
use fields::schema::Schema;
use fields::{Codec, NetFields};
use serde::{Deserialize, Serialize};
use snapshot::{Framing, Models};

use crate::error::DemoError;

/// The first bytes of every native demo.
pub const MAGIC: [u8; 8] = *b"SNAPDEMO";
/// The `format` name of native demos in tools and JSON output.
pub const FORMAT_NAME: &str = "native";
/// The format version this build reads and writes. 2: native models build
/// their codes from the counts plus a prior (`fields::model`), so a version 1
/// file's snapshots would decode with other codes than they were written with.
/// 3: native models count symbols per origin and value context
/// (`fields::model::ValueContext`), another shape and other codes.
/// 4: native entity lists code their numbers with the model
/// (`fields::model::Context::EntityNumber`), and models carry those counts.
/// 5: recorded sync checksums are XXH3 (`snapshot::checksum`), not FNV-1a,
/// so a version 4 file's checksums would all fail to verify.
/// 6: native value codes have a symbol for a field set to zero
/// (`fields::model::ZERO_SYMBOL`), so models have another shape and codes;
/// snapshot headers have a third flag, for chained snapshots
/// (`snapshot::message`).
/// 7: a delta snapshot's header codes its frame and times against its
/// base's (`snapshot::message`), so a version 6 file's snapshots no longer
/// parse.
/// 8: a native entity list names a removal by its place among the entities
/// the client holds (`fields::codec::HeldNumbers`), not by its number gap,
/// so a version 7 file's removals would name other entities; and a model's
/// pattern key may split its classes by a second flag field
/// (`fields::model::PatternKey::second_flag`), another field in the models
/// a header carries. (The change
/// before it, a whole rate beside a fractional one read in the fraction
/// context, `fields::model::ValueContext::Fraction`, also changed how
/// version 7 files written before it decode, without a version of its own.)
/// 9: models carry three more fields (another layout in a header): a key
/// for the change patterns of deltas from a spawn baseline
/// (`fields::model::ModelData::spawn_key`), position axes whose values
/// entering from zero are coded against the viewer's
/// (`fields::model::ModelData::axes`), and dictionaries of common integer
/// changes coded as symbols of their own
/// (`fields::model::ModelData::dictionaries`); a model with any of them
/// codes other bits.
/// 10: snapshot messages are the engine's one format
/// (`snapshot::framing::Compact`): a delta and a full update are kinds of
/// their own, the sequence is not in the message (the record's frame
/// carries it), a delta's distance and frames are coded against its base's
/// delivery, and flags and an area mask travel with every snapshot.
/// 11: the engine sets the viewer anchor: a native entity new to the
/// viewer whose spawn baseline holds zero in a model's position axes is
/// coded against the recorded player state's position
/// (`fields::Codec::spawn_reads_anchor`), so a version 10 file's entering
/// missiles and events would decode elsewhere.
/// 12: a gamestate's fingerprint folds in the ids of the native models
/// the snapshots are coded with (`snapshot::Models::fingerprint`), so an
/// engine given other models than its types' is told apart: a version 11
/// gamestate carries the layout's alone and is refused.
/// 13: models carry per-field replacement predictors for deltas whose
/// baseline's velocities are not whole numbers
/// (`fields::model::ModelData::loose_predictors`), another field in the
/// models a header carries, and such deltas decode their fields in
/// another order.
/// 14: models carry counts of the first bits below their values' leading
/// ones (`fields::model::ModelData::top_bits`), another field in the
/// models a header carries; a range-coded message codes those bits by
/// them.
/// 15: the header says how the snapshot messages are framed
/// ([`DemoHeader::framing`]): a bit stream as before, or range-coded
/// (`snapshot::CompactRange`).
/// 16: the header carries the models the snapshots are coded with when
/// the recording server was given other models than its types' own
/// ([`DemoHeader::coded_entity_model`], [`DemoHeader::coded_player_model`]:
/// the spawn baselines stay coded with the types' own) and how they adapt
/// along the recorded chain ([`DemoHeader::adaptation`]), so a stream
/// coded with given or adapting models plays back.
/// 17: a native delta's header may name a history snapshot that entities
/// re-entering the view are coded from (`snapshot::history`), another
/// exception flag in every header that has one.
/// 18: models carry array fields' dictionaries of common changed-element
/// sets and their symbols' counts, and entity lists' start counts
/// (`fields::model::ModelData::element_sets`, `elements`, `list_start`),
/// more fields in the models a header carries; a changed array's set and
/// a list's start are coded by them.
/// 19: a range-coded entity entry's choice of start
/// (`fields::StartChoice`) takes the older state at chance 7/8, not 1/3.
/// 20: an adapting stream's chains start short and double
/// (`fields::model::AdaptPolicy::first_chain`, carried in the header's
/// policy), and a chain whose rebuild started early carries the symbols
/// after its start to the next chain: a version 19 player would rebuild
/// other models.
/// 21: a range-coded value codes four more bits below its leading one by
/// its model's chances, one per position (`fields::top_bits::DEEP_BITS`),
/// and the models a header carries hold their counts
/// (`fields::model::ModelData::top_bits`, longer per field).
/// 22: a range-coded float's bit-pattern and grid classes, and an
/// integer's tick classes, code their first bits below the leading one by
/// their model's chances too (`fields::model::TOP_BITS_SYMBOLS`), and the
/// models a header carries hold those counts (longer per field).
/// 23: a bit-stream snapshot message leaves out its last byte when it is
/// zero (`snapshot::framing::MessageCoding::sent_len`), so a version 22
/// player would run out of bits in a quarter of the records.
/// 24: a range-coded value class its model never counted (the float
/// bit-pattern classes, any class a field never used in training) has
/// its bits below the leading one read raw, not by an even tree
/// (`fields::top_bits::TopBitChances::from_counts`), and the models a
/// header carries store their top-bit counts with runs of zeros
/// shortened: a version 23 player would misread those values' bits and
/// the header's models.
/// 25: a delta whose baseline holds fractional rates takes its model's
/// replacement predictors when the clocks they read advanced by at most
/// the elapsed time (not only exactly by it), and a
/// `fields::model::Predictor::Differentiate` whose position moved slower
/// than one unit a second codes the rate from its baseline: a version 24
/// player would misread such deltas.
/// 26: a float without a grid whose low nine significand bits are zero
/// (a velocity's clipping residue) is coded in coarse bit-pattern steps
/// on the grid symbols: a version 25 player would refuse such symbols.
/// 27: range-coded values code five bits after the top-bit tree by their
/// own chances (`fields::top_bits::DEEP_BITS`, was four) and models count
/// them, and a top-bit chance leans towards even by more imaginary
/// observations: a version 26 player would misread range-coded values and
/// the header's models.
pub const VERSION: u16 = 27;
/// Bytes before the header: magic, version, header length.
pub const PREAMBLE_LEN: usize = MAGIC.len() + 2 + 4;
/// Largest header accepted (schemas, models and metadata are far smaller).
pub const MAX_HEADER_LEN: usize = 1 << 20;
/// Bytes of a record frame before its payload.
pub const FRAME_LEN: usize = 15;
/// Bytes of the checksum after a payload.
pub const TRAILER_LEN: usize = 4;
/// Largest record payload accepted: a gamestate of 1024 configstrings of
/// 1024 bytes and a full set of baselines fits several times over.
pub const MAX_RECORD_LEN: usize = 1 << 23;
/// Payload bytes of the end record.
pub const END_PAYLOAD_LEN: usize = 16;

/// What a record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum RecordKind {
    /// A gamestate message (configstrings, spawn baselines).
    Gamestate,
    /// A configstring-change message.
    Configstring,
    /// A snapshot message that is a delta from an earlier one.
    Delta,
    /// A snapshot message that is a full update: playback can start here.
    Keyframe,
    /// The keyframe index (last but one record).
    Index,
    /// The end marker (last record).
    End,
}

impl RecordKind {
    /// The kind's byte.
    pub fn byte(self) -> u8 {
        match self {
            RecordKind::Gamestate => 1,
            RecordKind::Configstring => 2,
            RecordKind::Delta => 3,
            RecordKind::Keyframe => 4,
            RecordKind::Index => 0xFE,
            RecordKind::End => 0xFF,
        }
    }

    /// The kind of a byte, if it is one.
    pub fn from_byte(byte: u8) -> Option<RecordKind> {
        Some(match byte {
            1 => RecordKind::Gamestate,
            2 => RecordKind::Configstring,
            3 => RecordKind::Delta,
            4 => RecordKind::Keyframe,
            0xFE => RecordKind::Index,
            0xFF => RecordKind::End,
            _ => return None,
        })
    }

    /// Whether the record carries a snapshot.
    pub fn is_snapshot(self) -> bool {
        matches!(self, RecordKind::Delta | RecordKind::Keyframe)
    }

    /// A short name for tools.
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Gamestate => "gamestate",
            RecordKind::Configstring => "configstring",
            RecordKind::Delta => "delta",
            RecordKind::Keyframe => "keyframe",
            RecordKind::Index => "index",
            RecordKind::End => "end",
        }
    }
}

/// What a demo says about itself: enough to decode and print it without
/// the game's Rust types.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DemoHeader {
    /// Field table of the entity type.
    pub entity_schema: Schema,
    /// [`Schema::fingerprint`] of `entity_schema`, checked on reading.
    pub entity_fingerprint: u64,
    /// The native-codec model of the entity type, if it has one: a
    /// native-codec demo cannot be decoded without it.
    pub entity_model: Option<ModelData>,
    /// Field table of the player-state type.
    pub player_schema: Schema,
    /// [`Schema::fingerprint`] of `player_schema`.
    pub player_fingerprint: u64,
    /// The native-codec model of the player-state type, if it has one.
    pub player_model: Option<ModelData>,
    /// The codec of every message.
    pub codec: Codec,
    /// Server frames per second (0: unknown).
    pub tick_hz: u32,
    /// Snapshots per second of the recorded stream (0: unknown).
    pub snapshot_hz: u32,
    /// How the snapshot messages are framed: the recording server's (or
    /// client's) framing, which the player reads them with.
    pub framing: MessageFraming,
    /// The entity model the snapshots are coded with, when the recording
    /// server was given one (`snapshot::Models`); `None`: the type's own,
    /// [`entity_model`](Self::entity_model), which always codes the spawn
    /// baselines.
    pub coded_entity_model: Option<ModelData>,
    /// The player-state model the snapshots are coded with, when given.
    pub coded_player_model: Option<ModelData>,
    /// How the native models adapt along the recorded delta chain
    /// (`snapshot::Models::with_adaptation`): the recording server's
    /// policy, which the player adapts by; `None`: fixed models.
    pub adaptation: Option<AdaptPolicy>,
    /// Free-form facts: map, players, recorder, source file.
    pub metadata: BTreeMap<String, String>,
}

impl DemoHeader {
    /// A header from schemas and models given as data.
    pub fn new(
        entity_schema: Schema,
        entity_model: Option<ModelData>,
        player_schema: Schema,
        player_model: Option<ModelData>,
        codec: Codec,
        tick_hz: u32,
        snapshot_hz: u32,
    ) -> Self {
        DemoHeader {
            entity_fingerprint: entity_schema.fingerprint(),
            entity_schema,
            entity_model,
            player_fingerprint: player_schema.fingerprint(),
            player_schema,
            player_model,
            codec,
            tick_hz,
            snapshot_hz,
            framing: MessageFraming::Compact,
            coded_entity_model: None,
            coded_player_model: None,
            adaptation: None,
            metadata: BTreeMap::new(),
        }
    }

    /// For a game's own types: schemas from their field tables, models from
    /// [`NetFields::static_native_model`].
    pub fn for_types<E: NetFields, P: NetFields>(
        codec: Codec,
        tick_hz: u32,
        snapshot_hz: u32,
    ) -> Self {
        DemoHeader::new(
            E::TABLE.schema(),
            E::static_native_model().map(|m| m.data().clone()),
            P::TABLE.schema(),
            P::static_native_model().map(|m| m.data().clone()),
            codec,
            tick_hz,
            snapshot_hz,
        )
    }

    /// The same header for messages framed as `framing` says.
    pub fn with_framing(mut self, framing: MessageFraming) -> Self {
        self.framing = framing;
        self
    }

    /// The same header for models that adapt under `policy` (`None`:
    /// fixed models), as the recording server's do.
    pub fn with_adaptation(mut self, policy: Option<AdaptPolicy>) -> Self {
        self.adaptation = policy;
        self
    }

    /// The same header for snapshots coded with `models`, the recording
    /// server's ([`snapshot::Server::models`]): the models it was given and
    /// their adaptation policy.
    pub fn with_models(mut self, models: &Models) -> Self {
        self.coded_entity_model = models.entity().map(|model| model.data().clone());
        self.coded_player_model = models.player().map(|model| model.data().clone());
        self.adaptation = models.adaptation();
        self
    }

    /// The models the snapshots are coded with, as a `snapshot` client
    /// takes them (the types' own unless the header names others).
    pub fn models(&self) -> Result<Models, DemoError> {
        let model = |what: &str, data: &Option<ModelData>| {
            data.clone()
                .map(|data| NativeModel::new(data).map(Arc::new))
                .transpose()
                .map_err(|e| DemoError::BadHeader {
                    reason: format!("{what} model the snapshots are coded with: {e}"),
                })
        };
        Ok(Models::of_types()
            .with_entity(model("entity", &self.coded_entity_model)?)
            .with_player(model("player-state", &self.coded_player_model)?)
            .with_adaptation(self.adaptation))
    }

    /// Adds (or replaces) a metadata entry.
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Checks that the fingerprints match the schemas.
    pub fn validate(&self) -> Result<(), DemoError> {
        for (what, schema, fingerprint) in [
            ("entity", &self.entity_schema, self.entity_fingerprint),
            ("player", &self.player_schema, self.player_fingerprint),
        ] {
            let actual = schema.fingerprint();
            if actual != fingerprint {
                return Err(DemoError::BadHeader {
                    reason: format!(
                        "{what} schema `{}` has fingerprint {actual:016x}, the header says {fingerprint:016x}",
                        schema.name
                    ),
                });
            }
        }
        Ok(())
    }
}

/// The framings a native demo's snapshot messages may have: the engine's
/// one message format as a bit stream or range-coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum MessageFraming {
    /// A bit stream ([`snapshot::Compact`], the session's default).
    #[default]
    Compact,
    /// Range-coded ([`snapshot::CompactRange`]).
    CompactRange,
}

impl MessageFraming {
    /// The framing that reads and writes such messages.
    pub fn framing(self) -> Arc<dyn Framing> {
        match self {
            MessageFraming::Compact => Arc::new(snapshot::Compact),
            MessageFraming::CompactRange => Arc::new(snapshot::CompactRange),
        }
    }

    /// The framing itself, borrowed (both are unit types): reads a
    /// message's kind without an allocation.
    pub fn as_framing(self) -> &'static dyn Framing {
        match self {
            MessageFraming::Compact => &snapshot::Compact,
            MessageFraming::CompactRange => &snapshot::CompactRange,
        }
    }

    /// The demo's name for `framing`, if a native demo can hold its
    /// messages (they are told apart by [`Framing::name`]).
    pub fn of(framing: &dyn Framing) -> Option<Self> {
        [MessageFraming::Compact, MessageFraming::CompactRange]
            .into_iter()
            .find(|known| known.name() == framing.name())
    }

    /// The framing's name ([`Framing::name`]).
    pub fn name(self) -> &'static str {
        match self {
            MessageFraming::Compact => "compact",
            MessageFraming::CompactRange => "compact-range",
        }
    }
}

/// One entry of the keyframe index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyframeEntry {
    /// Byte offset of the keyframe record.
    pub offset: u64,
    /// Its server time (ms).
    pub server_time: u32,
    /// Its snapshot sequence.
    pub sequence: u32,
    /// Index of the keyframe record (records counted from 0).
    pub record: u64,
    /// Byte offset of the gamestate record in force at it.
    pub gamestate_offset: u64,
    /// Index of that gamestate record.
    pub gamestate_record: u64,
}

/// CRC-32 (IEEE 802.3, reflected, as zlib and PNG use it), by `crc32fast`.
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// Continues a CRC-32 over more bytes (`crc32_update(crc32(a), b)` is the CRC of `a ++ b`).
pub fn crc32_update(crc: u32, bytes: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new_with_initial(crc);
    hasher.update(bytes);
    hasher.finalize()
}

/// The frame of a record (before its payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// The kind byte.
    pub kind: u8,
    /// Payload length.
    pub len: u32,
    /// Server time, ms.
    pub server_time: u32,
    /// Snapshot sequence (0 for other records).
    pub sequence: u32,
}

impl Frame {
    /// The frame's bytes, its check included.
    pub fn encode(&self) -> [u8; FRAME_LEN] {
        let mut out = [0u8; FRAME_LEN];
        out[0] = self.kind;
        out[1..5].copy_from_slice(&self.len.to_le_bytes());
        out[5..9].copy_from_slice(&self.server_time.to_le_bytes());
        out[9..13].copy_from_slice(&self.sequence.to_le_bytes());
        let check = crc32(&out[..13]) as u16;
        out[13..15].copy_from_slice(&check.to_le_bytes());
        out
    }

    /// Parses a frame; `Err` says why it is not one.
    pub fn decode(bytes: &[u8; FRAME_LEN]) -> Result<Frame, String> {
        let check = u16::from_le_bytes([bytes[13], bytes[14]]);
        if crc32(&bytes[..13]) as u16 != check {
            return Err("record frame check mismatch".into());
        }
        let word = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        Ok(Frame {
            kind: bytes[0],
            len: word(1),
            server_time: word(5),
            sequence: word(9),
        })
    }
}

/// Encodes the preamble, header and header checksum.
pub fn encode_header(header: &DemoHeader) -> Result<Vec<u8>, DemoError> {
    header.validate()?;
    encode_preamble(&MAGIC, VERSION, header)
}

/// The start of every file this crate writes (native and lockstep demos):
/// `magic`, `version`, the postcard header's length, the header, and a
/// CRC-32 of everything after the magic.
pub(crate) fn encode_preamble<H: Serialize>(
    magic: &[u8; 8],
    version: u16,
    header: &H,
) -> Result<Vec<u8>, DemoError> {
    let body = postcard::to_allocvec(header).map_err(|e| DemoError::BadHeader {
        reason: format!("cannot encode: {e}"),
    })?;
    if body.len() > MAX_HEADER_LEN {
        return Err(DemoError::BadHeader {
            reason: format!("{} bytes exceed the limit of {MAX_HEADER_LEN}", body.len()),
        });
    }
    let mut out = Vec::with_capacity(PREAMBLE_LEN + body.len() + 4);
    out.extend_from_slice(magic);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    let crc = crc32(&out[magic.len()..]);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Whether `data` starts with the native demo magic.
pub fn has_magic(data: &[u8]) -> bool {
    data.starts_with(&MAGIC)
}

/// Parses the preamble and header; returns them and where records start.
pub fn decode_header(data: &[u8]) -> Result<(DemoHeader, usize), DemoError> {
    if !has_magic(data) {
        return Err(DemoError::NotADemo {
            reason: "no native demo magic".into(),
        });
    }
    let (header, records_start): (DemoHeader, usize) = decode_preamble(data, VERSION)?;
    header.validate()?;
    Ok((header, records_start))
}

/// Decodes a preamble [`encode_preamble`] wrote, once the caller has checked
/// the magic: the header and the offset just past its checksum. Every
/// length is checked before it is used, and the header's is capped.
pub(crate) fn decode_preamble<H: serde::de::DeserializeOwned>(
    data: &[u8],
    version: u16,
) -> Result<(H, usize), DemoError> {
    let short = || DemoError::BadHeader {
        reason: format!("the file ends inside the header ({} bytes)", data.len()),
    };
    let word = |at: usize| -> Result<u32, DemoError> {
        let bytes: [u8; 4] = data
            .get(at..at + 4)
            .ok_or_else(short)?
            .try_into()
            .map_err(|_| short())?;
        Ok(u32::from_le_bytes(bytes))
    };
    let found = u16::from_le_bytes([
        *data.get(8).ok_or_else(short)?,
        *data.get(9).ok_or_else(short)?,
    ]);
    if found != version {
        return Err(DemoError::UnknownVersion {
            found,
            supported: version,
        });
    }
    let len = word(10)? as usize;
    if len > MAX_HEADER_LEN {
        return Err(DemoError::BadHeader {
            reason: format!("header length {len} exceeds the limit of {MAX_HEADER_LEN}"),
        });
    }
    let crc_at = PREAMBLE_LEN + len;
    let body = data.get(PREAMBLE_LEN..crc_at).ok_or_else(short)?;
    if crc32(&data[MAGIC.len()..crc_at]) != word(crc_at)? {
        return Err(DemoError::BadHeader {
            reason: "header checksum mismatch".into(),
        });
    }
    let header = postcard::from_bytes(body).map_err(|e| DemoError::BadHeader {
        reason: format!("cannot decode: {e}"),
    })?;
    Ok((header, crc_at + 4))
}

#[cfg(test)]
mod tests {
    #[test]
    fn message_framings_are_named_as_their_framings() {
        for framing in [MessageFraming::Compact, MessageFraming::CompactRange] {
            assert_eq!(framing.name(), framing.framing().name());
            assert_eq!(MessageFraming::of(&*framing.framing()), Some(framing));
            assert_eq!(framing.as_framing().name(), framing.name());
        }
        assert_eq!(
            MessageFraming::of(&snapshot::Compact),
            Some(MessageFraming::Compact)
        );
        assert_eq!(MessageFraming::default(), MessageFraming::Compact);
    }

    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32_update(crc32(b"1234"), b"56789"), 0xCBF4_3926);
        assert_eq!(crc32_update(0, b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn frames_round_trip_and_detect_damage() {
        let frame = Frame {
            kind: 3,
            len: 77,
            server_time: 12_345,
            sequence: 9,
        };
        let mut bytes = frame.encode();
        assert_eq!(Frame::decode(&bytes), Ok(frame));
        for bit in 0..FRAME_LEN * 8 {
            bytes[bit / 8] ^= 1 << (bit % 8);
            assert!(Frame::decode(&bytes).is_err(), "bit {bit}");
            bytes[bit / 8] ^= 1 << (bit % 8);
        }
    }

    #[test]
    fn kinds_round_trip_through_their_bytes() {
        for byte in 0..=255u8 {
            if let Some(kind) = RecordKind::from_byte(byte) {
                assert_eq!(kind.byte(), byte);
            }
        }
    }
}
