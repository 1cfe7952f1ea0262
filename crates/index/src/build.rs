//! Building an index: the live walk, unfiltered (as `fnd -u` walks), each
//! directory's listing kept as the walk hands it over, each directory's
//! stamp taken with an `fstat` of the descriptor the walk has just opened,
//! before it reads it (so a change during the build shows at the next
//! check); then the listings written out breadth-first.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fnd_walk::meta::{stat_fd, stat_path};
use fnd_walk::{Chunk, Decision, DirInfo, EntryFilter, FileType, FilterState, Flow, RawEntry, Visitor, WalkBuilder};

use crate::format::{ignore_bits, Index, IndexWriter, Stamp};

/// One directory's entries as the walk listed them.
#[derive(Default)]
pub struct Listing {
    pub stamp: Option<Stamp>,
    names: Vec<u8>,
    /// (end of the name in `names`, type).
    entries: Vec<(u32, FileType)>,
}

impl Listing {
    fn push(&mut self, name: &[u8], file_type: FileType) {
        self.names.extend_from_slice(name);
        self.entries.push((self.names.len() as u32, file_type));
    }

    /// The entries as listed. (Not sorted: sorting each directory was a
    /// tenth of a build's serial part.)
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], FileType)> + '_ {
        let mut start = 0;
        self.entries.iter().map(move |&(end, t)| {
            let name = &self.names[start..end as usize];
            start = end as usize;
            (name, t)
        })
    }
}

/// Listings by directory path (the walk's prefix without its `/`), hashed
/// eight bytes at a time (FNV-1a, a byte at a time, was 6% of a build).
pub type Listings = HashMap<Vec<u8>, Listing, rustc_hash::FxBuildHasher>;

struct Collect {
    listings: Listings,
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
        let listing = match self.listings.get_mut(path) {
            Some(l) => l,
            None => self.listings.entry(path.to_vec()).or_default(),
        };
        if listing.stamp.is_none() {
            listing.stamp = stamp.flatten();
        }
        for e in chunk.iter() {
            listing.push(e.name_bytes(), e.file_type());
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
/// names (by path), with `threads` walking threads.
pub fn list(roots: &[PathBuf], threads: usize, skip: Option<Skip>) -> Listings {
    static WALKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let id = WALKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut walk = WalkBuilder::new(&roots[0]);
    for root in &roots[1..] {
        walk = walk.add_root(root);
    }
    walk = walk
        .threads(threads)
        .min_depth(1)
        .lenient(true)
        .filter(Some(Arc::new(Stamper { skip, walk: id })));
    let mut all = Listings::default();
    walk.visit(
        || Collect {
            listings: Listings::default(),
            walk: id,
        },
        |c| {
            if all.is_empty() {
                all = c.listings;
                return;
            }
            all.reserve(c.listings.len());
            for (path, listing) in c.listings {
                match all.get_mut(&path) {
                    None => {
                        all.insert(path, listing);
                    }
                    Some(l) => {
                        // One directory in chunks read by several threads.
                        for (name, t) in listing.entries() {
                            l.push(name, t);
                        }
                        l.stamp = l.stamp.or(listing.stamp);
                    }
                }
            }
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

/// What an index is brought up to date from: the old index, the rows
/// listed again (by path) and the unchanged directories below listed
/// ones (by path: the listing pruned them).
pub struct Old<'a> {
    pub index: Index<'a>,
    pub relisted: HashMap<u32, Vec<u8>>,
    pub kept: Arc<HashMap<Vec<u8>, u32>>,
}

/// Write the directories breadth-first from `root` into `w`: listed ones
/// from `listings`, kept ones from `old`.
pub fn write(mut w: IndexWriter, listings: &Listings, root: Source, old: Option<&Old<'_>>) -> Vec<u8> {
    let empty = Listing::default();
    let mut queue = std::collections::VecDeque::new();
    queue.push_back(root);
    while let Some(source) = queue.pop_front() {
        match source {
            Source::Listed(path) => {
                let l = listings.get(&path).unwrap_or(&empty);
                let stamp = l.stamp.unwrap_or_else(|| stamp_of(&path));
                w.add_dir(stamp, ignore_bits(l.entries().map(|e| e.0)));
                for (name, t) in l.entries() {
                    w.add_entry(name, t);
                    if t == FileType::Dir {
                        let mut child = path.clone();
                        if !child.ends_with(b"/") {
                            child.push(b'/');
                        }
                        child.extend_from_slice(name);
                        queue.push_back(match old.and_then(|o| o.kept.get(&child)) {
                            Some(&row) => Source::Kept(row),
                            None => Source::Listed(child),
                        });
                    }
                }
            }
            Source::Kept(row) => {
                let Some(old) = old else { continue };
                let dir = old.index.dir(row);
                w.add_dir(dir.stamp(), dir.ignore_files());
                for (id, t, child) in dir.raw_entries() {
                    w.add_entry_id(id, t);
                    if t == FileType::Dir {
                        queue.push_back(match child {
                            Some(c) => match old.relisted.get(&c) {
                                Some(path) => Source::Listed(path.clone()),
                                None => Source::Kept(c),
                            },
                            // Not a row (a damaged index): read it afresh next time.
                            None => Source::Listed(Vec::new()),
                        });
                    }
                }
            }
        }
    }
    w.finish()
}

/// Directories, entries and bytes of names in `listings`.
pub fn sizes(listings: &Listings) -> (usize, usize, usize) {
    listings.values().fold((listings.len(), 0, 0), |(d, e, n), l| {
        (d, e + l.entries.len(), n + l.names.len())
    })
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Build the index of `root` (a real path) with `threads` walking threads.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// # std::fs::create_dir(dir.path().join("src")).unwrap();
/// # std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
/// let root = dir.path().canonicalize().unwrap();
/// let bytes = fnd_index::build::build(&root, 2);
/// let index = fnd_index::format::Index::parse(&bytes).unwrap();
/// assert_eq!(index.entry_count(), 2);
/// ```
pub fn build(root: &Path, threads: usize) -> Vec<u8> {
    let listings = list(&[root.to_path_buf()], threads, None);
    let (dirs, entries, names) = sizes(&listings);
    let root = root.as_os_str().as_bytes();
    let mut w = IndexWriter::new(root, now());
    w.reserve(dirs, entries, names);
    write(w, &listings, Source::Listed(root.to_vec()), None)
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
            let bytes = build(&root, 2);
            let index = Index::parse(&bytes).unwrap();
            for d in ["", "a", "a/empty", "b", "c", "c/d", "c/d/e"] {
                let row = index.find(d.as_bytes()).unwrap();
                let real = stamp_of(root.join(d).as_os_str().as_bytes());
                assert_eq!(index.dir(row).stamp(), real, "{d}");
            }
        }
    }
}
