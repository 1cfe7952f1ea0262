//! fdu against GNU du on trees built here: the same lines in the same
//! order, byte for byte; the same errors (sorted: they come from the
//! reading threads) and exit status. Both run on the same tree state, one after the other.
//!
//! Without GNU du a comparison says so on stderr and checks nothing (a
//! failure under `FND_REQUIRE_REFERENCE=1`); `tests/expected.rs` checks the
//! core of du's behaviour against stored outputs, with or without du.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output};

use fnd_test_support::references::{self, Reference};

const FDU: &str = env!("CARGO_BIN_EXE_fdu");

/// A tree with what du has rules about: hard links inside and across
/// directories, sparse and empty files, symlinks (to a file, to a
/// directory, dangling), nesting, odd names.
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::set_permissions(root, fs::Permissions::from_mode(0o755)).unwrap();
    let mk = |p: &str| fs::create_dir_all(root.join(p)).unwrap();
    let file = |p: &str, len: usize| fs::write(root.join(p), vec![b'x'; len]).unwrap();
    mk("t/a/b/c");
    mk("t/d/e");
    mk("t/empty");
    mk("t/links");
    file("t/one", 1);
    file("t/a/k1500", 1500);
    file("t/a/b/big", 200_000);
    file("t/a/b/c/empty", 0);
    file("t/d/e/f", 5000);
    file("t/name with space", 10);
    file("t/new\nline", 3);
    let sparse = fs::File::create(root.join("t/d/sparse")).unwrap();
    sparse.set_len(50 << 20).unwrap();
    file("t/links/orig", 9000);
    fs::hard_link(root.join("t/links/orig"), root.join("t/links/same_dir")).unwrap();
    fs::hard_link(root.join("t/links/orig"), root.join("t/a/b/other_dir")).unwrap();
    fs::hard_link(root.join("t/links/orig"), root.join("t/d/e/third")).unwrap();
    file("t/a/pair", 3000);
    fs::hard_link(root.join("t/a/pair"), root.join("t/d/pair2")).unwrap();
    symlink("one", root.join("t/to_file")).unwrap();
    symlink("a/b", root.join("t/to_dir")).unwrap();
    symlink("nowhere", root.join("t/dangling")).unwrap();
    for i in 0..40 {
        file(&format!("t/d/many{i}"), i * 300);
    }
    dir
}

/// Run fdu with `args` in `cwd`.
fn fdu(args: &[&str], cwd: &Path) -> Output {
    run(Command::new(FDU), args, cwd)
}

/// Run `cmd` (fdu or the reference du) with `args` in `cwd`.
fn run(mut cmd: Command, args: &[&str], cwd: &Path) -> Output {
    cmd.args(args)
        .current_dir(cwd)
        .env("TZ", "UTC")
        .env_remove("BLOCK_SIZE")
        .env_remove("DU_BLOCK_SIZE")
        .env_remove("BLOCKSIZE")
        .output()
        .unwrap()
}

/// Records in the order printed: fdu prints du's lines in du's order.
fn records(bytes: &[u8], sep: u8) -> Vec<Vec<u8>> {
    bytes.split(|&b| b == sep).map(<[u8]>::to_vec).collect()
}

/// Stderr lines sorted, with the program's name (as it was started:
/// `du`, `fdu`, `/usr/bin/du`) made the same.
fn stderr_lines(o: &Output) -> Vec<String> {
    let text = String::from_utf8_lossy(&o.stderr)
        .replace("'du --help'", "'X --help'")
        .replace("'fdu --help'", "'X --help'");
    let mut lines: Vec<String> = text
        .lines()
        .map(|line| match line.split_once("du: ") {
            Some((name, rest)) if ["", "f"].contains(&name.rsplit('/').next().unwrap_or("")) => {
                format!("DU: {rest}")
            }
            _ => line.to_string(),
        })
        .collect();
    lines.sort();
    lines
}

fn same_as_du_in(du: &Reference, cwd: &Path, args: &[&str]) {
    let du = run(du.command(), args, cwd);
    let fdu = fdu(args, cwd);
    let sep = if args.iter().any(|a| *a == "-0" || *a == "--null") {
        0
    } else {
        b'\n'
    };
    assert_eq!(
        records(&fdu.stdout, sep),
        records(&du.stdout, sep),
        "stdout differs for {args:?}\n--- du:\n{}\n--- fdu:\n{}",
        String::from_utf8_lossy(&du.stdout),
        String::from_utf8_lossy(&fdu.stdout)
    );
    assert_eq!(stderr_lines(&fdu), stderr_lines(&du), "stderr differs for {args:?}");
    assert_eq!(fdu.status.code(), du.status.code(), "exit status differs for {args:?}");
}

