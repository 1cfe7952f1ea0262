//! Running a command to its end with a deadline: for jobs that may hang
//! (`mpirun` waiting for a rank that will never answer), whose output can
//! be larger than a pipe holds.

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Run `cmd` (stdin empty, stdout and stderr captured in full) and wait
/// for it; kill it and panic, naming it `what`, past `limit`. A program
/// that panicked fails the test whatever its status.
pub fn run_to_end(cmd: Command, what: &str, limit: Duration) -> Output {
    let out = run_within(cmd, what, limit);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!text.contains("panicked"), "{what}: {text}");
    out
}

/// [`run_to_end`], a panic of the program allowed (a test of what a panic
/// does).
pub fn run_within(mut cmd: Command, what: &str, limit: Duration) -> Output {
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
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// The pid of rank `rank` among the children of an Open MPI launcher
/// (found by its `OMPI_COMM_WORLD_RANK`).
pub fn rank_pid(launcher: u32, rank: usize) -> Option<u32> {
    let children = std::fs::read_to_string(format!("/proc/{launcher}/task/{launcher}/children")).ok()?;
    let wanted = format!("OMPI_COMM_WORLD_RANK={rank}");
    children.split_whitespace().find_map(|pid| {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        environ
            .split(|&b| b == 0)
            .any(|v| v == wanted.as_bytes())
            .then(|| pid.parse().ok())
            .flatten()
    })
}

/// Start `mpirun` (`cmd`, with at least two ranks), kill rank 1 with
/// SIGKILL half a second after it starts, and return how the job ended
/// (panics if it runs on for a minute).
pub fn job_after_rank_1_dies(mut cmd: Command) -> std::process::ExitStatus {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("mpirun (apt-get install openmpi-bin)");
    let deadline = Instant::now() + Duration::from_secs(60);
    let victim = loop {
        if let Some(pid) = rank_pid(child.id(), 1) {
            break pid;
        }
        assert!(Instant::now() < deadline, "rank 1 never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    // Let it get going, then kill it.
    std::thread::sleep(Duration::from_millis(500));
    let victim = rustix::process::Pid::from_raw(victim as i32).expect("a pid");
    rustix::process::kill_process(victim, rustix::process::Signal::KILL).expect("kill rank 1");
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the job went on after rank 1 died");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Hold the process `cmd` starts to `bytes` of address space (`ulimit -v`,
/// the hard limit left as it is), set between fork and exec.
pub fn limit_address_space(cmd: &mut Command, bytes: u64) {
    use rustix::process::{setrlimit, Resource, Rlimit};
    use std::os::unix::process::CommandExt;
    // SAFETY: one setrlimit call between fork and exec: no allocation, no lock.
    unsafe {
        cmd.pre_exec(move || {
            let hard = rustix::process::getrlimit(Resource::As).maximum;
            let limit = Rlimit {
                current: Some(bytes),
                maximum: hard,
            };
            setrlimit(Resource::As, limit).map_err(std::io::Error::from)
        });
    }
}
