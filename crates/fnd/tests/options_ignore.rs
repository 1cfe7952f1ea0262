//! Hidden entries and ignore files: -H, -I, -u, --no-ignore-vcs,
//! --no-require-git, --no-ignore-parent, --ignore-file, the global ignore
//! file, --ignore-contain, and -E overrides.

mod find_tree;

use std::ffi::OsStr;

use find_tree::{expect, fnd, fnd_env, git_init, make, write};

/// What the tree shows when its .gitignore does not apply.
const WITHOUT_GITIGNORE: &[&str] = &[
    "a.log",
    "a.txt",
    "keep.log",
    "sub/",
    "sub/b.log",
    "sub/c.rs",
    "vendor/",
    "vendor/lib.rs",
];

/// `outer/.ignore` ignores `up*`; `outer/tree` is searched.
fn tree() -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("outer/tree");
    make(
        &root,
        &[
            "a.txt",
            "a.log",
            "keep.log",
            "up.txt",
            ".hidden",
            ".hdir/x",
            "dot.tmp",
            "fd.bak",
            "sub/b.log",
            "sub/c.rs",
            "vendor/lib.rs",
        ],
    );
    write(&t.path().join("outer"), ".ignore", "up*\n");
    write(&root, ".gitignore", "*.log\n!keep.log\nvendor/\n");
    write(&root, ".ignore", "*.tmp\n");
    write(&root, ".fdignore", "*.bak\n");
    (t, root)
}

#[test]
fn gitignore_applies_only_inside_a_repository() {
    let (_t, root) = tree();
    let outside = fnd(&root, &[]);
    assert_eq!(outside.sorted(), expect(WITHOUT_GITIGNORE));
    assert_eq!(
        fnd(&root, &["--no-require-git"]).sorted(),
        expect(&["a.txt", "keep.log", "sub/", "sub/c.rs"])
    );
    if !git_init(&root) {
        return;
    }
    write(&root, ".git/info/exclude", "c.rs\n");
    assert_eq!(fnd(&root, &[]).sorted(), expect(&["a.txt", "keep.log", "sub/"]));
    assert_eq!(fnd(&root, &["--no-ignore-vcs"]).sorted(), expect(WITHOUT_GITIGNORE));
}

#[test]
fn hidden_and_unrestricted() {
    let (_t, root) = tree();
    let all_hidden = fnd(&root, &["-H"]).sorted();
    assert!(all_hidden.contains(&".hidden".to_string()) && all_hidden.contains(&".hdir/x".to_string()));
    assert!(!all_hidden.contains(&"dot.tmp".to_string()));
    let no_ignore = fnd(&root, &["-I"]).sorted();
    assert!(no_ignore.contains(&"dot.tmp".to_string()) && no_ignore.contains(&"up.txt".to_string()));
    assert!(!no_ignore.contains(&".hidden".to_string()));
    let u = fnd(&root, &["-u"]).sorted();
    assert_eq!(u, fnd(&root, &["-HI"]).sorted());
    assert_eq!(u, fnd(&root, &["-uu"]).sorted());
    assert!(u.contains(&".gitignore".to_string()) && u.contains(&"fd.bak".to_string()));
    // --no-hidden undoes -H.
    assert_eq!(fnd(&root, &["-H", "--no-hidden"]).sorted(), fnd(&root, &[]).sorted());
}

#[test]
fn parent_ignore_files() {
    let (_t, root) = tree();
    assert!(!fnd(&root, &[]).sorted().contains(&"up.txt".to_string()));
    assert!(fnd(&root, &["--no-ignore-parent"])
        .sorted()
        .contains(&"up.txt".to_string()));
}

#[test]
fn explicit_and_global_ignore_files() {
    let (t, root) = tree();
    write(&root, "my.ignore", "c.rs\n");
    let out = fnd(&root, &["--ignore-file", "my.ignore", "-e", "rs"]);
    assert_eq!(out.sorted(), expect(&["vendor/lib.rs"]));
    // An explicit ignore file applies even with -u, as in fd.
    assert!(!fnd(&root, &["-u", "--ignore-file", "my.ignore"])
        .sorted()
        .contains(&"sub/c.rs".to_string()));

    let config = t.path().join("config");
    write(&config, "fd/ignore", "a.txt\n");
    let env = [("XDG_CONFIG_HOME", config.as_os_str())];
    assert!(!find_tree::fnd_env(&root, &[], &env)
        .sorted()
        .contains(&"a.txt".to_string()));
    assert!(fnd_env(&root, &["--no-global-ignore-file"], &env)
        .sorted()
        .contains(&"a.txt".to_string()));
    assert!(fnd_env(&root, &["-I"], &env).sorted().contains(&"a.txt".to_string()));
    let _ = OsStr::new("");
}

#[test]
fn excludes_override_everything() {
    let (_t, root) = tree();
    assert_eq!(
        fnd(&root, &["-E", "*.log", "-E", "vendor"]).sorted(),
        expect(&["a.txt", "sub/", "sub/c.rs"])
    );
    // Applied even with -u, and a directory excluded is not entered.
    let u = fnd(&root, &["-u", "-E", "sub", "-E", ".*"]).sorted();
    assert!(!u.iter().any(|p| p.starts_with("sub") || p.starts_with('.')), "{u:?}");
    // A glob with a slash is anchored at the search root.
    assert_eq!(
        fnd(&root, &["-E", "sub/*.rs", "-e", "rs"]).sorted(),
        expect(&["vendor/lib.rs"])
    );
    let bad = fnd(&root, &["-E", "["]);
    assert_eq!(bad.code, 1);
    assert!(
        bad.stderr.starts_with("[fnd error]: Malformed exclude pattern"),
        "{}",
        bad.stderr
    );
}

#[test]
fn ignore_contain_skips_marked_directories() {
    let (_t, root) = tree();
    make(&root, &["sub/.nosearch"]);
    let out = fnd(&root, &["-u", "--ignore-contain", ".nosearch"]).sorted();
    assert!(!out.iter().any(|p| p.starts_with("sub")), "{out:?}");
    assert!(out.contains(&"a.txt".to_string()));
}
