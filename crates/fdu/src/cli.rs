//! Command line: GNU du's options (same names, same defaults, same errors
//! and exit code 1 for bad usage) plus the tree view, JSON and progress,
//! parsed into plain [`Settings`]. It only parses: the caller prints and exits.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

use clap::{Arg, ArgAction, ArgMatches, Command};

use crate::format::BadSize;
use crate::getopt::{self, Opt, Takes};
use crate::messages::{error_text, program_name, quote, quote_value, report};
use crate::output::terminal_size;
use crate::settings::{Follow, Measure, Settings, SizeFormat, Threshold, TimeFormat, TimeKind, TreeOptions};

/// A usage error: du prints `du: MESSAGE` (none when empty: it was said
/// already), then a hint to `--help`, exit 1.
#[derive(Debug)]
pub struct UsageError {
    pub message: String,
    pub hint: bool,
}

fn usage(message: impl Into<String>) -> UsageError {
    UsageError {
        message: message.into(),
        hint: true,
    }
}

fn invalid(message: impl Into<String>) -> UsageError {
    UsageError {
        message: message.into(),
        hint: false,
    }
}

pub fn command() -> Command {
    let flag = |name: &'static str| Arg::new(name).action(ArgAction::SetTrue);
    let value = |name: &'static str| Arg::new(name).action(ArgAction::Append).num_args(1);
    let name = program_name();
    Command::new(name)
        .about("Summarize disk usage of each FILE, recursively for directories (GNU du compatible, parallel)")
        .version(env!("CARGO_PKG_VERSION"))
        .override_usage(format!("{name} [OPTION]... [FILE]...\n       {name} [OPTION]... --files0-from=F"))
        .args_override_self(true)
        .arg(Arg::new("files").action(ArgAction::Append).value_parser(clap::value_parser!(OsString)).help("Files and directories (default: .)"))
        .arg(flag("null").short('0').long("null").help("End each output line with NUL, not newline"))
        .arg(flag("all").short('a').long("all").help("Write counts for all files, not just directories"))
        .arg(flag("apparent-size").short('A').long("apparent-size").help("Print apparent sizes rather than disk usage"))
        .arg(value("block-size").short('B').long("block-size").value_name("SIZE").help("Scale sizes by SIZE before printing (e.g. -BM prints sizes in units of 1,048,576 bytes)"))
        .arg(flag("bytes").short('b').long("bytes").help("Equivalent to --apparent-size --block-size=1"))
        .arg(flag("total").short('c').long("total").help("Produce a grand total"))
        .arg(flag("dereference-args").short('D').short_alias('H').long("dereference-args").help("Dereference only symlinks that are listed on the command line"))
        .arg(value("max-depth").short('d').long("max-depth").value_name("N").allow_hyphen_values(true).help("Print the total for a directory only if it is N or fewer levels below the command line argument"))
        .arg(Arg::new("files0-from").long("files0-from").value_name("F").value_parser(clap::value_parser!(OsString)).help("Summarize disk usage of the NUL-terminated file names in file F; if F is -, read names from standard input"))
        .arg(flag("human-readable").short('h').long("human-readable").help("Print sizes in human readable format (e.g., 1K 234M 2G)"))
        .arg(flag("inodes").long("inodes").help("List inode usage information instead of block usage"))
        .arg(flag("k").short('k').help("Like --block-size=1K"))
        .arg(flag("dereference").short('L').long("dereference").help("Dereference all symbolic links"))
        .arg(flag("count-links").short('l').long("count-links").help("Count sizes many times if hard linked"))
        .arg(flag("m").short('m').help("Like --block-size=1M"))
        .arg(flag("no-dereference").short('P').long("no-dereference").help("Don't follow any symbolic links (this is the default)"))
        .arg(flag("separate-dirs").short('S').long("separate-dirs").help("For directories do not include size of subdirectories"))
        .arg(flag("si").long("si").help("Like -h, but use powers of 1000 not 1024"))
        .arg(flag("summarize").short('s').long("summarize").help("Display only a total for each argument"))
        .arg(value("threshold").short('t').long("threshold").value_name("SIZE").allow_hyphen_values(true).help("Exclude entries smaller than SIZE if positive, or entries greater than SIZE if negative"))
        .arg(Arg::new("time").long("time").value_name("WORD").num_args(0..=1).require_equals(true).default_missing_value(BARE_TIME).action(ArgAction::Append).help("Show time of the last modification of any file in the directory, or any of its subdirectories (WORD: atime, access, use, ctime, status)"))
        .arg(value("time-style").long("time-style").value_name("STYLE").help("Show times using STYLE: full-iso, long-iso, iso, +FORMAT"))
        .arg(value("exclude-from").short('X').long("exclude-from").value_name("FILE").help("Exclude files that match any pattern in FILE"))
        .arg(value("exclude").long("exclude").value_name("PATTERN").help("Exclude files that match PATTERN"))
        .arg(flag("one-file-system").short('x').long("one-file-system").help("Skip directories on different file systems"))
        .arg(value("threads").short('j').long("threads").value_name("N").help("Worker threads (default: one per core)"))
        .arg(value("io-depth").long("io-depth").value_name("N").help("Most directory reads that may wait on the file system at once (default: 128; in an MPI job, per rank, 128 shared by the ranks on one node). The walk starts with --threads workers and adds more only while its reads wait on I/O (a cold cache, a network or FUSE mount); 1 never adds any"))
        .arg(flag("tree").long("tree").help("Show the largest entries as a tree with bars and percentages"))
        .arg(value("tree-depth").long("tree-depth").value_name("N").help("Levels shown by --tree (default 4)"))
        .arg(value("tree-lines").short('n').long("tree-lines").value_name("N").help("Most lines shown by --tree (default: terminal height, or 40)"))
        .arg(flag("json").long("json").help("Write the scanned tree as JSON (nested, with sizes)"))
        .arg(Arg::new("from-json").long("from-json").value_name("FILE").value_parser(clap::value_parser!(OsString)).help("Read a tree written by --json (- for stdin) instead of scanning"))
        .arg(Arg::new("output-file").short('o').long("output-file").value_name("FILE").value_parser(clap::value_parser!(OsString)).help("Write the tree in ncdu's export format (for ncdu -f, gdu -f, fdu -f; - for stdout) instead of du's lines"))
        .arg(Arg::new("input-file").short('f').long("input-file").value_name("FILE").value_parser(clap::value_parser!(OsString)).help("Read an export in ncdu's format (ncdu -o, gdu -o; - for stdin) instead of scanning"))
        .arg(flag("extended").short('e').long("extended").help("With -o: also write each entry's owner, group, mode and modification time, as ncdu -e does (what fdu --by -f reads)"))
        .arg(flag("interactive").short('i').long("interactive").help("Browse the scanned tree in the terminal, as ncdu does: arrows to move, d to delete, ? for the keys"))
        .arg(flag("no-progress").long("no-progress").help("Never show the progress line on stderr"))
        .arg(value("by").long("by").value_name("KEY[,KEY]").help("Disk usage, apparent size and entry count per group instead of du's lines, largest first; KEY: user, group, ext, type, age (of the time --time picks: mtime, or atime, ctime)"))
        .arg(value("top").long("top").value_name("N").help("Most groups (--by) or changes (--diff) shown (default 20; 0 for all)"))
        .arg(flag("numeric-ids").long("numeric-ids").help("With --by: users and groups by number, without looking their names up"))
        .arg(Arg::new("diff").long("diff").value_name("OLD").value_parser(clap::value_parser!(OsString)).help("What changed between two scans: --diff OLD [NEW], OLD and NEW exports (-o, ncdu -o) or --json trees; NEW (the one FILE operand) may be a directory to scan, and without it OLD's root is scanned"))
        .disable_help_flag(true)
        .arg(Arg::new("help").long("help").action(ArgAction::Help).help("Display this help and exit"))
}

