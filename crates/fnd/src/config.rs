//! From parsed options to what the search and the sink need, checked in
//! fd's order (base directory, search paths, patterns, filters), so the
//! first error reported is the one fd would report.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fnd_walk::ignore::{IgnoreBuilder, IgnoreFilter};
use fnd_walk::{Nest, Order, Sort, TreeOrder, Within};

use crate::cli::{Cli, OrderArg, SortArg, StripCwdWhen};
use crate::color::Colors;
use crate::error::print_error;
use crate::exec::ExecConfig;
use crate::filter::{EntryFilters, TimeLimit, TypeFilter};
use crate::format::Template;
use crate::hyperlink::Hyperlinks;
use crate::listing::ListingConfig;
use crate::paths::{self, PathStyle};
use crate::pattern::{self, NameMatcher, Syntax};
use crate::results::Output;
use crate::search::{MetadataKey, Search};
use crate::select::Selection;

/// Everything a run needs, resolved: what to search, and what becomes of
/// the results.
pub struct Config {
    pub search: Search,
    pub output: Output,
}

/// What decides how results look, read where they are printed: whether
/// stdout is a terminal, `NO_COLOR`, `LS_COLORS`, and the host name of
/// hyperlinks. Under MPI, rank 0's, for every rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputEnv {
    pub stdout_is_terminal: bool,
    pub no_color: bool,
    pub ls_colors: Option<String>,
    pub hostname: Vec<u8>,
}

impl OutputEnv {
    /// This process's.
    pub fn here() -> OutputEnv {
        OutputEnv {
            stdout_is_terminal: fnd_mpi::stdio::stdout_is_terminal(),
            no_color: crate::color::no_color(),
            ls_colors: crate::color::ls_colors(),
            hostname: crate::hyperlink::hostname(),
        }
    }

    /// As bytes, for the other ranks.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = fnd_mpi::codec::Writer::new();
        w.u8(u8::from(self.stdout_is_terminal)
            | u8::from(self.no_color) << 1
            | u8::from(self.ls_colors.is_some()) << 2);
        w.bytes(self.ls_colors.as_deref().unwrap_or_default().as_bytes());
        w.bytes(&self.hostname);
        w.finish()
    }

    /// What [`encode`](Self::encode) wrote.
    pub fn decode(bytes: &[u8]) -> Option<OutputEnv> {
        let mut r = fnd_mpi::codec::Reader::new(bytes);
        let flags = r.u8().ok()?;
        let ls_colors = String::from_utf8(r.bytes().ok()?.to_vec()).ok();
        let hostname = r.bytes().ok()?.to_vec();
        r.end().ok()?;
        Some(OutputEnv {
            stdout_is_terminal: flags & 1 != 0,
            no_color: flags & 2 != 0,
            ls_colors: ls_colors.filter(|_| flags & 4 != 0),
            hostname,
        })
    }
}

/// A fatal error: its message (printed as `[fnd error]: …`, exit 1).
pub type Fatal = String;

impl Config {
    pub fn new(cli: &Cli) -> Result<Config, Fatal> {
        Config::new_in(cli, &OutputEnv::here())
    }

