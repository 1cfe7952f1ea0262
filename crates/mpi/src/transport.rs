//! The transport: one thread per rank that owns the rank's MPI traffic.
//!
//! It receives with `MPI_Improbe`/`MPI_Mrecv` and sends with `MPI_Isend`,
//! so it never blocks in MPI and two ranks can never wait on each other's
//! sends. The rank's other threads reach it through a channel (commands)
//! and `unpark`; it reaches them through [`Local`] and the output
//! [`Window`]. When a round finds nothing to do it sleeps, a little longer
//! each time up to [`Tuning::poll_max`], so an idle rank leaves the CPU to
//! working threads (MPI's own blocking calls would spin).
//!
//! Two tags: control messages (everything of [`Message`] but output) and
//! output chunks. Rank 0 receives output only while its writer holds less
//! than [`Tuning::backlog_limit`] bytes; the chunks it leaves wait at their
//! sender (large messages are sent by rendezvous), whose window is full.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use mpi::collective::CommunicatorCollectives;
use mpi::point_to_point::{Destination, MatchedReceiveVec, Source, Status};
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::Tag;

use crate::codec::{Message, Stream};
use crate::output::{Sink, Window};
use crate::protocol::{Config, Local, Node, Stats};
use crate::world::fatal;

const TAG_CONTROL: Tag = 1;
const TAG_OUTPUT: Tag = 2;

/// How the transport polls and buffers.
#[derive(Clone, Debug)]
pub struct Tuning {
    /// The protocol's settings.
    pub protocol: Config,
    /// Output chunks a rank may have unacknowledged.
    pub window: usize,
    /// Bytes of other ranks' output rank 0 holds unwritten before it stops
    /// receiving more.
    pub backlog_limit: usize,
    /// Longest sleep of an idle transport thread, in microseconds: the
    /// worst added latency of a steal from a quiet rank.
    pub poll_max: u64,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            protocol: Config::default(),
            window: 4,
            backlog_limit: 64 << 20,
            poll_max: 1_000,
        }
    }
}

/// What the rank's threads ask of the transport thread.
pub(crate) enum Command {
    App { to: usize, bytes: Vec<u8> },
    Output { stream: Stream, bytes: Vec<u8> },
    Written { from: usize, len: usize },
    Stop,
    Finish(Vec<u8>),
    Raw { to: usize, bytes: Vec<u8> },
}

/// What the rank's threads and the transport thread share.
pub(crate) struct Shared {
    pub rank: usize,
    pub size: usize,
    pub commands: Sender<Command>,
    pub thread: OnceLock<Thread>,
    /// Application messages handed over and not yet taken by the transport.
    pub unsent: AtomicUsize,
    pub window: Window,
    pub over: Mutex<bool>,
    pub over_signal: Condvar,
    pub sink: Arc<dyn Sink>,
}

impl Shared {
    pub fn new(rank: usize, size: usize, window: usize, sink: Arc<dyn Sink>) -> (Shared, Receiver<Command>) {
        let (commands, rx) = crossbeam_channel::unbounded();
        let shared = Shared {
            rank,
            size,
            commands,
            thread: OnceLock::new(),
            unsent: AtomicUsize::new(0),
            window: Window::new(window),
            over: Mutex::new(false),
            over_signal: Condvar::new(),
            sink,
        };
        (shared, rx)
    }

    pub fn command(&self, c: Command) {
        if self.commands.send(c).is_err() {
            panic!("the MPI job was used after it finished");
        }
        self.wake();
    }

    pub fn wake(&self) {
        if let Some(t) = self.thread.get() {
            t.unpark();
        }
    }
}

/// A chunk of another rank's output for rank 0's writer: the received
/// message, whole, and its sender.
pub(crate) struct Chunk {
    pub from: usize,
    pub message: Vec<u8>,
}

/// What the transport thread hands back at the end.
pub(crate) struct Ending {
    pub results: Option<Vec<Vec<u8>>>,
    pub stats: Stats,
}

/// An `MPI_Isend` and the buffer it reads, kept until it completes.
struct Outgoing {
    request: Option<Request<'static, [u8], StaticScope>>,
    buffer: *mut [u8],
}

impl Outgoing {
    fn start(comm: &SimpleCommunicator, to: usize, tag: Tag, bytes: Vec<u8>) -> Outgoing {
        let leaked: &'static mut [u8] = Box::leak(bytes.into_boxed_slice());
        let buffer: *mut [u8] = leaked;
        // SAFETY: `buffer` came from `Box::leak` just above; it is read
        // through this shared reborrow only by MPI until the request
        // completes, and freed only after that (`done`).
        let view: &'static [u8] = unsafe { &*buffer };
        let request = comm
            .process_at_rank(to as i32)
            .immediate_send_with_tag(StaticScope, view, tag);
        Outgoing {
            request: Some(request),
            buffer,
        }
    }

