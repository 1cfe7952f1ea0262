//! Building an index: the live walk, unfiltered (as `fnd -u` walks), each
//! directory's listing kept as the walk hands it over, each directory's
//! stamp taken with an `fstat` of the descriptor the walk has just opened,
//! before it reads it (so a change during the build shows at the next
//! check); then the listings written out breadth-first.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fnd_walk::meta::{stat_fd, stat_path};
use fnd_walk::{Chunk, Decision, DirInfo, EntryFilter, FileType, FilterState, Flow, RawEntry, Visitor, WalkBuilder};
use rustc_hash::FxHashMap;

use crate::format::{ignore_bits, Index, IndexWriter, NameTable, Stamp};

/// One directory's entries as the walk listed them: name ids (in the
/// listing's [`NameTable`]) and types, as listed (sorting each directory
/// was a tenth of a build's serial part).
#[derive(Default)]
pub struct Listing {
    pub stamp: Option<Stamp>,
    /// The [`IGNORE_FILES`](crate::format::IGNORE_FILES) it holds.
    ignore_files: u32,
    entries: Vec<(u32, FileType)>,
}

/// Listings by directory path (the walk's prefix without its `/`), hashed
/// eight bytes at a time (FNV-1a, a byte at a time, was 6% of a build).
pub type Listings = FxHashMap<Vec<u8>, Listing>;

/// What a listing found: each directory's entries, by path, and their
/// names. Each reading thread gives its names ids of its own as it lists
/// them, in parallel; the tables are merged once at the end (interning
/// every entry's name when the index was written was most of a build's
/// serial part). Each thread's listings stay in a map of their own, their
/// ids changed to the merged table's (moving them into one map was 40 ms
/// of a build of million, on one thread).
#[derive(Default)]
pub struct Listed {
    /// The listings of each reading thread: a directory read in chunks by
    /// several threads is in several.
    pub parts: Vec<Listings>,
    pub names: NameTable,
}

impl Listed {
    /// The directory at `path`: its stamp, the ignore files it holds,
    /// and its entries (name ids and types).
    fn listing(&self, path: &[u8]) -> (Option<Stamp>, u32, impl Iterator<Item = &(u32, FileType)>) {
        let mut parts = self.parts.iter().filter_map(|m| m.get(path));
        let first = parts.next();
        let rest: Vec<&Listing> = parts.collect();
        let all = || first.into_iter().chain(rest.iter().copied());
        let stamp = all().find_map(|l| l.stamp);
        let ignore_files = all().fold(0, |bits, l| bits | l.ignore_files);
        let entries = first.into_iter().chain(rest).flat_map(|l| l.entries.iter());
        (stamp, ignore_files, entries)
    }

    /// How many directories and entries it holds.
    fn counts(&self) -> (usize, usize) {
        let dirs = self.parts.iter().map(|m| m.len()).sum();
        let entries = self
            .parts
            .iter()
            .flat_map(|m| m.values())
            .map(|l| l.entries.len())
            .sum();
        (dirs, entries)
    }
}

struct Collect {
    listings: Listings,
    names: NameTable,
    /// Which listing this is (see [`Entered::walk`]).
    walk: u64,
}

/// The directory a reading thread entered last, with its stamp; and
/// those it found empty. A thread reads one directory at a time, entering
/// it ([`Stamper`]), then visiting its chunks ([`Collect`]), so a directory
/// entered and never visited before the next is empty: its stamp is kept
/// here (27k of million's 140k directories are empty; a stat of each by
/// path was 8% of a build).
#[derive(Default)]
struct Entered {
    /// The listing it belongs to: a thread may serve several in turn.
    walk: u64,
    path: Vec<u8>,
    stamp: Option<Stamp>,
    visited: bool,
    empty: Vec<(Vec<u8>, Stamp)>,
}

thread_local! {
    static ENTERED: std::cell::RefCell<Entered> = std::cell::RefCell::default();
}

