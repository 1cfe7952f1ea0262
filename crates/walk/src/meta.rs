//! What the kernel says about one file: its type ([`FileType`], from a
//! directory record's `d_type` or a `st_mode`) and its metadata
//! ([`Metadata`], from one `fstatat`).
//!
//! Offers the stat calls the walk and its callers make: relative to an open
//! directory ([`stat_at`]; it skips the path walk a full-path stat pays for
//! every component), of an open descriptor ([`stat_fd`]), by path
//! ([`stat_path`], in pieces past `PATH_MAX`), and the bulk fetch's
//! `stat_entry`. Relies on `open` for paths past `PATH_MAX`.

use std::os::fd::BorrowedFd;
use std::path::Path;

use rustix::fs::{AtFlags, Stat, CWD};

use crate::open::{open_parent_of_long_path, PATH_PIECE};

/// The type of an entry, as `getdents64` reported it in `d_type` (or as a
/// stat found it, for file systems that answer `DT_UNKNOWN`).
///
/// ```
/// use fnd_walk::{FileType, WalkBuilder};
///
/// let dir = tempfile::tempdir().unwrap();
/// std::os::unix::fs::symlink("nowhere", dir.path().join("link")).unwrap();
/// let entry = WalkBuilder::new(dir.path()).min_depth(1).iter().next().unwrap().unwrap();
/// assert!(entry.file_type().is_symlink());
/// assert!(!entry.file_type().is_dir() && !entry.file_type().is_file());
/// assert_eq!(FileType::from_mode(0o040755), FileType::Dir);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileType {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (never followed by the type: see [`EntryRef::target_type`](crate::EntryRef::target_type)).
    Symlink,
    /// A block device.
    BlockDevice,
    /// A character device.
    CharDevice,
    /// A named pipe.
    Fifo,
    /// A Unix socket.
    Socket,
    /// The file system did not say; the engine resolves this with a stat
    /// before it decides whether to descend, so callers rarely see it.
    Unknown,
}

impl FileType {
    pub(crate) fn from_rustix(t: rustix::fs::FileType) -> Self {
        use rustix::fs::FileType as T;
        match t {
            T::RegularFile => FileType::File,
            T::Directory => FileType::Dir,
            T::Symlink => FileType::Symlink,
            T::BlockDevice => FileType::BlockDevice,
            T::CharacterDevice => FileType::CharDevice,
            T::Fifo => FileType::Fifo,
            T::Socket => FileType::Socket,
            _ => FileType::Unknown,
        }
    }

    /// The type a directory record gives (`d_type`): its value is the
    /// `st_mode` type bits shifted down by 12 (C's `DTTOIF`), `DT_UNKNOWN`
    /// included (0, which no mode type has).
    pub(crate) fn from_d_type(d_type: u8) -> Self {
        Self::from_mode(u32::from(d_type) << 12)
    }

    /// The type encoded in a `st_mode`.
    pub fn from_mode(mode: u32) -> Self {
        Self::from_rustix(rustix::fs::FileType::from_raw_mode(mode as _))
    }

    /// A directory (a symlink to one is [`Symlink`](Self::Symlink)).
    pub fn is_dir(self) -> bool {
        self == FileType::Dir
    }

    /// A regular file.
    pub fn is_file(self) -> bool {
        self == FileType::File
    }

    /// A symbolic link.
    pub fn is_symlink(self) -> bool {
        self == FileType::Symlink
    }
}

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

    /// The same fields from `statx`: the device as `st_dev` spells it
    /// (`makedev`), so that stamps from either call agree.
    pub(crate) fn from_statx(st: &rustix::fs::Statx) -> Self {
        let dev = |major, minor| rustix::fs::makedev(major, minor);
        Metadata {
            dev: dev(st.stx_dev_major, st.stx_dev_minor),
            ino: st.stx_ino,
            mode: u32::from(st.stx_mode),
            nlink: u64::from(st.stx_nlink),
            uid: st.stx_uid,
            gid: st.stx_gid,
            rdev: dev(st.stx_rdev_major, st.stx_rdev_minor),
            size: st.stx_size,
            blocks: st.stx_blocks,
            atime: st.stx_atime.tv_sec,
            atime_nsec: st.stx_atime.tv_nsec,
            mtime: st.stx_mtime.tv_sec,
            mtime_nsec: st.stx_mtime.tv_nsec,
            ctime: st.stx_ctime.tv_sec,
            ctime_nsec: st.stx_ctime.tv_nsec,
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

/// A stat that took longer than this waited on the file system: one of a
/// cached inode takes a few microseconds, one through a network or FUSE
/// file system a round trip.
pub(crate) const STAT_WAITED: std::time::Duration = std::time::Duration::from_micros(250);

/// [`stat_entry`] of each of `names` in `dir`, appended to `out` in order,
/// on `threads` threads at once: for stats that wait on the file system
/// ([`STAT_WAITED`]), where one thread has one request in flight. Each
/// thread takes the next name not taken yet.
pub(crate) fn stat_entries_at_once(
    dir: BorrowedFd<'_>,
    names: &[&[u8]],
    follow: bool,
    threads: usize,
    out: &mut Vec<Option<Metadata>>,
) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let take = || {
        let mut got = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(name) = names.get(i) else { return got };
            got.push((i, stat_entry(dir, name, follow)));
        }
    };
    let start = out.len();
    out.resize(start + names.len(), None);
    std::thread::scope(|scope| {
        // A thread that cannot start leaves its names to the others.
        let helpers: Vec<_> = (1..threads.max(1))
            .map_while(|_| crate::budget::start_thread(scope, None, take))
            .collect();
        let mine = take();
        for got in helpers.into_iter().filter_map(|h| h.join().ok()).chain([mine]) {
            for (i, m) in got {
                out[start + i] = m;
            }
        }
    });
}

