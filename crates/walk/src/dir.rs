//! Directory handles: how a directory is opened and how long its descriptor lives.
//!
//! A child is opened with `openat(parent_fd, name, O_DIRECTORY|O_NOFOLLOW|…)`:
//! relative opens skip the kernel's walk over every path component, and
//! `O_NOFOLLOW` on a name read from the parent means a directory swapped for
//! a symlink is never followed. A parent keeps its descriptor only while some
//! child still has to be opened from it, and only while the walk is under
//! its descriptor budget; past the budget, children are opened by path from
//! the root (with symlinks refused on the way), piece by piece when the path
//! is longer than `PATH_MAX`.

use std::os::fd::{AsFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags, ResolveFlags, CWD};
use rustix::io::Errno;

use crate::walker::Shared;

/// Paths at least this long are opened in pieces (PATH_MAX is 4096 with the NUL).
pub(crate) const PATH_PIECE: usize = 4000;

pub(crate) fn dir_flags(follow: bool) -> OFlags {
    let base = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if follow {
        base
    } else {
        base | OFlags::NOFOLLOW
    }
}

/// A directory that has been (or is being) read.
#[derive(Debug)]
pub struct Dir {
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
    pub(crate) parent: Option<Arc<Dir>>,
    /// Device and inode, known when the walk follows links or stays on one
    /// file system (both need them); zero otherwise.
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    /// Kept-open descriptor for children to open relative to, or -1.
    fd: AtomicI32,
    /// Children that still have to be opened from `fd`.
    pending: AtomicUsize,
    /// Per-directory state of the walk's filter (ignore rules, say).
    pub(crate) filter_state: Option<crate::filter::FilterState>,
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
            parent: None,
            dev: 0,
            ino: 0,
            fd: AtomicI32::new(-1),
            pending: AtomicUsize::new(0),
            filter_state: None,
        })
    }

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
        // The path becomes the prefix in place: `Job::path` leaves room for the `/`.
        let path_len = path.len();
        let mut prefix = path;
        if !prefix.ends_with(b"/") {
            prefix.push(b'/');
        }
        let root_prefix_len = root_prefix_len.unwrap_or(prefix.len());
        Dir {
            prefix: prefix.into_boxed_slice(),
            path_len,
            child_depth,
            root_prefix_len,
            root,
            parent,
            dev,
            ino,
            fd: AtomicI32::new(fd),
            pending: AtomicUsize::new(0),
            filter_state: None,
        }
    }

    /// The same directory for a second reader with its own descriptor (see
    /// `crate::split`): entries and children look the same whichever
    /// reader found them.
    pub(crate) fn twin(&self, fd: RawFd) -> Dir {
        Dir {
            prefix: self.prefix.clone(),
            path_len: self.path_len,
            child_depth: self.child_depth,
            root_prefix_len: self.root_prefix_len,
            root: self.root,
            parent: self.parent.clone(),
            dev: self.dev,
            ino: self.ino,
            fd: AtomicI32::new(fd),
            pending: AtomicUsize::new(0),
            filter_state: self.filter_state.clone(),
        }
    }

    pub(crate) fn is_root_parent(&self) -> bool {
        self.prefix.is_empty()
    }

    /// The directory's own path.
    pub fn path(&self) -> &[u8] {
        &self.prefix[..self.path_len]
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.fd.load(Ordering::Acquire)
    }

    /// The root directory this one lies under (itself for a root).
    pub(crate) fn root_dir(&self) -> &Dir {
        let mut d = self;
        while let Some(p) = &d.parent {
            d = p;
        }
        d
    }

    /// After reading: keep the descriptor for `children` child opens if the
    /// budget allows, else close it. Returns the descriptor to close, if any.
    pub(crate) fn settle_fd(&self, children: usize, shared: &Shared) -> Option<OwnedFd> {
        let fd = self.fd.load(Ordering::Acquire);
        if fd < 0 {
            return None;
        }
        if children > 0 && crate::walker::reserve_fd(shared) {
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
                crate::walker::release_fd();
            }
        }
    }
}

