//! The core of fd's behaviour, checked against outputs stored in
//! `tests/expected/NAME.out` (as bfs keeps its `.out` files), so the suite
//! checks it whether or not fd is installed: patterns, globs, types, depth,
//! hidden and ignored entries, `-x`/`-X`, `--format`, `-0`, exit codes.
//!
//! The tree is built the same way every time (fixed names, sizes, modes and
//! modification times) and every run gets the same environment (`TZ=UTC`,
//! no `LS_COLORS`, an empty home). Records are sorted where fd defines no
//! order. When fd 10.5 is installed, each case marked as fd's is run with
//! fd too, and fd must agree with the stored output: the files are fd's
//! behaviour, not a snapshot of fnd's (`FND_REQUIRE_REFERENCE=1` makes a
//! missing fd a failure).
//!
//! After a deliberate change of output, or to add a case, write the files
//! again and review the diff:
//!
//! ```text
//! FND_BLESS=1 cargo test -p fnd --test expected_outputs
//! ```

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use fnd_test_support::expected::{self, set_mtime, Expected, Run};
use fnd_test_support::references;

/// 2001-09-09 01:46:40 UTC and 2020-09-13 12:26:40 UTC.
const OLD: i64 = 1_000_000_000;
const NEW: i64 = 1_600_000_000;

/// Files: path, size, mode, modification time. Every top-level file that
/// is listed by default has a size of its own (for `--sort size`).
const FILES: &[(&[u8], usize, u32, i64)] = &[
    (b"README.md", 100, 0o644, NEW),
    (b"a.txt", 1, 0o644, OLD),
    (b"b.TXT", 10, 0o644, OLD),
    (b"c.rs", 2048, 0o644, NEW),
    (b"Makefile", 30, 0o644, OLD),
    (b"archive.tar.gz", 2000, 0o644, OLD),
    (b"big.bin", 150_000, 0o644, NEW),
    (b"empty.txt", 0, 0o644, OLD),
    (b"exe.sh", 20, 0o755, NEW),
    (b"with space.txt", 11, 0o644, OLD),
    (b"-dash.txt", 12, 0o644, OLD),
    (b"caf\xc3\xa9.txt", 13, 0o644, NEW),
    (b"bad\xff.txt", 14, 0o644, OLD),
    (b"notes.log", 6, 0o644, NEW),
    (b"x.tmp", 2, 0o644, OLD),
    (b"fdignored.txt", 3, 0o644, OLD),
    (b".hidden_file", 3, 0o644, OLD),
    (b".hidden_dir/inside.txt", 4, 0o644, NEW),
    (b"build/out.o", 500, 0o644, NEW),
    (b"ignored_dir/x.txt", 1, 0o644, OLD),
    (b"src/main.rs", 300, 0o644, NEW),
    (b"src/lib.rs", 1000, 0o644, OLD),
    (b"src/util/mod.rs", 50, 0o644, NEW),
    (b"src/util/helpers.rs", 999, 0o644, OLD),
    (b"src/util/deep/nested/leaf.txt", 7, 0o644, NEW),
    (b"docs/guide.md", 4000, 0o644, OLD),
    (b"docs/api.md", 1001, 0o644, NEW),
    (b"docs/images/logo.png", 3000, 0o644, OLD),
];

/// Ignore files: `.gitignore` counts only in a git repository (there is
/// none here) or with `--no-require-git`; `.ignore` and `.fdignore` always.
const IGNORE_FILES: &[(&str, &str)] = &[
    (".gitignore", "*.log\n/build/\n"),
    (".ignore", "ignored_dir/\n*.tmp\n"),
    (".fdignore", "fdignored*\n"),
    ("custom.ignore", "*.md\n"),
];

const DIRS: &[(&str, i64)] = &[
    ("emptydir", OLD),
    (".hidden_dir", OLD),
    ("build", OLD),
    ("ignored_dir", OLD),
    ("src/util/deep/nested", OLD),
    ("src/util/deep", OLD),
    ("src/util", NEW),
    ("src", OLD),
    ("docs/images", OLD),
    ("docs", NEW),
];

const LINKS: &[(&str, &str)] = &[("link_to_src", "src"), ("link_to_a", "a.txt"), ("dangling", "nowhere")];

