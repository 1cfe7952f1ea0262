//! The scan: one parallel walk per operand, added up per directory as it
//! goes.
//!
//! Every directory gets a [`Node`], attached to the engine's directory
//! through the filter hook ([`EntryFilter::enter`]); a child holds its
//! parent's node, so a node is dropped exactly when its whole subtree has
//! been read. That drop is when its line is printed and its total added to
//! the parent: no global lock per entry, no second pass, and with `-s` no
//! tree is kept (only the directories still being read are in memory).
//!
//! Each entry is statted once, relative to its directory's descriptor, on the
//! thread that read the directory: files by the engine's bulk metadata
//! (they reach the visitor in chunks), directories by the filter (it needs
//! their size before the engine opens them, and learns which ones could
//! not be opened when their record is left unclaimed).

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use fnd_walk::{
    Chunk, Decision, DirInfo, EntryFilter, Error, FilterState, Flow, Metadata, Order, RawEntry, Visitor, WalkBuilder,
};

use crate::cli::{Follow, Measure, Options, TimeKind};
use crate::hardlinks::{self, Sighting};
use crate::output::Output;
use crate::tree::{Root, TreeBuilder};

/// Entries and bytes seen so far, for the progress line.
#[derive(Default)]
pub struct Progress {
    pub entries: AtomicU64,
    pub bytes: AtomicU64,
}

/// An operand's identity, for du's rule that with several operands nothing
/// is counted twice: a later operand met inside an earlier one is skipped,
/// an earlier one met inside a later one is not counted again.
struct Operand {
    seen: AtomicBool,
}

/// What one whole run shares: options, output, and the few things that
/// outlive a single operand's walk.
pub struct Scan {
    pub opts: Options,
    pub out: Output,
    pub progress: Progress,
    failed: AtomicBool,
    excludes: Option<globset::GlobSet>,
    tz: jiff::tz::TimeZone,
    /// Device of the operand being walked (`-x`).
    root_dev: AtomicU64,
    /// The operand being walked: its own usage, for its node.
    root_own: Mutex<Option<Usage>>,
    /// Set once the operand's root node has been made.
    root_entered: AtomicBool,
    /// The operand's file system is one where fts sorts big directories by inode.
    inode_sort: AtomicBool,
    current: AtomicU64,
    /// Operand identities (dev, ino) → operand indexes; empty with one operand.
    operand_ids: HashMap<(u64, u64), Vec<usize>>,
    operands: Vec<Operand>,
    /// Multiply-linked inodes already counted, across operands.
    links_seen: Mutex<HashSet<(u64, u64)>>,
    /// Directories already entered, with `-L` (links can reach one twice).
    dirs_seen: Mutex<HashSet<(u64, u64)>>,
    grand_total: AtomicU64,
    grand_newest: Newest,
    /// Each operand's tree, for `--tree` and `--json`.
    pub trees: Mutex<Vec<Root>>,
}

/// How much an entry counts, and its time for `--time`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    pub amount: u64,
    pub stamp: Stamp,
}

/// A time as the kernel gives it: seconds since the epoch and nanoseconds.
/// Not nanoseconds in an i64: that holds only 1677–2262, and XFS and tmpfs
/// keep times outside it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stamp {
    pub secs: i64,
    pub nsec: u32,
}

impl Stamp {
    /// Older than any time: what a directory's newest starts from.
    pub const MIN: Stamp = Stamp {
        secs: i64::MIN,
        nsec: 0,
    };
}

/// The newest of the times offered, from any thread.
#[derive(Debug)]
struct Newest(Mutex<Stamp>);

impl Newest {
    fn new(stamp: Stamp) -> Self {
        Newest(Mutex::new(stamp))
    }

    fn offer(&self, stamp: Stamp) {
        let mut newest = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *newest = (*newest).max(stamp);
    }

