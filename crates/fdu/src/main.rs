//! fdu: GNU du's output, byte for byte, from a parallel scan; plus a tree
//! view, JSON and a progress line.

mod cli;
mod format;
mod hardlinks;
mod json;
mod output;
mod progress;
mod scan;
mod tree;

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::ExitCode;

use cli::{Follow, Measure, Options, UsageError};
use scan::Scan;

/// Print `fdu: MESSAGE` on stderr (a stderr that cannot be written is no reason to panic).
pub fn report(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "fdu: {message}");
}

/// An I/O error as coreutils words it ("No such file or directory"), without Rust's "(os error 2)".
pub fn error_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Bad usage: du's message, its hint, exit status 1.
pub fn usage_exit(e: UsageError) -> ! {
    report(&e.message);
    if e.hint {
        use std::io::Write;
        let _ = writeln!(std::io::stderr().lock(), "Try 'fdu --help' for more information.");
    }
    std::process::exit(1)
}

fn main() -> ExitCode {
    // Started by mpirun or srun as one of several tasks, a build without
    // MPI would measure and print the whole tree once per task.
    if let Some(launched) = fnd_mpi::launch::launched() {
        if launched.speaks() {
            report(&format!(
                "started as {} MPI tasks, but this build has no MPI support; rebuild with --features mpi",
                launched.tasks
            ));
        }
        return ExitCode::from(2);
    }
    let opts = match cli::parse(std::env::args_os().collect()) {
        Ok(o) => o,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            let text = e.to_string();
            let first = text
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ")
                .to_string();
            usage_exit(UsageError {
                message: first,
                hint: true,
            });
        }
    };
    if let Some(file) = &opts.from_json {
        return show_saved_tree(file, &opts);
    }
    let (mut operands, mut failed) = operands(&opts);
    operands.iter_mut().for_each(trim_trailing_slashes);
    let follow_operands = opts.follow != Follow::Never;
    // Err(None): a dangling symlink that was to be followed (du says only "cannot access").
    let metas: Vec<Result<fnd_walk::Metadata, Option<std::io::Error>>> = operands
        .iter()
        .map(|op| {
            let path = Path::new(OsStr::from_bytes(op));
            fnd_walk::meta::stat_path(path, follow_operands).map_err(|e| match fnd_walk::meta::stat_path(path, false) {
                Ok(_) if follow_operands => None,
                _ => Some(e),
            })
        })
        .collect();
    let ids: Vec<Option<(u64, u64)>> = metas.iter().map(|m| m.as_ref().ok().map(|m| (m.dev, m.ino))).collect();
    let scan: &'static Scan = match Scan::new(opts, &ids) {
        Ok(s) => Box::leak(Box::new(s)),
        Err(e) => usage_exit(UsageError {
            message: e,
            hint: false,
        }),
    };
    let ticker = if scan.opts.progress {
        progress::Ticker::start(&scan.progress)
    } else {
        None
    };
    for (i, (op, meta)) in operands.iter().zip(&metas).enumerate() {
        let m = match meta {
            Ok(m) => m,
            Err(e) => {
                scan.cannot_access(op, e.as_ref());
                continue;
            }
        };
        if scan.excluded(op) || !scan.begin_operand(i, ids[i]) {
            continue;
        }
        if m.is_dir() {
            scan.scan_dir(op, m);
        } else {
            scan.scan_file(op, m);
        }
        if scan.out.closed() {
            break;
        }
    }
    if scan.opts.total {
        let mut line = Vec::new();
        scan.line(&mut line, scan.grand_total(), b"total");
        scan.out.write(&line);
    }
    if let Some(t) = ticker {
        t.stop();
    }
    finish_views(scan);
    scan.out.finish();
    failed |= scan.failed();
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// fts keeps one trailing slash of several (`d//` is walked and printed as `d/`).
fn trim_trailing_slashes(path: &mut Vec<u8>) {
    if path.len() > 2 && path.ends_with(b"/") {
        while path.len() > 1 && path[path.len() - 2] == b'/' {
            path.pop();
        }
    }
}

/// The operands: from the command line, from `--files0-from`, or `.`.
fn operands(opts: &Options) -> (Vec<Vec<u8>>, bool) {
    let Some(from) = &opts.files0_from else {
        let ops = if opts.operands.is_empty() {
            vec![b".".to_vec()]
        } else {
            opts.operands.clone()
        };
        return (ops, false);
    };
    let mut data = Vec::new();
    let read = if from == b"-" {
        std::io::stdin().read_to_end(&mut data)
    } else {
        std::fs::File::open(OsStr::from_bytes(from)).and_then(|mut f| f.read_to_end(&mut data))
    };
    if let Err(e) = read {
        report(&format!(
            "cannot open {} for reading: {}",
            format::quote(from),
            error_text(&e)
        ));
        std::process::exit(1);
    }
    let mut failed = false;
    let mut ops = Vec::new();
    let body = data.strip_suffix(b"\0").unwrap_or(&data);
    if body.is_empty() {
        return (ops, false);
    }
    for (n, name) in body.split(|&b| b == 0).enumerate() {
        if name.is_empty() {
            report(&format!(
                "{}:{}: invalid zero-length file name",
                String::from_utf8_lossy(from),
                n + 1
            ));
            failed = true;
        } else {
            ops.push(name.to_vec());
        }
    }
    (ops, failed)
}

fn measure_name(m: Measure) -> &'static str {
    match m {
        Measure::Disk => "disk",
        Measure::Apparent => "apparent",
        Measure::Inodes => "inodes",
    }
}

/// The size format of the tree view: du's when it is human-readable, else `-h`'s.
fn tree_size(opts: &Options) -> format::SizeFormat {
    match (&opts.size, opts.measure) {
        (f @ format::SizeFormat::Human { .. }, _) => f.clone(),
        (_, Measure::Inodes) => format::SizeFormat::Blocks {
            block: 1,
            suffix: String::new(),
        },
        _ => format::SizeFormat::Human { base: 1024 },
    }
}

/// `--tree` and `--json`, after the du lines.
fn finish_views(scan: &Scan) {
    let trees = std::mem::take(&mut *scan.trees.lock().unwrap_or_else(|e| e.into_inner()));
    let mut out = Vec::new();
    if scan.opts.json {
        json::write(&trees, measure_name(scan.opts.measure), &mut out);
    }
    if let Some(t) = &scan.opts.tree {
        for root in &trees {
            tree::render(root, t, &tree_size(&scan.opts), &mut out);
        }
    }
    scan.out.write(&out);
}

fn show_saved_tree(file: &[u8], opts: &Options) -> ExitCode {
    let mut data = Vec::new();
    let read = if file == b"-" {
        std::io::stdin().read_to_end(&mut data).map(drop)
    } else {
        std::fs::read(OsStr::from_bytes(file)).map(|d| data = d)
    };
    if let Err(e) = read {
        report(&format!("cannot read {}: {}", format::quote(file), error_text(&e)));
        return ExitCode::from(1);
    }
    let roots = match json::read(&data) {
        Ok(r) => r,
        Err(e) => {
            report(&format!("{}: not a tree written by --json: {e}", format::quote(file)));
            return ExitCode::from(1);
        }
    };
    let (_, rows) = tree::terminal_size();
    let view = opts.tree.unwrap_or(cli::TreeOptions {
        depth: 4,
        lines: rows.saturating_sub(4).max(10),
        bar_width: 20,
    });
    let mut out = Vec::new();
    for root in &roots {
        tree::render(root, &view, &tree_size(opts), &mut out);
    }
    let output = output::Output::new();
    output.write(&out);
    output.finish();
    if output.failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
