//! One walk shared by the ranks of an MPI job: the thread pool beside a
//! [`Remote`] that speaks to the other ranks through `fnd-mpi`.
//!
//! Every rank runs the pool with its own threads and I/O depth; rank 0
//! starts with the roots, the others with nothing. `fnd-mpi`'s transport
//! thread does the rest through [`Shelf`], the rank's [`Local`]: an idle
//! rank steals from a random one, and the victim's transport answers with
//! [`Pool::give_away`] itself, so a steal is answered even while every
//! worker is deep in one huge directory; what it gives no longer counts
//! as pending here. Received directories wait on the shelf until a
//! worker takes them in between two directories ([`Remote::poll`], or at
//! once if it is idle): taking in may read the file system (the parent's
//! ignore rules are rebuilt from its path), which the transport thread
//! must never wait for. Only the job says when the walk is over
//! (Dijkstra–Scholten termination, see `fnd_mpi::protocol`): an idle pool
//! waits until then, for work that may still come.
//!
//! Nothing crosses ranks per entry: a steal moves up to thousands of
//! directories in one message (`Handoff`'s encoding), and what the
//! visitors print is theirs to send.

use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use fnd_mpi::{Handle, Local};

use super::handoff::Handoff;
use super::pool::{Pool, Remote};
use crate::io::AUTO_IO_DEPTH;
use crate::settings::Shared;

/// The I/O depth of a rank whose user chose none: one process's default
/// (`WalkBuilder::io_depth`) shared by the tasks of the job on this node
/// ([`fnd_mpi::launch::tasks_on_this_node`]), which share its file system
/// client. Each rank at the whole default held directories in reads that
/// the client only queued, and that idle ranks could have taken: through
/// an emulated client of 8 slots per rank, 8 ranks on one machine walked
/// at 64% efficiency with 128 each and 87% with 16 each (BENCHMARKS.md,
/// 2026-11-27).
pub(crate) fn default_io_depth() -> usize {
    let tasks = fnd_mpi::launch::tasks_on_this_node().unwrap_or(1);
    AUTO_IO_DEPTH
        .div_ceil(usize::try_from(tasks).unwrap_or(usize::MAX))
        .max(1)
}

/// One rank's side of a walk shared by the ranks of an MPI job: what the
/// job's transport works with ([`local`](Self::local)), and what the
/// walk's workers take directories from. Make it before the job starts,
/// hand [`local`](Self::local) to `fnd_mpi::Job::start`, then run the walk
/// with `WalkBuilder::visit_ranks`.
///
/// ```no_run
/// use fnd_mpi::{Job, Tuning, World};
/// use fnd_walk::ranks::Ranks;
/// use fnd_walk::{Chunk, Flow, Visitor, WalkBuilder};
///
/// struct Count(usize);
/// impl Visitor for Count {
///     fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
///         self.0 += chunk.len();
///         Flow::Continue
///     }
/// }
///
/// let world = World::init("count").unwrap_or_else(|e| e.exit());
/// // Rank 0 starts with the roots; the others steal from it.
/// let ranks = Ranks::new(world.rank() == 0);
/// let job = Job::start(&world, ranks.local(), Tuning::default(), None);
/// let mut here = 0;
/// WalkBuilder::new("/data").visit_ranks(&ranks, &job.handle(), || Count(0), |c| here += c.0);
/// let end = job.finish(here.to_le_bytes().to_vec());
/// if let Some(results) = end.results {
///     let total: u64 = results.iter().map(|r| u64::from_le_bytes(r[..8].try_into().unwrap())).sum();
///     println!("{total} entries, read by {} ranks", results.len());
/// }
/// ```
#[derive(Clone)]
pub struct Ranks {
    shelf: Arc<Shelf>,
}

/// What one rank did in a walk shared by ranks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RankCounts {
    /// Directories this rank read.
    pub dirs_read: u64,
    /// Directories it received from other ranks.
    pub dirs_received: u64,
    /// Directories it gave to other ranks.
    pub dirs_given: u64,
}

