//! `fnd_walk.walk`: `os.walk`'s `(dirpath, dirnames, filenames)` tuples
//! from a parallel walk.
//!
//! The walk reads each directory whole (`WalkBuilder::whole_dirs`: one
//! chunk, never split among threads; an empty one too:
//! `WalkBuilder::visit_empty`), its names in the order the file system
//! lists them, as `os.walk` gives them; its threads turn each into a
//! [`Listing`], sorting symlinks to directories into `dirnames` as
//! `os.walk` does (one `fstatat` per symlink), and hand them over in
//! batches ([`Batch`]: the names of a thousand entries in one buffer).
//! Listings arrive in the order the threads finish them; Python's thread
//! puts them in an order `os.walk` allows:
//!
//! * top-down, a directory only after its parent, and only once the
//!   caller, having seen the parent, kept it in `dirnames`: a name taken
//!   out prunes its subtree (its listings, already read or not, are
//!   dropped, and the walk is told not to read below it);
//! * bottom-up, a directory only after every subdirectory's tuple.
//!
//! Errors reading a directory go to `onerror` in the directory's place,
//! as `os.walk` calls it for a directory it cannot list.

use std::collections::VecDeque;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use fnd_walk::{Chunk, EntryRef, Error, ErrorKind, FileType, Flow, RawEntry, Visitor, WalkBuilder};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
// The maps below are keyed by paths the walk made, not by outside input,
// and every directory passes through them once or twice on Python's
// thread: SipHash was a fifth of that thread's time.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::errors::{os_error, report, walk_error};
use crate::stream::{Outlet, Stream, BATCH_ENTRIES};
use crate::text::{decode, encode, path_arg, Spelling};

/// What `os.walk` makes of an entry.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    /// A symlink to a directory: in `dirnames`, walked only with `followlinks`.
    LinkToDir,
    /// Everything else, a dangling symlink too: `filenames`.
    Other,
}

/// The names of the directories one walking thread read, end to end in
/// one buffer: a batch of them costs a few allocations, not two per
/// directory, which Python's thread would free one by one (another
/// thread's memory: glibc's slow path, with a lock).
pub struct Names {
    bytes: Vec<u8>,
    /// Each name's end in `bytes`, and what `os.walk` makes of the entry.
    ends: Vec<(usize, Kind)>,
}

/// Where one directory is in its [`Names`].
#[derive(Clone, Copy)]
struct Span {
    /// Where its path starts in `bytes`; its names follow it.
    start: usize,
    dir_len: usize,
    /// Its names' range in `ends`.
    first: usize,
    last: usize,
    /// How many of them go to `dirnames`.
    dirs: usize,
}

/// One directory, read whole: its path and its entries' names.
pub struct Listing {
    names: Arc<Names>,
    span: Span,
}

impl Listing {
    fn dir(&self) -> &[u8] {
        let start = self.span.start;
        &self.names.bytes[start..start + self.span.dir_len]
    }

    fn len(&self) -> usize {
        self.span.last - self.span.first
    }

    fn dirs(&self) -> usize {
        self.span.dirs
    }

    fn entries(&self) -> impl Iterator<Item = (&[u8], Kind)> + '_ {
        let mut start = self.span.start + self.span.dir_len;
        let ends = &self.names.ends[self.span.first..self.span.last];
        ends.iter().map(move |&(end, kind)| {
            let name = &self.names.bytes[start..end];
            start = end;
            (name, kind)
        })
    }

    /// The subdirectories the walk goes on into.
    fn walked(&self, follow: bool) -> impl Iterator<Item = &[u8]> + '_ {
        self.entries()
            .filter(move |&(_, kind)| kind == Kind::Dir || (follow && kind == Kind::LinkToDir))
            .map(|(name, _)| name)
    }

    /// The listing in a buffer of its own: one kept waiting no longer
    /// holds on to the rest of its batch.
    fn detach(self) -> Listing {
        if Arc::strong_count(&self.names) == 1 {
            return self;
        }
        let Span {
            start,
            dir_len,
            first,
            last,
            ..
        } = self.span;
        let ends = &self.names.ends[first..last];
        let end = ends.last().map_or(start + dir_len, |&(end, _)| end);
        let names = Names {
            bytes: self.names.bytes[start..end].to_vec(),
            ends: ends.iter().map(|&(end, kind)| (end - start, kind)).collect(),
        };
        Listing {
            span: Span {
                start: 0,
                first: 0,
                last: names.ends.len(),
                ..self.span
            },
            names: Arc::new(names),
        }
    }
}

