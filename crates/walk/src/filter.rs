//! The contracts for judging entries as the walk reads them: a filter
//! (what is yielded and what is descended into) and a per-directory hook
//! (state each directory inherits from its parent, typed by the hook).
//!
//! Offers [`EntryFilter`] (stateless: [`decide`](EntryFilter::decide) per
//! entry) and [`DirHook`] (its [`enter`](DirHook::enter) runs once per
//! directory, before its entries, and returns the directory's
//! [`State`](DirHook::State), which its entries are judged with and its
//! subdirectories inherit: ignore rules, say, or a du total), what both are
//! shown ([`DirInfo`], [`RawEntry`]) and what they answer ([`Decision`]);
//! and, for a walk shared by several processes (MPI ranks), how a
//! directory's state travels with a subdirectory handed to another process
//! ([`MovedDir`], [`DirHook::export_state`], [`DirHook::import_state`]).
//! Both are called by the reader on the thread that reads the directory.
//!
//! Inside the engine a hook is held as a `dyn ErasedHook`, implemented for
//! every [`DirHook`] (and a filter as a hook without state): the states are
//! type-erased there only, and a state only ever goes back to the hook
//! that made it. Relies on `meta` for [`FileType`] only: filters and hooks
//! are written against this contract, never against the reader.

use std::any::Any;
use std::mem::ManuallyDrop;
use std::os::fd::BorrowedFd;
use std::sync::Arc;

use crate::meta::FileType;

/// A hook's state as the engine keeps it: erased, for the directory
/// structures are not generic over the hook.
pub(crate) type ErasedState = Arc<dyn Any + Send + Sync>;

/// Why a hook could not rebuild a state another process exported.
pub type ImportError = Box<dyn std::error::Error + Send + Sync>;

/// A directory the walk has just opened.
pub struct DirInfo<'a> {
    /// Path of the directory.
    pub path: &'a [u8],
    /// Depth of the directory (a root is 0).
    pub depth: usize,
    /// The open directory, for `openat` of files inside it (`.gitignore`, say).
    pub fd: BorrowedFd<'a>,
    /// For each of the hook's [`probe_names`](DirHook::probe_names):
    /// whether the directory lists it. `None` when the walk did not look
    /// (the hook then has to try the names itself).
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

/// A subdirectory moved to another process of the walk (an MPI rank), as
/// [`DirHook::export_state`] and [`DirHook::import_state`] see it. The
/// state that travels is its parent's: the state the subdirectory's own
/// [`enter`](DirHook::enter) is given as `parent` when the other process
/// reads it.
///
/// ```
/// use std::sync::Arc;
/// use fnd_walk::{DirHook, DirInfo, ImportError, MovedDir};
///
/// /// Counts the levels below the root; the count travels as one byte.
/// struct Depth;
/// impl DirHook for Depth {
///     type State = u8;
///     fn enter(&self, _: &DirInfo<'_>, parent: Option<&Arc<u8>>) -> Option<Arc<u8>> {
///         Some(Arc::new(parent.map_or(0, |p| p.saturating_add(1))))
///     }
///     fn export_state(&self, depth: &Arc<u8>, _: &MovedDir<'_>) -> Option<Vec<u8>> {
///         Some(vec![**depth])
///     }
///     fn import_state(&self, bytes: &[u8], _: &MovedDir<'_>) -> Result<Arc<u8>, ImportError> {
///         match bytes {
///             [depth] => Ok(Arc::new(*depth)),
///             _ => Err("not a depth".into()),
///         }
///     }
/// }
///
/// // `/srv/a/b`, handed over while `/srv/a` (depth 1) was being read.
/// let moved = MovedDir {
///     parent_path: b"/srv/a",
///     parent_depth: 1,
///     name: b"b",
///     root: 0,
///     root_path: b"/srv",
///     follow_links: false,
/// };
/// let bytes = Depth.export_state(&Arc::new(1), &moved).unwrap();
/// assert_eq!(*Depth.import_state(&bytes, &moved).unwrap(), 1);
/// assert!(Depth.import_state(b"", &moved).is_err());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct MovedDir<'a> {
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

/// A per-entry filter without state: what is yielded and what is descended
/// into, from the entry alone. Called on the thread that reads the
/// directory, before entries are batched; dropped entries cost no copy.
///
/// ```
/// use fnd_walk::{Decision, EntryFilter, RawEntry, WalkBuilder};
///
/// /// Yields only entries with short names, and does not descend into `b`.
/// struct Short;
/// impl EntryFilter for Short {
///     fn decide(&self, entry: &RawEntry<'_>) -> Decision {
///         Decision { emit: entry.name.len() <= 2, descend: entry.name != b"b" }
///     }
/// }
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
/// std::fs::write(dir.path().join("a/b/file"), "12345").unwrap();
/// std::fs::write(dir.path().join(".hidden"), "").unwrap();
/// let walk = WalkBuilder::new(dir.path()).min_depth(1).filter(Short);
/// assert_eq!(walk.iter().count(), 2); // a, a/b; not a/b/file, not .hidden
/// ```
pub trait EntryFilter: Send + Sync + 'static {
    /// Decide for one entry.
    fn decide(&self, entry: &RawEntry<'_>) -> Decision;
}

