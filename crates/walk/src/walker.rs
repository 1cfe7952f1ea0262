//! How a walk is run: by this process's threads ([`Alone`]), or shared
//! with the other ranks of an MPI job (`ranks::OnRanks`, feature `mpi`).
//! Code that runs either way (fnd's search, fdu's scan) takes a
//! `&impl Walker` and never asks which.
//!
//! ```
//! use fnd_walk::{Alone, Chunk, Flow, Visitor, WalkBuilder, Walker};
//!
//! struct Count(usize);
//! impl Visitor for Count {
//!     fn visit(&mut self, chunk: &mut Chunk) -> Flow {
//!         self.0 += chunk.len();
//!         Flow::Continue
//!     }
//! }
//!
//! fn count(walker: &impl Walker, builder: WalkBuilder) -> usize {
//!     let mut seen = 0;
//!     walker.visit(builder, || Count(0), |c| seen += c.0);
//!     seen
//! }
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("f"), "").unwrap();
//! assert_eq!(count(&Alone, WalkBuilder::new(dir.path()).min_depth(1)), 1);
//! ```

use crate::builder::WalkBuilder;
use crate::visit::Visitor;

/// Runs a walk: [`Alone`] here, `ranks::OnRanks` over an MPI job.
pub trait Walker {
    /// Run `builder`'s walk with a visitor per thread from `make`, each
    /// handed to `done` when its thread ends.
    fn visit<V, M, D>(&self, builder: WalkBuilder, make: M, done: D)
    where
        V: Visitor,
        M: Fn() -> V + Sync,
        D: FnMut(V);
}

/// The walk on this process's threads alone ([`WalkBuilder::visit`]).
pub struct Alone;

impl Walker for Alone {
    fn visit<V, M, D>(&self, builder: WalkBuilder, make: M, done: D)
    where
        V: Visitor,
        M: Fn() -> V + Sync,
        D: FnMut(V),
    {
        builder.visit(make, done);
    }
}
