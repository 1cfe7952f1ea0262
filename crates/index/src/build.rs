//! Building an index: the live walk, unfiltered (as `fnd -u` walks), each
//! directory's listing kept as the walk hands it over, each directory's
//! stamp taken with an `fstat` of the descriptor the walk has just opened,
//! before it reads it (so a change during the build shows at the next
//! check); then the listings written out breadth-first.
//!
//! Each directory the walk enters gets a number, and records its parent's
//! and its own name: the listings are linked to each other as the walk
//! goes, so writing them out looks nothing up by path (keyed by path, a
//! build of million spent 90 ms after the walk, on one thread, looking
//! them up, and took 165 ms more CPU in all: 1.41x the live walk against
//! 1.19x now).

use std::io;
use std::ops::Range;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use fnd_walk::meta::stat_synced;
use fnd_walk::{Chunk, Decision, DirHook, DirInfo, FileType, Flow, RawEntry, Visitor, WalkBuilder};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::format::{Index, IndexWriter, NameTable, RowStamp, Stamp};

/// No directory: a root's parent, a number with no record.
const NONE: u32 = u32::MAX;

/// A directory the listing entered: its parent's number (`NONE` for a
/// root), its name's id (`NONE` for a root, whose path is in
/// [`Listed`]'s roots) and the stamp to keep ([`kept_stamp`]).
#[derive(Clone, Copy)]
struct Record {
    parent: u32,
    name: u32,
    stamp: Option<RowStamp>,
}

impl Default for Record {
    fn default() -> Self {
        Record {
            parent: NONE,
            name: NONE,
            stamp: None,
        }
    }
}

/// Entries of one directory as one thread listed them, in order: all of
/// a directory, or a part of a large one that several threads read.
struct Part {
    dir: u32,
    entries: Vec<(u32, FileType)>,
}

/// What the threads of one listing write to: each takes its own shard
/// (a lock no other thread waits for), and its names get ids of the
/// shard's own, merged once at the end.
#[derive(Default)]
struct Shard {
    names: NameTable,
    /// Directories entered, by number.
    records: Vec<(u32, Record)>,
    roots: Vec<(u32, Vec<u8>)>,
    parts: Vec<Part>,
    /// Directories whose listing failed or was cut short (see [`Collect::error`]).
    unfinished: Vec<Vec<u8>>,
}

/// The shards of one listing, and the next directory's number.
struct Shards {
    walk: u64,
    /// The first directory that could not be read whole for a reason that
    /// may pass, as the walk said it ([`Collect::error`]).
    first_unread: Mutex<Option<String>>,
    /// Entries came in a chunk without its directory's number: the walk
    /// broke its contract, and the listing is not to be trusted.
    lost: AtomicBool,
    next_dir: AtomicU32,
    next_shard: AtomicUsize,
    shards: Vec<Mutex<Shard>>,
}

thread_local! {
    /// This thread's shard: (the listing, the shard's index in it).
    static SHARD: std::cell::Cell<(u64, usize)> = const { std::cell::Cell::new((0, 0)) };
}

