//! What a walk hands out: the entries of one directory in chunks, and
//! views of single entries.
//!
//! Offers [`Chunk`] (a visitor's view of a batch of entries while their
//! directory is open on the thread that read it: its descriptor is lent to
//! the entries for the length of the visit, and no longer), [`ChunkBuf`]
//! (the entries moved out of a chunk, or received from the chunk
//! iterator: owned, carrying no descriptor), [`EntryRef`] (one entry of
//! either, borrowed) and [`Entry`] (one entry, owned). Relies on `dir` for
//! the directory entries share (its path, depth and hook state), on
//! `meta` for types and stat calls, and on `filter` for the hook state's
//! type. The reader fills a `ChunkBuf` and lends it as a `Chunk`.
//!
//! A descriptor never outlives its borrow: a `Chunk<'a>` and the
//! `EntryRef<'a>`s it gives out hold the directory's descriptor for `'a`,
//! the visit, and what a visitor can keep (a [`ChunkBuf`] from
//! [`Chunk::take`], an [`Entry`]) holds none, so its stats go by path.

mod owned;

use std::ffi::OsStr;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use self::owned::Entry;
use crate::dir::Dir;
use crate::filter::ErasedState;
pub use crate::meta::FileType;
use crate::meta::Metadata;

/// Whether `name` can be one entry's name in a directory: not empty, not
/// `.` or `..`, without `/` or NUL. What a listing gives always is; a name
/// read from a file or a message (an index, an export, another rank's
/// tree) that is not would reach outside its directory when joined to a
/// path, and the whole input is to be refused.
///
/// ```
/// use fnd_walk::is_file_name;
///
/// assert!(is_file_name(b"main.rs") && is_file_name(b"...") && is_file_name(b"\xff"));
/// assert!(!is_file_name(b"") && !is_file_name(b"..") && !is_file_name(b"d/../x"));
/// assert!(!is_file_name(b"a\0b"));
/// ```
pub fn is_file_name(name: &[u8]) -> bool {
    !matches!(name, b"" | b"." | b"..") && !name.iter().any(|&b| b == b'/' || b == 0)
}

/// One entry's place in a chunk: the name lives in the chunk's shared name buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot {
    pub(crate) name_start: u32,
    pub(crate) name_len: u32,
    pub(crate) file_type: FileType,
    /// For a symlink followed with `follow_links`, the type of its target.
    pub(crate) target_type: FileType,
    pub(crate) ino: u64,
}

impl Slot {
    fn name<'a>(&self, names: &'a [u8]) -> &'a [u8] {
        &names[self.name_start as usize..(self.name_start + self.name_len) as usize]
    }
}

/// Entries read from one directory, owned: what [`Chunk::take`] moves out
/// of a visited chunk and what the chunk iterator
/// ([`WalkBuilder::chunks`](crate::WalkBuilder::chunks)) yields.
///
/// A chunk holds the names of up to `chunk_size` entries in one buffer, the
/// directory they came from and (when the walk asked for it) their
/// metadata; every entry has the same depth and the same parent. It holds
/// no descriptor: the walk may have closed the directory, so an entry's
/// [`metadata`](EntryRef::metadata) is a stat by path.
///
/// ```
/// use fnd_walk::WalkBuilder;
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir(dir.path().join("sub")).unwrap();
/// for name in ["x", "y", "z"] {
///     std::fs::write(dir.path().join("sub").join(name), "").unwrap();
/// }
/// for chunk in WalkBuilder::new(dir.path().join("sub")).min_depth(1).chunks() {
///     let mut chunk = chunk.unwrap();
///     assert_eq!((chunk.len(), chunk.depth()), (3, 1));
///     assert_eq!(chunk.parent_path(), dir.path().join("sub"));
///     assert!(chunk.prefix().ends_with(b"sub/"));
///     assert!(chunk.get(0).parent_fd().is_none()); // an owned chunk lends no descriptor
///     chunk.retain(|e| e.name_bytes() != b"y");
///     let mut names: Vec<_> = chunk.iter().map(|e| e.file_name().to_owned()).collect();
///     names.sort();
///     assert_eq!(names, ["x", "z"]);
///     let first = chunk.get(0);
///     assert_eq!(first.path().parent().unwrap(), dir.path().join("sub"));
/// }
/// ```
#[derive(Debug)]
pub struct ChunkBuf {
    pub(crate) dir: Arc<Dir>,
    pub(crate) names: Vec<u8>,
    pub(crate) slots: Vec<Slot>,
    pub(crate) meta: Vec<Option<Metadata>>,
}

