//! One walk as an MPI job: what a program starts on every rank.
//!
//! ```no_run
//! use std::sync::Arc;
//! use fnd_mpi::{Job, Local, Stream, Tuning, World};
//!
//! struct Pool; // the rank's own workers and their queue
//! impl Local for Pool {
//!     fn is_idle(&self) -> bool { true }
//!     fn take(&self, _max: usize) -> Vec<Vec<u8>> { Vec::new() }
//!     fn put(&self, _items: Vec<Vec<u8>>) {}
//! }
//!
//! let world = World::init("fnd").unwrap_or_else(|e| e.exit());
//! let job = Job::start(&world, Arc::new(Pool), Tuning::default(), None);
//! let handle = job.handle();
//! handle.output(Stream::Stdout, b"found/this\n".to_vec());
//! job.wait_over();
//! let end = job.finish(b"my counts".to_vec());
//! if let Some(results) = end.results {
//!     assert_eq!(results.len(), world.size()); // rank 0 has every rank's result
//! }
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::Receiver;

use crate::codec::{Message, Stream};
use crate::output::{Sink, StdSink};
use crate::protocol::{Local, Stats};
use crate::transport::{self, Chunk, Command, Ending, Shared, Tuning};
use crate::world::{fatal, World};

/// The job as seen from one rank. Start it on every rank, wait for its end,
/// then [`finish`](Job::finish) it; dropping it unfinished aborts the job.
pub struct Job<'w> {
    shared: Arc<Shared>,
    transport: Option<JoinHandle<Ending>>,
    writer: Option<JoinHandle<()>>,
    _world: &'w World,
}

/// What any thread of the rank uses to talk to the job. Cheap to clone.
#[derive(Clone)]
pub struct Handle {
    shared: Arc<Shared>,
}

/// How the job ended, on one rank.
#[derive(Debug)]
pub struct Finished {
    /// On rank 0: every rank's result, by rank. None elsewhere.
    pub results: Option<Vec<Vec<u8>>>,
    /// What the protocol did on this rank.
    pub stats: Stats,
}

/// A rank's side of a job before MPI is up: its [`Handle`] works at once,
/// so a rank that already knows its part (rank 0 holds the roots) can
/// start walking while `MPI_Init_thread` runs, which takes a quarter of a
/// second with Open MPI's default transports. Until the job
/// [starts](Prepared::start), rank 0's output goes straight to its sink,
/// a stop waits for the job to pass it on, and another rank's output
/// waits once its window of chunks is full.
pub struct Prepared {
    shared: Arc<Shared>,
    commands: Receiver<Command>,
    tuning: Tuning,
}

impl Prepared {
    /// A handle for the rank's threads.
    pub fn handle(&self) -> Handle {
        Handle {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Starts the job on `world`, as [`Job::start`] does. Ends the whole
    /// job (see [`fatal`]) when `world` is not the rank and size this
    /// was prepared for.
    pub fn start(self, world: &World, local: Arc<dyn Local>) -> Job<'_> {
        let Prepared {
            shared,
            commands,
            tuning,
        } = self;
        if (shared.rank, shared.size) != (world.rank(), world.size()) {
            fatal(format!(
                "the launcher said rank {} of {}, and MPI says rank {} of {}",
                shared.rank,
                shared.size,
                world.rank(),
                world.size()
            ));
        }
        let backlog = Arc::new(AtomicUsize::new(0));
        let (writer_tx, writer) = if shared.rank == 0 && shared.size > 1 {
            let (tx, rx) = crossbeam_channel::unbounded();
            let shared = Arc::clone(&shared);
            let writer = std::thread::Builder::new()
                .name("fnd-mpi-writer".into())
                .spawn(move || write_chunks(&shared, rx))
                .unwrap_or_else(|e| fatal(format!("cannot start a thread for rank 0's output: {e}")));
            (Some(tx), Some(writer))
        } else {
            (None, None)
        };
        let transport = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("fnd-mpi".into())
                .spawn(move || transport::run(shared, local, tuning, commands, writer_tx, backlog))
                .unwrap_or_else(|e| fatal(format!("cannot start a thread for the MPI transport: {e}")))
        };
        let _ = shared.thread.set(transport.thread().clone());
        // What was handed over before the thread was known.
        shared.wake();
        Job {
            shared,
            transport: Some(transport),
            writer,
            _world: world,
        }
    }
}

impl<'w> Job<'w> {
    /// Prepares rank `rank`'s side of a job of `size` ranks before MPI is
    /// up (from what the launcher said, [`crate::launch`]); other ranks'
    /// output goes to `sink` on rank 0, stdout/stderr by default.
    pub fn prepare(rank: usize, size: usize, tuning: Tuning, sink: Option<Arc<dyn Sink>>) -> Prepared {
        let sink = sink.unwrap_or_else(|| Arc::new(StdSink));
        let (shared, commands) = Shared::new(rank, size, tuning.window, sink);
        Prepared {
            shared: Arc::new(shared),
            commands,
            tuning,
        }
    }

