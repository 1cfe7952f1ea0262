//! Scheduling: which directory is read next, and by which thread.
//!
//! Reading is done by `read::Reader`, one directory at a time; this module
//! only orders the jobs. The serial orders keep a queue (breadth-first) or a
//! stack (depth-first). The parallel order gives each worker a LIFO deque of
//! its own (depth-first locally, so few directories are pending and few
//! descriptors open) from which idle workers steal the oldest, largest
//! subtrees. Shallow-first puts new jobs on one shared FIFO queue instead,
//! up to a bounded frontier.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread::Scope;
use std::time::Duration;

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use rustix::thread::CpuSet;

use crate::dir::{Dir, Job};
use crate::io::{Depth, Probe};
use crate::read::Reader;
use crate::walker::{Flow, Order, Shared, Visitor};

fn root_jobs(shared: &Shared) -> impl Iterator<Item = Job> + '_ {
    shared
        .roots
        .iter()
        .enumerate()
        .map(|(i, r)| Job::root(Dir::root_parent(i), r))
}

pub(crate) fn run<V, M, D>(shared: &Shared, make: M, mut done: D)
where
    V: Visitor,
    M: Fn() -> V + Sync,
    D: FnMut(V),
{
    match shared.cfg.order {
        Order::BreadthFirst => done(run_serial(shared, make(), usize::MAX)),
        Order::DepthFirst => done(run_serial(shared, make(), 0)),
        // One worker: the same walk without the pool.
        Order::Parallel if shared.cfg.threads <= 1 => done(run_serial(
            shared,
            make(),
            if shared.cfg.shallow_first { SHALLOW_FRONTIER } else { 0 },
        )),
        Order::Parallel => run_parallel(shared, make, done),
    }
}

/// One thread reads breadth-first while fewer than `frontier` directories
/// are queued, and depth-first below that: `usize::MAX` is breadth-first
/// throughout, 0 depth-first. Within a directory, subdirectories are read
/// in listing order either way.
fn run_serial<V: Visitor>(shared: &Shared, mut visitor: V, frontier: usize) -> V {
    let mut reader = Reader::new();
    let mut shallow: VecDeque<Job> = VecDeque::new();
    let mut deep: Vec<Job> = Vec::new();
    let mut children = Vec::new();
    for root in root_jobs(shared) {
        shallow.push_back(root);
        while let Some(job) = deep.pop().or_else(|| shallow.pop_front()) {
            if reader.read(shared, job, &mut visitor, &mut children, None) == Flow::Stop {
                return visitor;
            }
            if shallow.len() + deep.len() < frontier {
                shallow.extend(children.drain(..));
            } else {
                deep.extend(children.drain(..).rev());
            }
        }
    }
    visitor
}

struct Pool {
    injector: Injector<Job>,
    stealers: Vec<Stealer<Job>>,
    /// Jobs queued or being read; the walk is over when it reaches zero.
    pending: AtomicUsize,
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
    /// Workers running, and those that may be added while reads wait on I/O.
    io: Depth,
    /// Shallow-first: while fewer jobs than this are pending, new ones go
    /// to the shared FIFO `injector`, so all workers read level by level;
    /// past it, onto the finder's LIFO deque (0: always). See `SHALLOW_FRONTIER`.
    shallow_limit: usize,
    /// Where the CPU workers start, when there is one CPU for each.
    placement: Option<Placement>,
}

/// The largest frontier of a shallow-first walk, serial or parallel. Each
/// pending directory keeps its parent's descriptor open; an unbounded
/// frontier (11k directories a level deep in the million tree) overruns the
/// descriptor budget and opens by path, and a whole walk took 1.18x as long
/// as depth-first. Past the bound the walk goes depth-first below the
/// frontier, which costs a whole walk little and finds shallow entries
/// much sooner (figures: BENCHMARKS.md, "The shallow-first frontier",
/// 2026-11-22).
const SHALLOW_FRONTIER: usize = 1024;

