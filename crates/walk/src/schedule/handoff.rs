//! A pending directory as plain data, to be read by another process.
//!
//! In this process a pending directory is a name under an `Arc<Dir>` chain
//! that may hold an open descriptor. Another process has neither: it gets
//! what it needs to open the directory by path from the root it walks too
//! and to judge it as this process would (`-x`, loops), and rebuilds a job
//! from that.

use std::sync::Arc;

use crate::dir::{Dir, Pending};
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
    /// The parent directory's filter state, as the filter exports it: the
    /// place for per-directory filter state (ignore rules, a du node) to
    /// travel. Filters cannot export their state yet, so this is always
    /// `None`, and directories whose parent has filter state are not given
    /// away ([`Pool::give_away`](super::Pool::give_away) keeps them).
    pub(crate) filter_state: Option<Vec<u8>>,
}

impl Handoff {
    /// Describe `pending` for another process; give it back when it cannot
    /// travel (its parent has filter state). `follow_links`: the walk's.
    pub(crate) fn export(pending: Pending, follow_links: bool) -> Result<Handoff, Pending> {
        let parent = &pending.parent;
        if parent.filter_state.is_some() {
            return Err(pending);
        }
        let root_dir = parent.root_dir();
        let mut ancestors = Vec::new();
        if follow_links && !parent.is_root_parent() {
            let chain = std::iter::once(&**parent).chain(parent.ancestors());
            ancestors.extend(chain.filter(|d| d.parent.is_some()).map(|d| (d.dev, d.ino)));
            ancestors.reverse();
        }
        Ok(Handoff {
            root: parent.root,
            path: pending.path(),
            depth: pending.depth(),
            follow: pending.follow,
            root_id: (root_dir.dev, root_dir.ino),
            ancestors,
            filter_state: None,
        })
    }

    /// The job that reads the directory in this process: its parent chain
    /// rebuilt without descriptors, so it is opened by path from its root.
    /// `None` when the description does not fit this walk (a root it does
    /// not have, a path that does not lie under that root, a chain of the
    /// wrong length): nothing from another process is trusted to be sound.
    pub(crate) fn into_job(self, shared: &Shared) -> Option<Job> {
        let root_path = shared.roots.get(self.root)?;
        if self.depth == 0 {
            return (self.path == *root_path).then(|| Job::root(self.root, root_path));
        }
        let (dev, ino) = self.root_id;
        let root = Arc::new(Dir::new(root_path.clone(), 1, self.root, None, None, dev, ino, -1));
        let root_prefix_len = root.prefix.len();
        let below = self.path.strip_prefix(&*root.prefix)?;
        let names: Vec<&[u8]> = below.split(|&b| b == b'/').collect();
        if names.len() != self.depth || names.iter().any(|n| n.is_empty() || *n == b"." || *n == b"..") {
            return None;
        }
        if !self.ancestors.is_empty() && self.ancestors.len() != self.depth - 1 {
            return None;
        }
        // The directories between the root and this one: each one when
        // links are followed (loop detection looks at all of them), else
        // only the parent, whose path and depth the entries need.
        let path_to = |level: usize| {
            let len = root_prefix_len + names[..level].iter().map(|n| n.len() + 1).sum::<usize>() - 1;
            self.path[..len].to_vec()
        };
        let mut parent = root;
        let levels: Vec<(usize, (u64, u64))> = if self.ancestors.is_empty() {
            (self.depth > 1)
                .then_some((self.depth - 1, (0, 0)))
                .into_iter()
                .collect()
        } else {
            (1..self.depth).zip(self.ancestors.iter().copied()).collect()
        };
        for (level, (dev, ino)) in levels {
            let dir = Dir::new(
                path_to(level),
                level + 1,
                self.root,
                Some(root_prefix_len),
                Some(parent),
                dev,
                ino,
                -1,
            );
            parent = Arc::new(dir);
        }
        let name = names[self.depth - 1];
        Some(Job::Open(Pending::child(parent, name, self.follow, false)))
    }
}
