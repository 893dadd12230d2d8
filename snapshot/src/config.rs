//! Server and per-client settings, and the protocol's fixed bounds.

use fields::Codec;

use crate::error::ConfigError;

/// Snapshots a server remembers per client, and a client per server: the
/// ring Quake 3 calls `PACKET_BACKUP`. A snapshot can only be a delta from
/// one of the previous `RING_SIZE - 1`, since the slot of the one before
/// those is the slot being written.
pub const RING_SIZE: usize = 32;

/// Largest distance, in snapshot sequence numbers, from a snapshot to its base.
pub const MAX_DELTA_DISTANCE: u32 = RING_SIZE as u32 - 1;

/// Default number of entity numbers (`0..1024`), Quake 3's `MAX_GENTITIES`.
pub const DEFAULT_MAX_ENTITIES: u32 = 1024;

/// Largest entity-number range the protocol carries (a gamestate states it
/// in 17 bits); bounds what a client allocates for an untrusted gamestate.
pub const MAX_ENTITY_LIMIT: u32 = 1 << 16;

/// Number of configstring slots (Quake 3's `MAX_CONFIGSTRINGS`).
pub const MAX_CONFIGSTRINGS: usize = 1024;

/// Longest configstring in bytes, terminator excluded.
pub const MAX_CONFIGSTRING_LEN: usize = 1024;

/// Default largest snapshot message: the netchan's largest most-recent-state
/// payload, which it fragments over datagrams.
pub const DEFAULT_MAX_SNAPSHOT_BYTES: u32 = 16 * 1024;

/// Smallest `max_snapshot_bytes` accepted: room for a header, a player-state
/// delta and a few entities.
pub const MIN_SNAPSHOT_BYTES: u32 = 64;

/// Settings of a [`Server`](crate::Server), fixed at construction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerConfig {
    /// Wire format of every delta (entity, player state, baselines).
    pub codec: Codec,
    /// Entity numbers run `0..max_entities`. At most [`MAX_ENTITY_LIMIT`],
    /// and for [`Codec::Q3`] at most 1023 (number 1023 ends Quake 3's lists).
    pub max_entities: u32,
    /// Every this many snapshots to a client carry a sync checksum of the
    /// whole state the client should hold (0: never).
    pub checksum_interval: u32,
}

impl Default for ServerConfig {
    /// The native codec, 1024 entity numbers, a checksum every 32 snapshots.
    fn default() -> Self {
        ServerConfig {
            codec: Codec::Native,
            max_entities: DEFAULT_MAX_ENTITIES,
            checksum_interval: 32,
        }
    }
}

impl ServerConfig {
    /// The defaults with `codec`, and as many entity numbers as it can carry
    /// up to [`DEFAULT_MAX_ENTITIES`] (1023 for [`Codec::Q3`]).
    pub fn for_codec(codec: Codec) -> Self {
        let max_entities = codec
            .entity_number_limit()
            .map_or(DEFAULT_MAX_ENTITIES, |limit| {
                limit.min(DEFAULT_MAX_ENTITIES)
            });
        ServerConfig {
            codec,
            max_entities,
            ..ServerConfig::default()
        }
    }

    /// Checks that the codec can number every entity and the range is in bounds.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_entities == 0 {
            return Err(ConfigError::NoEntities);
        }
        if self.max_entities > MAX_ENTITY_LIMIT {
            return Err(ConfigError::EntityLimitTooLarge {
                limit: self.max_entities,
            });
        }
        if let Some(codec_limit) = self.codec.entity_number_limit() {
            if self.max_entities > codec_limit {
                return Err(ConfigError::EntityLimitExceedsCodec {
                    codec: self.codec.name(),
                    codec_limit,
                    limit: self.max_entities,
                });
            }
        }
        Ok(())
    }
}

/// Per-client send settings on the server: rates and budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientSettings {
    /// Snapshots per second (0: one every committed frame).
    pub snapshot_rate: u32,
    /// Bytes per second of snapshot data (0: unlimited).
    pub byte_rate: u32,
    /// Bytes the client may receive in a burst above `byte_rate` (the token
    /// bucket's depth), e.g. a full update after connecting.
    pub burst_bytes: u32,
    /// Largest snapshot message; entities beyond it wait by priority.
    pub max_snapshot_bytes: u32,
    /// Treat every snapshot as acknowledged as soon as it is built: for a
    /// lossless sink such as a demo recorder.
    pub auto_ack: bool,
}

impl Default for ClientSettings {
    /// Quake 3's defaults: 20 snapshots/s at 25,000 bytes/s, 16 KiB messages.
    fn default() -> Self {
        ClientSettings {
            snapshot_rate: 20,
            byte_rate: 25_000,
            burst_bytes: DEFAULT_MAX_SNAPSHOT_BYTES,
            max_snapshot_bytes: DEFAULT_MAX_SNAPSHOT_BYTES,
            auto_ack: false,
        }
    }
}

impl ClientSettings {
    /// A snapshot every committed frame, no byte rate, 16 KiB messages.
    pub fn unlimited() -> Self {
        ClientSettings {
            snapshot_rate: 0,
            byte_rate: 0,
            ..ClientSettings::default()
        }
    }

    /// Settings for a lossless recorder: unlimited, auto-acknowledged.
    pub fn recorder() -> Self {
        ClientSettings {
            auto_ack: true,
            ..ClientSettings::unlimited()
        }
    }

    /// Checks the message bound, and that a byte rate has a bucket deep
    /// enough for one minimal snapshot (a shallower one never fills).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_snapshot_bytes < MIN_SNAPSHOT_BYTES {
            return Err(ConfigError::SnapshotBytesTooSmall {
                bytes: self.max_snapshot_bytes,
            });
        }
        if self.byte_rate > 0 && self.burst_bytes < MIN_SNAPSHOT_BYTES {
            return Err(ConfigError::BurstTooSmall {
                bytes: self.burst_bytes,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q3_with_1024_entities_is_rejected_with_a_clear_error() {
        let config = ServerConfig {
            codec: Codec::Q3,
            ..ServerConfig::default()
        };
        let error = config.validate().unwrap_err();
        assert_eq!(
            error,
            ConfigError::EntityLimitExceedsCodec {
                codec: "q3",
                codec_limit: 1023,
                limit: 1024
            }
        );
        assert!(error.to_string().contains("1023"));
        assert_eq!(ServerConfig::for_codec(Codec::Q3).max_entities, 1023);
        assert!(ServerConfig::for_codec(Codec::Q3).validate().is_ok());
        assert_eq!(ServerConfig::for_codec(Codec::Native).max_entities, 1024);
    }

    #[test]
    fn bounds_are_checked() {
        let mut config = ServerConfig {
            max_entities: 0,
            ..ServerConfig::default()
        };
        assert_eq!(config.validate(), Err(ConfigError::NoEntities));
        config.max_entities = MAX_ENTITY_LIMIT + 1;
        assert!(matches!(
            config.validate(),
            Err(ConfigError::EntityLimitTooLarge { .. })
        ));
        let settings = ClientSettings {
            max_snapshot_bytes: 10,
            ..ClientSettings::default()
        };
        assert!(settings.validate().is_err());
        let settings = ClientSettings {
            burst_bytes: 0,
            ..ClientSettings::default()
        };
        assert_eq!(
            settings.validate(),
            Err(ConfigError::BurstTooSmall { bytes: 0 })
        );
        let unlimited = ClientSettings {
            burst_bytes: 0,
            ..ClientSettings::unlimited()
        };
        assert!(unlimited.validate().is_ok());
    }
}
