//! The public face: [`WalkBuilder`], which gathers a walk's options and
//! runs it.
//!
//! Offers [`WalkBuilder`] (its option methods here; running a walk, in
//! `run`: [`visit`](WalkBuilder::visit), [`for_each`](WalkBuilder::for_each),
//! [`for_each_with`](WalkBuilder::for_each_with)), [`cores`] and
//! [`MAX_THREADS`]. Running resolves the options into the plain settings
//! the layers below read, folds every filter (the caller's, the ignore
//! rules, the closures) into one, and hands the walk to the scheduler.
//! Relies on everything below it: `schedule` to run the walk, the filters
//! (`hooks`, `ignore`), and the contracts (`settings`, `visit`, `entry`,
//! `filter`, `error`). The iterators (`crate::iter`) sit above it.

mod run;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::filter::{DirHook, EntryFilter, ErasedHook, RawEntry, Stateless};
use crate::hooks::{Keep, Prune};
use crate::ignore::IgnoreBuilder;
use crate::settings::{Order, Settings, Sort};

/// What the builder was told: the settings as given (resolved when the
/// walk starts), and what only the builder uses.
#[derive(Clone)]
pub(crate) struct Config {
    /// The options the layers below read, as given: `threads`, `io_depth`
    /// and `hook` are resolved when the walk starts.
    pub(crate) settings: Settings,
    pub(crate) max_open_fds: Option<usize>,
    /// The caller's hook and filter, judged in that order, before the
    /// ignore rules.
    pub(crate) hook: Option<Arc<dyn ErasedHook>>,
    pub(crate) filter: Option<Arc<dyn ErasedHook>>,
    /// Filters added by the closure conveniences, judged last.
    pub(crate) hooks: Vec<Arc<dyn ErasedHook>>,
    pub(crate) lenient: bool,
    /// Chunks an iterator's channel holds before the walk waits for the consumer.
    pub(crate) buffer_chunks: Option<usize>,
    /// A stop flag shared with the walk's owner (an iterator sets it when dropped).
    pub(crate) stop: Option<Arc<AtomicBool>>,
    /// Ignore-file rules, built into a filter for the walk's roots when it starts.
    pub(crate) ignore: Option<IgnoreBuilder>,
}

/// Builds and runs a walk.
///
/// ```
/// use fnd_walk::{Chunk, Flow, Order, Visitor, WalkBuilder};
///
/// struct Count(usize);
/// impl Visitor for Count {
///     fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
///         self.0 += chunk.len();
///         Flow::Continue
///     }
/// }
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir(dir.path().join("a")).unwrap();
/// std::fs::write(dir.path().join("a/b"), "x").unwrap();
/// let mut total = 0;
/// WalkBuilder::new(dir.path()).order(Order::DepthFirst).min_depth(1).visit(|| Count(0), |c| total += c.0);
/// assert_eq!(total, 2);
/// ```
#[derive(Clone)]
pub struct WalkBuilder {
    roots: Vec<PathBuf>,
    pub(crate) cfg: Config,
}

impl WalkBuilder {
    /// A walk over one root.
    pub fn new(root: impl AsRef<Path>) -> Self {
        WalkBuilder {
            roots: vec![root.as_ref().to_path_buf()],
            cfg: Config {
                settings: Settings {
                    order: Order::default(),
                    threads: cores(),
                    shallow_first: false,
                    io_depth: 0,
                    min_depth: 0,
                    max_depth: None,
                    follow_links: false,
                    same_file_system: false,
                    roots_within: None,
                    skip_hidden: false,
                    metadata: false,
                    sort: None,
                    whole_dirs: false,
                    chunk_size: 512,
                    visit_empty: false,
                    hook: None,
                },
                max_open_fds: None,
                hook: None,
                filter: None,
                hooks: Vec::new(),
                lenient: false,
                buffer_chunks: None,
                stop: None,
                ignore: None,
            },
        }
    }

    /// Another root, walked after (or, in parallel, alongside) the others.
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    /// #
    /// # let dir = tempfile::tempdir().unwrap();
    /// # std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    /// # std::fs::write(dir.path().join("a/b/file"), "12345").unwrap();
    /// # std::fs::write(dir.path().join(".hidden"), "").unwrap();
    /// # let root = dir.path();
    /// let walk = WalkBuilder::new(root.join("a")).add_root(root.join(".hidden"));
    /// assert_eq!(walk.roots().len(), 2);
    /// assert_eq!(walk.iter().count(), 4); // a, a/b, a/b/file, .hidden
    /// ```
    pub fn add_root(mut self, root: impl AsRef<Path>) -> Self {
        self.roots.push(root.as_ref().to_path_buf());
        self
    }

