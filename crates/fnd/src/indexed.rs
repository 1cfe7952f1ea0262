//! Searching an index instead of the tree (`--indexed`), and building one
//! (`--build-index`).
//!
//! The index lists every entry (as `-u` would walk them); a query replays
//! it through the same judge as the walk ([`Finder`]: ignore rules, the
//! name, the filters) and hands results to the same [`Emit`], so formats,
//! colours and commands cannot tell. Ignore files are read from the tree
//! (only in the directories the index says hold one); filters that need
//! metadata stat the candidate, never a stored value. When the index
//! cannot answer exactly (no index, a damaged one, options it does not
//! replay), one line on stderr says so, where it matters, and the caller
//! walks the tree instead.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fnd_index::format::Index;
use fnd_index::store::{self, Loaded, OpenError};
use fnd_index::{build, refresh};
use fnd_walk::ignore::Level;
use fnd_walk::meta::stat_path;
use fnd_walk::{DirHook, DirInfo, FileType, Metadata, Order, RawEntry};

use crate::early::sort_key;
use crate::error::{print_error, Outcome};
use crate::filter::is_hidden;
use crate::found::{Emit, Found};
use crate::named;
use crate::search::{Finder, Search};

/// How fresh an answer must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freshness {
    /// Check every directory's stamp first, re-read what changed.
    Checked,
    /// Answer from the index as it is; say how old it is past an hour.
    StaleOk,
}

/// Where the index is: a given file, or the cache's file for the root.
fn locate(real: &Path, file: Option<&Path>) -> Option<(PathBuf, PathBuf)> {
    if let Some(file) = file {
        return Some((file.to_path_buf(), PathBuf::new()));
    }
    let cache = store::cache_dir()?;
    real.ancestors()
        .map(|a| (store::file_for(&cache, a), a.to_path_buf()))
        .find(|(f, _)| f.exists())
}

fn note(msg: impl std::fmt::Display) {
    eprintln!("[fnd]: {msg}");
}

/// Build the index of each of `roots` (or the one at `file`); false when one failed.
pub fn build_indexes(roots: &[PathBuf], file: Option<&Path>, threads: usize) -> Outcome {
    if file.is_some() && roots.len() > 1 {
        print_error("--index-file holds the index of one root");
        return Outcome::Error;
    }
    let mut ok = true;
    for root in roots {
        let real = match std::fs::canonicalize(root) {
            Ok(r) if r.is_dir() => r,
            Ok(_) => {
                print_error(format_args!("'{}' is not a directory", root.display()));
                ok = false;
                continue;
            }
            Err(e) => {
                print_error(format_args!("'{}': {e}", root.display()));
                ok = false;
                continue;
            }
        };
        let target = match file {
            Some(f) => f.to_path_buf(),
            None => match store::cache_dir() {
                Some(dir) => store::file_for(&dir, &real),
                None => {
                    print_error("no cache folder: set XDG_CACHE_HOME or HOME, or give --index-file");
                    return Outcome::Error;
                }
            },
        };
        let built = build::build_reporting(&real, threads)
            .and_then(|(mut w, unread)| store::write_index(&target, &mut w).map(|()| unread));
        match built {
            Err(e) => {
                print_error(format_args!("could not write the index '{}': {e}", target.display()));
                ok = false;
            }
            // Written all the same: a checked query reads these again.
            Ok(Some(unread)) => {
                print_error(format_args!(
                    "the index of '{}' lacks what {} could not be read: {}",
                    real.display(),
                    match unread.count {
                        1 => "1 directory".to_string(),
                        n => format!("{n} directories"),
                    },
                    unread.first
                ));
                ok = false;
            }
            Ok(None) => {}
        }
    }
    if ok {
        Outcome::Success
    } else {
        Outcome::Error
    }
}

/// An entry of the index, as the writers see a result.
struct Indexed<'a> {
    prefix: &'a [u8],
    name: &'a [u8],
    file_type: FileType,
    depth: usize,
}

