//! A result as everything after the search sees it, and where results go.
//!
//! The formats, colours, hyperlinks and commands ask a result only what
//! [`Found`] offers: its name, types, depth, path and metadata on demand.
//! The walk's entries ([`EntryRef`]) are results; entries read from
//! elsewhere (an index of the tree, say) can be too, and are then printed,
//! formatted and handed to commands exactly as the walk's. A search hands
//! its results to an [`Emit`], one per thread, and does not know whether
//! they are printed or run, nor where the bytes go.

use std::io;

use fnd_walk::{EntryRef, FileType, Metadata};

/// A search result: what the writers may ask of it.
pub trait Found {
    /// The name as its directory stores it (for a root: its path as given).
    fn name_bytes(&self) -> &[u8];

    /// The type the directory listing gave (a symlink stays a symlink).
    fn file_type(&self) -> FileType;

    /// The type after following a symlink when the search follows links;
    /// otherwise the same as [`file_type`](Self::file_type).
    fn target_type(&self) -> FileType;

    /// Depth below its search root (the root's entries are at 1).
    fn depth(&self) -> usize;

    /// Metadata, without following a final symlink.
    fn metadata(&self) -> io::Result<Metadata>;

    /// Metadata of what the entry points to.
    fn metadata_follow(&self) -> io::Result<Metadata>;

    /// Append the path as the search spells it: the parent's path, `/`, the name.
    fn write_path(&self, out: &mut Vec<u8>);
}

impl Found for EntryRef<'_> {
    #[inline]
    fn name_bytes(&self) -> &[u8] {
        EntryRef::name_bytes(self)
    }

    #[inline]
    fn file_type(&self) -> FileType {
        EntryRef::file_type(self)
    }

    #[inline]
    fn target_type(&self) -> FileType {
        EntryRef::target_type(self)
    }

    #[inline]
    fn depth(&self) -> usize {
        EntryRef::depth(self)
    }

    fn metadata(&self) -> io::Result<Metadata> {
        EntryRef::metadata(self)
    }

    fn metadata_follow(&self) -> io::Result<Metadata> {
        EntryRef::metadata_follow(self)
    }

    fn write_path(&self, out: &mut Vec<u8>) {
        EntryRef::write_path(self, out)
    }
}

/// One thread's way out for results: printed, or handed to commands.
pub trait Emit {
    /// One result; `prefix` is the text before its name in its path (the
    /// parent's path and `/`, empty for a root). False when output is gone
    /// and the search should stop.
    fn emit(&mut self, entry: &impl Found, prefix: &[u8]) -> bool;

    /// Write out what is buffered (before an error message, say); false
    /// when output is gone.
    fn flush(&mut self) -> bool;
}
