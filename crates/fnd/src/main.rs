mod cli;
mod config;
mod error;
mod filter;
mod output;
mod paths;
mod pattern;
mod walk;

use std::process::ExitCode;

use clap::Parser;

use cli::Cli;
use config::Config;
use error::{print_error, Outcome};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let has_command = false;
    let cfg = match Config::new(&cli, has_command) {
        Ok(cfg) => cfg,
        Err(msg) => {
            print_error(msg);
            return Outcome::Error.exit_code();
        }
    };
    walk::run(cfg).exit_code()
}
