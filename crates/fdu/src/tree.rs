//! The scanned tree, for the views that need all of it (`--tree`,
//! `--json`, the browser of `-i`): one compact [`TreeNode`] per entry, built
//! bottom-up as directories complete ([`TreeBuilder`]), read top-down
//! ([`TreeNode::children`], [`Root::walk`]). The browser also keeps a
//! [`Detail`] per entry, beside the nodes (the other views pay nothing for it).
//!
//! Trees are as deep as the file system (thousands of levels, past
//! `PATH_MAX`), so nothing here recurses per level: walking is an
//! iterator with its own stack, and dropping, comparing and printing for
//! debugging go through it or through a loop.

use std::fmt;

/// One entry of a scanned tree: 24 bytes, its name kept in its parent's
/// packed name buffer (so a file costs 24 bytes plus its name's bytes).
pub struct TreeNode {
    /// Bytes (or inodes) under this entry, itself included.
    pub amount: u64,
    name_start: u32,
    name_len: u32,
    kids: Option<Box<Kids>>,
}

/// A directory's entries: their names end to end, and the entries.
struct Kids {
    names: Box<[u8]>,
    nodes: Box<[TreeNode]>,
    /// One per node when the tree is detailed; empty otherwise.
    details: Box<[Detail]>,
    /// Entries below, at any depth.
    items: u64,
}

/// What the browser shows of an entry besides its amount: 16 bytes (so a
/// detailed entry costs 40 bytes plus its name).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Detail {
    /// Apparent size in bytes; a directory's includes everything below it.
    pub apparent: u64,
    /// Modification time, seconds since the epoch, clamped to `u32` (the
    /// browser sorts and shows it; du's lines never come from here).
    pub mtime: u32,
    pub flags: u32,
}

impl Detail {
    /// A directory (also when empty or unreadable).
    pub const DIR: u32 = 1;
    /// A directory that could not be read.
    pub const READ_ERROR: u32 = 2;
    /// A directory with an entry below it that could not be read.
    pub const ERROR_BELOW: u32 = 4;
    /// A link of a file whose size counts at another of its links (shown,
    /// not added up).
    pub const UNCOUNTED_LINK: u32 = 8;

    pub fn new(apparent: u64, mtime: i64, flags: u32) -> Detail {
        Detail {
            apparent,
            mtime: mtime.clamp(0, u32::MAX as i64) as u32,
            flags,
        }
    }

    pub fn is_dir(&self) -> bool {
        self.flags & Detail::DIR != 0
    }

    /// Whether its size counts in the totals above it.
    pub fn counts(&self) -> bool {
        self.flags & Detail::UNCOUNTED_LINK == 0
    }

    /// Whether it, or something below it, could not be read.
    pub fn has_error(&self) -> bool {
        self.flags & (Detail::READ_ERROR | Detail::ERROR_BELOW) != 0
    }
}

impl Drop for Kids {
    /// Frees the levels below with a loop: the derived drop would recurse
    /// once per level and overflow a thread's stack on a deep tree.
    fn drop(&mut self) {
        let mut below: Vec<Box<Kids>> = self.nodes.iter_mut().filter_map(|n| n.kids.take()).collect();
        while let Some(mut kids) = below.pop() {
            below.extend(kids.nodes.iter_mut().filter_map(|n| n.kids.take()));
            // `kids` now has no grandchildren: dropping it frees one level only.
        }
    }
}

