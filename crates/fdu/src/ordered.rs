//! du's lines in du's own order, from every core: the walk reads ahead in
//! parallel and hands its results over in tree order (`fnd_walk`'s ordered
//! walk), and one consumer adds them up as fts would visit them: each
//! directory's entries in the order its read returned them (by inode in a
//! batch of more than 10,000 where gnulib sorts), each subtree at its entry,
//! a directory's line after its subtree. The output is the same for any
//! number of threads and from run to run, and a hard link counts where du
//! counts it: at the first link in that order.
//!
//! Used for du's lines (default, `-a`, `-d`, `-S`, `--time`, `-c`) from
//! one process; the tree views, `-i` and the ranks of an MPI job keep the
//! per-directory nodes of `crate::scan`, and so does `-s`, whose one line
//! per operand has no order to keep.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

use fnd_walk::{
    ChunkBuf, Decision, DirEvent, DirHook, DirInfo, Error, Flow, Metadata, Nest, RawEntry, TreeOrder, TreeVisitor,
    WalkBuilder,
};

use crate::fts::du_order;
use crate::hardlinks;
use crate::messages::{error_text, quote};
use crate::node::{is_self_or_ancestor, join, DeepIds};
use crate::run::Run;
use crate::scan::Scan;
use crate::settings::Follow;
use crate::usage::{Stamp, Usage};

/// Whether this run's lines (or its `--json`) come from the ordered walk.
pub fn applies(run: &Run) -> bool {
    run.json().is_some() || (!run.settings.keeps_tree() && run.settings.max_depth > 0)
}

/// Walk an operand that is a directory and print its lines in du's order.
pub fn scan_dir(scan: &Arc<Scan>, path: &[u8], m: &Metadata) {
    let settings = &scan.run.settings;
    scan.root_dev.store(m.dev, Relaxed);
    let follow = settings.follow == Follow::All;
    if scan.dedups_dirs() {
        scan.first_entry((m.dev, m.ino));
    }
    let within = du_order(path);
    let walk = WalkBuilder::new(Path::new(OsStr::from_bytes(path)))
        .threads(settings.threads)
        .io_depth(settings.io_depth)
        .metadata(true)
        .min_depth(1)
        .follow_links(follow)
        .hook(Ancestry {
            scan: scan.clone(),
            root: (m.dev, m.ino),
        });
    let mut du = Du {
        scan,
        operand: path,
        stack: Vec::new(),
        next_own: None,
        root: scan.run.usage(m),
        lines: Vec::new(),
    };
    walk.visit_tree(TreeOrder::new(within, Nest::AtEntry), &mut du);
    du.write_lines();
}

/// Subdirectories' device and inode, by name.
type Ids = HashMap<Box<[u8]>, (u64, u64)>;

/// Each directory's device and inode, and its parent's: du leaves out a
/// directory met inside itself (a bind mount of an ancestor below it).
/// A subdirectory's identity comes from the stat that decided to enter it
/// (kept in `kids` until it is entered): one stat per directory, not two.
struct Chain {
    id: (u64, u64),
    parent: Option<Arc<Chain>>,
    kids: Mutex<Ids>,
    /// Levels below the operand.
    depth: u32,
    /// Deep down, what finds a cycle without walking up every level.
    deep: Option<DeepIds>,
}

impl Chain {
    /// The ids of this directory and those above it, up to the operand.
    fn ids_up(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        std::iter::successors(Some(self), |c| c.parent.as_deref()).map(|c| c.id)
    }
}

impl Drop for Chain {
    /// Unlink the ancestors this one held last one by one: dropping a deep
    /// chain recursively would overflow a worker's stack.
    fn drop(&mut self) {
        let mut up = self.parent.take();
        while let Some(p) = up {
            up = Arc::try_unwrap(p).ok().and_then(|mut c| c.parent.take());
        }
    }
}

/// What du leaves out, decided on the reading threads: `--exclude`, `-x`,
/// operands met inside others, cycles; directories are yielded (their
/// own size and their place in the listing), then descended.
struct Ancestry {
    scan: Arc<Scan>,
    root: (u64, u64),
}

impl DirHook for Ancestry {
    type State = Chain;

    fn enter(&self, dir: &DirInfo<'_>, parent: Option<&Arc<Chain>>) -> Option<Arc<Chain>> {
        let parent = parent.cloned();
        let id = match &parent {
            None => self.root,
            Some(p) => {
                let name = dir.path.rsplit(|&b| b == b'/').next().unwrap_or(dir.path);
                let mut kids = p.kids.lock().unwrap_or_else(|e| e.into_inner());
                let known = kids.remove(name);
                if kids.is_empty() {
                    // Its room would stay on every level of a chain
                    // (190 bytes a level: 19 MB at 100,000 levels).
                    *kids = Ids::default();
                }
                drop(kids);
                known.unwrap_or_else(|| fnd_walk::meta::stat_fd(dir.fd).map_or((0, 0), |m| (m.dev, m.ino)))
            }
        };
        let depth = parent.as_ref().map_or(0, |p| p.depth + 1);
        let deep = DeepIds::new(depth, id, parent.as_ref().and_then(|p| p.deep.as_ref()), || {
            parent.as_ref().map_or_else(|| Arc::from([]), |p| p.ids_up().collect())
        });
        Some(Arc::new(Chain {
            id,
            parent,
            kids: Mutex::default(),
            depth,
            deep,
        }))
    }

