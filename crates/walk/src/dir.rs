//! Directory handles: how a directory is opened and how long its descriptor
//! lives.
//!
//! Offers [`Dir`] (a directory being or having been read: its path as the
//! walk spells it, depth, root, parent, device and inode, the state the
//! filter gave it, and the descriptor it keeps for its children) and
//! [`Pending`] (a directory found but not opened yet). Relies on `open`
//! for the system calls, `budget` for how many descriptors may stay open,
//! and `filter` for the type of a directory's hook state.
//!
//! A child is opened with `openat(parent_fd, name, O_DIRECTORY|O_NOFOLLOW|…)`:
//! relative opens skip the kernel's walk over every path component, and
//! `O_NOFOLLOW` on a name read from the parent means a directory swapped for
//! a symlink is never followed. A parent keeps its descriptor only while some
//! child still has to be opened from it, and only while the walk is under
//! its descriptor budget; past the budget, children are opened by path from
//! the root (with symlinks refused on the way), piece by piece when the path
//! is longer than `PATH_MAX`.

use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags, CWD};
use rustix::io::Errno;

use crate::budget::{self, Budget};
use crate::filter::ErasedState;
use crate::open::{dir_flags, open_long};

/// A directory that has been (or is being) read.
#[derive(Debug)]
pub(crate) struct Dir {
    /// The directory's path followed by `/` (empty for the pseudo-parent of
    /// the roots): an entry's path is `prefix + name`.
    pub(crate) prefix: Box<[u8]>,
    /// Length of the directory's own path within `prefix`.
    pub(crate) path_len: usize,
    /// Depth of the entries inside this directory.
    pub(crate) child_depth: usize,
    /// Length of the root's prefix, so a path relative to the root can be cut out.
    pub(crate) root_prefix_len: usize,
    /// Which root (index into the walk's roots) this directory lies under.
    pub(crate) root: usize,
    /// The device and inode of the root above this one (none for a root).
    /// Not the parent: a directory that held its parent held every
    /// directory above it, each with its whole path, and a chain of 100,000
    /// nested directories took 10 GB (a pending child holds its parent
    /// alone). Nor the root's `Dir`: every directory made and dropped
    /// counted it, one line that both cores wrote for every directory (user
    /// time of `fnd -u` on two threads on million: 149–162 ms with it,
    /// 129–145 without).
    root_id: Option<(u64, u64)>,
    /// The directories above this one, nearest first, as much as finding a
    /// loop needs (none when the walk knows no device and inode).
    lineage: Option<Arc<Lineage>>,
    /// Device and inode, known for a root, and for every directory when the
    /// walk follows links or stays on one file system (both need them); zero
    /// otherwise.
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    /// Kept-open descriptor for children to open relative to, or -1.
    fd: AtomicI32,
    /// Children that still have to be opened from `fd`.
    pending: AtomicUsize,
    /// Per-directory state of the walk's filter (ignore rules, say).
    pub(crate) hook_state: Option<ErasedState>,
}

impl Dir {
    /// The pseudo-directory that holds root number `root` of the walk.
    pub(crate) fn root_parent(root: usize) -> Arc<Dir> {
        Arc::new(Dir {
            prefix: Box::new([]),
            path_len: 0,
            child_depth: 0,
            root_prefix_len: 0,
            root,
            root_id: None,
            lineage: None,
            dev: 0,
            ino: 0,
            fd: AtomicI32::new(-1),
            pending: AtomicUsize::new(0),
            hook_state: None,
        })
    }

