//! # snapshot
//!
//! Snapshots of a game world sent as deltas against what each client acknowledged.
#![forbid(unsafe_code)]
