//! fnd-mpi: one walk over many ranks of an MPI job. The ranks share pending
//! work by stealing, agree on the end without a central queue, stop
//! together, and send their output to rank 0.
//!
//! The crate owns what the ranks say to each other: the bytes of every
//! message, work stealing, the end of the job, output to rank 0, and the
//! launcher's setup. It knows nothing of trees: a work item is opaque
//! bytes (a walk encodes its own, see `fnd-walk`'s `schedule/handoff.rs`).
//! Without its feature `mpi` it is the codec, the protocol and the
//! launcher checks, and needs no MPI library.
//!
//! The modules are layers, each using only those below it; the
//! workspace's ARCHITECTURE.md lists them, bottom first, and
//! `tests/layers.rs` checks every import against that list.
//!
//! The rank's own pool of workers implements [`Local`], and nothing here
//! runs per entry of a tree: the pool talks to the transport once per steal, per output chunk
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
