//! The protocol between ranks as a state machine: work stealing,
//! termination detection, stop, and the end of the job. No MPI, no
//! threads, no clock of its own: the transport feeds it received messages,
//! the time and whether the rank's own pool is idle, and sends what it
//! puts in its outbox. The tests drive many of them over a simulated
//! network with random delays.
//!
//! # Work stealing
//! An idle rank asks one other rank, chosen at random, for work
//! ([`Message::StealRequest`]) and waits for the answer before it asks
//! again. So does a *hungry* one ([`Local::is_hungry`]): busy, but with
//! workers that found nothing to start. Where each item waits on a slow
//! file system, a rank that asked only once idle kept fewer reads in
//! flight than it could (two ranks through a mount each: 4.7 requests in
//! flight per mount of 8, and no faster than one rank). The victim gives part of its pending items ([`Local::take`]) in
//! one [`Message::Work`], or says [`Message::NoWork`]; after a refusal the
//! thief waits a random, growing time (up to
//! [`Config::steal_backoff_max`]) before its next try, so that idle ranks
//! do not flood busy ones. No rank has a special part in it.
//!
//! # Termination: Dijkstra–Scholten
//! *Basic* messages are the ones that can make a rank busy: [`Message::Work`]
//! and [`Message::App`]. Every basic message is acknowledged exactly once
//! ([`Message::Ack`]). Each rank counts its `deficit`: basic messages it
//! sent that are not acknowledged yet. A rank is *engaged* when it has a
//! `parent`. At the start every rank is engaged with parent 0, and rank 0's
//! deficit is the number of other ranks (as if it had sent each one a
//! message). When a disengaged rank receives a basic message it becomes
//! engaged with the sender as parent and keeps that acknowledgement back;
//! every other basic message is acknowledged at once (batched per step).
//! When an engaged rank is idle with deficit 0 it acknowledges its parent
//! and disengages. Rank 0 is never disengaged: when it is idle with
//! deficit 0 the job is over.
//!
//! **Invariant.** The parent links form a tree rooted at rank 0 over the
//! engaged ranks; every busy rank, and every rank that has a basic message
//! in flight or an acknowledgement outstanding, is in that tree; and each
//! rank's deficit equals the basic messages it sent that are in flight,
//! plus the acknowledgements in flight or held back for it, plus its
//! children in the tree. So when rank 0 is idle with deficit 0, it has no
//! children, no rank is busy and no basic message is in flight: nothing
//! can ever become busy again, and the job is over.
//!
//! Why this one: acknowledgements go to the rank that gave the work, so
//! the cost is spread over the ranks that steal from each other, and rank
//! 0 only hears from its own children (not from every rank every time it
//! goes idle, as with credit recovery towards a root); there is no token
//! to keep circling while ranks are idle (Safra's ring costs a round of N
//! messages per attempt, and at least one round after the end to detect
//! it); and it needs no clock and no global counts. It costs one
//! acknowledgement per basic message, which is at most one per steal.
//!
//! # The end
//! Rank 0 sends [`Message::Done`] down a binary tree (rank r to 2r+1 and
//! 2r+2), so no rank sends more than two. Each rank then hands its result
//! ([`Node::finish`]), which goes to rank 0 as [`Message::Result`].
//! A rank may *leave* ([`Node::can_leave`]) when it has the end, its result
//! is sent, and every request it made was answered (its steal, its stops;
//! the transport adds its output chunks); rank 0 also waits for every
//! result. The transport then enters a non-blocking barrier and keeps
//! answering (steals get [`Message::NoWork`]) until the barrier completes.
//! When every rank has entered, nothing is in flight: a request in flight
//! would keep its sender out, a reply in flight its receiver, and the end
//! and the results are waited for by their receivers.
//!
//! # Stop
//! Any rank may stop the job ([`Node::stop`]): it tells every other rank
//! ([`Message::Stop`], acknowledged). A stopped rank drops its pending
//! work ([`Local::stop`]), gives none and asks for none, and drops work
//! that reaches it later, acknowledging it as usual; so every rank soon
//! idles, termination detection sees the end as above, and no message is
//! left behind.

