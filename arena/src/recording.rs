//! Recording the spectator view to a demo file with `demo::Recorder`.
//!
//! The server hands the recorder exactly the messages the snapshot layer
//! produced for its recorder stream (see [`crate::server::DemoSink`]); the
//! header carries both schemas, the codec, the rates and who played.

use std::fs::File;
use std::io::{BufWriter, Write};

use demo::{DemoHeader, Recorder};

use crate::config::MatchConfig;
use crate::error::Error;
use crate::physics::Map;
use crate::protocol::{EntityState, PlayerState};
use crate::server::DemoSink;

/// A [`DemoSink`] writing a native demo through `demo::Recorder`.
pub struct DemoFile<W: Write> {
    recorder: Option<Recorder<W>>,
}

impl<W: Write> std::fmt::Debug for DemoFile<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoFile")
            .field("open", &self.recorder.is_some())
            .finish()
    }
}

/// The demo header of a match: schemas and models of the arena's types,
/// codec, rates, and the match's facts as metadata.
pub fn header(config: &MatchConfig) -> DemoHeader {
    let players: Vec<String> = (0..config.clients).map(|i| format!("bot{i}")).collect();
    // The recorder stream gets a snapshot every tick.
    DemoHeader::for_types::<EntityState, PlayerState>(config.codec, config.tick_hz, config.tick_hz)
        .with_metadata("game", "arena")
        .with_metadata("map", Map::arena().name)
        .with_metadata("players", players.join(","))
        .with_metadata("view", "spectator")
        .with_metadata("seed", config.seed.to_string())
        .with_metadata("transport", config.transport.name())
        .with_metadata(
            "link",
            format!(
                "loss {} latency {} ms jitter {} ms",
                config.link.loss,
                config.link.latency.as_millis(),
                config.link.jitter.as_millis()
            ),
        )
}

impl<W: Write> DemoFile<W> {
    /// Starts a demo on `writer` with `header`.
    pub fn create(writer: W, header: DemoHeader) -> Result<Self, Error> {
        let recorder = Recorder::create(writer, header).map_err(|e| Error::Demo(e.to_string()))?;
        Ok(DemoFile {
            recorder: Some(recorder),
        })
    }

    fn recorder(&mut self) -> Result<&mut Recorder<W>, Error> {
        self.recorder
            .as_mut()
            .ok_or_else(|| Error::Demo("the recording is already finished".into()))
    }

    /// Finishes the demo and returns the writer.
    pub fn into_inner(mut self) -> Result<W, Error> {
        let recorder = self
            .recorder
            .take()
            .ok_or_else(|| Error::Demo("the recording is already finished".into()))?;
        recorder.finish().map_err(|e| Error::Demo(e.to_string()))
    }
}

impl<W: Write> DemoSink for DemoFile<W> {
    fn gamestate(&mut self, server_time_ms: u32, bytes: &[u8]) -> Result<(), Error> {
        self.recorder()?
            .record_gamestate(server_time_ms, bytes)
            .map_err(|e| Error::Demo(e.to_string()))
    }

    fn configstring(&mut self, server_time_ms: u32, bytes: &[u8]) -> Result<(), Error> {
        self.recorder()?
            .record_configstring(server_time_ms, bytes)
            .map_err(|e| Error::Demo(e.to_string()))
    }

    fn snapshot(
        &mut self,
        server_time_ms: u32,
        sequence: u32,
        bytes: &[u8],
        is_full: bool,
    ) -> Result<(), Error> {
        self.recorder()?
            .record_snapshot(server_time_ms, sequence, bytes, is_full)
            .map_err(|e| Error::Demo(e.to_string()))
    }

    fn finish(&mut self) -> Result<(), Error> {
        if let Some(recorder) = self.recorder.take() {
            let mut writer = recorder.finish().map_err(|e| Error::Demo(e.to_string()))?;
            writer.flush()?;
        }
        Ok(())
    }
}

/// Opens the recording the configuration asks for, if any.
pub fn open(config: &MatchConfig) -> Result<Option<Box<dyn DemoSink>>, Error> {
    let Some(path) = &config.record else {
        return Ok(None);
    };
    let file = File::create(path)
        .map_err(|e| Error::Demo(format!("cannot create {}: {e}", path.display())))?;
    let sink = DemoFile::create(BufWriter::new(file), header(config))?;
    Ok(Some(Box::new(sink)))
}
