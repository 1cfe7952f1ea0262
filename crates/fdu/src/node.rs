//! One directory's running totals, and what happens when its subtree is
//! complete.
//!
//! Every directory the scan enters gets a [`Node`]; a child holds its
//! parent, and whatever still has to add to a directory (a worker reading
//! it, a hard link waiting for its verdict) holds its node too. So a node
//! is dropped exactly when its whole subtree has been read: that drop
//! prints its line and hands its [`Subtotal`] to its [`Parent`], which may
//! complete in turn. No global lock per entry, no second pass, and with
//! `-s` no tree is kept (only the directories still being read are in
//! memory).
//!
//! Completion is the small piece at `impl Drop for Node`: `Node::finish`
//! prints the lines and makes the subtotal, [`Node::absorb`] takes a child's.
//! A parent is a node of this process, the operand itself, or a node held
//! by another rank of an MPI job (feature `mpi`), to which the subtotal
//! travels (`crate::relay`).
//!
//! One file past 600 lines: the node's counters, its listing order and its
//! completion are one state machine (515 lines), and its unit tests sit
//! beside it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use crate::run::Run;
use crate::tree::{Detail, TreeBuilder};
use crate::usage::{Newest, Usage};

/// Where a directory's subtotal goes when it completes.
pub enum Parent {
    /// A directory of this process: its node absorbs the subtotal.
    Dir(Arc<Node>),
    /// The directory is an operand: its subtotal joins the run's totals.
    Operand,
    /// The parent is read by another process: the total goes there.
    Elsewhere(Box<dyn FnOnce(Subtotal) + Send + Sync>),
}

/// What a completed directory hands to its parent.
pub struct Subtotal {
    /// Its name in the parent (the operand as given, for an operand); empty
    /// unless the tree is kept.
    pub name: Box<[u8]>,
    /// Its own size, its files' and its subdirectories' totals; the newest time under it.
    pub total: Usage,
    /// Its entries, when the tree is kept.
    pub tree: Option<TreeBuilder>,
    /// Its own detail, for a detailed tree.
    pub detail: Detail,
}

/// A subdirectory as its parent's listing named it, waiting for the walk
/// to enter it (or not: one that cannot be opened is never entered).
pub struct Listed {
    /// Its own usage (the directory itself, not what it holds).
    pub own: Usage,
    /// Where it comes in its parent's listing (see [`file_position`]).
    pub position: u64,
    /// Its device and inode, as the parent's listing statted it.
    pub dev: u64,
    pub ino: u64,
    /// What the browser shows of the directory itself.
    pub detail: Detail,
}

struct Subdir {
    name: Box<[u8]>,
    listed: Listed,
    claimed: bool,
}

#[derive(Default)]
struct Subdirs {
    list: Vec<Subdir>,
    sorted: bool,
    /// How many of `list` the walk has entered: when all of them, the list
    /// is let go (a chain's levels held 380 bytes each in it, half of
    /// `fdu -s`'s memory at 100,000 levels).
    claimed: usize,
}

/// One directory's running totals.
pub struct Node {
    /// Shared with the scan: a node may complete after the walk that made it.
    run: Arc<Run>,
    parent: Option<Parent>,
    depth: u32,
    /// Where the directory comes in its parent's listing, its device and inode.
    position: u64,
    /// du's order key of this directory, from the operand down, when its
    /// parent is elsewhere (it starts every key below); empty otherwise.
    key_above: Box<[u64]>,
    dev: u64,
    ino: u64,
    /// Kept only when a line is printed for it or its entries.
    path: Option<Box<[u8]>>,
    /// Kept only for the tree view, JSON and the browser.
    name: Option<Box<[u8]>>,
    /// The directory's own detail (the browser's tree only).
    detail: Detail,
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
    /// The operand's file system is one where fts sorts big directories by inode.
    inode_sort: bool,
    finished: bool,
    /// Deeper than `WALKED`: counted in `DEEP`, and the device and inode of
    /// the `WALKED` levels nearest the operand (shared down the branch).
    shallow_ids: Option<DeepIds>,
    /// A stand-in ([`Node::stand_in`]): makes the node of the one
    /// subdirectory it stands above.
    arrival: Option<Box<Arrive>>,
}

/// What makes the node of a subdirectory another process handed over.
type Arrive = dyn Fn() -> Node + Send + Sync;

