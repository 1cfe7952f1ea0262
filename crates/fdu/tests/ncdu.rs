//! ncdu's export format: what Debian's ncdu and gdu write, read by
//! `fdu -f`, gives du's lines for the same tree; what `fdu -o` writes,
//! read by fdu, ncdu and gdu, gives du's figures. Without ncdu, gdu or GNU
//! du a comparison says so on stderr and checks nothing (a failure under
//! `FND_REQUIRE_REFERENCE=1`).

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Output};

use fnd_test_support::references;

const FDU: &str = env!("CARGO_BIN_EXE_fdu");

/// A tree with hard links across directories, a name that is not UTF-8,
/// empty and nested directories, a symlink and an empty file.
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    for d in ["a/b/c", "d", "empty"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    fs::write(root.join("a/k1500"), vec![b'x'; 1500]).unwrap();
    fs::write(root.join("a/b/big"), vec![b'x'; 200_000]).unwrap();
    fs::write(root.join("a/b/c/zero"), b"").unwrap();
    fs::write(root.join("d/orig"), vec![b'x'; 9000]).unwrap();
    fs::hard_link(root.join("d/orig"), root.join("a/b/link")).unwrap();
    fs::hard_link(root.join("d/orig"), root.join("d/link2")).unwrap();
    fs::write(root.join(std::ffi::OsStr::from_bytes(b"bad\xffname")), vec![b'x'; 10]).unwrap();
    std::os::unix::fs::symlink("a", root.join("to_a")).unwrap();
    dir
}

fn run(mut cmd: Command, cwd: &Path) -> Output {
    let out = cmd.current_dir(cwd).env("TZ", "UTC").output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn sorted_lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    lines.sort();
    lines
}

/// `fdu ARGS -f EXPORT` prints what `du ARGS ROOT` prints.
fn same_as_du(export: &Path, root: &Path, cwd: &Path, cases: &[&[&str]]) {
    let Some(du) = references::gnu_du() else { return };
    for args in cases {
        let mut ours = Command::new(FDU);
        ours.args(*args).arg("-f").arg(export);
        let mut theirs = du.command();
        theirs.args(*args).arg(root);
        assert_eq!(
            sorted_lines(&run(ours, cwd).stdout),
            sorted_lines(&run(theirs, cwd).stdout),
            "fdu {args:?} -f {}",
            export.display()
        );
    }
}

#[test]
fn ncdus_export_reads_as_du_measures_the_tree() {
    let Some(ncdu) = references::ncdu() else { return };
    let dir = fixture();
    let root = dir.path().join("t");
    let export = dir.path().join("ncdu.json");
    let mut cmd = ncdu.command();
    cmd.arg("-0").arg("-o").arg(&export).arg(&root);
    run(cmd, dir.path());
    same_as_du(
        &export,
        &root,
        dir.path(),
        &[
            &[],
            &["-a"],
            &["-s"],
            &["-c", "-d", "1"],
            &["-S"],
            &["-b", "-a"],
            &["--apparent-size", "-h"],
            &["--inodes", "-a"],
            // -l: every link of a file counts (the export marks them).
            &["-l"],
            &["-l", "-a"],
            &["-l", "-s", "-b"],
            &["-l", "--inodes", "-a"],
        ],
    );
    // The export from stdin, the same.
    let from_stdin = Command::new(FDU)
        .args(["-a", "-f", "-"])
        .stdin(fs::File::open(&export).unwrap())
        .output()
        .unwrap();
    let from_file = Command::new(FDU).args(["-a", "-f"]).arg(&export).output().unwrap();
    assert_eq!(from_stdin.stdout, from_file.stdout);
    // The tree view reads it too.
    let tree = Command::new(FDU).args(["--tree", "-f"]).arg(&export).output().unwrap();
    assert!(tree.status.success());
    assert!(String::from_utf8_lossy(&tree.stdout).contains("big"));
}

