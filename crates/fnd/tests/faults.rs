//! fnd when the world around it fails: output closed early or full, an
//! interrupt in the middle of the walk, commands that are missing or fail,
//! arguments that a shell would mangle, directories it may not read.
//! Exit codes and messages are fd 10.5's (checked against fd where noted).

mod harness;

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;

use std::process::{Command, Stdio};

use fnd_test_support::hostile::*;
use fnd_test_support::references;
use harness::*;

/// fd 10.5: some expectations are checked against it too. Without it
/// (and without `FND_REQUIRE_REFERENCE=1`) only against its documented
/// behaviour, as written here.
fn fd() -> Option<Command> {
    let mut cmd = references::fd()?.command();
    cmd.env("NO_COLOR", "1").stdin(Stdio::null());
    Some(cmd)
}

/// Read the first bytes, close the pipe, and return the exit status and stderr.
fn read_a_little_then_close(cmd: &mut Command) -> (std::process::ExitStatus, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // A few bytes, as `head -c 100` takes (a line would be all of `-0` output).
    let mut first = [0u8; 100];
    std::io::Read::read_exact(&mut child.stdout.take().unwrap(), &mut first).unwrap();
    // The reader is dropped here: the pipe is closed.
    let out = child.wait_with_output().unwrap();
    (out.status, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn closed_stdout_stops_quietly_with_fds_exit_status() {
    let tmp = scratch_dir();
    many_files(tmp.path(), 30_000, 40);
    // fd 10.5 exits 1 without a word when its output is closed (`fd | head -1`).
    let expected = match fd() {
        Some(mut fd) => read_a_little_then_close(fd.args(["-u", "."]).arg(tmp.path())).0.code(),
        None => Some(1),
    };
    for args in [
        &["-u", "."][..],
        &["-u", "-j1", "."],
        &["-u", "-0", "."],
        &["-u", "--format", "{}", "."],
    ] {
        let (status, stderr) = read_a_little_then_close(fnd().args(args).arg(tmp.path()));
        assert!(
            stderr.is_empty(),
            "{args:?}: no message on a closed pipe, got {stderr:?}"
        );
        assert_eq!(status.code(), expected, "{args:?}: exit status on a closed pipe");
    }
}

#[test]
fn full_output_is_one_clear_error_and_exit_1() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("skipped: no /dev/full");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    many_files(tmp.path(), 2_000, 40);
    for args in [
        &["-u", "."][..],
        &["-u", "-j1", "."],
        &["-u", "-0", "."],
        &["-u", "--format", "{/}", "."],
    ] {
        let out = run(fnd().args(args).arg(tmp.path()).stdout(full.try_clone().unwrap()));
        let stderr = String::from_utf8_lossy(&out.stderr);
        // fd: "[fd error]: Could not write to output: No space left on device (os error 28)"
        assert_eq!(stderr.lines().count(), 1, "{args:?}: one error line, got {stderr:?}");
        assert!(
            stderr.starts_with("[fnd error]: Could not write to output: No space left on device"),
            "{args:?}: {stderr:?}"
        );
        assert_eq!(out.status.code(), Some(1), "{args:?}");
    }
}

/// Interrupted by SIGINT, fd dies of SIGINT (the shell shows 130); exiting
/// with 130 says the same thing.
fn interrupted(status: std::process::ExitStatus) -> bool {
    status.signal() == Some(libc_sigint()) || status.code() == Some(130)
}

fn libc_sigint() -> i32 {
    rustix::process::Signal::INT.as_raw()
}

#[test]
fn sigint_mid_walk_exits_130_with_colours_reset() {
    let tmp = scratch_dir();
    many_files(tmp.path(), 20_000, 40);
    for (colour, hyperlink) in [("never", "never"), ("always", "never"), ("always", "always")] {
        let mut cmd = fnd();
        cmd.env_remove("NO_COLOR")
            .env("LS_COLORS", "di=01;34:*0=01;32:*1=4;31:*2=35")
            .args(["-u", "--color", colour, &format!("--hyperlink={hyperlink}"), "."])
            .arg(tmp.path());
        // Interrupted after the first 64 KiB of some 900 KiB of output.
        let Some((out, status)) = on_pty(&mut cmd, Some(64 * 1024)) else {
            return;
        };
        assert!(
            interrupted(status),
            "{colour}/{hyperlink}: status after SIGINT: {status:?}"
        );
        assert!(
            out.len() < 20_000 * 60,
            "{colour}/{hyperlink}: the walk went on to the end after SIGINT"
        );
        // Whatever was cut short, the terminal is left without colour or link.
        let last_sgr = out.windows(2).rposition(|w| w == b"\x1b[");
        if let Some(i) = last_sgr {
            let tail = &out[i..];
            let reset = tail.starts_with(b"\x1b[0m") || tail.starts_with(b"\x1b[m");
            assert!(
                reset,
                "{colour}/{hyperlink}: output ends with colour still on: {:?}",
                String::from_utf8_lossy(tail)
            );
        }
        if let Some(i) = out.windows(4).rposition(|w| w == b"\x1b]8;") {
            assert!(
                out[i..].starts_with(b"\x1b]8;;\x1b\\") || out[i..].starts_with(b"\x1b]8;;\x07"),
                "{colour}/{hyperlink}: a hyperlink left open"
            );
        }
    }
}

#[test]
fn sigint_on_a_pipe_ends_the_walk() {
    let tmp = scratch_dir();
    many_files(tmp.path(), 20_000, 40);
    let mut child = default_sigint(&mut fnd())
        .args(["-u", "."])
        .arg(tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = Vec::new();
    reader.read_until(b'\n', &mut line).unwrap();
    rustix::process::kill_process(rustix::process::Pid::from_child(&child), rustix::process::Signal::INT).unwrap();
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut reader, &mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(interrupted(out.status), "status after SIGINT: {:?}", out.status);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
fn missing_or_failing_commands_report_as_fd_does() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["one", "two", "three"] {
        std::fs::write(tmp.path().join(name), b"").unwrap();
    }
    let missing = "fnd-test-no-such-command";
    // fd 10.5: one "Command not found" per result with -x, one in all with
    // -X, exit 1; a command that fails makes the exit status 1, quietly.
    let cases: [(&[&str], usize, &str); 6] = [
        (&["-x", missing], 3, "Command not found: fnd-test-no-such-command"),
        (&["-X", missing], 1, "Command not found: fnd-test-no-such-command"),
        (&["-x", "false"], 0, ""),
        (&["-X", "false"], 0, ""),
        (&["-x", "sh", "-c", "exit 7"], 0, ""),
        (&["-X", "sh", "-c", "exit 7"], 0, ""),
    ];
    for (exec, lines, message) in cases {
        let out = run(fnd().args(["-u", "-t", "f", "."]).arg(tmp.path()).args(exec));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{exec:?}: {stderr}");
        assert_eq!(stderr.lines().count(), lines, "{exec:?}: {stderr}");
        for l in stderr.lines() {
            assert_eq!(l, format!("[fnd error]: {message}"), "{exec:?}");
        }
        if let Some(mut fd) = fd() {
            let theirs = fd
                .args(["-u", "-t", "f", "."])
                .arg(tmp.path())
                .args(exec)
                .output()
                .unwrap();
            assert_eq!(
                theirs.status.code(),
                out.status.code(),
                "{exec:?}: exit status differs from fd's"
            );
            assert_eq!(
                String::from_utf8_lossy(&theirs.stderr).lines().count(),
                lines,
                "{exec:?}: fd's messages"
            );
        }
    }
}

#[test]
fn command_arguments_reach_the_command_verbatim() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("target"), b"").unwrap();
    let args = [
        "a b",
        "q'uote",
        "d\"q",
        "$(touch pwned)",
        "`touch pwned`",
        "*",
        "~",
        "$HOME",
        "a;b", // a lone `;` ends the command template, as in fd
        "|",
        "\\",
        "",
    ];
    for flag in ["-x", "-X"] {
        let out = run(fnd()
            .args(["-u", "-F", "target"])
            .arg(&root)
            .args([flag, "printf", "%s\\0"])
            .args(args)
            .arg("{}")
            .current_dir(tmp.path()));
        assert!(out.status.success(), "{flag}: {out:?}");
        let mut expected: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        expected.push(root.join("target").as_os_str().as_bytes().to_vec());
        assert_eq!(
            records(&out.stdout),
            expected.iter().map(|v| &v[..]).collect::<Vec<_>>(),
            "{flag}"
        );
        assert!(
            !tmp.path().join("pwned").exists() && !root.join("pwned").exists(),
            "{flag}: a shell ran"
        );
    }
}

