//! The directory reader: open one directory, read it with `getdents64` into a
//! reused buffer, and stream its entries out in chunks while it reads.
//!
//! Offers [`Job`] (what a reader is given: a directory to open, or a part
//! of a huge one another reader split) and [`Reader`] (one thread's reading
//! state: [`read`](Reader::read) takes a job, hands the entries to a
//! [`Visitor`] in [`Chunk`]s, and returns the subdirectories found as new
//! jobs). It never decides what is read next: every scheduler (serial
//! orders, the thread pool, any other) calls it once per job.
//!
//! Relies on the contracts below it: [`Shared`] (the resolved settings, the
//! roots, the stop flag, the descriptor budget), [`Visitor`]/[`Flow`], the
//! filter contract, and [`ChunkBuf`]/[`Chunk`]; on `dir` to open
//! directories and keep their descriptors, `split` to cut a huge directory,
//! and on `dirent` and `meta` for the system calls.
//!
//! This is the only place that turns kernel records into entries.

mod listing;

use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use rustix::fs::AtFlags;
use rustix::io::Errno;

use self::listing::{Listing, Source};
use crate::dir::{Dir, Pending};
use crate::dirent::DirStream;
use crate::entry::{Chunk, ChunkBuf};
use crate::error::Error;
use crate::filter::{Decision, DirInfo, RawEntry};
use crate::meta::{FileType, Metadata};
use crate::settings::Shared;
use crate::split::{self, Part};
use crate::visit::{Flow, Visitor};

/// Size of the reused `getdents64` buffer: past 32 KiB the size barely
/// matters, and one buffer per thread avoids a malloc per directory.
const GETDENTS_BUF: usize = 64 * 1024;

/// The last stat a filter made with [`RawEntry::stat`] on this thread:
/// the reader clears it before each `decide` and keeps it for the entry's
/// metadata (a thread-local and not a field: callers build `RawEntry`s of
/// their own, outside any walk).
#[derive(Clone, Copy)]
struct FilterStat {
    /// The name's address and length: the entry it was made for.
    name: (usize, usize),
    follow: bool,
    metadata: Metadata,
}

thread_local! {
    static FILTER_STAT: std::cell::Cell<Option<FilterStat>> = const { std::cell::Cell::new(None) };
}

impl RawEntry<'_> {
    /// The entry's metadata, stat-ed relative to its directory (`follow`:
    /// a symlink's target's). A filter that stats an entry to decide should
    /// ask here: when the walk fetches metadata and the entry is yielded,
    /// the walk keeps this stat instead of making a second one.
    pub fn stat(&self, follow: bool) -> std::io::Result<Metadata> {
        let metadata = crate::meta::stat_at(self.dir_fd, self.name, follow)?;
        FILTER_STAT.set(Some(FilterStat {
            name: (self.name.as_ptr() as usize, self.name.len()),
            follow,
            metadata,
        }));
        Ok(metadata)
    }
}

/// What a reader is given.
pub(crate) enum Job {
    /// A directory to open and read.
    Open(Pending),
    /// The rest of a directory being read, from one position to another
    /// (see `crate::split`), with a descriptor of its own.
    Part(Box<Part>),
    /// A directory that cannot be read, with why: one handed over by
    /// another process whose filter state could not be rebuilt here.
    Failed(Box<Error>),
}

impl Job {
    /// Root number `root` of the walk, spelt `path`.
    pub(crate) fn root(root: usize, path: &[u8]) -> Job {
        Job::Open(Pending::root(Dir::root_parent(root), path))
    }
}

/// A buffer the kernel writes into. Filling it first (`vec![uninit; n]`
/// does) touches every page up front: 16 page faults per thread at start,
/// where a walk of small directories only ever uses the first page.
fn uninit_buffer(len: usize) -> Vec<MaybeUninit<u8>> {
    let mut buf = Vec::with_capacity(len);
    // SAFETY: `MaybeUninit<u8>` needs no initialization.
    unsafe { buf.set_len(len) };
    buf
}

/// A subdirectory found while reading, to be turned into a job once the
/// directory is fully read.
struct Child {
    name_start: u32,
    name_len: u32,
    follow: bool,
}

impl Child {
    fn name<'a>(&self, names: &'a [u8]) -> &'a [u8] {
        &names[self.name_start as usize..(self.name_start + self.name_len) as usize]
    }
}