/// Work this rank still owes the job, held by a filter until it is done
/// (a subtotal to send back to the rank that handed a directory over):
/// while a hold lives, the rank is not idle, so the job cannot end.
/// Dropping it releases it; send what it stood for first.
pub struct Hold {
    shelf: Arc<Shelf>,
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.shelf.holds.fetch_sub(1, Ordering::SeqCst);
        self.shelf.wake_transport();
    }
}

type MessageHandler = Box<dyn Fn(usize, &[u8]) + Send + Sync>;

/// The rank's shelf: the pool while it runs, and what arrived for it.
struct Shelf {
    /// The pool, lent for as long as its workers run (see [`Remote::attend`]).
    lent: Mutex<Option<LentPool>>,
    /// Directories received, as their bytes, not yet taken into the pool.
    inbox: Mutex<Vec<Vec<u8>>>,
    /// Directories received and not yet pending in the pool: counted
    /// before they are put on the shelf, and until after the pool counts
    /// them, so that the rank never looks idle in between.
    incoming: AtomicUsize,
    /// Rank 0 before its pool holds the roots: busy, not idle.
    expecting_roots: AtomicBool,
    holds: AtomicUsize,
    /// Some rank stopped the job.
    stopped: AtomicBool,
    /// The job has started: other ranks may steal.
    started: AtomicBool,
    /// The job is over.
    over: AtomicBool,
    /// Told the transport this pool went idle, since it last had work.
    told_idle: AtomicBool,
    /// The walk's stop flag (`Shared::stop`): raised when another rank stops.
    stop_flag: Arc<AtomicBool>,
    handle: OnceLock<Handle>,
    on_message: OnceLock<MessageHandler>,
    /// Each root's device and inode as this rank sees them, stat'd once.
    root_ids: OnceLock<Vec<Option<(u64, u64)>>>,
    dirs_read: AtomicU64,
    dirs_received: AtomicU64,
    dirs_given: AtomicU64,
    /// For tests: a pause after each directory read, so that a small tree
    /// keeps a rank busy long enough for others to steal from it.
    pause: Mutex<Option<Duration>>,
}

/// A pool lent to the shelf, its type (and lifetime) erased. Only
/// dereferenced under the `lent` lock, and taken back under it before the
/// pool is dropped (see [`Shelf::with_pool`]).
struct LentPool(*const ());

// SAFETY: `Pool` is `Sync` (its workers share it); the pointer is only
// used to reach it from the transport thread while it is alive.
unsafe impl Send for LentPool {}

impl Ranks {
    /// This rank's side; `with_roots` on the rank that starts with the
    /// walk's roots (rank 0), which is busy from now until its walk runs.
    pub fn new(with_roots: bool) -> Ranks {
        Ranks {
            shelf: Arc::new(Shelf {
                lent: Mutex::new(None),
                inbox: Mutex::new(Vec::new()),
                incoming: AtomicUsize::new(0),
                expecting_roots: AtomicBool::new(with_roots),
                holds: AtomicUsize::new(0),
                stopped: AtomicBool::new(false),
                started: AtomicBool::new(false),
                over: AtomicBool::new(false),
                told_idle: AtomicBool::new(false),
                stop_flag: Arc::new(AtomicBool::new(false)),
                handle: OnceLock::new(),
                on_message: OnceLock::new(),
                root_ids: OnceLock::new(),
                dirs_read: AtomicU64::new(0),
                dirs_received: AtomicU64::new(0),
                dirs_given: AtomicU64::new(0),
                pause: Mutex::new(None),
            }),
        }
    }

    /// What the job's transport calls (for `fnd_mpi::Job::start`).
    pub fn local(&self) -> Arc<dyn Local> {
        self.shelf.clone()
    }

    /// Receive the job's application messages (`fnd_mpi::Handle::send`)
    /// with `handler`, on the transport thread: it must not block. Set it
    /// before the job starts; without one, an application message ends
    /// the job as a broken protocol.
    pub fn on_message(&self, handler: impl Fn(usize, &[u8]) + Send + Sync + 'static) {
        if self.shelf.on_message.set(Box::new(handler)).is_err() {
            panic!("one message handler per rank");
        }
    }

