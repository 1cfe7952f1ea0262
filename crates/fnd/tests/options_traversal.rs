//! Traversal options: depth limits, --prune, -L, -j, -C, --search-path,
//! how search roots are spelt, --order and --sort.

mod find_tree;

use std::os::unix::fs::symlink;

use find_tree::{expect, fnd, make};

fn tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    make(t.path(), &["a/b/c/d.txt", "a/x.txt", "top.txt", "e/"]);
    t
}

#[test]
fn depth_limits() {
    let t = tree();
    assert_eq!(fnd(t.path(), &["-d", "1"]).sorted(), expect(&["a/", "e/", "top.txt"]));
    assert_eq!(
        fnd(t.path(), &["--min-depth", "3"]).sorted(),
        expect(&["a/b/c/", "a/b/c/d.txt"])
    );
    assert_eq!(
        fnd(t.path(), &["--exact-depth", "2"]).sorted(),
        expect(&["a/b/", "a/x.txt"])
    );
    assert_eq!(
        fnd(t.path(), &["-d", "2", "--max-depth", "1"]).sorted(),
        expect(&["a/", "e/", "top.txt"])
    );
    assert_eq!(fnd(t.path(), &["--exact-depth", "1", "-d", "1"]).code, 2);
}

#[test]
fn prune_stops_at_matching_directories() {
    let t = tree();
    make(t.path(), &["a/b/b.txt"]);
    assert_eq!(fnd(t.path(), &["--prune", "^b"]).sorted(), expect(&["a/b/"]));
    assert_eq!(fnd(t.path(), &["^b"]).sorted(), expect(&["a/b/", "a/b/b.txt"]));
}

#[test]
fn follow_links_and_report_loops() {
    let t = tree();
    symlink("a", t.path().join("la")).unwrap();
    symlink("..", t.path().join("a/b/up")).unwrap();
    assert_eq!(fnd(t.path(), &["-tl"]).sorted(), expect(&["a/b/up", "la"]));
    let out = fnd(t.path(), &["-L", "x.txt"]);
    assert_eq!(out.sorted(), expect(&["a/x.txt", "la/x.txt"]));
    assert_eq!(out.stderr, "");
    let out = fnd(t.path(), &["-L", "--show-errors", "^up$"]);
    assert_eq!(out.code, 0);
    assert_eq!(out.stdout, b"");
    assert!(
        out.stderr
            .contains("[fnd error]: File system loop found: ./a/b/up points to an ancestor ./a"),
        "{}",
        out.stderr
    );
}

#[test]
fn threads_must_be_positive() {
    let t = tree();
    let out = fnd(t.path(), &["-j", "0"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("invalid value '0' for '--threads <num>'"),
        "{}",
        out.stderr
    );
    assert_eq!(fnd(t.path(), &["-j", "1"]).sorted(), fnd(t.path(), &[]).sorted());
}

#[test]
fn roots_are_spelt_like_fd() {
    let t = tree();
    assert_eq!(fnd(t.path(), &["^x"]).sorted(), expect(&["a/x.txt"]));
    assert_eq!(fnd(t.path(), &["^x", "."]).sorted(), expect(&["./a/x.txt"]));
    assert_eq!(fnd(t.path(), &["^x", "a"]).sorted(), expect(&["a/x.txt"]));
    assert_eq!(fnd(t.path(), &["^x", "a/"]).sorted(), expect(&["a/x.txt"]));
    assert_eq!(
        fnd(&t.path().join("a/b"), &["^x", "../.."]).sorted(),
        expect(&["../../a/x.txt"])
    );
    assert_eq!(
        fnd(t.path(), &["--search-path", "a", "--search-path", "e", "-tf"]).sorted(),
        expect(&["a/b/c/d.txt", "a/x.txt"])
    );
    assert_eq!(
        fnd(t.path(), &["-C", "a", "-tf"]).sorted(),
        expect(&["b/c/d.txt", "x.txt"])
    );
}

#[test]
fn bad_roots() {
    let t = tree();
    let out = fnd(t.path(), &["^x", "missing", "a"]);
    assert_eq!(out.code, 0);
    assert_eq!(out.sorted(), expect(&["a/x.txt"]));
    assert_eq!(out.stderr, "[fnd error]: Search path 'missing' is not a directory.\n");
    let out = fnd(t.path(), &["^x", "top.txt"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "[fnd error]: Search path 'top.txt' is not a directory.\n[fnd error]: No valid search paths given.\n"
    );
    let out = fnd(t.path(), &["-C", "nowhere"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "[fnd error]: The '--base-directory' path 'nowhere' is not a directory.\n"
    );
    assert_eq!(fnd(t.path(), &["^x", "a", "--search-path", "e"]).code, 2);
}

#[test]
fn sorted_orders_stream_in_tree_order() {
    let t = tree();
    make(t.path(), &["a/a.txt", "a/z/", "b.txt", "e/f.txt"]);
    // Each directory's entries come sorted, then its subdirectories in that order.
    let dfs = fnd(t.path(), &["--sort", "name"]).lines();
    assert_eq!(
        dfs,
        [
            "a/",
            "b.txt",
            "e/",
            "top.txt",
            "a/a.txt",
            "a/b/",
            "a/x.txt",
            "a/z/",
            "a/b/c/",
            "a/b/c/d.txt",
            "e/f.txt"
        ]
    );
    let bfs = fnd(t.path(), &["--sort", "name", "--order", "bfs"]).lines();
    assert_eq!(
        bfs,
        [
            "a/",
            "b.txt",
            "e/",
            "top.txt",
            "a/a.txt",
            "a/b/",
            "a/x.txt",
            "a/z/",
            "e/f.txt",
            "a/b/c/",
            "a/b/c/d.txt"
        ]
    );
}

#[test]
fn sort_by_size_and_time() {
    let t = tempfile::tempdir().unwrap();
    find_tree::write(t.path(), "big", &"x".repeat(300));
    find_tree::write(t.path(), "small", "x");
    find_tree::write(t.path(), "mid", &"x".repeat(100));
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
    std::fs::File::options()
        .write(true)
        .open(t.path().join("big"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    assert_eq!(fnd(t.path(), &["--sort", "size"]).lines(), ["small", "mid", "big"]);
    assert_eq!(fnd(t.path(), &["--sort", "mtime"]).lines()[0], "big");
}

/// Each option's help text sits under that option: `--one-file-system`'s
/// once ran on into `--build-index`'s.
#[test]
fn help_texts_sit_under_their_options() {
    let out = assert_cmd::Command::new(find_tree::fnd_bin())
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    // A long option's paragraph runs from its line to the next option's.
    let paragraph = |opt: &str| -> String {
        let lines: Vec<&str> = help.lines().collect();
        let start = lines
            .iter()
            .position(|l| l.trim_start().starts_with(opt) || l.contains(&format!(", {opt}")))
            .unwrap_or_else(|| panic!("{opt} not in --help"));
        let end = lines[start + 1..]
            .iter()
            .position(|l| l.trim_start().starts_with('-'))
            .map_or(lines.len(), |n| start + 1 + n);
        lines[start..end].join("\n")
    };
    let one_fs = paragraph("--one-file-system");
    assert!(one_fs.contains("other file systems"), "{one_fs}");
    let build = paragraph("--build-index");
    assert!(build.contains("Build an index"), "{build}");
    assert!(!build.contains("file systems"), "{build}");
}