/// What crosses from the walking threads: the directories one of them
/// read and the errors it met, in the order met.
pub struct Batch {
    names: Names,
    pieces: Vec<Result<Span, Error>>,
}

/// What Python's thread makes of a batch's pieces.
pub enum Piece {
    Listing(Listing),
    Error(Error),
}

impl Piece {
    /// See [`Listing::detach`].
    fn detach(self) -> Piece {
        match self {
            Piece::Listing(l) => Piece::Listing(l.detach()),
            error => error,
        }
    }

    fn path(&self) -> &[u8] {
        match self {
            Piece::Listing(l) => l.dir(),
            Piece::Error(e) => e.path().as_os_str().as_bytes(),
        }
    }
}

/// A walking thread's visitor: gathers whole listings into a [`Batch`]
/// and hands it over every [`BATCH_ENTRIES`] entries.
struct Lister {
    outlet: Outlet<Batch>,
    follow: bool,
    batch: Batch,
    entries: usize,
}

impl Lister {
    fn new(outlet: Outlet<Batch>, follow: bool) -> Self {
        Lister {
            outlet,
            follow,
            batch: Batch {
                names: Names {
                    bytes: Vec::new(),
                    ends: Vec::new(),
                },
                pieces: Vec::new(),
            },
            entries: 0,
        }
    }

    fn kind(&self, entry: &EntryRef<'_>) -> Kind {
        match entry.file_type() {
            FileType::Dir => Kind::Dir,
            FileType::Symlink => {
                // os.walk asks `DirEntry.is_dir()`, which follows the link.
                let target = if self.follow {
                    entry.target_type()
                } else {
                    entry.metadata_follow().map_or(FileType::Symlink, |m| m.file_type())
                };
                if target == FileType::Dir {
                    Kind::LinkToDir
                } else {
                    Kind::Other
                }
            }
            _ => Kind::Other,
        }
    }

    fn flush(&mut self) -> Flow {
        if self.batch.pieces.is_empty() {
            return Flow::Continue;
        }
        self.entries = 0;
        // The next batch is sized like this one (up to a bound: one huge
        // directory is no guide): growing it name by name was most of this
        // thread's time in malloc.
        let next = Batch {
            names: Names {
                bytes: Vec::with_capacity(self.batch.names.bytes.len().min(64 * BATCH_ENTRIES)),
                ends: Vec::with_capacity(self.batch.names.ends.len().min(2 * BATCH_ENTRIES)),
            },
            pieces: Vec::with_capacity(self.batch.pieces.len().min(BATCH_ENTRIES)),
        };
        self.outlet.send(vec![std::mem::replace(&mut self.batch, next)])
    }

    fn counted(&mut self, entries: usize) -> Flow {
        self.entries += entries;
        if self.entries >= BATCH_ENTRIES {
            return self.flush();
        }
        Flow::Continue
    }
}

impl Visitor for Lister {
    fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
        if self.outlet.cancelled() {
            return Flow::Stop;
        }
        let dir = chunk.parent_path().as_os_str().as_bytes();
        let names = &self.batch.names;
        let mut span = Span {
            start: names.bytes.len(),
            dir_len: dir.len(),
            first: names.ends.len(),
            last: 0,
            dirs: 0,
        };
        self.batch.names.bytes.extend_from_slice(dir);
        for entry in chunk.iter() {
            let kind = self.kind(&entry);
            let names = &mut self.batch.names;
            names.bytes.extend_from_slice(entry.name_bytes());
            names.ends.push((names.bytes.len(), kind));
            span.dirs += usize::from(kind != Kind::Other);
        }
        span.last = self.batch.names.ends.len();
        self.batch.pieces.push(Ok(span));
        // An empty directory counts too: a tree of empty ones still goes in batches.
        self.counted(chunk.len() + 1)
    }

    fn error(&mut self, error: Error) -> Flow {
        self.batch.pieces.push(Err(error));
        self.counted(1)
    }
}

