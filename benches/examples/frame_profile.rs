//! A fixed amount of the frame benchmark's work, for instruction counting
//! under `valgrind --tool=callgrind` (robust to a loaded machine, unlike
//! wall-clock timings):
//!
//! ```sh
//! cargo build --release -p benches --example frame_profile
//! valgrind --tool=callgrind --toggle-collect='*measured_frames*' \
//!     target/release/examples/frame_profile native 64 200
//! valgrind --tool=callgrind --toggle-collect='*measured_memcmp*' \
//!     target/release/examples/frame_profile memcmp 64 200
//! ```
//!
//! Arguments: `q3`, `native`, `native-range` (range-coded,
//! `snapshot::CompactRange`) or `memcmp`; clients; frames. Instructions per
//! frame are the collected total divided by the frames.
//!
//! `decode-q3` / `decode-native` / `decode-native-range` (then a pass
//! count) decode every snapshot
//! of the real duel instead, like the `codecs` benchmark's
//! `snapshot_decode` (collect with `--toggle-collect='*measured_decodes*'`).
//!
//! `encode-q3` / `encode-native` (then a pass count) have the engine's
//! server write every snapshot of the real duel to one client instead,
//! like the `codecs` benchmark's `snapshot_encode` (world set, frame
//! committed, message built; collect with
//! `--toggle-collect='*measured_encodes*'`).
//!
//! `ab-decode ROUNDS` and `ab-frame ROUNDS FRAMES` time the two codecs (and,
//! for frames, the memcmp floor) in alternating rounds and print each one's
//! fastest and median round: on a machine shared with other work, a slow
//! spell then hits both sides of the comparison alike, where separate
//! benchmark runs minutes apart can differ by a third.

use std::hint::black_box;

use benches::corpus::{duel_steps, engine_encoder, engine_stream, engine_stream_with, q3_zeros};
use benches::encode::{Breakdown, Encoder};
use benches::engine::{EngineEncoder, EngineRecording};
use benches::frame::{memcmp_floor, FrameBench};
use benches::workload::q3demo::OwnedStep;
use fields::Codec;
use snapshot::Client;

const ENTITIES: u32 = 256;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map_or("native", String::as_str);
    let clients: usize = args.get(2).map_or(Ok(64), |s| s.parse())?;
    let frames: usize = args.get(3).map_or(Ok(200), |s| s.parse())?;
    match what {
        "ab-decode" => return ab_decode(args.get(2).map_or(Ok(20), |s| s.parse())?),
        "ab-frame" => {
            let rounds = args.get(2).map_or(Ok(20), |s| s.parse())?;
            return ab_frame(rounds, args.get(3).map_or(Ok(200), |s| s.parse())?);
        }
        _ => {}
    }
    if let Some(codec) = what.strip_prefix("encode-") {
        let passes: usize = args.get(2).map_or(Ok(1), |s| s.parse())?;
        let codec = Codec::from_name(codec).ok_or_else(|| format!("no codec {codec:?}"))?;
        let steps = duel_steps()?;
        let encoded = measured_encodes(codec, &steps, passes)?;
        println!("{what}: {encoded} snapshots encoded");
        return Ok(());
    }
    if let Some(codec) = what.strip_prefix("decode-") {
        let passes: usize = args.get(2).map_or(Ok(1), |s| s.parse())?;
        let steps = duel_steps()?;
        let recording = match codec {
            "q3" => engine_stream(Codec::Q3, &steps)?,
            "native-range" => engine_stream_with(EngineEncoder::native_range(), &steps)?,
            _ => engine_stream(Codec::Native, &steps)?,
        };
        let client = recording.reader(&q3_zeros())?;
        // Decode once outside the measurement: models load lazily.
        measured_decodes(&recording, &client, 1, 1)?;
        let decoded = measured_decodes(&recording, &client, recording.messages.len(), passes)?;
        println!("{what}: {decoded} snapshots decoded");
        return Ok(());
    }
    let codec = match what {
        "q3" => Codec::Q3,
        _ => Codec::Native,
    };
    let mut bench = match what {
        "native-range" => FrameBench::range_coded(clients, ENTITIES)?,
        _ => FrameBench::new(codec, clients, ENTITIES)?,
    };
    if what == "memcmp" {
        let (base, current) = bench.entity_images();
        let entity_bytes = base.len() / ENTITIES as usize;
        let differing = measured_memcmp(&current, &base, entity_bytes, clients, frames);
        println!("memcmp: {differing} differing entity comparisons");
    } else {
        let bytes = measured_frames(&mut bench, frames)?;
        println!("{what}: {frames} frames, {bytes} bytes");
    }
    Ok(())
}

/// The measured frames (a function of its own for `--toggle-collect`).
#[inline(never)]
fn measured_frames(bench: &mut FrameBench, frames: usize) -> Result<usize, benches::Error> {
    let mut bytes = 0;
    for _ in 0..frames {
        bytes += bench.frame()?.bytes;
    }
    Ok(bytes)
}

