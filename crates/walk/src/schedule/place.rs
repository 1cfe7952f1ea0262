//! Placing a walk's CPU workers one per CPU at the start of a walk (the
//! pool's, and the ordered walk's).

use rustix::thread::CpuSet;

/// Directories a CPU worker reads on the CPU it was placed on before the
/// kernel may move it (about 4 ms on a hot cache).
const PLACED_DIRS: u32 = 512;

/// One CPU each for the pool's CPU workers at the start of a walk. Left to
/// itself, the scheduler often ran both workers of a 2-core machine on one
/// CPU for the first few milliseconds: a walk of the src tree (50 ms) took
/// 7-10% longer than with each worker pinned to a CPU of its own, while a
/// walk of the million tree (0.7 s) took the same either way. The workers
/// are set free after `PLACED_DIRS` directories, which kept the whole
/// gain (as did 5 ms), so a busy CPU holds a worker only briefly. Only when
/// there are as many allowed CPUs as workers: with fewer workers (`-j`),
/// pinning would crowd every process onto the same first CPUs.
pub(crate) struct Placement {
    allowed: CpuSet,
    /// The allowed CPUs, the calling thread's first (no move for it).
    cpus: Vec<usize>,
}

impl Placement {
    pub(crate) fn new(threads: usize) -> Option<Placement> {
        let allowed = rustix::thread::sched_getaffinity(None).ok()?;
        let mut cpus: Vec<usize> = (0..CpuSet::MAX_CPU).filter(|&c| allowed.is_set(c)).collect();
        if threads < 2 || threads != cpus.len() {
            return None;
        }
        // Through libc: rustix's vDSO lookup faults under valgrind (see
        // `io::coarse_now`).
        // SAFETY: no arguments; -1 on failure, which no CPU matches.
        let here = unsafe { libc::sched_getcpu() };
        let here = usize::try_from(here).unwrap_or(usize::MAX);
        if let Some(i) = cpus.iter().position(|&c| c == here) {
            cpus.rotate_left(i);
        }
        Some(Placement { allowed, cpus })
    }

    /// Pin the calling thread, CPU worker number `me`, to its CPU.
    pub(crate) fn pin(&self, me: usize) -> Pinned<'_> {
        let mut one = CpuSet::new();
        one.set(self.cpus[me % self.cpus.len()]);
        // A failure leaves the thread where the kernel put it: no harm.
        let _ = rustix::thread::sched_setaffinity(None, &one);
        Pinned {
            placement: self,
            dirs_left: PLACED_DIRS,
        }
    }
}

/// A worker's stay on its CPU: the thread is set free when this is dropped.
pub(crate) struct Pinned<'a> {
    placement: &'a Placement,
    dirs_left: u32,
}

/// Count a directory read by a worker that may be `pinned`: set free once
/// its stay is over.
pub(crate) fn count_read(pinned: &mut Option<Pinned<'_>>) {
    if pinned.as_mut().is_some_and(Pinned::read_one) {
        *pinned = None;
    }
}

impl Pinned<'_> {
    /// Count a directory read; true when the stay is over.
    fn read_one(&mut self) -> bool {
        self.dirs_left -= 1;
        self.dirs_left == 0
    }
}

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        let _ = rustix::thread::sched_setaffinity(None, &self.placement.allowed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placed_worker_is_pinned_then_set_free() {
        let before = rustix::thread::sched_getaffinity(None).unwrap();
        let cpus = before.count() as usize;
        assert!(Placement::new(1).is_none(), "one worker is never pinned");
        assert!(
            Placement::new(cpus + 1).is_none(),
            "more workers than CPUs are not pinned"
        );
        let Some(placement) = Placement::new(cpus) else {
            assert_eq!(cpus, 1, "one worker per CPU gets placed");
            return;
        };
        let mut pinned = placement.pin(1);
        let set = rustix::thread::sched_getaffinity(None).unwrap();
        assert_eq!(set.count(), 1);
        assert!(set.is_set(placement.cpus[1]));
        assert!(!(1..PLACED_DIRS).any(|_| pinned.read_one()));
        assert!(pinned.read_one(), "set free after PLACED_DIRS directories");
        drop(pinned);
        assert_eq!(rustix::thread::sched_getaffinity(None).unwrap(), before);
    }
}
