//! Encoding a snapshot given as states, against a base given as states,
//! outside a [`Server`](crate::Server)'s history.
//!
//! The server builds every live snapshot from its own history and ack
//! state. Demo tools need the same message for snapshots they only hold as
//! decoded states: the full keyframe a client-side recording starts with,
//! the first snapshot of a cut, a delta moved onto a newer base, a snapshot
//! converted from another format. [`encode_snapshot`] writes that message
//! with the same pieces as [`Server::build_snapshot`](crate::Server::build_snapshot)
//! — the framing's header, the codec's player delta and entity list in
//! number order (changed entities from the base, new ones from their spawn
//! baseline or the zeroed entity, departed ones removed), the
//! [`SyncChecksum`] — so a [`Client`] decodes it exactly like a live one.
//! [`Client::encode_held`] does it for snapshots a client holds.

use fields::merge::write_entity_list;
use fields::{BitError, BitSink, Codec, DeltaContext, Fields};
use thiserror::Error;

use crate::checksum::{state_hash, SyncChecksum};
use crate::client::Client;
use crate::framing::{AreaMask, BaseInfo, Delivery, Framing, SnapshotHeader, RATE_DELAYED};
use crate::gamestate::{encode_growing, write_gamestate, Gamestate, GamestateHeader};
use crate::models::Models;
use crate::received::Snapshot;
use crate::server::zeroed;
use crate::writer::encode_message;

/// A snapshot as states: what a client holds after decoding it.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotState<'a, E, P> {
    /// Its sequence number.
    pub sequence: u32,
    /// The server frame it shows.
    pub frame: u32,
    /// That frame's server time (ms); a delta's predictors use the time
    /// elapsed since its base's.
    pub server_time: u32,
    /// Its flags (see [`Server::set_snapshot_flags`](crate::Server::set_snapshot_flags)).
    pub flags: u8,
    /// Its area mask (at most [`MAX_AREA_MASK`](crate::framing::MAX_AREA_MASK) bytes).
    pub area_mask: &'a [u8],
    /// How it was first delivered, when the message re-encodes it (a
    /// keyframe of a recording, a re-based delta): the message states it,
    /// so the messages that were coded against it decode as they did.
    /// `None`: the message delivers it for the first time.
    pub delivery: Option<Delivery>,
    /// The player state.
    pub player: &'a P,
    /// Every entity as `(number, state)`, sorted by number, no duplicates.
    pub entities: &'a [(u32, E)],
}

impl<'a, E, P> From<&'a Snapshot<E, P>> for SnapshotState<'a, E, P> {
    fn from(snapshot: &'a Snapshot<E, P>) -> Self {
        SnapshotState {
            sequence: snapshot.sequence,
            frame: snapshot.frame,
            server_time: snapshot.server_time,
            flags: snapshot.flags,
            area_mask: snapshot.area_mask.as_bytes(),
            delivery: Some(snapshot.delivery),
            player: &snapshot.player,
            entities: &snapshot.entities,
        }
    }
}

impl<E, P> SnapshotState<'_, E, P> {
    /// What a header coded against it needs of it.
    fn base_info(&self) -> Result<BaseInfo, BitError> {
        Ok(BaseInfo {
            sequence: self.sequence,
            frame: self.frame,
            server_time: self.server_time,
            flags: self.flags,
            area_mask: area_mask(self.area_mask)?,
            delivery: self.delivery.unwrap_or(Delivery::FULL),
        })
    }
}

fn area_mask(bytes: &[u8]) -> Result<AreaMask, BitError> {
    AreaMask::new(bytes).ok_or_else(|| {
        BitError::invalid(
            "area mask",
            0,
            format!(
                "{} bytes exceed {}",
                bytes.len(),
                crate::framing::MAX_AREA_MASK
            ),
        )
    })
}

/// Header flags of an encoded snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EncodeOptions {
    /// Set the rate-delayed flag.
    pub rate_delayed: bool,
    /// Append a sync checksum of the whole state.
    pub checksum: bool,
}