    fn get(&self) -> Stamp {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Without a lock: for the sole owner.
    fn get_mut(&mut self) -> Stamp {
        *self.0.get_mut().unwrap_or_else(|e| e.into_inner())
    }
}

impl Scan {
    pub fn new(opts: Options, ids: &[Option<(u64, u64)>]) -> Result<Scan, String> {
        let excludes = if opts.excludes.is_empty() {
            None
        } else {
            let mut set = globset::GlobSetBuilder::new();
            for p in &opts.excludes {
                let glob = globset::GlobBuilder::new(p)
                    .literal_separator(false)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| e.to_string())?;
                set.add(glob);
            }
            Some(set.build().map_err(|e| e.to_string())?)
        };
        let mut operand_ids: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
        // With -l du counts everything it meets, overlapping operands included.
        if ids.len() > 1 && !opts.count_links {
            for (i, id) in ids.iter().enumerate() {
                if let Some(id) = id {
                    operand_ids.entry(*id).or_default().push(i);
                }
            }
        }
        Ok(Scan {
            excludes,
            tz: jiff::tz::TimeZone::system(),
            out: Output::new(),
            progress: Progress::default(),
            failed: AtomicBool::new(false),
            root_dev: AtomicU64::new(0),
            root_own: Mutex::new(None),
            root_entered: AtomicBool::new(false),
            inode_sort: AtomicBool::new(false),
            current: AtomicU64::new(0),
            operand_ids,
            operands: ids
                .iter()
                .map(|_| Operand {
                    seen: AtomicBool::new(false),
                })
                .collect(),
            links_seen: Mutex::new(HashSet::new()),
            dirs_seen: Mutex::new(HashSet::new()),
            grand_total: AtomicU64::new(0),
            grand_newest: Newest::new(Stamp::MIN),
            trees: Mutex::new(Vec::new()),
            opts,
        })
    }

    pub fn failed(&self) -> bool {
        self.failed.load(Relaxed) || self.out.failed()
    }

    /// Print `fdu: MESSAGE` and remember that the run failed.
    pub fn error(&self, message: &str) {
        self.failed.store(true, Relaxed);
        crate::report(message);
    }

    fn keeps_tree(&self) -> bool {
        self.opts.tree.is_some() || self.opts.json
    }

    pub fn usage(&self, m: &Metadata) -> Usage {
        let amount = match self.opts.measure {
            Measure::Disk => m.blocks * 512,
            Measure::Apparent => {
                let ft = m.file_type();
                if ft.is_file() || ft.is_dir() || ft.is_symlink() {
                    m.size
                } else {
                    0
                }
            }
            Measure::Inodes => 1,
        };
        let stamp = match self.opts.time.as_ref().map(|t| t.0) {
            None => Stamp::default(),
            Some(TimeKind::Modified) => Stamp {
                secs: m.mtime,
                nsec: m.mtime_nsec,
            },
            Some(TimeKind::Accessed) => Stamp {
                secs: m.atime,
                nsec: m.atime_nsec,
            },
            Some(TimeKind::Changed) => Stamp {
                secs: m.ctime,
                nsec: m.ctime_nsec,
            },
        };
        Usage { amount, stamp }
    }

    /// Append du's line for one entry (if the threshold lets it through).
    pub fn line(&self, out: &mut Vec<u8>, usage: Usage, path: &[u8]) {
        // The tree view and JSON replace du's lines.
        if self.keeps_tree() || !self.opts.threshold.shows(usage.amount) {
            return;
        }
        self.opts.size.write(usage.amount, out);
        out.push(b'\t');
        if let Some((_, format)) = &self.opts.time {
            format.write(usage.stamp, &self.tz, out);
            out.push(b'\t');
        }
        out.extend_from_slice(path);
        out.push(if self.opts.null { 0 } else { b'\n' });
    }

    /// du's `--exclude`: a pattern matches the whole path or any tail of
    /// it that starts after a `/`.
    pub fn excluded(&self, path: &[u8]) -> bool {
        let Some(set) = &self.excludes else { return false };
        let matches = |p: &[u8]| set.is_match(Path::new(OsStr::from_bytes(p)));
        matches(path)
            || path
                .iter()
                .enumerate()
                .any(|(i, &b)| b == b'/' && i + 1 < path.len() && path[i + 1] != b'/' && matches(&path[i + 1..]))
    }

