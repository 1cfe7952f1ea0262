//! The scan: one parallel walk per operand, added up per directory as it
//! goes (each directory's [`Node`] completes when its subtree is read).
//!
//! Each entry is statted once, relative to its directory's descriptor, on the
//! thread that read the directory: files by the engine's bulk metadata
//! (they reach the visitor in chunks), directories by the filter (it needs
//! their size before the engine opens them, and learns which ones could
//! not be opened when their record is left unclaimed).
//!
//! The walk runs in this process ([`Alone`]) or shared with other ranks of
//! an MPI job (`crate::ranks`): then a subdirectory handed to another rank
//! takes its parent's place in du's order and the way back for its total
//! with it (the hook's `export_state`, through `crate::relay`).

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use fnd_walk::{
    Alone, Chunk, Decision, DirHook, DirInfo, Error, Flow, ImportError, Metadata, MovedDir, Order, RawEntry, Visitor,
    WalkBuilder, Walker,
};

use crate::exclude::Excludes;
use crate::hardlinks::{self, Links, Sighting};
use crate::messages::{error_text, quote};
use crate::node::{self, file_position, join, Node};
use crate::operands::Operands;
use crate::output::Output;
use crate::progress::Progress;
use crate::relay::Relay;
use crate::run::Run;
use crate::settings::{Follow, Settings};
use crate::tree::{Detail, TreeBuilder};
use crate::usage::{self, Usage};

/// What one whole run's walks share: the run, and the few things that
/// outlive a single operand's walk. Held in an `Arc` by its walks' hooks
/// and visitors (the browser scans again and again in one process), and
/// the run by every node, which may complete after its walk.
pub struct Scan {
    pub run: Arc<Run>,
    pub progress: Arc<Progress>,
    pub(crate) excludes: Excludes,
    pub(crate) operands: Operands,
    /// Multiply-linked inodes already counted, across operands.
    pub(crate) links: Links,
    /// Directories already entered, with `-L` (links can reach one twice).
    pub(crate) dirs_seen: Mutex<HashSet<(u64, u64)>>,
    /// Device of the operand being walked (`-x`), and its inode.
    pub(crate) root_dev: AtomicU64,
    root_ino: AtomicU64,
    /// The operand being walked: its own usage and detail, for its node.
    root_own: Mutex<Option<(Usage, Detail)>>,
    /// Set once the operand's node has been made.
    root_entered: AtomicBool,
    /// The operand's file system is one where fts sorts big directories by inode.
    inode_sort: AtomicBool,
    /// Under MPI: where subdirectories handed to other ranks report back.
    relay: Option<Arc<Relay>>,
}

/// What still holds directories once this process's part of a walk is
/// over: the links of multiply-linked files, waiting for the verdict on
/// which one counts, and the directories the workers held last.
#[derive(Default)]
pub struct Leftovers {
    pub sightings: Vec<Sighting>,
    pub held: Vec<Arc<Node>>,
}

impl Scan {
    /// `ids`: each operand's (device, inode), `None` for one that cannot be statted.
    pub fn new(
        settings: Settings,
        out: Output,
        ids: &[Option<(u64, u64)>],
        progress: Arc<Progress>,
    ) -> Result<Scan, String> {
        Ok(Scan {
            excludes: Excludes::new(&settings.excludes)?,
            operands: Operands::new(ids, settings.count_links),
            links: Links::default(),
            dirs_seen: Mutex::new(HashSet::new()),
            progress,
            root_dev: AtomicU64::new(0),
            root_ino: AtomicU64::new(0),
            root_own: Mutex::new(None),
            root_entered: AtomicBool::new(false),
            inode_sort: AtomicBool::new(false),
            relay: None,
            run: Arc::new(Run::new(settings, out)),
        })
    }

    /// Operands come one at a time (`--files0-from`), none known ahead.
    pub fn streaming_operands(mut self) -> Scan {
        self.operands = Operands::streaming(self.run.settings.count_links);
        self
    }

    /// Subdirectories may be handed to other processes, through `relay`.
    pub fn with_relay(mut self, relay: Arc<Relay>) -> Scan {
        self.relay = Some(relay);
        self
    }

    /// The inodes counted so far.
    pub fn links(&self) -> &Links {
        &self.links
    }

    /// The operands, and which were met inside others.
    pub fn operands(&self) -> &Operands {
        &self.operands
    }

    /// Whether an operand is left out by `--exclude`.
    pub fn excluded(&self, path: &[u8]) -> bool {
        self.excludes.matches(path)
    }

