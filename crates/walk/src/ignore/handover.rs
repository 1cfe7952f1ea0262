//! Ignore rules for a directory handed over by another process of the
//! walk (an MPI rank): rebuilt here from its path.
//!
//! A directory's rules depend only on the tree: its root's (the
//! directories above it, git's global and exclude files, as this process
//! read them when it built the filter) and the ignore files of every
//! directory between the root and it. So a state travels as one byte, and
//! the receiving process enters each directory on the way exactly as its
//! own walk would have: opened from the root, one `openat` per level,
//! its files read through the same `enter`. The states rebuilt are kept
//! by path, so the directories handed over next to each other (siblings,
//! cousins) read each ignore file once per process.

use std::collections::HashMap;
use std::fmt;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex};

use rustix::fs::{Mode, CWD};

use super::{IgnoreFilter, Level};
use crate::filter::{DirHook, DirInfo, ImportError, MovedDir};
use crate::open::{dir_flags, open_long};

/// What a state exports: a format tag, nothing else.
pub(super) const EXPORTED: &[u8] = &[1];

/// States kept before the cache starts over: a few megabytes of paths
/// and shared rule chains at most.
const KEPT_STATES: usize = 1 << 16;

/// States rebuilt in this process, by directory path.
#[derive(Default)]
pub(super) struct Rebuilt {
    states: Mutex<HashMap<Box<[u8]>, Arc<Level>>>,
}

impl fmt::Debug for Rebuilt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.states.lock().map_or(0, |s| s.len());
        write!(f, "Rebuilt({n} states)")
    }
}

impl Rebuilt {
    fn get(&self, path: &[u8]) -> Option<Arc<Level>> {
        self.states.lock().unwrap_or_else(|e| e.into_inner()).get(path).cloned()
    }

    fn keep(&self, path: &[u8], state: &Arc<Level>) {
        let mut states = self.states.lock().unwrap_or_else(|e| e.into_inner());
        if states.len() >= KEPT_STATES {
            states.clear();
        }
        states.insert(path.into(), state.clone());
    }
}

/// The parent of a handed-over directory, cut into levels.
struct Levels<'a> {
    /// Its path, as the walk spells it.
    path: &'a [u8],
    /// Where each level's path ends in `path`: the root's first.
    ends: Vec<usize>,
    /// Where each level's name starts in `path` (the root's: 0).
    starts: Vec<usize>,
}

impl<'a> Levels<'a> {
    /// The levels of `handover`'s parent below its root, checked: the
    /// path must lie under the root and be as deep as it says.
    fn of(handover: &MovedDir<'a>) -> Result<Levels<'a>, ImportError> {
        let (root, path) = (handover.root_path, handover.parent_path);
        let not_under = || -> ImportError { "a handed-over directory that does not lie under its root".into() };
        let mut ends = vec![root.len()];
        let mut starts = vec![0];
        if handover.parent_depth > 0 {
            let mut rest = path.strip_prefix(root).ok_or_else(not_under)?;
            if !root.ends_with(b"/") {
                rest = rest.strip_prefix(b"/").ok_or_else(not_under)?;
            }
            let mut at = path.len() - rest.len();
            for name in rest.split(|&b| b == b'/') {
                if name.is_empty() || name == b"." || name == b".." {
                    return Err(not_under());
                }
                starts.push(at);
                at += name.len();
                ends.push(at);
                at += 1;
            }
        } else if path != root {
            return Err(not_under());
        }
        if ends.len() != handover.parent_depth + 1 {
            return Err("a handed-over directory whose depth does not match its path".into());
        }
        Ok(Levels { path, ends, starts })
    }

    fn path(&self, level: usize) -> &'a [u8] {
        &self.path[..self.ends[level]]
    }

    fn name(&self, level: usize) -> &'a [u8] {
        &self.path[self.starts[level]..self.ends[level]]
    }

    /// The path of `level` below the root.
    fn below_root(&self, level: usize) -> &'a [u8] {
        &self.path[self.starts[1]..self.ends[level]]
    }
}

impl IgnoreFilter {
    /// The state of `handover`'s parent, from the rules kept so far and
    /// the ignore files of the levels below the deepest one kept.
    pub(super) fn rebuild(&self, handover: &MovedDir<'_>) -> Result<Arc<Level>, ImportError> {
        let levels = Levels::of(handover)?;
        let deepest = levels.ends.len() - 1;
        let kept = (0..=deepest)
            .rev()
            .find_map(|level| self.rebuilt.get(levels.path(level)).map(|state| (level, state)));
        if let Some((level, state)) = &kept {
            if *level == deepest {
                return Ok(state.clone());
            }
        }
        let follow = handover.follow_links;
        let root = open_long(CWD, handover.root_path, dir_flags(true), false)?;
        let (mut fd, mut state, first) = match kept {
            Some((0, state)) => (root, state, 1),
            Some((level, state)) => {
                // Opened as the walk opens a directory past its descriptor
                // budget: by path from the root, links refused unless followed.
                let fd = open_long(root.as_fd(), levels.below_root(level), dir_flags(follow), !follow)?;
                (fd, state, level + 1)
            }
            None => {
                let state = self.enter_level(&root, handover.root_path, 0, None)?;
                self.rebuilt.keep(handover.root_path, &state);
                (root, state, 1)
            }
        };
        for level in first..=deepest {
            fd = rustix::fs::openat(&fd, levels.name(level), dir_flags(follow), Mode::empty())?;
            state = self.enter_level(&fd, levels.path(level), level, Some(&state))?;
            self.rebuilt.keep(levels.path(level), &state);
        }
        Ok(state)
    }

    /// What the walk's `enter` gives the directory open as `fd`.
    fn enter_level(
        &self,
        fd: &OwnedFd,
        path: &[u8],
        depth: usize,
        parent: Option<&Arc<Level>>,
    ) -> Result<Arc<Level>, ImportError> {
        let info = DirInfo {
            path,
            depth,
            fd: fd.as_fd(),
            present: None,
        };
        self.enter(&info, parent)
            .ok_or_else(|| "ignore rules rebuilt for a walk that reads none".into())
    }
}