/// Each of `cases` on a fresh fixture, compared with du.
fn same_as_du(cases: &[&[&str]]) {
    let Some(du) = references::gnu_du() else { return };
    for args in cases {
        let dir = fixture();
        same_as_du_in(&du, dir.path(), args);
    }
}

#[test]
fn default_output() {
    same_as_du(&[&["t"]]);
}

#[test]
fn all_entries() {
    same_as_du(&[&["-a", "t"]]);
}

#[test]
fn summarize_and_total() {
    same_as_du(&[&["-s", "t"], &["-sc", "t/a", "t/d"]]);
}

#[test]
fn max_depth() {
    same_as_du(&[&["-d", "1", "t"], &["--max-depth=0", "-a", "t"], &["-a", "-d2", "t"]]);
}

#[test]
fn size_formats() {
    same_as_du(&[
        &["-h", "-a", "t"],
        &["--si", "-a", "t"],
        &["-b", "-a", "t"],
        &["-k", "t"],
        &["-m", "-a", "t"],
        &["-BM", "t"],
        &["-B1K", "-a", "t"],
        &["--block-size=KiB", "t"],
        &["-B", "2", "-a", "t"],
        &["-h", "-k", "t"],
        &["-k", "-h", "t"],
    ]);
}

#[test]
fn apparent_sizes_count_directories_too() {
    same_as_du(&[&["--apparent-size", "-a", "t"], &["--apparent-size", "-h", "t"]]);
}

#[test]
fn hard_links_count_once_at_the_first_link() {
    same_as_du(&[&["-a", "t"], &["-a", "t/d", "t/a", "t/links"], &["-a", "-l", "t"]]);
}

#[test]
fn inodes() {
    same_as_du(&[&["--inodes", "-a", "t"], &["--inodes", "-s", "t"]]);
}

#[test]
fn symlinks() {
    same_as_du(&[
        &["-a", "-P", "t"],
        &["-a", "-L", "t/a", "t/links"],
        &["t/to_dir"],
        &["-D", "t/to_dir"],
        &["-H", "-s", "t/to_dir", "t/to_file"],
    ]);
}

#[test]
fn excludes() {
    same_as_du(&[
        &["-a", "--exclude=*.rs", "--exclude=b", "t"],
        &["-a", "--exclude=t/d/e", "t"],
        &["--exclude=t", "t"],
    ]);
    let Some(du) = references::gnu_du() else { return };
    let dir = fixture();
    fs::write(dir.path().join("patterns"), "many1*\nsparse\n").unwrap();
    same_as_du_in(&du, dir.path(), &["-a", "-X", "patterns", "t"]);
}

#[test]
fn null_threshold_separate_dirs() {
    same_as_du(&[
        &["-0", "-a", "t"],
        &["-a", "-t", "5000", "t"],
        &["-a", "-t", "-8K", "t"],
        &["-S", "t"],
    ]);
}

#[test]
fn times() {
    same_as_du(&[
        &["--time", "-a", "t"],
        &["--time=ctime", "--time-style=full-iso", "t"],
        &["--time", "--time-style=+%s", "-s", "t"],
    ]);
}

#[test]
fn several_operands_count_nothing_twice() {
    same_as_du(&[
        &["t/a", "t/d", "t/one"],
        &["t", "t/a"],
        &["t/a", "t"],
        &["t/a", "t/a/b", "t", "t/a"],
        &["-a", "t/one", "t"],
        &["-l", "t/a", "t", "t/a"],
    ]);
}

#[test]
fn missing_operand_is_reported_and_the_rest_still_printed() {
    same_as_du(&[&["t/a", "missing", "t/d"], &["-s", "missing"]]);
}

