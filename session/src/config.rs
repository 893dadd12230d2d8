//! Settings of both ends, the schema fingerprint checked at connect, and
//! the netchan endpoint configurations that go with them.

use std::sync::Arc;
use std::time::Duration;

use fields::schema::combined_fingerprint;
use fields::{Codec, NetFields};
use netchan::{ConnectionConfig, EndpointConfig, RateAnnounce, StatusLimits};
use snapshot::{ClientSettings, Compact, Framing, Models};

/// The session protocol's own version, mixed into the handshake's version.
/// 2: snapshot sync checksums are XXH3 (`snapshot::checksum`), not FNV-1a:
/// a peer of version 1 would see every checksum fail.
/// 3: native value codes have a symbol for a field set to zero
/// (`fields::model::ZERO_SYMBOL`), and snapshot headers have a third flag
/// for chained snapshots (`snapshot::message`): a peer of version 2 would
/// read neither.
/// 4: a delta snapshot's header codes its frame and times against its
/// base's (`snapshot::message`).
/// 5: native entity lists name a removal by its place among the entities
/// the client holds (`fields::codec::HeldNumbers`): a peer of version 4
/// would read other removals.
/// 6: command packets have a "viewed" flag and may carry each command's
/// view stamp (`wire::CommandPacket`), for lag compensation.
/// 7: the gamestate message carries the client's player slot.
/// 8: snapshots are the engine's one message format
/// (`snapshot::framing::Compact`) and carry no sequence: a snapshot's
/// sequence is netchan's state id for its payload.
/// 9: a native entity new to the client whose spawn baseline holds zero in
/// a model's position axes is coded against the client's own position
/// (`fields::Codec::spawn_reads_anchor`): a peer of version 8 would place
/// it elsewhere.
/// 10: the gamestate's fingerprint folds in the native models' ids
/// (`snapshot::Models::fingerprint`): a peer of version 9 would refuse
/// every gamestate.
/// 11: the handshake's schema fingerprint folds in the snapshot framing's
/// name ([`ServerConfig::framing`]), so ends that frame snapshots
/// differently (bit stream or range-coded) refuse each other at connect.
/// 12: a native delta's header may name a history snapshot that
/// entities re-entering the view are coded from (`snapshot::history`):
/// a peer of version 11 would misread every delta header with an
/// exception.
/// 13: a range-coded entity entry's choice of start
/// (`fields::StartChoice`) takes the older state at chance 7/8, not 1/3:
/// a peer of version 12 would misread every re-entering entity.
/// 14: adapting models' chains start short and double
/// (`fields::model::AdaptPolicy::first_chain`), and a chain whose rebuild
/// started early carries the symbols after its start to the next chain:
/// a peer of version 13 would rebuild other models.
/// 15: a range-coded value codes four more bits below its leading one by
/// its model's chances, one per position (`fields::top_bits::DEEP_BITS`),
/// and models carry their counts: a peer of version 14 would misread
/// every value of five or more bits.
/// 16: a range-coded float's bit-pattern and grid classes, and an
/// integer's tick classes, code their first bits below the leading one by
/// their model's chances too (`fields::model::TOP_BITS_SYMBOLS`), and
/// models carry those counts: a peer of version 15 would misread every
/// such value of two or more bits.
/// 17: a bit-stream snapshot message leaves out its last byte when it is
/// zero (`snapshot::framing::MessageCoding::sent_len`): a peer of version
/// 16 would run out of bits in a quarter of the messages.
/// 18: a range-coded value class its model never counted (the float
/// bit-pattern classes, any class a field never used in training) has
/// its bits below the leading one read raw, not by an even tree
/// (`fields::top_bits::TopBitChances::from_counts`): a peer of version 17
/// would misread those values' bits.
/// 19: a delta whose baseline holds fractional rates takes its model's
/// replacement predictors when the clocks they read advanced by at most
/// the elapsed time (not only exactly by it), and a
/// `fields::model::Predictor::Differentiate` whose position moved slower
/// than one unit a second codes the rate from its baseline: a peer of
/// version 18 would misread such deltas (a live Quake 3 client's player
/// state, from OpenArena).
/// 20: a float without a grid whose low nine significand bits are zero
/// (a velocity's clipping residue, from OpenArena) is coded in coarse
/// bit-pattern steps on the grid symbols: a peer of version 19 would
/// refuse such symbols.
/// 21: range-coded values code five bits after the top-bit tree by their
/// own chances (`fields::top_bits::DEEP_BITS`, was four), and a top-bit
/// chance leans towards even by more imaginary observations: a peer of
/// version 20 would misread range-coded values.
pub const SESSION_VERSION: u32 = 21;