    /// With several operands: whether an entry with this identity is
    /// counted in the current operand (see [`Operand`]).
    fn operand_counts(&self, dev: u64, ino: u64) -> bool {
        if self.operand_ids.is_empty() {
            return true;
        }
        let Some(indexes) = self.operand_ids.get(&(dev, ino)) else {
            return true;
        };
        let current = self.current.load(Relaxed) as usize;
        let mut counts = true;
        for &j in indexes {
            if j < current {
                counts = false;
            } else if j > current {
                self.operands[j].seen.store(true, Relaxed);
            }
        }
        counts
    }

    /// Start operand `index`: false when an earlier operand already covered it.
    pub fn begin_operand(&self, index: usize, id: Option<(u64, u64)>) -> bool {
        if self.operands.get(index).is_some_and(|o| o.seen.load(Relaxed)) {
            return false;
        }
        self.current.store(index as u64, Relaxed);
        if let Some(id) = id {
            self.operand_counts(id.0, id.1);
        }
        true
    }

    /// Count a multiply-linked inode once per run; false when already counted.
    pub fn first_link(&self, dev: u64, ino: u64) -> bool {
        self.links_seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((dev, ino))
    }

    fn add_grand_total(&self, usage: Usage) {
        self.grand_total.fetch_add(usage.amount, Relaxed);
        if self.opts.time.is_some() {
            self.grand_newest.offer(usage.stamp);
        }
    }

    pub fn grand_total(&self) -> Usage {
        Usage {
            amount: self.grand_total.load(Relaxed),
            stamp: self.grand_newest.get(),
        }
    }

    /// An operand that is not a directory (or a symlink not followed).
    pub fn scan_file(&self, path: &[u8], m: &Metadata) {
        if !self.opts.count_links
            && (m.nlink > 1 || self.opts.follow == Follow::All)
            && !m.is_dir()
            && !self.first_link(m.dev, m.ino)
        {
            return;
        }
        let usage = self.usage(m);
        let mut line = Vec::new();
        self.line(&mut line, usage, path);
        self.out.write(&line);
        self.add_grand_total(usage);
        self.progress.entries.fetch_add(1, Relaxed);
        if self.keeps_tree() {
            self.trees
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Root::leaf(path, usage.amount));
        }
    }

    /// Walk an operand that is a directory, in parallel, and print its lines.
    pub fn scan_dir(&'static self, path: &[u8], m: &Metadata) {
        self.root_dev.store(m.dev, Relaxed);
        *self.root_own.lock().unwrap_or_else(|e| e.into_inner()) = Some(self.usage(m));
        self.root_entered.store(false, Relaxed);
        self.inode_sort.store(inode_sort_may_be_useful(path), Relaxed);
        if self.opts.follow == Follow::All {
            self.dirs_seen
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert((m.dev, m.ino));
        }
        let walk = WalkBuilder::new(Path::new(OsStr::from_bytes(path)))
            .order(Order::Parallel)
            .threads(self.opts.threads)
            .io_depth(self.opts.io_depth)
            .metadata(true)
            .min_depth(1)
            .follow_links(self.opts.follow == Follow::All)
            .filter(Some(Arc::new(DuFilter { scan: self })));
        let mut links = Vec::new();
        walk.visit(|| DuVisitor::new(self), |v| links.extend(v.finish()));
        // Nodes holding a multiply-linked file wait for the verdict on
        // which of its links came first; dropping the sightings lets them finish.
        hardlinks::resolve(self, links);
        if !self.root_entered.load(Relaxed) {
            // The operand could not be read: du still prints its own size.
            if let Some(own) = self.root_own.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let mut line = Vec::new();
                self.line(&mut line, own, path);
                self.out.write(&line);
                self.add_grand_total(own);
                if self.keeps_tree() {
                    self.trees
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(Root::leaf(path, own.amount));
                }
            }
        }
    }

    /// A file that could not be statted (`None`: a symlink to follow that
    /// leads nowhere, for which du gives no reason).
    pub fn cannot_access(&self, path: &[u8], err: Option<&std::io::Error>) {
        match err {
            Some(err) => self.error(&format!(
                "cannot access {}: {}",
                crate::format::quote(path),
                crate::error_text(err)
            )),
            None => self.error(&format!("cannot access {}", crate::format::quote(path))),
        }
    }
}

