//! Memory of the snapshot history and bytes per snapshot for 64 clients
//! seeing all 256 entities of a Quake-3-shaped world, 32 snapshots each.
//!
//! ```sh
//! cargo run --release -p snapshot --example history
//! ```
//!
//! Memory is counted as `size_of` × capacity of every allocation the server
//! holds (see `snapshot::MemoryReport`).

use fields::Codec;
use snapshot::{AllInScope, BuildOutcome, ClientId, ClientSettings, Server, ServerConfig};

#[path = "../benches/support/q3world.rs"]
mod q3world;
use q3world::{populate, step, Activity, EntityState, Noise, PlayerState, ENTITIES};

const CLIENTS: usize = 64;
const FRAMES: u32 = 200;

struct Run {
    label: &'static str,
    activity: Activity,
    /// Server frames per 20 Hz snapshot (1: 20 Hz frames; 3: 60 Hz frames,
    /// clients staggered).
    frames_per_snapshot: u32,
}

fn main() {
    let runs = [
        Run {
            label: "deathmatch, a snapshot every frame",
            activity: Activity::Deathmatch,
            frames_per_snapshot: 1,
        },
        Run {
            label: "busy (25% move), a snapshot every frame",
            activity: Activity::Busy,
            frames_per_snapshot: 1,
        },
        Run {
            label: "busy, 60 Hz frames, 20 Hz staggered snapshots",
            activity: Activity::Busy,
            frames_per_snapshot: 3,
        },
    ];
    let copied = CLIENTS * 32 * ENTITIES as usize * std::mem::size_of::<EntityState>();
    println!(
        "{CLIENTS} clients x {ENTITIES} entities x 32 snapshots; entity state {} bytes, player state {} bytes",
        std::mem::size_of::<EntityState>(),
        std::mem::size_of::<PlayerState>()
    );
    println!(
        "copying every state into every ring (Quake 3) would take {:.1} MB of entity states\n",
        copied as f64 / 1e6
    );
    for run in &runs {
        for codec in [Codec::Q3, Codec::Native] {
            report(run, codec);
        }
    }
}

fn report(run: &Run, codec: Codec) {
    let mut server: Server<EntityState, PlayerState> =
        Server::new(ServerConfig::for_codec(codec)).expect("valid config");
    let mut noise = Noise::new(0x0051_7e5e);
    populate(&mut server, &mut noise);
    let mut clients: Vec<ClientId> = Vec::new();
    let mut bytes = Vec::new();
    let mut full_bytes = 0;
    let mut delta_bytes = 0u64;
    let mut deltas = 0u64;
    for frame in 0..FRAMES {
        // Clients join over the first frames, so 20 Hz clients are staggered.
        if clients.len() < CLIENTS {
            let settings = ClientSettings {
                snapshot_rate: 20,
                byte_rate: 0,
                ..ClientSettings::default()
            };
            let joining = CLIENTS / run.frames_per_snapshot as usize;
            for _ in 0..joining.min(CLIENTS - clients.len()) {
                clients.push(server.add_client(settings).expect("client"));
            }
        }
        step(&mut server, &clients, &mut noise, frame, run.activity);
        // Frames are 50 ms apart, or a third of that at 60 Hz.
        server
            .commit_frame(frame * 50 / run.frames_per_snapshot)
            .expect("time moves forward");
        for &id in &clients {
            let outcome = server
                .build_snapshot(id, &mut AllInScope, &mut bytes)
                .expect("snapshot builds");
            if let BuildOutcome::Built(info) = outcome {
                if info.base.is_none() {
                    full_bytes = full_bytes.max(info.bytes);
                } else if frame >= FRAMES / 2 {
                    delta_bytes += info.bytes as u64;
                    deltas += 1;
                }
                // One ack in twenty is lost.
                if noise.below(20) != 0 {
                    server
                        .acknowledge(id, info.sequence)
                        .expect("client exists");
                }
            }
        }
    }
    let memory = server.memory();
    println!("{} / {}", run.label, codec.name());
    println!(
        "  entity states  {:>9} bytes ({} states stored)",
        memory.entity_states, memory.stored_states
    );
    println!(
        "  frame tables   {:>9} bytes ({} frames alive)",
        memory.frame_tables, memory.frames
    );
    println!("  client rings   {:>9} bytes", memory.client_rings);
    println!(
        "  history total  {:>9} bytes = {:.2} MB (target <= 8 MB)",
        memory.history_bytes(),
        memory.history_bytes() as f64 / 1e6
    );
    println!(
        "  everything     {:>9} bytes (with master state, gamestate, scratch)",
        memory.total_bytes()
    );
    println!(
        "  full update {} bytes; delta snapshots {:.0} bytes on average\n",
        full_bytes,
        delta_bytes as f64 / deltas.max(1) as f64
    );
}