/// The last value of an option given several times (du keeps the last).
fn last<'a>(m: &'a ArgMatches, id: &str) -> Option<&'a String> {
    m.get_many::<String>(id).and_then(|mut v| v.next_back())
}

/// Position on the command line of the last occurrence of an option.
fn position(m: &ArgMatches, id: &str) -> Option<usize> {
    if m.value_source(id) != Some(clap::parser::ValueSource::CommandLine) {
        return None;
    }
    m.indices_of(id).and_then(|mut i| i.next_back())
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Parsed {
    /// A run with these settings.
    Run(Box<Settings>),
    /// `--help` or `--version`: print this and exit successfully.
    Show(clap::Error),
}

/// du's long options in du's order (the order getopt lists an ambiguous
/// prefix's possibilities in); fdu's others come after.
const DU_LONG: &[&str] = &[
    "all",
    "apparent-size",
    "block-size",
    "bytes",
    "count-links",
    "dereference",
    "dereference-args",
    "exclude",
    "exclude-from",
    "files0-from",
    "human-readable",
    "inodes",
    "si",
    "max-depth",
    "null",
    "no-dereference",
    "one-file-system",
    "separate-dirs",
    "summarize",
    "total",
    "threshold",
    "time",
    "time-style",
    "help",
    "version",
];

/// du's short options (`-k`, `-m` and `-H` have no long name of their own).
const DU_SHORT: &[u8] = b"0abd:chHklmst:xB:DLPSX:";

/// The options as getopt sees them: du's table in du's order, and fdu's own.
fn option_tables(cmd: &Command) -> (Vec<Opt>, Vec<Opt>) {
    let mut du = Vec::new();
    let mut own = Vec::new();
    for arg in cmd.get_arguments() {
        let Some(first_short) = arg.get_short().or_else(|| arg.get_long().map(|_| '\0')) else {
            continue; // the operands
        };
        let mut shorts: Vec<u8> = arg
            .get_all_short_aliases()
            .unwrap_or_default()
            .into_iter()
            .map(|c| c as u8)
            .collect();
        if first_short != '\0' {
            shorts.insert(0, first_short as u8);
        }
        let takes = if !arg.get_action().takes_values() {
            Takes::Nothing
        } else if arg.get_num_args().is_some_and(|n| n.min_values() == 0) {
            Takes::Optional
        } else {
            Takes::Value
        };
        let opt = Opt {
            id: arg.get_id().to_string(),
            long: arg.get_long().map(str::to_string),
            shorts,
            takes,
        };
        let is_du = match arg.get_long() {
            Some(long) => DU_LONG.contains(&long),
            None => opt.shorts.iter().all(|c| DU_SHORT.contains(c)),
        };
        if is_du {
            du.push(opt);
        } else {
            own.push(opt);
        }
    }
    // clap adds `--version` itself, when it builds the command.
    if !du.iter().any(|o| o.long.as_deref() == Some("version")) {
        du.push(Opt {
            id: "version".into(),
            long: Some("version".into()),
            shorts: Vec::new(),
            takes: Takes::Nothing,
        });
    }
    let rank = |o: &Opt| {
        o.long
            .as_deref()
            .and_then(|l| DU_LONG.iter().position(|d| *d == l))
            .unwrap_or(DU_LONG.len())
    };
    du.sort_by_key(rank);
    (du, own)
}

/// The command line as du's `getopt_long` reads it, spelled out in full
/// for clap (see [`getopt`]); Err: getopt's words for what it refuses.
pub fn normalize(args: &[OsString]) -> Result<getopt::Normalized, String> {
    let (du_options, own) = option_tables(&command());
    getopt::normalize(args, &du_options, &own)
}

pub fn parse(args: Vec<OsString>) -> Result<Parsed, UsageError> {
    let cmd = command();
    let (du_options, own) = option_tables(&cmd);
    let normalized = getopt::normalize(&args, &du_options, &own).map_err(usage)?;
    check_in_order(&normalized.given)?;
    let long_spelled = normalized.long_spelled;
    let args = normalized.args;
    let m = match cmd.try_get_matches_from(&args) {
        Ok(m) => m,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                return Ok(Parsed::Show(e));
            }
            // clap's first line, in du's words: `fdu: unexpected argument…`.
            let text = e.to_string();
            let first = text.lines().next().unwrap_or("").trim_start_matches("error: ");
            return Err(usage(first));
        }
    };
    settings(&m, &long_spelled).map(|s| Parsed::Run(Box::new(s)))
}