impl TreeNode {
    /// The entries inside, with their names, in the order they were added.
    pub fn children(&self) -> impl ExactSizeIterator<Item = (&[u8], &TreeNode)> + '_ {
        let (names, nodes): (&[u8], &[TreeNode]) = match &self.kids {
            Some(k) => (&k.names, &k.nodes),
            None => (&[], &[]),
        };
        nodes.iter().map(move |n| (n.name_in(names), n))
    }

    /// The `index`-th entry inside. Panics past the last one.
    pub fn child(&self, index: usize) -> (&[u8], &TreeNode) {
        let k = self.kids.as_ref().expect("index of an existing child");
        let n = &k.nodes[index];
        (n.name_in(&k.names), n)
    }

    /// Whether it holds entries (an empty directory holds none, as a file).
    pub fn has_children(&self) -> bool {
        self.kids.is_some()
    }

    /// The entries inside, with their names and details (detailed trees only).
    pub fn detailed_children(&self) -> impl ExactSizeIterator<Item = (&[u8], &TreeNode, Detail)> + '_ {
        let (names, nodes, details): (&[u8], &[TreeNode], &[Detail]) = match &self.kids {
            Some(k) if k.details.len() == k.nodes.len() => (&k.names, &k.nodes, &k.details),
            _ => (&[], &[], &[]),
        };
        nodes.iter().zip(details).map(move |(n, d)| (n.name_in(names), n, *d))
    }

    /// The `index`-th entry's detail (default when the tree is not detailed).
    pub fn child_detail(&self, index: usize) -> Detail {
        self.kids
            .as_ref()
            .and_then(|k| k.details.get(index).copied())
            .unwrap_or_default()
    }

    /// Entries below it, at any depth.
    pub fn items(&self) -> u64 {
        self.kids.as_ref().map_or(0, |k| k.items)
    }

    /// The `index`-th entry inside, to change. Panics past the last one.
    pub fn child_mut(&mut self, index: usize) -> &mut TreeNode {
        &mut self.kids.as_mut().expect("index of an existing child").nodes[index]
    }

    /// Take the `index`-th entry out (with what is below it): its amount,
    /// detail and entries no longer count here; the caller adjusts the
    /// levels above with what this returns.
    pub fn remove_child(&mut self, index: usize) -> Removed {
        let mut kids = self.kids.take().expect("index of an existing child");
        let names = std::mem::take(&mut kids.names);
        let nodes = std::mem::take(&mut kids.nodes);
        let details = std::mem::take(&mut kids.details);
        let mut rebuilt = TreeBuilder::default();
        let mut removed = None;
        for (i, node) in nodes.into_vec().into_iter().enumerate() {
            let detail = details.get(i).copied();
            if i == index {
                let detail = detail.unwrap_or_default();
                let counted = detail.counts();
                removed = Some(Removed {
                    amount: if counted { node.amount } else { 0 },
                    apparent: if counted { detail.apparent } else { 0 },
                    items: 1 + node.items(),
                });
                continue;
            }
            // A plain tree has no details: `detail` is then None for all.
            rebuilt.push(node.name_in(&names), node.amount, node.kids, detail);
        }
        let removed = removed.expect("index of an existing child");
        self.kids = rebuilt.build();
        self.amount -= removed.amount;
        removed
    }

    /// Put `node` in place of the `index`-th entry (its name kept), with
    /// its new detail. Totals do not move here: the caller moves this
    /// level's and those above with [`TreeNode::adjust`].
    pub fn replace_child(&mut self, index: usize, node: TreeNode, detail: Detail) {
        let kids = self.kids.as_mut().expect("index of an existing child");
        let old = std::mem::replace(&mut kids.nodes[index], node);
        let new = &mut kids.nodes[index];
        (new.name_start, new.name_len) = (old.name_start, old.name_len);
        if let Some(d) = kids.details.get_mut(index) {
            *d = detail;
        }
    }

    /// After an entry somewhere below changed, through its `index`-th
    /// entry: this one's totals and that entry's apparent size move by `change`.
    pub fn adjust(&mut self, index: usize, change: Change) {
        self.amount = self.amount.saturating_add_signed(change.amount);
        if let Some(kids) = &mut self.kids {
            kids.items = kids.items.saturating_add_signed(change.items);
            if let Some(d) = kids.details.get_mut(index) {
                d.apparent = d.apparent.saturating_add_signed(change.apparent);
            }
        }
    }
}

/// What was taken out of a directory by [`TreeNode::remove_child`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Removed {
    pub amount: u64,
    pub apparent: u64,
    /// The entry and everything below it.
    pub items: u64,
}

/// How the totals of the directories above a changed entry move.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Change {
    pub amount: i64,
    pub apparent: i64,
    pub items: i64,
}

impl Change {
    /// From what an entry was (`old`) to what it is (`new`): amount, apparent size, entries.
    pub fn between(old: (u64, u64, u64), new: (u64, u64, u64)) -> Change {
        let delta = |a: u64, b: u64| (b as i128 - a as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        Change {
            amount: delta(old.0, new.0),
            apparent: delta(old.1, new.1),
            items: delta(old.2, new.2),
        }
    }
}

impl TreeNode {
    fn name_in<'a>(&self, names: &'a [u8]) -> &'a [u8] {
        &names[self.name_start as usize..(self.name_start + self.name_len) as usize]
    }
}