    /// Keep this rank busy until the returned [`Hold`] is dropped.
    pub fn hold(&self) -> Hold {
        self.shelf.holds.fetch_add(1, Ordering::SeqCst);
        Hold {
            shelf: self.shelf.clone(),
        }
    }

    /// What this rank did so far.
    pub fn counts(&self) -> RankCounts {
        let s = &self.shelf;
        RankCounts {
            dirs_read: s.dirs_read.load(Ordering::Relaxed),
            dirs_received: s.dirs_received.load(Ordering::Relaxed),
            dirs_given: s.dirs_given.load(Ordering::Relaxed),
        }
    }

    /// Whether the job was stopped (by any rank).
    pub fn stopped(&self) -> bool {
        self.shelf.stopped.load(Ordering::SeqCst)
    }

    /// The pause after each directory that tests ask for in
    /// `FND_MPI_TEST_PAUSE_US` (microseconds), for
    /// [`pause_after_each_directory`](Self::pause_after_each_directory).
    #[doc(hidden)]
    pub fn test_pause() -> Option<Duration> {
        let micros = std::env::var("FND_MPI_TEST_PAUSE_US").ok()?.parse().ok()?;
        Some(Duration::from_micros(micros))
    }

    /// Pause after each directory read (for tests: a small tree then keeps
    /// a rank busy long enough for the others to steal from it).
    #[doc(hidden)]
    pub fn pause_after_each_directory(&self, pause: Duration) {
        *lock(&self.shelf.pause) = Some(pause);
    }

    /// The flag the walk stops on, raised when any rank stops the job.
    pub(crate) fn stop_flag(&self) -> Arc<AtomicBool> {
        self.shelf.stop_flag.clone()
    }

    /// Run the walk of `shared` on this rank until the job is over (or
    /// stopped, here or elsewhere).
    pub(crate) fn run<V, M, D>(&self, shared: &Shared, handle: &Handle, make: M, done: D)
    where
        V: crate::visit::Visitor,
        M: Fn() -> V + Sync,
        D: FnMut(V),
    {
        let shelf = &self.shelf;
        let _ = shelf.handle.set(handle.clone());
        let jobs = if shelf.expecting_roots.load(Ordering::SeqCst) {
            super::root_jobs(shared).collect()
        } else {
            Vec::new()
        };
        let remote = RankRemote { shelf, shared };
        super::pool::run(shared, jobs, &remote, make, done);
        // A walk stopped here (a visitor's `Flow::Stop`) stops every rank;
        // one stopped by another rank has told them already.
        if shared.stopped() && !shelf.stopped.swap(true, Ordering::SeqCst) {
            handle.stop();
        }
        shelf.expecting_roots.store(false, Ordering::SeqCst);
        shelf.wake_transport();
    }
}

