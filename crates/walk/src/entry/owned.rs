//! An entry owned: its path and what the walk knew of it.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::meta::{FileType, Metadata};

/// An owned entry, as the entry iterator ([`WalkBuilder::iter`](crate::WalkBuilder::iter)) yields it.
///
/// It holds what the directory listing said (name, type, inode), its depth,
/// and the metadata the walk fetched in bulk when it was asked to
/// ([`WalkBuilder::metadata`](crate::WalkBuilder::metadata)).
///
/// ```
/// use fnd_walk::{FileType, WalkBuilder};
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
/// for entry in WalkBuilder::new(dir.path()).min_depth(1).metadata(true).iter() {
///     let entry = entry.unwrap();
///     assert_eq!(entry.file_name(), "notes.txt");
///     assert_eq!(entry.depth(), 1);
///     assert_eq!(entry.file_type(), FileType::File);
///     assert_eq!(entry.cached_metadata().unwrap().size, 5);
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub(super) path: PathBuf,
    /// Where the name starts in `path` (0 for a root: its name is its path).
    pub(super) name_start: usize,
    pub(super) depth: usize,
    pub(super) file_type: FileType,
    pub(super) target_type: FileType,
    pub(super) ino: u64,
    pub(super) metadata: Option<Metadata>,
}

impl Entry {
    /// The entry's path: the root as given, then `/name` per level.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path's bytes (never converted to UTF-8).
    pub fn path_bytes(&self) -> &[u8] {
        self.path.as_os_str().as_bytes()
    }

    /// The path, without copying it.
    pub fn into_path(self) -> PathBuf {
        self.path
    }

    /// The entry's name as its directory stores it (for a root: the root path as given).
    pub fn file_name(&self) -> &OsStr {
        OsStr::from_bytes(self.name_bytes())
    }

    /// The name's bytes.
    pub fn name_bytes(&self) -> &[u8] {
        &self.path_bytes()[self.name_start..]
    }

    /// Depth below its root (a root is 0).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The type `getdents64` reported (a symlink stays a symlink, even when followed).
    pub fn file_type(&self) -> FileType {
        self.file_type
    }

    /// The type after following a symlink when the walk follows links;
    /// otherwise the same as [`file_type`](Self::file_type).
    pub fn target_type(&self) -> FileType {
        self.target_type
    }

    /// Inode number from the directory listing.
    pub fn ino(&self) -> u64 {
        self.ino
    }

    /// True for a root of the walk.
    pub fn is_root(&self) -> bool {
        self.name_start == 0
    }

    /// Metadata the walk fetched in bulk, if it was asked to and the stat succeeded.
    pub fn cached_metadata(&self) -> Option<&Metadata> {
        self.metadata.as_ref()
    }

    /// The entry's metadata, without following a final symlink (unless the
    /// walk follows links): the bulk-fetched one when there is one, else one
    /// stat by path.
    pub fn metadata(&self) -> std::io::Result<Metadata> {
        match self.metadata {
            Some(m) => Ok(m),
            None => crate::meta::stat_path(&self.path, false),
        }
    }
}