impl Indexed<'_> {
    fn path(&self) -> PathBuf {
        PathBuf::from(OsStr::from_bytes(&[self.prefix, self.name].concat()))
    }
}

impl Found for Indexed<'_> {
    fn name_bytes(&self) -> &[u8] {
        self.name
    }

    fn file_type(&self) -> FileType {
        self.file_type
    }

    fn target_type(&self) -> FileType {
        self.file_type
    }

    fn depth(&self) -> usize {
        self.depth
    }

    fn metadata(&self) -> io::Result<Metadata> {
        stat_path(&self.path(), false)
    }

    fn metadata_follow(&self) -> io::Result<Metadata> {
        stat_path(&self.path(), true)
    }

    fn write_path(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.prefix);
        out.extend_from_slice(self.name);
    }
}

/// A result held back for fd's sorted first results.
struct Held {
    prefix: Vec<u8>,
    name: Vec<u8>,
    file_type: FileType,
    depth: usize,
}

/// Fd holds back up to this many results, and prints them sorted when the search is over by then.
const HOLD_MAX: usize = 1000;

/// Results on their way to the writer: counted, held back at first.
struct Out<W> {
    out: W,
    held: Option<Vec<Held>>,
    left: Option<usize>,
    quiet: bool,
    found: bool,
}

impl<W: Emit> Out<W> {
    /// False when the search should stop.
    fn emit(&mut self, e: &Indexed<'_>) -> bool {
        self.found = true;
        if self.quiet {
            return false;
        }
        if let Some(left) = &mut self.left {
            if *left == 0 {
                return false;
            }
            *left -= 1;
        }
        if let Some(held) = &mut self.held {
            held.push(Held {
                prefix: e.prefix.to_vec(),
                name: e.name.to_vec(),
                file_type: e.file_type,
                depth: e.depth,
            });
            if held.len() <= HOLD_MAX {
                return true;
            }
            let held = self.held.take().unwrap_or_default();
            if !self.emit_held(held) {
                return false;
            }
            return self.left != Some(0);
        }
        self.out.emit(e, e.prefix) && self.left != Some(0)
    }

    fn emit_held(&mut self, held: Vec<Held>) -> bool {
        held.iter().all(|h| {
            let e = Indexed {
                prefix: &h.prefix,
                name: &h.name,
                file_type: h.file_type,
                depth: h.depth,
            };
            self.out.emit(&e, &h.prefix)
        })
    }

    fn finish(mut self) {
        if let Some(mut held) = self.held.take() {
            held.sort_by_cached_key(|h| sort_key(&[&h.prefix[..], &h.name].concat()));
            self.emit_held(held);
        }
        self.out.flush();
    }
}

