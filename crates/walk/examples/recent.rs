//! The files changed in the last day under a directory, oldest first.
//!
//! Uses the plain entry iterator: owned entries, metadata fetched in bulk by
//! the walking threads.
//!
//! ```text
//! cargo run --release --example recent -- ~/notes
//! ```

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use fnd_walk::WalkBuilder;

/// Regular files under `root` modified after `since`, oldest first.
pub fn changed_since(root: &Path, since: SystemTime) -> Vec<PathBuf> {
    let since = since
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let mut found: Vec<(i64, u32, PathBuf)> = WalkBuilder::new(root)
        .min_depth(1)
        .metadata(true)
        .lenient(true)
        .keep(|e| e.file_type == fnd_walk::FileType::File)
        .iter()
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let meta = *entry.cached_metadata()?;
            (meta.mtime >= since).then(|| (meta.mtime, meta.mtime_nsec, entry.into_path()))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, _, path)| path).collect()
}

fn main() {
    let root = std::env::args_os().nth(1).unwrap_or_else(|| ".".into());
    let day_ago = SystemTime::now() - Duration::from_secs(24 * 60 * 60);
    for path in changed_since(Path::new(&root), day_ago) {
        println!("{}", path.display());
    }
}
