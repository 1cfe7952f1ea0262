//! Filters on what entries are: -t, -S, --changed-within/--changed-before, -o.

mod find_tree;

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::time::{Duration, SystemTime};

use find_tree::{expect, fnd, make, write};

fn tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    make(t.path(), &["d/f.txt", "emptydir/"]);
    write(t.path(), "empty", "");
    write(t.path(), "k1000", &"x".repeat(1000));
    write(t.path(), "k2000", &"x".repeat(2000));
    write(t.path(), "run.sh", "#!/bin/sh\n");
    fs::set_permissions(t.path().join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    symlink("d", t.path().join("ld")).unwrap();
    symlink("k1000", t.path().join("lk")).unwrap();
    symlink("missing", t.path().join("dangling")).unwrap();
    t
}

#[test]
fn types() {
    let t = tree();
    assert_eq!(fnd(t.path(), &["-td"]).sorted(), expect(&["d/", "emptydir/"]));
    assert_eq!(
        fnd(t.path(), &["-t", "symlink"]).sorted(),
        expect(&["dangling", "ld", "lk"])
    );
    assert_eq!(
        fnd(t.path(), &["-tl", "-td"]).sorted(),
        expect(&["d/", "dangling", "emptydir/", "ld", "lk"])
    );
    assert_eq!(fnd(t.path(), &["-tx"]).sorted(), expect(&["run.sh"]));
    assert_eq!(fnd(t.path(), &["-te"]).sorted(), expect(&["empty", "emptydir/"]));
    assert_eq!(fnd(t.path(), &["-te", "-tf"]).sorted(), expect(&["empty"]));
    // With -L a link counts as its target; a dangling link stays a link.
    assert_eq!(fnd(t.path(), &["-L", "-tl"]).sorted(), expect(&["dangling"]));
    assert_eq!(
        fnd(t.path(), &["-L", "-td"]).sorted(),
        expect(&["d/", "emptydir/", "ld/"])
    );
    assert_eq!(fnd(t.path(), &["-t", "nonsense"]).code, 2);
}

#[test]
fn special_files() {
    let t = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(t.path().join("pipe"))
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        eprintln!("mkfifo not available: skipping");
        return;
    }
    make(t.path(), &["file"]);
    assert_eq!(fnd(t.path(), &["-tp"]).sorted(), expect(&["pipe"]));
    assert_eq!(fnd(t.path(), &["-ts", "-tb", "-tc"]).sorted(), Vec::<String>::new());
}

#[test]
fn sizes() {
    let t = tree();
    assert_eq!(fnd(t.path(), &["-S", "+1k"]).sorted(), expect(&["k1000", "k2000"]));
    assert_eq!(
        fnd(t.path(), &["-S", "-1k", "-S", "+1b"]).sorted(),
        expect(&["d/f.txt", "k1000", "lk", "run.sh"])
    );
    assert_eq!(fnd(t.path(), &["-S", "1000b"]).sorted(), expect(&["k1000"]));
    assert_eq!(fnd(t.path(), &["-S", "+1ki"]).sorted(), expect(&["k2000"]));
    let bad = fnd(t.path(), &["-S", "100"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("'100' is not a valid size constraint"),
        "{}",
        bad.stderr
    );
}

#[test]
fn modification_times() {
    let t = tree();
    let old = SystemTime::now() - Duration::from_secs(3 * 86_400);
    fs::File::options()
        .write(true)
        .open(t.path().join("k2000"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let recent = fnd(t.path(), &["--changed-within", "1d", "-tf"]).sorted();
    assert!(
        !recent.contains(&"k2000".to_string()) && recent.contains(&"k1000".to_string()),
        "{recent:?}"
    );
    assert_eq!(
        fnd(t.path(), &["--changed-before", "2days", "-tf"]).sorted(),
        expect(&["k2000"])
    );
    assert_eq!(
        fnd(t.path(), &["--older", "2days", "--newer", "4d"]).sorted(),
        expect(&["k2000"])
    );
    assert_eq!(
        fnd(t.path(), &["--changed-before", "1990-01-01", "-tf"]).sorted(),
        Vec::<String>::new()
    );
    assert_eq!(
        fnd(t.path(), &["--changed-within", "@0", "-e", "txt"]).sorted(),
        expect(&["d/f.txt"])
    );
    let bad = fnd(t.path(), &["--changed-within", "lately"]);
    assert_eq!(bad.code, 1);
    assert_eq!(
        bad.stderr,
        "[fnd error]: 'lately' is not a valid date or duration. See 'fnd --help'.\n"
    );
}

#[test]
fn owners() {
    let t = tree();
    let uid = rustix::process::getuid().as_raw().to_string();
    let all = fnd(t.path(), &[]).sorted();
    assert_eq!(fnd(t.path(), &["-o", &uid]).sorted(), all);
    assert_eq!(
        fnd(t.path(), &["-o", &format!("!{uid}")]).sorted(),
        Vec::<String>::new()
    );
    assert_eq!(fnd(t.path(), &["-o", ":"]).sorted(), all);
    assert_eq!(fnd(t.path(), &["-o", "1:2:3"]).code, 2);
    let bad = fnd(t.path(), &["-o", "no-such-user-here"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("'no-such-user-here' is not a recognized user name"),
        "{}",
        bad.stderr
    );
}
