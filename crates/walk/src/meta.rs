//! Metadata (one `fstatat` per entry), taken relative to the parent
//! directory's descriptor whenever the walk still holds it: a relative stat
//! skips the path walk that a full-path stat pays for every component.

use std::os::fd::BorrowedFd;
use std::path::Path;

use rustix::fs::{AtFlags, Stat, CWD};

use crate::entry::FileType;

/// The parts of `struct stat` that finders and disk-usage tools use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// Device of the file system holding the file (`st_dev`).
    pub dev: u64,
    /// Inode number (`st_ino`).
    pub ino: u64,
    /// Type and permission bits (`st_mode`).
    pub mode: u32,
    /// Number of hard links (`st_nlink`).
    pub nlink: u64,
    /// Owner's user id.
    pub uid: u32,
    /// Owner's group id.
    pub gid: u32,
    /// Device a device file stands for (`st_rdev`).
    pub rdev: u64,
    /// Apparent size in bytes.
    pub size: u64,
    /// Allocated 512-byte blocks.
    pub blocks: u64,
    /// Last access, seconds since the epoch.
    pub atime: i64,
    /// Nanoseconds of `atime`.
    pub atime_nsec: u32,
    /// Last change of the contents, seconds since the epoch.
    pub mtime: i64,
    /// Nanoseconds of `mtime`.
    pub mtime_nsec: u32,
    /// Last change of the inode, seconds since the epoch.
    pub ctime: i64,
    /// Nanoseconds of `ctime`.
    pub ctime_nsec: u32,
}

impl Metadata {
    // `struct stat`'s field types differ between architectures (st_nlink is
    // u32 on aarch64, st_dev u64 here): casts that do nothing on x86_64 are
    // what keep the others building.
    #[allow(clippy::unnecessary_cast)]
    pub(crate) fn from_stat(st: &Stat) -> Self {
        Metadata {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            mode: st.st_mode as u32,
            nlink: st.st_nlink as u64,
            uid: st.st_uid,
            gid: st.st_gid,
            rdev: st.st_rdev as u64,
            size: st.st_size as u64,
            blocks: st.st_blocks as u64,
            atime: st.st_atime as i64,
            atime_nsec: st.st_atime_nsec as u32,
            mtime: st.st_mtime as i64,
            mtime_nsec: st.st_mtime_nsec as u32,
            ctime: st.st_ctime as i64,
            ctime_nsec: st.st_ctime_nsec as u32,
        }
    }

    /// The type encoded in `mode`.
    pub fn file_type(&self) -> FileType {
        FileType::from_mode(self.mode)
    }

    /// Whether it is a directory (a symlink's own metadata never is).
    pub fn is_dir(&self) -> bool {
        self.file_type() == FileType::Dir
    }

    /// Permission bits and set-id/sticky bits (`mode & 0o7777`).
    pub fn permissions(&self) -> u32 {
        self.mode & 0o7777
    }
}

fn flags(follow: bool) -> AtFlags {
    if follow {
        AtFlags::empty()
    } else {
        AtFlags::SYMLINK_NOFOLLOW
    }
}

/// `fstatat(dir, name)`.
pub fn stat_at(dir: BorrowedFd<'_>, name: &[u8], follow: bool) -> std::io::Result<Metadata> {
    let st = rustix::fs::statat(dir, name, flags(follow))?;
    Ok(Metadata::from_stat(&st))
}

/// An entry's metadata as the bulk fetch wants it: `None` when it cannot
/// be stat-ed (whoever asks again gets its error), and a dangling link's
/// own metadata when following links.
pub(crate) fn stat_entry(dir: BorrowedFd<'_>, name: &[u8], follow: bool) -> Option<Metadata> {
    let mut st = rustix::fs::statat(dir, name, flags(follow));
    if follow && st.is_err() {
        // A dangling link still has metadata of its own.
        st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW);
    }
    st.ok().map(|st| Metadata::from_stat(&st))
}

/// Stat by path, relative to the working directory. Paths longer than
/// `PATH_MAX` are reached one piece at a time.
pub fn stat_path(path: &Path, follow: bool) -> std::io::Result<Metadata> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() < crate::dir::PATH_PIECE {
        let st = rustix::fs::statat(CWD, bytes, flags(follow))?;
        return Ok(Metadata::from_stat(&st));
    }
    let (dir, name) = crate::dir::open_parent_of_long_path(bytes)?;
    stat_at(rustix::fd::AsFd::as_fd(&dir), name, follow)
}

/// `fstat` of an open descriptor.
pub fn stat_fd(fd: BorrowedFd<'_>) -> std::io::Result<Metadata> {
    Ok(Metadata::from_stat(&rustix::fs::fstat(fd)?))
}
