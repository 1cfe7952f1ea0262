//! Command-line options: fd 10.5's, spelt and defaulted as fd does, plus
//! `--order` and `--sort`. Every flag may appear anywhere and more than once;
//! the last occurrence wins (`args_override_self`), and `--no-…` twins undo
//! their flag.
//!
//! This only parses, into clap's types and plain values; a value that clap
//! checks (a size, an owner, a command) is parsed by the module it belongs
//! to. What the options mean together is `config`'s to work out.
//!
//! The field docs below are `--help`'s text, as fd words it (`<path>`,
//! `[(user|uid)]`), not rustdoc's markup.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use std::num::NonZeroUsize;
use std::path::PathBuf;

use clap::{ArgAction, Parser, ValueEnum};

use crate::color::ColorWhen;
use crate::exec::ExecArgs;
use crate::filter::{OwnerFilter, SizeLimit, TypeArg};
use crate::format::FORMAT_HELP;
use crate::hyperlink::HyperlinkWhen;

/// Long help of `--json`.
const JSON_HELP: &str = "Print one JSON object a line per result (NDJSON), for jq, DuckDB's read_json \
and scripts. Fields: path ({\"text\": ...}; a path that is not UTF-8 has its text lossy and \
\"bytes\": the exact bytes in base64), type (file, directory, symlink, block_device, char_device, \
fifo, socket), target (a symlink's), mode (octal permission bits), perms (as ls -l), size_bytes, \
inode, nlink, uid, gid, user, group, and modified, accessed, changed (RFC 3339, UTC). \
Metadata is left out for an entry that cannot be stat'ed.";

/// Traversal order of `--order`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OrderArg {
    /// Breadth-first: shallow entries first (single-threaded).
    Bfs,
    /// Depth-first (single-threaded, deterministic).
    Dfs,
    /// Parallel over `--threads` workers (default). With `--max-results`,
    /// `-1` or `-q`, shallow directories are read first.
    Parallel,
}

/// Sort key of `--sort`: entries are sorted within each directory and the
/// output still streams in tree order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SortArg {
    Name,
    Size,
    Mtime,
    /// The order of `LC_ALL=C sort` on the unsorted listing.
    Path,
}

/// When `--strip-cwd-prefix` strips `./`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StripCwdWhen {
    /// Strip unless the output feeds a command or uses NUL separators.
    Auto,
    Always,
    Never,
}

#[derive(Parser, Debug)]
#[command(
    name = "fnd",
    version,
    about = "A fast, fd-compatible file finder. By default it respects gitignore rules, skips \
             hidden entries, and is case-insensitive unless the pattern has an uppercase letter.",
    max_term_width = 98,
    args_override_self = true,
    group(clap::ArgGroup::new("execs").args(["exec", "exec_batch", "list_details"]).multiple(true)
        .conflicts_with_all(["max_results", "quiet", "max_one_result"])),
)]
pub struct Cli {
    /// Include hidden files and directories (names starting with '.').
    #[arg(short = 'H', long)]
    pub hidden: bool,
    #[arg(long, overrides_with = "hidden", hide = true)]
    pub no_hidden: bool,

    /// Do not respect .gitignore, .ignore, .fdignore or the global ignore file.
    #[arg(short = 'I', long)]
    pub no_ignore: bool,
    #[arg(long, overrides_with = "no_ignore", hide = true)]
    pub ignore: bool,

    /// Do not respect .gitignore files (nor git's exclude and global excludes).
    #[arg(long, hide_short_help = true)]
    pub no_ignore_vcs: bool,
    #[arg(long, overrides_with = "no_ignore_vcs", hide = true)]
    pub ignore_vcs: bool,

    /// Respect gitignore rules outside git repositories too.
    #[arg(long, overrides_with = "require_git", hide_short_help = true)]
    pub no_require_git: bool,
    #[arg(long, overrides_with = "no_require_git", hide = true)]
    pub require_git: bool,

    /// Do not respect ignore files in the directories above the search paths.
    #[arg(long, hide_short_help = true)]
    pub no_ignore_parent: bool,
    #[arg(long, overrides_with = "no_ignore_parent", hide = true)]
    pub ignore_parent: bool,