#[test]
fn hostile_names_reach_commands_verbatim() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = open_root(tmp.path());
    let names = hostile_names();
    for name in &names {
        touch_at(&dir, name);
    }
    for flag in ["-x", "-X"] {
        // From the working directory: `./` kept, so `-rf` is no option.
        let out = run(fnd().args(["-u", flag, "printf", "%s\\0"]).current_dir(tmp.path()));
        assert!(out.status.success(), "{flag}: {out:?}");
        let got: HashSet<Vec<u8>> = records(&out.stdout).into_iter().map(|r| r.to_vec()).collect();
        let expected: HashSet<Vec<u8>> = names.iter().map(|n| [&b"./"[..], n].concat()).collect();
        assert!(got == expected, "{flag}: names changed on their way to the command");
    }
}

#[test]
fn unreadable_entries_are_listed_and_errors_shown_only_when_asked() {
    let Some(tmp) = permission_tree() else { return };
    let r = tmp.path();
    let root = r.as_os_str().as_bytes();
    let expected: HashSet<Vec<u8>> = ["locked/", "open/", "open/x", "secret"]
        .iter()
        .map(|p| [root, b"/", p.as_bytes()].concat())
        .collect();
    for order in ["dfs", "bfs", "parallel"] {
        let Some(quiet) = as_nobody(env!("CARGO_BIN_EXE_fnd"), &["-u", "-0", "--order", order, "."], r) else {
            return;
        };
        let got: HashSet<Vec<u8>> = records(&quiet.stdout).into_iter().map(|p| p.to_vec()).collect();
        assert!(
            got == expected,
            "{order}: unreadable entries are listed: {:?}",
            String::from_utf8_lossy(&quiet.stdout)
        );
        assert!(
            quiet.stderr.is_empty(),
            "{order}: errors only with --show-errors: {}",
            String::from_utf8_lossy(&quiet.stderr)
        );
        assert_eq!(quiet.status.code(), Some(0), "{order}");
        let Some(shown) = as_nobody(
            env!("CARGO_BIN_EXE_fnd"),
            &["-u", "-0", "--show-errors", "--order", order, "."],
            r,
        ) else {
            return;
        };
        let stderr = String::from_utf8_lossy(&shown.stderr);
        // fd: "[fd error]: <root>/locked: Permission denied (os error 13)", exit 0.
        assert_eq!(
            stderr.trim_end(),
            format!("[fnd error]: {}/locked: Permission denied (os error 13)", r.display()),
            "{order}"
        );
        assert_eq!(shown.status.code(), Some(0), "{order}");
    }
}

