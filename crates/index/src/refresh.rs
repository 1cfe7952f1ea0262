//! Bringing an index up to date: one `stat` per indexed directory, on
//! several threads, no `getdents64`; the directories whose stamp changed
//! are read again with the walk (with any new subdirectories), the rest
//! is copied from the old index.

use std::cell::{Cell, RefCell};
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use fnd_walk::meta::{stat_path, stat_synced};
use rustc_hash::FxHashMap;

use crate::build::{fill, list, now, push_name, Old, Skip, Source};
use crate::format::{Index, IndexWriter, RowStamp, Stamp};

/// A directory whose stamp differs from the directory now at its path:
/// its row, its parent's row and its path, known to the check as it goes
/// (rebuilt from the parents' names afterwards, the paths of 1% of
/// million's directories were 6.5 ms of a 170 ms refresh).
struct Changed {
    row: u32,
    parent: Option<u32>,
    path: Vec<u8>,
}

/// Which rows' stamps differ from the directory now at their path, as
/// the file system's server has it ([`stat_synced`]: NFS's attribute
/// cache would hide another client's change for up to a minute).
///
/// Each directory is stat-ed relative to its parent, open with `O_PATH`
/// (a one-component lookup): by full path, the kernel's path walk took
/// three quarters of a refresh of 140k directories (940 ms against a
/// 670 ms live walk). The threads share the tree as [`Task`]s of about
/// equal size, largest first (cut two levels down whatever lay below, a
/// check of /usr kept its two threads busy 1.37 cores' worth and took
/// 0.28x of the live walk; 0.21x now); the few directories above them
/// are stat-ed by path.
fn changed_rows(index: &Index<'_>, threads: usize) -> Vec<Changed> {
    let threads = threads.clamp(1, 64);
    let differs = |row: u32, m: io::Result<fnd_walk::Metadata>| {
        m.map_or(true, |m| {
            !m.is_dir() || RowStamp::from(Stamp::from(&m)) != index.dir(row).stamp()
        })
    };
    let root = index.root().to_vec();
    // The root and the lone subdirectories the cut went through, stat-ed
    // by path on the threads with the tasks (one after another on the
    // calling thread, 420 of them held a check through FUSE at one
    // request in flight for its first second).
    let mut by_path = vec![(0, None, root.clone())];
    let tasks = tasks(index, threads, root, &mut |row, parent, path: &[u8]| {
        by_path.push((row, Some(parent), path.to_vec()));
    });
    let next_by_path = std::sync::atomic::AtomicUsize::new(0);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut out = Vec::new();
        loop {
            let t = next_by_path.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some((row, parent, path)) = by_path.get(t) else {
                break;
            };
            if differs(*row, stat_synced(rustix::fs::CWD, path)) {
                out.push(Changed {
                    row: *row,
                    parent: *parent,
                    path: path.clone(),
                });
            }
        }
        loop {
            let t = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(task) = tasks.get(t) else { break };
            check_below(index, task, &differs, &mut out);
        }
        out
    };
    // The calling thread checks too, with as many more as start (where
    // the system refuses threads, a pids limit or `ulimit -u`, the check
    // goes on with those it has, or on this thread alone).
    let found: Vec<Vec<Changed>> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..threads)
            .map_while(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
            .collect();
        let mine = work();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .chain([mine])
            .collect()
    });
    let mut changed: Vec<Changed> = found.into_iter().flatten().collect();
    // In row order (the root first), whichever thread found them.
    changed.sort_unstable_by_key(|c| c.row);
    changed
}

/// A part of a check for one thread: the subtrees of some subdirectories
/// of one directory, each stat-ed from it.
struct Task {
    parent: u32,
    /// The parent's path.
    path: Arc<Vec<u8>>,
    /// The subdirectories' rows (a row's subdirectories have rows in a row).
    children: std::ops::Range<u32>,
    /// Directories in their subtrees.
    size: u64,
    /// The parent's depth below the root.
    depth: usize,
}

