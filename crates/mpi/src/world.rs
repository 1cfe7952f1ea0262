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

use mpi::collective::{CommunicatorCollectives, Root};
use mpi::datatype::{Partition, PartitionMut};
use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::{Count, Threading};

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
        crate::launch::no_delay_to_launcher();
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

    /// Rank 0's `bytes`, on every rank: what the program decides once for
    /// all of them (whether output goes to a terminal, say). A collective
    /// call: every rank makes it, before a job starts or after it is
    /// finished; `bytes` is read on rank 0 only.
    pub fn broadcast(&self, bytes: &[u8]) -> Vec<u8> {
        let world = SimpleCommunicator::world();
        let root = world.process_at_rank(0);
        let mut len = bytes.len() as u64;
        root.broadcast_into(&mut len);
        let mut buf = if self.rank == 0 {
            bytes.to_vec()
        } else {
            vec![0; len as usize]
        };
        root.broadcast_into(&mut buf[..]);
        buf
    }

    /// Every rank's `bytes`, by rank, on every rank: what each found out
    /// alone, for all of them to decide alike (did every rank parse its
    /// options, does every rank see the same paths). A collective call,
    /// as [`broadcast`](Self::broadcast).
    ///
    /// # Panics
    /// If the bytes of all ranks together reach 2 GiB.
    pub fn all_gather(&self, bytes: &[u8]) -> Vec<Vec<u8>> {
        let world = SimpleCommunicator::world();
        let mine = Count::try_from(bytes.len()).expect("less than 2 GiB from one rank");
        let mut counts = vec![0 as Count; self.size];
        world.all_gather_into(&mine, &mut counts[..]);
        let displs: Vec<Count> = counts
            .iter()
            .scan(0 as Count, |at, &n| {
                let start = *at;
                *at = at.checked_add(n).expect("less than 2 GiB from all ranks");
                Some(start)
            })
            .collect();
        let total = counts.iter().map(|&n| n as usize).sum();
        let mut all = vec![0u8; total];
        {
            let mut partition = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
            world.all_gather_varcount_into(bytes, &mut partition);
        }
        counts
            .iter()
            .zip(&displs)
            .map(|(&n, &at)| all[at as usize..(at + n) as usize].to_vec())
            .collect()
    }
}

impl World {
    /// Sends `to_each[r]` to rank `r`, and returns what each rank sent this
    /// one, by rank: a personal exchange (`MPI_Alltoallv`), for work that
    /// has an owner rank per item (fdu sends each hard link to the rank
    /// that owns its inode). A collective call, as
    /// [`broadcast`](Self::broadcast).
    ///
    /// # Panics
    /// If `to_each` does not hold one buffer per rank, or what one rank
    /// sends or receives in all reaches 2 GiB.
    pub fn all_to_all(&self, to_each: &[Vec<u8>]) -> Vec<Vec<u8>> {
        assert_eq!(to_each.len(), self.size, "one buffer per rank");
        let world = SimpleCommunicator::world();
        let offsets = |counts: &[Count]| -> Vec<Count> {
            counts
                .iter()
                .scan(0 as Count, |at, &n| {
                    let start = *at;
                    *at = at.checked_add(n).expect("less than 2 GiB in one exchange");
                    Some(start)
                })
                .collect()
        };
        let send_counts: Vec<Count> = to_each
            .iter()
            .map(|b| Count::try_from(b.len()).expect("less than 2 GiB to one rank"))
            .collect();
        let mut recv_counts = vec![0 as Count; self.size];
        world.all_to_all_into(&send_counts[..], &mut recv_counts[..]);
        let send_displs = offsets(&send_counts);
        let recv_displs = offsets(&recv_counts);
        // One byte more than the counts cover: Open MPI refuses an empty
        // buffer (MPI_ERR_ARG) even when every count is 0.
        let mut sent: Vec<u8> = to_each.concat();
        sent.push(0);
        let mut received = vec![0u8; recv_counts.iter().map(|&n| n as usize).sum::<usize>() + 1];
        {
            let partition = Partition::new(&sent[..], &send_counts[..], &send_displs[..]);
            let mut into = PartitionMut::new(&mut received[..], &recv_counts[..], &recv_displs[..]);
            world.all_to_all_varcount_into(&partition, &mut into);
        }
        recv_counts
            .iter()
            .zip(&recv_displs)
            .map(|(&n, &at)| received[at as usize..(at + n) as usize].to_vec())
            .collect()
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
