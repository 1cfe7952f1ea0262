//! The tree view (`--tree`): the largest entries, indented under their
//! directories, each with a bar and its share of the total (after dust).
//!
//! The view picks the `lines` largest entries no deeper than `depth`, which
//! always includes their ancestors (a directory is never smaller than what
//! it holds), and prints them largest first.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

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
}