/// The handshake's schema fingerprint for entity type `E`, player state
/// `P` and command `C`: their tables, the codec, the snapshot framing
/// ([`Compact`] here) and (native codec) the trained models, so a client
/// that would code anything differently is rejected at connect with
/// [`crate::DisconnectReason::SchemaMismatch`].
pub fn schema_fingerprint<E: NetFields, P: NetFields, C: NetFields>(codec: Codec) -> u64 {
    schema_fingerprint_with::<E, P, C>(codec, &Models::of_types(), &Compact)
}

/// [`schema_fingerprint`] of ends that code snapshots with `models` (see
/// [`snapshot::models`]) and frame them with `framing`: a client given
/// other models or another framing than the server's is rejected at
/// connect.
pub fn schema_fingerprint_with<E: NetFields, P: NetFields, C: NetFields>(
    codec: Codec,
    models: &Models,
    framing: &dyn Framing,
) -> u64 {
    let tables =
        combined_fingerprint(&[&E::TABLE.schema(), &P::TABLE.schema(), &C::TABLE.schema()]);
    // FNV-1a of the codec and the models, on top of the tables.
    let mut hash = tables ^ 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &byte in bytes {
            hash = (hash ^ byte as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    eat(codec.name().as_bytes());
    eat(framing.name().as_bytes());
    if codec == Codec::Native {
        let [entity, player] = models.ids(&E::default(), &P::default());
        let command = C::static_native_model().map_or(0, |m| m.id());
        for id in [entity, player, command] {
            eat(&id.to_le_bytes());
        }
    }
    hash
}

/// How a server runs.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Wire format of every delta (snapshots and commands).
    pub codec: Codec,
    /// Entity numbers `0..max_entities`.
    pub max_entities: u32,
    /// A sync checksum every this many snapshots to a client (0: none).
    pub checksum_interval: u32,
    /// Player slots; a client beyond them is rejected as "server full".
    pub max_clients: usize,
    /// Most reliable commands queued or unacknowledged to one client;
    /// beyond it the client is disconnected with
    /// [`crate::DisconnectReason::ReliableOverflow`] (Quake 3's
    /// `MAX_RELIABLE_COMMANDS`).
    pub max_reliable: usize,
    /// The game's protocol version (both ends must agree).
    pub game_version: u32,
    /// A keyframe in a recording every this many ms of server time.
    pub keyframe_ms: u32,
    /// Netchan settings of every connection (idle timeout, rates…).
    pub connection: ConnectionConfig,
    /// Lag compensation: the furthest [`crate::Server::rewind`] reaches back
    /// behind the newest frame, ms (clamped to
    /// [`snapshot::rewind::REWIND_LIMIT_MS`]). A client's view older than
    /// this is rewound to this much only.
    pub max_rewind_ms: u32,
    /// The native models snapshots are coded with (default: the types'
    /// own). Clients must be given the same ones: the handshake refuses
    /// a client whose models differ.
    pub models: Models,
    /// How snapshot messages are framed and coded (default [`Compact`], a
    /// bit stream; [`snapshot::CompactRange`] range-codes the same
    /// message, smaller for the native codec). Clients must frame theirs
    /// the same way: the handshake refuses one that does not.
    pub framing: Arc<dyn Framing>,
}

/// [`ServerConfig::max_rewind_ms`]'s default: 200 ms.
pub const DEFAULT_MAX_REWIND_MS: u32 = 200;

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            codec: Codec::Native,
            max_entities: 1024,
            checksum_interval: 8,
            max_clients: 64,
            max_reliable: 128,
            game_version: 1,
            keyframe_ms: 5000,
            connection: ConnectionConfig::default(),
            max_rewind_ms: DEFAULT_MAX_REWIND_MS,
            models: Models::of_types(),
            framing: Arc::new(Compact),
        }
    }
}