    /// The roots, in the order given.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// ```
    /// use fnd_walk::{Order, WalkBuilder};
    /// #
    /// # let dir = tempfile::tempdir().unwrap();
    /// # std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    /// # std::fs::write(dir.path().join("a/b/file"), "12345").unwrap();
    /// # std::fs::write(dir.path().join(".hidden"), "").unwrap();
    /// # let root = dir.path();
    /// let depths: Vec<usize> = WalkBuilder::new(root).order(Order::BreadthFirst).iter().map(|e| e.unwrap().depth()).collect();
    /// assert_eq!(depths, [0, 1, 1, 2, 3]);
    /// ```
    pub fn order(mut self, order: Order) -> Self {
        self.cfg.settings.order = order;
        self
    }

    /// Worker threads for [`Order::Parallel`] (0 means one per core).
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    /// #
    /// # let dir = tempfile::tempdir().unwrap();
    /// # std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    /// # std::fs::write(dir.path().join("a/b/file"), "12345").unwrap();
    /// # std::fs::write(dir.path().join(".hidden"), "").unwrap();
    /// # let root = dir.path();
    /// assert_eq!(WalkBuilder::new(root).threads(4).iter().count(), 5);
    /// ```
    ///
    /// At most [`MAX_THREADS`] are started: past that, threads only wait on
    /// each other (and `-j 100000` would take minutes just to spawn them).
    pub fn threads(mut self, n: usize) -> Self {
        let n = if n == 0 { cores() } else { n };
        self.cfg.settings.threads = n.min(MAX_THREADS);
        self
    }

    /// Most directory reads of a parallel walk that may wait on the file
    /// system at once (0 means the default: 128, shared among the ranks of
    /// an MPI job on the same node in `visit_ranks`, feature `mpi`).
    /// The walk starts with
    /// [`threads`](Self::threads) workers and, only when it sees its reads
    /// block (a cold cache, a network or FUSE mount), adds workers up to this
    /// many: blocked threads cost no CPU, and each keeps one request in
    /// flight. A depth at or below `threads` keeps the pool at `threads`;
    /// one above [`MAX_IO_DEPTH`] is taken as that. A worker whose thread
    /// cannot be started (`ulimit -u`, a pids cgroup) is done without: the
    /// walk goes on with those that started.
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut seen = 0;
    /// WalkBuilder::new(dir.path()).threads(2).io_depth(64).visit(|| Count(0), |c| seen += c.0);
    /// assert_eq!(seen, 1);
    /// # use fnd_walk::{Chunk, Flow, Visitor};
    /// # struct Count(usize);
    /// # impl Visitor for Count {
    /// #     fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow { self.0 += chunk.len(); Flow::Continue }
    /// # }
    /// ```
    pub fn io_depth(mut self, n: usize) -> Self {
        self.cfg.settings.io_depth = n;
        self
    }

    /// Let the workers of a parallel walk read the shallowest pending
    /// directories first (level by level, from one shared queue) instead of
    /// each going deep: entries near the roots come out sooner, which is
    /// what a search that stops at its first results wants. The frontier is
    /// bounded (1024 directories; past it the walk goes depth-first below
    /// it), so memory and open descriptors stay bounded; a whole walk is
    /// still a little faster depth-first. Applies to [`Order::Parallel`],
    /// also with one thread; the serial orders keep their own.
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::create_dir_all(dir.path().join("a/b/c/d")).unwrap();
    /// std::fs::write(dir.path().join("a/wanted"), "").unwrap();
    /// let first = WalkBuilder::new(dir.path()).threads(2).shallow_first(true).iter().flatten().find(|e| e.name_bytes() == b"wanted");
    /// assert_eq!(first.map(|e| e.depth()), Some(2));
    /// ```
    pub fn shallow_first(mut self, yes: bool) -> Self {
        self.cfg.settings.shallow_first = yes;
        self
    }

    /// Entries shallower than this are not yielded (a root is depth 0).
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    /// #
    /// # let dir = tempfile::tempdir().unwrap();
    /// # std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    /// # std::fs::write(dir.path().join("a/b/file"), "12345").unwrap();
    /// # std::fs::write(dir.path().join(".hidden"), "").unwrap();
    /// # let root = dir.path();
    /// let paths: Vec<_> = WalkBuilder::new(root).min_depth(2).iter().map(|e| e.unwrap().into_path()).collect();
    /// assert_eq!(paths, [root.join("a/b"), root.join("a/b/file")]);
    /// ```
    pub fn min_depth(mut self, depth: usize) -> Self {
        self.cfg.settings.min_depth = depth;
        self
    }

