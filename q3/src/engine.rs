//! Quake 3 snapshots through the library's snapshot engine.
//!
//! * [`Quake3Framing`] — Quake 3's `svc_snapshot` as a
//!   [`snapshot::Framing`]: a [`snapshot::Server`] configured with
//!   [`Codec::Q3`] and this framing writes real Quake 3 snapshot commands,
//!   bit for bit what a Quake 3 server sends (command byte, server time,
//!   delta number, flags, area mask, the q3 codec's player state and
//!   entities, all through Quake 3's Huffman code in bitstream mode), and a
//!   [`snapshot::Client`] with it reads them.
//! * [`EngineReplay`] — drives a [`snapshot::Server`] with the snapshots a
//!   Quake 3 server sent one client (from a `.dm_68` or a live session),
//!   numbered with their message numbers, acknowledged so that every one is
//!   sent against the base Quake 3 used, so what the engine writes is
//!   measured on Quake 3's own streams. With [`Codec::Native`] and the
//!   engine's [`Compact`] framing it is what the library sends; with
//!   [`Codec::Q3`] and [`Quake3Framing`] it is what Quake 3 sent.
//!
//! ## A relay
//!
//! A server that lets real Quake 3 clients watch a game keeps one
//! [`snapshot::Server`] with [`Codec::Q3`] and [`Quake3Framing`], and per
//! spectator a client of it. Each frame, for each spectator, it writes the
//! Quake 3 server message — sequence and reliable acknowledge, then the
//! `svc_serverCommand`s due, through a [`HuffmanWriter`](fields::HuffmanWriter)
//! on the message's [`BitWriter`](fields::BitWriter) — sets the snapshot's
//! number ([`snapshot::Server::set_next_sequence`], the netchan's outgoing
//! sequence) and calls [`snapshot::Server::build_snapshot_into`] on the same
//! writer: the `svc_snapshot` is appended, coded against the spectator's
//! newest acknowledged snapshot (Quake 3 clients acknowledge the newest
//! message they received in every usercmd packet; pass it to
//! [`snapshot::Server::acknowledge`]). Then `svc_EOF` through the Huffman
//! writer again. The spectator's flags (`SNAPFLAG_NOT_ACTIVE`, the
//! server-count toggle) and area mask are set per client
//! ([`snapshot::Server::set_snapshot_flags`],
//! [`snapshot::Server::set_area_mask`]); the framing carries no sync
//! checksum and no chained snapshots, so the server sends neither.

use std::sync::Arc;

use fields::model::AdaptPolicy;
use fields::{BitError, BitSink, BitSource, Codec, HuffmanCode};
use snapshot::framing::{
    AreaMask, BaseInfo, Bases, Delivery, Framing, SnapshotHeader, MAX_AREA_MASK,
};
use snapshot::replay::{Recorded, Replay};
pub use snapshot::replay::{ReplayError, Replayed};
use snapshot::{ClientError, ClientId, Compact, Models, Server, ServerConfig};

use crate::message::svc;
use crate::snapshot::{Baselines, Snapshot};
use crate::tables::{EntityState, PlayerState};

/// Quake 3's `svc_snapshot` command as a [`Framing`] (see the
/// [module docs](self)).
///
/// Its header is the command byte, the server time (32 bits), the delta
/// number (8 bits: the distance, 0 for a full snapshot), the flags byte,
/// and the area mask's length byte and bytes. Quake 3 has no frame
/// numbers: a snapshot read with this framing has its server time as its
/// frame.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quake3Framing;

