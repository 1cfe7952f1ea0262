//! The visitor contract: what the walk hands to the code that consumes it,
//! and what that code answers.
//!
//! Offers [`Visitor`] (called on the thread that read a directory, with a
//! [`Chunk`] of its entries or an [`Error`]) and [`Flow`] (go on, or stop
//! the whole walk). Every scheduler (serial, the thread pool, and any
//! other) drives visitors through this contract alone; the iterators, the
//! closures of `for_each` and the callers' own visitors all implement it.
//! Relies on `entry` for [`Chunk`] and `error` for [`Error`].

use crate::entry::Chunk;
use crate::error::Error;

/// Whether the walk goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on walking.
    Continue,
    /// Stop the whole walk: every thread stops at its next chunk.
    Stop,
}

/// Receives the walk's output on the thread that read it. In a parallel walk
/// each worker thread has its own visitor (see [`WalkBuilder::visit`](crate::WalkBuilder::visit)).
pub trait Visitor: Send {
    /// A batch of entries from one directory, while the directory is open
    /// (see [`Chunk`]). The chunk may be emptied or its entries taken
    /// ([`Chunk::take`]); the walk reuses its buffers afterwards.
    fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow;

    /// An error at one path; the walk goes on unless this returns `Stop`.
    fn error(&mut self, error: Error) -> Flow {
        let _ = error;
        Flow::Continue
    }
}
