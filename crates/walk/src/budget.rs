//! The descriptor budget: how many directory descriptors the walks of this
//! process keep open at once.
//!
//! Offers [`Budget`] (one walk's share of the process's descriptors:
//! [`reserve`](Budget::reserve) one for a directory kept open for its
//! children, [`reserve_workers`](Budget::reserve_workers) for workers added
//! while reads wait on I/O), [`release`] to give one back, and
//! [`Reservation`], a descriptor counted until it is dropped, and
//! [`when_descriptors_free`] for the caller's own opens. The count is
//! per process, as `RLIMIT_NOFILE` is: every walk running at once draws on
//! it. Also [`fit_address_space`] and [`skip_signal_stacks_under_limit`],
//! what a process held to an address space (`RLIMIT_AS`) asks of malloc and
//! of Rust's runtime, [`EndWhenExhausted`], the allocator that ends the
//! process with one line when memory runs out (and leaves jemalloc for
//! malloc under a small limit), and `start_thread`, which starts the
//! walk's threads only while the address space has room for them. Relies
//! on nothing else in this crate.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustix::io::Errno;

/// Directory descriptors kept open by all walks of the process.
static OPEN_FDS: AtomicUsize = AtomicUsize::new(0);

/// An open failed for want of descriptors (EMFILE, ENFILE): from then on
/// no walk of the process keeps a directory open for its children or adds
/// workers, whatever its budget said (the process has fewer descriptors
/// than `RLIMIT_NOFILE` suggested: others are open, or the limit is tiny).
static SCARCE: AtomicBool = AtomicBool::new(false);

/// Opens retried for want of descriptors take turns: one waits for
/// descriptors at a time, the others wait here holding none, so the
/// waiting ones cannot starve each other.
static RETRY: Mutex<()> = Mutex::new(());

/// How long an open waits for descriptors to come free before its error
/// stands: the walk's own descriptors close as their directories are read.
const SCARCE_WAIT: Duration = Duration::from_secs(2);

/// `open` failed with EMFILE or ENFILE: keep no more descriptors, and try
/// it again, one thread at a time, as the walk's other descriptors close
/// (`ulimit -n 5` left a walk two descriptors, and it dropped every
/// directory it could not open at once). Returns the last result.
pub(crate) fn open_when_scarce<T>(open: impl FnMut() -> Result<T, Errno>) -> Result<T, Errno> {
    retry_while_scarce(open, |e| matches!(*e, Errno::MFILE | Errno::NFILE))
}

/// Run `start`, something that takes descriptors (a command's pipes, a
/// file); when it fails for want of them (EMFILE, ENFILE), the walks of
/// the process keep no more directories open, and `start` is tried again,
/// one thread at a time, for up to two seconds as their descriptors close.
/// Returns the last result. `fnd -x` under `ulimit -n 16` on a slow tree
/// lost 7 commands of 48 to "Too many open files" (fd: none).
///
/// ```
/// let read = fnd_walk::when_descriptors_free(|| std::fs::read_dir("."));
/// assert!(read.is_ok());
/// ```
///
/// Once such a wait has ended in failure, the process has too few
/// descriptors for `start` whatever the walks close, and later calls try
/// once without waiting (under `ulimit -n 6` every command of `fnd -x`
/// waited its two seconds: 96 s for 48 failures, where fd took 13 ms),
/// until one succeeds.
pub fn when_descriptors_free<T>(mut start: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
    static WAITED_IN_VAIN: AtomicBool = AtomicBool::new(false);
    let scarce = |e: &std::io::Error| matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
    let result = match start() {
        Err(e) if scarce(&e) && !WAITED_IN_VAIN.load(Ordering::Relaxed) => retry_while_scarce(start, scarce),
        result => result,
    };
    WAITED_IN_VAIN.store(result.as_ref().is_err_and(scarce), Ordering::Relaxed);
    result
}

