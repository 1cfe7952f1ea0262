//! The `fdu` command as a library: GNU du's output, byte for byte, from a
//! parallel scan; plus a tree view, JSON and a progress line. The binary
//! is `fn main() { fdu::run() }`; the library exists so that fuzz targets
//! and tests reach the parsers and the tree the way the command uses them.
//! It is not a stable API: to walk trees from Rust, use `fnd-walk`.
//!
//! It owns du's command line and its rules (what an entry counts for,
//! which hard link counts, du's lines and their order) and the tree of a
//! scan that its views (`--tree`, `--json`, `-i`, `--by`, `--diff`)
//! read, over the walk (`fnd-walk`).
//!
//! The modules are layers, each using only those below it; the
//! workspace's ARCHITECTURE.md lists them, bottom first, and
//! `tests/layers.rs` checks every import against that list.

pub mod browse;
pub mod cli;
pub mod command;
pub mod diff;
pub mod exclude;
pub mod export;
pub mod exports;
pub mod format;
pub mod fts;
pub mod getopt;
pub mod groups;
pub mod hardlinks;
pub mod interrupt;
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
pub mod report;
pub mod run;
pub mod scan;
pub mod settings;
pub mod tally;
pub mod tree;
pub mod usage;
pub mod view;
pub mod wire;

use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use cli::{Parsed, UsageError};
use command::{
    finish_views, identities, read_operands, stat_operands, trim_trailing_slashes, usage_exit, write_total,
    OperandSource,
};
use messages::{error_text, quote, report};
use output::Output;
use scan::Scan;
use settings::{Settings, TreeOptions};