/// A chunk's buffers without its directory: room for other entries. Kept
/// for reuse instead of an emptied [`ChunkBuf`], it holds no directory
/// alive, and needs none of its own to stand in: a stand-in shared by every
/// spare took two atomic updates of one counter per chunk, from every core.
#[derive(Debug, Default)]
pub(crate) struct ChunkRoom {
    pub(crate) names: Vec<u8>,
    pub(crate) slots: Vec<Slot>,
    pub(crate) meta: Vec<Option<Metadata>>,
}

impl ChunkBuf {
    /// An empty chunk of `dir` in the buffers of `room`.
    pub(crate) fn in_room(dir: Arc<Dir>, room: ChunkRoom) -> Self {
        let ChunkRoom { names, slots, meta } = room;
        let mut chunk = ChunkBuf {
            dir,
            names,
            slots,
            meta,
        };
        chunk.clear();
        chunk
    }

    /// The chunk's buffers, emptied; its directory let go.
    pub(crate) fn into_room(mut self) -> ChunkRoom {
        self.clear();
        let ChunkBuf { names, slots, meta, .. } = self;
        ChunkRoom { names, slots, meta }
    }

    pub(crate) fn new(dir: Arc<Dir>) -> Self {
        ChunkBuf {
            dir,
            names: Vec::new(),
            slots: Vec::new(),
            meta: Vec::new(),
        }
    }

    pub(crate) fn clear(&mut self) {
        self.names.clear();
        self.slots.clear();
        self.meta.clear();
    }

    pub(crate) fn push(&mut self, name: &[u8], file_type: FileType, target_type: FileType, ino: u64) {
        let name_start = self.names.len() as u32;
        self.names.extend_from_slice(name);
        self.slots.push(Slot {
            name_start,
            name_len: name.len() as u32,
            file_type,
            target_type,
            ino,
        });
    }

    /// Sort the entries by name bytes.
    pub(crate) fn sort_by_name(&mut self) {
        let names = &self.names;
        self.slots.sort_unstable_by(|a, b| a.name(names).cmp(b.name(names)));
    }

    /// Number of entries in the chunk.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when the chunk holds no entries.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Depth of every entry in this chunk (a root is at depth 0).
    pub fn depth(&self) -> usize {
        self.dir.child_depth
    }

    /// The directory the entries were read from: its path as the walk spells
    /// it (root as given, then `/name` per level). Empty for roots.
    pub fn parent_path(&self) -> &Path {
        Path::new(OsStr::from_bytes(self.dir.path()))
    }

    /// The bytes that precede each entry's name in its path: the parent's
    /// path and a `/` (empty for roots).
    pub fn prefix(&self) -> &[u8] {
        &self.dir.prefix
    }

    /// The state a hook of the walk attached to this chunk's directory (what
    /// [`DirHook::enter`](crate::DirHook::enter) returned for it), by the
    /// hook's [`State`](crate::DirHook::State) type; `None` when the hook
    /// gave the directory none, or the walk has no hook with that state.
    pub fn state<S: Send + Sync + 'static>(&self) -> Option<&S> {
        self.shared_state_ref::<S>()?.downcast_ref()
    }

    /// [`state`](Self::state), as a hold that outlives the chunk.
    pub fn shared_state<S: Send + Sync + 'static>(&self) -> Option<Arc<S>> {
        self.shared_state_ref::<S>()?.clone().downcast().ok()
    }

    fn shared_state_ref<S: Send + Sync + 'static>(&self) -> Option<&ErasedState> {
        crate::filter::find::<S>(self.dir.hook_state.as_ref()?)
    }

    /// The entry at `index`.
    pub fn get(&self, index: usize) -> EntryRef<'_> {
        self.entry(None, index)
    }

    /// The entries, in the order the directory listed them (or sorted, when
    /// the walk sorts).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = EntryRef<'_>> + '_ {
        self.entries(None)
    }

    /// Drop the entries for which `keep` says false, in place.
    pub fn retain(&mut self, keep: impl FnMut(&EntryRef<'_>) -> bool) {
        self.retain_with(None, keep)
    }

    fn entry<'a>(&'a self, fd: Option<BorrowedFd<'a>>, index: usize) -> EntryRef<'a> {
        EntryRef { chunk: self, fd, index }
    }

    fn entries<'a>(&'a self, fd: Option<BorrowedFd<'a>>) -> impl ExactSizeIterator<Item = EntryRef<'a>> + 'a {
        (0..self.slots.len()).map(move |index| EntryRef { chunk: self, fd, index })
    }

    fn retain_with(&mut self, fd: Option<BorrowedFd<'_>>, mut keep: impl FnMut(&EntryRef<'_>) -> bool) {
        let decisions: Vec<bool> = self.entries(fd).map(|entry| keep(&entry)).collect();
        let mut i = 0;
        self.slots.retain(|_| {
            i += 1;
            decisions[i - 1]
        });
        if !self.meta.is_empty() {
            let mut i = 0;
            self.meta.retain(|_| {
                i += 1;
                decisions[i - 1]
            });
        }
    }
}

