//! A recorded snapshot stream sent again through the engine.
//!
//! A [`Replay`] drives a [`Server`] with one client through the snapshots
//! some other server sent one client (a Quake 3 demo, a live session, the
//! streams of a benchmark), each numbered with its recorded sequence and
//! acknowledged so that the engine deltas it from the base the recording
//! used. What comes out is what this library's writer sends for that
//! stream, so a size measured on it is the engine's size, and a
//! [`Client`] reading it back (optional: [`Replay::with_reader`]) proves
//! every message decodes to the recorded snapshot.
//!
//! The server's clock advances in frames of `frame_ms`: a snapshot later
//! than the previous one by several frames commits the frames between, as
//! a server runs them (the compact header codes frames, not milliseconds).

use fields::Fields;

use crate::build::{BuildOutcome, SnapshotInfo};
use crate::client::{Client, Received};
use crate::config::ClientSettings;
use crate::error::{ClientError, ServerError};
use crate::scope::AllInScope;
use crate::server::{ClientId, Server};
use crate::trace::SnapshotTrace;

/// Largest message a replay lets the server write: room for a full
/// snapshot of thousands of entities, so nothing is ever left out for a
/// byte budget (what is replayed is the whole recorded snapshot).
pub const MAX_REPLAY_BYTES: u32 = 1 << 18;

/// One snapshot of a recorded stream.
#[derive(Debug, Clone, Copy)]
pub struct Recorded<'a, E, P> {
    /// Its sequence in the recorded stream (a Quake 3 message number).
    pub sequence: u32,
    /// The sequence of the snapshot it was a delta from (`None`: full).
    pub base: Option<u32>,
    /// Its server time in milliseconds.
    pub server_time: u32,
    /// Its snapshot flags.
    pub flags: u8,
    /// Its area mask.
    pub area_mask: &'a [u8],
    /// The player state.
    pub player: &'a P,
    /// The entities in view, sorted by number.
    pub entities: &'a [(u32, E)],
}

/// Why a recorded snapshot could not be replayed.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum ReplayError {
    /// The snapshot server refused something.
    #[error("snapshot server: {0}")]
    Server(#[from] ServerError),
    /// The reader refused the engine's own message.
    #[error("snapshot {sequence} does not decode: {error}")]
    Decode {
        /// The snapshot's sequence.
        sequence: u32,
        /// The reader's error.
        error: ClientError,
    },
    /// The reader decoded something other than the recorded snapshot.
    #[error("snapshot {sequence} decodes to something else: {what}")]
    Mismatch {
        /// The snapshot's sequence.
        sequence: u32,
        /// What differs.
        what: String,
    },
    /// Sequences or server times went backwards.
    #[error(
        "snapshot {sequence} at {server_time} ms comes after {last_sequence} at {last_time} ms"
    )]
    Backwards {
        /// The snapshot's sequence.
        sequence: u32,
        /// Its server time.
        server_time: u32,
        /// The previous snapshot's sequence.
        last_sequence: u32,
        /// Its server time.
        last_time: u32,
    },
}

/// A snapshot the engine sent: its message and what the server says of it.
#[derive(Debug, Clone, Copy)]
pub struct Replayed<'a> {
    /// The message bytes.
    pub bytes: &'a [u8],
    /// The build's account (sequence, base, bits).
    pub info: SnapshotInfo,
    /// Whether the base is the one the recording used (when the recorded
    /// base was never sent through the engine, or lies behind an
    /// acknowledgement it already took, the engine sends what it can).
    pub same_base: bool,
    /// What the reader decoded, field by field and with the bits of each
    /// part (with a reader).
    pub trace: Option<&'a SnapshotTrace>,
}

/// A [`Server`] sending one client a recorded stream (see the
/// [module docs](self)).
#[derive(Debug)]
pub struct Replay<E, P> {
    server: Server<E, P>,
    client: ClientId,
    reader: Option<Client<E, P>>,
    frame_ms: u32,
    last: Option<(u32, u32)>,
    numbers: Vec<u32>,
    bytes: Vec<u8>,
}

impl<E: Fields + PartialEq, P: Fields + PartialEq> Replay<E, P> {
    /// Replays through `server` (its codec, framing, native models and spawn baselines
    /// set by the caller; it gains one client with unlimited settings and
    /// messages up to [`MAX_REPLAY_BYTES`]), on a clock of `frame_ms`
    /// milliseconds per server frame (at least 1).
    pub fn new(mut server: Server<E, P>, frame_ms: u32) -> Result<Self, ReplayError> {
        let client = server.add_client(ClientSettings {
            max_snapshot_bytes: MAX_REPLAY_BYTES,
            ..ClientSettings::unlimited()
        })?;
        Ok(Replay {
            server,
            client,
            reader: None,
            frame_ms: frame_ms.max(1),
            last: None,
            numbers: Vec::new(),
            bytes: Vec::new(),
        })
    }

    /// Also reads every message back with `reader` (a fresh client of the
    /// same types; it gets the server's gamestate, framing and native
    /// models here) and
    /// checks it decodes to the recorded snapshot, with a trace of each.
    pub fn with_reader(mut self, mut reader: Client<E, P>) -> Result<Self, ReplayError> {
        let mut gamestate = Vec::new();
        self.server.write_gamestate(&mut gamestate)?;
        reader.set_framing(self.server.framing().clone());
        reader
            .set_models(self.server.models().clone())
            .map_err(ServerError::from)?;
        reader
            .read_message(&gamestate)
            .map_err(|error| ReplayError::Decode { sequence: 0, error })?;
        reader.set_trace(true);
        self.reader = Some(reader);
        Ok(self)
    }