/// du reads its options in order: a bad `-B` or `-t` value ends it there
/// (the first one given is the one named), and a bad `-d` is said and
/// ends it with the usage hint once all are read.
fn check_in_order(given: &[getopt::Given]) -> Result<(), UsageError> {
    // Said in the error, not printed here: in an MPI job only rank 0 says
    // what is wrong with the command line.
    let mut said: Vec<String> = Vec::new();
    let ending = |said: &[String], e: UsageError| match said {
        [] => e,
        _ => {
            let mut lines = said.to_vec();
            lines.extend((!e.message.is_empty()).then_some(e.message));
            UsageError {
                message: lines.join(&format!("\n{}: ", crate::messages::program_name())),
                hint: e.hint,
            }
        }
    };
    for g in given {
        let value = String::from_utf8_lossy(g.value.as_deref().unwrap_or_default());
        let name = |short: &'static str, long: &'static str| if g.long { long } else { short };
        let checked = match g.id.as_str() {
            "max-depth" if value.parse::<usize>().is_err() => {
                said.push(format!("invalid maximum depth {}", quote_value(&value)));
                Ok(())
            }
            "block-size" => SizeFormat::parse(&value)
                .map(|_| ())
                .map_err(|why| bad_size(name("-B", "--block-size"), &value, why)),
            "threshold" => match parse_threshold(&value) {
                Ok(Threshold::AtMost(0)) => Err(invalid("invalid --threshold argument '-0'")),
                Ok(_) => Ok(()),
                Err(why) => Err(bad_size(name("-t", "--threshold"), &value, why)),
            },
            _ => Ok(()),
        };
        checked.map_err(|e| ending(&said, e))?;
    }
    if !said.is_empty() {
        return Err(ending(&said, usage(String::new())));
    }
    Ok(())
}

