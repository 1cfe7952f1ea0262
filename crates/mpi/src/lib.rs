//! fnd-mpi: one walk over many ranks of an MPI job. The ranks share pending
//! work by stealing, agree on the end without a central queue, stop
//! together, and send their output to rank 0.
//!
//! Layers, bottom first (each uses only the ones above it in this list):
//! - [`codec`]: the bytes of every message between ranks, and the readers
//!   and writers for payloads. No MPI; fuzzed (`fuzz/`, `mpi_messages`).
//! - [`launch`]: whether an MPI launcher started this process; what a build
//!   without MPI asks before it refuses to run as N copies.
//! - [`protocol`]: work stealing, Dijkstra–Scholten termination, stop and
//!   the end of the job, as a state machine without MPI or threads.
//!
//! Work items are opaque byte strings to this crate: the rank's own pool
//! of workers implements [`protocol::Local`], and nothing here runs per
//! entry of a tree.

pub mod codec;
pub mod launch;
pub mod protocol;
