//! Opening directories by name: the `openat` calls every other module
//! builds on.
//!
//! Offers [`dir_flags`] (read-only, `O_DIRECTORY`, `O_CLOEXEC`, and
//! `O_NOFOLLOW` unless links are followed), [`open_long`] (a path relative
//! to a descriptor, opened in pieces past `PATH_MAX`, with symlinks refused
//! on the way when asked) and [`open_parent_of_long_path`] (for a stat by a
//! path past `PATH_MAX`). Relies on nothing else in this crate: only the
//! kernel (`openat2` with `RESOLVE_NO_SYMLINKS`, or one `openat` per
//! component where `openat2` is missing).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::fs::{Mode, OFlags, ResolveFlags, CWD};
use rustix::io::Errno;

/// Paths at least this long are opened in pieces (PATH_MAX is 4096 with the NUL).
pub(crate) const PATH_PIECE: usize = 4000;

/// How a directory is opened: `O_NOFOLLOW` on a name read from the parent
/// means a directory swapped for a symlink is never followed.
pub(crate) fn dir_flags(follow: bool) -> OFlags {
    let base = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if follow {
        base
    } else {
        base | OFlags::NOFOLLOW
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

/// For a path (from `dir`) longer than PATH_MAX: open its parent directory
/// and return it with the final name. Links on the way are followed, as
/// `stat(2)` and `lstat(2)` follow them for a shorter path (a root given
/// through a link must keep working past PATH_MAX); only the final name is
/// the caller's.
pub(crate) fn open_parent_of_long_path<'p>(
    dir: BorrowedFd<'_>,
    path: &'p [u8],
) -> std::io::Result<(OwnedFd, &'p [u8])> {
    let slash = path.iter().rposition(|&b| b == b'/').ok_or(Errno::NAMETOOLONG)?;
    let parent = open_long(dir, &path[..slash.max(1)], dir_flags(true), false)?;
    Ok((parent, &path[slash + 1..]))
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