#[test]
fn files0_from() {
    let Some(du) = references::gnu_du() else { return };
    let dir = fixture();
    fs::write(dir.path().join("list"), b"t/a\0t/d\0missing\0").unwrap();
    same_as_du_in(&du, dir.path(), &["--files0-from=list"]);
    same_as_du_in(&du, dir.path(), &["-s", "--files0-from", "list"]);
    // Empty names wherever they are (a lone NUL is one), and a list whose
    // later names lie inside earlier ones (as `find -print0` writes it) or
    // the other way round.
    for (name, list) in [
        ("one", &b"\0"[..]),
        ("empty", b""),
        ("mid", b"t/a\0\0t/d"),
        ("tail", b"t/a\0\0"),
        ("unended", b"t/a\0t/d"),
        ("my list", b"\0"),
        ("nested", b"t\0t/a\0t/a/b\0t/one\0t/links/orig\0t/d\0"),
        ("deepest_first", b"t/a/b/big\0t/a/b\0t/links/same_dir\0t\0t/d\0"),
    ] {
        fs::write(dir.path().join(name), list).unwrap();
        for args in [
            &["--files0-from"][..],
            &["-a", "--files0-from"],
            &["-s", "-c", "--files0-from"],
            &["-l", "-a", "--files0-from"],
        ] {
            let args: Vec<&str> = args.iter().copied().chain([name]).collect();
            same_as_du_in(&du, dir.path(), &args);
        }
    }
    same_as_du_in(&du, dir.path(), &["--files0-from=/"]);
    same_as_du_in(&du, dir.path(), &["--files0-from=missing"]);
}

/// A list read from a pipe is answered name by name: the line of the
/// first name comes out while the list is still open, and `-` is no name
/// in a list read from stdin.
#[test]
fn files0_from_is_read_as_it_arrives() {
    use std::io::{BufRead, Write};
    use std::process::Stdio;
    let dir = fixture();
    let mut child = Command::new(FDU)
        .args(["-s", "--files0-from=-"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut list = child.stdin.take().unwrap();
    list.write_all(b"t/a\0").unwrap();
    list.flush().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines, got) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let _ = lines.send(line.unwrap());
        }
    });
    let first = got.recv_timeout(std::time::Duration::from_secs(30));
    assert!(first.as_deref().is_ok_and(|l| l.ends_with("\tt/a")), "{first:?}");
    list.write_all(b"-\0t/d").unwrap();
    drop(list);
    let second = got.recv_timeout(std::time::Duration::from_secs(30));
    assert!(second.as_deref().is_ok_and(|l| l.ends_with("\tt/d")), "{second:?}");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("{FDU}: when reading file names from stdin, no file name of '-' allowed\n")
    );
}

#[test]
fn bad_usage_exits_1_with_one_line() {
    let du = references::gnu_du();
    for args in [
        &["--no-such-option"][..],
        &["-B", "foo", "t"],
        &["-d", "x", "t"],
        &["-t", "-0", "t"],
        &["-s", "-d", "1", "t"],
    ] {
        let dir = fixture();
        let fdu = fdu(args, dir.path());
        assert_eq!(fdu.status.code(), Some(1), "{args:?}");
        if let Some(du) = &du {
            assert_eq!(run(du.command(), args, dir.path()).status.code(), Some(1), "{args:?}");
        }
        assert!(fdu.stdout.is_empty());
        // Named as started, as du names itself: here by the binary's path.
        assert!(
            String::from_utf8_lossy(&fdu.stderr).starts_with(&format!("{FDU}: ")),
            "{args:?}"
        );
    }
}

