//! # arena
//!
//! A headless, server-authoritative, deterministic shooter that runs the
//! whole library the way a game would: bot clients connect over real UDP
//! on 127.0.0.1 (or the in-process link) through the seeded link
//! conditioner, send their commands as guaranteed-quickest data, predict
//! their own movement and interpolate everyone else; the server simulates
//! the world at a fixed tick, sends each client a delta snapshot of its
//! view, and chat, the kill feed and join/leave notices travel on the
//! guaranteed-ordered channel. The spectator view is recorded as a demo.
//!
//! | module | holds |
//! | --- | --- |
//! | [`config`] | command line → [`MatchConfig`], the join/leave schedule |
//! | [`protocol`] | the `net_struct!` tables, the command, ordered messages |
//! | [`model`] | the native codec's trained models of those tables |
//! | [`physics`] | the map and the movement code shared by server and prediction |
//! | [`world`] | the server's simulation: projectiles, damage, items, scores |
//! | [`bot`] | bot decisions from a client's view and a seed |
//! | [`predict`] / [`interp`] | prediction + reconciliation; interpolation |
//! | [`server`] / [`client`] | the two ends, wired to netchan and snapshot |
//! | [`transport`] | UDP (one `mio::Poll`) or in-process, metered |
//! | [`game`] | the match loop on a real or simulated clock |
//! | [`summary`] / [`status`] | the report, JSON, invariants; live status line |
//! | [`recording`] | the demo recorder behind the server's recording hook |
//! | [`output`] | files that appear whole or not at all (recordings, summaries) |
//! | [`cli`] / [`serve`] / [`bots`] | subcommands: a dedicated server, remote bots |
//! | [`server_status`] | the connectionless status payload and `arena status`'s query |
//! | [`metrics`] / [`http`] | Prometheus metrics and the `/metrics` responder |
//! | [`logging`] / [`shutdown`] | `tracing` setup, throttled reject logs; SIGINT/SIGTERM |
//! | [`lockstep`] | `--model lockstep`: the same world and bots under deterministic lockstep |
//!
//! ```no_run
//! let mut config = arena::MatchConfig::short(arena::transport::TransportKind::Local, 3.0, 7);
//! config.clients = 4;
//! let summary = arena::play(config)?;
//! assert!(summary.ok(), "{}", summary.table());
//! # Ok::<(), arena::Error>(())
//! ```
#![forbid(unsafe_code)]

pub mod bot;
pub mod bots;
pub mod cli;
pub mod client;
pub mod config;
pub mod error;
pub mod game;
pub mod http;
pub mod interp;
pub mod lockstep;
pub mod logging;
pub mod metrics;
pub mod model;
pub mod output;
pub mod physics;
pub mod predict;
pub mod protocol;
pub mod recording;
pub mod serve;
pub mod server;
pub mod server_status;
pub mod shutdown;
pub mod status;
pub mod summary;
pub mod transport;
pub mod world;

use std::time::Instant;

pub use config::{Args, MatchConfig};
pub use error::Error;
pub use game::Match;
pub use summary::Summary;

/// Runs a match to the end and summarizes it (recording the demo if the
/// configuration names a file: the file appears only if the match ran to
/// its end). `live_status` shows the one-line status.
pub fn run(config: MatchConfig, live_status: bool) -> Result<(Match, Summary), Error> {
    let (demo, pending) = recording::open(&config)?.unzip();
    let mut game = Match::new(config, demo, Instant::now())?;
    if live_status {
        game.enable_status();
    }
    game.run()?;
    let summary = Summary::of(&game);
    if let Some(pending) = pending {
        pending.commit()?;
    }
    Ok((game, summary))
}

/// Runs a match without a status line and returns its summary.
pub fn play(config: MatchConfig) -> Result<Summary, Error> {
    run(config, false).map(|(_, summary)| summary)
}