    /// A subdirectory's metadata when du may enter it: it can be statted,
    /// is on the operand's file system under `-x`, and was not an earlier
    /// operand. What is left to the caller is a directory reached twice
    /// (see [`dedups_dirs`](Self::dedups_dirs)) and one inside itself: each
    /// scan keeps its ancestors and its order its own way. Both scans
    /// decide with this, on the reading threads.
    pub(crate) fn subdir_to_enter(&self, entry: &RawEntry<'_>) -> Option<Metadata> {
        let follow = self.run.settings.follow == Follow::All;
        let m = match entry.stat(follow) {
            Ok(m) => m,
            Err(e) => {
                self.run.cannot_access(&join(entry.parent_prefix, entry.name), Some(&e));
                return None;
            }
        };
        if self.run.settings.one_file_system && m.dev != self.root_dev.load(Relaxed) {
            return None;
        }
        if !self.operands.counts(m.dev, m.ino) {
            return None;
        }
        Some(m)
    }

    /// Whether a directory reached a second time is left out: following
    /// every link (`-L`), du enters each directory once, unless `-l`
    /// counts every link (then only a directory inside itself, a cycle,
    /// is left out, as without `-L`).
    pub(crate) fn dedups_dirs(&self) -> bool {
        let settings = &self.run.settings;
        settings.follow == Follow::All && !settings.count_links
    }

    /// Enter directory `id` under [`dedups_dirs`](Self::dedups_dirs):
    /// false if it was entered before.
    pub(crate) fn first_entry(&self, id: (u64, u64)) -> bool {
        self.dirs_seen.lock().unwrap_or_else(|e| e.into_inner()).insert(id)
    }

    /// Whether directory `id` was entered before (see [`first_entry`](Self::first_entry)).
    pub(crate) fn entered_before(&self, id: (u64, u64)) -> bool {
        self.dirs_seen.lock().unwrap_or_else(|e| e.into_inner()).contains(&id)
    }

    /// Start operand `index`: false when an earlier operand already covered it.
    pub fn begin_operand(&self, index: usize, id: Option<(u64, u64)>) -> bool {
        self.operands.begin(index, id)
    }

    /// An operand that is not a directory (or a symlink not followed).
    pub fn scan_file(&self, path: &[u8], m: &Metadata) {
        let run = &self.run;
        if hardlinks::counted_once(&run.settings, m.nlink) && !m.is_dir() && !self.links.first(m.dev, m.ino) {
            return;
        }
        self.count_file(path, m);
    }

    /// An operand that is not a directory, whose link counts: its line.
    pub fn count_file(&self, path: &[u8], m: &Metadata) {
        let run = &self.run;
        let usage = run.usage(m);
        let mut line = Vec::new();
        run.line(&mut line, usage, path);
        run.out.write(&line);
        self.progress.entries.fetch_add(1, Relaxed);
        let tree = run.settings.keeps_tree().then(TreeBuilder::default);
        run.add_operand(path, usage, tree, usage::detail(m));
    }

    /// Walk an operand that is a directory, in parallel, and print its lines.
    pub fn scan_dir(self: &Arc<Self>, path: &[u8], m: &Metadata) {
        let left = self.walk_dir(path, m, &Alone);
        // Nodes holding a multiply-linked file wait for the verdict on
        // which of its links came first; dropping the sightings lets them complete.
        drop(left.held);
        self.links.resolve(left.sightings);
        if !self.entered() {
            self.unread_operand(path);
        }
    }

    /// Walk an operand that is a directory through `walker`: what this
    /// process still holds when its part is over.
    pub fn walk_dir(self: &Arc<Self>, path: &[u8], m: &Metadata, walker: &impl Walker) -> Leftovers {
        let settings = &self.run.settings;
        self.root_dev.store(m.dev, Relaxed);
        self.root_ino.store(m.ino, Relaxed);
        *self.root_own.lock().unwrap_or_else(|e| e.into_inner()) = Some((self.run.usage(m), usage::detail(m)));
        self.root_entered.store(false, Relaxed);
        self.inode_sort
            .store(crate::fts::inode_sort_may_be_useful(path), Relaxed);
        if self.dedups_dirs() {
            self.first_entry((m.dev, m.ino));
        }
        let walk = WalkBuilder::new(Path::new(OsStr::from_bytes(path)))
            .order(Order::Parallel)
            .threads(settings.threads)
            .io_depth(settings.io_depth)
            .metadata(true)
            .min_depth(1)
            .follow_links(settings.follow == Follow::All)
            .hook(DuHook { scan: self.clone() });
        let mut left = Leftovers::default();
        walker.visit(
            walk,
            || DuVisitor::new(self.clone()),
            |v| {
                let (sightings, held) = v.finish();
                left.sightings.extend(sightings);
                left.held.extend(held);
            },
        );
        left
    }

    /// Whether this process read the operand walked last.
    pub fn entered(&self) -> bool {
        self.root_entered.load(Relaxed)
    }