fn build(root: &Path) {
    for (path, size, mode, _) in FILES {
        let path = root.join(std::ffi::OsStr::from_bytes(path));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, vec![b'x'; *size]).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(*mode)).unwrap();
    }
    for (name, text) in IGNORE_FILES {
        fs::write(root.join(name), text).unwrap();
        fs::set_permissions(root.join(name), fs::Permissions::from_mode(0o644)).unwrap();
        set_mtime(&root.join(name), OLD);
    }
    for (dir, _) in DIRS {
        fs::create_dir_all(root.join(dir)).unwrap();
    }
    for (link, target) in LINKS {
        symlink(target, root.join(link)).unwrap();
        set_mtime(&root.join(link), OLD);
    }
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    fs::set_permissions(root.join("fifo"), fs::Permissions::from_mode(0o644)).unwrap();
    set_mtime(&root.join("fifo"), OLD);
    for (path, _, _, mtime) in FILES {
        set_mtime(&root.join(std::ffi::OsStr::from_bytes(path)), *mtime);
    }
    for (dir, mtime) in DIRS {
        fs::set_permissions(root.join(dir), fs::Permissions::from_mode(0o755)).unwrap();
        set_mtime(&root.join(dir), *mtime);
    }
}

/// One stored case: its file name, fnd's arguments, whether fd 10.5 must
/// print the same (false for what fd lacks), and whether the records come
/// in a defined order (else they are sorted).
struct Case {
    name: &'static str,
    args: &'static [&'static str],
    fd: bool,
    ordered: bool,
}

