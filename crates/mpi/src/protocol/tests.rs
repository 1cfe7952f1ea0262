//! The protocol over a simulated network: random work trees, random
//! message delays (in order between each pair of ranks, as MPI keeps
//! them), ranks of random speeds, application messages, and stops at
//! random times. Every tick checks the Dijkstra–Scholten invariant; the end
//! checks that every item was done exactly once, that the end was declared
//! only when nothing was left, and that nothing is in flight when every
//! rank may leave.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use super::*;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = splitmix(self.0);
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// An item is (id, depth); the children of an item are a function of its
/// id, so the whole tree is known to the test without walking it.
#[derive(Clone, Copy)]
struct Tree {
    seed: u64,
    fan: u64,
    depth: u32,
}

impl Tree {
    fn children(&self, id: u64, depth: u32) -> Vec<(u64, u32)> {
        if depth >= self.depth {
            return Vec::new();
        }
        let n = splitmix(id ^ self.seed) % (self.fan + 1);
        (1..=n).map(|j| (id * 16 + j, depth + 1)).collect()
    }
    fn size(&self) -> usize {
        let mut stack = vec![(1u64, 0u32)];
        let mut n = 0;
        while let Some((id, d)) = stack.pop() {
            n += 1;
            stack.extend(self.children(id, d));
        }
        n
    }
}

fn item(id: u64, depth: u32) -> Vec<u8> {
    let mut v = id.to_le_bytes().to_vec();
    v.extend_from_slice(&depth.to_le_bytes());
    v
}

fn unitem(b: &[u8]) -> (u64, u32) {
    (
        u64::from_le_bytes(b[..8].try_into().unwrap()),
        u32::from_le_bytes(b[8..12].try_into().unwrap()),
    )
}

#[derive(Default)]
struct Pool {
    pending: VecDeque<Vec<u8>>,
    busy: Option<(Vec<u8>, u64)>,
    done: Vec<u64>,
    app_seen: Vec<u64>,
    stopped: bool,
    over: bool,
}

#[derive(Default)]
struct SimLocal(Mutex<Pool>);

impl Local for SimLocal {
    fn is_idle(&self) -> bool {
        let p = self.0.lock().unwrap();
        p.pending.is_empty() && p.busy.is_none()
    }
    fn take(&self, max: usize) -> Vec<Vec<u8>> {
        let mut p = self.0.lock().unwrap();
        let n = p.pending.len().div_ceil(2).min(max);
        let at = p.pending.len() - n;
        p.pending.split_off(at).into()
    }
    fn put(&self, items: Vec<Vec<u8>>) {
        let mut p = self.0.lock().unwrap();
        assert!(!p.over, "work after the end");
        p.pending.extend(items);
    }
    fn message(&self, _from: usize, bytes: &[u8]) {
        self.0
            .lock()
            .unwrap()
            .app_seen
            .push(u64::from_le_bytes(bytes.try_into().unwrap()));
    }
    fn stop(&self) {
        let mut p = self.0.lock().unwrap();
        p.stopped = true;
        p.pending.clear();
    }
    fn over(&self) {
        let mut p = self.0.lock().unwrap();
        assert!(p.pending.is_empty() && p.busy.is_none(), "over while busy");
        p.over = true;
    }
}

struct Flight {
    at: u64,
    seq: u64,
    from: usize,
    to: usize,
    bytes: Vec<u8>,
}

struct Scenario {
    size: usize,
    tree: Tree,
    max_delay: u64,
    max_work: u64,
    app_percent: u64,
    stop_at: Option<(usize, u64)>,
    seed: u64,
}

struct Outcome {
    done: Vec<u64>,
    total: usize,
    results: Vec<Vec<u8>>,
    apps_sent: Vec<u64>,
    apps_seen: Vec<u64>,
    stats: Vec<Stats>,
    /// Per rank: whether its pool was told to stop.
    stopped: Vec<bool>,
}

