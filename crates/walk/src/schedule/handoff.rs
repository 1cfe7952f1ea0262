//! A pending directory as plain data, to be read by another process.
//!
//! In this process a pending directory is a name under an `Arc<Dir>` chain
//! that may hold an open descriptor. Another process has neither: it gets
//! what it needs to open the directory by path from the root it walks too
//! and to judge it as this process would (`-x`, loops, the filter's state
//! of its parent), and rebuilds a job from that.

use std::sync::Arc;

use rustix::io::Errno;

use crate::dir::{Dir, Pending};
use crate::error::Error;
use crate::filter::{ErasedState, MovedDir};
use crate::read::Job;
use crate::settings::Shared;

/// A pending directory as plain data: no pointer, no descriptor. Every
/// process of the walk has the same roots, in the same order.
///
/// Device numbers are per machine: a process on another node that mounts
/// the same file system may see another `st_dev` for it, and must map
/// `root_id`'s and `ancestors`' devices to its own (its own stat of the
/// root gives it) before [`into_job`](Self::into_job).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Handoff {
    /// Which root of the walk the directory lies under.
    pub(crate) root: usize,
    /// The directory's full path as the walk spells it: the root as given,
    /// then `/name` per level.
    pub(crate) path: Vec<u8>,
    /// Its depth (a root is 0; its entries are one deeper).
    pub(crate) depth: usize,
    /// Opened following a final symlink: a root, or a link the walk follows.
    pub(crate) follow: bool,
    /// Device and inode of the root, as the walk found them when it opened
    /// it (zero for a root not opened yet): the directory is opened by path
    /// from the root, and only if the root's path still leads there; `-x`
    /// compares devices with it.
    pub(crate) root_id: (u64, u64),
    /// When the walk follows links: device and inode of each directory
    /// between the root and this one, the root's child first (`depth - 1`
    /// of them), for loop detection. Empty otherwise.
    pub(crate) ancestors: Vec<(u64, u64)>,
    /// The parent directory's filter state, as the walk's filter exported
    /// it (`DirHook::export_state`); `None` when the parent has none.
    /// A directory whose parent's state the filter cannot export is not
    /// handed over at all.
    pub(crate) filter_state: Option<Vec<u8>>,
}

impl Handoff {
    /// Describe `pending` for another process; give it back when it cannot
    /// travel (its parent has filter state the filter cannot export).
    pub(crate) fn export(pending: Pending, shared: &Shared) -> Result<Handoff, Pending> {
        let follow_links = shared.settings.follow_links;
        let parent = &pending.parent;
        let filter_state = match (&parent.hook_state, &shared.settings.hook) {
            (None, _) => None,
            (Some(state), Some(hook)) => {
                let moved = MovedDir {
                    parent_path: parent.path(),
                    parent_depth: parent.child_depth - 1,
                    name: &pending.name,
                    root: parent.root,
                    root_path: shared.root_path(parent.root),
                    follow_links,
                };
                match hook.export_state(state, &moved) {
                    Some(bytes) => Some(bytes),
                    None => return Err(pending),
                }
            }
            (Some(_), None) => return Err(pending),
        };
        let root_dir = parent.root_dir();
        let mut ancestors = Vec::new();
        if follow_links && !parent.is_root_parent() {
            if !parent.is_root() {
                ancestors.push((parent.dev, parent.ino));
            }
            ancestors.extend(parent.ancestors().filter(|d| !d.is_root).map(|d| (d.dev, d.ino)));
            ancestors.reverse();
        }
        Ok(Handoff {
            root: parent.root,
            path: pending.path(),
            depth: pending.depth(),
            follow: pending.follow,
            root_id: (root_dir.dev, root_dir.ino),
            ancestors,
            filter_state,
        })
    }