/// Per-thread reading state, reused from one directory to the next.
pub(crate) struct Reader {
    buf: Vec<MaybeUninit<u8>>,
    child_names: Vec<u8>,
    children: Vec<Child>,
    /// Buffers of the last chunk, to be reused by the next one.
    spare: Option<ChunkBuf>,
    /// A directory listed whole before its entries are handed out.
    listing: Listing,
    /// Directories this reader has listed.
    listed: usize,
}

/// End marks are trusted (see `mounts`) only once a reader has listed
/// this many directories, or another reader found out: reading the mount
/// table and resolving the roots took 60 µs, 2% of a search that stops at
/// its first result.
const TRUST_END_MARKS_AFTER: usize = 64;

impl Reader {
    pub(crate) fn new() -> Self {
        Reader {
            buf: uninit_buffer(GETDENTS_BUF),
            child_names: Vec::new(),
            children: Vec::new(),
            spare: None,
            listing: Listing::default(),
            listed: 0,
        }
    }

    /// Whether the directory about to be listed may end where a record
    /// marks the end (`dirent`), without a read that returns 0.
    fn end_marks_trusted(&mut self, shared: &Shared) -> bool {
        if let Some(known) = shared.end_marks_trusted_if_known() {
            return known;
        }
        self.listed += 1;
        self.listed > TRUST_END_MARKS_AFTER && shared.end_marks_trusted()
    }

    fn chunk_for(&mut self, dir: Arc<Dir>) -> ChunkBuf {
        match self.spare.take() {
            Some(mut c) => {
                c.clear();
                c.dir = dir;
                c
            }
            None => ChunkBuf::new(dir),
        }
    }

    /// Read the directory of `job`: emit its entries in chunks to `visitor`
    /// and append the jobs for its subdirectories to `jobs`, in listing order.
    /// With a `caller`, a huge directory may be cut into parts (see
    /// `crate::split`) handed to it as jobs for other workers (it takes
    /// each part's entries as another read's), and it may stat the
    /// entries itself (see [`Caller::stats_chunks`]).
    pub(crate) fn read<V: Visitor>(
        &mut self,
        shared: &Shared,
        job: Job,
        visitor: &mut V,
        jobs: &mut Vec<Job>,
        caller: Option<&mut dyn Caller>,
    ) -> Flow {
        match job {
            Job::Open(pending) => self.read_dir(shared, pending, visitor, jobs, caller),
            Job::Part(part) => self.read_part(shared, *part, visitor, jobs),
            Job::Failed(error) => visitor.error(*error),
        }
    }

    fn read_dir<V: Visitor>(
        &mut self,
        shared: &Shared,
        mut job: Pending,
        visitor: &mut V,
        jobs: &mut Vec<Job>,
        caller: Option<&mut dyn Caller>,
    ) -> Flow {
        let settings = &shared.settings;
        let is_root = job.parent.is_root_parent();
        let depth = job.depth();
        let fd = match job.open(shared.root_path(job.parent.root), settings.follow_links) {
            Ok(fd) => fd,
            Err(Errno::NOTDIR) if is_root => return self.emit_root_non_dir(shared, &job, visitor),
            Err(e) => return visitor.error(Error::io(&job.path(), depth, e)),
        };
        let (dev, ino) = if is_root || settings.follow_links || settings.same_file_system {
            match crate::meta::stat_fd(fd.as_fd()) {
                Ok(m) => (m.dev, m.ino),
                Err(e) => {
                    return visitor.error(Error::io(
                        &job.path(),
                        depth,
                        Errno::from_io_error(&e).unwrap_or(Errno::IO),
                    ))
                }
            }
        } else {
            (0, 0)
        };
        let parent = if is_root { None } else { Some(job.parent.clone()) };
        if let Some(parent) = &parent {
            if settings.same_file_system && dev != parent.root_id().0 {
                return Flow::Continue;
            }
            // Only a followed link can close a cycle (directories cannot be
            // hard-linked); a real directory met again under a link is walked
            // again, as fd and the `ignore` crate do.
            if settings.follow_links && job.follow {
                if let Some(len) = find_ancestor(parent, dev, ino) {
                    return visitor.error(Error::loop_at(&job.path(), depth, &parent.prefix[..len]));
                }
            }
        }
        let root_index = job.parent.root;
        let root_prefix_len = parent.as_ref().map(|p| p.root_prefix_len);
        let parent_state = parent.as_ref().and_then(|p| p.hook_state.clone());
        let mut dir = Dir::new(
            job.path(),
            depth + 1,
            root_index,
            root_prefix_len,
            parent,
            dev,
            ino,
            fd.as_raw_fd(),
        );
        drop(job);
        if is_root && settings.min_depth == 0 {
            let flow = self.emit_root(shared, dir.path(), FileType::Dir, ino, visitor, Some(&fd));
            if flow == Flow::Stop {
                return flow;
            }
        }
        if is_root && settings.max_depth == Some(0) {
            return Flow::Continue;
        }
        let mut listed = false;
        if let Some(hook) = &settings.hook {
            let probes = hook.probe_names();
            let mut present = Vec::new();
            if !probes.is_empty() {
                let end_marks_trusted = self.end_marks_trusted(shared);
                self.listing.read(fd.as_fd(), &mut self.buf, end_marks_trusted);
                listed = true;
                present.extend(probes.iter().map(|p| self.listing.contains(p, fd.as_fd())));
            }
            let info = DirInfo {
                path: dir.path(),
                depth,
                fd: fd.as_fd(),
                present: listed.then_some(&present[..]),
            };
            dir.hook_state = hook.enter(&info, parent_state.as_ref());
        }
        let dir = Arc::new(dir);
        // The descriptor now belongs to `dir`; `settle_fd` decides its fate.
        let raw = fd.into_raw_fd();
        let stretch = Stretch {
            from: 0,
            to: u64::MAX,
            room: (0, 0),
            caller,
            // A directory listed whole is small: not cut.
            probed: listed && self.listing.is_whole(),
        };
        let flow = self.read_entries(shared, &dir, raw, visitor, listed, stretch);
        self.queue_children(shared, &dir, flow, jobs)
    }

