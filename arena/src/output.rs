//! Output files that appear whole or not at all.
//!
//! A recording or a summary is written to a temporary file in the
//! destination's directory and renamed over the destination only once the
//! run that produced it succeeded: a failed or interrupted run leaves no
//! half-written file behind (and an older file of that name untouched).
//! The rename is atomic because the temporary file shares the
//! destination's file system.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use tempfile::TempPath;

use crate::error::Error;

/// A file being written under a temporary name: [`commit`](Self::commit)
/// gives it its destination's name; dropping it uncommitted deletes it.
#[derive(Debug)]
pub struct PendingFile {
    temporary: TempPath,
    destination: PathBuf,
}

impl PendingFile {
    /// Creates the temporary file beside `destination` and returns it with
    /// the open file to write through.
    pub fn create(destination: &Path) -> Result<(PendingFile, File), Error> {
        let directory = match destination.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let (file, temporary) = tempfile::Builder::new()
            .prefix(".arena-")
            .suffix(".partial")
            .tempfile_in(directory)
            .map_err(|e| cannot_write(destination, e))?
            .into_parts();
        let pending = PendingFile {
            temporary,
            destination: destination.to_path_buf(),
        };
        Ok((pending, file))
    }

    /// The name the file gets once committed.
    pub fn destination(&self) -> &Path {
        &self.destination
    }

    /// Renames the finished file to its destination. Whoever wrote it must
    /// have flushed it first (a recorder's `finish`).
    pub fn commit(self) -> Result<(), Error> {
        let destination = self.destination;
        self.temporary
            .persist(&destination)
            .map_err(|e| cannot_write(&destination, e.error))
    }
}

/// Writes `text` to `destination` whole or not at all.
pub fn write_whole(destination: &Path, text: &str) -> Result<(), Error> {
    let (pending, mut file) = PendingFile::create(destination)?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| cannot_write(destination, e))?;
    drop(file);
    pending.commit()
}

/// What every arena command does at its end: prints the run's `table`,
/// says where its recording is (`recording`: what it is, its path), and
/// writes its JSON summary whole if asked (`summary_json`: path and
/// document). Returns false, having said why on stderr, when the summary
/// could not be written: the run then did not do its job.
pub fn conclude(
    who: &str,
    table: &str,
    recording: Option<(&str, &Path)>,
    summary_json: Option<(&Path, String)>,
) -> bool {
    print!("{table}");
    if let Some((what, path)) = recording {
        println!(
            "{what}: {} (replay: cargo run --release -p demo-cli -- play {} --verify)",
            path.display(),
            path.display()
        );
    }
    if let Some((path, json)) = summary_json {
        if let Err(e) = write_whole(path, &(json + "\n")) {
            eprintln!("{who}: {e}");
            return false;
        }
    }
    true
}

fn cannot_write(destination: &Path, error: std::io::Error) -> Error {
    Error::Io(std::io::Error::new(
        error.kind(),
        format!("cannot write {}: {error}", destination.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("arena-output-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_committed_file_appears_whole_under_its_name_and_nothing_else_remains() {
        let dir = scratch("commit");
        let path = dir.join("summary.json");
        std::fs::write(&path, "old").unwrap();
        let (pending, mut file) = PendingFile::create(&path).unwrap();
        file.write_all(b"new contents").unwrap();
        // Until the commit the old file is what a reader sees.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(entries(&dir).len(), 2);
        drop(file);
        pending.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new contents");
        assert_eq!(entries(&dir), vec!["summary.json".to_string()]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_dropped_uncommitted_leaves_no_trace_and_the_old_one_untouched() {
        let dir = scratch("drop");
        let path = dir.join("arena.demo");
        std::fs::write(&path, "old").unwrap();
        let (pending, mut file) = PendingFile::create(&path).unwrap();
        file.write_all(b"half a recording").unwrap();
        drop(file);
        drop(pending);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(entries(&dir), vec!["arena.demo".to_string()]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn write_whole_replaces_the_file_and_reports_an_unwritable_directory() {
        let dir = scratch("whole");
        let path = dir.join("s.json");
        write_whole(&path, "{}\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
        let missing = dir.join("no-such-dir").join("s.json");
        let error = write_whole(&missing, "{}").unwrap_err().to_string();
        assert!(error.contains("cannot write"), "{error}");
        assert!(error.contains("no-such-dir"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
