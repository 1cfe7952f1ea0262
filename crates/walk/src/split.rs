//! Reading one huge directory with several threads at once.
//!
//! Offers [`split`] (cut what is left of a directory being read into
//! [`Part`]s, each with a descriptor of its own positioned at its start)
//! and [`PROBE_ENTRIES`] (when the reader asks). Relies on `dir` for the
//! directory being read and `budget` for the parts' descriptors; the reader
//! reads each part and the scheduler hands them to idle workers.
//!
//! One directory is one `getdents64` stream, so a walk whose time goes to a
//! single huge directory (a million files in one place) would run on one
//! core however many it has. On ext4 that stream can be cut: a directory
//! with an htree index is listed in hash order, and the position
//! `getdents64` gives as each entry's `d_off` is the hash of the entry after
//! it, `(major >> 1) << 32 | minor`, spread evenly over `[0, 0x7fff_ffff << 32)`.
//! A second open of the directory, `lseek`ed to a hash position, lists from
//! there (this is what makes `telldir`/`seekdir` work on ext4). So the hash
//! range left after the first few thousand entries is cut into parts, each
//! read through its own descriptor by whichever worker takes it; a part
//! stops before the first entry whose own position (the `d_off` of the entry
//! before it) reaches the next part's start.
//!
//! This is done only where it is known to hold: on ext4 (by `fstatfs`), for
//! a directory big enough to pay for the extra opens, and when the positions
//! seen are 64-bit hash positions (an unindexed ext4 directory reports byte
//! offsets, which never pass its size). Anywhere else the directory is read
//! in one stream as always.

use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags, SeekFrom};

use crate::budget::{Budget, Reservation};
use crate::dir::Dir;

/// Entries read from a directory before it is considered for splitting:
/// a directory this small is over before a second thread would start.
pub(crate) const PROBE_ENTRIES: usize = 4096;

/// Directory size (bytes of directory blocks) from which it is split: about
/// 30,000 entries of short names.
const MIN_DIR_BYTES: u64 = 1 << 20;

/// `EXT4_SUPER_MAGIC` (also ext2/ext3, which share the htree format).
const EXT4_MAGIC: i64 = 0xEF53;

/// The position past the last hash (`EXT4_HTREE_EOF_64BIT`).
const HASH_END: u64 = 0x7fff_ffff << 32;

/// The rest of a directory from one hash position to another, to be read
/// through its own descriptor (already positioned at the start).
pub(crate) struct Part {
    /// The directory as its first reader set it up.
    pub(crate) dir: Arc<Dir>,
    pub(crate) fd: OwnedFd,
    /// Where the part starts and where the next one starts (`u64::MAX` for the last).
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// The entries and name bytes it is expected to hold (see [`expected`]).
    pub(crate) room: (usize, usize),
    pub(crate) reserved: Reservation,
}

/// The entries and name bytes expected from position `from` to `to` of a
/// directory whose listing held `seen` (entries, name bytes) up to `pos`:
/// hash positions are spread evenly, so the entries are too. A reader that
/// holds its whole stretch in one buffer makes room for it at once: grown
/// by doubling, the buffer is copied to new pages each time (a sorted walk
/// of a million files in one directory: 46,500 → 41,500 page faults, 278
/// → 265 ms on two threads).
pub(crate) fn expected(seen: (usize, usize), pos: u64, from: u64, to: u64) -> (usize, usize) {
    let span = u128::from(to.min(HASH_END).saturating_sub(from));
    let per = |n: usize| (n as u128 * span / u128::from(pos.max(1))) as usize;
    (per(seen.0), per(seen.1))
}

/// A directory being read from position `pos` (that of the entry just read),
/// with a part of the walk's workers to share it: if it can be split, open
/// the parts after the first and return where the first must stop. `seen`:
/// the entries and name bytes read so far, to tell each part what to expect.
pub(crate) fn split(
    budget: &Budget,
    dir: &Arc<Dir>,
    fd: BorrowedFd<'_>,
    pos: u64,
    seen: (usize, usize),
    parts: usize,
) -> Option<(u64, Vec<Part>)> {
    if parts < 2 || pos <= u64::from(u32::MAX) || pos >= HASH_END {
        return None;
    }
    let fs = rustix::fs::fstatfs(fd).ok()?;
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between targets
    if fs.f_type as i64 != EXT4_MAGIC {
        return None;
    }
    let size = rustix::fs::fstat(fd).ok()?.st_size as u64;
    if size < MIN_DIR_BYTES || pos <= size {
        return None;
    }
    let step = (HASH_END - pos) / parts as u64;
    let mut rest = Vec::with_capacity(parts - 1);
    for i in 1..parts as u64 {
        let start = pos + step * i;
        let end = if i + 1 == parts as u64 { u64::MAX } else { start + step };
        let reserved = Reservation::take(budget)?;
        // A part that cannot be opened: one stream after all (the parts
        // opened so far are dropped, and their reservations with them).
        let fd = reopen_at(fd, start)?;
        rest.push(Part {
            dir: dir.clone(),
            fd,
            start,
            end,
            room: expected(seen, pos, start, end),
            reserved,
        });
    }
    Some((pos + step, rest))
}

/// A new open file description of the directory (its own position and
/// readdir state; `dup` would share them), positioned at `start`.
fn reopen_at(fd: BorrowedFd<'_>, start: u64) -> Option<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let reopened = rustix::fs::openat(fd, ".", flags, Mode::empty()).ok()?;
    rustix::fs::seek(&reopened, SeekFrom::Start(start)).ok()?;
    Some(reopened)
}
