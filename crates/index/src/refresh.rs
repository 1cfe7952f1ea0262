//! Bringing an index up to date: one `stat` per indexed directory, on
//! several threads, no `getdents64`; the directories whose stamp changed
//! are read again with the walk (with any new subdirectories), the rest
//! is copied from the old index.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fnd_walk::meta::stat_path;
use rustc_hash::FxHashMap;

use crate::build::{fill, list, now, Old, Skip, Source};
use crate::format::{Index, IndexWriter, Stamp};

/// The path of directory `row`, from its parents' names.
fn path_of(index: &Index<'_>, row: u32) -> Vec<u8> {
    let mut names = Vec::new();
    let mut r = row;
    while let Some((parent, entry)) = index.parent(r) {
        names.push(index.name(index.entry(entry).0));
        r = parent;
    }
    let mut path = index.root().to_vec();
    for name in names.iter().rev() {
        push_name(&mut path, name);
    }
    path
}

/// `path` followed by `/name` (no second `/` after the root's).
fn push_name(path: &mut Vec<u8>, name: &[u8]) {
    if !path.ends_with(b"/") {
        path.push(b'/');
    }
    path.extend_from_slice(name);
}

/// Which rows' stamps differ from the directory now at their path.
///
/// Each directory is stat-ed relative to its parent, open with `O_PATH`
/// (a one-component lookup): by full path, the kernel's path walk took
/// three quarters of a refresh of 140k directories (940 ms against a
/// 670 ms live walk). The subtrees two levels down are shared between the
/// threads; the few directories above them are stat-ed by path.
fn changed_rows(index: &Index<'_>, threads: usize) -> Vec<bool> {
    const CUT: usize = 2;
    let threads = threads.clamp(1, 64);
    let differs = |row: u32, m: io::Result<fnd_walk::Metadata>| {
        m.map_or(true, |m| !m.is_dir() || Stamp::from(&m) != index.dir(row).stamp())
    };
    let n = index.dir_count();
    // Depth of each row down to the cut, their paths, the rows at the cut.
    const UNSEEN: u8 = u8::MAX;
    let mut depth = vec![UNSEEN; n];
    depth[0] = 0;
    let mut paths: FxHashMap<u32, Vec<u8>> = FxHashMap::default();
    paths.insert(0, index.root().to_vec());
    let mut tasks = Vec::new();
    let mut changed = vec![false; n];
    for row in 0..n as u32 {
        // A parent's row is below its children's: their depth is known.
        let d = depth[row as usize] as usize;
        if d > CUT {
            continue;
        }
        let path = paths.remove(&row).unwrap_or_default();
        changed[row as usize] = differs(row, stat_path(Path::new(OsStr::from_bytes(&path)), false));
        if d == CUT {
            tasks.push((row, path));
            continue;
        }
        for e in index.dir(row).entries() {
            if let Some(c) = e.dir {
                depth[c as usize] = d as u8 + 1;
                let mut p = path.clone();
                if !p.ends_with(b"/") {
                    p.push(b'/');
                }
                p.extend_from_slice(e.name);
                paths.insert(c, p);
            }
        }
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let found: Vec<Vec<u32>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let t = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((top, path)) = tasks.get(t) else { break };
                        check_below(index, *top, path, &differs, &mut out);
                    }
                    out
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    for row in found.into_iter().flatten() {
        changed[row as usize] = true;
    }
    changed
}