/// Helper threads lent by the walk: `reserve(n)` grants up to `n` (maybe
/// none), `release` gives them back.
pub(crate) struct Helpers<'a> {
    pub reserve: &'a dyn Fn(usize) -> usize,
    pub release: &'a dyn Fn(usize),
}

/// [`stat_entry`] of each of `names` in `dir`, appended to `out` in order,
/// in rounds: each round [`stat_entries_at_once`] on the helpers granted
/// at its start, 8 stats a thread, or one stat alone when
/// none is granted. Helpers freed while the stats go on join the next
/// round.
pub(crate) fn stat_entries_in_rounds(
    dir: BorrowedFd<'_>,
    names: &[&[u8]],
    follow: bool,
    helpers: &Helpers<'_>,
    out: &mut Vec<Option<Metadata>>,
) {
    /// Stats a thread makes in a round.
    const ROUND: usize = 8;
    let mut at = 0;
    while at < names.len() {
        let left = names.len() - at;
        let granted = if left > 1 { (helpers.reserve)(left - 1) } else { 0 };
        if granted == 0 {
            out.push(stat_entry(dir, names[at], follow));
            at += 1;
            continue;
        }
        let round = left.min((granted + 1) * ROUND);
        stat_entries_at_once(dir, &names[at..at + round], follow, granted + 1, out);
        (helpers.release)(granted);
        at += round;
    }
}

/// Stat by path, relative to the working directory. Paths longer than
/// `PATH_MAX` are reached one piece at a time.
pub fn stat_path(path: &Path, follow: bool) -> std::io::Result<Metadata> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() < PATH_PIECE {
        let st = rustix::fs::statat(CWD, bytes, flags(follow))?;
        return Ok(Metadata::from_stat(&st));
    }
    let (dir, name) = open_parent_of_long_path(CWD, bytes)?;
    stat_at(rustix::fd::AsFd::as_fd(&dir), name, follow)
}

/// `fstat` of an open descriptor.
pub fn stat_fd(fd: BorrowedFd<'_>) -> std::io::Result<Metadata> {
    Ok(Metadata::from_stat(&rustix::fs::fstat(fd)?))
}

