//! # netq3-lockstep
//!
//! Deterministic lockstep — Age of Empires' multiplayer model — beside the
//! snapshot model, on the same `netchan` channel. Every machine runs the
//! same simulation; only player commands cross the network, so bandwidth
//! does not grow with the number of simulated entities. Three participants
//! and a relay host over the in-process link, a fifth of the datagrams lost,
//! on simulated time:
//!
//! ```
//! use std::time::Duration;
//! use netchan::ConditionerConfig;
//! use netq3_lockstep::session::{run, SessionConfig};
//! use netq3_lockstep::{HostConfig, Peer, UnitOrder, Units, UnitsSetup};
//!
//! let config = SessionConfig {
//!     participants: 3,
//!     turns: 40,
//!     host: HostConfig {
//!         setup: UnitsSetup { units: 64, ..UnitsSetup::default() }.to_bytes(),
//!         ..HostConfig::default()
//!     },
//!     link: ConditionerConfig { loss: 0.2, latency: Duration::from_millis(30), ..ConditionerConfig::default() },
//!     ..SessionConfig::default()
//! };
//! // Each participant orders one of its units somewhere every turn.
//! let orders = |p: u8, peer: &Peer<Units>| {
//!     let turn = peer.scheduled_turn() as i32;
//!     let order = UnitOrder { first: p as u32, count: 1, target: [turn * 7, -turn * 13] };
//!     vec![order.encode().to_vec()]
//! };
//! let report = run(&config, orders, |_, _, _| {})?;
//! assert!(report.desyncs().is_empty());
//! // Only commands crossed the network, yet every machine ends in the same state.
//! let checksums: Vec<_> = report.participants.iter().map(|p| p.final_checksum).collect();
//! assert!(checksums[0].is_some() && checksums.iter().all(|c| *c == checksums[0]));
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! | module | holds |
//! | --- | --- |
//! | [`wire`] | the messages, their bounds and decoders |
//! | [`host`] | [`Host`]: the relay — turns, speed control, sync checks, drops |
//! | [`peer`] | [`Peer`]: a participant — owns the simulation, executes turns |
//! | [`speed`] | [`SpeedControl`]: turn length from ping, steps from the slowest frame |
//! | [`sim`] | the [`Simulation`] trait, [`StateHasher`], the built-in [`Units`] |
//! | [`net`] | [`HostNode`] / [`PeerNode`]: the state machines on netchan endpoints |
//! | [`session`] | a whole session in one process on simulated time |
//!
//! ## Topology: a relay host, not a mesh
//!
//! Participants connect to one host (a dedicated relay, or a process next
//! to one player's participant over netchan's in-process link), which
//! forwards each turn's command sets to everyone. Age of Empires used a
//! peer-to-peer mesh; we choose the relay because:
//!
//! * netchan is a client/server channel (cookie handshake, one server
//!   endpoint accepting many connections); a mesh would need every pair to
//!   handshake, `n·(n−1)/2` connections, and NAT traversal in real use;
//! * upload per participant is one command set per turn, not `n − 1` copies
//!   (the host's upload is the `n`-fold one, which is where bandwidth is);
//! * one party decides what needs agreement — which turn a leaver is
//!   dropped at, each turn's length and step count, who is out of sync by
//!   majority — and states it inside the turn message itself, so every
//!   participant executes the identical decision at the identical turn
//!   without a separate agreement round;
//! * the cost is latency: a command goes sender → host → everyone, two
//!   one-way trips instead of one; speed control accounts for exactly that
//!   path, and for `n ≥ 3` the worst mesh path is not much shorter.
//!
//! ## Turns
//!
//! A participant sends, as turn `T + 1` starts, the commands issued during
//! turn `T`, as its command set for turn `T + D` (`D` = [`Settings::delay`],
//! 2 by default: Age of Empires' "T+2"). An empty set is sent all the same:
//! it is the participant's acknowledgement that it has nothing for that
//! turn. The host sends turn `T + D` — every live participant's set, in
//! participant order — once all are in; a participant executes a turn only
//! when that message is in *and* the turn is due by its clock. So a command
//! waits between `D − 1` and `D` turns (input latency ≈ `(D − ½)` turns,
//! plus any stall), and a set has `D − 1` turns to travel. The first
//! `D − 1` turns are empty for everyone.
//!
//! ## Redundancy instead of retransmission
//!
//! Every turn waits for the slowest of all sets, so how a loss is repaired
//! decides the game's pace. Waiting for a resend costs a round trip (the
//! sender must first learn of the loss) — at 60 ms one way and 20% loss
//! that made input latency 2.4 times the lossless figure. So sets and turns
//! are sent the way Quake 3 sends user commands: each message to the host
//! holds *every* set the host has not acknowledged, each message to a
//! participant every turn it has not acknowledged, and a message goes out
//! whenever something is new and again every repeat interval (25 ms) while
//! anything is unacknowledged. Acknowledgements ride along in the other
//! direction's messages ("I have every turn below N", "I have your sets
//! below N"). A lost datagram then costs one repeat interval; receivers
//! skip what they already have. The messages travel as netchan's
//! most-recent-state payload (a newer one supersedes an older one still in
//! flight); only the rare control messages — start, leave, out of sync —
//! use the guaranteed-ordered class. The price is bandwidth: a turn is sent
//! about `RTT / 25 ms` times ([`wire`]).
//!
//! ## Speed control
//!
//! Each command set carries the sender's measured round-trip time and how
//! long one simulation step takes on its machine; the host adds its own RTT
//! and loss measurements and recomputes, every turn, the turn length (from
//! the two worst links, and the repeats their loss calls for) and the number of simulation steps
//! per turn (capped so the slowest machine finishes them in 80% of the
//! turn). Both are inside each turn message, so every participant uses the
//! same values at the same turn. See [`speed`].
//!
//! ## Sync checks
//!
//! After every [`Settings::sync_interval`]-th turn each participant sends a
//! [`Simulation::checksum`] with its next set. The host compares a turn's
//! checksums once all are in; a mismatch stops the session with
//! [`LockstepError::OutOfSync`] naming the turn and the participants that
//! disagree with the majority (all of them in a tie), sent to everyone. Each
//! participant keeps its saved state of the newest sync turns
//! ([`Peer::sync_state`]) so the application can write a dump of the
//! diverging states ([`Simulation::describe`]).
//!
//! ## Leaves and timeouts
//!
//! A participant that sends [`wire::ToHost::Leave`], whose connection ends,
//! or that the host has not heard from for [`HostConfig::drop_after`] while
//! a turn waits for it, is dropped at the first turn the host has not yet
//! sent: that turn's message lists it in [`Turn::dropped`], so everyone
//! removes it at the same turn boundary, and the game goes on.
//!
//! ## Ending
//!
//! [`Host::end_after`] fixes the session's last turn (at least every turn
//! already sent) and names it in every turn message from then on. Each
//! participant executes up to it and stops ([`Peer::is_finished`]); the host
//! knows everyone has it once [`Host::all_delivered`]. A participant holding
//! every turn up to the last treats the host closing as the end, not a loss,
//! and plays the rest out. So a dedicated host can end a match on a signal
//! with every participant — and its own replica and recording — on the
//! same final turn and state.
//!
//! ## Determinism
//!
//! Lockstep only works if the same commands give bit-identical states on
//! every participant running the same build. That takes:
//!
//! * **No iteration over hash maps or sets** in the simulation (their order
//!   depends on a random key per process): keep entities in `Vec`s or
//!   `BTreeMap`s and process them in index order. Everything here does.
//! * **No wall clock** inside the simulation: time is turn number × steps ×
//!   [`Settings::step_ms`]; real time only paces turns from the outside.
//! * **One seeded generator** in the simulation state (the [`wire::Start`]
//!   seed), drawn in a fixed order, saved and restored with the state.
//! * **Same inputs in the same order**: commands apply in participant order
//!   and then issue order, drops before commands, exactly as in the turn.
//! * **Floating point**: IEEE 754 `+ − × ÷ sqrt` are exactly rounded, so
//!   the same build on the same target gives the same bits; but `sin`,
//!   `atan2`, `hypot`, `powf` come from the platform's libm and may differ
//!   between operating systems, and x87 or fused multiply-add code
//!   generation differs between targets. Across platforms use fixed point
//!   (integers) as [`Units`] does, or a software libm. The arena's world
//!   uses `f32` with `atan2`/`hypot`: deterministic among participants of
//!   one build on one platform, which is what the arena runs.
//! * **Checksum with explicit byte order** ([`StateHasher`]), never
//!   `DefaultHasher`.
//!
//! ## Recordings
//!
//! A game is reproducible from its seed, setup and turns; the `demo` crate's
//! lockstep recordings (`demo::lockstep`) store those, the sync checksums,
//! and periodic full-state keyframes ([`Simulation::save`]) for seeking.
//!
//! ## Example
//!
//! ```
//! use netq3_lockstep::session::{run, SessionConfig};
//! use netq3_lockstep::{HostConfig, Units, UnitsSetup};
//!
//! let config = SessionConfig {
//!     participants: 3,
//!     turns: 20,
//!     host: HostConfig {
//!         setup: UnitsSetup { units: 64, ..UnitsSetup::default() }.to_bytes(),
//!         ..HostConfig::default()
//!     },
//!     ..SessionConfig::default()
//! };
//! let report = run::<Units>(&config, |_, _| Vec::new(), |_, _, _| {})?;
//! let sums: Vec<_> = report.participants.iter().map(|p| p.final_checksum).collect();
//! assert!(sums.iter().all(|s| s.is_some() && *s == sums[0]));
//! # Ok::<(), std::io::Error>(())
//! ```
#![forbid(unsafe_code)]

pub mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod host;
pub mod net;
pub mod peer;
pub mod session;
pub mod sim;
pub mod speed;
pub mod wire;

pub use error::LockstepError;
pub use host::{DropReason, Host, HostConfig, HostEvent};
pub use net::{HostNode, PeerNode, Traffic};
pub use peer::{Executed, Peer, PeerConfig, PeerStats, SyncState};
pub use sim::{SimError, Simulation, StateHasher, UnitOrder, Units, UnitsSetup};
pub use speed::{Plan, SpeedControl, SpeedLimits};
pub use wire::{CommandSet, ParticipantId, Settings, ToHost, ToPeer, Turn, WireError};
