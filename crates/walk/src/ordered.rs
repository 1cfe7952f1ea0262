//! The ordered walk: every core reads, and the results come out in tree
//! order, with the memory held for results that wait bounded by a window.
//!
//! Offers [`TreeOrder`] (what order, how large a window), [`Within`] (the
//! order of one directory's entries), [`Nest`] (where a subdirectory's
//! subtree comes among its parent's entries), [`TreeVisitor`] (the one
//! consumer, called in order) and [`DirEvent`] (a directory entered or
//! left). [`WalkBuilder::visit_tree`](crate::WalkBuilder::visit_tree) runs it.
//!
//! Relies on `read` for the [`Reader`] (one job in; chunks and the
//! subdirectories' jobs out), on `settings` for the walk's options and stop
//! flag, on `entry` for [`ChunkBuf`], on `dir` for a directory's path let
//! go while its entries wait and spelt again, and on `visit` for the
//! per-read [`Visitor`] it collects each directory's chunks with.
//!
//! # How
//!
//! Each directory read is one job with a key: its place in the release
//! order (its parent's key and its own rank among the parent's items), so
//! comparing keys compares places in the output. Pending jobs wait in one
//! frontier (a stack of runs, each a directory's subdirectories: see
//! `frontier`); a worker takes the smallest key, so the workers read ahead
//! in the order the output needs (while little is held, the smallest of
//! its own subdirectories first: see `Ordered::next_job`). A directory
//! read whole becomes a result: its entries arranged ([`Within`]) and its
//! subdirectories placed among them ([`Nest`]). One thread at a time
//! releases results in order to the consumer (most often one worker, the
//! releaser: see `Ordered::deposit`), until it meets a subdirectory not
//! read yet: the *head*.
//!
//! While the results held exceed the window, workers take no job but the
//! head's (which is then the smallest key waiting: everything before
//! it has been released), so the walk slows down to the pace of the output
//! instead of growing. The head can always be read, so a full window never
//! deadlocks.
//!
//! Where the order holds each directory whole (sorted, or in inode
//! batches unless the output waits for it), a huge directory is read in
//! parts on several threads as in the parallel order (see `split`), the
//! last read to end joining them (see [`Split`]). A directory the output
//! waits for in [`Within::Listing`] or [`Within::InodeBatches`] is read on
//! one thread, its entries going out as read or a batch at a time (see
//! [`Collect`]), its stats taken by every worker (see [`Relay`]): held
//! whole, a million files in du's order took 226 MB and 384 MiB of
//! address space, where du takes 31 MB. Unlike the parallel order's
//! workers, which go depth-first each on their own, these take jobs in
//! output order from one shared frontier (one lock per directory).

use std::cmp::Ordering as CmpOrdering;
use std::collections::VecDeque;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::dir::Dir;
use crate::entry::{room_for, Chunk, ChunkBuf, ChunkRoom};
use crate::error::Error;
use crate::io::Probe;
use crate::read::{fill_metadata, Caller, Job, Reader};
use crate::schedule::place::{self, Placement};
use crate::settings::Shared;
use crate::visit::{Flow, Visitor};

mod frontier;
use frontier::Frontier;

/// How one directory's entries are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Within {
    /// As the directory read returned them.
    Listing,
    /// By name bytes.
    Name,
    /// By apparent size, smallest first, then by name (needs
    /// [`metadata`](crate::WalkBuilder::metadata); entries without it count as 0).
    Size,
    /// By modification time, oldest first, then by name (needs metadata).
    Mtime,
    /// By name, a directory's name compared as if it ended in `/`, and
    /// every subtree placed where its paths sort (whatever [`Nest`] says):
    /// the whole output in the order of its paths under `LC_ALL=C sort`,
    /// directories spelt with a trailing `/` (fd's way).
    Path,
    /// As listed, but each run of `batch` entries of a directory (the
    /// first `batch`, the next `batch`, ...) that holds more than `above`
    /// entries sorted by inode number: what gnulib's fts (and so GNU du and
    /// find) does on most file systems, with `above` 10,000 and `batch`
    /// 100,000.
    InodeBatches { above: usize, batch: usize },
}

impl Within {
    /// Whether a directory's entries are released only once all are read
    /// and sorted (not as read, nor in batches).
    pub(crate) fn sorts_whole_dirs(self) -> bool {
        matches!(self, Within::Name | Within::Size | Within::Mtime | Within::Path)
    }

    /// Whether a directory's entries wait until all are read (sorted, or
    /// counted to know whether to sort) unless the output waits for it:
    /// such a directory, when huge and read ahead, is read in parts (see
    /// `Split`).
    fn holds_whole_dirs(self) -> bool {
        self != Within::Listing
    }

    /// Whether a directory the output waits for goes out while it is read
    /// (as read, or a batch at a time), not once read whole.
    fn streams_dirs(self) -> bool {
        matches!(self, Within::Listing | Within::InodeBatches { .. })
    }
}

/// Where a subdirectory's subtree comes among its parent's entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nest {
    /// All of a directory's entries first, then each subdirectory's
    /// subtree, in the order of their entries ([`Order::DepthFirst`](crate::Order::DepthFirst)'s order).
    AfterEntries,
    /// Right after the subdirectory's own entry (a walk that does not yield
    /// a subdirectory it descends into gets its subtree after the other
    /// entries): find's and du's order.
    AtEntry,
}

/// The order of an ordered walk, and the memory it may hold.
#[derive(Clone, Copy, Debug)]
pub struct TreeOrder {
    pub within: Within,
    pub nest: Nest,
    /// Bytes of results read ahead and waiting for their turn (names,
    /// metadata and the chunks' bookkeeping, counted per entry), past which
    /// the workers read only what the output waits for. See
    /// [`WalkBuilder::visit_tree`](crate::WalkBuilder::visit_tree) for the bound.
    pub window: usize,
}

impl TreeOrder {
    /// The default window: 8 MiB, room for some 50,000 entries read ahead.
    pub const WINDOW: usize = 8 << 20;

    /// Directories in `within` order, subtrees placed by `nest`, with the
    /// default window.
    pub fn new(within: Within, nest: Nest) -> Self {
        TreeOrder {
            within,
            nest,
            window: Self::WINDOW,
        }
    }

    /// The same order with another window, in bytes.
    pub fn window(self, bytes: usize) -> Self {
        TreeOrder { window: bytes, ..self }
    }
}

/// A directory the walk enters or leaves, as the consumer is told.
#[derive(Clone, Copy, Debug)]
pub struct DirEvent<'a> {
    /// Its path, as the walk spells it (a root as given).
    pub path: &'a [u8],
    /// Its depth: 0 for a root.
    pub depth: usize,
    /// Which root it lies under.
    pub root: usize,
}

/// The one consumer of an ordered walk: called in tree order, by one thread
/// at a time (whichever worker releases results), never two calls at once.
pub trait TreeVisitor: Send {
    /// A directory is about to be walked: its entries and subtrees follow,
    /// then [`leave`](Self::leave). Called for every directory the walk
    /// descends into, whether or not it could be opened (one that could
    /// not gets its error in between).
    fn enter(&mut self, dir: DirEvent<'_>) -> Flow {
        let _ = dir;
        Flow::Continue
    }

    /// A run of one directory's entries, in order. With [`Nest::AtEntry`] a
    /// run ends at each entry whose subtree follows.
    fn entries(&mut self, chunk: &ChunkBuf) -> Flow;

    /// Everything under the directory has been handed over (post-order).
    fn leave(&mut self, dir: DirEvent<'_>) -> Flow {
        let _ = dir;
        Flow::Continue
    }

    /// An error at one path, in the place of what it concerns.
    fn error(&mut self, error: Error) -> Flow {
        let _ = error;
        Flow::Continue
    }
}

/// What the ordered walk held at most, for tests and measurements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// Most bytes of results waiting at once.
    pub peak_bytes: usize,
    /// The largest single directory's result, in the same bytes.
    pub largest_dir: usize,
}

/// The bytes a chunk is counted for: the room of its names, slots and
/// metadata (recycled buffers may be larger than their entries), and its
/// directory's path, which it keeps alive (deep down, the path outweighs
/// the entries: a chain of nested directories read ahead would hold
/// depth² bytes).
fn chunk_bytes(c: &ChunkBuf) -> usize {
    use std::mem::size_of;
    std::mem::size_of::<ChunkBuf>()
        + c.prefix().len()
        + c.names.capacity()
        + c.slots.capacity() * size_of::<crate::entry::Slot>()
        + c.meta.capacity().max(c.slots.capacity()) * size_of::<Option<crate::meta::Metadata>>()
}

/// The bytes a subdirectory's place is counted for, until it is left.
fn slot_bytes(s: &Slot) -> usize {
    std::mem::size_of::<Slot>() + s.name.as_ref().map_or(0, |n| n.len())
}

/// One item of a directory's result, in release order.
enum Item {
    Entries(ChunkBuf),
    Sub(Arc<Slot>),
    Error(Error),
}

/// A directory read: what it releases, in order.
struct Done {
    items: Vec<Item>,
    bytes: usize,
}

/// Buffers of results the consumer is done with, for the next reads to
/// fill: a walk of small directories would otherwise allocate a few per
/// directory on the reading thread and free them on the releasing one.
/// Only small ones are kept (most directories are small; a large one
/// allocates its own), and at most [`SPARES`] of each kind, so what the
/// spares hold stays bounded whatever the tree.
#[derive(Default)]
struct Spares {
    chunks: Vec<ChunkRoom>,
    items: Vec<Vec<Item>>,
    /// A worker's own: asks to skip before the shared ones are looked at
    /// again, after they were found empty (they come back in batches).
    dry: u32,
}

/// A release longer than this drops the I/O probe's window (see
/// `Ordered::release_with`).
const RELEASE_NOT_A_READ: std::time::Duration = std::time::Duration::from_millis(1);

/// How many buffers of each kind [`Spares`] keeps.
const SPARES: usize = 64;
/// How many a thread takes from, or gives back to, the shared spares at
/// once (one lock for that many directories).
const SPARES_BATCH: usize = 16;

impl Spares {
    /// Keep `chunk`'s buffers for another read, if they are small.
    fn keep_chunk(&mut self, chunk: ChunkBuf) {
        let small = chunk.names.capacity() <= 1024 && chunk.slots.capacity() <= 32 && chunk.meta.capacity() <= 32;
        if small && self.chunks.len() < SPARES {
            self.chunks.push(chunk.into_room());
        }
    }

    /// Keep an emptied item list for another result, if it is small.
    fn keep_items(&mut self, items: Vec<Item>) {
        if items.capacity() <= 64 && items.capacity() > 0 && self.items.len() < SPARES {
            debug_assert!(items.is_empty());
            self.items.push(items);
        }
    }

    /// Whether a batch is here to give back.
    fn batch_ready(&self) -> bool {
        self.chunks.len() >= SPARES_BATCH || self.items.len() >= SPARES_BATCH
    }

    /// Move up to [`SPARES_BATCH`] of each kind from `from`.
    fn take_from(&mut self, from: &mut Spares) {
        let n = from.chunks.len().saturating_sub(SPARES_BATCH);
        self.chunks.extend(from.chunks.drain(n..));
        let n = from.items.len().saturating_sub(SPARES_BATCH);
        self.items.extend(from.items.drain(n..));
    }

    /// Move all of `from` here, as far as there is room.
    fn give_from(&mut self, from: &mut Spares) {
        let room = SPARES.saturating_sub(self.chunks.len()).min(from.chunks.len());
        self.chunks.extend(from.chunks.drain(..room));
        from.chunks.clear();
        let room = SPARES.saturating_sub(self.items.len()).min(from.items.len());
        self.items.extend(from.items.drain(..room));
        from.items.clear();
    }
}

/// One worker's buffers, reused from one directory to the next.
#[derive(Default)]
struct Scratch {
    /// Spares taken from the shared ones, not used yet.
    spares: Spares,
    /// The read's items as collected, before they are arranged.
    items: Vec<Item>,
    chunks: Vec<ChunkBuf>,
    /// The subdirectories found, sorted by name (by `name/` for
    /// [`Within::Path`]) to find each one's entry.
    subs: Vec<Sub>,
    /// Jobs of other kinds (parts of a directory, failures), placed last.
    unnamed: Vec<Job>,
    /// Subtrees placed after the entries, in their entries' order.
    after: Vec<Job>,
    /// Subdirectories queued, pushed to the frontier under one lock.
    queued: Vec<Queued>,
    /// Room to sort a directory in (see [`arrange_entries`]).
    sorting: Sorting,
}

/// A subdirectory found by a read: its name, its place in the listing,
/// and its job until its place among the entries is found.
struct Sub {
    name: Arc<[u8]>,
    /// Its [`name_prefix`], the key it is sorted by before its name.
    prefix: u64,
    listed: u32,
    job: Option<Job>,
}

/// Where a directory's result lands. Filled under the state's lock.
///
/// Its place in the release order is its parent's place and its own rank
/// among the parent's items; its path is the parent's and its own name.
/// Each slot holds only its own part of both (a chain of `n` nested
/// directories holds `n` slots, not `n²/2` keys and path bytes): the place
/// is compared by walking up to the common ancestor, the path is spelt by
/// the cursor in one buffer, as fts does.
struct Slot {
    parent: Option<Arc<Slot>>,
    /// The rank among the parent's items (a root's: its number).
    rank: u32,
    /// Levels below the walk's roots (0: a root).
    level: u32,
    /// The name below the parent (a root's: its path as given); `None`
    /// for a job with no path of its own.
    name: Option<Arc<[u8]>>,
    depth: usize,
    root: usize,
    result: Mutex<Option<Done>>,
    /// The place as one number, when it fits (see [`Key`]).
    key: Key,
}

/// A place in the release order as one number, so that the frontier compares
/// two places with one instruction instead of walking up to their common
/// ancestor: each rank from the root down gets an order-keeping,
/// prefix-free code (for `v` = rank + 2 of `b` bits, `b - 1` ones, a zero
/// and the low `b - 1` bits of `v`: a rank under 6 takes 3 to 5 bits),
/// written from the top bit down. An ancestor's bits are a prefix of its
/// subtree's, and every code starts with a one, so an ancestor's number is
/// the smaller; siblings compare by their codes. Deep or wide places that
/// take more than 128 bits have none and are compared the long way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Key {
    bits: u128,
    /// Bits used, or [`Key::NONE`].
    len: u8,
}

impl Key {
    const NONE: u8 = u8::MAX;
    const TOP: Key = Key { bits: 0, len: 0 };

    /// The key of rank `rank` below `self`.
    fn child(self, rank: u32) -> Key {
        let v = u128::from(rank) + 2;
        let b = 128 - v.leading_zeros();
        let len = 2 * b - 1;
        if self.len == Self::NONE || u32::from(self.len) + len > 128 {
            return Key {
                bits: 0,
                len: Self::NONE,
            };
        }
        let ones = ((1u128 << (b - 1)) - 1) << b;
        let code = ones | (v & ((1u128 << (b - 1)) - 1));
        Key {
            bits: self.bits | (code << (128 - u32::from(self.len) - len)),
            len: (u32::from(self.len) + len) as u8,
        }
    }
}

