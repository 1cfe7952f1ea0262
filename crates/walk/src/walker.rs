//! Walk configuration and the entry point that runs a walk with a visitor.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::dir::Dir;
use crate::entry::{Chunk, EntryRef};
use crate::error::Error;
use crate::filter::{EntryFilter, RawEntry};

/// The order directories are read in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Order {
    /// Level by level: all entries of depth 1, then of depth 2, …
    /// (within a level, directories in the order they were found).
    BreadthFirst,
    /// One directory's entries, then each of its subdirectories' subtrees in
    /// listing order, recursively. Single-threaded and deterministic.
    DepthFirst,
    /// Directories shared between worker threads; directories interleave,
    /// and a huge directory may be read by several threads at once (on
    /// ext4), its chunks interleaving too.
    #[default]
    Parallel,
}

/// How entries are sorted within each directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    /// By name bytes.
    Name,
}

impl Sort {
    pub(crate) fn sort_chunk(&self, chunk: &mut Chunk) {
        let names = &chunk.names;
        let name = |s: &crate::entry::Slot| &names[s.name_start as usize..(s.name_start + s.name_len) as usize];
        chunk.slots.sort_unstable_by(|a, b| name(a).cmp(name(b)));
    }

    pub(crate) fn sort_children<T: ChildName>(&self, children: &mut [T], names: &[u8]) {
        children.sort_unstable_by(|a, b| a.name(names).cmp(b.name(names)));
    }
}

/// A child record whose name lives in a shared buffer.
pub(crate) trait ChildName {
    fn name<'a>(&self, names: &'a [u8]) -> &'a [u8];
}

/// Whether the walk goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on walking.
    Continue,
    /// Stop the whole walk: every thread stops at its next chunk.
    Stop,
}

/// Receives the walk's output on the thread that read it. In a parallel walk
/// each worker thread has its own visitor (see [`WalkBuilder::visit`]).
pub trait Visitor: Send {
    /// A batch of entries from one directory. The chunk may be emptied or
    /// taken ([`Chunk::take`]); the walk reuses its buffers afterwards.
    fn visit(&mut self, chunk: &mut Chunk) -> Flow;

    /// An error at one path; the walk goes on unless this returns `Stop`.
    fn error(&mut self, error: Error) -> Flow {
        let _ = error;
        Flow::Continue
    }
}

#[derive(Clone)]
pub(crate) struct Config {
    pub(crate) order: Order,
    pub(crate) threads: usize,
    /// Parallel workers take their shallowest pending directory first.
    pub(crate) shallow_first: bool,
    /// Most workers of a parallel walk once its reads wait on I/O (see `crate::io`).
    pub(crate) io_depth: usize,
    pub(crate) min_depth: usize,
    pub(crate) max_depth: Option<usize>,
    pub(crate) follow_links: bool,
    pub(crate) same_file_system: bool,
    pub(crate) skip_hidden: bool,
    pub(crate) metadata: bool,
    pub(crate) sort: Option<Sort>,
    pub(crate) chunk_size: usize,
    pub(crate) max_open_fds: Option<usize>,
    pub(crate) filter: Option<Arc<dyn EntryFilter>>,
    /// Filters added by the closure conveniences, judged after `filter`.
    pub(crate) hooks: Vec<Arc<dyn EntryFilter>>,
    pub(crate) lenient: bool,
    /// Chunks an iterator's channel holds before the walk waits for the consumer.
    pub(crate) buffer_chunks: Option<usize>,
    /// A stop flag shared with the walk's owner (an iterator sets it when dropped).
    pub(crate) stop: Option<Arc<AtomicBool>>,
    /// Ignore-file rules, built into a filter for the walk's roots when it starts.
    pub(crate) ignore: Option<crate::ignore::IgnoreBuilder>,
}

