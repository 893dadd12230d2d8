//! Output files that appear whole or not at all.
//!
//! A program that writes a file — a recording, a converted or cut demo, a
//! summary, a plot — writes to a temporary file beside the destination and
//! renames it over the destination only when it succeeded: a failed or
//! interrupted run leaves no half-written output (and an older file of the
//! same name untouched). The rename is atomic on one file system, which the
//! temporary file shares with the destination by living in its directory.
//! Errors name the destination.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file being written to a temporary path; [`commit`](Self::commit)
/// moves it to its destination, dropping it uncommitted deletes it.
#[derive(Debug)]
pub struct PendingFile {
    destination: PathBuf,
    temporary: PathBuf,
    committed: bool,
}

fn io_error(path: &Path, error: std::io::Error) -> std::io::Error {
    std::io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

impl PendingFile {
    /// Reserves a temporary file beside `destination` (nothing is created
    /// yet: see [`create`](Self::create) and [`path`](Self::path)).
    pub fn new(destination: &Path) -> Self {
        let name = destination
            .file_name()
            .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
        let temporary = destination.with_file_name(format!(
            ".{name}.partial-{}-{}",
            std::process::id(),
            unique()
        ));
        PendingFile {
            destination: destination.to_path_buf(),
            temporary,
            committed: false,
        }
    }

    /// The temporary path, for writers that open files themselves.
    pub fn path(&self) -> &Path {
        &self.temporary
    }

    /// The final path.
    pub fn destination(&self) -> &Path {
        &self.destination
    }

    /// Creates the temporary file for writing.
    pub fn create(&self) -> std::io::Result<BufWriter<File>> {
        let file = File::create(&self.temporary).map_err(|e| io_error(&self.destination, e))?;
        Ok(BufWriter::new(file))
    }

    /// Flushes `writer` (from [`create`](Self::create)) and commits.
    pub fn finish(self, writer: BufWriter<File>) -> std::io::Result<()> {
        let file = writer
            .into_inner()
            .map_err(|e| io_error(&self.destination, e.into_error()))?;
        file.sync_all()
            .map_err(|e| io_error(&self.destination, e))?;
        drop(file);
        self.commit()
    }

    /// Moves the finished temporary file to the destination.
    pub fn commit(mut self) -> std::io::Result<()> {
        std::fs::rename(&self.temporary, &self.destination)
            .map_err(|e| io_error(&self.destination, e))?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        if !self.committed {
            // Nothing to do if it was never created.
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}

/// A number no other pending file of this process has.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Writes `bytes` to `destination` whole or not at all.
pub fn write_whole(destination: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let pending = PendingFile::new(destination);
    let mut writer = pending.create()?;
    writer
        .write_all(bytes)
        .map_err(|e| io_error(destination, e))?;
    pending.finish(writer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncommitted_files_vanish_and_committed_ones_replace_the_destination() {
        let dir = std::env::temp_dir().join(format!("pending-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let destination = dir.join("out.bin");
        std::fs::write(&destination, b"old").unwrap();
        {
            let pending = PendingFile::new(&destination);
            let mut writer = pending.create().unwrap();
            writer.write_all(b"half").unwrap();
            writer.flush().unwrap();
            assert!(pending.path().exists());
            // Dropped: a failed command.
        }
        assert_eq!(std::fs::read(&destination).unwrap(), b"old");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no temporary file left"
        );
        write_whole(&destination, b"new").unwrap();
        assert_eq!(std::fs::read(&destination).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