impl Framing for Quake3Framing {
    fn name(&self) -> &'static str {
        "quake3"
    }

    fn accepts(&self, codec: Codec) -> bool {
        codec == Codec::Q3
    }

    fn huffman(&self) -> Option<&'static HuffmanCode> {
        Some(HuffmanCode::quake3())
    }

    fn carries_checksums(&self) -> bool {
        false
    }

    fn carries_chains(&self) -> bool {
        false
    }

    fn write_header(
        &self,
        sink: &mut dyn BitSink,
        header: &SnapshotHeader,
        _base: Option<&BaseInfo>,
    ) -> Result<(), BitError> {
        if header.via_time.is_some() || header.has_checksum {
            return Err(BitError::invalid(
                "svc_snapshot",
                sink.bits_written(),
                "Quake 3's snapshot carries neither a chain nor a checksum",
            ));
        }
        let distance = header.distance();
        let delta_num = u8::try_from(distance).map_err(|_| {
            BitError::invalid(
                "svc_snapshot",
                sink.bits_written(),
                format!("delta distance {distance} does not fit a byte"),
            )
        })?;
        sink.put_u8(svc::SNAPSHOT)?;
        sink.put_bits(header.server_time, 32)?;
        sink.put_u8(delta_num)?;
        sink.put_u8(header.flags)?;
        sink.put_u8(header.area_mask.len() as u8)?;
        sink.put_bytes(header.area_mask.as_bytes())
    }

    fn read_header(
        &self,
        source: &mut dyn BitSource,
        sequence: u32,
        held: &dyn Bases,
    ) -> Result<SnapshotHeader, ClientError> {
        let position = source.bits_read();
        let command = source.get_u8()?;
        if command != svc::SNAPSHOT {
            return Err(ClientError::Malformed(BitError::invalid(
                "svc_snapshot",
                position,
                format!("command byte {command} is not svc_snapshot"),
            )));
        }
        let server_time = source.get_bits(32)?;
        let distance = u32::from(source.get_u8()?);
        let flags = source.get_u8()?;
        let position = source.bits_read();
        let len = usize::from(source.get_u8()?);
        if len > MAX_AREA_MASK {
            return Err(ClientError::Malformed(BitError::invalid(
                "area mask",
                position,
                format!("{len} bytes exceed {MAX_AREA_MASK}"),
            )));
        }
        let mut bytes = [0u8; MAX_AREA_MASK];
        source.get_bytes(&mut bytes[..len])?;
        let base = match distance {
            0 => None,
            _ => {
                let named = sequence
                    .checked_sub(distance)
                    .ok_or(ClientError::BadDeltaDistance { sequence, distance })?;
                Some(held.base(named).ok_or(ClientError::BaseMissing {
                    sequence,
                    base: named,
                })?)
            }
        };
        let mut header = SnapshotHeader {
            sequence,
            frame: server_time,
            server_time,
            base: base.map(|b| b.sequence),
            flags,
            area_mask: AreaMask::new(&bytes[..len]).unwrap_or_default(),
            has_checksum: false,
            via_time: None,
            delivery: Delivery::FULL,
            history: None,
        };
        header.delivery = header.natural_delivery(base.as_ref());
        Ok(header)
    }
}

/// A [`snapshot::Server`] sending one client the snapshots a Quake 3
/// server sent (see the [module docs](self)): a
/// [`snapshot::replay::Replay`] of Quake 3's snapshots.
///
/// Every snapshot is numbered with its message number, and the base Quake 3
/// used is acknowledged just before it is built, so the engine deltas from
/// the same base. The engine's clock advances in server frames of
/// `frame_ms` (Quake 3's `1000 / sv_fps`): a snapshot of a later frame
/// commits the frames between, as a server runs them.
#[derive(Debug)]
pub struct EngineReplay {
    replay: Replay<EntityState, PlayerState>,
}

impl EngineReplay {
    /// A server sending with `codec` in `framing`, whose gamestate holds
    /// `baselines` (the non-zero ones), on a clock of `frame_ms`
    /// milliseconds per server frame (at least 1).
    pub fn new(
        codec: Codec,
        framing: Arc<dyn Framing>,
        baselines: &Baselines,
        frame_ms: u32,
    ) -> Result<Self, ReplayError> {
        Self::with_models(codec, framing, Models::of_types(), baselines, frame_ms)
    }

