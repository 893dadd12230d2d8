//! The delta-size report: bytes per snapshot message of Quake 3's own
//! encoding, the native codec and a naive postcard baseline, on real Quake 3
//! demos and generated workloads.
//!
//! ```sh
//! cargo run --release -p benches --bin delta-size -- [--json] [FILES…]
//! ```
//!
//! Without files it measures every `../shared/q3demos/*.dm_68`. It ends with
//! the model comparison (snapshot deltas vs lockstep for 16 to 65,536
//! moving units, `benches::model_compare`) and its SVG plot. Definitions
//! of every figure are in `benches/README.md` and the `benches::report` docs.

use std::path::PathBuf;
use std::process::ExitCode;

use benches::model_compare::{
    compare, render_text as render_models, write_svg, Effort, UNIT_COUNTS,
};
use benches::report::{measure, render_text, Report};
use benches::workload::arena::{Arena, ARENA_SECONDS};
use benches::workload::q3demo::Q3Demo;
use benches::workload::stress::Stress;
use benches::{default_demo_dir, demo_files, Error};
use clap::Parser;

/// Command line.
#[derive(Debug, Parser)]
#[command(
    about = "Bytes per snapshot: q3 vs native vs naive, on real Quake 3 demos and generated workloads"
)]
struct Args {
    /// Print one JSON object instead of tables.
    #[arg(long)]
    json: bool,
    /// Skip the leave-one-out encoding (retraining the models per demo).
    #[arg(long)]
    no_loo: bool,
    /// Measure only the given (or default) demos, not the generated workloads.
    #[arg(long)]
    demos_only: bool,
    /// Seconds of each arena match.
    #[arg(long, default_value_t = ARENA_SECONDS)]
    arena_seconds: f64,
    /// Snapshots of the synthetic stress workload.
    #[arg(long, default_value_t = 600)]
    stress_frames: usize,
    /// Skip the model comparison (snapshot deltas vs lockstep).
    #[arg(long)]
    no_models: bool,
    /// Run only the model comparison.
    #[arg(long)]
    models_only: bool,
    /// Where the model comparison's SVG plot goes.
    #[arg(long, default_value = "model-comparison.svg")]
    models_svg: PathBuf,
    /// Where the training demos for leave-one-out are.
    #[arg(long)]
    training_dir: Option<PathBuf>,
    /// Quake 3 demos (default: every ../shared/q3demos/*.dm_68).
    files: Vec<PathBuf>,
}

fn run(args: &Args) -> Result<Report, Error> {
    let dir = default_demo_dir();
    let files = if args.files.is_empty() {
        demo_files(&dir)?
    } else {
        args.files.clone()
    };
    let training_dir = args.training_dir.clone().unwrap_or(dir);
    let mut report = Report::default();
    for path in &files {
        let mut demo = Q3Demo::open(path)?;
        if !args.no_loo {
            demo = demo.with_leave_one_out(&training_dir);
        }
        if !args.json {
            eprintln!("measuring {}", path.display());
        }
        report.workloads.push(measure(&mut demo)?);
    }
    if !args.demos_only {
        for clients in [8, 64] {
            let mut arena = Arena::new(clients).with_seconds(args.arena_seconds);
            report.workloads.push(measure(&mut arena)?);
        }
        report
            .workloads
            .push(measure(&mut Stress::new(args.stress_frames))?);
    }
    Ok(report)
}

/// The model comparison: its table (or JSON line with `--json`) and plot.
fn models(args: &Args) -> ExitCode {
    match compare(&UNIT_COUNTS, Effort::REPORT) {
        Ok(comparison) => {
            if args.json {
                match serde_json::to_string(&comparison) {
                    Ok(json) => println!("{json}"),
                    Err(error) => {
                        eprintln!("delta-size: {error}");
                        return ExitCode::FAILURE;
                    }
                }
            } else {
                print!("\n{}", render_models(&comparison));
            }
            if let Err(error) = write_svg(&comparison, &args.models_svg) {
                eprintln!("delta-size: {error}");
                return ExitCode::FAILURE;
            }
            if !args.json {
                println!("plot: {}", args.models_svg.display());
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("delta-size: model comparison: {error}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.models_only {
        return models(&args);
    }
    match run(&args) {
        Ok(report) => {
            if args.json {
                match serde_json::to_string_pretty(&report) {
                    Ok(json) => println!("{json}"),
                    Err(error) => {
                        eprintln!("delta-size: {error}");
                        return ExitCode::FAILURE;
                    }
                }
            } else {
                print!("{}", render_text(&report));
            }
            if !args.no_models {
                return models(&args);
            }
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("delta-size: {error}");
            ExitCode::FAILURE
        }
    }
}
