//! The gamestate: configstrings and spawn baselines, sent once and reliably
//! (Quake 3's gamestate; Torque's string table and datablocks), and the
//! configstring-change messages that follow it on the reliable channel.
//!
//! Gamestate message:
//!
//! | part | bits |
//! | --- | --- |
//! | kind (1) | 2 |
//! | codec: 0 = q3, 1 = native | 2 |
//! | entity limit − 1 | 16 |
//! | fingerprint: the layout ([`layout_fingerprint`](crate::checksum::layout_fingerprint)) and the native models ([`Models::fingerprint`](crate::Models::fingerprint)) | 32 |
//! | number of configstrings | 11 |
//! | each: index, NUL-terminated bytes | 10 + 8·(len + 1) |
//! | spawn baselines: codec entity list, deltas from the zeroed entity | codec |
//!
//! Configstring message: kind (2), index (10 bits), NUL-terminated bytes.
//! An empty configstring is an unset one.

use fields::codec::NOTHING_HELD;
use fields::{BitError, BitReader, BitSink, BitSource, BitWriter, Codec, EntityBody, EntityUpdate};

use crate::config::{MAX_CONFIGSTRINGS, MAX_CONFIGSTRING_LEN, MAX_ENTITY_LIMIT};
use crate::error::{ClientError, ServerError};
use crate::message::{expect_end, MessageKind};

/// Width of a configstring index.
pub const CONFIGSTRING_INDEX_BITS: u32 = 10;
const COUNT_BITS: u32 = CONFIGSTRING_INDEX_BITS + 1;
const CODEC_BITS: u32 = 2;
const LIMIT_BITS: u32 = 16;

const _: () = assert!(MAX_CONFIGSTRINGS == 1 << CONFIGSTRING_INDEX_BITS);
const _: () = assert!(MAX_ENTITY_LIMIT == 1 << LIMIT_BITS);

/// Configstrings and spawn baselines: what both ends know before snapshots.
#[derive(Debug, Clone, PartialEq)]
pub struct Gamestate<E> {
    configstrings: Vec<String>,
    /// Sorted by entity number.
    baselines: Vec<(u32, E)>,
}

impl<E> Default for Gamestate<E> {
    fn default() -> Self {
        Gamestate {
            configstrings: Vec::new(),
            baselines: Vec::new(),
        }
    }
}

impl<E> Gamestate<E> {
    /// An empty gamestate.
    pub fn new() -> Self {
        Self::default()
    }

    /// Configstring `index`, if set (non-empty).
    pub fn configstring(&self, index: usize) -> Option<&str> {
        self.configstrings
            .get(index)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }

    /// Every set configstring as `(index, value)`, in index order.
    pub fn configstrings(&self) -> impl Iterator<Item = (usize, &str)> {
        self.configstrings
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.is_empty())
            .map(|(i, s)| (i, s.as_str()))
    }

    /// The spawn baseline of entity `number`, if it has one.
    pub fn baseline(&self, number: u32) -> Option<&E> {
        self.baselines
            .binary_search_by_key(&number, |(n, _)| *n)
            .ok()
            .map(|i| &self.baselines[i].1)
    }

    /// Every spawn baseline as `(number, state)`, in number order.
    pub fn baselines(&self) -> impl Iterator<Item = (u32, &E)> {
        self.baselines.iter().map(|(n, e)| (*n, e))
    }

    /// Checks and stores a configstring ("" unsets it).
    pub(crate) fn set_configstring(
        &mut self,
        index: usize,
        value: &str,
    ) -> Result<(), ServerError> {
        check_configstring(index, value)?;
        if index >= self.configstrings.len() {
            if value.is_empty() {
                return Ok(());
            }
            self.configstrings.resize(index + 1, String::new());
        }
        self.configstrings[index].clear();
        self.configstrings[index].push_str(value);
        Ok(())
    }

    /// Stores a spawn baseline (the number is checked by the caller).
    pub(crate) fn set_baseline(&mut self, number: u32, state: Option<E>) {
        let at = self.baselines.binary_search_by_key(&number, |(n, _)| *n);
        match (at, state) {
            (Ok(i), Some(state)) => self.baselines[i].1 = state,
            (Err(i), Some(state)) => self.baselines.insert(i, (number, state)),
            (Ok(i), None) => {
                self.baselines.remove(i);
            }
            (Err(_), None) => {}
        }
    }

    /// Bytes held (capacities, excluding what `E` itself owns on the heap).
    pub(crate) fn memory_bytes(&self) -> usize {
        self.configstrings.capacity() * std::mem::size_of::<String>()
            + self
                .configstrings
                .iter()
                .map(String::capacity)
                .sum::<usize>()
            + self.baselines.capacity() * std::mem::size_of::<(u32, E)>()
    }
}