/// Builds and runs a walk.
///
/// ```
/// use fnd_walk::{Chunk, Flow, Order, Visitor, WalkBuilder};
///
/// struct Count(usize);
/// impl Visitor for Count {
///     fn visit(&mut self, chunk: &mut Chunk) -> Flow {
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
                order: Order::default(),
                threads: cores(),
                shallow_first: false,
                io_depth: crate::io::AUTO_IO_DEPTH,
                min_depth: 0,
                max_depth: None,
                follow_links: false,
                same_file_system: false,
                skip_hidden: false,
                metadata: false,
                sort: None,
                chunk_size: 512,
                max_open_fds: None,
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
        self.cfg.order = order;
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
        self.cfg.threads = n.min(MAX_THREADS);
        self
    }

    /// Most directory reads of a parallel walk that may wait on the file
    /// system at once (0 means the default, 128). The walk starts with
    /// [`threads`](Self::threads) workers and, only when it sees its reads
    /// block (a cold cache, a network or FUSE mount), adds workers up to this
    /// many: blocked threads cost no CPU, and each keeps one request in
    /// flight. A depth at or below `threads` keeps the pool at `threads`.
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
    /// #     fn visit(&mut self, chunk: &mut Chunk) -> Flow { self.0 += chunk.len(); Flow::Continue }
    /// # }
    /// ```
    pub fn io_depth(mut self, n: usize) -> Self {
        self.cfg.io_depth = if n == 0 { crate::io::AUTO_IO_DEPTH } else { n };
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
        self.cfg.shallow_first = yes;
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
        self.cfg.min_depth = depth;
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
        self.cfg.max_depth = depth;
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
        self.cfg.follow_links = yes;
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
        self.cfg.same_file_system = yes;
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
        self.cfg.skip_hidden = yes;
        self
    }

    /// Stat every yielded entry before its chunk is visited, relative to its
    /// directory, on the thread that read it (see [`EntryRef::cached_metadata`](crate::EntryRef::cached_metadata)).
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
        self.cfg.metadata = yes;
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
        self.cfg.sort = sort;
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
        self.cfg.chunk_size = n.max(1);
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

    /// Decide per entry whether it is yielded and whether the walk descends.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fnd_walk::{Decision, DirInfo, EntryFilter, FilterState, RawEntry, WalkBuilder};
    ///
    /// /// Yields only entries with short names, and does not descend into `b`.
    /// struct Short;
    /// impl EntryFilter for Short {
    ///     fn enter(&self, _: &DirInfo<'_>, _: Option<&FilterState>) -> Option<FilterState> {
    ///         None
    ///     }
    ///     fn decide(&self, _: Option<&FilterState>, entry: &RawEntry<'_>) -> Decision {
    ///         Decision { emit: entry.name.len() <= 2, descend: entry.name != b"b" }
    ///     }
    /// }
    /// #
    /// # let dir = tempfile::tempdir().unwrap();
    /// # std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    /// # std::fs::write(dir.path().join("a/b/file"), "12345").unwrap();
    /// # std::fs::write(dir.path().join(".hidden"), "").unwrap();
    /// # let root = dir.path();
    /// let paths: Vec<_> = WalkBuilder::new(root).min_depth(1).filter(Some(Arc::new(Short))).iter().map(|e| e.unwrap().into_path()).collect();
    /// assert_eq!(paths.len(), 2); // a, a/b; not a/b/file, not .hidden
    /// ```
    pub fn filter(mut self, filter: Option<Arc<dyn EntryFilter>>) -> Self {
        self.cfg.filter = filter;
        self
    }

    /// Run the walk. `make` creates one visitor per worker thread (one in
    /// all for the serial orders); `done` receives each visitor when its
    /// thread has finished, on the calling thread.
    pub fn visit<V, M, D>(&self, make: M, mut done: D)
    where
        V: Visitor,
        M: Fn() -> V + Sync,
        D: FnMut(V),
    {
        let shared = Shared::new(self);
        let shared = &shared;
        let guard = || Guard {
            visitor: Some(make()),
            shared,
            lenient: self.cfg.lenient,
        };
        crate::schedule::run(shared, guard, |mut guard| {
            done(guard.visitor.take().expect("a visitor per guard"))
        });
    }

    /// Skip the errors a walk over a live tree meets as a matter of course
    /// (see [`Error::is_benign`]: permission denied, an entry that vanished,
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
        self.cfg.hooks.push(Arc::new(crate::hooks::Prune(Box::new(prune))));
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
        self.cfg.hooks.push(Arc::new(crate::hooks::Keep(Box::new(keep))));
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
        self.ignore_rules(yes.then(|| crate::ignore::IgnoreBuilder::new().hidden(false)))
    }

    /// Apply these ignore-file rules (which files, custom names, overrides,
    /// hidden entries; see [`IgnoreBuilder`](crate::ignore::IgnoreBuilder)),
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
    pub fn ignore_rules(mut self, rules: Option<crate::ignore::IgnoreBuilder>) -> Self {
        self.cfg.ignore = rules;
        self
    }

    /// Run the walk, calling `f` for every entry and error on the thread
    /// that read it (so `f` is shared between threads). Returning
    /// [`Flow::Stop`] stops every thread at its next chunk.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use fnd_walk::{Flow, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// for name in ["a", "b", "c"] {
    ///     std::fs::write(dir.path().join(name), "").unwrap();
    /// }
    /// let files = AtomicUsize::new(0);
    /// WalkBuilder::new(dir.path()).threads(2).for_each(|entry| {
    ///     if entry.map_or(false, |e| e.file_type().is_file()) {
    ///         files.fetch_add(1, Ordering::Relaxed);
    ///     }
    ///     Flow::Continue
    /// });
    /// assert_eq!(files.into_inner(), 3);
    /// ```
    pub fn for_each<F>(&self, f: F)
    where
        F: Fn(Result<EntryRef<'_>, Error>) -> Flow + Sync,
    {
        self.for_each_with(|| (), |_, entry| f(entry));
    }

    /// Like [`for_each`](Self::for_each), with a state per worker thread
    /// made by `init`: no locks or atomics in the hot loop. Returns the
    /// states, one per thread, for the caller to combine.
    ///
    /// ```
    /// use fnd_walk::{Flow, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join("a"), "12345").unwrap();
    /// std::fs::write(dir.path().join("b"), "678").unwrap();
    /// let sizes = WalkBuilder::new(dir.path()).min_depth(1).metadata(true).for_each_with(
    ///     || 0u64,
    ///     |total, entry| {
    ///         if let Some(m) = entry.ok().and_then(|e| e.cached_metadata()) {
    ///             *total += m.size;
    ///         }
    ///         Flow::Continue
    ///     },
    /// );
    /// assert_eq!(sizes.iter().sum::<u64>(), 8);
    /// ```
    pub fn for_each_with<S, I, F>(&self, init: I, f: F) -> Vec<S>
    where
        S: Send,
        I: Fn() -> S + Sync,
        F: Fn(&mut S, Result<EntryRef<'_>, Error>) -> Flow + Sync,
    {
        let mut states = Vec::new();
        let f = &f;
        self.visit(|| EntryVisitor { state: init(), f }, |v| states.push(v.state));
        states
    }
}

/// Runs a closure per entry (see [`WalkBuilder::for_each_with`]).
struct EntryVisitor<'f, S, F> {
    state: S,
    f: &'f F,
}

