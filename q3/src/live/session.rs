//! What a session measured: the summary the CLI writes as JSON, the native
//! codec's size for the same snapshots, and the `.dm_68` recording.

use std::io::Write;
use std::time::Instant;

use serde::Serialize;

use super::client::{End, Event, LiveClient};
use super::error::LiveError;
use super::netchan::Framing;
use fields::model::AdaptPolicy;

use crate::engine::{frame_ms, EngineReplay, ReplayError};
use crate::file::Dm68Writer;
use crate::message::{Command, Gamestate};
use crate::snapshot::{Baselines, Snapshot};

/// The `--summary-json` document (exactly these fields).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The server address.
    pub server: String,
    /// 68 or 71.
    pub protocol: u32,
    /// The framing the server spoke: `legacy` (protocol 68, or OpenArena's
    /// 71) or `ioq3` (ioquake3's 71); `null` if no sequenced packet came.
    pub framing: Option<&'static str>,
    /// Gamestates received (0: the session never entered the game).
    pub gamestates: u64,
    /// Seconds from the `connectResponse` to the end.
    pub seconds_connected: f64,
    /// Snapshots received and decoded after the first gamestate (the
    /// server also sends a few before it, while it waits for the client's
    /// first acknowledge; those are counted apart).
    pub snapshots: u64,
    /// Of those, deltas from an earlier snapshot.
    pub delta_snapshots: u64,
    /// Server messages that did not decode.
    pub decode_errors: u64,
    /// Mean size of the snapshots as Quake 3 sent them: the bits of the
    /// `svc_snapshot` command (command byte to last entity) over 8.
    pub mean_snapshot_bytes: f64,
    /// Mean size of the same snapshots as the library's engine sends them
    /// against the same bases: a `snapshot::Server` driven with them
    /// (`q3::engine::EngineReplay`), native codec, compact framing (the
    /// whole snapshot message).
    pub native_mean_snapshot_bytes: f64,
    /// The same with the models adapting to the stream
    /// (`fields::model::AdaptPolicy::LIVE`, `snapshot::adapt`).
    pub native_adapting_mean_snapshot_bytes: f64,
    /// The same again, range-coded (`snapshot::CompactRange`).
    pub native_adapting_range_mean_snapshot_bytes: f64,
    /// New reliable server commands received.
    pub server_commands: u64,
    /// Why the server ended the session, `null` when the client left.
    pub disconnect_reason: Option<String>,
}

/// One decoded snapshot, as the session saw it (for tests and fixtures).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SnapshotMark {
    /// Message number.
    pub message_num: i32,
    /// Server time.
    pub server_time: i32,
    /// Delta byte (0: full).
    pub delta_num: u8,
    /// Entities in it.
    pub entities: u32,
    /// Bits of its `svc_snapshot` command.
    pub bits: u32,
    /// Its player's command time.
    pub command_time: i32,
}

/// Accumulates a session's figures from the client's events.
pub struct Session {
    server: String,
    protocol: u32,
    connected_at: Option<Instant>,
    ended_at: Option<Instant>,
    snapshots: u64,
    delta_snapshots: u64,
    decode_errors: u64,
    q3_bits: u64,
    /// Bytes and snapshots the engine sent, per replay (see
    /// [`NativeStream::replays`]).
    native_bytes: [u64; REPLAYS],
    native_snapshots: [u64; REPLAYS],
    native_errors: u64,
    server_commands: u64,
    marks: Vec<SnapshotMark>,
    native: Option<NativeStream>,
    recorder: Option<Dm68Writer<Box<dyn Write + Send>>>,
    recording: bool,
    map_restarts: u64,
    gamestates: u64,
    before_gamestate: u64,
    maps: Vec<String>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("server", &self.server)
            .field("snapshots", &self.snapshots)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session with `server` over `protocol` (68 or 71).
    pub fn new(server: impl Into<String>, protocol: u32) -> Self {
        Session {
            server: server.into(),
            protocol,
            connected_at: None,
            ended_at: None,
            snapshots: 0,
            delta_snapshots: 0,
            decode_errors: 0,
            q3_bits: 0,
            native_bytes: [0; REPLAYS],
            native_snapshots: [0; REPLAYS],
            native_errors: 0,
            server_commands: 0,
            marks: Vec::new(),
            native: None,
            recorder: None,
            recording: false,
            map_restarts: 0,
            gamestates: 0,
            before_gamestate: 0,
            maps: Vec::new(),
        }
    }