/// The metadata of `path` from `dir` (of `dir` itself when `path` is
/// empty; a link's own), as the file system's server has it: `statx` with
/// `AT_STATX_FORCE_SYNC`, so that NFS or a FUSE file system asks its
/// server instead of answering from the client's attribute cache, where a
/// change made by another client can stay hidden for up to a minute (NFS's
/// `acdirmax`); asking first also makes NFS drop a directory's cached
/// listing that the change made stale. A local file system answers as
/// `fstatat` does, in the same time (1.78–1.85 µs a directory either way,
/// a C loop over src's 10,000 directories, 2026-11-27). For whoever must
/// see every change, such as the index's stamps. Paths past `PATH_MAX` are
/// reached one piece at a time; a kernel without `statx` gets `fstatat`.
///
/// ```
/// use rustix::fs::CWD;
/// let dir = tempfile::tempdir().unwrap();
/// let synced = fnd_walk::meta::stat_synced(CWD, dir.path().as_os_str().as_encoded_bytes()).unwrap();
/// let plain = fnd_walk::meta::stat_path(dir.path(), false).unwrap();
/// assert_eq!((synced.dev, synced.ino, synced.ctime), (plain.dev, plain.ino, plain.ctime));
/// ```
pub fn stat_synced(dir: BorrowedFd<'_>, path: &[u8]) -> std::io::Result<Metadata> {
    use rustix::fs::StatxFlags;
    if path.len() >= PATH_PIECE {
        let (parent, name) = open_parent_of_long_path(dir, path)?;
        return stat_synced(rustix::fd::AsFd::as_fd(&parent), name);
    }
    let mut flags = AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_FORCE_SYNC;
    if path.is_empty() {
        flags |= AtFlags::EMPTY_PATH;
    }
    match rustix::fs::statx(dir, path, flags, StatxFlags::BASIC_STATS) {
        Ok(st) => Ok(Metadata::from_statx(&st)),
        Err(rustix::io::Errno::NOSYS) if path.is_empty() => stat_fd(dir),
        Err(rustix::io::Errno::NOSYS) => stat_at(dir, path, false),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::FileType;

    /// A folder of `n` files, `f0` to `f{n-1}`, each file's size its number.
    fn numbered_files(n: usize) -> (tempfile::TempDir, Vec<Vec<u8>>) {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<Vec<u8>> = (0..n).map(|i| format!("f{i}").into_bytes()).collect();
        for (i, name) in names.iter().enumerate() {
            std::fs::write(dir.path().join(std::str::from_utf8(name).unwrap()), vec![0; i]).unwrap();
        }
        (dir, names)
    }

    /// `statx` and `fstatat` give the same metadata, the device spelt
    /// alike, whether by name, by descriptor or past `PATH_MAX`.
    #[test]
    fn a_synced_stat_equals_a_plain_one() {
        use std::os::fd::AsFd;
        use std::os::unix::ffi::OsStrExt;
        let (dir, _) = numbered_files(3);
        let fd = std::fs::File::open(dir.path()).unwrap();
        let plain = super::stat_at(fd.as_fd(), b"f2", false).unwrap();
        assert_eq!(super::stat_synced(fd.as_fd(), b"f2").unwrap(), plain);
        assert_eq!(
            super::stat_synced(fd.as_fd(), b"").unwrap(),
            super::stat_fd(fd.as_fd()).unwrap()
        );
        // Made one level at a time, from the level above (past PATH_MAX a
        // path cannot name them).
        let mut long = dir.path().to_path_buf();
        let mut above = fd.try_clone().unwrap();
        while long.as_os_str().len() < 4200 {
            let part = "d".repeat(200);
            rustix::fs::mkdirat(&above, part.as_str(), rustix::fs::Mode::from(0o755)).unwrap();
            let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY;
            above = rustix::fs::openat(&above, part.as_str(), flags, rustix::fs::Mode::empty())
                .unwrap()
                .into();
            long.push(part);
        }
        let bytes = long.as_os_str().as_bytes();
        assert_eq!(
            super::stat_synced(rustix::fs::CWD, bytes).unwrap(),
            super::stat_path(&long, false).unwrap()
        );
    }

    #[test]
    fn stats_at_once_come_back_in_order_each_once() {
        use std::os::fd::AsFd;
        let (dir, names) = numbered_files(200);
        let mut names: Vec<&[u8]> = names.iter().map(|n| &n[..]).collect();
        names.insert(7, b"missing");
        let fd = std::fs::File::open(dir.path()).unwrap();
        for threads in [1, 2, 8, 500] {
            let mut out = vec![None];
            super::stat_entries_at_once(fd.as_fd(), &names, false, threads, &mut out);
            assert_eq!(out.len(), names.len() + 1);
            assert!(out[0].is_none() && out[8].is_none(), "{threads} threads");
            let sizes: Vec<u64> = out.iter().flatten().map(|m| m.size).collect();
            assert_eq!(sizes, (0..200).collect::<Vec<u64>>(), "{threads} threads");
        }
    }

    /// Whatever helpers are granted, and when: every name once, in order,
    /// and every helper given back.
    #[test]
    fn stats_in_rounds_come_back_in_order_on_the_helpers_granted() {
        use std::os::fd::AsFd;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let (dir, names) = numbered_files(300);
        let names: Vec<&[u8]> = names.iter().map(|n| &n[..]).collect();
        let fd = std::fs::File::open(dir.path()).unwrap();
        for free_after in [0, 5, 1000] {
            // None free for the first `free_after` asks, then 3.
            let (asks, lent, rounds) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
            let reserve = |n: usize| {
                if asks.fetch_add(1, Ordering::Relaxed) < free_after {
                    return 0;
                }
                rounds.fetch_add(1, Ordering::Relaxed);
                lent.fetch_add(n.min(3), Ordering::Relaxed);
                n.min(3)
            };
            let release = |n: usize| {
                lent.fetch_sub(n, Ordering::Relaxed);
            };
            let helpers = super::Helpers {
                reserve: &reserve,
                release: &release,
            };
            let mut out = vec![None];
            super::stat_entries_in_rounds(fd.as_fd(), &names, false, &helpers, &mut out);
            let sizes: Vec<u64> = out.iter().skip(1).map(|m| m.as_ref().unwrap().size).collect();
            assert_eq!(sizes, (0..300).collect::<Vec<u64>>(), "free after {free_after} asks");
            assert_eq!(lent.load(Ordering::Relaxed), 0, "every helper given back");
            let expected = if free_after >= 300 {
                0
            } else {
                (300 - free_after).div_ceil(4 * 8)
            };
            assert_eq!(rounds.load(Ordering::Relaxed), expected, "free after {free_after} asks");
        }
    }

    #[test]
    fn record_types_read_as_mode_types() {
        let types = [
            (libc::DT_REG, FileType::File),
            (libc::DT_DIR, FileType::Dir),
            (libc::DT_LNK, FileType::Symlink),
            (libc::DT_BLK, FileType::BlockDevice),
            (libc::DT_CHR, FileType::CharDevice),
            (libc::DT_FIFO, FileType::Fifo),
            (libc::DT_SOCK, FileType::Socket),
            (libc::DT_UNKNOWN, FileType::Unknown),
        ];
        for (d_type, file_type) in types {
            assert_eq!(FileType::from_d_type(d_type), file_type, "{d_type}");
        }
    }
}
