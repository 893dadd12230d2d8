//! Helpers the tests that run `arena` as separate processes share: a
//! per-test temporary path, a bounded wait, and reading a summary JSON.

use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The `arena` binary Cargo built for these tests.
pub const ARENA: &str = env!("CARGO_BIN_EXE_arena");

/// A path in the temporary directory, unique to this test process and to
/// the suite (`prefix`), so parallel suites never share a file.
pub fn tmp(prefix: &str, name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("{prefix}-{}-{name}", std::process::id()))
}

/// Waits for `child` at most `limit`, killing it past that: a test never
/// hangs on a process that does not end.
pub fn wait(child: &mut Child, limit: Duration) -> ExitStatus {
    let end = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if Instant::now() >= end {
            let _ = child.kill();
            panic!("process did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The JSON document a process wrote to `path`.
pub fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}