impl<S, F> Visitor for EntryVisitor<'_, S, F>
where
    S: Send,
    F: Fn(&mut S, Result<EntryRef<'_>, Error>) -> Flow + Sync,
{
    fn visit(&mut self, chunk: &mut Chunk) -> Flow {
        for entry in chunk.iter() {
            if (self.f)(&mut self.state, Ok(entry)) == Flow::Stop {
                return Flow::Stop;
            }
        }
        Flow::Continue
    }

    fn error(&mut self, error: Error) -> Flow {
        (self.f)(&mut self.state, Err(error))
    }
}

/// Wraps each thread's visitor: drops benign errors below the roots when the
/// walk is lenient, and stops the walk when the thread unwinds (a panic in a
/// visitor or filter), so the other threads do not wait for its jobs forever.
struct Guard<'a, V> {
    visitor: Option<V>,
    shared: &'a Shared,
    lenient: bool,
}

impl<V: Visitor> Visitor for Guard<'_, V> {
    fn visit(&mut self, chunk: &mut Chunk) -> Flow {
        self.visitor
            .as_mut()
            .expect("visitor taken only at the end")
            .visit(chunk)
    }

    fn error(&mut self, error: Error) -> Flow {
        if self.lenient && error.is_benign() && error.depth() > 0 {
            return Flow::Continue;
        }
        self.visitor
            .as_mut()
            .expect("visitor taken only at the end")
            .error(error)
    }
}

impl<V> Drop for Guard<'_, V> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.stop();
        }
    }
}

/// The most worker threads a walk starts, whatever it is asked for.
pub const MAX_THREADS: usize = 256;

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

/// Directory descriptors kept open by all walks of the process: the limit
/// is per process, so the budget is too.
static OPEN_FDS: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn reserve_fd(shared: &Shared) -> bool {
    if OPEN_FDS.fetch_add(1, Ordering::AcqRel) < shared.fd_budget {
        true
    } else {
        OPEN_FDS.fetch_sub(1, Ordering::AcqRel);
        false
    }
}

pub(crate) fn release_fd() {
    OPEN_FDS.fetch_sub(1, Ordering::AcqRel);
}