use std::fmt;

use crate::codec::Message;

#[cfg(test)]
mod tests;

/// What the protocol needs from the rank's own pool of workers.
///
/// The transport calls these from its own thread; none may block for long,
/// and none may wait for the transport (it is the transport's thread that
/// would have to answer). Items are opaque byte strings.
pub trait Local: Send + Sync {
    /// The job has started: other ranks may ask for items from now on.
    /// Called once, first of all, on the transport's thread. A pool that
    /// started working before (see `Prepared`, feature `mpi`) may hold
    /// back until then what would take its items out of other ranks'
    /// reach (fnd-walk adds no I/O workers before it).
    fn started(&self) {}

    /// Whether the pool has no pending item and no worker busy with one.
    ///
    /// Once idle, the pool stays idle until [`put`](Local::put) gives it
    /// work: only received work can make an idle rank busy. A worker that
    /// sends an application message must do so before its item counts as
    /// done.
    fn is_idle(&self) -> bool;

    /// Whether the pool is busy but could start more items than it holds
    /// (a worker waits for one): it then asks other ranks for work as an
    /// idle pool does. Never needed for the job to end.
    fn is_hungry(&self) -> bool {
        false
    }

    /// Gives away up to `max` pending items for another rank (about half
    /// of what is pending is a good share); nothing when the pool is idle
    /// or has nothing it wants to give.
    fn take(&self, max: usize) -> Vec<Vec<u8>>;

    /// Items received from another rank. After this returns, `is_idle`
    /// is false until they are done.
    fn put(&self, items: Vec<Vec<u8>>);

    /// An application message from rank `from`.
    fn message(&self, from: usize, bytes: &[u8]) {
        let _ = (from, bytes);
    }

    /// Some rank stopped the job: drop pending items and become idle soon.
    fn stop(&self) {}

    /// The whole job is over: every rank is idle and no work is in flight.
    /// The pool's workers may end.
    fn over(&self) {}
}

/// Tuning of the protocol.
#[derive(Clone, Debug)]
pub struct Config {
    /// Most items one steal moves.
    pub steal_max_items: usize,
    /// Wait after the first refused steal, in microseconds.
    pub steal_backoff_min: u64,
    /// Longest wait between steals, in microseconds.
    pub steal_backoff_max: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            steal_max_items: 4096,
            steal_backoff_min: 50,
            steal_backoff_max: 5_000,
        }
    }
}

/// A message that breaks the protocol (a bug, or a corrupted transport).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError {
    /// The rank it came from.
    pub from: usize,
    /// What was wrong.
    pub what: &'static str,
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (from rank {})", self.what, self.from)
    }
}

/// Counts of what the protocol did on one rank.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Steal requests sent.
    pub steals: u64,
    /// Of those, the ones answered with work.
    pub steals_won: u64,
    /// Items received by steals.
    pub items_in: u64,
    /// Items given to thieves.
    pub items_out: u64,
    /// Application messages sent to other ranks.
    pub app_out: u64,
}

/// One rank's side of the protocol.
pub struct Node {
    rank: usize,
    size: usize,
    cfg: Config,
    rng: u64,
    now: u64,
    // Dijkstra–Scholten.
    engaged: bool,
    parent: usize,
    deficit: u64,
    owed_acks: Vec<u32>,
    // Stealing.
    asking: Option<usize>,
    failures: u32,
    next_steal: u64,
    // Stop and end.
    stopped: bool,
    stop_acks_awaited: usize,
    over: bool,
    result: Option<Vec<u8>>,
    result_sent: bool,
    results: Vec<Option<Vec<u8>>>,
    results_missing: usize,
    outbox: Vec<(usize, Vec<u8>)>,
    stats: Stats,
}