/// The check of every directory below the root, cut into tasks of about
/// `1/(8 × threads)` of the directories each, largest first: a task
/// larger than that is halved (its subdirectories split where their sizes
/// add up to half), or, with one subdirectory, that one is to be
/// `checked_by_path` and its own subdirectories become the task. Single
/// subdirectories deeper than 32 levels stay whole: a chain of them is no
/// work to share, and each stat by path walks the whole path. (At 8
/// levels, chains in src's 22 kept a check through FUSE, 64 threads, at
/// one or two requests in flight for its last second: 1.69 s, 0.59 s at
/// 32; a local check of src 1.02x, of the 2,000-level `deep` 1.04x.)
fn tasks(
    index: &Index<'_>,
    threads: usize,
    root: Vec<u8>,
    checked_by_path: &mut impl FnMut(u32, u32, &[u8]),
) -> Vec<Task> {
    const DEEPEST: usize = 32;
    let n = index.dir_count();
    let sizes = subtree_sizes(index);
    let size_of = |r: std::ops::Range<u32>| r.map(|c| sizes[c as usize]).sum::<u64>();
    let target = (n as u64).div_ceil(8 * threads as u64).max(1);
    let whole = |row: u32, path: Arc<Vec<u8>>, depth: usize| {
        let children = index.dir(row).children();
        Task {
            parent: row,
            path,
            size: size_of(children.clone()),
            children,
            depth,
        }
    };
    let mut open = vec![whole(0, Arc::new(root), 0)];
    let mut done = Vec::new();
    while let Some(task) = open.pop() {
        let (start, end) = (task.children.start, task.children.end);
        if task.size <= target || end <= start || (end - start == 1 && task.depth >= DEEPEST) {
            done.push(task);
            continue;
        }
        if end - start > 1 {
            // Where the first half's sizes reach half the task's.
            let mut sum = 0;
            let mut cut = start + 1;
            for c in start..end - 1 {
                sum += sizes[c as usize];
                cut = c + 1;
                if 2 * sum >= task.size {
                    break;
                }
            }
            for children in [start..cut, cut..end] {
                open.push(Task {
                    size: size_of(children.clone()),
                    children,
                    path: task.path.clone(),
                    ..task
                });
            }
            continue;
        }
        let Some((_, entry)) = index.parent(start) else {
            done.push(task);
            continue;
        };
        let mut path = task.path.to_vec();
        push_name(&mut path, index.name(index.entry(entry).0));
        checked_by_path(start, task.parent, &path);
        open.push(whole(start, Arc::new(path), task.depth + 1));
    }
    done.retain(|t| !t.children.is_empty());
    done.sort_by_key(|t| std::cmp::Reverse(t.size));
    done
}

