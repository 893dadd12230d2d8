//! Where the relay's game comes from: a live server (our client follows a
//! player there as a spectator) or a recorded `.dm_68`, played at its own
//! pace. Either gives a stream of [`SourceUpdate`]s.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::RelayError;
use super::SourceGamestate;
use crate::file::Dm68Decoder;
use crate::message::Command;
use crate::snapshot::Snapshot;

/// One thing the source says, in order.
#[derive(Debug, Clone)]
pub enum SourceUpdate {
    /// A gamestate (a map starts).
    Gamestate(SourceGamestate),
    /// A new reliable server command.
    Command(String),
    /// A snapshot, fully reconstructed.
    Snapshot(Arc<Snapshot>),
}

/// A recorded match, decoded once, replayed at the pace of its snapshots'
/// server times (looping if asked).
#[derive(Debug)]
pub struct FileSource {
    /// Each update with the server time it belongs to (ms since the first
    /// snapshot).
    timeline: Vec<(u64, SourceUpdate)>,
    looping: bool,
    next: usize,
    started: Instant,
    /// Length of one pass (ms), for looping.
    length: u64,
    passes: u64,
}

impl FileSource {
    /// Decodes `bytes` (a `.dm_68`); an invalid file is an error, a
    /// truncated one plays as far as it decodes.
    pub fn new(bytes: &[u8], looping: bool, now: Instant) -> Result<FileSource, RelayError> {
        let mut decoder = Dm68Decoder::new(bytes).map_err(RelayError::Demo)?;
        let mut timeline = Vec::new();
        // Server times restart with each map: each gamestate starts a
        // segment that follows the previous one.
        let mut first_time: Option<i32> = None;
        let mut segment = 0u64;
        let mut time = 0u64;
        let mut updates = Vec::new();
        for record in decoder.by_ref() {
            let Ok(record) = record else { break };
            updates.clear();
            updates_of(&record.message, &mut updates);
            for update in updates.drain(..) {
                match &update {
                    SourceUpdate::Gamestate(_) if first_time.is_some() => {
                        segment = time + 50;
                        time = segment;
                        first_time = None;
                    }
                    SourceUpdate::Snapshot(s) => {
                        let first = *first_time.get_or_insert(s.server_time);
                        let since = s.server_time.wrapping_sub(first).max(0) as u64;
                        time = time.max(segment + since);
                    }
                    _ => {}
                }
                timeline.push((time, update));
            }
        }
        if !timeline
            .iter()
            .any(|(_, u)| matches!(u, SourceUpdate::Gamestate(_)))
        {
            return Err(RelayError::NoGamestate);
        }
        Ok(FileSource {
            length: time + 50,
            timeline,
            looping,
            next: 0,
            started: now,
            passes: 0,
        })
    }

    /// The updates due by `now`, appended to `out`. Returns `false` once a
    /// file that does not loop is over.
    pub fn poll(&mut self, now: Instant, out: &mut Vec<SourceUpdate>) -> bool {
        loop {
            let elapsed = now.saturating_duration_since(self.started).as_millis() as u64;
            let offset = self.passes * self.length;
            while let Some((time, update)) = self.timeline.get(self.next) {
                if time + offset > elapsed {
                    return true;
                }
                out.push(update.clone());
                self.next += 1;
            }
            if !self.looping {
                return false;
            }
            // After a stall, skip whole passes rather than replay them.
            self.passes = (self.passes + 1).max(elapsed / self.length);
            self.next = 0;
            if self.passes * self.length > elapsed {
                return true;
            }
        }
    }

    /// When the next update is due.
    pub fn next_due(&self) -> Option<Instant> {
        let (time, _) = self.timeline.get(self.next)?;
        Some(self.started + Duration::from_millis(time + self.passes * self.length))
    }

    /// Passes completed (loops).
    pub fn passes(&self) -> u64 {
        self.passes
    }
}

/// The updates of one parsed server message (live or from a `.dm_68`), in
/// order.
pub fn updates_of(message: &crate::ParsedMessage, out: &mut Vec<SourceUpdate>) {
    for command in &message.commands {
        match &command.command {
            Command::Gamestate(gamestate) => {
                let mut baselines = crate::snapshot::Baselines::default();
                for (number, state) in &gamestate.baselines {
                    baselines.set(*number, *state);
                }
                out.push(SourceUpdate::Gamestate(SourceGamestate {
                    configstrings: gamestate
                        .configstrings
                        .iter()
                        .map(|(i, s)| (usize::from(*i), s.clone()))
                        .collect(),
                    baselines,
                    client_num: gamestate.client_num,
                }));
            }
            Command::ServerCommand(c) if c.is_new => {
                out.push(SourceUpdate::Command(c.text.clone()))
            }
            Command::Snapshot(s) if s.snapshot.is_valid() => {
                out.push(SourceUpdate::Snapshot(s.snapshot.clone()))
            }
            _ => {}
        }
    }
}
