//! `fdu --json` and `fdu -o`, written while the scan runs: `--json` lists
//! a directory's entries in du's order (the order of `fdu -a`'s lines),
//! reads back through `--from-json`, and says what a kept tree says; both
//! honour `-x` (a tmpfs mounted inside the tree, when this runs as root)
//! and `--exclude` once; ncdu reads a streamed export back to the totals
//! and the entry count of its own export of the tree.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Output};

use fdu::json_stream::{Event, Reader};
use fnd_test_support::references;
use serde_json::Value;

const FDU: &str = env!("CARGO_BIN_EXE_fdu");

/// Nested directories, hard links within and across directories, an
/// empty directory, an unreadable one (when not root), a name that is
/// not UTF-8, a symlink, many siblings.
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    for d in ["a/b/c", "d/e", "empty", "many", "locked/in"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    let file = |p: &str, len: usize| fs::write(root.join(p), vec![b'x'; len]).unwrap();
    file("one", 1);
    file("a/k1500", 1500);
    file("a/b/big", 200_000);
    file("a/b/c/zero", 0);
    file("d/e/f", 5000);
    file("d/orig", 9000);
    file("locked/in/x", 10);
    for i in 0..300 {
        file(&format!("many/f{i}"), i * 7);
    }
    fs::hard_link(root.join("d/orig"), root.join("a/b/link")).unwrap();
    fs::hard_link(root.join("d/orig"), root.join("d/link2")).unwrap();
    fs::write(root.join(OsStr::from_bytes(b"bad\xffname")), b"12").unwrap();
    std::os::unix::fs::symlink("a", root.join("to_a")).unwrap();
    dir
}

fn fdu(args: &[&str], cwd: &Path) -> Output {
    Command::new(FDU).args(args).current_dir(cwd).output().unwrap()
}

fn ok(args: &[&str], cwd: &Path) -> Vec<u8> {
    let out = fdu(args, cwd);
    assert!(
        out.status.success(),
        "fdu {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// An entry's name as the path joins it (`name_bytes` kept as bytes).
fn name(entry: &Value) -> Vec<u8> {
    match (&entry["name"], &entry["name_bytes"]) {
        (Value::String(s), _) => s.as_bytes().to_vec(),
        (_, Value::Array(bytes)) => bytes.iter().map(|b| b.as_u64().unwrap() as u8).collect(),
        _ => panic!("an entry without a name: {entry}"),
    }
}

/// Every entry's path and size, each directory after its entries: the
/// order of du's lines.
fn post_order(entry: &Value, path: Vec<u8>, out: &mut Vec<(Vec<u8>, u64)>) {
    for child in entry["children"].as_array().into_iter().flatten() {
        let mut p = path.clone();
        p.push(b'/');
        p.extend(name(child));
        post_order(child, p, out);
    }
    out.push((path, entry["size"].as_u64().unwrap()));
}

fn json_lines(doc: &[u8]) -> Vec<(Vec<u8>, u64)> {
    let value: Value = serde_json::from_slice(doc).expect("--json writes JSON");
    let mut lines = Vec::new();
    for root in value["roots"].as_array().unwrap() {
        post_order(root, name(root), &mut lines);
    }
    lines
}

fn du_lines(out: &[u8]) -> Vec<(Vec<u8>, u64)> {
    out.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let tab = l.iter().position(|&b| b == b'\t').unwrap();
            let size = std::str::from_utf8(&l[..tab]).unwrap().parse().unwrap();
            (l[tab + 1..].to_vec(), size)
        })
        .collect()
}

/// A document with each directory's entries by name, to compare what
/// does not keep du's order.
fn by_name(doc: &[u8]) -> Value {
    fn sort(v: &mut Value) {
        if let Some(kids) = v.get_mut("children").and_then(Value::as_array_mut) {
            kids.iter_mut().for_each(sort);
            kids.sort_by_key(name);
        }
    }
    let mut value: Value = serde_json::from_slice(doc).unwrap();
    value["roots"].as_array_mut().unwrap().iter_mut().for_each(sort);
    value
}

fn lock(root: &Path) -> Option<Unlock> {
    use std::os::unix::fs::PermissionsExt;
    let locked = root.join("t/locked");
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    // Root reads it all the same: then nothing is unreadable.
    Some(Unlock(locked))
}

/// Gives an unreadable directory its permissions back (for the cleanup).
struct Unlock(std::path::PathBuf);

impl Drop for Unlock {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        let _ = fs::set_permissions(&self.0, fs::Permissions::from_mode(0o755));
    }
}