/// The whole command: parse, scan (or read a saved tree), print.
pub fn run() -> ExitCode {
    output::hold_closed_stdout();
    let settings = match cli::parse(std::env::args_os().collect()) {
        Ok(Parsed::Run(s)) => *s,
        Ok(Parsed::Show(text)) => {
            // Through fdu's writer, not Rust's `Stdout`: a closed stdout is
            // du's "write error", not a success.
            let out = Output::stdout();
            let text = text.render();
            let text = if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                text.ansi().to_string()
            } else {
                text.to_string()
            };
            out.write(text.as_bytes());
            out.finish();
            return if out.failed() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
        Err(e) => usage_exit(e),
    };
    if settings.diff.is_some() {
        return diff::run(settings);
    }
    if !settings.by.is_empty() {
        return match settings.input_file.clone() {
            Some(file) => tally::run_export(settings, &file),
            None => tally::run(settings),
        };
    }
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
    let progress = Arc::<progress::Progress>::default();
    let ticker = if settings.progress {
        progress::Ticker::start(progress.clone())
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
/// could not be read at all: the reason was reported). Its rescans (`r`, a
/// failed delete) run here too, as often as asked in one process: the scan
/// is let go of whole when it returns. Public for the test that checks so.
#[doc(hidden)]
pub fn scan_tree(settings: &Settings, progress: &Arc<progress::Progress>) -> Option<tree::Root> {
    let (scan, _) = scan_operands(settings.clone(), progress.clone());
    scan.run.take_trees().into_iter().next()
}

/// Scan every operand as du does: their lines go to stdout (or their
/// trees to the run); true when one could not be read. A `--files0-from`
/// list is measured name by name as it is read.
fn scan_operands(settings: Settings, progress: Arc<progress::Progress>) -> (Arc<Scan>, bool) {
    let Some(mut source) = OperandSource::open(&settings) else {
        std::process::exit(1)
    };
    let streaming = settings.files0_from.is_some();
    // Operands on the command line are few: all are statted first, so
    // that each knows which others lie inside it.
    let mut given = Vec::new();
    if !streaming {
        given.extend(std::iter::from_fn(|| source.next_name()));
        given.iter_mut().for_each(trim_trailing_slashes);
    }
    let metas = stat_operands(&given, &settings);
    let ids = identities(&metas);
    let scan = match Scan::new(settings, Output::stdout(), &ids, progress) {
        Ok(s) if streaming => s.streaming_operands(),
        Ok(s) => s,
        Err(e) => usage_exit(UsageError {
            message: e,
            hint: false,
        }),
    };
    // The tree view needs the whole tree; `--json` alone is written as it is scanned.
    if scan.run.settings.json && scan.run.settings.tree.is_none() && !scan.run.settings.browse {
        scan.run.stream_json();
    }
    let scan = Arc::new(scan);
    let run = &scan.run;
    let measure = |i: usize, op: &[u8], meta: &command::OperandMeta| {
        let m = match meta {
            Ok(m) => m,
            Err(e) => {
                run.cannot_access(op, e.as_ref());
                return;
            }
        };
        let id = Some((m.dev, m.ino));
        if scan.excluded(op) || !scan.begin_operand(i, id) {
            return;
        }
        if m.is_dir() && ordered::applies(run) {
            ordered::scan_dir(&scan, op, m);
        } else if m.is_dir() {
            scan.scan_dir(op, m);
        } else {
            scan.scan_file(op, m);
        }
    };
    if streaming {
        let mut i = 0;
        loop {
            // Lines found so far are shown before waiting for more names.
            if source.may_wait() {
                run.out.flush();
            }
            let Some(mut op) = source.next_name() else { break };
            trim_trailing_slashes(&mut op);
            let meta = stat_operands(std::slice::from_ref(&op), &run.settings).pop();
            if let Some(meta) = meta {
                measure(i, &op, &meta);
            }
            i += 1;
            if run.out.closed() {
                break;
            }
        }
    } else {
        for (i, (op, meta)) in given.iter().zip(&metas).enumerate() {
            measure(i, op, meta);
            if run.out.closed() {
                break;
            }
        }
    }
    (scan, source.failed())
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
        // Not Rust's `Stdout`, which takes a closed fd 1 for a success.
        // SAFETY: fd 1 stays open (held by `hold_closed_stdout` if it was
        // closed), and the `File` is never dropped, so never closes it.
        let stdout = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(1) });
        export::write(settings, root, &mut output::PipeWriter(&*stdout))
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
        // The file keeps its mode (a new one gets 0666 less the umask, as
        // ncdu's would); a directory fdu cannot add the temporary file to
        // is no reason to fail: the file is then written in place, as
        // ncdu writes it.
        let old = std::fs::metadata(target).ok();
        let mode = old.as_ref().map(|m| m.permissions().mode() & 0o7777);
        let made = {
            let _held = interrupt::hold_signals();
            let made = tempfile::Builder::new()
                .permissions(std::fs::Permissions::from_mode(mode.unwrap_or(0o666)))
                .tempfile_in(dir);
            if let Ok(temp) = &made {
                interrupt::remove_on_signal(temp.path());
            }
            made
        };
        match made {
            Ok(mut temp) => {
                let result = (|| {
                    if let Some(old) = &old {
                        // Its owner too, where fdu may give it (as root).
                        let _ = std::os::unix::fs::fchown(temp.as_file(), Some(old.uid()), Some(old.gid()));
                    }
                    if let Some(mode) = mode {
                        temp.as_file()
                            .set_permissions(std::fs::Permissions::from_mode(mode))
                            .map_err(|e| format!("cannot write {}: {}", quote(file), error_text(&e)))?;
                    }
                    let complete = export::write(settings, root, &mut std::io::BufWriter::new(temp.as_file_mut()))?;
                    temp.persist(target)
                        .map_err(|e| format!("cannot write {}: {}", quote(file), error_text(&e.error)))?;
                    Ok(complete)
                })();
                interrupt::keep_temp();
                result
            }
            Err(e) if e.kind() != std::io::ErrorKind::PermissionDenied => {
                Err(format!("cannot create {}: {}", quote(file), error_text(&e)))
            }
            Err(_) => std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(target)
                .map_err(|e| format!("cannot write {}: {}", quote(file), error_text(&e)))
                .and_then(|out| export::write(settings, root, &mut std::io::BufWriter::new(out))),
        }
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
    let Some(export) = read_export(file, &settings) else {
        return ExitCode::from(1);
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

/// An export read as the settings count it; `None` when it cannot be
/// read (the reason was reported).
fn read_export(file: &[u8], settings: &Settings) -> Option<ncdu::Export> {
    let data = read_input(file).ok()?;
    match ncdu::read_counting(&data, settings.measure, settings.count_links) {
        Ok(export) => Some(export),
        Err(e) => {
            report(&format!("{}: not an export in ncdu's format: {e}", quote(file)));
            None
        }
    }
}

/// The browser's tree of an export (`-f FILE -i`); `None` when it cannot
/// be read (the reason was reported).
fn export_tree(settings: &Settings, _: &Arc<progress::Progress>) -> Option<tree::Root> {
    let export = read_export(settings.input_file.as_deref()?, settings)?;
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