    /// Read one part of a directory another reader split (with a
    /// descriptor of its own, and so a `Dir` of its own).
    fn read_part<V: Visitor>(&mut self, shared: &Shared, part: Part, visitor: &mut V, jobs: &mut Vec<Job>) -> Flow {
        let Part {
            dir,
            fd,
            start,
            end,
            room,
            reserved,
        } = part;
        drop(reserved);
        let raw = fd.into_raw_fd();
        let dir = Arc::new(dir.twin(raw));
        let flow = self.read_entries(
            shared,
            &dir,
            raw,
            visitor,
            false,
            Stretch {
                from: start,
                to: end,
                room,
                caller: None,
                probed: true,
            },
        );
        self.queue_children(shared, &dir, flow, jobs)
    }

    /// After reading `dir`: settle its descriptor and queue its children.
    fn queue_children(&mut self, shared: &Shared, dir: &Arc<Dir>, flow: Flow, jobs: &mut Vec<Job>) -> Flow {
        let children = std::mem::take(&mut self.children);
        let closed = dir.settle_fd(if flow == Flow::Stop { 0 } else { children.len() }, &shared.budget);
        let keeps_fd = closed.is_none();
        drop(closed);
        if flow == Flow::Continue {
            jobs.extend(children.iter().map(|c| {
                let name = c.name(&self.child_names);
                Job::Open(Pending::child(dir.clone(), name, c.follow, keeps_fd))
            }));
        }
        self.children = children;
        self.children.clear();
        self.child_names.clear();
        flow
    }

