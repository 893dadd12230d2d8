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
//! Arguments: `q3`, `native` or `memcmp`; clients; frames. Instructions per
//! frame are the collected total divided by the frames.
//!
//! `decode-q3` / `decode-native` (then a pass count) decode every snapshot
//! of the real duel instead, like the `codecs` benchmark's
//! `snapshot_decode` (collect with `--toggle-collect='*measured_decodes*'`).

use std::hint::black_box;

use benches::corpus::{duel_steps, encode_all, q3_zeros};
use benches::frame::{memcmp_floor, FrameBench};
use benches::message::MessageFormat;
use fields::Codec;

const ENTITIES: u32 = 256;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map_or("native", String::as_str);
    let clients: usize = args.get(2).map_or(Ok(64), |s| s.parse())?;
    let frames: usize = args.get(3).map_or(Ok(200), |s| s.parse())?;
    if let Some(codec) = what.strip_prefix("decode-") {
        let format = if codec == "q3" {
            MessageFormat::Q3
        } else {
            MessageFormat::NATIVE
        };
        let passes: usize = args.get(2).map_or(Ok(1), |s| s.parse())?;
        let steps = duel_steps()?;
        let messages = encode_all(format, &steps)?;
        let zeros = q3_zeros();
        // Decode once outside the measurement: models load lazily.
        measured_decodes(format, &steps[..1], &messages[..1], &zeros, 1)?;
        let decoded = measured_decodes(format, &steps, &messages, &zeros, passes)?;
        println!("{what}: {decoded} snapshots decoded");
        return Ok(());
    }
    let codec = match what {
        "q3" => Codec::Q3,
        _ => Codec::Native,
    };
    let mut bench = FrameBench::new(codec, clients, ENTITIES)?;
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

/// The measured decodes; returns how many snapshots were decoded.
#[inline(never)]
fn measured_decodes(
    format: MessageFormat,
    steps: &[benches::workload::q3demo::OwnedStep],
    messages: &[benches::corpus::Encoded],
    zeros: &benches::state::Zeros<q3::EntityState, q3::PlayerState>,
    passes: usize,
) -> Result<usize, benches::Error> {
    let mut decoded = 0;
    for _ in 0..passes {
        for (step, message) in steps.iter().zip(messages) {
            let base = step.base.as_deref();
            black_box(format.decode(
                black_box(&message.bytes),
                message.bits,
                base,
                step.frame_ms,
                &*step.baselines,
                zeros,
            )?);
            decoded += 1;
        }
    }
    Ok(decoded)
}
