//! The `fdu` command as a library: GNU du's output, byte for byte, from a
//! parallel scan; plus a tree view, JSON and a progress line. The binary
//! is `fn main() { fdu::run() }`; the library exists so that fuzz targets
//! and tests reach the parsers and the tree the way the command uses them.
//! It is not a stable API: to walk trees from Rust, use `fnd-walk`.
//!
//! The modules, bottom first (each uses only those above it in this list;
//! `tests/layers.rs` checks it):
//! - plain data and leaf helpers: [`settings`] (what a run is asked to do),
//!   [`messages`] (stderr), [`tree`] (the scanned tree), [`json_stream`]
//!   (JSON events at any depth), [`exclude`], [`operands`], [`progress`];
//! - [`usage`] (what an entry counts for), [`output`] (stdout);
//! - [`format`](mod@format) (how sizes and times are spelled), [`wire`]
//!   (the messages between the ranks of an MPI job);
//! - the faces: [`cli`] (command line → settings), [`view`] (`--tree`),
//!   [`json`] (`--json`, `--from-json`), [`run`](mod@run) (what one run shares:
//!   settings, du's lines, totals);
//! - [`ncdu`]: an export in ncdu's format (`-f`), read and replayed as du's
//!   lines; [`command`]: the steps one process and the ranks of an MPI job
//!   share (operands, bad usage, the total line);
//! - [`node`]: one directory's totals and its completion;
//! - [`hardlinks`]: which link of a file counts; [`relay`]: subtrees read
//!   by other ranks of an MPI job, and their totals coming back;
//! - [`scan`]: the walk that feeds them; [`export`]: the walk that writes
//!   ncdu's export format (`-o`);
//! - `ranks` (feature `mpi`): the whole command as one rank of an MPI job;
//!   [`browse`]: `-i`, the scanned tree in a full-screen browser;
//!   [`ordered`]: du's lines in du's own order, from the walk's ordered
//!   mode (one consumer adds up what every core read).

pub mod browse;
pub mod cli;
pub mod command;
pub mod exclude;
pub mod export;
pub mod format;
pub mod hardlinks;
pub mod json;
pub mod json_stream;
pub mod messages;
pub mod ncdu;
pub mod node;
pub mod operands;
pub mod ordered;
pub mod output;
pub mod progress;
#[cfg(feature = "mpi")]
pub mod ranks;
pub mod relay;
pub mod run;
pub mod scan;
pub mod settings;
pub mod tree;
pub mod usage;
pub mod view;
pub mod wire;

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::ExitCode;

use cli::{Parsed, UsageError};
use command::{finish_views, identities, read_operands, stat_operands, trim_trailing_slashes, usage_exit, write_total};
use messages::{error_text, quote, report};
use output::Output;
use scan::Scan;
use settings::{Settings, TreeOptions};

