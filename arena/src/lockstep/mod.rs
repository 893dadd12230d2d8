//! `arena --model lockstep`: the same world and bots under deterministic
//! lockstep instead of snapshots. Every bot is a participant that runs its
//! own replica of the world and sends only its commands; a relay host
//! (the `lockstep` crate's) forwards each turn's commands to everyone,
//! picks the turn length, compares sync checksums and drops leavers at an
//! agreed turn.
//!
//! | module | holds |
//! | --- | --- |
//! | [`sim`] | [`ArenaSim`]: the world as a lockstep simulation, its keyframes and dumps |
//! | [`run`] | the match loop over UDP or the in-process link, real or simulated clock |
//! | [`remote`] | across processes: `arena serve --model lockstep` (host, replica, recording) and `arena bots --model lockstep` |
//! | [`summary`] | per-client turns, turn length, input latency, desyncs, checksums; JSON |

pub mod command;
pub mod remote;
pub mod run;
pub mod sim;
pub mod summary;

pub use run::play_lockstep;
pub use sim::ArenaSim;
pub use summary::LockstepSummary;
