//! # demo
//!
//! Recording, replay and inspection of snapshot streams, native and Quake 3.
#![forbid(unsafe_code)]

pub mod q3;