fn check_configstring(index: usize, value: &str) -> Result<(), ServerError> {
    if index >= MAX_CONFIGSTRINGS {
        return Err(ServerError::ConfigstringIndex { index });
    }
    if value.len() > MAX_CONFIGSTRING_LEN {
        return Err(ServerError::ConfigstringTooLong {
            index,
            len: value.len(),
        });
    }
    if value.as_bytes().contains(&0) {
        return Err(ServerError::ConfigstringNul { index });
    }
    Ok(())
}

/// Runs `encode` into `out`, doubling the buffer until it fits: for the
/// rare, unbounded-in-advance reliable messages, not the snapshot hot path.
pub(crate) fn encode_growing(
    out: &mut Vec<u8>,
    initial: usize,
    mut encode: impl FnMut(&mut BitWriter<'_>) -> Result<(), BitError>,
) -> Result<(), BitError> {
    let mut size = initial.max(64);
    loop {
        out.clear();
        out.resize(size, 0);
        let mut writer = BitWriter::new(out);
        match encode(&mut writer) {
            Ok(()) => {
                let len = writer.finish();
                out.truncate(len);
                return Ok(());
            }
            Err(BitError::Overflow { .. }) => size *= 2,
            Err(other) => {
                out.clear();
                return Err(other);
            }
        }
    }
}

fn codec_id(codec: Codec) -> u32 {
    match codec {
        Codec::Q3 => 0,
        Codec::Native => 1,
    }
}

/// What a gamestate message says besides the [`Gamestate`] itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GamestateHeader {
    /// The codec of every later message.
    pub codec: Codec,
    /// Entity numbers run `0..entity_limit`.
    pub entity_limit: u32,
    /// Fingerprint of the entity and player-state layouts and native
    /// models (see [`crate::Models::fingerprint`]).
    pub fingerprint: u32,
}

/// Writes a gamestate message.
pub(crate) fn write_gamestate<E: fields::Fields, S: BitSink + ?Sized>(
    sink: &mut S,
    header: &GamestateHeader,
    gamestate: &Gamestate<E>,
    zero: &E,
) -> Result<(), BitError> {
    MessageKind::Gamestate.write(sink)?;
    sink.put_bits(codec_id(header.codec), CODEC_BITS)?;
    sink.put_bits(header.entity_limit - 1, LIMIT_BITS)?;
    sink.put_bits(header.fingerprint, 32)?;
    sink.put_bits(gamestate.configstrings().count() as u32, COUNT_BITS)?;
    for (index, value) in gamestate.configstrings() {
        sink.put_bits(index as u32, CONFIGSTRING_INDEX_BITS)?;
        sink.put_str(value, MAX_CONFIGSTRING_LEN)?;
    }
    let mut last = None;
    for (number, state) in gamestate.baselines() {
        let update = EntityUpdate::Delta {
            base: zero,
            new: state,
            force: true,
        };
        header.codec.write_entity(sink, last, number, update)?;
        last = Some(number);
    }
    header.codec.write_entities_end(sink, last, zero)
}

/// Reads a gamestate message after its kind tag. `zero` is the zeroed
/// entity; `expected_fingerprint` this client's layout fingerprint.
pub(crate) fn read_gamestate<E: fields::Fields>(
    reader: &mut BitReader<'_>,
    zero: &E,
    expected_fingerprint: u32,
) -> Result<(GamestateHeader, Gamestate<E>), ClientError> {
    let codec = match reader.get_bits(CODEC_BITS)? {
        0 => Codec::Q3,
        1 => Codec::Native,
        other => return Err(ClientError::UnknownCodec(other)),
    };
    let entity_limit = reader.get_bits(LIMIT_BITS)? + 1;
    if codec
        .entity_number_limit()
        .is_some_and(|limit| entity_limit > limit)
    {
        return Err(ClientError::EntityLimit {
            limit: entity_limit,
        });
    }
    let fingerprint = reader.get_bits(32)?;
    if fingerprint != expected_fingerprint {
        return Err(ClientError::FingerprintMismatch {
            expected: expected_fingerprint,
            found: fingerprint,
        });
    }
    let mut gamestate = Gamestate::new();
    let position = reader.bits_read();
    let count = reader.get_bits(COUNT_BITS)? as usize;
    if count > MAX_CONFIGSTRINGS {
        return Err(ClientError::invalid(
            "configstring count",
            position,
            format!("{count} exceeds {MAX_CONFIGSTRINGS}"),
        ));
    }
    let mut previous = None;
    let mut bytes = Vec::new();
    for _ in 0..count {
        let position = reader.bits_read();
        let index = reader.get_bits(CONFIGSTRING_INDEX_BITS)? as usize;
        if previous.is_some_and(|p| index <= p) {
            return Err(ClientError::invalid(
                "configstring index",
                position,
                format!("{index} is not above the previous index"),
            ));
        }
        previous = Some(index);
        read_configstring_value(reader, &mut bytes)?;
        store_configstring(&mut gamestate, index, &bytes, position)?;
    }
    let mut last = None;
    // Spawn baselines: the receiver holds nothing yet, so no entry removes.
    while let Some(entry) = codec.read_entity_number(reader, last, u32::MAX, zero, NOTHING_HELD)? {
        let number = entry.number();
        if number >= entity_limit {
            return Err(ClientError::EntityOutOfRange {
                number,
                limit: entity_limit,
            });
        }
        let position = reader.bits_read();
        let mut state = zero.clone();
        if codec.read_entity_body(reader, entry, &mut state)? == EntityBody::Removed {
            return Err(ClientError::invalid(
                "spawn baseline",
                position,
                format!("entity {number} is a removal"),
            ));
        }
        gamestate.baselines.push((number, state));
        last = Some(number);
    }
    expect_end(reader)?;
    Ok((
        GamestateHeader {
            codec,
            entity_limit,
            fingerprint,
        },
        gamestate,
    ))
}