/// Why a snapshot could not be encoded.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum EncodeError {
    /// The client has received no gamestate (no codec, no baselines).
    #[error("no gamestate received: nothing can be encoded before one")]
    NoGamestate,
    /// A snapshot the client does not hold (never received, or gone from its ring).
    #[error("snapshot {sequence} is not held by the client")]
    NotHeld {
        /// The sequence asked for.
        sequence: u32,
    },
    /// The message could not be written: an unsorted entity list, a base
    /// more than [`MAX_DELTA_DISTANCE`](crate::config::MAX_DELTA_DISTANCE)
    /// back, an entity number the codec cannot carry.
    #[error("encoding the snapshot: {0}")]
    Bits(#[from] BitError),
}

/// What [`encode_snapshot`] writes with: the stream's framing, codec and
/// gamestate.
#[derive(Clone, Copy)]
pub struct EncodeSetup<'a, E> {
    /// The framing of the stream.
    pub framing: &'a dyn Framing,
    /// The codec of the stream.
    pub codec: Codec,
    /// The gamestate: new entities delta from its spawn baselines.
    pub gamestate: &'a Gamestate<E>,
    /// The entity type's zeroed dummy (new entities without a baseline
    /// delta from it; it carries the native codec's model).
    pub zero_entity: &'a E,
    /// The native models to code with (the reader's: see
    /// [`crate::models`]); `None`: the types' own.
    pub models: Option<&'a Models>,
}

impl<E> std::fmt::Debug for EncodeSetup<'_, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EncodeSetup")
            .field("framing", &self.framing)
            .field("codec", &self.codec)
            .finish_non_exhaustive()
    }
}

/// Writes `snapshot` as a message into `out` (replacing its contents): a
/// delta from `base`, or a full update when `base` is `None`. New entities
/// delta from the gamestate's spawn baselines, as on the client, or from
/// the zeroed dummy. Returns the snapshot's delivery as the receiver will
/// hold it; `base` must carry its own (its `delivery`, which `None` takes
/// as a full update's), since the header is coded against it.
pub fn encode_snapshot<E: Fields, P: Fields>(
    setup: &EncodeSetup<'_, E>,
    snapshot: &SnapshotState<'_, E, P>,
    base: Option<&SnapshotState<'_, E, P>>,
    options: EncodeOptions,
    out: &mut Vec<u8>,
) -> Result<Delivery, EncodeError> {
    check_sorted(snapshot.entities)?;
    if let Some(base) = base {
        check_sorted(base.entities)?;
    }
    let framing = setup.framing;
    let codec = setup.codec;
    let base_info = base.map(SnapshotState::base_info).transpose()?;
    let mut header = SnapshotHeader {
        sequence: snapshot.sequence,
        frame: snapshot.frame,
        server_time: snapshot.server_time,
        base: base.map(|b| b.sequence),
        flags: if options.rate_delayed {
            snapshot.flags | RATE_DELAYED
        } else {
            snapshot.flags
        },
        area_mask: area_mask(snapshot.area_mask)?,
        has_checksum: options.checksum && framing.carries_checksums(),
        via_time: None,
        delivery: Delivery::FULL,
        // Re-encoded from states alone: no history (see `crate::history`).
        history: None,
    };
    header.delivery = snapshot
        .delivery
        .unwrap_or_else(|| header.natural_delivery(base_info.as_ref()));
    let context = DeltaContext {
        elapsed_ms: base.map_or(0, |b| {
            snapshot.server_time.wrapping_sub(b.server_time) as i32
        }),
        spawn: false,
        anchor: fields::codec::anchor_with(
            setup.models.and_then(|m| m.player()).map(|m| &**m),
            snapshot.player,
        ),
        server_time: Some(snapshot.server_time),
    };
    let zero_player = zeroed(snapshot.player);
    let base_player = base.map_or(&zero_player, |b| b.player);
    let held: &[(u32, E)] = base.map_or(&[], |b| b.entities);
    // Upper bound of a first guess; encode_growing doubles it as needed.
    let initial = 64 + 16 * (snapshot.entities.len() + held.len());
    encode_message(out, initial, framing.coding(), |w| {
        framing.write_header(w, &header, base_info.as_ref())?;
        let no_models = Models::of_types();
        let models = setup.models.unwrap_or(&no_models);
        models.player_codec(codec).write_delta_in(
            &context.with_spawn(base.is_none()).with_anchor(None),
            w,
            base_player,
            snapshot.player,
        )?;
        write_entity_list(
            models.entity_codec(codec),
            &context,
            w,
            held,
            snapshot.entities,
            setup.zero_entity,
            |number| setup.gamestate.baseline(number),
        )?;
        if header.has_checksum {
            let mut checksum = SyncChecksum::new(state_hash(snapshot.player));
            for (number, state) in snapshot.entities {
                checksum.entity(*number, state_hash(state));
            }
            w.put_bits(checksum.finish(), 32)?;
        }
        Ok(())
    })?;
    Ok(header.delivery)
}

