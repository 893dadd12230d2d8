//! Records a generated match with a server-side recorder and writes it as a
//! native demo, for trying the `demo` tool:
//!
//! ```text
//! cargo run --release -p netq3-demo --example record_match -- /tmp/match.demo [native|q3] [frames]
//! cargo run --release -p demo-cli -- info /tmp/match.demo
//! ```

#[path = "../tests/common/arena.rs"]
mod arena;

use fields::Codec;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "match.demo".into());
    let codec = match args.next().as_deref() {
        Some("q3") => Codec::Q3,
        _ => Codec::Native,
    };
    let frames = args.next().and_then(|f| f.parse().ok()).unwrap_or(2_400);
    // A keyframe every 5 s of a 20 Hz stream.
    let recorded = arena::record_match(codec, frames, 100);
    if let Err(e) = std::fs::write(&path, &recorded.demo) {
        eprintln!("writing {path}: {e}");
        std::process::exit(1);
    }
    println!(
        "{path}: {} snapshots, {} bytes ({} codec)",
        recorded.expected.len(),
        recorded.demo.len(),
        codec.name()
    );
}
