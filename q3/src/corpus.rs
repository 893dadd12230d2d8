//! The real Quake 3 demos the project measures itself against: where they
//! are, which they are, and which are broken on purpose.
//!
//! They live in `shared/q3demos` beside the workspace checkout (the
//! environment variable `NETQ3_Q3DEMOS` names another directory). Tests
//! and benchmarks find them here, so the location is stated once.

use std::path::{Path, PathBuf};

/// The environment variable that overrides the directory.
pub const DIR_VARIABLE: &str = "NETQ3_Q3DEMOS";

/// Demos that are deliberately broken (not expected to decode completely).
pub const BROKEN: &[&str] = &["invalid_command_byte.dm_68", "truncated.dm_68"];

/// The full OSP duel, the main benchmark workload.
pub const DUEL: &str = "dm_68_osp_duel_2.dm_68";

/// The directory named by `NETQ3_Q3DEMOS`, else `../shared/q3demos` beside
/// the workspace. It may not exist: see [`available`].
pub fn dir() -> PathBuf {
    match std::env::var_os(DIR_VARIABLE) {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/q3demos"),
    }
}

/// Whether the directory exists, so callers that need the demos can say
/// they skip instead of failing on a checkout without them.
pub fn available() -> bool {
    dir().is_dir()
}

/// Every `.dm_68` file in `dir`, sorted by name.
pub fn files_in(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "dm_68") {
            paths.push(path);
        }
    }
    paths.sort();
    Ok(paths)
}

/// Every `.dm_68` file in [`dir`], sorted by name (empty when absent).
pub fn files() -> Vec<PathBuf> {
    files_in(&dir()).unwrap_or_default()
}

/// The file name of a path, for messages.
pub fn name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The demos that must decode completely: [`files`] without [`BROKEN`].
pub fn valid_files() -> Vec<PathBuf> {
    files()
        .into_iter()
        .filter(|p| !BROKEN.contains(&name(p).as_str()))
        .collect()
}

/// The path of one demo by file name.
pub fn path(file: &str) -> PathBuf {
    dir().join(file)
}

/// For a test that needs the demos: `true` when they are here; otherwise it
/// says on stderr that `test` is skipped and where the demos were looked
/// for, and returns `false` (the test then returns without failing).
pub fn available_or_skip(test: &str) -> bool {
    if available() {
        return true;
    }
    eprintln!(
        "skipping {test}: the Quake 3 demos are not in {} (put them there or set {DIR_VARIABLE})",
        dir().display()
    );
    false
}