    /// Whether the send completed (its buffer is then freed).
    fn done(&mut self) -> bool {
        let Some(request) = self.request.take() else {
            return true;
        };
        match request.test() {
            Ok(_) => {
                // SAFETY: the request completed, so MPI no longer reads
                // the buffer, and the only other reference to it was
                // consumed with the request: this is the sole owner.
                drop(unsafe { Box::from_raw(self.buffer) });
                true
            }
            Err(request) => {
                self.request = Some(request);
                false
            }
        }
    }
}

/// Everything the transport thread holds.
struct Engine {
    comm: SimpleCommunicator,
    shared: Arc<Shared>,
    local: Arc<dyn Local>,
    node: Node,
    tuning: Tuning,
    outgoing: Vec<Outgoing>,
    writer: Option<Sender<Chunk>>,
    backlog: Arc<AtomicUsize>,
    /// Rank 0: chunks written per rank, not yet acknowledged.
    output_acks: Vec<u32>,
    /// Rank 0: chunks received and not yet written.
    unwritten: usize,
    told_over: bool,
    start: Instant,
}

/// The transport thread's body: runs until every rank may leave.
pub(crate) fn run(
    shared: Arc<Shared>,
    local: Arc<dyn Local>,
    tuning: Tuning,
    commands: Receiver<Command>,
    writer: Option<Sender<Chunk>>,
    backlog: Arc<AtomicUsize>,
) -> Ending {
    // A communicator of its own, so that the application's MPI traffic
    // can never match the transport's. A collective call: every rank's
    // transport thread makes it.
    let comm = SimpleCommunicator::world().duplicate();
    local.started();
    // Victims need only be spread (the rank is mixed in by the node).
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let seed = clock ^ u64::from(std::process::id());
    let node = Node::new(shared.rank, shared.size, tuning.protocol.clone(), seed);
    let mut e = Engine {
        comm,
        node,
        local,
        tuning,
        outgoing: Vec::new(),
        writer,
        backlog,
        output_acks: vec![0; shared.size],
        unwritten: 0,
        told_over: false,
        start: Instant::now(),
        shared,
    };
    let mut barrier: Option<Request<'static, ()>> = None;
    let mut quiet_rounds = 0u32;
    loop {
        let mut active = e.commands(&commands);
        active |= e.receive_control();
        if e.shared.rank == 0 {
            active |= e.receive_output();
        }
        e.step();
        active |= e.flush();
        if barrier.is_none() && e.may_leave() {
            barrier = Some(e.comm.immediate_barrier());
        }
        if let Some(b) = barrier.take() {
            match b.test() {
                Ok(_) => break,
                Err(b) => barrier = Some(b),
            }
        }
        if active {
            quiet_rounds = 0;
        } else {
            quiet_rounds = quiet_rounds.saturating_add(1);
            e.sleep(quiet_rounds);
        }
    }
    // Every send was received (see the protocol's end); they complete.
    while !e.outgoing.is_empty() {
        e.outgoing.retain_mut(|o| !o.done());
        std::thread::yield_now();
    }
    drop(e.writer.take());
    let results = (e.shared.rank == 0).then(|| e.node.take_results());
    Ending {
        results,
        stats: e.node.stats().clone(),
    }
}

