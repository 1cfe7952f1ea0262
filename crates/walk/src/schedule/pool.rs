//! The parallel order: a pool of worker threads sharing one walk's
//! directories, beside a [`Remote`] that may share them further.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::thread::Scope;
use std::time::Duration;

use crossbeam_deque::{Injector, Steal, Stealer, Worker};

use super::growth::Depth;
use super::handoff::Handoff;
use super::place::{self, Placement};
use super::SHALLOW_FRONTIER;
use crate::io::Probe;
use crate::read::{Job, Reader};
use crate::settings::Shared;
use crate::visit::{Flow, Visitor};

/// The party a pool shares its walk with: other processes (MPI ranks,
/// say), or a test's double. The pool calls it from its workers; it acts on
/// the pool through [`Pool::give_away`], [`Pool::take_in`] and
/// [`Pool::pending`], and it alone says when the walk is over.
///
/// Both calls may come from several workers at once. A walk stopped here
/// (a visitor's `Flow::Stop`, a panic, the owner's stop flag) ends the
/// pool's workers without asking the remote: telling the other side, and
/// raising the flag (`Shared::stop`) when the other side stops, is the
/// remote's part.
pub(crate) trait Remote: Sync {
    /// Between two directories, on a worker that has just read one (or
    /// found none to read while others still read): the moment to answer
    /// the other side, giving pending directories away or taking in those
    /// received. Called once per directory: it must cost next to nothing
    /// when there is nothing to do. `read` says which of the two it is: a
    /// directory was just read here.
    fn poll(&self, pool: &Pool<'_>, read: bool) {
        let _ = (pool, read);
    }