/// Levels `is_self_or_ancestor` walks up from a node. Below them a node
/// is counted in `DEEP` by device and inode, and carries the ids of the
/// levels above them: walking a chain of 30,000 directories up to the
/// operand at each level took fdu -s 27 s (du: 1.3 s).
const WALKED: u32 = 64;

/// Nodes deeper than `WALKED` alive in this process, by device and inode.
static DEEP: Mutex<Option<HashMap<(u64, u64), u32>>> = Mutex::new(None);

fn deep() -> std::sync::MutexGuard<'static, Option<HashMap<(u64, u64), u32>>> {
    DEEP.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a directory deeper than `WALKED` keeps to find an ancestor
/// without walking up to the operand: it is counted in `DEEP` while
/// alive, and holds the ids of the `WALKED` levels nearest the operand
/// (shared down the branch).
pub(crate) struct DeepIds {
    id: (u64, u64),
    shallow: Arc<[(u64, u64)]>,
}

impl DeepIds {
    /// The directory `id` at `depth` (`None` above `WALKED`); `parent`:
    /// its parent's, `up`: the ids from its parent up to the operand,
    /// asked for once per branch, where it first goes deep.
    pub(crate) fn new(
        depth: u32,
        id: (u64, u64),
        parent: Option<&DeepIds>,
        up: impl FnOnce() -> Arc<[(u64, u64)]>,
    ) -> Option<DeepIds> {
        if depth < WALKED {
            return None;
        }
        let shallow = parent.map_or_else(up, |p| p.shallow.clone());
        *deep().get_or_insert_with(HashMap::new).entry(id).or_insert(0) += 1;
        Some(DeepIds { id, shallow })
    }
}

impl Drop for DeepIds {
    fn drop(&mut self) {
        if let Some(map) = deep().as_mut() {
            if let Some(count) = map.get_mut(&self.id) {
                *count -= 1;
                if *count == 0 {
                    map.remove(&self.id);
                }
            }
        }
    }
}