/// gnulib's `dirent_inode_sort_may_be_useful`: every file system but NFS,
/// CIFS and tmpfs.
fn inode_sort_may_be_useful(path: &[u8]) -> bool {
    const NFS: i64 = 0x6969;
    const CIFS: i64 = 0xFF53_4D42;
    const TMPFS: i64 = 0x0102_1994;
    match rustix::fs::statfs(Path::new(OsStr::from_bytes(path))) {
        // f_type is i64 here, u32 on some architectures.
        #[allow(clippy::unnecessary_cast)]
        Ok(st) => !matches!(st.f_type as i64, NFS | CIFS | TMPFS),
        Err(_) => true,
    }
}

/// `dir` + `/` + `name`, without doubling a `/` the operand already ends with.
pub fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(dir.len() + 1 + name.len());
    p.extend_from_slice(dir);
    if !dir.ends_with(b"/") {
        p.push(b'/');
    }
    p.extend_from_slice(name);
    p
}

/// A subdirectory as its parent listed it, waiting for the walk to enter it.
struct Subdir {
    name: Box<[u8]>,
    position: u64,
    ino: u64,
    own: Usage,
    claimed: bool,
}

#[derive(Default)]
struct Subdirs {
    list: Vec<Subdir>,
    sorted: bool,
}

/// One directory's running totals.
pub struct Node {
    scan: &'static Scan,
    parent: Option<Arc<Node>>,
    depth: u32,
    /// Where the directory comes in its parent's listing (see [`file_position`]).
    position: u64,
    ino: u64,
    /// Kept only when a line is printed for it or its entries.
    path: Option<Box<[u8]>>,
    /// Kept only for the tree view and JSON.
    name: Option<Box<[u8]>>,
    /// Own size plus files (what `-S` prints).
    local: AtomicU64,
    /// Subdirectories' totals.
    below: AtomicU64,
    newest: Newest,
    /// Entries the visitor will see (non-directories), and subdirectories,
    /// counted in listing order by the filter.
    listed_files: AtomicU32,
    listed_dirs: AtomicU32,
    /// Every entry listed, excluded ones too (fts's count).
    listed_all: AtomicU32,
    subdirs: Mutex<Subdirs>,
    tree: Option<Mutex<TreeBuilder>>,
    finished: bool,
}

/// gnulib fts: directories with more entries than this are read whole and
/// sorted by inode, `READDIR_BATCH` entries at a time.
const INODE_SORT_ABOVE: u32 = 10_000;
const READDIR_BATCH: u32 = 100_000;

/// Where an entry comes in its directory's listing, comparable across files
/// and directories: the `i`-th listed file is `2i+1`, a directory listed
/// after `f` files is `2f` (then by its rank among directories), so the
/// order of these numbers is the listing order du (fts) visits in.
pub fn file_position(index: u32) -> u64 {
    (2 * index as u64 + 1) << 32
}

fn dir_position(files_before: u32, dir_rank: u32) -> u64 {
    ((2 * files_before as u64) << 32) | dir_rank as u64
}

impl Node {
    fn add(&self, usage: Usage) {
        self.local.fetch_add(usage.amount, Relaxed);
        if self.scan.opts.time.is_some() {
            self.newest.offer(usage.stamp);
        }
    }

    /// Whether fts (and so du) visits this directory's entries in inode
    /// order: gnulib sorts a directory of more than 10 000 entries by inode,
    /// except on NFS, CIFS and tmpfs (in batches of 100 000, which this
    /// does not model).
    fn inode_sorted(&self) -> bool {
        self.scan.inode_sort.load(Relaxed)
            && (INODE_SORT_ABOVE + 1..=READDIR_BATCH).contains(&self.listed_all.load(Relaxed))
    }

    /// The order key of an entry of this directory (at `position` in the
    /// listing, inode `ino`) along its path from the operand: smaller is
    /// met first by du. Valid once the walk is over.
    pub fn visit_order(&self, position: u64, ino: u64) -> Box<[u64]> {
        let mut path = vec![if self.inode_sorted() { ino } else { position }];
        let mut node = self;
        while let Some(parent) = &node.parent {
            path.push(if parent.inode_sorted() { node.ino } else { node.position });
            node = parent;
        }
        path.reverse();
        path.into_boxed_slice()
    }