impl Engine {
    fn now(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    fn commands(&mut self, commands: &Receiver<Command>) -> bool {
        let mut any = false;
        while let Ok(c) = commands.try_recv() {
            any = true;
            match c {
                Command::App { to, bytes } => {
                    if !self.node.send_app(to, &bytes, &*self.local) {
                        fatal("an application message was sent after the end of the job");
                    }
                    self.shared.unsent.fetch_sub(1, Ordering::SeqCst);
                }
                Command::Output { stream, bytes } => {
                    let m = Message::Output { stream, bytes: &bytes }.encode();
                    self.outgoing.push(Outgoing::start(&self.comm, 0, TAG_OUTPUT, m));
                }
                Command::Written { from, len } => {
                    self.unwritten -= 1;
                    self.backlog.fetch_sub(len, Ordering::SeqCst);
                    self.output_acks[from] += 1;
                }
                Command::Stop => self.node.stop(&*self.local),
                Command::Finish(result) => self.node.finish(result),
                Command::Raw { to, bytes } => {
                    self.outgoing.push(Outgoing::start(&self.comm, to, TAG_CONTROL, bytes));
                }
            }
        }
        any
    }

    fn receive_control(&mut self) -> bool {
        let mut any = false;
        while let Some(probed) = self.comm.any_process().immediate_matched_probe_with_tag(TAG_CONTROL) {
            any = true;
            let (buf, status): (Vec<u8>, Status) = probed.matched_receive_vec();
            let from = status.source_rank() as usize;
            match Message::decode(&buf) {
                Ok(Message::OutputAck(n)) => {
                    if !self.shared.window.release(n as usize) {
                        fatal(format!("an acknowledgement of output never sent, from rank {from}"));
                    }
                }
                Ok(m) => {
                    if let Err(e) = self.node.receive(from, m, &*self.local) {
                        fatal(format!("broken protocol: {e}"));
                    }
                }
                Err(e) => fatal(format!("malformed message from rank {from}: {e}")),
            }
        }
        any
    }

    /// Rank 0: takes output chunks while the writer has room.
    fn receive_output(&mut self) -> bool {
        let mut any = false;
        while self.backlog.load(Ordering::SeqCst) < self.tuning.backlog_limit {
            let Some(probed) = self.comm.any_process().immediate_matched_probe_with_tag(TAG_OUTPUT) else {
                break;
            };
            any = true;
            let (buf, status): (Vec<u8>, Status) = probed.matched_receive_vec();
            let from = status.source_rank() as usize;
            match Message::decode(&buf) {
                Ok(Message::Output { .. }) => {}
                Ok(_) => fatal(format!("a control message sent as output, from rank {from}")),
                Err(e) => fatal(format!("malformed output from rank {from}: {e}")),
            }
            self.backlog.fetch_add(buf.len(), Ordering::SeqCst);
            self.unwritten += 1;
            let writer = self.writer.as_ref().expect("rank 0 has a writer");
            if writer.send(Chunk { from, message: buf }).is_err() {
                fatal("rank 0's output writer ended early");
            }
        }
        any
    }

    fn step(&mut self) {
        // Idle first, then the count: a message handed over before the
        // pool went idle is then counted (or already taken).
        let idle = self.local.is_idle() && self.shared.unsent.load(Ordering::SeqCst) == 0;
        let hungry = !idle && self.local.is_hungry();
        let now = self.now();
        self.node.step(now, idle, hungry, &*self.local);
        // The end comes in a step (rank 0) or in a message (the others).
        if self.node.is_over() && !self.told_over {
            self.told_over = true;
            *self.shared.over.lock().unwrap_or_else(|e| e.into_inner()) = true;
            self.shared.over_signal.notify_all();
        }
    }

    /// Sends what the protocol and the writer produced; completes sends.
    fn flush(&mut self) -> bool {
        let mut any = false;
        let out: Vec<(usize, Vec<u8>)> = self.node.drain_outbox().collect();
        for (to, bytes) in out {
            any = true;
            self.outgoing.push(Outgoing::start(&self.comm, to, TAG_CONTROL, bytes));
        }
        for from in 0..self.output_acks.len() {
            let n = std::mem::take(&mut self.output_acks[from]);
            if n > 0 {
                any = true;
                let m = Message::OutputAck(n).encode();
                self.outgoing.push(Outgoing::start(&self.comm, from, TAG_CONTROL, m));
            }
        }
        let before = self.outgoing.len();
        self.outgoing.retain_mut(|o| !o.done());
        any | (self.outgoing.len() != before)
    }

    fn may_leave(&self) -> bool {
        self.node.can_leave() && self.shared.window.in_flight() == 0 && self.unwritten == 0
    }

    fn sleep(&self, quiet_rounds: u32) {
        // Spin a few rounds (replies often follow at once), then sleep
        // longer and longer: 10 µs doubling up to the limit, or up to
        // 50 µs while sends are incomplete (a large message moves only
        // as fast as its sender's MPI calls make progress).
        if quiet_rounds < 8 {
            std::thread::yield_now();
            return;
        }
        let cap = if self.outgoing.is_empty() {
            self.tuning.poll_max
        } else {
            self.tuning.poll_max.min(50)
        };
        let mut wait = (10u64 << (quiet_rounds - 8).min(16)).min(cap);
        if !self.node.is_over() {
            let until_steal = self.node.next_steal_at().saturating_sub(self.now());
            if until_steal > 0 {
                wait = wait.min(until_steal);
            }
        }
        std::thread::park_timeout(Duration::from_micros(wait));
    }
}
