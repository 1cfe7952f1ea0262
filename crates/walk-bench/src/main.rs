//! Compares fnd-walk with walkdir, ignore and jwalk: entries counted, and
//! total size (one metadata call per entry), per tree, thread count and
//! library. Every measurement runs in a fresh child process so each one's
//! peak memory (VmHWM) is its own; the child times only the walk.
//!
//! ```text
//! walk-bench [--runs N] [--threads T]... [--task count|size]... TREE...
//! ```
//!
//! Prints, per tree, task and thread count, the median wall time, CPU time
//! (all threads, user + system) and peak memory of each library, and its
//! ratios to fnd-walk (above 1: fnd-walk is faster). On a machine shared
//! with other work, wall time favours whoever runs more threads; CPU time
//! is the steadier measure of work done.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use fnd_walk::{Chunk, Flow, Order, Visitor, WalkBuilder};

/// The walks compared; the first is the reference for ratios.
const LIBRARIES: [&str; 6] = ["fnd-visit", "fnd-chunks", "fnd-iter", "walkdir", "ignore", "jwalk"];
const TASKS: [&str; 2] = ["count", "size"];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--one") {
        return one(&args[1..]);
    }
    let mut runs = 7;
    let mut threads = Vec::new();
    let mut trees = Vec::new();
    let mut tasks = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--runs" => runs = args.next().and_then(|n| n.parse().ok()).unwrap_or_else(|| usage()),
            "--threads" => threads.push(args.next().and_then(|n| n.parse().ok()).unwrap_or_else(|| usage())),
            "--task" => match args.next() {
                Some(task) if TASKS.contains(&task.as_str()) => tasks.push(task),
                _ => usage(),
            },
            _ if arg.starts_with('-') => usage(),
            _ => trees.push(arg),
        }
    }
    if trees.is_empty() {
        usage();
    }
    if threads.is_empty() {
        // 1: the same thread count as walkdir; 0: each library's default.
        threads = vec![1, 0];
    }
    if tasks.is_empty() {
        tasks = TASKS.map(String::from).to_vec();
    }
    for tree in &trees {
        for task in &tasks {
            for &t in &threads {
                compare(tree, task, t, runs);
            }
        }
    }
}

fn usage() -> ! {
    eprintln!("usage: walk-bench [--runs N] [--threads T]... [--task count|size]... TREE...   (T = 0: each library's default)");
    std::process::exit(2);
}

/// One measurement: what the child prints.
struct Sample {
    entries: u64,
    size: u64,
    nanos: u64,
    peak_kib: u64,
    cpu_nanos: u64,
}

fn compare(tree: &str, task: &str, threads: usize, runs: usize) {
    let label = if threads == 0 {
        "default".to_string()
    } else {
        threads.to_string()
    };
    println!("\n{tree}  {task}  threads={label}  (median of {runs})");
    // Round-robin over the libraries, so a change in machine load between
    // runs hits every library alike.
    let mut all: Vec<Vec<Sample>> = LIBRARIES.iter().map(|_| Vec::new()).collect();
    for _ in 0..runs {
        for (library, samples) in LIBRARIES.iter().zip(&mut all) {
            samples.push(measure(library, task, tree, threads));
        }
    }
    let mut reference = None;
    for (library, mut samples) in LIBRARIES.into_iter().zip(all) {
        samples.sort_by_key(|s| s.nanos);
        let median = &samples[samples.len() / 2];
        let median_of = |field: fn(&Sample) -> u64| {
            let mut values: Vec<u64> = samples.iter().map(field).collect();
            values.sort_unstable();
            values[values.len() / 2]
        };
        let peak = median_of(|s| s.peak_kib);
        let cpu = median_of(|s| s.cpu_nanos);
        let (ref_nanos, ref_cpu, ref_entries) = *reference.get_or_insert((median.nanos, cpu, median.entries));
        let ratio = median.nanos as f64 / ref_nanos as f64;
        let cpu_ratio = cpu as f64 / ref_cpu as f64;
        let mismatch = if median.entries == ref_entries {
            String::new()
        } else {
            format!("  (entries differ: {ref_entries})")
        };
        println!(
            "  {library:<10} {:>9.1} ms {:>5.2}x  cpu {:>9.1} ms {:>5.2}x  {:>7} KiB peak  entries={} size={}{mismatch}",
            median.nanos as f64 / 1e6,
            ratio,
            cpu as f64 / 1e6,
            cpu_ratio,
            peak,
            median.entries,
            median.size,
        );
    }
}