impl Drop for Lister {
    /// The thread's walk is over: hand over what is left.
    fn drop(&mut self) {
        self.flush();
    }
}

/// Directories the caller pruned, which the walk need not read.
#[derive(Default)]
struct Pruned {
    any: AtomicBool,
    paths: Mutex<HashSet<Box<[u8]>>>,
}

impl Pruned {
    fn add(&self, path: &[u8]) {
        self.paths.lock().unwrap_or_else(|e| e.into_inner()).insert(path.into());
        self.any.store(true, Ordering::Relaxed);
    }

    /// On a walking thread: is this subdirectory pruned?
    fn prunes(&self, entry: &RawEntry<'_>) -> bool {
        if !self.any.load(Ordering::Relaxed) || !entry.is_dir() {
            return false;
        }
        let path = [entry.parent_prefix, entry.name].concat();
        self.paths.lock().unwrap_or_else(|e| e.into_inner()).contains(&path[..])
    }
}

/// `dir` joined with `name` as both `os.path.join` and the walk spell it,
/// written into `path` (one buffer serves every lookup).
fn child_path<'a>(path: &'a mut Vec<u8>, dir: &[u8], name: &[u8]) -> &'a [u8] {
    path.clear();
    path.extend_from_slice(dir);
    if !dir.ends_with(b"/") {
        path.push(b'/');
    }
    path.extend_from_slice(name);
    path
}

/// Is `path` `dir` or below it?
fn within(path: &[u8], dir: &[u8]) -> bool {
    path.starts_with(dir) && (path.len() == dir.len() || path[dir.len()] == b'/' || dir.ends_with(b"/"))
}

/// Top-down: a directory's tuple once its parent's caller kept it.
#[derive(Default)]
struct TopDown {
    /// Kept by the caller, not arrived yet.
    expected: HashSet<Box<[u8]>>,
    /// Arrived before their parent's tuple was seen.
    early: HashMap<Box<[u8]>, Piece>,
    /// Pruned by the caller: what arrives below them is dropped.
    pruned: HashSet<Box<[u8]>>,
    ready: VecDeque<Piece>,
    /// The tuple given out last: its `dirnames`, as the caller left them,
    /// say where to go on.
    last: Option<(Listing, Py<PyList>)>,
    /// The names put in that `dirnames`: while the list still holds these
    /// very objects, nothing was pruned and no name need be encoded back.
    given: Vec<Py<PyAny>>,
    scratch: Vec<u8>,
}

impl TopDown {
    fn expect(&mut self, path: &[u8]) {
        match self.early.remove(path) {
            Some(piece) => self.ready.push_back(piece),
            None => {
                self.expected.insert(path.into());
            }
        }
    }

    /// Does `dirnames` still hold exactly the names given out, untouched?
    fn untouched(&self, dirnames: &Bound<'_, PyList>) -> bool {
        dirnames.len() == self.given.len()
            && self.given.iter().enumerate().all(|(i, name)| {
                // SAFETY: `dirnames` is a live list and `i` within it; the
                // item is borrowed only to compare its address.
                unsafe { ffi::PyList_GetItem(dirnames.as_ptr(), i as ffi::Py_ssize_t) == name.as_ptr() }
            })
    }

    fn is_pruned(&self, path: &[u8]) -> bool {
        if self.pruned.is_empty() {
            return false;
        }
        (0..path.len())
            .filter(|&i| path[i] == b'/')
            .any(|i| self.pruned.contains(&path[..i]) || self.pruned.contains(&path[..=i]))
    }