    /// Directories at this depth are yielded but not read.
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    /// #
    /// # let dir = tempfile::tempdir().unwrap();
    /// # std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    /// # std::fs::write(dir.path().join("a/b/file"), "12345").unwrap();
    /// # std::fs::write(dir.path().join(".hidden"), "").unwrap();
    /// # let root = dir.path();
    /// let mut paths: Vec<_> = WalkBuilder::new(root).max_depth(Some(1)).iter().map(|e| e.unwrap().into_path()).collect();
    /// paths.sort();
    /// assert_eq!(paths, [root.to_path_buf(), root.join(".hidden"), root.join("a")]);
    /// ```
    pub fn max_depth(mut self, depth: Option<usize>) -> Self {
        self.cfg.settings.max_depth = depth;
        self
    }

    /// Descend into symlinks to directories; a link back to an ancestor is
    /// reported as an error (a loop) and not walked.
    ///
    /// ```
    /// use fnd_walk::{FileType, WalkBuilder};
    /// #
    /// # let dir = tempfile::tempdir().unwrap();
    /// # std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    /// # std::fs::write(dir.path().join("a/b/file"), "12345").unwrap();
    /// # std::fs::write(dir.path().join(".hidden"), "").unwrap();
    /// # let root = dir.path();
    /// std::os::unix::fs::symlink("a", root.join("link")).unwrap();
    /// let through_link = |follow| {
    ///     WalkBuilder::new(root).follow_links(follow).iter().filter(|e| e.as_ref().unwrap().path().starts_with(root.join("link"))).count()
    /// };
    /// assert_eq!(through_link(false), 1); // the link itself
    /// assert_eq!(through_link(true), 3); // and link/b, link/b/file
    /// // A link to an ancestor is reported once, as a loop, and not walked.
    /// std::os::unix::fs::symlink("..", root.join("a/b/up")).unwrap();
    /// let loops = WalkBuilder::new(root).follow_links(true).iter().filter(|e| e.is_err()).count();
    /// assert!(loops >= 1);
    /// ```
    pub fn follow_links(mut self, yes: bool) -> Self {
        self.cfg.settings.follow_links = yes;
        self
    }

