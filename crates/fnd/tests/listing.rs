//! `fnd -u . DIR` lists exactly the entries `find DIR -mindepth 1` lists,
//! byte for byte, in every order and thread count — on trees built to break
//! walkers: hostile names, links, unreadable and empty directories, a chain
//! whose paths run past PATH_MAX, a directory of 100,000 entries, and a
//! descriptor limit far below the tree's depth and width.
//!
//! fnd follows fd's convention of a trailing `/` after directories, so find
//! prints one after each directory too; both listings are sorted with
//! `sort` and compared whole.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;
use std::sync::OnceLock;

use assert_cmd::Command;
use fnd_test_support::hostile::{hostile_names, make_chain, mkdir_at, open_dir, open_root, remove_chain, touch_at};
use fnd_test_support::references;
use rustix::fs::{self as rfs, Mode};

const ORDERS: [&str; 3] = ["bfs", "dfs", "parallel"];
const THREADS: [&str; 3] = ["-j1", "-j2", "-j4"];

/// A descriptor limit below the depth of the chain and the width of the
/// wide tree: the walk must fall back to opening directories by path.
const LOW_FD_LIMIT: u32 = 32;

/// Does this fnd have `-0/--print0`? With it records are compared exactly;
/// without it, as multisets of lines (names with newlines still compare,
/// just less strictly).
fn has_print0() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        let out = Command::cargo_bin("fnd")
            .unwrap()
            .arg("--help")
            .output()
            .expect("run fnd --help");
        fnd_test_support::hostile::contains(&out.stdout, b"--print0")
    })
}

fn separator() -> u8 {
    if has_print0() {
        b'\0'
    } else {
        b'\n'
    }
}

