//! The steps of the command that one process and the ranks of an MPI job
//! share: which operands, statted how, bad usage, the grand total line,
//! the views after it.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::cli::UsageError;
use crate::messages::{self, error_text, quote, quotef, report};
use crate::run::Run;
use crate::settings::{Follow, Settings};

/// Bad usage: du's message, its hint, exit status 1.
pub fn usage_exit(e: UsageError) -> ! {
    if !e.message.is_empty() {
        report(&e.message);
    }
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
/// when the file cannot be opened.
pub fn read_operands(settings: &Settings) -> (Vec<Vec<u8>>, bool) {
    try_read_operands(settings).unwrap_or_else(|| std::process::exit(1))
}

/// [`read_operands`], `None` when the file cannot be opened (said already).
pub fn try_read_operands(settings: &Settings) -> Option<(Vec<Vec<u8>>, bool)> {
    let mut source = OperandSource::open(settings)?;
    let ops = std::iter::from_fn(|| source.next_name()).collect();
    Some((ops, source.failed()))
}

/// What reads a `--files0-from` list.
type List = BufReader<Box<dyn Read>>;

/// The operands one at a time, as du takes them: a `--files0-from` list
/// is read name by name as it arrives (a pipe that never ends, a list of
/// millions), never whole.
pub struct OperandSource {
    /// `--files0-from`: its name and what reads it.
    list: Option<(Vec<u8>, List)>,
    /// The command line's operands (or `.`).
    given: std::vec::IntoIter<Vec<u8>>,
    /// Names read from the list so far (du's messages number them).
    number: u64,
    failed: bool,
}

impl OperandSource {
    /// `None` when the list cannot be opened (said already).
    pub fn open(settings: &Settings) -> Option<OperandSource> {
        let Some(from) = &settings.files0_from else {
            let given = if settings.operands.is_empty() {
                vec![b".".to_vec()]
            } else {
                settings.operands.clone()
            };
            return Some(OperandSource {
                list: None,
                given: given.into_iter(),
                number: 0,
                failed: false,
            });
        };
        let reader: Box<dyn Read> = if from == b"-" {
            Box::new(std::io::stdin())
        } else {
            match std::fs::File::open(OsStr::from_bytes(from)) {
                Ok(file) => Box::new(file),
                Err(e) => {
                    report(&format!("cannot open {} for reading: {}", quote(from), error_text(&e)));
                    return None;
                }
            }
        };
        Some(OperandSource {
            list: Some((from.clone(), BufReader::new(reader))),
            given: Vec::new().into_iter(),
            number: 0,
            failed: false,
        })
    }

    /// The next name; a bad one is said and skipped.
    pub fn next_name(&mut self) -> Option<Vec<u8>> {
        let Some((from, reader)) = &mut self.list else {
            return self.given.next();
        };
        loop {
            let mut name = Vec::new();
            match reader.read_until(0, &mut name) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => {
                    report(&format!("{}: read error: {}", quotef(from), error_text(&e)));
                    self.failed = true;
                    self.list = None;
                    return None;
                }
            }
            self.number += 1;
            if name.last() == Some(&0) {
                name.pop();
            }
            if name.is_empty() {
                report(&format!(
                    "{}:{}: invalid zero-length file name",
                    quotef(from),
                    self.number
                ));
                self.failed = true;
            } else if from == b"-" && name == b"-" {
                report(&format!(
                    "when reading file names from stdin, no file name of {} allowed",
                    quote(&name)
                ));
                self.failed = true;
            } else {
                return Some(name);
            }
        }
    }

    /// Whether the next name may wait on a read from the list (it is not
    /// all buffered): what was found so far should be shown first.
    pub fn may_wait(&self) -> bool {
        self.list
            .as_ref()
            .is_some_and(|(_, reader)| !reader.buffer().contains(&0))
    }

    /// Whether a name was bad, or the list could not be read to its end.
    pub fn failed(&self) -> bool {
        self.failed
    }
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
    if let Some(mut json) = run.json() {
        json.finish(&mut |text| run.out.write(text));
    } else if settings.json {
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
