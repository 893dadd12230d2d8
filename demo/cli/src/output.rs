//! Output files that appear whole or not at all: the demo crate's
//! [`demo::output`], which every command that writes a file goes through.

pub use demo::output::{write_whole, PendingFile};