fn check_sorted<E>(entities: &[(u32, E)]) -> Result<(), BitError> {
    match entities.windows(2).find(|pair| pair[0].0 >= pair[1].0) {
        Some(pair) => Err(BitError::invalid(
            "entity list",
            0,
            format!(
                "entity {} follows {}: lists must be sorted without duplicates",
                pair[1].0, pair[0].0
            ),
        )),
        None => Ok(()),
    }
}

impl<E: Fields, P: Fields> Client<E, P> {
    /// Re-encodes held snapshot `sequence` as a message, a full update when
    /// `base` is `None`, else a delta from held snapshot `base`. Fed to a
    /// client holding the same gamestate (and `base`), it decodes to exactly
    /// the held state: a client-side recording starts with such a full
    /// update, and moves a delta whose base it did not record onto one it did.
    pub fn encode_held(
        &self,
        sequence: u32,
        base: Option<u32>,
        options: EncodeOptions,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let (Some(codec), Some(gamestate)) = (self.codec(), self.gamestate()) else {
            return Err(EncodeError::NoGamestate);
        };
        let snapshot = self
            .snapshot(sequence)
            .ok_or(EncodeError::NotHeld { sequence })?;
        let base = match base {
            Some(base) => Some(SnapshotState::from(
                self.snapshot(base)
                    .ok_or(EncodeError::NotHeld { sequence: base })?,
            )),
            None => None,
        };
        let setup = EncodeSetup {
            framing: &**self.framing(),
            codec,
            gamestate,
            zero_entity: self.zero_and_fingerprint().0,
            models: Some(self.models()),
        };
        encode_snapshot(
            &setup,
            &SnapshotState::from(snapshot),
            base.as_ref(),
            options,
            out,
        )
        .map(|_| ())
    }