    /// Do not respect the global ignore file ($XDG_CONFIG_HOME/fd/ignore).
    #[arg(long, hide = true)]
    pub no_global_ignore_file: bool,

    /// Unrestricted search: alias for '--no-ignore --hidden'.
    #[arg(short = 'u', long = "unrestricted", action = ArgAction::Count, overrides_with_all = ["ignore", "no_hidden"], hide_short_help = true)]
    pub unrestricted: u8,

    /// Case-sensitive search (default: smart case).
    #[arg(short = 's', long, overrides_with = "ignore_case")]
    pub case_sensitive: bool,

    /// Case-insensitive search (default: smart case).
    #[arg(short = 'i', long, overrides_with = "case_sensitive")]
    pub ignore_case: bool,

    /// Glob-based search ('*' does not match '/').
    #[arg(short = 'g', long, conflicts_with = "fixed_strings")]
    pub glob: bool,

    /// Regular-expression based search (default).
    #[arg(long, overrides_with = "glob", hide_short_help = true)]
    pub regex: bool,

    /// Treat the pattern as a literal substring.
    #[arg(short = 'F', long, alias = "literal", hide_short_help = true)]
    pub fixed_strings: bool,

    /// Match the entire file name (or path with -p) literally.
    #[arg(long, conflicts_with_all = ["glob", "fixed_strings"], hide_short_help = true)]
    pub exact: bool,