    fn decide(&self, here: Option<&Chain>, entry: &RawEntry<'_>) -> Decision {
        let scan = &*self.scan;
        if scan.excludes.any() && scan.excludes.matches(&join(entry.parent_prefix, entry.name)) {
            return Decision::SKIP;
        }
        if !entry.is_dir() {
            return Decision::KEEP;
        }
        let Some(m) = scan.subdir_to_enter(entry) else {
            return Decision::SKIP;
        };
        let id = (m.dev, m.ino);
        if here.is_some_and(|c| is_self_or_ancestor(c.deep.as_ref(), id, c.ids_up())) {
            return Decision::SKIP;
        }
        // Under `-L` du counts a directory reached twice at the first place
        // its order meets it, which reads ahead do not follow (claimed when
        // read, /usr/lib/llvm-14/lib won over the link build/lib that du
        // meets first). So only the output claims one (`Du::enter`): a
        // read leaves out a directory the output entered already, at an
        // earlier place; one not entered yet is read wherever it is met,
        // and the output leaves out all but its first.
        if scan.dedups_dirs() && scan.entered_before(id) {
            return Decision::SKIP;
        }
        if let Some(here) = here {
            let mut kids = here.kids.lock().unwrap_or_else(|e| e.into_inner());
            kids.insert(entry.name.into(), id);
        }
        Decision {
            emit: true,
            descend: true,
        }
    }
}

/// One directory being added up.
struct Frame {
    /// Its own size and its files' (what `-S` prints).
    local: u64,
    /// Its subdirectories' totals.
    below: u64,
    newest: Stamp,
    /// Not a directory after all (swapped for a file between the listing
    /// and the stat): what the walk finds under it is neither counted nor
    /// printed, and the entry was counted as what the stat found.
    ghost: bool,
}

/// The consumer: du's `process_file`, in fts's order.
struct Du<'a> {
    scan: &'a Scan,
    /// The operand as given (its name in `--json`).
    operand: &'a [u8],
    stack: Vec<Frame>,
    /// The own usage and the id of the directory whose subtree comes next
    /// (`None`: the entry before it was not a directory by its stat).
    next_own: Option<(Usage, (u64, u64))>,
    /// The operand's own usage.
    root: Usage,
    lines: Vec<u8>,
}

impl Du<'_> {
    fn write_lines(&mut self) {
        if !self.lines.is_empty() {
            self.scan.run.out.write(&self.lines);
            self.lines.clear();
        }
    }

    /// Whether the directory being released is a ghost (see [`Frame`]).
    fn in_ghost(&self) -> bool {
        self.stack.last().is_some_and(|f| f.ghost)
    }

    fn flow(&mut self) -> Flow {
        if self.lines.len() >= 64 * 1024 {
            self.write_lines();
        }
        if self.scan.run.out.closed() {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }
}

