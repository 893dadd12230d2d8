//! Bytes of snapshot history the snapshot server holds for 64 clients ×
//! 256 entities × 32 frames (target: at most 8 MB), as the server itself
//! accounts for them (`snapshot::Server::memory`: `size_of` × capacity of
//! every allocation), next to what Quake 3's design would hold.
//!
//! ```sh
//! cargo run --release -p benches --bin history-memory
//! ```

use std::mem::size_of;
use std::process::ExitCode;

use benches::frame::FrameBench;
use benches::Error;
use fields::Codec;
use q3::{EntityState, PlayerState};
use snapshot::config::RING_SIZE;

const CLIENTS: usize = 64;
const ENTITIES: u32 = 256;
/// Target from the issue.
const TARGET_BYTES: usize = 8_000_000;

fn mb(bytes: usize) -> String {
    format!("{:.2} MB", bytes as f64 / 1e6)
}

fn run() -> Result<(), Error> {
    // What Quake 3 keeps: every client's ring of PACKET_BACKUP snapshots,
    // each with its own copy of every visible entity state and the player
    // state (svs.snapshotEntities and client_t.frames).
    let quake3 = CLIENTS
        * RING_SIZE
        * (ENTITIES as usize * size_of::<EntityState>() + size_of::<PlayerState>());
    println!(
        "{CLIENTS} clients x {ENTITIES} entities x {RING_SIZE} frames; \
         entity state {} B, player state {} B (Quake 3's layouts)",
        size_of::<EntityState>(),
        size_of::<PlayerState>()
    );
    println!(
        "Quake 3's design (a copy per client per frame): {}\n",
        mb(quake3)
    );
    for codec in [Codec::Q3, Codec::Native] {
        let mut bench = FrameBench::new(codec, CLIENTS, ENTITIES)?;
        // Past the warm-up, run two more rings' worth so every ring is full.
        for _ in 0..2 * RING_SIZE {
            bench.frame()?;
        }
        let memory = bench.server.memory();
        let history = memory.history_bytes();
        println!("codec {}:", codec.name());
        println!(
            "  entity states  {:>10}  ({} states stored once, shared by every client)",
            mb(memory.entity_states),
            memory.stored_states
        );
        println!(
            "  frame tables   {:>10}  ({} frames referenced)",
            mb(memory.frame_tables),
            memory.frames
        );
        println!("  client rings   {:>10}", mb(memory.client_rings));
        println!(
            "  history        {:>10}  = {:.3} of the {} target, {:.3} of Quake 3's",
            mb(history),
            history as f64 / TARGET_BYTES as f64,
            mb(TARGET_BYTES),
            history as f64 / quake3 as f64
        );
        println!(
            "  (not history: master state, gamestate, scratch: {})\n",
            mb(memory.other)
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("history-memory: {error}");
            ExitCode::FAILURE
        }
    }
}