/// A directory waiting to be opened and read.
pub(crate) struct Job {
    pub(crate) parent: Arc<Dir>,
    pub(crate) name: Box<[u8]>,
    /// Open without `O_NOFOLLOW`: a root, or a symlink the walk follows.
    pub(crate) follow: bool,
    /// Whether `parent.pending` counts this job.
    holds_parent_fd: bool,
    /// Not a directory to open but the rest of one being read (`parent`
    /// is then that directory itself).
    pub(crate) part: Option<Box<crate::split::Part>>,
}

impl Job {
    pub(crate) fn child(parent: Arc<Dir>, name: &[u8], follow: bool, holds_parent_fd: bool) -> Job {
        Job {
            parent,
            name: name.into(),
            follow,
            holds_parent_fd,
            part: None,
        }
    }

    pub(crate) fn root(parent: Arc<Dir>, path: &[u8]) -> Job {
        Job {
            parent,
            name: path.into(),
            follow: true,
            holds_parent_fd: false,
            part: None,
        }
    }

    pub(crate) fn part(part: crate::split::Part) -> Job {
        Job {
            parent: part.dir.clone(),
            name: Box::new([]),
            follow: false,
            holds_parent_fd: false,
            part: Some(Box::new(part)),
        }
    }

    /// The path of the directory this job reads (with room for one more byte,
    /// the `/` that makes it a prefix).
    pub(crate) fn path(&self) -> Vec<u8> {
        let mut p = Vec::with_capacity(self.parent.prefix.len() + self.name.len() + 1);
        p.extend_from_slice(&self.parent.prefix);
        p.extend_from_slice(&self.name);
        p
    }

    /// Open the directory, relative to the parent when it still holds its
    /// descriptor, else by path from the root.
    pub(crate) fn open(&mut self, shared: &Shared) -> Result<OwnedFd, Errno> {
        let flags = dir_flags(self.follow);
        let result = if self.parent.is_root_parent() {
            open_long(CWD, &self.name, flags, false)
        } else {
            let pfd = self.parent.fd();
            if self.holds_parent_fd && pfd >= 0 {
                // SAFETY: `pending` counts this job, so the parent keeps the
                // descriptor open until `release_child` below.
                let parent = unsafe { BorrowedFd::borrow_raw(pfd) };
                rustix::fs::openat(parent, &*self.name, flags, Mode::empty())
            } else {
                self.open_from_root(shared, flags)
            }
        };
        self.release();
        result
    }

    fn open_from_root(&self, shared: &Shared, flags: OFlags) -> Result<OwnedFd, Errno> {
        let root = open_long(CWD, shared.root_path(self.parent.root), dir_flags(true), false)?;
        // The root's path is resolved again, and its parent may be another
        // user's to rename: if the path now leads elsewhere (a link to `/`,
        // say), the directory the walk was reading is gone from it.
        let walked = self.parent.root_dir();
        let st = rustix::fs::fstat(&root)?;
        if (st.st_dev as u64, st.st_ino as u64) != (walked.dev, walked.ino) {
            return Err(Errno::NOENT);
        }
        let mut rel = self.parent.prefix[self.parent.root_prefix_len..].to_vec();
        rel.extend_from_slice(&self.name);
        // Symlinks on the way are only legitimate when the walk follows them.
        open_long(root.as_fd(), &rel, flags, !shared.follow_links())
    }