impl Shards {
    /// The calling thread's shard, given it the first time it asks.
    fn mine(&self) -> MutexGuard<'_, Shard> {
        let (walk, at) = SHARD.get();
        let at = if walk == self.walk {
            at
        } else {
            let at = self.next_shard.fetch_add(1, Ordering::Relaxed) % self.shards.len();
            SHARD.set((self.walk, at));
            at
        };
        self.shards[at].lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The hook's state for an entered directory: its number.
struct DirNumber(u32);

/// What a listing found: the directories entered, by number; where each
/// one's entries are; each one's subdirectories, with their names; and
/// the names, merged into one table.
#[derive(Default)]
pub struct Listed {
    pub names: NameTable,
    records: Vec<Record>,
    roots: FxHashMap<Vec<u8>, u32>,
    root_paths: FxHashMap<u32, Vec<u8>>,
    parts: Vec<Part>,
    /// Each directory's first part, and the part after each part of the
    /// same directory (`NONE` past the last).
    first_part: Vec<u32>,
    next_part: Vec<u32>,
    /// The subdirectories of directory `d`, as (name, number) sorted by
    /// name, are `kids[kids_at[d]..kids_at[d + 1]]`.
    kids_at: Vec<u32>,
    kids: Vec<(u32, u32)>,
    /// The paths of the directories whose listing failed or was cut short
    /// for a reason that may pass: their rows are stamped to be read again.
    unfinished: FxHashSet<Vec<u8>>,
    /// The first of them, as the walk said it.
    first_unread: Option<String>,
}

impl Listed {
    /// Numbers every part and subdirectory by the directory it belongs to.
    fn link(&mut self) {
        let n = self.records.len();
        self.first_part = vec![NONE; n];
        self.next_part = vec![NONE; self.parts.len()];
        for (i, part) in self.parts.iter().enumerate().rev() {
            let first = &mut self.first_part[part.dir as usize];
            self.next_part[i] = *first;
            *first = i as u32;
        }
        let mut at = vec![0u32; n + 1];
        for r in self.records.iter().filter(|r| r.parent != NONE) {
            at[r.parent as usize + 1] += 1;
        }
        for d in 0..n {
            at[d + 1] += at[d];
        }
        let mut fill = at.clone();
        self.kids = vec![(0, 0); at[n] as usize];
        for (d, r) in self.records.iter().enumerate().filter(|(_, r)| r.parent != NONE) {
            let slot = &mut fill[r.parent as usize];
            self.kids[*slot as usize] = (r.name, d as u32);
            *slot += 1;
        }
        for d in 0..n {
            self.kids[at[d] as usize..at[d + 1] as usize].sort_unstable();
        }
        self.kids_at = at;
    }

    /// The parts of directory `dir`.
    fn parts_of(&self, dir: u32) -> impl Iterator<Item = &Part> + '_ {
        let mut at = self.first_part.get(dir as usize).copied().unwrap_or(NONE);
        std::iter::from_fn(move || {
            let part = self.parts.get(at as usize)?;
            at = self.next_part[at as usize];
            Some(part)
        })
    }

    /// The subdirectory of `dir` named `name`, when the listing entered it.
    fn kid(&self, dir: u32, name: u32) -> Option<u32> {
        let kids = &self.kids[self.kids_at[dir as usize] as usize..self.kids_at[dir as usize + 1] as usize];
        kids.binary_search_by_key(&name, |k| k.0).ok().map(|k| kids[k].1)
    }

    /// The path of directory `dir`, from its root's and the names between.
    fn path_of(&self, mut dir: u32) -> Vec<u8> {
        let mut names = Vec::new();
        while let Some(r) = self.records.get(dir as usize).filter(|r| r.parent != NONE) {
            names.push(r.name);
            dir = r.parent;
        }
        let mut path = self.root_paths.get(&dir).cloned().unwrap_or_default();
        for &name in names.iter().rev() {
            push_name(&mut path, self.names.name(name));
        }
        path
    }

    /// Whether the listing of the directory at `path` failed or was cut
    /// short (the path is made only when some listing was).
    fn is_unfinished(&self, path: impl FnOnce() -> Vec<u8>) -> bool {
        !self.unfinished.is_empty() && self.unfinished.contains(&path())
    }

    /// How many directories and entries it holds.
    fn counts(&self) -> (usize, usize) {
        (self.records.len(), self.parts.iter().map(|p| p.entries.len()).sum())
    }
}

/// `path` followed by `/name` (no second `/` after the root's).
pub(crate) fn push_name(path: &mut Vec<u8>, name: &[u8]) {
    if !path.ends_with(b"/") {
        path.push(b'/');
    }
    path.extend_from_slice(name);
}

/// A walking thread's visitor: its chunks go to its shard.
struct Collect {
    shards: Arc<Shards>,
}

impl Visitor for Collect {
    fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
        // Every directory entered has a number (`Stamper::enter`): without
        // it the entries would have no place, and the index would lack them.
        let Some(&DirNumber(dir)) = chunk.state::<DirNumber>() else {
            self.shards.lost.store(true, Ordering::Relaxed);
            return Flow::Stop;
        };
        let mut shard = self.shards.mine();
        let Shard { names, parts, .. } = &mut *shard;
        if parts.last().is_none_or(|p| p.dir != dir) {
            parts.push(Part {
                dir,
                entries: Vec::with_capacity(chunk.len()),
            });
        }
        let Some(part) = parts.last_mut() else {
            return Flow::Continue;
        };
        part.entries.reserve(chunk.len());
        for e in chunk.iter() {
            part.entries.push((names.intern(e.name_bytes()), e.file_type()));
        }
        Flow::Continue
    }

    /// A directory that could not be opened or read whole for a reason
    /// that may pass (EIO, ESTALE, ENOMEM…) is stamped so that every check
    /// reads it again: stamped as it is, it would stay empty or short in
    /// the index until it changed. One its permissions keep out stays as
    /// it is: changing them changes its ctime.
    fn error(&mut self, error: fnd_walk::Error) -> Flow {
        use rustix::io::Errno;
        if !matches!(error.errno(), Some(Errno::ACCESS | Errno::PERM)) {
            let path = error.path().as_os_str().as_bytes().to_vec();
            self.shards.mine().unfinished.push(path);
            let mut first = self.shards.first_unread.lock().unwrap_or_else(|e| e.into_inner());
            first.get_or_insert_with(|| error.to_string());
        }
        Flow::Continue
    }
}