/// A batch of entries read from one directory, as a
/// [`Visitor`](crate::Visitor) sees it: on the thread that read it, while
/// the directory is open.
///
/// Entries move through the engine in chunks, never one at a time. While a
/// chunk is visited its directory's descriptor is lent to it
/// ([`parent_fd`](Self::parent_fd)): entries stat and open relative to it.
/// The loan ends with the visit: to keep the entries, move them out with
/// [`take`](Self::take) into a [`ChunkBuf`], which holds no descriptor.
/// A `Chunk` cannot be moved out of the visitor's `&mut` (nothing outside
/// the walk makes one to swap in), and were it swapped, its lifetime ends
/// with the visit all the same.
///
/// ```
/// use fnd_walk::{Chunk, ChunkBuf, Flow, Visitor, WalkBuilder};
///
/// /// Keeps every chunk of the walk.
/// struct Keep(Vec<ChunkBuf>);
/// impl Visitor for Keep {
///     fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
///         assert!(chunk.parent_fd().is_some() || chunk.depth() == 0);
///         self.0.push(chunk.take());
///         assert!(chunk.is_empty());
///         Flow::Continue
///     }
/// }
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("a"), "abc").unwrap();
/// let mut kept = Vec::new();
/// WalkBuilder::new(dir.path()).visit(|| Keep(Vec::new()), |k| kept.extend(k.0));
/// let entries: Vec<_> = kept.iter().flat_map(|c| c.iter()).collect();
/// assert_eq!(entries.len(), 2);
/// // After the walk: no descriptor, a stat by path.
/// assert!(entries.iter().all(|e| e.parent_fd().is_none() && e.metadata().is_ok()));
/// ```
///
/// The chunk itself cannot be moved out (there is no chunk to put in its
/// place):
///
/// ```compile_fail,E0277
/// use fnd_walk::{Chunk, Flow, Visitor};
///
/// struct Hoard;
/// impl Visitor for Hoard {
///     fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
///         let _kept = std::mem::take(chunk); // `Chunk` has no `Default`
///         Flow::Continue
///     }
/// }
/// ```
///
/// and neither can an entry that borrows its descriptor:
///
/// ```compile_fail
/// use fnd_walk::{Chunk, EntryRef, Flow, Visitor};
///
/// struct Hoard<'a>(Vec<EntryRef<'a>>);
/// impl<'a> Visitor for Hoard<'a> {
///     fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
///         self.0.extend(chunk.iter());
///         Flow::Continue
///     }
/// }
/// ```
#[derive(Debug)]
pub struct Chunk<'a> {
    buf: &'a mut ChunkBuf,
    /// The directory's descriptor, lent for `'a` (none for the roots).
    fd: Option<BorrowedFd<'a>>,
}

impl<'a> Chunk<'a> {
    /// Lend `buf` to a visitor with the descriptor of the directory its
    /// entries were read from, open for `'a`.
    pub(crate) fn lend(buf: &'a mut ChunkBuf, fd: Option<BorrowedFd<'a>>) -> Self {
        Chunk { buf, fd }
    }

    /// Number of entries in the chunk.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when the chunk holds no entries.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Depth of every entry in this chunk (a root is at depth 0).
    pub fn depth(&self) -> usize {
        self.buf.depth()
    }

    /// The directory the entries were read from: its path as the walk spells
    /// it (root as given, then `/name` per level). Empty for roots.
    pub fn parent_path(&self) -> &Path {
        self.buf.parent_path()
    }

