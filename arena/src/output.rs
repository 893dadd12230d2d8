//! Output files that appear whole or not at all.
//!
//! A recording or a summary is written through the demo crate's
//! [`demo::output`]: to a temporary file beside the destination, renamed
//! over it only once the run that produced it succeeded, so a failed or
//! interrupted run leaves no half-written file behind.

use std::path::Path;

pub use demo::output::PendingFile;

/// Writes `text` to `destination` whole or not at all.
pub fn write_whole(destination: &Path, text: &str) -> std::io::Result<()> {
    demo::output::write_whole(destination, text.as_bytes())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conclude_writes_the_summary_whole_and_fails_when_it_cannot() {
        let dir = std::env::temp_dir().join(format!("arena-output-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("summary.json");
        assert!(conclude("test", "", None, Some((&path, "{}".to_string()))));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}\n");
        let missing = dir.join("no-such-dir").join("summary.json");
        assert!(!conclude(
            "test",
            "",
            None,
            Some((&missing, "{}".to_string()))
        ));
        assert!(!missing.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