impl Slot {
    /// The place of item `rank` of `parent`'s result (a root's, numbered
    /// `rank`, with none).
    fn new(parent: Option<Arc<Slot>>, rank: u32, name: Option<Arc<[u8]>>, depth: usize, root: usize) -> Slot {
        let (level, key) = match &parent {
            Some(p) => (p.level + 1, p.key.child(rank)),
            None => (0, Key::TOP.child(rank)),
        };
        Slot {
            parent,
            rank,
            level,
            name,
            depth,
            root,
            result: Mutex::new(None),
            key,
        }
    }
}

impl Drop for Slot {
    /// Unlink the ancestors this slot held last one by one: dropping a
    /// deep chain recursively would overflow the stack.
    fn drop(&mut self) {
        let mut up = self.parent.take();
        while let Some(p) = up {
            up = match Arc::try_unwrap(p) {
                Ok(mut slot) => slot.parent.take(),
                Err(_) => None,
            };
        }
    }
}

/// Two places' order by their keys, when both have one.
fn by_keys(a: Key, b: Key) -> Option<CmpOrdering> {
    (a.len != Key::NONE && b.len != Key::NONE).then(|| a.bits.cmp(&b.bits))
}

/// Two slots' places in the release order: an ancestor's comes before its
/// subtree's, siblings' by rank. Costs the levels up to the common
/// ancestor (one step for siblings).
fn place_cmp(a: &Slot, b: &Slot) -> CmpOrdering {
    let (mut a, mut b) = (a, b);
    let mut if_same = CmpOrdering::Equal;
    while a.level > b.level {
        a = a.parent.as_deref().expect("a slot below a root has a parent");
        if_same = CmpOrdering::Greater;
    }
    while b.level > a.level {
        b = b.parent.as_deref().expect("a slot below a root has a parent");
        if_same = CmpOrdering::Less;
    }
    loop {
        if std::ptr::eq(a, b) {
            return if_same;
        }
        match (a.parent.as_deref(), b.parent.as_deref()) {
            (Some(pa), Some(pb)) if !std::ptr::eq(pa, pb) => (a, b) = (pa, pb),
            _ => return a.rank.cmp(&b.rank),
        }
    }
}

/// Whether `head` (the place the output waits for) is `slot`'s.
fn is_head(head: &Option<Arc<Slot>>, slot: &Slot) -> bool {
    head.as_deref().is_some_and(|h| std::ptr::eq(h, slot))
}

struct Queued {
    /// The slot's key, here where the frontier compares without a pointer.
    key: Key,
    slot: Arc<Slot>,
    job: Job,
}

impl Queued {
    fn new(slot: Arc<Slot>, job: Job) -> Queued {
        Queued {
            key: slot.key,
            slot,
            job,
        }
    }
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.slot, &other.slot)
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    /// Reversed: the frontier's greatest is the smallest key, the earliest
    /// output.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        by_keys(other.key, self.key).unwrap_or_else(|| place_cmp(&other.slot, &self.slot))
    }
}

/// What the workers share, under one lock.
struct State {
    /// The jobs waiting, the earliest in the output first.
    waiting: Frontier<Queued>,
    /// Parts of directories being read (see [`Split`]), taken before any
    /// job waiting: their directory is being read already (it counts as
    /// one whatever the threads reading it, as for the window), and
    /// the frontier's runs never share a place.
    parts: Vec<Queued>,
    /// Jobs being read.
    reading: usize,
    /// Bytes of results deposited and not released yet.
    held: usize,
    /// The key the output waits for, when no thread is releasing.
    head: Option<Arc<Slot>>,
    /// A thread is releasing (it will set `head` when it stops).
    releasing: bool,
    /// The head's result is in, left for the releasing worker (see
    /// [`Ordered::deposit`]).
    head_ready: bool,
    /// The releasing worker is reading a directory.
    releaser_reading: bool,
    /// Workers waiting for a job: std's condvar makes a system call per
    /// notification, waiters or not, so only these get one.
    sleepers: usize,
    stats: Held,
}

impl State {
    /// `job` is read next, by the releasing worker if `releaser`.
    fn start_read(&mut self, job: Queued, releaser: bool) -> Queued {
        self.reading += 1;
        self.releaser_reading |= releaser;
        job
    }

    /// A read [`start_read`](Self::start_read) counted is over.
    fn end_read(&mut self, releaser: bool) {
        self.reading -= 1;
        if releaser {
            self.releaser_reading = false;
        }
    }
}

/// The share of the window the releasing worker lets gather before it
/// releases what the others read (see `Ordered::deposit`).
const RELEASE_BATCH_SHARE: usize = 32;

/// The share of the window (a quarter) under which workers read their own
/// subdirectories first (see `Ordered::next_job`).
const OWN_FIRST_SHARE: usize = 4;

/// Levels of the release stack above which an open directory's list of
/// what is left is kept no larger than it needs (see `Cursor::enter`).
const SHRINK_BELOW: usize = 16;

/// The release position: a stack of directories being handed out.
struct Cursor<'v, V> {
    visitor: &'v mut V,
    /// Each open directory's items, the next one to release, and its slot
    /// (`None` for the walk's roots).
    stack: Vec<(VecDeque<Item>, Option<Arc<Slot>>)>,
    /// The path of the innermost open directory; each open directory's
    /// path is a prefix of it, its length kept in `lens`.
    path: Vec<u8>,
    /// The length of `path` before each open directory's name was added.
    lens: Vec<usize>,
    /// The last hollow directory spelt again, and its spelling: the chunks
    /// of one directory share both.
    respelt: Option<(Arc<Dir>, Arc<Dir>)>,
    /// Buffers released, to be given back to the shared spares.
    spares: Spares,
}

impl<V: TreeVisitor> Cursor<'_, V> {
    /// Enter `slot` (a subdirectory of the innermost open one, or a root)
    /// with `items` to release in it.
    fn enter(&mut self, slot: Arc<Slot>, items: VecDeque<Item>) -> Flow {
        let levels = self.stack.len();
        if let Some((parent_items, _)) = self.stack.last_mut() {
            // Nothing more to release there (this subtree was its last
            // item): its room would stay allocated on every level of a
            // chain, so it goes back to the spares.
            if parent_items.is_empty() {
                self.spares.keep_items(std::mem::take(parent_items).into());
            } else if parent_items.capacity() > 2 * parent_items.len()
                && (levels > SHRINK_BELOW || parent_items.capacity() > 2 * SHRINK_BELOW)
            {
                // What is left to release there waits until this subtree
                // is out, on every level of a chain: no more room than it
                // needs (880 bytes a level held 91 MB at 100,000 levels).
                // Only once it is down to half: a wide directory is not
                // copied per child. Not near the top, where a few small
                // lists waste little: there the `realloc` was one
                // directory entered in five on /usr.
                parent_items.shrink_to_fit();
            }
        }
        let base = self.path.len();
        if let Some(name) = &slot.name {
            if slot.parent.is_none() {
                self.path.clear();
            } else if !self.path.is_empty() && !self.path.ends_with(b"/") {
                self.path.push(b'/');
            }
            self.path.extend_from_slice(name);
        }
        self.lens.push(base);
        let flow = self.visitor.enter(event(&self.path, &slot));
        self.stack.push((items, Some(slot)));
        flow
    }

    /// A [`hollow`] directory (the innermost open one) spelt again.
    fn respelt(&mut self, hollow: &Arc<Dir>) -> Arc<Dir> {
        match &self.respelt {
            Some((h, full)) if Arc::ptr_eq(h, hollow) => full.clone(),
            _ => {
                let full = Arc::new(hollow.respelt(&self.path));
                self.respelt = Some((hollow.clone(), full.clone()));
                full
            }
        }
    }

    /// Leave the innermost open directory, `slot`.
    fn leave(&mut self, slot: &Slot) -> Flow {
        let flow = self.visitor.leave(event(&self.path, slot));
        let base = self.lens.pop().unwrap_or(0);
        self.path.truncate(base);
        flow
    }
}

/// `slot`'s event, `path` the cursor's (spelling `slot` when it has a name).
fn event<'a>(path: &'a [u8], slot: &Slot) -> DirEvent<'a> {
    DirEvent {
        path: if slot.name.is_some() { path } else { &[] },
        depth: slot.depth,
        root: slot.root,
    }
}

struct Ordered<'s, 'v, V> {
    shared: &'s Shared,
    /// Workers running.
    workers: AtomicUsize,
    order: TreeOrder,
    lenient: bool,
    state: Mutex<State>,
    wake: Condvar,
    cursor: Mutex<Cursor<'v, V>>,
    spares: Mutex<Spares>,
    /// The next worker's number (which runs of the frontier are its own).
    ids: AtomicUsize,
    /// A CPU each for the workers at the start (as the parallel pool's).
    placement: Option<Placement>,
    /// Directories being read in parts (see [`Split`]): a few at most.
    splits: Mutex<Vec<Split>>,
    /// The streamed directory's chunks waiting for their stats (see [`Relay`]).
    relay: Mutex<Relay>,
    /// A directory streams through the relay: until then a worker looking
    /// for a job does not lock it (a line both cores would write for every
    /// directory of a walk that never streams).
    relay_open: AtomicBool,
    /// A chunk's stats are in, for the streaming worker waiting for them.
    relayed: Condvar,
}

/// The chunks of the directory being streamed (one at a time: the head)
/// whose stats are to do, shared with the idle workers: the streaming
/// worker reads on while they stat, and hands the chunks on in order. A
/// directory the output waits for is read on one thread, so as not to be
/// held whole (see [`Collect`]); its stats, most of its time, are not: a
/// million files in one directory in du's order took 2.17 s on one
/// thread, du 2.26 s.
#[derive(Default)]
struct Relay {
    /// A duplicate of the directory's descriptor, for the stats.
    fd: Option<Arc<OwnedFd>>,
    /// From the oldest not handed on, in the order read.
    queue: VecDeque<Relayed>,
    /// The sequence number of `queue`'s front.
    base: usize,
    /// The streaming worker waits for a helper's stats.
    waiting: bool,
}

enum Relayed {
    /// Entries to stat, not taken yet.
    ToStat(ChunkBuf),
    /// Entries a worker is stat-ing.
    Taken,
    Ready(Item),
}

/// Chunks the streaming worker lets wait for a helper before it stats the
/// oldest itself (512 entries each).
const RELAY_AHEAD: usize = 8;

impl Relay {
    /// The oldest chunk no one stats yet, taken: its sequence number, and
    /// the descriptor to stat it through.
    fn take(&mut self) -> Option<(usize, ChunkBuf, Arc<OwnedFd>)> {
        let fd = self.fd.clone()?;
        let at = self.queue.iter().position(|r| matches!(r, Relayed::ToStat(_)))?;
        let Relayed::ToStat(chunk) = std::mem::replace(&mut self.queue[at], Relayed::Taken) else {
            unreachable!("found to stat")
        };
        Some((self.base + at, chunk, fd))
    }

    /// The stats of chunk `seq` are in.
    fn put(&mut self, seq: usize, chunk: ChunkBuf, relayed: &Condvar) {
        self.queue[seq - self.base] = Relayed::Ready(Item::Entries(chunk));
        if std::mem::take(&mut self.waiting) {
            relayed.notify_all();
        }
    }

    /// The front, if ready.
    fn pop_ready(&mut self) -> Option<Item> {
        if !matches!(self.queue.front(), Some(Relayed::Ready(_))) {
            return None;
        }
        self.base += 1;
        match self.queue.pop_front() {
            Some(Relayed::Ready(item)) => Some(item),
            _ => unreachable!("the front is ready"),
        }
    }
}

/// Stat `chunk`'s entries through `fd` (taken from the [`Relay`]).
fn stat_taken(shared: &Shared, mut chunk: ChunkBuf, fd: &OwnedFd) -> ChunkBuf {
    use std::os::fd::AsFd;
    fill_metadata(shared, &mut chunk, fd.as_fd());
    chunk
}

/// A directory whose read was cut into parts (see `crate::split`), in a
/// walk that holds each directory whole ([`Within::holds_whole_dirs`]):
/// each part is read (and sorted, in an order that sorts) by whichever
/// worker takes it, and the last read to end joins them into the
/// directory's result: merged when sorted, else one after the other in
/// the order of their positions, which is the listing's (parts are
/// ranges of the positions). A million files in one directory, sorted
/// by one thread, took 3.1x the time `fnd -u` took to list them on two.
struct Split {
    slot: Arc<Slot>,
    /// Reads not over yet, the first reader's own included.
    left: usize,
    /// Each read's position, items and subdirectories found.
    reads: Vec<(u64, Vec<Item>, Vec<Job>)>,
}

/// Wake every waiting worker, if one waits (`st`: the state, locked).
fn wake_all(wake: &Condvar, st: &State) {
    if st.sleepers > 0 {
        wake.notify_all();
    }
}

/// Lock `m`. A lock held by another thread may put this one to sleep,
/// which the I/O probe would take for a read waiting on the disk (on a
/// busy machine, where a lock's holder is often preempted, a hot walk
/// added workers that only contended for the same locks): such a wait
/// drops the probe's window.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.try_lock() {
        Ok(guard) => guard,
        Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => {
            crate::io::waited_elsewhere();
            m.lock().unwrap_or_else(|e| e.into_inner())
        }
    }
}

/// Run the ordered walk of `shared` with `visitor`; what it held at most.
pub(crate) fn run<V: TreeVisitor>(shared: &Shared, order: TreeOrder, lenient: bool, visitor: &mut V) -> Held {
    let threads = shared.settings.threads.max(1);
    let roots: Vec<Arc<Slot>> = shared
        .roots
        .iter()
        .enumerate()
        .map(|(i, path)| Arc::new(Slot::new(None, i as u32, Some(Arc::from(&path[..])), 0, i)))
        .collect();
    let mut waiting = Frontier::new();
    let mut queued: Vec<Queued> = (roots.iter().enumerate())
        .map(|(i, slot)| Queued::new(slot.clone(), Job::root(i, &shared.roots[i])))
        .collect();
    waiting.push_run(&mut queued, 0);
    let first = roots.first().cloned();
    let top: Vec<Item> = roots.into_iter().map(Item::Sub).collect();
    let walk = Ordered {
        shared,
        workers: AtomicUsize::new(threads),
        order,
        lenient,
        state: Mutex::new(State {
            waiting,
            parts: Vec::new(),
            reading: 0,
            held: 0,
            head: first,
            releasing: false,
            head_ready: false,
            releaser_reading: false,
            sleepers: 0,
            stats: Held::default(),
        }),
        wake: Condvar::new(),
        cursor: Mutex::new(Cursor {
            visitor,
            stack: vec![(top.into(), None)],
            path: Vec::new(),
            lens: Vec::new(),
            respelt: None,
            spares: Spares::default(),
        }),
        spares: Mutex::new(Spares::default()),
        ids: AtomicUsize::new(0),
        placement: Placement::new(threads),
        splits: Mutex::new(Vec::new()),
        relay: Mutex::new(Relay::default()),
        relay_open: AtomicBool::new(false),
        relayed: Condvar::new(),
    };
    std::thread::scope(|scope| {
        let walk = &walk;
        for i in 1..threads {
            // A thread refused is a worker fewer: the walk goes on with the rest.
            let _ = crate::budget::start_thread(scope, None, move || walk.work(scope, Some(i), false));
        }
        walk.work(scope, Some(0), true);
    });
    let stats = lock(&walk.state).stats;
    stats
}

