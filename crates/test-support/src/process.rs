//! Running a command to its end with a deadline: for jobs that may hang
//! (`mpirun` waiting for a rank that will never answer), whose output can
//! be larger than a pipe holds.

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Run `cmd` (stdin empty, stdout and stderr captured in full) and wait
/// for it; kill it and panic, naming it `what`, past `limit`. A program
/// that panicked fails the test whatever its status.
pub fn run_to_end(mut cmd: Command, what: &str, limit: Duration) -> Output {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            r.read_to_end(&mut v).unwrap();
            v
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} still running after {} s", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!text.contains("panicked"), "{what}: {text}");
    out
}
