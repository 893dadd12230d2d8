//! # netchan
//!
//! A sans-IO network channel for game traffic over UDP.
#![forbid(unsafe_code)]

pub mod error;
pub mod fragment;
pub mod notify;
pub mod packet;
pub mod pool;
pub mod rate;
pub mod reliable;
pub mod sequence;
pub mod state;

pub use packet::MAX_DATAGRAM;