/// gdu leaves out directories' own sizes, marks only the links after the
/// first of a file, and writes a name that is not UTF-8 with U+FFFD: read
/// by fdu, its files are du's files, size for size (which link of a file
/// is listed is each tool's first).
#[test]
fn gdus_export_reads_with_its_files_sizes() {
    let Some(gdu) = references::gdu() else { return };
    let Some(du) = references::gnu_du() else { return };
    let dir = fixture();
    let root = dir.path().join("t");
    let export = dir.path().join("gdu.json");
    let mut cmd = gdu.command();
    cmd.arg("-n").arg("-o").arg(&export).arg(&root);
    run(cmd, dir.path());
    let mut ours = Command::new(FDU);
    ours.args(["-a", "-b", "-f"]).arg(&export);
    let ours = run(ours, dir.path());
    let mut theirs = du.command();
    theirs.args(["-a", "-b"]).arg(&root);
    let theirs = run(theirs, dir.path());
    // Directories' lines out (gdu has no sizes for them), then sizes only.
    let file_sizes = |out: &[u8]| -> Vec<Vec<u8>> {
        let mut sizes: Vec<Vec<u8>> = sorted_lines(out)
            .into_iter()
            .filter_map(|line| {
                let (size, path) = line.split_at(line.iter().position(|&b| b == b'\t')?);
                let on_disk = root.parent().unwrap().join(std::ffi::OsStr::from_bytes(&path[1..]));
                let shown = Path::new(std::ffi::OsStr::from_bytes(&path[1..]));
                (!shown.is_dir() && !on_disk.is_dir()).then(|| size.to_vec())
            })
            .collect();
        sizes.sort();
        sizes
    };
    assert_eq!(file_sizes(&ours.stdout), file_sizes(&theirs.stdout));
}

/// `fdu -o`: read back by fdu, by ncdu (which writes it again) and by
/// gdu, the export gives du's figures for the tree.
#[test]
fn fdus_export_round_trips_through_fdu_ncdu_and_gdu() {
    let dir = fixture();
    let root = dir.path().join("t");
    let export = dir.path().join("fdu.json");
    let mut cmd = Command::new(FDU);
    cmd.arg("-o").arg(&export).arg(&root);
    assert!(run(cmd, dir.path()).stdout.is_empty());
    // The export lists entries in du's order, so a hard-linked file
    // counts at the link du counts it at: every line is du's.
    let cases: &[&[&str]] = &[
        &["-s"],
        &["-s", "-c"],
        &["-s", "-b"],
        &["-s", "--inodes"],
        &["-a"],
        &["-a", "-b"],
        &["--inodes"],
        // With -l every link counts, so every line is du's.
        &["-l", "-a"],
        &["-l", "-a", "-b"],
        &["-l", "--inodes"],
    ];
    same_as_du(&export, &root, dir.path(), cases);
    // To stdout, the same document but for its time stamp: entries come
    // in du's order, whatever order the walk read them in.
    let stdout = Command::new(FDU).args(["-o", "-"]).arg(&root).output().unwrap();
    let without_stamp = |doc: &[u8]| {
        doc.split(|&b| b == b'}')
            .skip(1)
            .flatten()
            .copied()
            .collect::<Vec<u8>>()
    };
    assert_eq!(
        without_stamp(&stdout.stdout),
        without_stamp(&fs::read(&export).unwrap())
    );
    if let Some(ncdu) = references::ncdu() {
        let again = dir.path().join("ncdu-again.json");
        let mut cmd = ncdu.command();
        cmd.arg("-f").arg(&export).arg("-o").arg(&again);
        run(cmd, dir.path());
        same_as_du(&again, &root, dir.path(), &[&["-s"], &["-s", "-b"]]);
    }
    if let (Some(gdu), Some(du)) = (references::gdu(), references::gnu_du()) {
        let mut cmd = gdu.command();
        cmd.args(["-n", "-s", "-f"]).arg(&export);
        let shown = String::from_utf8(run(cmd, dir.path()).stdout).unwrap();
        let mut cmd = du.command();
        cmd.arg("-sk").arg(&root);
        let du_k = String::from_utf8(run(cmd, dir.path()).stdout).unwrap();
        let kib: u64 = du_k.split('\t').next().unwrap().parse().unwrap();
        assert!(
            shown.trim_start().starts_with(&format!("{kib}.0 KiB")),
            "gdu: {shown}, du: {kib} KiB"
        );
    }
}