/// Under valgrind, which users debug and profile with: its vDSO is not one a
/// program can parse itself (rustix faulted finding the CPU and the clock
/// there), so the walk reads both through libc. One worker per allowed CPU
/// (the parallel walk then pins them, asking which CPU it is on) and a
/// sorted walk (which times its releases), each the same output as without.
#[test]
fn runs_under_valgrind_as_without() {
    let Some(valgrind) = references::valgrind() else { return };
    let tmp = tempfile::tempdir().unwrap();
    for d in 0..6 {
        let dir = tmp.path().join(format!("d{d}/e"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..5 {
            std::fs::write(dir.join(format!("f{f}")), b"x").unwrap();
        }
    }
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get()).to_string();
    for args in [&["-u", "-j", &cpus][..], &["-u", "-j", &cpus, "--sort", "name"]] {
        let direct = run(fnd().args(args).current_dir(tmp.path()));
        let under = valgrind
            .command()
            .args(["-q", "--error-exitcode=99", env!("CARGO_BIN_EXE_fnd")])
            .args(args)
            .current_dir(tmp.path())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            under.status.success(),
            "{args:?} under valgrind: {}",
            String::from_utf8_lossy(&under.stderr)
        );
        let sorted = |out: &[u8]| {
            let mut lines: Vec<Vec<u8>> = out.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
            lines.sort();
            lines
        };
        assert_eq!(sorted(&under.stdout), sorted(&direct.stdout), "{args:?}");
        // Six directories, each with a subdirectory of five files.
        assert_eq!(direct.stdout.iter().filter(|&&b| b == b'\n').count(), 6 * 7, "{args:?}");
    }
}
