//! Command-line options.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

/// Traversal order of `--order`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OrderArg {
    /// Breadth-first: shallow entries first (single-threaded).
    Bfs,
    /// Depth-first (single-threaded, deterministic).
    Dfs,
    /// Parallel over `--threads` workers (default).
    Parallel,
}

#[derive(Parser, Debug)]
#[command(name = "fnd", version, about = "A fast, fd-compatible file finder")]
pub struct Cli {
    /// Include hidden files and directories.
    #[arg(short = 'H', long)]
    pub hidden: bool,

    /// Do not respect ignore files.
    #[arg(short = 'I', long)]
    pub no_ignore: bool,

    /// Unrestricted: alias for `--hidden --no-ignore`.
    #[arg(short = 'u', long = "unrestricted", action = clap::ArgAction::Count)]
    pub unrestricted: u8,

    /// Number of worker threads (default: number of cores).
    #[arg(short = 'j', long, value_name = "num")]
    pub threads: Option<usize>,

    /// Traversal order.
    #[arg(long, value_enum, default_value = "parallel")]
    pub order: OrderArg,

    /// The search pattern (a regular expression).
    pub pattern: Option<String>,

    /// Directories to search (default: the working directory).
    pub paths: Vec<PathBuf>,
}
