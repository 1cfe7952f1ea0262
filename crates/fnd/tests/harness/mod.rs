//! Running fnd from the hostile and fault tests: its output as NUL-separated
//! records, and a pseudo-terminal for what it does on a terminal.
#![allow(dead_code)]

use std::os::fd::{AsFd, OwnedFd};
use std::process::{Child, Command, ExitStatus, Output, Stdio};

pub fn fnd() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fnd"));
    cmd.env_remove("LS_COLORS").env("NO_COLOR", "1").stdin(Stdio::null());
    cmd
}

pub fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run fnd");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "fnd panicked: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn records(stdout: &[u8]) -> Vec<&[u8]> {
    let mut v: Vec<&[u8]> = stdout.split(|&b| b == 0).collect();
    assert_eq!(v.pop(), Some(&b""[..]), "output ends with a NUL");
    v
}

/// A pseudo-terminal: the controller's end and the path of the terminal end.
pub fn open_pty() -> Option<(OwnedFd, OwnedFd)> {
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    let controller = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).ok()?;
    grantpt(&controller).ok()?;
    unlockpt(&controller).ok()?;
    let name = ptsname(&controller, Vec::new()).ok()?;
    let terminal = rustix::fs::open(
        name.as_c_str(),
        rustix::fs::OFlags::RDWR | rustix::fs::OFlags::NOCTTY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .ok()?;
    Some((controller, terminal))
}

/// Read a terminal's controller end until every writer has gone (EIO);
/// `after_first` runs once, as soon as `first` bytes have come.
fn read_pty(controller: &OwnedFd, first: usize, mut after_first: Option<Box<dyn FnMut() + Send>>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 65536];
    loop {
        match rustix::io::read(controller.as_fd(), &mut buf) {
            Ok(0) | Err(rustix::io::Errno::IO) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => panic!("read pty: {e}"),
        }
        if out.len() >= first {
            if let Some(mut f) = after_first.take() {
                f();
            }
        }
    }
}

/// Run fnd with its stdout on a terminal and return what the terminal got.
/// With `interrupt_after`, the child gets SIGINT once that many bytes have
/// come (so it is interrupted in the middle of its output).
pub fn on_pty(cmd: &mut Command, interrupt_after: Option<usize>) -> Option<(Vec<u8>, ExitStatus)> {
    let Some((controller, terminal)) = open_pty() else {
        eprintln!("skipped: no pseudo-terminal available");
        return None;
    };
    if interrupt_after.is_some() {
        default_sigint(cmd);
    }
    let mut child: Child = cmd.stdout(Stdio::from(terminal)).spawn().expect("spawn fnd");
    // The Command still holds the terminal end: drop it so EOF can come.
    cmd.stdout(Stdio::null());
    let pid = rustix::process::Pid::from_child(&child);
    let interrupt: Option<Box<dyn FnMut() + Send>> = interrupt_after.map(|_| {
        Box::new(move || {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
        }) as Box<dyn FnMut() + Send>
    });
    let first = interrupt_after.unwrap_or(usize::MAX);
    let reader = std::thread::spawn(move || read_pty(&controller, first, interrupt));
    let status = child.wait().unwrap();
    Some((reader.join().unwrap(), status))
}

/// Run fnd with its stderr on a terminal (stdout discarded) and return what
/// the terminal got.
pub fn stderr_on_pty(cmd: &mut Command) -> Option<(Vec<u8>, ExitStatus)> {
    let Some((controller, terminal)) = open_pty() else {
        eprintln!("skipped: no pseudo-terminal available");
        return None;
    };
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::from(terminal))
        .spawn()
        .expect("spawn fnd");
    cmd.stderr(Stdio::null());
    let reader = std::thread::spawn(move || read_pty(&controller, usize::MAX, None));
    let status = child.wait().unwrap();
    Some((reader.join().unwrap(), status))
}

/// Our own colour sequences (SGR) and hyperlinks (OSC 8) taken out:
/// whatever control character is left came from a file name.
pub fn strip_own_sequences(out: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(out.len());
    let mut i = 0;
    while i < out.len() {
        // A hyperlink (OSC 8) whose URL is clean: the name in it must be
        // percent-encoded, so a raw control inside is left to be found.
        if out[i..].starts_with(b"\x1b]8;;") {
            let url = &out[i + 5..];
            if let Some(end) = url.windows(2).position(|w| w == b"\x1b\\") {
                if url[..end].iter().all(|&b| b > 0x20 && b < 0x7f) {
                    i += 5 + end + 2;
                    continue;
                }
            }
        }
        if out[i] == 0x1b && out.get(i + 1) == Some(&b'[') {
            let mut j = i + 2;
            while j < out.len() && (out[j].is_ascii_digit() || out[j] == b';') {
                j += 1;
            }
            if out.get(j) == Some(&b'm') {
                i = j + 1;
                continue;
            }
        }
        v.push(out[i]);
        i += 1;
    }
    v
}

/// Let the child die of SIGINT even where the test runs with SIGINT ignored
/// (a background job of a non-interactive shell, say): an ignored signal
/// stays ignored across exec, and a terminal's foreground job never has it so.
pub fn default_sigint(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: signal(2) is async-signal-safe, as pre_exec requires.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::signal::signal(nix::sys::signal::Signal::SIGINT, nix::sys::signal::SigHandler::SigDfl)
                .map(drop)
                .map_err(std::io::Error::from)
        })
    }
}

/// `cmd.output()`, but a run that hangs is killed and reported (a hang
/// guard, not a timing check: the limit is minutes).
pub fn output_or_hang(cmd: &mut Command, what: &str) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fnd");
    let pid = rustix::process::Pid::from_child(&child);
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let guard = std::thread::spawn(move || {
        if rx.recv_timeout(std::time::Duration::from_secs(180)).is_err() {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            return true;
        }
        false
    });
    let out = child.wait_with_output().expect("wait for fnd");
    let _ = tx.send(());
    assert!(!guard.join().unwrap(), "{what}: fnd hung and was killed");
    out
}
