//! MPI itself: initialization at threading level `Multiple`, and the ways
//! a rank ends the whole job when something is wrong.
//!
//! `Multiple` because the rank's own threads, not one main thread, meet
//! MPI: the transport's thread sends and receives while any thread may
//! panic, and the panic hook installed here calls `MPI_Abort` from that
//! thread. Debian's Open MPI (4.1) provides it (the `threads` example,
//! run by the tests, has several threads per rank sending and receiving
//! at once).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::Threading;

/// The exit status of a job aborted by a panic (Rust's own for a panic).
pub const PANIC_STATUS: i32 = 101;

/// The exit status of a job aborted by [`fatal`].
pub const FATAL_STATUS: i32 = 1;

static PROGRAM: OnceLock<&'static str> = OnceLock::new();
/// Between a successful initialization and finalization: when
/// `MPI_Abort` may be called.
static LIVE: AtomicBool = AtomicBool::new(false);

/// The MPI environment of this process: initialized when made, finalized
/// when dropped. At most one per process.
pub struct World {
    // Dropped last of all the crate's MPI objects: the job borrows the world.
    universe: Option<Universe>,
    rank: usize,
    size: usize,
}

/// Why MPI could not be used.
#[derive(Debug)]
pub enum InitError {
    /// MPI was initialized before (by this crate or someone else).
    AlreadyInitialized,
    /// The MPI library gives a lower threading level than `Multiple`.
    Threading {
        /// What it gives.
        provided: Threading,
        /// This rank (only rank 0 reports it).
        rank: usize,
    },
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitError::AlreadyInitialized => write!(f, "MPI was initialized twice"),
            InitError::Threading { provided, .. } => write!(
                f,
                "the MPI library provides threading level {provided:?}, and this program needs Multiple \
                 (use an MPI built with thread support, e.g. Open MPI's --enable-mpi-thread-multiple)"
            ),
        }
    }
}

impl InitError {
    /// Says why on rank 0's stderr, as `PROGRAM: MESSAGE`, and exits with
    /// status 2 (every rank sees the same error, so each exits alike).
    pub fn exit(self) -> ! {
        let report = match &self {
            InitError::Threading { rank, .. } => *rank == 0,
            InitError::AlreadyInitialized => true,
        };
        if report {
            eprintln!("{}: {self}", program());
        }
        std::process::exit(2)
    }
}

impl World {
    /// Initializes MPI at threading level `Multiple`, and makes a panic on
    /// any thread abort the whole job (after the usual panic message) with
    /// status [`PANIC_STATUS`]. `program` prefixes the crate's messages
    /// (`fnd`, `fdu`).
    pub fn init(program: &'static str) -> Result<World, InitError> {
        let _ = PROGRAM.set(program);
        let (universe, provided) =
            mpi::initialize_with_threading(Threading::Multiple).ok_or(InitError::AlreadyInitialized)?;
        let world = universe.world();
        let (rank, size) = (world.rank() as usize, world.size() as usize);
        if provided != Threading::Multiple {
            drop(universe);
            return Err(InitError::Threading { provided, rank });
        }
        LIVE.store(true, Ordering::SeqCst);
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            abort(PANIC_STATUS);
        }));
        Ok(World {
            universe: Some(universe),
            rank,
            size,
        })
    }

    /// This process's rank in the job.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.size
    }
}

impl Drop for World {
    fn drop(&mut self) {
        LIVE.store(false, Ordering::SeqCst);
        drop(self.universe.take());
    }
}

fn program() -> &'static str {
    PROGRAM.get().copied().unwrap_or("fnd")
}

/// Ends every rank of the job at once with `status` (through `MPI_Abort`);
/// a plain exit when MPI is not running.
pub fn abort(status: i32) -> ! {
    if LIVE.load(Ordering::SeqCst) {
        SimpleCommunicator::world().abort(status)
    }
    std::process::exit(status)
}

/// Says `PROGRAM: MESSAGE` on stderr and aborts the job with
/// [`FATAL_STATUS`]: what a rank does when the job cannot go on (a
/// message that does not decode, a broken protocol).
pub fn fatal(message: impl fmt::Display) -> ! {
    eprintln!("{}: {message}", program());
    abort(FATAL_STATUS)
}
