//! Recording the spectator view to a demo file with `demo::Recorder`.
//!
//! The session server feeds the recorder exactly the messages the snapshot
//! layer produced for its recorder stream; the header made here carries
//! both schemas, the codec, the rates and who played.

use std::io::Write;

use demo::{DemoHeader, MessageFraming, Recorder};

use crate::config::MatchConfig;
use crate::error::Error;
use crate::output::PendingFile;
use crate::physics::Map;
use crate::protocol::{EntityState, PlayerState};
use crate::server::DemoRecorder;

/// The demo header of a match: schemas and models of the arena's types,
/// codec, rates, and the match's facts as metadata.
pub fn header(config: &MatchConfig) -> DemoHeader {
    let players: Vec<String> = (0..config.clients).map(|i| format!("bot{i}")).collect();
    // The recorder stream gets a snapshot every tick.
    let framing = crate::protocol::framing(config.codec);
    DemoHeader::for_types::<EntityState, PlayerState>(config.codec, config.tick_hz, config.tick_hz)
        // `protocol::framing` is one a demo can hold.
        .with_framing(MessageFraming::of(&*framing).unwrap_or_default())
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

/// Opens the recording the configuration asks for, if any: a recorder
/// over a temporary file beside the destination, with the match's header
/// written, and that file, to commit once the recorder has finished.
pub fn open(config: &MatchConfig) -> Result<Option<(DemoRecorder, PendingFile)>, Error> {
    let Some(path) = &config.record else {
        return Ok(None);
    };
    let pending = PendingFile::new(path);
    let writer: Box<dyn Write + Send> = Box::new(pending.create()?);
    let recorder =
        Recorder::create(writer, header(config)).map_err(|e| Error::Demo(e.to_string()))?;
    Ok(Some((recorder, pending)))
}