impl Pool {
    fn notify(&self, all: bool) {
        if self.sleepers.load(Ordering::Acquire) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            if all {
                self.wake.notify_all();
            } else {
                self.wake.notify_one();
            }
        }
    }

    fn find_job(&self, local: &Worker<Job>, me: usize) -> Option<Job> {
        local.pop().or_else(|| loop {
            let mut retry = false;
            // A batch would make this worker's next reads the frontier's
            // next directories, not the shallowest ones left.
            let from_injector = if self.shallow_limit > 0 {
                self.injector.steal()
            } else {
                self.injector.steal_batch_and_pop(local)
            };
            match from_injector {
                Steal::Success(job) => return Some(job),
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
            let n = self.io.active();
            for k in 1..n {
                match self.stealers[(me + k) % n].steal() {
                    Steal::Success(job) => return Some(job),
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
        })
    }

    fn sleep(&self) {
        let guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.sleepers.fetch_add(1, Ordering::AcqRel);
        // A wake-up can slip in between the failed steal and this wait; the
        // timeout bounds what that costs instead of risking a hang.
        let _ = self.wake.wait_timeout(guard, Duration::from_millis(1));
        self.sleepers.fetch_sub(1, Ordering::AcqRel);
    }
}

fn run_parallel<V, M, D>(shared: &Shared, make: M, mut done: D)
where
    V: Visitor,
    M: Fn() -> V + Sync,
    D: FnMut(V),
{
    let threads = shared.cfg.threads;
    let mut workers: Vec<Worker<Job>> = (0..shared.cfg.io_depth.max(threads))
        .map(|_| Worker::new_lifo())
        .collect();
    let stealers = workers.iter().map(|w| w.stealer()).collect();
    let spares = workers
        .split_off(threads)
        .into_iter()
        .enumerate()
        .map(|(i, w)| (threads + i, w))
        .collect();
    let pool = Pool {
        injector: Injector::new(),
        stealers,
        pending: AtomicUsize::new(shared.roots.len()),
        sleepers: AtomicUsize::new(0),
        lock: Mutex::new(()),
        wake: Condvar::new(),
        io: Depth::new(threads, spares),
        shallow_limit: if shared.cfg.shallow_first { SHALLOW_FRONTIER } else { 0 },
        placement: Placement::new(threads),
    };
    for job in root_jobs(shared) {
        pool.injector.push(job);
    }
    let added = Mutex::new(Vec::new());
    let (pool, make, added_ref) = (&pool, &make, &added);
    std::thread::scope(|scope| {
        // Copied into each worker: it only holds references.
        let grow = move || add_io_workers(scope, shared, pool, make, added_ref);
        let mut workers = workers.into_iter().enumerate();
        let (first_index, first) = workers.next().expect("at least one worker");
        let handles: Vec<_> = workers
            .map(|(me, local)| scope.spawn(move || work(shared, pool, local, me, make(), &grow)))
            .collect();
        // The calling thread is a worker too.
        done(work(shared, pool, first, first_index, make(), &grow));
        for h in handles {
            match h.join() {
                Ok(v) => done(v),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
    added
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .for_each(done);
}

/// The walk waits on I/O: start more workers (see `crate::io`). They hand
/// their visitors to `added` when they finish; the scope joins them.
fn add_io_workers<'scope, 'env, V, M>(
    scope: &'scope Scope<'scope, 'env>,
    shared: &'env Shared,
    pool: &'env Pool,
    make: &'env M,
    added: &'env Mutex<Vec<V>>,
) where
    V: Visitor + 'env,
    M: Fn() -> V + Sync,
{
    for (me, local) in pool.io.grow(|wanted| crate::walker::reserve_worker_fds(shared, wanted)) {
        scope.spawn(move || {
            let grow = || add_io_workers(scope, shared, pool, make, added);
            let visitor = work(shared, pool, local, me, make(), &grow);
            crate::walker::release_worker_fds(shared, 1);
            added.lock().unwrap_or_else(|e| e.into_inner()).push(visitor);
        });
    }
}

fn work<V: Visitor>(shared: &Shared, pool: &Pool, local: Worker<Job>, me: usize, mut visitor: V, grow: &dyn Fn()) -> V {
    let mut probe = Probe::new(pool.io.can_grow());
    // I/O workers (added past the CPU workers) go wherever the kernel puts them.
    let mut pinned = pool
        .placement
        .as_ref()
        .filter(|_| me < shared.cfg.threads)
        .map(|p| p.pin(me));
    let mut reader = Reader::new();
    let mut children = Vec::new();
    let mut idle_spins = 0;
    loop {
        if shared.stopped() {
            while local.pop().is_some() {}
            pool.notify(true);
            break;
        }
        match pool.find_job(&local, me) {
            Some(job) => {
                idle_spins = 0;
                probe.start();
                // Parts of a huge directory go out while it is being read.
                let mut share = |part: Job| {
                    pool.pending.fetch_add(1, Ordering::AcqRel);
                    local.push(part);
                    pool.notify(false);
                };
                let flow = reader.read(shared, job, &mut visitor, &mut children, Some(&mut share));
                let waits_on_io = probe.finish();
                if pinned.as_mut().is_some_and(Pinned::read_one) {
                    pinned = None;
                }
                if flow == Flow::Stop {
                    // A visitor's error() can ask to stop without the reader
                    // having raised the flag; without it the other workers
                    // would wait forever for this job's `pending` count.
                    shared.stop();
                    children.clear();
                    continue;
                }
                let found = children.len();
                if found > 0 {
                    let pending = pool.pending.fetch_add(found, Ordering::AcqRel);
                    if pending < pool.shallow_limit {
                        // Shallow-first: onto the shared frontier, read in the order found.
                        children.drain(..).for_each(|child| pool.injector.push(child));
                    } else {
                        for child in children.drain(..).rev() {
                            local.push(child);
                        }
                    }
                    if found > 1 {
                        pool.notify(false);
                    }
                }
                if pool.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
                    pool.notify(true);
                }
                if waits_on_io {
                    grow();
                    if pool.io.active() >= pool.stealers.len() {
                        probe.disable();
                    }
                }
            }
            None => {
                probe.idle();
                if pool.pending.load(Ordering::Acquire) == 0 {
                    break;
                }
                idle_spins += 1;
                if idle_spins < 32 {
                    std::thread::yield_now();
                } else {
                    pool.sleep();
                }
            }
        }
    }
    // The calling thread is a worker: `pinned` sets it free on the way out.
    visitor
}

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
struct Placement {
    allowed: CpuSet,
    /// The allowed CPUs, the calling thread's first (no move for it).
    cpus: Vec<usize>,
}

impl Placement {
    fn new(threads: usize) -> Option<Placement> {
        let allowed = rustix::thread::sched_getaffinity(None).ok()?;
        let mut cpus: Vec<usize> = (0..CpuSet::MAX_CPU).filter(|&c| allowed.is_set(c)).collect();
        if threads < 2 || threads != cpus.len() {
            return None;
        }
        let here = rustix::thread::sched_getcpu();
        if let Some(i) = cpus.iter().position(|&c| c == here) {
            cpus.rotate_left(i);
        }
        Some(Placement { allowed, cpus })
    }

    /// Pin the calling thread, CPU worker number `me`, to its CPU.
    fn pin(&self, me: usize) -> Pinned<'_> {
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
struct Pinned<'a> {
    placement: &'a Placement,
    dirs_left: u32,
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
