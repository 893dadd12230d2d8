//! The spectators' snapshot stream: one [`snapshot::Server`] with the q3
//! codec and Quake 3's `svc_snapshot` framing ([`Quake3Framing`]) holds the
//! source's world as its master state, and every spectator is a client of
//! it with its own 32-slot ring, each snapshot a delta against the newest
//! one that spectator acknowledged.
//!
//! Quake 3 numbers a snapshot with the message that carries it, so each
//! spectator's next snapshot is numbered with its netchan's outgoing
//! sequence; its acknowledgements come from its usercmd packets: `clc_move`
//! names the newest message it holds a snapshot from, `clc_moveNoDelta`
//! says it holds none usable (`SV_ExecuteClientMessage`).

use std::sync::Arc;

use fields::{BitWriter, Codec};
use snapshot::{
    AllInScope, BuildOutcome, ClientId, ClientSettings, Server, ServerConfig, ServerError,
    SnapshotInfo,
};

use super::view::follow_view;
use crate::engine::Quake3Framing;
use crate::snapshot::{Baselines, Snapshot};
use crate::tables::{EntityState, PlayerState};

/// Quake 3's `SNAPFLAG_NOT_ACTIVE`: the client has not entered the game
/// yet (sent to primed clients, which do not go active on such a snapshot).
pub const SNAPFLAG_NOT_ACTIVE: u8 = 2;
/// Quake 3's `SNAPFLAG_SERVERCOUNT`: toggles with each server spawn (the
/// client takes the next snapshot as a teleport).
pub const SNAPFLAG_SERVERCOUNT: u8 = 4;

/// Largest snapshot the stream writes: room is left in Quake 3's 16384-byte
/// message for the reliable commands before it (entities beyond wait, by
/// priority, for the next snapshot).
pub const MAX_SNAPSHOT_BYTES: u32 = 12_000;

/// The source's world and every spectator's delta stream of it.
#[derive(Debug)]
pub struct SnapshotStream {
    server: Server<EntityState, PlayerState>,
    /// The entity numbers of the current frame (to remove the ones gone).
    numbers: Vec<u32>,
    /// The source's player state, as every spectator sees it.
    view: PlayerState,
    /// The source's flags (the server-count toggle), the rate flag cleared.
    flags: u8,
    area_mask: Vec<u8>,
    /// The current frame's server time.
    time: Option<i32>,
}

impl SnapshotStream {
    /// A stream for a gamestate with these baselines (a new gamestate needs a
    /// new stream: its clients start again from full snapshots).
    pub fn new(baselines: &Baselines) -> Result<SnapshotStream, ServerError> {
        let config = ServerConfig {
            checksum_interval: 0,
            ..ServerConfig::for_codec(Codec::Q3)
        };
        let mut server = Server::new(config)?;
        server.set_framing(Arc::new(Quake3Framing))?;
        for (number, state) in baselines.non_zero() {
            if number < server.config().max_entities {
                server.set_baseline(number, Some(*state))?;
            }
        }
        Ok(SnapshotStream {
            server,
            numbers: Vec::new(),
            view: PlayerState::default(),
            flags: 0,
            area_mask: Vec::new(),
            time: None,
        })
    }

    /// The engine's server (its clients' statistics, the snapshots sent).
    pub fn server(&self) -> &Server<EntityState, PlayerState> {
        &self.server
    }

    /// The current frame's server time, once the source gave one.
    pub fn time(&self) -> Option<i32> {
        self.time
    }

    /// A new spectator: its first snapshot is full. Snapshots go out when
    /// the relay says (one per frame at most), so the engine's own rate
    /// control is off; the size limit keeps each message within Quake 3's.
    pub fn add_spectator(&mut self) -> Result<ClientId, ServerError> {
        let id = self.server.add_client(ClientSettings {
            max_snapshot_bytes: MAX_SNAPSHOT_BYTES,
            burst_bytes: MAX_SNAPSHOT_BYTES,
            ..ClientSettings::unlimited()
        })?;
        self.server.set_player_state(id, self.view)?;
        Ok(id)
    }

    /// A spectator gone: its history is released.
    pub fn remove_spectator(&mut self, id: ClientId) {
        let _ = self.server.remove_client(id);
    }

    /// Takes the source's next snapshot as the master state's next frame:
    /// its entities, its player state (marked as followed) for every
    /// spectator, its flags and area mask. Returns `false` (and changes
    /// nothing) for a snapshot not newer than the current frame: Quake 3's
    /// cgame stops on a server time that does not advance.
    pub fn set_frame(&mut self, snapshot: &Snapshot) -> Result<bool, ServerError> {
        if self.time.is_some_and(|time| snapshot.server_time <= time) {
            return Ok(false);
        }
        let limit = self.server.config().max_entities;
        let entities = &snapshot.entities;
        for &number in &self.numbers {
            if entities.binary_search_by_key(&number, |(n, _)| *n).is_err() {
                self.server.remove_entity(number);
            }
        }
        self.numbers.clear();
        for (number, state) in entities.iter().filter(|(n, _)| *n < limit) {
            match self.server.entity_mut(*number) {
                Some(entity) => *entity = *state,
                None => self.server.set_entity(*number, *state)?,
            }
            self.numbers.push(*number);
        }
        self.view = follow_view(&snapshot.ps);
        self.flags = snapshot.snap_flags & SNAPFLAG_SERVERCOUNT;
        self.area_mask.clear();
        self.area_mask.extend_from_slice(&snapshot.areamask);
        let ids: Vec<ClientId> = self.server.client_ids().collect();
        for id in ids {
            self.server.set_player_state(id, self.view)?;
            self.server.set_area_mask(id, &self.area_mask)?;
        }
        self.server.commit_frame(snapshot.server_time as u32)?;
        self.time = Some(snapshot.server_time);
        Ok(true)
    }

