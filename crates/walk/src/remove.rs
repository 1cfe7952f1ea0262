//! Deleting an entry and everything below it, as `rm -r` would, but
//! through descriptors: each directory is opened relative to its parent
//! with `O_NOFOLLOW`, each entry unlinked relative to its directory. A
//! symlink is removed, never followed, and a directory swapped for a
//! symlink while this runs is not entered (the swap makes its `openat`
//! fail), so nothing outside the entry is touched.
//!
//! The work is a loop with a stack of open directories, not recursion: a
//! tree thousands of levels deep does not overflow the stack. Each level
//! holds one descriptor, so depth is bounded by the process's descriptor
//! limit; what cannot be opened is reported and left, like anything else
//! that could not be removed.
//!
//! Offers [`remove`] and [`open_dir`] (the parent: a root as named, then
//! a path below it with no symlink followed on the way). Relies on
//! `dirent` and `open`.
//!
//! ```
//! # use std::os::fd::AsFd;
//! # fn main() -> std::io::Result<()> {
//! let dir = tempfile::tempdir()?;
//! std::fs::create_dir_all(dir.path().join("junk/a/b"))?;
//! std::fs::write(dir.path().join("junk/a/b/f"), "x")?;
//! let parent = fnd_walk::remove::open_dir(dir.path(), b"")?;
//! let removal = fnd_walk::remove::remove(parent.as_fd(), b"junk");
//! assert!(removal.failures.is_empty());
//! assert_eq!(removal.removed, 4);
//! assert!(!dir.path().join("junk").exists());
//! # Ok(())
//! # }
//! ```

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, CWD};
use rustix::io::Errno;

use crate::dirent::DirStream;
use crate::open::{dir_flags, open_long};

/// Most failures kept by name; past it they are only counted.
const FAILURES_KEPT: usize = 100;

/// What [`remove`] did.
#[derive(Debug, Default)]
pub struct Removal {
    /// Entries deleted (the entry itself included).
    pub removed: u64,
    /// What could not be deleted: its path from the parent, and why
    /// (the first hundred of them).
    pub failures: Vec<(Vec<u8>, io::Error)>,
    /// Failures past those kept.
    pub more_failures: u64,
}

impl Removal {
    fn failed(&mut self, path: Vec<u8>, error: Errno) {
        if self.failures.len() < FAILURES_KEPT {
            self.failures.push((path, error.into()));
        } else {
            self.more_failures += 1;
        }
    }

    /// Whether everything was deleted.
    pub fn complete(&self) -> bool {
        self.failures.is_empty() && self.more_failures == 0
    }
}

/// A directory held open while its entries are deleted.
struct Level {
    fd: OwnedFd,
    /// Its path from the parent of the entry being removed.
    path: Vec<u8>,
    /// Its subdirectories still to delete.
    subdirs: Vec<Vec<u8>>,
}

/// A descriptor for the directory `below` under `root` (empty: `root`
/// itself), the parent of what [`remove`] is to delete. `root` is opened
/// as named (as a walk opens its root); no symlink is followed in `below`,
/// so a directory swapped for a symlink since the walk cannot lead away.
pub fn open_dir(root: &Path, below: &[u8]) -> io::Result<OwnedFd> {
    let root = open_long(CWD, root.as_os_str().as_bytes(), dir_flags(true), false)?;
    if below.is_empty() {
        return Ok(root);
    }
    Ok(open_long(root.as_fd(), below, dir_flags(false), true)?)
}

/// Delete the entry `name` of the directory `parent`, and, if it is a
/// directory, everything below it. Never follows a symlink. What could
/// not be deleted is left in place and listed in the result.
pub fn remove(parent: BorrowedFd<'_>, name: &[u8]) -> Removal {
    let mut removal = Removal::default();
    let mut buf = vec![MaybeUninit::<u8>::uninit(); 64 * 1024];
    // Not a directory (or gone): one unlink says so.
    match rustix::fs::unlinkat(parent, name, AtFlags::empty()) {
        Ok(()) => {
            removal.removed = 1;
            return removal;
        }
        Err(Errno::ISDIR) | Err(Errno::PERM) => {}
        Err(e) => {
            removal.failed(name.to_vec(), e);
            return removal;
        }
    }
    let mut stack: Vec<Level> = Vec::new();
    match open_level(parent, name, name.to_vec(), &mut buf, &mut removal) {
        Ok(level) => stack.push(level),
        Err(e) => {
            removal.failed(name.to_vec(), e);
            return removal;
        }
    }
    while let Some(top) = stack.last_mut() {
        if let Some(sub) = top.subdirs.pop() {
            let mut path = top.path.clone();
            path.push(b'/');
            path.extend_from_slice(&sub);
            match open_level(top.fd.as_fd(), &sub, path.clone(), &mut buf, &mut removal) {
                Ok(level) => stack.push(level),
                Err(e) => removal.failed(path, e),
            }
            continue;
        }
        let done = stack.pop().expect("the level just looked at");
        let (dir, leaf) = match stack.last() {
            Some(above) => (above.fd.as_fd(), done.path.rsplit(|&b| b == b'/').next().unwrap_or(&[])),
            None => (parent, name),
        };
        drop(done.fd);
        match rustix::fs::unlinkat(dir, leaf, AtFlags::REMOVEDIR) {
            Ok(()) => removal.removed += 1,
            // Something inside could not be deleted, and was reported.
            Err(Errno::NOTEMPTY) if !removal.complete() => {}
            Err(e) => removal.failed(done.path, e),
        }
    }
    removal
}

