//! I/O depth: how many directory reads may wait on the file system at once.
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

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crossbeam_deque::Worker;

use crate::dir::Job;

/// Default most reads in flight when the walk finds itself waiting on I/O:
/// the fastest cold listing measured (figures: BENCHMARKS.md, Other
/// measurements, "Cold cache, 2026-11-24"). A hot walk never grows, and added
/// workers take their descriptors only when they start
/// (`walker::reserve_worker_fds`), so a hot walk pays nothing for the depth.
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

/// The workers a pool may still add, and how many run.
pub(crate) struct Depth {
    active: AtomicUsize,
    /// Deques of the workers not started yet, the lowest index last.
    spares: Mutex<Vec<(usize, Worker<Job>)>>,
    can_grow: bool,
}

impl Depth {
    /// A pool whose first `active` workers run from the start; `spares` are
    /// the deques (and indices) of those that may be added.
    pub(crate) fn new(active: usize, mut spares: Vec<(usize, Worker<Job>)>) -> Self {
        spares.sort_unstable_by_key(|s| std::cmp::Reverse(s.0));
        Depth {
            active: AtomicUsize::new(active),
            can_grow: !spares.is_empty(),
            spares: Mutex::new(spares),
        }
    }

    /// Whether workers may be added at all.
    pub(crate) fn can_grow(&self) -> bool {
        self.can_grow
    }

    /// Workers started so far (their indices are `0..active`).
    #[inline]
    pub(crate) fn active(&self) -> usize {
        self.active.load(Ordering::Acquire)
    }

    /// The walk waits on I/O: the deques of the workers to start now,
    /// doubling the pool up to its depth (empty once it is there).
    /// `reserve` is asked for that many workers and says how many it could
    /// take (their descriptors); only those are started.
    pub(crate) fn grow(&self, reserve: impl FnOnce(usize) -> usize) -> Vec<(usize, Worker<Job>)> {
        let mut spares = self.spares.lock().unwrap_or_else(|e| e.into_inner());
        let wanted = self.active().min(spares.len());
        let add = if wanted == 0 { 0 } else { reserve(wanted).min(wanted) };
        let start = spares.len() - add;
        let added: Vec<_> = spares.drain(start..).rev().collect();
        self.active.fetch_add(added.len(), Ordering::AcqRel);
        added
    }
}

/// Workers to create for a pool of `threads` CPU workers and this I/O depth.
pub(crate) fn pool_size(threads: usize, io_depth: usize) -> usize {
    threads.max(io_depth)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_by_doubling_up_to_the_depth_and_the_limit() {
        let spares = (2..7).map(|i| (i, Worker::new_lifo())).collect();
        let depth = Depth::new(2, spares);
        assert!(depth.can_grow());
        let indices = |v: Vec<(usize, Worker<Job>)>| v.into_iter().map(|(i, _)| i).collect::<Vec<_>>();
        let all = |n| n;
        assert_eq!(indices(depth.grow(all)), [2, 3]);
        assert_eq!(depth.active(), 4);
        let one = |n| {
            assert_eq!(n, 3, "asks for no more than the spares");
            1
        };
        assert_eq!(indices(depth.grow(one)), [4]);
        assert_eq!(indices(depth.grow(all)), [5, 6]);
        assert_eq!(depth.active(), 7);
        assert!(depth.grow(|_| panic!("nothing left to reserve for")).is_empty());
    }

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

    /// Visitors that sleep in every chunk make every read look blocked: the
    /// pool must grow, and still report each entry exactly once.
    #[test]
    fn a_blocked_walk_grows_and_reports_everything_once() {
        use crate::{Chunk, Flow, Visitor, WalkBuilder};
        use std::collections::HashSet;

        struct Slow(Vec<Vec<u8>>);
        impl Visitor for Slow {
            fn visit(&mut self, chunk: &mut Chunk) -> Flow {
                std::thread::sleep(Duration::from_micros(300));
                for e in chunk.iter() {
                    let mut p = Vec::new();
                    e.write_path(&mut p);
                    self.0.push(p);
                }
                Flow::Continue
            }
        }

        let dir = tempfile::tempdir().unwrap();
        for a in 0..20 {
            for b in 0..10 {
                std::fs::create_dir_all(dir.path().join(format!("{a}/{b}"))).unwrap();
                std::fs::write(dir.path().join(format!("{a}/{b}/f")), "").unwrap();
            }
        }
        let (mut visitors, mut paths) = (0, Vec::new());
        WalkBuilder::new(dir.path()).threads(2).io_depth(8).visit(
            || Slow(Vec::new()),
            |v| {
                visitors += 1;
                paths.extend(v.0);
            },
        );
        let unique: HashSet<_> = paths.iter().collect();
        assert_eq!(paths.len(), 1 + 20 + 200 + 200);
        assert_eq!(unique.len(), paths.len());
        assert!(visitors > 2, "the pool did not grow ({visitors} workers)");
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