/// Only a file is replaced whole: a fifo (as a device such as /dev/null)
/// is written to as it is, and a symlink keeps naming its file.
#[test]
fn an_export_to_a_fifo_or_through_a_symlink_keeps_what_is_there() {
    use std::os::unix::fs::FileTypeExt;
    let dir = fixture();
    let fifo = dir.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
    if made {
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read(fifo).unwrap())
        };
        let out = Command::new(FDU)
            .arg("-o")
            .arg(&fifo)
            .arg("t")
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let export = reader.join().unwrap();
        assert!(export.starts_with(b"[1,2,{\"progname\":\"fdu\""));
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    }
    let real = dir.path().join("real.json");
    fs::write(&real, b"old").unwrap();
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink("real.json", &link).unwrap();
    let out = Command::new(FDU)
        .arg("-o")
        .arg(&link)
        .arg("t")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(fs::read(&real).unwrap().starts_with(b"[1,2,"));
}

#[test]
fn an_export_holds_one_directory() {
    let dir = fixture();
    let out = Command::new(FDU)
        .args(["-o", "x.json", "t/a", "t/d"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!dir.path().join("x.json").exists());
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds one directory"));
    let missing = Command::new(FDU)
        .args(["-o", "x.json", "missing"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(!dir.path().join("x.json").exists());
}

#[test]
fn what_is_not_an_export_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("empty", &b""[..]),
        ("object", b"{\"fdu\":1}"),
        ("version", b"[2,0,{},[{\"name\":\"/\"}]]"),
        ("truncated", b"[1,2,{},[{\"name\":\"/r\"},[{\"name\":\"d\"}"),
    ] {
        let file = dir.path().join(name);
        fs::write(&file, text).unwrap();
        let out = Command::new(FDU).arg("-f").arg(&file).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert!(out.stdout.is_empty(), "{name}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(stderr.contains("not an export in ncdu's format"), "{name}: {stderr}");
    }
    let missing = Command::new(FDU)
        .args(["-f", "/nonexistent/export.json"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("No such file or directory"));
}

/// A saved tree (`--from-json`) is shown as `--tree` shows a scan, and an
/// export (`-f`) is read instead of scanning: an option either would
/// ignore is refused in one line (status 1), never dropped silently.
#[test]
fn saved_trees_and_exports_refuse_what_they_would_ignore() {
    let dir = fixture();
    let root = dir.path().join("t");
    let saved = dir.path().join("t.json");
    let export = dir.path().join("t.ncdu");
    let written = Command::new(FDU).arg("--json").arg(&root).output().unwrap();
    fs::write(&saved, &written.stdout).unwrap();
    let mut cmd = Command::new(FDU);
    cmd.arg("-o").arg(&export).arg(&root);
    run(cmd, dir.path());
    let refused = |args: &[&str], file: &Path, option: &str, what: &str, named: &str| {
        let out = Command::new(FDU)
            .arg(option)
            .arg(file)
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            text.lines().next().unwrap_or(""),
            format!("{FDU}: {what}: it cannot be combined with {named}"),
            "{args:?}"
        );
        assert!(!dir.path().join("out").exists(), "{args:?} wrote a file");
    };
    let saved_tree = "--from-json shows a saved tree as --tree does";
    for (args, named) in [
        (&["-s"][..], "--summarize"),
        (&["-a"], "--all"),
        (&["-d", "1"], "--max-depth"),
        (&["--json"], "--json"),
        (&["-o", "out"], "--output-file"),
        (&["-f", "x"], "--input-file"),
        (&["t"], "FILE operands"),
    ] {
        refused(args, &saved, "--from-json", saved_tree, named);
    }
    let export_read = "--input-file reads an export instead of scanning";
    for (args, named) in [
        (&["-o", "out"][..], "--output-file"),
        (&["t"], "FILE operands"),
        (&["-x"], "--one-file-system"),
        (&["--exclude=a"], "--exclude"),
    ] {
        refused(args, &export, "-f", export_read, named);
    }
    // What each does take still works.
    for args in [&["--tree", "-n", "3"][..], &["-h", "--tree-depth", "1"]] {
        let mut cmd = Command::new(FDU);
        cmd.arg("--from-json").arg(&saved).args(args);
        assert!(!run(cmd, dir.path()).stdout.is_empty(), "{args:?}");
    }
}

/// `-o FILE` keeps an existing file's mode (a new one gets 0666 less the
/// umask), as ncdu does, and writes a file it may write in a directory
/// it may not add to, in place, as ncdu does.
#[test]
fn an_export_keeps_the_mode_and_writes_where_it_may() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = fixture();
    let root = dir.path().join("t");
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    let export = |file: &Path| {
        let mut cmd = Command::new(FDU);
        cmd.arg("-o").arg(file).arg(&root);
        // SAFETY: umask is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::umask(0o022);
                Ok(())
            });
        }
        run(cmd, dir.path());
    };
    let new = dir.path().join("new.json");
    export(&new);
    assert_eq!(mode(&new), 0o644);
    for kept in [0o640, 0o604, 0o600, 0o666] {
        fs::set_permissions(&new, fs::Permissions::from_mode(kept)).unwrap();
        export(&new);
        assert_eq!(mode(&new), kept, "{kept:o}");
    }
    // As root, its owner stays too.
    if rustix::process::geteuid().is_root() {
        use std::os::unix::fs::MetadataExt;
        std::os::unix::fs::chown(&new, Some(65534), Some(65534)).unwrap();
        export(&new);
        let owner = fs::metadata(&new).unwrap();
        assert_eq!((owner.uid(), owner.gid()), (65534, 65534));
    }
    if !fnd_test_support::hostile::nobody_available() {
        return;
    }
    // A directory nobody may not add to, holding a file nobody may write.
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let locked = dir.path().join("locked");
    fs::create_dir(&locked).unwrap();
    let theirs = locked.join("export.json");
    fs::write(&theirs, b"old").unwrap();
    fs::set_permissions(&theirs, fs::Permissions::from_mode(0o666)).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o555)).unwrap();
    let out_arg = theirs.to_str().unwrap();
    let Some(out) = fnd_test_support::hostile::as_nobody(FDU, &["-o", out_arg], &root) else {
        return;
    };
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(fs::read(&theirs).unwrap().starts_with(b"[1,"));
    assert_eq!(mode(&theirs), 0o666);
    assert_eq!(fs::read_dir(&locked).unwrap().count(), 1);
    // A file that is not there cannot be made there: one line, status 1.
    let missing = locked.join("new.json");
    let out = fnd_test_support::hostile::as_nobody(FDU, &["-o", missing.to_str().unwrap()], &root).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}

