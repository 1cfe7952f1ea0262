//! A directory listed whole before its entries are handed out (for a
//! filter's `enter`, which wants to know which names exist), replayed as if
//! read again; and the one interface the reader reads either through.

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

    /// Where the listing goes on after this entry (`d_off`); 0 for a kept
    /// listing, which is never split.
    pub(super) fn next_position(&self) -> u64 {
        match self {
            Listed::Raw(e) => e.next_position,
            Listed::Kept { .. } => 0,
        }
    }

    pub(super) fn ino(&self) -> u64 {
        match self {
            Listed::Raw(e) => e.ino,
            Listed::Kept { ino, .. } => *ino,
        }
    }
}

/// A whole directory listing kept in memory: read before a filter's `enter`
/// (which wants to know which names exist), then replayed as if read again.
#[derive(Default)]
pub(super) struct Listing {
    names: Vec<u8>,
    items: Vec<(u32, u32, FileType, u64)>,
    /// The error that ended the listing early, replayed after its entries.
    error: Option<Errno>,
}

impl Listing {
    pub(super) fn read(&mut self, fd: BorrowedFd<'_>, buf: &mut [MaybeUninit<u8>], end_marks_trusted: bool) {
        self.names.clear();
        self.items.clear();
        self.error = None;
        let mut raw = DirStream::new(fd, buf, end_marks_trusted);
        while let Some(item) = raw.next() {
            match item {
                Ok(e) => {
                    let start = self.names.len() as u32;
                    self.names.extend_from_slice(e.name);
                    self.items
                        .push((start, e.name.len() as u32, FileType::from_d_type(e.d_type), e.ino));
                }
                Err(e) => {
                    self.error = Some(e);
                    break;
                }
            }
        }
    }

    pub(super) fn contains(&self, name: &[u8]) -> bool {
        self.items
            .iter()
            .any(|&(start, len, _, _)| &self.names[start as usize..(start + len) as usize] == name)
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
                    Some(&(start, len, file_type, ino)) => {
                        replay.next += 1;
                        Some(Ok(Listed::Kept {
                            name: &listing.names[start as usize..(start + len) as usize],
                            file_type,
                            ino,
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