/// What one read of a directory became: known to its [`Collect`] and to
/// the [`Parts`] it may cut, which exclude each other (a read that streams
/// keeps to one stream; a part, or a read cut into parts, is held).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Course {
    /// Its items are collected, to be arranged once it ends.
    Held = 0,
    /// It holds the release and hands its entries to the consumer as they
    /// are read (see [`Collect::try_stream`]).
    Streamed = 1,
    /// A part of a directory, or a read that cut off parts: held, and
    /// joined with the other reads (see [`Split`]).
    Cut = 2,
}

/// A read's [`Course`], seen by its collector and its parts (one thread's,
/// but a [`Visitor`] must be `Send`).
struct CourseOf(AtomicU8);

impl CourseOf {
    fn new(course: Course) -> Self {
        CourseOf(AtomicU8::new(course as u8))
    }

    fn get(&self) -> Course {
        match self.0.load(AtomicOrdering::Relaxed) {
            0 => Course::Held,
            1 => Course::Streamed,
            _ => Course::Cut,
        }
    }

    fn set(&self, course: Course) {
        self.0.store(course as u8, AtomicOrdering::Relaxed);
    }
}

/// Collects one directory's chunks and errors, in the order read; or,
/// when the output waits for this very directory, hands them straight to
/// the consumer (a huge directory the output waits for is never held): as
/// read, or a batch at a time in du's order.
struct Collect<'o, 'a, 'v, V> {
    walk: &'o Ordered<'a, 'v, V>,
    slot: &'o Arc<Slot>,
    items: Vec<Item>,
    /// The worker's spare buffers, to take each chunk out without a copy.
    spares: &'o mut Spares,
    /// Room to sort a batch in.
    sorting: &'o mut Sorting,
    course: &'o CourseOf,
    /// Streaming is over for this read: a subdirectory's entry came, whose
    /// subtree must follow it (not known until the read ends).
    streamed_all_it_can: bool,
    /// The chunks come without their stats, to be taken here (the reader
    /// stats a part's: see [`Parts::stats_chunks`]).
    stats: bool,
    /// Chunks taken so far.
    chunks: usize,
    /// Its chunks' stats go through the [`Relay`].
    relaying: bool,
}

/// The ordered walk's [`Caller`]: parts go to the walk's queue of parts,
/// unless the read streams.
struct Parts<'o, 'a, 'v, V> {
    walk: &'o Ordered<'a, 'v, V>,
    slot: &'o Arc<Slot>,
    course: &'o CourseOf,
}

impl<V: TreeVisitor> Caller for Parts<'_, '_, '_, V> {
    fn may_cut(&mut self) -> bool {
        self.walk.order.within.holds_whole_dirs() && self.course.get() == Course::Held
    }

    fn part(&mut self, part: Job) {
        self.course.set(Course::Cut);
        self.walk.queue_part(self.slot, part);
    }

    /// The collector stats each chunk: a directory it streams, with the
    /// idle workers' help (see [`Relay`]).
    fn stats_chunks(&mut self) -> bool {
        false
    }
}

impl<V: TreeVisitor> Collect<'_, '_, '_, V> {
    /// Take over the release if the output waits for this directory (in
    /// an order that releases a directory before it is read whole).
    fn try_stream(&mut self) {
        let walk = self.walk;
        let may = self.course.get() == Course::Held && !self.streamed_all_it_can && walk.order.within.streams_dirs();
        if !may || walk.shared.stopped() {
            return;
        }
        let mut st = lock(&walk.state);
        if st.releasing || !is_head(&st.head, self.slot) {
            return;
        }
        st.releasing = true;
        st.head = None;
        drop(st);
        let mut cursor = lock(&walk.cursor);
        // The release stopped at this directory's place: it is the front.
        if let Some((items, _)) = cursor.stack.last_mut() {
            items.pop_front();
        }
        if cursor.enter(self.slot.clone(), VecDeque::new()) == Flow::Stop {
            walk.shared.stop();
        }
        self.course.set(Course::Streamed);
    }

    /// Hand the consumer what of the items collected may go out now.
    fn stream(&mut self) -> Flow {
        if self.walk.shared.stopped() {
            // Nothing goes to a consumer that said stop, nor after a panic.
            return Flow::Stop;
        }
        if self.course.get() != Course::Streamed || self.streamed_all_it_can {
            return Flow::Continue;
        }
        match self.walk.order.within {
            Within::InodeBatches { above, batch } => self.stream_batches(above, batch.max(1)),
            _ => self.stream_as_read(),
        }
    }

    /// The items in the order read, up to the first subdirectory's entry
    /// whose subtree must follow it.
    fn stream_as_read(&mut self) -> Flow {
        let stop = self.items.iter().position(|item| self.first_descended(item).is_some());
        let mut cursor = lock(&self.walk.cursor);
        for item in self.items.drain(..stop.unwrap_or(self.items.len())) {
            if deliver(&mut *cursor.visitor, item, self.walk.shared) == Flow::Stop {
                return Flow::Stop;
            }
        }
        let Some(i) = self.items.first().and_then(|item| self.first_descended(item)) else {
            return Flow::Continue;
        };
        self.streamed_all_it_can = true;
        let Item::Entries(buf) = &mut self.items[0] else {
            unreachable!("only entries descend")
        };
        if i == 0 {
            return Flow::Continue;
        }
        let now = slice(buf, 0..i, None);
        *buf = slice(buf, i..buf.len(), None);
        deliver(&mut *cursor.visitor, Item::Entries(now), self.walk.shared)
    }

    /// du's order: each `batch` entries, once read, sorted by inode if
    /// more than `above` and handed over (errors first, as [`arrange`](Ordered::arrange)
    /// puts them); a directory of a million files is held a batch at a
    /// time, as gnulib's fts holds it. A batch with a subdirectory's entry
    /// in it stays, with all after it: the read ends held from a batch's
    /// start, where [`arrange_entries`] counts its batches from.
    fn stream_batches(&mut self, above: usize, batch: usize) -> Flow {
        let within = Within::InodeBatches { above, batch };
        loop {
            // Where the first `batch` entries end: item `k`, entry `j` of it.
            let mut n = 0;
            let Some((k, j)) = self.items.iter().enumerate().find_map(|(k, item)| match item {
                Item::Entries(c) if c.depth() > 0 => {
                    n += c.len();
                    (n >= batch).then(|| (k, c.len() - (n - batch)))
                }
                _ => None,
            }) else {
                return Flow::Continue;
            };
            if let Item::Entries(buf) = &self.items[k] {
                if j < buf.len() {
                    let (now, later) = (slice(buf, 0..j, None), slice(buf, j..buf.len(), None));
                    self.items[k] = Item::Entries(now);
                    self.items.insert(k + 1, Item::Entries(later));
                }
            }
            if self.items[..=k].iter().any(|item| self.first_descended(item).is_some()) {
                self.streamed_all_it_can = true;
                return Flow::Continue;
            }
            let mut chunks = Vec::new();
            let mut cursor = lock(&self.walk.cursor);
            for item in self.items.drain(..=k) {
                match item {
                    Item::Entries(c) if c.depth() > 0 => chunks.push(c),
                    other => {
                        if deliver(&mut *cursor.visitor, other, self.walk.shared) == Flow::Stop {
                            return Flow::Stop;
                        }
                    }
                }
            }
            arrange_entries(&mut chunks, within, self.sorting);
            for c in chunks {
                if deliver(&mut *cursor.visitor, Item::Entries(c), self.walk.shared) == Flow::Stop {
                    return Flow::Stop;
                }
            }
        }
    }

    /// Stat a chunk taken (through `fd`, the descriptor it lends), or hand
    /// it to the [`Relay`] if this read streams past its first chunk.
    fn stat(&mut self, mut buf: ChunkBuf, fd: BorrowedFd<'_>) -> Option<ChunkBuf> {
        if !self.relaying && self.chunks > 1 && self.course.get() == Course::Streamed {
            // A duplicate, for helpers to stat through after this visit:
            // none to be had (no descriptor left), the stats stay here.
            if let Ok(dup) = rustix::io::fcntl_dupfd_cloexec(fd, 0) {
                let mut relay = lock(&self.walk.relay);
                relay.fd = Some(Arc::new(dup));
                self.walk.relay_open.store(true, AtomicOrdering::Release);
                self.relaying = true;
            }
        }
        if !self.relaying {
            fill_metadata(self.walk.shared, &mut buf, fd);
            return Some(buf);
        }
        self.relay(Relayed::ToStat(buf));
        None
    }

    /// Queue `item` in the relay, wake a helper for it, and take in what
    /// is ready (stat-ing the oldest chunk past [`RELAY_AHEAD`] waiting).
    fn relay(&mut self, item: Relayed) {
        lock(&self.walk.relay).queue.push_back(item);
        let st = lock(&self.walk.state);
        if st.sleepers > 0 {
            self.walk.wake.notify_one();
        }
        drop(st);
        self.take_relayed(RELAY_AHEAD);
    }

    /// Move the relay's ready front to the items until at most `ahead`
    /// chunks wait, stat-ing here what no helper took, waiting for a
    /// helper's stats otherwise. With `ahead` 0, the relay ends.
    fn take_relayed(&mut self, ahead: usize) {
        let walk = self.walk;
        let mut relay = lock(&walk.relay);
        loop {
            while let Some(item) = relay.pop_ready() {
                self.items.push(item);
            }
            if relay.queue.len() <= ahead {
                break;
            }
            if let Some((seq, chunk, fd)) = relay.take() {
                drop(relay);
                let chunk = stat_taken(walk.shared, chunk, &fd);
                relay = lock(&walk.relay);
                relay.put(seq, chunk, &walk.relayed);
                continue;
            }
            // Not a read waiting on the disk: no worker is added for it.
            crate::io::waited_elsewhere();
            relay.waiting = true;
            relay = walk.relayed.wait(relay).unwrap_or_else(|e| e.into_inner());
        }
        if ahead == 0 {
            relay.fd = None;
            self.walk.relay_open.store(false, AtomicOrdering::Release);
            self.relaying = false;
        }
    }

    /// The read is over: the rest of its relayed chunks taken in, and
    /// what may go out of them handed over.
    fn end_relay(&mut self) {
        if self.relaying {
            self.take_relayed(0);
            self.stream();
        }
    }

    /// The first entry of `item` whose subtree must come right after it
    /// ([`Nest::AtEntry`]), if any.
    fn first_descended(&self, item: &Item) -> Option<usize> {
        match (item, self.walk.order.nest) {
            (Item::Entries(buf), Nest::AtEntry) if buf.depth() > 0 => buf
                .iter()
                .position(|e| e.file_type().is_dir() || e.target_type().is_dir()),
            _ => None,
        }
    }
}

/// Hand one item that needs no subtree to the consumer.
fn deliver<V: TreeVisitor>(visitor: &mut V, item: Item, shared: &Shared) -> Flow {
    let flow = match item {
        Item::Entries(buf) => visitor.entries(&buf),
        Item::Error(e) => visitor.error(e),
        Item::Sub(_) => unreachable!("a read's own items hold no subtree"),
    };
    if flow == Flow::Stop {
        shared.stop();
    }
    flow
}

impl<V: TreeVisitor> Visitor for Collect<'_, '_, '_, V> {
    fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
        let fd = chunk.parent_fd();
        let mut buf = match self.walk.spare_chunk(self.spares) {
            Some(spare) => chunk.take_into(spare),
            None => chunk.take(),
        };
        self.chunks += 1;
        // A first chunk not full is the whole read: nothing to stream.
        if self.chunks > 1 || buf.len() >= self.walk.shared.settings.chunk_size {
            self.try_stream();
        }
        if let (Some(fd), true) = (fd, self.stats) {
            match self.stat(buf, fd) {
                Some(stated) => buf = stated,
                None => return self.stream(),
            }
        }
        self.items.push(Item::Entries(buf));
        self.stream()
    }

    fn error(&mut self, error: Error) -> Flow {
        if self.walk.lenient && error.is_benign() && error.depth() > 0 {
            return Flow::Continue;
        }
        match self.relaying {
            true => self.relay(Relayed::Ready(Item::Error(error))),
            false => self.items.push(Item::Error(error)),
        }
        self.stream()
    }
}

