//! Signals arriving while directories are read lose no entry. Linux ends a
//! `getdents64` call early, with the records it has so far, when a signal
//! is pending: a child's exit (`fnd -x`), a stop and `fg`, a profiler's
//! timer. (Its own test binary: it installs a handler for the process.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fnd_walk::{Order, WalkBuilder};

/// Enough directories that each reader trusts end marks on local file
/// systems (it asks only after 64).
const DIRS: usize = 400;
const FILES: usize = 40;

extern "C" fn ignore(_: libc::c_int) {}

#[test]
fn signals_during_a_walk_lose_no_entry() {
    let tree = tempfile::tempdir().unwrap();
    for d in 0..DIRS {
        let dir = tree.path().join(format!("d{d}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..FILES {
            std::fs::write(dir.join(format!("file-{f:04}")), "").unwrap();
        }
    }
    let expected = DIRS * (FILES + 1);
    // SAFETY: a handler that does nothing, installed before the signalling
    // thread starts.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = ignore as *const () as usize;
        action.sa_flags = libc::SA_RESTART;
        assert_eq!(libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut()), 0);
    }
    let done = Arc::new(AtomicBool::new(false));
    let signals = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut sent = 0u64;
            while !done.load(Ordering::Relaxed) {
                // Every thread, the walk's among them: a signal sent to the
                // process goes to whichever thread is idle.
                for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
                    let tid: libc::pid_t = task.file_name().to_str().unwrap().parse().unwrap();
                    // SAFETY: tgkill(2) of a thread of this process with a
                    // handled signal.
                    unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, libc::SIGUSR1) };
                    sent += 1;
                }
            }
            sent
        })
    };
    for round in 0..20 {
        for order in [Order::Parallel, Order::DepthFirst, Order::BreadthFirst] {
            let found = WalkBuilder::new(tree.path())
                .order(order)
                .min_depth(1)
                .chunks()
                .map(|chunk| chunk.unwrap().len())
                .sum::<usize>();
            assert_eq!(found, expected, "round {round}, {order:?}");
        }
    }
    done.store(true, Ordering::Relaxed);
    assert!(signals.join().unwrap() > 0);
}