    /// The job that reads the directory in this process: its parent chain
    /// rebuilt without descriptors, so it is opened by path from its root,
    /// and the parent's filter state imported. Refused, with why, when the
    /// description does not fit this walk (a root it does not have, a path
    /// that does not lie under that root, a chain of the wrong length,
    /// filter state the filter does not take): nothing from another
    /// process is trusted to be sound. A filter state that cannot be
    /// rebuilt because the file system said no (the parent vanished since)
    /// is the directory's error, reported as its reading would report it.
    pub(crate) fn into_job(self, shared: &Shared) -> Result<Job, String> {
        let root_path = shared.roots.get(self.root).ok_or("a root this walk does not have")?;
        if self.depth == 0 {
            if self.path != *root_path || self.filter_state.is_some() || !self.ancestors.is_empty() {
                return Err("a root that is not this walk's".into());
            }
            return Ok(Job::root(self.root, root_path));
        }
        let (dev, ino) = self.root_id;
        let mut root = Dir::new(root_path.clone(), 1, self.root, None, None, dev, ino, -1);
        let root_prefix_len = root.prefix.len();
        let not_under = "a directory that does not lie under its root";
        let below = self.path.strip_prefix(&*root.prefix).ok_or(not_under)?;
        let names: Vec<&[u8]> = below.split(|&b| b == b'/').collect();
        if names.len() != self.depth || names.iter().any(|n| n.is_empty() || *n == b"." || *n == b"..") {
            return Err(not_under.into());
        }
        if !self.ancestors.is_empty() && self.ancestors.len() != self.depth - 1 {
            return Err("a chain of ancestors of the wrong length".into());
        }
        let name = names[self.depth - 1];
        let state = match self.import_state(shared, name) {
            Ok(state) => state,
            Err(Refusal::Refused(why)) => return Err(why),
            Err(Refusal::Failed(errno)) => return Ok(Job::Failed(Box::new(Error::io(&self.path, self.depth, errno)))),
        };
        if self.depth == 1 {
            root.hook_state = state.clone();
        }
        // The directories between the root and this one: each one when
        // links are followed (loop detection looks at all of them), else
        // only the parent, whose path and depth the entries need.
        let path_to = |level: usize| {
            let len = root_prefix_len + names[..level].iter().map(|n| n.len() + 1).sum::<usize>() - 1;
            self.path[..len].to_vec()
        };
        let mut parent = Arc::new(root);
        let levels: Vec<(usize, (u64, u64))> = if self.ancestors.is_empty() {
            (self.depth > 1)
                .then_some((self.depth - 1, (0, 0)))
                .into_iter()
                .collect()
        } else {
            (1..self.depth).zip(self.ancestors.iter().copied()).collect()
        };
        for (level, (dev, ino)) in levels {
            let mut dir = Dir::new(
                path_to(level),
                level + 1,
                self.root,
                Some(root_prefix_len),
                Some(parent),
                dev,
                ino,
                -1,
            );
            if level == self.depth - 1 {
                dir.hook_state = state.clone();
            }
            parent = Arc::new(dir);
        }
        Ok(Job::Open(Pending::child(parent, name, self.follow, false)))
    }

    /// The parent's filter state, rebuilt by the walk's filter.
    fn import_state(&self, shared: &Shared, name: &[u8]) -> Result<Option<ErasedState>, Refusal> {
        let Some(bytes) = &self.filter_state else {
            return Ok(None);
        };
        let hook = shared
            .settings
            .hook
            .as_ref()
            .ok_or_else(|| Refusal::Refused("filter state for a walk without a hook".into()))?;
        let parent_len = self.path.len() - name.len() - 1;
        let moved = MovedDir {
            parent_path: &self.path[..parent_len],
            parent_depth: self.depth - 1,
            name,
            root: self.root,
            root_path: shared.root_path(self.root),
            follow_links: shared.settings.follow_links,
        };
        match hook.import_state(bytes, &moved) {
            Ok(state) => Ok(Some(state)),
            Err(e) => match e.downcast::<Errno>() {
                Ok(errno) => Err(Refusal::Failed(*errno)),
                Err(e) => Err(Refusal::Refused(format!("its filter state: {e}"))),
            },
        }
    }
}

/// Why a handoff does not become a job to read.
enum Refusal {
    /// It does not fit this walk.
    Refused(String),
    /// The file system refused what rebuilding its parent's state needed.
    Failed(Errno),
}

/// The bytes of a handoff: `fnd_mpi::codec::PendingDir`'s encoding, the
/// one every process of a walk speaks (checked field by field, fuzzed).
impl Handoff {
    #[cfg_attr(not(any(test, feature = "mpi")), allow(dead_code))] // for the MPI scheduler
    pub(crate) fn encode(&self) -> Vec<u8> {
        fnd_mpi::codec::PendingDir {
            root: u32::try_from(self.root).expect("fewer than 2^32 roots"),
            path: self.path.clone(),
            depth: u32::try_from(self.depth).expect("a depth below 2^32"),
            follow: self.follow,
            root_id: self.root_id,
            ancestors: self.ancestors.clone(),
            filter_state: self.filter_state.clone(),
        }
        .encode()
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Handoff, fnd_mpi::codec::DecodeError> {
        let d = fnd_mpi::codec::PendingDir::decode(bytes)?;
        Ok(Handoff {
            root: d.root as usize,
            path: d.path,
            depth: d.depth as usize,
            follow: d.follow,
            root_id: d.root_id,
            ancestors: d.ancestors,
            filter_state: d.filter_state,
        })
    }
}
