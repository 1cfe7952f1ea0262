//! What becomes of results: --max-results, -1, -q, --show-errors, exit
//! codes, and the path text options -0, -a, --path-separator,
//! --strip-cwd-prefix.

mod find_tree;

use find_tree::{expect, fnd, make};

fn tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    make(t.path(), &["a/b.txt", "a/c.txt", "d.txt", "-dash"]);
    t
}

#[test]
fn result_limits() {
    let t = tree();
    let out = fnd(t.path(), &["--max-results", "2"]);
    assert_eq!((out.code, out.lines().len()), (0, 2));
    let out = fnd(t.path(), &["-1", "txt"]);
    assert_eq!((out.code, out.lines().len()), (0, 1));
    assert!(out.lines()[0].ends_with(".txt"));
    // 0 means no limit, as in fd.
    assert_eq!(fnd(t.path(), &["--max-results", "0"]).lines().len(), 5);
}

#[test]
fn quiet_reports_through_the_exit_code() {
    let t = tree();
    let out = fnd(t.path(), &["-q", "txt"]);
    assert_eq!((out.code, out.stdout.len()), (0, 0));
    let out = fnd(t.path(), &["--has-results", "nothing-like-this"]);
    assert_eq!((out.code, out.stdout.len()), (1, 0));
    // Without -q, finding nothing is still a success.
    assert_eq!(fnd(t.path(), &["nothing-like-this"]).code, 0);
    assert_eq!(fnd(t.path(), &["-q", "--max-results", "1"]).code, 2);
}

#[test]
fn usage_errors_exit_2() {
    let t = tree();
    let out = fnd(t.path(), &["--no-such-option"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.starts_with("error: unexpected argument '--no-such-option'"),
        "{}",
        out.stderr
    );
    assert_eq!(fnd(t.path(), &["-d"]).code, 2);
    assert_eq!(fnd(t.path(), &["-d", "x"]).code, 2);
    assert_eq!(fnd(t.path(), &["--version"]).code, 0);
}

#[test]
fn path_text() {
    let t = tree();
    let out = fnd(t.path(), &["-0", "b.txt"]);
    assert_eq!(out.stdout, b"./a/b.txt\0");
    assert_eq!(
        fnd(t.path(), &["-0", "--strip-cwd-prefix", "b.txt"]).stdout,
        b"a/b.txt\0"
    );
    assert_eq!(
        fnd(t.path(), &["--strip-cwd-prefix=never", "b.txt"]).stdout,
        b"./a/b.txt\n"
    );
    assert_eq!(
        fnd(t.path(), &["--path-separator", "\\", "b.txt"]).stdout,
        b"a\\b.txt\n"
    );
    assert_eq!(fnd(t.path(), &["--path-separator", "::", "-td"]).stdout, b"a::\n");
    // './' stays before a name starting with '-' so no command reads it as an option.
    assert_eq!(fnd(t.path(), &["dash"]).stdout, b"./-dash\n");
    let abs = std::fs::canonicalize(t.path()).unwrap();
    let out = fnd(t.path(), &["-a", "b.txt"]);
    assert_eq!(out.sorted(), expect(&[&format!("{}/a/b.txt", abs.display())]));
    let out = fnd(t.path(), &["-a", "b.txt", "a"]);
    assert_eq!(out.sorted(), expect(&[&format!("{}/a/b.txt", abs.display())]));
}

#[test]
fn quick_searches_print_sorted_by_path() {
    let t = tempfile::tempdir().unwrap();
    make(t.path(), &["a.txt", "a/b", "b", "a/a/z", "-x"]);
    // Held back for an hour, the results come out sorted as paths sort:
    // component by component, so `a/…` precedes `a.txt`.
    let out = fnd(t.path(), &["--max-buffer-time", "3600000"]);
    assert_eq!(out.lines(), ["./-x", "a/", "a/a/", "a/a/z", "a/b", "a.txt", "b"]);
    let out = fnd(t.path(), &["--max-buffer-time", "3600000", "--max-results", "2", "-tf"]);
    assert_eq!(out.lines().len(), 2);
}
