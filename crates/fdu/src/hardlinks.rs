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

use crate::node::Node;
use crate::settings::{Follow, Settings};
use crate::tree::Detail;
use crate::usage::Usage;

/// Whether an entry with `nlink` links waits to be counted once, at its
/// first link: a file with several links, or with `-L` any file (symlinks
/// may lead to it twice); never with `-l`, which counts every link.
pub fn counted_once(settings: &Settings, nlink: u64) -> bool {
    !settings.count_links && (nlink > 1 || settings.follow == Follow::All)
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
    /// What the browser shows of it.
    pub detail: Detail,
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

    /// Of these links, the ones that count: each inode's first in du's
    /// order, unless an earlier operand counted it. Their tags, in no
    /// particular order. Under MPI the owner rank of the inodes decides
    /// here for the links every rank met.
    pub fn winners<T>(&self, mut links: Vec<Ordered<T>>) -> Vec<T> {
        links.sort_unstable_by(|a, b| (a.dev, a.ino, &a.key).cmp(&(b.dev, b.ino, &b.key)));
        let mut last = None;
        let mut won = Vec::new();
        for link in links {
            if last == Some((link.dev, link.ino)) {
                continue;
            }
            last = Some((link.dev, link.ino));
            if self.first(link.dev, link.ino) {
                won.push(link.tag);
            }
        }
        won
    }

    /// Count each inode of one operand's walk at its first link (unless an
    /// earlier operand counted it), then let the waiting directories complete.
    pub fn resolve(&self, sightings: Vec<Sighting>) {
        let mut counts = vec![false; sightings.len()];
        for i in self.winners(ordered(&sightings)) {
            counts[i] = true;
        }
        for (sighting, counts) in sightings.iter().zip(counts) {
            if counts {
                sighting.count();
            } else {
                sighting.list_uncounted();
            }
        }
        drop(sightings);
    }
}

/// A link in du's order: `key` as `Node::visit_order` makes it; `tag`
/// says which link it is to whoever asks.
pub struct Ordered<T> {
    pub dev: u64,
    pub ino: u64,
    pub key: Vec<u64>,
    pub tag: T,
}

/// The sightings' order keys, tagged by index. Orders are only known once
/// the walk is over: whether fts sorts a directory by inode depends on how
/// many entries it turned out to have.
pub fn ordered(sightings: &[Sighting]) -> Vec<Ordered<usize>> {
    sightings
        .iter()
        .enumerate()
        .map(|(i, s)| Ordered {
            dev: s.dev,
            ino: s.ino,
            key: s.node.visit_order(s.position, s.ino).into_vec(),
            tag: i,
        })
        .collect()
}

impl Sighting {
    /// This link is the one that counts: its directory adds it.
    pub fn count(&self) {
        self.node
            .add_link(self.usage, self.name.as_deref(), self.print, self.detail);
    }

    /// Another link of a file that counts elsewhere: the browser lists it,
    /// as ncdu does, without adding it up.
    pub fn list_uncounted(&self) {
        if self.node.detailed() {
            self.node.list_link(self.usage, self.name.as_deref(), self.detail);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::file_position;
    use crate::node::testing::{enter, usage, Lines};

    /// A link named `name`, the `index`-th file listed in `node`, of inode `ino`.
    fn link(node: &Arc<Node>, name: &str, index: u32, ino: u64) -> Sighting {
        node.list_entry();
        node.list_file();
        Sighting {
            dev: 1,
            ino,
            position: file_position(index),
            node: node.clone(),
            usage: usage(7, 0),
            name: Some(name.as_bytes().into()),
            print: true,
            detail: Detail::default(),
        }
    }

    /// Resolve the sightings (in the order given), let everything complete,
    /// and return the -a lines printed for links.
    fn winners(out: &mut Lines, links: &Links, sightings: Vec<Sighting>, nodes: Vec<Arc<Node>>) -> Vec<String> {
        drop(nodes);
        links.resolve(sightings);
        let lines = out.take();
        lines.into_iter().filter(|l| l.starts_with("7\t")).collect()
    }

    #[test]
    fn pre_order_wins_a_subdirectory_listed_first_comes_before_later_files() {
        let mut out = Lines::new(&["-a"]);
        let root = out.operand("r");
        let a = enter(&root, "a", 2, 0);
        let x = link(&root, "x", 0, 50);
        let deep = link(&a, "deep", 0, 50);
        let won = winners(&mut out, &Links::default(), vec![x, deep], vec![root, a]);
        assert_eq!(won, ["7\tr/a/deep"]);

        // Listed the other way round, the file comes first.
        let root = out.operand("r");
        let x = link(&root, "x", 0, 50);
        let a = enter(&root, "a", 2, 0);
        let deep = link(&a, "deep", 0, 50);
        let won = winners(&mut out, &Links::default(), vec![deep, x], vec![root, a]);
        assert_eq!(won, ["7\tr/x"]);
    }

    #[test]
    fn in_one_directory_listing_order_wins_whatever_order_they_were_met_in() {
        let mut out = Lines::new(&["-a"]);
        let root = out.operand("r");
        let first = link(&root, "first", 0, 50);
        let second = link(&root, "second", 1, 50);
        let won = winners(&mut out, &Links::default(), vec![second, first], vec![root]);
        assert_eq!(won, ["7\tr/first"]);
    }

    #[test]
    fn in_a_big_directory_inode_order_wins_where_fts_sorts() {
        for (inode_sort, entries, expected) in [
            (true, 10_001, "7\tr/low-inode/l"),
            (true, 100_000, "7\tr/low-inode/l"),
            (true, 10_000, "7\tr/listed-first/l"),
            (false, 10_001, "7\tr/listed-first/l"),
        ] {
            let mut out = Lines::new(&["-a"]);
            let root = Arc::new(Node::operand(&out.run, b"r", usage(1000, 0), (0, 0), inode_sort));
            let listed_first = enter(&root, "listed-first", 900, 0);
            let low_inode = enter(&root, "low-inode", 100, 0);
            for _ in 2..entries {
                root.list_entry();
            }
            let sightings = vec![link(&listed_first, "l", 0, 50), link(&low_inode, "l", 0, 50)];
            let won = winners(
                &mut out,
                &Links::default(),
                sightings,
                vec![root, listed_first, low_inode],
            );
            assert_eq!(won, [expected], "inode sort {inode_sort}, {entries} entries");
        }
    }

    #[test]
    fn an_inode_counts_once_across_operands() {
        let mut out = Lines::new(&["-a"]);
        let links = Links::default();
        let first = out.operand("first");
        let sighting = link(&first, "l", 0, 50);
        assert_eq!(winners(&mut out, &links, vec![sighting], vec![first]), ["7\tfirst/l"]);
        let second = out.operand("second");
        let sighting = link(&second, "l", 0, 50);
        assert!(winners(&mut out, &links, vec![sighting], vec![second]).is_empty());
        assert_eq!(out.run.grand_total().amount, 2 * 1000 + 7);
    }

    #[test]
    fn only_multiply_linked_files_wait_and_with_count_links_none_does() {
        let settings = |args: &[&str]| Lines::new(args).run.settings.clone();
        let plain = settings(&[]);
        assert!(!counted_once(&plain, 1));
        assert!(counted_once(&plain, 2));
        assert!(
            counted_once(&settings(&["-L"]), 1),
            "-L: symlinks may reach any file twice"
        );
        assert!(!counted_once(&settings(&["-l"]), 2));
        assert!(!counted_once(&settings(&["-l", "-L"]), 1));
    }
}
