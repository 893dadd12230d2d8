//! # demo-cli
//!
//! The `demo` command-line tool ([`cli`]) and what it adds to the `demo`
//! library: Quake 3 `.dm_68` files read through the `q3` crate ([`dm68`]),
//! telling formats apart by content ([`detect`]), lockstep recordings
//! replayed with the simulations it knows ([`lockstep`]), conversion of Quake 3
//! demos to native ones ([`convert`]) and SVG plots ([`plot`]). Its heavy
//! dependencies (clap, indicatif, plotters, the Quake 3 code) stay here, so
//! a game that only records demos compiles none of them.
#![forbid(unsafe_code)]

pub mod cli;
pub mod convert;
pub mod detect;
pub mod dm68;
pub mod error;
pub mod lockstep;
pub mod plot;

pub use detect::Format;
pub use error::ToolError;