    /// Read the entries of `dir` and hand them out; when `listed`, replay
    /// `self.listing` first (and read on from the descriptor if it is not
    /// whole).
    fn read_entries<V: Visitor>(
        &mut self,
        shared: &Shared,
        dir: &Arc<Dir>,
        raw_fd: i32,
        visitor: &mut V,
        listed: bool,
        mut stretch: Stretch<'_>,
    ) -> Flow {
        let settings = &shared.settings;
        // SAFETY: `dir` keeps raw_fd open until `settle_fd`, after this returns.
        let fd = unsafe { BorrowedFd::borrow_raw(raw_fd) };
        let depth = dir.child_depth;
        let emit = depth >= settings.min_depth;
        let descend = settings.max_depth.is_none_or(|m| depth < m);
        let chunk_size = if settings.whole() {
            usize::MAX
        } else {
            settings.chunk_size
        };
        // Stat here, unless the caller stats what it is handed.
        let stats = settings.metadata && stretch.caller.as_mut().is_none_or(|c| c.stats_chunks());
        let mut chunk = self.chunk_for(dir.clone());
        // One buffer for the whole stretch: room for what it is expected to hold.
        let whole = chunk_size == usize::MAX;
        if whole {
            make_room(&mut chunk, stretch.room);
        }
        // A listing not whole goes on from the descriptor once replayed.
        let mut rest_to_read = listed && !self.listing.is_whole();
        let mut source = if listed {
            Source::Listed(self.listing.replay())
        } else {
            let end_marks_trusted = self.end_marks_trusted(shared);
            Source::Raw(DirStream::new(fd, &mut self.buf, end_marks_trusted))
        };
        // The position of the entry at hand: that of the one before it, as
        // `d_off` gives the position after each entry.
        let mut position = stretch.from;
        let mut seen = 0;
        loop {
            let Some(item) = source.next() else {
                if !std::mem::take(&mut rest_to_read) {
                    break;
                }
                let end_marks_trusted = self.end_marks_trusted(shared);
                source = Source::Raw(DirStream::new(fd, &mut self.buf, end_marks_trusted));
                continue;
            };
            let entry = match item {
                Ok(e) => e,
                Err(e) => {
                    let flow = visitor.error(Error::io(dir.path(), depth - 1, e));
                    if flow == Flow::Stop {
                        return flow;
                    }
                    break;
                }
            };
            let own_position = std::mem::replace(&mut position, entry.next_position());
            if own_position >= stretch.to {
                break;
            }
            if let (Some(caller), false) = (&mut stretch.caller, stretch.probed) {
                seen += 1;
                if seen == split::PROBE_ENTRIES && caller.may_cut() {
                    // Only a chunk that holds the whole stretch holds what it
                    // has read so far, and makes room; else nothing is expected.
                    let so_far = if whole {
                        (chunk.len(), chunk.names.len())
                    } else {
                        (0, 0)
                    };
                    let threads = settings.threads;
                    if let Some((end, parts)) = split::split(&shared.budget, dir, fd, own_position, so_far, threads) {
                        stretch.to = end;
                        parts
                            .into_iter()
                            .for_each(|part| caller.part(Job::Part(Box::new(part))));
                        make_room(&mut chunk, split::expected(so_far, own_position, 0, end));
                    }
                    stretch.probed = true;
                }
            }
            let name = entry.name();
            if name == b"." || name == b".." {
                continue;
            }
            if settings.skip_hidden && name[0] == b'.' {
                continue;
            }
            let mut file_type = entry.file_type();
            if file_type == FileType::Unknown {
                file_type = match rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => Metadata::from_stat(&st).file_type(),
                    Err(_) => FileType::Unknown, // vanished: listed as it was
                };
            }
            let target_type = if file_type == FileType::Symlink && settings.follow_links {
                match follow_link(dir, fd, name, depth) {
                    Ok(target_type) => target_type,
                    Err(error) => {
                        if visitor.error(error) == Flow::Stop {
                            return Flow::Stop;
                        }
                        continue;
                    }
                }
            } else {
                file_type
            };
            let mut known = None;
            let decision = match &settings.hook {
                Some(hook) => {
                    let raw_entry = RawEntry {
                        name,
                        parent_prefix: &dir.prefix,
                        depth,
                        file_type,
                        target_type,
                        dir_fd: fd,
                    };
                    FILTER_STAT.set(None);
                    let decision = hook.decide(dir.hook_state.as_ref(), &raw_entry);
                    if let Some(s) = FILTER_STAT.take() {
                        let same = s.name == (name.as_ptr() as usize, name.len());
                        if same && s.follow == settings.follow_links && settings.sort.is_none() {
                            known = Some(s.metadata);
                        }
                    }
                    decision
                }
                None => Decision::KEEP,
            };
            if decision.descend && descend && target_type == FileType::Dir {
                let name_start = self.child_names.len() as u32;
                self.child_names.extend_from_slice(name);
                self.children.push(Child {
                    name_start,
                    name_len: name.len() as u32,
                    follow: file_type == FileType::Symlink,
                });
            }
            if emit && decision.emit {
                chunk.push(name, file_type, target_type, entry.ino());
                if let Some(m) = known.filter(|_| settings.metadata) {
                    // The filter stat-ed it: the bulk fetch leaves it be.
                    chunk.meta.resize(chunk.len() - 1, None);
                    chunk.meta.push(Some(m));
                }
                if chunk.len() >= chunk_size && flush(shared, &mut chunk, fd, stats, visitor) == Flow::Stop {
                    return Flow::Stop;
                }
            }
        }
        if settings.sort.is_some() {
            chunk.sort_by_name();
            let names = &self.child_names;
            self.children.sort_unstable_by(|a, b| a.name(names).cmp(b.name(names)));
        }
        let flow = if chunk.is_empty() && !settings.visit_empty {
            Flow::Continue
        } else {
            flush(shared, &mut chunk, fd, stats, visitor)
        };
        self.spare = Some(chunk);
        flow
    }

    /// Yield a root (depth 0); `fd` is the root's own descriptor, when it is
    /// a directory the walk opened.
    fn emit_root<V: Visitor>(
        &mut self,
        shared: &Shared,
        path: &[u8],
        file_type: FileType,
        ino: u64,
        visitor: &mut V,
        fd: Option<&OwnedFd>,
    ) -> Flow {
        let mut chunk = ChunkBuf::new(Dir::root_parent(0));
        chunk.push(path, file_type, file_type, ino);
        if shared.settings.metadata {
            let m = match fd {
                Some(fd) => crate::meta::stat_fd(fd.as_fd()).ok(),
                None => crate::meta::stat_path(std::path::Path::new(std::ffi::OsStr::from_bytes(path)), true).ok(),
            };
            chunk.meta.push(m);
        }
        // A root has no parent the walk opened: its chunk lends no descriptor.
        let flow = visitor.visit(&mut Chunk::lend(&mut chunk, None));
        if flow == Flow::Stop {
            shared.stop();
        }
        flow
    }

    /// A root that is not a directory is yielded as an entry of depth 0.
    fn emit_root_non_dir<V: Visitor>(&mut self, shared: &Shared, job: &Pending, visitor: &mut V) -> Flow {
        let path = job.path();
        let m = match crate::meta::stat_path(std::path::Path::new(std::ffi::OsStr::from_bytes(&path)), true) {
            Ok(m) => m,
            Err(e) => return visitor.error(Error::io(&path, 0, Errno::from_io_error(&e).unwrap_or(Errno::IO))),
        };
        if shared.settings.min_depth > 0 {
            return Flow::Continue;
        }
        self.emit_root(shared, &path, m.file_type(), m.ino, visitor, None)
    }
}

