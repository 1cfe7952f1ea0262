//! `fdu` as an MPI job (`mpirun -n N fdu …`, feature `mpi`), with 1 to 4
//! ranks on however many cores there are: its lines must be GNU du's
//! (compared sorted: du prints in post-order, fdu as directories
//! complete), its messages and exit status those of one process. Run with
//! `cargo test -p fdu --features mpi --test mpi` (Open MPI's `mpirun` on
//! the PATH; as root, the test sets `OMPI_ALLOW_RUN_AS_ROOT` itself).
//!
//! Without GNU du the lines are compared with one fdu process instead.
//! `FND_MPI_TEST_PAUSE_US` makes every rank pause after each directory, so
//! that a small tree keeps rank 0 busy long enough for the others to steal
//! from it; `FND_MPI_STATS=1` makes each rank say what it read, which
//! shows that work really moved.
#![cfg(feature = "mpi")]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::Duration;

use fnd_test_support::references;

const FDU: &str = env!("CARGO_BIN_EXE_fdu");
const RANKS: [usize; 4] = [1, 2, 3, 4];
/// Long enough per directory that the other ranks steal from rank 0.
const PAUSE_US: &str = "3000";

/// One `mpirun` at a time: the tests share two cores.
static MPIRUN: Mutex<()> = Mutex::new(());

/// How a command is started.
#[derive(Clone, Copy, Debug)]
enum Start {
    /// fdu as this many ranks under `mpirun`.
    Ranks(usize),
    /// GNU du, or one fdu process without it.
    Reference,
    /// One fdu process.
    Alone,
}

struct Run<'a> {
    start: Start,
    args: &'a [&'a str],
    env: Vec<(&'a str, &'a str)>,
    /// As `nobody` (through `setpriv`), so that permissions apply.
    as_nobody: bool,
}

fn run<'a>(start: Start, args: &'a [&'a str]) -> Run<'a> {
    Run {
        start,
        args,
        env: vec![("FND_MPI_TEST_PAUSE_US", PAUSE_US)],
        as_nobody: false,
    }
}

impl Run<'_> {
    fn output(&self, cwd: &Path) -> Output {
        let mut argv: Vec<String> = Vec::new();
        if self.as_nobody {
            argv.extend(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"].map(String::from));
        }
        match self.start {
            Start::Ranks(n) => {
                // -q: no banner when rank 0 exits with du's status 1.
                argv.extend(["mpirun", "-q", "--oversubscribe", "--bind-to", "none", "-n"].map(String::from));
                argv.push(n.to_string());
                argv.push(FDU.into());
            }
            Start::Reference => match references::gnu_du() {
                Some(du) => argv.push(du.path().to_string_lossy().into_owned()),
                None => argv.push(FDU.into()),
            },
            Start::Alone => argv.push(FDU.into()),
        }
        argv.extend(self.args.iter().map(|a| a.to_string()));
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(cwd)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("TZ", "UTC")
            .env_remove("BLOCK_SIZE")
            .env_remove("DU_BLOCK_SIZE")
            .env_remove("BLOCKSIZE")
            .env_remove("FND_MPI_STATS");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let _one_at_a_time = MPIRUN.lock().unwrap_or_else(|e| e.into_inner());
        let what = format!("{:?} {:?}", self.start, self.args);
        fnd_test_support::process::run_to_end(cmd, &what, Duration::from_secs(180))
    }
}

/// Lines sorted.
fn lines(stdout: &[u8]) -> Vec<&[u8]> {
    let mut l: Vec<&[u8]> = stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    l.sort();
    l
}

/// Stderr lines sorted, the program's name (`du`, a path to `fdu`) made
/// the same.
fn messages(o: &Output) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(&o.stderr)
        .lines()
        .map(|line| match line.split_once("du: ") {
            Some((name, rest)) if ["", "f"].contains(&name.rsplit('/').next().unwrap_or("")) => {
                format!("DU: {rest}")
            }
            _ => line.to_string(),
        })
        .collect();
    lines.sort();
    lines
}

/// Each rank's (directories read, received, given), from `FND_MPI_STATS`.
fn stats(stderr: &[u8]) -> Vec<(u64, u64, u64)> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("fdu-mpi: rank ")?;
            let n: Vec<u64> = rest
                .split(|c: char| !c.is_ascii_digit())
                .filter(|s| !s.is_empty())
                .filter_map(|s| s.parse().ok())
                .collect();
            Some((n[1], n[2], n[3]))
        })
        .collect()
}