    fn take(&mut self, piece: Piece) {
        if let Piece::Error(e) = &piece {
            if !matches!(e.kind(), ErrorKind::Io(_)) {
                // A link followed into a loop, or one that cannot be
                // followed: not listed, so nothing waits for it.
                if !self.is_pruned(piece.path()) {
                    self.ready.push_back(piece);
                }
                return;
            }
        }
        if self.expected.remove(piece.path()) {
            self.ready.push_back(piece);
        } else if !self.is_pruned(piece.path()) {
            self.early.entry(piece.path().into()).or_insert_with(|| piece.detach());
        }
    }

    /// Go on from the tuple given out last, as its `dirnames` now say.
    fn settle(&mut self, py: Python<'_>, follow: bool, pruner: &Pruned) -> PyResult<()> {
        let Some((listing, dirnames)) = self.last.take() else {
            return Ok(());
        };
        let dirnames = dirnames.into_bound(py);
        let untouched = self.untouched(&dirnames);
        self.given.clear();
        let mut path = std::mem::take(&mut self.scratch);
        if untouched {
            // The common case: every subdirectory kept.
            for name in listing.walked(follow) {
                self.expect(child_path(&mut path, listing.dir(), name));
            }
            self.scratch = path;
            return Ok(());
        }
        let kept: Vec<Vec<u8>> = dirnames.iter().map(|n| encode(&n)).collect::<PyResult<_>>()?;
        let kept: HashSet<&[u8]> = kept.iter().map(|n| &n[..]).collect();
        for name in listing.walked(follow) {
            let path = child_path(&mut path, listing.dir(), name);
            if kept.contains(name) {
                self.expect(path);
            } else {
                pruner.add(path);
                self.early.retain(|p, _| !within(p, path));
                self.pruned.insert(path.into());
            }
        }
        self.scratch = path;
        Ok(())
    }

    fn done(&self) -> bool {
        self.ready.is_empty() && self.expected.is_empty() && self.last.is_none()
    }
}

/// Bottom-up: a directory's tuple once all its subdirectories' are out.
#[derive(Default)]
struct BottomUp {
    /// Directories not out yet: their listing (once arrived) and how many
    /// of their subdirectories are still to come out.
    waiting: HashMap<Box<[u8]>, (Option<Listing>, i64)>,
    ready: VecDeque<Piece>,
    root_out: bool,
}

impl BottomUp {
    fn take(&mut self, piece: Piece, root: &[u8], follow: bool) {
        match piece {
            Piece::Listing(listing) => {
                let dir: Box<[u8]> = listing.dir().into();
                let children = listing.walked(follow).count() as i64;
                let node = self.waiting.entry(dir.clone()).or_default();
                node.1 += children;
                if node.1 == 0 {
                    node.0 = Some(listing);
                    self.out(dir, root);
                } else {
                    node.0 = Some(listing.detach());
                }
            }
            Piece::Error(error) => {
                let path: Box<[u8]> = error.path().as_os_str().as_bytes().into();
                let counted = matches!(error.kind(), ErrorKind::Io(_));
                self.ready.push_back(Piece::Error(error));
                if counted {
                    // A directory that could not be read is done with.
                    self.child_done(&path, root);
                }
            }
        }
    }

    fn out(&mut self, dir: Box<[u8]>, root: &[u8]) {
        if let Some((Some(listing), _)) = self.waiting.remove(&dir) {
            self.ready.push_back(Piece::Listing(listing));
        }
        self.child_done(&dir, root);
    }

    fn child_done(&mut self, dir: &[u8], root: &[u8]) {
        if dir == root {
            self.root_out = true;
            return;
        }
        let Some(slash) = dir.iter().rposition(|&b| b == b'/') else {
            return;
        };
        let parent: &[u8] = if root.ends_with(b"/") && &dir[..=slash] == root {
            root
        } else {
            &dir[..slash]
        };
        let node = self.waiting.entry(parent.into()).or_default();
        node.1 -= 1;
        if node.1 == 0 && node.0.is_some() {
            self.out(parent.into(), root);
        }
    }
}

