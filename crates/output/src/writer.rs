//! The descriptor results are written to, shared by every thread.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rustix::io::Errno;

/// Raw `write(2)` of whole buffers to one descriptor, serialised between
/// threads, remembering how output ended.
///
/// Clones share the descriptor and its state: once a write fails, every
/// clone refuses to write more. A closed pipe (`EPIPE`: the reader went
/// away, as in `tool | head -1`) is an expected end and no
/// [`failure`](Self::failure); anything else (`ENOSPC` on `/dev/full`, say)
/// is remembered for the tool to report.
///
/// ```
/// use fnd_output::Writer;
///
/// # fn main() -> std::io::Result<()> {
/// let (reader, writer) = rustix::pipe::pipe()?;
/// let out = Writer::new(writer);
/// assert!(out.write_all(b"first\n"));
/// drop(reader);
/// // The reader is gone: output stops, quietly.
/// assert!(!out.write_all(b"second\n"));
/// assert!(out.is_broken());
/// assert_eq!(out.failure(), None);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Writer {
    inner: Arc<Inner>,
}

struct Inner {
    /// `None`: the process's stdout, which is never closed here.
    fd: Option<OwnedFd>,
    lock: Mutex<()>,
    broken: AtomicBool,
    failure: Mutex<Option<Errno>>,
}

/// A pipe this large (the unprivileged maximum by default) lets a writer
/// run ahead of its reader; with the default 64 KiB, every buffer written
/// waits for the reader to drain the previous one.
const PIPE_SIZE: usize = 1 << 20;

impl Writer {
    /// The process's standard output; a pipe there is grown to 1 MiB.
    pub fn stdout() -> Writer {
        Writer::with_fd(None)
    }

    /// Write to `fd` (closed when the last clone is dropped); a pipe is
    /// grown to 1 MiB.
    pub fn new(fd: OwnedFd) -> Writer {
        Writer::with_fd(Some(fd))
    }

    fn with_fd(fd: Option<OwnedFd>) -> Writer {
        let writer = Writer {
            inner: Arc::new(Inner {
                fd,
                lock: Mutex::new(()),
                broken: AtomicBool::new(false),
                failure: Mutex::new(None),
            }),
        };
        grow_pipe(writer.fd());
        writer
    }

    fn fd(&self) -> BorrowedFd<'_> {
        match &self.inner.fd {
            Some(fd) => fd.as_fd(),
            None => rustix::stdio::stdout(),
        }
    }

    /// Output ended: the reader went away, or a write failed.
    pub fn is_broken(&self) -> bool {
        self.inner.broken.load(Ordering::Relaxed)
    }

    /// The error that ended output, unless it was a closed pipe.
    pub fn failure(&self) -> Option<Errno> {
        *lock(&self.inner.failure)
    }

    /// Write all of `bytes`, with no other thread's bytes in between; false
    /// when output has ended (now or before).
    pub fn write_all(&self, mut bytes: &[u8]) -> bool {
        if self.is_broken() {
            return false;
        }
        let _turn = lock(&self.inner.lock);
        let fd = self.fd();
        while !bytes.is_empty() {
            match rustix::io::write(fd, bytes) {
                Ok(n) => bytes = &bytes[n..],
                Err(Errno::INTR) => {}
                Err(e) => {
                    if e != Errno::PIPE {
                        *lock(&self.inner.failure) = Some(e);
                    }
                    self.inner.broken.store(true, Ordering::Relaxed);
                    return false;
                }
            }
        }
        true
    }

    /// Write all of `buf` and empty it (keeping its capacity for reuse);
    /// false when output has ended.
    pub fn write_and_clear(&self, buf: &mut Vec<u8>) -> bool {
        let ok = buf.is_empty() || self.write_all(buf);
        buf.clear();
        ok && !self.is_broken()
    }
}

/// A poisoned lock still guards plain data: a panicking writer leaves
/// nothing half-updated behind.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn grow_pipe(fd: BorrowedFd<'_>) {
    let is_pipe = rustix::fs::fstat(fd)
        .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Fifo);
    if is_pipe {
        // Best effort: a smaller pipe only costs speed.
        let _ = rustix::pipe::fcntl_setpipe_size(fd, PIPE_SIZE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{file_writer, full_device};

    #[test]
    fn writes_everything_to_a_file() {
        let (out, path, _dir) = file_writer();
        let big = vec![b'x'; 3 << 20];
        assert!(out.write_all(&big));
        assert!(out.clone().write_all(b"end"));
        let written = std::fs::read(&path).unwrap();
        assert_eq!(written.len(), big.len() + 3);
        assert!(written.ends_with(b"xend"));
        assert!(!out.is_broken());
    }

    #[test]
    fn a_pipe_grows_to_a_mebibyte() {
        let (_reader, writer) = rustix::pipe::pipe().unwrap();
        let out = Writer::new(writer);
        // The kernel may refuse (a lowered pipe-max-size); then it stays.
        let size = rustix::pipe::fcntl_getpipe_size(out.fd()).unwrap();
        assert!(size == PIPE_SIZE || size == 64 * 1024, "{size}");
    }

    #[test]
    fn a_full_device_is_a_remembered_failure() {
        let Some(out) = full_device() else { return };
        assert!(!out.write_all(b"x\n"));
        assert!(out.is_broken());
        assert_eq!(out.failure(), Some(Errno::NOSPC));
        // Nothing more is tried, and the first error stays.
        assert!(!out.write_all(b"y\n"));
        assert_eq!(out.failure(), Some(Errno::NOSPC));
    }

    #[test]
    fn write_and_clear_keeps_the_capacity() {
        let (out, _, _dir) = file_writer();
        let mut buf = Vec::with_capacity(100);
        buf.extend_from_slice(b"line\n");
        assert!(out.write_and_clear(&mut buf));
        assert!(buf.is_empty());
        assert!(buf.capacity() >= 100);
        assert!(out.write_and_clear(&mut buf), "nothing to write is no failure");
    }

    #[test]
    fn after_a_closed_pipe_even_an_empty_write_says_output_ended() {
        let (reader, writer) = rustix::pipe::pipe().unwrap();
        let out = Writer::new(writer);
        drop(reader);
        assert!(!out.write_and_clear(&mut b"x".to_vec()));
        assert!(!out.write_and_clear(&mut Vec::new()));
        assert_eq!(out.failure(), None);
    }
}
