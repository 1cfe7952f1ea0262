//! The ordered walk's jobs waiting to be read, greatest (earliest in the
//! output) first, as a stack of runs instead of a binary heap.
//!
//! Each directory read queues its subdirectories at once, in order, and
//! the jobs of two directories never interleave in the output: a job
//! queued later by a directory read after it comes either before all of
//! another run's jobs (it lies in the subtree of one already taken) or
//! after all of them. So the jobs waiting are a few runs, each in order,
//! sorted among themselves by their first job; the greatest is the top
//! run's last. A push finds its run's place from the top (the run just
//! read nearly always goes on top: the workers take jobs in output order)
//! and a pop takes the top run's last: no sifting through a heap of
//! thousands, whose compares read lines the other workers wrote last (a
//! tenth of a sorted walk's user time on /usr, with the two cores far
//! apart).
//!
//! Each run remembers who queued it, and a worker may take the earliest of
//! its own runs instead of the earliest of all. A run is still taken from
//! its front, whoever takes it, so runs never come to interleave.

/// Emptied runs kept for the next pushes, at most.
const SPARE_RUNS: usize = 64;

/// Jobs in runs, popped greatest first (as [`std::collections::BinaryHeap`]),
/// for runs that never interleave (see the module's text).
pub(super) struct Frontier<T> {
    /// Each run ascending (its greatest last) with who queued it (one
    /// buffer for both: a pop reads one line fewer); the runs sorted by their
    /// greatest, the greatest of all on top (last). No run is empty.
    runs: Vec<(usize, Vec<T>)>,
    /// Emptied runs, their room kept.
    spare: Vec<Vec<T>>,
}

