//! The `demo` command-line tool: see [`demo_cli::cli`].

use clap::Parser;

fn main() {
    let cli = demo_cli::cli::Cli::parse();
    std::process::exit(demo_cli::cli::run(cli));
}