    /// Encodes the gamestate the client holds now — the one it received,
    /// with every configstring change since applied — as a gamestate
    /// message: what a recording started mid-game begins with.
    pub fn encode_gamestate(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let (Some(codec), Some(entity_limit), Some(gamestate)) =
            (self.codec(), self.entity_limit(), self.gamestate())
        else {
            return Err(EncodeError::NoGamestate);
        };
        let (zero_entity, _, fingerprint) = self.zero_and_fingerprint();
        let header = GamestateHeader {
            codec,
            entity_limit,
            fingerprint,
        };
        encode_growing(out, 1024, |w| {
            write_gamestate(w, &header, gamestate, zero_entity)
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AllInScope, BuildOutcome, ClientSettings, Received, Server, ServerConfig};
    use fields::{net_struct, q3_float, signed, unsigned};

    net_struct! {
        struct Thing {
            a: u16 = unsigned(12),
            x: f32 = q3_float(),
        }
    }
    net_struct! {
        struct Me {
            h: i16 = signed(10),
        }
    }

    /// A server whose entities come and go and change, a client following
    /// it, and a second client fed only re-encodings of what the first holds.
    #[test]
    fn re_encoded_snapshots_decode_to_the_held_states() {
        for codec in [Codec::Q3, Codec::Native] {
            let mut server: Server<Thing, Me> = Server::new(ServerConfig {
                checksum_interval: 3,
                ..ServerConfig::for_codec(codec)
            })
            .unwrap();
            server
                .set_baseline(5, Some(Thing { a: 9, x: 2.0 }))
                .unwrap();
            let id = server.add_client(ClientSettings::unlimited()).unwrap();
            let mut live: Client<Thing, Me> = Client::new();
            let mut copy: Client<Thing, Me> = Client::new();
            server.set_configstring(3, "before").unwrap();
            let mut bytes = Vec::new();
            server.write_gamestate(&mut bytes).unwrap();
            live.read_message(&bytes).unwrap();
            server.set_configstring(3, "changed").unwrap();
            server.write_configstring(3, &mut bytes).unwrap();
            live.read_message(&bytes).unwrap();
            // The copy starts from the live client's current gamestate.
            live.encode_gamestate(&mut bytes).unwrap();
            copy.read_message(&bytes).unwrap();
            assert_eq!(copy.gamestate(), live.gamestate());
            assert_eq!(copy.gamestate().unwrap().configstring(3), Some("changed"));
            let mut encoded = Vec::new();
            for step in 0u32..40 {
                for n in 0..8u32 {
                    if (n + step) % 5 == 0 {
                        server.remove_entity(n);
                    } else {
                        let thing = Thing {
                            a: (n * 7 + step) as u16 % 4096,
                            x: (step as f32) * 0.5 + n as f32,
                        };
                        server.set_entity(n, thing).unwrap();
                    }
                }
                server.player_state_mut(id).unwrap().h = step as i16 - 20;
                server.commit_frame(step * 50).unwrap();
                let BuildOutcome::Built(info) = server
                    .build_snapshot(id, &mut AllInScope, &mut bytes)
                    .unwrap()
                else {
                    panic!("unlimited clients get every frame")
                };
                // Acknowledge only every other one, so bases vary.
                if step % 2 == 0 {
                    server.acknowledge(id, info.sequence).unwrap();
                }
                live.read_snapshot(info.sequence, &bytes).unwrap();
                // Full every 7th, else a delta from the previous one the copy holds.
                let base = (step % 7 != 0).then(|| info.sequence - 1);
                let options = EncodeOptions {
                    checksum: true,
                    ..EncodeOptions::default()
                };
                live.encode_held(info.sequence, base, options, &mut encoded)
                    .unwrap();
                let Received::Snapshot(report) =
                    copy.read_snapshot(info.sequence, &encoded).unwrap()
                else {
                    panic!("a snapshot message")
                };
                assert_eq!(report.base, base);
                assert_eq!(report.sync, crate::SyncCheck::Matched);
                let (got, want) = (copy.newest().unwrap(), live.newest().unwrap());
                assert_eq!(got.player(), want.player());
                assert!(got.entities().eq(want.entities()));
                assert_eq!(got.server_time(), want.server_time());
            }
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        let client: Client<Thing, Me> = Client::new();
        let mut out = Vec::new();
        assert_eq!(
            client.encode_held(0, None, EncodeOptions::default(), &mut out),
            Err(EncodeError::NoGamestate)
        );
        let gamestate = Gamestate::new();
        let unsorted = [(3, Thing::default()), (3, Thing::default())];
        let me = Me::default();
        let state = SnapshotState {
            sequence: 40,
            frame: 0,
            server_time: 0,
            flags: 0,
            area_mask: &[],
            delivery: None,
            player: &me,
            entities: &unsorted,
        };
        let zero = Thing::default();
        let setup = EncodeSetup {
            framing: &crate::framing::Compact,
            codec: Codec::Native,
            gamestate: &gamestate,
            zero_entity: &zero,
            models: None,
        };
        let result = encode_snapshot(&setup, &state, None, EncodeOptions::default(), &mut out);
        assert!(matches!(result, Err(EncodeError::Bits(_))));
        let far = SnapshotState {
            sequence: 2,
            entities: &[],
            ..state
        };
        let result = encode_snapshot(
            &setup,
            &SnapshotState {
                entities: &[],
                ..state
            },
            Some(&far),
            EncodeOptions::default(),
            &mut out,
        );
        assert!(matches!(result, Err(EncodeError::Bits(_))));
        let masked = SnapshotState {
            entities: &[],
            area_mask: &[0; 33],
            ..state
        };
        let result = encode_snapshot(&setup, &masked, None, EncodeOptions::default(), &mut out);
        assert!(matches!(result, Err(EncodeError::Bits(_))));
        assert!(matches!(result, Err(EncodeError::Bits(_))));
    }
}
