//! Writing a command-line tool's results: bytes gathered into large buffers
//! and written with raw `write(2)`, whole records at a time, so that threads
//! can share stdout without interleaving inside a line and the syscall
//! count stays low.
//!
//! - [`Writer`]: the descriptor (stdout, usually), shared by every thread.
//!   A closed pipe (EPIPE) stops output quietly; any other error is
//!   remembered for the tool to report once.
//! - [`Buffer`]: one thread's buffer of whole records, written when it
//!   fills.
//! - [`SharedBuffer`]: one buffer all threads append to under a lock, for
//!   output whose order the threads agree on among themselves.
//! - [`json`]: a JSON string's escapes and base64, for records written
//!   field by field.
//!
//! The crate owns only how bytes reach a descriptor; what a record says is
//! its user's. The modules are layers, each using only those below it; the
//! workspace's ARCHITECTURE.md lists them, bottom first, and
//! `tests/layers.rs` checks every import against that list.
//!
//! ```
//! use fnd_output::{Buffer, Writer};
//!
//! # fn main() -> std::io::Result<()> {
//! # let dir = tempfile::tempdir()?;
//! # let path = dir.path().join("out");
//! let out = Writer::new(std::fs::File::create(&path)?.into());
//! let mut records = Buffer::new(out.clone());
//! for name in ["a", "b/c"] {
//!     records.bytes().extend_from_slice(name.as_bytes());
//!     records.bytes().push(b'\n');
//!     assert!(records.end_record());
//! }
//! drop(records); // writes what is left
//! assert_eq!(std::fs::read(&path)?, b"a\nb/c\n");
//! assert!(out.failure().is_none());
//! # Ok(())
//! # }
//! ```

mod buffer;
pub mod json;
mod shared;
mod writer;

pub use buffer::Buffer;
pub use shared::SharedBuffer;
pub use writer::Writer;

/// Re-exported so that callers can name [`Writer::failure`]'s error.
pub use rustix::io::Errno;

#[cfg(test)]
mod testing {
    use std::path::PathBuf;

    use crate::Writer;

    /// A writer to a new file, the file's path, and the directory that
    /// holds it (removed when dropped).
    pub fn file_writer() -> (Writer, PathBuf, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let writer = Writer::new(std::fs::File::create(&path).unwrap().into());
        (writer, path, dir)
    }

    /// A writer to `/dev/full`, where every write fails with ENOSPC.
    pub fn full_device() -> Option<Writer> {
        match std::fs::OpenOptions::new().write(true).open("/dev/full") {
            Ok(full) => Some(Writer::new(full.into())),
            Err(_) => {
                eprintln!("skipped: no /dev/full");
                None
            }
        }
    }
}