    /// Appends spectator `id`'s snapshot of the current frame to `out` (a
    /// Quake 3 server message after its reliable commands), numbered
    /// `message` (the netchan sequence that will carry it); `active` is
    /// whether the spectator has entered the game. `None` before the source
    /// gave a frame.
    pub fn write(
        &mut self,
        id: ClientId,
        message: i32,
        active: bool,
        out: &mut BitWriter<'_>,
    ) -> Result<Option<SnapshotInfo>, ServerError> {
        if self.time.is_none() {
            return Ok(None);
        }
        let flags = if active {
            self.flags
        } else {
            self.flags | SNAPFLAG_NOT_ACTIVE
        };
        self.server.set_snapshot_flags(id, flags)?;
        self.server.set_next_sequence(id, message as u32)?;
        match self.server.build_snapshot_into(id, &mut AllInScope, out)? {
            BuildOutcome::Built(info) => Ok(Some(info)),
            _ => Ok(None),
        }
    }

    /// The spectator holds the snapshot of message `message` (its
    /// `clc_move`'s acknowledge): the base of its next delta.
    pub fn acknowledge(&mut self, id: ClientId, message: i32) -> Result<bool, ServerError> {
        if message <= 0 {
            return Ok(false);
        }
        self.server.acknowledge(id, message as u32)
    }

    /// The spectator holds no usable snapshot (`clc_moveNoDelta`, naming
    /// message `acknowledged`): the next one is full. With nothing
    /// acknowledged it is full anyway, so the packets that cross a full
    /// snapshot on its way do not restart the request; a packet older than
    /// the newest acknowledgement is stale.
    pub fn request_full(&mut self, id: ClientId, acknowledged: i32) -> Result<(), ServerError> {
        match self.server.last_acknowledged(id)? {
            Some(acked) if acknowledged >= 0 && acknowledged as u32 >= acked => {
                self.server.request_full_update(id)
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::Validity;

    fn frame(time: i32, x: f32) -> Snapshot {
        Snapshot {
            message_num: 0,
            delta_num: 0,
            server_time: time,
            snap_flags: SNAPFLAG_SERVERCOUNT | 1,
            areamask: vec![0xfe],
            ps: PlayerState {
                command_time: time,
                ..PlayerState::default()
            },
            entities: vec![(
                7,
                EntityState {
                    e_type: 1,
                    origin_0: x,
                    ..EntityState::default()
                },
            )],
            server_command_num: 0,
            validity: Validity::Valid,
        }
    }

    fn send(stream: &mut SnapshotStream, id: ClientId, message: i32) -> SnapshotInfo {
        let mut buf = [0u8; 4096];
        let mut writer = BitWriter::new(&mut buf);
        stream
            .write(id, message, true, &mut writer)
            .unwrap()
            .expect("a snapshot")
    }

    #[test]
    fn deltas_follow_acknowledgements_and_no_delta_asks_for_a_full_one() {
        let mut stream = SnapshotStream::new(&Baselines::default()).unwrap();
        let id = stream.add_spectator().unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(
            stream
                .write(id, 1, true, &mut BitWriter::new(&mut buf))
                .unwrap(),
            None,
            "no frame yet"
        );
        assert!(stream.set_frame(&frame(1000, 1.0)).unwrap());
        assert!(
            !stream.set_frame(&frame(1000, 2.0)).unwrap(),
            "time must advance"
        );
        assert!(!stream.set_frame(&frame(950, 2.0)).unwrap());
        assert_eq!(send(&mut stream, id, 3).base, None);
        // Not acknowledged: full again.
        assert!(stream.set_frame(&frame(1050, 2.0)).unwrap());
        assert_eq!(send(&mut stream, id, 4).base, None);
        assert!(stream.acknowledge(id, 4).unwrap());
        assert!(stream.set_frame(&frame(1100, 3.0)).unwrap());
        assert_eq!(send(&mut stream, id, 5).base, Some(4));
        // A no-delta packet naming a message before the acknowledged one is
        // stale; one naming it or later restarts from a full snapshot.
        stream.request_full(id, 3).unwrap();
        assert!(stream.set_frame(&frame(1150, 4.0)).unwrap());
        assert_eq!(send(&mut stream, id, 6).base, Some(4));
        stream.request_full(id, 6).unwrap();
        assert!(stream.set_frame(&frame(1200, 5.0)).unwrap());
        assert_eq!(send(&mut stream, id, 7).base, None);
        // What was sent: the frame, followed, the flags but the rate bit.
        let sent = stream.server().sent_snapshot(id, 7).unwrap();
        assert_eq!(sent.server_time(), 1200);
        assert_eq!(sent.flags(), SNAPFLAG_SERVERCOUNT);
        assert_eq!(sent.area_mask(), &[0xfe]);
        assert!(super::super::view::is_followed(sent.player()));
        assert_eq!(sent.entity(7).map(|e| e.origin_0), Some(5.0));
        stream.remove_spectator(id);
        assert!(stream.server().sent_snapshot(id, 7).is_none());
    }
}