    /// A directory at `path` whose entries are at `child_depth`, under root
    /// number `root`; `root_prefix_len` is `None` for a root itself. `fd` is
    /// its open descriptor (it now belongs to the `Dir`, see
    /// [`settle_fd`](Self::settle_fd)), or -1 for none.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        path: Vec<u8>,
        child_depth: usize,
        root: usize,
        root_prefix_len: Option<usize>,
        parent: Option<Arc<Dir>>,
        dev: u64,
        ino: u64,
        fd: RawFd,
    ) -> Dir {
        // The path becomes the prefix in place: `Pending::path` leaves room for the `/`.
        let path_len = path.len();
        let mut prefix = path;
        if !prefix.ends_with(b"/") {
            prefix.push(b'/');
        }
        let root_prefix_len = root_prefix_len.unwrap_or(prefix.len());
        let root_id = parent.as_ref().map(|p| p.root_id());
        // Device and inode are known for every directory, or for roots only.
        let lineage = parent.filter(|p| p.dev != 0 || p.ino != 0).map(|p| {
            Arc::new(Lineage {
                dev: p.dev,
                ino: p.ino,
                path_len: p.path_len,
                is_root: p.root_id.is_none(),
                up: p.lineage.clone(),
            })
        });
        Dir {
            prefix: prefix.into_boxed_slice(),
            path_len,
            child_depth,
            root_prefix_len,
            root,
            root_id,
            lineage,
            dev,
            ino,
            fd: AtomicI32::new(fd),
            pending: AtomicUsize::new(0),
            hook_state: None,
        }
    }

    /// The same directory for a second reader with its own descriptor (see
    /// `crate::split`): entries and children look the same whichever
    /// reader found them.
    pub(crate) fn twin(&self, fd: RawFd) -> Dir {
        self.spelt(self.prefix.clone(), self.path_len, fd)
    }

    /// This directory with `prefix` (its path, `path_len` bytes of it)
    /// and `fd`, nothing pending.
    fn spelt(&self, prefix: Box<[u8]>, path_len: usize, fd: RawFd) -> Dir {
        Dir {
            prefix,
            path_len,
            child_depth: self.child_depth,
            root_prefix_len: self.root_prefix_len,
            root: self.root,
            root_id: self.root_id,
            lineage: self.lineage.clone(),
            dev: self.dev,
            ino: self.ino,
            fd: AtomicI32::new(fd),
            pending: AtomicUsize::new(0),
            hook_state: self.hook_state.clone(),
        }
    }

    /// The same directory with its path let go (no descriptor): what a
    /// result of the ordered walk holds while it waits, when the path is
    /// long (see [`respelt`](Self::respelt)).
    pub(crate) fn hollow(&self) -> Dir {
        self.spelt(Box::new([]), self.path_len, -1)
    }

    /// Whether this is a [`hollow`](Self::hollow) directory.
    pub(crate) fn is_hollow(&self) -> bool {
        self.prefix.len() < self.path_len
    }

    /// A [`hollow`](Self::hollow) directory spelt `path` again (its path
    /// as it was, of `path_len` bytes), without a descriptor.
    pub(crate) fn respelt(&self, path: &[u8]) -> Dir {
        debug_assert_eq!(path.len(), self.path_len, "a directory respelt with another path");
        let mut prefix = Vec::with_capacity(path.len() + 1);
        prefix.extend_from_slice(path);
        if !prefix.ends_with(b"/") {
            prefix.push(b'/');
        }
        self.spelt(prefix.into_boxed_slice(), path.len(), -1)
    }

    /// Whether this is the pseudo-directory above the roots.
    pub(crate) fn is_root_parent(&self) -> bool {
        self.prefix.is_empty()
    }

    /// The directory's own path.
    pub(crate) fn path(&self) -> &[u8] {
        &self.prefix[..self.path_len]
    }

    fn fd(&self) -> RawFd {
        self.fd.load(Ordering::Acquire)
    }

    /// The device and inode of the root this directory lies under (its
    /// own for a root).
    pub(crate) fn root_id(&self) -> (u64, u64) {
        self.root_id.unwrap_or((self.dev, self.ino))
    }

    /// Whether this is a root of the walk (not the pseudo-directory above them).
    pub(crate) fn is_root(&self) -> bool {
        self.root_id.is_none() && !self.is_root_parent()
    }

    /// The directories above this one, nearest first, up to its root, as
    /// far as their device and inode are known.
    pub(crate) fn ancestors(&self) -> impl Iterator<Item = &Lineage> {
        std::iter::successors(self.lineage.as_deref(), |l| l.up.as_deref())
    }

    /// After reading: keep the descriptor for `children` child opens if the
    /// budget allows, else close it. Returns the descriptor to close, if any.
    pub(crate) fn settle_fd(&self, children: usize, budget: &Budget) -> Option<OwnedFd> {
        let fd = self.fd.load(Ordering::Acquire);
        if fd < 0 {
            return None;
        }
        if children > 0 && budget.reserve() {
            self.pending.store(children, Ordering::Release);
            return None;
        }
        self.fd.store(-1, Ordering::Release);
        // SAFETY: the reading thread owned this descriptor and nobody else
        // holds it: children are only created after this call.
        Some(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// A child no longer needs this directory's descriptor.
    fn release_child(&self) {
        if self.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            let fd = self.fd.swap(-1, Ordering::AcqRel);
            if fd >= 0 {
                // SAFETY: the last child has opened itself; no one uses fd any more.
                drop(unsafe { OwnedFd::from_raw_fd(fd) });
                budget::release();
            }
        }
    }
}