/// Which directories (by path) a listing leaves out.
pub type Skip = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// The walk's hook for a listing: numbers each directory entered and
/// records it with its stamp, from a stat of the descriptor the walk has
/// just opened, before it reads it (an `fstatat` of each subdirectory from
/// its parent, a path lookup each, was a seventh of a build), asked of the
/// file system's server ([`stat_synced`]: on NFS this also drops a cached
/// listing the directory's change made stale); and leaves out the
/// directories `skip` names.
struct Stamper {
    skip: Option<Skip>,
    shards: Arc<Shards>,
    /// When the listing started ([`now_nanos`]).
    started: i64,
}

impl DirHook for Stamper {
    type State = DirNumber;

    fn enter(&self, dir: &DirInfo<'_>, parent: Option<&Arc<DirNumber>>) -> Option<Arc<DirNumber>> {
        let stamp = stat_synced(dir.fd, b"")
            .ok()
            .map(|m| kept_stamp(Stamp::from(&m), self.started, now_nanos));
        let this = self.shards.next_dir.fetch_add(1, Ordering::Relaxed);
        let mut shard = self.shards.mine();
        let record = match parent.map(|p| p.0) {
            Some(parent) if dir.depth > 0 => {
                let name = dir.path.rsplit(|&b| b == b'/').next().unwrap_or(dir.path);
                Record {
                    parent,
                    name: shard.names.intern(name),
                    stamp,
                }
            }
            // A root, kept by its path.
            _ => {
                shard.roots.push((this, dir.path.to_vec()));
                Record {
                    stamp,
                    ..Record::default()
                }
            }
        };
        shard.records.push((this, record));
        Some(Arc::new(DirNumber(this)))
    }

    fn decide(&self, _: Option<&DirNumber>, e: &RawEntry<'_>) -> Decision {
        let skipped = match &self.skip {
            Some(skip) if e.is_dir() => {
                let mut p = Vec::with_capacity(e.parent_prefix.len() + e.name.len());
                p.extend_from_slice(e.parent_prefix);
                p.extend_from_slice(e.name);
                skip(&p)
            }
            _ => false,
        };
        Decision {
            emit: true,
            descend: !skipped,
        }
    }
}

/// The stamp to keep for a directory stat-ed at `now()` (after the stat,
/// before its listing is read; the listing started at `started`, both in
/// nanoseconds since the epoch): [`RowStamp::READ_AGAIN`] while its ctime
/// is too recent for a later change to be told from it.
///
/// Before Linux 6.13, ext4, XFS, Btrfs and tmpfs stamp a change with a
/// clock that moves once a tick (1–10 ms); NFS servers, ext3's small
/// inodes and FAT keep whole seconds (or two). A change made after the
/// listing was read but in the same tick as the change the stamp shows
/// leaves the ctime as it was, and every check would trust a listing that
/// lacks it until the directory changed again (git's "racily clean"
/// entries). A stamp taken a tick or more after its ctime is matched by
/// no later change: the coarse clock has moved on by then. The margin
/// asked is 50 ms, or 2 s for a ctime in whole seconds; the clock is
/// read only for a ctime that recent when the listing started.
fn kept_stamp(stamp: Stamp, started: i64, now: impl FnOnce() -> i64) -> RowStamp {
    let margin = if stamp.ctime_ns == 0 { 2_000_000_000 } else { 50_000_000 };
    let ctime = stamp.ctime_nanos();
    if ctime < started.saturating_sub(margin) || now().saturating_sub(ctime) >= margin {
        stamp.into()
    } else {
        RowStamp::READ_AGAIN
    }
}