/// As root a `chmod 000` directory stays readable, so this runs both tools
/// as `nobody` (through setpriv) on a tree nobody can partly read.
#[test]
fn unreadable_directories() {
    let Some(du) = references::gnu_du() else { return };
    let dir = fixture();
    let root = dir.path();
    fs::create_dir_all(root.join("t/locked/inner")).unwrap();
    fs::write(root.join("t/locked/inner/file"), vec![1u8; 10_000]).unwrap();
    fs::create_dir_all(root.join("t/noexec/sub")).unwrap();
    fs::set_permissions(root.join("t/locked"), fs::Permissions::from_mode(0o000)).unwrap();
    fs::set_permissions(root.join("t/noexec"), fs::Permissions::from_mode(0o644)).unwrap();
    let as_nobody = |exe: &Path, args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(exe)
            .args(args)
            .current_dir(root)
            .output()
    };
    let du = match as_nobody(du.path(), &["-a", "t"]) {
        Ok(o) if !String::from_utf8_lossy(&o.stderr).contains("setpriv:") => o,
        _ => {
            references::skip(
                "cannot run as nobody (setpriv unavailable or not root); as root chmod 000 dirs stay readable",
            );
            return;
        }
    };
    let fdu = as_nobody(Path::new(FDU), &["-a", "t"]).unwrap();
    fs::set_permissions(root.join("t/locked"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(root.join("t/noexec"), fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(records(&fdu.stdout, b'\n'), records(&du.stdout, b'\n'));
    assert_eq!(stderr_lines(&fdu), stderr_lines(&du));
    assert_eq!(fdu.status.code(), du.status.code());
}

/// `-x` across a tmpfs mounted inside the tree (needs root and mount rights).
#[test]
fn one_file_system() {
    let Some(du) = references::gnu_du() else { return };
    let dir = fixture();
    let mnt = dir.path().join("t/mnt");
    fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "none"])
        .arg(&mnt)
        .output()
        .is_ok_and(|o| o.status.success());
    if !mounted {
        references::skip("cannot mount a tmpfs here, so -x has no mount to stop at");
        return;
    }
    fs::write(mnt.join("inside"), vec![0u8; 100_000]).unwrap();
    let result = std::panic::catch_unwind(|| {
        same_as_du_in(&du, dir.path(), &["-x", "-a", "t"]);
        same_as_du_in(&du, dir.path(), &["-a", "t"]);
    });
    let _ = Command::new("umount").arg(&mnt).status();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

#[test]
fn json_round_trips_into_the_tree_view() {
    let dir = fixture();
    let json = fdu(&["--json", "t"], dir.path());
    assert!(json.status.success());
    let value: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let root = &value["roots"][0];
    assert_eq!(root["name"], "t");
    let du_s = fdu(&["-s", "-B1", "t"], dir.path());
    let total: u64 = String::from_utf8_lossy(&du_s.stdout)
        .split('\t')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(root["size"].as_u64(), Some(total));
    fs::write(dir.path().join("saved.json"), &json.stdout).unwrap();
    let from_file = fdu(&["--tree", "-n", "5", "--from-json", "saved.json"], dir.path());
    let scanned = fdu(&["--tree", "-n", "5", "t"], dir.path());
    assert!(from_file.status.success());
    assert_eq!(
        String::from_utf8_lossy(&from_file.stdout),
        String::from_utf8_lossy(&scanned.stdout)
    );
    let text = String::from_utf8(scanned.stdout).unwrap();
    assert_eq!(text.lines().count(), 5);
    assert!(text.lines().next().unwrap().contains("100%"));
}

#[test]
fn tree_view_respects_depth() {
    let dir = fixture();
    let out = fdu(&["--tree", "--tree-depth", "1", "-n", "100", "t"], dir.path());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.lines().all(|l| !l.contains("│  ") && !l.contains("   └─")),
        "{text}"
    );
    assert!(text.contains("─ d"));
}

#[test]
fn no_progress_when_stderr_is_not_a_terminal() {
    let dir = fixture();
    let out = fdu(&["t"], dir.path());
    assert!(out.stderr.is_empty());
}

