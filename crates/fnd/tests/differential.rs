//! Runs the real `fd` (10.5) and `fnd` side by side over a matrix of options
//! on trees built here, inside and outside a git repository, and compares
//! their output (in order) and exit codes. Without `fd` 10.5 (or `git`) it
//! says so on stderr and compares nothing; with `FND_REQUIRE_REFERENCE=1`
//! that is a failure. `tests/expected.rs` checks the core of the same
//! behaviour against stored outputs, with or without fd.

mod find_tree;

use std::path::Path;
use std::process::Command;

use find_tree::{build_tree, fnd_bin};
use fnd_test_support::references;

struct Run {
    code: i32,
    lines: Vec<Vec<u8>>,
    stderr: String,
}

fn run(program: &Path, args: &[&str], cwd: &Path, home: &Path) -> Run {
    // Both hold results back this long (fd's hidden option) and then print
    // them sorted, so the order can be compared too.
    let out = Command::new(program)
        .args(["--max-buffer-time", "3600000"])
        .args(args)
        .current_dir(cwd)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("LS_COLORS")
        .env("NO_COLOR", "1")
        .output()
        .expect("run");
    let lines: Vec<Vec<u8>> = out
        .stdout
        .split(|&b| b == b'\n' || b == 0)
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    Run {
        code: out.status.code().unwrap_or(-1),
        lines,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn sorted_lines(s: &str) -> Vec<&str> {
    let mut v: Vec<&str> = s.lines().collect();
    v.sort_unstable();
    v
}

/// Option sets compared on every tree; each is split on spaces (no quoting).
const CASES: &[&str] = &[
    "",
    "-H",
    "-I",
    "-u",
    "-uu",
    "-HI",
    "--no-ignore-vcs",
    "--no-require-git",
    "--no-ignore-parent",
    "--no-global-ignore-file",
    "-H --no-ignore-vcs",
    "-E *.rs",
    "-E dir",
    "-E sub/",
    "-u -E sub",
    "-H -E .hdir",
    "--ignore-file custom.ignore",
    "-u --ignore-file custom.ignore",
    "--ignore-contain marker",
    "-u --ignore-contain marker",
    "txt",
    "TXT",
    "-s txt",
    "-i TXT",
    "-F .",
    "-F a.t",
    "--exact a.txt",
    "-g *.txt",
    "-g *.{rs,md}",
    "-g d*",
    "--glob --regex ^d",
    "-p dir.*rs$",
    "-p -g **/sub/*",
    "--and rs --and deep",
    "^[a-c]",
    "-e txt",
    "-e TXT -e rs",
    "-e tar.gz",
    "-e .gz",
    "-tf",
    "-td",
    "-tl",
    "-tx",
    "-te",
    "-te -tf",
    "-tp",
    "-tf -tl",
    "-L",
    "-L -tl",
    "-L -td",
    "-L -tf",
    "-d 1",
    "-d 2 -H",
    "--min-depth 2",
    "--exact-depth 2",
    "--prune",
    "--prune dir",
    "--prune -td sub",
    "-S +1k",
    "-S -1b",
    "-S 2000b",
    "-S +1ki -S -3k",
    "--changed-within 1d",
    "--changed-before 2000-01-01",
    "--changed-within @0",
    "-o root",
    "-o !root",
    "-o :0",
    "-a",
    "-a -e rs",
    "-0",
    "--path-separator ::",
    "--strip-cwd-prefix=never",
    "-q",
    "-q zzz_nothing",
    ". dir",
    ". dir/",
    ". dir sub-missing",
    ". missing",
    "--search-path dir",
    "--search-path dir --search-path .hdir",
    ". -C dir",
    "-H -a . .hdir",
    "dir/sub",
    "-p dir/sub",
    "^\\.hid",
    "-H ^\\.hid",
    "(unclosed",
    "-g [",
    "-j 0",
    "-j 1",
    "-S 1",
    "--changed-within nonsense",
    "-o 1:2:3",
    "--exact-depth 1 --max-depth 2",
    "--no-such-flag",
    "-L --show-errors",
    "--show-errors",
    "-I --ignore",
    "-H --no-hidden",
    "-u --no-hidden",
    "-L --no-follow",
    "-a --relative-path",
    "-E dir/sub",
    "-E /dir",
    "-E **/deeper",
    "-E [",
    "-H . dir/../.hdir",
    "-p -a ^/",
    "-td -e d",
    "--max-results 0 -d1",
    "-d 0",
    "--min-depth 9",
    "-HI -tl -L",
    "txt {root}",
    "-E dir txt {root}",
    "-E /dir . {root}",
    ". {root}/dir",
    "--no-ignore-parent . {root}/dir",
    "-p {root}/dir/sub -a",
    ". . dir",
    "-H . dir .hdir",
    "-tf . ../tree/dir",
    "-g -F x",
    "--exact -g x",
];

#[test]
fn fnd_agrees_with_fd() {
    let Some(fd) = references::fd() else { return };
    // Without git, only the cases outside a repository are compared.
    let git = references::git().is_some();
    let fnd = fnd_bin();
    let fd = fd.path();
    let mut failures = Vec::new();
    let mut compared = 0;
    for in_git in [false, true] {
        if in_git && !git {
            continue;
        }
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let root = tmp.path().join("outer").join("tree");
        build_tree(&root, &home, in_git);
        for case in CASES {
            // `{root}` stands for the tree's absolute path.
            let case = case.replace("{root}", &root.display().to_string());
            let args: Vec<&str> = case.split(' ').filter(|a| !a.is_empty()).collect();
            let want = run(fd, &args, &root, &home);
            let got = run(&fnd, &args, &root, &home);
            compared += 1;
            let fd_err = want
                .stderr
                .replace("[fd error]", "[fnd error]")
                .replace("'fd ", "'fnd ")
                .replace("fd --", "fnd --")
                .replace("  fd .", "  fnd .");
            // Errors of parallel threads come in any order; usage errors need only agree on the exit code.
            let stderr_agrees = sorted_lines(&fd_err) == sorted_lines(&got.stderr) || (want.code == 2 && got.code == 2);
            if want.code != got.code || want.lines != got.lines || !stderr_agrees {
                let show = |r: &Run| {
                    r.lines
                        .iter()
                        .map(|l| String::from_utf8_lossy(l).into_owned())
                        .collect::<Vec<_>>()
                        .join(" | ")
                };
                failures.push(format!(
                    "[git={in_git}] `{case}`:\n  fd  ({}) {}\n      stderr: {}\n  fnd ({}) {}\n      stderr: {}",
                    want.code,
                    show(&want),
                    want.stderr.trim(),
                    got.code,
                    show(&got),
                    got.stderr.trim()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {compared} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// fd 10.5 hides names starting with `.` unless they also end with one
/// (`.foo.`, `...`, and `.cfg./` with everything in it), a quirk of its
/// ignore library; fnd follows, with ignore rules and without, and from
/// an index. Checked against a fixed answer, then against fd where it is.
#[test]
fn names_ending_in_a_dot_are_not_hidden() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let root = tmp.path().join("tree");
    for dir in ["sub/.hid", ".cfg./sub", ".cfg"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    for file in [
        ".foo.",
        "...",
        ".bar..",
        ".plain",
        "a.",
        ".x.y",
        ".cfg./inner",
        ".cfg./sub/f",
        ".cfg/in",
        "sub/.z.",
        "sub/.hid/.w.",
        ".white",
    ] {
        std::fs::write(root.join(file), b"").unwrap();
    }
    // A whitelisted hidden name shows too, as in fd.
    std::fs::write(root.join(".ignore"), b"!.white\n").unwrap();
    let fnd = fnd_bin();
    let index = tmp.path().join("index");
    let built = Command::new(&fnd)
        .args(["--build-index", "--index-file"])
        .arg(&index)
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let shown = [
        "...",
        ".bar..",
        ".cfg./",
        ".cfg./inner",
        ".cfg./sub/",
        ".cfg./sub/f",
        ".foo.",
        ".white",
        "a.",
        "sub/",
        "sub/.z.",
    ];
    let lines = |r: &Run| -> Vec<String> {
        r.lines
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect()
    };
    let index_arg = format!("--index-file={}", index.display());
    let unwhitelisted: Vec<&str> = shown.iter().copied().filter(|&n| n != ".white").collect();
    for (args, expected) in [
        (&[][..], &shown[..]),
        (&["--no-ignore"], &unwhitelisted),
        (&["--indexed=stale-ok", &index_arg], &shown),
    ] {
        let got = run(&fnd, args, &root, &home);
        let mut got = lines(&got);
        got.sort();
        assert_eq!(got, expected, "fnd {args:?}");
    }
    let Some(fd) = references::fd() else { return };
    for case in [
        "",
        "--no-ignore",
        "-tf",
        "-H",
        ". .cfg.",
        ". sub",
        "-E .cfg.",
        "-d 1",
        "-p cfg",
    ] {
        let args: Vec<&str> = case.split(' ').filter(|a| !a.is_empty()).collect();
        let want = run(fd.path(), &args, &root, &home);
        let got = run(&fnd, &args, &root, &home);
        assert_eq!((got.code, lines(&got)), (want.code, lines(&want)), "`{case}`");
    }
}