    /// The config for results printed as `env` says.
    pub fn new_in(cli: &Cli, env: &OutputEnv) -> Result<Config, Fatal> {
        if let Some(base) = &cli.base_directory {
            if !paths::is_existing_dir(base) {
                return Err(format!(
                    "The '--base-directory' path '{}' is not a directory.",
                    base.to_string_lossy()
                ));
            }
            std::env::set_current_dir(base).map_err(|e| {
                format!(
                    "Could not set '{}' as the current working directory: {e}",
                    base.to_string_lossy()
                )
            })?;
        }
        let roots = search_roots(cli)?;

        if !cli.full_path {
            for p in std::iter::once(&cli.pattern).chain(&cli.and) {
                pattern::check_not_a_path(p)?;
            }
        }
        let syntax = syntax(cli);
        let sources = cli
            .and
            .iter()
            .chain(std::iter::once(&cli.pattern))
            .map(|p| pattern::to_regex(p, syntax))
            .collect::<Result<Vec<_>, _>>()?;
        let case_sensitive =
            !cli.ignore_case && (cli.case_sensitive || sources.iter().any(|s| pattern::has_uppercase(s)));

        let mut times = Vec::new();
        for (arg, make) in [
            (&cli.changed_within, TimeLimit::After as fn(_) -> _),
            (&cli.changed_before, TimeLimit::Before as fn(_) -> _),
        ] {
            if let Some(t) = arg {
                let time = TimeLimit::parse_time(t)
                    .ok_or_else(|| format!("'{t}' is not a valid date or duration. See 'fnd --help'."))?;
                times.push(make(time));
            }
        }
        let filters = EntryFilters {
            types: TypeFilter::new(&cli.file_type),
            owner: cli.owner.and_then(|o| o.active()),
            sizes: cli.size.clone(),
            times,
        };
        let full_path_base = if cli.full_path {
            Some(paths::cwd_bytes().map_err(|e| {
                format!("Could not determine current directory. This is required for --full-path.: {e}")
            })?)
        } else {
            None
        };

        let hidden = cli.hidden || unrestricted(cli);
        if !hidden && sources.iter().any(|s| pattern::only_matches_hidden(s)) {
            return Err("The pattern(s) seems to only match files with a leading dot, but hidden files are filtered by \
                        default. Consider adding -H/--hidden to search hidden files as well or adjust your search pattern(s)."
                .into());
        }
        let matcher = NameMatcher::new(&sources, case_sensitive, &cli.extension, full_path_base)?;
        let (ignore, skip_hidden) = ignore_filter(cli, &roots, hidden)?;

        let order = match (cli.order, cli.sort) {
            (OrderArg::Bfs, _) => Order::BreadthFirst,
            // `--order dfs --sort` keeps the one-thread sorted walk.
            (OrderArg::Dfs, _) => Order::DepthFirst,
            (OrderArg::Parallel, _) => Order::Parallel,
        };
        // Results that feed a command keep their `./` by default, as with `-0`.
        let has_command = cli.commands.config.is_some() || cli.list_details;
        let strip_when = cli.strip_cwd_prefix.unwrap_or(StripCwdWhen::Auto);
        let strip_cwd_prefix = given_paths(cli).is_empty()
            && match strip_when {
                StripCwdWhen::Auto => !(cli.print0 || has_command),
                StripCwdWhen::Always => true,
                StripCwdWhen::Never => false,
            };
        let path_style = PathStyle {
            strip_cwd_prefix,
            separator: cli.path_separator.as_ref().map(|s| s.as_bytes().to_vec()),
        };
        let threads = cli.threads.map_or(0, |n| n.get());
        let search = Search {
            roots,
            selection: Selection::new(matcher, filters, cli.follow),
            ignore,
            skip_hidden,
            follow: cli.follow,
            one_file_system: cli.one_file_system,
            min_depth: min_depth(cli).unwrap_or(0).max(1),
            max_depth: max_depth(cli),
            prune: cli.prune,
            threads,
            io_depth: cli.io_depth.map_or(0, |n| n.get()),
            order,
            // The walk sorts by name (and descends in that order); size and
            // time reorder each directory's entries as they are written.
            sort: cli.sort.map(|_| Sort::Name),
            hold_early: (!has_command && !cli.quiet && cli.order == OrderArg::Parallel && cli.sort.is_none())
                .then(|| Duration::from_millis(cli.max_buffer_time.unwrap_or(100))),
            sort_by_metadata: match cli.sort {
                Some(SortArg::Size) => Some(MetadataKey::Size),
                Some(SortArg::Mtime) => Some(MetadataKey::Mtime),
                Some(SortArg::Name | SortArg::Path) | None => None,
            },
            // Sorted on every core: each directory by name (size and time
            // reorder its entries as they are written, subtrees staying in
            // name order, as the one-thread walk has it), subtrees after
            // the entries; or the whole listing by path.
            tree_order: match (cli.order, cli.sort) {
                (_, Some(SortArg::Path)) => Some(TreeOrder::new(Within::Path, Nest::AtEntry)),
                (OrderArg::Parallel, Some(_)) => Some(TreeOrder::new(Within::Name, Nest::AfterEntries)),
                _ => None,
            },
            max_results: max_results(cli),
            quiet: cli.quiet,
            show_errors: cli.show_errors,
            flush_each_chunk: false,
        };
        Ok(Config {
            search,
            output: output(cli, threads, path_style, env),
        })
    }
}

/// `-x`/`-X`/`-l` run commands; anything else prints, as the options say.
fn output(cli: &Cli, threads: usize, path_style: PathStyle, env: &OutputEnv) -> Output {
    let terminal = env.stdout_is_terminal;
    let colored = cli.color.enabled(terminal, env.no_color);
    let exec = if let Some(exec) = &cli.commands.config {
        Some(exec.clone())
    } else if cli.list_details {
        Some(ExecConfig::list_details(colored))
    } else {
        None
    };
    match exec {
        Some(mut exec) => {
            exec.batch_size = cli.batch_size;
            if threads > 0 {
                exec.threads = threads;
            }
            exec.null_separator = cli.print0;
            exec.path_style = path_style;
            Output::Exec(exec)
        }
        None => Output::Print(ListingConfig {
            terminator: if cli.print0 { b'\0' } else { b'\n' },
            path_style,
            // fd prints --format output uncoloured.
            colors: (colored && cli.format.is_none() && !cli.json).then(|| Colors::from_spec(env.ls_colors.as_deref())),
            hyperlinks: cli
                .hyperlink
                .enabled(colored && !cli.json)
                .then(|| Hyperlinks::on_host(&env.hostname)),
            escape: terminal,
            format: cli.format.as_deref().map(Template::parse),
            json: cli.json,
        }),
    }
}

