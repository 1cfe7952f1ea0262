//! Running a walk: the builder's options resolved into the settings the
//! scheduler and the reader read, and each thread's visitor wrapped.

use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::WalkBuilder;
use crate::budget::Budget;
use crate::entry::{Chunk, EntryRef};
use crate::error::Error;
use crate::filter::ErasedHook;
use crate::hooks::Chain;
use crate::io::AUTO_IO_DEPTH;
use crate::ordered::{Held, TreeOrder, TreeVisitor};
use crate::settings::{Order, Settings, Shared};
use crate::visit::{Flow, Visitor};

impl WalkBuilder {
    /// Run the walk. `make` creates one visitor per worker thread (one in
    /// all for the serial orders); `done` receives each visitor when its
    /// thread has finished, on the calling thread.
    pub fn visit<V, M, D>(&self, make: M, mut done: D)
    where
        V: Visitor,
        M: Fn() -> V + Sync,
        D: FnMut(V),
    {
        let shared = self.resolve(None);
        crate::schedule::run(&shared, self.guarded(&shared, &make), |guard| {
            done(guard.into_visitor())
        });
    }

    /// Run the walk as one rank of an MPI job (feature `mpi`): every rank
    /// calls it with the same options and roots, each with its own
    /// `ranks::Ranks` and the job's handle, and they share the walk's
    /// directories (see the module `ranks`). Returns when the job
    /// is over, or stopped (a visitor's [`Flow::Stop`] here stops every
    /// rank). Visitors get only the entries this rank reads. The order is
    /// [`Order::Parallel`] whatever was asked for, with a pool of workers
    /// even for one thread (which adds workers while reads wait, up to the
    /// I/O depth, as a pool of several does).
    #[cfg(feature = "mpi")]
    pub fn visit_ranks<V, M, D>(
        &self,
        ranks: &crate::schedule::ranks::Ranks,
        handle: &fnd_mpi::Handle,
        make: M,
        mut done: D,
    ) where
        V: Visitor,
        M: Fn() -> V + Sync,
        D: FnMut(V),
    {
        // Always a pool here, which may grow while reads wait, even from one
        // thread (a rank bound to one core): `resolve` gives it its depth.
        let shared = self
            .clone()
            .order(Order::Parallel)
            .resolve_with(Some(ranks.stop_flag()), crate::schedule::ranks::default_io_depth());
        ranks.run(&shared, handle, self.guarded(&shared, &make), |guard| {
            done(guard.into_visitor())
        });
    }

    /// Run the walk on every core and hand its results to `visitor` in
    /// tree order ([`TreeOrder`]: each directory's entries as listed or
    /// sorted, each subtree after its parent's entries or at its own entry,
    /// [`TreeVisitor::leave`] after a whole subtree), as soon as everything
    /// before them is out. Returns what it held at most.
    ///
    /// Workers read ahead in output order. The results that wait for their
    /// turn stay under `order.window` bytes plus one directory per worker
    /// (the one each is reading when the window fills) and, per level
    /// down to the directory the output waits for (read whatever the
    /// window), what is left of the directory open there: at most one
    /// directory per worker and per level of depth, counted as the
    /// names plus 56 bytes per entry (its slot and metadata) and a few
    /// dozen per directory; past the window the workers read only the
    /// directory the output waits for. A larger window keeps every core
    /// busy through a slow consumer or an uneven tree; a small one holds
    /// less and, when the output is slower than the reads, walks at the
    /// output's pace. The directories waiting to be read (a name each) are
    /// held as in a depth-first walk. The directory the output waits for
    /// goes out while it is read in [`Within::Listing`](crate::Within::Listing)
    /// order, and a batch at a time in [`Within::InodeBatches`](crate::Within::InodeBatches)
    /// (up to its first subdirectory's entry, when the subtree comes at
    /// the entry): a huge one is never held whole, and read on one thread.
    /// A directory held whole (sorted, or in inode batches and read
    /// ahead) is, when huge, read in parts on several threads (on ext4, as
    /// [`Order::Parallel`] does) and joined. [`WalkBuilder::order`] is
    /// ignored (the threads are [`WalkBuilder::threads`]).
    ///
    /// ```
    /// use fnd_walk::{ChunkBuf, DirEvent, Flow, Nest, TreeOrder, TreeVisitor, WalkBuilder, Within};
    ///
    /// struct Lines(Vec<String>);
    /// impl TreeVisitor for Lines {
    ///     fn entries(&mut self, chunk: &ChunkBuf) -> Flow {
    ///         self.0.extend(chunk.iter().map(|e| e.file_name().to_string_lossy().into_owned()));
    ///         Flow::Continue
    ///     }
    ///     fn leave(&mut self, dir: DirEvent<'_>) -> Flow {
    ///         if dir.depth > 0 {
    ///             self.0.push(format!("end of {}", dir.path.rsplit(|&b| b == b'/').next().map(String::from_utf8_lossy).unwrap()));
    ///         }
    ///         Flow::Continue
    ///     }
    /// }
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::create_dir(dir.path().join("b")).unwrap();
    /// std::fs::write(dir.path().join("b/x"), "").unwrap();
    /// std::fs::write(dir.path().join("a"), "").unwrap();
    /// std::fs::write(dir.path().join("c"), "").unwrap();
    /// let mut lines = Lines(Vec::new());
    /// let order = TreeOrder::new(Within::Name, Nest::AtEntry).window(1 << 20);
    /// WalkBuilder::new(dir.path()).min_depth(1).threads(4).visit_tree(order, &mut lines);
    /// assert_eq!(lines.0, ["a", "b", "x", "end of b", "c"]);
    /// ```
    pub fn visit_tree<V: TreeVisitor>(&self, order: TreeOrder, visitor: &mut V) -> Held {
        let mut shared = self.resolve(None);
        // A directory sorted whole is held whole before it is released:
        // read as one chunk, it is sorted where it lies, where chunks of
        // 512 were sorted through a table and copied into one (7% of the
        // user time of `fnd --sort name` on /usr).
        shared.settings.whole_dirs |= order.within.sorts_whole_dirs();
        crate::ordered::run(&shared, order, self.cfg.lenient, visitor)
    }