fn run(s: &Scenario) -> Outcome {
    let mut rng = Rng(s.seed);
    let cfg = Config {
        steal_max_items: 1 + rng.below(8) as usize,
        steal_backoff_min: 1 + rng.below(4),
        steal_backoff_max: 8 + rng.below(64),
    };
    let mut nodes: Vec<Node> = (0..s.size).map(|r| Node::new(r, s.size, cfg.clone(), s.seed)).collect();
    let locals: Vec<SimLocal> = (0..s.size).map(|_| SimLocal::default()).collect();
    // The roots start on a random rank, or on every rank.
    if rng.chance(50) {
        let r = rng.below(s.size as u64) as usize;
        locals[r].0.lock().unwrap().pending.push_back(item(1, 0));
    } else {
        let first = s.tree.children(1, 0);
        for (i, (id, d)) in first.iter().enumerate() {
            locals[i % s.size].0.lock().unwrap().pending.push_back(item(*id, *d));
        }
        locals[0].0.lock().unwrap().done.push(1);
    }
    let speed: Vec<u64> = (0..s.size).map(|_| 1 + rng.below(s.max_work)).collect();
    let mut net: Vec<Flight> = Vec::new();
    let mut last: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    let mut seq = 0u64;
    let mut apps_sent = Vec::new();
    let mut finish_at: Vec<Option<u64>> = vec![None; s.size];
    let mut order: Vec<usize> = (0..s.size).collect();
    for t in 0u64.. {
        assert!(t < 2_000_000, "no end after {t} ticks");
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        for &r in &order {
            let local = &locals[r];
            // Deliver what has arrived, in order.
            let mut arrived: Vec<Flight> = Vec::new();
            let mut k = 0;
            while k < net.len() {
                if net[k].to == r && net[k].at <= t {
                    arrived.push(net.swap_remove(k));
                } else {
                    k += 1;
                }
            }
            arrived.sort_by_key(|f| (f.at, f.seq));
            for f in arrived {
                let msg = Message::decode(&f.bytes).expect("the protocol sends what decodes");
                let was_over = nodes[r].is_over();
                let is_stop = msg == Message::Stop;
                nodes[r]
                    .receive(f.from, msg, local)
                    .unwrap_or_else(|e| panic!("rank {r}: {e}"));
                if is_stop && !was_over {
                    assert!(local.0.lock().unwrap().stopped, "rank {r} ignored a stop");
                }
                if !was_over && nodes[r].is_over() {
                    finish_at[r] = Some(t + rng.below(20));
                }
            }
            // Work.
            let mut sends = Vec::new();
            {
                let mut p = local.0.lock().unwrap();
                if let Some((_, until)) = &p.busy {
                    if *until <= t {
                        let (bytes, _) = p.busy.take().unwrap();
                        let (id, depth) = unitem(&bytes);
                        p.done.push(id);
                        if !p.stopped {
                            for (c, d) in s.tree.children(id, depth) {
                                p.pending.push_back(item(c, d));
                            }
                        }
                        if rng.chance(s.app_percent) {
                            sends.push((rng.below(s.size as u64) as usize, id));
                        }
                    }
                }
                if p.busy.is_none() {
                    if let Some(next) = p.pending.pop_back() {
                        p.busy = Some((next, t + rng.below(speed[r] + 1)));
                    }
                }
            }
            for (to, id) in sends {
                assert!(nodes[r].send_app(to, &id.to_le_bytes(), local), "send before the end");
                apps_sent.push(id);
            }
            if s.stop_at == Some((r, t)) {
                nodes[r].stop(local);
            }
            if finish_at[r].is_some_and(|f| f <= t) {
                finish_at[r] = None;
                let n = local.0.lock().unwrap().done.len() as u64;
                nodes[r].finish(n.to_le_bytes().to_vec());
            }
            let was_over = nodes[r].is_over();
            let idle = local.is_idle();
            // Busy ranks ask for work at random too, as hungry pools do.
            let hungry = !idle && rng.below(4) == 0;
            nodes[r].step(t, idle, hungry, local);
            if !was_over && nodes[r].is_over() {
                assert_eq!(r, 0);
                finish_at[r] = Some(t + rng.below(20));
                // Safety: the end is declared only when nothing is left.
                for (q, l) in locals.iter().enumerate() {
                    assert!(l.is_idle(), "rank {q} busy at the end");
                }
                for f in &net {
                    let m = Message::decode(&f.bytes).unwrap();
                    assert!(
                        !matches!(m, Message::Work(_) | Message::App(_)),
                        "{m:?} in flight at the end"
                    );
                }
            }
            for (to, bytes) in nodes[r].drain_outbox() {
                let at = (t + 1 + rng.below(s.max_delay)).max(*last.get(&(r, to)).unwrap_or(&0));
                last.insert((r, to), at);
                seq += 1;
                net.push(Flight {
                    at,
                    seq,
                    from: r,
                    to,
                    bytes,
                });
            }
        }
        check_invariant(&nodes, &locals, &net);
        if nodes.iter().all(Node::can_leave) {
            assert!(
                net.is_empty(),
                "{} messages in flight when every rank may leave",
                net.len()
            );
            break;
        }
    }
    let stopped = locals.iter().map(|l| l.0.lock().unwrap().stopped).collect();
    let mut done = Vec::new();
    let mut apps_seen = Vec::new();
    for l in &locals {
        let p = l.0.lock().unwrap();
        done.extend(&p.done);
        apps_seen.extend(&p.app_seen);
    }
    Outcome {
        done,
        total: s.tree.size(),
        results: nodes[0].take_results(),
        apps_sent,
        apps_seen,
        stats: nodes.iter().map(|n| n.stats().clone()).collect(),
        stopped,
    }
}

