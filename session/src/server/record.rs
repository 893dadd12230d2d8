//! Recording a view of the game through `demo`'s recorder (feature
//! `record`): a spectator's or a client's, a snapshot every frame, a
//! keyframe every `keyframe_ms`, configstring changes and map changes.

use std::io::Write;

use fields::NetFields;
use snapshot::{BuildOutcome, ClientSettings, Scope};

use super::{ClientKey, Result, Server};
use crate::error::SessionError;

/// What a recording shows.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordView<P> {
    /// A spectator with this player state: it sees what the game's scope
    /// shows that player state (e.g. everything, for a spectator flag).
    Spectator(P),
    /// A client's own view (its scope and player state).
    Client(ClientKey),
}

pub(super) struct Recording<P> {
    recorder: demo::Recorder<Box<dyn Write + Send>>,
    view: RecordView<P>,
    /// The spectator's snapshot client (never streamed), if a spectator.
    spectator: Option<snapshot::ClientId>,
    stream: Option<snapshot::ClientId>,
    next_keyframe_ms: u32,
    snapshots: u64,
    keyframes: u64,
}

/// What a finished recording holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecordingStats {
    /// Snapshots recorded.
    pub snapshots: u64,
    /// Of which keyframes (full snapshots).
    pub keyframes: u64,
}

