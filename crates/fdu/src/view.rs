//! The tree view (`--tree`): the largest entries, indented under their
//! directories, each with a bar and its share of the total (after dust).
//!
//! The view picks the `lines` largest entries no deeper than `depth`, which
//! always includes their ancestors (a directory is never smaller than what
//! it holds), and prints them largest first. It walks with a stack of its
//! own: `--tree-depth` may reach thousands of levels.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use crate::settings::{Measure, SizeFormat, TreeOptions};
use crate::tree::{Root, TreeNode};

/// The size format of the tree view: du's when it is human-readable, plain
/// counts for inodes, else `-h`'s.
pub fn size_format(size: &SizeFormat, measure: Measure) -> SizeFormat {
    match (size, measure) {
        (f @ SizeFormat::Human { .. }, _) => f.clone(),
        (_, Measure::Inodes) => SizeFormat::units(),
        _ => SizeFormat::Human { base: 1024 },
    }
}

/// Render `root` into `out`.
pub fn render(root: &Root, opts: &TreeOptions, size: &SizeFormat, out: &mut Vec<u8>) {
    let shown = select(&root.node, opts);
    let total = root.node.amount.max(1);
    let rows = collect(&root.name, &root.node, &shown);
    let size_width = rows.iter().map(|r| size.to_string(r.amount).len()).max().unwrap_or(0);
    for row in rows {
        let text = size.to_string(row.amount);
        let filled = ((row.amount as u128 * opts.bar_width as u128 + total as u128 / 2) / total as u128) as usize;
        let percent = (row.amount as u128 * 100 / total as u128) as u64;
        let bar: String = "█".repeat(filled.min(opts.bar_width)) + &"░".repeat(opts.bar_width.saturating_sub(filled));
        let line = format!(
            "{text:>size_width$} {bar} {percent:>3}%  {}{}\n",
            row.indent,
            display_name(row.name)
        );
        out.extend_from_slice(line.as_bytes());
    }
}

/// Path (as child indexes) of every entry to show.
fn select(root: &TreeNode, opts: &TreeOptions) -> HashSet<Vec<u32>> {
    let mut shown = HashSet::new();
    let mut heap = BinaryHeap::new();
    heap.push((root.amount, Reverse(Vec::<u32>::new())));
    while let Some((_, Reverse(path))) = heap.pop() {
        if shown.len() >= opts.lines.max(1) {
            break;
        }
        let node = walk(root, &path);
        if path.len() < opts.depth {
            for (i, (_, c)) in node.children().enumerate() {
                let mut p = path.clone();
                p.push(i as u32);
                heap.push((c.amount, Reverse(p)));
            }
        }
        shown.insert(path);
    }
    shown
}

fn walk<'a>(root: &'a TreeNode, path: &[u32]) -> &'a TreeNode {
    path.iter().fold(root, |n, &i| n.child(i as usize).1)
}

struct Row<'a> {
    indent: String,
    name: &'a [u8],
    amount: u64,
}

/// A directory whose shown entries are being printed.
struct Open<'a> {
    /// Its shown entries, largest first: index, name, node.
    kids: Vec<(u32, &'a [u8], &'a TreeNode)>,
    next: usize,
    path: Vec<u32>,
    /// The indent's length before this directory's entries added to it.
    indent_len: usize,
}

/// The rows in print order: each entry, then its shown entries largest
/// first (ties by name), with the branches drawn in front of them.
fn collect<'a>(name: &'a [u8], root: &'a TreeNode, shown: &HashSet<Vec<u32>>) -> Vec<Row<'a>> {
    let mut rows = Rows {
        shown,
        rows: Vec::new(),
        indent: String::new(),
        open: Vec::new(),
    };
    rows.enter(name, root, Vec::new(), true);
    while let Some(dir) = rows.open.last_mut() {
        let Some(&(i, name, node)) = dir.kids.get(dir.next) else {
            let indent_len = dir.indent_len;
            rows.open.pop();
            rows.indent.truncate(indent_len);
            continue;
        };
        dir.next += 1;
        let last = dir.next == dir.kids.len();
        let mut path = dir.path.clone();
        path.push(i);
        rows.enter(name, node, path, last);
    }
    rows.rows
}