/// A directory's entries as the scan (or a reader) gathers them: plain
/// (amounts only) or detailed (a [`Detail`] for each), never both.
#[derive(Debug, Default)]
pub struct TreeBuilder {
    names: Vec<u8>,
    nodes: Vec<TreeNode>,
    details: Vec<Detail>,
}

impl TreeBuilder {
    /// An entry with `kids` below it (none: a file, or a directory with
    /// nothing in it). With its own `detail` the tree is detailed, and a
    /// directory's apparent size and error flags take in its entries'.
    pub fn entry(&mut self, name: &[u8], amount: u64, kids: TreeBuilder, detail: Option<Detail>) {
        let detail = detail.map(|own| kids.sum_into(own));
        self.push(name, amount, kids.build(), detail);
    }

    /// A file, or a directory with nothing in it.
    pub fn leaf(&mut self, name: &[u8], amount: u64) {
        self.entry(name, amount, TreeBuilder::default(), None);
    }

    /// A directory whose entries are in `kids`.
    pub fn dir(&mut self, name: &[u8], amount: u64, kids: TreeBuilder) {
        self.entry(name, amount, kids, None);
    }

    /// A file (or an unreadable directory) of a detailed tree.
    pub fn detailed_leaf(&mut self, name: &[u8], amount: u64, detail: Detail) {
        self.entry(name, amount, TreeBuilder::default(), Some(detail));
    }

    fn push(&mut self, name: &[u8], amount: u64, kids: Option<Box<Kids>>, detail: Option<Detail>) {
        let name_start = self.names.len() as u32;
        self.names.extend_from_slice(name);
        self.nodes.push(TreeNode {
            amount,
            name_start,
            name_len: name.len() as u32,
            kids,
        });
        if let Some(d) = detail {
            self.details.push(d);
        }
    }

    /// `own` with these entries' apparent sizes added and their errors seen.
    fn sum_into(&self, own: Detail) -> Detail {
        let mut detail = own;
        for d in self.details.iter().filter(|d| d.counts()) {
            detail.apparent += d.apparent;
            if d.has_error() {
                detail.flags |= Detail::ERROR_BELOW;
            }
        }
        detail
    }

    /// Move `other`'s entries here (a worker's batch into its directory).
    pub fn append(&mut self, other: &mut TreeBuilder) {
        let base = self.names.len() as u32;
        self.names.append(&mut other.names);
        self.nodes.extend(other.nodes.drain(..).map(|n| TreeNode {
            name_start: n.name_start + base,
            ..n
        }));
        self.details.append(&mut other.details);
    }

    fn build(self) -> Option<Box<Kids>> {
        (!self.nodes.is_empty()).then(|| {
            let items = self.nodes.len() as u64 + self.nodes.iter().map(TreeNode::items).sum::<u64>();
            Box::new(Kids {
                names: self.names.into_boxed_slice(),
                nodes: self.nodes.into_boxed_slice(),
                details: self.details.into_boxed_slice(),
                items,
            })
        })
    }

    /// The node of a directory holding these entries.
    pub fn into_node(self, amount: u64) -> TreeNode {
        TreeNode {
            amount,
            name_start: 0,
            name_len: 0,
            kids: self.build(),
        }
    }

    /// The node of a directory of a detailed tree, and its detail (`own`
    /// with its entries' taken in).
    pub fn into_detailed_node(self, amount: u64, own: Detail) -> (TreeNode, Detail) {
        let detail = self.sum_into(own);
        (self.into_node(amount), detail)
    }
}

/// An operand's tree.
pub struct Root {
    /// The operand as given.
    pub name: Box<[u8]>,
    pub node: TreeNode,
    /// The operand's detail, when the tree is detailed.
    pub detail: Detail,
}

impl Root {
    pub fn new(name: &[u8], node: TreeNode) -> Root {
        Root {
            name: name.into(),
            node,
            detail: Detail::default(),
        }
    }

    pub fn leaf(name: &[u8], amount: u64) -> Root {
        Root::new(name, TreeBuilder::default().into_node(amount))
    }

    /// Every entry, depth first: each is entered, then its entries, then left.
    pub fn walk(&self) -> Walk<'_> {
        Walk::new(&self.name, &self.node)
    }
}

/// One step of a depth-first walk ([`Root::walk`]).
#[derive(Debug, Clone, Copy)]
pub enum Step<'a> {
    /// An entry, before its entries; `depth` 0 is the root.
    Enter {
        name: &'a [u8],
        node: &'a TreeNode,
        depth: usize,
    },
    /// The same entry, after its entries.
    Leave { node: &'a TreeNode, depth: usize },
}

