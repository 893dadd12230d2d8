//! # netchan
//!
//! A sans-IO network channel for game traffic over UDP.
#![forbid(unsafe_code)]
