//! Errors met during a walk. They are reported per entry and never end the
//! walk by themselves: the caller decides (see `Visitor::error`).
//!
//! Offers [`Error`] (a path, its depth and what went wrong) and
//! [`ErrorKind`]. Relies on nothing else in this crate.

use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::io::Errno;

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A system call failed (EACCES, ENOENT for an entry that vanished, ELOOP, …).
    Io(Errno),
    /// Following symlinks led back to a directory that is its own ancestor.
    Loop {
        /// The ancestor the link leads back to.
        ancestor: PathBuf,
    },
    /// A symlink met while following links whose target cannot be reached:
    /// ELOOP (a link to itself), ENOTDIR, EACCES. A dangling link (ENOENT)
    /// is not an error: it is yielded as a link.
    Follow(Errno),
}

/// An error at one path of the walk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    path: PathBuf,
    depth: usize,
    kind: ErrorKind,
}

impl Error {
    pub(crate) fn io(path: &[u8], depth: usize, errno: Errno) -> Self {
        Error {
            path: Path::new(OsStr::from_bytes(path)).to_path_buf(),
            depth,
            kind: ErrorKind::Io(errno),
        }
    }

    pub(crate) fn follow(path: &[u8], depth: usize, errno: Errno) -> Self {
        Error {
            path: Path::new(OsStr::from_bytes(path)).to_path_buf(),
            depth,
            kind: ErrorKind::Follow(errno),
        }
    }

    pub(crate) fn loop_at(path: &[u8], depth: usize, ancestor: &[u8]) -> Self {
        Error {
            path: Path::new(OsStr::from_bytes(path)).to_path_buf(),
            depth,
            kind: ErrorKind::Loop {
                ancestor: Path::new(OsStr::from_bytes(ancestor)).to_path_buf(),
            },
        }
    }

    /// The path the error happened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The depth of the path (a root is 0).
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The errno, for I/O errors.
    pub fn errno(&self) -> Option<Errno> {
        match self.kind {
            ErrorKind::Io(e) | ErrorKind::Follow(e) => Some(e),
            ErrorKind::Loop { .. } => None,
        }
    }

    /// True for the errors a lenient walk skips: permission denied, an entry
    /// that vanished while the walk ran, a symlink loop.
    pub fn is_benign(&self) -> bool {
        match self.kind {
            ErrorKind::Io(e) | ErrorKind::Follow(e) => {
                matches!(
                    e,
                    Errno::ACCESS | Errno::PERM | Errno::NOENT | Errno::LOOP | Errno::NOTDIR
                )
            }
            ErrorKind::Loop { .. } => true,
        }
    }

    /// True when the machine, not the tree, refused: out of descriptors
    /// (after the walk waited for its own to close), memory or threads.
    /// A tool that hides errors by default must still say so: entries
    /// under this path were not listed.
    pub fn is_resource_limit(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Io(Errno::MFILE | Errno::NFILE | Errno::NOMEM | Errno::AGAIN)
        )
    }

    /// The error as `std::io::Error`.
    pub fn io_error(&self) -> std::io::Error {
        match self.kind {
            ErrorKind::Io(e) | ErrorKind::Follow(e) => e.into(),
            ErrorKind::Loop { .. } => std::io::Error::other("filesystem loop detected"),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::Io(e) | ErrorKind::Follow(e) => {
                write!(f, "{}: {}", self.path.display(), std::io::Error::from(*e))
            }
            ErrorKind::Loop { ancestor } => write!(
                f,
                "{}: filesystem loop detected (it is the same directory as {})",
                self.path.display(),
                ancestor.display()
            ),
        }
    }
}

impl std::error::Error for Error {}