const fn fd(name: &'static str, args: &'static [&'static str]) -> Case {
    Case {
        name,
        args,
        fd: true,
        ordered: false,
    }
}

const fn fnd_only(name: &'static str, args: &'static [&'static str], ordered: bool) -> Case {
    Case {
        name,
        args,
        fd: false,
        ordered,
    }
}

const CASES: &[Case] = &[
    // What is listed: hidden and ignored entries.
    fd("default", &[]),
    fd("hidden", &["-H"]),
    fd("no_ignore", &["-I"]),
    fd("unrestricted", &["-u"]),
    fd("no_require_git", &["--no-require-git"]),
    fd("no_ignore_vcs", &["--no-require-git", "--no-ignore-vcs"]),
    fd("ignore_file", &["--ignore-file", "custom.ignore"]),
    fd("hidden_pattern", &["-H", "^\\.h"]),
    // Patterns.
    fd("regex", &["^[a-c]\\."]),
    fd("regex_full_path", &["-p", "src/util/.*\\.rs$"]),
    fd("smart_case_upper", &["TXT"]),
    fd("smart_case_lower", &["txt"]),
    fd("case_sensitive", &["-s", "txt"]),
    fd("ignore_case", &["-i", "TXT"]),
    fd("fixed_strings", &["-F", "a.t"]),
    fd("and", &["rs", "--and", "util"]),
    fd("no_match", &["zzz_nothing"]),
    fd("bad_regex", &["(unclosed"]),
    // Globs.
    fd("glob", &["-g", "*.rs"]),
    fd("glob_braces", &["-g", "*.{md,txt}"]),
    fd("glob_class", &["-g", "[a-c].*"]),
    fd("glob_full_path", &["-p", "-g", "**/util/*.rs"]),
    // Extensions and types.
    fd("extension", &["-e", "txt"]),
    fd("extensions", &["-e", "md", "-e", "RS"]),
    fd("extension_double", &["-e", "tar.gz"]),
    fd("type_file", &["-tf"]),
    fd("type_dir", &["-td"]),
    fd("type_symlink", &["-tl"]),
    fd("type_executable", &["-tx"]),
    fd("type_empty", &["-te"]),
    fd("type_pipe", &["-tp"]),
    fd("type_file_or_symlink", &["-tf", "-tl"]),
    fd("follow", &["-L"]),
    fd("follow_dirs", &["-L", "-td"]),
    // Depth, excludes, pruning, search paths.
    fd("max_depth", &["-d", "1"]),
    fd("min_depth", &["--min-depth", "3"]),
    fd("exact_depth", &["--exact-depth", "2"]),
    fd("exclude", &["-E", "*.md", "-E", "util"]),
    fd("exclude_anchored", &["-E", "/docs"]),
    fd("prune", &["--prune", "src"]),
    fd("search_paths", &[".", "docs", "src/util"]),
    fd("base_directory", &["-C", "src", "rs"]),
    fd("missing_search_path", &[".", "missing"]),
    // Size and time.
    fd("size_at_least", &["-S", "+1k"]),
    fd("size_at_most", &["-S", "-10b"]),
    fd("size_exact", &["-S", "100b"]),
    fd("changed_before", &["--changed-before", "2010-01-01"]),
    fd("changed_within", &["--changed-within", "2015-01-01 00:00:00"]),
    // Results and output.
    fd("absolute", &["-a", "-e", "rs"]),
    fd("print0", &["-0", "-e", "txt"]),
    fd("path_separator", &["--path-separator", "::", "-e", "rs"]),
    fd("strip_cwd_prefix_never", &["--strip-cwd-prefix=never", "-e", "md"]),
    fd("max_results", &["-1", "guide"]),
    fd("quiet_found", &["-q", "guide"]),
    fd("quiet_not_found", &["-q", "zzz_nothing"]),
    fd("format", &["-e", "txt", "--format", "{/} in {//} ({.}, {/.})"]),
    // Commands: one per result, and batches.
    fd("exec", &["-e", "rs", "-x", "echo", "{}", "{/}", "{//}", "{.}", "{/.}"]),
    fd("exec_implicit_path", &["-e", "md", "-x", "echo"]),
    fd("exec_batch", &["-e", "md", "-X", "printf", "[%s]\n"]),
    fd(
        "exec_batch_placeholder",
        &["-e", "rs", "-X", "printf", "<%s>\n", "{/.}"],
    ),
    fd("exec_fails", &["-e", "md", "-x", "false"]),
    // Beyond fd: metadata placeholders and deterministic orders.
    fnd_only(
        "format_metadata",
        &["-tf", "--format", "{size} {mode} {perms} {type} {depth} {mtime} {}"],
        false,
    ),
    fnd_only("format_links", &["-tl", "--format", "{type} {target} {}"], false),
    fnd_only("format_bytes", &["-g", "bad*", "--format", "<{}>"], false),
    fnd_only("order_dfs_by_name", &["--order", "dfs", "--sort", "name"], true),
    fnd_only("order_bfs_by_name", &["--order", "bfs", "--sort", "name", "-H"], true),
    fnd_only("sort_by_size", &["--sort", "size", "-d", "1", "-tf"], true),
];

fn run(program: Command, args: &[&str], cwd: &Path) -> Output {
    let mut cmd = program;
    cmd.args(args)
        .current_dir(cwd)
        .env("HOME", cwd.parent().unwrap().join("home"))
        .env("XDG_CONFIG_HOME", cwd.parent().unwrap().join("home/.config"))
        .env("TZ", "UTC")
        .env_remove("LS_COLORS")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run")
}

fn render(case: &Case, out: &Output, root: &Path, own_name: (&[u8], &[u8])) -> String {
    let sep = if case.args.contains(&"-0") { 0 } else { b'\n' };
    let root = root.as_os_str().as_bytes();
    let run = Run {
        args: case.args,
        stdout: &out.stdout,
        stderr: &out.stderr,
        code: out.status.code(),
    };
    run.render(sep, !case.ordered, &[(root, b"{root}"), own_name])
        .unwrap_or_else(|e| panic!("{}: {e}", case.name))
}

#[test]
fn fnd_prints_the_stored_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    // The real path: that is what `-a` prints.
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("tree");
    fs::create_dir_all(base.join("home")).unwrap();
    fs::create_dir(&root).unwrap();
    build(&root);
    let stored = Expected::new(expected::dir_of(env!("CARGO_MANIFEST_DIR")));
    let fd = references::fd();
    let mut failures = Vec::new();
    for case in CASES {
        let ours = run(Command::new(env!("CARGO_BIN_EXE_fnd")), case.args, &root);
        let text = render(case, &ours, &root, (b"", b""));
        if let Err(e) = stored.check(case.name, &text) {
            failures.push(format!("fnd: {e}"));
            continue;
        }
        if let Some(fd) = fd.as_ref().filter(|_| case.fd && !expected::blessing()) {
            let theirs = run(fd.command(), case.args, &root);
            let text = render(case, &theirs, &root, (b"[fd error]", b"[fnd error]"));
            if let Err(e) = stored.check_reference(case.name, fd.version(), &text) {
                failures.push(e);
            }
        }
    }
    let names: Vec<&str> = CASES.iter().map(|c| c.name).collect();
    for stale in stored.stale(&names) {
        failures.push(format!("{}: no case writes it any more", stale.display()));
    }
    assert!(
        failures.is_empty(),
        "{} of {} stored outputs differ:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}