enum Order {
    TopDown(TopDown),
    BottomUp(BottomUp),
}

/// The iterator `fnd_walk.walk` returns.
#[pyclass(module = "fnd_walk")]
pub struct WalkIter {
    stream: Option<Stream<Batch>>,
    root: Box<[u8]>,
    spelling: Spelling,
    onerror: Option<Py<PyAny>>,
    follow: bool,
    pruner: Arc<Pruned>,
    order: Order,
    /// Pieces handed over, not yet put in order.
    arrived: VecDeque<Piece>,
    /// An error found before the walk started (the top is not a directory).
    first_error: Option<(i32, Box<[u8]>)>,
    closed: bool,
}

#[pymethods]
impl WalkIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyTuple>>> {
        if self.closed {
            return Ok(None);
        }
        if let Some((errno, path)) = self.first_error.take() {
            report(py, self.onerror.as_ref(), os_error(py, errno, &path, self.spelling))?;
        }
        loop {
            match self.next_piece(py)? {
                None => {
                    self.close(py);
                    return Ok(None);
                }
                Some(Piece::Error(error)) => {
                    report(py, self.onerror.as_ref(), walk_error(py, &error, self.spelling))?;
                }
                Some(Piece::Listing(listing)) => return self.tuple(py, listing).map(Some),
            }
        }
    }

    /// Stop the walk now (it also stops when the iterator is collected).
    fn close(&mut self, py: Python<'_>) {
        self.closed = true;
        self.arrived.clear();
        if let Some(mut stream) = self.stream.take() {
            stream.stop(py);
        }
    }
}

impl WalkIter {
    fn next_piece(&mut self, py: Python<'_>) -> PyResult<Option<Piece>> {
        if let Order::TopDown(order) = &mut self.order {
            order.settle(py, self.follow, &self.pruner)?;
        }
        loop {
            let ready = match &mut self.order {
                Order::TopDown(order) => &mut order.ready,
                Order::BottomUp(order) => &mut order.ready,
            };
            if let Some(piece) = ready.pop_front() {
                return Ok(Some(piece));
            }
            // One piece at a time, and only when nothing is ready: a
            // subdirectory's listing, which comes after its parent's in
            // the same batch, is then taken once the parent's tuple is
            // out and the caller kept it, not set aside.
            if let Some(piece) = self.arrived.pop_front() {
                match &mut self.order {
                    Order::TopDown(order) => order.take(piece),
                    Order::BottomUp(order) => order.take(piece, &self.root, self.follow),
                }
                continue;
            }
            let over = match &self.order {
                Order::TopDown(order) => order.done(),
                Order::BottomUp(order) => order.root_out,
            };
            if over {
                return Ok(None);
            }
            let Some(stream) = self.stream.as_mut() else {
                return Ok(None);
            };
            let Some(batch) = stream.next_batch(py)? else {
                self.stream = None;
                return Ok(None);
            };
            for Batch { names, pieces } in batch {
                let names = Arc::new(names);
                self.arrived.extend(pieces.into_iter().map(|piece| match piece {
                    Ok(span) => Piece::Listing(Listing {
                        names: names.clone(),
                        span,
                    }),
                    Err(error) => Piece::Error(error),
                }));
            }
        }
    }

