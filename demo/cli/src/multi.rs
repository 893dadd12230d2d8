//! Many files at once: `demo info A.dm_68 B.dm_68 DIR/` and the like.
//!
//! Folders are searched (recursively, in name order) for demo files;
//! files named on the command line are taken as they are. The files are
//! read by a pool of worker threads (`--jobs`, every core by default), and
//! each file's output is printed whole, in command-line order, as soon as
//! every file before it is done, so the output never depends on timing.
//! The exit status is the worst of the files' ([`worst`]).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use demo::DemoError;

use crate::cli::{EXIT_ERROR, EXIT_OK, EXIT_TRUNCATED};
use crate::error::ToolError;

/// What one file's command produced.
#[derive(Debug, Clone, Default)]
pub struct FileOutcome {
    /// Exit status for this file alone.
    pub code: i32,
    /// Its standard output (a text block, or JSON lines).
    pub stdout: Vec<u8>,
    /// Its message for standard error, if any (without the `demo: ` prefix).
    pub stderr: Option<String>,
}

impl FileOutcome {
    /// A file that could not be read at all.
    pub fn failed(error: &ToolError) -> Self {
        FileOutcome {
            code: EXIT_ERROR,
            stdout: Vec::new(),
            stderr: Some(error.to_string()),
        }
    }
}

/// The worse of two exit statuses: an error ([`EXIT_ERROR`]) over a
/// truncation ([`EXIT_TRUNCATED`]) over success.
pub fn worst(a: i32, b: i32) -> i32 {
    let rank = |code: i32| match code {
        EXIT_OK => 0,
        EXIT_TRUNCATED => 1,
        _ => 2,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// The number of workers to use: `jobs`, or every core, never more than
/// there are files.
pub fn workers(jobs: Option<usize>, files: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    jobs.unwrap_or(cores).clamp(1, files.max(1))
}

/// The files named by `paths`: files as given, folders searched
/// recursively for demos ([`is_demo_file`]), in name order.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ToolError> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found = Vec::new();
            walk(path, &mut found)?;
            found.sort();
            if found.is_empty() {
                return Err(ToolError::Demo(DemoError::Span(format!(
                    "{}: no demo files in this folder",
                    path.display()
                ))));
            }
            files.append(&mut found);
        } else {
            files.push(path.clone());
        }
    }
    Ok(files)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), ToolError> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        DemoError::Io(std::io::Error::new(
            e.kind(),
            format!("{}: {e}", dir.display()),
        ))
    })?;
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if hidden {
            continue;
        }
        let kind = entry.file_type()?;
        if kind.is_dir() {
            walk(&path, found)?;
        } else if kind.is_file() && is_demo_file(&path) {
            found.push(path);
        }
    }
    Ok(())
}

/// Whether a file found in a folder is a demo: a Quake 3 extension
/// (`.dm_68` and the other `.dm_NN`), or the magic of a native demo or a
/// lockstep recording at its start. Files named on the command line are
/// never filtered.
pub fn is_demo_file(path: &Path) -> bool {
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    if extension.is_some_and(|e| e.starts_with("dm_")) {
        return true;
    }
    let mut head = [0u8; 16];
    let read = std::fs::File::open(path).and_then(|mut f| f.read(&mut head));
    let head = &head[..read.unwrap_or(0)];
    demo::format::has_magic(head) || demo::lockstep::has_lockstep_magic(head)
}

/// Runs `work` on every file with `jobs` workers and writes the outcomes
/// to `out` (and the messages to standard error) in file order; returns
/// the worst status.
pub fn run_files(
    files: &[PathBuf],
    jobs: Option<usize>,
    work: &(dyn Fn(&Path) -> FileOutcome + Sync),
    out: &mut dyn Write,
) -> Result<i32, ToolError> {
    let workers = workers(jobs, files.len());
    let next = AtomicUsize::new(0);
    let (sender, receiver) = mpsc::channel::<(usize, FileOutcome)>();
    let mut code = EXIT_OK;
    let mut written: std::io::Result<()> = Ok(());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let sender = sender.clone();
            let next = &next;
            scope.spawn(move || loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(file) = files.get(index) else { break };
                if sender.send((index, work(file))).is_err() {
                    break;
                }
            });
        }
        drop(sender);
        let mut waiting = BTreeMap::new();
        let mut printed = 0;
        for (index, outcome) in receiver {
            waiting.insert(index, outcome);
            while let Some(outcome) = waiting.remove(&printed) {
                code = worst(code, outcome.code);
                if written.is_ok() {
                    written = out.write_all(&outcome.stdout).and_then(|_| out.flush());
                }
                if let Some(message) = &outcome.stderr {
                    eprintln!("demo: {message}");
                }
                printed += 1;
            }
        }
    });
    written?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_status_wins() {
        assert_eq!(worst(EXIT_OK, EXIT_TRUNCATED), EXIT_TRUNCATED);
        assert_eq!(worst(EXIT_TRUNCATED, EXIT_ERROR), EXIT_ERROR);
        assert_eq!(worst(EXIT_ERROR, EXIT_OK), EXIT_ERROR);
        assert_eq!(worst(EXIT_OK, EXIT_OK), EXIT_OK);
    }

    #[test]
    fn outcomes_come_out_in_file_order_whatever_finishes_first() {
        let files: Vec<PathBuf> = (0..20).map(|i| PathBuf::from(format!("{i}"))).collect();
        let work = |path: &Path| {
            let n: u64 = path.to_str().unwrap().parse().unwrap();
            // Later files finish first.
            std::thread::sleep(std::time::Duration::from_millis(20 - n));
            FileOutcome {
                code: if n == 7 { EXIT_ERROR } else { EXIT_OK },
                stdout: format!("{n}\n").into_bytes(),
                stderr: None,
            }
        };
        let mut out = Vec::new();
        let code = run_files(&files, Some(4), &work, &mut out).unwrap();
        let expected: String = (0..20).map(|i| format!("{i}\n")).collect();
        assert_eq!(String::from_utf8(out).unwrap(), expected);
        assert_eq!(code, EXIT_ERROR);
    }
}
