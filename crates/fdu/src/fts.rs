//! What gnulib's fts (and so GNU du) does that shows in du's output: the
//! order of a directory's entries. fts returns them as the directory read
//! does, but reads at most `FTS_MAX_READDIR_ENTRIES` at a time and sorts
//! a batch of more than `FTS_INODE_SORT_DIR_ENTRIES_THRESHOLD` by inode,
//! on file systems where that is expected to speed up the stats.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use fnd_walk::Within;

/// gnulib fts: a directory read in a batch of more than this many entries
/// has the batch sorted by inode (`FTS_INODE_SORT_DIR_ENTRIES_THRESHOLD`),
/// batches being `FTS_MAX_READDIR_ENTRIES` long.
const INODE_SORT_ABOVE: usize = 10_000;
const READDIR_BATCH: usize = 100_000;

/// The order du lists a directory's entries in under `path`: as read, in
/// batches sorted by inode where gnulib's fts sorts them.
pub fn du_order(path: &[u8]) -> Within {
    if inode_sort_may_be_useful(path) {
        Within::InodeBatches {
            above: INODE_SORT_ABOVE,
            batch: READDIR_BATCH,
        }
    } else {
        Within::Listing
    }
}

/// gnulib's `dirent_inode_sort_may_be_useful`: every file system but NFS,
/// CIFS, tmpfs and Lustre (where the sort defeats the client's statahead).
pub fn inode_sort_may_be_useful(path: &[u8]) -> bool {
    const NFS: i64 = 0x6969;
    const CIFS: i64 = 0xFF53_4D42;
    const TMPFS: i64 = 0x0102_1994;
    const LUSTRE: i64 = 0x0BD0_0BD0;
    match rustix::fs::statfs(Path::new(OsStr::from_bytes(path))) {
        // f_type is i64 here, u32 on some architectures.
        #[allow(clippy::unnecessary_cast)]
        Ok(st) => !matches!(st.f_type as i64, NFS | CIFS | TMPFS | LUSTRE),
        Err(_) => true,
    }
}
