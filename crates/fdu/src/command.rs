//! The steps of the command that one process and the ranks of an MPI job
//! share: which operands, statted how, bad usage, the grand total line,
//! the views after it.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::cli::UsageError;
use crate::messages::{self, error_text, quote, report};
use crate::run::Run;
use crate::settings::{Follow, Settings};

/// Bad usage: du's message, its hint, exit status 1.
pub fn usage_exit(e: UsageError) -> ! {
    report(&e.message);
    if e.hint {
        messages::usage_hint();
    }
    std::process::exit(1)
}

/// What an operand is, or why it cannot be statted (`Err(None)`: a
/// dangling symlink that was to be followed, for which du says only
/// "cannot access").
pub type OperandMeta = Result<fnd_walk::Metadata, Option<std::io::Error>>;

/// Each operand statted, following it if the settings say so.
pub fn stat_operands(operands: &[Vec<u8>], settings: &Settings) -> Vec<OperandMeta> {
    let follow_operands = settings.follow != Follow::Never;
    operands
        .iter()
        .map(|op| {
            let path = Path::new(OsStr::from_bytes(op));
            fnd_walk::meta::stat_path(path, follow_operands).map_err(|e| match fnd_walk::meta::stat_path(path, false) {
                Ok(_) if follow_operands => None,
                _ => Some(e),
            })
        })
        .collect()
}

/// Each operand's device and inode, if it could be statted.
pub fn identities(metas: &[OperandMeta]) -> Vec<Option<(u64, u64)>> {
    metas.iter().map(|m| m.as_ref().ok().map(|m| (m.dev, m.ino))).collect()
}

/// fts keeps one trailing slash of several (`d//` is walked and printed as `d/`).
pub fn trim_trailing_slashes(path: &mut Vec<u8>) {
    if path.len() > 2 && path.ends_with(b"/") {
        while path.len() > 1 && path[path.len() - 2] == b'/' {
            path.pop();
        }
    }
}

/// The operands: from the command line, from `--files0-from`, or `.`;
/// and whether a name was bad (said already). Exits with du's status
/// when the file cannot be read.
pub fn read_operands(settings: &Settings) -> (Vec<Vec<u8>>, bool) {
    try_read_operands(settings).unwrap_or_else(|| std::process::exit(1))
}

/// [`read_operands`], `None` when the file cannot be read (said already).
pub fn try_read_operands(settings: &Settings) -> Option<(Vec<Vec<u8>>, bool)> {
    let Some(from) = &settings.files0_from else {
        let ops = if settings.operands.is_empty() {
            vec![b".".to_vec()]
        } else {
            settings.operands.clone()
        };
        return Some((ops, false));
    };
    let mut data = Vec::new();
    let read = if from == b"-" {
        std::io::stdin().read_to_end(&mut data)
    } else {
        std::fs::File::open(OsStr::from_bytes(from)).and_then(|mut f| f.read_to_end(&mut data))
    };
    if let Err(e) = read {
        report(&format!("cannot open {} for reading: {}", quote(from), error_text(&e)));
        return None;
    }
    let mut failed = false;
    let mut ops = Vec::new();
    let body = data.strip_suffix(b"\0").unwrap_or(&data);
    if body.is_empty() {
        return Some((ops, false));
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
    Some((ops, failed))
}

/// `-c`: du's last line, the grand total.
pub fn write_total(run: &Run) {
    if run.settings.total {
        let mut line = Vec::new();
        run.line(&mut line, run.grand_total(), b"total");
        run.out.write(&line);
    }
}

/// `--tree` and `--json`, after the du lines.
pub fn finish_views(run: &Run) {
    let settings = &run.settings;
    let trees = run.take_trees();
    let mut out = Vec::new();
    if settings.json {
        crate::json::write(&trees, settings.measure, &mut out);
    }
    if let Some(t) = &settings.tree {
        let size = crate::view::size_format(&settings.size, settings.measure);
        for root in &trees {
            crate::view::render(root, t, &size, &mut out);
        }
    }
    run.out.write(&out);
}