impl Visitor for Collect {
    fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
        let prefix = chunk.prefix();
        let path = match prefix.strip_suffix(b"/") {
            Some(p) if !p.is_empty() => p,
            _ => prefix,
        };
        let stamp = ENTERED.with_borrow_mut(|entered| {
            if entered.walk != self.walk {
                return None;
            }
            for (path, stamp) in entered.empty.drain(..) {
                self.listings.entry(path).or_default().stamp = Some(stamp);
            }
            // Not the directory this thread entered: a part of a large one.
            (entered.path == path).then(|| {
                entered.visited = true;
                entered.stamp
            })
        });
        let (listings, names) = (&mut self.listings, &mut self.names);
        let listing = match listings.get_mut(path) {
            Some(l) => l,
            None => listings.entry(path.to_vec()).or_default(),
        };
        if listing.stamp.is_none() {
            listing.stamp = stamp.flatten();
        }
        listing.entries.reserve(chunk.len());
        for e in chunk.iter() {
            let name = e.name_bytes();
            if name.starts_with(b".") {
                listing.ignore_files |= ignore_bits([name]);
            }
            listing.entries.push((names.intern(name), e.file_type()));
        }
        Flow::Continue
    }
}

/// Which directories (by path) a listing leaves out.
pub type Skip = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// The walk's filter for a listing: each directory's stamp, from an
/// `fstat` of the descriptor the walk has just opened, before it reads it
/// (an `fstatat` of each subdirectory from its parent, a path lookup each,
/// was a seventh of a build), handed to [`Collect`] through [`ENTERED`];
/// and the directories left out.
struct Stamper {
    skip: Option<Skip>,
    walk: u64,
}

impl EntryFilter for Stamper {
    fn enter(&self, dir: &DirInfo<'_>, _: Option<&FilterState>) -> Option<FilterState> {
        let stamp = stat_fd(dir.fd).ok().map(|m| Stamp::from(&m));
        ENTERED.with_borrow_mut(|entered| {
            if entered.walk != self.walk {
                *entered = Entered {
                    walk: self.walk,
                    ..Entered::default()
                };
            }
            if let (false, Some(stamp)) = (entered.visited, entered.stamp) {
                entered.empty.push((entered.path.clone(), stamp));
            }
            entered.path.clear();
            entered.path.extend_from_slice(dir.path);
            entered.stamp = stamp;
            entered.visited = false;
        });
        None
    }

