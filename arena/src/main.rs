//! `cargo run --release`: the default arena match. See `arena --help`.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Parser;

use arena::config::ClockKind;
use arena::{Args, MatchConfig};

fn main() -> ExitCode {
    let args = Args::parse();
    let config = MatchConfig::from_args(&args);
    if let Err(e) = config.validate() {
        eprintln!("arena: {e}");
        return ExitCode::from(2);
    }
    if config.model == arena::config::ModelKind::Lockstep {
        return arena::lockstep::run::main(&config);
    }
    // A panic anywhere (any thread) fails the run, after the default report.
    let panicked = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&panicked);
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        flag.store(true, Ordering::SeqCst);
        default_hook(info);
    }));

    let live = config.clock == ClockKind::Real && std::io::stdout().is_terminal();
    let summary_path = config.summary_json.clone();
    let record = config.record.clone();
    let result = std::thread::Builder::new()
        .name("arena-match".into())
        .spawn(move || arena::run(config, live).map(|(_, summary)| summary))
        .map(|handle| handle.join());
    let summary = match result {
        Ok(Ok(Ok(summary))) => summary,
        Ok(Ok(Err(e))) => {
            eprintln!("arena: {e}");
            return ExitCode::FAILURE;
        }
        Ok(Err(_)) => {
            eprintln!("arena: the match thread panicked");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("arena: cannot start the match thread: {e}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", summary.table());
    if let Some(path) = record {
        println!(
            "demo: {} (replay: cargo run --release -p demo-cli -- play {} --verify)",
            path.display(),
            path.display()
        );
    }
    if let Some(path) = summary_path {
        if let Err(e) = std::fs::write(&path, summary.to_json() + "\n") {
            eprintln!("arena: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if panicked.load(Ordering::SeqCst) {
        eprintln!("arena: a thread panicked");
        return ExitCode::FAILURE;
    }
    if !summary.ok() {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