/// The retry of [`open_when_scarce`] and [`when_descriptors_free`].
fn retry_while_scarce<T, E>(mut attempt: impl FnMut() -> Result<T, E>, scarce: impl Fn(&E) -> bool) -> Result<T, E> {
    SCARCE.store(true, Ordering::Relaxed);
    let _turn = RETRY.lock().unwrap_or_else(|e| e.into_inner());
    let started = Instant::now();
    let mut nap = Duration::from_micros(50);
    loop {
        match attempt() {
            Err(e) if scarce(&e) && started.elapsed() < SCARCE_WAIT => {
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(10));
            }
            result => return result,
        }
    }
}

/// Descriptors one worker may hold at once: the directory it reads, two
/// for an open by path, and one to spare.
pub(crate) const FDS_PER_WORKER: usize = 4;

/// One walk's limit on the process's open directory descriptors.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    /// Most descriptors open (process-wide) for this walk to keep one more.
    limit: usize,
    /// Descriptors a worker added for I/O reserves out of `limit`.
    per_added_worker: usize,
}

impl Budget {
    /// The budget of a walk with `threads` CPU workers: `max_open_fds` when
    /// the caller set it (it then counts kept directories only), else what
    /// `RLIMIT_NOFILE` leaves after the workers' own descriptors and a few
    /// for stdio and the caller, at most 4096.
    pub(crate) fn new(max_open_fds: Option<usize>, threads: usize) -> Budget {
        match max_open_fds {
            Some(limit) => Budget {
                limit,
                per_added_worker: 0,
            },
            None => {
                let nofile = rustix::process::getrlimit(rustix::process::Resource::Nofile)
                    .current
                    .unwrap_or(1024) as usize;
                // A CPU worker holds the directory it reads, or two for a
                // moment in an open by path; stdio and the caller need a few
                // more. Workers added for I/O reserve theirs when they start.
                // Counting 4 a worker and 16 besides left nothing to keep at
                // `ulimit -n 16`: every directory was opened by path from its
                // root, which is quadratic down a deep chain. An open that
                // finds the descriptors gone after all waits for them
                // (`open_when_scarce`).
                Budget {
                    limit: nofile.saturating_sub(8 + 2 * threads).min(4096),
                    per_added_worker: FDS_PER_WORKER,
                }
            }
        }
    }

    /// Count one more open descriptor, if the budget allows it; give it back
    /// with [`release`].
    pub(crate) fn reserve(&self) -> bool {
        if SCARCE.load(Ordering::Relaxed) {
            return false;
        }
        if OPEN_FDS.fetch_add(1, Ordering::AcqRel) < self.limit {
            true
        } else {
            OPEN_FDS.fetch_sub(1, Ordering::AcqRel);
            false
        }
    }

    /// Up to `wanted` workers are about to be added to a walk that waits on
    /// I/O: reserve their descriptors out of the budget the walk keeps
    /// directories open with, and return for how many workers it could. The
    /// budget only reserves for the CPU workers up front: at 4 per worker,
    /// a reserve for an I/O depth of 128 took half of a 1024-descriptor limit
    /// on every walk, and a hot `-1` search of the million tree that never
    /// adds a worker took 1.04x as long. A budget the caller set counts kept
    /// directories only, so added workers take nothing from it.
    pub(crate) fn reserve_workers(&self, wanted: usize) -> usize {
        if SCARCE.load(Ordering::Relaxed) {
            return 0;
        }
        let per_worker = self.per_added_worker;
        if per_worker == 0 {
            return wanted;
        }
        let mut granted = 0;
        let _ = OPEN_FDS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
            granted = (self.limit.saturating_sub(open) / per_worker).min(wanted);
            Some(open + granted * per_worker)
        });
        granted
    }

    /// Workers reserved for with [`reserve_workers`](Self::reserve_workers) have finished.
    pub(crate) fn release_workers(&self, workers: usize) {
        OPEN_FDS.fetch_sub(workers * self.per_added_worker, Ordering::AcqRel);
    }
}