/// The index's answer for one search root, replayed through `finder`
/// (`names`: whether each name id matches, when known).
#[allow(clippy::too_many_arguments)]
fn replay<W: Emit>(
    index: &Index<'_>,
    start: u32,
    root: &[u8],
    search: &Search,
    finder: Option<&Finder>,
    names: Option<&[bool]>,
    placeholder: BorrowedFd<'_>,
    out: &mut Out<W>,
) -> bool {
    // (directory row, its path as spelt, its depth, its ignore rules)
    type Pending = (u32, Vec<u8>, usize, Option<Arc<Level>>);
    let mut stack: Vec<Pending> = vec![(start, root.to_vec(), 0, None)];
    let probes: &[Vec<u8>] = finder.map_or(&[], |f| f.probe_names());
    let mut present = vec![false; probes.len()];
    let mut prefix = Vec::new();
    while let Some((row, path, depth, parent_state)) = stack.pop() {
        let dir = index.dir(row);
        prefix.clear();
        prefix.extend_from_slice(&path);
        if !prefix.ends_with(b"/") {
            prefix.push(b'/');
        }
        let child_depth = depth + 1;
        // The directory's own descriptor, opened only when ignore files or
        // filters need to read inside it.
        let mut opened: Option<OwnedFd> = None;
        let open = |opened: &mut Option<OwnedFd>| -> bool {
            if opened.is_none() {
                *opened = std::fs::File::open(OsStr::from_bytes(&path)).ok().map(OwnedFd::from);
            }
            opened.is_some()
        };
        let mut state = None;
        if let Some(f) = finder {
            for (p, probe) in present.iter_mut().zip(probes) {
                *p = dir.entries().any(|e| e.name == &probe[..]);
            }
            if present.iter().any(|&p| p) && !open(&mut opened) {
                continue; // unreadable now: the walk would skip it too
            }
            let fd = opened.as_ref().map_or(placeholder, |o| o.as_fd());
            let info = DirInfo {
                path: &path,
                depth,
                fd,
                present: Some(&present),
            };
            state = f.enter(&info, parent_state.as_ref());
            if f.selection.reads_entries() {
                let any = dir.entries().any(|e| match names {
                    Some(m) => m[e.name_id as usize],
                    None => f.selection.name_matches(&RawEntry {
                        name: e.name,
                        parent_prefix: &prefix,
                        depth: child_depth,
                        file_type: e.file_type,
                        target_type: e.file_type,
                        dir_fd: placeholder,
                    }),
                });
                if any && !open(&mut opened) {
                    continue;
                }
            }
        }
        let fd = opened.as_ref().map_or(placeholder, |o| o.as_fd());
        let descend_ok = search.max_depth.is_none_or(|max| child_depth < max);
        let mut subdirs = Vec::new();
        for e in dir.entries() {
            if search.skip_hidden && is_hidden(e.name) {
                continue;
            }
            let decision = match finder {
                Some(f) => {
                    let raw = RawEntry {
                        name: e.name,
                        parent_prefix: &prefix,
                        depth: child_depth,
                        file_type: e.file_type,
                        target_type: e.file_type,
                        dir_fd: fd,
                    };
                    f.decide_named(state.as_deref(), &raw, || match names {
                        Some(m) => m[e.name_id as usize],
                        None => f.selection.name_matches(&raw),
                    })
                }
                None => fnd_walk::Decision::KEEP,
            };
            if decision.emit && child_depth >= search.min_depth {
                let found = Indexed {
                    prefix: &prefix,
                    name: e.name,
                    file_type: e.file_type,
                    depth: child_depth,
                };
                if !out.emit(&found) {
                    return false;
                }
            }
            if decision.descend && descend_ok {
                if let Some(child) = e.dir {
                    let mut p = prefix.clone();
                    p.extend_from_slice(e.name);
                    subdirs.push((child, p, child_depth, state.clone()));
                }
            }
        }
        // Depth first, the first name first.
        stack.extend(subdirs.into_iter().rev());
    }
    true
}

/// More results than this are found by a replay of the tree: each costs
/// a few lookups of its parents.
const MAX_HITS: usize = 4096;

/// The entries whose names match, when a search judges an entry by its
/// name and listed type alone (no ignore rules, no `--prune`, no filter
/// that reads the entry) and they are few: then only they need be looked
/// at, each placed in the tree through its parents, not every entry of the
/// index (a scan of a million entries took 100 ms).
fn few_hits(index: &Index<'_>, finder: Option<&Finder>, names: Option<&[bool]>) -> Option<Vec<usize>> {
    let (f, matched) = (finder?, names?);
    if f.ignore.is_some() || f.prune || f.selection.reads_entries() {
        return None;
    }
    let mut hits = Vec::new();
    let ids: Vec<u32> = (0..matched.len() as u32)
        .filter(|&i| matched[i as usize])
        .take(3)
        .collect();
    if let [id] = ids[..] {
        // One name (a rare one, usually): a scan of the entries' table.
        return index.entries_named(id, MAX_HITS);
    }
    for (e, id) in index.entry_name_ids().enumerate() {
        if matched[id as usize] {
            if hits.len() == MAX_HITS {
                return None;
            }
            hits.push(e);
        }
    }
    Some(hits)
}

