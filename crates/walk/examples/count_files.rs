//! Count the files and directories under each argument (default `.`).
//!
//! Chunks are the cheapest way to consume a walk: one channel operation per
//! chunk, no allocation per entry.
//!
//! ```text
//! cargo run --release --example count_files -- /usr
//! ```

use std::path::PathBuf;

use fnd_walk::{FileType, WalkBuilder};

/// Files, directories and errors met under `roots`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub files: u64,
    pub dirs: u64,
    pub errors: u64,
}

pub fn count(roots: &[PathBuf]) -> Counts {
    let mut builder = WalkBuilder::new(&roots[0]).min_depth(1).lenient(true);
    for root in &roots[1..] {
        builder = builder.add_root(root);
    }
    let mut counts = Counts::default();
    for chunk in builder.chunks() {
        let Ok(chunk) = chunk else {
            counts.errors += 1;
            continue;
        };
        for entry in chunk.iter() {
            match entry.file_type() {
                FileType::Dir => counts.dirs += 1,
                _ => counts.files += 1,
            }
        }
    }
    counts
}

fn main() {
    let mut roots: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    if roots.is_empty() {
        roots.push(".".into());
    }
    let counts = count(&roots);
    println!("{} files, {} directories", counts.files, counts.dirs);
    if counts.errors > 0 {
        eprintln!("{} errors", counts.errors);
        std::process::exit(1);
    }
}
