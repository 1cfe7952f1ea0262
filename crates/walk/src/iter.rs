//! Iterators over a walk that runs on other threads.
//!
//! Offers [`Chunks`] and [`Walk`] (and the builder methods that start them:
//! [`WalkBuilder::chunks`], [`WalkBuilder::iter`], `IntoIterator`). Relies
//! on the builder to run the walk, with one visitor per walking thread that
//! sends its chunks through a channel; they are [`ChunkBuf`]s by then,
//! owned and holding no descriptor.
//!
//! The walk (serial or parallel) runs on a background thread and its
//! workers; they send batches of chunks (at least `chunk_size` entries, so
//! a tree of small directories does not cost a channel operation and a
//! thread wake-up per directory) through a bounded channel, and a slow
//! consumer makes the walkers wait instead of buffering the tree. Dropping
//! the iterator stops the walk and waits for its threads to end.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};

use crate::builder::WalkBuilder;
use crate::entry::{Chunk, ChunkBuf, Entry};
use crate::error::Error;
use crate::settings::Order;
use crate::visit::{Flow, Visitor};

impl WalkBuilder {
    /// Batches the iterators' channel holds before the walking threads wait
    /// for the consumer (default: 4 per walking thread). A walking thread
    /// sends its chunks in batches of at least [`chunk_size`](Self::chunk_size)
    /// entries and fewer than twice that, so an iterator buffers fewer than
    /// `(buffer_chunks + threads) × 2 × chunk_size` entries: the channel's,
    /// and the batch each walking thread is filling (`threads` counts the
    /// workers a parallel walk adds while its reads wait on I/O, up to
    /// [`io_depth`](Self::io_depth)).
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let walk = WalkBuilder::new(dir.path()).chunk_size(64).buffer_chunks(2);
    /// assert_eq!(walk.iter().count(), 1); // the root
    /// ```
    pub fn buffer_chunks(mut self, n: usize) -> Self {
        self.cfg.buffer_chunks = Some(n.max(1));
        self
    }

    /// Start the walk on background threads and iterate over its chunks:
    /// the fastest way to consume a walk from one thread. Each chunk holds
    /// entries of one directory; errors come in between.
    ///
    /// ```
    /// use fnd_walk::WalkBuilder;
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// for name in ["a", "b", "c"] {
    ///     std::fs::write(dir.path().join(name), "").unwrap();
    /// }
    /// let mut entries = 0;
    /// for chunk in WalkBuilder::new(dir.path()).min_depth(1).chunks() {
    ///     entries += chunk.unwrap().len();
    /// }
    /// assert_eq!(entries, 3);
    /// ```
    pub fn chunks(&self) -> Chunks {
        Chunks::start(self.clone())
    }

    /// Start the walk on background threads and iterate over its entries,
    /// owned, one at a time (see [`chunks`](Self::chunks) for the batched
    /// form, which saves the per-entry path allocation).
    ///
    /// ```
    /// use fnd_walk::{Order, Sort, WalkBuilder};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// std::fs::create_dir(dir.path().join("sub")).unwrap();
    /// std::fs::write(dir.path().join("sub/file"), "").unwrap();
    /// let paths: Vec<_> = WalkBuilder::new(dir.path())
    ///     .order(Order::DepthFirst)
    ///     .sort(Some(Sort::Name))
    ///     .iter()
    ///     .map(|entry| entry.unwrap().into_path())
    ///     .collect();
    /// assert_eq!(paths, [dir.path().to_path_buf(), dir.path().join("sub"), dir.path().join("sub/file")]);
    /// ```
    pub fn iter(&self) -> Walk {
        Walk {
            chunks: self.chunks(),
            current: None,
            next_index: 0,
        }
    }
}

impl IntoIterator for WalkBuilder {
    type Item = Result<Entry, Error>;
    type IntoIter = Walk;

    fn into_iter(self) -> Walk {
        Walk {
            chunks: Chunks::start(self),
            current: None,
            next_index: 0,
        }
    }
}

impl IntoIterator for &WalkBuilder {
    type Item = Result<Entry, Error>;
    type IntoIter = Walk;

    fn into_iter(self) -> Walk {
        self.iter()
    }
}

/// An iterator over the chunks of a walk running on other threads (see
/// [`WalkBuilder::chunks`]). Dropping it stops the walk.
pub struct Chunks {
    receiver: Option<Receiver<Batch>>,
    /// The rest of the batch received last.
    current: std::vec::IntoIter<ChunkBuf>,
    stop: Arc<AtomicBool>,
    walker: Option<JoinHandle<()>>,
}

