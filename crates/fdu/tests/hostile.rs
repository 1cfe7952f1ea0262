//! fdu on trees built to break disk-usage tools, and on bad input: it runs
//! as root on trees other users control. Each result is checked against
//! GNU du too (the tool fdu is a drop-in for) when it is installed, or
//! required by `FND_REQUIRE_REFERENCE=1`.

use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;

use std::process::{Command, Output, Stdio};

use fnd_test_support::hostile::*;
use fnd_test_support::references;

fn fdu() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fdu"));
    // Messages name the program as started: as `fdu`, they start "fdu: ".
    std::os::unix::process::CommandExt::arg0(&mut cmd, "fdu");
    cmd.stdin(Stdio::null()).arg("--no-progress");
    cmd
}

/// GNU du (fdu's reference). Without it (and without
/// `FND_REQUIRE_REFERENCE=1`) results are checked against du's documented
/// behaviour only.
fn du() -> Option<Command> {
    let mut cmd = references::gnu_du()?.command();
    cmd.stdin(Stdio::null());
    Some(cmd)
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("panicked") && out.status.code() != Some(101),
        "panicked:\n{stderr}"
    );
    out
}

/// The NUL-terminated records of `-0` output, as a set (checking none repeats).
fn record_set(stdout: &[u8]) -> HashSet<Vec<u8>> {
    let records: Vec<&[u8]> = stdout.split(|&b| b == 0).filter(|r| !r.is_empty()).collect();
    let set: HashSet<Vec<u8>> = records.iter().map(|r| r.to_vec()).collect();
    assert_eq!(set.len(), records.len(), "a line printed twice");
    set
}

fn path_of(record: &[u8]) -> &[u8] {
    let tab = record.iter().position(|&b| b == b'\t').expect("size, tab, path");
    &record[tab + 1..]
}

#[test]
fn hostile_names_are_printed_byte_exact_as_du_prints_them() {
    let tmp = tempfile::tempdir().unwrap();
    // files/<name>, and dirs/<name>/<name>
    let top = open_root(tmp.path());
    mkdir_at(&top, b"files");
    mkdir_at(&top, b"dirs");
    let (files, dirs) = (open_dir(&top, "files").unwrap(), open_dir(&top, "dirs").unwrap());
    for name in hostile_names() {
        touch_at(&files, &name);
        mkdir_at(&dirs, &name);
        touch_at(open_dir(&dirs, std::ffi::OsStr::from_bytes(&name)).unwrap(), &name);
    }
    let ours = run(fdu().args(["-a", "-0"]).arg(tmp.path()));
    assert!(ours.status.success() && ours.stderr.is_empty(), "{ours:?}");
    let ours = record_set(&ours.stdout);
    assert_eq!(ours.len(), 3 + 3 * hostile_names().len());
    if let Some(mut du) = du() {
        let theirs = record_set(&run(du.args(["-a", "-0"]).arg(tmp.path())).stdout);
        assert!(ours == theirs, "fdu -a -0 differs from du -a -0 on hostile names");
    }
}

#[test]
fn chain_2000_deep_is_counted_whole_even_with_32_descriptors() {
    const DEPTH: usize = 2000;
    let tmp = scratch_dir();
    make_chain(tmp.path(), DEPTH);
    let root = tmp.path().as_os_str().as_bytes();
    let fdu_path = env!("CARGO_BIN_EXE_fdu");
    let all = run(fdu().args(["-a", "-0"]).arg(tmp.path()));
    assert!(
        all.status.success() && all.stderr.is_empty(),
        "{:?} {}",
        all.status,
        String::from_utf8_lossy(&all.stderr)
    );
    assert!(
        chain_seen(
            root,
            record_set(&all.stdout)
                .iter()
                .map(|r| path_of(r))
                .filter(|p| *p != root)
        ) == chain_expected(DEPTH),
        "fdu -a: chain not counted whole"
    );
    for limit in ["", "ulimit -n 32 && "] {
        let inodes = run(Command::new("sh")
            .arg("-c")
            .arg(format!("{limit}exec '{fdu_path}' --no-progress -s --inodes \"$0\""))
            .arg(tmp.path()));
        assert!(
            inodes.status.success(),
            "{limit}: {}",
            String::from_utf8_lossy(&inodes.stderr)
        );
        let count = String::from_utf8_lossy(&inodes.stdout)
            .split('\t')
            .next()
            .unwrap()
            .to_string();
        assert_eq!(
            count,
            format!("{}", 2 * DEPTH + 1),
            "{limit}fdu -s --inodes on the chain"
        );
    }
    if let Some(mut du) = du() {
        let theirs = run(du.arg("-s").arg(tmp.path()));
        let ours = run(fdu().arg("-s").arg(tmp.path()));
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&theirs.stdout),
            "fdu -s differs from du -s"
        );
    }
    remove_chain(tmp.path());
}