impl ServerConfig {
    /// The netchan endpoint configuration of a server for `E`, `P`, `C`.
    pub fn endpoint<E: NetFields, P: NetFields, C: NetFields>(&self) -> EndpointConfig {
        let mut endpoint = EndpointConfig::server();
        endpoint.protocol_version = protocol_version(self.game_version);
        endpoint.schema_fingerprint =
            schema_fingerprint_with::<E, P, C>(self.codec, &self.models, &*self.framing);
        endpoint.connection = self.connection.clone();
        if let Some(server) = endpoint.server.as_mut() {
            // Headroom over the player slots: a client whose accept was lost
            // starts a fresh handshake while its first connection still
            // counts (pending or closing) in netchan. The session itself
            // refuses a client beyond the slots, saying the server is full.
            let headroom = self.max_clients / 4 + 4;
            server.max_clients = self.max_clients + headroom;
            server.max_pending = server.max_pending.max(self.max_clients + headroom);
            // A client still talking to a connection this server does not
            // hold (it restarted, or every disconnect notice was lost) is
            // told at once and reconnects, instead of waiting out its idle
            // timeout.
            // Several players may share an address (a LAN, a NAT): each
            // address gets room for a burst from all of them at once.
            server.unknown_connection_replies = Some(StatusLimits {
                per_source_rate: 10,
                per_source_burst: 32,
                ..StatusLimits::default()
            });
        }
        endpoint
    }
}

/// How a client connects and plays.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Player name sent in the hello.
    pub name: String,
    /// The client id (Quake 3's qport), nonzero: it lets the server follow
    /// the client to a new port after a NAT rebinding, and must differ
    /// between clients behind one IP address. [`ClientConfig::default`]
    /// draws a random one from the operating system for each configuration;
    /// [`ClientConfig::named`] derives one from the name (reproducible, for
    /// bots and tests: give such clients distinct names).
    pub client_id: u32,
    /// Snapshots per second wanted.
    pub snaps: u32,
    /// Bytes per second the client can receive.
    pub rate: u32,
    /// Most command packets per second (Quake 3's `cl_maxpackets`),
    /// whatever the frame rate.
    pub max_packets: u32,
    /// Most commands waiting for acknowledgement; a command beyond it is
    /// refused ([`crate::SessionError::CommandQueueFull`]), never dropped
    /// silently.
    pub max_pending_commands: usize,
    /// Keep retrying a connect this long (Quake 3 retries until the user
    /// gives up; `None`: forever).
    pub connect_deadline: Option<Duration>,
    /// Reconnect on its own when the server restarts or times out.
    pub reconnect: bool,
    /// Wire format (must match the server's).
    pub codec: Codec,
    /// The game's protocol version (must match the server's).
    pub game_version: u32,
    /// Netchan settings of the connection.
    pub connection: ConnectionConfig,
    /// The native models snapshots are decoded with (must be the
    /// server's: see [`ServerConfig::models`]).
    pub models: Models,
    /// How snapshot messages are framed (must be the server's: see
    /// [`ServerConfig::framing`]).
    pub framing: Arc<dyn Framing>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            name: "player".into(),
            client_id: random_client_id(),
            snaps: 20,
            rate: 25_000,
            max_packets: 30,
            max_pending_commands: 512,
            connect_deadline: Some(Duration::from_secs(60)),
            reconnect: true,
            codec: Codec::Native,
            game_version: 1,
            connection: ConnectionConfig::default(),
            models: Models::of_types(),
            framing: Arc::new(Compact),
        }
    }
}