    /// A multiply-linked file judged the first of its links; `-a` prints it.
    pub fn add_link(&self, usage: Usage, name: Option<&[u8]>, print: bool) {
        self.add(usage);
        let Some(name) = name else { return };
        if let (true, Some(dir)) = (print, &self.path) {
            let mut line = Vec::new();
            self.scan.line(&mut line, usage, &join(dir, name));
            self.scan.out.write(&line);
        }
        if let Some(tree) = &self.tree {
            tree.lock().unwrap_or_else(|e| e.into_inner()).leaf(name, usage.amount);
        }
    }

    /// The subtree is complete: print, hand the total to the parent.
    /// Returns the parent, which may now be complete too.
    fn finish(&mut self) -> Option<Arc<Node>> {
        if std::mem::replace(&mut self.finished, true) {
            return None;
        }
        let scan = self.scan;
        let max_depth = scan.opts.max_depth;
        let depth = self.depth as usize;
        let mut below = *self.below.get_mut();
        let mut newest = self.newest.get_mut();
        let mut tree = self
            .tree
            .take()
            .map(|t| t.into_inner().unwrap_or_else(|e| e.into_inner()));
        // This directory's file lines, when its reader let go of it last.
        let mut lines = HANDED_OVER.with_borrow_mut(std::mem::take);
        let subdirs = std::mem::take(&mut self.subdirs.get_mut().unwrap_or_else(|e| e.into_inner()).list);
        // A subdirectory never entered could not be opened: du counts (and
        // prints) its own size all the same.
        for s in subdirs.into_iter().filter(|s| !s.claimed) {
            below += s.own.amount;
            newest = newest.max(s.own.stamp);
            if depth < max_depth {
                if let Some(dir) = &self.path {
                    scan.line(&mut lines, s.own, &join(dir, &s.name));
                }
            }
            if let Some(t) = &mut tree {
                t.leaf(&s.name, s.own.amount);
            }
        }
        let local = *self.local.get_mut();
        let total = Usage {
            amount: local + below,
            stamp: newest,
        };
        if depth <= max_depth {
            if let Some(path) = &self.path {
                let shown = if scan.opts.separate_dirs {
                    Usage { amount: local, ..total }
                } else {
                    total
                };
                scan.line(&mut lines, shown, path);
            }
        }
        if !lines.is_empty() {
            scan.out.write(&lines);
        }
        lines.clear();
        // The buffer goes back for the next directory, its capacity kept.
        HANDED_OVER.with_borrow_mut(|h| *h = lines);
        let name = self.name.take().unwrap_or_default();
        match self.parent.take() {
            Some(parent) => {
                parent.below.fetch_add(total.amount, Relaxed);
                if scan.opts.time.is_some() {
                    parent.newest.offer(newest);
                }
                if let (Some(kids), Some(pt)) = (tree, &parent.tree) {
                    pt.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .dir(&name, total.amount, kids);
                }
                Some(parent)
            }
            None => {
                scan.add_grand_total(total);
                if let Some(kids) = tree {
                    scan.trees
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(Root::new(&name, kids.into_node(total.amount)));
                }
                None
            }
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // Finishing a node may finish its parent, and so on up: a loop, not
        // recursion, so a deep tree cannot overflow a worker's stack.
        let mut parent = self.finish();
        while let Some(p) = parent {
            parent = match Arc::into_inner(p) {
                Some(mut node) => node.finish(),
                None => None,
            };
        }
    }
}

/// The engine hook: makes each directory's node, stats subdirectories,
/// applies `--exclude`, `-x` and the operand rules.
struct DuFilter {
    scan: &'static Scan,
}

impl EntryFilter for DuFilter {
    fn enter(&self, dir: &DirInfo<'_>, parent: Option<&FilterState>) -> Option<FilterState> {
        let scan = self.scan;
        let parent = parent.and_then(|p| p.clone().downcast::<Node>().ok());
        let depth = parent.as_ref().map_or(0, |p| p.depth + 1);
        let name = match &parent {
            Some(_) => dir.path.rsplit(|&b| b == b'/').next().unwrap_or(dir.path),
            None => dir.path,
        };
        let (own, position, ino) = match &parent {
            None => {
                scan.root_entered.store(true, Relaxed);
                (
                    scan.root_own
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .take()
                        .unwrap_or_default(),
                    0,
                    0,
                )
            }
            Some(p) => {
                let mut subdirs = p.subdirs.lock().unwrap_or_else(|e| e.into_inner());
                if !subdirs.sorted {
                    subdirs.list.sort_unstable_by(|a, b| a.name.cmp(&b.name));
                    subdirs.sorted = true;
                }
                match subdirs.list.binary_search_by(|s| (*s.name).cmp(name)) {
                    Ok(i) => {
                        subdirs.list[i].claimed = true;
                        (subdirs.list[i].own, subdirs.list[i].position, subdirs.list[i].ino)
                    }
                    Err(_) => (
                        fnd_walk::meta::stat_fd(dir.fd)
                            .map(|m| scan.usage(&m))
                            .unwrap_or_default(),
                        u64::MAX,
                        u64::MAX,
                    ),
                }
            }
        };
        scan.progress.entries.fetch_add(1, Relaxed);
        let keep_tree = scan.keeps_tree();
        let node = Node {
            scan,
            parent,
            depth,
            position,
            ino,
            path: (depth as usize <= scan.opts.max_depth).then(|| dir.path.into()),
            name: keep_tree.then(|| name.into()),
            local: AtomicU64::new(own.amount),
            below: AtomicU64::new(0),
            newest: Newest::new(own.stamp),
            listed_files: AtomicU32::new(0),
            listed_dirs: AtomicU32::new(0),
            listed_all: AtomicU32::new(0),
            subdirs: Mutex::new(Subdirs::default()),
            tree: keep_tree.then(|| Mutex::new(TreeBuilder::default())),
            finished: false,
        };
        Some(Arc::new(node))
    }

