//! I/O depth: whether a worker's directory reads wait on the file system,
//! and how many may wait at once by default.
//!
//! Offers [`Probe`] (one worker's measure of whether its reads wait on
//! I/O) and [`AUTO_IO_DEPTH`]; the pool that grows on the probe's word is
//! `crate::schedule`'s. Relies on nothing else in this crate: only the
//! clock and the kernel's per-thread counts (`getrusage`).
//!
//! On a hot cache a walk is CPU-bound and wants one worker per core. On a
//! cold cache, a network or FUSE file system, every `openat`, `getdents64`
//! and `fstatat` waits on a device, and the walk goes as fast as the number
//! of requests in flight; a blocked thread has exactly one. So the parallel
//! pool starts with its CPU workers and adds more once reads are seen to
//! wait, up to the I/O depth (measured on a cold 60k-entry tree: 2 workers
//! 0.65x of `fd -j8`, 8 workers 0.46x).
//!
//! How waiting is seen: each worker looks at the wall clock and at its
//! thread's resource usage over a window of back-to-back reads.
//! The reads wait on I/O when they put the thread to sleep (voluntary
//! context switches) at least once every other read *and* more than half of
//! their time was spent off the CPU. Neither alone will do: on a busy
//! machine a hot walk spends most of its time preempted (off the CPU but
//! never asleep), and a worker waiting on a lock sleeps without reading
//! anything. A window where the worker went idle is dropped: sleeping for
//! want of work is not waiting on I/O. Measured on a hot 60k-entry tree the
//! reads sleep once per ~150 directories; cold, once or twice per directory.
//! The cost on a hot walk is a vDSO clock read per 16 directories and one
//! `getrusage` per window of at least a millisecond.

use std::cell::Cell;
use std::time::{Duration, Instant};

thread_local! {
    /// The visitor on this thread blocked on something other than the file
    /// system since the window opened (see [`waited_elsewhere`]).
    static ELSEWHERE: Cell<bool> = const { Cell::new(false) };
}

/// Tell the walk that the calling thread (a worker, inside its visitor)
/// is about to wait, or has waited, on something other than the file
/// system: a full channel to the threads that run commands, a full pipe.
/// Such a wait looks like a read waiting on the disk (the thread sleeps,
/// off the CPU), and a hot walk whose output is slower than its reads
/// would add workers that only wait too (a hot `fnd -X` went from 3 threads
/// to 131). The measure that holds it is dropped instead. Costs a
/// thread-local store; call it only when the wait happens.
pub fn waited_elsewhere() {
    ELSEWHERE.with(|w| w.set(true));
}