/// A directory of the index as seen from a search root: its path as
/// spelt, with a `/`, and its depth; `None` when it is not below the root,
/// or hidden when hidden entries are skipped.
fn placed(index: &Index<'_>, row: u32, start: u32, root: &[u8], skip_hidden: bool) -> Option<(Vec<u8>, usize)> {
    let mut names = Vec::new();
    let mut r = row;
    while r != start {
        let (parent, entry) = index.parent(r)?;
        let name = index.name(index.entry(entry).0);
        if skip_hidden && is_hidden(name) {
            return None;
        }
        names.push(name);
        r = parent;
    }
    let mut prefix = root.to_vec();
    for name in names.iter().rev().copied().chain([&b""[..]]) {
        if !prefix.ends_with(b"/") {
            prefix.push(b'/');
        }
        prefix.extend_from_slice(name);
    }
    Some((prefix, names.len()))
}

/// The answer for one search root from the entries `hits` alone (see
/// [`few_hits`]), as [`replay`] would give it.
#[allow(clippy::too_many_arguments)]
fn replay_hits<W: Emit>(
    index: &Index<'_>,
    hits: &[usize],
    start: u32,
    root: &[u8],
    search: &Search,
    finder: &Finder,
    placeholder: BorrowedFd<'_>,
    out: &mut Out<W>,
) -> bool {
    let mut dirs = std::collections::HashMap::new();
    for &e in hits {
        let (id, file_type) = index.entry(e);
        let name = index.name(id);
        if search.skip_hidden && is_hidden(name) {
            continue;
        }
        let row = index.dir_of_entry(e);
        let Some((prefix, dir_depth)) = dirs
            .entry(row)
            .or_insert_with(|| placed(index, row, start, root, search.skip_hidden))
        else {
            continue;
        };
        let depth = *dir_depth + 1;
        // Entries of the root's directory are read whatever the depth; the
        // others only when their directory is above the greatest depth.
        if depth < search.min_depth || (depth > 1 && search.max_depth.is_some_and(|max| depth > max)) {
            continue;
        }
        let raw = RawEntry {
            name,
            parent_prefix: prefix,
            depth,
            file_type,
            target_type: file_type,
            dir_fd: placeholder,
        };
        if finder.decide_named(None, &raw, || true).emit {
            let found = Indexed {
                prefix,
                name,
                file_type,
                depth,
            };
            if !out.emit(&found) {
                return false;
            }
        }
    }
    true
}

/// Whether the index can replay this search exactly; options that change
/// what is listed or in what order are left to the walk.
fn replayable(search: &Search) -> bool {
    !search.follow
        && !search.one_file_system
        && search.sort.is_none()
        && search.sort_by_metadata.is_none()
        && search.order == Order::Parallel
}

/// Answer `search` from an index; `None` when the caller must walk the
/// tree (after a line on stderr saying why, where that matters).
pub fn run<W: Emit + Send>(
    search: Search,
    freshness: Freshness,
    file: Option<&Path>,
    writer: impl Fn() -> W + Sync,
) -> Result<Outcome, Box<Search>> {
    run_boxed(Box::new(search), freshness, file, writer)
}

