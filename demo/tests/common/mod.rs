//! Shared helpers of the demo tests.

pub mod arena;