/// The coarse monotonic clock: the time of the last tick (1 to 4 ms
/// apart, as the kernel is built), for 5 ns a read where the precise clock
/// takes 22 ns. Only a lapse of a tick or more can be seen with it.
///
/// Through libc, not rustix: rustix finds the vDSO itself and faults
/// under valgrind, whose vDSO it cannot parse (rustix issue 1559); glibc's
/// call is the same vDSO read where there is one.
pub(crate) fn coarse_now() -> Duration {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid timespec to write; the clock exists on every
    // Linux since 2.6.32, and a failure leaves `t` at zero.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Default most reads in flight when the walk finds itself waiting on I/O:
/// the fastest cold listing measured (figures: BENCHMARKS.md, Other
/// measurements, "Cold cache, 2026-11-24"). A hot walk never grows, and added workers take
/// their descriptors only when they start (`Budget::reserve_workers`), so a
/// hot walk pays nothing for the depth.
pub(crate) const AUTO_IO_DEPTH: usize = 128;

/// Reads per measurement window, at least.
const WINDOW_READS: u32 = 16;

/// Wall time per window, at least: keeps the CPU-clock system call rare on
/// a hot cache, where 16 reads take a few tens of microseconds.
const WINDOW_TIME: Duration = Duration::from_millis(1);

/// A worker's view of whether its reads wait on I/O.
pub(crate) struct Probe {
    enabled: bool,
    reads: u32,
    /// When the window opened: the window is read back to back, so its wall
    /// time is the time spent in reads (one clock read per window instead
    /// of two per directory, which took 5% of a hot listing's user time).
    opened: Instant,
    /// The thread's usage when the window opened.
    at_open: Usage,
}

impl Probe {
    /// `enabled` is false when the pool cannot grow: then the probe costs a branch.
    pub(crate) fn new(enabled: bool) -> Self {
        Probe {
            enabled,
            reads: 0,
            opened: Instant::now(),
            at_open: Usage::default(),
        }
    }

    /// Before a read: opens a window if none is open.
    #[inline]
    pub(crate) fn start(&mut self) {
        if self.enabled && self.reads == 0 {
            ELSEWHERE.with(|w| w.set(false));
            self.at_open = Usage::of_thread();
            self.opened = Instant::now();
        }
    }

    /// After a read: true when the window just closed and its reads spent
    /// more than half their time off the CPU.
    #[inline]
    pub(crate) fn finish(&mut self) -> bool {
        if !self.enabled {
            return false;
        }
        self.reads += 1;
        if !self.reads.is_multiple_of(WINDOW_READS) {
            return false;
        }
        let in_reads = self.opened.elapsed();
        if in_reads < WINDOW_TIME {
            return false;
        }
        if ELSEWHERE.with(|w| w.replace(false)) {
            self.idle();
            return false;
        }
        let now = Usage::of_thread();
        let cpu = now.cpu.saturating_sub(self.at_open.cpu);
        let sleeps = now.sleeps.saturating_sub(self.at_open.sleeps);
        let blocked = 2 * sleeps >= u64::from(self.reads) && in_reads.saturating_sub(cpu) > cpu;
        self.idle();
        blocked
    }

    /// The worker found no job: the window would measure sleep, not I/O.
    #[inline]
    pub(crate) fn idle(&mut self) {
        self.reads = 0;
    }

    /// Stop measuring (the pool is as large as it may get).
    pub(crate) fn disable(&mut self) {
        self.enabled = false;
    }
}

/// What the kernel counted for the calling thread.
#[derive(Clone, Copy, Default)]
struct Usage {
    /// User plus system CPU time.
    cpu: Duration,
    /// Voluntary context switches: times the thread went to sleep.
    sleeps: u64,
}

impl Usage {
    fn of_thread() -> Usage {
        // rustix has no getrusage; RUSAGE_THREAD is the only per-thread count
        // of sleeps short of parsing /proc/thread-self/status.
        let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `ru` is a valid rusage to fill; RUSAGE_THREAD cannot fail
        // on Linux, and a zeroed rusage reads as "nothing measured" if it did.
        let ru = unsafe {
            libc::getrusage(libc::RUSAGE_THREAD, ru.as_mut_ptr());
            ru.assume_init()
        };
        let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        Usage {
            cpu: time(ru.ru_utime) + time(ru.ru_stime),
            sleeps: ru.ru_nvcsw as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a probe calls any window of `reads` such reads blocked.
    fn any_window_blocked(reads: u32, read: impl Fn()) -> bool {
        let mut probe = Probe::new(true);
        let mut blocked = false;
        for _ in 0..reads {
            probe.start();
            read();
            blocked |= probe.finish();
        }
        blocked
    }

    #[test]
    fn sleeping_reads_are_io() {
        assert!(any_window_blocked(WINDOW_READS * 2, || std::thread::sleep(
            Duration::from_micros(200)
        )));
    }

    #[test]
    fn waits_elsewhere_are_not_io() {
        assert!(!any_window_blocked(WINDOW_READS * 2, || {
            std::thread::sleep(Duration::from_micros(200));
            waited_elsewhere();
        }));
    }

    #[test]
    fn spinning_reads_are_not_io() {
        let spin = || {
            let start = Instant::now();
            while start.elapsed() < Duration::from_micros(100) {}
        };
        // Preempted, perhaps, but never asleep.
        assert!(!any_window_blocked(WINDOW_READS * 8, spin));
    }
}