/// SIGINT, SIGTERM or SIGHUP during `-o FILE` leave nothing beside FILE:
/// the temporary file goes, and fdu dies of the signal. Each directory
/// read is slowed down (strace's fault injection) so that the signal
/// comes mid-walk.
#[test]
fn a_signal_during_an_export_leaves_no_temporary_file() {
    use std::os::unix::process::ExitStatusExt;
    let Some(strace) = references::strace() else { return };
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let dir = fixture();
        let out_dir = dir.path().join("out");
        fs::create_dir(&out_dir).unwrap();
        let mut command = strace.command();
        command
            .args(["-f", "-qq", "-o", "/dev/null", "-e", "trace=getdents64"])
            .args(["-e", "inject=getdents64:delay_enter=300000", FDU, "-o"])
            .arg(out_dir.join("export.json"))
            .arg(dir.path().join("t"));
        // A test run in the background inherits SIGINT and SIGHUP ignored
        // (`cmd &`, nohup), and fdu rightly keeps them ignored.
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut command, || {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGHUP, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut tracer = command.spawn().unwrap();
        let children = format!("/proc/{0}/task/{0}/children", tracer.id());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let (pid, temp_seen) = loop {
            let pid: Option<i32> = fs::read_to_string(&children)
                .ok()
                .and_then(|s| s.split_whitespace().next().and_then(|p| p.parse().ok()));
            let temp = fs::read_dir(&out_dir).unwrap().count() > 0;
            if let (Some(pid), true) = (pid, temp) {
                break (pid, true);
            }
            assert!(std::time::Instant::now() < deadline, "fdu never started its export");
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        assert!(temp_seen);
        // SAFETY: a signal to the child the tracer started.
        unsafe { libc::kill(pid, signal) };
        let status = tracer.wait().unwrap();
        let left: Vec<_> = fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "signal {signal} left {left:?}");
        assert_eq!(status.signal(), Some(signal), "{status:?}");
    }
}