/// Directories in each row's subtree, itself included (rows are
/// breadth-first: children come after their parent).
fn subtree_sizes(index: &Index<'_>) -> Vec<u64> {
    let n = index.dir_count();
    let mut sizes = vec![1u64; n];
    for r in (0..n).rev() {
        let below: u64 = index
            .dir(r as u32)
            .children()
            .filter(|&c| c as usize > r && (c as usize) < n)
            .map(|c| sizes[c as usize])
            .sum();
        sizes[r] += below;
    }
    sizes
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
    task: &Task,
    differs: &impl Fn(u32, io::Result<fnd_walk::Metadata>) -> bool,
    out: &mut Vec<Changed>,
) {
    use rustix::fs::{Mode, OFlags, CWD};
    const FEW: usize = 2;
    const LEVELS: usize = 3;
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let subdirs = |row: u32| index.dir(row).children().len();
    let Ok(fd) = rustix::fs::openat(CWD, task.path.as_slice(), flags, Mode::empty()) else {
        // Gone or unreadable: its own stamp says so, or it is re-read.
        return;
    };
    // (row, an open ancestor, the row's path from it (empty when it is the
    // row) and how many names that path has)
    let top = Opened::new(fd, None, task.path.to_vec());
    let mut stack: Vec<(u32, Rc<Opened>, Vec<u8>, usize)> = vec![(task.parent, top, Vec::new(), 0)];
    // Only the task's subdirectories of its parent.
    let mut only = Some(task.children.clone());
    while let Some((row, opened, rel, levels)) = stack.pop() {
        let held = opened.fd.borrow();
        // Open while a directory below waits for it.
        let Some(fd) = held.as_ref() else { continue };
        let only = only.take();
        for (id, _, child) in index.dir(row).raw_entries() {
            let Some(child) = child.filter(|c| only.as_ref().is_none_or(|o| o.contains(c))) else {
                continue;
            };
            let mut child_rel = rel.clone();
            if !child_rel.is_empty() {
                child_rel.push(b'/');
            }
            child_rel.extend_from_slice(index.name(id));
            let through_parent = match subdirs(child) {
                0 => true,
                n => n <= FEW && levels + 1 < LEVELS,
            };
            // A directory opened for those below is stat-ed through its
            // descriptor: no second lookup of its name.
            let below = (!through_parent).then(|| rustix::fs::openat(fd, &child_rel, flags, Mode::empty()));
            let m = match &below {
                None => stat_synced(fd.as_fd(), &child_rel),
                Some(Ok(below)) => stat_synced(below.as_fd(), b""),
                // Not a directory any more (`O_NOFOLLOW`, `O_DIRECTORY`), or gone.
                Some(Err(e)) => Err(io::Error::from(*e)),
            };
            if differs(child, m) {
                out.push(Changed {
                    row: child,
                    parent: Some(row),
                    path: opened.path_to(&child_rel),
                });
            }
            match below {
                None if subdirs(child) == 0 => {}
                None => stack.push((child, opened.used(), child_rel, levels + 1)),
                Some(Ok(below)) => stack.push((
                    child,
                    Opened::new(below, Some(opened.clone()), child_rel),
                    Vec::new(),
                    0,
                )),
                // Its subdirectories cannot be checked: read them again.
                Some(Err(_)) => mark_all_below(index, child, &opened.path_to(&child_rel), out),
            }
        }
        drop(held);
        opened.done();
    }
}

/// A directory the check opened, and how it was reached: its path from
/// the directory opened before it (the whole path for the first), so a
/// changed directory's path is at hand with no copy per directory. The
/// descriptor closes as soon as the check is done below it, while the
/// path stays for those below (a chain of descriptors would hold 700 open
/// in a tree 2,000 levels deep).
struct Opened {
    fd: RefCell<Option<OwnedFd>>,
    /// Directories waiting to be checked through `fd`.
    users: Cell<usize>,
    up: Option<Rc<Opened>>,
    rel: Vec<u8>,
}

impl Opened {
    fn new(fd: OwnedFd, up: Option<Rc<Opened>>, rel: Vec<u8>) -> Rc<Opened> {
        Rc::new(Opened {
            fd: RefCell::new(Some(fd)),
            users: Cell::new(1),
            up,
            rel,
        })
    }

    /// One more directory to be checked through it.
    fn used(self: &Rc<Self>) -> Rc<Opened> {
        self.users.set(self.users.get() + 1);
        self.clone()
    }

    /// One directory checked through it: closed after the last.
    fn done(&self) {
        self.users.set(self.users.get() - 1);
        if self.users.get() == 0 {
            self.fd.borrow_mut().take();
        }
    }

    /// The path of `rel` (a path from this directory; empty for itself).
    fn path_to(&self, rel: &[u8]) -> Vec<u8> {
        let mut parts = vec![rel];
        let mut at = Some(self);
        while let Some(o) = at {
            parts.push(&o.rel);
            at = o.up.as_deref();
        }
        let mut path = Vec::new();
        for part in parts.iter().rev().filter(|p| !p.is_empty()) {
            if path.is_empty() {
                path.extend_from_slice(part);
            } else {
                push_name(&mut path, part);
            }
        }
        path
    }
}