/// An option as the user last spelled it (du's messages name `-B` or `--block-size`).
fn spelled(long_spelled: &[String], short: &'static str, long: &'static str) -> &'static str {
    if long_spelled
        .iter()
        .any(|id| long.strip_prefix("--") == Some(id.as_str()))
    {
        long
    } else {
        short
    }
}

/// What clap hands over for a `--time` without a word (no argument can
/// hold a NUL byte, so no user can spell it).
const BARE_TIME: &str = "\0";

/// gnulib's `argmatch`, as du uses it for `--time` and the time style: a
/// name of the table, or a prefix of names that all mean the same; else
/// du's message (invalid or ambiguous, then the valid names, those meaning
/// the same on one line) and its usage hint.
fn argmatch<T: Copy + PartialEq>(context: &str, arg: &str, table: &[(&str, T)]) -> Result<T, UsageError> {
    if let Some(&(_, value)) = table.iter().find(|(name, _)| *name == arg) {
        return Ok(value);
    }
    let mut found = None;
    let mut ambiguous = false;
    for &(_, value) in table.iter().filter(|(name, _)| name.starts_with(arg)) {
        match found {
            None => found = Some(value),
            Some(earlier) => ambiguous |= earlier != value,
        }
    }
    match found {
        Some(value) if !ambiguous => Ok(value),
        _ => {
            let kind = if ambiguous { "ambiguous" } else { "invalid" };
            let mut message = format!(
                "{kind} argument {} for {}\nValid arguments are:",
                quote_value(arg),
                quote_value(context)
            );
            let mut previous = None;
            for &(name, value) in table {
                let separator = if previous == Some(value) { ", " } else { "\n  - " };
                message.push_str(separator);
                message.push_str(&quote_value(name));
                previous = Some(value);
            }
            Err(usage(message))
        }
    }
}

/// du's message for a refused size.
fn bad_size(option: &str, value: &str, why: BadSize) -> UsageError {
    match why {
        BadSize::Invalid => invalid(format!("invalid {option} argument {}", quote(value.as_bytes()))),
        BadSize::InvalidSuffix => invalid(format!(
            "invalid suffix in {option} argument {}",
            quote(value.as_bytes())
        )),
        BadSize::TooLarge => invalid(format!("{option} argument {} too large", quote(value.as_bytes()))),
    }
}

