//! `demo events`: a match's frags, chat, score changes, CTF flag moves and
//! players joining, leaving and renaming, from Quake 3 demos and native
//! demos alike. The rules are the q3 crate's ([`q3::events`]); this module
//! feeds them from a [`walk`](crate::walk) of the file and prints them.

use std::io::Write;

use q3::events::{Event, EventKind, EventTracker};
use serde::Serialize;

use crate::detect::Format;
use crate::error::ToolError;
use crate::walk::{players_base, walk, Step, Walked};

/// The events of one file and what the walk read.
#[derive(Debug, Clone, Default)]
pub struct FileEvents {
    /// In order.
    pub events: Vec<Event>,
    /// Records, snapshots, times, truncation.
    pub walked: Walked,
}

impl FileEvents {
    /// Seconds from the first snapshot to `server_time`.
    pub fn seconds(&self, server_time: i32) -> f64 {
        let first = self.walked.first_ms.unwrap_or(0);
        (i64::from(server_time) - first) as f64 / 1000.0
    }

    /// How many events of type `name` (`"frag"`, `"chat"`, …).
    pub fn count(&self, name: &str) -> usize {
        self.events
            .iter()
            .filter(|e| e.kind.type_name() == name)
            .count()
    }
}

/// The events of a whole demo; a damaged file gives those before the
/// fault, beside the error.
pub fn events_of(data: &[u8], format: Format) -> (FileEvents, Option<ToolError>) {
    let mut tracker = EventTracker::with_players_at(players_base(data, format));
    let mut events = Vec::new();
    let (walked, error) = walk(data, format, &mut |step| match step {
        Step::Gamestate {
            time_ms,
            configstrings,
        } => {
            tracker.set_time(time_ms as i32);
            tracker.gamestate(|i| configstrings.get(i));
        }
        Step::Configstrings {
            time_ms,
            configstrings,
        } => {
            tracker.set_time(time_ms as i32);
            tracker.configstrings(|i| configstrings.get(i), &mut events);
        }
        Step::Command { time_ms, text } => {
            tracker.set_time(time_ms as i32);
            tracker.server_command(text, &mut events);
        }
        Step::Snapshot(frame) => {
            tracker.set_time(frame.time_ms as i32);
            tracker.snapshot(frame.entities.iter().map(|e| e.event), &mut events);
        }
    });
    tracker.finish(&mut events);
    (FileEvents { events, walked }, error)
}

/// One event as a JSON line.
#[derive(Serialize)]
struct EventLine<'a> {
    file: &'a str,
    index: usize,
    time_s: f64,
    #[serde(flatten)]
    event: &'a Event,
}

/// The closing line of a file that could not be read to its end.
#[derive(Serialize)]
struct ErrorLine<'a> {
    file: &'a str,
    server_time: i64,
    #[serde(rename = "type")]
    kind: &'static str,
    error: String,
    records: usize,
    snapshots: usize,
    events: usize,
}

/// Writes `events` as JSON lines (one object per event, with `file`,
/// `index`, `server_time`, `time_s` and `type`), and for a damaged file a
/// last line of type `error`.
pub fn write_json(
    file: &str,
    events: &FileEvents,
    error: Option<&ToolError>,
    out: &mut dyn Write,
) -> Result<(), ToolError> {
    for (index, event) in events.events.iter().enumerate() {
        let line = EventLine {
            file,
            index,
            time_s: events.seconds(event.server_time),
            event,
        };
        serde_json::to_writer(&mut *out, &line).map_err(std::io::Error::other)?;
        writeln!(out)?;
    }
    if let Some(error) = error {
        let line = ErrorLine {
            file,
            server_time: events.walked.last_ms,
            kind: "error",
            error: error.to_string(),
            records: events.walked.records,
            snapshots: events.walked.snapshots,
            events: events.events.len(),
        };
        serde_json::to_writer(&mut *out, &line).map_err(std::io::Error::other)?;
        writeln!(out)?;
    }
    Ok(())
}

/// A readable line for an event.
pub fn describe(kind: &EventKind) -> String {
    let who = |name: &Option<String>, client: Option<u32>| match (name, client) {
        (Some(name), _) => name.clone(),
        (None, Some(client)) => format!("client {client}"),
        (None, None) => "?".into(),
    };
    match kind {
        EventKind::Frag {
            attacker,
            attacker_name,
            target,
            target_name,
            means,
            suicide,
            ..
        } => {
            let target = who(target_name, Some(*target));
            match attacker {
                Some(a) if !suicide => {
                    format!("{} killed {target} ({means})", who(attacker_name, Some(*a)))
                }
                Some(_) => format!("{target} killed themself ({means})"),
                None => format!("{target} died ({means})"),
            }
        }
        EventKind::Chat {
            team, name, text, ..
        } => format!(
            "{}{}: {text}",
            if *team { "(team) " } else { "" },
            name.as_deref().unwrap_or("")
        ),
        EventKind::Score {
            score1,
            score2,
            teams,
        } => {
            if *teams {
                format!("red {score1}, blue {score2}")
            } else {
                format!("leader {score1}, second {score2}")
            }
        }
        EventKind::Flag {
            flag,
            action,
            client,
            name,
        } => {
            let action = match action {
                q3::events::FlagAction::Take => "taken",
                q3::events::FlagAction::Capture => "captured",
                q3::events::FlagAction::Return => "returned",
                q3::events::FlagAction::Drop => "dropped",
            };
            match client {
                Some(_) => format!("{flag} flag {action} by {}", who(name, *client)),
                None => format!("{flag} flag {action}"),
            }
        }
        EventKind::Join { client, name } => format!("{name} joined (client {client})"),
        EventKind::Leave { client, name } => format!("{name} left (client {client})"),
        EventKind::Rename { client, from, name } => {
            format!("{from} is now {name} (client {client})")
        }
    }
}

/// Writes `events` as text: one line per event with its index, its time
/// from the first snapshot and its type, then a count per type.
pub fn write_text(file: &str, events: &FileEvents, out: &mut dyn Write) -> Result<(), ToolError> {
    writeln!(out, "{file}:")?;
    for (index, event) in events.events.iter().enumerate() {
        writeln!(
            out,
            "{index:>5} {:>9.3} s  {:<7} {}",
            events.seconds(event.server_time),
            event.kind.type_name(),
            describe(&event.kind)
        )?;
    }
    let counts: Vec<String> = ["frag", "chat", "score", "flag", "join", "leave", "rename"]
        .iter()
        .map(|name| format!("{} {name}", events.count(name)))
        .collect();
    writeln!(
        out,
        "{} events ({}) in {} snapshots",
        events.events.len(),
        counts.join(", "),
        events.walked.snapshots
    )?;
    Ok(())
}