/// A descriptor reserved with [`Budget::reserve`] is closed.
pub(crate) fn release() {
    OPEN_FDS.fetch_sub(1, Ordering::AcqRel);
}

/// A descriptor counted against the budget until this is dropped.
pub(crate) struct Reservation(());

impl Reservation {
    /// Reserve one descriptor, if the budget allows it.
    pub(crate) fn take(budget: &Budget) -> Option<Reservation> {
        budget.reserve().then_some(Reservation(()))
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        release();
    }
}

/// A global allocator (`A`, the one that does the work) that ends the
/// process with one line, `NAME: memory exhausted (N bytes asked for)`,
/// and exit status 1 when memory runs out, as GNU's tools end: Rust's
/// own end is SIGABRT (a core dump, the shell's "Aborted") after
/// `memory allocation of N bytes failed` and, with `RUST_BACKTRACE` set,
/// a backtrace. What the walk holds is bounded by its window, but a
/// directory that must be held whole (sorted) is held whole however big:
/// a million files in one directory, sorted, need some 200 MiB of
/// address space.
///
/// A process held to less than 128 MiB of address space (`ulimit -v`,
/// looked at by the first allocation) allocates from the C library's
/// malloc instead of `A`, for its whole life: jemalloc maps chunks of 4
/// MiB and arenas per thread, and ran out where malloc does not (`fnd -u
/// -j16` on a million entries at 64 MiB, `fdu -j8` at 64 MiB; `du -s`
/// runs in 8), and at 12–16 MiB it dereferenced the null of its first
/// failed map before `main` (SIGSEGV). Above it, `A` allocates: malloc,
/// with its one arena under a limit (see [`fit_address_space`]), took
/// 1.12x jemalloc's time for `fnd --sort name` on a million entries.
///
/// ```
/// # use fnd_walk::EndWhenExhausted;
/// #[global_allocator]
/// static ALLOCATOR: EndWhenExhausted<std::alloc::System> = EndWhenExhausted::new(std::alloc::System, "mytool");
/// # fn main() { assert_eq!(vec![1u8; 3].len(), 3); }
/// ```
pub struct EndWhenExhausted<A> {
    inner: A,
    name: &'static str,
    /// [`UNDECIDED`], [`INNER`] or [`SYSTEM`]: who allocates.
    choice: AtomicU8,
}

/// Below this much address space, [`EndWhenExhausted`] allocates from the
/// C library's malloc: jemalloc's runs of `fnd` and `fdu` at up to 8
/// threads on a million entries ran out at 80 MiB, not at 96.
const SMALL_ADDRESS_SPACE: u64 = 128 << 20;

const UNDECIDED: u8 = 0;
const INNER: u8 = 1;
const SYSTEM: u8 = 2;

impl<A> EndWhenExhausted<A> {
    /// `inner` allocates; `name` starts the message.
    pub const fn new(inner: A, name: &'static str) -> Self {
        EndWhenExhausted {
            inner,
            name,
            choice: AtomicU8::new(UNDECIDED),
        }
    }

    /// Whether the C library's malloc allocates instead of `inner`:
    /// decided once, at the first allocation, so that each block is freed
    /// by the allocator that gave it.
    #[inline(always)]
    fn system(&self) -> bool {
        match self.choice.load(Ordering::Relaxed) {
            INNER => false,
            SYSTEM => true,
            _ => self.choose(),
        }
    }

    /// Two threads that both allocate first decide alike: the limit is the
    /// process's.
    #[cold]
    fn choose(&self) -> bool {
        let small = address_space_limit().is_some_and(|limit| limit < SMALL_ADDRESS_SPACE);
        self.choice.store(if small { SYSTEM } else { INNER }, Ordering::Relaxed);
        small
    }

