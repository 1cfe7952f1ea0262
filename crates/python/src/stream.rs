//! A walk on background threads, its results coming to Python's thread in
//! batches through a bounded channel.
//!
//! The walk never touches Python, so it runs without the GIL; the thread
//! that iterates waits for a batch with the GIL released, and every
//! [`TICK`] it takes the GIL back to let Python run its signal handlers:
//! Ctrl-C raises `KeyboardInterrupt` within a tick even when a read hangs
//! on a slow file system. Dropping a [`Stream`] (the Python iterator is
//! collected, or an exception ends the loop) cancels the walk; `close()`
//! also waits for its threads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use fnd_walk::{Chunk, Error, Flow, Visitor};
use pyo3::prelude::*;

/// How long Python's thread waits for a batch before it looks at signals.
const TICK: Duration = Duration::from_millis(50);

/// Entries a batch holds before it is sent: one channel operation (and
/// one wake-up of Python's thread) per this many, not per directory.
pub const BATCH_ENTRIES: usize = 1024;

/// The iterating side of a walk.
pub struct Stream<T> {
    receiver: Option<Receiver<Vec<T>>>,
    cancel: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// The walking side: where batches go, and whether to stop.
pub struct Outlet<T> {
    sender: Sender<Vec<T>>,
    cancel: Arc<AtomicBool>,
}

impl<T> Clone for Outlet<T> {
    fn clone(&self) -> Self {
        Outlet {
            sender: self.sender.clone(),
            cancel: self.cancel.clone(),
        }
    }
}

impl<T: Send + 'static> Outlet<T> {
    /// Hand a batch over; [`Flow::Stop`] once the iterator is gone.
    pub fn send(&self, batch: Vec<T>) -> Flow {
        if self.cancelled() || self.sender.send(batch).is_err() {
            return Flow::Stop;
        }
        Flow::Continue
    }

    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
}

impl<T: Send + 'static> Stream<T> {
    /// Run `walk` on a thread of its own, handing it the outlet.
    pub fn start(walk: impl FnOnce(Outlet<T>) + Send + 'static) -> PyResult<Stream<T>> {
        // A few batches per core: enough to keep the walk busy while
        // Python builds objects, few enough that memory stays bounded.
        let (sender, receiver) = crossbeam_channel::bounded(4 * fnd_walk::cores());
        let cancel = Arc::new(AtomicBool::new(false));
        let outlet = Outlet {
            sender,
            cancel: cancel.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("fnd-walk-python".into())
            .spawn(move || walk(outlet))
            .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("cannot start the walk's thread: {e}")))?;
        Ok(Stream {
            receiver: Some(receiver),
            cancel,
            thread: Some(thread),
        })
    }

    /// The next batch, `None` when the walk is over. Waits without the GIL;
    /// a pending signal's exception (`KeyboardInterrupt`) comes out here.
    pub fn next_batch(&mut self, py: Python<'_>) -> PyResult<Option<Vec<T>>> {
        loop {
            let Some(receiver) = self.receiver.as_ref() else {
                return Ok(None);
            };
            match py.allow_threads(|| receiver.recv_timeout(TICK)) {
                Ok(batch) => return Ok(Some(batch)),
                Err(RecvTimeoutError::Timeout) => py.check_signals()?,
                Err(RecvTimeoutError::Disconnected) => {
                    self.receiver = None;
                    self.join(py);
                    return Ok(None);
                }
            }
        }
    }

    /// Stop the walk and wait for its threads.
    pub fn stop(&mut self, py: Python<'_>) {
        self.cancel.store(true, Ordering::Relaxed);
        // Dropping the receiver fails the walkers' pending sends.
        self.receiver = None;
        self.join(py);
    }

    fn join(&mut self, py: Python<'_>) {
        if let Some(thread) = self.thread.take() {
            // The walk's threads never take the GIL: waiting for them
            // without it lets other Python threads run meanwhile.
            let _ = py.allow_threads(|| thread.join());
        }
    }
}

impl<T> Drop for Stream<T> {
    /// Cancel the walk but do not wait for it: an iterator dropped while
    /// `KeyboardInterrupt` unwinds must not hang on a read stuck on a
    /// network file system. The walk's threads hold nothing of Python's,
    /// and end at their next chunk.
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
        self.receiver = None;
    }
}

/// What a walking thread makes of one chunk, and of one error.
pub trait Items: Send + Sync + 'static {
    type Item: Send + 'static;
    fn chunk(&self, chunk: &mut Chunk<'_>) -> Self::Item;
    fn error(&self, error: Error) -> Self::Item;
}

/// A visitor that turns each chunk into an item on the walking thread and
/// sends the items in batches, errors in their place among them.
pub struct Batcher<I: Items> {
    items: Arc<I>,
    outlet: Outlet<I::Item>,
    batch: Vec<I::Item>,
    entries: usize,
}

impl<I: Items> Batcher<I> {
    pub fn new(items: Arc<I>, outlet: Outlet<I::Item>) -> Self {
        Batcher {
            items,
            outlet,
            batch: Vec::new(),
            entries: 0,
        }
    }

    fn flush(&mut self) -> Flow {
        if self.batch.is_empty() {
            return Flow::Continue;
        }
        self.entries = 0;
        self.outlet.send(std::mem::take(&mut self.batch))
    }
}

impl<I: Items> Visitor for Batcher<I> {
    fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
        if self.outlet.cancelled() {
            return Flow::Stop;
        }
        // An empty directory counts too: a tree of empty ones still goes in batches.
        self.entries += chunk.len() + 1;
        let item = self.items.chunk(chunk);
        self.batch.push(item);
        if self.entries >= BATCH_ENTRIES {
            return self.flush();
        }
        Flow::Continue
    }

    fn error(&mut self, error: Error) -> Flow {
        let item = self.items.error(error);
        self.batch.push(item);
        self.entries += 1;
        if self.entries >= BATCH_ENTRIES {
            return self.flush();
        }
        Flow::Continue
    }
}

impl<I: Items> Drop for Batcher<I> {
    /// The thread's walk is over: hand over what is left.
    fn drop(&mut self) {
        self.flush();
    }
}