fn measure(library: &str, task: &str, tree: &str, threads: usize) -> Sample {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(exe)
        .args(["--one", library, task, tree, &threads.to_string()])
        .output()
        .expect("run a measurement");
    if !out.status.success() {
        eprintln!("{library} {task} {tree}: {}", String::from_utf8_lossy(&out.stderr));
        std::process::exit(1);
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<u64> = text.split_whitespace().map(|f| f.parse().expect("a number")).collect();
    Sample {
        entries: fields[0],
        size: fields[1],
        nanos: fields[2],
        peak_kib: fields[3],
        cpu_nanos: fields[4],
    }
}

/// The child: walk once, print `entries size nanos peak_kib cpu_nanos`.
fn one(args: &[String]) {
    let [library, task, tree, threads] = args else { usage() };
    let threads: usize = threads.parse().unwrap_or_else(|_| usage());
    let with_size = task == "size";
    let start = Instant::now();
    let (entries, size) = match library.as_str() {
        "fnd-visit" => fnd_visit(tree, threads, with_size),
        "fnd-chunks" => fnd_chunks(tree, threads, with_size),
        "fnd-iter" => fnd_iter(tree, threads, with_size),
        "walkdir" => walkdir(tree, with_size),
        "ignore" => ignore(tree, threads, with_size),
        "jwalk" => jwalk(tree, threads, with_size),
        _ => usage(),
    };
    let nanos = start.elapsed().as_nanos();
    let cpu = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    let cpu_nanos = cpu.tv_sec as u128 * 1_000_000_000 + cpu.tv_nsec as u128;
    println!("{entries} {size} {nanos} {} {cpu_nanos}", peak_kib());
}

fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn fnd_builder(tree: &str, threads: usize, with_size: bool) -> WalkBuilder {
    let builder = WalkBuilder::new(tree).metadata(with_size);
    if threads == 1 {
        builder.order(Order::DepthFirst)
    } else {
        builder.threads(threads)
    }
}

/// Per-thread totals, handed back when each thread ends.
struct Totals {
    entries: u64,
    size: u64,
}

impl Visitor for Totals {
    fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
        self.entries += chunk.len() as u64;
        self.size += chunk
            .iter()
            .filter_map(|e| e.cached_metadata())
            .map(|m| m.size)
            .sum::<u64>();
        Flow::Continue
    }
}

fn fnd_visit(tree: &str, threads: usize, with_size: bool) -> (u64, u64) {
    let (mut entries, mut size) = (0, 0);
    fnd_builder(tree, threads, with_size).visit(
        || Totals { entries: 0, size: 0 },
        |t| {
            entries += t.entries;
            size += t.size;
        },
    );
    (entries, size)
}

fn fnd_chunks(tree: &str, threads: usize, with_size: bool) -> (u64, u64) {
    let (mut entries, mut size) = (0, 0);
    for chunk in fnd_builder(tree, threads, with_size).chunks().flatten() {
        entries += chunk.len() as u64;
        size += chunk
            .iter()
            .filter_map(|e| e.cached_metadata())
            .map(|m| m.size)
            .sum::<u64>();
    }
    (entries, size)
}

fn fnd_iter(tree: &str, threads: usize, with_size: bool) -> (u64, u64) {
    let (mut entries, mut size) = (0, 0);
    for entry in fnd_builder(tree, threads, with_size).iter().flatten() {
        entries += 1;
        size += entry.cached_metadata().map_or(0, |m| m.size);
    }
    (entries, size)
}

fn walkdir(tree: &str, with_size: bool) -> (u64, u64) {
    let (mut entries, mut size) = (0, 0);
    for entry in walkdir::WalkDir::new(tree).into_iter().flatten() {
        entries += 1;
        if with_size {
            size += entry.metadata().map_or(0, |m| m.len());
        }
    }
    (entries, size)
}

fn ignore(tree: &str, threads: usize, with_size: bool) -> (u64, u64) {
    let (entries, size) = (AtomicU64::new(0), AtomicU64::new(0));
    ignore::WalkBuilder::new(tree)
        .standard_filters(false)
        .threads(threads)
        .build_parallel()
        .run(|| {
            let mut local = Local {
                entries: 0,
                size: 0,
                totals: (&entries, &size),
            };
            Box::new(move |entry| {
                // Borrow the whole struct: capturing only its fields would copy
                // them and leave `Drop` to add zeroes.
                let local = &mut local;
                if let Ok(entry) = entry {
                    local.entries += 1;
                    if with_size {
                        local.size += entry.metadata().map_or(0, |m| m.len());
                    }
                }
                ignore::WalkState::Continue
            })
        });
    (entries.into_inner(), size.into_inner())
}

/// A thread's counts, added to the shared totals when its closure is dropped.
struct Local<'a> {
    entries: u64,
    size: u64,
    totals: (&'a AtomicU64, &'a AtomicU64),
}

impl Drop for Local<'_> {
    fn drop(&mut self) {
        self.totals.0.fetch_add(self.entries, Ordering::Relaxed);
        self.totals.1.fetch_add(self.size, Ordering::Relaxed);
    }
}

fn jwalk(tree: &str, threads: usize, with_size: bool) -> (u64, u64) {
    let parallelism = if threads == 0 {
        jwalk::Parallelism::RayonDefaultPool {
            busy_timeout: std::time::Duration::from_secs(1),
        }
    } else if threads == 1 {
        jwalk::Parallelism::Serial
    } else {
        jwalk::Parallelism::RayonNewPool(threads)
    };
    let (mut entries, mut size) = (0, 0);
    for entry in jwalk::WalkDir::new(tree)
        .skip_hidden(false)
        .parallelism(parallelism)
        .into_iter()
        .flatten()
    {
        entries += 1;
        if with_size {
            size += entry.metadata().map_or(0, |m| m.len());
        }
    }
    (entries, size)
}