    /// Each thread's visitor from `make`, wrapped (see [`Guard`]).
    fn guarded<'a, V, M>(&'a self, shared: &'a Shared, make: &'a M) -> impl Fn() -> Guard<'a, V> + Sync + 'a
    where
        V: Visitor,
        M: Fn() -> V + Sync,
    {
        move || Guard {
            visitor: Some(make()),
            shared,
            lenient: self.cfg.lenient,
        }
    }

    /// Run the walk, calling `f` for every entry and error on the thread
    /// that read it (so `f` is shared between threads). Returning
    /// [`Flow::Stop`] stops every thread at its next chunk.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use fnd_walk::{Flow, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// for name in ["a", "b", "c"] {
    ///     std::fs::write(dir.path().join(name), "").unwrap();
    /// }
    /// let files = AtomicUsize::new(0);
    /// WalkBuilder::new(dir.path()).threads(2).for_each(|entry| {
    ///     if entry.map_or(false, |e| e.file_type().is_file()) {
    ///         files.fetch_add(1, Ordering::Relaxed);
    ///     }
    ///     Flow::Continue
    /// });
    /// assert_eq!(files.into_inner(), 3);
    /// ```
    pub fn for_each<F>(&self, f: F)
    where
        F: Fn(Result<EntryRef<'_>, Error>) -> Flow + Sync,
    {
        self.for_each_with(|| (), |_, entry| f(entry));
    }

    /// Like [`for_each`](Self::for_each), with a state per worker thread
    /// made by `init`: no locks or atomics in the hot loop. Returns the
    /// states, one per thread, for the caller to combine.
    ///
    /// ```
    /// use fnd_walk::{Flow, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::write(dir.path().join("a"), "12345").unwrap();
    /// std::fs::write(dir.path().join("b"), "678").unwrap();
    /// let sizes = WalkBuilder::new(dir.path()).min_depth(1).metadata(true).for_each_with(
    ///     || 0u64,
    ///     |total, entry| {
    ///         if let Some(m) = entry.ok().and_then(|e| e.cached_metadata()) {
    ///             *total += m.size;
    ///         }
    ///         Flow::Continue
    ///     },
    /// );
    /// assert_eq!(sizes.iter().sum::<u64>(), 8);
    /// ```
    pub fn for_each_with<S, I, F>(&self, init: I, f: F) -> Vec<S>
    where
        S: Send,
        I: Fn() -> S + Sync,
        F: Fn(&mut S, Result<EntryRef<'_>, Error>) -> Flow + Sync,
    {
        let mut states = Vec::new();
        let f = &f;
        self.visit(|| EntryVisitor { state: init(), f }, |v| states.push(v.state));
        states
    }

    /// The walk as the layers below see it: options resolved (thread count,
    /// I/O depth, descriptor budget), every filter folded into one; `stop`
    /// replaces the owner's stop flag.
    pub(crate) fn resolve(&self, stop: Option<Arc<AtomicBool>>) -> Shared {
        self.resolve_with(stop, AUTO_IO_DEPTH)
    }

    /// [`resolve`](Self::resolve), with `default_io_depth` where the caller
    /// gave no I/O depth.
    fn resolve_with(&self, stop: Option<Arc<AtomicBool>>, default_io_depth: usize) -> Shared {
        let cfg = &self.cfg;
        let given = &cfg.settings;
        let threads = if given.order == Order::Parallel {
            given.threads.max(1)
        } else {
            1
        };
        // One worker, too, may grow while its reads wait: a process bound to
        // one core (`taskset`, a one-CPU container, mpirun's binding) on a
        // slow mount. Only a depth of 1 runs serially (see `schedule::run`).
        let io_depth = match given.io_depth {
            0 => default_io_depth,
            n => n,
        };
        // Bounded: every worker is a thread, and a depth far past any
        // device's queue only waits on itself.
        let io_depth = threads.max(io_depth).min(crate::builder::MAX_IO_DEPTH);
        let ignore = cfg
            .ignore
            .clone()
            .map(|rules| Arc::new(rules.build(&self.roots)) as Arc<dyn ErasedHook>);
        let hooks = (cfg.hook.iter().cloned())
            .chain(cfg.filter.iter().cloned())
            .chain(ignore)
            .chain(cfg.hooks.iter().cloned());
        let settings = Settings {
            threads,
            io_depth,
            hook: Chain::of(hooks),
            ..given.clone()
        };
        let roots = self.roots.iter().map(|r| r.as_os_str().as_bytes().to_vec()).collect();
        Shared::new(
            settings,
            roots,
            stop.or_else(|| cfg.stop.clone()),
            Budget::new(cfg.max_open_fds, threads),
        )
    }
}

/// Runs a closure per entry (see [`WalkBuilder::for_each_with`]).
struct EntryVisitor<'f, S, F> {
    state: S,
    f: &'f F,
}