    /// `p`, unless it is null: then the process ends.
    fn checked(&self, p: *mut u8, size: usize) -> *mut u8 {
        if p.is_null() {
            exhausted(self.name, size);
        }
        p
    }
}

// SAFETY: every call goes as it came to `inner`, or to `System` in a
// process that never used `inner` (the choice is made before the first
// block and never changes); only a null result is acted on, and that ends
// the process.
unsafe impl<A: GlobalAlloc> GlobalAlloc for EndWhenExhausted<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = match self.system() {
            true => unsafe { System.alloc(layout) },
            false => unsafe { self.inner.alloc(layout) },
        };
        self.checked(p, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = match self.system() {
            true => unsafe { System.alloc_zeroed(layout) },
            false => unsafe { self.inner.alloc_zeroed(layout) },
        };
        self.checked(p, layout.size())
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = match self.system() {
            true => unsafe { System.realloc(ptr, layout, new_size) },
            false => unsafe { self.inner.realloc(ptr, layout, new_size) },
        };
        self.checked(p, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match self.system() {
            true => unsafe { System.dealloc(ptr, layout) },
            false => unsafe { self.inner.dealloc(ptr, layout) },
        }
    }
}

/// Write `NAME: memory exhausted (SIZE bytes asked for)` to stderr and
/// end the process, allocating nothing and taking no lock (the thread may
/// hold any: the allocator's, stdout's). Output not written yet is lost,
/// as it is when GNU's tools end so.
#[cold]
fn exhausted(name: &str, size: usize) -> ! {
    let mut line = [0u8; 160];
    let mut len = 0;
    let mut put = |bytes: &[u8]| {
        let n = bytes.len().min(line.len() - len);
        line[len..len + n].copy_from_slice(&bytes[..n]);
        len += n;
    };
    put(name.as_bytes());
    put(b": memory exhausted (");
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = size;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    put(&digits[at..]);
    put(b" bytes asked for)\n");
    // SAFETY: writes bytes of a live buffer; _exit takes nothing but the status.
    unsafe {
        libc::write(2, line.as_ptr().cast(), len);
        libc::_exit(1);
    }
}

/// For a process held to an address space (`ulimit -v`): one malloc arena
/// for all threads. glibc gives each new thread an arena of its own, each
/// reserving 64 MiB of address space; under 256 MiB the fourth failed, and
/// an allocation of a few hundred bytes aborted the run (`fdu -s` on a slow
/// tree, every run). Also puts back the default action of SIGSEGV and
/// SIGBUS that [`skip_signal_stacks_under_limit`] replaced. Call first in
/// `main`, before any thread starts; with no such limit it does nothing.
pub fn fit_address_space() {
    if !address_space_limited() {
        return;
    }
    restore_fault_actions();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: only sets a parameter, before any other thread allocates.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Under `ulimit -v`, keep Rust's runtime from giving every thread a
/// signal stack of its own; for `.init_array`, so that it runs before the
/// runtime starts (each binary names it there).
///
/// std maps a signal stack (for its "has overflowed its stack" message) as
/// each thread starts, inside the new thread, and panics there when the
/// mapping fails: a thread the caller was told had started never runs.
/// Worse, the panic's message needs memory of its own; under the same
/// limit std then waits forever on a lock it already holds (1.95: the
/// panic hook holds the backtrace lock while it allocates, and the hook of
/// a failed allocation takes it again), and every thread waiting on that
/// one waits too (`fdu --tree` under `ulimit -v 256M`: 11 threads in
/// futex waits, no end). A runtime that finds a handler for SIGSEGV
/// already set maps no signal stacks, so this sets one, and
/// [`fit_address_space`] puts the default back once the runtime has looked.
/// A stack overflow then ends the process by SIGSEGV, as for a program in
/// C, instead of with std's message. Without an address-space limit it
/// does nothing.
pub extern "C" fn skip_signal_stacks_under_limit() {
    if !address_space_limited() {
        return;
    }
    for signal in [libc::SIGSEGV, libc::SIGBUS] {
        // SAFETY: sets a handler that only restores the default action;
        // no thread but this one exists yet.
        unsafe {
            libc::signal(signal, fault_with_default_action as *const () as libc::sighandler_t);
        }
    }
}

/// Stands in for the default action of SIGSEGV and SIGBUS until
/// [`fit_address_space`] restores it: puts the default back and returns, so
/// that the fault happens again and the default action ends the process.
extern "C" fn fault_with_default_action(signal: libc::c_int) {
    // SAFETY: signal(2) may be called in a handler.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
    }
}

