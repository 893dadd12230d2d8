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
    compare, render_text as render_models, write_svg, Effort, ModelComparison, UNIT_COUNTS,
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
    /// Print one JSON document instead of tables: the report's workloads
    /// and, unless skipped, the model comparison under `models`.
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
    /// Run the model comparison with a few frames and turns per unit count
    /// (a check that it runs, not a measurement).
    #[arg(long)]
    models_quick: bool,
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

/// The model comparison, with its plot written.
fn models(args: &Args) -> Result<ModelComparison, String> {
    let effort = if args.models_quick {
        Effort::QUICK
    } else {
        Effort::REPORT
    };
    let comparison =
        compare(&UNIT_COUNTS, effort).map_err(|error| format!("model comparison: {error}"))?;
    write_svg(&comparison, &args.models_svg).map_err(|error| error.to_string())?;
    Ok(comparison)
}

/// The report (workloads unless `--models-only`, the model comparison
/// unless `--no-models`), printed as tables or as one JSON document.
fn report_all(args: &Args) -> Result<(), String> {
    let mut report = if args.models_only {
        Report::default()
    } else {
        run(args).map_err(|error| error.to_string())?
    };
    if !args.json && !args.models_only {
        print!("{}", render_text(&report));
    }
    if args.models_only || !args.no_models {
        let comparison = models(args)?;
        if !args.json {
            print!("\n{}", render_models(&comparison));
            println!("plot: {}", args.models_svg.display());
        }
        report.models = Some(comparison);
    }
    if args.json {
        let json = serde_json::to_string_pretty(&report).map_err(|error| error.to_string())?;
        println!("{json}");
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = Args::parse();
    match report_all(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("delta-size: {error}");
            ExitCode::FAILURE
        }
    }
}