    /// Say that every root lies within `dir`, a real path (no symbolic
    /// link, `.` or `..`), with no symbolic link between: the walk then
    /// learns what it needs of the mounts from `dir` alone, not from each
    /// root. For many roots in one tree (an index brought up to date walks
    /// from each changed directory, 1,400 of them 20 levels down in a tree
    /// of a million entries), resolving each root's real path took a third
    /// of the walk. A root elsewhere is still walked, only maybe with one
    /// more `getdents64` call per directory than needed, or one less than
    /// a network file system under `dir` wants.
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    /// #
    /// # let dir = tempfile::tempdir().unwrap();
    /// # std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    /// # std::fs::create_dir_all(dir.path().join("c")).unwrap();
    /// let tree = dir.path().canonicalize().unwrap();
    /// let walk = WalkBuilder::new(tree.join("a")).add_root(tree.join("c")).roots_within(&tree);
    /// assert_eq!(walk.iter().count(), 3);
    /// ```
    pub fn roots_within(mut self, dir: impl AsRef<Path>) -> Self {
        self.cfg.settings.roots_within = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Do not read directories on another file system than their root.
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    /// #
    /// # let dir = tempfile::tempdir().unwrap();
    /// # std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    /// # std::fs::write(dir.path().join("a/b/file"), "12345").unwrap();
    /// # std::fs::write(dir.path().join(".hidden"), "").unwrap();
    /// # let root = dir.path();
    /// // The whole tree is on one file system: nothing is left out.
    /// assert_eq!(WalkBuilder::new(root).same_file_system(true).iter().count(), 5);
    /// ```
    pub fn same_file_system(mut self, yes: bool) -> Self {
        self.cfg.settings.same_file_system = yes;
        self
    }

    /// Skip entries whose name starts with `.` (and do not descend into them).
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    /// #
    /// # let dir = tempfile::tempdir().unwrap();
    /// # std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    /// # std::fs::write(dir.path().join("a/b/file"), "12345").unwrap();
    /// # std::fs::write(dir.path().join(".hidden"), "").unwrap();
    /// # let root = dir.path();
    /// assert_eq!(WalkBuilder::new(root).skip_hidden(true).iter().count(), 4);
    /// ```
    pub fn skip_hidden(mut self, yes: bool) -> Self {
        self.cfg.settings.skip_hidden = yes;
        self
    }

    /// Stat every yielded entry before its chunk is visited, relative to its
    /// directory, on the thread that read it (see [`EntryRef::cached_metadata`](crate::EntryRef::cached_metadata)).
    /// When a chunk's stats wait on the file system (a network or FUSE
    /// mount, a cold disk), that thread spreads them over helper threads,
    /// up to the [`io_depth`](Self::io_depth) for the whole walk.
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    /// #
    /// # let dir = tempfile::tempdir().unwrap();
    /// # std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    /// # std::fs::write(dir.path().join("a/b/file"), "12345").unwrap();
    /// # std::fs::write(dir.path().join(".hidden"), "").unwrap();
    /// # let root = dir.path();
    /// for entry in WalkBuilder::new(root).min_depth(1).metadata(true).iter() {
    ///     let entry = entry.unwrap();
    ///     let meta = entry.cached_metadata().expect("fetched by the walk");
    ///     if entry.path().ends_with("a/b/file") {
    ///         assert_eq!(meta.size, 5);
    ///     }
    /// }
    /// ```
    pub fn metadata(mut self, yes: bool) -> Self {
        self.cfg.settings.metadata = yes;
        self
    }

    /// Sort each directory's entries (a directory is then read whole before
    /// its entries are yielded) and read subdirectories in that order.
    ///
    /// ```
    /// use fnd_walk::{Order, Sort, WalkBuilder};
    /// #
    /// # let dir = tempfile::tempdir().unwrap();
    /// # std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    /// # std::fs::write(dir.path().join("a/b/file"), "12345").unwrap();
    /// # std::fs::write(dir.path().join(".hidden"), "").unwrap();
    /// # let root = dir.path();
    /// let names: Vec<_> = WalkBuilder::new(root)
    ///     .min_depth(1)
    ///     .max_depth(Some(1))
    ///     .order(Order::DepthFirst)
    ///     .sort(Some(Sort::Name))
    ///     .iter()
    ///     .map(|e| e.unwrap().file_name().to_owned())
    ///     .collect();
    /// assert_eq!(names, [".hidden", "a"]);
    /// ```
    pub fn sort(mut self, sort: Option<Sort>) -> Self {
        self.cfg.settings.sort = sort;
        self
    }

    /// Hand each directory read to the visitor as one chunk, in the order
    /// the file system lists it: never cut at [`chunk_size`](Self::chunk_size),
    /// and a huge directory never split among threads. A consumer that
    /// builds whole listings needs this (Python's `os.walk` tuples, in
    /// `crates/python`); [`sort`](Self::sort) implies it, at the price of
    /// the sort.
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// for i in 0..2000 {
    ///     std::fs::write(dir.path().join(format!("f{i}")), "").unwrap();
    /// }
    /// let walk = WalkBuilder::new(dir.path()).min_depth(1).chunk_size(100).whole_dirs(true);
    /// let sizes: Vec<usize> = walk.chunks().map(|c| c.unwrap().len()).collect();
    /// assert_eq!(sizes, [2000]);
    /// ```
    pub fn whole_dirs(mut self, yes: bool) -> Self {
        self.cfg.settings.whole_dirs = yes;
        self
    }

    /// Most entries per chunk.
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    /// #
    /// # let dir = tempfile::tempdir().unwrap();
    /// # std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    /// # std::fs::write(dir.path().join("a/b/file"), "12345").unwrap();
    /// # std::fs::write(dir.path().join(".hidden"), "").unwrap();
    /// # let root = dir.path();
    /// for i in 0..10 {
    ///     std::fs::write(root.join(format!("f{i}")), "").unwrap();
    /// }
    /// let sizes: Vec<usize> = WalkBuilder::new(root).min_depth(1).max_depth(Some(1)).chunk_size(4).chunks().map(|c| c.unwrap().len()).collect();
    /// assert!(sizes.iter().all(|&n| n <= 4));
    /// assert_eq!(sizes.iter().sum::<usize>(), 12);
    /// ```
    pub fn chunk_size(mut self, n: usize) -> Self {
        self.cfg.settings.chunk_size = n.max(1);
        self
    }

    /// Hand each directory's last chunk to the visitor even when it holds
    /// no entry, so that an empty directory (or one whose entries the
    /// filters all dropped) is seen too. With [`whole_dirs`](Self::whole_dirs)
    /// (or [`sort`](Self::sort)) every
    /// directory read is then exactly one chunk: what a consumer that
    /// builds whole listings needs (Python's `os.walk` tuples, in
    /// `crates/python`), since it can tell an empty directory from one not
    /// read yet.
    /// ```
    /// use fnd_walk::{Sort, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::create_dir(dir.path().join("empty")).unwrap();
    /// let chunks = |visit_empty| {
    ///     let walk = WalkBuilder::new(dir.path()).min_depth(1).sort(Some(Sort::Name)).visit_empty(visit_empty);
    ///     walk.chunks().map(|c| c.unwrap().len()).collect::<Vec<_>>()
    /// };
    /// assert_eq!(chunks(false), [1]); // the root's listing: `empty`
    /// assert_eq!(chunks(true).len(), 2); // and the empty one of `empty`
    /// ```
    pub fn visit_empty(mut self, yes: bool) -> Self {
        self.cfg.settings.visit_empty = yes;
        self
    }

    /// Most directory descriptors kept open for later `openat`s (default:
    /// from `RLIMIT_NOFILE`, leaving room for the rest of the process).
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    /// #
    /// # let dir = tempfile::tempdir().unwrap();
    /// # std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    /// # std::fs::write(dir.path().join("a/b/file"), "12345").unwrap();
    /// # std::fs::write(dir.path().join(".hidden"), "").unwrap();
    /// # let root = dir.path();
    /// // With no descriptor kept, every directory is opened by path from its root.
    /// assert_eq!(WalkBuilder::new(root).max_open_fds(0).iter().count(), 5);
    /// ```
    pub fn max_open_fds(mut self, n: usize) -> Self {
        self.cfg.max_open_fds = Some(n);
        self
    }

    /// Decide per entry whether it is yielded and whether the walk
    /// descends, with `filter` (see [`EntryFilter`] for an example). One
    /// filter per walk: a second call replaces the first. It is asked after
    /// the [`hook`](Self::hook), before the ignore rules and the closures of
    /// [`prune`](Self::prune) and [`keep`](Self::keep); an entry is yielded
    /// (or descended into) when all of them agree.
    pub fn filter(mut self, filter: impl EntryFilter) -> Self {
        self.cfg.filter = Some(Arc::new(Stateless(filter)));
        self
    }

    /// Give every directory a state of `hook`'s, inherited from its parent's,
    /// and decide per entry with it (see [`DirHook`] for an example). One
    /// hook per walk: a second call replaces the first. It is asked first,
    /// before the [`filter`](Self::filter), the ignore rules and the
    /// closures.
    pub fn hook(mut self, hook: impl DirHook) -> Self {
        self.cfg.hook = Some(Arc::new(hook));
        self
    }

    /// Skip the errors a walk over a live tree meets as a matter of course
    /// (see [`Error::is_benign`](crate::Error::is_benign): permission denied, an entry that vanished,
    /// a symlink loop) instead of reporting them. Errors at a root are
    /// reported all the same: a missing root is an error.
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let missing = dir.path().join("missing");
    /// let errors: Vec<_> = WalkBuilder::new(&missing).lenient(true).iter().filter_map(Result::err).collect();
    /// assert_eq!(errors.len(), 1);
    /// assert_eq!(errors[0].path(), missing);
    /// ```
    pub fn lenient(mut self, yes: bool) -> Self {
        self.cfg.lenient = yes;
        self
    }

    /// Do not read the directories for which `prune` returns true; they are
    /// still yielded. It sees each directory (and each symlink to one, when
    /// the walk follows links) once, on the thread that lists it, before the
    /// walk decides to descend. Several prunes and [`keep`](Self::keep)s
    /// combine: all must agree.
    ///
    /// ```
    /// use fnd_walk::{Order, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::create_dir_all(dir.path().join("target/debug")).unwrap();
    /// std::fs::create_dir_all(dir.path().join("src")).unwrap();
    /// let names: Vec<_> = WalkBuilder::new(dir.path())
    ///     .min_depth(1)
    ///     .order(Order::DepthFirst)
    ///     .sort(Some(fnd_walk::Sort::Name))
    ///     .prune(|dir| dir.name == b"target")
    ///     .iter()
    ///     .map(|e| e.unwrap().file_name().to_owned())
    ///     .collect();
    /// assert_eq!(names, ["src", "target"]);
    /// ```
    pub fn prune(mut self, prune: impl Fn(&RawEntry<'_>) -> bool + Send + Sync + 'static) -> Self {
        self.cfg.hooks.push(Arc::new(Stateless(Prune(Box::new(prune)))));
        self
    }

    /// Yield only the entries for which `keep` returns true. Unlike
    /// [`prune`](Self::prune) this decides nothing about descending: the
    /// walk still reads directories it does not yield. Entries are judged on
    /// the reading thread, before they are batched, so dropped ones cost no
    /// copy and, with [`metadata`](Self::metadata), no stat. Roots are not
    /// judged (use [`min_depth`](Self::min_depth)`(1)` to leave them out).
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::create_dir(dir.path().join("src")).unwrap();
    /// std::fs::write(dir.path().join("src/main.rs"), "fn main() {}").unwrap();
    /// std::fs::write(dir.path().join("README"), "").unwrap();
    /// let rust: Vec<_> = WalkBuilder::new(dir.path())
    ///     .min_depth(1)
    ///     .keep(|e| e.name.ends_with(b".rs"))
    ///     .iter()
    ///     .map(|e| e.unwrap().into_path())
    ///     .collect();
    /// assert_eq!(rust, [dir.path().join("src/main.rs")]);
    /// ```
    pub fn keep(mut self, keep: impl Fn(&RawEntry<'_>) -> bool + Send + Sync + 'static) -> Self {
        self.cfg.hooks.push(Arc::new(Stateless(Keep(Box::new(keep)))));
        self
    }

    /// Skip what `.gitignore` files (inside git repositories),
    /// `.git/info/exclude`, git's global excludes file and `.ignore` files
    /// exclude, with the precedence of the `ignore` crate, reading the ignore
    /// files of the directories above each root too. Hidden entries are
    /// governed by [`skip_hidden`](Self::skip_hidden) alone. For finer
    /// control, see [`ignore_rules`](Self::ignore_rules).
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join(".ignore"), "*.log\n").unwrap();
    /// std::fs::write(dir.path().join("build.log"), "").unwrap();
    /// std::fs::write(dir.path().join("main.rs"), "").unwrap();
    /// let names: Vec<_> = WalkBuilder::new(dir.path())
    ///     .min_depth(1)
    ///     .skip_hidden(true)
    ///     .git_ignore(true)
    ///     .iter()
    ///     .map(|e| e.unwrap().file_name().to_owned())
    ///     .collect();
    /// assert_eq!(names, ["main.rs"]);
    /// ```
    pub fn git_ignore(self, yes: bool) -> Self {
        self.ignore_rules(yes.then(|| IgnoreBuilder::new().hidden(false)))
    }

    /// Apply these ignore-file rules (which files, custom names, overrides,
    /// hidden entries; see [`IgnoreBuilder`]),
    /// or none. Rules are read relative to each directory's open descriptor
    /// as the walk enters it.
    ///
    /// ```
    /// use fnd_walk::{ignore::IgnoreBuilder, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join(".fdignore"), "secret\n").unwrap();
    /// std::fs::write(dir.path().join("secret"), "").unwrap();
    /// std::fs::write(dir.path().join("public"), "").unwrap();
    /// let rules = IgnoreBuilder::new().parents(false).add_custom_name(".fdignore");
    /// let names: Vec<_> = WalkBuilder::new(dir.path())
    ///     .min_depth(1)
    ///     .ignore_rules(Some(rules))
    ///     .iter()
    ///     .map(|e| e.unwrap().file_name().to_owned())
    ///     .collect();
    /// assert_eq!(names, ["public"]); // .fdignore is hidden: the rules skip hidden entries
    /// ```
    pub fn ignore_rules(mut self, rules: Option<IgnoreBuilder>) -> Self {
        self.cfg.ignore = rules;
        self
    }
}

/// The most worker threads a walk starts, whatever it is asked for.
pub const MAX_THREADS: usize = 256;

/// The deepest [`io_depth`](WalkBuilder::io_depth) a walk takes, whatever it
/// is asked for: each read in flight is a thread, and past a device's queue
/// more only wait on each other (the default is 128).
pub const MAX_IO_DEPTH: usize = 1024;

/// The cores this process may run on (the default thread count), asked once:
/// each ask reads the cgroup's CPU quota, a dozen system calls.
///
/// ```
/// assert!(fnd_walk::cores() >= 1);
/// ```
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}
