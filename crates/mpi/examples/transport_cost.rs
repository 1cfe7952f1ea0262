//! What the transport costs, between ranks 0 and 1 (run with 2 ranks):
//! - `pingpong [N]`: an application message to rank 1 and its answer back,
//!   through both transport threads (mean round trip);
//! - `steal [SECONDS]`: rank 1 steals one item at a time from a busy rank 0
//!   and is idle again at once (steals per second: request, work,
//!   acknowledgement);
//! - `idle [SECONDS]`: rank 0 is busy and gives nothing, rank 1 is idle and
//!   keeps asking (run each rank under `time` to see what idleness costs);
//! - `output [MIB] [CHUNK_KIB]`: rank 1 sends MIB MiB of lines to rank 0,
//!   which writes them to its stdout (MiB/s until the last is acknowledged).
//!
//! `mpirun -n 2 transport_cost pingpong 2000 > /dev/null`; `WINDOW=N` sets
//! the output window, `POLL_MAX=US` the transport's longest sleep.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use fnd_mpi::{Handle, Job, Local, Stream, Tuning, World};

struct Bench {
    /// Not idle while the measurement runs, so the job does not end.
    busy: AtomicBool,
    /// Rank 0 of `steal`: items it gives, one per steal.
    giving: AtomicBool,
    received: AtomicU64,
    pongs: Sender<()>,
    handle: OnceLock<Handle>,
}

impl Local for Bench {
    fn is_idle(&self) -> bool {
        !self.busy.load(Ordering::SeqCst)
    }
    fn take(&self, _max: usize) -> Vec<Vec<u8>> {
        if self.giving.load(Ordering::SeqCst) {
            vec![vec![0; 64]]
        } else {
            Vec::new()
        }
    }
    fn put(&self, items: Vec<Vec<u8>>) {
        self.received.fetch_add(items.len() as u64, Ordering::SeqCst);
    }
    fn message(&self, from: usize, bytes: &[u8]) {
        let handle = self.handle.get().expect("started");
        match (handle.rank(), bytes) {
            (1, b"ping") => handle.send(from, b"pong".to_vec()),
            (1, b"end") => {
                self.busy.store(false, Ordering::SeqCst);
                handle.wake();
            }
            (0, b"pong") => self.pongs.send(()).expect("the main thread waits"),
            _ => panic!("unexpected message"),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().map(String::as_str).unwrap_or("pingpong");
    let number = |i: usize, default: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let world = World::init("transport_cost").unwrap_or_else(|e| e.exit());
    assert_eq!(world.size(), 2, "run with 2 ranks");
    let rank = world.rank();
    let (pongs, pong_rx): (Sender<()>, Receiver<()>) = crossbeam_channel::unbounded();
    let bench = Arc::new(Bench {
        busy: AtomicBool::new(mode != "output" && (mode == "pingpong" || rank == 0)),
        giving: AtomicBool::new(mode == "steal" && rank == 0),
        received: AtomicU64::new(0),
        pongs,
        handle: OnceLock::new(),
    });
    let mut tuning = Tuning::default();
    if let Some(w) = std::env::var("WINDOW").ok().and_then(|w| w.parse().ok()) {
        tuning.window = w;
    }
    if let Some(p) = std::env::var("POLL_MAX").ok().and_then(|p| p.parse().ok()) {
        tuning.poll_max = p;
    }
    let job = Job::start(&world, bench.clone(), tuning, None);
    let handle = job.handle();
    let _ = bench.handle.set(handle.clone());
    let report = match (mode, rank) {
        ("pingpong", 0) => {
            let n = number(1, 2000);
            for _ in 0..n / 10 {
                handle.send(1, b"ping".to_vec());
                pong_rx.recv().unwrap();
            }
            let t = Instant::now();
            for _ in 0..n {
                handle.send(1, b"ping".to_vec());
                pong_rx.recv().unwrap();
            }
            let per = t.elapsed() / n as u32;
            handle.send(1, b"end".to_vec());
            bench.busy.store(false, Ordering::SeqCst);
            handle.wake();
            Some(format!(
                "pingpong: {n} round trips, {:.1} us each",
                per.as_secs_f64() * 1e6
            ))
        }
        ("steal", 0) | ("idle", 0) => {
            let secs = number(1, 2);
            std::thread::sleep(Duration::from_secs(secs));
            bench.giving.store(false, Ordering::SeqCst);
            bench.busy.store(false, Ordering::SeqCst);
            handle.wake();
            None
        }
        ("output", 1) => {
            let mib = number(1, 256) as usize;
            let chunk_kib = number(2, 256) as usize;
            let line = b"some/path/of/a/typical/length/for/a/found/entry.txt\n";
            let chunk: Vec<u8> = line
                .iter()
                .copied()
                .cycle()
                .take((chunk_kib << 10) / line.len() * line.len())
                .collect();
            let chunks = (mib << 20) / chunk.len();
            let t = Instant::now();
            for _ in 0..chunks {
                handle.output(Stream::Stdout, chunk.clone());
            }
            job.wait_over();
            let end = job.finish(Vec::new());
            let secs = t.elapsed().as_secs_f64();
            let bytes = chunks * chunk.len();
            eprintln!(
                "output: {:.0} MiB in {chunk_kib} KiB chunks, {:.3} s, {:.0} MiB/s",
                bytes as f64 / (1 << 20) as f64,
                secs,
                bytes as f64 / (1 << 20) as f64 / secs
            );
            let _ = end;
            return;
        }
        _ => None,
    };
    job.wait_over();
    let steals = bench.received.load(Ordering::SeqCst);
    let end = job.finish(steals.to_le_bytes().to_vec());
    if let Some(line) = report {
        eprintln!("{line}");
    }
    if let (Some(results), "steal") = (end.results, mode) {
        let got = u64::from_le_bytes(results[1][..8].try_into().unwrap());
        let secs = number(1, 2) as f64;
        eprintln!(
            "steal: {got} steals in {secs} s, {:.1} us each ({:.0} per second)",
            secs * 1e6 / got as f64,
            got as f64 / secs
        );
    }
}