fn run_boxed<W: Emit + Send>(
    search: Box<Search>,
    freshness: Freshness,
    file: Option<&Path>,
    writer: impl Fn() -> W + Sync,
) -> Result<Outcome, Box<Search>> {
    if !replayable(&search) {
        return Err(search);
    }
    let roots = search.walked_roots();
    let Some(first) = roots.first() else {
        return Err(search);
    };
    let Ok(first_real) = std::fs::canonicalize(first) else {
        return Err(search);
    };
    let Some((file, _)) = locate(&first_real, file) else {
        note(format_args!(
            "no index of '{}'; searching the tree (build one with --build-index)",
            first.display()
        ));
        return Err(search);
    };
    let loaded = match Loaded::open(&file) {
        Ok(l) => l,
        Err(OpenError::Missing) => {
            note(format_args!("no index at '{}'; searching the tree", file.display()));
            return Err(search);
        }
        Err(e @ OpenError::Untrusted(_)) => {
            note(format_args!("{e}; searching the tree"));
            return Err(search);
        }
        Err(e) => {
            note(format_args!("index '{}': {e}; searching the tree", file.display()));
            return Err(search);
        }
    };
    // The index answered from: the file as read, or the one a refresh
    // saved (the old one dropped first), or, when it could not be saved,
    // made in memory.
    let loaded = match freshness {
        Freshness::StaleOk => {
            let index = loaded.index();
            let age = build::now() - index.built_at();
            if age > 3600 {
                note(format_args!(
                    "the index of '{}' is {} h {} min old",
                    OsStr::from_bytes(index.root()).to_string_lossy(),
                    age / 3600,
                    age % 3600 / 60
                ));
            }
            loaded
        }
        Freshness::Checked => match refresh::refresh(&loaded.index(), search.threads) {
            Ok(refresh::Refresh { writer: None, .. }) => loaded,
            Ok(refresh::Refresh {
                writer: Some(writer), ..
            }) => {
                drop(loaded);
                match store::save(&file, writer) {
                    Ok(saved) => saved,
                    Err(e) => {
                        note(format_args!("index '{}': {e}; searching the tree", file.display()));
                        return Err(search);
                    }
                }
            }
            Err(e) => {
                note(format_args!("could not check the index: {e}; searching the tree"));
                return Err(search);
            }
        },
    };
    let index = loaded.index();
    // Every root must lie under the index's root, in a directory it read.
    let index_root = Path::new(OsStr::from_bytes(index.root()));
    let mut starts = Vec::new();
    for root in &roots {
        let start = std::fs::canonicalize(root)
            .ok()
            .and_then(|real| real.strip_prefix(index_root).ok().map(Path::to_path_buf))
            .and_then(|rel| index.find(rel.as_os_str().as_bytes()));
        match start {
            Some(row) => starts.push(row),
            None => {
                note(format_args!(
                    "'{}' is not in the index of '{}'; searching the tree",
                    root.display(),
                    index_root.display()
                ));
                return Err(search);
            }
        }
    }
    let Ok(placeholder) = std::fs::File::open(index_root) else {
        return Err(search);
    };
    let mut search = search;
    let ignore = search.ignore.take();
    let needs_finder = ignore.is_some() || !search.selection.selects_all() || search.prune;
    let finder = needs_finder.then(|| Finder {
        // Hidden entries are skipped below, before the finder sees them.
        skip_hidden: false,
        ignore,
        selection: search.selection.clone(),
        min_depth: search.min_depth,
        prune: search.prune,
    });
    let mut out = Out {
        out: writer(),
        held: search.hold_early.map(|_| Vec::new()),
        left: search.max_results,
        quiet: search.quiet,
        found: false,
    };
    let names = finder
        .as_ref()
        .and_then(|f| named::matching_names(&index, &f.selection));
    let hits = few_hits(&index, finder.as_ref(), names.as_deref());
    for (root, start) in roots.iter().zip(starts) {
        let root = root.as_os_str().as_bytes();
        let go_on = match (&hits, &finder) {
            (Some(hits), Some(f)) => replay_hits(&index, hits, start, root, &search, f, placeholder.as_fd(), &mut out),
            _ => replay(
                &index,
                start,
                root,
                &search,
                finder.as_ref(),
                names.as_deref(),
                placeholder.as_fd(),
                &mut out,
            ),
        };
        if !go_on {
            break;
        }
    }
    let found = out.found;
    out.finish();
    Ok(if search.quiet {
        Outcome::HasResults(found)
    } else {
        Outcome::Success
    })
}