/// What a directory keeps of one above it: its device and inode, to find
/// a loop, and the length of its path (a prefix of every path below it).
#[derive(Debug)]
pub(crate) struct Lineage {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) path_len: usize,
    pub(crate) is_root: bool,
    up: Option<Arc<Lineage>>,
}

/// A directory found but not opened yet.
pub(crate) struct Pending {
    pub(crate) parent: Arc<Dir>,
    /// Shared, not boxed: the ordered walk keeps the name for the
    /// directory's place in its output without a copy.
    pub(crate) name: Arc<[u8]>,
    /// Open without `O_NOFOLLOW`: a root, or a symlink the walk follows.
    pub(crate) follow: bool,
    /// Whether `parent.pending` counts this directory.
    holds_parent_fd: bool,
}

impl Pending {
    /// A subdirectory of `parent`; `holds_parent_fd` when the parent kept its
    /// descriptor for it (see [`Dir::settle_fd`]).
    pub(crate) fn child(parent: Arc<Dir>, name: &[u8], follow: bool, holds_parent_fd: bool) -> Pending {
        Pending {
            parent,
            name: name.into(),
            follow,
            holds_parent_fd,
        }
    }

    /// Root `path`, held by the pseudo-directory `parent`.
    pub(crate) fn root(parent: Arc<Dir>, path: &[u8]) -> Pending {
        Pending {
            parent,
            name: path.into(),
            follow: true,
            holds_parent_fd: false,
        }
    }

    /// The depth of the directory itself (a root is 0).
    pub(crate) fn depth(&self) -> usize {
        self.parent.child_depth
    }

    /// The path of the directory (with room for one more byte, the `/` that
    /// makes it a prefix).
    pub(crate) fn path(&self) -> Vec<u8> {
        let mut p = Vec::with_capacity(self.parent.prefix.len() + self.name.len() + 1);
        p.extend_from_slice(&self.parent.prefix);
        p.extend_from_slice(&self.name);
        p
    }

    /// Open the directory, relative to the parent when it still holds its
    /// descriptor, else by path from its root, spelt `root_path` (links on
    /// the way refused unless the walk follows them).
    pub(crate) fn open(&mut self, root_path: &[u8], follow_links: bool) -> Result<OwnedFd, Errno> {
        let result = match self.try_open(root_path, follow_links) {
            Err(Errno::MFILE | Errno::NFILE) => budget::open_when_scarce(|| self.try_open(root_path, follow_links)),
            result => result,
        };
        self.release();
        result
    }

    fn try_open(&self, root_path: &[u8], follow_links: bool) -> Result<OwnedFd, Errno> {
        let flags = dir_flags(self.follow);
        if self.parent.is_root_parent() {
            return open_long(CWD, &self.name, flags, false);
        }
        let pfd = self.parent.fd();
        if self.holds_parent_fd && pfd >= 0 {
            // SAFETY: `pending` counts this directory, so the parent
            // keeps the descriptor open until `release_child` (in `open`).
            let parent = unsafe { BorrowedFd::borrow_raw(pfd) };
            rustix::fs::openat(parent, &*self.name, flags, Mode::empty())
        } else {
            self.open_from_root(root_path, follow_links, flags)
        }
    }

    fn open_from_root(&self, root_path: &[u8], follow_links: bool, flags: OFlags) -> Result<OwnedFd, Errno> {
        let root = open_long(CWD, root_path, dir_flags(true), false)?;
        // The root's path is resolved again, and its parent may be another
        // user's to rename: if the path now leads elsewhere (a link to `/`,
        // say), the directory the walk was reading is gone from it.
        let st = rustix::fs::fstat(&root)?;
        if (st.st_dev as u64, st.st_ino as u64) != self.parent.root_id() {
            return Err(Errno::NOENT);
        }
        let mut rel = self.parent.prefix[self.parent.root_prefix_len..].to_vec();
        rel.extend_from_slice(&self.name);
        // Symlinks on the way are only legitimate when the walk follows them.
        open_long(root.as_fd(), &rel, flags, !follow_links)
    }

    fn release(&mut self) {
        if std::mem::take(&mut self.holds_parent_fd) {
            self.parent.release_child();
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.release();
    }
}