impl<S, F> Visitor for EntryVisitor<'_, S, F>
where
    S: Send,
    F: Fn(&mut S, Result<EntryRef<'_>, Error>) -> Flow + Sync,
{
    fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
        for entry in chunk.iter() {
            if (self.f)(&mut self.state, Ok(entry)) == Flow::Stop {
                return Flow::Stop;
            }
        }
        Flow::Continue
    }

    fn error(&mut self, error: Error) -> Flow {
        (self.f)(&mut self.state, Err(error))
    }
}

/// Wraps each thread's visitor: drops benign errors below the roots when the
/// walk is lenient, and stops the walk when the thread unwinds (a panic in a
/// visitor or filter), so the other threads do not wait for its jobs forever.
struct Guard<'a, V> {
    visitor: Option<V>,
    shared: &'a Shared,
    lenient: bool,
}

impl<V: Visitor> Visitor for Guard<'_, V> {
    fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
        self.visitor
            .as_mut()
            .expect("visitor taken only at the end")
            .visit(chunk)
    }

    fn error(&mut self, error: Error) -> Flow {
        if self.lenient && error.is_benign() && error.depth() > 0 {
            return Flow::Continue;
        }
        self.visitor
            .as_mut()
            .expect("visitor taken only at the end")
            .error(error)
    }
}

impl<V> Guard<'_, V> {
    fn into_visitor(mut self) -> V {
        self.visitor.take().expect("a visitor per guard")
    }
}

impl<V> Drop for Guard<'_, V> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth(builder: WalkBuilder, default_io_depth: usize) -> usize {
        builder.resolve_with(None, default_io_depth).settings.io_depth
    }

    #[test]
    fn a_depth_not_given_is_the_callers_default_and_a_given_one_is_kept() {
        let walk = WalkBuilder::new(".").threads(2);
        assert_eq!(depth(walk.clone(), 16), 16);
        assert_eq!(depth(walk.clone().io_depth(0), 16), 16);
        assert_eq!(depth(walk.clone().io_depth(5), 16), 5);
        assert_eq!(walk.clone().resolve(None).settings.io_depth, AUTO_IO_DEPTH);
        // Never fewer workers than threads.
        assert_eq!(depth(walk.clone().io_depth(1), 16), 2);
        assert_eq!(depth(walk.clone().io_depth(usize::MAX), 16), crate::MAX_IO_DEPTH);
        assert_eq!(depth(walk.io_depth(10_000_000), 16), crate::MAX_IO_DEPTH);
    }
}