impl<V: TreeVisitor> Ordered<'_, '_, V> {
    /// One worker: read jobs until the walk is over. Reads seen to wait on
    /// I/O add a worker (up to the I/O depth, as the parallel pool does):
    /// on a cold cache or a slow mount the walk goes as fast as the reads
    /// in flight. `added`: this worker was added so, and holds a budget share.
    /// `releaser`: this worker hands results to the consumer (see
    /// [`deposit`](Self::deposit)).
    fn work<'s>(&'s self, scope: &'s std::thread::Scope<'s, '_>, cpu_worker: Option<usize>, releaser: bool) {
        let added = cpu_worker.is_none();
        let me = self.ids.fetch_add(1, AtomicOrdering::Relaxed);
        let mut pinned = (self.placement.as_ref()).and_then(|p| cpu_worker.map(|me| p.pin(me)));
        let mut reader = Reader::new();
        let mut children = Vec::new();
        let mut scratch = Scratch::default();
        let max = self.shared.settings.io_depth.max(self.shared.settings.threads);
        let mut probe = Probe::new(max > self.shared.settings.threads);
        let mut next = self.next_job(lock(&self.state), &mut probe, releaser, me, None);
        loop {
            let Some(Queued { slot, job, .. }) = next.take() else {
                probe.idle();
                if added {
                    self.shared.budget.release_workers(1);
                }
                return;
            };
            probe.start();
            let part_from = match &job {
                Job::Part(part) => Some(part.start),
                _ => None,
            };
            let course = CourseOf::new(if part_from.is_some() { Course::Cut } else { Course::Held });
            let mut collect = Collect {
                walk: self,
                slot: &slot,
                items: std::mem::take(&mut scratch.items),
                spares: &mut scratch.spares,
                sorting: &mut scratch.sorting,
                course: &course,
                streamed_all_it_can: false,
                stats: self.shared.settings.metadata && part_from.is_none(),
                chunks: 0,
                relaying: false,
            };
            let mut parts = Parts {
                walk: self,
                slot: &slot,
                course: &course,
            };
            reader.read(self.shared, job, &mut collect, &mut children, Some(&mut parts));
            collect.end_relay();
            place::count_read(&mut pinned);
            if probe.finish() && self.work_waits() {
                let workers = self.workers.fetch_add(1, AtomicOrdering::AcqRel);
                if workers < max && self.shared.budget.reserve_workers(1) == 1 {
                    let stack = Some(crate::budget::IO_WORKER_STACK);
                    let spawned = crate::budget::start_thread(scope, stack, move || self.work(scope, None, false));
                    if spawned.is_none() {
                        self.shared.budget.release_workers(1);
                        self.workers.fetch_sub(1, AtomicOrdering::AcqRel);
                    }
                } else {
                    self.workers.fetch_sub(1, AtomicOrdering::AcqRel);
                    if workers >= max {
                        probe.disable();
                    }
                }
            }
            let mut items = collect.items;
            let streaming = course.get() == Course::Streamed;
            let in_parts = course.get() == Course::Cut;
            if in_parts {
                match self.gather(&slot, part_from.unwrap_or(0), items, &mut children, &mut scratch) {
                    Some(all) => items = all,
                    None => {
                        // The last read of the directory hands on its result.
                        let mut st = lock(&self.state);
                        st.end_read(releaser);
                        next = self.next_job(st, &mut probe, releaser, me, None);
                        continue;
                    }
                }
            }
            let sorted_runs = in_parts && self.order.within.sorts_whole_dirs();
            let done = self.arrange(&slot, items, sorted_runs, &mut children, &mut scratch);
            if !streaming {
                next = self.deposit(&slot, done, &mut scratch.queued, &mut probe, releaser, me);
                continue;
            }
            // This read holds the release: the rest of its items go out
            // now, and the release goes on from there.
            let mut cursor = lock(&self.cursor);
            self.settle(&mut lock(&self.state), &done, &mut scratch.queued, releaser, me);
            if let Some((items, _)) = cursor.stack.last_mut() {
                items.extend(done.items);
            }
            self.release_with(cursor);
            next = self.next_job(lock(&self.state), &mut probe, releaser, me, None);
        }
    }

    /// Whether a job waits with no worker idle to take it: a worker added
    /// otherwise would only sleep (a chain of nested directories has one
    /// job at a time, however slow its reads).
    fn work_waits(&self) -> bool {
        let st = lock(&self.state);
        st.sleepers == 0 && !(st.waiting.is_empty() && st.parts.is_empty())
    }

    /// The next job to read: the smallest key, if the window has room or it
    /// is the head; `None` when the walk is over (or stopped). A wait for
    /// one drops the `probe`'s window: sleeping for want of a job (the
    /// window full, the output behind) is not a read waiting on I/O, and
    /// counted as one it added workers that only slept too (a hot walk on
    /// a busy machine grew from 2 threads to 39).
    ///
    /// While the results held are under a [`OWN_FIRST_SHARE`]th of the
    /// window, a worker (`me`) reads its own subdirectories first, those of
    /// the directories it read, the earliest first: depth-first within its
    /// own subtrees, as the parallel pool's workers. A directory's
    /// descriptor, its `Dir`, its slot and its name then stay in the cache
    /// of the core that read it, where a subdirectory read by the other
    /// worker moved a dozen lines from core to core (reference counts, the
    /// kernel's open file): on a machine that placed the two cores far
    /// apart, two workers took 1.25x the CPU of one. Past that share the
    /// workers take the earliest job, helping the output along (read ahead
    /// unbounded so, the window filled and the walk waited: million 1.29x
    /// `fnd -u` instead of 1.23x); past the window, only the head.
    ///
    /// `own`: the first subdirectory of the directory this worker just
    /// read, not queued yet, read next when its own come first or nothing
    /// queued comes before it: no push and pop of the frontier. Else a
    /// part of a directory being read comes first (see [`State::parts`]).
    fn next_job<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        probe: &mut Probe,
        releaser: bool,
        me: usize,
        mut own: Option<Queued>,
    ) -> Option<Queued> {
        loop {
            if self.shared.stopped() {
                st.waiting.clear();
                st.parts.clear();
                wake_all(&self.wake, &st);
                return None;
            }
            let relayed = match self.relay_open.load(AtomicOrdering::Acquire) {
                true => lock(&self.relay).take(),
                false => None,
            };
            if let Some((seq, chunk, fd)) = relayed {
                // The output waits for these stats.
                drop(st);
                let chunk = stat_taken(self.shared, chunk, &fd);
                lock(&self.relay).put(seq, chunk, &self.relayed);
                st = lock(&self.state);
                continue;
            }
            let own_first = st.held <= self.order.window / OWN_FIRST_SHARE;
            if let Some(mine) = own.take() {
                // `>`: earlier in the output (the order is reversed).
                let first = own_first || st.waiting.peek().is_none_or(|top| mine > *top);
                if first && (st.held <= self.order.window || is_head(&st.head, &mine.slot)) {
                    return Some(st.start_read(mine, releaser));
                }
                st.waiting.push(mine, me);
                if st.sleepers > 0 {
                    self.wake.notify_one();
                }
            }
            if let Some(part) = st.parts.pop() {
                return Some(st.start_read(part, releaser));
            }
            if own_first {
                if let Some(q) = st.waiting.pop_own(me) {
                    return Some(st.start_read(q, releaser));
                }
            }
            if let Some(top) = st.waiting.peek() {
                let is_head = is_head(&st.head, &top.slot);
                if st.held <= self.order.window || is_head {
                    let q = st.waiting.pop().expect("peeked");
                    return Some(st.start_read(q, releaser));
                }
            }
            if st.head_ready && !st.releasing {
                // Nothing to read until the output moves, and the
                // releasing worker is in a long read: released here.
                st.head_ready = false;
                st.releasing = true;
                st.head = None;
                drop(st);
                self.release();
                st = lock(&self.state);
                continue;
            }
            if st.waiting.is_empty() && st.reading == 0 {
                wake_all(&self.wake, &st);
                return None;
            }
            probe.idle();
            st.sleepers += 1;
            st = self.wake.wait(st).unwrap_or_else(|e| e.into_inner());
            st.sleepers -= 1;
        }
    }

    /// A read directory's result: its entries in order, its subdirectories
    /// placed among them, each queued with its key. `sorted_runs`: the
    /// directory was read in parts, each part's entries a chunk already
    /// sorted (see [`gather`](Self::gather)).
    fn arrange(
        &self,
        slot: &Arc<Slot>,
        mut items: Vec<Item>,
        sorted_runs: bool,
        children: &mut Vec<Job>,
        scratch: &mut Scratch,
    ) -> Done {
        // The root's own entry (depth 0) and errors keep their place in front.
        let mut out = self.spare_items(&mut scratch.spares);
        // Room for what most results hold at most: each chunk and error, a
        // subdirectory and a cut of its run each. Grown by pushes, a new
        // list took a `realloc` or two in one directory of five on /usr.
        room_for(&mut out, items.len() + 2 * children.len());
        let mut chunks = std::mem::take(&mut scratch.chunks);
        for item in items.drain(..) {
            match item {
                Item::Entries(c) if c.depth() > 0 => chunks.push(c),
                other => out.push(other),
            }
        }
        scratch.items = items;
        if sorted_runs {
            merge_runs(&mut chunks, self.order.within);
        } else {
            arrange_entries(&mut chunks, self.order.within, &mut scratch.sorting);
        }
        // Subdirectories by name, to find each one's entry (or the end).
        let by_path = self.order.within == Within::Path;
        let mut subs = std::mem::take(&mut scratch.subs);
        for (listed, job) in children.drain(..).enumerate() {
            match &job {
                Job::Open(p) => subs.push(Sub {
                    prefix: name_prefix(&p.name, by_path),
                    name: p.name.clone(),
                    listed: listed as u32,
                    job: Some(job),
                }),
                _ => scratch.unnamed.push(job),
            }
        }
        // By `name/` for a path order, else by name (`path_cmp` with no
        // `/` is the names' order).
        subs.sort_unstable_by(|a, b| {
            (a.prefix.cmp(&b.prefix)).then_with(|| path_cmp(&a.name, by_path, &b.name, by_path))
        });
        if by_path {
            self.merge_by_path(slot, &mut chunks, &mut subs, &mut out, scratch);
        } else {
            self.place_subs(slot, &mut chunks, &mut subs, &mut out, scratch);
        }
        for job in scratch.unnamed.drain(..) {
            let item = self.queue(slot, out.len(), job, &mut scratch.queued);
            out.push(item);
        }
        subs.clear();
        scratch.subs = subs;
        scratch.chunks = chunks;
        done(out)
    }

    /// The entries of `chunks` to `out`, each subdirectory of `subs`
    /// (sorted by name) queued where [`Nest`] puts it.
    fn place_subs(
        &self,
        slot: &Arc<Slot>,
        chunks: &mut Vec<ChunkBuf>,
        subs: &mut Vec<Sub>,
        out: &mut Vec<Item>,
        scratch: &mut Scratch,
    ) {
        let nest_at = self.order.nest == Nest::AtEntry;
        let is_dir = |e: &crate::entry::EntryRef<'_>| e.file_type().is_dir() || e.target_type().is_dir();
        // Entries sorted by name meet the subdirectories in their order:
        // one pass over both. Else each is looked up.
        let entries_by_name = self.order.within == Within::Name;
        let mut next = 0;
        let mut take = |subs: &mut Vec<Sub>, name: &[u8]| {
            let prefix = name_prefix(name, false);
            let by_key = |s: &Sub| (s.prefix.cmp(&prefix)).then_with(|| (*s.name).cmp(name));
            let at = if entries_by_name {
                let from = next;
                next += subs[from..]
                    .iter()
                    .take_while(|s| by_key(s) == CmpOrdering::Less)
                    .count();
                (subs.get(next).is_some_and(|s| by_key(s) == CmpOrdering::Equal)).then_some(next)
            } else {
                subs.binary_search_by(by_key).ok()
            };
            at.and_then(|i| subs[i].job.take())
        };
        let mut left = subs.len();
        // With the subtrees after the entries: the jobs in their entries' order.
        let mut after = std::mem::take(&mut scratch.after);
        for buf in chunks.drain(..) {
            if left == 0 {
                out.push(Item::Entries(buf));
            } else if !nest_at {
                for e in buf.iter().filter(is_dir) {
                    if let Some(job) = take(subs, e.name_bytes()) {
                        left -= 1;
                        after.push(job);
                    }
                }
                out.push(Item::Entries(buf));
            } else {
                // Cut the run after each entry whose subtree comes next.
                let mut start = 0;
                for i in 0..buf.len() {
                    let e = buf.get(i);
                    if let Some(job) = is_dir(&e).then(|| take(subs, e.name_bytes())).flatten() {
                        left -= 1;
                        let spare = self.spare_chunk(&mut scratch.spares);
                        out.push(Item::Entries(slice(&buf, start..i + 1, spare)));
                        out.push(self.queue(slot, out.len(), job, &mut scratch.queued));
                        start = i + 1;
                    }
                }
                self.push_rest(buf, start, out, &mut scratch.spares);
            }
        }
        // Subdirectories not yielded come after the entries, in the
        // directory's order (by name when the entries are sorted).
        if left > 0 {
            subs.retain(|s| s.job.is_some());
            if self.order.within == Within::Listing {
                subs.sort_unstable_by_key(|s| s.listed);
            }
            after.extend(subs.iter_mut().filter_map(|s| s.job.take()));
        }
        for job in after.drain(..) {
            let item = self.queue(slot, out.len(), job, &mut scratch.queued);
            out.push(item);
        }
        scratch.after = after;
    }

    /// [`Within::Path`]: entries sorted by their path key, and each
    /// subtree of `subs` (sorted by `name/`; yielded or not) where
    /// `name/` sorts among them.
    fn merge_by_path(
        &self,
        slot: &Arc<Slot>,
        chunks: &mut Vec<ChunkBuf>,
        subs: &mut [Sub],
        out: &mut Vec<Item>,
        scratch: &mut Scratch,
    ) {
        let mut next = 0;
        for buf in chunks.drain(..) {
            let mut start = 0;
            for i in 0..buf.len() {
                if next == subs.len() {
                    break;
                }
                let e = buf.get(i);
                let (name, dir) = (e.name_bytes(), is_dir_entry(&e));
                // Keys compared by their first eight bytes, as sorted: the
                // names only where these tie (a `memcmp` an entry was 1.6 M
                // of a path-sorted walk's 228 M user instructions on /usr).
                let key = name_prefix(name, dir);
                // Subtrees whose `name/` sorts before this entry's key.
                while let Some(sub) = subs.get_mut(next) {
                    let before = match sub.prefix.cmp(&key) {
                        CmpOrdering::Equal => path_cmp(&sub.name, true, name, dir) == CmpOrdering::Less,
                        order => order == CmpOrdering::Less,
                    };
                    if !before {
                        break;
                    }
                    next += 1;
                    let job = sub.job.take().expect("each subdirectory placed once");
                    if start < i {
                        let spare = self.spare_chunk(&mut scratch.spares);
                        out.push(Item::Entries(slice(&buf, start..i, spare)));
                        start = i;
                    }
                    out.push(self.queue(slot, out.len(), job, &mut scratch.queued));
                }
            }
            self.push_rest(buf, start, out, &mut scratch.spares);
        }
        for sub in &mut subs[next..] {
            let job = sub.job.take().expect("each subdirectory placed once");
            out.push(self.queue(slot, out.len(), job, &mut scratch.queued));
        }
    }

    /// The entries of `buf` from `start` on, as one item (`buf` itself when
    /// that is all of it: no copy).
    fn push_rest(&self, buf: ChunkBuf, start: usize, out: &mut Vec<Item>, spares: &mut Spares) {
        if start == 0 {
            if !buf.is_empty() {
                out.push(Item::Entries(buf));
            }
            return;
        }
        if start < buf.len() {
            let spare = self.spare_chunk(spares);
            out.push(Item::Entries(slice(&buf, start..buf.len(), spare)));
        }
        spares.keep_chunk(buf);
    }

    /// A spare chunk buffer from the worker's `local` spares, which take
    /// a batch from the shared ones when they run out.
    fn spare_chunk(&self, local: &mut Spares) -> Option<ChunkRoom> {
        if local.chunks.is_empty() {
            self.refill(local);
        }
        local.chunks.pop()
    }

    /// An empty item list, a spare one if there is one.
    fn spare_items(&self, local: &mut Spares) -> Vec<Item> {
        if local.items.is_empty() {
            self.refill(local);
        }
        local.items.pop().unwrap_or_default()
    }

    /// Take a batch of the shared spares into `local`, unless they were
    /// found empty a few asks ago: they come back [`SPARES_BATCH`] at a
    /// time, and a lock per directory to find none cost as much as the
    /// buffer it would have saved.
    fn refill(&self, local: &mut Spares) {
        if local.dry > 0 {
            local.dry -= 1;
            return;
        }
        local.take_from(&mut lock(&self.spares));
        if local.chunks.is_empty() && local.items.is_empty() {
            local.dry = SPARES_BATCH as u32 / 2;
        }
    }

    /// `part`, the rest of the directory of `slot` from some position on,
    /// cut off by its reader: for the first worker free.
    fn queue_part(&self, slot: &Arc<Slot>, part: Job) {
        {
            let mut splits = lock(&self.splits);
            match splits.iter_mut().find(|s| Arc::ptr_eq(&s.slot, slot)) {
                Some(split) => split.left += 1,
                None => splits.push(Split {
                    slot: slot.clone(),
                    left: 2,
                    reads: Vec::new(),
                }),
            }
        }
        let mut st = lock(&self.state);
        st.parts.push(Queued::new(slot.clone(), part));
        if st.sleepers > 0 {
            self.wake.notify_one();
        }
    }

    /// One read of a directory cut into parts, from position `from`, is
    /// over: its entries sorted here (in an order that sorts), on the
    /// worker that read them, and kept with the other reads'. The last
    /// read gets the items of all in the order of their positions (each
    /// read's entries one sorted chunk for [`merge_runs`], or the
    /// listing's chunks) and, in `children`, all the subdirectories found;
    /// the others get `None`.
    fn gather(
        &self,
        slot: &Arc<Slot>,
        from: u64,
        items: Vec<Item>,
        children: &mut Vec<Job>,
        scratch: &mut Scratch,
    ) -> Option<Vec<Item>> {
        if !self.order.within.sorts_whole_dirs() {
            return self.join_read(slot, from, items, children);
        }
        let mut chunks = std::mem::take(&mut scratch.chunks);
        let mut kept = Vec::with_capacity(items.len());
        for item in items {
            match item {
                Item::Entries(c) if c.depth() > 0 => chunks.push(c),
                other => kept.push(other),
            }
        }
        arrange_entries(&mut chunks, self.order.within, &mut scratch.sorting);
        // Copied in their order, so that the merge and the output read the
        // names one after the other, not each from where it was read (one
        // cache miss a compare: the merge took 16% of the samples). Not
        // with metadata: its stats took far longer than the misses, and a
        // copy would hold 104 bytes more an entry.
        kept.extend(chunks.drain(..).map(|c| match c.meta.is_empty() {
            true => Item::Entries(slice(&c, 0..c.len(), None)),
            false => Item::Entries(c),
        }));
        scratch.chunks = chunks;
        self.join_read(slot, from, kept, children)
    }

    /// Keep one read's `items` and `children` with the other reads' of its
    /// directory; the last read gets all (see [`gather`](Self::gather)).
    fn join_read(&self, slot: &Arc<Slot>, from: u64, items: Vec<Item>, children: &mut Vec<Job>) -> Option<Vec<Item>> {
        let mut splits = lock(&self.splits);
        let at = (splits.iter().position(|s| Arc::ptr_eq(&s.slot, slot)))
            .expect("a directory is registered as split before its parts are queued");
        let split = &mut splits[at];
        split.reads.push((from, items, std::mem::take(children)));
        split.left -= 1;
        if split.left > 0 {
            return None;
        }
        let mut reads = splits.swap_remove(at).reads;
        drop(splits);
        reads.sort_unstable_by_key(|r| r.0);
        let mut all = Vec::with_capacity(reads.iter().map(|r| r.1.len()).sum());
        for (_, items, found) in reads {
            all.extend(items);
            children.extend(found);
        }
        Some(all)
    }

    /// A subdirectory of `parent`'s result at item `rank`, its job added
    /// to `queued` (see [`push_queued`](Self::push_queued)).
    fn queue(&self, parent: &Arc<Slot>, rank: usize, job: Job, queued: &mut Vec<Queued>) -> Item {
        let (name, depth) = match &job {
            Job::Open(p) => (Some(p.name.clone()), p.depth()),
            _ => (None, parent.depth + 1),
        };
        let slot = Arc::new(Slot::new(Some(parent.clone()), rank as u32, name, depth, parent.root));
        queued.push(Queued::new(slot.clone(), job));
        Item::Sub(slot)
    }

    /// Put the `queued` jobs of one directory in the frontier (`st`: the
    /// state, locked), waking a sleeper for each.
    fn push_queued(&self, st: &mut State, queued: &mut Vec<Queued>, me: usize) {
        let n = queued.len();
        st.waiting.push_run(queued, me);
        for _ in 0..n.min(st.sleepers) {
            self.wake.notify_one();
        }
    }

    /// A read is over, `done` its result (held until released), `queued`
    /// its subdirectories' jobs: account for it in the state, `st`.
    fn settle(&self, st: &mut State, done: &Done, queued: &mut Vec<Queued>, releaser: bool, me: usize) {
        self.push_queued(st, queued, me);
        st.end_read(releaser);
        st.held += done.bytes;
        st.stats.largest_dir = st.stats.largest_dir.max(done.bytes);
        st.stats.peak_bytes = st.stats.peak_bytes.max(st.held);
    }

    /// A directory's result is in, with its subdirectories' `queued` jobs:
    /// if the output waited for it, release; then the next job. One lock
    /// of the state for all three (a walk of small directories took it
    /// three times a directory, and the two workers met there: 3,900
    /// futex calls on /usr, the parallel walk 20).
    ///
    /// One worker, the `releaser`, hands out the results the others read
    /// once they hold a [`RELEASE_BATCH_SHARE`]th of the window (or when
    /// it has nothing to read): released one directory at a time, each
    /// release passed the state's and the head's lines between the cores
    /// for one directory's entries. One worker releasing, the consumer's
    /// buffers, the cursor and the path stay in one core's cache, where a
    /// release by whichever worker deposited the head moved them from core
    /// to core. Another worker releases only when the releaser is not
    /// reading (it waits for a job, or is gone) or the window is full.
    fn deposit(
        &self,
        slot: &Arc<Slot>,
        done: Done,
        queued: &mut Vec<Queued>,
        probe: &mut Probe,
        releaser: bool,
        me: usize,
    ) -> Option<Queued> {
        // The first subdirectory (ranks are queued in order); the rest
        // stay in order, a run of the frontier.
        let own = (!queued.is_empty()).then(|| queued.remove(0));
        let mut st = lock(&self.state);
        self.settle(&mut st, &done, queued, releaser, me);
        *lock(&slot.result) = Some(done);
        let at_head = is_head(&st.head, slot);
        // The head, read by another worker: left to the releaser while it
        // reads and the window has room.
        let left = at_head && !releaser && st.releaser_reading && st.held <= self.order.window;
        st.head_ready |= left;
        let ready = at_head || (releaser && st.head_ready && st.held >= self.order.window / RELEASE_BATCH_SHARE);
        if st.releasing || !ready || left {
            return self.next_job(st, probe, releaser, me, own);
        }
        st.releasing = true;
        st.head = None;
        st.head_ready = false;
        drop(st);
        self.release();
        self.next_job(lock(&self.state), probe, releaser, me, own)
    }

    /// Hand results to the consumer in order until one is missing.
    fn release(&self) {
        self.release_with(lock(&self.cursor));
    }

    /// [`release`](Self::release), the cursor locked already.
    fn release_with(&self, cursor: MutexGuard<'_, Cursor<'_, V>>) {
        let started = crate::io::coarse_now();
        self.release_from(cursor);
        // The consumer's work is no read: a release that took long (the
        // consumer writing a large export, put to sleep by the page
        // cache's writeback) would look to the I/O probe like reads
        // waiting on the disk, and `fdu -o` of 3.8 M entries on a busy
        // machine grew to dozens of workers. Timed by the coarse clock:
        // with the precise one, the two reads a directory took 0.7% of a
        // sorted walk's time on one thread. A short release that happens
        // to span a tick costs the probe one window of measures, no more.
        if crate::io::coarse_now().saturating_sub(started) >= RELEASE_NOT_A_READ {
            crate::io::waited_elsewhere();
        }
    }

    fn release_from(&self, mut cursor: MutexGuard<'_, Cursor<'_, V>>) {
        let cursor = &mut *cursor;
        let mut freed = 0usize;
        let mut stop = false;
        loop {
            if freed >= (self.order.window / 16).max(64 << 10) {
                self.free(std::mem::take(&mut freed));
            }
            if stop || self.shared.stopped() {
                self.shared.stop();
                self.give_back(&mut cursor.spares);
                let mut st = lock(&self.state);
                st.releasing = false;
                st.held -= freed.min(st.held);
                wake_all(&self.wake, &st);
                return;
            }
            let Some((items, dir)) = cursor.stack.last_mut() else {
                // Everything is out.
                self.give_back(&mut cursor.spares);
                let mut st = lock(&self.state);
                st.releasing = false;
                st.held -= freed.min(st.held);
                wake_all(&self.wake, &st);
                return;
            };
            if let Some(ahead) = items.get(PREFETCH_AHEAD) {
                prefetch_item(ahead);
            }
            let Some(item) = items.pop_front() else {
                if let Some(dir) = dir.take() {
                    freed += slot_bytes(&dir);
                    stop = cursor.leave(&dir) == Flow::Stop;
                }
                if let Some((items, _)) = cursor.stack.pop() {
                    cursor.spares.keep_items(items.into());
                    if cursor.spares.batch_ready() {
                        self.give_back(&mut cursor.spares);
                    }
                }
                continue;
            };
            match item {
                Item::Entries(mut buf) => {
                    freed += chunk_bytes(&buf);
                    if buf.dir.is_hollow() {
                        buf.dir = cursor.respelt(&buf.dir);
                    }
                    stop = cursor.visitor.entries(&buf) == Flow::Stop;
                    cursor.spares.keep_chunk(buf);
                    if cursor.spares.batch_ready() {
                        self.give_back(&mut cursor.spares);
                    }
                }
                Item::Error(e) => stop = cursor.visitor.error(e) == Flow::Stop,
                Item::Sub(sub) => {
                    // Read already (most are): the state's lock is not
                    // needed to take it. Not yet: asked again under the
                    // state's lock, which a deposit holds while it
                    // looks for the head.
                    let ready = lock(&sub.result).take();
                    let taken = match ready {
                        Some(done) => Ok(done),
                        None => {
                            let st = lock(&self.state);
                            let ready = lock(&sub.result).take();
                            ready.ok_or(st)
                        }
                    };
                    match taken {
                        Ok(done) => {
                            done.items.iter().take(PREFETCH_AHEAD).for_each(prefetch_item);
                            stop = cursor.enter(sub, done.items.into()) == Flow::Stop;
                        }
                        Err(mut st) => {
                            // Not read yet: whoever deposits it goes on from here.
                            st.head = Some(sub.clone());
                            st.releasing = false;
                            st.held -= freed.min(st.held);
                            wake_all(&self.wake, &st);
                            drop(st);
                            // The cursor is still locked: the next release
                            // waits. Its spares go back a batch at a time
                            // (above), not at each stop: most releases stop
                            // after one directory.
                            // The subtree's place, kept for whoever goes on.
                            items.push_front(Item::Sub(sub));
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Hand the buffers the release is done with to the workers.
    fn give_back(&self, released: &mut Spares) {
        if !released.chunks.is_empty() || !released.items.is_empty() {
            lock(&self.spares).give_from(released);
        }
    }

    fn free(&self, bytes: usize) {
        let mut st = lock(&self.state);
        let was_full = st.held > self.order.window;
        st.held -= bytes.min(st.held);
        if was_full && st.held <= self.order.window {
            wake_all(&self.wake, &st);
        }
    }
}

/// How many items ahead of the one released their first lines are asked
/// for (see [`prefetch_item`]).
const PREFETCH_AHEAD: usize = 3;

/// Ask for the lines the release of `item` reads first: most results were
/// read on another core, and each of a chunk's directory, names and
/// entries, or a subdirectory's slot, was a wait for that core's cache,
/// one after the other.
#[inline(always)]
fn prefetch_item(item: &Item) {
    match item {
        Item::Entries(buf) => {
            prefetch(Arc::as_ptr(&buf.dir));
            prefetch(buf.names.as_ptr());
            prefetch(buf.slots.as_ptr());
        }
        Item::Sub(slot) => prefetch(&slot.result),
        Item::Error(_) => {}
    }
}

/// A hint that the line at `p` is read soon: no effect on what the program does.
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and never faults,
    // whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Paths longer than this are let go while their entries wait (see
/// [`hollow`]): the paths kept are then at most this long, on the few
/// levels of a chain above where paths grow past it.
const HOLLOW_ABOVE: usize = 1024;

/// Let go of the directory's path held by each chunk of a result that may
/// wait, when it is long: the cursor spells it again when the chunk is
/// released. A chain of nested directories each holding a file waits with
/// one chunk per level (every file comes after the subtree beside it), and
/// each chunk held its whole path: 2.2 GB at 20,000 levels of 10-byte
/// names, for an export of 1.3 MB.
fn hollow(items: &mut [Item]) {
    let mut last: Option<(*const Dir, Arc<Dir>)> = None;
    for item in items {
        let Item::Entries(buf) = item else { continue };
        if buf.dir.prefix.len() <= HOLLOW_ABOVE {
            continue;
        }
        let full = Arc::as_ptr(&buf.dir);
        let hollow = match &last {
            // The chunks of one directory share it, and so their hollow.
            Some((at, hollow)) if *at == full => hollow.clone(),
            _ => {
                let hollow = Arc::new(buf.dir.hollow());
                last = Some((full, hollow.clone()));
                hollow
            }
        };
        buf.dir = hollow;
    }
}

/// A directory's result, its bytes counted.
fn done(mut items: Vec<Item>) -> Done {
    hollow(&mut items);
    let bytes = items
        .iter()
        .map(|item| match item {
            Item::Entries(c) => chunk_bytes(c),
            Item::Sub(s) => slot_bytes(s),
            Item::Error(_) => 0,
        })
        .sum();
    Done { items, bytes }
}

/// Entries `range` of `from` (with their metadata), room made at once
/// (in `spare`'s buffers, if given).
fn slice(from: &ChunkBuf, range: std::ops::Range<usize>, spare: Option<ChunkRoom>) -> ChunkBuf {
    let mut to = ChunkBuf::in_room(from.dir.clone(), spare.unwrap_or_default());
    let names = from.slots[range.clone()].iter().map(|s| s.name_len as usize).sum();
    reserve(&mut to, names, range.len(), !from.meta.is_empty());
    range.for_each(|i| copy_entry(from, i, &mut to));
    to
}

/// Room in `to` (empty) for `entries` entries whose names take `names`
/// bytes: copying them then reallocates nothing. A recycled buffer too
/// small is replaced ([`room_for`]): grown, it was copied whole by
/// `realloc`, 3,200 times on /usr in path order (a cut of a directory at
/// each subtree).
fn reserve(to: &mut ChunkBuf, names: usize, entries: usize, meta: bool) {
    room_for(&mut to.names, names);
    room_for(&mut to.slots, entries);
    if meta {
        room_for(&mut to.meta, entries);
    }
}

/// Copy entry `i` of `from` (with its metadata) to the end of `to`.
fn copy_entry(from: &ChunkBuf, i: usize, to: &mut ChunkBuf) {
    let s = from.slots[i];
    let name = &from.names[s.name_start as usize..(s.name_start + s.name_len) as usize];
    to.push(name, s.file_type, s.target_type, s.ino);
    if let Some(m) = from.meta.get(i) {
        to.meta.push(*m);
    }
}

/// Two names as `LC_ALL=C sort` orders the paths they end: a
/// directory's (`a_dir`, `b_dir`) with the `/` that its own line and
/// every path below it have next. One `memcmp`, then a byte or two.
fn path_cmp(a: &[u8], a_dir: bool, b: &[u8], b_dir: bool) -> CmpOrdering {
    let common = a.len().min(b.len());
    match a[..common].cmp(&b[..common]) {
        CmpOrdering::Equal => {}
        unequal => return unequal,
    }
    let next = |name: &[u8], dir: bool| match name.get(common) {
        Some(&c) => Some(c),
        None => dir.then_some(b'/'),
    };
    match next(a, a_dir).cmp(&next(b, b_dir)) {
        // Both go on past `common`, or end there alike: what follows
        // decides (a `/` ends a key; names differ in a directory).
        CmpOrdering::Equal if a.len() != b.len() => {
            let (rest_a, rest_b) = (&a[common.min(a.len())..], &b[common.min(b.len())..]);
            let key_a = rest_a.iter().copied().chain(a_dir.then_some(b'/'));
            let key_b = rest_b.iter().copied().chain(b_dir.then_some(b'/'));
            key_a.cmp(key_b)
        }
        other => other,
    }
}

/// Whether an entry sorts as a directory in [`Within::Path`].
fn is_dir_entry(e: &crate::entry::EntryRef<'_>) -> bool {
    e.file_type().is_dir() || e.target_type().is_dir()
}

/// Room to sort a directory in, kept from one directory to the next.
#[derive(Default)]
struct Sorting {
    /// Entries' positions in their chunks, sorted.
    at: Vec<(u32, u32)>,
    /// Each entry's [`name_prefix`] and position, sorted.
    keyed: Vec<(u64, u32)>,
    /// Runs of `keyed` still to break ties in (see [`sort_ties`]).
    runs: Vec<(u32, u32, u32)>,
    /// Room to copy a directory's slots and metadata to (see [`permute`]).
    slots: Vec<crate::entry::Slot>,
    meta: Vec<Option<crate::meta::Metadata>>,
}

/// The first eight bytes of an entry's sort key (its name, and for
/// [`Within::Path`] a directory's `/` after it) as a big-endian number,
/// zero-padded: two keys compare as their prefixes do unless these are
/// equal (no name holds a zero byte, so a shorter key's padding sorts
/// first, as the shorter key does). Most names differ in their first
/// eight bytes: a directory sorted by prefix compares with one
/// instruction where a `memcmp` call on the two names took 70 ns an
/// entry on /usr.
fn name_prefix(name: &[u8], slash: bool) -> u64 {
    key_word(name, slash, 0)
}

/// The eight bytes of an entry's sort key from byte `at` on, as
/// [`name_prefix`] has the first eight: keys that tie on their words
/// before `at` compare as their words at `at` do, unless these tie too.
fn key_word(name: &[u8], slash: bool, at: usize) -> u64 {
    let rest = name.get(at..).unwrap_or_default();
    if let Some(word) = rest.first_chunk::<8>() {
        return u64::from_be_bytes(*word);
    }
    // Fewer than eight bytes left: byte by byte, where a copy of a length
    // not known until run time is a `memmove` call.
    let mut word = 0u64;
    for (i, &b) in rest.iter().enumerate() {
        word |= u64::from(b) << (56 - 8 * i);
    }
    if slash && at <= name.len() {
        word |= u64::from(b'/') << (56 - 8 * rest.len());
    }
    word
}

/// One directory's chunks put in `within` order; `room` is room to sort in.
fn arrange_entries(chunks: &mut Vec<ChunkBuf>, within: Within, room: &mut Sorting) {
    let total: usize = chunks.iter().map(ChunkBuf::len).sum();
    let key_order = match within {
        Within::Listing => return,
        Within::InodeBatches { above, .. } if total <= above => return,
        other => other,
    };
    let Some(dir) = chunks.first().map(|c| c.dir.clone()) else {
        return;
    };
    if let [only] = &mut chunks[..] {
        if matches!(key_order, Within::Name | Within::Path) {
            // One chunk (every directory, when the walk reads them whole):
            // sorted where it lies. Names are unique in a directory, and
            // so are their path keys: any sort gives the one order.
            sort_by_name(only, key_order == Within::Path, room);
            return;
        }
    }
    let at = &mut room.at;
    at.clear();
    at.reserve(total);
    for (c, chunk) in chunks.iter().enumerate() {
        at.extend((0..chunk.len() as u32).map(|i| (c as u32, i)));
    }
    let entry = |&(c, i): &(u32, u32)| chunks[c as usize].get(i as usize);
    match key_order {
        Within::InodeBatches { above, batch } if chunks.len() > 1 => {
            let at = std::mem::take(&mut room.at);
            room.at = copy_in_batches(chunks, at, above, batch.max(1));
            return;
        }
        Within::InodeBatches { above, batch } => {
            for run in at.chunks_mut(batch.max(1)) {
                if run.len() > above {
                    // Stable: equal inodes (none, on one file system) keep the listing's order.
                    run.sort_by_key(|x| entry(x).ino());
                }
            }
        }
        sorted => at.sort_by(|a, b| entry_cmp(sorted, &entry(a), &entry(b))),
    }
    if let [only] = &mut chunks[..] {
        // One chunk: its slots put in order where they are, its names left
        // in place rather than copied.
        only.slots = at.iter().map(|&(_, i)| only.slots[i as usize]).collect();
        if !only.meta.is_empty() {
            only.meta = at.iter().map(|&(_, i)| only.meta[i as usize]).collect();
        }
        return;
    }
    let mut cur = ChunkBuf::new(dir);
    let names = chunks.iter().map(|c| c.names.len()).sum();
    reserve(&mut cur, names, total, chunks.iter().any(|c| !c.meta.is_empty()));
    for x in at.iter() {
        // One chunk: a consumer that reorders a directory sees it whole.
        copy_entry(&chunks[x.0 as usize], x.1 as usize, &mut cur);
    }
    chunks.clear();
    if !cur.is_empty() {
        chunks.push(cur);
    }
}

/// [`Within::InodeBatches`] on a directory read in several chunks (`at`:
/// each entry's chunk and place, in listing order): each batch of `batch`
/// entries, sorted by inode if it holds more than `above`, copied into
/// chunks the size of those read, and the chunks it was copied from let
/// go before the next batch. Copied whole into one chunk, a directory of
/// a million files was held twice (`fdu` on it, one thread: peak RSS
/// 281 MB; now 172 MB, du's 31 MB). Returns `at`, for its room.
fn copy_in_batches(chunks: &mut Vec<ChunkBuf>, mut at: Vec<(u32, u32)>, above: usize, batch: usize) -> Vec<(u32, u32)> {
    let meta = chunks.iter().any(|c| !c.meta.is_empty());
    // Copies the size of the chunks read, whose room the allocator then
    // gives to the next copies.
    let piece = chunks.iter().map(ChunkBuf::len).max().unwrap_or(1).max(1);
    let mut batches = Vec::with_capacity(at.len().div_ceil(piece));
    let (mut start, mut freed) = (0, 0);
    while start < at.len() {
        let end = (start + batch).min(at.len());
        let run = &mut at[start..end];
        if run.len() > above {
            // Stable: equal inodes (none, on one file system) keep the listing's order.
            run.sort_by_key(|&(c, i)| chunks[c as usize].get(i as usize).ino());
        }
        for piece in run.chunks(piece) {
            let names = (piece.iter())
                .map(|&(c, i)| chunks[c as usize].slots[i as usize].name_len as usize)
                .sum();
            let mut cur = ChunkBuf::new(chunks[0].dir.clone());
            reserve(&mut cur, names, piece.len(), meta);
            for &(c, i) in piece {
                copy_entry(&chunks[c as usize], i as usize, &mut cur);
            }
            batches.push(cur);
        }
        // The next batch starts in this chunk (not sorted yet, its first
        // entry is its listing's first): the ones before are done.
        let next = at.get(end).map_or(chunks.len(), |&(c, _)| c as usize);
        for done in &mut chunks[freed..next] {
            *done = ChunkBuf::new(done.dir.clone());
        }
        (start, freed) = (end, next);
    }
    *chunks = batches;
    at
}

/// Two entries of one directory in `within`'s order, one of the orders
/// that sort ([`Within::sorts_whole_dirs`]). Names are unique in a
/// directory, and so are path keys: no two entries compare equal.
fn entry_cmp(within: Within, a: &crate::entry::EntryRef<'_>, b: &crate::entry::EntryRef<'_>) -> CmpOrdering {
    let by_name = || a.name_bytes().cmp(b.name_bytes());
    match within {
        Within::Name => by_name(),
        Within::Path => path_cmp(a.name_bytes(), is_dir_entry(a), b.name_bytes(), is_dir_entry(b)),
        Within::Size => {
            let size = |x: &crate::entry::EntryRef<'_>| x.cached_metadata().map_or(0, |m| m.size);
            size(a).cmp(&size(b)).then_with(by_name)
        }
        Within::Mtime => {
            let time = |x: &crate::entry::EntryRef<'_>| x.cached_metadata().map_or((0, 0), |m| (m.mtime, m.mtime_nsec));
            time(a).cmp(&time(b)).then_with(by_name)
        }
        Within::Listing | Within::InodeBatches { .. } => unreachable!("not an order that sorts"),
    }
}

/// `chunks`, each one sorted run of a directory's entries in `within`'s
/// order (the parts of a directory read apart: see [`Split`]), merged into
/// one chunk. Sorted again as one (through the positions, with a stable
/// sort that merges the runs it finds) this took 55 ms of a million
/// files' 285 ms on two threads, a `memcmp` call a compare; merged so,
/// the first eight bytes compared first and no name copied alone, 30.
fn merge_runs(chunks: &mut Vec<ChunkBuf>, within: Within) {
    if chunks.len() < 2 {
        return;
    }
    let names = chunks.iter().map(|c| c.names.len()).sum();
    let total = chunks.iter().map(ChunkBuf::len).sum();
    let meta = chunks.iter().any(|c| !c.meta.is_empty());
    let mut merged = ChunkBuf::new(chunks[0].dir.clone());
    reserve(&mut merged, names, total, meta);
    // The runs' names one after the other, each run's slots moved by
    // where its names begin: no copy a name.
    let starts: Vec<u32> = (chunks.iter())
        .map(|c| {
            let start = merged.names.len() as u32;
            merged.names.extend_from_slice(&c.names);
            start
        })
        .collect();
    // Each run's next entry and the first word of its key (names and
    // path keys: sizes and times are compared first, the key after).
    fn head(run: &ChunkBuf, i: usize, within: Within) -> Option<(u64, crate::entry::EntryRef<'_>)> {
        let e = (i < run.len()).then(|| run.get(i))?;
        let word = match within {
            Within::Name => name_prefix(e.name_bytes(), false),
            Within::Path => name_prefix(e.name_bytes(), is_dir_entry(&e)),
            _ => 0,
        };
        Some((word, e))
    }
    let runs = &chunks[..];
    let mut next: Vec<usize> = vec![0; runs.len()];
    let mut heads: Vec<_> = runs.iter().map(|run| head(run, 0, within)).collect();
    loop {
        let mut first: Option<usize> = None;
        for (r, h) in heads.iter().enumerate() {
            let Some((word, e)) = h else { continue };
            let before = match first.and_then(|f| heads[f].as_ref()) {
                None => true,
                Some((best_word, best)) => match word.cmp(best_word) {
                    CmpOrdering::Equal => entry_cmp(within, e, best) == CmpOrdering::Less,
                    order => order == CmpOrdering::Less,
                },
            };
            if before {
                first = Some(r);
            }
        }
        let Some(r) = first else { break };
        let (run, i) = (&runs[r], next[r]);
        let slot = run.slots[i];
        merged.slots.push(crate::entry::Slot {
            name_start: slot.name_start + starts[r],
            ..slot
        });
        if meta {
            merged.meta.push(run.meta.get(i).copied().flatten());
        }
        next[r] += 1;
        heads[r] = head(&runs[r], next[r], within);
    }
    chunks.clear();
    chunks.push(merged);
}

/// `chunk`'s entries sorted by name, or by path key (`by_path`): by
/// [`name_prefix`] first, the next words of the keys only where prefixes
/// tie (see [`sort_ties`]); the slots (and metadata) put in order, the
/// names left where they are.
fn sort_by_name(chunk: &mut ChunkBuf, by_path: bool, room: &mut Sorting) {
    let names = &chunk.names;
    let name = |s: &crate::entry::Slot| &names[s.name_start as usize..(s.name_start + s.name_len) as usize];
    let is_dir = |s: &crate::entry::Slot| by_path && (s.file_type.is_dir() || s.target_type.is_dir());
    let keyed = &mut room.keyed;
    keyed.clear();
    keyed.extend((chunk.slots.iter().enumerate()).map(|(i, s)| (name_prefix(name(s), is_dir(s)), i as u32)));
    // By prefix, then each run of one prefix by the key's next eight
    // bytes, and so on: names compared whole, with a `memcmp`, took
    // 1.16x the time on a directory of names alike in their first 20 bytes.
    let slots = &chunk.slots;
    sort_ties(keyed, &mut room.runs, |i, at| {
        let s = &slots[i as usize];
        key_word(name(s), is_dir(s), at)
    });
    permute(&mut chunk.slots, keyed, &mut room.slots, usize::MAX);
    if !chunk.meta.is_empty() {
        permute(&mut chunk.meta, keyed, &mut room.meta, KEEP_SORT_ROOM);
    }
    if keyed.capacity() > KEEP_SORT_ROOM {
        // One huge directory's room is not kept for the rest of the walk.
        *keyed = Vec::new();
        room.runs = Vec::new();
        room.slots = Vec::new();
        room.meta = Vec::new();
    }
}

/// Sort `keyed`, each entry's first key word and position, into key
/// order: by the first words, then each run of equal words by the next
/// (`word(position, at)`: the word of the entry's key from byte `at`), and
/// so on until the words differ or run out (keys that end alike are
/// equal, and stay in any order). `runs` is room for the runs still to do.
fn sort_ties(keyed: &mut [(u64, u32)], runs: &mut Vec<(u32, u32, u32)>, word: impl Fn(u32, usize) -> u64) {
    runs.clear();
    if keyed.len() > 1 {
        runs.push((0, keyed.len() as u32, 0));
    }
    while let Some((start, end, at)) = runs.pop() {
        let (start, end, at) = (start as usize, end as usize, at as usize);
        let run = &mut keyed[start..end];
        if at > 0 {
            run.iter_mut().for_each(|k| k.0 = word(k.1, at));
        }
        let first = run[0].0;
        if run.iter().all(|k| k.0 == first) {
            // One word for all (a directory of "logfile_2026-…" names):
            // nothing to sort by it; the keys ended alike if it is zero.
            if first != 0 {
                runs.push((start as u32, end as u32, (at + 8) as u32));
            }
            continue;
        }
        run.sort_unstable_by_key(|k| k.0);
        let mut from = start;
        while from < end {
            let to = from + keyed[from..end].iter().take_while(|k| k.0 == keyed[from].0).count();
            if to - from > 1 {
                runs.push((from as u32, to as u32, (at + 8) as u32));
            }
            from = to;
        }
    }
}

/// Entries of sorting room kept from one directory to the next, at most.
const KEEP_SORT_ROOM: usize = 1 << 16;

/// Marks a position of [`permute`]'s order as moved.
const MOVED: u32 = 1 << 31;

/// Put `v` in `order` (`v[i]` becomes the old `v[order[i].1]`). Up to
/// [`KEEP_SORT_ROOM`] entries through a copy in `room`, up to
/// `in_place_above` gathered into a new vector: each entry is then a load
/// independent of the others, where following the permutation's cycles is
/// a chain of dependent loads, one cache miss after the other (on /usr,
/// 305 of the 1,399 samples one thread's sorted walk had in this file; on
/// a directory of a million files, 24% of all: `--sort name` on one
/// thread took 517 ms in place, 426 gathered, peak RSS 104 → 127 MB).
/// Past `in_place_above`, where it lies, one cycle at a time, marking each
/// position of `order` [`MOVED`] and clearing the marks after. Slots (24
/// bytes an entry) are always gathered; metadata (104 bytes) is permuted in
/// place past [`KEEP_SORT_ROOM`], where a copy of a million entries' would
/// hold 99 MiB more (and their stats cost far more than the cycles).
fn permute<T: Copy>(v: &mut Vec<T>, order: &mut [(u64, u32)], room: &mut Vec<T>, in_place_above: usize) {
    debug_assert!(v.len() < MOVED as usize);
    if v.len() <= KEEP_SORT_ROOM {
        room.clear();
        room.extend_from_slice(v);
        for (to, k) in v.iter_mut().zip(order.iter()) {
            *to = room[k.1 as usize];
        }
        return;
    }
    if v.len() <= in_place_above {
        // Not through the kept room: a chunk would carry its capacity on.
        *v = order.iter().map(|k| v[k.1 as usize]).collect();
        return;
    }
    for start in 0..v.len() {
        if order[start].1 & MOVED != 0 {
            continue;
        }
        let first = v[start];
        let mut to = start;
        loop {
            let from = (order[to].1 & !MOVED) as usize;
            order[to].1 |= MOVED;
            if from == start {
                v[to] = first;
                break;
            }
            v[to] = v[from];
            to = from;
        }
    }
    order.iter_mut().for_each(|k| k.1 &= !MOVED);
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::WalkBuilder;

    /// Names the consumer saw, `>dir` and `<dir` around each subtree.
    #[derive(Default)]
    struct Record {
        seen: Vec<String>,
        /// Slow down the output: what makes workers read ahead.
        nap_per_chunk: Option<std::time::Duration>,
    }

    impl TreeVisitor for Record {
        fn enter(&mut self, dir: DirEvent<'_>) -> Flow {
            self.seen.push(format!(">{}", String::from_utf8_lossy(dir.path)));
            Flow::Continue
        }
        fn entries(&mut self, chunk: &ChunkBuf) -> Flow {
            if let Some(nap) = self.nap_per_chunk {
                std::thread::sleep(nap);
            }
            for e in chunk.iter() {
                let mut p = Vec::new();
                e.write_path(&mut p);
                self.seen.push(String::from_utf8_lossy(&p).into_owned());
            }
            Flow::Continue
        }
        fn leave(&mut self, dir: DirEvent<'_>) -> Flow {
            self.seen.push(format!("<{}", String::from_utf8_lossy(dir.path)));
            Flow::Continue
        }
    }

    /// The same order, by a plain recursive walk sorted by name.
    fn expected(dir: &Path, nest: Nest, out: &mut Vec<String>) {
        let shown = dir.display().to_string();
        out.push(format!(">{shown}"));
        let mut names: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        names.sort_by(|a, b| {
            a.file_name()
                .unwrap()
                .as_encoded_bytes()
                .cmp(b.file_name().unwrap().as_encoded_bytes())
        });
        for p in &names {
            out.push(p.display().to_string());
            if nest == Nest::AtEntry && p.is_dir() {
                expected(p, nest, out);
            }
        }
        if nest == Nest::AfterEntries {
            for p in names.iter().filter(|p| p.is_dir()) {
                expected(p, nest, out);
            }
        }
        out.push(format!("<{shown}"));
    }

    /// `width` directories per level, `depth` levels, `files` files in each.
    fn tree(root: &Path, width: usize, depth: usize, files: usize) {
        for f in 0..files {
            std::fs::write(root.join(format!("f{f}")), "").unwrap();
        }
        if depth > 0 {
            for d in 0..width {
                let sub = root.join(format!("d{d}"));
                std::fs::create_dir(&sub).unwrap();
                tree(&sub, width, depth - 1, files);
            }
        }
    }

    #[test]
    fn every_entry_comes_once_in_tree_order_whatever_the_threads() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), 4, 3, 5);
        for nest in [Nest::AtEntry, Nest::AfterEntries] {
            let mut want = Vec::new();
            expected(dir.path(), nest, &mut want);
            for threads in [1, 2, 8] {
                for window in [0, 1 << 10, usize::MAX] {
                    let mut got = Record::default();
                    let order = TreeOrder::new(Within::Name, nest).window(window);
                    WalkBuilder::new(dir.path())
                        .min_depth(1)
                        .threads(threads)
                        .visit_tree(order, &mut got);
                    assert_eq!(got.seen, want, "{nest:?}, {threads} threads, window {window}");
                }
            }
        }
    }

    #[test]
    fn listing_order_is_the_directory_reads_order() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), 3, 2, 4);
        let serial: Vec<String> = {
            let mut r = Record::default();
            WalkBuilder::new(dir.path())
                .min_depth(1)
                .threads(1)
                .visit_tree(TreeOrder::new(Within::Listing, Nest::AtEntry), &mut r);
            r.seen
        };
        // Each directory's entries as getdents returned them: compare with the reads' own order.
        let mut listing = Vec::new();
        for e in std::fs::read_dir(dir.path()).unwrap() {
            listing.push(e.unwrap().path().display().to_string());
        }
        let top: Vec<&String> = serial
            .iter()
            .filter(|p| !p.starts_with(['>', '<']) && Path::new(p.as_str()).parent() == Some(dir.path()))
            .collect();
        assert_eq!(top, listing.iter().collect::<Vec<_>>());
        for threads in [2, 8] {
            let mut r = Record::default();
            WalkBuilder::new(dir.path())
                .min_depth(1)
                .threads(threads)
                .visit_tree(TreeOrder::new(Within::Listing, Nest::AtEntry), &mut r);
            assert_eq!(r.seen, serial);
        }
    }

    #[test]
    fn inode_batches_sort_only_runs_past_the_threshold() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), 0, 0, 30);
        let mut listed = Vec::new();
        for e in std::fs::read_dir(dir.path()).unwrap() {
            listed.push(e.unwrap().path().display().to_string());
        }
        // Read in one chunk, and in chunks of 7 (each batch copied apart).
        for chunk_size in [None, Some(7)] {
            let mut r = Record::default();
            let order = TreeOrder::new(Within::InodeBatches { above: 10, batch: 20 }, Nest::AtEntry);
            let walk = WalkBuilder::new(dir.path()).min_depth(1);
            let walk = chunk_size.map_or(walk.clone(), |n| walk.chunk_size(n));
            walk.visit_tree(order, &mut r);
            let inos: Vec<u64> = r.seen[1..31]
                .iter()
                .map(|p| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap()))
                .collect();
            // First batch of 20 (> 10) sorted; the last 10 (not > 10) as listed.
            assert!(inos[..20].windows(2).all(|w| w[0] < w[1]), "chunks of {chunk_size:?}");
            let mut first: Vec<&String> = r.seen[1..21].iter().collect();
            first.sort();
            let mut want: Vec<&String> = listed[..20].iter().collect();
            want.sort();
            assert_eq!(
                first, want,
                "chunks of {chunk_size:?}: the first batch is the listing's first 20"
            );
            assert_eq!(r.seen[21..31], listed[20..30], "chunks of {chunk_size:?}");
        }
    }

    /// What is held waiting stays under the window plus one directory per
    /// worker; with the window ignored (as large as the tree) the same
    /// slow output makes the walk hold far more: the count sees it.
    #[test]
    fn results_waiting_stay_within_the_window() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), 6, 3, 20);
        let threads = 4;
        let run = |window: usize| {
            let mut r = Record {
                nap_per_chunk: Some(std::time::Duration::from_micros(300)),
                ..Record::default()
            };
            let order = TreeOrder::new(Within::Listing, Nest::AtEntry).window(window);
            // No workers added for reads that look slow on a busy machine:
            // each would read one more directory past the window.
            let held = WalkBuilder::new(dir.path())
                .min_depth(1)
                .threads(threads)
                .io_depth(threads)
                .visit_tree(order, &mut r);
            (held, r.seen.len())
        };
        let window = 8 << 10;
        let (held, seen) = run(window);
        // Past the window: one directory per worker (read when there was
        // room), and the rest of each directory open on the way down to
        // the one the output waits for, which is read whatever the window
        // (the root and three levels: four). Counting only the workers
        // failed about once in six runs on a busy machine.
        let open_levels = 4;
        let bound = window + (threads + open_levels) * held.largest_dir;
        assert!(held.peak_bytes <= bound, "{held:?} over {bound}");
        let (unbounded, seen_too) = run(usize::MAX);
        assert_eq!(seen, seen_too);
        assert!(
            unbounded.peak_bytes > bound,
            "the slow output did not make the walk read ahead: {unbounded:?}"
        );
    }

    #[test]
    fn a_huge_directory_the_output_waits_for_streams_without_being_held() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), 0, 0, 3000);
        let listed: Vec<String> = (std::fs::read_dir(dir.path()).unwrap())
            .map(|e| e.unwrap().path().display().to_string())
            .collect();
        let ino = |p: &String| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        // As read, and in du's batches (cut across the chunks read).
        let batches = Within::InodeBatches { above: 100, batch: 500 };
        for (within, threads) in [(Within::Listing, 1), (Within::Listing, 4), (batches, 1), (batches, 4)] {
            let mut r = Record::default();
            let order = TreeOrder::new(within, Nest::AtEntry).window(0);
            let held = WalkBuilder::new(dir.path())
                .min_depth(1)
                .threads(threads)
                .chunk_size(64)
                .visit_tree(order, &mut r);
            assert_eq!(r.seen.len(), 3002);
            assert!(held.peak_bytes < 3000 * 8, "{within:?}, {threads} threads: {held:?}");
            let entries = &r.seen[1..3001];
            if within == Within::Listing {
                assert_eq!(entries, &listed[..]);
                continue;
            }
            for (got, want) in entries.chunks(500).zip(listed.chunks(500)) {
                let (mut got_sorted, mut want) = (got.to_vec(), want.to_vec());
                assert!(got.windows(2).all(|w| ino(&w[0]) < ino(&w[1])), "{threads} threads");
                got_sorted.sort();
                want.sort();
                assert_eq!(got_sorted, want, "{threads} threads: a batch is the listing's");
            }
        }
    }

    /// A streamed directory's stats are taken by every worker (see
    /// [`Relay`]): each entry still has its own, and comes once.
    #[test]
    fn a_streamed_directory_stat_ed_by_several_workers_keeps_each_entry_s_own() {
        struct Sizes(Vec<(String, Option<u64>)>);
        impl TreeVisitor for Sizes {
            fn entries(&mut self, chunk: &ChunkBuf) -> Flow {
                for e in chunk.iter() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    self.0.push((name, e.cached_metadata().map(|m| m.size)));
                }
                Flow::Continue
            }
        }
        let dir = tempfile::tempdir().unwrap();
        for f in 0..3000 {
            std::fs::write(dir.path().join(format!("f{f}")), vec![0u8; f % 13]).unwrap();
        }
        let batches = Within::InodeBatches { above: 100, batch: 500 };
        for within in [Within::Listing, batches] {
            for threads in [1, 2, 4] {
                let mut got = Sizes(Vec::new());
                let walk = WalkBuilder::new(dir.path()).min_depth(1).threads(threads);
                walk.chunk_size(64)
                    .metadata(true)
                    .visit_tree(TreeOrder::new(within, Nest::AtEntry).window(0), &mut got);
                assert_eq!(got.0.len(), 3000, "{within:?}, {threads} threads");
                for (name, size) in &got.0 {
                    let f: u64 = name[1..].parse().unwrap();
                    assert_eq!(*size, Some(f % 13), "{name}: {within:?}, {threads} threads");
                }
                let mut names: Vec<&String> = got.0.iter().map(|(n, _)| n).collect();
                names.sort();
                names.dedup();
                assert_eq!(names.len(), 3000, "{within:?}, {threads} threads");
            }
        }
    }

    #[test]
    fn path_order_is_the_order_of_the_sorted_paths() {
        struct Paths(Vec<Vec<u8>>);
        impl TreeVisitor for Paths {
            fn entries(&mut self, chunk: &ChunkBuf) -> Flow {
                for e in chunk.iter() {
                    let mut p = Vec::new();
                    e.write_path(&mut p);
                    if e.file_type().is_dir() {
                        p.push(b'/');
                    }
                    self.0.push(p);
                }
                Flow::Continue
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["a", "a/x", "a-b", "a0", "b.d", "b"] {
            std::fs::create_dir(root.join(d)).unwrap();
        }
        for f in [
            "a.txt", "a/x/f", "a/y", "a-b/z", "a0/q", "b/c", "b.d/e", "b.e", "a/x.y", "ab",
        ] {
            std::fs::write(root.join(f), "").unwrap();
        }
        let mut want: Vec<Vec<u8>> = Vec::new();
        for e in WalkBuilder::new(root).min_depth(1) {
            let e = e.unwrap();
            let mut p = e.path().as_os_str().as_encoded_bytes().to_vec();
            if e.file_type().is_dir() {
                p.push(b'/');
            }
            want.push(p);
        }
        want.sort();
        for threads in [1, 4] {
            for keep_dirs in [true, false] {
                let mut got = Paths(Vec::new());
                let order = TreeOrder::new(Within::Path, Nest::AtEntry);
                WalkBuilder::new(root)
                    .min_depth(1)
                    .threads(threads)
                    .keep(move |e| keep_dirs || !e.is_dir())
                    .visit_tree(order, &mut got);
                let expected: Vec<&Vec<u8>> = want.iter().filter(|p| keep_dirs || !p.ends_with(b"/")).collect();
                assert_eq!(
                    got.0.iter().collect::<Vec<_>>(),
                    expected,
                    "{threads} threads, dirs kept: {keep_dirs}"
                );
            }
        }
    }

    #[test]
    fn names_alike_past_their_first_eight_bytes_keep_their_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let dirs = [
            "longprefix",
            "longprefix_b",
            "longprefix.d",
            "longpre",
            "longprefix_b/longprefix_x",
        ];
        for d in dirs {
            std::fs::create_dir(root.join(d)).unwrap();
        }
        for f in [
            "longprefix_a",
            "longprefix-",
            "longprefiw",
            "longpref",
            "longprefix_b/longprefix_y",
            "longprefix/f",
            "longprefix_c",
            "longpre/longpre0",
            "longprefix.d/x",
        ] {
            std::fs::write(root.join(f), "").unwrap();
        }
        for nest in [Nest::AtEntry, Nest::AfterEntries] {
            let mut want = Vec::new();
            expected(root, nest, &mut want);
            for threads in [1, 3] {
                let mut got = Record::default();
                WalkBuilder::new(root)
                    .min_depth(1)
                    .threads(threads)
                    .visit_tree(TreeOrder::new(Within::Name, nest), &mut got);
                assert_eq!(got.seen, want, "{nest:?}, {threads} threads");
            }
        }
        // Directories not yielded still have their subtrees, after the entries.
        let mut got = Record::default();
        WalkBuilder::new(root)
            .min_depth(1)
            .keep(|e| !e.is_dir())
            .visit_tree(TreeOrder::new(Within::Name, Nest::AfterEntries), &mut got);
        let mut want = Vec::new();
        expected(root, Nest::AfterEntries, &mut want);
        let dirs: Vec<String> = dirs.iter().map(|d| root.join(d).display().to_string()).collect();
        want.retain(|line| !dirs.contains(line));
        assert_eq!(got.seen, want);
    }

    #[test]
    fn a_permutation_in_place_is_the_one_through_a_copy() {
        // Rotations, strides and a reversal: one cycle, many, fixed points;
        // through the room and, past it, in place.
        let mut tried = 0;
        for n in [0usize, 1, 2, 3, 7, 64, 1000, KEEP_SORT_ROOM + 3] {
            for step in [0usize, 1, 3, 7, 31] {
                let sources: Vec<u32> = match step {
                    0 => (0..n).rev().map(|i| i as u32).collect(),
                    _ => (0..n).map(|i| ((i * step + 1) % n) as u32).collect(),
                };
                let mut seen = vec![false; n];
                if !sources.iter().all(|&s| !std::mem::replace(&mut seen[s as usize], true)) {
                    continue;
                }
                tried += 1;
                let mut order: Vec<(u64, u32)> = sources.iter().map(|&s| (0, s)).collect();
                let old: Vec<u64> = (0..n as u64).map(|i| i * 10).collect();
                let want: Vec<u64> = sources.iter().map(|&s| old[s as usize]).collect();
                let mut v = old.clone();
                let kept = order.clone();
                let mut room = Vec::new();
                permute(&mut v, &mut order, &mut room, KEEP_SORT_ROOM);
                assert_eq!(v, want, "{n} entries, step {step}");
                let mut gathered = old.clone();
                permute(&mut gathered, &mut order, &mut room, usize::MAX);
                assert_eq!(gathered, want, "{n} entries, step {step}, gathered");
                assert_eq!(order, kept, "the order is left as it was");
            }
        }
        assert!(tried > 25, "{tried} permutations");
    }

    #[test]
    fn keys_sorted_word_by_word_are_in_path_order() {
        let stems: [&[u8]; 4] = [b"", b"abcdefgh", b"abcdefghabcdefgh", b"libboost_python3"];
        let tails: [&[u8]; 9] = [
            b"",
            b"-",
            b".",
            b"a",
            b"ab",
            b"abcdefg",
            b"abcdefgh",
            b"abcdefgh-",
            b"\xff",
        ];
        let mut unique: Vec<Vec<u8>> = Vec::new();
        for stem in stems {
            for tail in tails {
                unique.push([stem, tail].concat());
            }
        }
        unique.retain(|n| !n.is_empty());
        unique.sort();
        unique.dedup();
        for by_path in [false, true] {
            // One directory's keys: each name once, every other one a
            // directory's, with its `/`.
            let names: Vec<(Vec<u8>, bool)> = (unique.iter().enumerate())
                .map(|(i, n)| (n.clone(), by_path && i % 2 == 1))
                .collect();
            let mut keyed: Vec<(u64, u32)> = (names.iter().enumerate())
                .map(|(i, (n, dir))| (name_prefix(n, *dir), i as u32))
                .collect();
            let mut runs = Vec::new();
            sort_ties(&mut keyed, &mut runs, |i, at| {
                let (n, dir) = &names[i as usize];
                key_word(n, *dir, at)
            });
            let got: Vec<&(Vec<u8>, bool)> = keyed.iter().map(|k| &names[k.1 as usize]).collect();
            let mut want: Vec<&(Vec<u8>, bool)> = names.iter().collect();
            want.sort_by(|a, b| path_cmp(&a.0, a.1, &b.0, b.1));
            assert_eq!(got, want, "by path: {by_path}");
        }
    }

    #[test]
    fn a_prefix_orders_as_its_key_does() {
        let names: [&[u8]; 12] = [
            b"a",
            b"a-",
            b"a.b",
            b"ab",
            b"abcdefgh",
            b"abcdefg",
            b"abcdefgh-",
            b"abcdefghi",
            b"abcdefg/",
            b"\xff",
            b"\x01",
            b"abcdefg.",
        ];
        for slash_a in [false, true] {
            for slash_b in [false, true] {
                for a in names {
                    for b in names {
                        let (pa, pb) = (name_prefix(a, slash_a), name_prefix(b, slash_b));
                        if pa != pb {
                            assert_eq!(
                                pa.cmp(&pb),
                                path_cmp(a, slash_a, b, slash_b),
                                "{a:?}/{slash_a} {b:?}/{slash_b}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_stop_from_the_consumer_ends_the_walk() {
        struct StopAt(usize);
        impl TreeVisitor for StopAt {
            fn entries(&mut self, chunk: &ChunkBuf) -> Flow {
                self.0 = self.0.saturating_sub(chunk.len());
                if self.0 == 0 {
                    Flow::Stop
                } else {
                    Flow::Continue
                }
            }
        }
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), 5, 3, 3);
        let order = TreeOrder::new(Within::Listing, Nest::AtEntry).window(0);
        WalkBuilder::new(dir.path())
            .threads(4)
            .visit_tree(order, &mut StopAt(10));
        // A streamed directory, its stats relayed: nothing after the stop.
        let big = tempfile::tempdir().unwrap();
        tree(big.path(), 0, 0, 3000);
        let batches = Within::InodeBatches { above: 100, batch: 500 };
        /// Stops at the first chunk; counts the chunks handed over.
        struct StopAtFirst(usize);
        impl TreeVisitor for StopAtFirst {
            fn entries(&mut self, _: &ChunkBuf) -> Flow {
                self.0 += 1;
                Flow::Stop
            }
        }
        for within in [Within::Listing, batches] {
            let mut stop = StopAtFirst(0);
            WalkBuilder::new(big.path())
                .min_depth(1)
                .threads(4)
                .chunk_size(64)
                .metadata(true)
                .visit_tree(TreeOrder::new(within, Nest::AtEntry), &mut stop);
            assert_eq!(stop.0, 1, "{within:?}: chunks handed over after the stop");
        }
    }

    /// A chain of `levels` nested directories `d` under `root`, made
    /// relative to each parent (a path that long cannot be opened whole).
    fn chain(root: &Path, levels: usize) {
        chain_of(root, levels, false);
    }

    /// [`chain`], with a file `f` beside each `d` when `files`.
    fn chain_of(root: &Path, levels: usize, files: bool) {
        use rustix::fs::{mkdirat, openat, Mode, OFlags, CWD};
        let mut fd = openat(CWD, root, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
        for _ in 0..levels {
            mkdirat(&fd, "d", Mode::from_raw_mode(0o755)).unwrap();
            if files {
                let flags = OFlags::CREATE | OFlags::WRONLY;
                drop(openat(&fd, "f", flags, Mode::from_raw_mode(0o644)).unwrap());
            }
            fd = openat(&fd, "d", OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
        }
    }

    /// A chain with a file on each level: every file waits for the subtree
    /// beside it (`d` comes first), so each level holds a chunk, whose
    /// path is let go while it waits and spelt again when it is released.
    /// Three times the levels hold less than four times the bytes (each
    /// chunk's path held would be nine times), and every path is whole.
    #[test]
    fn files_waiting_on_every_level_of_a_chain_hold_no_path_each() {
        let held = |levels: usize| {
            let dir = tempfile::tempdir().unwrap();
            chain_of(dir.path(), levels, true);
            let mut r = Record::default();
            let order = TreeOrder::new(Within::Name, Nest::AtEntry).window(0);
            let held = WalkBuilder::new(dir.path()).threads(2).visit_tree(order, &mut r);
            // Level k (0 to levels-1) holds `d` and `f`; the deepest, nothing.
            // The root's own entry comes first, in the root.
            let at = |k: usize| format!("{}{}", dir.path().display(), "/d".repeat(k));
            let mut expected = vec![format!(">{}", at(0)), at(0)];
            for k in 1..=levels {
                expected.extend([at(k), format!(">{}", at(k))]);
            }
            expected.push(format!("<{}", at(levels)));
            for k in (0..levels).rev() {
                expected.extend([format!("{}/f", at(k)), format!("<{}", at(k))]);
            }
            if let Some(i) = (0..r.seen.len().max(expected.len())).find(|&i| r.seen.get(i) != expected.get(i)) {
                panic!(
                    "{levels} levels: at {i}: {:?} for {:?}",
                    r.seen.get(i).map(|s| &s[s.len().saturating_sub(40)..]),
                    expected.get(i).map(|s| &s[s.len().saturating_sub(40)..])
                );
            }
            held.peak_bytes
        };
        let (shallow, deep) = (held(1000), held(3000));
        assert!(deep < 4 * shallow, "1000 levels held {shallow} bytes, 3000 held {deep}");
    }

    /// Each open directory's place and path cost the same at any depth:
    /// three times the levels hold about three times the bytes, where a
    /// key or a path per level would hold nine times.
    #[test]
    fn what_a_chain_holds_grows_with_its_depth_not_its_square() {
        let held = |levels: usize| {
            let dir = tempfile::tempdir().unwrap();
            chain(dir.path(), levels);
            let mut r = Record::default();
            // No read ahead: what is held is the open directories' places.
            let order = TreeOrder::new(Within::Name, Nest::AtEntry).window(0);
            let held = WalkBuilder::new(dir.path()).threads(1).visit_tree(order, &mut r);
            let mut deepest = dir.path().as_os_str().as_encoded_bytes().to_vec();
            deepest.extend(b"/d".repeat(levels));
            assert_eq!(r.seen.last(), Some(&format!("<{}", dir.path().display())));
            let want = format!(">{}", String::from_utf8_lossy(&deepest));
            assert!(r.seen.contains(&want), "the deepest directory's path is spelt whole");
            assert_eq!(r.seen.iter().filter(|s| s.starts_with('>')).count(), levels + 1);
            held.peak_bytes
        };
        let (shallow, deep) = (held(1000), held(3000));
        assert!(deep < 4 * shallow, "1000 levels held {shallow} bytes, 3000 held {deep}");
    }

    /// The fast comparison of path keys agrees with spelling them out.
    #[test]
    fn path_cmp_is_the_order_of_the_keys_spelt_out() {
        let names: [&[u8]; 9] = [b"a", b"a-b", b"a0", b"a.", b"ab", b"b", b"a/x", b"", b"a/"];
        for a in names {
            for b in names {
                for (a_dir, b_dir) in [(false, false), (false, true), (true, false), (true, true)] {
                    let key = |n: &[u8], d: bool| [n, if d { &b"/"[..] } else { &b""[..] }].concat();
                    assert_eq!(
                        path_cmp(a, a_dir, b, b_dir),
                        key(a, a_dir).cmp(&key(b, b_dir)),
                        "{a:?} {a_dir} {b:?} {b_dir}"
                    );
                }
            }
        }
    }

    /// Places compare as the keys they stand for (the ranks from the root
    /// down, an ancestor before its subtree) without holding them.
    #[test]
    fn places_compare_as_their_rank_lists() {
        fn slot(parent: Option<&Arc<Slot>>, rank: u32) -> Arc<Slot> {
            Arc::new(Slot::new(parent.cloned(), rank, None, 0, 0))
        }
        let mut all: Vec<(Vec<u32>, Arc<Slot>)> = Vec::new();
        for r in 0..2 {
            let root = slot(None, r);
            all.push((vec![r], root.clone()));
            for a in [1, 4, 6, 1000] {
                let s = slot(Some(&root), a);
                all.push((vec![r, a], s.clone()));
                for b in [0, 2, 3] {
                    let t = slot(Some(&s), b);
                    all.push((vec![r, a, b], t.clone()));
                    all.push((vec![r, a, b, 7], slot(Some(&t), 7)));
                    // Deep enough that the keys run out (and some do not).
                    let (mut key, mut deep) = (vec![r, a, b], t.clone());
                    for level in 0..12 {
                        let rank = [5000, 0, 70_000][level % 3];
                        key.push(rank);
                        deep = slot(Some(&deep), rank);
                        all.push((key.clone(), deep.clone()));
                    }
                }
            }
        }
        assert!(all.iter().any(|(_, s)| s.key.len == Key::NONE));
        for (ka, a) in &all {
            for (kb, b) in &all {
                assert_eq!(place_cmp(a, b), ka.cmp(kb), "{ka:?} vs {kb:?}");
                if let Some(order) = by_keys(a.key, b.key) {
                    assert_eq!(order, ka.cmp(kb), "{ka:?} vs {kb:?}, by key");
                }
            }
        }
        // A chain far deeper than any stack frees without recursing.
        let mut deep = slot(None, 0);
        for _ in 0..1_000_000 {
            deep = slot(Some(&deep), 0);
        }
        drop(deep);
    }
}
