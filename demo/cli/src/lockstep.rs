//! `demo info` and `demo play` for lockstep recordings
//! ([`demo::lockstep`]): a replay re-simulates the game, so the tool must
//! know the simulation the header names. It knows the built-in
//! [`lockstep::Units`] simulation (the lockstep crate's example, tests and
//! benches) and the arena's world ([`arena::lockstep::ArenaSim`], what
//! `arena --model lockstep` records); a recording of any other simulation is
//! described by `info` but refused by `play` with its name.

use std::io::Write;
use std::path::Path;

use demo::lockstep::{
    has_lockstep_magic, info as describe, replay, LockstepKeyframe, LockstepReader, ReplayReport,
};
use demo::DemoError;
use lockstep::{Simulation, Units};

use crate::cli::{EXIT_OK, EXIT_TRUNCATED};
use crate::error::ToolError;

/// The simulations this build can replay, by [`Simulation::NAME`].
pub const KNOWN_SIMULATIONS: &[&str] = &[Units::NAME, arena::lockstep::ArenaSim::NAME];

/// The file's bytes if it is a lockstep recording (`None`: another format).
pub fn read_if_lockstep(path: &Path) -> Result<Option<Vec<u8>>, ToolError> {
    let data = std::fs::read(path).map_err(|e| {
        DemoError::Io(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", path.display()),
        ))
    })?;
    Ok(has_lockstep_magic(&data).then_some(data))
}

/// Replays with the simulation the header names.
pub fn replay_named(
    reader: &LockstepReader<'_>,
    from: Option<&LockstepKeyframe>,
) -> Result<ReplayReport, ToolError> {
    let name = reader.header().simulation.as_str();
    let report = if name == Units::NAME {
        replay::<Units>(reader, from)?.0
    } else if name == arena::lockstep::ArenaSim::NAME {
        replay::<arena::lockstep::ArenaSim>(reader, from)?.0
    } else {
        return Err(ToolError::refused(format!(
            "the recording is of simulation `{name}`; this build replays {KNOWN_SIMULATIONS:?}"
        )));
    };
    Ok(report)
}

/// `demo info` of a lockstep recording.
pub fn info(path: &Path, data: &[u8], json: bool, out: &mut dyn Write) -> Result<i32, ToolError> {
    let reader = LockstepReader::new(data)?;
    let info = describe(&reader, data.len())?;
    if json {
        serde_json::to_writer(&mut *out, &info).map_err(std::io::Error::other)?;
        writeln!(out)?;
        return Ok(EXIT_OK);
    }
    writeln!(out, "file:         {}", path.display())?;
    writeln!(
        out,
        "format:       {} (version {})",
        info.format, info.version
    )?;
    writeln!(
        out,
        "simulation:   {} (seed {}, {} setup bytes{})",
        info.simulation,
        info.seed,
        info.setup_bytes,
        if KNOWN_SIMULATIONS.contains(&info.simulation.as_str()) {
            ""
        } else {
            "; not replayable by this build"
        }
    )?;
    writeln!(
        out,
        "participants: {:?} (dropped: {:?})",
        info.participants, info.dropped
    )?;
    writeln!(
        out,
        "turns:        {} (delay {}, mean {:.0} ms a turn, {} ms steps), {:.3} s of game time",
        info.turns,
        info.delay,
        info.mean_turn_ms,
        info.step_ms,
        info.duration_ms as f64 / 1000.0
    )?;
    writeln!(out, "commands:     {}", info.commands)?;
    writeln!(
        out,
        "checks:       {} sync checksums (every {} turns), {} keyframes (every {} turns)",
        info.checksums, info.sync_interval, info.keyframes, info.keyframe_interval
    )?;
    writeln!(
        out,
        "size:         {} bytes, {} in turns ({:.1} bytes a turn)",
        info.bytes,
        info.turn_bytes,
        info.turn_bytes as f64 / info.turns.max(1) as f64
    )?;
    for (key, value) in &info.metadata {
        writeln!(out, "meta:         {key} = {value}")?;
    }
    if info.truncated {
        writeln!(out, "truncated:    yes (no end marker)")?;
    }
    Ok(EXIT_OK)
}

/// `demo play` of a lockstep recording: re-simulates from the start, or
/// from the last keyframe at or before `seek` seconds of game time, and
/// checks every recorded checksum and keyframe on the way.
pub fn play(
    data: &[u8],
    verify: bool,
    seek: Option<f64>,
    out: &mut dyn Write,
) -> Result<i32, ToolError> {
    let reader = LockstepReader::new(data)?;
    let from = match seek {
        None => None,
        Some(seconds) => {
            let ms = (seconds.max(0.0) * 1000.0) as u64;
            reader
                .keyframes()?
                .into_iter()
                .rev()
                .find(|k| k.time_ms as u64 <= ms)
        }
    };
    let report = replay_named(&reader, from.as_ref())?;
    writeln!(
        out,
        "replayed {} turns (turns {}..={}), {:.3} s of game time, final checksum {:016x}{}",
        report.turns,
        report.first_turn.unwrap_or(0),
        report.last_turn.unwrap_or(0),
        report.time_ms as f64 / 1000.0,
        report.final_checksum,
        if verify {
            format!(
                ", {} sync checksums and {} keyframes verified",
                report.checksums_verified, report.keyframes_verified
            )
        } else {
            String::new()
        }
    )?;
    if report.truncated {
        eprintln!("demo: the recording is truncated; every complete turn was replayed");
        return Ok(EXIT_TRUNCATED);
    }
    Ok(EXIT_OK)
}