/// A per-directory hook: state each directory gets when it is opened,
/// inherited from its parent's, and with which its entries are judged.
/// Both calls happen on the thread that reads the directory, before its
/// entries are batched. A visitor finds its chunk's state with
/// [`Chunk::state`](crate::Chunk::state), to add to per-directory data
/// without a lookup.
///
/// ```
/// use std::sync::Arc;
/// use fnd_walk::{Decision, DirHook, DirInfo, RawEntry, WalkBuilder};
///
/// /// Leaves out everything below a directory that holds a `STOP` file.
/// struct StopFiles;
/// struct Stopped(bool);
/// impl DirHook for StopFiles {
///     type State = Stopped;
///     fn enter(&self, dir: &DirInfo<'_>, parent: Option<&Arc<Stopped>>) -> Option<Arc<Stopped>> {
///         if parent.is_some_and(|p| p.0) {
///             return parent.cloned(); // shared down the branch: no allocation
///         }
///         let stop = rustix::fs::statat(dir.fd, "STOP", rustix::fs::AtFlags::empty()).is_ok();
///         Some(Arc::new(Stopped(stop)))
///     }
///     fn decide(&self, state: Option<&Stopped>, _: &RawEntry<'_>) -> Decision {
///         if state.is_some_and(|s| s.0) { Decision::SKIP } else { Decision::KEEP }
///     }
/// }
///
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir_all(dir.path().join("kept/stopped/below")).unwrap();
/// std::fs::write(dir.path().join("kept/stopped/STOP"), "").unwrap();
/// let names: Vec<_> = WalkBuilder::new(dir.path())
///     .min_depth(1)
///     .hook(StopFiles)
///     .iter()
///     .map(|e| e.unwrap().file_name().to_owned())
///     .collect();
/// assert_eq!(names.len(), 2); // kept, kept/stopped; nothing inside it
/// ```
///
/// # Across processes
///
/// A walk shared by several processes (MPI ranks, see the crate's `mpi`
/// feature) hands pending directories from one to another. A directory
/// whose parent has a state goes only if the hook can describe that state
/// in bytes ([`export_state`](Self::export_state)) and rebuild it on the
/// other side ([`import_state`](Self::import_state)); by default it
/// cannot, and such directories stay in the process that found them
/// (always correct, only less evenly shared). Both sides build their hook
/// the same way; each rebuilds states with its own.
pub trait DirHook: Send + Sync + 'static {
    /// What the hook keeps per directory.
    type State: Send + Sync + 'static;

    /// Called once for each directory as it is opened, before its entries,
    /// with its parent's state (`None` for a root, or a parent without
    /// one). Returns the state its entries are judged with (and its
    /// subdirectories inherit); returning `parent` again costs nothing.
    fn enter(&self, dir: &DirInfo<'_>, parent: Option<&Arc<Self::State>>) -> Option<Arc<Self::State>>;

    /// Decide for one entry of a directory whose state `enter` returned.
    /// The default keeps everything: a hook that only gathers.
    fn decide(&self, state: Option<&Self::State>, entry: &RawEntry<'_>) -> Decision {
        let _ = (state, entry);
        Decision::KEEP
    }

    /// Names whose presence `enter` wants to know (`.gitignore`, say). When
    /// there are some, the walk lists a directory before entering it and
    /// tells [`DirInfo::present`], which spares a failed `openat` per name
    /// and directory.
    fn probe_names(&self) -> &[Vec<u8>] {
        &[]
    }

    /// Describe `state`, the state of the parent of `dir`, for
    /// [`import_state`](Self::import_state) in another process; `None` (the
    /// default) when it cannot travel, and the subdirectory then stays
    /// here. Called on whichever thread gives work away (possibly not a
    /// walking thread); it must not block.
    ///
    /// A state that depends only on the tree (ignore rules) can be
    /// rebuilt from the path alone, and exports next to nothing; one that
    /// gathers results (a du total) can register itself under an id here
    /// and export the id, so that the importing side's state reports back
    /// to it.
    fn export_state(&self, state: &Arc<Self::State>, dir: &MovedDir<'_>) -> Option<Vec<u8>> {
        let _ = (state, dir);
        None
    }

    /// Rebuild, in this process, the parent state another process's
    /// [`export_state`](Self::export_state) described as `bytes`, for the
    /// subdirectory `dir`. Called on a walking thread before the
    /// subdirectory is read; it may read the file system. The bytes come
    /// from another process: check them, and say what is wrong rather than
    /// panic. The default refuses (it never exports).
    fn import_state(&self, bytes: &[u8], dir: &MovedDir<'_>) -> Result<Arc<Self::State>, ImportError> {
        let _ = (bytes, dir);
        Err("this hook's state cannot be rebuilt in another process".into())
    }
}

