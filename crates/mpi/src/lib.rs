//! fnd-mpi: one walk over many ranks of an MPI job. The ranks share pending
//! work by stealing, agree on the end without a central queue, stop
//! together, and send their output to rank 0.
//!
//! Layers, bottom first (each uses only the ones before it):
//! - [`codec`]: the bytes of every message between ranks, and the readers
//!   and writers for payloads. No MPI; fuzzed (`fuzz/`, `mpi_messages`).
//! - [`stdio`]: where rank 0's output really goes (the launcher's own
//!   stdout, rather than Open MPI's slow copy of a pseudo-terminal).
//! - [`protocol`]: work stealing, Dijkstra–Scholten termination, stop and
//!   the end of the job, as a state machine without MPI or threads.
//! - [`output`]: where rank 0 writes, and the flow control of output.
//! - [`launch`]: whether an MPI launcher started this process; what a build
//!   without MPI asks before it refuses to run as N copies; what a task
//!   changes in how its launcher set it up (Open MPI's default binding of
//!   a rank to one core, the network layers a job on one node probes,
//!   the delay on small messages to the launcher).
//! - `world` (feature `mpi`): MPI initialized at threading level
//!   `Multiple`, and aborting the whole job on a panic or a fatal error.
//! - `transport` (feature `mpi`): the thread that owns a rank's MPI
//!   traffic and drives the protocol.
//! - `job` (feature `mpi`): `Job` and `Handle`, what a program uses;
//!   `Prepared`, a rank's side of a job made before MPI is up, so that
//!   a rank can start walking while `MPI_Init_thread` runs.
//!
//! Work items are opaque byte strings to this crate: the rank's own pool
//! of workers implements [`Local`], and nothing here runs per entry of a
//! tree: the pool talks to the transport once per steal, per output chunk
//! and per application message.

pub mod codec;
#[cfg(feature = "mpi")]
pub mod job;
pub mod launch;
pub mod output;
pub mod protocol;
pub mod stdio;
#[cfg(feature = "mpi")]
mod transport;
#[cfg(feature = "mpi")]
pub mod world;

pub use codec::Stream;
#[cfg(feature = "mpi")]
pub use job::{Finished, Handle, Job, Prepared};
pub use output::{Sink, StdSink};
pub use protocol::{Config, Local, Stats};
#[cfg(feature = "mpi")]
pub use transport::Tuning;
#[cfg(feature = "mpi")]
pub use world::{InitError, World};