/// Whether `id` is a directory's or one above it, up to the operand:
/// `deep` is the directory's [`DeepIds`], `up` the ids from it upward.
/// A bind mount can put a directory inside itself, and du (fts) leaves
/// such a cycle out silently.
pub(crate) fn is_self_or_ancestor(
    deep_ids: Option<&DeepIds>,
    id: (u64, u64),
    mut up: impl Iterator<Item = (u64, u64)>,
) -> bool {
    if let Some(d) = deep_ids {
        let alive_deep = deep().as_ref().is_some_and(|m| m.contains_key(&id));
        // Not among the deep directories alive (of any branch): only the
        // levels near the operand are left to look at.
        if !alive_deep {
            return d.shallow.contains(&id);
        }
    }
    up.any(|x| x == id)
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
    /// The node of an operand that is a directory, `own` its own usage, `id`
    /// its device and inode; `inode_sort`: its file system is one where fts
    /// sorts big directories by inode.
    pub fn operand(run: &Arc<Run>, path: &[u8], own: Usage, id: (u64, u64), inode_sort: bool) -> Node {
        Node::operand_detailed(run, path, own, Detail::default(), id, inode_sort)
    }

    /// [`Node::operand`] with the operand's own detail, for a detailed tree.
    pub fn operand_detailed(
        run: &Arc<Run>,
        path: &[u8],
        own: Usage,
        detail: Detail,
        id: (u64, u64),
        inode_sort: bool,
    ) -> Node {
        let listed = Listed {
            own,
            position: 0,
            dev: id.0,
            ino: id.1,
            detail,
        };
        Node::new(run, Parent::Operand, 0, path, path, listed, inode_sort)
    }

    /// The node of a subdirectory at `path` (its parent's path, `/`, its
    /// name), as its parent listed it. A subdirectory the parent did not
    /// list (it appeared since) comes with its own usage, first in order.
    pub fn subdir(parent: Arc<Node>, path: &[u8], listed: Option<Listed>, own: impl FnOnce() -> Usage) -> Node {
        let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
        let listed = listed.unwrap_or_else(|| Listed {
            own: own(),
            position: u64::MAX,
            dev: u64::MAX,
            ino: u64::MAX,
            detail: Detail::new(0, 0, Detail::DIR),
        });
        let (run, depth, inode_sort) = (parent.run.clone(), parent.depth + 1, parent.inode_sort);
        Node::new(&run, Parent::Dir(parent), depth, path, name, listed, inode_sort)
    }

    /// The node of a directory another process listed and handed over:
    /// at `depth`, as `listed` there, `key` its own order key (its parent's
    /// and its own place), its total going to `parent`.
    pub fn adopted(
        run: &Arc<Run>,
        path: &[u8],
        depth: usize,
        listed: Listed,
        key: &[u64],
        inode_sort: bool,
        parent: Parent,
    ) -> Node {
        let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
        let mut node = Node::new(run, parent, depth as u32, path, name, listed, inode_sort);
        node.key_above = key.into();
        node
    }

    fn new(
        run: &Arc<Run>,
        parent: Parent,
        depth: u32,
        path: &[u8],
        name: &[u8],
        listed: Listed,
        inode_sort: bool,
    ) -> Node {
        let settings = &run.settings;
        let keep_tree = settings.keeps_tree();
        let parent_dir = match &parent {
            Parent::Dir(p) => Some(&**p),
            _ => None,
        };
        let shallow_ids = DeepIds::new(
            depth,
            (listed.dev, listed.ino),
            parent_dir.and_then(|p| p.shallow_ids.as_ref()),
            || parent_dir.map_or_else(|| Arc::from([]), |p| p.ids_up().collect()),
        );
        let Listed {
            own,
            position,
            dev,
            ino,
            detail,
        } = listed;
        Node {
            run: run.clone(),
            parent: Some(parent),
            depth,
            position,
            key_above: Box::default(),
            dev,
            ino,
            // Each level's path, kept down a chain 30,000 deep, was 900 MB
            // for --tree, which prints no du line to need it.
            path: (!keep_tree && depth as usize <= settings.max_depth).then(|| path.into()),
            name: keep_tree.then(|| name.into()),
            detail,
            local: AtomicU64::new(own.amount),
            below: AtomicU64::new(0),
            newest: Newest::new(own.stamp),
            listed_files: AtomicU32::new(0),
            listed_dirs: AtomicU32::new(0),
            listed_all: AtomicU32::new(0),
            subdirs: Mutex::new(Subdirs::default()),
            tree: keep_tree.then(|| Mutex::new(TreeBuilder::default())),
            inode_sort,
            finished: false,
            shallow_ids,
            arrival: None,
        }
    }

    /// The parent of a subdirectory another process handed over, which
    /// that process reads: it stands in for it here, and `arrive` makes the
    /// subdirectory's node when the walk enters it (dropping `arrive`
    /// unused settles one never entered). The stand-in itself counts,
    /// prints and completes nothing.
    pub fn stand_in(run: &Arc<Run>, arrive: impl Fn() -> Node + Send + Sync + 'static) -> Node {
        let listed = Listed {
            own: Usage::default(),
            position: 0,
            dev: 0,
            ino: 0,
            detail: Detail::default(),
        };
        let mut node = Node::new(run, Parent::Operand, 0, b"", b"", listed, false);
        node.parent = None;
        node.finished = true;
        node.arrival = Some(Box::new(arrive));
        node
    }

    /// Whether it is a [`stand_in`](Self::stand_in).
    pub fn is_stand_in(&self) -> bool {
        self.arrival.is_some()
    }

    /// For a [`stand_in`](Self::stand_in): the node of its subdirectory.
    pub fn arrive(&self) -> Option<Node> {
        self.arrival.as_ref().map(|arrive| arrive())
    }

    /// The ids of this directory and those above it, up to the operand.
    fn ids_up(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        std::iter::successors(Some(self), |n| match &n.parent {
            Some(Parent::Dir(up)) => Some(&**up),
            _ => None,
        })
        .map(|n| (n.dev, n.ino))
    }

    /// Whether this directory or one above it, up to the operand, is the
    /// directory `(dev, ino)`: a bind mount can put a directory inside
    /// itself, and du (fts) leaves such a cycle out silently.
    pub fn is_self_or_ancestor(&self, dev: u64, ino: u64) -> bool {
        is_self_or_ancestor(self.shallow_ids.as_ref(), (dev, ino), self.ids_up())
    }

    /// Whether the operand's file system is one where fts sorts big
    /// directories by inode.
    pub fn inode_sort(&self) -> bool {
        self.inode_sort
    }

    /// Levels below the operand (0: the operand).
    pub fn depth(&self) -> usize {
        self.depth as usize
    }

    /// The parent's listing named one more entry (excluded ones too).
    pub fn list_entry(&self) {
        self.listed_all.fetch_add(1, Relaxed);
    }

    /// The entry just listed is a file (anything but a directory).
    pub fn list_file(&self) {
        self.listed_files.fetch_add(1, Relaxed);
    }

    /// The entry just listed is a subdirectory to enter, with its inode and own usage.
    pub fn list_subdir(&self, name: &[u8], (dev, ino): (u64, u64), own: Usage, detail: Detail) {
        let files_before = self.listed_files.load(Relaxed);
        let rank = self.listed_dirs.fetch_add(1, Relaxed);
        let subdir = Subdir {
            name: name.into(),
            listed: Listed {
                own,
                position: dir_position(files_before, rank),
                dev,
                ino,
                detail,
            },
            claimed: false,
        };
        self.subdirs.lock().unwrap_or_else(|e| e.into_inner()).list.push(subdir);
    }

    /// The walk enters the subdirectory `name`: how it was listed, if it was.
    pub fn claim(&self, name: &[u8]) -> Option<Listed> {
        let mut subdirs = self.subdirs.lock().unwrap_or_else(|e| e.into_inner());
        if !subdirs.sorted {
            subdirs.list.sort_unstable_by(|a, b| a.name.cmp(&b.name));
            subdirs.sorted = true;
        }
        let i = subdirs.list.binary_search_by(|s| (*s.name).cmp(name)).ok()?;
        let s = &mut subdirs.list[i];
        if std::mem::replace(&mut s.claimed, true) {
            return Some(Listed { ..s.listed });
        }
        let listed = Listed { ..s.listed };
        subdirs.claimed += 1;
        if subdirs.claimed == subdirs.list.len() {
            // Nothing left for `finish` to count: an entry listed later
            // starts a list of its own.
            *subdirs = Subdirs::default();
        }
        Some(listed)
    }

    /// Files' usage, added up by a reader.
    pub fn add(&self, usage: Usage) {
        self.local.fetch_add(usage.amount, Relaxed);
        if self.run.settings.time.is_some() {
            self.newest.offer(usage.stamp);
        }
    }

    /// Whether the tree is kept (the readers add their leaves with [`Node::append_leaves`]).
    pub fn keeps_tree(&self) -> bool {
        self.tree.is_some()
    }

    /// Move a reader's batch of files into this directory's tree.
    pub fn append_leaves(&self, leaves: &mut TreeBuilder) {
        if let Some(tree) = &self.tree {
            tree.lock().unwrap_or_else(|e| e.into_inner()).append(leaves);
        }
    }

    /// Whether fts (and so du) visits this directory's entries in inode
    /// order: gnulib sorts a directory of more than 10 000 entries by inode,
    /// except on NFS, CIFS and tmpfs (in batches of 100 000, which this
    /// does not model).
    fn inode_sorted(&self) -> bool {
        self.inode_sort && (INODE_SORT_ABOVE + 1..=READDIR_BATCH).contains(&self.listed_all.load(Relaxed))
    }

    /// The order key of an entry of this directory (at `position` in the
    /// listing, inode `ino`) along its path from the operand: smaller is
    /// met first by du. Valid once the directory has been listed whole.
    pub fn visit_order(&self, position: u64, ino: u64) -> Box<[u64]> {
        let mut path = vec![if self.inode_sorted() { ino } else { position }];
        let mut node = self;
        while let Some(Parent::Dir(parent)) = &node.parent {
            path.push(if parent.inode_sorted() { node.ino } else { node.position });
            node = parent;
        }
        path.extend(node.key_above.iter().rev());
        path.reverse();
        path.into_boxed_slice()
    }

    /// Whether the tree kept is the browser's, with a [`Detail`] per entry.
    pub fn detailed(&self) -> bool {
        self.run.settings.browse
    }

    /// `detail`, when the tree keeps details.
    fn kept(&self, detail: Detail) -> Option<Detail> {
        self.detailed().then_some(detail)
    }

    /// A multiply-linked file judged the first of its links; `-a` prints it
    /// (`print`, with its `name` kept for that or for the tree).
    pub fn add_link(&self, usage: Usage, name: Option<&[u8]>, print: bool, detail: Detail) {
        self.add(usage);
        let Some(name) = name else { return };
        if let (true, Some(dir)) = (print, &self.path) {
            let mut line = Vec::new();
            self.run.line(&mut line, usage, &join(dir, name));
            self.run.out.write(&line);
        }
        if let Some(tree) = &self.tree {
            let kept = self.kept(detail);
            let mut tree = tree.lock().unwrap_or_else(|e| e.into_inner());
            tree.entry(name, usage.amount, TreeBuilder::default(), kept);
        }
    }

    /// Another link of a file counted elsewhere: listed in the browser's
    /// tree, marked, and not added to any total.
    pub fn list_link(&self, usage: Usage, name: Option<&[u8]>, detail: Detail) {
        if let (Some(tree), Some(name)) = (&self.tree, name) {
            let mut detail = detail;
            detail.flags |= Detail::UNCOUNTED_LINK;
            let mut tree = tree.lock().unwrap_or_else(|e| e.into_inner());
            tree.detailed_leaf(name, usage.amount, detail);
        }
    }

    /// A completed subdirectory's subtotal.
    pub fn absorb(&self, sub: Subtotal) {
        self.below.fetch_add(sub.total.amount, Relaxed);
        if self.run.settings.time.is_some() {
            self.newest.offer(sub.total.stamp);
        }
        if let (Some(kids), Some(tree)) = (sub.tree, &self.tree) {
            let kept = self.kept(sub.detail);
            let mut tree = tree.lock().unwrap_or_else(|e| e.into_inner());
            tree.entry(&sub.name, sub.total.amount, kids, kept);
        }
    }

    /// The subtree is complete: print the lines, make the subtotal. `None`
    /// when it was done already.
    fn finish(&mut self) -> Option<(Subtotal, Parent)> {
        if std::mem::replace(&mut self.finished, true) {
            return None;
        }
        let run = &*self.run;
        let settings = &run.settings;
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
            let own = s.listed.own;
            below += own.amount;
            newest = newest.max(own.stamp);
            if depth < settings.max_depth {
                if let Some(dir) = &self.path {
                    run.line(&mut lines, own, &join(dir, &s.name));
                }
            }
            if let Some(t) = &mut tree {
                let mut detail = s.listed.detail;
                detail.flags |= Detail::READ_ERROR;
                t.entry(&s.name, own.amount, TreeBuilder::default(), self.kept(detail));
            }
        }
        let local = *self.local.get_mut();
        let total = Usage {
            amount: local + below,
            stamp: newest,
        };
        if depth <= settings.max_depth {
            if let Some(path) = &self.path {
                let shown = if settings.separate_dirs {
                    Usage { amount: local, ..total }
                } else {
                    total
                };
                run.line(&mut lines, shown, path);
            }
        }
        if !lines.is_empty() {
            run.out.write(&lines);
        }
        lines.clear();
        // The buffer goes back for the next directory, its capacity kept.
        HANDED_OVER.with_borrow_mut(|h| *h = lines);
        let sub = Subtotal {
            name: self.name.take().unwrap_or_default(),
            total,
            tree,
            detail: self.detail,
        };
        Some((sub, self.parent.take()?))
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        drop(self.shallow_ids.take());
        // Completing a node may complete its parent, and so on up: a loop,
        // not recursion, so a deep tree cannot overflow a worker's stack.
        let mut done = self.finish();
        while let Some((sub, parent)) = done {
            done = match parent {
                Parent::Dir(node) => {
                    node.absorb(sub);
                    Arc::into_inner(node).and_then(|mut node| node.finish())
                }
                Parent::Operand => {
                    self.run.add_operand(&sub.name, sub.total, sub.tree, sub.detail);
                    None
                }
                Parent::Elsewhere(send) => {
                    send(sub);
                    None
                }
            };
        }
    }
}

