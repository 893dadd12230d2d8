//! Shared helpers of the Quake 3 demo tests: the real demos, through
//! [`netq3_q3::corpus`].

#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub use netq3_q3::corpus::name;

/// Whether the demos are here (else the calling test says it skips; see
/// [`netq3_q3::corpus::available_or_skip`]).
pub fn here(test: &str) -> bool {
    netq3_q3::corpus::available_or_skip(test)
}

/// Every `.dm_68` file of the corpus; fails when there are not all eight
/// (call [`here`] first: an absent corpus is a skip, an incomplete one a failure).
pub fn demo_paths() -> Vec<PathBuf> {
    let paths = netq3_q3::corpus::files();
    assert!(
        paths.len() >= 8,
        "expected the 8 shared demos in {}",
        netq3_q3::corpus::dir().display()
    );
    paths
}

/// The demos that must decode completely.
pub fn valid_demo_paths() -> Vec<PathBuf> {
    demo_paths()
        .into_iter()
        .filter(|p| !netq3_q3::corpus::BROKEN.contains(&name(p).as_str()))
        .collect()
}

/// Reads one demo by file name.
pub fn read_demo(file: &str) -> Vec<u8> {
    read(&netq3_q3::corpus::path(file))
}

/// Reads a file, naming it when that fails.
pub fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}