/// `fdu -f` on the export of a deep chain writes its lines as they come:
/// they are quadratic in depth (here 280 MB for an export of 200 kB), and
/// were held whole until the end. Run within 128 MiB of address space.
#[test]
fn a_deep_export_is_replayed_within_a_small_address_space() {
    let depth = 3000;
    let name = "n".repeat(60);
    let mut text = String::from(r#"[1,2,{"progname":"ncdu","progver":"1.19","timestamp":1},[{"name":"/r"}"#);
    for _ in 0..depth {
        text.push_str(&format!(r#",[{{"name":"{name}","asize":4096,"dsize":4096}}"#));
    }
    text.push_str(&"]".repeat(depth + 2));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("export");
    std::fs::write(&file, text).unwrap();
    let Ok(out) = std::process::Command::new("prlimit")
        .arg("--as=134217728")
        .args([env!("CARGO_BIN_EXE_fdu"), "-f"])
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .output()
    else {
        return; // no prlimit here
    };
    assert!(out.status.success(), "{out:?}");
    let total = std::process::Command::new(env!("CARGO_BIN_EXE_fdu"))
        .args(["-s", "-f"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&total.stdout), format!("{}\t/r\n", depth * 4));
}

/// A child's peak resident set in KiB, its stdout and its status: its
/// high-water mark (`VmHWM`) read until it exits (`ru_maxrss` would count
/// the test process's image the child was forked from).
fn peak_rss(cmd: &mut Command) -> (u64, Vec<u8>, std::process::ExitStatus) {
    use std::io::Read;
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        stdout.read_to_end(&mut all).unwrap();
        all
    });
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        let hwm = fs::read_to_string(&status_path).ok().and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        });
        peak = peak.max(hwm.unwrap_or(0));
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    (peak, reader.join().unwrap(), status)
}

/// A chain removed with a few descriptors when dropped, even after a
/// failed assertion (the temporary directory's removal would recurse once
/// per level and overflow the stack).
struct Chain(std::path::PathBuf);

impl Drop for Chain {
    fn drop(&mut self) {
        fnd_test_support::hostile::remove_chain(&self.0);
    }
}

/// `fdu -o` on a chain of 20,000 directories (paths of 220 kB), and
/// `fdu -s -f` on its export, each in a few MiB: the export was quadratic
/// in depth (1.9 GB at 30,000 levels), and so was reading it back. The
/// total is the walk's.
#[test]
fn a_deep_chain_is_exported_and_read_back_in_bounded_memory() {
    use fnd_test_support::hostile::{make_chain, scratch_dir, CHAIN_NAME};
    const DEPTH: usize = 20_000;
    let tmp = scratch_dir();
    let chain = Chain(tmp.path().join("chain"));
    fs::create_dir(&chain.0).unwrap();
    make_chain(&chain.0, DEPTH);
    let (rss_export, export, status) = peak_rss(Command::new(FDU).args(["-o", "-"]).arg(&chain.0));
    assert!(status.success(), "fdu -o: {status:?}");
    let level = format!(r#"[{{"name":"{CHAIN_NAME}""#);
    let levels = export.windows(level.len()).filter(|w| *w == level.as_bytes()).count();
    assert_eq!(levels, DEPTH, "every level exported");
    let file = tmp.path().join("export");
    fs::write(&file, &export).unwrap();
    let (rss_read, total, status) = peak_rss(Command::new(FDU).args(["-s", "-f"]).arg(&file));
    assert!(status.success(), "fdu -s -f: {status:?}");
    let walked = Command::new(FDU).arg("-s").arg(&chain.0).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&total), String::from_utf8_lossy(&walked.stdout));
    // Quadratic would be hundreds of MiB here; a debug fdu takes ~10.
    for (what, kib) in [("fdu -o", rss_export), ("fdu -s -f", rss_read)] {
        assert!(
            kib > 0 && kib < 48 * 1024,
            "{what}: peak RSS {kib} KiB at depth {DEPTH}"
        );
    }
}
