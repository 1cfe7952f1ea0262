//! `--format`: fd's path placeholders, exactly as fd renders them, and the
//! metadata placeholders fnd adds.

mod output_tree;

use output_tree::{fnd, sorted_lines, tree};

fn format(dir: &std::path::Path, args: &[&str]) -> Vec<String> {
    let out = fnd(dir).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    sorted_lines(&out.stdout)
}

#[test]
fn path_placeholders_like_fd() {
    let t = tree();
    let got = format(
        t.path(),
        &["--format", "[{}] [{/}] [{//}] [{.}] [{/.}] {{}}", "-e", "gz"],
    );
    assert_eq!(got, ["[a/x.tar.gz] [x.tar.gz] [a] [a/x.tar] [x.tar] {}"]);
    // With a `./` prefix, `{.}` drops it and `{//}` keeps it, as in fd.
    let got = format(t.path(), &["--format", "[{}] [{//}] [{.}]", "b.d", "./a"]);
    assert_eq!(got, ["[./a/b.d] [./a] [a/b]"]);
    let got = format(t.path(), &["--format", "{//}|{.}", "--max-depth", "1", "^a$"]);
    assert_eq!(got, [".|a"]);
}

#[test]
fn absolute_paths_and_separator() {
    let t = tree();
    let root = t.path().canonicalize().unwrap();
    let got = format(t.path(), &["--format", "{//}", "-a", "-e", "gz"]);
    assert_eq!(got, [format!("{}/a", root.display())]);
    let got = format(
        t.path(),
        &["--format", "{} {//} {.} a/b", "--path-separator", "#", "^y$"],
    );
    assert_eq!(got, ["a#b.d#y a#b.d a#b.d#y a/b"]);
}

#[test]
fn unknown_placeholders_are_text() {
    let t = tree();
    let got = format(t.path(), &["--format", "{foo} { {{size}} }", "-e", "gz"]);
    assert_eq!(got, ["{foo} { {size} }"]);
}

#[test]
fn metadata_placeholders() {
    let t = tree();
    let got = format(
        t.path(),
        &[
            "--format",
            "{/} {type} {size} {mode} {perms} {depth}",
            "-t",
            "f",
            "-t",
            "l",
        ],
    );
    assert_eq!(
        got,
        [
            "dangling symlink 7 777 lrwxrwxrwx 1",
            "exe file 10 755 -rwxr-xr-x 1",
            "link symlink 1 777 lrwxrwxrwx 1",
            "x.tar.gz file 5 644 -rw-r--r-- 2",
            "y file 0 644 -rw-r--r-- 3",
        ]
    );
    let got = format(t.path(), &["--format", "{/} {type} {perms}", "-t", "d"]);
    assert_eq!(got, ["a dir drwxr-xr-x", "b.d dir drwxr-xr-x"]);
    let got = format(t.path(), &["--format", "{/}>{target}<", "^(link|dangling|exe)$"]);
    assert_eq!(got, ["dangling>nowhere<", "exe><", "link>a<"]);
    // With -L a followed link is described by its target, as fd's -L treats it.
    let got = format(t.path(), &["-L", "--format", "{/} {type} {perms}", "^(link|dangling)$"]);
    assert_eq!(got, ["dangling symlink lrwxrwxrwx", "link dir drwxr-xr-x"]);
    let meta = std::fs::metadata(t.path().join("exe")).unwrap();
    use std::os::unix::fs::MetadataExt;
    let got = format(t.path(), &["--format", "{inode} {nlink} {uid} {gid}", "^exe$"]);
    assert_eq!(got, [format!("{} 1 {} {}", meta.ino(), meta.uid(), meta.gid())]);
    let got = format(t.path(), &["--format", "{mtime}", "^exe$"]);
    let looks_like_time = |s: &str| s.len() == 19 && s.as_bytes()[4] == b'-' && s.as_bytes()[13] == b':';
    assert!(looks_like_time(&got[0]), "{got:?}");
}

#[test]
fn names_that_are_not_utf8_stay_bytes_when_piped() {
    use std::os::unix::ffi::OsStrExt;
    let t = tree();
    std::fs::write(t.path().join(std::ffi::OsStr::from_bytes(b"bad\xff.c")), b"").unwrap();
    let out = fnd(t.path()).args(["--format", "<{/.}>", "^bad"]).output().unwrap();
    assert_eq!(out.stdout, b"<bad\xff>\n");
    let out = fnd(t.path())
        .args(["^bad", "-x", "printf", "%s|", "{}", "{/}"])
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"./bad\xff.c|bad\xff.c|");
}
