//! Output bound for rank 0: where it is written, and how many chunks a
//! rank may have on their way at once.
//!
//! A rank's output travels in chunks of whole records (the caller never
//! hands a chunk that ends inside a line, a NUL-terminated record or a
//! command's output, and the transport never splits one). Rank 0 writes
//! each chunk as it arrives, through a [`Sink`], and acknowledges it once
//! written; a rank that has [`Window::new`]'s limit of chunks
//! unacknowledged waits. Rank 0 itself receives chunks only while what it
//! holds unwritten is under its backlog limit, so its memory is bounded
//! whatever the number of ranks.

use std::io::Write;
use std::sync::{Condvar, Mutex};

use crate::codec::Stream;

/// Where rank 0 writes output: its own, and what other ranks send.
///
/// Called from several threads (rank 0's workers and its writer thread);
/// each call must write its bytes whole, not interleaved with another's.
pub trait Sink: Send + Sync {
    /// Writes `bytes`, whole records from rank `from`. False when the
    /// stream takes no more (a closed pipe): the job is then stopped.
    fn write(&self, from: usize, stream: Stream, bytes: &[u8]) -> bool;
}

/// Writes to the process's stdout and stderr, each call under the
/// stream's lock.
#[derive(Debug, Default)]
pub struct StdSink;

impl Sink for StdSink {
    fn write(&self, _from: usize, stream: Stream, bytes: &[u8]) -> bool {
        match stream {
            Stream::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(bytes).and_then(|_| out.flush()).is_ok()
            }
            Stream::Stderr => std::io::stderr().lock().write_all(bytes).is_ok(),
        }
    }
}

/// Counts a rank's chunks on their way to rank 0, and makes a sender wait
/// while there are `limit` of them.
#[derive(Debug)]
pub struct Window {
    in_flight: Mutex<usize>,
    acked: Condvar,
    limit: usize,
}

impl Window {
    /// At most `limit` (at least 1) chunks on their way.
    pub fn new(limit: usize) -> Window {
        Window {
            in_flight: Mutex::new(0),
            acked: Condvar::new(),
            limit: limit.max(1),
        }
    }

    /// Waits for room, then counts one more chunk.
    pub fn acquire(&self) {
        let mut n = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        while *n >= self.limit {
            n = self.acked.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        *n += 1;
    }

    /// `count` chunks were written; false (and nothing changed) if fewer
    /// than that are on their way.
    pub fn release(&self, count: usize) -> bool {
        let mut n = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        let Some(left) = n.checked_sub(count) else {
            return false;
        };
        *n = left;
        self.acked.notify_all();
        true
    }

    /// How many chunks are on their way.
    pub fn in_flight(&self) -> usize {
        *self.in_flight.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_full_window_waits_for_an_acknowledgement() {
        let w = Arc::new(Window::new(2));
        w.acquire();
        w.acquire();
        let w2 = Arc::clone(&w);
        let t = std::thread::spawn(move || w2.acquire());
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!t.is_finished(), "a third chunk went out with a window of two");
        assert!(w.release(1));
        t.join().unwrap();
        assert_eq!(w.in_flight(), 2);
        assert!(!w.release(3));
        assert_eq!(w.in_flight(), 2);
    }
}
