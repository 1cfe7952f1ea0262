//! `fnd_walk.walk`: `os.walk`'s `(dirpath, dirnames, filenames)` tuples
//! from a parallel walk.
//!
//! The walk reads each directory whole (`WalkBuilder::whole_dirs`: one
//! chunk, never split among threads; an empty one too:
//! `WalkBuilder::visit_empty`), its names in the order the file system
//! lists them, as `os.walk` gives them; its threads turn each into a
//! [`Listing`], sorting symlinks to directories into `dirnames` as
//! `os.walk` does (one `fstatat` per symlink). Listings arrive in the
//! order the threads finish them; Python's thread puts them in an order
//! `os.walk` allows:
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

use fnd_walk::{Chunk, Error, ErrorKind, FileType, RawEntry, WalkBuilder};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
// The maps below are keyed by paths the walk made, not by outside input,
// and every directory passes through them once or twice on Python's
// thread: SipHash was a fifth of that thread's time.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::errors::{os_error, report, walk_error};
use crate::stream::{Batcher, Items, Stream};
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

/// One directory, read whole: its path and its entries' names end to end
/// in one buffer, so that a directory costs the walking thread two
/// allocations and Python's thread two frees.
pub struct Listing {
    bytes: Vec<u8>,
    dir_len: usize,
    /// Each name's end in `bytes`, and what `os.walk` makes of the entry.
    names: Vec<(u32, Kind)>,
    /// How many of them go to `dirnames`.
    dirs: usize,
}

impl Listing {
    fn dir(&self) -> &[u8] {
        &self.bytes[..self.dir_len]
    }

    fn entries(&self) -> impl Iterator<Item = (&[u8], Kind)> + '_ {
        let mut start = self.dir_len;
        self.names.iter().map(move |&(end, kind)| {
            let name = &self.bytes[start..end as usize];
            start = end as usize;
            (name, kind)
        })
    }

    /// The subdirectories the walk goes on into.
    fn walked(&self, follow: bool) -> impl Iterator<Item = &[u8]> + '_ {
        self.entries()
            .filter(move |&(_, kind)| kind == Kind::Dir || (follow && kind == Kind::LinkToDir))
            .map(|(name, _)| name)
    }
}

/// What crosses from the walking threads.
pub enum Piece {
    Listing(Listing),
    Error(Error),
}

impl Piece {
    fn path(&self) -> &[u8] {
        match self {
            Piece::Listing(l) => l.dir(),
            Piece::Error(e) => e.path().as_os_str().as_bytes(),
        }
    }
}

struct Listings {
    follow: bool,
}

impl Items for Listings {
    type Item = Piece;

    fn chunk(&self, chunk: &mut Chunk<'_>) -> Piece {
        let dir = chunk.parent_path().as_os_str().as_bytes();
        // Sized once: growing the buffer name by name was most of this
        // thread's time in malloc.
        let names_len: usize = chunk.iter().map(|e| e.name_bytes().len()).sum();
        let mut listing = Listing {
            bytes: Vec::with_capacity(dir.len() + names_len),
            dir_len: dir.len(),
            names: Vec::with_capacity(chunk.len()),
            dirs: 0,
        };
        listing.bytes.extend_from_slice(dir);
        for entry in chunk.iter() {
            let kind = match entry.file_type() {
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
            };
            listing.bytes.extend_from_slice(entry.name_bytes());
            listing.names.push((listing.bytes.len() as u32, kind));
            listing.dirs += usize::from(kind != Kind::Other);
        }
        Piece::Listing(listing)
    }

    fn error(&self, error: Error) -> Piece {
        Piece::Error(error)
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
            self.early.entry(piece.path().into()).or_insert(piece);
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
                node.0 = Some(listing);
                if node.1 == 0 {
                    self.out(dir, root);
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
    stream: Option<Stream<Piece>>,
    root: Box<[u8]>,
    spelling: Spelling,
    onerror: Option<Py<PyAny>>,
    follow: bool,
    pruner: Arc<Pruned>,
    order: Order,
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
            match &mut self.order {
                Order::TopDown(order) => {
                    if let Some(piece) = order.ready.pop_front() {
                        return Ok(Some(piece));
                    }
                    if order.done() {
                        return Ok(None);
                    }
                }
                Order::BottomUp(order) => {
                    if let Some(piece) = order.ready.pop_front() {
                        return Ok(Some(piece));
                    }
                    if order.root_out {
                        return Ok(None);
                    }
                }
            }
            let Some(stream) = self.stream.as_mut() else {
                return Ok(None);
            };
            let Some(batch) = stream.next_batch(py)? else {
                self.stream = None;
                return Ok(None);
            };
            for piece in batch {
                match &mut self.order {
                    Order::TopDown(order) => order.take(piece),
                    Order::BottomUp(order) => order.take(piece, &self.root, self.follow),
                }
            }
        }
    }

    fn tuple(&mut self, py: Python<'_>, listing: Listing) -> PyResult<Py<PyTuple>> {
        let dirpath = decode(py, listing.dir(), self.spelling)?;
        // Both lists made at their final size and filled in place: no
        // vector of names in between.
        let dirnames = new_list(py, listing.dirs)?;
        let filenames = new_list(py, listing.names.len() - listing.dirs)?;
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
        let items = Arc::new(Listings { follow: followlinks });
        Some(Stream::start(move |outlet| {
            builder.visit(|| Batcher::new(items.clone(), outlet.clone()), drop);
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
        first_error,
        closed: false,
    })
}

fn libc_eio() -> i32 {
    rustix::io::Errno::IO.raw_os_error()
}
