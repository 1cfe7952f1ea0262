//! A fast, streaming, parallel directory walker for Linux.
//!
//! Directories are read with raw `getdents64` into a reused buffer and
//! opened with `openat` relative to their parent; entries come out in
//! [`Chunk`]s carrying what the kernel already said (name bytes, type,
//! inode, depth), with metadata fetched only on demand or in bulk.
//!
//! ```
//! use fnd_walk::WalkBuilder;
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # std::fs::create_dir(dir.path().join("src")).unwrap();
//! # std::fs::write(dir.path().join("src/lib.rs"), "").unwrap();
//! # let root = dir.path();
//! for entry in WalkBuilder::new(root).min_depth(1) {
//!     let entry = entry.unwrap();
//!     println!("{} ({:?}, depth {})", entry.path().display(), entry.file_type(), entry.depth());
//! }
//! ```
//!
//! # Five ways to consume a walk
//!
//! | | runs your code | per-entry cost | order |
//! |---|---|---|---|
//! | [`WalkBuilder::iter`] (or `for e in builder`) | on your thread | one path allocation | serial orders: deterministic |
//! | [`WalkBuilder::chunks`] | on your thread | none: borrowed [`EntryRef`]s | as above |
//! | [`WalkBuilder::for_each`] / [`for_each_with`](WalkBuilder::for_each_with) | on the walking threads | none | directories interleave |
//! | [`WalkBuilder::visit`] with a [`Visitor`] | on the walking threads, one visitor each | none | as above |
//! | [`WalkBuilder::visit_tree`] with a [`TreeVisitor`] | on one walking thread at a time | entries copied once into owned chunks | tree order ([`TreeOrder`]) on every core, memory bounded by a window |
//!
//! The iterators run the walk on background threads and receive whole
//! chunks through a bounded channel: a slow consumer holds the walk back
//! instead of letting it buffer the tree, and dropping the iterator stops
//! every walking thread (and waits for them) before `drop` returns.
//! [`Flow::Stop`] does the same from a closure or visitor.
//!
//! # Compared with walkdir, ignore and jwalk
//!
//! * One `getdents64` buffer per thread and `openat` relative to the parent
//!   (no path resolution per directory, no `opendir`/`readdir` per entry);
//!   names stay bytes, never converted to `String`. On ext4, Btrfs and
//!   tmpfs a read whose last record marks the directory's end is the last,
//!   so the call that would return 0 is skipped (three system calls per
//!   directory, not four).
//! * Entries travel in chunks (one allocation per chunk, not per entry);
//!   [`Entry`] is built only if you iterate entries one by one.
//! * Metadata: lazily per entry ([`EntryRef::metadata`], an `fstatat`
//!   relative to the open parent), or up front with
//!   [`WalkBuilder::metadata`]: the walking threads stat each entry once,
//!   in parallel, and [`EntryRef::cached_metadata`] reads it without a
//!   system call. A total size never stats twice.
//! * Filtering happens on the reading thread before entries are batched:
//!   [`WalkBuilder::prune`] (do not descend), [`WalkBuilder::keep`] (do not
//!   yield), [`WalkBuilder::skip_hidden`], [`WalkBuilder::git_ignore`] /
//!   [`WalkBuilder::ignore_rules`], or your own [`EntryFilter`] (per
//!   entry, no state) or [`DirHook`] (a typed state per directory,
//!   inherited from its parent's: what `fdu` adds sizes up with).
//! * Ordering differs from walkdir's: [`Order::DepthFirst`] yields a
//!   directory's entries together, then each subdirectory's subtree (not
//!   each directory immediately followed by its contents), because a
//!   directory is streamed out as it is read.
//!
//! # Errors
//!
//! Errors come per path, in the stream ([`Error`], with the path, depth and
//! errno); the walk goes on after them. [`WalkBuilder::lenient`] drops the
//! ones a live tree produces as a matter of course ([`Error::is_benign`]:
//! permission denied, vanished entries, loops), except at a root: a missing
//! root is always reported.
//!
//! # Memory
//!
//! What a walk holds does not grow with the number of entries:
//!
//! * per walking thread (one per core, and up to
//!   [`io_depth`](WalkBuilder::io_depth) once reads wait on I/O): a 64 KiB
//!   `getdents64` buffer, the chunk being
//!   filled (at most [`chunk_size`](WalkBuilder::chunk_size) entries, or the
//!   whole directory with [`sort`](WalkBuilder::sort)), and the names of the
//!   subdirectories of the directory being read;
//! * the directories found but not read yet (a name and a pointer each):
//!   with the depth-first and parallel orders, the unread siblings along
//!   the current paths; with [`Order::BreadthFirst`], one level of the tree;
//! * open descriptors: at most [`max_open_fds`](WalkBuilder::max_open_fds)
//!   (by default from `RLIMIT_NOFILE`, at most 4096);
//! * the iterators: fewer than `(buffer_chunks + threads) × 2 × chunk_size`
//!   entries waiting for the consumer ([`WalkBuilder::buffer_chunks`]).
//!
//! # Inside
//!
//! The crate owns the reading of a tree, from `getdents64` to the chunks a
//! visitor is lent, the orders and schedulers over it, the filters, and
//! the bytes of a directory handed to another process (which `fnd-mpi`
//! carries without reading them). Its modules form layers, each using only
//! those below it; the workspace's ARCHITECTURE.md lists them, bottom
//! first, and `tests/layers.rs` checks every import against that list.

mod budget;
mod builder;
mod dir;
mod dirent;
pub mod entry;
pub mod error;
pub mod filter;
#[doc(hidden)]
pub mod fuzzing;
mod hooks;
pub mod ignore;
mod io;
mod iter;
pub mod meta;
mod mounts;
mod open;
mod ordered;
mod panics;
#[cfg(feature = "mpi")]
pub mod ranks;
mod read;
pub mod remove;
mod schedule;
mod settings;
mod split;
mod visit;
mod walker;

pub use budget::{fit_address_space, skip_signal_stacks_under_limit, when_descriptors_free, EndWhenExhausted};
pub use builder::{cores, WalkBuilder, MAX_IO_DEPTH, MAX_THREADS};
pub use entry::{is_file_name, Chunk, ChunkBuf, Entry, EntryRef};
pub use error::{Error, ErrorKind};
pub use filter::{Decision, DirHook, DirInfo, EntryFilter, ImportError, MovedDir, RawEntry};
pub use io::waited_elsewhere;
pub use iter::{Chunks, Walk};
pub use meta::{FileType, Metadata};
pub use mounts::served_remotely;
pub use ordered::{DirEvent, Held, Nest, TreeOrder, TreeVisitor, Within};
pub use panics::end_process_on_panic;
pub use settings::{Order, Sort};
pub use visit::{Flow, Visitor};
pub use walker::{Alone, Walker};