/// The measured floor.
#[inline(never)]
fn measured_memcmp(
    current: &[u8],
    base: &[u8],
    entity_bytes: usize,
    clients: usize,
    frames: usize,
) -> usize {
    (0..frames)
        .map(|_| memcmp_floor(black_box(current), base, entity_bytes, clients))
        .sum()
}

/// The measured decodes: the engine's client reading the first `count`
/// messages of `recording`, `passes` times, each pass from `start` (a
/// client that has read the gamestate); returns how many snapshots were
/// decoded.
#[inline(never)]
fn measured_decodes(
    recording: &EngineRecording,
    start: &Client<q3::EntityState, q3::PlayerState>,
    count: usize,
    passes: usize,
) -> Result<usize, benches::Error> {
    let mut decoded = 0;
    for _ in 0..passes {
        let mut client = start.clone();
        for index in 0..count.min(recording.messages.len()) {
            recording.decode(black_box(&mut client), index)?;
            decoded += 1;
        }
    }
    Ok(decoded)
}

/// The measured encodes: a fresh engine server (not verifying by reading
/// back) writing every step of `steps` to one client, `passes` times;
/// returns how many snapshots were encoded.
#[inline(never)]
fn measured_encodes(
    codec: Codec,
    steps: &[OwnedStep],
    passes: usize,
) -> Result<usize, benches::Error> {
    let zeros = q3_zeros();
    let mut breakdown = Breakdown::default();
    let mut encoded = 0;
    for _ in 0..passes {
        let mut encoder = engine_encoder(codec).unverified();
        for step in steps {
            black_box(encoder.encode(black_box(&step.step()), &zeros, &mut breakdown)?);
            encoded += 1;
        }
    }
    Ok(encoded)
}

/// Per-unit times of each side's rounds, in nanoseconds.
#[derive(Default)]
struct Rounds(Vec<(&'static str, Vec<f64>)>);

impl Rounds {
    fn record(&mut self, name: &'static str, nanos_per_unit: f64) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, times)) => times.push(nanos_per_unit),
            None => self.0.push((name, vec![nanos_per_unit])),
        }
    }

    /// One line per side: fastest and median round, and both as a
    /// multiple of the first side's.
    fn print(&mut self, unit: &str) {
        let stats: Vec<(&str, f64, f64)> = self
            .0
            .iter_mut()
            .map(|(name, times)| {
                times.sort_by(f64::total_cmp);
                (*name, times[0], times[times.len() / 2])
            })
            .collect();
        let (_, first_min, first_median) = stats[0];
        for (name, min, median) in &stats {
            println!(
                "{name:>7}: fastest {:8.1} ns/{unit} ({:.2}x), median {:8.1} ns/{unit} ({:.2}x)",
                min,
                min / first_min,
                median,
                median / first_median
            );
        }
    }
}

/// Alternating decode rounds of the whole duel, q3 then native.
fn ab_decode(rounds: usize) -> Result<(), Box<dyn std::error::Error>> {
    let steps = duel_steps()?;
    let zeros = q3_zeros();
    let codecs = [("q3", Codec::Q3), ("native", Codec::Native)];
    let encoded = codecs
        .iter()
        .map(|(_, codec)| {
            let recording = engine_stream(*codec, &steps)?;
            let client = recording.reader(&zeros)?;
            Ok((recording, client))
        })
        .collect::<Result<Vec<_>, benches::Error>>()?;
    let mut times = Rounds::default();
    for _ in 0..rounds {
        for ((name, _), (recording, client)) in codecs.iter().zip(&encoded) {
            let start = std::time::Instant::now();
            let decoded = measured_decodes(recording, client, recording.messages.len(), 1)?;
            times.record(name, start.elapsed().as_nanos() as f64 / decoded as f64);
        }
    }
    times.print("snapshot");
    Ok(())
}

/// Alternating frame rounds at 64 clients: the memcmp floor, q3, native.
fn ab_frame(rounds: usize, frames: usize) -> Result<(), Box<dyn std::error::Error>> {
    let clients = 64;
    let mut q3 = FrameBench::new(Codec::Q3, clients, ENTITIES)?;
    let mut native = FrameBench::new(Codec::Native, clients, ENTITIES)?;
    let (base, current) = native.entity_images();
    let entity_bytes = base.len() / ENTITIES as usize;
    let mut times = Rounds::default();
    for _ in 0..rounds {
        let start = std::time::Instant::now();
        measured_memcmp(&current, &base, entity_bytes, clients, frames);
        times.record("memcmp", start.elapsed().as_nanos() as f64 / frames as f64);
        for (name, bench) in [("q3", &mut q3), ("native", &mut native)] {
            let start = std::time::Instant::now();
            measured_frames(bench, frames)?;
            times.record(name, start.elapsed().as_nanos() as f64 / frames as f64);
        }
    }
    times.print("frame");
    Ok(())
}
