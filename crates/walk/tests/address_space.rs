//! Under `ulimit -v`, a thread started at the edge of the address space
//! runs, or is refused at `spawn`: it never dies as it starts, where std
//! would map its signal stack, panic, and then wait forever on its own
//! lock (see `fnd_walk::skip_signal_stacks_under_limit`).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// As fnd and fdu do: before Rust's runtime starts.
#[used]
#[link_section = ".init_array"]
static SKIP_SIGNAL_STACKS: extern "C" fn() = fnd_walk::skip_signal_stacks_under_limit;

const TEST: &str = "a_thread_at_the_edge_of_the_address_space_runs_or_is_refused";
/// Bytes of address space left free when the child starts its thread.
const LEFT: &str = "FND_TEST_ADDRESS_SPACE_LEFT";
const STACK: usize = 2 << 20;

#[test]
fn a_thread_at_the_edge_of_the_address_space_runs_or_is_refused() {
    if let Ok(left) = std::env::var(LEFT) {
        start_a_thread_with(left.parse().expect("a number of bytes"));
        return;
    }
    // Left free: from less than the thread's stack to its stack, guard
    // page and a signal stack of any size std would map (up to 64 KiB).
    for left_kib in (2040..2200).step_by(4) {
        let mut child = Command::new(std::env::current_exe().unwrap());
        child
            .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
            .env(LEFT, (left_kib * 1024).to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        fnd_test_support::process::limit_address_space(&mut child, 1 << 30);
        let mut child = child.spawn().expect("the test binary starts");
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > Duration::from_secs(30) {
                child.kill().unwrap();
                child.wait().unwrap();
                panic!("with {left_kib} KiB left, the child waited forever");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let mut out = String::new();
        let mut err = String::new();
        child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert!(status.success(), "with {left_kib} KiB left: {status}\n{out}\n{err}");
        assert!(!err.contains("panicked"), "with {left_kib} KiB left:\n{err}");
        assert!(
            out.contains("thread ran") || out.contains("thread refused"),
            "with {left_kib} KiB left:\n{out}"
        );
    }
}

/// In the child: fill the address space up to `left` bytes short of the
/// limit, then start a thread with a stack of [`STACK`].
fn start_a_thread_with(left: usize) {
    fnd_walk::fit_address_space();
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) }, 0);
    let ballast = (limit.rlim_cur as usize).saturating_sub(mapped_now() + left);
    // SAFETY: a fresh mapping of no access, never touched, kept to the end.
    let at = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            ballast,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    assert_ne!(at, libc::MAP_FAILED, "ballast of {ballast} bytes");
    let (tell, told) = std::sync::mpsc::channel();
    match std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(move || tell.send(()).unwrap())
    {
        Ok(thread) => {
            told.recv().expect("the thread ran");
            thread.join().unwrap();
            println!("thread ran");
        }
        Err(_) => println!("thread refused"),
    }
}

/// The process's address space now, in bytes.
fn mapped_now() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmSize:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * 1024
}
