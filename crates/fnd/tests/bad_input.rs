//! Bad option values: every parser rejects them with a short error and
//! fd's exit code (checked against fd 10.5 too when it is installed, or
//! required by `FND_REQUIRE_REFERENCE=1`), and no
//! combination of options and values makes fnd panic.

mod harness;

use std::process::{Output, Stdio};

use fnd_test_support::references;
use harness::*;
use proptest::prelude::*;

/// A small tree to run on, so that accepted values finish at once.
fn tiny_tree() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("dir/sub")).unwrap();
    std::fs::write(tmp.path().join("dir/file.txt"), b"12345").unwrap();
    std::fs::write(tmp.path().join("top.rs"), b"").unwrap();
    tmp
}

fn fnd_in(dir: &std::path::Path, args: &[&str]) -> Output {
    let out = fnd()
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .output()
        .expect("run fnd");
    assert_no_panic(&out, args);
    out
}

fn assert_no_panic(out: &Output, args: &[impl AsRef<str>]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let shown: Vec<&str> = args.iter().map(|a| a.as_ref()).collect();
    assert!(
        !stderr.contains("panicked") && out.status.code() != Some(101),
        "{shown:?}: fnd panicked:\n{stderr}"
    );
    assert!(
        out.status.code().is_some(),
        "{shown:?}: fnd died of a signal: {:?}",
        out.status
    );
}

/// Bad values and fd 10.5's exit code for each: 2 for what clap rejects
/// while parsing, 1 for what fd rejects afterwards (patterns, dates).
const REJECTED: &[(&[&str], i32)] = &[
    (&["--size", "10q"], 2),
    (&["--size", ""], 2),
    (&["--size", "+"], 2),
    (&["--size", "-5x"], 2),
    (&["--size", "99999999999999999999k"], 2),
    (&["--size", "+1.5.5k"], 2),
    (&["--changed-within", "xyz"], 1),
    (&["--changed-within", ""], 1),
    (&["--changed-within", "99999999999999years"], 1),
    (&["--changed-within", "999999999999y"], 1),
    (&["--changed-before", "2024-13-45"], 1),
    (&["--changed-before", "99999-01-01"], 1),
    (&["--changed-within", "-1h"], 2),
    (&["--owner", "fnd-test-no-such-user"], 2),
    (&["--owner", ":fnd-test-no-such-group"], 2),
    (&["--owner", "!"], 2),
    (&["--owner", "99999999999"], 2),
    (&["--owner", "::"], 2),
    (&["--owner", "root:root:root"], 2),
    (&["-d", "x"], 2),
    (&["-d", "-1"], 2),
    (&["--min-depth", "99999999999999999999999"], 2),
    (&["--exact-depth", ""], 2),
    (&["-j", "0"], 2),
    (&["-j", "-1"], 2),
    (&["-j", "99999999999999999999"], 2),
    (&["-g", "["], 1),
    (&["-g", "a{b"], 1),
    (&["("], 1),
    (&["a{99999999}"], 1),
    (&["\\p{Nope}"], 1),
    (&["--and", "("], 1),
    (&["--exclude", "["], 1),
    (&["-t", "q"], 2),
    (&["-t", ""], 2),
    (&["--max-results", "x"], 2),
    (&["--batch-size", "x"], 2),
    (&["--color", "sometimes"], 2),
    (&["--search-path", "/fnd-test-nonexistent"], 1),
    (&["--base-directory", "/fnd-test-nonexistent"], 1),
    (&["-x"], 2),
    (&["-X"], 2),
    (&["--strip-cwd-prefix=bogus"], 2),
    (&["--hyperlink=bogus"], 2),
    (&["--order", "bogus"], 2),
    (&["--sort", "bogus"], 2),
];