    /// Records every message from the first gamestate on into `out`.
    pub fn record_to(mut self, out: Box<dyn Write + Send>) -> Self {
        self.recorder = Some(Dm68Writer::new(out));
        self
    }

    /// Every snapshot seen, in order.
    pub fn marks(&self) -> &[SnapshotMark] {
        &self.marks
    }

    /// `map_restart` commands received.
    pub fn map_restarts(&self) -> u64 {
        self.map_restarts
    }

    /// Snapshots received before the first gamestate (not in the summary).
    pub fn snapshots_before_gamestate(&self) -> u64 {
        self.before_gamestate
    }

    /// Gamestates received.
    pub fn gamestates(&self) -> u64 {
        self.gamestates
    }

    /// The map of each gamestate, in order.
    pub fn maps(&self) -> &[String] {
        &self.maps
    }

    /// Snapshots the engine could not send against Quake 3's base (should
    /// be 0).
    pub fn native_errors(&self) -> u64 {
        self.native_errors
    }

    /// Takes one event of `client`.
    pub fn observe(
        &mut self,
        client: &LiveClient,
        event: &Event,
        now: Instant,
    ) -> Result<(), LiveError> {
        match event {
            Event::Connected => self.connected_at = Some(now),
            Event::Ended => {
                self.ended_at = Some(now);
                self.flush_native();
                if let Some(End::Error(LiveError::Decode { .. })) = client.end() {
                    self.decode_errors += 1;
                }
            }
            Event::Message {
                sequence,
                payload,
                message,
            } => {
                for command in &message.commands {
                    match &command.command {
                        Command::Gamestate(gamestate) => {
                            self.gamestates += 1;
                            self.recording = true;
                            self.maps.push(map_name(client, gamestate));
                            self.flush_native();
                            self.native = Some(NativeStream::new(gamestate));
                        }
                        Command::ServerCommand(c) if c.is_new => {
                            self.server_commands += 1;
                            if c.text.split_whitespace().next() == Some("map_restart") {
                                self.map_restarts += 1;
                            }
                        }
                        Command::Snapshot(_) if self.gamestates == 0 => {
                            // Sent while the server waits for us to ask for
                            // the gamestate: no baselines, no configstrings,
                            // not recorded; counted apart.
                            self.before_gamestate += 1;
                        }
                        Command::Snapshot(snap) => {
                            let s = &snap.snapshot;
                            let bits = (command.bits.end - command.bits.start) as u64;
                            self.snapshots += 1;
                            self.delta_snapshots += s.base_message().is_some() as u64;
                            self.q3_bits += bits;
                            self.marks.push(SnapshotMark {
                                message_num: s.message_num,
                                server_time: s.server_time,
                                delta_num: s.delta_num,
                                entities: s.entities.len() as u32,
                                bits: bits as u32,
                                command_time: s.ps.command_time,
                            });
                            self.measure_native(s);
                        }
                        _ => {}
                    }
                }
                if self.recording {
                    if let Some(recorder) = &mut self.recorder {
                        recorder.write_message(*sequence, payload)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Sends `snapshot` through the engine (once the stream's frame length
    /// is known: see [`NativeStream`]).
    fn measure_native(&mut self, snapshot: &Snapshot) {
        let Some(native) = &mut self.native else {
            return;
        };
        native.pending.push(snapshot.clone());
        if native.replay.is_some() || native.pending.len() >= NativeStream::FRAME_SAMPLE {
            self.flush_native();
        }
    }

    /// Sends every pending snapshot through the engine.
    fn flush_native(&mut self) {
        let Some(native) = &mut self.native else {
            return;
        };
        if native.pending.is_empty() {
            return;
        }
        if native.replay.is_none() {
            let frame = frame_ms(native.pending.iter().map(|s| s.server_time));
            match NativeStream::replays(&native.baselines, frame) {
                Ok(replays) => native.replay = Some(replays),
                Err(_) => {
                    self.native_errors += native.pending.len() as u64;
                    native.pending.clear();
                    return;
                }
            }
        }
        let Some(replays) = &mut native.replay else {
            return;
        };
        for snapshot in native.pending.drain(..) {
            for (index, replay) in replays.iter_mut().enumerate() {
                match replay.send(&snapshot) {
                    Ok(sent) => {
                        self.native_bytes[index] += sent.bytes.len() as u64;
                        self.native_snapshots[index] += 1;
                        self.native_errors += u64::from(!sent.same_base);
                    }
                    Err(_) => self.native_errors += 1,
                }
            }
        }
    }

    /// Writes the recording's end marker (if recording).
    pub fn finish_recording(&mut self) -> Result<(), LiveError> {
        if let Some(recorder) = self.recorder.take() {
            recorder.finish()?;
        }
        Ok(())
    }

    /// The summary so far.
    pub fn summary(&self, client: &LiveClient) -> Summary {
        let seconds = match (self.connected_at, self.ended_at) {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        let mean = |total: f64, n: u64| if n == 0 { 0.0 } else { total / n as f64 };
        let disconnect_reason = match client.end() {
            None | Some(End::Quit) => None,
            Some(End::Error(e)) => Some(e.to_string()),
        };
        Summary {
            server: self.server.clone(),
            protocol: self.protocol,
            framing: client.framing().map(Framing::name),
            gamestates: self.gamestates,
            seconds_connected: seconds,
            snapshots: self.snapshots,
            delta_snapshots: self.delta_snapshots,
            decode_errors: self.decode_errors,
            mean_snapshot_bytes: mean(self.q3_bits as f64 / 8.0, self.snapshots),
            native_mean_snapshot_bytes: mean(self.native_bytes[0] as f64, self.native_snapshots[0]),
            native_adapting_mean_snapshot_bytes: mean(
                self.native_bytes[1] as f64,
                self.native_snapshots[1],
            ),
            native_adapting_range_mean_snapshot_bytes: mean(
                self.native_bytes[2] as f64,
                self.native_snapshots[2],
            ),
            server_commands: self.server_commands,
            disconnect_reason,
        }
    }
}

fn map_name(client: &LiveClient, gamestate: &Gamestate) -> String {
    let _ = gamestate;
    super::oob::info_value(
        client.parser().configstring(super::client::CS_SERVERINFO),
        "mapname",
    )
    .to_owned()
}

/// The engine's stream for one gamestate: its baselines, and the replay,
/// made once the first snapshots show the server's frame length.
struct NativeStream {
    baselines: Baselines,
    pending: Vec<Snapshot>,
    /// The engine's replays ([`NativeStream::replays`]).
    replay: Option<[EngineReplay; REPLAYS]>,
}

/// How many ways the engine re-sends the session's snapshots.
const REPLAYS: usize = 3;

impl NativeStream {
    /// The engine with fixed models, with adapting ones, and with adapting
    /// ones range-coded: the summary's three native figures, in order.
    fn replays(baselines: &Baselines, frame: u32) -> Result<[EngineReplay; REPLAYS], ReplayError> {
        Ok([
            EngineReplay::native(baselines, frame)?,
            EngineReplay::native_adapting(baselines, frame, AdaptPolicy::LIVE)?,
            EngineReplay::native_framed(
                baselines,
                frame,
                std::sync::Arc::new(::snapshot::CompactRange),
                Some(AdaptPolicy::LIVE),
            )?,
        ])
    }

    /// Snapshots whose time steps give the frame length.
    const FRAME_SAMPLE: usize = 16;

    fn new(gamestate: &Gamestate) -> Self {
        let mut baselines = Baselines::default();
        for (number, state) in &gamestate.baselines {
            baselines.set(*number, *state);
        }
        NativeStream {
            baselines,
            pending: Vec::new(),
            replay: None,
        }
    }
}