fn settings(m: &ArgMatches, args: &[String]) -> Result<Settings, UsageError> {
    let flag = |id: &str| m.get_flag(id);
    let mut measure = if flag("apparent-size") {
        Measure::Apparent
    } else {
        Measure::Disk
    };
    // Of the size-format options, the last one given wins (as in du).
    let mut size = size_from_env();
    let mut formats: Vec<(usize, &str)> = ["block-size", "bytes", "human-readable", "k", "m", "si"]
        .into_iter()
        .filter_map(|id| position(m, id).map(|p| (p, id)))
        .collect();
    formats.sort();
    for (_, id) in formats {
        size = match id {
            "block-size" => {
                let spec = last(m, "block-size").map(String::as_str).unwrap_or("");
                SizeFormat::parse(spec).map_err(|why| bad_size(spelled(args, "-B", "--block-size"), spec, why))?
            }
            "bytes" => SizeFormat::units(),
            "human-readable" => SizeFormat::Human { base: 1024 },
            "si" => SizeFormat::Human { base: 1000 },
            "k" => SizeFormat::Blocks {
                block: 1024,
                suffix: String::new(),
            },
            _ => SizeFormat::Blocks {
                block: 1 << 20,
                suffix: String::new(),
            },
        };
    }
    if flag("bytes") {
        measure = Measure::Apparent;
    }
    if flag("inodes") {
        measure = Measure::Inodes;
        if !matches!(size, SizeFormat::Human { .. }) {
            size = SizeFormat::units();
        }
    }
    let summarize = flag("summarize");
    let mut max_depth = usize::MAX;
    if let Some(d) = last(m, "max-depth") {
        max_depth = d
            .parse()
            .map_err(|_| usage(format!("invalid maximum depth {}", quote_value(d))))?;
    }
    if summarize {
        if max_depth != usize::MAX && max_depth != 0 {
            return Err(usage(format!(
                "warning: summarizing conflicts with --max-depth={max_depth}"
            )));
        }
        if max_depth == 0 {
            report("warning: summarizing is the same as using --max-depth=0");
        }
        max_depth = 0;
    }
    if summarize && flag("all") {
        return Err(usage("cannot both summarize and show all entries"));
    }
    if flag("inodes") && (flag("apparent-size") || flag("bytes")) {
        report("warning: options --apparent-size and -b are ineffective with --inodes");
    }
    let threshold = match last(m, "threshold") {
        None => Threshold::AtLeast(0),
        Some(t) => match parse_threshold(t) {
            // du parses first, then refuses `-0` (`-00`, `-0k`…) in these
            // very words, whatever the spelling and the locale.
            Ok(Threshold::AtMost(0)) => return Err(invalid("invalid --threshold argument '-0'")),
            parsed => parsed.map_err(|why| bad_size(spelled(args, "-t", "--threshold"), t, why))?,
        },
    };
    let time = match m.get_many::<String>("time").and_then(|mut v| v.next_back()) {
        None => None,
        Some(word) => {
            // du 9.1 takes no word for the modification time: a bare --time.
            let kind = if word == BARE_TIME {
                TimeKind::Modified
            } else {
                let words = [
                    ("atime", TimeKind::Accessed),
                    ("access", TimeKind::Accessed),
                    ("use", TimeKind::Accessed),
                    ("ctime", TimeKind::Changed),
                    ("status", TimeKind::Changed),
                ];
                argmatch("--time", word, &words)?
            };
            // From TIME_STYLE only, as du: "locale" means the default, and
            // `posix-` prefixes are dropped (for ls's sake).
            let style = match last(m, "time-style") {
                Some(style) => style.clone(),
                None => match std::env::var("TIME_STYLE") {
                    Ok(style) if style != "locale" && style.starts_with('+') => style,
                    Ok(style) if style != "locale" => {
                        let mut name = style.as_str();
                        while let Some(rest) = name.strip_prefix("posix-") {
                            name = rest;
                        }
                        name.to_string()
                    }
                    _ => "long-iso".into(),
                },
            };
            let format = if style.starts_with('+') {
                TimeFormat::parse(&style)
            } else {
                let styles = [("full-iso", "full-iso"), ("long-iso", "long-iso"), ("iso", "iso")];
                TimeFormat::parse(argmatch("time style", &style, &styles)?)
            }
            .map_err(|_| usage(format!("invalid argument {} for 'time style'", quote(style.as_bytes()))))?;
            Some((kind, format))
        }
    };
    let mut excludes: Vec<String> = m
        .get_many::<String>("exclude")
        .map(|v| v.cloned().collect())
        .unwrap_or_default();
    for file in m.get_many::<String>("exclude-from").into_iter().flatten() {
        let text =
            std::fs::read(file).map_err(|e| invalid(format!("{}: {}", quote(file.as_bytes()), error_text(&e))))?;
        excludes.extend(
            text.split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(|l| String::from_utf8_lossy(l).into_owned()),
        );
    }
    let follow = if flag("dereference") && position(m, "dereference") > position(m, "no-dereference") {
        Follow::All
    } else if flag("dereference-args") {
        Follow::Operands
    } else {
        Follow::Never
    };
    let operands: Vec<Vec<u8>> = m
        .get_many::<OsString>("files")
        .map(|v| v.map(|s| s.as_bytes().to_vec()).collect())
        .unwrap_or_default();
    let files0_from = m.get_one::<OsString>("files0-from").map(|s| s.as_bytes().to_vec());
    if files0_from.is_some() && !operands.is_empty() {
        return Err(usage(format!(
            "extra operand {}\nfile operands cannot be combined with --files0-from",
            quote(&operands[0])
        )));
    }
    let number = |id: &str, default: usize| -> Result<usize, UsageError> {
        match last(m, id) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| usage(format!("invalid --{id} argument {}", quote(v.as_bytes())))),
        }
    };
    let (cols, rows) = terminal_size();
    let view = TreeOptions {
        depth: number("tree-depth", 4)?,
        lines: number("tree-lines", rows.saturating_sub(4).max(10))?,
        bar_width: (cols / 4).clamp(10, 40),
    };
    let tree = flag("tree").then_some(view);
    if flag("interactive") {
        let other = [
            ("tree", "--tree"),
            ("json", "--json"),
            ("from-json", "--from-json"),
            ("output-file", "--output-file"),
            ("files0-from", "--files0-from"),
        ]
        .into_iter()
        .find(|(id, _)| m.value_source(id) == Some(clap::parser::ValueSource::CommandLine));
        if let Some((_, name)) = other {
            return Err(usage(format!("--interactive cannot be combined with {name}")));
        }
        if measure == Measure::Inodes {
            return Err(usage("--interactive shows sizes: it cannot be combined with --inodes"));
        }
        if operands.len() > 1 {
            return Err(usage("--interactive browses one directory: give it at most one FILE"));
        }
    }
    // A saved tree is shown as --tree shows a scan: what would choose or
    // print anything else is refused rather than ignored.
    const SAVED_TREE_TAKES: &[&str] = &[
        "from-json",
        "tree",
        "tree-depth",
        "tree-lines",
        "human-readable",
        "si",
        "k",
        "m",
        "block-size",
        "inodes",
        "no-progress",
        "threads",
        "io-depth",
    ];
    if given(m, "from-json") {
        if let Some(other) = first_given(m, |id| !SAVED_TREE_TAKES.contains(&id)) {
            return Err(usage(format!(
                "--from-json shows a saved tree as --tree does: it cannot be combined with {other}"
            )));
        }
    }
    // An export is read instead of scanning: nothing is scanned, and it is
    // not written again.
    const EXPORT_REFUSES: &[&str] = &[
        "output-file",
        "files",
        "files0-from",
        "exclude",
        "exclude-from",
        "one-file-system",
        "dereference",
        "dereference-args",
    ];
    if flag("extended") && !given(m, "output-file") {
        return Err(usage("--extended says what -o writes: it goes with -o FILE"));
    }
    if given(m, "input-file") {
        if let Some(other) = first_given(m, |id| EXPORT_REFUSES.contains(&id)) {
            return Err(usage(format!(
                "--input-file reads an export instead of scanning: it cannot be combined with {other}"
            )));
        }
    }
    // NEW is an operand, not a second value of --diff, so that the
    // command line reads as getopt_long reads du's (options and
    // operands in any order).
    let diff = match m.get_one::<OsString>("diff") {
        None => None,
        Some(_) if operands.len() > 1 => {
            return Err(usage(format!(
                "extra operand {}
--diff compares OLD with one NEW",
                quote(&operands[1])
            )))
        }
        Some(old) => Some((old.as_bytes().to_vec(), operands.first().cloned())),
    };
    Ok(Settings {
        operands,
        files0_from,
        all: flag("all"),
        max_depth,
        total: flag("total"),
        measure,
        size,
        one_file_system: flag("one-file-system"),
        follow,
        count_links: flag("count-links"),
        separate_dirs: flag("separate-dirs"),
        excludes,
        null: flag("null"),
        threshold,
        time,
        threads: number("threads", 0)?,
        io_depth: match (last(m, "io-depth"), number("io-depth", 0)?) {
            (Some(v), 0) => return Err(usage(format!("invalid --io-depth argument {}", quote(v.as_bytes())))),
            (_, n) => n,
        },
        tree,
        json: flag("json"),
        from_json: m.get_one::<OsString>("from-json").map(|s| s.as_bytes().to_vec()),
        input_file: m.get_one::<OsString>("input-file").map(|s| s.as_bytes().to_vec()),
        export_file: m.get_one::<OsString>("output-file").map(|s| s.as_bytes().to_vec()),
        extended: flag("extended"),
        progress: !flag("no-progress"),
        browse: flag("interactive"),
        by: match last(m, "by") {
            None => Vec::new(),
            Some(keys) => crate::groups::parse_keys(keys).map_err(invalid)?,
        },
        numeric_ids: flag("numeric-ids"),
        top: number("top", 20)?,
        diff,
    })
}