/// A hook shared with its owner (who reads what it gathered after the walk).
impl<H: DirHook> DirHook for Arc<H> {
    type State = H::State;

    fn enter(&self, dir: &DirInfo<'_>, parent: Option<&Arc<H::State>>) -> Option<Arc<H::State>> {
        (**self).enter(dir, parent)
    }

    #[inline]
    fn decide(&self, state: Option<&H::State>, entry: &RawEntry<'_>) -> Decision {
        (**self).decide(state, entry)
    }

    fn probe_names(&self) -> &[Vec<u8>] {
        (**self).probe_names()
    }

    fn export_state(&self, state: &Arc<H::State>, dir: &MovedDir<'_>) -> Option<Vec<u8>> {
        (**self).export_state(state, dir)
    }

    fn import_state(&self, bytes: &[u8], dir: &MovedDir<'_>) -> Result<Arc<H::State>, ImportError> {
        (**self).import_state(bytes, dir)
    }
}

/// A filter as a hook without state.
pub(crate) struct Stateless<F>(pub(crate) F);

impl<F: EntryFilter> DirHook for Stateless<F> {
    type State = ();

    fn enter(&self, _: &DirInfo<'_>, _: Option<&Arc<()>>) -> Option<Arc<()>> {
        None
    }

    #[inline]
    fn decide(&self, _: Option<&()>, entry: &RawEntry<'_>) -> Decision {
        self.0.decide(entry)
    }
}

/// A hook as the engine holds it: one object-safe trait whatever the
/// state's type, so that the reader makes one dynamic call per entry.
pub(crate) trait ErasedHook: Send + Sync {
    fn enter(&self, dir: &DirInfo<'_>, parent: Option<&ErasedState>) -> Option<ErasedState>;
    fn decide(&self, state: Option<&ErasedState>, entry: &RawEntry<'_>) -> Decision;
    fn probe_names(&self) -> &[Vec<u8>];
    fn export_state(&self, state: &ErasedState, dir: &MovedDir<'_>) -> Option<Vec<u8>>;
    fn import_state(&self, bytes: &[u8], dir: &MovedDir<'_>) -> Result<ErasedState, ImportError>;
}

/// The engine hands a hook only states this same hook made (a directory
/// keeps the state of the one hook of its walk; a chain of hooks splits its
/// own state before asking each), so the casts back cannot fail: a state
/// of another type would read as none rather than panic.
impl<H: DirHook> ErasedHook for H {
    fn enter(&self, dir: &DirInfo<'_>, parent: Option<&ErasedState>) -> Option<ErasedState> {
        let parent = parent.filter(|p| p.is::<H::State>()).map(|p| {
            // The parent's own `Arc`, borrowed: a clone here would be a
            // second count per directory next to the one a hook that keeps
            // its parent (the ignore rules) takes.
            // SAFETY: `p` holds an `H::State` (checked above), made an
            // `ErasedState` by unsizing an `Arc<H::State>`: `Arc::from_raw`
            // takes its data pointer back as such, and `ManuallyDrop`
            // leaves the count alone.
            ManuallyDrop::new(unsafe { Arc::from_raw(Arc::as_ptr(p).cast::<H::State>()) })
        });
        let state: ErasedState = DirHook::enter(self, dir, parent.as_deref())?;
        Some(state)
    }

    #[inline]
    fn decide(&self, state: Option<&ErasedState>, entry: &RawEntry<'_>) -> Decision {
        DirHook::decide(self, state.and_then(|s| s.downcast_ref::<H::State>()), entry)
    }

    fn probe_names(&self) -> &[Vec<u8>] {
        DirHook::probe_names(self)
    }

    fn export_state(&self, state: &ErasedState, dir: &MovedDir<'_>) -> Option<Vec<u8>> {
        let state = state.clone().downcast::<H::State>().ok()?;
        DirHook::export_state(self, &state, dir)
    }

    fn import_state(&self, bytes: &[u8], dir: &MovedDir<'_>) -> Result<ErasedState, ImportError> {
        let state: ErasedState = DirHook::import_state(self, bytes, dir)?;
        Ok(state)
    }
}

/// The states of both hooks of a chain (`crate::hooks::Chain`) for one
/// directory. Here rather than with the chain, for a chunk's state is looked
/// up through it (`find`).
pub(crate) struct ChainState {
    pub(crate) first: Option<ErasedState>,
    pub(crate) second: Option<ErasedState>,
}

/// The state of type `S` in a directory's `state`: the state itself, or
/// one of a chain's (the first hook's first).
pub(crate) fn find<S: Send + Sync + 'static>(state: &ErasedState) -> Option<&ErasedState> {
    if state.is::<S>() {
        return Some(state);
    }
    let chained = state.downcast_ref::<ChainState>()?;
    [&chained.first, &chained.second]
        .into_iter()
        .find_map(|part| part.as_ref().and_then(find::<S>))
}