/// The time, in nanoseconds since the epoch.
fn now_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// List `roots` and every directory below them, except those `skip`
/// names (by path), with `threads` walking threads. `within`: a real path
/// every root lies within (see [`WalkBuilder::roots_within`]). An error
/// when the walk handed over entries without saying where they belong.
pub fn list(roots: &[PathBuf], within: Option<&Path>, threads: usize, skip: Option<Skip>) -> io::Result<Listed> {
    static WALKS: AtomicU64 = AtomicU64::new(1);
    let shards = Arc::new(Shards {
        walk: WALKS.fetch_add(1, Ordering::Relaxed),
        lost: AtomicBool::new(false),
        next_dir: AtomicU32::new(0),
        next_shard: AtomicUsize::new(0),
        shards: (0..threads.max(1) + 1).map(|_| Mutex::default()).collect(),
        first_unread: Mutex::default(),
    });
    let mut walk = WalkBuilder::new(&roots[0]);
    for root in &roots[1..] {
        walk = walk.add_root(root);
    }
    if let Some(within) = within {
        walk = walk.roots_within(within);
    }
    // No more workers than threads on a local file system: a pool that
    // grows while reads wait took the page faults of the listings for
    // waits and grew to 128 workers, and a build of million ran on 1.05
    // cores (1.45 without). Where reads wait on a server, the walk's
    // default depth: through FUSE (1 ms a request) two workers took 28 s
    // to index src.
    let local = !fnd_walk::served_remotely(within.unwrap_or(&roots[0]));
    walk = walk
        .threads(threads)
        .io_depth(if local { threads } else { 0 })
        .min_depth(1)
        .lenient(true)
        .hook(Stamper {
            skip,
            shards: shards.clone(),
            started: now_nanos(),
        });
    walk.visit(|| Collect { shards: shards.clone() }, drop);
    if shards.lost.load(Ordering::Relaxed) {
        return Err(io::Error::other(
            "the walk handed over entries of a directory it had not entered",
        ));
    }
    let dirs = shards.next_dir.load(Ordering::Relaxed) as usize;
    let mut all = Listed {
        records: vec![Record::default(); dirs],
        first_unread: shards.first_unread.lock().unwrap_or_else(|e| e.into_inner()).take(),
        ..Listed::default()
    };
    for (i, shard) in shards.shards.iter().enumerate() {
        let mut shard = std::mem::take(&mut *shard.lock().unwrap_or_else(|e| e.into_inner()));
        if i == 0 {
            all.names = std::mem::take(&mut shard.names);
        } else {
            let ids: Vec<u32> = shard.names.iter().map(|n| all.names.intern(n)).collect();
            for part in &mut shard.parts {
                for e in &mut part.entries {
                    e.0 = ids[e.0 as usize];
                }
            }
            for (_, r) in &mut shard.records {
                if r.name != NONE {
                    r.name = ids[r.name as usize];
                }
            }
        }
        for (number, record) in shard.records {
            all.records[number as usize] = record;
        }
        for (number, path) in shard.roots {
            all.roots.insert(path.clone(), number);
            all.root_paths.insert(number, path);
        }
        if all.parts.is_empty() {
            all.parts = shard.parts;
        } else {
            all.parts.append(&mut shard.parts);
        }
        all.unfinished.extend(shard.unfinished);
    }
    all.link();
    Ok(all)
}

/// The stamp of the directory at `path`, when no listing carried one.
pub fn stamp_of(path: &[u8]) -> Stamp {
    stat_synced(rustix::fs::CWD, path)
        .map(|m| Stamp::from(&m))
        .unwrap_or_default()
}

/// Where a directory's entries come from when an index is written.
pub enum Source {
    /// The listing of the directory at this path.
    Listed(Vec<u8>),
    /// A row of the old index, unchanged.
    Kept(u32),
}

/// A directory waiting to be written.
enum Queued {
    /// Listed: its number.
    Listed(u32),
    /// Not listed (it could not be read, or went away): where its path is.
    Unlisted(Range<usize>),
    /// Its row in the old index.
    Kept(u32),
}

/// What an index is brought up to date from: the old index, the rows
/// listed again (by path) and the unchanged directories below listed
/// ones (by path: the listing pruned them).
pub struct Old<'a> {
    pub index: Index<'a>,
    pub relisted: FxHashMap<u32, Vec<u8>>,
    pub kept: Arc<FxHashMap<Vec<u8>, u32>>,
}