    /// The same as [`EngineReplay::new`], coding with `models` (given
    /// models, adapting ones: [`snapshot::Models`]).
    pub fn with_models(
        codec: Codec,
        framing: Arc<dyn Framing>,
        models: Models,
        baselines: &Baselines,
        frame_ms: u32,
    ) -> Result<Self, ReplayError> {
        let config = ServerConfig {
            checksum_interval: 0,
            ..ServerConfig::for_codec(codec)
        };
        let mut server = Server::new(config)?;
        server.set_framing(framing)?;
        server.set_models(models)?;
        for (number, state) in baselines.non_zero() {
            if number < server.config().max_entities {
                server.set_baseline(number, Some(*state))?;
            }
        }
        Ok(EngineReplay {
            replay: Replay::new(server, frame_ms)?,
        })
    }

    /// The library's own message format: [`Codec::Native`] in the
    /// [`Compact`] framing.
    pub fn native(baselines: &Baselines, frame_ms: u32) -> Result<Self, ReplayError> {
        Self::new(Codec::Native, Arc::new(Compact), baselines, frame_ms)
    }

    /// The library's own message format with the committed models adapting
    /// to the stream under `policy` ([`snapshot::adapt`]).
    pub fn native_adapting(
        baselines: &Baselines,
        frame_ms: u32,
        policy: AdaptPolicy,
    ) -> Result<Self, ReplayError> {
        Self::native_framed(baselines, frame_ms, Arc::new(Compact), Some(policy))
    }

    /// [`Codec::Native`] in `framing` (for example
    /// [`snapshot::CompactRange`]), the committed models adapting under
    /// `policy` if given.
    pub fn native_framed(
        baselines: &Baselines,
        frame_ms: u32,
        framing: Arc<dyn Framing>,
        policy: Option<AdaptPolicy>,
    ) -> Result<Self, ReplayError> {
        let models = Models::of_types().with_adaptation(policy);
        Self::with_models(Codec::Native, framing, models, baselines, frame_ms)
    }

    /// Quake 3's own format: [`Codec::Q3`] in [`Quake3Framing`].
    pub fn quake3(baselines: &Baselines, frame_ms: u32) -> Result<Self, ReplayError> {
        Self::new(Codec::Q3, Arc::new(Quake3Framing), baselines, frame_ms)
    }

    /// The server.
    pub fn server(&self) -> &Server<EntityState, PlayerState> {
        self.replay.server()
    }

    /// The one client's id.
    pub fn client(&self) -> ClientId {
        self.replay.client()
    }

    /// The gamestate message, for a [`snapshot::Client`] that reads the
    /// stream.
    pub fn write_gamestate(&mut self, out: &mut Vec<u8>) -> Result<(), ReplayError> {
        self.replay.write_gamestate(out)
    }

    /// Sends `snapshot` through the engine against the base Quake 3 used
    /// (`Snapshot::base_message`). A full snapshot is full in the engine
    /// too.
    pub fn send(&mut self, snapshot: &Snapshot) -> Result<Replayed<'_>, ReplayError> {
        self.replay.send(&Recorded {
            sequence: snapshot.message_num as u32,
            base: snapshot.base_message().map(|b| b as u32),
            server_time: snapshot.server_time as u32,
            flags: snapshot.snap_flags,
            area_mask: &snapshot.areamask,
            player: &snapshot.ps,
            entities: &snapshot.entities,
        })
    }
}

/// The server's frame length for a stream of snapshots at these server
/// times: their steps' greatest common divisor (Quake 3's `1000 / sv_fps`,
/// which protocol 68 does not send), or 1 with fewer than two.
pub fn frame_ms(server_times: impl IntoIterator<Item = i32>) -> u32 {
    fn gcd(a: u32, b: u32) -> u32 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    let mut last = None;
    let mut frame = 0u32;
    for time in server_times {
        if let Some(last) = last {
            frame = gcd(frame, time.wrapping_sub(last).unsigned_abs());
        }
        last = Some(time);
    }
    frame.max(1)
}