    /// Nothing is pending in this pool (no directory queued or being read
    /// here: the worker saw `pool.pending() == 0` just before the call; a
    /// remote that takes directories in from other workers' calls must look
    /// again under its own lock, as nothing else adds to a pool at zero).
    /// True ends the pool: the walk is over everywhere, and no directory
    /// will come in any more. False keeps the workers waiting (each asks
    /// again after a nap of at most a millisecond; directories taken in
    /// wake them sooner). Once true, true for good: the pool remembers it.
    fn idle(&self, pool: &Pool<'_>) -> bool;

    /// Whether the pool may add I/O workers now that reads wait. A rank
    /// that walks before its job starts holds off: workers grown then take
    /// every directory it finds into a read at once, and the other ranks,
    /// when they come, find nothing waiting to steal.
    fn may_grow(&self) -> bool {
        true
    }

    /// Runs `workers`, the whole life of the pool's workers: a remote
    /// that acts on the pool from threads of its own (an MPI rank's
    /// transport, answering a steal while every worker is busy) may reach
    /// it only within this call.
    fn attend<T>(&self, pool: &Pool<'_>, workers: impl FnOnce() -> T) -> T {
        let _ = pool;
        workers()
    }
}

/// No one else: the walk is over when nothing is pending here. The thread
/// scheduler is the pool with this remote.
pub(crate) struct Alone;

impl Remote for Alone {
    #[inline]
    fn idle(&self, _: &Pool<'_>) -> bool {
        true
    }
}

/// The state a pool's workers share.
pub(crate) struct Pool<'w> {
    shared: &'w Shared,
    injector: Injector<Job>,
    /// One slot per worker the pool may run, filled as each is added.
    stealers: Box<[OnceLock<Stealer<Job>>]>,
    /// Jobs queued or being read here; the pool is idle when it is zero.
    pending: AtomicUsize,
    /// The remote said the walk is over.
    over: AtomicBool,
    sleepers: AtomicUsize,
    /// Bumped by every wake-up, so that a worker about to nap can tell
    /// whether one came since it last looked for work (see `sleep`).
    epoch: AtomicUsize,
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
/// calling thread is one), until `remote` says the walk is over; `make`
/// makes each worker's visitor and `done` gets it back when the worker
/// ends, on the calling thread.
pub(crate) fn run<V, M, D, R>(shared: &Shared, jobs: Vec<Job>, remote: &R, make: M, mut done: D)
where
    V: Visitor,
    M: Fn() -> V + Sync,
    D: FnMut(V),
    R: Remote,
{
    let settings = &shared.settings;
    let threads = settings.threads.max(1);
    let most = settings.io_depth.max(threads);
    // Deques for the CPU workers now; an added worker makes its own.
    let workers: Vec<Worker<Job>> = (0..threads).map(|_| Worker::new_lifo()).collect();
    let stealers: Box<[OnceLock<Stealer<Job>>]> = (0..most).map(|_| OnceLock::new()).collect();
    for (slot, w) in stealers.iter().zip(&workers) {
        let _ = slot.set(w.stealer());
    }
    let pool = Pool {
        shared,
        injector: Injector::new(),
        stealers,
        pending: AtomicUsize::new(jobs.len()),
        over: AtomicBool::new(false),
        sleepers: AtomicUsize::new(0),
        epoch: AtomicUsize::new(0),
        lock: Mutex::new(()),
        wake: Condvar::new(),
        io: Depth::new(threads, most),
        shallow_limit: if settings.shallow_first { SHALLOW_FRONTIER } else { 0 },
        placement: Placement::new(threads),
    };
    for job in jobs {
        pool.injector.push(job);
    }
    let added = Mutex::new(Vec::new());
    let (pool, make, added_ref) = (&pool, &make, &added);
    remote.attend(pool, || {
        std::thread::scope(|scope| {
            // Copied into each worker: it only holds references.
            let grow = move || add_io_workers(scope, pool, remote, make, added_ref);
            let mut workers = workers.into_iter().enumerate();
            let (first_index, first) = workers.next().expect("at least one worker");
            // A thread that cannot start (`ulimit -u`, a pids cgroup) leaves
            // its share to those that did: the calling thread alone can do
            // the whole walk. Its deque, never filled, is stolen from in vain.
            let handles: Vec<_> = workers
                .map_while(|(me, local)| {
                    let started =
                        crate::budget::start_thread(scope, None, move || work(pool, remote, local, me, make(), &grow));
                    if started.is_none() {
                        pool.io.refuse();
                    }
                    started
                })
                .collect();
            // The calling thread is a worker too.
            done(work(pool, remote, first, first_index, make(), &grow));
            for h in handles {
                match h.join() {
                    Ok(v) => done(v),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
        })
    });
    added
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .for_each(done);
}

impl Pool<'_> {
    /// Jobs queued or being read in this pool.
    #[cfg_attr(not(any(test, feature = "mpi")), allow(dead_code))] // for remotes other than `Alone`
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// Directories waiting for a worker (not those being read).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))] // for remotes other than `Alone`
    pub(crate) fn queued(&self) -> usize {
        let workers = self.io.active().min(self.stealers.len());
        self.injector.len()
            + self.stealers[..workers]
                .iter()
                .filter_map(OnceLock::get)
                .map(Stealer::len)
                .sum::<usize>()
    }

    /// Whether a worker naps for want of a directory while none waits:
    /// the pool could read more than it holds.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))] // for remotes other than `Alone`
    pub(crate) fn hungry(&self) -> bool {
        self.sleepers.load(Ordering::SeqCst) > 0 && self.queued() == 0
    }

    /// Take up to `max` pending directories out of the pool, to be read
    /// elsewhere: the shared frontier's first, then each worker's oldest
    /// (the shallowest, whose subtrees are the largest), in turn. Parts of
    /// a directory being read stay (their descriptor cannot travel), and so
    /// do directories whose parent has filter state the filter cannot
    /// export (see [`Handoff::filter_state`]). What is given is no longer
    /// pending here: the remote answers for it until it is read.
    ///
    /// Any thread may call it, a worker or not (an MPI rank's transport
    /// thread answering a steal while every worker is busy in a huge
    /// directory): it only steals from the deques, as idle workers do, and
    /// pushes back what cannot travel.
    #[cfg_attr(not(any(test, feature = "mpi")), allow(dead_code))] // for remotes other than `Alone`
    pub(crate) fn give_away(&self, max: usize) -> Vec<Handoff> {
        let mut taken = Vec::new();
        while taken.len() < max {
            let Some(job) = steal_one(|| self.injector.steal()) else {
                break;
            };
            taken.push(job);
        }
        let workers = self.io.active();
        let (mut dry, mut next) = (0, 0);
        while taken.len() < max && dry < workers {
            let Some(stealer) = self.stealers[next].get() else {
                dry += 1;
                next = (next + 1) % workers;
                continue;
            };
            match steal_one(|| stealer.steal()) {
                Some(job) => {
                    taken.push(job);
                    dry = 0;
                }
                None => dry += 1,
            }
            next = (next + 1) % workers;
        }
        let mut given = Vec::new();
        for job in taken {
            let kept = match job {
                Job::Open(pending) => match Handoff::export(pending, self.shared) {
                    Ok(handoff) => {
                        given.push(handoff);
                        continue;
                    }
                    Err(pending) => Job::Open(pending),
                },
                other => other,
            };
            self.injector.push(kept);
        }
        if !given.is_empty() {
            self.pending.fetch_sub(given.len(), Ordering::AcqRel);
        }
        given
    }

    /// Add directories received from elsewhere; they are pending here from
    /// now on, and idle workers wake up to read them. Any thread may call
    /// it. Returns why the first refused one was refused, if any was (not
    /// of this walk: a root index it does not have, a path that does not
    /// lie under its root, a chain of the wrong length, filter state the
    /// filter does not take); the others are taken in all the same.
    #[cfg_attr(not(any(test, feature = "mpi")), allow(dead_code))] // for remotes other than `Alone`
    pub(crate) fn take_in(&self, handoffs: impl IntoIterator<Item = Handoff>) -> Option<String> {
        let mut refused = None;
        let jobs: Vec<Job> = handoffs
            .into_iter()
            .filter_map(|h| match h.into_job(self.shared) {
                Ok(job) => Some(job),
                Err(why) => {
                    refused.get_or_insert(why);
                    None
                }
            })
            .collect();
        if !jobs.is_empty() {
            self.pending.fetch_add(jobs.len(), Ordering::AcqRel);
            jobs.into_iter().for_each(|job| self.injector.push(job));
            self.notify(true);
        }
        refused
    }

    /// Wake the workers that nap, so that they look for directories (and
    /// ask the remote) at once. Any thread may call it.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))] // for remotes other than `Alone`
    pub(crate) fn wake(&self) {
        self.notify(true);
    }

    fn notify(&self, all: bool) {
        // Sequentially consistent with `sleep`: either the napper sees the
        // new epoch, or this sees it counted among the sleepers.
        self.epoch.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
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
                let Some(stealer) = self.stealers[(me + k) % n].get() else {
                    continue;
                };
                match stealer.steal() {
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

    /// Nothing is pending here: is the walk over? Asks the remote, once
    /// per idle round, until it says so.
    fn over<R: Remote>(&self, remote: &R) -> bool {
        if self.over.load(Ordering::Acquire) {
            return true;
        }
        if remote.idle(self) {
            self.over.store(true, Ordering::Release);
            self.notify(true);
            return true;
        }
        false
    }

    /// Nap until woken, unless a wake-up came since `seen` (the epoch read
    /// before this worker last looked for work): then none is lost, and the
    /// nap needs no short timeout. The timeout left grows with `naps`, up to
    /// 64 ms, as a safety net only: with a 1 ms timeout the 128 workers of a
    /// walk on a slow mount woke 128,000 times a second while they waited,
    /// and `fdu -s` through a 4 ms FUSE mount used 2.2 s of CPU in a 5.1 s walk.
    fn sleep(&self, seen: usize, naps: u32) {
        let guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        if self.epoch.load(Ordering::SeqCst) == seen {
            let _ = self.wake.wait_timeout(guard, Duration::from_millis(1 << naps.min(6)));
        } else {
            drop(guard);
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One job from `steal`, retrying while it says to; `None` when empty.
fn steal_one(steal: impl Fn() -> Steal<Job>) -> Option<Job> {
    loop {
        match steal() {
            Steal::Success(job) => return Some(job),
            Steal::Empty => return None,
            Steal::Retry => {}
        }
    }
}

/// The walk waits on I/O: start more workers (see `crate::io`). They hand
/// their visitors to `added` when they finish; the scope joins them.
fn add_io_workers<'scope, 'env, V, M, R>(
    scope: &'scope Scope<'scope, 'env>,
    pool: &'env Pool<'env>,
    remote: &'env R,
    make: &'env M,
    added: &'env Mutex<Vec<V>>,
) where
    V: Visitor + 'env,
    M: Fn() -> V + Sync,
    R: Remote,
{
    let budget = &pool.shared.budget;
    let added_now = pool.io.grow(|wanted| budget.reserve_workers(wanted));
    let last = added_now.end;
    for me in added_now {
        let local = Worker::new_lifo();
        let _ = pool.stealers[me].set(local.stealer());
        let started = crate::budget::start_thread(scope, Some(crate::budget::IO_WORKER_STACK), move || {
            let grow = || add_io_workers(scope, pool, remote, make, added);
            let visitor = work(pool, remote, local, me, make(), &grow);
            budget.release_workers(1);
            added.lock().unwrap_or_else(|e| e.into_inner()).push(visitor);
        });
        if started.is_none() {
            // The walk goes on with the workers it has; this one's deque
            // stays empty, and the descriptors kept for the rest go back.
            pool.io.refuse();
            budget.release_workers(last - me);
            return;
        }
    }
}

/// One worker: read jobs (its own first, then stolen) until the walk ends.
fn work<V: Visitor, R: Remote>(
    pool: &Pool<'_>,
    remote: &R,
    local: Worker<Job>,
    me: usize,
    mut visitor: V,
    grow: &dyn Fn(),
) -> V {
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
        let seen = pool.epoch.load(Ordering::SeqCst);
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
                // A directory handed over whole is not cut.
                let share = (!shared.settings.whole()).then_some(&mut share as &mut dyn crate::read::Caller);
                let flow = reader.read(shared, job, &mut visitor, &mut children, share);
                let waits_on_io = probe.finish();
                place::count_read(&mut pinned);
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
                remote.poll(pool, true);
                if waits_on_io && remote.may_grow() {
                    grow();
                    if !pool.io.can_grow() {
                        probe.disable();
                    }
                }
            }
            None => {
                probe.idle();
                if pool.pending.load(Ordering::Acquire) == 0 {
                    if pool.over(remote) {
                        break;
                    }
                } else {
                    remote.poll(pool, false);
                }
                idle_spins += 1;
                if idle_spins < 32 {
                    std::thread::yield_now();
                } else {
                    pool.sleep(seen, idle_spins - 32);
                }
            }
        }
    }
    // The calling thread is a worker: `pinned` sets it free on the way out.
    visitor
}
