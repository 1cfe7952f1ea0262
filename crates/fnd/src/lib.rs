//! The `fnd` command as a library: its options, filters, formats and
//! writers, one module each, and [`run`], the whole command. The binary is
//! `fn main() { fnd::run() }`; the library exists so that fuzz targets and
//! benchmarks reach the parsers (sizes, times, owners, templates, escapes)
//! the way the command uses them. It is not a stable API: to walk trees
//! from Rust, use `fnd-walk`.

pub mod cli;
pub mod color;
pub mod config;
pub mod early;
pub mod error;
pub mod escape;
pub mod exec;
pub mod filter;
pub mod format;
pub mod found;
pub mod generate;
pub mod hyperlink;
pub mod listing;
pub mod paths;
pub mod pattern;
pub mod results;
pub mod select;
pub mod walk;

use std::process::ExitCode;

use clap::Parser;

use cli::Cli;
use config::Config;
use error::{print_error, Outcome};

/// Parse the command line, search, and say how it went as fd's exit code.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    if let Some(code) = generate::requested(&cli) {
        return code;
    }
    let has_command = results::Sink::cli_has_command(&cli);
    let cfg = match Config::new(&cli, has_command) {
        Ok(cfg) => cfg,
        Err(msg) => {
            print_error(msg);
            return Outcome::Error.exit_code();
        }
    };
    let sink = results::Sink::from_cli(&cli, &cfg);
    let outcome = walk::run(cfg, &sink);
    if !sink.finish() {
        // A command failed or could not run: fd exits 1.
        return Outcome::Error.exit_code();
    }
    outcome.exit_code()
}
