//! `--json` and `--from-json` at the depth of the file system: a chain of
//! 2000 directories (its deepest paths are twice PATH_MAX) written by
//! `fdu --json` reads back into the same tree view and the same sizes as
//! the live scan; a hand-made document 3000 levels deep reads.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use fdu::tree::Step;
use rustix::fs::{openat, unlinkat, AtFlags, Mode, OFlags, CWD};

const DEPTH: usize = 2000;
/// Four bytes a level: 8000-byte paths at the bottom.
const LEVEL: &str = "sub";

fn open_dir(at: &impl std::os::fd::AsFd, name: &str) -> OwnedFd {
    openat(
        at,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap()
}

/// `root/sub/sub/…`, `DEPTH` directories, each holding a file `f` of
/// `level` bytes: made with *at calls, one descriptor open at a time.
fn make_chain(root: &Path) {
    std::fs::create_dir(root).unwrap();
    let mut dir = open_dir(&CWD, root.to_str().unwrap());
    for level in 0..DEPTH {
        rustix::fs::mkdirat(&dir, LEVEL, Mode::from_raw_mode(0o755)).unwrap();
        let file = openat(
            &dir,
            "f",
            OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .unwrap();
        rustix::io::write(&file, &vec![b'x'; level + 1]).unwrap();
        dir = open_dir(&dir, LEVEL);
    }
}

/// Remove the chain bottom up (std's remove_dir_all keeps a descriptor
/// per level open, more than a default limit of 1024 allows).
fn remove_chain(root: &Path) {
    let mut dir = open_dir(&CWD, root.to_str().unwrap());
    for _ in 0..DEPTH {
        dir = open_dir(&dir, LEVEL);
    }
    for _ in 0..DEPTH {
        let parent = open_dir(&dir, "..");
        unlinkat(&parent, "f", AtFlags::empty()).ok();
        unlinkat(&parent, LEVEL, AtFlags::REMOVEDIR).unwrap();
        dir = parent;
    }
    std::fs::remove_dir(root).unwrap();
}

fn fdu(args: &[&str], cwd: &Path, stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fdu"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let _ = input.write_all(stdin);
    drop(input);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "fdu {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn a_chain_2000_deep_round_trips_through_json() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    make_chain(&cwd.join("c"));
    let saved = fdu(&["--json", "c"], cwd, b"").stdout;
    let view = ["--tree", "--tree-depth", "5000", "-n", "5000"];
    let live = fdu(&[&view[..], &["c"]].concat(), cwd, b"").stdout;
    let read_back = fdu(&[&view[..], &["--from-json", "-"]].concat(), cwd, &saved).stdout;
    assert!(
        live == read_back,
        "the tree view of the saved tree differs from the live scan's"
    );
    assert_eq!(
        live.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count(),
        2 * DEPTH + 1
    );

    // Every size in the saved tree is the one du's lines give.
    let lines = fdu(&["-a", "-B1", "-0", "c"], cwd, b"").stdout;
    let from_du: BTreeMap<Vec<u8>, u64> = lines
        .split(|&b| b == 0)
        .filter(|r| !r.is_empty())
        .map(|r| {
            let tab = r.iter().position(|&b| b == b'\t').unwrap();
            let size = std::str::from_utf8(&r[..tab]).unwrap().parse().unwrap();
            (r[tab + 1..].to_vec(), size)
        })
        .collect();
    let roots = fdu::json::read(&saved).unwrap();
    let mut from_json = BTreeMap::new();
    let mut path: Vec<Vec<u8>> = Vec::new();
    for step in roots[0].walk() {
        match step {
            Step::Enter { name, node, .. } => {
                path.push(name.to_vec());
                from_json.insert(path.join(&b'/'), node.amount);
            }
            Step::Leave { .. } => {
                path.pop();
            }
        }
    }
    assert_eq!(from_json.len(), 2 * DEPTH + 1);
    assert!(from_json == from_du, "the saved sizes differ from du's lines");
    remove_chain(&cwd.join("c"));
}

#[test]
fn a_hand_made_document_3000_deep_reads() {
    const LEVELS: usize = 3000;
    let mut doc = String::from("{\"fdu\":1,\"measure\":\"disk\",\"roots\":[\n");
    for level in 0..LEVELS {
        doc += &format!(
            "{{\"name\": \"d{level}\", \"size\": {}, \"children\": [\n",
            LEVELS - level
        );
    }
    doc += &"]}".repeat(LEVELS);
    doc += "]}\n";
    let tmp = tempfile::tempdir().unwrap();
    let out = fdu(
        &["--tree", "--tree-depth", "5000", "-n", "5000", "--from-json", "-"],
        tmp.path(),
        doc.as_bytes(),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), LEVELS);
    assert!(rows[0].contains("100%") && rows[0].ends_with(" d0"), "{}", rows[0]);
    assert!(rows[LEVELS - 1].ends_with(&format!("└─ d{}", LEVELS - 1)));
}
