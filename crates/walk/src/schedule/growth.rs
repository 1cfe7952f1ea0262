//! How many workers a pool runs: its CPU workers from the start, more
//! while its reads wait on I/O (see `crate::io`), up to the I/O depth.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crossbeam_deque::Worker;

use crate::read::Job;

/// The workers a pool may still add, and how many run.
pub(super) struct Depth {
    active: AtomicUsize,
    /// Deques of the workers not started yet, the lowest index last.
    spares: Mutex<Vec<(usize, Worker<Job>)>>,
    can_grow: bool,
}

impl Depth {
    /// A pool whose first `active` workers run from the start; `spares` are
    /// the deques (and indices) of those that may be added.
    pub(super) fn new(active: usize, mut spares: Vec<(usize, Worker<Job>)>) -> Self {
        spares.sort_unstable_by_key(|s| std::cmp::Reverse(s.0));
        Depth {
            active: AtomicUsize::new(active),
            can_grow: !spares.is_empty(),
            spares: Mutex::new(spares),
        }
    }

    /// Whether workers may be added at all.
    pub(super) fn can_grow(&self) -> bool {
        self.can_grow
    }

    /// Workers started so far (their indices are `0..active`).
    #[inline]
    pub(super) fn active(&self) -> usize {
        self.active.load(Ordering::Acquire)
    }

    /// The walk waits on I/O: the deques of the workers to start now,
    /// doubling the pool up to its depth (empty once it is there).
    /// `reserve` is asked for that many workers and says how many it could
    /// take (their descriptors); only those are started.
    pub(super) fn grow(&self, reserve: impl FnOnce(usize) -> usize) -> Vec<(usize, Worker<Job>)> {
        let mut spares = self.spares.lock().unwrap_or_else(|e| e.into_inner());
        let wanted = self.active().min(spares.len());
        let add = if wanted == 0 { 0 } else { reserve(wanted).min(wanted) };
        let start = spares.len() - add;
        let added: Vec<_> = spares.drain(start..).rev().collect();
        self.active.fetch_add(added.len(), Ordering::AcqRel);
        added
    }
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
}
