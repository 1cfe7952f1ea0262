//! `fdu -i` in a real terminal: tmux (its own server on a private socket)
//! runs it on a tree the test builds, sends keys and reads the screen with
//! `capture-pane`. The screens themselves are tested in `src/browse/draw.rs`
//! with ratatui's test backend; here: a deletion reaches the disk and the
//! totals shown, the terminal is given back after `q` and Ctrl-C, and
//! too few descriptors are said in one line.
//!
//! Needs tmux (`.ci/run` installs it); without it the tests say so and
//! pass, unless `FND_REQUIRE_REFERENCE=1`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A tmux server of its own, killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(command: &str) -> Option<Tmux> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        if Command::new("tmux").arg("-V").output().is_err() {
            assert!(
                std::env::var_os("FND_REQUIRE_REFERENCE").is_none(),
                "tmux is required (FND_REQUIRE_REFERENCE is set)"
            );
            eprintln!("tmux is not installed: skipped");
            return None;
        }
        let socket = format!(
            "fdu-test-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let tmux = Tmux { socket };
        let status = tmux
            .command()
            .args(["new-session", "-d", "-x", "100", "-y", "24", command])
            .env("TERM", "xterm-256color")
            .status()
            .unwrap();
        assert!(status.success());
        Some(tmux)
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new("timeout");
        cmd.args(["10", "tmux", "-L", &self.socket, "-f", "/dev/null"]);
        cmd
    }

    fn keys(&self, keys: &[&str]) {
        let status = self.command().arg("send-keys").args(keys).status().unwrap();
        assert!(status.success());
    }

    fn screen(&self) -> String {
        let out = self.command().args(["capture-pane", "-p"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen once `ready` holds (panics after 30 s).
    fn wait(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "waited for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command().arg("kill-server").status();
    }
}

fn write(path: &Path, bytes: usize) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, vec![7u8; bytes]).unwrap();
}

/// `fdu -i DIR`, then its exit status and the terminal's settings, to files.
fn session(dir: &Path, out: &Path) -> Option<Tmux> {
    session_after(dir, out, "")
}

/// [`session`], with `setup` (shell commands, such as a `ulimit`) first.
fn session_after(dir: &Path, out: &Path, setup: &str) -> Option<Tmux> {
    let fdu = env!("CARGO_BIN_EXE_fdu");
    let command = format!(
        "{setup} '{fdu}' -i '{}' 2>'{err}'; echo $? >'{status}'; stty -a >'{stty}'; sleep 60",
        dir.display(),
        err = out.join("stderr").display(),
        status = out.join("status").display(),
        stty = out.join("stty").display(),
    );
    Tmux::start(&command)
}

fn wait_for_file(path: &Path) -> String {
    let start = Instant::now();
    while !path.exists() || std::fs::read_to_string(path).unwrap().is_empty() {
        assert!(start.elapsed() < Duration::from_secs(30), "no {}", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(100));
    std::fs::read_to_string(path).unwrap()
}

/// The terminal's modes as the pane's shell saw them after fdu: cooked
/// and echoing again.
fn assert_terminal_restored(out: &Path) {
    let stty = wait_for_file(&out.join("stty"));
    assert!(
        stty.contains(" icanon") && stty.contains(" echo "),
        "terminal restored: {stty}"
    );
}

/// What `fdu -s -B1` says the tree takes now.
fn disk_usage(dir: &Path) -> u64 {
    let out = Command::new(env!("CARGO_BIN_EXE_fdu"))
        .args(["-s", "-B1"])
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.split('\t').next().unwrap().parse().unwrap()
}

fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    write(&dir.join("junk/a/one"), 300_000);
    write(&dir.join("junk/b/two"), 200_000);
    write(&dir.join("keep/k"), 100_000);
    write(&dir.join("small"), 1_000);
    (tmp, dir, out)
}