/// Fill `w` with the directories breadth-first from `root`: listed ones
/// from `listed` (`ids`: the writer's id for each of its names, when not
/// the same), kept ones from `old`.
pub fn fill(
    mut w: IndexWriter,
    listed: &Listed,
    ids: Option<&[u32]>,
    root: Source,
    old: Option<&Old<'_>>,
) -> IndexWriter {
    // The paths of the unlisted directories queued, one after another.
    let mut paths = Vec::new();
    let by_path = |path: &[u8], paths: &mut Vec<u8>| match listed.roots.get(path) {
        Some(&dir) => Queued::Listed(dir),
        None => {
            let start = paths.len();
            paths.extend_from_slice(path);
            Queued::Unlisted(start..paths.len())
        }
    };
    let mut queue = std::collections::VecDeque::new();
    queue.push_back(match root {
        Source::Listed(path) => by_path(&path, &mut paths),
        Source::Kept(row) => Queued::Kept(row),
    });
    while let Some(source) = queue.pop_front() {
        match source {
            Queued::Listed(dir) => {
                let record = listed.records[dir as usize];
                let stamp = if listed.is_unfinished(|| listed.path_of(dir)) {
                    RowStamp::READ_AGAIN
                } else {
                    record.stamp.unwrap_or_else(|| stamp_of(&listed.path_of(dir)).into())
                };
                w.add_dir(stamp);
                // Made when a subdirectory was not listed (rare).
                let mut path = None;
                for &(id, t) in listed.parts_of(dir).flat_map(|p| p.entries.iter()) {
                    w.add_entry_id(ids.map_or(id, |ids| ids[id as usize]), t);
                    if t != FileType::Dir {
                        continue;
                    }
                    if let Some(kid) = listed.kid(dir, id) {
                        queue.push_back(Queued::Listed(kid));
                        continue;
                    }
                    let mut child = path.get_or_insert_with(|| listed.path_of(dir)).clone();
                    push_name(&mut child, listed.names.name(id));
                    queue.push_back(match old.and_then(|o| o.kept.get(&child)) {
                        Some(&row) => Queued::Kept(row),
                        None => by_path(&child, &mut paths),
                    });
                }
            }
            Queued::Unlisted(at) => {
                let path = &paths[at];
                w.add_dir(if listed.is_unfinished(|| path.to_vec()) {
                    RowStamp::READ_AGAIN
                } else {
                    stamp_of(path).into()
                });
            }
            Queued::Kept(row) => {
                let Some(old) = old else { continue };
                let dir = old.index.dir(row);
                w.add_dir(dir.stamp());
                // The entries copied whole (an entry at a time, this loop
                // was 9% of a refresh after 1% of million changed).
                let first = dir.first_entry();
                let subdirs = w.add_entry_words(old.index.entry_words_from(first, dir.len()));
                let children = dir.children();
                for k in 0..subdirs as u32 {
                    let child = Some(children.start + k).filter(|c| children.contains(c));
                    queue.push_back(match child {
                        Some(c) => match old.relisted.get(&c) {
                            Some(path) => by_path(path, &mut paths),
                            None => Queued::Kept(c),
                        },
                        // Not a row (a damaged index): read it afresh next time.
                        None => Queued::Unlisted(0..0),
                    });
                }
            }
        }
    }
    w
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    now_nanos() / 1_000_000_000
}

/// Build the index of `root` (a real path) with `threads` walking threads:
/// its tables, to be written ([`IndexWriter::finish`], or
/// [`store::write_index`](crate::store::write_index)). An error when the
/// listing cannot be trusted (see [`list`]).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # std::fs::create_dir(dir.path().join("src")).unwrap();
/// # std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
/// let root = dir.path().canonicalize().unwrap();
/// let bytes = fnd_index::build::build(&root, 2).unwrap().finish();
/// let index = fnd_index::format::Index::parse(&bytes).unwrap();
/// assert_eq!(index.entry_count(), 2);
/// ```
pub fn build(root: &Path, threads: usize) -> io::Result<IndexWriter> {
    build_reporting(root, threads).map(|(w, _)| w)
}