    /// Additional patterns that must all match too.
    #[arg(
        long = "and",
        value_name = "pattern",
        allow_hyphen_values = true,
        hide_short_help = true
    )]
    pub and: Vec<String>,

    /// Show absolute instead of relative paths.
    #[arg(short = 'a', long)]
    pub absolute_path: bool,
    #[arg(long, overrides_with = "absolute_path", hide = true)]
    pub relative_path: bool,

    /// Use a detailed listing format like 'ls -l'. This is basically an alias for
    /// '--exec-batch ls -l' with some additional 'ls' options. This can be used to see more
    /// metadata, to show symlink targets and to achieve a deterministic sort order.
    #[arg(short = 'l', long, help = "Use a long listing format with file metadata", long_help)]
    pub list_details: bool,

    /// Descend into symlinked directories.
    #[arg(short = 'L', long, alias = "dereference")]
    pub follow: bool,
    #[arg(long, overrides_with = "follow", hide = true)]
    pub no_follow: bool,

    /// Match the pattern against the full absolute path (default: file name only).
    #[arg(short = 'p', long)]
    pub full_path: bool,

    /// Separate results by NUL instead of newline.
    #[arg(short = '0', long = "print0", hide_short_help = true)]
    pub print0: bool,

    /// Maximum search depth (default: none).
    #[arg(short = 'd', long, value_name = "depth", alias = "maxdepth")]
    pub max_depth: Option<usize>,

    /// Only show results at this depth or deeper.
    #[arg(long, value_name = "depth", alias = "mindepth", hide_short_help = true)]
    pub min_depth: Option<usize>,

    /// Only show results at exactly this depth.
    #[arg(long, value_name = "depth", conflicts_with_all = ["max_depth", "min_depth"], hide_short_help = true)]
    pub exact_depth: Option<usize>,

    /// Exclude entries matching this glob (gitignore syntax); overrides all other ignore logic.
    ///
    /// Applies even with -u. A glob with a '/' is anchored at the (first) search path.
    /// Repeatable. Examples: --exclude '*.pyc', --exclude node_modules
    #[arg(short = 'E', long, value_name = "glob")]
    pub exclude: Vec<String>,

    /// Do not descend into directories that match.
    #[arg(long, conflicts_with_all = ["size", "exact_depth"], hide_short_help = true)]
    pub prune: bool,

    /// Filter by type: file (f), directory (d/dir), symlink (l), executable (x),
    /// empty (e), socket (s), pipe (p), char-device (c), block-device (b).
    ///
    /// Repeatable; an entry of any listed type matches. 'executable' implies 'file'
    /// and keeps only executable entries; 'empty' means empty files and directories unless
    /// 'file' or 'directory' is given too. With -L a link counts as its target's type.
    #[arg(
        short = 't',
        long = "type",
        value_name = "filetype",
        value_enum,
        hide_possible_values = true
    )]
    pub file_type: Vec<TypeArg>,

    /// Filter by extension (case-insensitive; repeatable).
    #[arg(short = 'e', long = "extension", value_name = "ext")]
    pub extension: Vec<String>,

    /// Limit results by size: <+-><NUM><UNIT>, units b, k, m, g, t, ki, mi, gi, ti.
    ///
    /// '+' means at least, '-' at most, neither exactly. Units are case-insensitive:
    /// k, m, g, t are powers of 1000, ki, mi, gi, ti powers of 1024. Only files match.
    #[arg(short = 'S', long, value_name = "size", allow_hyphen_values = true, value_parser = SizeLimit::parse)]
    pub size: Vec<SizeLimit>,

    /// Only entries modified after this (duration like 10h or 2weeks, or a date).
    ///
    /// A duration back from now (10h, 1d, 35min, 2weeks), a date 'YYYY-MM-DD' or
    /// 'YYYY-MM-DD HH:MM:SS' (local time), an RFC 3339 time, or '@' and Unix seconds.
    /// Aliases: --changed-after, --change-newer-than, --newer.
    #[arg(long, value_name = "date|dur", aliases = ["change-newer-than", "newer", "changed-after"])]
    pub changed_within: Option<String>,

    /// Only entries modified before this (duration like 10h or 2weeks, or a date).
    ///
    /// Same forms as --changed-within. Aliases: --change-older-than, --older.
    #[arg(long, value_name = "date|dur", aliases = ["change-older-than", "older"])]
    pub changed_before: Option<String>,

    /// Filter by owning user and/or group: [(user|uid)][:(group|gid)], '!' negates.
    #[arg(short = 'o', long, value_name = "user:group", value_parser = OwnerFilter::parse)]
    pub owner: Option<OwnerFilter>,

    /// Add a custom ignore file in '.gitignore' format (low precedence).
    #[arg(long, value_name = "path", hide_short_help = true)]
    pub ignore_file: Vec<PathBuf>,

    /// Print results according to template
    #[arg(long, value_name = "fmt", conflicts_with = "list_details",
          long_help = FORMAT_HELP)]
    pub format: Option<String>,

    /// Print one JSON object a line per result (NDJSON): path, type and what -l shows
    #[arg(long, conflicts_with_all = ["format", "list_details", "exec", "exec_batch", "print0"],
          long_help = JSON_HELP)]
    pub json: bool,

    /// `-x/--exec` and `-X/--exec-batch` (each may be given more than once).
    #[command(flatten)]
    pub commands: ExecArgs,

    /// Maximum number of arguments to pass to the command given with -X. If the number of
    /// results is greater than the given size, the command given with -X is run again with
    /// remaining arguments. A batch size of zero means there is no limit (default), but note
    /// that batching might still happen due to OS restrictions on the maximum length of command
    /// lines.
    #[arg(
        long,
        value_name = "size",
        hide_short_help = true,
        requires = "exec_batch",
        default_value_t = 0,
        help = "Max number of arguments to run as a batch size with -X",
        long_help
    )]
    pub batch_size: usize,

    /// Declare when to use color for the pattern match output
    #[arg(short = 'c', long, value_enum, default_value_t = ColorWhen::Auto, value_name = "when",
          help = "When to use colors", long_help)]
    pub color: ColorWhen,

    /// Add a terminal hyperlink to a file:// url for each path in the output.
    ///
    /// Auto mode  is used if no argument is given to this option.
    ///
    /// This doesn't do anything for --exec and --exec-batch.
    #[arg(long, alias = "hyper", value_name = "when", require_equals = true, value_enum,
          default_value_t = HyperlinkWhen::Never, default_missing_value = "auto",
          num_args = 0..=1, help = "Add hyperlinks to output paths")]
    pub hyperlink: HyperlinkWhen,

    /// Skip directories that contain an entry of this name.
    #[arg(long, value_name = "name")]
    pub ignore_contain: Vec<String>,

    /// Number of threads (default: number of cores).
    #[arg(short = 'j', long, value_name = "num", hide_short_help = true, value_parser = str::parse::<NonZeroUsize>)]
    pub threads: Option<NonZeroUsize>,

    /// Most directory reads that may wait on the file system at once (default: 128; in an MPI
    /// job, per rank, 128 shared by the ranks on one node). The walk
    /// starts with --threads workers and adds more only while its reads wait on I/O (a cold
    /// cache, a network or FUSE mount); 1 never adds any.
    #[arg(long, value_name = "num", hide_short_help = true, value_parser = str::parse::<NonZeroUsize>)]
    pub io_depth: Option<NonZeroUsize>,

    /// Stop after this many results.
    #[arg(
        long,
        value_name = "count",
        overrides_with = "max_one_result",
        hide_short_help = true
    )]
    pub max_results: Option<usize>,

    /// Stop after the first result (alias for '--max-results=1').
    #[arg(short = '1', overrides_with = "max_results", hide_short_help = true)]
    pub max_one_result: bool,

    /// Print nothing; exit 0 when something matches, 1 otherwise.
    #[arg(
        short = 'q',
        long,
        alias = "has-results",
        conflicts_with = "max_results",
        hide_short_help = true
    )]
    pub quiet: bool,

    /// Report file-system errors (unreadable directories, loops…).
    #[arg(long, hide_short_help = true)]
    pub show_errors: bool,

    /// Change the working directory first; results are relative to it.
    #[arg(short = 'C', long, value_name = "path", hide_short_help = true)]
    pub base_directory: Option<PathBuf>,

    /// The search pattern (a regular expression, unless '--glob' is used; optional).
    #[arg(value_name = "pattern", default_value = "", hide_default_value = true)]
    pub pattern: String,

    /// Separator printed between path components.
    #[arg(long, value_name = "separator", hide_short_help = true)]
    pub path_separator: Option<String>,

    /// The root directories to search (default: the working directory).
    #[arg(value_name = "path", action = ArgAction::Append)]
    pub path: Vec<PathBuf>,

    /// Paths to search, as an alternative to the positional <path>.
    #[arg(long, value_name = "search-path", conflicts_with = "path", hide_short_help = true)]
    pub search_path: Vec<PathBuf>,

    /// Strip the './' prefix from results: auto (unless -0 or a command), always, never.
    #[arg(long, value_name = "when", conflicts_with_all = ["path", "search_path"], require_equals = true, num_args = 0..=1, default_missing_value = "always", hide_short_help = true)]
    pub strip_cwd_prefix: Option<StripCwdWhen>,

    /// How long results are held back to be printed sorted, in milliseconds (fd's hidden option).
    #[arg(long, value_name = "ms", hide = true)]
    pub max_buffer_time: Option<u64>,

    /// Build an index of each path (default: the working directory) for --indexed
    #[arg(long, conflicts_with = "indexed")]
    pub build_index: bool,

    /// Answer from the index of the search path (checked: bring it up to date first)
    #[arg(long, value_enum, value_name = "freshness", require_equals = true, num_args = 0..=1,
          default_missing_value = "checked")]
    pub indexed: Option<IndexedArg>,

    /// The index file to build or to search, instead of the cache's
    #[arg(long, value_name = "file", hide_short_help = true)]
    pub index_file: Option<PathBuf>,

    /// Do not descend into other file systems (aliases: --mount, --xdev).
    #[arg(long, aliases = ["mount", "xdev"], hide_short_help = true)]
    pub one_file_system: bool,

    /// Print a completion script for SHELL (default: from $SHELL) and exit.
    #[arg(long, value_name = "shell", hide = true, exclusive = true)]
    pub gen_completions: Option<Option<clap_complete::Shell>>,

    /// Print the man page (roff) and exit.
    #[arg(long, hide = true, exclusive = true)]
    pub gen_man: bool,

    /// Traversal order (beyond fd).
    #[arg(long, value_enum, default_value = "parallel", hide_short_help = true)]
    pub order: OrderArg,

    /// Sort entries within each directory (name, size, mtime), or the whole
    /// listing by path (path: as `LC_ALL=C sort` would); the output streams
    /// in tree order from every thread (beyond fd).
    #[arg(long, value_enum, value_name = "key", hide_short_help = true)]
    pub sort: Option<SortArg>,
}

/// How fresh an indexed answer must be (`--indexed=…`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IndexedArg {
    /// Check every indexed directory and re-read the changed ones first.
    Checked,
    /// Answer from the index as it is.
    StaleOk,
}
