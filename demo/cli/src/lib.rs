//! # demo-cli
//!
//! The `demo` command-line tool ([`cli`]) and what it adds to the `demo`
//! library: Quake 3 `.dm_68` files read through the `q3` crate ([`dm68`]),
//! telling formats apart by content ([`detect`]), lockstep recordings
//! replayed with the simulations it knows ([`lockstep`]), conversion of Quake 3
//! demos to native ones ([`convert`]) and SVG plots ([`plot`]); many files
//! at once ([`multi`], [`inspect`]), a match's events ([`events`], read by
//! one pass over a demo of either format: [`walk`]), a self-contained web
//! page that plays a demo back ([`view`]), and output files written whole
//! or not at all ([`output`]). Its heavy
//! dependencies (clap, indicatif, plotters, the Quake 3 code) stay here, so
//! a game that only records demos compiles none of them.
#![forbid(unsafe_code)]

pub mod cli;
pub mod convert;
pub mod detect;
pub mod dm68;
pub mod error;
pub mod events;
pub mod inspect;
pub mod lockstep;
pub mod multi;
pub mod output;
pub mod plot;
pub mod view;
pub mod walk;

pub use detect::Format;
pub use error::ToolError;
