//! A directory listed before its entries are handed out (for a filter's
//! `enter`, which wants to know which names exist), replayed as if read
//! again; and the one interface the reader reads either through. A huge
//! directory is listed only in part (see [`LISTED_AT_MOST`]): the rest is
//! read from the descriptor after the replay, as any directory's.

use std::mem::MaybeUninit;
use std::os::fd::BorrowedFd;

use rustix::io::Errno;

use crate::dirent::{DirStream, Record};
use crate::meta::FileType;

/// One entry as the directory listed it.
pub(super) enum Listed<'a> {
    Raw(Record<'a>),
    Kept {
        name: &'a [u8],
        file_type: FileType,
        ino: u64,
        next_position: u64,
    },
}

impl Listed<'_> {
    pub(super) fn name(&self) -> &[u8] {
        match self {
            Listed::Raw(e) => e.name,
            Listed::Kept { name, .. } => name,
        }
    }

    pub(super) fn file_type(&self) -> FileType {
        match self {
            Listed::Raw(e) => FileType::from_d_type(e.d_type),
            Listed::Kept { file_type, .. } => *file_type,
        }
    }

    /// Where the listing goes on after this entry (`d_off`).
    pub(super) fn next_position(&self) -> u64 {
        match self {
            Listed::Raw(e) => e.next_position,
            Listed::Kept { next_position, .. } => *next_position,
        }
    }

    pub(super) fn ino(&self) -> u64 {
        match self {
            Listed::Raw(e) => e.ino,
            Listed::Kept { ino, .. } => *ino,
        }
    }
}

/// Entries a listing takes before it stops, at the end of the `getdents`
/// call that passed them. Listed whole, a million files in one directory
/// were read by one thread before any was handed out, and never cut into
/// parts: `fnd` with its ignore files looked for took 2.2x `fnd -u`.
pub(super) const LISTED_AT_MOST: usize = 4096;

/// A directory's listing, or its first part, kept in memory: read before a
/// filter's `enter` (which wants to know which names exist), then replayed
/// as if read again.
#[derive(Default)]
pub(super) struct Listing {
    names: Vec<u8>,
    /// Each entry's name (start, length), type, inode and `d_off`.
    items: Vec<(u32, u32, FileType, u64, u64)>,
    /// The error that ended the listing early, replayed after its entries.
    error: Option<Errno>,
    /// The listing holds every entry: the descriptor is at the end.
    whole: bool,
}

impl Listing {
    /// List `fd` from where it stands, up to [`LISTED_AT_MOST`] entries
    /// and the rest of that call's (the descriptor then stands after them).
    pub(super) fn read(&mut self, fd: BorrowedFd<'_>, buf: &mut [MaybeUninit<u8>], end_marks_trusted: bool) {
        self.names.clear();
        self.items.clear();
        self.error = None;
        self.whole = false;
        let mut raw = DirStream::new(fd, buf, end_marks_trusted);
        loop {
            if self.items.len() >= LISTED_AT_MOST && raw.drained() {
                return;
            }
            match raw.next() {
                Some(Ok(e)) => {
                    let start = self.names.len() as u32;
                    self.names.extend_from_slice(e.name);
                    let file_type = FileType::from_d_type(e.d_type);
                    (self.items).push((start, e.name.len() as u32, file_type, e.ino, e.next_position));
                }
                Some(Err(e)) => {
                    self.error = Some(e);
                    break;
                }
                None => break,
            }
        }
        self.whole = true;
    }

    /// Whether the listing holds every entry (else the rest is read after
    /// its replay).
    pub(super) fn is_whole(&self) -> bool {
        self.whole
    }

    /// Whether the listing holds `name`; in a listing that is not whole,
    /// a name not held is looked for in the directory (`fd`).
    pub(super) fn contains(&self, name: &[u8], fd: BorrowedFd<'_>) -> bool {
        let held =
            (self.items.iter()).any(|&(start, len, ..)| &self.names[start as usize..(start + len) as usize] == name);
        held || (!self.whole && rustix::fs::statat(fd, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).is_ok())
    }

    pub(super) fn replay(&self) -> Replay<'_> {
        Replay { listing: self, next: 0 }
    }
}

pub(super) struct Replay<'a> {
    listing: &'a Listing,
    next: usize,
}

/// Where a directory's entries come from: the kernel, or a listing read before.
pub(super) enum Source<'a> {
    Raw(DirStream<'a>),
    Listed(Replay<'a>),
}

impl Source<'_> {
    pub(super) fn next(&mut self) -> Option<Result<Listed<'_>, Errno>> {
        match self {
            Source::Raw(raw) => raw.next().map(|item| item.map(Listed::Raw)),
            Source::Listed(replay) => {
                let listing = replay.listing;
                match listing.items.get(replay.next) {
                    Some(&(start, len, file_type, ino, next_position)) => {
                        replay.next += 1;
                        Some(Ok(Listed::Kept {
                            name: &listing.names[start as usize..(start + len) as usize],
                            file_type,
                            ino,
                            next_position,
                        }))
                    }
                    None => {
                        // The error, if any, comes once, after the entries read before it.
                        let error = listing.error.filter(|_| replay.next != usize::MAX);
                        replay.next = usize::MAX;
                        error.map(Err)
                    }
                }
            }
        }
    }
}