/// Hand a full chunk to the visitor (with metadata first, if `stats`),
/// lending it the directory's descriptor for the visit, then empty it for
/// the next entries.
fn flush<V: Visitor>(shared: &Shared, chunk: &mut ChunkBuf, fd: BorrowedFd<'_>, stats: bool, visitor: &mut V) -> Flow {
    if shared.stopped() {
        return Flow::Stop;
    }
    if stats {
        fill_metadata(shared, chunk, fd);
    }
    let flow = visitor.visit(&mut Chunk::lend(chunk, Some(fd)));
    chunk.clear();
    if flow == Flow::Stop {
        shared.stop();
    }
    flow
}

/// Stat every entry of a chunk relative to its directory: the bulk fetch
/// that spares callers a second stat per entry. In listing order: stats
/// sorted by inode number gained nothing on a cold cache (BENCHMARKS.md,
/// Other measurements, "Stats in inode order").
///
/// When the chunk's first two stats each waited on the file system
/// ([`STAT_WAITED`](crate::meta::STAT_WAITED)), the rest go out at once
/// on helper threads (up to the I/O depth in the whole walk): one thread
/// stats one entry per round trip, and a directory of 268 files took
/// 268 of them in a row through a mount of 4 ms a request. They go out in
/// rounds, each on the helpers free at its start (one stat alone when
/// none is), so that helpers freed meanwhile join in: a directory of 353
/// files whose chunk found every helper taken was stat-ed in a row, 1.4 s,
/// while the rest of its MPI rank's work ran out.
pub(crate) fn fill_metadata(shared: &Shared, chunk: &mut ChunkBuf, fd: BorrowedFd<'_>) {
    const TIMED: usize = 2;
    let follow = shared.settings.follow_links;
    // What a filter stat-ed already is there (see `RawEntry::stat`); the
    // rest is `None` or missing.
    let mut meta = std::mem::take(&mut chunk.meta);
    let known = meta.len();
    meta.resize(chunk.len(), None);
    let name = |i: usize| chunk.get(i).name_bytes();
    let to_stat = |meta: &[Option<Metadata>], i: usize| i >= known || meta[i].is_none();
    let (mut i, mut timed, mut waited) = (0, 0, 0);
    while i < chunk.len() && timed < TIMED {
        if to_stat(&meta, i) {
            let started = std::time::Instant::now();
            meta[i] = crate::meta::stat_entry(fd, name(i), follow);
            waited += usize::from(started.elapsed() > crate::meta::STAT_WAITED);
            timed += 1;
        }
        i += 1;
    }
    if waited < TIMED {
        for i in i..chunk.len() {
            if to_stat(&meta, i) {
                meta[i] = crate::meta::stat_entry(fd, name(i), follow);
            }
        }
    } else {
        let at: Vec<usize> = (i..chunk.len()).filter(|&i| to_stat(&meta, i)).collect();
        let rest: Vec<&[u8]> = at.iter().map(|&i| name(i)).collect();
        let helpers = crate::meta::Helpers {
            reserve: &|n| shared.reserve_stat_helpers(n),
            release: &|n| shared.release_stat_helpers(n),
        };
        let mut got = Vec::with_capacity(rest.len());
        crate::meta::stat_entries_in_rounds(fd, &rest, follow, &helpers, &mut got);
        at.into_iter().zip(got).for_each(|(i, m)| meta[i] = m);
    }
    chunk.meta = meta;
}

