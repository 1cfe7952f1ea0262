//! The 10 largest files under a directory.
//!
//! Each walking thread keeps its own top 10 (a min-heap, so the smallest of
//! the ten is dropped first); the per-thread lists are merged at the end.
//!
//! ```text
//! cargo run --release --example largest -- /var
//! ```

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};

use fnd_walk::{Flow, WalkBuilder};

/// The `n` largest regular files under `root` (`root` itself is not judged), largest first (ties by path).
pub fn largest(root: &Path, n: usize) -> Vec<(u64, PathBuf)> {
    let per_thread = WalkBuilder::new(root)
        .min_depth(1)
        .metadata(true)
        .lenient(true)
        .keep(|e| e.file_type == fnd_walk::FileType::File)
        .for_each_with(BinaryHeap::new, |top, entry| {
            let Some((entry, meta)) = entry.ok().and_then(|e| Some((e, *e.cached_metadata()?))) else {
                return Flow::Continue;
            };
            if top.len() < n || top.peek().is_some_and(|Reverse((size, _))| meta.size > *size) {
                top.push(Reverse((meta.size, entry.path())));
                if top.len() > n {
                    top.pop();
                }
            }
            Flow::Continue
        });
    let mut all: Vec<(u64, PathBuf)> = per_thread.into_iter().flatten().map(|Reverse(e)| e).collect();
    all.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    all.truncate(n);
    all
}

fn main() {
    let root = std::env::args_os().nth(1).unwrap_or_else(|| ".".into());
    for (size, path) in largest(Path::new(&root), 10) {
        println!("{size:>14}  {}", path.display());
    }
}
