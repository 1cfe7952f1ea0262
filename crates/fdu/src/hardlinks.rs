//! Hard links: a file with several links is counted once per run, at the
//! link du would meet first.
//!
//! du walks in pre-order, each directory in `getdents` order (or by inode,
//! for directories fts sorts), so "first" is the smallest path of such
//! positions (see [`Node::visit_order`]). A parallel scan meets links in
//! any order, so every multiply-linked file is set aside with its position
//! and a hold on its directory's node (which keeps that node, and its
//! ancestors, from completing); once the walk is over the smallest path of
//! each inode wins and the rest are dropped. Only multiply-linked files pay
//! for this (3250 of the 944 307 entries of the `million` benchmark tree).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use fnd_walk::Metadata;

use crate::node::Node;
use crate::settings::{Follow, Settings};
use crate::usage::Usage;

/// Whether an entry waits to be counted once, at its first link: a file
/// with several links, or with `-L` any file (symlinks may lead to it
/// twice); never with `-l`, which counts every link.
pub fn counted_once(settings: &Settings, m: &Metadata) -> bool {
    !settings.count_links && (m.nlink > 1 || settings.follow == Follow::All)
}

/// One link of a multiply-linked file, as a worker met it.
pub struct Sighting {
    pub dev: u64,
    pub ino: u64,
    /// Where the link comes in its directory's listing.
    pub position: u64,
    pub node: Arc<Node>,
    pub usage: Usage,
    /// Kept only when `-a` prints it or the tree view shows it.
    pub name: Option<Box<[u8]>>,
    /// `-a` prints it if it wins.
    pub print: bool,
}

/// The inodes counted so far in a run, across operands.
#[derive(Default)]
pub struct Links {
    counted: Mutex<HashSet<(u64, u64)>>,
}

impl Links {
    /// Count an inode once per run: false when it was counted already.
    pub fn first(&self, dev: u64, ino: u64) -> bool {
        self.counted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((dev, ino))
    }

    /// Count each inode of one operand's walk at its first link (unless an
    /// earlier operand counted it), then let the waiting directories complete.
    pub fn resolve(&self, sightings: Vec<Sighting>) {
        // Orders are only known now: whether fts sorts a directory by inode
        // depends on how many entries it turned out to have.
        let mut keyed: Vec<(Box<[u64]>, Sighting)> = sightings
            .into_iter()
            .map(|s| (s.node.visit_order(s.position, s.ino), s))
            .collect();
        keyed.sort_unstable_by(|(ka, a), (kb, b)| (a.dev, a.ino, ka).cmp(&(b.dev, b.ino, kb)));
        let mut last = None;
        for (_, s) in &keyed {
            if last == Some((s.dev, s.ino)) {
                continue;
            }
            last = Some((s.dev, s.ino));
            if self.first(s.dev, s.ino) {
                s.node.add_link(s.usage, s.name.as_deref(), s.print);
            }
        }
        drop(keyed);
    }
}