/// Put back the default action that [`skip_signal_stacks_under_limit`]
/// replaced, now that the runtime has decided to map no signal stacks.
fn restore_fault_actions() {
    for signal in [libc::SIGSEGV, libc::SIGBUS] {
        // SAFETY: reads the current action, and replaces it only where it
        // is ours.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut action) == 0
                && action.sa_sigaction == fault_with_default_action as *const () as libc::sighandler_t
            {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
    }
}

/// Whether the process is held to an address space (`RLIMIT_AS`).
fn address_space_limited() -> bool {
    address_space_limit().is_some()
}

/// The address space the process is held to (`RLIMIT_AS`), in bytes.
/// Allocates nothing: the allocator asks it.
fn address_space_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    let known = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) == 0 };
    (known && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
}

/// The address space left free for a thread to start: its stack, its
/// signal stack and its first allocations, with room for the others.
const THREAD_ROOM: usize = 16 << 20;

/// The stack of a worker added while reads wait on I/O, in the parallel
/// pool and in the ordered walk: up to the I/O depth of them may start (128
/// at std's 2 MiB each took a 256 MiB `ulimit -v` whole), and what a worker
/// runs (its reads, the visitors, the ordered walk's release) does not
/// recurse with depth: with a quarter of this, `fnd --sort`, `-x`, and
/// `fdu` in du's order, `-o` and `--json` ran whole on a slow mount (a
/// hundred workers added).
pub(crate) const IO_WORKER_STACK: usize = 512 * 1024;

/// Start `f` on a new thread of `scope` (with a stack of `stack` bytes, or
/// std's default), unless the process is short of address space (`ulimit
/// -v`: less than [`THREAD_ROOM`] free) or the system refuses the thread
/// (`ulimit -u`, a pids cgroup). `None`: the caller goes on with the
/// threads it has. Under a small limit the threads' stacks took the room
/// the walk allocates from: `fnd -u -j16` on a million entries ran out of
/// memory at 24–48 MiB of `ulimit -v`, where one thread finishes in 12.
pub(crate) fn start_thread<'scope, T, F>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    stack: Option<usize>,
    f: F,
) -> Option<std::thread::ScopedJoinHandle<'scope, T>>
where
    F: FnOnce() -> T + Send + 'scope,
    T: Send + 'scope,
{
    if !room_for(THREAD_ROOM) {
        return None;
    }
    let mut builder = std::thread::Builder::new();
    if let Some(bytes) = stack {
        builder = builder.stack_size(bytes);
    }
    builder.spawn_scoped(scope, f).ok()
}

/// Whether `bytes` of address space can be mapped now. Asked before a
/// thread is added, with room to spare for its stack and for what it will
/// allocate: under `ulimit -v` a walk goes on with the threads it has
/// rather than take the last of the address space from malloc. Always true
/// without a limit.
pub(crate) fn room_for(bytes: usize) -> bool {
    static LIMITED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if !*LIMITED.get_or_init(address_space_limited) {
        return true;
    }
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
    // SAFETY: a fresh mapping of no access, unmapped at once.
    unsafe {
        let at = libc::mmap(std::ptr::null_mut(), bytes, libc::PROT_NONE, flags, -1, 0);
        if at == libc::MAP_FAILED {
            return false;
        }
        libc::munmap(at, bytes);
    }
    true
}