#[test]
fn huge_directory_is_summed_in_bounded_memory() {
    let (tmp, count) = huge_directory();
    for args in [&["-a", "-0"][..], &["-s", "-0"], &["-a", "-0", "-j1", "--inodes"]] {
        let (records, rss_kib, status) = count_and_peak_rss(fdu().args(args).arg(tmp.path()));
        assert!(status.success(), "{args:?}: {status:?}");
        assert_eq!(records, if args.contains(&"-s") { 1 } else { count + 1 }, "{args:?}");
        // A debug fdu summing a small tree peaks near 9 MiB.
        assert!(
            rss_kib < 24 * 1024,
            "{args:?}: peak RSS {rss_kib} KiB for {count} entries"
        );
    }
}

#[test]
fn follow_mode_ends_on_loops_and_treats_links_as_du_does() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path();
    std::fs::create_dir_all(r.join("a/b")).unwrap();
    std::fs::write(r.join("a/f"), b"hello").unwrap();
    for (link, target) in [
        ("self", "."),
        ("a/b/up", "../.."),
        ("a/b/abs", r.to_str().unwrap()),
        ("dangling", "nowhere"),
    ] {
        std::os::unix::fs::symlink(target, r.join(link)).unwrap();
    }
    let ours = run(fdu().args(["-L", "-a", "-0"]).arg(r));
    let ours_set = record_set(&ours.stdout);
    for looped in ["self", "a/b/up", "a/b/abs"] {
        let path = [r.as_os_str().as_bytes(), b"/", looped.as_bytes()].concat();
        assert!(
            !ours_set.iter().any(|rec| path_of(rec).starts_with(&path)),
            "{looped}: a loop is not counted"
        );
    }
    if let Some(mut du) = du() {
        let theirs = run(du.args(["-L", "-a", "-0"]).arg(r));
        // GNU du -L: a dangling link cannot be followed: an error, exit 1.
        assert_eq!(
            ours.status.code(),
            theirs.status.code(),
            "fdu -L exit status differs from du's"
        );
        assert!(
            ours_set == record_set(&theirs.stdout),
            "fdu -L -a differs from du -L -a"
        );
        assert_eq!(
            ours.stderr.is_empty(),
            theirs.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&ours.stderr)
        );
    }
}

#[test]
fn racing_swaps_never_lead_fdu_out_of_the_tree() {
    let tmp = tempfile::tempdir().unwrap();
    during_swaps(tmp.path(), |tree| {
        for i in 0..60 {
            let threads = ["-j1", "-j4"][i % 2];
            let out = run(fdu().args(["-a", "-0", threads]).arg(tree));
            assert!(
                !contains(&out.stdout, MARKER.as_bytes()),
                "followed a swapped link out of the tree"
            );
            record_set(&out.stdout);
        }
    });
}

#[test]
fn unreadable_directories_are_reported_as_du_does() {
    let Some(tmp) = permission_tree() else { return };
    let r = tmp.path();
    let Some(ours) = as_nobody(env!("CARGO_BIN_EXE_fdu"), &["-a", "-0"], r) else {
        return;
    };
    let stderr = String::from_utf8_lossy(&ours.stderr);
    assert_eq!(
        stderr.trim_end(),
        format!(
            "{}: cannot read directory '{}/locked': Permission denied",
            env!("CARGO_BIN_EXE_fdu"),
            r.display()
        )
    );
    assert_eq!(ours.status.code(), Some(1));
    let paths: HashSet<Vec<u8>> = record_set(&ours.stdout)
        .iter()
        .map(|rec| path_of(rec).to_vec())
        .collect();
    assert!(
        paths.contains(&[r.as_os_str().as_bytes(), b"/locked"].concat()),
        "the unreadable directory is still counted"
    );
    if let Some(du) = references::gnu_du() {
        if let Some(theirs) = as_nobody(&du.path().to_string_lossy(), &["-a", "-0"], r) {
            assert!(
                record_set(&ours.stdout) == record_set(&theirs.stdout),
                "differs from du as nobody"
            );
        }
    }
}

#[test]
fn tree_mutated_during_the_scan() {
    let tmp = tempfile::tempdir().unwrap();
    during_churn(tmp.path(), || {
        for threads in ["-j1", "-j4", "-j1", "-j4"] {
            let out = run(fdu().args(["-a", "-0", threads]).arg(tmp.path()));
            let set = record_set(&out.stdout);
            let stable = set.iter().filter(|r| contains(path_of(r), b"/stable/d")).count();
            assert_eq!(stable, 10, "{threads}: untouched entries lost");
            // Vanished entries may be reported (du does); nothing else.
            for line in String::from_utf8_lossy(&out.stderr).lines() {
                assert!(
                    line.contains("No such file or directory"),
                    "{threads}: unexpected error: {line}"
                );
            }
        }
    });
}