    fn release(&mut self) {
        if std::mem::take(&mut self.holds_parent_fd) {
            self.parent.release_child();
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        self.release();
    }
}

/// Open `path` relative to `dir`; paths longer than PATH_MAX are opened a
/// piece at a time (each piece ends at a `/`). With `no_symlinks`, every
/// component is checked by the kernel (`RESOLVE_NO_SYMLINKS`) so that a
/// directory swapped for a symlink on the way cannot lead out of the tree.
pub(crate) fn open_long(dir: BorrowedFd<'_>, path: &[u8], flags: OFlags, no_symlinks: bool) -> Result<OwnedFd, Errno> {
    let open_piece = |dir: BorrowedFd<'_>, piece: &[u8], flags: OFlags| -> Result<OwnedFd, Errno> {
        if no_symlinks {
            match rustix::fs::openat2(
                dir,
                piece,
                flags,
                Mode::empty(),
                ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
            ) {
                Err(Errno::NOSYS) | Err(Errno::PERM) => open_each_nofollow(dir, piece, flags),
                r => r,
            }
        } else {
            rustix::fs::openat(dir, piece, flags, Mode::empty())
        }
    };
    if path.len() < PATH_PIECE {
        return open_piece(dir, path, flags);
    }
    let mut current: Option<OwnedFd> = None;
    let mut rest = path;
    while rest.len() >= PATH_PIECE {
        let cut = rest[..PATH_PIECE]
            .iter()
            .rposition(|&b| b == b'/')
            .ok_or(Errno::NAMETOOLONG)?;
        let piece = if cut == 0 { &rest[..1] } else { &rest[..cut] };
        let base = current.as_ref().map(|f| f.as_fd()).unwrap_or(dir);
        let next = open_piece(base, piece, dir_flags(!no_symlinks))?;
        current = Some(next);
        rest = &rest[cut + 1..];
    }
    let base = current.as_ref().map(|f| f.as_fd()).unwrap_or(dir);
    open_piece(base, rest, flags)
}

/// Without `openat2` (old kernels, some sandboxes): one component at a
/// time, each opened with `O_NOFOLLOW`, so that a symlink anywhere on the
/// way is refused, as `RESOLVE_NO_SYMLINKS` would.
fn open_each_nofollow(dir: BorrowedFd<'_>, path: &[u8], flags: OFlags) -> Result<OwnedFd, Errno> {
    let (rest, mut current) = match path.strip_prefix(b"/") {
        Some(rest) => (
            rest,
            Some(rustix::fs::openat(CWD, "/", dir_flags(false), Mode::empty())?),
        ),
        None => (path, None),
    };
    let mut parts = rest.split(|&b| b == b'/').filter(|p| !p.is_empty()).peekable();
    while let Some(part) = parts.next() {
        let base = current.as_ref().map_or(dir, |f| f.as_fd());
        let part_flags = if parts.peek().is_none() {
            flags
        } else {
            dir_flags(false)
        };
        current = Some(rustix::fs::openat(base, part, part_flags, Mode::empty())?);
    }
    current.ok_or(Errno::NOENT)
}

/// For a path longer than PATH_MAX: open its parent directory and return
/// it with the final name. Links on the way are followed, as `stat(2)` and
/// `lstat(2)` follow them for a shorter path (a root given through a link
/// must keep working past PATH_MAX); only the final name is the caller's.
pub(crate) fn open_parent_of_long_path(path: &[u8]) -> std::io::Result<(OwnedFd, &[u8])> {
    let slash = path.iter().rposition(|&b| b == b'/').ok_or(Errno::NAMETOOLONG)?;
    let dir = open_long(CWD, &path[..slash.max(1)], dir_flags(true), false)?;
    Ok((dir, &path[slash + 1..]))
}

/// Turn an owned descriptor into a raw one the `Dir` manages.
pub(crate) fn into_raw(fd: OwnedFd) -> RawFd {
    fd.into_raw_fd()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_without_openat2_refuses_a_symlink_on_the_way() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("real/b/c")).unwrap();
        std::os::unix::fs::symlink("real", tmp.path().join("link")).unwrap();
        let base = rustix::fs::openat(CWD, tmp.path(), dir_flags(true), Mode::empty()).unwrap();
        assert!(open_each_nofollow(base.as_fd(), b"real/b/c", dir_flags(false)).is_ok());
        assert!(open_each_nofollow(base.as_fd(), b"real//b/c", dir_flags(false)).is_ok());
        // O_DIRECTORY|O_NOFOLLOW on a link fails with ENOTDIR.
        assert_eq!(
            open_each_nofollow(base.as_fd(), b"link/b/c", dir_flags(false)).err(),
            Some(Errno::NOTDIR)
        );
        std::os::unix::fs::symlink("c", tmp.path().join("real/b/lc")).unwrap();
        assert!(open_each_nofollow(base.as_fd(), b"real/b/lc", dir_flags(false)).is_err());
    }
}
