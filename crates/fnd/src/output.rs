//! Writing results: paths are bytes, built into a large per-thread buffer
//! and written to stdout in few syscalls, whole lines at a time, so threads
//! can share stdout without interleaving inside a line.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use rustix::io::Errno;

/// Flush threshold: writes of tens of KiB keep the syscall count low
/// without holding much memory per thread.
pub const BUF_SIZE: usize = 64 * 1024;

/// Serialises writes to stdout and remembers a broken pipe.
pub struct Stdout {
    lock: Mutex<()>,
    broken: AtomicBool,
    failed: Mutex<Option<Errno>>,
}

impl Stdout {
    pub fn new() -> Self {
        grow_pipe();
        Stdout { lock: Mutex::new(()), broken: AtomicBool::new(false), failed: Mutex::new(None) }
    }

    /// The reader went away (EPIPE): stop quietly.
    pub fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }

    /// A write error other than a closed pipe (ENOSPC on /dev/full, say).
    pub fn failure(&self) -> Option<Errno> {
        *self.failed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Write all of `bytes`; false when output can no longer be written.
    pub fn write_all(&self, mut bytes: &[u8]) -> bool {
        if self.is_broken() {
            return false;
        }
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let out = rustix::stdio::stdout();
        while !bytes.is_empty() {
            match rustix::io::write(out, bytes) {
                Ok(n) => bytes = &bytes[n..],
                Err(Errno::INTR) => {}
                Err(e) => {
                    if e != Errno::PIPE {
                        *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                    }
                    self.broken.store(true, Ordering::Relaxed);
                    return false;
                }
            }
        }
        true
    }
}

/// When stdout is a pipe, ask for a 1 MiB one (the unprivileged maximum by
/// default): with the default 64 KiB, every buffer written waits for the
/// reader to drain the previous one.
fn grow_pipe() {
    let out = rustix::stdio::stdout();
    let is_pipe = rustix::fs::fstat(out).is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Fifo);
    if is_pipe {
        let _ = rustix::pipe::fcntl_setpipe_size(out, PIPE_SIZE);
    }
}

const PIPE_SIZE: usize = 1 << 20;

impl Default for Stdout {
    fn default() -> Self {
        Self::new()
    }
}

/// A thread's output buffer over the shared stdout.
pub struct Buffer<'a> {
    buf: Vec<u8>,
    out: &'a Stdout,
}

impl<'a> Buffer<'a> {
    pub fn new(out: &'a Stdout) -> Self {
        Buffer { buf: Vec::with_capacity(BUF_SIZE + 4096), out }
    }

    /// The bytes not yet written; callers append one whole record, then call
    /// [`end_record`](Self::end_record).
    pub fn bytes(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// A record is complete: write the buffer if it is full. False when
    /// output is gone and the walk should stop.
    pub fn end_record(&mut self) -> bool {
        if self.buf.len() >= BUF_SIZE {
            return self.flush();
        }
        true
    }

    pub fn flush(&mut self) -> bool {
        let ok = self.buf.is_empty() || self.out.write_all(&self.buf);
        self.buf.clear();
        ok
    }
}

impl Drop for Buffer<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}