/// [`collect`]'s state: the rows so far, the indent of the current level,
/// and the directories open above it (one per level).
struct Rows<'a, 's> {
    shown: &'s HashSet<Vec<u32>>,
    rows: Vec<Row<'a>>,
    indent: String,
    open: Vec<Open<'a>>,
}

impl<'a> Rows<'a, '_> {
    /// The row of an entry (the last of its parent's shown entries or not),
    /// and its shown entries to come.
    fn enter(&mut self, name: &'a [u8], node: &'a TreeNode, path: Vec<u32>, last: bool) {
        let depth = self.open.len();
        let branch = match (depth, last) {
            (0, _) => "",
            (_, true) => "└─ ",
            (_, false) => "├─ ",
        };
        self.rows.push(Row {
            indent: format!("{}{branch}", self.indent),
            name,
            amount: node.amount,
        });
        let mut kids: Vec<(u32, &[u8], &TreeNode)> = node
            .children()
            .enumerate()
            .map(|(i, (name, child))| (i as u32, name, child))
            .filter(|(i, _, _)| {
                let mut p = path.clone();
                p.push(*i);
                self.shown.contains(&p)
            })
            .collect();
        kids.sort_by(|a, b| b.2.amount.cmp(&a.2.amount).then_with(|| a.1.cmp(b.1)));
        let indent_len = self.indent.len();
        if depth > 0 {
            self.indent.push_str(if last { "   " } else { "│  " });
        }
        self.open.push(Open {
            kids,
            next: 0,
            path,
            indent_len,
        });
    }
}

/// A name made safe for a terminal: invalid UTF-8 replaced, control
/// characters shown as `?`.
fn display_name(name: &[u8]) -> String {
    String::from_utf8_lossy(name)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::TreeBuilder;

    #[test]
    fn shows_largest_entries_under_their_parents() {
        let mut big = TreeBuilder::default();
        big.leaf(b"inner", 80);
        let mut top = TreeBuilder::default();
        top.leaf(b"small", 10);
        top.dir(b"big", 90, big);
        let tree = Root::new(b"root", top.into_node(100));
        let mut out = Vec::new();
        let opts = TreeOptions {
            depth: 5,
            lines: 3,
            bar_width: 10,
        };
        render(&tree, &opts, &SizeFormat::units(), &mut out);
        let text = String::from_utf8(out).unwrap();
        let names: Vec<_> = text.lines().map(|l| l.rsplit(' ').next().unwrap()).collect();
        assert_eq!(names, ["root", "big", "inner"]);
        assert!(text.lines().next().unwrap().contains("100%"));
    }

    #[test]
    fn draws_branches_as_before() {
        let mut a = TreeBuilder::default();
        a.leaf(b"a1", 30);
        a.leaf(b"a2", 20);
        let mut top = TreeBuilder::default();
        top.dir(b"a", 50, a);
        top.leaf(b"b", 40);
        let tree = Root::new(b"r", top.into_node(100));
        let opts = TreeOptions {
            depth: 5,
            lines: 10,
            bar_width: 4,
        };
        let mut out = Vec::new();
        render(&tree, &opts, &SizeFormat::units(), &mut out);
        let expected = "\
100 ████ 100%  r
 50 ██░░  50%  ├─ a
 30 █░░░  30%  │  ├─ a1
 20 █░░░  20%  │  └─ a2
 40 ██░░  40%  └─ b
";
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }

    #[test]
    fn a_deep_tree_is_rendered_on_a_small_stack() {
        let worker = std::thread::Builder::new().stack_size(64 * 1024);
        let lines = worker
            .spawn(|| {
                let root = crate::tree::chain(3000);
                let opts = TreeOptions {
                    depth: 10_000,
                    lines: 10_000,
                    bar_width: 10,
                };
                let mut out = Vec::new();
                render(&root, &opts, &SizeFormat::units(), &mut out);
                out.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count()
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(lines, 1 + 2 * 3000);
    }
}