/// Open the directory `name` of `dir`, delete its entries that are not
/// directories, and list those that are.
fn open_level(
    dir: BorrowedFd<'_>,
    name: &[u8],
    path: Vec<u8>,
    buf: &mut [MaybeUninit<u8>],
    removal: &mut Removal,
) -> Result<Level, Errno> {
    let fd = rustix::fs::openat(dir, name, dir_flags(false), rustix::fs::Mode::empty())?;
    // Names first, then deletions: the listing is not read while it changes.
    let mut entries: Vec<(Vec<u8>, u8)> = Vec::new();
    let mut stream = DirStream::new(fd.as_fd(), buf, false);
    while let Some(record) = stream.next() {
        match record {
            Ok(r) if r.name == b"." || r.name == b".." => {}
            Ok(r) => entries.push((r.name.to_vec(), r.d_type)),
            Err(e) => {
                removal.failed(path.clone(), e);
                break;
            }
        }
    }
    let mut subdirs = Vec::new();
    for (entry, d_type) in entries {
        let is_dir = match d_type {
            libc::DT_DIR => true,
            libc::DT_UNKNOWN => rustix::fs::statat(&fd, entry.as_slice(), AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir()),
            _ => false,
        };
        if is_dir {
            subdirs.push(entry);
            continue;
        }
        match rustix::fs::unlinkat(&fd, entry.as_slice(), AtFlags::empty()) {
            Ok(()) => removal.removed += 1,
            Err(Errno::ISDIR) => subdirs.push(entry),
            Err(e) => {
                let mut p = path.clone();
                p.push(b'/');
                p.extend_from_slice(&entry);
                removal.failed(p, e);
            }
        }
    }
    Ok(Level { fd, path, subdirs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::fs::{symlink, PermissionsExt};

    #[test]
    fn removes_a_file_a_symlink_and_a_deep_tree_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let outside = root.join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), "k").unwrap();
        let mut deep = root.join("t");
        for _ in 0..300 {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("f"), "x").unwrap();
        symlink(&outside, root.join("t/link")).unwrap();
        std::fs::write(root.join("file"), "y").unwrap();
        symlink(&outside, root.join("alink")).unwrap();

        let parent = open_dir(root, b"").unwrap();
        for (name, count) in [(&b"file"[..], 1), (b"alink", 1), (b"t", 303)] {
            let removal = remove(parent.as_fd(), name);
            assert!(removal.complete(), "{:?}", removal.failures);
            assert_eq!(removal.removed, count);
        }
        assert!(outside.join("keep").exists(), "a symlink is removed, never followed");
        let left: Vec<_> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["outside"]);
    }

    #[test]
    fn what_cannot_be_removed_is_reported_and_the_rest_removed() {
        if rustix::process::geteuid().is_root() {
            return; // root may delete anything: nothing would fail
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("t/locked/inner")).unwrap();
        std::fs::write(root.join("t/gone"), "x").unwrap();
        std::fs::set_permissions(root.join("t/locked"), std::fs::Permissions::from_mode(0o500)).unwrap();
        let parent = open_dir(root, b"").unwrap();
        let removal = remove(parent.as_fd(), b"t");
        std::fs::set_permissions(root.join("t/locked"), std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(!root.join("t/gone").exists());
        assert_eq!(removal.failures.len(), 1, "{:?}", removal.failures);
        assert_eq!(removal.failures[0].0, b"t/locked/inner");
    }

    #[test]
    fn below_the_root_no_symlink_is_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("real/sub")).unwrap();
        symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
        // The root as named, through a symlink: as a walk would open it.
        assert!(open_dir(&dir.path().join("link"), b"sub").is_ok());
        let err = open_dir(dir.path(), b"link/sub").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ELOOP));
    }

    #[test]
    fn a_missing_entry_is_one_failure() {
        let dir = tempfile::tempdir().unwrap();
        let parent = open_dir(dir.path(), b"").unwrap();
        let removal = remove(parent.as_fd(), b"nothing");
        assert_eq!(removal.removed, 0);
        assert_eq!(removal.failures[0].1.kind(), io::ErrorKind::NotFound);
    }
}
