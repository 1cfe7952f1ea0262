//! One walk over many nodes (feature `mpi`): the ranks of an MPI job
//! share a walk's directories, each rank walking with its own threads and
//! I/O depth.
//!
//! Rank 0 starts with the roots; an idle rank steals pending directories
//! from a random other rank (its transport thread answers, without
//! waiting for the workers); the job ends when every rank is idle and
//! nothing is in flight (`fnd_mpi`). What travels is a directory's path,
//! depth, root, the device/inode chain that loop detection and `-x` need,
//! and its parent's hook state if the hook can export it (see
//! [`DirHook::export_state`](crate::DirHook::export_state); the
//! ignore rules can). Nothing crosses ranks per entry: what a visitor
//! does with its entries (print them through `fnd_mpi::Handle::output`,
//! add them up) is its own business.
//!
//! Every rank must build the same walk: the same roots in the same order,
//! the same options and filters. Nodes may number a shared file system's
//! device differently: a rank maps a root's device to its own by stat'ing
//! the root's path, and refuses (ending the job with one line) a root that
//! leads to another inode than on the rank that handed its part over.
//! Devices below a root (other mounts, with links followed) are kept as
//! the giving rank saw them.

pub use crate::schedule::ranks::{Hold, RankCounts, Ranks};

use crate::builder::WalkBuilder;
use crate::visit::Visitor;
use crate::walker::Walker;

/// The walk shared with the other ranks of the job: each rank's part on
/// its own threads ([`WalkBuilder::visit_ranks`]).
pub struct OnRanks<'a> {
    pub ranks: &'a Ranks,
    pub handle: &'a fnd_mpi::Handle,
}

impl Walker for OnRanks<'_> {
    fn visit<V, M, D>(&self, builder: WalkBuilder, make: M, done: D)
    where
        V: Visitor,
        M: Fn() -> V + Sync,
        D: FnMut(V),
    {
        builder.visit_ranks(self.ranks, self.handle, make, done);
    }
}
