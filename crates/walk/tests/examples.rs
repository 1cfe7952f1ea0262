//! Runs the code of each example in `examples/` on a tree built here, and
//! checks its answer against one computed with `std::fs`.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

#[path = "../examples/count_files.rs"]
#[allow(dead_code)]
mod count_files;
#[path = "../examples/largest.rs"]
#[allow(dead_code)]
mod largest;
#[path = "../examples/recent.rs"]
#[allow(dead_code)]
mod recent;
#[path = "../examples/rs_lines.rs"]
#[allow(dead_code)]
mod rs_lines;
#[path = "../examples/total_size.rs"]
#[allow(dead_code)]
mod total_size;

/// Files of known sizes and line counts in a few levels of directories.
fn make_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for d in ["src/walk", "src/empty", "docs", "deep/a/b/c"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let files: [(&str, usize); 8] = [
        ("src/main.rs", 10),
        ("src/walk/mod.rs", 25),
        ("src/walk/read.rs", 3),
        ("docs/guide.md", 40),
        ("deep/a/b/c/x.rs", 7),
        ("deep/a/notes.txt", 1),
        ("README", 2),
        ("big.bin", 0),
    ];
    for (path, lines) in files {
        std::fs::write(root.join(path), "line\n".repeat(lines)).unwrap();
    }
    std::fs::write(root.join("big.bin"), vec![0u8; 100_000]).unwrap();
    std::os::unix::fs::symlink("src", root.join("link")).unwrap();
    dir
}

/// Every path under `root` (not `root` itself), by `std::fs`.
fn all_paths(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                dirs.push(entry.path());
            }
            out.push(entry.path());
        }
    }
    out
}

#[test]
fn count_files_counts_files_and_directories() {
    let tree = make_tree();
    let paths = all_paths(tree.path());
    let dirs = paths
        .iter()
        .filter(|p| std::fs::symlink_metadata(p).unwrap().is_dir())
        .count() as u64;
    let counts = count_files::count(&[tree.path().to_path_buf()]);
    assert_eq!(
        counts,
        count_files::Counts {
            files: paths.len() as u64 - dirs,
            dirs,
            errors: 0
        }
    );
}

#[test]
fn count_files_reports_a_missing_root() {
    let tree = make_tree();
    let counts = count_files::count(&[tree.path().join("src"), tree.path().join("missing")]);
    assert_eq!(counts.errors, 1);
    assert_eq!(counts.files, 3);
}

#[test]
fn total_size_sums_every_entry_once() {
    let tree = make_tree();
    let mut want = std::fs::symlink_metadata(tree.path()).unwrap().len();
    let paths = all_paths(tree.path());
    for path in &paths {
        want += std::fs::symlink_metadata(path).unwrap().len();
    }
    assert_eq!(total_size::total_size(tree.path()), (want, paths.len() as u64 + 1));
}

#[test]
fn rs_lines_counts_lines_of_rust_files_only() {
    let tree = make_tree();
    assert_eq!(rs_lines::rs_lines(tree.path()), (10 + 25 + 3 + 7, 4));
}

#[test]
fn largest_lists_the_biggest_files_first() {
    let tree = make_tree();
    let top = largest::largest(tree.path(), 3);
    let names: Vec<_> = top
        .iter()
        .map(|(_, p)| p.strip_prefix(tree.path()).unwrap().to_path_buf())
        .collect();
    assert_eq!(
        names,
        ["big.bin", "docs/guide.md", "src/walk/mod.rs"].map(PathBuf::from)
    );
    assert_eq!(top[0].0, 100_000);
    assert_eq!(largest::largest(tree.path(), 100).len(), 8);
}

#[test]
fn recent_finds_files_changed_since_a_time() {
    let tree = make_tree();
    let old = SystemTime::now() - Duration::from_secs(3 * 24 * 60 * 60);
    for path in all_paths(tree.path()) {
        if std::fs::symlink_metadata(&path).unwrap().is_file() && path.file_name().unwrap() != "README" {
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
    }
    let day_ago = SystemTime::now() - Duration::from_secs(24 * 60 * 60);
    assert_eq!(
        recent::changed_since(tree.path(), day_ago),
        [tree.path().join("README")]
    );
    assert_eq!(
        recent::changed_since(tree.path(), old - Duration::from_secs(1)).len(),
        8
    );
}