/// Records in byte order, as `sort` puts them: sorting in the test itself
/// would walk every byte of megabytes of paths in an unoptimised build.
fn sorted(listing: Vec<u8>) -> Vec<u8> {
    let out = Command::new("sort")
        .env("LC_ALL", "C")
        .args(if has_print0() { &["-z"][..] } else { &[][..] })
        .write_stdin(listing)
        .output()
        .expect("run sort");
    assert!(
        out.status.success(),
        "sort failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// What fnd must print for `root`, sorted: GNU find's listing with a `/`
/// after each directory (a link to one is not a directory). None, saying
/// so, without GNU find (a failure under `FND_REQUIRE_REFERENCE=1`).
fn expected(root: &Path) -> Option<Vec<u8>> {
    let sep = if has_print0() { "\\0" } else { "\\n" };
    let out = references::gnu_find()?
        .command()
        .arg(root)
        .args(["-mindepth", "1", "(", "-type", "d", "-printf"])
        .arg(format!("%p/{sep}"))
        .args([")", "-o", "-printf"])
        .arg(format!("%p{sep}"))
        .output()
        .expect("run find");
    Some(sorted(out.stdout))
}

/// Run fnd on `root` with `args`, under a descriptor limit if given.
fn run_fnd(root: &Path, args: &[&str], fd_limit: Option<u32>) -> Output {
    let fnd = assert_cmd::cargo::cargo_bin("fnd");
    let mut cmd = match fd_limit {
        Some(n) => {
            let mut sh = Command::new("sh");
            sh.arg("-c")
                .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                .arg(fnd);
            sh
        }
        None => Command::new(fnd),
    };
    if has_print0() {
        cmd.arg("-0");
    }
    cmd.args(args).args(["-u", "."]).arg(root).output().expect("run fnd")
}

/// Short, printable form of a record for failure messages (records under the
/// chain are 11,000 bytes long).
fn show(record: &[u8]) -> String {
    let s = format!("{:?}", OsStr::from_bytes(record));
    if s.len() > 160 {
        format!("{}…{} ({} bytes)", &s[..80], &s[s.len() - 60..], record.len())
    } else {
        s
    }
}

/// Fail with the records one side has and the other lacks.
fn explain_difference(what: &str, got: &[u8], want: &[u8]) -> ! {
    let records = |b: &[u8]| -> Vec<Vec<u8>> { b.split(|&c| c == separator()).map(<[u8]>::to_vec).collect() };
    let (got, want) = (records(got), records(want));
    let missing: Vec<String> = want
        .iter()
        .filter(|r| got.binary_search(r).is_err())
        .take(5)
        .map(|r| show(r))
        .collect();
    let extra: Vec<String> = got
        .iter()
        .filter(|r| want.binary_search(r).is_err())
        .take(5)
        .map(|r| show(r))
        .collect();
    let dups = got.windows(2).filter(|w| w[0] == w[1]).count();
    panic!(
        "{what}: {} records, find has {}; {dups} duplicated\n  missing (first 5): {missing:?}\n  extra (first 5): {extra:?}",
        got.len(),
        want.len()
    );
}

/// Compare fnd with find in every order and thread count.
fn assert_lists_like_find(root: &Path, fd_limit: Option<u32>, expect_success: bool) {
    let Some(want) = expected(root) else { return };
    assert!(!want.is_empty(), "find listed nothing under {}", root.display());
    // A result limit makes the parallel walk shallow-first.
    let runs = ORDERS
        .iter()
        .flat_map(|order| THREADS.map(|threads| vec!["--order", order, threads]))
        .chain(["-j1", "-j4"].map(|threads| vec![threads, "--max-results", "1000000000"]));
    for args in runs {
        let out = run_fnd(root, &args, fd_limit);
        let what = format!("fnd {} (fd limit {fd_limit:?})", args.join(" "));
        if expect_success {
            assert!(
                out.status.success(),
                "{what}: {:?}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let got = sorted(out.stdout);
        if got != want {
            explain_difference(&what, &got, &want);
        }
    }
}

/// Hostile names as files, as directories holding a file, and under a
/// subdirectory; links to a directory (not followed), to its own parent (a
/// loop when followed), to nothing; empty directories, nested; a fifo; and
/// a directory no one may read. Returns that directory, to restore.
fn build_hostile(root: &Path) -> std::path::PathBuf {
    let top = open_root(root);
    mkdir_at(&top, b"names");
    let names = open_dir(&top, "names").unwrap();
    mkdir_at(&top, b"as dirs");
    let as_dirs = open_dir(&top, "as dirs").unwrap();
    for name in hostile_names() {
        touch_at(&names, &name);
        mkdir_at(&as_dirs, &name);
        touch_at(open_dir(&as_dirs, OsStr::from_bytes(&name)).unwrap(), b"inner");
    }
    rfs::symlinkat("names", &top, "link-to-dir").unwrap();
    rfs::symlinkat("..", &names, "loop-to-parent").unwrap();
    rfs::symlinkat("does-not-exist", &top, "dangling").unwrap();
    mkdir_at(&top, b"empty");
    mkdir_at(&top, b"empty-nest");
    mkdir_at(open_dir(&top, "empty-nest").unwrap(), b"empty-too");
    rfs::mknodat(&top, "fifo", rfs::FileType::Fifo, Mode::from_raw_mode(0o644), 0).unwrap();
    mkdir_at(&top, b"locked");
    touch_at(open_dir(&top, "locked").unwrap(), b"secret");
    let locked = root.join("locked");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    locked
}

#[test]
fn hostile_tree_lists_like_find() {
    let tmp = tempfile::tempdir().unwrap();
    let locked = build_hostile(tmp.path());
    // Root reads a mode-000 directory anyway; then no error is expected.
    let readable = std::fs::read_dir(&locked).is_ok();
    assert_lists_like_find(tmp.path(), None, readable);
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn chain_past_path_max_lists_like_find() {
    let tmp = tempfile::tempdir().unwrap();
    make_chain(tmp.path(), 1000);
    assert_lists_like_find(tmp.path(), None, true);
    assert_lists_like_find(tmp.path(), Some(LOW_FD_LIMIT), true);
    remove_chain(tmp.path());
}

/// 100,000 entries in one directory, a few of them directories: the
/// listing streams out in many chunks, with children found along the way.
/// The files are hard links to a handful of inodes: making 100,000 inodes
/// takes ext4 tens of seconds, linking them a second or two.
#[test]
fn directory_of_100k_entries_lists_like_find() {
    let tmp = tempfile::tempdir().unwrap();
    let top = open_root(tmp.path());
    mkdir_at(&top, b"big");
    let big = open_dir(&top, "big").unwrap();
    // ext4 allows 65,000 links to one inode.
    const LINKS_PER_INODE: u32 = 50_000;
    for i in 0..100_000u32 {
        let name = format!("entry{i:06}");
        if i % 10_000 == 0 {
            mkdir_at(&big, name.as_bytes());
            touch_at(open_dir(&big, name.as_str()).unwrap(), b"inside");
        } else if i % LINKS_PER_INODE == 1 {
            touch_at(&big, name.as_bytes());
        } else {
            let first = format!("entry{:06}", i - i % LINKS_PER_INODE + 1);
            rfs::linkat(&big, first.as_str(), &big, name.as_str(), rfs::AtFlags::empty()).unwrap();
        }
    }
    assert_lists_like_find(tmp.path(), None, true);
}

/// 20 directories of 20 directories: wider than the descriptor budget at
/// every level.
#[test]
fn wide_tree_under_low_fd_limit_lists_like_find() {
    let tmp = tempfile::tempdir().unwrap();
    let top = open_root(tmp.path());
    for i in 0..20 {
        let name = format!("d{i}");
        mkdir_at(&top, name.as_bytes());
        let dir = open_dir(&top, name.as_str()).unwrap();
        touch_at(&dir, b"f");
        for k in 0..20 {
            mkdir_at(&dir, format!("s{k}").as_bytes());
        }
    }
    assert_lists_like_find(tmp.path(), Some(LOW_FD_LIMIT), true);
}
