//! Which file systems a walk can meet, and whether on all of them a
//! listing may stop where its last record marks the end.
//!
//! `getdents64` on ext2/3/4, XFS, Btrfs and tmpfs hands out records until the
//! buffer is full, the directory ends or a signal is pending; most of them
//! mark the end in the last record's position (`crate::dirent`), and where
//! one does not, the walk reads on until 0. FUSE, NFS, CIFS and others may
//! return less at any time, with positions of their own choosing. A walk
//! skips the read that would return 0 only when every file system mounted
//! at or under its roots (and the one holding each root) is of the first
//! kind; with links followed, that is every mount there is.
//!
//! Offers [`end_marks_trusted`] and [`served_remotely`]. Relies on nothing
//! else in this crate: only `/proc/self/mountinfo` (and `/proc/self/fd` for
//! real paths).

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// File systems whose `readdir` fills the buffer as far as the directory goes.
const FILLING: &[&[u8]] = &[b"ext2", b"ext3", b"ext4", b"xfs", b"btrfs", b"tmpfs"];

/// File systems whose calls wait on another machine or on a server in
/// user space (with every `fuse.*` type).
const SERVED: &[&[u8]] = &[
    b"nfs",
    b"nfs4",
    b"cifs",
    b"smb3",
    b"smbfs",
    b"lustre",
    b"gpfs",
    b"beegfs",
    b"ceph",
    b"9p",
    b"afs",
    b"virtiofs",
    b"orangefs",
    b"pvfs2",
    b"fuse",
    b"fuseblk",
];

/// Whether a file system that holds `root`, or is mounted within it, is
/// one whose calls wait on a server (NFS, SMB, Lustre, GPFS,
/// BeeGFS, Ceph, FUSE…), where many calls in flight pay while on a local
/// disk in the cache two cores are all there is. False when that cannot
/// be told.
///
/// ```
/// assert!(!fnd_walk::served_remotely(std::path::Path::new("/does/not/exist")));
/// ```
pub fn served_remotely(root: &Path) -> bool {
    let (Some(mountinfo), Some(root)) = (read_mountinfo(), real_path(root)) else {
        return false;
    };
    parse(&mountinfo).is_some_and(|mounts| any_served(&mounts, &root))
}

/// Is a mount that holds `root`, or lies within it, of a [`SERVED`] type?
fn any_served(mounts: &[(PathBuf, &[u8])], root: &Path) -> bool {
    types_in_reach(mounts, root).any(|fs_type| SERVED.contains(&fs_type) || fs_type.starts_with(b"fuse."))
}

/// The types of the mounts that hold `root` or lie within it. Mounts a
/// later one hides count too, which errs on the safe side for both
/// questions asked of them.
fn types_in_reach<'m>(mounts: &'m [(PathBuf, &'m [u8])], root: &'m Path) -> impl Iterator<Item = &'m [u8]> + 'm {
    mounts
        .iter()
        .filter(move |(mount_point, _)| root.starts_with(mount_point) || mount_point.starts_with(root))
        .map(|(_, fs_type)| *fs_type)
}

/// `/proc/self/mountinfo`, or `None` when it cannot be read. Sized up
/// front: the file reports no size, and std's read would start at 32
/// bytes and grow, one system call each time.
fn read_mountinfo() -> Option<Vec<u8>> {
    let mut mountinfo = Vec::with_capacity(16 * 1024);
    let mut file = std::fs::File::open("/proc/self/mountinfo").ok()?;
    file.read_to_end(&mut mountinfo).ok()?;
    Some(mountinfo)
}

/// May a listing stop where its last record marks the end (without the
/// `getdents64` call that returns 0), everywhere a walk from `roots` can
/// go? False whenever that cannot be told.
pub(crate) fn end_marks_trusted<'a>(roots: impl IntoIterator<Item = &'a Path>, follow_links: bool) -> bool {
    let Some(mountinfo) = read_mountinfo() else {
        return false;
    };
    let Some(mounts) = parse(&mountinfo) else {
        return false;
    };
    let canonical = |root: &Path| {
        if follow_links {
            Some(PathBuf::from("/"))
        } else {
            real_path(root)
        }
    };
    roots
        .into_iter()
        .all(|root| canonical(root).is_some_and(|root| all_filling(&mounts, &root)))
}

