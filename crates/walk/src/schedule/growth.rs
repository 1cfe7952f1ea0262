//! How many workers a pool runs: its CPU workers from the start, more
//! while its reads wait on I/O (see `crate::io`), up to the I/O depth.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// The workers a pool may still add, and how many run.
pub(super) struct Depth {
    active: AtomicUsize,
    /// Index of the next worker to add: workers are numbered in the order
    /// they are added, and each gets its deque only then, so a depth asked
    /// for but never reached costs nothing.
    next: Mutex<usize>,
    /// Most workers the pool may run.
    most: usize,
    /// A thread could not be started (`ulimit -u`, a pids cgroup, address
    /// space): the pool goes on with the workers it has.
    refused: AtomicBool,
}

impl Depth {
    /// A pool whose first `active` workers run from the start, and which may
    /// grow to `most`.
    pub(super) fn new(active: usize, most: usize) -> Self {
        Depth {
            active: AtomicUsize::new(active),
            next: Mutex::new(active),
            most: most.max(active),
            refused: AtomicBool::new(false),
        }
    }

    /// Whether workers may (still) be added.
    pub(super) fn can_grow(&self) -> bool {
        !self.refused.load(Ordering::Relaxed) && *self.next.lock().unwrap_or_else(|e| e.into_inner()) < self.most
    }

    /// Workers counted so far (their indices are `0..active`; a worker
    /// whose thread could not start is counted, with a deque that stays
    /// empty).
    #[inline]
    pub(super) fn active(&self) -> usize {
        self.active.load(Ordering::Acquire)
    }

    /// The walk waits on I/O: the indices of the workers to start now,
    /// doubling the pool up to its depth (empty once it is there, or once a
    /// thread was refused). `reserve` is asked for that many workers and
    /// says how many it could take (their descriptors); only those are
    /// started.
    pub(super) fn grow(&self, reserve: impl FnOnce(usize) -> usize) -> Range<usize> {
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        if self.refused.load(Ordering::Relaxed) {
            return *next..*next;
        }
        let wanted = self.active().min(self.most - *next);
        let add = if wanted == 0 { 0 } else { reserve(wanted).min(wanted) };
        let added = *next..*next + add;
        *next += add;
        self.active.fetch_add(add, Ordering::AcqRel);
        added
    }

    /// A worker's thread could not be started: add no more.
    pub(super) fn refuse(&self) {
        self.refused.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_by_doubling_up_to_the_depth_and_the_limit() {
        let depth = Depth::new(2, 7);
        assert!(depth.can_grow());
        let all = |n| n;
        assert_eq!(depth.grow(all), 2..4);
        assert_eq!(depth.active(), 4);
        let one = |n| {
            assert_eq!(n, 3, "asks for no more than the spares");
            1
        };
        assert_eq!(depth.grow(one), 4..5);
        assert_eq!(depth.grow(all), 5..7);
        assert_eq!(depth.active(), 7);
        assert!(!depth.can_grow());
        assert!(depth.grow(|_| panic!("nothing left to reserve for")).is_empty());
    }

    #[test]
    fn a_refused_thread_stops_the_growth() {
        let depth = Depth::new(1, 100);
        assert_eq!(depth.grow(|n| n), 1..2);
        depth.refuse();
        assert!(!depth.can_grow());
        assert!(depth.grow(|_| panic!("no reserve once refused")).is_empty());
        assert_eq!(depth.active(), 2);
    }
}