/// Descriptors one worker may hold at once: the directory it reads, two
/// for an open by path, and one to spare.
const FDS_PER_WORKER: usize = 4;

/// Up to `wanted` workers are about to be added to a walk that waits on
/// I/O: reserve their descriptors out of the budget the walk keeps
/// directories open with, and return for how many workers it could. The
/// budget only reserves for the CPU workers up front: at 4 per worker,
/// a reserve for an I/O depth of 128 took half of a 1024-descriptor limit
/// on every walk, and a hot `-1` search of the million tree that never
/// adds a worker took 1.04x as long. A budget the caller set counts kept
/// directories only, so added workers take nothing from it.
pub(crate) fn reserve_worker_fds(shared: &Shared, wanted: usize) -> usize {
    let per_worker = shared.fds_per_added_worker;
    if per_worker == 0 {
        return wanted;
    }
    let mut granted = 0;
    let _ = OPEN_FDS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
        granted = (shared.fd_budget.saturating_sub(open) / per_worker).min(wanted);
        Some(open + granted * per_worker)
    });
    granted
}

/// Workers reserved for have finished.
pub(crate) fn release_worker_fds(shared: &Shared, workers: usize) {
    OPEN_FDS.fetch_sub(workers * shared.fds_per_added_worker, Ordering::AcqRel);
}

/// What every thread of one walk shares.
pub(crate) struct Shared {
    pub(crate) cfg: Config,
    pub(crate) roots: Vec<Vec<u8>>,
    stop: Arc<AtomicBool>,
    fd_budget: usize,
    /// Descriptors a worker added for I/O reserves out of `fd_budget`.
    fds_per_added_worker: usize,
    /// Whether a short `getdents64` read is a directory's last (see `mounts`).
    short_read_ends: std::sync::OnceLock<bool>,
}

impl Shared {
    fn new(b: &WalkBuilder) -> Self {
        let threads = if b.cfg.order == Order::Parallel {
            b.cfg.threads.max(1)
        } else {
            1
        };
        // One worker runs serially, without the pool that could grow.
        let io_depth = if threads > 1 {
            crate::io::pool_size(threads, b.cfg.io_depth)
        } else {
            1
        };
        let fd_budget = b.cfg.max_open_fds.unwrap_or_else(|| {
            let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile)
                .current
                .unwrap_or(1024) as usize;
            // Each CPU worker may hold a directory being read plus two for
            // an open by path; stdio and the caller need a few more. Workers
            // added for I/O reserve theirs when they start.
            limit.saturating_sub(16 + FDS_PER_WORKER * threads).min(4096)
        });
        let ignore = b
            .cfg
            .ignore
            .clone()
            .map(|rules| Arc::new(rules.build(&b.roots)) as Arc<dyn EntryFilter>);
        let filters = b
            .cfg
            .filter
            .iter()
            .cloned()
            .chain(ignore)
            .chain(b.cfg.hooks.iter().cloned());
        let filter = crate::hooks::Chain::of(filters);
        Shared {
            cfg: Config {
                threads,
                io_depth,
                filter,
                ..b.cfg.clone()
            },
            roots: b.roots.iter().map(|r| r.as_os_str().as_bytes().to_vec()).collect(),
            stop: b.cfg.stop.clone().unwrap_or_default(),
            fd_budget,
            fds_per_added_worker: if b.cfg.max_open_fds.is_some() {
                0
            } else {
                FDS_PER_WORKER
            },
            short_read_ends: std::sync::OnceLock::new(),
        }
    }

    /// Whether a short `getdents64` read is a directory's last, found out
    /// on the first call (see `mounts`).
    pub(crate) fn short_read_ends(&self) -> bool {
        *self.short_read_ends.get_or_init(|| {
            let roots = self.roots.iter().map(|r| Path::new(OsStr::from_bytes(r)));
            crate::mounts::short_read_ends(roots, self.cfg.follow_links)
        })
    }

    pub(crate) fn short_read_ends_if_known(&self) -> Option<bool> {
        self.short_read_ends.get().copied()
    }

    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    pub(crate) fn follow_links(&self) -> bool {
        self.cfg.follow_links
    }

    pub(crate) fn root_path(&self, root: usize) -> &[u8] {
        &self.roots[root]
    }

    /// Device of the root a directory lies under.
    pub(crate) fn root_dev(&self, dir: &Arc<Dir>) -> u64 {
        let mut d: &Arc<Dir> = dir;
        while let Some(p) = &d.parent {
            d = p;
        }
        d.dev
    }
}
