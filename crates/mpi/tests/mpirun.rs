//! The transport under a real `mpirun`, with 1 to 4 ranks on however many
//! cores there are (`--oversubscribe`): the examples `tree_job` and
//! `threads`, which `cargo test -p fnd-mpi --features mpi` builds first.
#![cfg(feature = "mpi")]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn example(name: &str) -> PathBuf {
    // target/<profile>/deps/mpirun-HASH → target/<profile>/examples/NAME
    let exe = std::env::current_exe().expect("the test's own path");
    let path = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target dir")
        .join("examples")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing: run `cargo test -p fnd-mpi --features mpi`, which builds the examples",
        path.display()
    );
    path
}

/// Runs `mpirun -n ranks EXAMPLE args` with `env`, killing it after two
/// minutes: a hang is a failure, not a stuck test run.
fn mpirun(ranks: usize, name: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--oversubscribe", "--bind-to", "none", "-n", &ranks.to_string()])
        .arg(example(name))
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("mpirun (apt-get install openmpi-bin)");
    // Read both pipes while waiting, so a full pipe cannot stall the job.
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            r.read_to_end(&mut v).unwrap();
            v
        })
    };
    let (out, err) = (read(Box::new(out)), read(Box::new(err)));
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("mpirun -n {ranks} {name} {args:?} {env:?} still running after 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// `summary` fields from rank 0's stderr.
fn summary(stderr: &str) -> BTreeMap<String, String> {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("summary "))
        .unwrap_or_else(|| panic!("no summary in:\n{stderr}"));
    line.split_whitespace()
        .skip(1)
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// The ids of the `item` records, checking that each record is whole.
fn items(stdout: &[u8]) -> Vec<u64> {
    let text = std::str::from_utf8(stdout).expect("records are text");
    assert!(text.is_empty() || text.ends_with('\n'), "a record cut at the end");
    text.lines()
        .map(|line| {
            let rest = line
                .strip_prefix("item ")
                .unwrap_or_else(|| panic!("not a record: {line:?}"));
            let (id, pad) = rest.split_once(' ').unwrap_or_else(|| panic!("cut record: {line:?}"));
            let id: u64 = id.parse().unwrap_or_else(|_| panic!("cut record: {line:?}"));
            assert_eq!(pad.len() as u64, id % 53, "record of {id} cut or joined: {line:?}");
            assert!(pad.bytes().all(|b| b == b'x'), "records mixed: {line:?}");
            id
        })
        .collect()
}

fn sorted_unique(mut v: Vec<u64>) -> Vec<u64> {
    let n = v.len();
    v.sort_unstable();
    v.dedup();
    assert_eq!(v.len(), n, "{} records printed twice", n - v.len());
    v
}

/// Runs a whole walk and checks it: every item exactly once, records whole
/// on stdout and stderr, every application message delivered.
fn check_walk(ranks: usize, args: &[&str]) -> BTreeMap<String, String> {
    let out = mpirun(ranks, "tree_job", args, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{ranks} ranks {args:?}: {}\n{stderr}", out.status);
    let s = summary(&stderr);
    let ids = sorted_unique(items(&out.stdout));
    assert_eq!(ids.len().to_string(), s["expected"], "{ranks} ranks {args:?}");
    assert_eq!(s["items"], s["expected"]);
    assert_eq!(s["messages_sent"], s["messages_seen"], "application messages lost");
    let notes: Vec<u64> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("note "))
        .map(|id| id.parse().unwrap_or_else(|_| panic!("a cut note: {id:?}")))
        .collect();
    let expected_notes: Vec<u64> = ids.iter().copied().filter(|id| id % 7 == 0).collect();
    assert_eq!(sorted_unique(notes), expected_notes, "stderr records");
    s
}

#[test]
fn threading_level_multiple_works_with_several_threads_per_rank() {
    for ranks in [2, 4] {
        let out = mpirun(ranks, "threads", &["3", "9"], &[]);
        assert!(
            out.status.success(),
            "{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("threads ok"));
    }
}

#[test]
fn every_item_is_done_once_and_printed_whole_at_rank_0() {
    for ranks in 1..=4 {
        check_walk(ranks, &["--seed", "3", "--fan", "5", "--depth", "7"]);
        // Small chunks: many of them, and windows that fill up.
        check_walk(
            ranks,
            &[
                "--seed",
                "4",
                "--fan",
                "6",
                "--depth",
                "7",
                "--chunk",
                "300",
                "--threads",
                "3",
            ],
        );
        // Work starting on every rank; a tiny tree; a single item.
        check_walk(
            ranks,
            &["--seed", "5", "--fan", "6", "--depth", "6", "--roots-everywhere"],
        );
        check_walk(ranks, &["--seed", "6", "--fan", "2", "--depth", "2"]);
        check_walk(ranks, &["--seed", "6", "--fan", "0", "--depth", "0"]);
    }
}

#[test]
fn work_moves_between_ranks_by_stealing() {
    for ranks in [2, 3, 4] {
        let s = check_walk(
            ranks,
            &["--seed", "8", "--fan", "6", "--depth", "8", "--delay-us", "400"],
        );
        let per_rank: Vec<u64> = s["per_rank"].split(',').map(|n| n.parse().unwrap()).collect();
        assert!(per_rank.iter().all(|&n| n > 0), "a rank did nothing: {per_rank:?}");
    }
}

#[test]
fn any_rank_stops_every_rank_promptly_and_the_job_ends_cleanly() {
    for ranks in 1..=4 {
        for stopper in [0, ranks - 1] {
            let stop_rank = stopper.to_string();
            let args = [
                "--seed",
                "9",
                "--fan",
                "6",
                "--depth",
                "10",
                "--delay-us",
                "200",
                "--stop-after",
                "40",
                "--stop-rank",
                &stop_rank,
            ];
            let out = mpirun(ranks, "tree_job", &args, &[]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{}\n{stderr}", out.status);
            let s = summary(&stderr);
            let printed = sorted_unique(items(&out.stdout)).len();
            assert_eq!(printed.to_string(), s["items"]);
            let expected: usize = s["expected"].parse().unwrap();
            // 30k items; a stop after 40 on one rank leaves most undone.
            assert!(printed < expected / 4, "{printed} of {expected} done after a stop");
            assert_eq!(s["messages_sent"], s["messages_seen"]);
        }
    }
}

fn failed_job(ranks: usize, fault: &str) -> (Output, String) {
    let args = ["--seed", "10", "--fan", "6", "--depth", "10", "--delay-us", "300"];
    let out = mpirun(
        ranks,
        "tree_job",
        &args,
        &[("FND_MPI_TEST_FAULT", fault), ("FND_MPI_TEST_FAULT_AFTER_MS", "150")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "{fault} on rank 1 of {ranks}, yet success:\n{stderr}"
    );
    assert!(!stderr.contains("summary "), "a result reported after a failure");
    (out, stderr)
}

#[test]
fn a_rank_that_panics_ends_the_job_with_its_status() {
    for ranks in [2, 4] {
        let (out, stderr) = failed_job(ranks, "panic");
        assert_eq!(out.status.code(), Some(101), "{stderr}");
        assert!(stderr.contains("test fault: rank 1 panics"), "{stderr}");
    }
}

#[test]
fn a_rank_that_dies_or_leaves_early_fails_the_job() {
    for fault in ["abort", "exit"] {
        failed_job(3, fault);
    }
}

#[test]
fn a_malformed_message_aborts_with_one_clear_line() {
    let (out, stderr) = failed_job(3, "malformed");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("tree_job: malformed message from rank 1: unknown message kind at byte 0"),
        "{stderr}"
    );
}