impl ClientConfig {
    /// Defaults with a name (and a client id derived from it).
    pub fn named(name: &str) -> ClientConfig {
        let id = name.bytes().fold(0x811c_9dc5u32, |h, b| {
            (h ^ b as u32).wrapping_mul(0x0100_0193)
        });
        ClientConfig {
            name: name.into(),
            client_id: id | 1,
            ..ClientConfig::default()
        }
    }

    /// The netchan endpoint configuration of a client for `E`, `P`, `C`:
    /// its receive rate announced, its packet rate capped, and handshake
    /// retries every quarter second (a handshake packet is small, and a
    /// client coming back to a restarted server should not wait long).
    pub fn endpoint<E: NetFields, P: NetFields, C: NetFields>(&self) -> EndpointConfig {
        let mut endpoint = EndpointConfig::client();
        endpoint.protocol_version = protocol_version(self.game_version);
        endpoint.schema_fingerprint =
            schema_fingerprint_with::<E, P, C>(self.codec, &self.models, &*self.framing);
        endpoint.handshake_retry = Duration::from_millis(250);
        endpoint.handshake_retry_max = Duration::from_millis(250);
        endpoint.connection = self.connection.clone();
        endpoint.connection.receive_rate = RateAnnounce {
            bytes_per_sec: self.rate,
            packets_per_sec: (self.snaps * 2).clamp(30, 1000) as u16,
        };
        // Room for the command packets and the acks of what arrives.
        endpoint.connection.send_rate = RateAnnounce {
            bytes_per_sec: RateAnnounce::UNLIMITED.bytes_per_sec,
            packets_per_sec: self.max_packets.clamp(1, 1000) as u16,
        };
        endpoint
    }
}

/// A random nonzero client id from the operating system's random source.
fn random_client_id() -> u32 {
    let secret = netchan::random_secret();
    let id = u32::from_le_bytes([secret[0], secret[1], secret[2], secret[3]]);
    id.max(1)
}

fn protocol_version(game: u32) -> u32 {
    SESSION_VERSION << 24 ^ game
}

/// The snapshot stream a client asked for: its snapshot rate, and a byte
/// budget a little under its announced rate so that netchan (which also
/// carries acks and reliable commands at that rate) is never the one
/// holding snapshots back.
pub fn client_settings(snaps: u32, rate: u32) -> ClientSettings {
    let snaps = snaps.clamp(1, 1000);
    let rate = rate.clamp(1000, 10_000_000);
    let byte_rate = rate / 10 * 8;
    // At most netchan's largest message (16 KiB by default) less the
    // epoch byte the snapshot travels after.
    let per_snapshot = (byte_rate / snaps).clamp(256, 16 * 1024 - 1);
    ClientSettings {
        snapshot_rate: snaps,
        byte_rate,
        // A full update after joining may take two snapshots' worth at once.
        burst_bytes: (per_snapshot * 2).max(1024),
        max_snapshot_bytes: per_snapshot.max(512),
        auto_ack: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_client_ids_are_random_and_named_ones_reproducible() {
        let ids: std::collections::HashSet<u32> =
            (0..16).map(|_| ClientConfig::default().client_id).collect();
        // 16 draws of 32 random bits: a collision has odds of about 3e-8.
        assert_eq!(ids.len(), 16);
        assert!(!ids.contains(&0));
        assert_eq!(
            ClientConfig::named("ada").client_id,
            ClientConfig::named("ada").client_id
        );
        assert_ne!(
            ClientConfig::named("ada").client_id,
            ClientConfig::named("bob").client_id
        );
    }

    #[test]
    fn client_settings_follow_the_requested_rates() {
        let s = client_settings(20, 25_000);
        assert_eq!(s.snapshot_rate, 20);
        assert_eq!(s.byte_rate, 20_000);
        assert_eq!(s.max_snapshot_bytes, 1000);
        assert!(s.validate().is_ok());
        // Nonsense from the network is clamped into something valid.
        assert!(client_settings(0, 0).validate().is_ok());
        assert!(client_settings(u32::MAX, u32::MAX).validate().is_ok());
    }
}