/// Whether an option was given on the command line.
fn given(m: &ArgMatches, id: &str) -> bool {
    m.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
}

/// The first option given on the command line (in the table's order) that
/// `pick` picks, as a message names it.
fn first_given(m: &ArgMatches, pick: impl Fn(&str) -> bool) -> Option<String> {
    let cmd = command();
    let arg = cmd
        .get_arguments()
        .find(|a| pick(a.get_id().as_str()) && given(m, a.get_id().as_str()))?;
    Some(match (arg.get_long(), arg.get_short()) {
        (Some(long), _) => format!("--{long}"),
        (None, Some(short)) => format!("-{short}"),
        (None, None) => "FILE operands".to_string(),
    })
}

/// du's default: 1024-byte blocks, unless the environment says otherwise
/// (`DU_BLOCK_SIZE`, `BLOCK_SIZE`, `BLOCKSIZE`, `POSIXLY_CORRECT`).
fn size_from_env() -> SizeFormat {
    for var in ["DU_BLOCK_SIZE", "BLOCK_SIZE", "BLOCKSIZE"] {
        if let Some(spec) = std::env::var_os(var) {
            if let Some(f) = spec.to_str().and_then(|s| SizeFormat::parse(s).ok()) {
                return f;
            }
        }
    }
    let block = if std::env::var_os("POSIXLY_CORRECT").is_some() {
        512
    } else {
        1024
    };
    SizeFormat::Blocks {
        block,
        suffix: String::new(),
    }
}