/// A depth-first walk with a stack of its own (one small frame per level).
pub struct Walk<'a> {
    start: Option<(&'a [u8], &'a TreeNode)>,
    /// The entries entered and not yet left, each with its next child.
    open: Vec<(&'a TreeNode, usize)>,
}

impl<'a> Walk<'a> {
    fn new(name: &'a [u8], node: &'a TreeNode) -> Walk<'a> {
        Walk {
            start: Some((name, node)),
            open: Vec::new(),
        }
    }
}

impl<'a> Iterator for Walk<'a> {
    type Item = Step<'a>;

    fn next(&mut self) -> Option<Step<'a>> {
        if let Some((name, node)) = self.start.take() {
            self.open.push((node, 0));
            return Some(Step::Enter { name, node, depth: 0 });
        }
        let depth = self.open.len().checked_sub(1)?;
        let (node, next) = self.open.last_mut()?;
        let node: &'a TreeNode = node;
        if *next < node.children().len() {
            let (name, child) = node.child(*next);
            *next += 1;
            self.open.push((child, 0));
            return Some(Step::Enter {
                name,
                node: child,
                depth: depth + 1,
            });
        }
        self.open.pop();
        Some(Step::Leave { node, depth })
    }
}

/// What a step says about the tree's shape and contents (not where it is in memory).
fn shape(step: Step<'_>) -> (bool, &[u8], u64, usize) {
    match step {
        Step::Enter { name, node, depth } => (true, name, node.amount, depth),
        Step::Leave { node, depth } => (false, &[], node.amount, depth),
    }
}

impl PartialEq for TreeNode {
    fn eq(&self, other: &TreeNode) -> bool {
        Walk::new(b"", self).map(shape).eq(Walk::new(b"", other).map(shape))
    }
}

impl Eq for TreeNode {}

impl PartialEq for Root {
    fn eq(&self, other: &Root) -> bool {
        self.name == other.name && self.node == other.node
    }
}

impl Eq for Root {}

impl fmt::Debug for TreeNode {
    /// One line per entry: depth, name, amount.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let entries = Walk::new(b"", self).filter_map(|step| match step {
            Step::Enter { name, node, depth } => Some((depth, String::from_utf8_lossy(name), node.amount)),
            Step::Leave { .. } => None,
        });
        f.debug_list().entries(entries).finish()
    }
}

impl fmt::Debug for Root {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Root")
            .field("name", &String::from_utf8_lossy(&self.name))
            .field("node", &self.node)
            .finish()
    }
}

/// A chain of directories `depth` deep under a root named `root`, each
/// holding a file `f` of 1 and the next directory `d`: for tests of depth.
#[cfg(test)]
pub fn chain(depth: usize) -> Root {
    let mut kids = TreeBuilder::default();
    let mut amount = 0;
    for _ in 0..depth {
        let mut level = TreeBuilder::default();
        level.leaf(b"f", 1);
        level.dir(b"d", amount, kids);
        amount += 2;
        kids = level;
    }
    Root::new(b"root", kids.into_node(amount))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_depth_first_in_order() {
        let mut inner = TreeBuilder::default();
        inner.leaf(b"x", 1);
        let mut top = TreeBuilder::default();
        top.dir(b"a", 3, inner);
        top.leaf(b"b", 2);
        let root = Root::new(b"r", top.into_node(6));
        let steps: Vec<String> = root
            .walk()
            .map(|s| match s {
                Step::Enter { name, depth, .. } => format!("+{}{depth}", String::from_utf8_lossy(name)),
                Step::Leave { node, depth } => format!("-{}@{depth}", node.amount),
            })
            .collect();
        assert_eq!(steps, ["+r0", "+a1", "+x2", "-1@2", "-3@1", "+b1", "-2@1", "-6@0"]);
    }

    #[test]
    fn deep_trees_are_walked_compared_and_dropped_on_a_small_stack() {
        let worker = std::thread::Builder::new().stack_size(64 * 1024);
        let handle = worker
            .spawn(|| {
                let (a, b) = (chain(100_000), chain(100_000));
                assert_eq!(a.walk().count(), 4 * 100_000 + 2);
                assert!(a == b);
                assert!(a != chain(99_999));
            })
            .unwrap();
        handle.join().unwrap();
    }
}