/// How pattern text is read.
fn syntax(cli: &Cli) -> Syntax {
    if cli.glob {
        Syntax::Glob
    } else if cli.exact {
        Syntax::Exact
    } else if cli.fixed_strings {
        Syntax::Fixed
    } else {
        Syntax::Regex
    }
}

/// `-u` once or more.
fn unrestricted(cli: &Cli) -> bool {
    cli.unrestricted > 0
}

fn max_depth(cli: &Cli) -> Option<usize> {
    cli.max_depth.or(cli.exact_depth)
}

fn min_depth(cli: &Cli) -> Option<usize> {
    cli.min_depth.or(cli.exact_depth)
}

/// `--max-results 0` means no limit, as in fd.
fn max_results(cli: &Cli) -> Option<usize> {
    cli.max_results
        .filter(|&m| m > 0)
        .or_else(|| cli.max_one_result.then_some(1))
}

/// The paths given, positional or `--search-path`; empty for the default.
fn given_paths(cli: &Cli) -> &[PathBuf] {
    if !cli.path.is_empty() {
        &cli.path
    } else {
        &cli.search_path
    }
}

/// The search paths that are directories (the others are reported and
/// skipped), spelt for the walk.
fn search_roots(cli: &Cli) -> Result<Vec<PathBuf>, Fatal> {
    let given = given_paths(cli);
    if given.is_empty() {
        let cwd = Path::new("./");
        if !paths::is_existing_dir(cwd) {
            return Err("Could not retrieve current directory (has it been deleted?).".into());
        }
        return Ok(vec![paths::normalize_root(cwd, cli.absolute_path)]);
    }
    let mut roots = Vec::new();
    for path in given {
        if paths::is_existing_dir(path) {
            roots.push(paths::normalize_root(path, cli.absolute_path));
        } else {
            print_error(format_args!(
                "Search path '{}' is not a directory.",
                path.to_string_lossy()
            ));
        }
    }
    if roots.is_empty() {
        return Err("No valid search paths given.".into());
    }
    Ok(roots)
}

/// The global ignore files: `$XDG_CONFIG_HOME/fd/ignore` (as fd reads it) and `…/fnd/ignore`.
fn global_ignore_files() -> Vec<PathBuf> {
    let config_dir = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| Path::new(v).is_absolute()) {
        Some(dir) => PathBuf::from(dir),
        None => match std::env::var_os("HOME") {
            Some(home) => Path::new(&home).join(".config"),
            None => return Vec::new(),
        },
    };
    ["fd", "fnd"]
        .iter()
        .map(|tool| config_dir.join(tool).join("ignore"))
        .filter(|p| p.is_file())
        .collect()
}

/// The ignore filter fd's options ask for, and whether the walk should skip
/// hidden entries by itself instead.
fn ignore_filter(cli: &Cli, roots: &[PathBuf], hidden: bool) -> Result<(Option<IgnoreFilter>, bool), Fatal> {
    let u = unrestricted(cli);
    let read_fdignore = !(cli.no_ignore || u);
    let read_vcs = !(cli.no_ignore || u || cli.no_ignore_vcs);
    let read_global = !(cli.no_ignore || u || cli.no_global_ignore_file);
    let global_files = if read_global { global_ignore_files() } else { Vec::new() };

    let mut overrides = ignore::overrides::OverrideBuilder::new(&roots[0]);
    for glob in &cli.exclude {
        overrides
            .add(&format!("!{glob}"))
            .map_err(|e| format!("Malformed exclude pattern: {e}"))?;
    }
    let overrides = overrides
        .build()
        .map_err(|_| "Mismatch in exclude patterns".to_string())?;

    let needed = read_fdignore
        || read_vcs
        || !global_files.is_empty()
        || !cli.ignore_file.is_empty()
        || !overrides.is_empty()
        || !cli.ignore_contain.is_empty();
    if !needed {
        return Ok((None, !hidden));
    }
    let mut builder = IgnoreBuilder::new()
        .hidden(!hidden)
        .dot_ignore(read_fdignore)
        .git(read_vcs)
        .require_git(!cli.no_require_git)
        .parents(!cli.no_ignore_parent && (read_fdignore || read_vcs))
        .overrides(overrides);
    if read_fdignore {
        builder = builder.add_custom_name(".fdignore");
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    for (files, what) in [(&global_files, "global"), (&cli.ignore_file, "custom")] {
        for file in files {
            let (b, err) = builder.add_explicit(file, &cwd);
            builder = b;
            if let Some(err) = err.filter(|e| !e.is_partial()) {
                print_error(format_args!("Malformed pattern in {what} ignore file. {err}."));
            }
        }
    }
    for name in &cli.ignore_contain {
        builder = builder.add_ignore_contain(name);
    }
    Ok((Some(builder.build(roots)), false))
}