fn mark_all_below(index: &Index<'_>, row: u32, path: &[u8], out: &mut Vec<Changed>) {
    let mut stack = vec![(row, path.to_vec())];
    while let Some((r, path)) = stack.pop() {
        for e in index.dir(r).entries() {
            let Some(c) = e.dir else { continue };
            let mut p = path.clone();
            push_name(&mut p, e.name);
            out.push(Changed {
                row: c,
                parent: Some(r),
                path: p.clone(),
            });
            stack.push((c, p));
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

/// Threads of a check where the tree is (partly) on a network or FUSE file
/// system ([`fnd_walk::served_remotely`]): each stat there is a round trip
/// to the server, which `threads` (the cores) would keep few of in flight.
const STATS_IN_FLIGHT: usize = 64;

/// Check every directory of `index` and rebuild what changed, with
/// `threads` threads (`STATS_IN_FLIGHT` at least where stats wait on a
/// server). An error when the root itself is gone.
///
/// `threads`: 0 for one per core.
pub fn refresh(index: &Index<'_>, threads: usize) -> io::Result<Refresh> {
    let threads = if threads == 0 { fnd_walk::cores() } else { threads };
    let root = Path::new(OsStr::from_bytes(index.root()));
    let threads = if fnd_walk::served_remotely(root) {
        threads.max(STATS_IN_FLIGHT)
    } else {
        threads
    };
    if !stat_path(root, true)?.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            "the indexed root is not a directory",
        ));
    }
    let found = changed_rows(index, threads);
    let n_changed = found.len();
    if n_changed == 0 {
        return Ok(Refresh {
            writer: None,
            changed: 0,
        });
    }
    // Walk from each changed directory whose parent is not read again
    // anyway; prune there the unchanged subdirectories, kept as they are.
    let mut changed = vec![false; index.dir_count()];
    for c in &found {
        changed[c.row as usize] = true;
    }
    let mut roots = Vec::new();
    let mut relisted = FxHashMap::default();
    let mut kept = FxHashMap::default();
    if changed[0] {
        roots.push(PathBuf::from(OsStr::from_bytes(index.root())));
    }
    for Changed { row, parent, path } in found {
        // Its children's paths from its own (a path from the parents of
        // each child was 6% of a refresh after 1% of million changed).
        for e in index.dir(row).entries() {
            if let Some(child) = e.dir.filter(|&c| !changed[c as usize]) {
                let mut child_path = path.clone();
                push_name(&mut child_path, e.name);
                kept.insert(child_path, child);
            }
        }
        if parent.is_some_and(|p| !changed[p as usize]) {
            roots.push(PathBuf::from(OsStr::from_bytes(&path)));
            relisted.insert(row, path);
        }
    }
    let kept = Arc::new(kept);
    let skip = {
        let kept = kept.clone();
        Arc::new(move |p: &[u8]| kept.contains_key(p)) as Skip
    };
    let listed = list(&roots, Some(root), threads, Some(skip))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::build;
    use crate::build::tests::past_the_margin;
    use std::fs;

    /// Every path below the root with its type, and each directory's stamp.
    fn contents(index: &Index<'_>) -> Vec<String> {
        let mut out = Vec::new();
        crate::build::tests::each_entry(index, |path, e| {
            let stamp = e.dir.map(|c| index.dir(c).stamp());
            out.push(format!("{} {:?} {stamp:?}", String::from_utf8_lossy(path), e.file_type));
        });
        out.sort();
        out
    }

    /// The tasks of a check and the directories checked before them cover
    /// every directory once, on a tree with a wide directory, a deep chain
    /// and subtrees of every size.
    #[test]
    fn the_check_is_cut_into_tasks_that_cover_every_directory_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for k in 0..300 {
            fs::create_dir_all(root.join(format!("wide/w{k}/a/b"))).unwrap();
        }
        let chain: std::path::PathBuf = (0..40).map(|k| format!("c{k}")).collect();
        fs::create_dir_all(root.join("deep").join(chain)).unwrap();
        for k in 0..20 {
            fs::create_dir_all(root.join(format!("mixed/m{k}")).join("x/".repeat(k + 1))).unwrap();
        }
        let bytes = build(&root, 2).unwrap().finish();
        let index = Index::parse(&bytes).unwrap();
        for threads in [1, 2, 7] {
            let mut seen = vec![0u32; index.dir_count()];
            seen[0] += 1;
            let tasks = tasks(&index, threads, index.root().to_vec(), &mut |row, _, path: &[u8]| {
                assert_eq!(
                    index.find(path.strip_prefix(index.root()).unwrap().strip_prefix(b"/").unwrap()),
                    Some(row)
                );
                seen[row as usize] += 1;
            });
            assert!(tasks.windows(2).all(|t| t[0].size >= t[1].size), "largest first");
            for task in &tasks {
                let mut stack: Vec<u32> = task.children.clone().collect();
                while let Some(r) = stack.pop() {
                    seen[r as usize] += 1;
                    stack.extend(index.dir(r).children());
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{threads} threads: {seen:?}");
        }
    }

    /// Changes at every depth, below directories the check opens (three
    /// subdirectories) and below those it reaches through a parent (one),
    /// leave the same index as a new build.
    #[test]
    fn a_refresh_after_changes_at_every_depth_equals_a_build() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut dirs = vec![root.clone()];
        for depth in 0..5 {
            let fan = if depth % 2 == 0 { 3 } else { 1 };
            let mut next = Vec::new();
            for d in &dirs {
                for k in 0..fan {
                    let sub = d.join(format!("d{depth}{k}"));
                    fs::create_dir(&sub).unwrap();
                    fs::write(sub.join("f"), "").unwrap();
                    next.push(sub);
                }
            }
            dirs.extend(next);
        }
        past_the_margin();
        let bytes = build(&root, 2).unwrap().finish();
        let old = Index::parse(&bytes).unwrap();
        for (i, d) in dirs.iter().enumerate() {
            match i % 7 {
                0 => fs::write(d.join("new"), "").unwrap(),
                3 => fs::remove_file(d.join("f")).unwrap_or(()),
                5 => fs::create_dir(d.join("newdir")).unwrap(),
                _ => {}
            }
        }
        past_the_margin();
        let fresh = refresh(&old, 2).unwrap();
        assert!(fresh.changed > 0);
        let bytes = fresh.writer.unwrap().finish();
        let refreshed = Index::parse(&bytes).unwrap();
        let rebuilt = build(&root, 2).unwrap().finish();
        assert_eq!(contents(&refreshed), contents(&Index::parse(&rebuilt).unwrap()));
    }

    /// A directory the build could not read whole (its listing failed or
    /// was cut short, or it could not be opened) is found changed by the
    /// next check and read again, and the index then holds it whole.
    #[test]
    fn a_directory_listed_short_is_read_again_by_the_next_check() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["short/in", "unread/in", "whole/in"] {
            fs::create_dir_all(root.join(d)).unwrap();
            fs::write(root.join(d).join("f"), "").unwrap();
        }
        let bytes = crate::build::tests::listed_short(&root, &["short", "unread"], &["unread"]);
        let index = Index::parse(&bytes).unwrap();
        let refreshed = refresh(&index, 1).unwrap();
        assert_eq!(refreshed.changed, 2);
        let bytes = refreshed.writer.unwrap().finish();
        let again = Index::parse(&bytes).unwrap();
        assert_eq!(
            contents(&again),
            contents(&Index::parse(&build(&root, 1).unwrap().finish()).unwrap())
        );
        assert_eq!(refresh(&again, 1).unwrap().changed, 0, "read whole, then trusted");
    }
}