/// The type of what the link `name` in `dir` leads to. A dangling link
/// (ENOENT) is listed as a link. A link back to an ancestor is an error,
/// neither yielded nor walked; so is one that cannot be followed at all (to
/// itself: ELOOP, through a file: ENOTDIR, into an unreadable directory), as
/// fd and du report it.
fn follow_link(dir: &Arc<Dir>, fd: BorrowedFd<'_>, name: &[u8], depth: usize) -> Result<FileType, Error> {
    let path = || [&dir.prefix[..], name].concat();
    match rustix::fs::statat(fd, name, AtFlags::empty()) {
        Ok(st) => {
            let target = Metadata::from_stat(&st);
            match target
                .is_dir()
                .then(|| find_ancestor(dir, target.dev, target.ino))
                .flatten()
            {
                Some(len) => Err(Error::loop_at(&path(), depth, &dir.prefix[..len])),
                None => Ok(target.file_type()),
            }
        }
        Err(Errno::NOENT) => Ok(FileType::Symlink),
        Err(e) => Err(Error::follow(&path(), depth, e)),
    }
}

/// The ancestor of `dir` (or `dir` itself) with this device and inode, if
/// any: the length of its path, a prefix of `dir`'s.
fn find_ancestor(dir: &Dir, dev: u64, ino: u64) -> Option<usize> {
    if dir.dev == dev && dir.ino == ino && !dir.is_root_parent() {
        return Some(dir.path_len);
    }
    dir.ancestors()
        .find(|d| d.dev == dev && d.ino == ino)
        .map(|d| d.path_len)
}

/// Room in `chunk` for `room` (entries, name bytes) in all, and an eighth
/// more: the density of entries varies from one range of positions to
/// another.
fn make_room(chunk: &mut ChunkBuf, room: (usize, usize)) {
    let (entries, names) = (room.0 + room.0 / 8, room.1 + room.1 / 8);
    chunk.slots.reserve(entries.saturating_sub(chunk.len()));
    chunk.names.reserve(names.saturating_sub(chunk.names.len()));
}

/// What the caller of one read decides as it goes: whether a huge
/// directory is cut into parts (see `crate::split`) for other workers,
/// whose reads of them it takes as more of the directory's, and who stats
/// the entries.
pub(crate) trait Caller {
    /// Whether the directory may be cut now, asked once, when it is found
    /// big enough (a caller that streams its entries as read keeps to one
    /// read: parts read ahead would have to be held).
    fn may_cut(&mut self) -> bool {
        true
    }

    /// A part cut off, for another worker.
    fn part(&mut self, part: Job);

    /// Whether the reader stats each chunk (when the walk asks for
    /// metadata) before it hands it over; if not, the visitor does, with
    /// [`fill_metadata`] and the descriptor the chunk lends.
    fn stats_chunks(&mut self) -> bool {
        true
    }
}

impl<F: FnMut(Job)> Caller for F {
    fn part(&mut self, part: Job) {
        self(part)
    }
}

/// The stretch of a directory's listing one reader takes: positions from
/// `from` (where its descriptor stands) up to, not including, `to`; with
/// a `caller` and not `probed` yet, the reader may still split what is
/// ahead of it.
struct Stretch<'s> {
    from: u64,
    to: u64,
    /// The entries and name bytes expected, when known (a part's).
    room: (usize, usize),
    caller: Option<&'s mut dyn Caller>,
    /// The directory was considered for cutting already.
    probed: bool,
}
