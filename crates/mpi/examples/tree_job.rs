//! A walk of a made-up tree as an MPI job, for the tests and for trying
//! the transport: `mpirun -n 4 tree_job --fan 6 --depth 8`.
//!
//! An item is (id, depth); its children are a function of its id, so rank
//! 0 can count the whole tree alone at the end and compare. Each rank runs
//! a pool of worker threads (a plain locked queue: workers pop the newest
//! item, thieves get the oldest half). Each item done prints one record
//! `item ID xxx…` (its length varies with the id) to stdout, items whose id
//! is a multiple of 7 a `note ID` to stderr, and items whose id is a
//! multiple of 5 send an application message to rank `id % size`. Rank 0
//! prints `summary …` on stderr at the end.
//!
//! Options: `--seed N --fan N --depth N --threads N --delay-us N --chunk N`
//! `--stop-after N --stop-rank N --roots-everywhere --poll-max N`.
//! Faults, for the tests: `FND_MPI_TEST_FAULT=panic|abort|exit|malformed`
//! on rank `FND_MPI_TEST_FAULT_RANK` (default 1), after
//! `FND_MPI_TEST_FAULT_AFTER_MS` (default 100).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use fnd_mpi::codec::{Reader, Writer};
use fnd_mpi::{Handle, Job, Local, Stream, Tuning, World};

#[derive(Clone, Copy)]
struct Tree {
    seed: u64,
    fan: u64,
    depth: u32,
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Tree {
    fn children(&self, id: u64, depth: u32) -> impl Iterator<Item = (u64, u32)> {
        let n = if depth >= self.depth {
            0
        } else {
            splitmix(id ^ self.seed) % (self.fan + 1)
        };
        (1..=n).map(move |j| (id * 16 + j, depth + 1))
    }

    fn size(&self) -> u64 {
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
    Writer::new().u64(id).u32(depth).finish()
}

fn unitem(b: &[u8]) -> (u64, u32) {
    let mut r = Reader::new(b);
    let v = (r.u64().expect("an item"), r.u32().expect("an item"));
    r.end().expect("an item");
    v
}

struct Pool {
    queue: Mutex<VecDeque<Vec<u8>>>,
    ready: Condvar,
    /// Items queued or being worked on.
    active: AtomicUsize,
    stopped: AtomicBool,
    over: AtomicBool,
    messages_seen: AtomicU64,
    handle: OnceLock<Handle>,
}

impl Local for Pool {
    fn is_idle(&self) -> bool {
        self.active.load(Ordering::SeqCst) == 0
    }

    fn take(&self, max: usize) -> Vec<Vec<u8>> {
        let mut q = self.queue.lock().unwrap();
        let n = q.len().div_ceil(2).min(max);
        let given: Vec<Vec<u8>> = q.drain(..n).collect();
        self.active.fetch_sub(given.len(), Ordering::SeqCst);
        given
    }

    fn put(&self, items: Vec<Vec<u8>>) {
        self.active.fetch_add(items.len(), Ordering::SeqCst);
        self.queue.lock().unwrap().extend(items);
        self.ready.notify_all();
    }

    fn message(&self, _from: usize, bytes: &[u8]) {
        let mut r = Reader::new(bytes);
        r.u64().expect("an id");
        r.end().expect("an id alone");
        self.messages_seen.fetch_add(1, Ordering::SeqCst);
    }

    fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let mut q = self.queue.lock().unwrap();
        self.active.fetch_sub(q.len(), Ordering::SeqCst);
        q.clear();
    }

    fn over(&self) {
        self.over.store(true, Ordering::SeqCst);
        let _q = self.queue.lock().unwrap();
        self.ready.notify_all();
    }
}

struct Options {
    tree: Tree,
    threads: usize,
    delay_us: u64,
    chunk: usize,
    stop_after: Option<u64>,
    stop_rank: usize,
    roots_everywhere: bool,
    poll_max: u64,
}

fn options() -> Options {
    let mut o = Options {
        tree: Tree {
            seed: 1,
            fan: 5,
            depth: 7,
        },
        threads: 2,
        delay_us: 0,
        chunk: 64 << 10,
        stop_after: None,
        stop_rank: 0,
        roots_everywhere: false,
        poll_max: Tuning::default().poll_max,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = || -> u64 {
            args.get(i + 1)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{} needs a number", args[i]))
        };
        match args[i].as_str() {
            "--seed" => o.tree.seed = value(),
            "--fan" => o.tree.fan = value().min(15),
            "--depth" => o.tree.depth = value().min(14) as u32,
            "--threads" => o.threads = value().max(1) as usize,
            "--delay-us" => o.delay_us = value(),
            "--chunk" => o.chunk = value() as usize,
            "--stop-after" => o.stop_after = Some(value()),
            "--stop-rank" => o.stop_rank = value() as usize,
            "--poll-max" => o.poll_max = value(),
            "--roots-everywhere" => {
                o.roots_everywhere = true;
                i += 1;
                continue;
            }
            other => panic!("unknown option {other}"),
        }
        i += 2;
    }
    o
}

/// The stdout record of item `id`: `item ID ` and `id % 53` x's.
fn record(id: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(format!("item {id} ").as_bytes());
    out.extend(std::iter::repeat_n(b'x', (id % 53) as usize));
    out.push(b'\n');
}

/// One worker: pops items, does them, writes records in chunks.
fn work(pool: &Pool, o: &Options, done: &AtomicU64, sent: &AtomicU64) {
    let handle = pool.handle.get().expect("the job started");
    let (rank, size) = (handle.rank(), handle.size());
    let mut out = Vec::with_capacity(o.chunk + 128);
    let mut err = Vec::new();
    loop {
        let next = {
            let mut q = pool.queue.lock().unwrap();
            loop {
                if let Some(it) = q.pop_back() {
                    break Some(it);
                }
                if pool.over.load(Ordering::SeqCst) {
                    break None;
                }
                q = pool.ready.wait_timeout(q, Duration::from_millis(50)).unwrap().0;
            }
        };
        let Some(bytes) = next else { break };
        let (id, depth) = unitem(&bytes);
        if o.delay_us > 0 {
            std::thread::sleep(Duration::from_micros(splitmix(id) % o.delay_us));
        }
        if !pool.stopped.load(Ordering::SeqCst) {
            let children: Vec<Vec<u8>> = o.tree.children(id, depth).map(|(c, d)| item(c, d)).collect();
            if !children.is_empty() {
                pool.active.fetch_add(children.len(), Ordering::SeqCst);
                pool.queue.lock().unwrap().extend(children);
                pool.ready.notify_all();
            }
        }
        record(id, &mut out);
        if id % 7 == 0 {
            err.extend_from_slice(format!("note {id}\n").as_bytes());
        }
        if id % 5 == 0 {
            handle.send((id % size as u64) as usize, Writer::new().u64(id).finish());
            sent.fetch_add(1, Ordering::SeqCst);
        }
        if out.len() >= o.chunk {
            handle.output(Stream::Stdout, std::mem::take(&mut out));
        }
        if err.len() >= o.chunk {
            handle.output(Stream::Stderr, std::mem::take(&mut err));
        }
        let n = done.fetch_add(1, Ordering::SeqCst) + 1;
        if o.stop_after == Some(n) && rank == o.stop_rank {
            handle.stop();
        }
        if pool.active.fetch_sub(1, Ordering::SeqCst) == 1 {
            handle.wake();
        }
    }
    handle.output(Stream::Stdout, out);
    handle.output(Stream::Stderr, err);
}

fn fault(handle: &Handle) {
    let Ok(kind) = std::env::var("FND_MPI_TEST_FAULT") else {
        return;
    };
    let rank: usize = std::env::var("FND_MPI_TEST_FAULT_RANK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    if handle.rank() != rank {
        return;
    }
    let after: u64 = std::env::var("FND_MPI_TEST_FAULT_AFTER_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let handle = handle.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(after));
        match kind.as_str() {
            "panic" => panic!("test fault: rank {rank} panics"),
            "abort" => std::process::abort(),
            "exit" => std::process::exit(0),
            "malformed" => handle.send_raw_for_tests((rank + 1) % handle.size(), vec![0xee, 1, 2]),
            other => panic!("unknown fault {other}"),
        }
    });
}

