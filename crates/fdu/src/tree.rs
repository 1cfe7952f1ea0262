//! The tree view (`--tree`): the largest entries, indented under their
//! directories, each with a bar and its share of the total (after dust).
//!
//! The scan keeps one compact [`TreeNode`] per entry (40 bytes plus the
//! name's allocation); the view picks the `lines` largest entries no deeper
//! than `depth`, which always includes their ancestors (a directory is never
//! smaller than what it holds), and prints them largest first.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::cli::TreeOptions;
use crate::format::SizeFormat;

/// One entry of a scanned tree: 24 bytes, its name kept in its parent's
/// packed name buffer (so a file costs 24 bytes plus its name's bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeNode {
    pub amount: u64,
    name_start: u32,
    name_len: u32,
    kids: Option<Box<Kids>>,
}

/// A directory's entries: their names end to end, and the entries.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Kids {
    names: Box<[u8]>,
    nodes: Box<[TreeNode]>,
}

impl TreeNode {
    /// The entries inside, with their names.
    pub fn children(&self) -> impl ExactSizeIterator<Item = (&[u8], &TreeNode)> + '_ {
        let (names, nodes): (&[u8], &[TreeNode]) = match &self.kids {
            Some(k) => (&k.names, &k.nodes),
            None => (&[], &[]),
        };
        nodes
            .iter()
            .map(move |n| (&names[n.name_start as usize..(n.name_start + n.name_len) as usize], n))
    }

    fn child(&self, index: usize) -> (&[u8], &TreeNode) {
        let k = self.kids.as_ref().expect("index of an existing child");
        let n = &k.nodes[index];
        (&k.names[n.name_start as usize..(n.name_start + n.name_len) as usize], n)
    }

    pub fn is_empty(&self) -> bool {
        self.kids.is_none()
    }
}

/// A directory's entries as the scan gathers them.
#[derive(Debug, Default)]
pub struct TreeBuilder {
    names: Vec<u8>,
    nodes: Vec<TreeNode>,
}

impl TreeBuilder {
    pub fn leaf(&mut self, name: &[u8], amount: u64) {
        self.dir(name, amount, TreeBuilder::default());
    }

    /// A directory whose entries are in `kids`.
    pub fn dir(&mut self, name: &[u8], amount: u64, kids: TreeBuilder) {
        let name_start = self.names.len() as u32;
        self.names.extend_from_slice(name);
        self.nodes.push(TreeNode {
            amount,
            name_start,
            name_len: name.len() as u32,
            kids: kids.build(),
        });
    }

    /// Move `other`'s entries here (a worker's batch into its directory).
    pub fn append(&mut self, other: &mut TreeBuilder) {
        let base = self.names.len() as u32;
        self.names.append(&mut other.names);
        self.nodes.extend(other.nodes.drain(..).map(|n| TreeNode {
            name_start: n.name_start + base,
            ..n
        }));
    }

    fn build(self) -> Option<Box<Kids>> {
        (!self.nodes.is_empty()).then(|| {
            Box::new(Kids {
                names: self.names.into_boxed_slice(),
                nodes: self.nodes.into_boxed_slice(),
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
}

/// An operand's tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub name: Box<[u8]>,
    pub node: TreeNode,
}

impl Root {
    pub fn new(name: &[u8], node: TreeNode) -> Root {
        Root {
            name: name.into(),
            node,
        }
    }

    pub fn leaf(name: &[u8], amount: u64) -> Root {
        Root::new(name, TreeBuilder::default().into_node(amount))
    }
}

/// Columns and rows of the terminal on stdout (80x44 when it is not one).
pub fn terminal_size() -> (usize, usize) {
    match rustix::termios::tcgetwinsize(rustix::stdio::stdout()) {
        Ok(ws) if ws.ws_col > 0 && ws.ws_row > 0 => (ws.ws_col as usize, ws.ws_row as usize),
        _ => (80, 44),
    }
}

/// Render `root` into `out`.
pub fn render(root: &Root, opts: &TreeOptions, size: &SizeFormat, out: &mut Vec<u8>) {
    let shown = select(&root.node, opts);
    let total = root.node.amount.max(1);
    let mut rows = Vec::new();
    let mut indent = String::new();
    collect(&root.name, &root.node, &[], &shown, 0, &mut indent, true, &mut rows);
    let size_width = rows.iter().map(|r| size.to_string(r.amount).len()).max().unwrap_or(0);
    for row in rows {
        let text = size.to_string(row.amount);
        let filled = ((row.amount as u128 * opts.bar_width as u128 + total as u128 / 2) / total as u128) as usize;
        let percent = (row.amount as u128 * 100 / total as u128) as u64;
        let bar: String = "█".repeat(filled.min(opts.bar_width)) + &"░".repeat(opts.bar_width.saturating_sub(filled));
        let line = format!(
            "{text:>size_width$} {bar} {percent:>3}%  {}{}\n",
            row.indent,
            display_name(&row.name)
        );
        out.extend_from_slice(line.as_bytes());
    }
}

/// Path (as child indexes) of every entry to show.
fn select(root: &TreeNode, opts: &TreeOptions) -> std::collections::HashSet<Vec<u32>> {
    let mut shown = std::collections::HashSet::new();
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

struct Row {
    indent: String,
    name: Box<[u8]>,
    amount: u64,
}

#[allow(clippy::too_many_arguments)]
fn collect(
    name: &[u8],
    node: &TreeNode,
    path: &[u32],
    shown: &std::collections::HashSet<Vec<u32>>,
    depth: usize,
    indent: &mut String,
    last: bool,
    rows: &mut Vec<Row>,
) {
    let branch = if depth == 0 {
        ""
    } else if last {
        "└─ "
    } else {
        "├─ "
    };
    rows.push(Row {
        indent: format!("{indent}{branch}"),
        name: name.into(),
        amount: node.amount,
    });
    let mut kids: Vec<(usize, (&[u8], &TreeNode))> = node
        .children()
        .enumerate()
        .filter(|(i, _)| {
            let mut p = path.to_vec();
            p.push(*i as u32);
            shown.contains(&p)
        })
        .collect();
    kids.sort_by(|a, b| b.1 .1.amount.cmp(&a.1 .1.amount).then_with(|| a.1 .0.cmp(b.1 .0)));
    let saved = indent.len();
    if depth > 0 {
        indent.push_str(if last { "   " } else { "│  " });
    }
    let n = kids.len();
    for (k, (i, (child_name, child))) in kids.into_iter().enumerate() {
        let mut p = path.to_vec();
        p.push(i as u32);
        collect(child_name, child, &p, shown, depth + 1, indent, k + 1 == n, rows);
    }
    indent.truncate(saved);
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
        render(
            &tree,
            &opts,
            &SizeFormat::Blocks {
                block: 1,
                suffix: String::new(),
            },
            &mut out,
        );
        let text = String::from_utf8(out).unwrap();
        let names: Vec<_> = text.lines().map(|l| l.rsplit(' ').next().unwrap()).collect();
        assert_eq!(names, ["root", "big", "inner"]);
        assert!(text.lines().next().unwrap().contains("100%"));
    }
}
