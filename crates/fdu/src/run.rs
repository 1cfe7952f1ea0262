//! What every part of one run shares: its settings, du's lines on stdout,
//! messages on stderr (and whether any was an error), and what the
//! operands add up to (the grand total, and their trees for the views).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, OnceLock};

use fnd_walk::Metadata;

use crate::json::Stream;
use crate::messages::{error_text, quote, report};
use crate::output::Output;
use crate::settings::Settings;
use crate::tree::{Detail, Root, TreeBuilder};
use crate::usage::{Newest, Stamp, Usage};

pub struct Run {
    pub settings: Settings,
    pub out: Output,
    tz: jiff::tz::TimeZone,
    failed: AtomicBool,
    grand_total: AtomicU64,
    grand_newest: Newest,
    /// Each operand's tree, for `--tree` and `--json`.
    trees: Mutex<Vec<Root>>,
    /// `--json` written as the operands are scanned (see
    /// [`Run::stream_json`]); unset: it is written from their trees.
    json: OnceLock<Mutex<Stream>>,
}

impl Run {
    pub fn new(settings: Settings, out: Output) -> Run {
        Run {
            settings,
            out,
            tz: jiff::tz::TimeZone::system(),
            failed: AtomicBool::new(false),
            grand_total: AtomicU64::new(0),
            grand_newest: Newest::new(Stamp::MIN),
            trees: Mutex::new(Vec::new()),
            json: OnceLock::new(),
        }
    }

    /// `--json` is written while the scan runs, from the ordered walk, and
    /// no tree is kept for it: an operand that is a directory is walked by
    /// `crate::ordered`, which writes its entries as they come.
    /// Set before the scan starts (the run is shared with it from then on).
    pub fn stream_json(&self) {
        let _ = self.json.set(Mutex::new(Stream::new(self.settings.measure)));
    }

    /// The `--json` being written as the scan goes, if it is.
    pub fn json(&self) -> Option<MutexGuard<'_, Stream>> {
        self.json.get().map(|j| j.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The root written last to `json` is complete: out it goes.
    pub fn end_json_root(&self, json: &mut Stream) {
        if let Err(e) = json.end_root(&mut |text| self.out.write(text)) {
            self.error(&format!("--json: a temporary file: {}", error_text(&e)));
        }
    }

    /// An entry's usage under this run's settings.
    pub fn usage(&self, m: &Metadata) -> Usage {
        let time = self.settings.time.as_ref().map(|t| t.0);
        Usage::of(m, self.settings.measure, time)
    }

    /// Append du's line for one entry (if the threshold lets it through).
    pub fn line(&self, out: &mut Vec<u8>, usage: Usage, path: &[u8]) {
        let settings = &self.settings;
        // The tree view and JSON replace du's lines.
        if settings.keeps_tree() || !settings.threshold.shows(usage.amount) {
            return;
        }
        settings.size.write(usage.amount, out);
        out.push(b'\t');
        if let Some((_, format)) = &settings.time {
            format.write(usage.stamp, &self.tz, out);
            out.push(b'\t');
        }
        out.extend_from_slice(path);
        out.push(if settings.null { 0 } else { b'\n' });
    }

    /// Print `fdu: MESSAGE` and remember that the run failed.
    pub fn error(&self, message: &str) {
        self.failed.store(true, Relaxed);
        report(message);
    }

    /// A file that could not be statted (`None`: a symlink to follow that
    /// leads nowhere, for which du gives no reason).
    pub fn cannot_access(&self, path: &[u8], err: Option<&std::io::Error>) {
        // Only an operand can be empty, and du has words of its own for it.
        if path.is_empty() {
            return self.error("invalid zero-length file name");
        }
        match err {
            Some(err) => self.error(&format!("cannot access {}: {}", quote(path), error_text(err))),
            None => self.error(&format!("cannot access {}", quote(path))),
        }
    }

    /// Whether an error was reported or stdout could not be written.
    pub fn failed(&self) -> bool {
        self.failed.load(Relaxed) || self.out.failed()
    }

    /// An operand is done: its total joins the grand total, its tree the
    /// views' (`own`: the operand's own detail, for a detailed tree).
    pub fn add_operand(&self, name: &[u8], total: Usage, tree: Option<TreeBuilder>, own: Detail) {
        self.grand_total.fetch_add(total.amount, Relaxed);
        if self.settings.time.is_some() {
            self.grand_newest.offer(total.stamp);
        }
        // An operand without entries (a file, a directory that could not
        // be read): those that have them wrote themselves (and no tree).
        if let (Some(_), Some(mut json)) = (&tree, tree.as_ref().and_then(|_| self.json())) {
            json.enter(name);
            json.leave(total.amount);
            return self.end_json_root(&mut json);
        }
        if let Some(kids) = tree {
            let (node, detail) = kids.into_detailed_node(total.amount, own);
            let mut root = Root::new(name, node);
            if self.settings.browse {
                root.detail = detail;
            }
            self.trees.lock().unwrap_or_else(|e| e.into_inner()).push(root);
        }
    }

    /// An operand's tree that another process completed (its total is
    /// that process's to add).
    pub fn add_root(&self, root: Root) {
        self.trees.lock().unwrap_or_else(|e| e.into_inner()).push(root);
    }

    /// What all operands added up to (`-c`).
    pub fn grand_total(&self) -> Usage {
        Usage {
            amount: self.grand_total.load(Relaxed),
            stamp: self.grand_newest.get(),
        }
    }

    /// The operands' trees, in the order they were done.
    pub fn take_trees(&self) -> Vec<Root> {
        std::mem::take(&mut *self.trees.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