    fn tuple(&mut self, py: Python<'_>, listing: Listing) -> PyResult<Py<PyTuple>> {
        let dirpath = decode(py, listing.dir(), self.spelling)?;
        // Both lists made at their final size and filled in place: no
        // vector of names in between.
        let dirnames = new_list(py, listing.dirs())?;
        let filenames = new_list(py, listing.len() - listing.dirs())?;
        let mut given = match &mut self.order {
            Order::TopDown(order) => {
                // Emptied here too: a tuple a decoding error abandoned
                // leaves names behind.
                order.given.clear();
                Some(&mut order.given)
            }
            Order::BottomUp(_) => None,
        };
        let (mut dirs, mut files) = (0, 0);
        for (name, kind) in listing.entries() {
            let name = decode(py, name, self.spelling)?;
            if kind == Kind::Other {
                set_item(&filenames, files, name);
                files += 1;
            } else {
                if let Some(given) = given.as_mut() {
                    given.push(name.clone().unbind());
                }
                set_item(&dirnames, dirs, name);
                dirs += 1;
            }
        }
        let tuple = PyTuple::new(py, [dirpath, dirnames.clone().into_any(), filenames.into_any()])?;
        if let Order::TopDown(order) = &mut self.order {
            order.last = Some((listing, dirnames.unbind()));
        }
        Ok(tuple.unbind())
    }
}

/// A list of `len` empty slots, each to be filled once by [`set_item`]
/// (one a decoding error leaves empty is freed with the list).
fn new_list(py: Python<'_>, len: usize) -> PyResult<Bound<'_, PyList>> {
    // SAFETY: PyList_New returns a new reference, or NULL with an exception set.
    let list = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyList_New(len as ffi::Py_ssize_t))? };
    // SAFETY: PyList_New made a list.
    Ok(unsafe { list.downcast_into_unchecked() })
}

fn set_item(list: &Bound<'_, PyList>, index: usize, item: Bound<'_, PyAny>) {
    // SAFETY: `index` is within the list (made by `new_list` at its final
    // size) and its slot still empty; PyList_SetItem takes `item`'s reference.
    unsafe { ffi::PyList_SetItem(list.as_ptr(), index as ffi::Py_ssize_t, item.into_ptr()) };
}

/// `walk(top, topdown=True, onerror=None, followlinks=False)`.
#[pyfunction]
#[pyo3(signature = (top, topdown = true, onerror = None, followlinks = false, *, threads = 0))]
pub fn walk(
    top: &Bound<'_, PyAny>,
    topdown: bool,
    onerror: Option<Py<PyAny>>,
    followlinks: bool,
    threads: usize,
) -> PyResult<WalkIter> {
    let (root, spelling) = path_arg(top)?;
    let onerror = onerror.filter(|o| !o.is_none(top.py()));
    let pruner = Arc::new(Pruned::default());
    let root: Box<[u8]> = root.into();
    let mut first_error = None;
    let root_path = std::path::Path::new(std::ffi::OsStr::from_bytes(&root));
    // os.walk lists the top with scandir, which follows a symlink and
    // fails on anything but a directory.
    let walkable = match std::fs::metadata(root_path) {
        Ok(m) if m.is_dir() => true,
        Ok(_) => {
            first_error = Some((rustix::io::Errno::NOTDIR.raw_os_error(), root.clone()));
            false
        }
        Err(e) => {
            first_error = Some((e.raw_os_error().unwrap_or(libc_eio()), root.clone()));
            false
        }
    };
    let stream = if walkable {
        let builder = WalkBuilder::new(root_path)
            .min_depth(1)
            .whole_dirs(true)
            .visit_empty(true)
            .follow_links(followlinks)
            .threads(threads);
        let builder = if topdown {
            let pruner = pruner.clone();
            builder.prune(move |entry| pruner.prunes(entry))
        } else {
            builder
        };
        Some(Stream::start(move |outlet: Outlet<Batch>| {
            builder.visit(|| Lister::new(outlet.clone(), followlinks), drop);
        })?)
    } else {
        None
    };
    let order = if topdown {
        let mut order = TopDown::default();
        if walkable {
            order.expected.insert(root.clone());
        }
        Order::TopDown(order)
    } else {
        Order::BottomUp(BottomUp {
            root_out: !walkable,
            ..BottomUp::default()
        })
    };
    Ok(WalkIter {
        stream,
        root,
        spelling,
        onerror,
        follow: followlinks,
        pruner,
        order,
        arrived: VecDeque::new(),
        first_error,
        closed: false,
    })
}

fn libc_eio() -> i32 {
    rustix::io::Errno::IO.raw_os_error()
}
