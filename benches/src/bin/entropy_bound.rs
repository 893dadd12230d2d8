//! The entropy bound of the native codec on real Quake 3 demos: today's
//! bytes split into coder loss, model loss and raw-bit cost
//! (`benches::bound`; the table in `benches/README.md`).
//!
//! ```sh
//! cargo run --release -p benches --bin entropy-bound -- [--json] [FILES…]
//! ```
//!
//! Without files it measures every `../shared/q3demos/*.dm_68`; demos with
//! no snapshot to measure (a gamestate that fails to parse) are listed
//! and skipped.

use std::path::PathBuf;
use std::process::ExitCode;

use benches::bound::{demo_bound, render_markdown, BoundReport};
use benches::{default_demo_dir, demo_files, Error};
use clap::Parser;

/// Command line.
#[derive(Debug, Parser)]
#[command(about = "How far the native codec is from the entropy of its own symbols")]
struct Args {
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Where the training demos for leave-one-out are (default: the
    /// demos' directory).
    #[arg(long)]
    training_dir: Option<PathBuf>,
    /// Quake 3 demos (default: every ../shared/q3demos/*.dm_68).
    files: Vec<PathBuf>,
}

fn run(args: &Args) -> Result<BoundReport, Error> {
    let dir = default_demo_dir();
    let files = if args.files.is_empty() {
        demo_files(&dir)?
    } else {
        args.files.clone()
    };
    let training_dir = args.training_dir.clone().unwrap_or(dir);
    let mut report = BoundReport::default();
    for path in &files {
        eprintln!("measuring {}", path.display());
        let bound = demo_bound(path, &training_dir)?;
        if bound.messages == 0 {
            eprintln!("  no snapshot to measure ({})", bound.status);
            continue;
        }
        report.demos.push(bound);
    }
    if report.demos.is_empty() {
        return Err(Error::Model("no demo had a snapshot to measure".into()));
    }
    Ok(report)
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(report) => {
            if args.json {
                match serde_json::to_string_pretty(&report) {
                    Ok(json) => println!("{json}"),
                    Err(error) => {
                        eprintln!("entropy-bound: {error}");
                        return ExitCode::FAILURE;
                    }
                }
            } else {
                print!("{}", render_markdown(&report));
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("entropy-bound: {error}");
            ExitCode::FAILURE
        }
    }
}
