//! `cargo run --release`: the default arena match; `arena serve`, `arena
//! bots` and `arena status` split it across processes. See `arena --help`.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Parser;

use arena::bots::Bots;
use arena::cli::{BotsArgs, Cli, Command, ServeArgs, StatusArgs};
use arena::config::{ClockKind, ModelKind};
use arena::output::conclude;
use arena::serve::Dedicated;
use arena::shutdown::Shutdown;
use arena::{Args, MatchConfig};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => local_match(&cli.local),
        Some(Command::Serve(args)) => serve(&args),
        Some(Command::Bots(args)) => bots(&args),
        Some(Command::Status(args)) => status(&args),
    }
}

/// Installs the logger and the signal handlers, or says why not.
fn setup() -> Result<Shutdown, ExitCode> {
    arena::logging::init("info");
    Shutdown::install().map_err(|e| {
        eprintln!("arena: cannot install signal handlers: {e}");
        ExitCode::FAILURE
    })
}

fn serve(args: &ServeArgs) -> ExitCode {
    if let Err(e) = args.validate() {
        eprintln!("arena serve: {e}");
        return ExitCode::from(2);
    }
    let shutdown = match setup() {
        Ok(s) => s,
        Err(code) => return code,
    };
    if args.model == ModelKind::Lockstep {
        return serve_lockstep(args, &shutdown);
    }
    let mut server = match Dedicated::bind(args, std::time::Instant::now()) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("arena serve: {e}");
            return ExitCode::FAILURE;
        }
    };
    // On stdout as well as in the log: with port 0 this is how a script
    // (or the multi-process test) learns the ports.
    println!("arena serve: listening on {}", server.local_addr());
    if let Some(addr) = server.metrics_addr() {
        println!("arena serve: metrics on http://{addr}/metrics");
    }
    let _ = std::io::Write::flush(&mut std::io::stdout());
    if std::io::stdout().is_terminal() {
        server.enable_status();
    }
    let summary = match server.run(&shutdown) {
        Ok(summary) => summary,
        Err(e) => {
            eprintln!("arena serve: {e}");
            return ExitCode::FAILURE;
        }
    };
    let recording = args.record.as_deref().map(|p| ("demo", p));
    let json = args.summary_json.as_deref().map(|p| (p, summary.to_json()));
    exit_code(
        conclude("arena serve", &summary.table(), recording, json),
        true,
    )
}

fn bots(args: &BotsArgs) -> ExitCode {
    if let Err(e) = args.validate() {
        eprintln!("arena bots: {e}");
        return ExitCode::from(2);
    }
    let shutdown = match setup() {
        Ok(s) => s,
        Err(code) => return code,
    };
    if args.model == ModelKind::Lockstep {
        return bots_lockstep(args, &shutdown);
    }
    let result = Bots::new(args, std::time::Instant::now())
        .and_then(|mut bots| bots.run(args.seconds, &shutdown));
    let summary = match result {
        Ok(summary) => summary,
        Err(e) => {
            eprintln!("arena bots: {e}");
            return ExitCode::FAILURE;
        }
    };
    let json = args.summary_json.as_deref().map(|p| (p, summary.to_json()));
    exit_code(
        conclude("arena bots", &summary.table(), None, json),
        summary.ok(),
    )
}

/// Success only if the run's report was written (`concluded`) and every
/// invariant held (`ok`).
fn exit_code(concluded: bool, ok: bool) -> ExitCode {
    if concluded && ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn serve_lockstep(args: &ServeArgs, shutdown: &Shutdown) -> ExitCode {
    let result = arena::lockstep::remote::serve(args, shutdown, |addr| {
        // As the snapshot server does: a script learns the port from here.
        println!("arena serve: listening on {addr}");
        let _ = std::io::Write::flush(&mut std::io::stdout());
    });
    let summary = match result {
        Ok(summary) => summary,
        Err(e) => {
            eprintln!("arena serve: {e}");
            return ExitCode::FAILURE;
        }
    };
    let recording = summary.record.as_deref().map(|p| ("lockstep recording", p));
    let json = args.summary_json.as_deref().map(|p| (p, summary.to_json()));
    let concluded = conclude("arena serve", &summary.table(), recording, json);
    exit_code(concluded, summary.ok())
}

fn bots_lockstep(args: &BotsArgs, shutdown: &Shutdown) -> ExitCode {
    let summary = match arena::lockstep::remote::bots(args, shutdown) {
        Ok(summary) => summary,
        Err(e) => {
            eprintln!("arena bots: {e}");
            return ExitCode::FAILURE;
        }
    };
    let json = args.summary_json.as_deref().map(|p| (p, summary.to_json()));
    exit_code(
        conclude("arena bots", &summary.table(), None, json),
        summary.ok(),
    )
}

fn status(args: &StatusArgs) -> ExitCode {
    let wait = std::time::Duration::from_secs_f64(args.wait.clamp(0.01, 60.0));
    match arena::server_status::query(args.addr, wait, 3) {
        Ok(status) if args.json => {
            println!(
                "{}",
                serde_json::to_string_pretty(&status).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Ok(status) => {
            println!("{}: {}", args.addr, status.line());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("arena status: {e}");
            ExitCode::FAILURE
        }
    }
}

fn local_match(args: &Args) -> ExitCode {
    let config = MatchConfig::from_args(args);
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
    let recording = record.as_deref().map(|p| ("demo", p));
    let json = summary_path.as_deref().map(|p| (p, summary.to_json()));
    if !conclude("arena", &summary.table(), recording, json) {
        return ExitCode::FAILURE;
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