/// Poisoned locks still guard plain data here.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shelf {
    /// `act` on the pool, if it is running.
    fn with_pool<R>(&self, act: impl FnOnce(&Pool<'_>) -> R) -> Option<R> {
        let lent = lock(&self.lent);
        // SAFETY: while the lock is held the pool cannot be taken back
        // (`RankRemote::attend` clears `lent` under it before its workers
        // end and the pool is dropped), so the pointer is valid.
        lent.as_ref()
            .map(|LentPool(pool)| act(unsafe { &*pool.cast::<Pool<'_>>() }))
    }

    fn wake_transport(&self) {
        if let Some(handle) = self.handle.get() {
            handle.wake();
        }
    }
}

impl Local for Shelf {
    fn started(&self) {
        self.started.store(true, Ordering::SeqCst);
    }

    fn is_idle(&self) -> bool {
        // Incoming first: a directory moves from the shelf into the pool
        // before it stops counting as incoming.
        if self.expecting_roots.load(Ordering::SeqCst)
            || self.incoming.load(Ordering::SeqCst) > 0
            || self.holds.load(Ordering::SeqCst) > 0
        {
            return false;
        }
        self.with_pool(|pool| pool.pending() == 0).unwrap_or(true)
    }

    fn is_hungry(&self) -> bool {
        self.incoming.load(Ordering::SeqCst) == 0 && self.with_pool(|pool| pool.hungry()).unwrap_or(false)
    }

    fn take(&self, max: usize) -> Vec<Vec<u8>> {
        if self.stopped.load(Ordering::SeqCst) {
            return Vec::new();
        }
        let given = self
            .with_pool(|pool| {
                // About half of what waits for a worker (not what is being
                // read): both sides keep some.
                let share = pool.queued().div_ceil(2).clamp(1, max.max(1));
                pool.give_away(share)
            })
            .unwrap_or_default();
        self.dirs_given.fetch_add(given.len() as u64, Ordering::Relaxed);
        given.iter().map(Handoff::encode).collect()
    }

    fn put(&self, items: Vec<Vec<u8>>) {
        if self.stopped.load(Ordering::SeqCst) {
            return;
        }
        self.dirs_received.fetch_add(items.len() as u64, Ordering::Relaxed);
        self.incoming.fetch_add(items.len(), Ordering::SeqCst);
        lock(&self.inbox).extend(items);
        self.with_pool(|pool| pool.wake());
    }

    fn message(&self, from: usize, bytes: &[u8]) {
        match self.on_message.get() {
            Some(handler) => handler(from, bytes),
            None => fnd_mpi::world::fatal(format!(
                "an application message from rank {from} that this walk does not expect"
            )),
        }
    }

    fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.stop_flag.store(true, Ordering::SeqCst);
        let dropped = std::mem::take(&mut *lock(&self.inbox));
        self.incoming.fetch_sub(dropped.len(), Ordering::SeqCst);
        self.with_pool(|pool| pool.wake());
    }

    fn over(&self) {
        self.over.store(true, Ordering::SeqCst);
        self.with_pool(|pool| pool.wake());
    }
}

/// The pool's remote on one rank.
struct RankRemote<'a> {
    shelf: &'a Arc<Shelf>,
    shared: &'a Shared,
}

impl RankRemote<'_> {
    /// Take the directories on the shelf into the pool.
    fn take_in(&self, pool: &Pool<'_>) {
        let shelf = &**self.shelf;
        let items = std::mem::take(&mut *lock(&shelf.inbox));
        if items.is_empty() {
            return;
        }
        shelf.told_idle.store(false, Ordering::SeqCst);
        let handoffs: Vec<Handoff> = items
            .iter()
            .map(|bytes| match Handoff::decode(bytes) {
                Ok(handoff) => self.mapped(handoff),
                Err(e) => fnd_mpi::world::fatal(format!("a directory from another rank that does not decode: {e}")),
            })
            .collect();
        if let Some(why) = pool.take_in(handoffs) {
            fnd_mpi::world::fatal(format!("a directory from another rank that is not of this walk: {why}"));
        }
        // Only now: the pool counts them.
        shelf.incoming.fetch_sub(items.len(), Ordering::SeqCst);
    }

    /// `handoff` with the root's device as this rank sees it: nodes that
    /// mount one file system may number its device differently, so the
    /// root's path is stat'd here and must lead to the same inode.
    fn mapped(&self, mut handoff: Handoff) -> Handoff {
        if handoff.depth == 0 {
            return handoff;
        }
        let ids = self.shelf.root_ids.get_or_init(|| {
            self.shared
                .roots
                .iter()
                .map(|root| {
                    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(root));
                    crate::meta::stat_path(path, true).ok().map(|m| (m.dev, m.ino))
                })
                .collect()
        });
        let Some(&here) = ids.get(handoff.root) else {
            return handoff; // refused by `into_job`
        };
        let root = String::from_utf8_lossy(&self.shared.roots[handoff.root]).into_owned();
        let rank = self.shelf.handle.get().map_or(0, Handle::rank);
        let Some((dev, ino)) = here else {
            fnd_mpi::world::fatal(format!(
                "search path '{root}' cannot be read on rank {rank}, but it can on another"
            ));
        };
        let (their_dev, their_ino) = handoff.root_id;
        if ino != their_ino {
            fnd_mpi::world::fatal(format!(
                "search path '{root}' is another directory on rank {rank} (inode {ino}) than on the rank that \
                 handed part of it over (inode {their_ino}): every rank must see the same tree"
            ));
        }
        if dev != their_dev {
            handoff.root_id.0 = dev;
            for ancestor in &mut handoff.ancestors {
                if ancestor.0 == their_dev {
                    ancestor.0 = dev;
                }
            }
        }
        handoff
    }
}