/// `root` with no symbolic link, `.` or `..` in it: what the kernel says
/// of a descriptor of it, else `canonicalize`. A refresh of an index walks
/// from each changed directory, 1,400 roots 20 levels down in million, and
/// `canonicalize` reads each level as a link: 26,666 `readlink` calls, a
/// tenth of that refresh's CPU time; this is three calls a root.
fn real_path(root: &Path) -> Option<PathBuf> {
    use rustix::fs::{Mode, OFlags};
    let from_descriptor = || {
        let fd = rustix::fs::open(root, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok()?;
        let link = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
        let path = rustix::fs::readlink(link, Vec::new()).ok()?.into_bytes();
        // A removed directory reads as "/old/path (deleted)".
        (path.starts_with(b"/") && !path.ends_with(b" (deleted)")).then(|| PathBuf::from(OsString::from_vec(path)))
    };
    from_descriptor().or_else(|| root.canonicalize().ok())
}

/// Mount points with their file system types, or `None` for a line that
/// does not read as `/proc/self/mountinfo` says.
fn parse(mountinfo: &[u8]) -> Option<Vec<(PathBuf, &[u8])>> {
    mountinfo
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
            let mount_point = fields.get(4)?;
            // Six fixed fields, optional tagged ones, then `-` and the type.
            let separator = 6 + fields.get(6..)?.iter().position(|&f| f == b"-")?;
            let fs_type = fields.get(separator + 1)?;
            Some((PathBuf::from(OsString::from_vec(unescape(mount_point))), *fs_type))
        })
        .collect()
}

/// A mount point as written in mountinfo: space, tab, newline and backslash
/// as octal escapes (`\040`).
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field
            .get(i + 1..i + 4)
            .filter(|d| field[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(d) => {
                out.push(d.iter().fold(0u8, |n, b| n.wrapping_mul(8) + (b - b'0')));
                i += 4;
            }
            None => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    out
}

/// Is every mount that holds `root`, or lies within it, of a filling type?
fn all_filling(mounts: &[(PathBuf, &[u8])], root: &Path) -> bool {
    types_in_reach(mounts, root).all(|fs_type| FILLING.contains(&fs_type))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &[u8] = b"22 27 0:21 / /proc rw,relatime - proc proc rw\n\
        27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n\
        30 27 0:30 / /home/u/fuse\\040dir rw - fuse.sshfs host: rw\n\
        31 27 0:31 / /tmp rw shared:5 - tmpfs tmpfs rw\n";

    #[test]
    fn a_real_path_is_what_canonicalize_says() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("a b/c")).unwrap();
        std::os::unix::fs::symlink("a b", d.join("link")).unwrap();
        for path in [d.join("link/c"), d.join("a b/c/../c/."), d.join("link")] {
            assert_eq!(real_path(&path), path.canonicalize().ok(), "{}", path.display());
        }
        assert_eq!(real_path(&d.join("missing")), None);
    }

    #[test]
    fn mountinfo_reads_as_mount_points_and_types() {
        let mounts = parse(MOUNTINFO).unwrap();
        assert_eq!(mounts[2], (PathBuf::from("/home/u/fuse dir"), &b"fuse.sshfs"[..]));
        assert_eq!(mounts[3], (PathBuf::from("/tmp"), &b"tmpfs"[..]));
        assert!(parse(b"garbage\n").is_none());
    }

    #[test]
    fn every_file_system_in_reach_must_fill() {
        let mounts = parse(MOUNTINFO).unwrap();
        assert!(all_filling(&mounts, Path::new("/data/src")));
        assert!(all_filling(&mounts, Path::new("/tmp/x")));
        assert!(
            all_filling(&mounts, Path::new("/home/u/fuse")),
            "a name that only starts like the mount"
        );
        assert!(!all_filling(&mounts, Path::new("/home/u")), "holds a FUSE mount");
        assert!(
            !all_filling(&mounts, Path::new("/home/u/fuse dir/a")),
            "on a FUSE mount"
        );
        assert!(!all_filling(&mounts, Path::new("/")), "holds /proc");
    }

    #[test]
    fn a_served_file_system_in_reach_is_found() {
        let mounts = parse(MOUNTINFO).unwrap();
        assert!(!any_served(&mounts, Path::new("/data/src")));
        assert!(!any_served(&mounts, Path::new("/home/u/fuse")));
        assert!(any_served(&mounts, Path::new("/home/u")), "holds a FUSE mount");
        assert!(any_served(&mounts, Path::new("/home/u/fuse dir/a")), "on a FUSE mount");
        let nfs = parse(b"27 1 254:0 / / rw - ext4 /dev/vda rw\n40 27 0:40 / /home rw - nfs4 srv:/home rw\n").unwrap();
        assert!(any_served(&nfs, Path::new("/home/u/src")));
        assert!(!any_served(&nfs, Path::new("/tmp")));
    }

    #[test]
    fn this_machine_answers_without_failing() {
        let here = std::env::temp_dir();
        let _ = end_marks_trusted([here.as_path()], false);
        assert!(!end_marks_trusted([here.join("does-not-exist").as_path()], false));
    }
}