fn put(path: &Path, len: usize) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, vec![b'x'; len]).unwrap();
}

/// Twelve top directories of a few levels each (about 200 directories),
/// files of several sizes, and files linked several times from
/// directories far apart (so that different ranks read their links),
/// a link pair within one directory, and one with a link outside the tree.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    // Readable by nobody, for the test that runs as nobody.
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let t = dir.path().join("t");
    for top in 0..12 {
        for mid in 0..4 {
            for low in 0..3 {
                let d = t.join(format!("top{top}/mid{mid}/low{low}"));
                put(&d.join("f"), 100 * (top + mid + low + 1));
                if (top + mid + low) % 5 == 0 {
                    put(&d.join("big"), 70_000);
                }
            }
            fs::create_dir_all(t.join(format!("top{top}/mid{mid}/empty"))).unwrap();
        }
        put(&t.join(format!("top{top}/own")), 5000 + top);
    }
    for (n, links) in [
        ["top0/mid0/low0/l", "top11/mid3/low2/l", "top5/a-link"],
        ["top3/mid1/x", "top3/mid1/y", "top9/mid2/low1/z"],
        ["top7/mid3/low0/p", "top2/p", "top10/mid0/low2/p"],
    ]
    .iter()
    .enumerate()
    {
        put(&t.join(links[0]), 9000 + n);
        for other in &links[1..] {
            fs::hard_link(t.join(links[0]), t.join(other)).unwrap();
        }
    }
    // For --files0-from, with a zero-length name du complains about.
    fs::write(dir.path().join("names"), b"t/top1\0t/top2\0\0t/top3/mid1\0t/top1\0").unwrap();
    put(&dir.path().join("outside"), 20_000);
    fs::hard_link(dir.path().join("outside"), t.join("top4/mid2/inside")).unwrap();
    dir
}

/// `args` on a fresh tree: the reference, then every number of ranks.
fn same_as_du(args: &[&str]) {
    let dir = tree();
    let du = run(Start::Reference, args).output(dir.path());
    for ranks in RANKS {
        let out = run(Start::Ranks(ranks), args).output(dir.path());
        assert_eq!(
            lines(&out.stdout),
            lines(&du.stdout),
            "{ranks} ranks, {args:?}\n--- reference:\n{}\n--- fdu:\n{}\n{}",
            String::from_utf8_lossy(&du.stdout),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(messages(&out), messages(&du), "{ranks} ranks, {args:?}");
        assert_eq!(out.status.code(), du.status.code(), "{ranks} ranks, {args:?}");
    }
}

#[test]
fn every_directory_totals_as_du_counts_it() {
    same_as_du(&["t"]);
    same_as_du(&["-S", "t"]);
}

#[test]
fn summary_depth_and_total() {
    same_as_du(&["-s", "t"]);
    same_as_du(&["-d", "1", "t"]);
    same_as_du(&["-c", "t/top1", "t/top2", "t"]);
}

#[test]
fn every_file_with_each_multiply_linked_one_at_du_s_first_link() {
    same_as_du(&["-a", "t"]);
    same_as_du(&["-ab", "t"]);
}

#[test]
fn inodes_one_file_system_and_exclude() {
    same_as_du(&["--inodes", "t"]);
    same_as_du(&["-x", "t"]);
    same_as_du(&["-a", "--exclude=*low1*", "t"]);
}

#[test]
fn times_and_every_link_counted() {
    same_as_du(&["--time", "-a", "t"]);
    same_as_du(&["-l", "t"]);
}

#[test]
fn a_missing_path_is_reported_once_with_du_s_status() {
    same_as_du(&["t/top0", "missing", "t/top1"]);
}

#[test]
fn operands_from_a_file_as_rank_0_reads_them() {
    same_as_du(&["-c", "--files0-from=names"]);
    same_as_du(&["--files0-from=no-such-file"]);
}

#[test]
fn directories_move_between_ranks_and_each_is_read_once() {
    let dir = tree();
    let mut job = run(Start::Ranks(3), &["-a", "t"]);
    job.env.push(("FND_MPI_STATS", "1"));
    let out = job.output(dir.path());
    assert!(out.status.success());
    let stats = stats(&out.stderr);
    assert_eq!(stats.len(), 3, "{}", String::from_utf8_lossy(&out.stderr));
    let read: u64 = stats.iter().map(|s| s.0).sum();
    // Each directory of the tree once: t, 12 tops, 48 mids, 144 lows and 48 empties.
    assert_eq!(read, 1 + 12 + 48 + 144 + 48, "{stats:?}");
    assert!(
        stats.iter().filter(|s| s.0 > 0).count() >= 2,
        "only one rank read: {stats:?}"
    );
    assert!(stats.iter().any(|s| s.1 > 0), "nothing was stolen: {stats:?}");
}

/// A JSON document with each directory's children in name order: their
/// order is the order directories completed in.
fn sorted_json(stdout: &[u8]) -> serde_json::Value {
    fn sort(v: &mut serde_json::Value) {
        if let Some(kids) = v.get_mut("children").and_then(|k| k.as_array_mut()) {
            kids.iter_mut().for_each(sort);
            kids.sort_by_key(|k| k["name"].to_string());
        }
    }
    let mut doc: serde_json::Value = serde_json::from_slice(stdout).expect("fdu --json writes JSON");
    doc["roots"].as_array_mut().unwrap().iter_mut().for_each(sort);
    doc
}

#[test]
fn the_tree_view_and_json_show_what_one_process_shows() {
    let dir = tree();
    // Every line (-n): which of several entries of one size fill the last
    // lines depends on the order directories complete in, even in one process.
    let all_lines = ["--tree", "-n", "100000"];
    for args in [
        &[&all_lines[..], &["t"]].concat()[..],
        &[&all_lines[..], &["--tree-depth", "9", "-b", "t/top3", "t"]].concat(),
        &["--json", "t"],
    ] {
        let alone = run(Start::Alone, args).output(dir.path());
        assert!(alone.status.success());
        for ranks in RANKS {
            let out = run(Start::Ranks(ranks), args).output(dir.path());
            assert!(out.status.success(), "{ranks} ranks, {args:?}");
            if args[0] == "--json" {
                assert_eq!(sorted_json(&out.stdout), sorted_json(&alone.stdout), "{ranks} ranks");
            } else {
                assert_eq!(
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&alone.stdout),
                    "{ranks} ranks, {args:?}"
                );
            }
        }
    }
}

