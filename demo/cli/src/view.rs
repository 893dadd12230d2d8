//! `demo view FILE -o PAGE.html`: a self-contained web page that plays a
//! demo back as a top-down map.
//!
//! The page needs no network and no build step: its script and style are
//! inline ([`PAGE`]) and the demo's data is embedded as JSON. Players and
//! projectiles move with trails and names, the followed (recording) player
//! is highlighted, and under the map are play/pause, speed, a timeline
//! scrubber marked with the match's events and a plot of bytes per
//! snapshot. Once it has loaded the data the page sets
//! `data-snapshots="N"` and `data-events="M"` on `<body>` (the snapshots
//! and events it holds), which is how a headless browser test reads it.
//!
//! Long demos are thinned, never refused: at most `max_snapshots` snapshots
//! are kept, evenly spaced (when there are more, every second one kept is
//! dropped and the spacing doubles, so memory stays bounded while the file
//! is read once). Events and the bytes plot are never thinned.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use q3::events::{EventKind, EventTracker};
use serde::Serialize;

use crate::cli::{EXIT_ERROR, EXIT_OK, EXIT_TRUNCATED};
use crate::detect::Format;
use crate::error::ToolError;
use crate::events::describe;
use crate::inspect::read;
use crate::output::write_whole;
use crate::walk::{players_base, walk, EntityKind, Frame, Step, Walked};

/// Snapshots a page holds unless told otherwise: 20 Hz for a little over
/// half an hour, which keeps a page for a long match under a few MB.
pub const DEFAULT_MAX_SNAPSHOTS: usize = 40_000;

/// The page around the data: `__DATA__` is replaced by the JSON.
pub const PAGE: &str = include_str!("view.html");

/// An entity as the page draws it: `[number, kind, client, x, y]`, kind 0
/// for players, 1 projectiles, 2 items; client -1 when none.
type PageEntity = (u32, u8, i32, i32, i32);

/// One snapshot on the page: time from the first snapshot (ms), the
/// followed player's client and position, the entities.
#[derive(Debug, Clone, Serialize)]
struct PageFrame {
    t: i64,
    followed: Option<(u32, i32, i32)>,
    entities: Vec<PageEntity>,
}

/// One event on the page.
#[derive(Debug, Clone, Serialize)]
struct PageEvent {
    t: i64,
    #[serde(rename = "type")]
    kind: &'static str,
    text: String,
}

/// Everything the page shows.
#[derive(Debug, Clone, Serialize)]
pub struct PageData {
    title: String,
    format: &'static str,
    map: String,
    /// Snapshots in the file.
    snapshots_total: usize,
    /// Every how many snapshots one was kept (1: none dropped).
    stride: usize,
    duration_ms: i64,
    recording_client: Option<u32>,
    names: BTreeMap<u32, String>,
    bounds: [i32; 4],
    frames: Vec<PageFrame>,
    /// `[t, bytes]` of every snapshot.
    bytes: Vec<(i64, u32)>,
    events: Vec<PageEvent>,
    truncated: bool,
    error: Option<String>,
}

impl PageData {
    /// Snapshots on the page.
    pub fn snapshots(&self) -> usize {
        self.frames.len()
    }

    /// Events on the page.
    pub fn events(&self) -> usize {
        self.events.len()
    }
}

/// Keeps at most `max` frames, evenly spaced, reading them once.
struct Thinner {
    max: usize,
    stride: usize,
    seen: usize,
    frames: Vec<PageFrame>,
}

impl Thinner {
    fn push(&mut self, make: impl FnOnce() -> PageFrame) {
        let keep = self.seen % self.stride == 0;
        self.seen += 1;
        if !keep {
            return;
        }
        self.frames.push(make());
        if self.frames.len() > self.max {
            // Keep every second frame: the spacing doubles.
            let mut index = 0;
            self.frames.retain(|_| {
                index += 1;
                index % 2 == 1
            });
            self.stride *= 2;
        }
    }
}

fn page_entity(entity: &crate::walk::FrameEntity) -> Option<PageEntity> {
    let kind = match entity.kind {
        EntityKind::Player => 0,
        EntityKind::Missile => 1,
        EntityKind::Item => 2,
        EntityKind::Other => return None,
    };
    let [x, y] = entity.position?;
    let client = entity.client.map_or(-1, |c| c as i32);
    Some((
        entity.event.number,
        kind,
        client,
        x.round() as i32,
        y.round() as i32,
    ))
}