    /// The bytes that precede each entry's name in its path: the parent's
    /// path and a `/` (empty for roots).
    pub fn prefix(&self) -> &[u8] {
        self.buf.prefix()
    }

    /// The parent directory's open descriptor, for the length of the visit
    /// (`'a`, whatever the borrow of the chunk; `None` for the roots, which
    /// have no parent the walk opened), as [`EntryRef::parent_fd`] lends it.
    pub fn parent_fd(&self) -> Option<BorrowedFd<'a>> {
        self.fd
    }

    /// The state a hook of the walk attached to this chunk's directory (what
    /// [`DirHook::enter`](crate::DirHook::enter) returned for it), by the
    /// hook's [`State`](crate::DirHook::State) type, so a visitor can add
    /// to per-directory data without a lookup; `None` when the hook gave
    /// the directory none, or the walk has no hook with that state.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    /// use std::sync::Arc;
    /// use fnd_walk::{Chunk, DirHook, DirInfo, Flow, Visitor, WalkBuilder};
    ///
    /// /// Counts, per directory, the entries the visitors see.
    /// struct Count;
    /// struct Seen(AtomicUsize);
    /// impl DirHook for Count {
    ///     type State = Seen;
    ///     fn enter(&self, _: &DirInfo<'_>, _: Option<&Arc<Seen>>) -> Option<Arc<Seen>> {
    ///         Some(Arc::new(Seen(AtomicUsize::new(0))))
    ///     }
    /// }
    /// /// Adds each chunk to its directory's count, and keeps the counts.
    /// struct Add(Vec<Arc<Seen>>);
    /// impl Visitor for Add {
    ///     fn visit(&mut self, chunk: &mut Chunk) -> Flow {
    ///         if let Some(seen) = chunk.state::<Seen>() {
    ///             seen.0.fetch_add(chunk.len(), Relaxed);
    ///             self.0.extend(chunk.shared_state::<Seen>());
    ///         }
    ///         Flow::Continue
    ///     }
    /// }
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::create_dir(dir.path().join("sub")).unwrap();
    /// std::fs::write(dir.path().join("sub/a"), "").unwrap();
    /// std::fs::write(dir.path().join("sub/b"), "").unwrap();
    /// let mut most = 0;
    /// WalkBuilder::new(dir.path()).hook(Count).visit(
    ///     || Add(Vec::new()),
    ///     |add| most = add.0.iter().map(|s| s.0.load(Relaxed)).fold(most, usize::max),
    /// );
    /// assert_eq!(most, 2); // sub's two files
    /// ```
    pub fn state<S: Send + Sync + 'static>(&self) -> Option<&S> {
        self.buf.state()
    }

    /// [`state`](Self::state), as a hold that outlives the chunk.
    pub fn shared_state<S: Send + Sync + 'static>(&self) -> Option<Arc<S>> {
        self.buf.shared_state()
    }

    /// The entry at `index`.
    pub fn get(&self, index: usize) -> EntryRef<'_> {
        self.buf.entry(self.fd, index)
    }

    /// The entries, in the order the directory listed them (or sorted, when
    /// the walk sorts).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = EntryRef<'_>> + '_ {
        self.buf.entries(self.fd)
    }

    /// Drop the entries for which `keep` says false, in place.
    pub fn retain(&mut self, keep: impl FnMut(&EntryRef<'_>) -> bool) {
        self.buf.retain_with(self.fd, keep)
    }

    /// Move the entries out into a [`ChunkBuf`] of their own, leaving this
    /// chunk empty with its buffers' capacity (so a reading thread can hand
    /// chunks away without reallocating for the next one). The new chunk's
    /// buffers are exactly as large as its entries: most directories are
    /// small, and a chunk handed to another thread should not carry the
    /// capacity of the largest directory read so far. It holds no
    /// descriptor.
    pub fn take(&mut self) -> ChunkBuf {
        self.take_copy()
    }

    /// [`take`](Self::take) into the buffers of `into` (the ordered walk
    /// recycles the buffers its consumer is done with), room made where it
    /// lacks (see [`room_for`]). The reader keeps its own
    /// buffers, as with `take`: given the recycled ones in their place
    /// instead, it grew them again by `realloc` in four reads of five on
    /// /usr.
    pub(crate) fn take_into(&mut self, room: ChunkRoom) -> ChunkBuf {
        let buf = &mut *self.buf;
        let mut into = ChunkBuf::in_room(buf.dir.clone(), room);
        if buf.slots.len() > TAKE_WHOLE_ABOVE {
            // A large directory's buffers leave whole (grown by doubling,
            // at most twice its size), and the reader goes on with the
            // small ones: copied, the reader would keep the room of the
            // largest directory of the walk besides the copy.
            std::mem::swap(buf, &mut into);
            return into;
        }
        room_for(&mut into.names, buf.names.len());
        into.names.extend_from_slice(&buf.names);
        room_for(&mut into.slots, buf.slots.len());
        into.slots.extend_from_slice(&buf.slots);
        room_for(&mut into.meta, buf.meta.len());
        into.meta.extend_from_slice(&buf.meta);
        buf.clear();
        into
    }

    fn take_copy(&mut self) -> ChunkBuf {
        let buf = &mut *self.buf;
        let taken = ChunkBuf {
            dir: buf.dir.clone(),
            names: buf.names.as_slice().to_vec(),
            slots: buf.slots.as_slice().to_vec(),
            meta: buf.meta.as_slice().to_vec(),
        };
        buf.clear();
        taken
    }
}