    /// Starts the rank's transport thread (and, on rank 0, the writer of
    /// other ranks' output, through `sink`, stdout/stderr by default).
    /// The pool must hold its initial items already: a rank that is idle
    /// at the start steals.
    pub fn start(world: &'w World, local: Arc<dyn Local>, tuning: Tuning, sink: Option<Arc<dyn Sink>>) -> Job<'w> {
        Job::prepare(world.rank(), world.size(), tuning, sink).start(world, local)
    }

    /// A handle for the rank's threads.
    pub fn handle(&self) -> Handle {
        Handle {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Blocks until the job is over (every rank idle, no work in flight),
    /// or stopped and then over.
    pub fn wait_over(&self) {
        let mut over = self.shared.over.lock().unwrap_or_else(|e| e.into_inner());
        while !*over {
            over = self.shared.over_signal.wait(over).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Hands this rank's `result` to rank 0 and waits until every rank is
    /// done: all output written at rank 0, nothing in flight. Rank 0 gets
    /// every rank's result. Waits for the end of the job first if needed;
    /// output must be handed before this is called.
    pub fn finish(mut self, result: Vec<u8>) -> Finished {
        self.shared.command(Command::Finish(result));
        let ending = self.transport.take().expect("one finish").join();
        let ending = ending.unwrap_or_else(|_| fatal("the MPI transport thread panicked"));
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
        Finished {
            results: ending.results,
            stats: ending.stats,
        }
    }
}

impl Drop for Job<'_> {
    fn drop(&mut self) {
        if self.transport.is_some() && !std::thread::panicking() {
            fatal("an MPI job was dropped before it finished");
        }
    }
}

impl Handle {
    /// This rank.
    pub fn rank(&self) -> usize {
        self.shared.rank
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.shared.size
    }

    /// Sends an application message to rank `to` (this rank too), where
    /// [`Local::message`] receives it on the transport thread. It counts as
    /// work for the end of the job, so send before the item that caused it
    /// counts as done. Batch small messages: each is one MPI message and
    /// one acknowledgement.
    ///
    /// # Panics
    /// If the job is finished.
    pub fn send(&self, to: usize, bytes: Vec<u8>) {
        assert!(to < self.shared.size, "no rank {to} in a job of {}", self.shared.size);
        self.shared.unsent.fetch_add(1, Ordering::SeqCst);
        self.shared.command(Command::App { to, bytes });
    }

    /// Writes whole records to rank 0's `stream`: on rank 0 at once,
    /// elsewhere as one chunk, after waiting while the rank's window of
    /// unacknowledged chunks is full. Never call it from [`Local`]'s
    /// methods (the transport thread cannot wait for itself).
    pub fn output(&self, stream: Stream, bytes: Vec<u8>) {
        if bytes.is_empty() {
            return;
        }
        if self.shared.rank == 0 {
            if !self.shared.sink.write(0, stream, &bytes) {
                self.stop();
            }
            return;
        }
        self.shared.window.acquire();
        self.shared.command(Command::Output { stream, bytes });
    }

    /// Stops the whole job: every rank's [`Local::stop`] is called soon,
    /// and the job then ends as usual.
    pub fn stop(&self) {
        self.shared.command(Command::Stop);
    }

    /// Tells the transport that the pool may have become idle, so that it
    /// looks at once instead of at its next poll.
    pub fn wake(&self) {
        self.shared.wake();
    }

    /// Sends raw bytes as a control message, for tests of the decoder's
    /// handling of damage.
    #[doc(hidden)]
    pub fn send_raw_for_tests(&self, to: usize, bytes: Vec<u8>) {
        self.shared.command(Command::Raw { to, bytes });
    }
}

/// Rank 0's writer thread: writes other ranks' chunks in arrival order and
/// tells the transport each one is written (it then acknowledges it).
fn write_chunks(shared: &Shared, chunks: Receiver<Chunk>) {
    let mut stopped = false;
    for chunk in chunks {
        let Ok(Message::Output { stream, bytes }) = Message::decode(&chunk.message) else {
            unreachable!("the transport decodes each chunk before it passes it on");
        };
        if !shared.sink.write(chunk.from, stream, bytes) && !stopped {
            stopped = true;
            shared.command(Command::Stop);
        }
        if shared
            .commands
            .send(Command::Written {
                from: chunk.from,
                len: chunk.message.len(),
            })
            .is_err()
        {
            break;
        }
        shared.wake();
    }
}