    /// The operand could not be read: du still prints its own size.
    pub fn unread_operand(&self, path: &[u8]) {
        if let Some((own, mut detail)) = self.root_own.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let run = &self.run;
            let mut line = Vec::new();
            run.line(&mut line, own, path);
            run.out.write(&line);
            detail.flags |= Detail::READ_ERROR;
            run.add_operand(path, own, run.settings.keeps_tree().then(TreeBuilder::default), detail);
        }
    }
}

/// The engine hook: makes each directory's node, stats subdirectories,
/// applies `--exclude`, `-x` and the operand rules.
struct DuHook {
    scan: Arc<Scan>,
}

impl DirHook for DuHook {
    type State = Node;

    fn enter(&self, dir: &DirInfo<'_>, parent: Option<&Arc<Node>>) -> Option<Arc<Node>> {
        let scan = &*self.scan;
        if let Some(node) = parent.and_then(|p| p.arrive()) {
            scan.progress.entries.fetch_add(1, Relaxed);
            return Some(Arc::new(node));
        }
        let node = match parent.cloned() {
            None => {
                scan.root_entered.store(true, Relaxed);
                let (own, detail) = scan
                    .root_own
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
                    .unwrap_or_default();
                let id = (scan.root_dev.load(Relaxed), scan.root_ino.load(Relaxed));
                Node::operand_detailed(&scan.run, dir.path, own, detail, id, scan.inode_sort.load(Relaxed))
            }
            Some(parent) => {
                let name = dir.path.rsplit(|&b| b == b'/').next().unwrap_or(dir.path);
                let listed = parent.claim(name);
                let own = || {
                    fnd_walk::meta::stat_fd(dir.fd)
                        .map(|m| scan.run.usage(&m))
                        .unwrap_or_default()
                };
                Node::subdir(parent, dir.path, listed, own)
            }
        };
        scan.progress.entries.fetch_add(1, Relaxed);
        if scan.run.settings.browse {
            // Only the browser's progress screen shows a path.
            scan.progress.entered(dir.path);
        }
        Some(Arc::new(node))
    }

    fn decide(&self, node: Option<&Node>, entry: &RawEntry<'_>) -> Decision {
        let scan = &*self.scan;
        // Every directory gets a node (`enter`).
        let Some(node) = node else {
            return Decision::KEEP;
        };
        node.list_entry();
        if scan.excludes.any() && scan.excludes.matches(&join(entry.parent_prefix, entry.name)) {
            return Decision::SKIP;
        }
        if !entry.is_dir() {
            node.list_file();
            return Decision::KEEP;
        }
        let Some(m) = scan.subdir_to_enter(entry) else {
            return Decision::SKIP;
        };
        // A directory entered before: this walk has no order, so the first
        // read is the one counted (the totals are du's; which directory's
        // line holds a subtree reached twice is not). Entered before
        // includes the ancestors: a cycle is one too.
        if scan.dedups_dirs() {
            if !scan.first_entry((m.dev, m.ino)) {
                return Decision::SKIP;
            }
        } else if node.is_self_or_ancestor(m.dev, m.ino) {
            // A directory inside itself (a bind mount of an ancestor below
            // it, or a link to one under `-L`): du leaves it out, silently.
            return Decision::SKIP;
        }
        node.list_subdir(entry.name, (m.dev, m.ino), scan.run.usage(&m), usage::detail(&m));
        Decision {
            emit: false,
            descend: true,
        }
    }

    /// A stand-in stays: its subdirectory came from another rank already.
    fn export_state(&self, parent: &Arc<Node>, moved: &MovedDir<'_>) -> Option<Vec<u8>> {
        let relay = self.scan.relay.as_ref()?;
        if parent.is_stand_in() {
            return None;
        }
        relay.hand_over(parent, moved.name)
    }

    fn import_state(&self, bytes: &[u8], moved: &MovedDir<'_>) -> Result<Arc<Node>, ImportError> {
        let relay = self.scan.relay.as_ref().ok_or("fdu does not share this walk")?;
        let h = moved;
        let run = &self.scan.run;
        let arrival = relay.receive(run, bytes, h.parent_path, h.parent_depth, h.name)?;
        Ok(Arc::new(Node::stand_in(run, move || arrival.enter())))
    }
}

/// Per worker thread: adds up the chunks of files, collects multiply-linked
/// files for the end, buffers `-a` lines.
struct DuVisitor {
    scan: Arc<Scan>,
    node: Option<Arc<Node>>,
    /// Index of the next file in the current directory's listing.
    next_index: u32,
    lines: Vec<u8>,
    sightings: Vec<Sighting>,
    leaves: TreeBuilder,
}

impl DuVisitor {
    fn new(scan: Arc<Scan>) -> Self {
        DuVisitor {
            scan,
            node: None,
            next_index: 0,
            lines: Vec::new(),
            sightings: Vec::new(),
            leaves: TreeBuilder::default(),
        }
    }