#[test]
fn full_and_closed_output() {
    let tmp = tempfile::tempdir().unwrap();
    many_files(tmp.path(), 3_000, 40);
    if let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") {
        let out = run(fdu().arg("-a").arg(tmp.path()).stdout(full));
        let stderr = String::from_utf8_lossy(&out.stderr);
        // du: "du: write error: No space left on device", exit 1.
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("fdu: write error"), "{stderr}");
        assert_eq!(out.status.code(), Some(1));
    }
    let mut child = fdu()
        .arg("-a")
        .arg(tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = Vec::new();
    std::io::BufRead::read_until(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        b'\n',
        &mut line,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    // du dies of SIGPIPE without a word; fdu must not complain either.
    assert!(
        out.stderr.is_empty(),
        "closed pipe: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bad_values_are_rejected_as_du_rejects_them() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("d")).unwrap();
    // du's options: the same exit status as du (1), a message starting "fdu: ".
    let du_cases: &[&[&str]] = &[
        &["-B", "bogus"],
        &["-B", "0"],
        &["-B", "99999999999999999999999"],
        &["-B", ""],
        &["-t", "bogus"],
        &["-t", ""],
        &["-t", "99999999999999999999999"],
        &["--time=bogus"],
        &["--time", "--time-style=bogus"],
        &["-d", "x"],
        &["-d", "-1"],
        &["-d", "99999999999999999999999"],
        &["--exclude-from", "/fnd-test-nonexistent"],
        &["--files0-from", "/fnd-test-nonexistent"],
        &["--no-such-option"],
    ];
    // Every case is tried before failing, so one run lists them all.
    let mut wrong = Vec::new();
    let mut check = |args: &[&str]| {
        let out = run(fdu().args(args).arg("d").current_dir(tmp.path()));
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !stderr.starts_with("fdu: ") || out.status.code() != Some(1) {
            wrong.push(format!("{args:?}: exit {:?}, stderr {stderr:?}", out.status.code()));
        }
        out
    };
    // (GNU du exits 1 on each of these, with "du: invalid ..." messages.)
    for args in du_cases {
        check(args);
    }
    // fdu's own options fail the same way.
    for args in [
        &["--tree-depth", "x", "--tree"][..],
        &["--tree-lines", "x", "--tree"],
        &["-j", "x"],
        &["--from-json", "/fnd-test-nonexistent"],
        &["--tree-depth", "x"],
    ] {
        check(args);
    }
    assert!(wrong.is_empty(), "bad values not rejected:\n{}", wrong.join("\n"));
    // Corrupt --from-json input is an error, not a panic.
    for json in [
        &b""[..],
        b"{",
        b"[]",
        b"{\"name\":1}",
        b"\xff\xfe",
        b"{\"name\":\"a\",\"size\":-1,\"children\":[{}]}",
        &[b'['; 100_000],
    ] {
        let mut child = fdu()
            .args(["--from-json", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let _ = std::io::Write::write_all(&mut stdin, json);
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked") && out.status.code().is_some_and(|c| c != 101),
            "--from-json {:?}: {stderr}",
            String::from_utf8_lossy(&json[..json.len().min(40)])
        );
    }
}

#[test]
fn hostile_names_read_from_files0_from_are_printed_byte_exact() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open_root(tmp.path());
    let mut list = Vec::new();
    let mut expected = HashSet::new();
    for name in hostile_names() {
        touch_at(&dir, &name);
        let path = [tmp.path().as_os_str().as_bytes(), b"/", &name].concat();
        list.extend_from_slice(&path);
        list.push(0);
        expected.insert([&b"0\t"[..], &path].concat());
    }
    let mut child = fdu()
        .args(["-0", "--files0-from=-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), &list).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        record_set(&out.stdout) == expected,
        "names from --files0-from changed on the way"
    );
}

#[test]
fn a_small_address_space_is_walked_in_whole() {
    // Under `ulimit -v`, jemalloc's arenas and each worker's stack took the
    // room the walk allocates from: `fdu -s -j16` ran out of memory at
    // 24–48 MiB, and below 16 MiB fdu died of SIGSEGV before `main`.
    let tmp = scratch_dir();
    wide_tree(tmp.path(), 40, 100);
    for args in [&["-s", "-j16"][..], &["-a"]] {
        let whole = run(fdu().args(args).arg(tmp.path()));
        assert!(whole.status.success(), "{args:?}");
        let what = format!("{args:?}");
        for stdout in stdout_in_small_address_spaces(fdu().args(args).arg(tmp.path()), &what) {
            assert_eq!(stdout, whole.stdout, "{what}");
        }
    }
}