    /// The server.
    pub fn server(&self) -> &Server<E, P> {
        &self.server
    }

    /// The one client's id.
    pub fn client(&self) -> ClientId {
        self.client
    }

    /// The gamestate message, for a [`Client`] that reads the stream.
    pub fn write_gamestate(&mut self, out: &mut Vec<u8>) -> Result<(), ReplayError> {
        Ok(self.server.write_gamestate(out)?)
    }

    /// The reader, if any.
    pub fn reader(&self) -> Option<&Client<E, P>> {
        self.reader.as_ref()
    }

    /// Sends `recorded` through the engine against the base the recording
    /// used. A full snapshot is full in the engine too: when the engine
    /// holds an acknowledged base, the replay asks it for a full update
    /// first.
    pub fn send(&mut self, recorded: &Recorded<'_, E, P>) -> Result<Replayed<'_>, ReplayError> {
        let (sequence, time) = (recorded.sequence, recorded.server_time);
        if let Some((last_sequence, last_time)) = self.last {
            if sequence <= last_sequence || time < last_time {
                return Err(ReplayError::Backwards {
                    sequence,
                    server_time: time,
                    last_sequence,
                    last_time,
                });
            }
        }
        let id = self.client;
        match recorded.base {
            None if self.server.last_acknowledged(id)?.is_some() => {
                self.server.request_full_update(id)?
            }
            None => {}
            Some(base) => {
                self.server.acknowledge(id, base)?;
            }
        }
        self.set_world(recorded)?;
        self.server.set_next_sequence(id, sequence)?;
        let outcome = self
            .server
            .build_snapshot(id, &mut AllInScope, &mut self.bytes)?;
        let BuildOutcome::Built(info) = outcome else {
            unreachable!("an unlimited client gets a snapshot every frame")
        };
        self.last = Some((sequence, time));
        if let Some(reader) = self.reader.as_mut() {
            check(reader, recorded, &self.bytes)?;
        }
        Ok(Replayed {
            bytes: &self.bytes,
            info,
            same_base: info.base == recorded.base,
            trace: self.reader.as_ref().and_then(Client::trace),
        })
    }

    /// Commits the frames up to the snapshot's with its entities, player
    /// state, flags and area mask.
    fn set_world(&mut self, recorded: &Recorded<'_, E, P>) -> Result<(), ReplayError> {
        let time = recorded.server_time;
        if let Some((_, last_time)) = self.last {
            // The frames between, as the server ran them.
            let frame_ms = self.frame_ms;
            let frames = (time - last_time + frame_ms / 2) / frame_ms;
            for k in 1..frames {
                self.server.commit_frame(last_time + k * frame_ms)?;
            }
        }
        let entities = recorded.entities;
        for &number in &self.numbers {
            if entities.binary_search_by_key(&number, |(n, _)| *n).is_err() {
                self.server.remove_entity(number);
            }
        }
        self.numbers.clear();
        for (number, state) in entities {
            match self.server.entity_mut(*number) {
                Some(entity) => entity.clone_from(state),
                None => self.server.set_entity(*number, state.clone())?,
            }
            self.numbers.push(*number);
        }
        let id = self.client;
        self.server.set_player_state(id, recorded.player.clone())?;
        self.server.set_snapshot_flags(id, recorded.flags)?;
        self.server.set_area_mask(id, recorded.area_mask)?;
        self.server.commit_frame(time)?;
        Ok(())
    }
}

/// Reads the engine's message back and compares it with the recording.
fn check<E: Fields, P: Fields>(
    reader: &mut Client<E, P>,
    recorded: &Recorded<'_, E, P>,
    bytes: &[u8],
) -> Result<(), ReplayError> {
    let sequence = recorded.sequence;
    let mismatch = |what: String| ReplayError::Mismatch { sequence, what };
    match reader.read_snapshot(sequence, bytes) {
        Ok(Received::Snapshot(_)) => {}
        Ok(other) => return Err(mismatch(format!("read as {other:?}"))),
        Err(error) => return Err(ReplayError::Decode { sequence, error }),
    }
    let held = reader
        .newest()
        .ok_or_else(|| mismatch("no snapshot held".into()))?;
    if held.server_time() != recorded.server_time {
        return Err(mismatch(format!(
            "server time {} for {}",
            held.server_time(),
            recorded.server_time
        )));
    }
    if held.flags() != recorded.flags || held.area_mask() != recorded.area_mask {
        return Err(mismatch("the flags or area mask".into()));
    }
    if held.player().wire_differs(recorded.player) {
        return Err(mismatch("the player state".into()));
    }
    let mut decoded = held.entities();
    for (number, state) in recorded.entities {
        match decoded.next() {
            Some((n, held)) if n == *number && !held.wire_differs(state) => {}
            Some((n, _)) if n == *number => return Err(mismatch(format!("entity {number}"))),
            Some((n, _)) => return Err(mismatch(format!("entity {n} where {number} was"))),
            None => return Err(mismatch(format!("entity {number} missing"))),
        }
    }
    if let Some((n, _)) = decoded.next() {
        return Err(mismatch(format!("entity {n} was not recorded")));
    }
    Ok(())
}
