//! The filter contract: what decides, per entry, whether it is yielded and
//! whether the walk descends into it.
//!
//! Offers [`EntryFilter`] (called by the reader on the thread that reads a
//! directory: [`enter`](EntryFilter::enter) once per directory, before its
//! entries, so a filter can carry inherited state down the tree, ignore
//! rules, say; then [`decide`](EntryFilter::decide) per entry), what it is
//! shown ([`DirInfo`], [`RawEntry`]) and what it answers ([`Decision`],
//! [`FilterState`]); and, for a walk shared by several processes (MPI
//! ranks), how a directory's state travels with a subdirectory handed to
//! another process ([`Handover`], [`EntryFilter::export_state`],
//! [`EntryFilter::import_state`]). Relies on `meta` for [`FileType`] only:
//! filters are written against this contract, never against the reader.

use std::any::Any;
use std::os::fd::BorrowedFd;
use std::sync::Arc;

use crate::meta::FileType;

/// State a filter attaches to a directory; its children's directories see it as `parent`.
pub type FilterState = Arc<dyn Any + Send + Sync>;

/// Why a filter could not rebuild a state another process exported.
pub type ImportError = Box<dyn std::error::Error + Send + Sync>;

/// A directory the walk has just opened.
pub struct DirInfo<'a> {
    /// Path of the directory.
    pub path: &'a [u8],
    /// Depth of the directory (a root is 0).
    pub depth: usize,
    /// The open directory, for `openat` of files inside it (`.gitignore`, say).
    pub fd: BorrowedFd<'a>,
    /// For each of the filter's [`probe_names`](EntryFilter::probe_names):
    /// whether the directory lists it. `None` when the walk did not look
    /// (the filter then has to try the names itself).
    pub present: Option<&'a [bool]>,
}

/// An entry as the directory listed it, before it is put in a chunk.
pub struct RawEntry<'a> {
    /// The name as the directory lists it.
    pub name: &'a [u8],
    /// Path of the directory holding it, followed by `/`.
    pub parent_prefix: &'a [u8],
    /// Depth of the entry (a root's entries are depth 1).
    pub depth: usize,
    /// The type the listing gave (a symlink stays a symlink).
    pub file_type: FileType,
    /// The type of a symlink's target when the walk follows links.
    pub target_type: FileType,
    /// The directory holding the entry, open: a filter that needs metadata
    /// stats relative to it (`fstatat(dir_fd, name)`) instead of by path.
    pub dir_fd: BorrowedFd<'a>,
}

impl RawEntry<'_> {
    /// Would the walk descend into it (a directory, or a followed link to one)?
    pub fn is_dir(&self) -> bool {
        self.target_type == FileType::Dir
    }
}

/// What to do with an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Hand the entry to the caller.
    pub emit: bool,
    /// For a directory: read it.
    pub descend: bool,
}

impl Decision {
    /// Yield the entry and, for a directory, read it.
    pub const KEEP: Decision = Decision {
        emit: true,
        descend: true,
    };
    /// Neither yield the entry nor read it.
    pub const SKIP: Decision = Decision {
        emit: false,
        descend: false,
    };
}

/// A subdirectory handed to another process of the walk (an MPI rank), as
/// [`EntryFilter::export_state`] and [`EntryFilter::import_state`] see it.
/// The state that travels is its parent's: the state the subdirectory's
/// own `enter` is given as `parent` when the other process reads it.
#[derive(Clone, Copy, Debug)]
pub struct Handover<'a> {
    /// The parent's path as the walk spells it: the root as given, then
    /// `/name` per level.
    pub parent_path: &'a [u8],
    /// The parent's depth (a root is 0).
    pub parent_depth: usize,
    /// The subdirectory's name in its parent.
    pub name: &'a [u8],
    /// Which of the walk's roots it lies under (every process of a walk
    /// has the same roots, in the same order)…
    pub root: usize,
    /// …and that root's path as given.
    pub root_path: &'a [u8],
    /// Whether the walk follows symbolic links.
    pub follow_links: bool,
}

/// A per-entry filter with per-directory state. Both calls happen on the
/// thread that reads the directory, before entries are batched.
///
/// # Across processes
///
/// A walk shared by several processes (MPI ranks, see the crate's `mpi`
/// feature) hands pending directories from one to another. A directory
/// whose parent has filter state goes only if the filter can describe
/// that state in bytes ([`export_state`](Self::export_state)) and rebuild
/// it on the other side ([`import_state`](Self::import_state)); by
/// default it cannot, and such directories stay in the process that found
/// them (always correct, only less evenly shared). Both sides build their
/// filter the same way; each rebuilds states with its own.
pub trait EntryFilter: Send + Sync {
    /// Called once for each directory as it is opened, before its entries.
    /// Returns the state its entries are judged with (and its subdirectories inherit).
    fn enter(&self, dir: &DirInfo<'_>, parent: Option<&FilterState>) -> Option<FilterState>;

    /// Decide for one entry of a directory whose state `enter` returned.
    fn decide(&self, state: Option<&FilterState>, entry: &RawEntry<'_>) -> Decision;

    /// Names whose presence `enter` wants to know (`.gitignore`, say). When
    /// there are some, the walk lists a directory before entering it and
    /// tells [`DirInfo::present`], which spares a failed `openat` per name
    /// and directory.
    fn probe_names(&self) -> &[Vec<u8>] {
        &[]
    }

    /// Describe `state`, the state of the parent of the subdirectory in
    /// `handover`, for [`import_state`](Self::import_state) in another
    /// process; `None` (the default) when it cannot travel, and the
    /// subdirectory then stays here. Called on whichever thread gives
    /// work away (possibly not a walking thread); it must not block.
    ///
    /// A state that depends only on the tree (ignore rules) can be
    /// rebuilt from the path alone, and exports next to nothing; one that
    /// gathers results (a du total) can register itself under an id here
    /// and export the id, so that the importing side's state reports back
    /// to it.
    fn export_state(&self, state: &FilterState, handover: &Handover<'_>) -> Option<Vec<u8>> {
        let _ = (state, handover);
        None
    }

    /// Rebuild, in this process, the parent state another process's
    /// [`export_state`](Self::export_state) described as `bytes`, for the
    /// subdirectory in `handover`. Called on a walking thread before the
    /// subdirectory is read; it may read the file system. The bytes come
    /// from another process: check them, and say what is wrong rather than
    /// panic. The default refuses (it never exports).
    fn import_state(&self, bytes: &[u8], handover: &Handover<'_>) -> Result<FilterState, ImportError> {
        let _ = (bytes, handover);
        Err("this filter's state cannot be rebuilt in another process".into())
    }
}