/// The whole command: parse, scan (or read a saved tree), print.
pub fn run() -> ExitCode {
    let settings = match cli::parse(std::env::args_os().collect()) {
        Ok(Parsed::Run(s)) => *s,
        Ok(Parsed::Show(text)) => {
            let _ = text.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => usage_exit(e),
    };
    if let Some(file) = &settings.from_json {
        return show_saved_tree(file, &settings);
    }
    if let Some(file) = settings.input_file.clone() {
        return show_export(&file, settings);
    }
    if let Some(file) = settings.export_file.clone() {
        return write_export(&file, &settings);
    }
    if settings.browse {
        return browse::run(settings, scan_tree);
    }
    let progress: &'static progress::Progress = Box::leak(Box::default());
    let ticker = if settings.progress {
        progress::Ticker::start(progress)
    } else {
        None
    };
    let (scan, mut failed) = scan_operands(settings, progress);
    let run = &scan.run;
    write_total(run);
    if let Some(t) = ticker {
        t.stop();
    }
    finish_views(run);
    run.out.finish();
    failed |= run.failed();
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The browser's scans: the one operand's detailed tree (`None` when it
/// could not be read at all: the reason was reported).
fn scan_tree(settings: &Settings, progress: &'static progress::Progress) -> Option<tree::Root> {
    let (scan, _) = scan_operands(settings.clone(), progress);
    scan.run.take_trees().into_iter().next()
}

/// Scan every operand as du does: their lines go to stdout (or their
/// trees to the run); true when one could not be read.
fn scan_operands(settings: Settings, progress: &'static progress::Progress) -> (&'static Scan, bool) {
    let (mut operands, failed) = read_operands(&settings);
    operands.iter_mut().for_each(trim_trailing_slashes);
    let metas = stat_operands(&operands, &settings);
    let ids = identities(&metas);
    let scan: &'static Scan = match Scan::new(settings, Output::stdout(), &ids, progress) {
        Ok(s) => Box::leak(Box::new(s)),
        Err(e) => usage_exit(UsageError {
            message: e,
            hint: false,
        }),
    };
    let run = &scan.run;
    for (i, (op, meta)) in operands.iter().zip(&metas).enumerate() {
        let m = match meta {
            Ok(m) => m,
            Err(e) => {
                run.cannot_access(op, e.as_ref());
                continue;
            }
        };
        if scan.excluded(op) || !scan.begin_operand(i, ids[i]) {
            continue;
        }
        if m.is_dir() && ordered::applies(&run.settings) {
            ordered::scan_dir(scan, op, m);
        } else if m.is_dir() {
            scan.scan_dir(op, m);
        } else {
            scan.scan_file(op, m);
        }
        if run.out.closed() {
            break;
        }
    }
    (scan, failed)
}

/// `-o FILE`: the one operand's tree in ncdu's format, to a file that
/// appears whole (written beside it, then renamed), to stdout, or to a
/// device or fifo as it is.
fn write_export(file: &[u8], settings: &Settings) -> ExitCode {
    let (operands, failed) = read_operands(settings);
    if failed {
        return ExitCode::from(1);
    }
    let root: &[u8] = match operands.as_slice() {
        [] => b".",
        [one] => one,
        _ => usage_exit(UsageError {
            message: "an export in ncdu's format holds one directory: give -o one FILE operand".into(),
            hint: true,
        }),
    };
    let target = Path::new(OsStr::from_bytes(file));
    // A file is written beside itself and renamed into place (through a
    // symlink, beside what it names); anything else that exists (a
    // device such as /dev/null, a fifo) is written to as it is: renamed
    // over, it would be replaced by a file.
    let existing = std::fs::canonicalize(target).ok();
    let in_place = existing
        .as_ref()
        .is_some_and(|path| std::fs::metadata(path).is_ok_and(|m| !m.is_file()));
    let result = if file == b"-" {
        export::write(settings, root, &mut std::io::stdout())
    } else if in_place {
        std::fs::OpenOptions::new()
            .write(true)
            .open(target)
            .map_err(|e| format!("cannot write {}: {}", quote(file), error_text(&e)))
            .and_then(|out| export::write(settings, root, &mut std::io::BufWriter::new(out)))
    } else {
        let target = existing.as_deref().unwrap_or(target);
        let dir = target
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        tempfile::NamedTempFile::new_in(dir)
            .map_err(|e| format!("cannot create {}: {}", quote(file), error_text(&e)))
            .and_then(|mut temp| {
                let complete = export::write(settings, root, &mut std::io::BufWriter::new(temp.as_file_mut()))?;
                temp.persist(target)
                    .map_err(|e| format!("cannot write {}: {}", quote(file), error_text(&e.error)))?;
                Ok(complete)
            })
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(message) => {
            report(&message);
            ExitCode::from(1)
        }
    }
}

/// A whole file (`-`: stdin), or du's message.
fn read_input(file: &[u8]) -> Result<Vec<u8>, ExitCode> {
    let mut data = Vec::new();
    let read = if file == b"-" {
        std::io::stdin().read_to_end(&mut data).map(drop)
    } else {
        std::fs::read(OsStr::from_bytes(file)).map(|d| data = d)
    };
    match read {
        Ok(()) => Ok(data),
        Err(e) => {
            report(&format!("cannot read {}: {}", quote(file), error_text(&e)));
            Err(ExitCode::from(1))
        }
    }
}

/// `-f FILE`: du's lines (or the tree view, or JSON) of an export in
/// ncdu's format, as if the tree had been scanned.
fn show_export(file: &[u8], settings: Settings) -> ExitCode {
    if settings.browse {
        return browse::run(settings, export_tree);
    }
    let data = match read_input(file) {
        Ok(data) => data,
        Err(code) => return code,
    };
    let export = match ncdu::read(&data, settings.measure) {
        Ok(export) => export,
        Err(e) => {
            report(&format!("{}: not an export in ncdu's format: {e}", quote(file)));
            return ExitCode::from(1);
        }
    };
    let run = run::Run::new(settings, Output::stdout());
    export.replay(&run);
    write_total(&run);
    finish_views(&run);
    run.out.finish();
    if run.out.failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The browser's tree of an export (`-f FILE -i`); `None` when it cannot
/// be read (the reason was reported).
fn export_tree(settings: &Settings, _: &'static progress::Progress) -> Option<tree::Root> {
    let file = settings.input_file.as_deref()?;
    let data = read_input(file).ok()?;
    let export = match ncdu::read(&data, settings.measure) {
        Ok(export) => export,
        Err(e) => {
            report(&format!("{}: not an export in ncdu's format: {e}", quote(file)));
            return None;
        }
    };
    let run = run::Run::new(settings.clone(), Output::stdout());
    export.replay(&run);
    run.take_trees().into_iter().next()
}

fn show_saved_tree(file: &[u8], settings: &Settings) -> ExitCode {
    let data = match read_input(file) {
        Ok(data) => data,
        Err(code) => return code,
    };
    let roots = match json::read(&data) {
        Ok(r) => r,
        Err(e) => {
            report(&format!("{}: not a tree written by --json: {e}", quote(file)));
            return ExitCode::from(1);
        }
    };
    let (_, rows) = output::terminal_size();
    let view = settings.tree.unwrap_or(TreeOptions {
        depth: 4,
        lines: rows.saturating_sub(4).max(10),
        bar_width: 20,
    });
    let size = view::size_format(&settings.size, settings.measure);
    let mut out = Vec::new();
    for root in &roots {
        view::render(root, &view, &size, &mut out);
    }
    let output = Output::stdout();
    output.write(&out);
    output.finish();
    if output.failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