#[test]
fn json_lists_entries_in_dus_order_and_reads_back() {
    let dir = fixture();
    let cwd = dir.path();
    let _unlock = lock(cwd);
    for args in [
        &["t"][..],
        &["-b", "t"],
        &["--inodes", "t"],
        &["-l", "t"],
        &["-S", "t"],
        &["-b", "t/a", "t/one", "t/d"],
        &["-j1", "t"],
        &["-j8", "t"],
    ] {
        let block = if args.contains(&"-b") || args.contains(&"--inodes") {
            &[][..]
        } else {
            &["-B1"][..]
        };
        let json = fdu(&[&["--json"], args].concat(), cwd);
        let du = fdu(&[&["-a"], block, args].concat(), cwd);
        assert_eq!(json.status.code(), du.status.code(), "{args:?}");
        assert_eq!(json.stderr, du.stderr, "{args:?}");
        let mut expected = du_lines(&du.stdout);
        if args.contains(&"-S") {
            // -S prints a directory without its subdirectories; --json
            // always gives the total: compare the files only.
            let file =
                |(p, _): &(Vec<u8>, u64)| !fs::symlink_metadata(cwd.join(OsStr::from_bytes(p))).unwrap().is_dir();
            expected.retain(file);
            let mut got = json_lines(&json.stdout);
            got.retain(file);
            assert_eq!(got, expected, "{args:?}");
        } else {
            assert!(
                json_lines(&json.stdout) == expected,
                "{args:?}: --json is not in du's order"
            );
        }
        // The same as the kept tree's (the tree view keeps it), but for
        // the order of entries, which that one does not keep.
        let kept = fdu(&[&["--json", "--tree"], args].concat(), cwd);
        let kept_json = kept.stdout.split_inclusive(|&b| b == b'\n').next().unwrap();
        assert_eq!(by_name(&json.stdout), by_name(kept_json), "{args:?}");
    }
    // Read back, it is the tree the scan shows.
    let saved = ok(&["--json", "t"], cwd);
    fs::write(cwd.join("saved.json"), &saved).unwrap();
    // Entries of the same size are shown in the order they are listed,
    // which the kept tree does not keep: lines compared without the
    // branches that depend on it.
    let view = ["--tree", "-n", "1000", "--tree-depth", "9"];
    let lines = |out: Vec<u8>| {
        let text = String::from_utf8_lossy(&out).replace(['├', '└', '│', '─'], "");
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    let shown = lines(ok(&[&view[..], &["--from-json", "saved.json"]].concat(), cwd));
    assert_eq!(shown, lines(fdu(&[&view[..], &["t"]].concat(), cwd).stdout));
    assert!(shown.len() > 300);
    // And the same every time.
    for _ in 0..5 {
        assert!(ok(&["--json", "t"], cwd) == saved);
    }
}

#[test]
fn json_of_nothing_but_missing_operands_is_still_a_document() {
    let dir = tempfile::tempdir().unwrap();
    let out = fdu(&["--json", "missing"], dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(out.stdout, b"{\"fdu\":1,\"measure\":\"disk\",\"roots\":[]}\n");
}

/// Every name in an export or a `--json` document, at any depth (read
/// by fdu's reader: an export holds names that are not UTF-8 as they are).
fn all_names(doc: &[u8]) -> Vec<Vec<u8>> {
    let mut r = Reader::new(doc);
    let mut out = Vec::new();
    while let Some(event) = r.next().unwrap() {
        match event {
            Event::Key(k) if *k == *b"name" => match r.next().unwrap() {
                Some(Event::Str(s)) => out.push(s.into_owned()),
                other => panic!("a name: {other:?}"),
            },
            Event::Key(k) if *k == *b"name_bytes" => {
                assert_eq!(r.next().unwrap(), Some(Event::BeginArray));
                let mut name = Vec::new();
                while let Some(Event::Number(n)) = r.next().unwrap() {
                    name.push(n.parse().unwrap());
                }
                out.push(name);
            }
            _ => {}
        }
    }
    out
}

#[test]
fn exports_and_json_leave_out_what_exclude_says() {
    let dir = fixture();
    let cwd = dir.path();
    for args in [&["--json"][..], &["-o", "-"]] {
        let all = all_names(&ok(&[args, &["t"]].concat(), cwd));
        assert!(
            all.contains(&b"b".to_vec()) && all.contains(&b"big".to_vec()),
            "{args:?}"
        );
        let some = all_names(&ok(&[args, &["--exclude=b", "--exclude=*.never", "t"]].concat(), cwd));
        for under in ["b", "big", "c", "zero"] {
            assert!(!some.contains(&under.as_bytes().to_vec()), "{args:?}: {under}");
        }
        if args[0] == "-o" {
            // --json lists one link of a file, which may move.
            assert_eq!(some.len(), all.len() - 5, "{args:?}: b, big, link, c, zero left out");
        }
    }
}

/// A tmpfs mounted for a test, unmounted when dropped.
struct Mount(std::path::PathBuf);

impl Mount {
    fn tmpfs(at: &Path) -> Option<Mount> {
        let done = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "fdu-test"])
            .arg(at)
            .output();
        match done {
            Ok(o) if o.status.success() => Some(Mount(at.to_path_buf())),
            Ok(o) => {
                references::skip(&format!(
                    "cannot mount a tmpfs: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ));
                None
            }
            Err(e) => {
                references::skip(&format!("cannot mount a tmpfs: {e}"));
                None
            }
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn exports_and_json_stay_on_one_file_system_with_x() {
    if !rustix::process::geteuid().is_root() {
        references::skip("mounting a tmpfs takes root");
        return;
    }
    let dir = fixture();
    let cwd = dir.path();
    let mnt = cwd.join("t/a/mnt");
    fs::create_dir(&mnt).unwrap();
    let Some(_mount) = Mount::tmpfs(&mnt) else { return };
    fs::create_dir(mnt.join("sub")).unwrap();
    fs::write(mnt.join("sub/inside"), b"x").unwrap();
    let inside = |doc: &[u8]| {
        let all = all_names(doc);
        (all.contains(&b"mnt".to_vec()), all.contains(&b"inside".to_vec()))
    };
    assert_eq!(inside(&ok(&["--json", "t"], cwd)), (true, true));
    assert_eq!(
        inside(&ok(&["--json", "-x", "t"], cwd)),
        (false, false),
        "du leaves it out"
    );
    assert_eq!(inside(&ok(&["-o", "-", "t"], cwd)), (true, true));
    let export = ok(&["-o", "-", "-x", "t"], cwd);
    // ncdu writes the mount point, marked, and nothing under it.
    assert_eq!(inside(&export), (true, false));
    let text = String::from_utf8_lossy(&export);
    assert!(text.contains("{\"name\":\"mnt\""), "{text}");
    assert!(text.contains("\"excluded\":\"otherfs\"}"), "{text}");
    // `fdu -x -s` and `fdu -x --json` agree on the total.
    let total = du_lines(&ok(&["-x", "-s", "-B1", "t"], cwd))[0].1;
    let json: Value = serde_json::from_slice(&ok(&["--json", "-x", "t"], cwd)).unwrap();
    assert_eq!(json["roots"][0]["size"].as_u64(), Some(total));
}

/// What ncdu counts of an export: entries, and the sums of `asize` and
/// `dsize` (each link of a file listed, as both write them).
fn ncdu_figures(doc: &[u8]) -> (usize, u64, u64) {
    let mut r = Reader::new(doc);
    let mut acc = (0, 0, 0);
    while let Some(event) = r.next().unwrap() {
        let Event::Key(k) = event else { continue };
        let mut number = || match r.next().unwrap() {
            Some(Event::Number(n)) => n.parse::<u64>().unwrap(),
            other => panic!("a size: {other:?}"),
        };
        match &*k {
            b"name" => acc.0 += 1,
            b"asize" => acc.1 += number(),
            b"dsize" => acc.2 += number(),
            _ => {}
        }
    }
    acc
}

#[test]
fn ncdu_reads_a_streamed_export_as_its_own() {
    let Some(ncdu) = references::ncdu() else { return };
    let dir = fixture();
    let cwd = dir.path();
    let _unlock = lock(cwd);
    fs::write(cwd.join("fdu.json"), fdu(&["-o", "-", "t"], cwd).stdout).unwrap();
    let mut own = ncdu.command();
    own.args(["-0", "-o", "ncdu.json", "t"]).current_dir(cwd);
    assert!(own.output().unwrap().status.code().is_some());
    let mut again = ncdu.command();
    again
        .args(["-0", "-f", "fdu.json", "-o", "again.json"])
        .current_dir(cwd);
    let again = again.output().unwrap();
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let theirs = ncdu_figures(&fs::read(cwd.join("ncdu.json")).unwrap());
    assert_eq!(ncdu_figures(&fs::read(cwd.join("again.json")).unwrap()), theirs);
    assert_eq!(ncdu_figures(&fs::read(cwd.join("fdu.json")).unwrap()), theirs);
    assert!(theirs.0 > 300, "{theirs:?}");
}