/// Entries past which [`Chunk::take_into`] moves a chunk's buffers out
/// instead of copying them.
const TAKE_WHOLE_ABOVE: usize = 4096;

/// Make `v` (empty) room for `n`: a buffer too small is replaced, not grown,
/// by one of `n` or twice its room, whichever is more, so that recycled
/// buffers soon fit the directories they meet. `realloc` copies what the
/// buffer held and took some 700 instructions a call: with exact room,
/// 8,900 calls on /usr, 3% of a sorted walk's user instructions.
pub(crate) fn room_for<T>(v: &mut Vec<T>, n: usize) {
    debug_assert!(v.is_empty());
    if v.capacity() < n {
        *v = Vec::with_capacity(n.max(2 * v.capacity()));
    }
}

/// A borrowed view of one entry of a [`Chunk`] or a [`ChunkBuf`].
///
/// ```
/// use fnd_walk::{FileType, Flow, WalkBuilder};
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("file"), "abc").unwrap();
/// std::os::unix::fs::symlink("file", dir.path().join("link")).unwrap();
/// WalkBuilder::new(dir.path()).min_depth(1).follow_links(true).for_each(|entry| {
///     let entry = entry.unwrap();
///     assert_eq!(entry.depth(), 1);
///     assert!(!entry.is_root());
///     let mut path = Vec::new();
///     entry.write_path(&mut path);
///     assert_eq!(path, entry.path().into_os_string().into_encoded_bytes());
///     assert_eq!(entry.metadata_follow().unwrap().size, 3);
///     assert!(entry.cached_metadata().is_none()); // the walk was not asked for metadata
///     if entry.name_bytes() == b"link" {
///         assert_eq!((entry.file_type(), entry.target_type()), (FileType::Symlink, FileType::File));
///         assert_ne!(entry.metadata().unwrap().ino, entry.metadata_follow().unwrap().ino);
///     } else {
///         assert_eq!(entry.ino(), entry.metadata().unwrap().ino);
///     }
///     Flow::Continue
/// });
/// ```
#[derive(Clone, Copy)]
pub struct EntryRef<'a> {
    chunk: &'a ChunkBuf,
    /// The parent's descriptor, when the chunk lends one.
    fd: Option<BorrowedFd<'a>>,
    index: usize,
}