impl Node {
    /// Rank `rank` of `size`; `seed` varies the choice of victims.
    pub fn new(rank: usize, size: usize, cfg: Config, seed: u64) -> Node {
        assert!(rank < size, "rank {rank} of {size}");
        Node {
            rank,
            size,
            cfg,
            rng: splitmix(seed ^ (rank as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1,
            now: 0,
            engaged: true,
            parent: 0,
            deficit: if rank == 0 { size as u64 - 1 } else { 0 },
            owed_acks: vec![0; size],
            asking: None,
            failures: 0,
            next_steal: 0,
            stopped: false,
            stop_acks_awaited: 0,
            over: false,
            result: None,
            result_sent: false,
            results: vec![None; if rank == 0 { size } else { 0 }],
            results_missing: if rank == 0 { size - 1 } else { 0 },
            outbox: Vec::new(),
            stats: Stats::default(),
        }
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Whether the job is over (as far as this rank knows yet).
    pub fn is_over(&self) -> bool {
        self.over
    }

    /// Whether some rank stopped the job.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// What the protocol did so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Messages to send, as (destination, bytes), in order.
    pub fn drain_outbox(&mut self) -> std::vec::Drain<'_, (usize, Vec<u8>)> {
        self.outbox.drain(..)
    }

    fn send(&mut self, to: usize, msg: Message<'_>) {
        debug_assert_ne!(to, self.rank);
        self.outbox.push((to, msg.encode()));
    }

    /// Handles one message from rank `from`. Output messages are the
    /// transport's and are refused here.
    pub fn receive(&mut self, from: usize, msg: Message<'_>, local: &dyn Local) -> Result<(), ProtocolError> {
        let err = |what| Err(ProtocolError { from, what });
        if from >= self.size || from == self.rank {
            return err("message from a rank that cannot send it");
        }
        match msg {
            Message::StealRequest => {
                let items = if self.over || self.stopped {
                    Vec::new()
                } else {
                    local.take(self.cfg.steal_max_items)
                };
                if items.is_empty() {
                    self.send(from, Message::NoWork);
                } else {
                    self.deficit += 1;
                    self.stats.items_out += items.len() as u64;
                    let slices: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
                    self.send(from, Message::Work(slices));
                }
            }
            Message::NoWork => {
                if self.asking != Some(from) {
                    return err("a steal answer nobody asked for");
                }
                self.asking = None;
                self.failures = self.failures.saturating_add(1);
                let wait = self.backoff();
                self.next_steal = self.now + wait;
            }
            Message::Work(items) => {
                if self.asking != Some(from) {
                    return err("work nobody asked for");
                }
                if self.over {
                    return err("work after the end of the job");
                }
                self.asking = None;
                self.failures = 0;
                self.next_steal = self.now;
                self.stats.steals_won += 1;
                self.stats.items_in += items.len() as u64;
                self.engage(from);
                if !self.stopped {
                    local.put(items.into_iter().map(<[u8]>::to_vec).collect());
                }
            }
            Message::App(bytes) => {
                if self.over {
                    return err("application message after the end of the job");
                }
                self.engage(from);
                local.message(from, bytes);
            }
            Message::Ack(n) => {
                if u64::from(n) > self.deficit {
                    return err("acknowledgement of messages never sent");
                }
                self.deficit -= u64::from(n);
            }
            Message::Stop => {
                self.send(from, Message::StopAck);
                if !self.stopped && !self.over {
                    self.stopped = true;
                    local.stop();
                }
            }
            Message::StopAck => {
                if self.stop_acks_awaited == 0 {
                    return err("a stop acknowledged that was not sent");
                }
                self.stop_acks_awaited -= 1;
            }
            Message::Done => {
                if self.rank == 0 || from != (self.rank - 1) / 2 || self.over {
                    return err("an end of the job out of turn");
                }
                self.end(local);
            }
            Message::Result(bytes) => {
                if self.rank != 0 || !self.over || self.results[from].is_some() {
                    return err("a result out of turn");
                }
                self.results[from] = Some(bytes.to_vec());
                self.results_missing -= 1;
            }
            Message::Output { .. } | Message::OutputAck(_) => return err("output where it has no place"),
        }
        Ok(())
    }

    /// A basic message arrived from `from`: become its child, or owe it an
    /// acknowledgement.
    fn engage(&mut self, from: usize) {
        if self.engaged {
            self.owed_acks[from] += 1;
        } else {
            self.engaged = true;
            self.parent = from;
        }
    }

    fn end(&mut self, local: &dyn Local) {
        self.over = true;
        for child in [2 * self.rank + 1, 2 * self.rank + 2] {
            if child < self.size {
                self.send(child, Message::Done);
            }
        }
        local.over();
    }

    /// Sends an application message; false (and nothing sent) once the job
    /// is over. A message to this rank itself is handed to
    /// [`Local::message`] at once.
    pub fn send_app(&mut self, to: usize, bytes: &[u8], local: &dyn Local) -> bool {
        assert!(to < self.size, "no rank {to} in a job of {}", self.size);
        if self.over {
            return false;
        }
        if to == self.rank {
            local.message(to, bytes);
        } else {
            self.deficit += 1;
            self.stats.app_out += 1;
            self.send(to, Message::App(bytes));
        }
        true
    }

    /// This rank stops the job.
    pub fn stop(&mut self, local: &dyn Local) {
        if self.stopped || self.over {
            return;
        }
        self.stopped = true;
        local.stop();
        let me = self.rank;
        for r in (0..self.size).filter(|&r| r != me) {
            self.send(r, Message::Stop);
            self.stop_acks_awaited += 1;
        }
    }

    /// The rank's result for rank 0, once the job is over.
    pub fn finish(&mut self, result: Vec<u8>) {
        assert!(self.result.is_none() && !self.result_sent, "finish called twice");
        self.result = Some(result);
    }

    /// One round after the received messages: `now` in microseconds (any
    /// origin), `idle` whether the pool is idle and holds no unsent
    /// application message, `hungry` whether it could start more than it
    /// holds (see [`Local::is_hungry`]).
    pub fn step(&mut self, now: u64, idle: bool, hungry: bool, local: &dyn Local) {
        self.now = now;
        if !self.over && idle && self.deficit == 0 {
            if self.rank == 0 {
                self.end(local);
            } else if self.engaged {
                self.engaged = false;
                self.owed_acks[self.parent] += 1;
            }
        }
        let wants_work = idle || hungry;
        if !self.over && wants_work && !self.stopped && self.size > 1 && self.asking.is_none() && now >= self.next_steal
        {
            let victim = self.pick_victim();
            self.asking = Some(victim);
            self.stats.steals += 1;
            self.send(victim, Message::StealRequest);
        }
        for r in 0..self.size {
            let n = std::mem::take(&mut self.owed_acks[r]);
            if n > 0 {
                self.send(r, Message::Ack(n));
            }
        }
        if self.over && !self.result_sent {
            if let Some(result) = self.result.take() {
                self.result_sent = true;
                if self.rank == 0 {
                    self.results[0] = Some(result);
                } else {
                    self.send(0, Message::Result(&result));
                }
            }
        }
    }

    /// When the next steal may go out (microseconds, as given to `step`).
    pub fn next_steal_at(&self) -> u64 {
        self.next_steal
    }

    /// Whether this rank's part is done (see the module doc); the transport
    /// adds its own conditions.
    pub fn can_leave(&self) -> bool {
        self.over
            && self.result_sent
            && self.asking.is_none()
            && self.stop_acks_awaited == 0
            && self.results_missing == 0
    }

    /// On rank 0 once it can leave: every rank's result, by rank.
    pub fn take_results(&mut self) -> Vec<Vec<u8>> {
        assert!(self.rank == 0 && self.can_leave(), "results are rank 0's, at the end");
        self.results.iter_mut().map(|r| r.take().unwrap_or_default()).collect()
    }

    fn random(&mut self) -> u64 {
        // xorshift64*: the victims only need to be spread, not secret.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick_victim(&mut self) -> usize {
        let r = (self.random() % (self.size as u64 - 1)) as usize;
        if r >= self.rank {
            r + 1
        } else {
            r
        }
    }

    /// A random wait in [w/2, w], w doubling with each refusal up to the cap.
    fn backoff(&mut self) -> u64 {
        let shift = self.failures.saturating_sub(1).min(20);
        let w = self
            .cfg
            .steal_backoff_min
            .saturating_mul(1 << shift)
            .min(self.cfg.steal_backoff_max)
            .max(1);
        w / 2 + self.random() % (w / 2 + 1)
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