#[test]
fn a_folder_deleted_in_the_browser_is_gone_from_disk_and_from_the_totals() {
    let (_tmp, dir, out) = tree();
    let Some(tmux) = session(&dir, &out) else { return };
    let before = disk_usage(&dir);
    let screen = tmux.wait("the first screen", |s| s.contains("Total disk usage"));
    let rows: Vec<&str> = screen.lines().skip(2).take(3).collect();
    assert!(rows[0].ends_with("junk/"), "the biggest first: {screen}");
    assert!(rows[1].ends_with("keep/"), "{screen}");
    assert!(
        screen.contains(&format!("Total disk usage: {}", fdu::browse::draw::human(before))),
        "{screen}"
    );

    tmux.keys(&["d"]);
    let confirm = tmux.wait("the confirmation", |s| s.contains("Delete the folder junk"));
    assert!(confirm.contains("4 entries inside"), "{confirm}");
    tmux.keys(&["y"]);
    let after = tmux.wait("the deletion", |s| {
        !s.contains("junk/") && s.contains("Total disk usage")
    });
    assert!(!dir.join("junk").exists());
    assert!(dir.join("keep/k").exists());
    let now = disk_usage(&dir);
    assert!(now < before);
    assert!(
        after.contains(&format!("Total disk usage: {}", fdu::browse::draw::human(now))),
        "{after}"
    );

    // Into keep, and back.
    tmux.keys(&["Enter"]);
    tmux.wait("keep's entries", |s| {
        s.contains("--- ") && s.contains("/keep") && s.contains(" k")
    });
    tmux.keys(&["BSpace"]);
    tmux.wait("the top again", |s| {
        s.lines().nth(1).is_some_and(|l| l.contains("/data  ("))
    });

    tmux.keys(&["q"]);
    assert_eq!(wait_for_file(&out.join("status")).trim(), "0");
    assert_terminal_restored(&out);
    assert_eq!(std::fs::read_to_string(out.join("stderr")).unwrap(), "");
}

/// Too few descriptors for the terminal's key reader (`ulimit -n 5`) or
/// for the walk beside it (6, 7): one line, exit 1, before any scan: the
/// tree was drawn and left at once, or drawn empty, or waited on.
#[test]
fn too_few_descriptors_is_one_line_and_exit_1() {
    for (limit, says) in [
        (5, "cannot read keys from the terminal"),
        (6, "too few file descriptors left to read the tree"),
        (7, "too few file descriptors left to read the tree"),
    ] {
        let (_tmp, dir, out) = tree();
        let setup = format!("ulimit -n {limit};");
        let Some(_tmux) = session_after(&dir, &out, &setup) else {
            return;
        };
        assert_eq!(wait_for_file(&out.join("status")).trim(), "1", "ulimit -n {limit}");
        let err = std::fs::read_to_string(out.join("stderr")).unwrap();
        assert_eq!(err.lines().count(), 1, "ulimit -n {limit}: {err}");
        assert!(
            err.contains(says) && err.contains("ulimit -n is"),
            "ulimit -n {limit}: {err}"
        );
        assert_terminal_restored(&out);
    }
}

/// With enough descriptors for both, the whole tree, exit 0 after `q`.
#[test]
fn a_few_descriptors_are_enough() {
    let (_tmp, dir, out) = tree();
    let Some(tmux) = session_after(&dir, &out, "ulimit -n 8;") else {
        return;
    };
    let screen = tmux.wait("the first screen", |s| s.contains("Total disk usage"));
    assert!(screen.contains("junk/") && screen.contains("keep/"), "{screen}");
    tmux.keys(&["q"]);
    assert_eq!(wait_for_file(&out.join("status")).trim(), "0");
    assert_eq!(std::fs::read_to_string(out.join("stderr")).unwrap(), "");
}

