//! The tool's Quake 3 side: statistics, info and dumps of `.dm_68` files,
//! in the same shapes as the native ones.

use std::collections::BTreeMap;
use std::io::Write;

use demo::dump::{to_value, DumpEntity, DumpLine, DumpOptions};
use demo::stats::{DemoStats, Info, Progress, Sample, SchemaInfo};
use fields::NetFields;
use q3::{Command, Dm68Decoder};

use crate::error::ToolError;

/// Statistics of a Quake 3 demo: every record is decoded.
pub fn stats(data: &[u8], progress: Progress<'_>) -> Result<DemoStats, ToolError> {
    match stats_until_error(data, progress) {
        (_, Some(error)) => Err(error),
        (stats, None) => Ok(stats),
    }
}

/// As [`stats`], but a damaged file still gives the statistics of every
/// record before the fault, beside the error (a truncated file is no
/// error: its statistics say so).
pub fn stats_until_error(data: &[u8], progress: Progress<'_>) -> (DemoStats, Option<ToolError>) {
    let mut stats = DemoStats::new(q3::FORMAT_NAME, 68, data.len() as u64);
    let decoder = match Dm68Decoder::new(data) {
        Ok(decoder) => decoder,
        Err(error) => return (stats.finish(), Some(error.into())),
    };
    for item in decoder {
        let decoded = match item {
            Ok(decoded) => decoded,
            Err(error) if error.is_truncation() => {
                stats.truncate(&error);
                break;
            }
            Err(error) => return (stats.finish(), Some(error.into())),
        };
        stats.records += 1;
        let bytes = decoded.record.message.len() as u32;
        for command in &decoded.message.commands {
            match &command.command {
                Command::Gamestate(_) => stats.gamestates += 1,
                Command::Snapshot(snap) => {
                    let sample = Sample {
                        time_ms: snap.snapshot.server_time as i64,
                        bytes,
                        entities: Some(snap.snapshot.entities.len() as u32),
                    };
                    stats.push_snapshot(sample, snap.snapshot.delta_num == 0);
                }
                _ => {}
            }
        }
        progress(
            (decoded.record.offset + q3::RECORD_HEADER_LEN + decoded.record.message.len()) as u64,
        );
    }
    (stats.finish(), None)
}

/// `demo info` of a Quake 3 demo; `metadata` from its configstrings.
pub fn info(metadata: BTreeMap<String, String>, stats: &DemoStats) -> Info {
    Info::new(
        "q3",
        0,
        0,
        SchemaInfo::new(&q3::EntityState::TABLE.schema(), false),
        SchemaInfo::new(&q3::PlayerState::TABLE.schema(), false),
        metadata,
        stats,
    )
}

/// Map and player names from a Quake 3 demo's configstrings (serverinfo is
/// configstring 0; players are 544 onwards, `CS_PLAYERS`).
pub fn metadata(data: &[u8]) -> BTreeMap<String, String> {
    const CS_SERVERINFO: usize = 0;
    const CS_PLAYERS: usize = 544;
    const MAX_CLIENTS: usize = 64;
    let mut metadata = BTreeMap::new();
    let Ok(mut decoder) = Dm68Decoder::new(data) else {
        return metadata;
    };
    // The gamestate is in the first records.
    for _ in 0..4 {
        match decoder.next() {
            Some(Ok(_)) if decoder.client().gamestates() > 0 => break,
            Some(Ok(_)) => {}
            _ => return metadata,
        }
    }
    let client = decoder.client();
    let info = client.configstring(CS_SERVERINFO);
    for key in ["mapname", "sv_hostname", "g_gametype", "version"] {
        if let Some(value) = q3::info::value(info, key) {
            metadata.insert(key.to_string(), value.to_string());
        }
    }
    let players: Vec<&str> = (CS_PLAYERS..CS_PLAYERS + MAX_CLIENTS)
        .filter_map(|i| q3::info::value(client.configstring(i), "n"))
        .collect();
    if !players.is_empty() {
        metadata.insert("players".into(), players.join(", "));
    }
    if let Some(num) = client.client_num() {
        metadata.insert("recording_client".into(), num.to_string());
    }
    metadata
}

/// Dumps a Quake 3 demo; returns the lines written. A truncated file is
/// dumped to its last complete record, then reported as the error.
pub fn dump(
    data: &[u8],
    options: DumpOptions,
    out: &mut dyn Write,
    progress: Progress<'_>,
) -> Result<usize, ToolError> {
    let mut lines = 0;
    for item in Dm68Decoder::new(data)? {
        let decoded = item?;
        progress((decoded.record.offset + decoded.record.message.len()) as u64);
        for command in &decoded.message.commands {
            let Command::Snapshot(snap) = &command.command else {
                continue;
            };
            let snapshot = &snap.snapshot;
            let time = snapshot.server_time as i64;
            if options.past(time) {
                return Ok(lines);
            }
            if !options.wants(time) {
                continue;
            }
            let entities = snapshot
                .entities
                .iter()
                .map(|(number, state)| {
                    Ok(DumpEntity {
                        number: *number,
                        state: to_value(state)?,
                        sent: None,
                    })
                })
                .collect::<Result<Vec<_>, ToolError>>()?;
            let player = to_value(&snapshot.ps)?;
            let line = DumpLine {
                time_ms: time,
                sequence: snapshot.message_num as i64,
                base: snapshot.base_message().map(i64::from),
                player,
                entities,
            };
            line.write(options.jsonl, out)?;
            lines += 1;
        }
    }
    Ok(lines)
}