impl TreeVisitor for Du<'_> {
    fn enter(&mut self, dir: DirEvent<'_>) -> Flow {
        let above_ghost = self.in_ghost();
        let own = match dir.depth {
            0 => Some(self.root),
            // Entered before, at an earlier place (see `Ancestry::decide`):
            // left out, as a subtree under a ghost (its reads are no du's).
            _ => self.next_own.take().and_then(|(own, id)| {
                let first = above_ghost || !self.scan.dedups_dirs() || self.scan.first_entry(id);
                first.then_some(own)
            }),
        };
        let ghost = own.is_none() || above_ghost;
        let own = own.unwrap_or(Usage::NONE);
        if let (false, Some(mut json)) = (ghost, self.scan.run.json()) {
            let name = match dir.depth {
                0 => self.operand,
                _ => dir.path.rsplit(|&b| b == b'/').next().unwrap_or(dir.path),
            };
            json.enter(name);
        }
        self.stack.push(Frame {
            local: own.amount,
            below: 0,
            newest: own.stamp,
            ghost,
        });
        Flow::Continue
    }

    fn entries(&mut self, chunk: &ChunkBuf) -> Flow {
        let scan = self.scan;
        let run = &scan.run;
        let settings = &run.settings;
        let print_files = settings.all && chunk.depth() <= settings.max_depth;
        let link_all = settings.follow == Follow::All;
        let mut disk = 0;
        self.next_own = None;
        let Some(frame) = self.stack.last_mut() else {
            return Flow::Continue;
        };
        if frame.ghost {
            return Flow::Continue;
        }
        let mut json = run.json();
        for entry in chunk.iter() {
            // Only the run's last entry can have a subtree next.
            self.next_own = None;
            let Some(m) = entry.cached_metadata() else {
                let mut path = Vec::new();
                entry.write_path(&mut path);
                let err = entry
                    .metadata()
                    .err()
                    .unwrap_or_else(|| std::io::Error::other("stat failed"));
                run.cannot_access(&path, Some(&err));
                continue;
            };
            if m.is_dir() {
                // Its subtree comes next, its line after it.
                self.next_own = Some((run.usage(m), (m.dev, m.ino)));
                continue;
            }
            if link_all && m.file_type().is_symlink() {
                let mut path = Vec::new();
                entry.write_path(&mut path);
                run.cannot_access(&path, None);
                continue;
            }
            if !scan.operands.counts(m.dev, m.ino) {
                continue;
            }
            if hardlinks::counted_once(settings, m.nlink) && !scan.links.first(m.dev, m.ino) {
                continue;
            }
            let usage = run.usage(m);
            disk += m.blocks * 512;
            frame.local += usage.amount;
            frame.newest = frame.newest.max(usage.stamp);
            if let Some(json) = &mut json {
                json.leaf(entry.name_bytes(), usage.amount);
            }
            if print_files {
                let mut path = Vec::with_capacity(chunk.prefix().len() + entry.name_bytes().len());
                entry.write_path(&mut path);
                run.line(&mut self.lines, usage, &path);
            }
        }
        drop(json);
        scan.progress.entries.fetch_add(chunk.len() as u64, Relaxed);
        scan.progress.bytes.fetch_add(disk, Relaxed);
        self.flow()
    }

    fn leave(&mut self, dir: DirEvent<'_>) -> Flow {
        self.next_own = None;
        let Some(frame) = self.stack.pop() else {
            return Flow::Continue;
        };
        if frame.ghost {
            return Flow::Continue;
        }
        let run = &self.scan.run;
        let settings = &run.settings;
        let total = Usage {
            amount: frame.local + frame.below,
            stamp: frame.newest,
        };
        if dir.depth <= settings.max_depth {
            let shown = if settings.separate_dirs {
                Usage {
                    amount: frame.local,
                    ..total
                }
            } else {
                total
            };
            run.line(&mut self.lines, shown, dir.path);
        }
        if let Some(mut json) = run.json() {
            json.leave(total.amount);
            if self.stack.is_empty() {
                run.end_json_root(&mut json);
            }
        }
        self.scan.progress.entries.fetch_add(1, Relaxed);
        match self.stack.last_mut() {
            Some(parent) => {
                parent.below += total.amount;
                parent.newest = parent.newest.max(total.stamp);
            }
            None => {
                run.add_operand(dir.path, total, None, Default::default());
            }
        }
        self.flow()
    }

    fn error(&mut self, error: Error) -> Flow {
        if let fnd_walk::ErrorKind::Loop { .. } = error.kind() {
            return Flow::Continue;
        }
        if self.in_ghost() {
            // Met in a subtree du does not read.
            return Flow::Continue;
        }
        // In order with the lines around it.
        self.write_lines();
        let path = error.path().as_os_str().as_bytes();
        let what = match error.kind() {
            fnd_walk::ErrorKind::Follow(_) => "cannot access",
            _ => "cannot read directory",
        };
        self.scan
            .run
            .error(&format!("{what} {}: {}", quote(path), error_text(&error.io_error())));
        self.flow()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(parent: Option<Arc<Chain>>, id: (u64, u64)) -> Arc<Chain> {
        let depth = parent.as_ref().map_or(0, |p| p.depth + 1);
        let deep = DeepIds::new(depth, id, parent.as_ref().and_then(|p| p.deep.as_ref()), || {
            parent.as_ref().map_or_else(|| Arc::from([]), |p| p.ids_up().collect())
        });
        Arc::new(Chain {
            id,
            parent,
            kids: Mutex::default(),
            depth,
            deep,
        })
    }

    #[test]
    fn a_deep_directory_finds_its_ancestors_and_frees_on_a_small_stack() {
        // A device of its own, so that other tests' deep directories never match.
        let dev = 0xc4a1;
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || {
                let mut here = link(None, (dev, 1_000_000));
                for level in 0..100_000 {
                    here = link(Some(here), (dev, level));
                }
                let found = |ino| is_self_or_ancestor(here.deep.as_ref(), (dev, ino), here.ids_up());
                assert!(found(1_000_000), "the operand");
                assert!(found(3), "near the operand");
                assert!(found(50_000), "deep");
                assert!(found(99_999), "itself");
                assert!(!found(100_000));
                drop(here);
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