impl<'a> EntryRef<'a> {
    fn slot(&self) -> &'a Slot {
        &self.chunk.slots[self.index]
    }

    /// The entry's name as the directory stores it (for a root: the root path as given).
    pub fn name_bytes(&self) -> &'a [u8] {
        self.slot().name(&self.chunk.names)
    }

    /// The name as an `OsStr`.
    pub fn file_name(&self) -> &'a OsStr {
        OsStr::from_bytes(self.name_bytes())
    }

    /// Append the entry's full path to `out` (no allocation beyond `out`'s growth).
    pub fn write_path(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.chunk.dir.prefix);
        out.extend_from_slice(self.name_bytes());
    }

    /// The entry's full path: parent path, `/`, name.
    pub fn path(&self) -> PathBuf {
        let mut v = Vec::with_capacity(self.chunk.dir.prefix.len() + self.slot().name_len as usize);
        self.write_path(&mut v);
        PathBuf::from(std::ffi::OsString::from_vec(v))
    }

    /// Depth below its root (a root is 0).
    pub fn depth(&self) -> usize {
        self.chunk.dir.child_depth
    }

    /// The type `getdents64` reported (a symlink stays a symlink, even when followed).
    pub fn file_type(&self) -> FileType {
        self.slot().file_type
    }

    /// The type after following a symlink when the walk follows links;
    /// otherwise the same as [`file_type`](Self::file_type).
    pub fn target_type(&self) -> FileType {
        self.slot().target_type
    }

    /// Inode number from the directory listing.
    pub fn ino(&self) -> u64 {
        self.slot().ino
    }

    /// True for a root of the walk.
    pub fn is_root(&self) -> bool {
        self.chunk.dir.is_root_parent()
    }

    /// Metadata fetched up front by the walk (see `WalkBuilder::metadata`),
    /// if it asked for it and the stat succeeded.
    pub fn cached_metadata(&self) -> Option<&'a Metadata> {
        self.chunk.meta.get(self.index).and_then(|m| m.as_ref())
    }

    /// The entry's metadata without following a final symlink: taken from the
    /// walk's bulk fetch when there was one, else one `fstatat` relative to
    /// the parent directory (or by path, for an entry of a [`ChunkBuf`]).
    pub fn metadata(&self) -> std::io::Result<Metadata> {
        if let Some(m) = self.cached_metadata() {
            return Ok(*m);
        }
        self.stat(false)
    }

    /// The metadata of what the entry points to (follows symlinks).
    pub fn metadata_follow(&self) -> std::io::Result<Metadata> {
        if self.file_type() != FileType::Symlink {
            return self.metadata();
        }
        self.stat(true)
    }

    fn stat(&self, follow: bool) -> std::io::Result<Metadata> {
        match self.fd {
            Some(fd) if !self.is_root() => crate::meta::stat_at(fd, self.name_bytes(), follow),
            _ => crate::meta::stat_path(&self.path(), follow),
        }
    }
}

impl std::fmt::Debug for EntryRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntryRef")
            .field("path", &self.path())
            .field("depth", &self.depth())
            .field("file_type", &self.file_type())
            .finish()
    }
}

impl<'a> EntryRef<'a> {
    /// The open directory holding the entry, while its chunk is visited on
    /// the thread that read it (`None` for an entry of a [`ChunkBuf`] and for
    /// a root): open or stat the entry relative to it (`openat(dir, name)`)
    /// and skip the kernel's walk over the full path.
    ///
    /// ```
    /// use fnd_walk::{Flow, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join("a"), "").unwrap();
    /// WalkBuilder::new(dir.path()).min_depth(1).for_each(|entry| {
    ///     let entry = entry.unwrap();
    ///     let parent = entry.parent_fd().expect("visited on the reading thread");
    ///     assert!(fnd_walk::meta::stat_at(parent, entry.name_bytes(), false).is_ok());
    ///     Flow::Continue
    /// });
    /// ```
    pub fn parent_fd(&self) -> Option<BorrowedFd<'a>> {
        self.fd
    }

    /// An owned copy of the entry (one allocation, for its path), carrying
    /// the bulk-fetched metadata along when the walk fetched it.
    ///
    /// ```
    /// use fnd_walk::{Flow, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join("a.txt"), "x").unwrap();
    /// let found = std::sync::Mutex::new(Vec::new());
    /// WalkBuilder::new(dir.path()).min_depth(1).for_each(|entry| {
    ///     found.lock().unwrap().push(entry.unwrap().to_entry());
    ///     Flow::Continue
    /// });
    /// let found = found.into_inner().unwrap();
    /// assert_eq!(found[0].file_name(), "a.txt");
    /// assert_eq!(found[0].path(), dir.path().join("a.txt"));
    /// ```
    pub fn to_entry(&self) -> Entry {
        let prefix = &self.chunk.dir.prefix;
        let name = self.name_bytes();
        let mut path = Vec::with_capacity(prefix.len() + name.len());
        path.extend_from_slice(prefix);
        path.extend_from_slice(name);
        let s = self.slot();
        Entry {
            path: PathBuf::from(std::ffi::OsString::from_vec(path)),
            name_start: prefix.len(),
            depth: self.depth(),
            file_type: s.file_type,
            target_type: s.target_type,
            ino: s.ino,
            metadata: self.cached_metadata().copied(),
        }
    }
}