impl<T: Ord> Frontier<T> {
    pub(super) fn new() -> Self {
        Frontier {
            runs: Vec::new(),
            spare: Vec::new(),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The greatest job.
    pub(super) fn peek(&self) -> Option<&T> {
        self.runs.last().and_then(|(_, run)| run.last())
    }

    /// Take the greatest job.
    pub(super) fn pop(&mut self) -> Option<T> {
        let top = self.runs.len().checked_sub(1)?;
        self.pop_at(top)
    }

    /// Take the greatest job of the runs `owner` queued, if any.
    pub(super) fn pop_own(&mut self, owner: usize) -> Option<T> {
        let at = self.runs.iter().rposition(|&(o, _)| o == owner)?;
        self.pop_at(at)
    }

    fn pop_at(&mut self, at: usize) -> Option<T> {
        let run = &mut self.runs[at].1;
        let job = run.pop();
        if run.is_empty() {
            let (_, run) = self.runs.remove(at);
            self.keep(run);
        }
        job
    }

    /// Queue one job, a run of its own.
    pub(super) fn push(&mut self, job: T, owner: usize) {
        let mut run = self.spare.pop().unwrap_or_default();
        run.push(job);
        self.insert(run, owner);
    }

    /// Queue the jobs of `run`, given greatest first, which must not
    /// interleave with any run waiting. `run` is left empty, with room.
    pub(super) fn push_run(&mut self, run: &mut Vec<T>, owner: usize) {
        if run.is_empty() {
            return;
        }
        debug_assert!(run.windows(2).all(|w| w[0] > w[1]), "a run comes in order");
        let mut taken = self.spare.pop().unwrap_or_default();
        std::mem::swap(run, &mut taken);
        taken.reverse();
        self.insert(taken, owner);
    }

    /// Drop every job.
    pub(super) fn clear(&mut self) {
        while let Some((_, mut run)) = self.runs.pop() {
            run.clear();
            self.keep(run);
        }
    }

    /// Put `run` (ascending, not empty) where its greatest sorts.
    fn insert(&mut self, run: Vec<T>, owner: usize) {
        let head = run.last().expect("no empty run");
        let mut at = self.runs.len();
        while at > 0 && self.runs[at - 1].1.last().expect("no empty run") > head {
            at -= 1;
        }
        debug_assert!(
            at == 0 || self.runs[at - 1].1.last() < run.first(),
            "a run below is wholly less"
        );
        debug_assert!(
            at == self.runs.len() || self.runs[at].1.first() > run.last(),
            "a run above is wholly greater"
        );
        self.runs.insert(at, (owner, run));
    }

    fn keep(&mut self, run: Vec<T>) {
        if self.spare.len() < SPARE_RUNS && run.capacity() <= 64 {
            self.spare.push(run);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BinaryHeap;

    /// A walk of a tree of places (each a path of ranks, as the ordered
    /// walk's keys), the greatest the earliest in preorder: reads taken
    /// from the frontier finish out of order (`lag` reads in flight), each
    /// queueing its children as one run. The frontier pops what a heap of
    /// the same jobs pops.
    #[derive(Clone, PartialEq, Eq, Debug)]
    struct Place(Vec<u32>);

    impl Ord for Place {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            // Reversed: earlier in preorder is greater.
            other.0.cmp(&self.0)
        }
    }
    impl PartialOrd for Place {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }

    fn children(p: &Place, seed: u64) -> usize {
        let h = p.0.iter().fold(seed, |h, &r| {
            h.wrapping_mul(6364136223846793005).wrapping_add(u64::from(r) + 1)
        });
        if p.0.len() >= 5 {
            0
        } else {
            ((h >> 33) % 5) as usize
        }
    }

    fn walk(lag: usize, seed: u64) -> (Vec<Place>, Vec<Place>) {
        let mut frontier = Frontier::new();
        let mut heap = BinaryHeap::new();
        let root = Place(vec![0]);
        frontier.push(root.clone(), 0);
        heap.push(root);
        let (mut in_flight, mut from_heap) = (Vec::new(), Vec::new());
        let mut order = Vec::new();
        let mut run = Vec::new();
        let mut turn = seed;
        loop {
            while in_flight.len() < lag {
                let Some(p) = frontier.pop() else { break };
                assert_eq!(Some(&p), heap.pop().as_ref(), "the frontier pops what the heap pops");
                order.push(p.clone());
                in_flight.push(p);
            }
            if in_flight.is_empty() {
                break;
            }
            turn = turn.wrapping_mul(2862933555777685213).wrapping_add(3);
            let done = in_flight.remove((turn >> 40) as usize % in_flight.len());
            for rank in 0..children(&done, seed) {
                let mut c = done.0.clone();
                c.push(rank as u32);
                run.push(Place(c.clone()));
                heap.push(Place(c));
            }
            frontier.push_run(&mut run, 0);
            from_heap.push(done);
        }
        assert!(frontier.is_empty() && heap.is_empty());
        (order, from_heap)
    }

    #[test]
    fn pops_what_a_heap_pops_whatever_order_reads_end_in() {
        for seed in 0..40 {
            for lag in [1, 2, 3, 8] {
                let (order, _) = walk(lag, seed);
                assert!(!order.is_empty());
            }
        }
    }

    #[test]
    fn an_owner_takes_its_own_first_and_the_rest_stays_in_order() {
        let mut f = Frontier::new();
        let p = |v: &[u32]| Place(v.to_vec());
        // 0 queued [0,1] and [0,2]; 1 read [0,1] and queued its children.
        f.push_run(&mut vec![p(&[0, 1]), p(&[0, 2])], 0);
        assert_eq!(f.pop_own(0), Some(p(&[0, 1])));
        f.push_run(&mut vec![p(&[0, 1, 0]), p(&[0, 1, 1])], 1);
        f.push(p(&[0, 3]), 0);
        assert_eq!(f.pop_own(0), Some(p(&[0, 2])));
        assert_eq!(f.pop_own(1), Some(p(&[0, 1, 0])));
        assert_eq!(f.pop_own(2), None);
        let rest: Vec<Place> = std::iter::from_fn(|| f.pop()).collect();
        assert_eq!(rest, [p(&[0, 1, 1]), p(&[0, 3])]);
    }

    #[test]
    fn one_job_alone_and_clear() {
        let mut f = Frontier::new();
        let mut run = vec![Place(vec![0, 1]), Place(vec![0, 2])];
        f.push_run(&mut run, 0);
        assert!(run.is_empty());
        f.push(Place(vec![0, 0]), 0);
        assert_eq!(f.peek(), Some(&Place(vec![0, 0])));
        assert_eq!(f.pop(), Some(Place(vec![0, 0])));
        assert_eq!(f.pop(), Some(Place(vec![0, 1])));
        f.clear();
        assert!(f.is_empty() && f.pop().is_none());
    }
}