#[test]
fn bad_values_are_rejected_with_fds_exit_code_and_a_short_error() {
    let tmp = tiny_tree();
    let fd = references::fd();
    for &(args, code) in REJECTED {
        let out = fnd_in(tmp.path(), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: exit status\n{stderr}");
        // One line saying what is wrong, past clap's usual help lines
        // (regex errors point at the spot, over several lines, as fd's do).
        let clap_help = |l: &str| {
            let l = l.trim();
            l.is_empty()
                || l.starts_with("For more information")
                || l.starts_with("[possible values")
                || l.starts_with("tip:")
        };
        let lines: Vec<&str> = stderr.lines().filter(|l| !clap_help(l)).collect();
        let first = lines.first().copied().unwrap_or("");
        assert!(
            first.starts_with("error: ") || first.starts_with("[fnd error]: "),
            "{args:?}: error message: {stderr:?}"
        );
        let is_regex = first.contains("regex parse error");
        assert!(is_regex || lines.len() <= 2, "{args:?}: a short error, got:\n{stderr}");
        if let Some(fd) = &fd {
            let theirs = fd
                .command()
                .args(args)
                .current_dir(tmp.path())
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert_eq!(
                theirs.status.code(),
                out.status.code(),
                "{args:?}: exit status differs from fd's"
            );
        }
    }
}

/// Values fd accepts, sometimes oddly; fnd must not fail on them either,
/// and must not panic.
const ACCEPTED: &[&[&str]] = &[
    &["--size", "+1kib"],
    &["--size", "-0b"],
    &["--changed-before", "@99999999999999999"],
    &["--changed-within", "0s"],
    &["--owner", ":"],
    &["--format", "{"],
    &["--format", "{}{"],
    &["--format", "}}{{{}}}{/.}{//}{.}{/}{size}{nope}{"],
    &["--format", ""],
    &["-E", ""],
    &["-e", ""],
    &["--max-results", "0"],
    &["--path-separator", ""],
    &["--path-separator", "//"],
    &["-d", "0"],
    &["--min-depth", "18446744073709551615"],
    &["-F", ""],
    &["-g", ""],
    &["--batch-size", "0", "-X", "true"],
    &["-x", "true", "{}", "{/}", "{//}", "{.}", "{/.}", "{{", "}}", "{size}"],
];

fn assert_succeeds(dir: &std::path::Path, args: &[&str]) {
    let out = fnd_in(dir, args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn odd_but_valid_values_do_not_fail() {
    let tmp = tiny_tree();
    let fd = references::fd();
    for &args in ACCEPTED {
        assert_succeeds(tmp.path(), args);
        let fd_args: Vec<&str> = args.iter().copied().filter(|a| !a.contains("{size}")).collect();
        if let Some(fd) = fd.as_ref().filter(|_| fd_args.len() == args.len()) {
            let theirs = fd
                .command()
                .args(args)
                .current_dir(tmp.path())
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert_eq!(theirs.status.code(), Some(0), "{args:?}: fd accepts it too");
        }
    }
}

#[test]
fn thread_counts_past_the_machine_are_capped_not_fatal() {
    // fd 10.5 starts every thread it is asked for and is killed for it.
    assert_succeeds(tiny_tree().path(), &["-j", "100000", "."]);
}

#[test]
fn thread_counts_past_the_machine_are_capped_for_commands_too() {
    assert_succeeds(tiny_tree().path(), &["-j", "100000", "-x", "true"]);
}

#[test]
fn invalid_utf8_arguments_are_handled() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let tmp = tiny_tree();
    for args in [
        &[&b"\xff"[..]][..],
        &[b"-g", b"\xff*"],
        &[b"--format", b"{}\xff"],
        &[b"--exclude", b"\xff"],
        &[b"-e", b"\xff"],
    ] {
        let out = fnd()
            .args(args.iter().map(|a| OsStr::from_bytes(a)))
            .current_dir(tmp.path())
            .stdout(Stdio::null())
            .output()
            .unwrap();
        let shown: Vec<String> = args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        assert_no_panic(&out, &shown);
    }
}

/// Options with a value, and values to try on them: the ones users type,
/// the ones parsers trip on (empty, huge, signs, units, separators).
fn valued_option() -> impl Strategy<Value = Vec<String>> {
    let option = prop::sample::select(vec![
        "--size",
        "--changed-within",
        "--changed-before",
        "--owner",
        "--max-depth",
        "--min-depth",
        "--exact-depth",
        "--type",
        "--extension",
        "--exclude",
        "--format",
        "--and",
        "--max-results",
        "--batch-size",
        "--path-separator",
        "--ignore-contain",
        "--color",
        "--order",
        "--sort",
        "--threads",
    ]);
    let value = prop_oneof![
        "[-+]?[0-9]{0,25}[a-zA-Z]{0,4}",
        "[0-9]{1,5}-[0-9]{1,3}-[0-9]{1,3}( [0-9:]{0,8})?",
        "@?-?[0-9]{0,20}",
        "[a-z!:]{0,12}",
        "[{}/.a-z]{0,12}",
        "[\\[\\]*?{},!a-z\\\\]{0,10}",
        "[()|+*?^$.\\\\a-z{}0-9,]{0,12}",
        ".{0,8}",
    ];
    (option, value).prop_map(|(o, v)| {
        // Thread counts stay small: starting thousands of threads is a cost,
        // not a crash, and the suite should stay quick.
        // (No NUL: an argument cannot hold one.)
        let v = if o == "--threads" {
            format!("{}", v.len() % 9)
        } else {
            v.replace('\0', "")
        };
        vec![o.to_string(), v]
    })
}

fn flag() -> impl Strategy<Value = Vec<String>> {
    prop::sample::select(vec![
        "-H",
        "-I",
        "-u",
        "-s",
        "-i",
        "-g",
        "-F",
        "--regex",
        "-a",
        "-L",
        "-p",
        "-0",
        "--prune",
        "-1",
        "-q",
        "--show-errors",
        "--one-file-system",
        "--no-ignore-vcs",
        "--exact",
    ])
    .prop_map(|f| vec![f.to_string()])
}

fn pattern() -> impl Strategy<Value = Vec<String>> {
    prop_oneof!["[a-z.]{0,6}", "[()\\[\\]{}|*+?^$\\\\a-z.0-9,]{0,10}", ".{0,6}"]
        .prop_map(|p| vec!["--".to_string(), p.replace('\0', "")])
}

proptest! {
    // 64 cases keep the suite quick; PROPTEST_CASES=2000 runs a longer search.
    #![proptest_config(ProptestConfig {
        cases: if std::env::var_os("PROPTEST_CASES").is_some() { ProptestConfig::default().cases } else { 64 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_options_and_values_never_panic(
        options in prop::collection::vec(prop_oneof![3 => valued_option(), 2 => flag()], 0..6),
        pattern in prop::option::of(pattern()),
    ) {
        let tmp = tiny_tree();
        let mut args: Vec<String> = options.into_iter().flatten().collect();
        if let Some(p) = pattern {
            args.extend(p);
        }
        let out = fnd().args(&args).current_dir(tmp.path()).stdout(Stdio::null()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        prop_assert!(!stderr.contains("panicked"), "{:?}: {}", args, stderr);
        prop_assert!(matches!(out.status.code(), Some(0..=2)), "{:?}: {:?} {}", args, out.status, stderr);
    }
}