/// Ctrl-C during a scan on a terminal clears the progress line before
/// fdu dies of SIGINT. The terminal is `script`'s pseudo-terminal; the
/// scan waits for names from it (`--files0-from=-`) long enough for the
/// line to be drawn, then Ctrl-C is typed.
#[test]
fn ctrl_c_clears_the_progress_line() {
    use std::io::{Read, Write};
    use std::process::Stdio;
    if Command::new("script").arg("--version").output().is_err() {
        references::skip("script (util-linux) is not installed: no terminal to draw a progress line on");
        return;
    }
    use std::os::unix::process::CommandExt;
    let dir = fixture();
    let mut command = Command::new("script");
    command
        .args(["-qfec", &format!("{FDU} --files0-from=-"), "/dev/null"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    // A test run in the background (`cmd &`, nohup, some CI runners)
    // inherits SIGINT ignored, and fdu rightly keeps an ignored SIGINT
    // ignored (as du does): the Ctrl-C below would then never end it.
    // SAFETY: only an async-signal-safe call between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut script = command.spawn().unwrap();
    let mut keys = script.stdin.take().unwrap();
    let mut screen = script.stdout.take().unwrap();
    let reading = std::thread::spawn(move || {
        let mut all = Vec::new();
        let _ = screen.read_to_end(&mut all);
        all
    });
    std::thread::sleep(std::time::Duration::from_millis(1500));
    keys.write_all(b"\x03").unwrap();
    keys.flush().unwrap();
    // Fail rather than hang should the Ctrl-C not end fdu.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = script.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = script.kill();
            panic!("fdu did not end within 60 s of a Ctrl-C");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    drop(keys);
    let all = reading.join().unwrap();
    let text = String::from_utf8_lossy(&all);
    let Some(drawn) = text.rfind("entries") else {
        panic!("no progress line was drawn: {text:?}");
    };
    assert!(
        text[drawn..].contains("\r\x1b[2K"),
        "the progress line stayed: {:?}",
        &text[drawn..]
    );
    assert_eq!(status.code(), Some(128 + 2), "fdu dies of SIGINT");
}

/// gnulib's fts reads a directory of more than 10 000 entries whole and
/// visits it in inode order (except on NFS, CIFS, tmpfs): which hard link du
/// meets first, and so which directory's line counts it, follows that order.
#[test]
fn hard_links_in_a_huge_directory_follow_fts_inode_order() {
    let Some(du) = references::gnu_du() else { return };
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("t/a");
    fs::create_dir_all(&big).unwrap();
    fs::create_dir_all(dir.path().join("t/z")).unwrap();
    for i in 0..10_500 {
        fs::write(big.join(format!("f{i}")), b"x").unwrap();
    }
    for i in (0..10_500).step_by(1000) {
        fs::hard_link(big.join(format!("f{i}")), dir.path().join(format!("t/z/l{i}"))).unwrap();
        fs::create_dir(big.join(format!("d{i}"))).unwrap();
        fs::hard_link(big.join(format!("f{}", i + 1)), big.join(format!("d{i}/l"))).unwrap();
    }
    same_as_du_in(&du, dir.path(), &["-a", "t"]);
}

/// du prints a directory after everything under it. With more than one
/// buffer of file lines (64 KiB here), fdu once printed files after their
/// directory.
#[test]
fn a_directory_comes_after_everything_under_it() {
    let dir = tempfile::tempdir().unwrap();
    for d in 0..40 {
        let sub = dir.path().join(format!("t/d{d}/inner"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..60 {
            std::fs::write(sub.join(format!("a-file-name-long-enough-to-fill-lines-{f}")), "x").unwrap();
        }
    }
    for threads in ["-j1", "-j4"] {
        let out = fdu(&[threads, "-a", "t"], dir.path());
        assert!(out.status.success(), "{threads}");
        assert!(
            out.stdout.len() > 128 * 1024,
            "{threads}: the output must span several buffers"
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let paths: Vec<&str> = text.lines().map(|l| l.split_once('\t').unwrap().1).collect();
        let printed_at: std::collections::HashMap<&str, usize> =
            paths.iter().enumerate().map(|(i, p)| (*p, i)).collect();
        assert_eq!(printed_at.len(), 1 + 40 * 2 + 40 * 60, "{threads}");
        for (i, path) in paths.iter().enumerate() {
            let parent = path.rsplit_once('/').map_or("", |(p, _)| p);
            if let Some(&at) = printed_at.get(parent) {
                assert!(
                    at > i,
                    "{threads}: {parent} (line {at}) printed before {path} (line {i})"
                );
            }
        }
    }
}

/// With -L, links that cannot be followed: du names each ("cannot access
/// …: Too many levels of symbolic links", "… Not a directory"), exits 1.
#[test]
fn links_that_cannot_be_followed() {
    let Some(du) = references::gnu_du() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("t")).unwrap();
    std::fs::write(dir.path().join("t/file"), "x").unwrap();
    for (link, target) in [
        ("dangling", "nowhere"),
        ("itself", "itself"),
        ("through-file", "file/x"),
    ] {
        std::os::unix::fs::symlink(target, dir.path().join("t").join(link)).unwrap();
    }
    same_as_du_in(&du, dir.path(), &["-L", "-a", "t"]);
}

/// du's messages name it as it was started (`argv[0]`), and fdu's do the
/// same: started as `du` (a link of that name), its words are du's, byte
/// for byte, on stdout and stderr.
#[test]
fn messages_and_warnings_as_du_words_them() {
    use std::os::unix::process::CommandExt;
    let Some(du) = references::gnu_du() else { return };
    let dir = fixture();
    for args in [
        &["-t", "x", "t"][..],
        &["--threshold=x", "t"],
        &["-t", "-0", "t"],
        &["-t", "-0k", "t"],
        &["--threshold", "-00", "t"],
        &["-t", "1x", "t"],
        &["-B", "1x", "t"],
        &["--block-size=1KX", "t"],
        &["--inodes", "-b", "t"],
        &["--inodes", "--apparent-size", "-s", "t"],
        &["--inodes", "-b", "-s", "-a", "t"],
        &["--time=mtime", "t"],
        &["--time=", "t"],
        &["--time=st", "-s", "t"],
        &["--time", "--time-style=x", "-s", "t"],
        &["--time", "--time-style=posix-iso", "-s", "t"],
        &["--time", "--time-style=lo", "-s", "t"],
        &["-s", "-d", "1", "t"],
        // getopt_long's abbreviations and words (coreutils' tests/du/threshold.sh).
        &["--sum", "t"],
        &["--app", "-s", "t"],
        &["--max=0", "t"],
        &["--th=5000", "-a", "t"],
        &["--th", "-5000", "-a", "t"],
        &["--s", "t"],
        &["--t", "t"],
        &["--ti=atime", "t"],
        &["--h", "t"],
        &["--=x", "t"],
        &["--ma"],
        &["--thr"],
        &["-d"],
        &["-sd"],
        &["-s", "-t"],
        &["--files0-from"],
        &["--all=3", "t"],
        &["--al=3", "t"],
        &["--foo=bar", "t"],
        &["-y", "t"],
        &["-sV", "t"],
        &["-B", "-1", "t"],
        &["--block=1x", "t"],
        &["--time-s=iso", "--time", "-s", "t"],
        &["-s", "-d", "0", "t"],
        &["--max-depth=1", "--max-depth=0", "-s", "t"],
        &["-sd0", "t"],
        &["t", "-s"],
        &["-s", "--", "-t"],
        &["-s", "", "t"],
        &["-s", ""],
        // Options are read in order: the first bad value is the one named.
        &["-d", "x", "-B", "y", "t"],
        &["-B", "e", "t"],
        &["-B", "1e", "t"],
        &["-B", "KX", "t"],
        &["-B", "R", "t"],
        &["-t", "1Q", "t"],
        &["-t", "p", "t"],
        &["-t", "1g", "t"],
        &["-t", "1t", "t"],
        &["-t", "1k", "t"],
        &["-t", "g", "t"],
        &["-B", "y", "-d", "x", "t"],
        &["-t", "x", "-d", "y", "t"],
        &["-d", "y", "-t", "x", "t"],
        &["-B", "1x", "--block-size=2x", "t"],
        &["--th=1x", "-t", "2x", "t"],
        &["-d", "1", "-d", "x", "t"],
        &["-d", "x", "-d", "y", "-s", "t"],
    ] {
        let mut reference = du.command();
        reference.arg0("du");
        let mut ours = Command::new(FDU);
        ours.arg0("du");
        let expected = run(reference, args, dir.path());
        let got = run(ours, args, dir.path());
        assert_eq!(
            String::from_utf8_lossy(&got.stderr),
            String::from_utf8_lossy(&expected.stderr),
            "stderr for {args:?}"
        );
        assert_eq!(
            records(&got.stdout, b'\n'),
            records(&expected.stdout, b'\n'),
            "stdout for {args:?}"
        );
        assert_eq!(got.status.code(), expected.status.code(), "status for {args:?}");
    }
    // TIME_STYLE: "locale" is the default and `posix-` prefixes go, there only.
    for style in ["locale", "posix-iso", "posix-posix-full-iso", "+%s", "x"] {
        let args = ["--time", "-s", "t"];
        let mut reference = du.command();
        reference.arg0("du").env("TIME_STYLE", style);
        let mut ours = Command::new(FDU);
        ours.arg0("du").env("TIME_STYLE", style);
        let expected = run(reference, &args, dir.path());
        let got = run(ours, &args, dir.path());
        assert_eq!(got.stderr, expected.stderr, "stderr with TIME_STYLE={style}");
        assert_eq!(got.stdout, expected.stdout, "stdout with TIME_STYLE={style}");
    }
}

/// A bind mount can put a directory inside itself (`mount --bind a a/b`):
/// du leaves the directory that is its own ancestor out, silently, and
/// counts nothing twice.
#[test]
fn a_bind_mount_cycle_is_left_out_silently() {
    let Some(du) = references::gnu_du() else { return };
    let dir = fixture();
    let (outer, inner) = (dir.path().join("t/a"), dir.path().join("t/a/b"));
    let mounted = Command::new("mount")
        .arg("--bind")
        .arg(&outer)
        .arg(&inner)
        .output()
        .is_ok_and(|o| o.status.success());
    if !mounted {
        references::skip("cannot bind-mount here, so there is no directory cycle to leave out");
        return;
    }
    let result = std::panic::catch_unwind(|| {
        same_as_du_in(&du, dir.path(), &["-a", "t"]);
        same_as_du_in(&du, dir.path(), &["t"]);
        same_as_du_in(&du, dir.path(), &["-s", "t/a"]);
        same_as_du_in(&du, dir.path(), &["-a", "t/a/b"]);
    });
    let _ = Command::new("umount").arg(&inner).status();
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// Output that cannot be written ends as du's does: a reader that went
/// away kills both by SIGPIPE (as started from a shell, with SIGPIPE's
/// default action), and a closed stdout is "write error: Bad file
/// descriptor" with status 1, also for `-o -`.
#[test]
fn a_closed_pipe_or_stdout_ends_as_du_ends() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::Stdio;
    let Some(du) = references::gnu_du() else { return };
    let dir = fixture();
    let started = |mut cmd: Command, args: &[&str], stdout: Stdio, close_stdout: bool| {
        cmd.args(args)
            .current_dir(dir.path())
            .stdout(stdout)
            .stderr(Stdio::piped());
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                if close_stdout {
                    libc::close(1);
                }
                Ok(())
            });
        }
        cmd.output().unwrap()
    };
    for args in [&["-a", "t"][..], &["--json", "t"], &["-o", "-", "t"]] {
        let closed_pipe = || {
            let (reader, writer) = rustix::pipe::pipe().unwrap();
            drop(reader);
            Stdio::from(writer)
        };
        let ours = started(Command::new(FDU), args, closed_pipe(), false);
        assert_eq!(ours.status.signal(), Some(libc::SIGPIPE), "{args:?}: {ours:?}");
        assert!(ours.stderr.is_empty(), "{args:?}");
        let ours = started(Command::new(FDU), args, Stdio::inherit(), true);
        assert_eq!(ours.status.code(), Some(1), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&ours.stderr),
            format!("{FDU}: write error: Bad file descriptor\n"),
            "{args:?}"
        );
        if args[0] == "-a" {
            let theirs = started(du.command(), args, closed_pipe(), false);
            assert_eq!(theirs.status.signal(), Some(libc::SIGPIPE));
            let theirs = started(du.command(), args, Stdio::inherit(), true);
            assert_eq!(theirs.status.code(), Some(1));
            assert_eq!(stderr_lines(&theirs), stderr_lines(&ours));
        }
    }
    for args in [&["--help"][..], &["--version"]] {
        let ours = started(Command::new(FDU), args, Stdio::inherit(), true);
        let theirs = started(du.command(), args, Stdio::inherit(), true);
        assert_eq!(ours.status.code(), Some(1), "{args:?}");
        assert_eq!(theirs.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr_lines(&theirs), stderr_lines(&ours), "{args:?}");
    }
}

