//! The parallel order: a pool of worker threads sharing one walk's
//! directories.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::thread::Scope;
use std::time::Duration;

use crossbeam_deque::{Injector, Steal, Stealer, Worker};

use super::growth::Depth;
use super::place::{Pinned, Placement};
use super::SHALLOW_FRONTIER;
use crate::io::Probe;
use crate::read::{Job, Reader};
use crate::settings::Shared;
use crate::visit::{Flow, Visitor};

/// The state a pool's workers share.
pub(crate) struct Pool<'w> {
    shared: &'w Shared,
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

/// Run `jobs` and every job they lead to with a pool of workers (the
/// calling thread is one); `make` makes each worker's visitor and `done`
/// gets it back when the worker ends, on the calling thread.
pub(crate) fn run<V, M, D>(shared: &Shared, jobs: Vec<Job>, make: M, mut done: D)
where
    V: Visitor,
    M: Fn() -> V + Sync,
    D: FnMut(V),
{
    let settings = &shared.settings;
    let threads = settings.threads.max(1);
    let mut workers: Vec<Worker<Job>> = (0..settings.io_depth.max(threads))
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
        shared,
        injector: Injector::new(),
        stealers,
        pending: AtomicUsize::new(jobs.len()),
        sleepers: AtomicUsize::new(0),
        lock: Mutex::new(()),
        wake: Condvar::new(),
        io: Depth::new(threads, spares),
        shallow_limit: if settings.shallow_first { SHALLOW_FRONTIER } else { 0 },
        placement: Placement::new(threads),
    };
    for job in jobs {
        pool.injector.push(job);
    }
    let added = Mutex::new(Vec::new());
    let (pool, make, added_ref) = (&pool, &make, &added);
    std::thread::scope(|scope| {
        // Copied into each worker: it only holds references.
        let grow = move || add_io_workers(scope, pool, make, added_ref);
        let mut workers = workers.into_iter().enumerate();
        let (first_index, first) = workers.next().expect("at least one worker");
        let handles: Vec<_> = workers
            .map(|(me, local)| scope.spawn(move || work(pool, local, me, make(), &grow)))
            .collect();
        // The calling thread is a worker too.
        done(work(pool, first, first_index, make(), &grow));
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

impl Pool<'_> {
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

/// The walk waits on I/O: start more workers (see `crate::io`). They hand
/// their visitors to `added` when they finish; the scope joins them.
fn add_io_workers<'scope, 'env, V, M>(
    scope: &'scope Scope<'scope, 'env>,
    pool: &'env Pool<'env>,
    make: &'env M,
    added: &'env Mutex<Vec<V>>,
) where
    V: Visitor + 'env,
    M: Fn() -> V + Sync,
{
    let budget = &pool.shared.budget;
    for (me, local) in pool.io.grow(|wanted| budget.reserve_workers(wanted)) {
        scope.spawn(move || {
            let grow = || add_io_workers(scope, pool, make, added);
            let visitor = work(pool, local, me, make(), &grow);
            budget.release_workers(1);
            added.lock().unwrap_or_else(|e| e.into_inner()).push(visitor);
        });
    }
}

/// One worker: read jobs (its own first, then stolen) until the walk ends.
fn work<V: Visitor>(pool: &Pool<'_>, local: Worker<Job>, me: usize, mut visitor: V, grow: &dyn Fn()) -> V {
    let shared = pool.shared;
    let mut probe = Probe::new(pool.io.can_grow());
    // I/O workers (added past the CPU workers) go wherever the kernel puts them.
    let mut pinned = pool
        .placement
        .as_ref()
        .filter(|_| me < shared.settings.threads)
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
