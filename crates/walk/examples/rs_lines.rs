//! Count the lines of every `*.rs` file under a directory, reading the
//! files in parallel on the walk's own threads.
//!
//! `keep` drops the other entries on the reading thread, before they are
//! batched; each file is opened relative to its directory's open descriptor.
//!
//! ```text
//! cargo run --release --example rs_lines -- ~/src/rust
//! ```

use std::io::Read;
use std::path::Path;

use fnd_walk::{FileType, Flow, WalkBuilder};

/// Lines in all `*.rs` files under `root`, and how many files there were.
pub fn rs_lines(root: &Path) -> (u64, u64) {
    let per_thread = WalkBuilder::new(root)
        .lenient(true)
        .keep(|e| e.file_type == FileType::File && e.name.ends_with(b".rs"))
        .for_each_with(
            || (0u64, 0u64, Vec::new()),
            |(lines, files, buf), entry| {
                let Ok(entry) = entry else { return Flow::Continue };
                let Ok(mut file) = open(&entry) else {
                    return Flow::Continue;
                };
                buf.clear();
                if file.read_to_end(buf).is_ok() {
                    *lines += buf.iter().filter(|&&b| b == b'\n').count() as u64;
                    *files += 1;
                }
                Flow::Continue
            },
        );
    per_thread
        .into_iter()
        .fold((0, 0), |(l, f), (tl, tf, _)| (l + tl, f + tf))
}

/// Open a file relative to its directory while the walk holds it open,
/// else by path.
fn open(entry: &fnd_walk::EntryRef<'_>) -> std::io::Result<std::fs::File> {
    use rustix::fs::{Mode, OFlags};
    match entry.parent_fd() {
        Some(dir) => {
            let fd = rustix::fs::openat(dir, entry.name_bytes(), OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
            Ok(std::fs::File::from(fd))
        }
        None => std::fs::File::open(entry.path()),
    }
}

fn main() {
    let root = std::env::args_os().nth(1).unwrap_or_else(|| ".".into());
    let (lines, files) = rs_lines(Path::new(&root));
    println!("{lines} lines in {files} .rs files");
}