/// Writes a configstring message.
pub(crate) fn write_configstring<S: BitSink + ?Sized>(
    sink: &mut S,
    index: usize,
    value: &str,
) -> Result<(), BitError> {
    MessageKind::Configstring.write(sink)?;
    sink.put_bits(index as u32, CONFIGSTRING_INDEX_BITS)?;
    sink.put_str(value, MAX_CONFIGSTRING_LEN)
}

/// Reads a configstring message after its kind tag and applies it.
pub(crate) fn read_configstring<E>(
    reader: &mut BitReader<'_>,
    gamestate: &mut Gamestate<E>,
    scratch: &mut Vec<u8>,
) -> Result<usize, ClientError> {
    let position = reader.bits_read();
    let index = reader.get_bits(CONFIGSTRING_INDEX_BITS)? as usize;
    read_configstring_value(reader, scratch)?;
    expect_end(reader)?;
    store_configstring(gamestate, index, scratch, position)?;
    Ok(index)
}

fn read_configstring_value(
    reader: &mut BitReader<'_>,
    bytes: &mut Vec<u8>,
) -> Result<(), ClientError> {
    reader.get_cstr_into(bytes, MAX_CONFIGSTRING_LEN)?;
    Ok(())
}

fn store_configstring<E>(
    gamestate: &mut Gamestate<E>,
    index: usize,
    bytes: &[u8],
    position: usize,
) -> Result<(), ClientError> {
    // Configstrings are text; bytes that are not UTF-8 are a corrupt message.
    let value = std::str::from_utf8(bytes)
        .map_err(|e| ClientError::invalid("configstring", position, format!("not UTF-8: {e}")))?;
    gamestate
        .set_configstring(index, value)
        .map_err(|e| ClientError::invalid("configstring", position, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configstrings_are_bounded_and_unset_when_empty() {
        let mut gs: Gamestate<()> = Gamestate::new();
        gs.set_configstring(3, "q3dm17").unwrap();
        gs.set_configstring(1, "").unwrap();
        assert_eq!(gs.configstring(3), Some("q3dm17"));
        assert_eq!(gs.configstring(1), None);
        assert_eq!(gs.configstrings().collect::<Vec<_>>(), vec![(3, "q3dm17")]);
        gs.set_configstring(3, "").unwrap();
        assert_eq!(gs.configstring(3), None);
        assert_eq!(
            gs.set_configstring(MAX_CONFIGSTRINGS, "x"),
            Err(ServerError::ConfigstringIndex {
                index: MAX_CONFIGSTRINGS
            })
        );
        let long = "x".repeat(MAX_CONFIGSTRING_LEN + 1);
        assert!(matches!(
            gs.set_configstring(0, &long),
            Err(ServerError::ConfigstringTooLong { .. })
        ));
        assert_eq!(
            gs.set_configstring(0, "a\0b"),
            Err(ServerError::ConfigstringNul { index: 0 })
        );
    }

    #[test]
    fn growing_encoder_retries_until_the_message_fits() {
        let mut out = Vec::new();
        encode_growing(&mut out, 1, |w| {
            for i in 0..300u32 {
                w.put_bits(i, 9)?;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(out.len(), (300 * 9usize).div_ceil(8));
    }
}
