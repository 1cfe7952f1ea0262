//! Hard links: a file with several links is counted once per run, at the
//! link du would meet first.
//!
//! du walks in pre-order, each directory in `getdents` order (or by inode,
//! for directories fts sorts), so "first" is the smallest path of such
//! positions (see [`crate::scan::file_position`]). A
//! parallel scan meets links in any order, so every multiply-linked file is
//! set aside with its position path and a handle on its directory's node
//! (which keeps that node, and its ancestors, from finishing); once the walk
//! is over the smallest path of each inode wins and the rest are dropped.
//! Only multiply-linked files pay for this (3250 of the 944 307 entries of
//! the `million` benchmark tree).

use std::sync::Arc;

use crate::scan::{Node, Scan, Usage};

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

/// Count each inode at its first link (unless an earlier operand counted
/// it), then let the waiting directories finish.
pub fn resolve(scan: &Scan, sightings: Vec<Sighting>) {
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
        if scan.first_link(s.dev, s.ino) {
            s.node.add_link(s.usage, s.name.as_deref(), s.print);
        }
    }
    drop(keyed);
}