impl Chunks {
    fn start(mut builder: WalkBuilder) -> Chunks {
        let walking_threads = if builder.cfg.settings.order == Order::Parallel {
            builder.cfg.settings.threads.max(1)
        } else {
            1
        };
        let capacity = builder.cfg.buffer_chunks.unwrap_or(4 * walking_threads);
        let (sender, receiver) = crossbeam_channel::bounded(capacity);
        let stop = Arc::new(AtomicBool::new(false));
        builder.cfg.stop = Some(stop.clone());
        let batch_entries = builder.cfg.settings.chunk_size;
        let run = move |builder: WalkBuilder, sender: Sender<Batch>| {
            let sender = &sender;
            let visitor = || ChannelVisitor {
                sender: sender.clone(),
                batch: Vec::new(),
                entries: 0,
                batch_entries,
            };
            builder.visit(visitor, drop);
        };
        // Taken by the walk's thread, or left for this one if it cannot start.
        let job = Arc::new(std::sync::Mutex::new(Some((builder, sender))));
        let theirs = job.clone();
        let walker = std::thread::Builder::new()
            .name("fnd-walk".into())
            .spawn(move || {
                let taken = theirs.lock().unwrap_or_else(|e| e.into_inner()).take();
                if let Some((builder, sender)) = taken {
                    run(builder, sender);
                }
            })
            .ok();
        let mut receiver = receiver;
        if walker.is_none() {
            // No thread to spare (`ulimit -u`, a pids cgroup): walk here,
            // whole, into a channel without bound, and hand the chunks out
            // after. Slower to the first entry and held in memory, but whole.
            let taken = job.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some((builder, _bounded)) = taken {
                let (sender, unbounded) = crossbeam_channel::unbounded();
                run(builder, sender);
                receiver = unbounded;
            }
        }
        Chunks {
            receiver: Some(receiver),
            current: Vec::new().into_iter(),
            stop,
            walker,
        }
    }

    /// Wait for the walk's threads; a panic in one of them (in a filter
    /// closure, say) is raised again here, on the consumer's thread.
    fn join(&mut self) {
        if let Some(walker) = self.walker.take() {
            if let Err(panic) = walker.join() {
                if !std::thread::panicking() {
                    std::panic::resume_unwind(panic);
                }
            }
        }
    }
}

impl Iterator for Chunks {
    type Item = Result<ChunkBuf, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(chunk) = self.current.next() {
                return Some(Ok(chunk));
            }
            match self.receiver.as_ref()?.recv() {
                Ok(Ok(batch)) => self.current = batch.into_iter(),
                Ok(Err(error)) => return Some(Err(error)),
                Err(_) => {
                    self.receiver = None;
                    self.join();
                    return None;
                }
            }
        }
    }
}

impl Drop for Chunks {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Dropping the receiver fails the walkers' pending and next sends,
        // which stops them even mid-directory.
        self.receiver = None;
        self.join();
    }
}

/// What crosses the channel: chunks in batches, or an error.
type Batch = Result<Vec<ChunkBuf>, Error>;

/// Sends each thread's chunks (moved out, so the reader keeps its buffers'
/// capacity) in batches, and errors in order between them.
struct ChannelVisitor {
    sender: Sender<Batch>,
    batch: Vec<ChunkBuf>,
    /// Entries in `batch`.
    entries: usize,
    /// Send once the batch holds this many entries.
    batch_entries: usize,
}

impl ChannelVisitor {
    fn send(&mut self, item: Batch) -> Flow {
        match self.sender.send(item) {
            Ok(()) => Flow::Continue,
            Err(_) => Flow::Stop,
        }
    }

    fn flush(&mut self) -> Flow {
        if self.batch.is_empty() {
            return Flow::Continue;
        }
        self.entries = 0;
        let batch = std::mem::take(&mut self.batch);
        self.send(Ok(batch))
    }
}

impl Visitor for ChannelVisitor {
    fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
        self.entries += chunk.len();
        self.batch.push(chunk.take());
        if self.entries >= self.batch_entries {
            return self.flush();
        }
        Flow::Continue
    }

    fn error(&mut self, error: Error) -> Flow {
        if self.flush() == Flow::Stop {
            return Flow::Stop;
        }
        self.send(Err(error))
    }
}

impl Drop for ChannelVisitor {
    /// The thread's walk is over: hand over what is left.
    fn drop(&mut self) {
        self.flush();
    }
}

/// An iterator over the owned entries of a walk running on other threads
/// (see [`WalkBuilder::iter`]). Dropping it stops the walk.
pub struct Walk {
    chunks: Chunks,
    current: Option<ChunkBuf>,
    next_index: usize,
}

impl Iterator for Walk {
    type Item = Result<Entry, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(chunk) = &self.current {
                if self.next_index < chunk.len() {
                    let entry = chunk.get(self.next_index).to_entry();
                    self.next_index += 1;
                    return Some(Ok(entry));
                }
            }
            match self.chunks.next()? {
                Ok(chunk) => {
                    self.current = Some(chunk);
                    self.next_index = 0;
                }
                Err(error) => return Some(Err(error)),
            }
        }
    }
}
