//! Shared helpers of the Quake 3 demo tests: where the real demos are.

#![allow(dead_code)]

use std::path::PathBuf;

/// The real Quake 3 demos beside the repository (`../shared/q3demos`).
pub const DEMO_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/q3demos");

/// Demos that are deliberately broken (not expected to decode).
pub const BROKEN: &[&str] = &["invalid_command_byte.dm_68", "truncated.dm_68"];

/// Every `.dm_68` file in [`DEMO_DIR`], sorted by name.
pub fn demo_paths() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(DEMO_DIR)
        .unwrap_or_else(|e| panic!("listing {DEMO_DIR}: {e}"))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "dm_68"))
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 8,
        "expected the 8 shared demos in {DEMO_DIR}"
    );
    paths
}

/// The file name of a path.
pub fn name(path: &std::path::Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The demos that must decode completely.
pub fn valid_demo_paths() -> Vec<PathBuf> {
    demo_paths()
        .into_iter()
        .filter(|p| !BROKEN.contains(&name(p).as_str()))
        .collect()
}

/// Reads one demo by file name.
pub fn read_demo(file: &str) -> Vec<u8> {
    let path = format!("{DEMO_DIR}/{file}");
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}
pub mod arena;