    fn decide(&self, _: Option<&FilterState>, e: &RawEntry<'_>) -> Decision {
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

/// List `roots` and every directory below them, except those `skip`
/// names (by path), with `threads` walking threads. `within`: a real path
/// every root lies within (see [`WalkBuilder::roots_within`]).
pub fn list(roots: &[PathBuf], within: Option<&Path>, threads: usize, skip: Option<Skip>) -> Listed {
    static WALKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let id = WALKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut walk = WalkBuilder::new(&roots[0]);
    for root in &roots[1..] {
        walk = walk.add_root(root);
    }
    if let Some(within) = within {
        walk = walk.roots_within(within);
    }
    // No more workers than threads: a pool that grows while reads wait
    // took the page faults of the listings for waits and grew to 128
    // workers, and a build of million ran on 1.05 cores (1.45 without).
    walk = walk
        .threads(threads)
        .io_depth(threads)
        .min_depth(1)
        .lenient(true)
        .filter(Some(Arc::new(Stamper { skip, walk: id })));
    let mut all = Listed::default();
    walk.visit(
        || Collect {
            listings: Listings::default(),
            names: NameTable::default(),
            walk: id,
        },
        |mut c| {
            if c.listings.is_empty() {
                return;
            }
            if all.parts.is_empty() {
                all.names = c.names;
            } else {
                let ids: Vec<u32> = c.names.iter().map(|n| all.names.intern(n)).collect();
                for listing in c.listings.values_mut() {
                    for e in &mut listing.entries {
                        e.0 = ids[e.0 as usize];
                    }
                }
            }
            all.parts.push(c.listings);
        },
    );
    all
}

/// The stamp of the directory at `path`, when no listing carried one.
pub fn stamp_of(path: &[u8]) -> Stamp {
    stat_path(Path::new(OsStr::from_bytes(path)), false)
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

/// A directory waiting to be written: where its path is, or its old row.
enum Queued {
    Listed(std::ops::Range<usize>),
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
    // The paths of the directories queued, one after another: no
    // allocation per directory.
    let mut paths = Vec::new();
    let mut queue = std::collections::VecDeque::new();
    queue.push_back(match root {
        Source::Listed(path) => {
            paths.extend_from_slice(&path);
            Queued::Listed(0..paths.len())
        }
        Source::Kept(row) => Queued::Kept(row),
    });
    while let Some(source) = queue.pop_front() {
        match source {
            Queued::Listed(at) => {
                let (stamp, ignore_files, entries) = listed.listing(&paths[at.clone()]);
                let stamp = stamp.unwrap_or_else(|| stamp_of(&paths[at.clone()]));
                w.add_dir(stamp, ignore_files);
                for &(id, t) in entries {
                    w.add_entry_id(ids.map_or(id, |ids| ids[id as usize]), t);
                    if t == FileType::Dir {
                        let start = paths.len();
                        paths.extend_from_within(at.clone());
                        if !paths.ends_with(b"/") {
                            paths.push(b'/');
                        }
                        paths.extend_from_slice(listed.names.name(id));
                        let child = start..paths.len();
                        queue.push_back(match old.and_then(|o| o.kept.get(&paths[child.clone()])) {
                            Some(&row) => Queued::Kept(row),
                            None => Queued::Listed(child),
                        });
                    }
                }
            }
            Queued::Kept(row) => {
                let Some(old) = old else { continue };
                let dir = old.index.dir(row);
                w.add_dir(dir.stamp(), dir.ignore_files());
                // The entries copied whole (an entry at a time, this loop
                // was 9% of a refresh after 1% of million changed).
                let first = dir.first_entry();
                let subdirs = w.add_entry_words(old.index.entry_words_from(first, dir.len()));
                let children = dir.children();
                for k in 0..subdirs as u32 {
                    let child = Some(children.start + k).filter(|c| children.contains(c));
                    queue.push_back(match child {
                        Some(c) => match old.relisted.get(&c) {
                            Some(path) => {
                                let start = paths.len();
                                paths.extend_from_slice(path);
                                Queued::Listed(start..paths.len())
                            }
                            None => Queued::Kept(c),
                        },
                        // Not a row (a damaged index): read it afresh next time.
                        None => Queued::Listed(0..0),
                    });
                }
            }
        }
    }
    w
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Build the index of `root` (a real path) with `threads` walking threads:
/// its tables, to be written ([`IndexWriter::finish`], or
/// [`store::write_index`](crate::store::write_index)).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # std::fs::create_dir(dir.path().join("src")).unwrap();
/// # std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
/// let root = dir.path().canonicalize().unwrap();
/// let bytes = fnd_index::build::build(&root, 2).finish();
/// let index = fnd_index::format::Index::parse(&bytes).unwrap();
/// assert_eq!(index.entry_count(), 2);
/// ```
pub fn build(root: &Path, threads: usize) -> IndexWriter {
    let listed = list(&[root.to_path_buf()], None, threads, None);
    let (dirs, entries) = listed.counts();
    let root = root.as_os_str().as_bytes();
    let mut w = IndexWriter::with_table(root, now(), &listed.names);
    w.reserve(dirs, entries, 0);
    let w = fill(w, &listed, None, Source::Listed(root.to_vec()), None);
    // Some 280k blocks to free: while the index is saved (here, when no
    // thread can start).
    let _ = std::thread::Builder::new().spawn(move || drop(listed));
    w
}

#[cfg(test)]
mod tests {
    use super::*;

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
        for _ in 0..3 {
            let bytes = build(&root, 2).finish();
            let index = Index::parse(&bytes).unwrap();
            for d in ["", "a", "a/empty", "b", "c", "c/d", "c/d/e"] {
                let row = index.find(d.as_bytes()).unwrap();
                let real = stamp_of(root.join(d).as_os_str().as_bytes());
                assert_eq!(index.dir(row).stamp(), real.into(), "{d}");
            }
        }
    }
}