/// Each rank's deficit is its basic messages in flight, the
/// acknowledgements in flight to it, and its children; every busy rank is
/// engaged.
fn check_invariant(nodes: &[Node], locals: &[SimLocal], net: &[Flight]) {
    let mut expected = vec![0u64; nodes.len()];
    for f in net {
        match Message::decode(&f.bytes).unwrap() {
            Message::Work(_) | Message::App(_) => expected[f.from] += 1,
            Message::Ack(n) => expected[f.to] += u64::from(n),
            _ => {}
        }
    }
    for n in nodes {
        assert!(n.owed_acks.iter().all(|&a| a == 0), "acks held past a step");
        if n.rank != 0 && n.engaged {
            expected[n.parent] += 1;
        }
        if !locals[n.rank].is_idle() {
            assert!(n.engaged, "rank {} busy but not engaged", n.rank);
        }
    }
    for n in nodes {
        if !n.over {
            assert_eq!(n.deficit, expected[n.rank], "deficit of rank {}", n.rank);
        } else {
            assert_eq!(n.deficit, 0);
        }
    }
}

fn scenario(seed: u64, size: usize, stop: bool) -> Scenario {
    let mut rng = Rng(seed.wrapping_mul(31) + size as u64);
    Scenario {
        size,
        tree: Tree {
            seed,
            fan: 1 + rng.below(6),
            depth: 1 + rng.below(9) as u32,
        },
        max_delay: 1 + rng.below(30),
        max_work: 1 + rng.below(10),
        app_percent: rng.below(30),
        stop_at: stop.then(|| (rng.below(size as u64) as usize, rng.below(400))),
        seed,
    }
}

fn sorted(mut v: Vec<u64>) -> Vec<u64> {
    v.sort_unstable();
    v
}

#[test]
fn every_item_is_done_exactly_once() {
    for size in 1..=8 {
        for seed in 0..60 {
            let s = scenario(seed, size, false);
            let o = run(&s);
            let done = sorted(o.done.clone());
            assert_eq!(done.len(), o.total, "size {size} seed {seed}");
            assert!(done.windows(2).all(|w| w[0] != w[1]), "an item done twice");
            assert_eq!(sorted(o.apps_sent), sorted(o.apps_seen), "application messages");
            let counted: u64 = o
                .results
                .iter()
                .map(|r| u64::from_le_bytes(r[..].try_into().unwrap()))
                .sum();
            assert_eq!(counted as usize, o.total, "results reach rank 0");
        }
    }
}

#[test]
fn work_spreads_by_stealing() {
    let s = Scenario {
        size: 4,
        tree: Tree {
            seed: 7,
            fan: 6,
            depth: 6,
        },
        max_delay: 3,
        max_work: 3,
        app_percent: 0,
        stop_at: None,
        seed: 7,
    };
    let o = run(&s);
    assert!(o.total > 1000);
    let won: u64 = o.stats.iter().map(|s| s.steals_won).sum();
    assert!(won > 3, "{:?}", o.stats);
    assert_eq!(
        o.stats.iter().map(|s| s.items_in).sum::<u64>(),
        o.stats.iter().map(|s| s.items_out).sum::<u64>()
    );
}

#[test]
fn a_stop_from_any_rank_ends_the_job_cleanly() {
    let mut stops = 0;
    for size in 1..=6 {
        for seed in 0..40 {
            let s = scenario(seed + 1000, size, true);
            let o = run(&s);
            let (stopper, _) = s.stop_at.unwrap();
            if o.stopped[stopper] && size > 1 {
                stops += 1;
            }
            let done = sorted(o.done);
            assert!(done.len() <= o.total);
            assert!(done.windows(2).all(|w| w[0] != w[1]), "an item done twice");
        }
    }
    assert!(stops > 50, "only {stops} scenarios stopped before their end");
}

#[test]
fn protocol_violations_are_errors_not_panics() {
    let local = SimLocal::default();
    let mut n = Node::new(1, 3, Config::default(), 0);
    assert!(n.receive(1, Message::StealRequest, &local).is_err());
    assert!(n.receive(5, Message::StealRequest, &local).is_err());
    assert!(n.receive(2, Message::NoWork, &local).is_err());
    assert!(n.receive(2, Message::Work(vec![b"x"]), &local).is_err());
    assert!(n.receive(0, Message::Ack(1), &local).is_err());
    assert!(n.receive(0, Message::StopAck, &local).is_err());
    assert!(n.receive(2, Message::Done, &local).is_err());
    assert!(n.receive(0, Message::Result(b""), &local).is_err());
    assert!(n.receive(0, Message::OutputAck(1), &local).is_err());
    assert!(n.receive(0, Message::Done, &local).is_ok());
    assert!(n.receive(0, Message::Done, &local).is_err());
    assert!(n.receive(0, Message::App(b"12345678"), &local).is_err());
}