    fn decide(&self, state: Option<&FilterState>, entry: &RawEntry<'_>) -> Decision {
        let scan = self.scan;
        let Some(node) = state.and_then(|s| (**s).downcast_ref::<Node>()) else {
            return Decision::KEEP;
        };
        node.listed_all.fetch_add(1, Relaxed);
        if scan.excludes.is_some() && scan.excluded(&join(entry.parent_prefix, entry.name)) {
            return Decision::SKIP;
        }
        if !entry.is_dir() {
            node.listed_files.fetch_add(1, Relaxed);
            return Decision::KEEP;
        }
        let follow = scan.opts.follow == Follow::All;
        let m = match fnd_walk::meta::stat_at(entry.dir_fd, entry.name, follow) {
            Ok(m) => m,
            Err(e) => {
                scan.cannot_access(&join(entry.parent_prefix, entry.name), Some(&e));
                return Decision::SKIP;
            }
        };
        if scan.opts.one_file_system && m.dev != scan.root_dev.load(Relaxed) {
            return Decision::SKIP;
        }
        if !scan.operand_counts(m.dev, m.ino) {
            return Decision::SKIP;
        }
        if follow
            && !scan
                .dirs_seen
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert((m.dev, m.ino))
        {
            return Decision::SKIP;
        }
        let files_before = node.listed_files.load(Relaxed);
        let rank = node.listed_dirs.fetch_add(1, Relaxed);
        let subdir = Subdir {
            name: entry.name.into(),
            position: dir_position(files_before, rank),
            ino: m.ino,
            own: scan.usage(&m),
            claimed: false,
        };
        node.subdirs.lock().unwrap_or_else(|e| e.into_inner()).list.push(subdir);
        Decision {
            emit: false,
            descend: true,
        }
    }
}

/// Per worker thread: adds up the chunks of files, collects multiply-linked
/// files for the end, buffers `-a` lines.
struct DuVisitor {
    scan: &'static Scan,
    node: Option<Arc<Node>>,
    /// Index of the next file in the current directory's listing.
    next_index: u32,
    lines: Vec<u8>,
    links: Vec<Sighting>,
    leaves: TreeBuilder,
}

impl DuVisitor {
    fn new(scan: &'static Scan) -> Self {
        DuVisitor {
            scan,
            node: None,
            next_index: 0,
            lines: Vec::new(),
            links: Vec::new(),
            leaves: TreeBuilder::default(),
        }
    }