/// The shape of coreutils' `tests/du/threshold.sh`: files of 0 to 4
/// bytes in two directories, `-B1` with `--app`, `-S`, `-a`, `-s` and
/// thresholds around those sizes, options abbreviated as that test
/// abbreviates them.
#[test]
fn threshold_with_abbreviated_options() {
    let Some(du) = references::gnu_du() else { return };
    let dir = tempfile::tempdir().unwrap();
    for d in ["a/b", "a/c"] {
        fs::create_dir_all(dir.path().join(d)).unwrap();
    }
    for (i, name) in ["a/b/0", "a/b/1", "a/b/2", "a/c/3", "a/c/4"].iter().enumerate() {
        fs::write(dir.path().join(name), vec![b'x'; i]).unwrap();
    }
    for base in [&["-B1", "--app"][..], &["-B1"], &["-B1", "--apparent"]] {
        for shape in [
            &[][..],
            &["-a"],
            &["-S"],
            &["-a", "-S"],
            &["--sum"],
            &["--max=0"],
            &["--max=1"],
        ] {
            for threshold in ["--th=0", "--th=1", "--thr=-1", "--th", "-t3", "-t-2"] {
                let mut args: Vec<&str> = base.iter().chain(shape).copied().collect();
                args.push(threshold);
                if threshold == "--th" {
                    args.push("2");
                }
                args.push("a");
                same_as_du_in(&du, dir.path(), &args);
            }
        }
    }
}
