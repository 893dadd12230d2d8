//! The `demo` command-line tool: see [`demo::cli`].

use clap::Parser;

fn main() {
    let cli = demo::cli::Cli::parse();
    std::process::exit(demo::cli::run(cli));
}