    fn finish(mut self) -> Vec<Sighting> {
        self.let_go();
        std::mem::take(&mut self.links)
    }

    /// Let go of the current directory. Its file lines must reach the
    /// output before its own line. When this is the last hold on it, the
    /// drop finishes it right here and its `finish` prints them first, in
    /// the same write; otherwise they go out now, as another thread may
    /// finish it at any time after. (On the million tree `fdu -a` takes
    /// 1.05x the time of the old order, which printed files after their
    /// directory; written at every chunk instead, 1.10x.)
    fn let_go(&mut self) {
        if let Some(node) = self.node.take() {
            if Arc::strong_count(&node) == 1 {
                HANDED_OVER.with_borrow_mut(|h| std::mem::swap(h, &mut self.lines));
                drop(node);
                // Still there if the directory had finished already.
                HANDED_OVER.with_borrow_mut(|h| std::mem::swap(h, &mut self.lines));
            }
        }
        self.write_lines();
    }

    fn write_lines(&mut self) {
        if !self.lines.is_empty() {
            self.scan.out.write(&self.lines);
            self.lines.clear();
        }
    }
}

thread_local! {
    /// The file lines of the directory this thread's visitor lets go of,
    /// for that directory's `finish` to print before its own line.
    static HANDED_OVER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Visitor for DuVisitor {
    fn visit(&mut self, chunk: &mut Chunk) -> Flow {
        let scan = self.scan;
        let Some(state) = chunk.filter_state() else {
            return Flow::Continue;
        };
        let same = self
            .node
            .as_ref()
            .is_some_and(|n| std::ptr::eq(Arc::as_ptr(n) as *const (), Arc::as_ptr(state) as *const ()));
        if !same {
            // Chunks of one directory come in order on the thread that reads
            // it; holding its node keeps the address from being reused.
            self.let_go();
            self.node = state.clone().downcast::<Node>().ok();
            self.next_index = 0;
        }
        let Some(node) = self.node.clone() else {
            return Flow::Continue;
        };
        let opts = &scan.opts;
        let print_files = opts.all && chunk.depth() <= opts.max_depth;
        let link_all = opts.follow == Follow::All;
        let mut sum = Usage {
            amount: 0,
            stamp: Stamp::MIN,
        };
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
                scan.cannot_access(&path, Some(&err));
                continue;
            };
            if link_all && m.file_type().is_symlink() {
                // With -L a link whose target is gone is an error, and not counted.
                let mut path = Vec::new();
                entry.write_path(&mut path);
                scan.cannot_access(&path, None);
                continue;
            }
            if !scan.operand_counts(m.dev, m.ino) {
                continue;
            }
            let usage = scan.usage(m);
            disk += m.blocks * 512;
            if !opts.count_links && (m.nlink > 1 || link_all) {
                let keep_name = print_files || node.tree.is_some();
                self.links.push(Sighting {
                    dev: m.dev,
                    ino: m.ino,
                    position: file_position(index),
                    node: node.clone(),
                    usage,
                    name: keep_name.then(|| entry.name_bytes().into()),
                    print: print_files,
                });
                continue;
            }
            sum.amount += usage.amount;
            sum.stamp = sum.stamp.max(usage.stamp);
            if print_files {
                let mut path = Vec::with_capacity(chunk.prefix().len() + entry.name_bytes().len());
                entry.write_path(&mut path);
                scan.line(&mut self.lines, usage, &path);
            }
            if node.tree.is_some() {
                self.leaves.leaf(entry.name_bytes(), usage.amount);
            }
        }
        node.add(sum);
        if let Some(tree) = &node.tree {
            tree.lock().unwrap_or_else(|e| e.into_inner()).append(&mut self.leaves);
        }
        scan.progress.entries.fetch_add(chunk.len() as u64, Relaxed);
        scan.progress.bytes.fetch_add(disk, Relaxed);
        // Early is always safe: the directory cannot finish while held.
        if self.lines.len() >= 64 * 1024 {
            self.write_lines();
        }
        if scan.out.closed() {
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
        self.scan.error(&format!(
            "{what} {}: {}",
            crate::format::quote(path),
            crate::error_text(&error.io_error())
        ));
        Flow::Continue
    }
}
