//! Encoding a snapshot given as states, against a base given as states,
//! outside a [`Server`](crate::Server)'s history.
//!
//! The server builds every live snapshot from its own history and ack
//! state. Demo tools need the same message for snapshots they only hold as
//! decoded states: the full keyframe a client-side recording starts with,
//! the first snapshot of a cut, a delta moved onto a newer base, a snapshot
//! converted from another format. [`encode_snapshot`] writes that message
//! with the same pieces as [`Server::build_snapshot`](crate::Server::build_snapshot)
//! — [`SnapshotHeader`], the codec's player delta and entity list in
//! number order (changed entities from the base, new ones from their spawn
//! baseline or the zeroed entity, departed ones removed), the
//! [`SyncChecksum`] — so a [`Client`] decodes it exactly like a live one.
//! [`Client::encode_held`] does it for snapshots a client holds.

use fields::merge::write_entity_list;
use fields::{BitError, BitSink, BitWriter, Codec, DeltaContext, Fields};
use thiserror::Error;

use crate::checksum::{state_hash, SyncChecksum};
use crate::client::Client;
use crate::gamestate::{encode_growing, write_gamestate, Gamestate, GamestateHeader};
use crate::message::{BaseClock, SnapshotHeader};
use crate::received::Snapshot;
use crate::server::zeroed;

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
            player: &snapshot.player,
            entities: &snapshot.entities,
        }
    }
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

/// Writes `snapshot` as a message into `out` (replacing its contents): a
/// delta from `base`, or a full update when `base` is `None`. New entities
/// delta from `gamestate`'s spawn baselines, as on the client, or from
/// `zero_entity`, the type's zeroed dummy, which also carries the native
/// codec's model for the list's entity numbers.
pub fn encode_snapshot<E: Fields, P: Fields>(
    codec: Codec,
    gamestate: &Gamestate<E>,
    zero_entity: &E,
    snapshot: &SnapshotState<'_, E, P>,
    base: Option<&SnapshotState<'_, E, P>>,
    options: EncodeOptions,
    out: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    check_sorted(snapshot.entities)?;
    if let Some(base) = base {
        check_sorted(base.entities)?;
    }
    let header = SnapshotHeader {
        sequence: snapshot.sequence,
        frame: snapshot.frame,
        server_time: snapshot.server_time,
        base: base.map(|b| b.sequence),
        rate_delayed: options.rate_delayed,
        has_checksum: options.checksum,
        via_time: None,
    };
    let context = DeltaContext {
        elapsed_ms: base.map_or(0, |b| {
            snapshot.server_time.wrapping_sub(b.server_time) as i32
        }),
        spawn: false,
        anchor: None,
    };
    let zero_player = zeroed(snapshot.player);
    let base_player = base.map_or(&zero_player, |b| b.player);
    let held: &[(u32, E)] = base.map_or(&[], |b| b.entities);
    // Upper bound of a first guess; encode_growing doubles it as needed.
    let initial = 64 + 16 * (snapshot.entities.len() + held.len());
    encode_growing(out, initial, |w: &mut BitWriter<'_>| {
        header.write(
            w,
            base.map(|b| BaseClock {
                frame: b.frame,
                server_time: b.server_time,
            }),
        )?;
        codec.write_delta_in(
            &context.with_spawn(base.is_none()),
            w,
            base_player,
            snapshot.player,
        )?;
        write_entity_list(
            codec,
            &context,
            w,
            held,
            snapshot.entities,
            zero_entity,
            |number| gamestate.baseline(number),
        )?;
        if options.checksum {
            let mut checksum = SyncChecksum::new(state_hash(snapshot.player));
            for (number, state) in snapshot.entities {
                checksum.entity(*number, state_hash(state));
            }
            w.put_bits(checksum.finish(), 32)?;
        }
        Ok(())
    })?;
    Ok(())
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
        encode_snapshot(
            codec,
            gamestate,
            self.zero_and_fingerprint().0,
            &SnapshotState::from(snapshot),
            base.as_ref(),
            options,
            out,
        )
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
                live.read_message(&bytes).unwrap();
                // Full every 7th, else a delta from the previous one the copy holds.
                let base = (step % 7 != 0).then(|| info.sequence - 1);
                let options = EncodeOptions {
                    checksum: true,
                    ..EncodeOptions::default()
                };
                live.encode_held(info.sequence, base, options, &mut encoded)
                    .unwrap();
                let Received::Snapshot(report) = copy.read_message(&encoded).unwrap() else {
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
            player: &me,
            entities: &unsorted,
        };
        let result = encode_snapshot(
            Codec::Native,
            &gamestate,
            &Thing::default(),
            &state,
            None,
            EncodeOptions::default(),
            &mut out,
        );
        assert!(matches!(result, Err(EncodeError::Bits(_))));
        let far = SnapshotState {
            sequence: 2,
            entities: &[],
            ..state
        };
        let result = encode_snapshot(
            Codec::Native,
            &gamestate,
            &Thing::default(),
            &SnapshotState {
                entities: &[],
                ..state
            },
            Some(&far),
            EncodeOptions::default(),
            &mut out,
        );
        assert!(matches!(result, Err(EncodeError::Bits(_))));
    }
}