/// Check every directory below `top`, each relative to an open
/// ancestor: its parent, or one up to three levels up when those between
/// have one or two subdirectories. A descriptor for each directory with
/// subdirectories (an `openat` and a `close` besides their `fstatat`s) was
/// a third of the system time of a check of the `src` tree; half of those
/// directories have a single subdirectory. (Allowing one level between
/// left 42k of million's 81k opened, two levels 27k.)
fn check_below(
    index: &Index<'_>,
    top: u32,
    path: &[u8],
    differs: &impl Fn(u32, io::Result<fnd_walk::Metadata>) -> bool,
    out: &mut Vec<u32>,
) {
    use rustix::fs::{Mode, OFlags, CWD};
    use std::rc::Rc;
    const FEW: usize = 2;
    const LEVELS: usize = 3;
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let subdirs = |row: u32| index.dir(row).children().len();
    if subdirs(top) == 0 {
        return;
    }
    let Ok(fd) = rustix::fs::openat(CWD, path, flags, Mode::empty()) else {
        // Gone or unreadable: its parent's stamp says so, or it is re-read.
        return;
    };
    // (row, an open ancestor, the row's path from it (empty when it is the
    // row) and how many names that path has)
    let mut stack: Vec<(u32, Rc<rustix::fd::OwnedFd>, Vec<u8>, usize)> = vec![(top, Rc::new(fd), Vec::new(), 0)];
    while let Some((row, fd, rel, levels)) = stack.pop() {
        for (id, _, child) in index.dir(row).raw_entries() {
            let Some(child) = child else { continue };
            let mut child_rel = rel.clone();
            if !child_rel.is_empty() {
                child_rel.push(b'/');
            }
            child_rel.extend_from_slice(index.name(id));
            let m = fnd_walk::meta::stat_at(std::os::fd::AsFd::as_fd(&*fd), &child_rel, false);
            if differs(child, m) {
                out.push(child);
            }
            match subdirs(child) {
                0 => {}
                n if n <= FEW && levels + 1 < LEVELS => stack.push((child, fd.clone(), child_rel, levels + 1)),
                _ => match rustix::fs::openat(&*fd, &child_rel, flags, Mode::empty()) {
                    Ok(cfd) => stack.push((child, Rc::new(cfd), Vec::new(), 0)),
                    // Its subdirectories cannot be checked: read them again.
                    Err(_) => mark_all_below(index, child, out),
                },
            }
        }
    }
}

fn mark_all_below(index: &Index<'_>, row: u32, out: &mut Vec<u32>) {
    let mut stack = vec![row];
    while let Some(r) = stack.pop() {
        for c in index.dir(r).entries().filter_map(|e| e.dir) {
            out.push(c);
            stack.push(c);
        }
    }
}

/// How a refresh went.
pub struct Refresh {
    /// The new index, to be written ([`IndexWriter::finish_to`], or
    /// [`store::save`](crate::store::save)); `None` when nothing changed.
    pub writer: Option<IndexWriter>,
    /// Directories whose stamp had changed.
    pub changed: usize,
}

/// Check every directory of `index` and rebuild what changed, with
/// `threads` threads. An error when the root itself is gone.
///
/// `threads`: 0 for one per core.
pub fn refresh(index: &Index<'_>, threads: usize) -> io::Result<Refresh> {
    let threads = if threads == 0 { fnd_walk::cores() } else { threads };
    let root = Path::new(OsStr::from_bytes(index.root()));
    if !stat_path(root, true)?.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            "the indexed root is not a directory",
        ));
    }
    let changed = changed_rows(index, threads);
    let n_changed = changed.iter().filter(|&&c| c).count();
    if n_changed == 0 {
        return Ok(Refresh {
            writer: None,
            changed: 0,
        });
    }
    // Walk from each changed directory whose parent is not read again
    // anyway; prune there the unchanged subdirectories, kept as they are.
    let mut roots = Vec::new();
    let mut relisted = FxHashMap::default();
    let mut kept = FxHashMap::default();
    if changed[0] {
        roots.push(PathBuf::from(OsStr::from_bytes(index.root())));
    }
    for row in (0..index.dir_count() as u32).filter(|&r| changed[r as usize]) {
        // Its children's paths from its own (a path from the parents of
        // each child was 6% of a refresh after 1% of million changed).
        let path = path_of(index, row);
        for e in index.dir(row).entries() {
            if let Some(child) = e.dir.filter(|&c| !changed[c as usize]) {
                let mut child_path = path.clone();
                push_name(&mut child_path, e.name);
                kept.insert(child_path, child);
            }
        }
        if row != 0 && !index.parent(row).is_some_and(|(p, _)| changed[p as usize]) {
            roots.push(PathBuf::from(OsStr::from_bytes(&path)));
            relisted.insert(row, path);
        }
    }
    let kept = Arc::new(kept);
    let skip = {
        let kept = kept.clone();
        Arc::new(move |p: &[u8]| kept.contains_key(p)) as Skip
    };
    let listed = list(&roots, Some(root), threads, Some(skip));
    let old = Old {
        index: *index,
        relisted,
        kept,
    };
    let root = if changed[0] {
        Source::Listed(index.root().to_vec())
    } else {
        Source::Kept(0)
    };
    let mut w = IndexWriter::with_names_of(index, now());
    w.reserve(index.dir_count(), index.entry_count(), 0);
    let ids: Vec<u32> = listed.names.iter().map(|n| w.intern(n)).collect();
    let writer = fill(w, &listed, Some(&ids), root, Some(&old));
    Ok(Refresh {
        writer: Some(writer),
        changed: n_changed,
    })
}