thread_local! {
    /// The file lines of the directory this thread lets go of, for that
    /// directory's `finish` to print before its own line.
    static HANDED_OVER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A reader lets go of a directory, with the file lines (`-a`) it wrote for
/// it; `lines` is empty after. They must reach the output before the
/// directory's own line: when this is the last hold on it, it completes
/// right here and prints them first, in the same write; otherwise they go
/// out now, before the hold is dropped, as another thread may complete it
/// at any time after. (On the million tree `fdu -a` takes 1.05x the time of
/// the old order, which printed files after their directory; written at
/// every chunk instead, 1.10x.)
pub fn let_go(node: Arc<Node>, lines: &mut Vec<u8>) {
    if Arc::strong_count(&node) == 1 {
        // Nobody else can take a hold on it now: the drop completes it.
        HANDED_OVER.with_borrow_mut(|h| std::mem::swap(h, lines));
        drop(node);
        HANDED_OVER.with_borrow_mut(|h| std::mem::swap(h, lines));
    } else {
        if !lines.is_empty() {
            node.run.out.write(lines);
            lines.clear();
        }
        drop(node);
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

/// Runs for tests: settings from a command line, du's lines into a file.
#[cfg(test)]
pub mod testing {
    use std::io::{Read, Seek};
    use std::sync::Arc;

    use crate::node::{Listed, Node};
    use crate::output::Output;
    use crate::run::Run;
    use crate::usage::{Stamp, Usage};

    /// A run with fdu's settings for these arguments (always `-B1`), its
    /// output going to a file that [`Lines::take`] reads.
    pub struct Lines {
        pub run: Arc<Run>,
        file: std::fs::File,
    }

    impl Lines {
        pub fn new(args: &[&str]) -> Lines {
            let argv = ["fdu", "-B1", "--no-progress"]
                .iter()
                .chain(args)
                .map(|a| a.into())
                .collect();
            let settings = match crate::cli::parse(argv) {
                Ok(crate::cli::Parsed::Run(s)) => *s,
                _ => panic!("bad test arguments {args:?}"),
            };
            let file = tempfile::tempfile().unwrap();
            let writer = fnd_output::Writer::new(file.try_clone().unwrap().into());
            let run = Arc::new(Run::new(settings, Output::to(writer)));
            Lines { run, file }
        }

        /// The lines printed since the last call.
        pub fn take(&mut self) -> Vec<String> {
            self.run.out.flush();
            let mut text = String::new();
            self.file.rewind().unwrap();
            self.file.read_to_string(&mut text).unwrap();
            self.file.set_len(0).unwrap();
            self.file.rewind().unwrap();
            text.lines().map(str::to_string).collect()
        }

        /// An operand's node; its own size is 1000.
        pub fn operand(&self, path: &str) -> Arc<Node> {
            Arc::new(Node::operand(&self.run, path.as_bytes(), usage(1000, 0), (0, 0), false))
        }
    }

    pub fn usage(amount: u64, secs: i64) -> Usage {
        Usage {
            amount,
            stamp: Stamp { secs, nsec: 0 },
        }
    }

    /// List a subdirectory of `parent` (its own size 100, modified at `secs`) and enter it.
    pub fn enter(parent: &Arc<Node>, name: &str, ino: u64, secs: i64) -> Arc<Node> {
        parent.list_entry();
        parent.list_subdir(name.as_bytes(), (0, ino), usage(100, secs), Default::default());
        let path = [
            std::str::from_utf8(parent.path.as_deref().unwrap_or(b"?")).unwrap(),
            name,
        ]
        .join("/");
        let listed: Option<Listed> = parent.claim(name.as_bytes());
        assert!(listed.is_some());
        Arc::new(Node::subdir(parent.clone(), path.as_bytes(), listed, || unreachable!()))
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{enter, usage, Lines};
    use super::*;

    #[test]
    fn a_directory_is_printed_when_its_whole_subtree_is_done() {
        let mut out = Lines::new(&[]);
        let root = out.operand("r");
        let a = enter(&root, "a", 2, 0);
        let b = enter(&a, "b", 3, 0);
        a.add(usage(10, 0));
        b.add(usage(20, 0));
        let waiting = a.clone(); // as a hard link waiting for its verdict holds it
        drop(root);
        drop(a);
        assert!(out.take().is_empty(), "nothing is complete while b is read");
        drop(b);
        assert_eq!(out.take(), ["120\tr/a/b"], "b is complete, a still held");
        drop(waiting);
        assert_eq!(out.take(), ["230\tr/a", "1230\tr"]);
        assert_eq!(out.run.grand_total().amount, 1230);
    }

    #[test]
    fn a_subdirectory_never_entered_still_counts_its_own_size() {
        let mut out = Lines::new(&[]);
        let root = out.operand("r");
        root.list_entry();
        root.list_subdir(b"locked", (0, 9), usage(100, 0), Default::default());
        let open = enter(&root, "open", 10, 0);
        drop(open);
        drop(root);
        assert_eq!(out.take(), ["100\tr/open", "100\tr/locked", "1200\tr"]);
    }

    #[test]
    fn the_list_of_subdirectories_is_let_go_once_all_are_entered() {
        let mut out = Lines::new(&[]);
        let root = out.operand("r");
        for (name, ino) in [("a", 2), ("b", 3), ("c", 4)] {
            root.list_entry();
            root.list_subdir(name.as_bytes(), (0, ino), usage(100, 0), Default::default());
        }
        let held = |n: &Node| n.subdirs.lock().unwrap().list.len();
        let a = root.claim(b"a");
        let b = root.claim(b"b");
        assert!(a.is_some() && b.is_some());
        assert_eq!(held(&root), 3, "c is still to be entered");
        assert!(root.claim(b"c").is_some());
        assert_eq!(held(&root), 0);
        drop(root);
        assert_eq!(out.take(), ["1000\tr"], "nothing left to count as never entered");
    }

    #[test]
    fn separate_dirs_leaves_subdirectories_out_of_a_line_not_out_of_the_total() {
        let mut out = Lines::new(&["-S"]);
        let root = out.operand("r");
        root.add(usage(5, 0));
        let a = enter(&root, "a", 2, 0);
        a.add(usage(7, 0));
        drop(a);
        drop(root);
        assert_eq!(out.take(), ["107\tr/a", "1005\tr"]);
        assert_eq!(out.run.grand_total().amount, 1112);
    }

    #[test]
    fn max_depth_prints_only_the_levels_asked_for() {
        let mut out = Lines::new(&["-d1"]);
        let root = out.operand("r");
        root.list_entry();
        root.list_subdir(b"locked", (0, 9), usage(100, 0), Default::default());
        let a = enter(&root, "a", 2, 0);
        a.list_entry();
        a.list_subdir(b"locked", (0, 11), usage(100, 0), Default::default());
        let b = enter(&a, "b", 3, 0);
        drop((b, a, root));
        // r/a/b and r/a/locked are below depth 1: counted, not printed.
        assert_eq!(out.take(), ["300\tr/a", "100\tr/locked", "1400\tr"]);
    }

    #[test]
    fn time_shows_the_newest_under_each_directory() {
        let mut out = Lines::new(&["--time", "--time-style=+%s"]);
        let root = out.operand("r");
        let a = enter(&root, "a", 2, 50);
        let b = enter(&a, "b", 3, 20);
        b.add(usage(1, 70));
        let c = enter(&root, "c", 4, 30);
        drop((c, b, a, root));
        let mut lines = out.take();
        lines.sort();
        assert_eq!(lines, ["100\t30\tr/c", "101\t70\tr/a/b", "1301\t70\tr", "201\t70\tr/a"]);
    }

    #[test]
    fn a_deep_node_finds_its_ancestors_shallow_and_deep() {
        let out = Lines::new(&["-s"]);
        let run = &out.run;
        // Devices of their own, so that other tests' deep nodes never match.
        let dev = 0xdee9;
        let mut node = Arc::new(Node::operand(run, b"r", usage(1, 0), (dev, 1_000_000), false));
        for level in 0..300 {
            node.list_subdir(b"d", (dev, level), usage(1, 0), Default::default());
            let listed = node.claim(b"d");
            node = Arc::new(Node::subdir(node, b"r/d", listed, || unreachable!()));
        }
        assert!(node.is_self_or_ancestor(dev, 1_000_000), "the operand");
        assert!(node.is_self_or_ancestor(dev, 3), "near the operand");
        assert!(node.is_self_or_ancestor(dev, 200), "deep");
        assert!(node.is_self_or_ancestor(dev, 299), "itself");
        assert!(!node.is_self_or_ancestor(dev, 300));
        assert!(!node.is_self_or_ancestor(dev + 1, 3));
        drop(node);
        assert!(
            deep().as_ref().is_none_or(|m| !m.keys().any(|&(d, _)| d == dev)),
            "dropped nodes are forgotten"
        );
    }

    #[test]
    fn a_deep_chain_completes_on_a_small_stack() {
        let out = Lines::new(&["-s"]);
        let worker = std::thread::Builder::new().stack_size(64 * 1024);
        let run = out.run.clone();
        worker
            .spawn(move || {
                let mut node = Arc::new(Node::operand(&run, b"r", usage(1, 0), (0, 0), false));
                for level in 0..100_000 {
                    node.list_subdir(b"d", (0, level), usage(1, 0), Default::default());
                    let listed = node.claim(b"d");
                    node = Arc::new(Node::subdir(node, b"r/d", listed, || unreachable!()));
                }
                drop(node);
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(out.run.grand_total().amount, 100_001);
    }
}
