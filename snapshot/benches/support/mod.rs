//! Shared benchmark support.

pub mod q3world;
