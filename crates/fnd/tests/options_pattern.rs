//! Pattern options: regex (default), smart case, -s/-i, -g, -F, --exact,
//! --and, -p, -e, and the errors fd gives for patterns that cannot match.

mod find_tree;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use find_tree::{expect, fnd, make};

fn tree() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    make(
        t.path(),
        &[
            "Readme.md",
            "readme.txt",
            "src/main.rs",
            "src/lib.rs",
            "src/a.b.rs",
            "notes/",
            "x.tar.gz",
            "y.TXT",
            ".txt",
        ],
    );
    t
}

#[test]
fn regex_matches_names_with_smart_case() {
    let t = tree();
    assert_eq!(
        fnd(t.path(), &["readme"]).sorted(),
        expect(&["Readme.md", "readme.txt"])
    );
    assert_eq!(fnd(t.path(), &["Readme"]).sorted(), expect(&["Readme.md"]));
    assert_eq!(fnd(t.path(), &["-s", "readme"]).sorted(), expect(&["readme.txt"]));
    assert_eq!(
        fnd(t.path(), &["-i", "README"]).sorted(),
        expect(&["Readme.md", "readme.txt"])
    );
    // The last of -s/-i wins.
    assert_eq!(fnd(t.path(), &["-i", "-s", "readme"]).sorted(), expect(&["readme.txt"]));
    assert_eq!(fnd(t.path(), &["^ma.*rs$"]).sorted(), expect(&["src/main.rs"]));
}

#[test]
fn glob_fixed_exact_and() {
    let t = tree();
    assert_eq!(
        fnd(t.path(), &["-g", "*.rs"]).sorted(),
        expect(&["src/a.b.rs", "src/lib.rs", "src/main.rs"])
    );
    // Without -p a glob sees the name only; '*' never crosses '/'.
    assert_eq!(
        fnd(t.path(), &["-p", "-g", "**/src/*.rs"]).sorted(),
        expect(&["src/a.b.rs", "src/lib.rs", "src/main.rs"])
    );
    assert_eq!(fnd(t.path(), &["-F", "a.b"]).sorted(), expect(&["src/a.b.rs"]));
    assert_eq!(fnd(t.path(), &["--exact", "lib.rs"]).sorted(), expect(&["src/lib.rs"]));
    assert_eq!(fnd(t.path(), &["--exact", "lib"]).sorted(), Vec::<String>::new());
    assert_eq!(
        fnd(t.path(), &["rs", "--and", "^m", "--and", "n"]).sorted(),
        expect(&["src/main.rs"])
    );
    // --regex after -g switches back.
    assert_eq!(fnd(t.path(), &["-g", "--regex", "^no"]).sorted(), expect(&["notes/"]));
}

#[test]
fn full_path_matches_the_absolute_path() {
    let t = tree();
    let out = fnd(t.path(), &["-p", "src/m"]);
    assert_eq!(out.sorted(), expect(&["src/main.rs"]));
    assert_eq!(fnd(t.path(), &["-p", "^/.*notes$"]).sorted(), expect(&["notes/"]));
}

#[test]
fn extensions() {
    let t = tree();
    assert_eq!(fnd(t.path(), &["-e", "txt"]).sorted(), expect(&["readme.txt", "y.TXT"]));
    assert_eq!(fnd(t.path(), &["-e", "tar.gz"]).sorted(), expect(&["x.tar.gz"]));
    assert_eq!(
        fnd(t.path(), &["-e", ".gz", "-e", "md"]).sorted(),
        expect(&["Readme.md", "x.tar.gz"])
    );
    // A hidden file named `.txt` has no extension.
    assert_eq!(
        fnd(t.path(), &["-H", "-e", "txt"]).sorted(),
        expect(&["readme.txt", "y.TXT"])
    );
}

#[test]
fn non_utf8_names_match_as_bytes() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join(OsStr::from_bytes(b"caf\xe9.txt")), "").unwrap();
    let out = fnd(t.path(), &["caf"]);
    assert_eq!(out.stdout, b"caf\xe9.txt\n");
    // As in fd, `-e` wants a character before the dot, and a stray byte is none.
    assert_eq!(fnd(t.path(), &["-e", "txt"]).stdout, b"");
}

#[test]
fn patterns_that_cannot_match_are_errors() {
    let t = tree();
    let out = fnd(t.path(), &["src/main"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .starts_with("[fnd error]: The search pattern 'src/main' contains a path-separation character"),
        "{}",
        out.stderr
    );
    let out = fnd(t.path(), &["x", "--and", "a/b"]);
    assert_eq!(out.code, 1);
    let out = fnd(t.path(), &["^\\.txt"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("only match files with a leading dot"),
        "{}",
        out.stderr
    );
    assert_eq!(fnd(t.path(), &["-H", "^\\.txt"]).sorted(), expect(&[".txt"]));
    let out = fnd(t.path(), &["(unclosed"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("--fixed-strings"), "{}", out.stderr);
    let out = fnd(t.path(), &["-g", "["]);
    assert_eq!(out.code, 1);
    // -g and -F conflict: a usage error.
    assert_eq!(fnd(t.path(), &["-g", "-F", "x"]).code, 2);
}