impl Remote for RankRemote<'_> {
    fn may_grow(&self) -> bool {
        self.shelf.started.load(Ordering::SeqCst)
    }

    fn poll(&self, pool: &Pool<'_>, read: bool) {
        let shelf = &**self.shelf;
        if read {
            shelf.dirs_read.fetch_add(1, Ordering::Relaxed);
            if let Some(pause) = *lock(&shelf.pause) {
                std::thread::sleep(pause);
            }
        }
        if shelf.incoming.load(Ordering::SeqCst) > 0 {
            self.take_in(pool);
        }
    }

    fn idle(&self, pool: &Pool<'_>) -> bool {
        let shelf = &**self.shelf;
        if shelf.incoming.load(Ordering::SeqCst) > 0 {
            self.take_in(pool);
        }
        if pool.pending() > 0 {
            return false;
        }
        if shelf.over.load(Ordering::SeqCst) {
            return true;
        }
        // Idle until the job says otherwise: let the transport see it now
        // rather than at its next round.
        if !shelf.told_idle.swap(true, Ordering::SeqCst) {
            shelf.wake_transport();
        }
        false
    }

    fn attend<T>(&self, pool: &Pool<'_>, workers: impl FnOnce() -> T) -> T {
        /// Takes the pool back, even if a worker panics.
        struct TakeBack<'s>(&'s Shelf);
        impl Drop for TakeBack<'_> {
            fn drop(&mut self) {
                *lock(&self.0.lent) = None;
            }
        }
        let shelf = &**self.shelf;
        let erased = (pool as *const Pool<'_>).cast::<()>();
        *lock(&shelf.lent) = Some(LentPool(erased));
        let _take_back = TakeBack(shelf);
        // The roots are pending in the pool now.
        shelf.expecting_roots.store(false, Ordering::SeqCst);
        workers()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::Budget;
    use crate::settings::{Order, Settings};

    #[test]
    fn a_root_numbered_differently_on_another_node_is_mapped_to_this_one() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().as_os_str().as_encoded_bytes().to_vec();
        let settings = Settings {
            order: Order::Parallel,
            threads: 1,
            shallow_first: false,
            io_depth: 1,
            min_depth: 0,
            max_depth: None,
            follow_links: true,
            same_file_system: true,
            roots_within: None,
            skip_hidden: false,
            metadata: false,
            sort: None,
            whole_dirs: false,
            chunk_size: 8,
            visit_empty: false,
            hook: None,
        };
        let shared = Shared::new(settings, vec![root.clone()], None, Budget::new(None, 1));
        let ranks = Ranks::new(false);
        let remote = RankRemote {
            shelf: &ranks.shelf,
            shared: &shared,
        };
        let here = crate::meta::stat_path(tmp.path(), true).unwrap();
        let there = here.dev + 7;
        let handoff = Handoff {
            root: 0,
            path: [&root[..], b"/a/b"].concat(),
            depth: 2,
            follow: false,
            root_id: (there, here.ino),
            ancestors: vec![(there, 42)],
            filter_state: None,
        };
        let mapped = remote.mapped(handoff.clone());
        assert_eq!(mapped.root_id, (here.dev, here.ino));
        assert_eq!(mapped.ancestors, [(here.dev, 42)]);
        // A root handed over before it was opened carries no device yet.
        let root_itself = Handoff {
            path: root.clone(),
            depth: 0,
            root_id: (0, 0),
            ancestors: Vec::new(),
            ..handoff
        };
        assert_eq!(remote.mapped(root_itself.clone()), root_itself);
    }
}