/// Directories a build could not read whole for a reason that may pass
/// (descriptors or memory short, EIO…): the index lacks what they hold
/// until a check reads them again.
#[derive(Debug)]
pub struct Unread {
    pub count: usize,
    /// The first of them, as the walk said it.
    pub first: String,
}

/// [`build`], and the directories it could not read whole, if any.
pub fn build_reporting(root: &Path, threads: usize) -> io::Result<(IndexWriter, Option<Unread>)> {
    let mut listed = list(&[root.to_path_buf()], None, threads, None)?;
    let unread = listed.first_unread.take().map(|first| Unread {
        count: listed.unfinished.len(),
        first,
    });
    let (dirs, entries) = listed.counts();
    let root = root.as_os_str().as_bytes();
    let mut w = IndexWriter::with_table(root, now(), &listed.names);
    w.reserve(dirs, entries, 0);
    let w = fill(w, &listed, None, Source::Listed(root.to_vec()), None);
    // Some 280k blocks to free: while the index is saved (here, when no
    // thread can start).
    let _ = std::thread::Builder::new().spawn(move || drop(listed));
    Ok((w, unread))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Waits until directories changed before the call are older than
    /// [`kept_stamp`]'s margin, so that a listing keeps their stamps.
    pub(crate) fn past_the_margin() {
        std::thread::sleep(std::time::Duration::from_millis(60));
    }

    /// A stamp is kept unless the directory was stat-ed within the margin
    /// of its ctime (50 ms, 2 s for a ctime in whole seconds); the clock
    /// is not read for a ctime older than that when the listing started.
    #[test]
    fn a_stamp_too_recent_to_trust_is_read_again() {
        const S: i64 = 1_000_000_000;
        const MS: i64 = 1_000_000;
        let at = |ctime: i64, ctime_ns: u32| Stamp {
            dev: 1,
            ino: 2,
            ctime,
            ctime_ns,
        };
        let start = 1_700_000_000 * S;
        let stamp = at(1_700_000_000 - 60, 5);
        assert_eq!(kept_stamp(stamp, start, || unreachable!()), stamp.into());
        let stamp = at(1_700_000_000, 5);
        assert_eq!(kept_stamp(stamp, start, || start + 10 * MS), RowStamp::READ_AGAIN);
        assert_eq!(kept_stamp(stamp, start, || start + 60 * MS), stamp.into());
        // A ctime after the stat (another clock): not to be trusted yet.
        assert_eq!(kept_stamp(stamp, start, || start - 5 * S), RowStamp::READ_AGAIN);
        let whole = at(1_700_000_000, 0);
        assert_eq!(kept_stamp(whole, start, || start + S), RowStamp::READ_AGAIN);
        assert_eq!(kept_stamp(whole, start, || start + 3 * S), whole.into());
    }

    /// Directories changed just before a listing keep no stamp (the next
    /// check reads them again); one changed before the margin keeps its own.
    #[test]
    fn directories_changed_just_before_their_listing_are_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("old")).unwrap();
        past_the_margin();
        let changed_at = std::time::Instant::now();
        // Changes the root, too.
        std::fs::create_dir(root.join("new")).unwrap();
        let bytes = build(&root, 1).unwrap().finish();
        let listed_within = changed_at.elapsed();
        let index = Index::parse(&bytes).unwrap();
        let stamp = |d: &str| index.dir(index.find(d.as_bytes()).unwrap()).stamp();
        let real = |d: &str| RowStamp::from(stamp_of(root.join(d).as_os_str().as_bytes()));
        assert_eq!(stamp("old"), real("old"));
        // Every stat came less than the margin after the change: none may
        // keep its stamp (on a loaded machine the build may take longer).
        if listed_within < std::time::Duration::from_millis(50) {
            assert_eq!(stamp(""), RowStamp::READ_AGAIN);
            assert_eq!(stamp("new"), RowStamp::READ_AGAIN);
        }
    }

    /// Every path below `root`, with `/` after directories, read from the
    /// file system or from an index.
    fn paths_on_disk(root: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![(root.to_path_buf(), String::new())];
        while let Some((dir, rel)) = stack.pop() {
            for e in std::fs::read_dir(dir).unwrap() {
                let e = e.unwrap();
                let name = format!("{rel}{}", e.file_name().to_string_lossy());
                if e.file_type().unwrap().is_dir() {
                    out.push(format!("{name}/"));
                    stack.push((e.path(), format!("{name}/")));
                } else {
                    out.push(name);
                }
            }
        }
        out.sort();
        out
    }

    /// Calls `f` with every entry of `index` and its path from the root.
    pub(crate) fn each_entry(index: &Index<'_>, mut f: impl FnMut(&[u8], &crate::format::Entry<'_>)) {
        let mut stack = vec![(0u32, Vec::new())];
        while let Some((row, path)) = stack.pop() {
            for e in index.dir(row).entries() {
                let mut p = path.clone();
                push_name(&mut p, e.name);
                f(&p, &e);
                if let Some(c) = e.dir {
                    stack.push((c, p));
                }
            }
        }
    }

    fn paths_in(index: &Index<'_>) -> Vec<String> {
        let mut out = Vec::new();
        each_entry(index, |path, e| {
            let slash = if e.dir.is_some() { "/" } else { "" };
            let path = path.strip_prefix(b"/").unwrap_or(path);
            out.push(format!("{}{slash}", String::from_utf8_lossy(path)));
        });
        out.sort();
        out
    }

    /// Subdirectories are matched to their parents' entries by name,
    /// however many a directory has and whichever thread read them; a
    /// name used at several depths stays with its own parent.
    #[test]
    fn every_subdirectory_is_under_its_own_parent() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for k in (0..600).rev() {
            let sub = root.join(format!("wide/{}", k * 7919 % 600));
            std::fs::create_dir_all(sub.join("same/same")).unwrap();
            std::fs::write(sub.join(format!("same/f{k}")), "").unwrap();
        }
        std::fs::create_dir_all(root.join("same/wide/same")).unwrap();
        let expected = paths_on_disk(&root);
        for threads in [1, 2, 4] {
            let bytes = build(&root, threads).unwrap().finish();
            assert_eq!(paths_in(&Index::parse(&bytes).unwrap()), expected, "{threads} threads");
        }
    }

    /// Every directory's stamp is its own, empty ones (never visited) too,
    /// however many listings the threads served before.
    #[test]
    fn every_directory_has_its_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["a/empty", "b", "c/d/e"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("b/f"), "").unwrap();
        past_the_margin();
        for _ in 0..3 {
            let bytes = build(&root, 2).unwrap().finish();
            let index = Index::parse(&bytes).unwrap();
            for d in ["", "a", "a/empty", "b", "c", "c/d", "c/d/e"] {
                let row = index.find(d.as_bytes()).unwrap();
                let real = stamp_of(root.join(d).as_os_str().as_bytes());
                assert_eq!(index.dir(row).stamp(), real.into(), "{d}");
            }
        }
    }

    /// An index of `root` as if the listings of the directories `short`
    /// (paths from the root; `unread` ones left out) had failed.
    pub(crate) fn listed_short(root: &Path, short: &[&str], unread: &[&str]) -> Vec<u8> {
        let spelt = |d: &&str| root.join(d).as_os_str().as_bytes().to_vec();
        let unread: Vec<Vec<u8>> = unread.iter().map(spelt).collect();
        let skip: Skip = Arc::new(move |p: &[u8]| unread.iter().any(|u| u == p));
        past_the_margin();
        let mut listed = list(&[root.to_path_buf()], None, 2, Some(skip)).unwrap();
        listed.unfinished.extend(short.iter().map(spelt));
        let top = root.as_os_str().as_bytes();
        let w = IndexWriter::with_table(top, 0, &listed.names);
        fill(w, &listed, None, Source::Listed(top.to_vec()), None).finish()
    }

    /// A directory whose listing failed or was cut short by an error that
    /// may pass is stamped to be read again (see the refresh's test of
    /// the same name), whether it was entered or not.
    #[test]
    fn a_directory_listed_short_is_read_again_by_the_next_check() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["short/in", "unread/in", "whole"] {
            std::fs::create_dir_all(root.join(d).join("in")).unwrap();
        }
        let bytes = listed_short(&root, &["short", "unread"], &["unread"]);
        let index = Index::parse(&bytes).unwrap();
        let stamp = |d: &str| index.dir(index.find(d.as_bytes()).unwrap()).stamp();
        assert_eq!(stamp("short"), RowStamp::READ_AGAIN);
        assert_eq!(stamp("unread"), RowStamp::READ_AGAIN);
        assert_eq!(
            stamp("whole"),
            stamp_of(root.join("whole").as_os_str().as_bytes()).into()
        );
    }
}
