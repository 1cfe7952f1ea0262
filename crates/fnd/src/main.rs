mod cli;
mod color;
mod config;
mod early;
mod error;
mod escape;
mod exec;
mod filter;
mod format;
mod generate;
mod hyperlink;
mod listing;
mod paths;
mod pattern;
mod results;
mod walk;

use std::process::ExitCode;

use clap::Parser;

use cli::Cli;
use config::Config;
use error::{print_error, Outcome};

fn main() -> ExitCode {
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