/// Reads a demo into what its page shows; a damaged file gives the page of
/// everything before the fault, beside the error.
pub fn page_data(
    name: &str,
    data: &[u8],
    format: Format,
    max_snapshots: usize,
) -> (PageData, Option<ToolError>) {
    let mut tracker = EventTracker::with_players_at(players_base(data, format));
    let mut events = Vec::new();
    let mut thinner = Thinner {
        max: max_snapshots.max(2),
        stride: 1,
        seen: 0,
        frames: Vec::new(),
    };
    let mut bytes = Vec::new();
    let mut first = None;
    let mut map = String::new();
    let mut bounds = [i32::MAX, i32::MAX, i32::MIN, i32::MIN];
    let mut grow = |x: i32, y: i32| {
        bounds = [
            bounds[0].min(x),
            bounds[1].min(y),
            bounds[2].max(x),
            bounds[3].max(y),
        ];
    };
    let (walked, error): (Walked, _) = walk(data, format, &mut |step| match step {
        Step::Gamestate {
            time_ms,
            configstrings,
        } => {
            tracker.set_time(time_ms as i32);
            tracker.gamestate(|i| configstrings.get(i));
            let info = configstrings.get(0);
            if let Some(name) = q3::info::value(info, "mapname") {
                map = name.to_string();
            }
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
            let start = *first.get_or_insert(frame.time_ms);
            bytes.push((frame.time_ms - start, frame.bytes));
            thinner.push(|| page_frame(frame, start, &mut grow));
        }
    });
    tracker.finish(&mut events);
    let start = first.unwrap_or(0);
    let mut names = BTreeMap::new();
    for client in 0..q3::events::MAX_CLIENTS as u32 {
        if let Some(name) = tracker.name(client) {
            names.insert(client, name.to_string());
        }
    }
    // Players who left before the end are named by their events.
    for event in &events {
        if let EventKind::Join { client, name }
        | EventKind::Leave { client, name }
        | EventKind::Rename { client, name, .. } = &event.kind
        {
            names.entry(*client).or_insert_with(|| name.clone());
        }
    }
    if bounds[0] > bounds[2] {
        bounds = [-512, -512, 512, 512];
    }
    let page = PageData {
        title: name.to_string(),
        format: format.name(),
        map,
        snapshots_total: walked.snapshots,
        stride: thinner.stride,
        duration_ms: walked.last_ms - walked.first_ms.unwrap_or(walked.last_ms),
        recording_client: walked.recording_client,
        names,
        bounds,
        frames: thinner.frames,
        bytes,
        events: events
            .iter()
            .map(|e| PageEvent {
                t: i64::from(e.server_time) - start,
                kind: e.kind.type_name(),
                text: describe(&e.kind),
            })
            .collect(),
        truncated: walked.truncation.is_some(),
        error: error.as_ref().map(ToString::to_string),
    };
    (page, error)
}

fn page_frame(frame: &Frame, start: i64, grow: &mut impl FnMut(i32, i32)) -> PageFrame {
    let entities: Vec<PageEntity> = frame.entities.iter().filter_map(page_entity).collect();
    // Projectiles fly off the map; players and items outline it.
    for e in entities.iter().filter(|e| e.1 != 1) {
        grow(e.3, e.4);
    }
    let followed = frame.player.map(|(client, [x, y])| {
        let (x, y) = (x.round() as i32, y.round() as i32);
        grow(x, y);
        (client, x, y)
    });
    PageFrame {
        t: frame.time_ms - start,
        followed,
        entities,
    }
}

/// The page for `data`: [`PAGE`] with the JSON in place (`</` escaped so
/// no string in the data can end the script element).
pub fn render(data: &PageData) -> Result<String, ToolError> {
    let json = serde_json::to_string(data)
        .map_err(std::io::Error::other)?
        .replace("</", "<\\/")
        .replace("<!--", "<\\!--");
    let title = html_escape(&data.title);
    let (head, tail) = PAGE.split_once("__DATA__").unwrap_or((PAGE, ""));
    Ok(format!("{}{json}{tail}", head.replace("__TITLE__", &title)))
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `demo view`: writes the page (whole or not at all). A damaged demo gets
/// the page of what decoded before the fault and exits with an error.
pub fn view(
    path: &Path,
    output: &Path,
    max_snapshots: usize,
    out: &mut dyn Write,
) -> Result<i32, ToolError> {
    let (data, format) = read(path)?;
    let name = path
        .file_name()
        .map_or_else(|| "demo".into(), |n| n.to_string_lossy().into_owned());
    let (page, error) = page_data(&name, &data, format, max_snapshots);
    if page.frames.is_empty() {
        return Err(error.unwrap_or_else(|| {
            ToolError::refused(format!("{} holds no snapshot to show", path.display()))
        }));
    }
    write_whole(output, render(&page)?.as_bytes())?;
    writeln!(
        out,
        "wrote {}: {} of {} snapshots{}, {} events, {:.1} s",
        output.display(),
        page.snapshots(),
        page.snapshots_total,
        if page.stride > 1 {
            format!(" (1 in {})", page.stride)
        } else {
            String::new()
        },
        page.events(),
        page.duration_ms as f64 / 1000.0
    )?;
    if let Some(error) = error {
        eprintln!("demo: {error}; the page shows everything before it");
        return Ok(EXIT_ERROR);
    }
    if page.truncated {
        eprintln!("demo: the demo is truncated; the page ends at its last complete record");
        return Ok(EXIT_TRUNCATED);
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_evenly_spaced_frames_within_the_bound() {
        let mut thinner = Thinner {
            max: 100,
            stride: 1,
            seen: 0,
            frames: Vec::new(),
        };
        for t in 0..1000 {
            thinner.push(|| PageFrame {
                t,
                followed: None,
                entities: Vec::new(),
            });
        }
        assert!(thinner.frames.len() <= 100);
        assert_eq!(thinner.stride, 16);
        let times: Vec<i64> = thinner.frames.iter().map(|f| f.t).collect();
        assert_eq!(times, (0..1000).step_by(16).collect::<Vec<_>>());
    }

    #[test]
    fn data_cannot_close_the_script_element() {
        let page = PageData {
            title: "<b>".into(),
            format: "native",
            map: "</script><script>alert(1)</script>".into(),
            snapshots_total: 0,
            stride: 1,
            duration_ms: 0,
            recording_client: None,
            names: BTreeMap::new(),
            bounds: [0; 4],
            frames: Vec::new(),
            bytes: Vec::new(),
            events: Vec::new(),
            truncated: false,
            error: None,
        };
        let html = render(&page).unwrap();
        assert_eq!(
            html.matches("</script>").count(),
            PAGE.matches("</script>").count()
        );
        assert!(html.contains("&lt;b&gt;"));
    }
}
