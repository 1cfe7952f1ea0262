//! The `fnd` command as a library: its options, filters, formats and
//! writers, one module each, and [`run`], the whole command. The binary is
//! `fn main() { fnd::run() }`; the library exists so that fuzz targets and
//! benchmarks reach the parsers (sizes, times, owners, templates, escapes)
//! the way the command uses them. It is not a stable API: to walk trees
//! from Rust, use `fnd-walk`.
//!
//! The modules are in layers, each using only those below it (checked by
//! `tests/layers.rs`), in the order results travel:
//! 1. `escape`, `found`, `paths`: terminal escaping; what a result is to
//!    everything after the search ([`found::Found`]) and where results go
//!    ([`found::Emit`]); how paths are spelt.
//! 2. `error`: fd's error messages and exit codes.
//! 3. `pattern`, `filter`: what a name must look like; what an entry must
//!    be (type, size, time, owner).
//! 4. `select`, `early`: the two together, judged on one entry
//!    ([`select::Selection`]); fd's first 100 ms of sorted results.
//! 5. `search`: the walk that judges entries and hands results on.
//! 6. `named`: which names of an index's name table a pattern matches,
//!    each judged once.
//! 7. `indexed`: the same judging and handing on, over an index of the
//!    tree instead of the tree (`--indexed`); building indexes.
//! 8. `format`, `color`, `hyperlink`: how one result looks.
//! 9. `json`: one result as a `--json` record.
//! 10. `listing`, `exec`: printing results; running commands on them.
//! 11. `forward` (feature `mpi`): a rank's output on its way to rank 0.
//! 12. `results`: the sink, one writer per thread, bytes to one descriptor
//!     (or, under MPI, to rank 0).
//! 13. `cli`: the command line, parsed.
//! 14. `config`, `generate`: parsed options turned into a search and a
//!     sink; completions and the man page.
//! 15. `ranks` (feature `mpi`): the whole command as one rank of an MPI job.
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