fn main() {
    let o = options();
    let world = World::init("tree_job").unwrap_or_else(|e| e.exit());
    let (rank, size) = (world.rank(), world.size());
    let pool = Arc::new(Pool {
        queue: Mutex::new(VecDeque::new()),
        ready: Condvar::new(),
        active: AtomicUsize::new(0),
        stopped: AtomicBool::new(false),
        over: AtomicBool::new(false),
        messages_seen: AtomicU64::new(0),
        handle: OnceLock::new(),
    });
    let mut first = Vec::new();
    if o.roots_everywhere {
        // The root's children dealt out to every rank; rank 0 does the root.
        for (i, (id, d)) in o.tree.children(1, 0).enumerate() {
            if i % size == rank {
                first.push(item(id, d));
            }
        }
    } else if rank == 0 {
        first.push(item(1, 0));
    }
    let root_done_here = o.roots_everywhere && rank == 0;
    pool.put(first);
    let tuning = Tuning {
        poll_max: o.poll_max,
        ..Tuning::default()
    };
    let job = Job::start(&world, pool.clone(), tuning, None);
    let _ = pool.handle.set(job.handle());
    fault(&job.handle());
    let done = AtomicU64::new(u64::from(root_done_here));
    let sent = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..o.threads {
            s.spawn(|| work(&pool, &o, &done, &sent));
        }
        job.wait_over();
    });
    if root_done_here {
        let mut out = Vec::new();
        record(1, &mut out);
        job.handle().output(Stream::Stdout, out);
    }
    let result = Writer::new()
        .u64(done.load(Ordering::SeqCst))
        .u64(sent.load(Ordering::SeqCst))
        .u64(pool.messages_seen.load(Ordering::SeqCst))
        .finish();
    let end = job.finish(result);
    if let Some(results) = end.results {
        let (mut items, mut sent, mut seen, mut per_rank) = (0, 0, 0, Vec::new());
        for r in &results {
            let mut rd = Reader::new(r);
            let (d, s, m) = (rd.u64().unwrap(), rd.u64().unwrap(), rd.u64().unwrap());
            items += d;
            sent += s;
            seen += m;
            per_rank.push(d.to_string());
        }
        eprintln!(
            "summary items={items} expected={} messages_sent={sent} messages_seen={seen} per_rank={}",
            o.tree.size(),
            per_rank.join(",")
        );
    }
    if std::env::var_os("FND_MPI_STATS").is_some() {
        eprintln!("stats rank={rank} {:?}", end.stats);
    }
}
