//! One big output buffer shared by every thread: lines are appended whole
//! under a short lock (once per directory, or once per chunk for `-a`) and
//! written with raw `write(2)` a megabyte at a time, never line by line.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use std::io::Write;
use std::os::fd::FromRawFd;

/// Write once this much is buffered.
const FLUSH_AT: usize = 1 << 20;

pub struct Output {
    buf: Mutex<Vec<u8>>,
    /// A write failed (other than a closed pipe, which ends output quietly).
    failed: AtomicBool,
    closed: AtomicBool,
}

impl Output {
    pub fn new() -> Output {
        Output {
            buf: Mutex::new(Vec::with_capacity(64 * 1024)),
            failed: AtomicBool::new(false),
            closed: AtomicBool::new(false),
        }
    }

    /// Append whole lines.
    pub fn write(&self, lines: &[u8]) {
        let mut buf = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        buf.extend_from_slice(lines);
        if buf.len() >= FLUSH_AT {
            self.write_out(&buf);
            buf.clear();
        }
    }

    pub fn flush(&self) {
        let mut buf = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        self.write_out(&buf);
        buf.clear();
    }

    /// True when a write failed for a reason other than a closed pipe.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// The reader is gone: no point in going on.
    pub fn closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    fn write_out(&self, bytes: &[u8]) {
        if self.closed() || bytes.is_empty() {
            return;
        }
        // SAFETY: descriptor 1 is open for the life of the process, and
        // ManuallyDrop never closes it; `File` has no buffer of its own.
        let mut stdout = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(1) });
        if let Err(e) = stdout.write_all(bytes) {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                self.failed.store(true, Ordering::Relaxed);
                crate::report(&format!("write error: {}", crate::error_text(&e)));
            }
            self.closed.store(true, Ordering::Relaxed);
        }
    }
}
