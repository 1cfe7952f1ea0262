//! What one walk is asked to do, resolved, and what all its threads share:
//! the contract the reader and every scheduler are written against.
//!
//! Offers [`Order`] and [`Sort`] (public choices of the builder),
//! [`Settings`] (the walk's options, resolved: thread count, I/O depth, the
//! one filter every filter was folded into; plain data, no builder in it)
//! and [`Shared`] (the settings, the roots, the stop flag, the descriptor
//! budget, and what the walk learns once for all its threads). Relies on
//! `filter` for the filter's type, `budget` for the descriptor budget and
//! `mounts` for whether a short directory read is the last.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use crate::budget::Budget;
use crate::filter::ErasedHook;

/// The order directories are read in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Order {
    /// Level by level: all entries of depth 1, then of depth 2, …
    /// (within a level, directories in the order they were found).
    BreadthFirst,
    /// One directory's entries, then each of its subdirectories' subtrees in
    /// listing order, recursively. Single-threaded and deterministic.
    DepthFirst,
    /// Directories shared between worker threads; directories interleave,
    /// and a huge directory may be read by several threads at once (on
    /// ext4), its chunks interleaving too.
    #[default]
    Parallel,
}

/// How entries are sorted within each directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    /// By name bytes.
    Name,
}

/// A walk's options: as the builder was given them, then resolved by it for
/// the layers below (thread count, I/O depth, every filter folded into one).
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) order: Order,
    /// Worker threads (resolved: 1 for the serial orders).
    pub(crate) threads: usize,
    /// Parallel workers take their shallowest pending directory first.
    pub(crate) shallow_first: bool,
    /// Most workers of a parallel walk once its reads wait on I/O (see
    /// `crate::io`; as given, 0 is the default, which depends on whether
    /// the walk runs alone or as one rank of a job).
    pub(crate) io_depth: usize,
    pub(crate) min_depth: usize,
    pub(crate) max_depth: Option<usize>,
    pub(crate) follow_links: bool,
    pub(crate) same_file_system: bool,
    /// A real path every root lies within, with no symbolic link between:
    /// the mounts that matter are those of this one path.
    pub(crate) roots_within: Option<PathBuf>,
    pub(crate) skip_hidden: bool,
    /// Stat every yielded entry before its chunk is visited.
    pub(crate) metadata: bool,
    pub(crate) sort: Option<Sort>,
    /// Each directory read is one chunk: never cut at `chunk_size`, never
    /// split among threads (a sort implies it).
    pub(crate) whole_dirs: bool,
    pub(crate) chunk_size: usize,
    /// Hand a directory's last chunk to the visitor even when it is empty.
    pub(crate) visit_empty: bool,
    /// The walk's hook: every filter and hook of the walk folded into one
    /// (`crate::hooks::Chain`) when the walk starts.
    pub(crate) hook: Option<Arc<dyn ErasedHook>>,
}

impl Settings {
    /// Is each directory read handed over as one chunk?
    pub(crate) fn whole(&self) -> bool {
        self.whole_dirs || self.sort.is_some()
    }
}

/// What every thread of one walk shares.
pub(crate) struct Shared {
    pub(crate) settings: Settings,
    /// The roots' paths as given.
    pub(crate) roots: Vec<Vec<u8>>,
    /// The stop flag: raised by a visitor's `Flow::Stop`, a panic, or the
    /// walk's owner (an iterator dropped); every thread stops at its next chunk.
    stop: Arc<AtomicBool>,
    pub(crate) budget: Budget,
    /// Whether a listing may stop where a record marks the end (see `mounts`).
    end_marks_trusted: OnceLock<bool>,
    /// Threads that may still help stat a chunk whose stats wait on the
    /// file system (see `crate::read`): as many as the I/O depth, for the
    /// whole walk.
    stat_helpers: AtomicUsize,
}

impl Shared {
    /// A walk over `roots`; `stop` is shared with the walk's owner, if it has one.
    pub(crate) fn new(settings: Settings, roots: Vec<Vec<u8>>, stop: Option<Arc<AtomicBool>>, budget: Budget) -> Self {
        Shared {
            stat_helpers: AtomicUsize::new(settings.io_depth.saturating_sub(1)),
            settings,
            roots,
            stop: stop.unwrap_or_default(),
            budget,
            end_marks_trusted: OnceLock::new(),
        }
    }

    /// Up to `wanted` stat helpers, as many as are left; give them back
    /// with [`Shared::release_stat_helpers`].
    pub(crate) fn reserve_stat_helpers(&self, wanted: usize) -> usize {
        let taken = self
            .stat_helpers
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                Some(left - left.min(wanted))
            });
        taken.map_or(0, |left| left.min(wanted))
    }

    pub(crate) fn release_stat_helpers(&self, n: usize) {
        self.stat_helpers.fetch_add(n, Ordering::AcqRel);
    }

    /// Whether a listing may stop where a record marks the end, found out
    /// on the first call (see `mounts`).
    pub(crate) fn end_marks_trusted(&self) -> bool {
        *self.end_marks_trusted.get_or_init(|| {
            let follow = self.settings.follow_links;
            match &self.settings.roots_within {
                Some(within) => crate::mounts::end_marks_trusted([within.as_path()], follow),
                None => {
                    let roots = self.roots.iter().map(|r| Path::new(OsStr::from_bytes(r)));
                    crate::mounts::end_marks_trusted(roots, follow)
                }
            }
        })
    }

    pub(crate) fn end_marks_trusted_if_known(&self) -> Option<bool> {
        self.end_marks_trusted.get().copied()
    }

    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    pub(crate) fn root_path(&self, root: usize) -> &[u8] {
        &self.roots[root]
    }
}
