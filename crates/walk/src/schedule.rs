//! Scheduling: which directory is read next, and by which thread.
//!
//! Offers [`run`], the one entry the builder calls: it runs a walk's jobs
//! to the end with one visitor per thread. Reading is the reader's
//! (`crate::read`), one job at a time; this module only orders the jobs and
//! hands them out. Relies on `read` for [`Reader`](crate::read::Reader) and
//! [`Job`], on the contracts (`settings`, `visit`) for what a walk is and
//! who consumes it, on `dir` to describe pending directories, on `budget`
//! for added workers' descriptors and on `io` for the probe that says reads
//! wait.
//!
//! * `serial`: the serial orders, on the calling thread: a queue
//!   (breadth-first), a stack (depth-first), or both (a bounded frontier).
//! * `pool`: the parallel order. Each worker has a LIFO deque of its own
//!   (depth-first locally, so few directories are pending and few
//!   descriptors open) from which idle workers steal the oldest, largest
//!   subtrees; shallow-first puts new jobs on one shared FIFO queue instead,
//!   up to a bounded frontier. Workers are added while reads wait on I/O,
//!   and placed one per CPU at the start.
//!
//! # Where another scheduler plugs in
//!
//! The pool (`pool::run`) runs beside a `pool::Remote`: a party that
//! shares the walk with it, consulted between directories (`poll`) and
//! when the pool is idle (`idle`), and that alone decides when the walk
//! ends. The thread scheduler is the pool with `pool::Alone`, which ends
//! the walk when nothing is pending here. A scheduler that spreads one walk
//! over several processes (MPI) is the same pool with a remote of its own
//! (a module beside `pool`), which gives pending directories away
//! (`Pool::give_away`, oldest first) and adds the ones it receives
//! (`Pool::take_in`) as `handoff::Handoff`s: a pending directory as plain
//! data, rebuilt into a job in the other process. `ranks` (feature `mpi`)
//! is that scheduler: one walk over the ranks of an MPI job. `seam_tests`
//! drives two pools through this seam in one process.

mod growth;
pub(crate) mod handoff;
pub(crate) mod place;
mod pool;
#[cfg(feature = "mpi")]
pub(crate) mod ranks;
#[cfg(test)]
mod seam_tests;
mod serial;

use crate::read::Job;
use crate::settings::{Order, Shared};
use crate::visit::Visitor;

/// The largest frontier of a shallow-first walk, serial or parallel. Each
/// pending directory keeps its parent's descriptor open; an unbounded
/// frontier (11k directories a level deep in the million tree) overruns the
/// descriptor budget and opens by path, and a whole walk took 1.18x as long
/// as depth-first. Past the bound the walk goes depth-first below the
/// frontier, which costs a whole walk little and finds shallow entries
/// much sooner (figures: BENCHMARKS.md, "The shallow-first frontier",
/// 2026-11-22).
const SHALLOW_FRONTIER: usize = 1024;

/// The walk's roots as its first jobs.
fn root_jobs(shared: &Shared) -> impl Iterator<Item = Job> + '_ {
    shared.roots.iter().enumerate().map(|(i, r)| Job::root(i, r))
}

/// Run the walk: `make` makes one visitor per thread, `done` gets each back
/// when its thread has finished (on the calling thread).
pub(crate) fn run<V, M, D>(shared: &Shared, make: M, mut done: D)
where
    V: Visitor,
    M: Fn() -> V + Sync,
    D: FnMut(V),
{
    let settings = &shared.settings;
    match settings.order {
        Order::BreadthFirst => done(serial::run(shared, make(), usize::MAX)),
        Order::DepthFirst => done(serial::run(shared, make(), 0)),
        // One worker that may never add another: the same walk without the
        // pool. With room to grow (the default I/O depth), one worker is
        // still a pool: a process bound to one core (`taskset`, or mpirun's
        // default binding of each rank) must keep more than one read in
        // flight on a slow mount (one rank through a 4 ms FUSE mount:
        // 15.1 s serial, 2.1 s with the pool, 2026-11-26).
        Order::Parallel if settings.io_depth <= 1 => done(serial::run(
            shared,
            make(),
            if settings.shallow_first { SHALLOW_FRONTIER } else { 0 },
        )),
        Order::Parallel => pool::run(shared, root_jobs(shared).collect(), &pool::Alone, make, done),
    }
}
