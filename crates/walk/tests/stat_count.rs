//! `total_size` (the example) stats each entry exactly once: the walk's
//! bulk fetch is the only stat, and reading `cached_metadata` makes no
//! system call. Checked by counting the process's stat calls with strace
//! (without strace the test says so and checks nothing; a failure under
//! `FND_REQUIRE_REFERENCE=1`).

use std::path::Path;

use fnd_test_support::references;

#[path = "../examples/total_size.rs"]
#[allow(dead_code)]
mod total_size;

const CHILD: &str = "FND_WALK_STAT_COUNT_TREE";

/// The example's run in the child process that `total_size_stats_each_entry_once`
/// starts under strace (this test binary again, with this test selected).
/// Ignored in ordinary runs, and a failure when run on its own: it checks
/// nothing by itself.
#[test]
#[ignore = "the child half of total_size_stats_each_entry_once, which runs it under strace"]
fn child_total_size() {
    let tree = std::env::var_os(CHILD)
        .unwrap_or_else(|| panic!("run by total_size_stats_each_entry_once under strace, with {CHILD} set"));
    let (_, entries) = total_size::total_size(Path::new(&tree));
    println!("entries={entries}");
}

#[test]
fn total_size_stats_each_entry_once() {
    let Some(strace) = references::strace() else { return };
    let tree = tempfile::tempdir().unwrap();
    for d in 0..5 {
        let dir = tree.path().join(format!("d{d}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..100 {
            std::fs::write(dir.join(format!("f{f}")), "x").unwrap();
        }
    }
    let entries = 1 + 5 + 500;
    // Outside the tree, which must not change while it is walked.
    let scratch = tempfile::tempdir().unwrap();
    let summary = scratch.path().join("strace.out");
    let stat_calls = "newfstatat,fstatat64,statx,stat,lstat,fstat";
    let out = strace
        .command()
        .args(["-f", "-qq", "-e", &format!("trace={stat_calls}"), "-o"])
        .arg(&summary)
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_total_size",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, tree.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("entries={entries}")),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = std::fs::read_to_string(&summary).unwrap();
    // One line per call ("PID name(dirfd, \"name\", …"), plus "<... resumed>"
    // lines for calls that another thread's output interrupted. Only stats
    // relative to a directory descriptor, of names in the tree, count: the
    // loader and the test harness stat other paths by absolute path.
    let mut per_name = std::collections::HashMap::<&str, u64>::new();
    for line in summary.lines().filter(|l| !l.contains(" resumed>")) {
        let Some(args) = line.split_once('(').map(|(_, rest)| rest) else {
            continue;
        };
        let Some((dirfd, rest)) = args.split_once(", \"") else {
            continue;
        };
        let name = rest.split('"').next().unwrap_or("");
        if dirfd.parse::<u32>().is_ok() && (name.starts_with('d') || name.starts_with('f')) {
            *per_name.entry(name).or_default() += 1;
        }
    }
    let stats: u64 = per_name.values().sum();
    assert_eq!(stats, entries - 1, "stat calls per name: {per_name:?}\n{summary}");
    // Each file name occurs once in each of the 5 directories: 5 stats, not 10.
    assert!(
        per_name
            .iter()
            .all(|(name, &n)| n == if name.starts_with('d') { 1 } else { 5 }),
        "{per_name:?}"
    );
}