impl<E, P, C> Server<E, P, C>
where
    E: NetFields,
    P: NetFields,
    C: NetFields,
{
    /// Starts recording `view` through `recorder` (whose header the game
    /// wrote: schemas, codec, metadata). The current gamestate is recorded
    /// first, then a snapshot every frame and a keyframe every
    /// `keyframe_ms`. One recording at a time; a new one replaces the old
    /// (finish it first to keep it). The header's
    /// [`framing`](demo::DemoHeader::framing) must be the server's
    /// ([`crate::ServerConfig::framing`]) and its
    /// [`models`](demo::DemoHeader::models) the server's
    /// ([`demo::DemoHeader::with_models`]).
    pub fn record(
        &mut self,
        view: RecordView<P>,
        mut recorder: demo::Recorder<Box<dyn Write + Send>>,
    ) -> Result<()> {
        // The stream is framed as every client's; a header saying otherwise
        // would make a demo no player reads.
        let framing = self.snap.framing();
        if demo::MessageFraming::of(&**framing) != Some(recorder.framing()) {
            return Err(SessionError::Demo(demo::DemoError::Refused(format!(
                "the demo header says its messages are framed `{}`, the server frames them `{}`",
                recorder.framing().name(),
                framing.name()
            ))));
        }
        // The player codes with the header's models, adapting as it says.
        let models = self.snap.models();
        if recorder.models() != models {
            return Err(SessionError::Demo(demo::DemoError::Refused(format!(
                "the demo header's models are not the server's (see `DemoHeader::with_models`): \
                 the header's {}, the server's {}",
                describe(recorder.models()),
                describe(models)
            ))));
        }
        if let Some(old) = self.recording.take() {
            self.drop_recording(&old)?;
        }
        let (viewed, spectator) = match &view {
            RecordView::Spectator(state) => {
                let id = self.snap.add_client(ClientSettings::recorder())?;
                self.snap.set_player_state(id, state.clone())?;
                (id, Some(id))
            }
            RecordView::Client(key) => {
                let slot = self.slot(*key).ok_or(SessionError::UnknownClient(*key))?;
                (slot.snap, None)
            }
        };
        let stream = self.snap.add_recorder(viewed, ClientSettings::recorder())?;
        let mut bytes = std::mem::take(&mut self.buf);
        self.snap.write_gamestate(&mut bytes)?;
        recorder.record_gamestate(self.time_ms, &bytes)?;
        self.buf = bytes;
        self.recording = Some(Recording {
            recorder,
            view,
            spectator,
            stream: Some(stream),
            next_keyframe_ms: self.time_ms + self.config.keyframe_ms,
            snapshots: 0,
            keyframes: 0,
        });
        Ok(())
    }

    fn drop_recording(&mut self, recording: &Recording<P>) -> Result<()> {
        if let Some(stream) = recording.stream {
            self.snap.remove_client(stream)?;
        }
        if let Some(spectator) = recording.spectator {
            self.snap.remove_client(spectator)?;
        }
        Ok(())
    }

    /// What the recording holds so far.
    pub fn recording_stats(&self) -> Option<RecordingStats> {
        self.recording.as_ref().map(|r| RecordingStats {
            snapshots: r.snapshots,
            keyframes: r.keyframes,
        })
    }

    /// Finishes the recording (index and end record written, so the file
    /// seeks and verifies) and returns its writer and counts.
    pub fn finish_recording(&mut self) -> Result<Option<(Box<dyn Write + Send>, RecordingStats)>> {
        let Some(recording) = self.recording.take() else {
            return Ok(None);
        };
        self.drop_recording(&recording)?;
        let stats = RecordingStats {
            snapshots: recording.snapshots,
            keyframes: recording.keyframes,
        };
        let mut writer = recording.recorder.finish()?;
        writer.flush().map_err(demo::DemoError::from)?;
        Ok(Some((writer, stats)))
    }

    pub(super) fn record_frame<S: Scope<E, P>>(&mut self, time: u32, scope: &mut S) -> Result<()> {
        let Some(recording) = self.recording.as_mut() else {
            return Ok(());
        };
        let Some(stream) = recording.stream else {
            return Ok(());
        };
        if let RecordView::Spectator(state) = &recording.view {
            if let Some(id) = recording.spectator {
                self.snap.set_player_state(id, state.clone())?;
            }
        }
        if time >= recording.next_keyframe_ms {
            self.snap.request_full_update(stream)?;
            recording.next_keyframe_ms = time + self.config.keyframe_ms;
        }
        if let BuildOutcome::Built(info) = self.snap.build_snapshot(stream, scope, &mut self.buf)? {
            let full = info.base.is_none();
            recording
                .recorder
                .record_snapshot(time, info.sequence, &self.buf, full)?;
            recording.snapshots += 1;
            recording.keyframes += full as u64;
        }
        Ok(())
    }

    /// A client left: if the recording shows its view, it keeps what it has.
    pub(super) fn recorded_client_left(&mut self, key: ClientKey) -> Result<()> {
        if let Some(recording) = self.recording.as_mut() {
            if recording.view == RecordView::Client(key) {
                if let Some(stream) = recording.stream.take() {
                    self.snap.remove_client(stream)?;
                }
            }
        }
        Ok(())
    }

    /// A configstring changed (`bytes`: its message).
    pub(super) fn record_configstring(&mut self, bytes: &[u8]) -> Result<()> {
        if let Some(recording) = self.recording.as_mut() {
            recording
                .recorder
                .record_configstring(self.time_ms, bytes)?;
        }
        Ok(())
    }

    /// A new gamestate: recorded, and the recorded stream restarts full.
    pub(super) fn record_map_change(&mut self) -> Result<()> {
        if let Some(recording) = self.recording.as_mut() {
            if let Some(stream) = recording.stream {
                self.snap.request_full_update(stream)?;
            }
            let mut bytes = std::mem::take(&mut self.buf);
            self.snap.write_gamestate(&mut bytes)?;
            recording.recorder.record_gamestate(self.time_ms, &bytes)?;
            self.buf = bytes;
        }
        Ok(())
    }
}

/// Which models `models` gives and how they adapt, for an error message.
fn describe(models: &snapshot::Models) -> String {
    let id = |model: Option<&std::sync::Arc<fields::model::NativeModel>>| {
        model.map_or("the type's own".to_owned(), |m| format!("{:016x}", m.id()))
    };
    format!(
        "entity model {}, player-state model {}, adapting {:?}",
        id(models.entity()),
        id(models.player()),
        models.adaptation()
    )
}