/// du's threshold: a block-size-style number, negative to mean "at most"
/// (`-0` comes back as `AtMost(0)`, for the caller to refuse as du does).
fn parse_threshold(t: &str) -> Result<Threshold, BadSize> {
    let (negative, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t),
    };
    // Zero with or without a unit (`0`, `00`, `0k`): `SizeFormat` refuses a
    // zero block size, a threshold takes it.
    let number = &digits[..digits.bytes().position(|b| !b.is_ascii_digit()).unwrap_or(digits.len())];
    let unit = &digits[number.len()..];
    // du reads -t with fewer units than -B: no lowercase but k and m.
    if unit.chars().next().is_some_and(|c| !"kKmMGTPEZY".contains(c)) {
        return Err(if number.is_empty() {
            BadSize::Invalid
        } else {
            BadSize::InvalidSuffix
        });
    }
    if !number.is_empty()
        && number.bytes().all(|b| b == b'0')
        && (unit.is_empty() || SizeFormat::parse(&format!("1{unit}")).is_ok())
    {
        return Ok(if negative {
            Threshold::AtMost(0)
        } else {
            Threshold::AtLeast(0)
        });
    }
    let bytes = match SizeFormat::parse(digits)? {
        SizeFormat::Blocks { block, .. } => block,
        SizeFormat::Human { .. } => return Err(BadSize::Invalid),
    };
    Ok(if negative {
        Threshold::AtMost(bytes)
    } else {
        Threshold::AtLeast(bytes)
    })
}
