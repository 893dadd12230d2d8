//! What the `demo` binary's integration tests share: running it, reading
//! its output, temporary files and the shared Quake 3 demos.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the `demo` binary.
pub fn demo(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_demo"))
        .args(args)
        .output()
        .expect("the demo binary runs")
}

/// Its standard output.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Its standard error.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A file in a directory of this test binary's own.
pub fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("demo-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A path as a `&str` argument.
pub fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The one JSON object of a successful run.
pub fn json(output: &Output) -> serde_json::Value {
    assert_eq!(output.status.code(), Some(0), "{}", stderr(output));
    serde_json::from_str(&stdout(output)).expect("one JSON object")
}

/// Every line of standard output as JSON.
pub fn json_lines(output: &Output) -> Vec<serde_json::Value> {
    stdout(output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// The path of a shared Quake 3 demo.
pub fn q3(name: &str) -> String {
    q3::corpus::path(name).display().to_string()
}
