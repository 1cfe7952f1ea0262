//! A fast directory walker for Linux.
//!
//! Directories are read with raw `getdents64` into a reused buffer and
//! opened with `openat` relative to their parent; entries come out in
//! [`Chunk`]s carrying what the kernel already said (name bytes, type,
//! inode, depth), with metadata fetched only on demand or in bulk.
//!
//! The data path: [`read`](crate::read) (one directory → chunks) →
//! [`schedule`](crate::schedule) (which directory next, on which thread) →
//! [`filter`] (what is yielded, where to descend) → your [`Visitor`].

mod dir;
pub mod entry;
pub mod error;
pub mod filter;
pub mod ignore;
mod hooks;
mod iter;
pub mod meta;
mod read;
mod schedule;
mod walker;

pub use entry::{Chunk, Entry, EntryRef, FileType};
pub use error::{Error, ErrorKind};
pub use filter::{Decision, DirInfo, EntryFilter, FilterState, RawEntry};
pub use iter::{Chunks, Walk};
pub use meta::Metadata;
pub use walker::{Flow, Order, Sort, Visitor, WalkBuilder};