#[test]
fn ctrl_c_gives_the_terminal_back() {
    let (_tmp, dir, out) = tree();
    let Some(tmux) = session(&dir, &out) else { return };
    tmux.wait("the first screen", |s| s.contains("Total disk usage"));
    tmux.keys(&["?"]);
    tmux.wait("the help", |s| s.contains("rescan this folder"));
    tmux.keys(&["C-c"]);
    assert_eq!(wait_for_file(&out.join("status")).trim(), "0");
    assert_terminal_restored(&out);
    assert!(dir.join("junk").exists(), "nothing deleted");
}

#[test]
fn killed_by_sigterm_it_gives_the_terminal_back() {
    let (_tmp, dir, out) = tree();
    let Some(tmux) = session(&dir, &out) else { return };
    tmux.wait("the first screen", |s| s.contains("Total disk usage"));
    let shell = tmux.command().args(["display", "-p", "#{pane_pid}"]).output().unwrap();
    let shell = String::from_utf8(shell.stdout).unwrap().trim().to_string();
    let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
    let fdu = children.split_whitespace().next().expect("fdu runs under the shell");
    assert!(Command::new("kill").args(["-TERM", fdu]).status().unwrap().success());
    assert_eq!(wait_for_file(&out.join("status")).trim(), "143", "died of SIGTERM");
    assert_terminal_restored(&out);
}

#[test]
fn without_a_terminal_it_refuses_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fdu"))
        .arg("-i")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.ends_with(": --interactive needs a terminal on stdout\n"), "{err}");
    assert_eq!(err.lines().count(), 1);
}

#[test]
fn a_missing_directory_is_reported_before_the_screen_is_taken() {
    let Some(tmux) = Tmux::start(&format!(
        "'{}' -i /nonexistent/dir; echo \"status $?\"; sleep 60",
        env!("CARGO_BIN_EXE_fdu")
    )) else {
        return;
    };
    let screen = tmux.wait("the status", |s| s.contains("status "));
    assert!(
        screen.contains("fdu: cannot access '/nonexistent/dir': No such file or directory\nstatus 1"),
        "{screen}"
    );
}

#[test]
fn options_it_cannot_honour_are_refused() {
    for args in [
        ["-i", "--tree"],
        ["-i", "--json"],
        ["-i", "--inodes"],
        ["-i", "-o-"],
        ["-i", "a b"],
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fdu"));
        for a in args {
            cmd.args(a.split(' '));
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("--interactive"), "{args:?}: {err}");
    }
}

#[test]
fn an_export_is_browsed_with_the_same_totals_and_never_changed() {
    let (tmp, dir, out) = tree();
    let export = tmp.path().join("export.json");
    let status = Command::new(env!("CARGO_BIN_EXE_fdu"))
        .arg("-o")
        .arg(&export)
        .arg(&dir)
        .status()
        .unwrap();
    assert!(status.success());
    let fdu = env!("CARGO_BIN_EXE_fdu");
    let command = format!(
        "'{fdu}' -i -f '{}' 2>'{}'; echo $? >'{}'; sleep 60",
        export.display(),
        out.join("stderr").display(),
        out.join("status").display()
    );
    let Some(tmux) = Tmux::start(&command) else { return };
    let total = fdu::browse::draw::human(disk_usage(&dir));
    let screen = tmux.wait("the first screen", |s| s.contains("Total disk usage"));
    assert!(screen.contains(&format!("Total disk usage: {total}")), "{screen}");
    assert!(screen.lines().nth(2).is_some_and(|l| l.ends_with("junk/")), "{screen}");
    tmux.keys(&["d"]);
    tmux.wait("the confirmation", |s| s.contains("Delete the folder junk"));
    tmux.keys(&["y"]);
    tmux.wait("the refusal", |s| s.contains("nothing was deleted"));
    assert!(dir.join("junk/a/one").exists());
    tmux.keys(&["x"]); // any key closes the note
    tmux.wait("the note closed", |s| !s.contains("nothing was deleted"));
    tmux.keys(&["q"]);
    assert_eq!(wait_for_file(&out.join("status")).trim(), "0");
}