#[test]
fn options_not_supported_yet_are_refused_in_one_line() {
    let dir = tree();
    for args in [&["-L", "t"][..], &["-o", "-", "t"], &["--from-json", "-"], &["-f", "-"]] {
        let out = run(Start::Ranks(2), args).output(dir.path());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains("is not supported in an MPI job"), "{stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn bad_usage_is_reported_once_with_du_s_status() {
    let dir = tree();
    for args in [&["--bogus", "t"][..], &["-d", "x", "t"], &["--exclude=[", "t"]] {
        let alone = run(Start::Alone, args).output(dir.path());
        for ranks in [2, 3] {
            let out = run(Start::Ranks(ranks), args).output(dir.path());
            assert_eq!(out.status.code(), alone.status.code(), "{ranks} ranks, {args:?}");
            assert_eq!(messages(&out), messages(&alone), "{ranks} ranks, {args:?}");
            assert!(out.stdout.is_empty(), "{ranks} ranks, {args:?}");
        }
    }
}

#[test]
fn an_unreadable_directory_is_reported_once() {
    if !fnd_test_support::hostile::nobody_available() {
        return;
    }
    let dir = tree();
    let locked = dir.path().join("t/top6/mid1/locked");
    put(&locked.join("inside"), 10);
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    for args in [&["t"][..], &["-a", "t"]] {
        let mut du = run(Start::Reference, args);
        du.as_nobody = true;
        let du = du.output(dir.path());
        assert_eq!(du.status.code(), Some(1));
        for ranks in RANKS {
            let mut job = run(Start::Ranks(ranks), args);
            job.as_nobody = true;
            let out = job.output(dir.path());
            assert_eq!(lines(&out.stdout), lines(&du.stdout), "{ranks} ranks, {args:?}");
            assert_eq!(messages(&out), messages(&du), "{ranks} ranks, {args:?}");
            assert_eq!(out.status.code(), Some(1), "{ranks} ranks, {args:?}");
        }
    }
}

#[test]
fn a_rank_that_dies_fails_the_job() {
    let dir = tree();
    let _one_at_a_time = MPIRUN.lock().unwrap_or_else(|e| e.into_inner());
    let mut cmd = Command::new("mpirun");
    cmd.args(["--oversubscribe", "--bind-to", "none", "-n", "3", FDU, "t"])
        .current_dir(dir.path())
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("FND_MPI_TEST_PAUSE_US", "50000");
    let status = fnd_test_support::process::job_after_rank_1_dies(cmd);
    assert!(!status.success(), "a job that lost a rank succeeded");
}
