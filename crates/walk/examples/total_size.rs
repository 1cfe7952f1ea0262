//! The total apparent size (sum of `st_size`) of everything under a
//! directory, with exactly one stat per entry.
//!
//! `metadata(true)` makes the walk stat each entry on the thread that read
//! its directory, relative to the still-open directory (`fstatat`), in bulk
//! per chunk; `cached_metadata` then reads it without another system call.
//!
//! ```text
//! cargo run --release --example total_size -- ~/src
//! ```

use std::path::Path;

use fnd_walk::{Flow, WalkBuilder};

/// Sum of `st_size` over the root and everything under it, and the number of entries.
pub fn total_size(root: &Path) -> (u64, u64) {
    let per_thread = WalkBuilder::new(root).metadata(true).lenient(true).for_each_with(
        || (0u64, 0u64),
        |(bytes, entries), entry| {
            if let Some(meta) = entry.ok().and_then(|e| e.cached_metadata()) {
                *bytes += meta.size;
                *entries += 1;
            }
            Flow::Continue
        },
    );
    per_thread.into_iter().fold((0, 0), |(b, n), (tb, tn)| (b + tb, n + tn))
}

fn main() {
    let root = std::env::args_os().nth(1).unwrap_or_else(|| ".".into());
    let (bytes, entries) = total_size(Path::new(&root));
    println!("{bytes} bytes in {entries} entries");
}
