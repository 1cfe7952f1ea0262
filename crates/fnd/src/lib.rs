//! The `fnd` command as a library: its options, filters, formats and
//! writers, one module each, and [`run`], the whole command. The binary is
//! `fn main() { fnd::run() }`; the library exists so that fuzz targets and
//! benchmarks reach the parsers (sizes, times, owners, templates, escapes)
//! the way the command uses them. It is not a stable API: to walk trees
//! from Rust, use `fnd-walk`.
//!
//! It owns fd's command line and what fd does with a result: which entries
//! match, how a result looks, where it is written or which command it
//! runs, over the walk (`fnd-walk`) or over an index (`fnd-index`).
//!
//! The modules are layers, each using only those below it; the
//! workspace's ARCHITECTURE.md lists them, bottom first, and
//! `tests/layers.rs` checks every import against that list.
//!
//! [`run`] puts them together: options → config → search → sink.

pub mod cli;
pub mod color;
pub mod config;
pub mod early;
pub mod error;
pub mod escape;
pub mod exec;
pub mod filter;
pub mod format;
#[cfg(feature = "mpi")]
pub mod forward;
pub mod found;
pub mod generate;
pub mod hyperlink;
pub mod indexed;
pub mod json;
pub mod listing;
pub mod named;
pub mod paths;
pub mod pattern;
#[cfg(feature = "mpi")]
pub mod ranks;
pub mod results;
pub mod search;
pub mod select;

use std::process::ExitCode;

use clap::Parser;
use fnd_output::Writer;

use cli::Cli;
use config::Config;
use error::{print_error, Outcome};
use results::Sink;

/// Parse the command line, search, and say how it went as fd's exit code.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    if let Some(code) = generate::requested(&cli) {
        return code;
    }
    if cli.build_index {
        return build_indexes(&cli).exit_code();
    }
    let cfg = match Config::new(&cli) {
        Ok(cfg) => cfg,
        Err(msg) => {
            print_error(msg);
            return Outcome::Error.exit_code();
        }
    };
    let sink = Sink::new(cfg.output, Writer::stdout());
    let outcome = match cli.indexed {
        None => search::run(cfg.search, || sink.writer()),
        Some(freshness) => {
            let freshness = match freshness {
                cli::IndexedArg::Checked => indexed::Freshness::Checked,
                cli::IndexedArg::StaleOk => indexed::Freshness::StaleOk,
            };
            match indexed::run(cfg.search, freshness, cli.index_file.as_deref(), || sink.writer()) {
                Ok(outcome) => outcome,
                Err(search) => search::run(*search, || sink.writer()),
            }
        }
    };
    if !sink.finish() {
        // Output failed or ended early, or a command failed or could not
        // run: fd exits 1.
        return Outcome::Error.exit_code();
    }
    outcome.exit_code()
}

/// `--build-index [PATH...]`: the pattern's place holds the first path.
fn build_indexes(cli: &Cli) -> Outcome {
    let mut roots: Vec<std::path::PathBuf> = Vec::new();
    if !cli.pattern.is_empty() {
        roots.push(cli.pattern.clone().into());
    }
    roots.extend(cli.path.iter().cloned());
    if roots.is_empty() {
        roots.push(".".into());
    }
    let threads = cli.threads.map_or_else(fnd_walk::cores, |n| n.get());
    indexed::build_indexes(&roots, cli.index_file.as_deref(), threads)
}