    /// The links set aside, and the directory held last (its file lines
    /// written): whoever takes it lets it complete.
    fn finish(mut self) -> (Vec<Sighting>, Option<Arc<Node>>) {
        write_lines(&self.scan.run, &mut self.lines);
        (std::mem::take(&mut self.sightings), self.node.take())
    }
}

/// Let go of the current directory, its file lines printed before it.
/// (Of a visitor's fields, for `visit` borrows its scan meanwhile.)
fn let_go(node: &mut Option<Arc<Node>>, lines: &mut Vec<u8>, run: &Run) {
    if let Some(node) = node.take() {
        node::let_go(node, lines);
    }
    write_lines(run, lines);
}

fn write_lines(run: &Run, lines: &mut Vec<u8>) {
    if !lines.is_empty() {
        run.out.write(lines);
        lines.clear();
    }
}

impl Visitor for DuVisitor {
    fn visit(&mut self, chunk: &mut Chunk) -> Flow {
        let scan = &*self.scan;
        let run = &scan.run;
        let Some(state) = chunk.state::<Node>() else {
            return Flow::Continue;
        };
        let same = self.node.as_ref().is_some_and(|n| std::ptr::eq(Arc::as_ptr(n), state));
        if !same {
            // Chunks of one directory come in order on the thread that reads
            // it; holding its node keeps the address from being reused.
            let_go(&mut self.node, &mut self.lines, run);
            self.node = chunk.shared_state::<Node>();
            self.next_index = 0;
        }
        let Some(node) = self.node.clone() else {
            return Flow::Continue;
        };
        let settings = &run.settings;
        let print_files = settings.all && chunk.depth() <= settings.max_depth;
        let link_all = settings.follow == Follow::All;
        let keeps_tree = node.keeps_tree();
        let detailed = node.detailed();
        let mut sum = Usage::NONE;
        let mut disk = 0;
        for entry in chunk.iter() {
            let index = self.next_index;
            self.next_index += 1;
            let Some(m) = entry.cached_metadata() else {
                let mut path = Vec::new();
                entry.write_path(&mut path);
                let err = entry
                    .metadata()
                    .err()
                    .unwrap_or_else(|| std::io::Error::other("stat failed"));
                run.cannot_access(&path, Some(&err));
                continue;
            };
            if link_all && m.file_type().is_symlink() {
                // With -L a link whose target is gone is an error, and not counted.
                let mut path = Vec::new();
                entry.write_path(&mut path);
                run.cannot_access(&path, None);
                continue;
            }
            if !scan.operands.counts(m.dev, m.ino) {
                continue;
            }
            let usage = run.usage(m);
            disk += m.blocks * 512;
            if hardlinks::counted_once(settings, m.nlink) {
                self.sightings.push(Sighting {
                    dev: m.dev,
                    ino: m.ino,
                    position: file_position(index),
                    node: node.clone(),
                    usage,
                    name: (print_files || keeps_tree).then(|| entry.name_bytes().into()),
                    print: print_files,
                    detail: usage::detail(m),
                });
                continue;
            }
            sum = sum.plus(usage);
            if print_files {
                let mut path = Vec::with_capacity(chunk.prefix().len() + entry.name_bytes().len());
                entry.write_path(&mut path);
                run.line(&mut self.lines, usage, &path);
            }
            if keeps_tree {
                let detail = detailed.then(|| usage::detail(m));
                self.leaves
                    .entry(entry.name_bytes(), usage.amount, TreeBuilder::default(), detail);
            }
        }
        node.add(sum);
        if keeps_tree {
            node.append_leaves(&mut self.leaves);
        }
        scan.progress.entries.fetch_add(chunk.len() as u64, Relaxed);
        scan.progress.bytes.fetch_add(disk, Relaxed);
        // Early is always safe: the directory cannot complete while held.
        if self.lines.len() >= 64 * 1024 {
            write_lines(run, &mut self.lines);
        }
        if run.out.closed() {
            return Flow::Stop;
        }
        Flow::Continue
    }

    fn error(&mut self, error: Error) -> Flow {
        if let fnd_walk::ErrorKind::Loop { .. } = error.kind() {
            // With -L a directory reached twice is counted once, silently (as du does).
            return Flow::Continue;
        }
        let path = error.path().as_os_str().as_bytes();
        // A link -L cannot follow is an entry du cannot stat, not a directory.
        let what = match error.kind() {
            fnd_walk::ErrorKind::Follow(_) => "cannot access",
            _ => "cannot read directory",
        };
        self.scan
            .run
            .error(&format!("{what} {}: {}", quote(path), error_text(&error.io_error())));
        Flow::Continue
    }
}
