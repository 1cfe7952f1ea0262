//! `fdu --diff`: two exports of a tree before and after known changes
//! (by fdu -o, ncdu -o, and --json), and an export against the live tree,
//! give the directories that grew or shrank, what appeared and what went;
//! directory totals checked against GNU du's; bad input gets one line.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

const FDU: &str = env!("CARGO_BIN_EXE_fdu");

fn fdu(args: &[&str], cwd: &Path) -> Output {
    Command::new(FDU).args(args).current_dir(cwd).output().unwrap()
}

fn ok(args: &[&str], cwd: &Path) -> String {
    let out = fdu(args, cwd);
    assert!(
        out.status.success(),
        "fdu {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn write(path: &Path, len: usize) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, vec![b'x'; len]).unwrap();
}

/// The tree before: nested directories, files of known sizes, hard links
/// across directories (which must not show as changes).
fn before(root: &Path) {
    for (p, len) in [
        ("a/one", 1000),
        ("a/grows", 10_000),
        ("a/b/shrinks", 50_000),
        ("a/b/c/stays", 7),
        ("gone/x", 300),
        ("gone/deeper/y", 400),
        ("lonely", 20),
        ("keep/k", 5),
    ] {
        write(&root.join(p), len);
    }
    fs::hard_link(root.join("a/one"), root.join("keep/one.link")).unwrap();
}

/// The known changes.
fn change(root: &Path) {
    write(&root.join("a/grows"), 90_000);
    write(&root.join("a/b/shrinks"), 10);
    fs::remove_dir_all(root.join("gone")).unwrap();
    fs::remove_file(root.join("lonely")).unwrap();
    write(&root.join("new/dir/z"), 123_456);
    write(&root.join("a/b/c/fresh"), 4242);
}

/// `du -b` of every directory, keyed by path below the root.
fn du_totals(root: &Path) -> BTreeMap<String, u64> {
    let out = Command::new("du").arg("-b").arg(root).output().unwrap();
    let prefix = root.to_str().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (n, p) = l.split_once('\t').unwrap();
            let rel = p.strip_prefix(prefix).unwrap().trim_start_matches('/').to_string();
            (rel, n.parse().unwrap())
        })
        .collect()
}

/// Lines without their root's name (exports name it by its absolute path, a live scan as given).
fn relative(text: &str, root: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            let (head, path) = l.rsplit_once('\t').unwrap();
            let rel = path.strip_prefix(root).unwrap_or(path).trim_start_matches('/');
            format!("{head}\t{rel}")
        })
        .collect()
}

#[test]
fn known_changes_are_found_in_exports_and_live() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let root = cwd.join("t");
    before(&root);
    let old_du = du_totals(&root);
    ok(&["-o", "old.ncdu", "t"], cwd);
    ok(&["--json", "-b", "t"], cwd);
    fs::write(cwd.join("old.json"), ok(&["--json", "-b", "t"], cwd)).unwrap();
    change(&root);
    let new_du = du_totals(&root);
    ok(&["-o", "new.ncdu", "t"], cwd);
    let abs = root.to_str().unwrap();

    let exports = ok(&["--diff", "old.ncdu", "new.ncdu", "-b", "--top", "0"], cwd);
    let lines = relative(&exports, abs);
    // Directories in both scans whose du total changed, largest change first.
    let mut changed: Vec<(u64, String)> = new_du
        .iter()
        .filter_map(|(p, &n)| {
            let o = *old_du.get(p)?;
            (o != n).then(|| {
                let (word, sign) = if n > o { ("grew", '+') } else { ("shrank", '-') };
                (o.abs_diff(n), format!("{word}\t{sign}{}\t{o}\t{n}\t{p}", o.abs_diff(n)))
            })
        })
        .collect();
    changed.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut expected: Vec<String> = changed.into_iter().map(|c| c.1).collect();
    let new_dir = new_du["new"];
    expected.push(format!("appeared\t+{new_dir}\t-\t{new_dir}\tnew"));
    expected.push("appeared\t+4242\t-\t4242\ta/b/c/fresh".into());
    let gone = old_du["gone"];
    expected.push(format!("gone\t-{gone}\t{gone}\t-\tgone"));
    expected.push("gone\t-20\t20\t-\tlonely".into());
    assert_eq!(lines, expected, "{exports}");
    assert!(!exports.contains("keep"), "hard links are no change: {exports}");

    // The live tree against the old export: the same answer.
    let live = ok(&["--diff", "old.ncdu", "t", "-b", "--top", "0"], cwd);
    assert_eq!(relative(&live, "t"), expected);
    // Without NEW: the export's own root, scanned now.
    let own = ok(&["--diff", "old.ncdu", "-b", "--top", "0"], cwd);
    assert_eq!(relative(&own, abs), expected);
    // A --json tree as OLD.
    let json = ok(&["--diff", "old.json", "t", "-b", "--top", "0"], cwd);
    assert_eq!(relative(&json, "t"), expected);

    // --top N: at most N lines of each part.
    let top = ok(&["--diff", "old.ncdu", "new.ncdu", "-b", "--top", "1"], cwd);
    let words: Vec<&str> = top.lines().map(|l| l.split('\t').next().unwrap()).collect();
    assert_eq!(words, ["grew", "appeared", "gone"], "{top}");

    // --json: the same figures, ready for jq.
    let doc: serde_json::Value = serde_json::from_str(&ok(
        &["--diff", "old.ncdu", "new.ncdu", "-b", "--top", "0", "--json"],
        cwd,
    ))
    .unwrap();
    assert_eq!(
        doc["changed"].as_array().unwrap().len(),
        expected
            .iter()
            .filter(|l| !l.starts_with("appeared") && !l.starts_with("gone"))
            .count()
    );
    assert_eq!(doc["appeared"][0]["size"], new_dir);
    assert_eq!(doc["gone"][1]["size"], 20);

    // Units: -h and -k round as du does.
    let k = ok(
        &["--diff", "old.ncdu", "new.ncdu", "-k", "--apparent-size", "--top", "1"],
        cwd,
    );
    let first = k.lines().next().unwrap();
    let change: u64 = first
        .split('\t')
        .nth(1)
        .unwrap()
        .trim_start_matches('+')
        .parse()
        .unwrap();
    let bytes: u64 = expected[0]
        .split('\t')
        .nth(1)
        .unwrap()
        .trim_start_matches('+')
        .parse()
        .unwrap();
    assert_eq!(change, bytes.div_ceil(1024));
}

#[test]
fn the_same_tree_shows_no_change() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    before(&cwd.join("t"));
    ok(&["-o", "old.ncdu", "t"], cwd);
    assert_eq!(ok(&["--diff", "old.ncdu", "t"], cwd), "");
    assert_eq!(ok(&["--diff", "old.ncdu", "old.ncdu"], cwd), "");
    let ncdu = Command::new("ncdu")
        .args(["-0", "-o", "n.ncdu", "t"])
        .current_dir(cwd)
        .status();
    if ncdu.is_ok_and(|s| s.success()) {
        assert_eq!(
            ok(&["--diff", "n.ncdu", "t"], cwd),
            "",
            "ncdu's export of the same tree"
        );
    } else {
        eprintln!("ncdu not found: its exports not compared");
    }
}

#[test]
fn bad_input_gets_one_line_and_status_1() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    before(&cwd.join("t"));
    ok(&["-o", "old.ncdu", "t"], cwd);
    let whole = fs::read(cwd.join("old.ncdu")).unwrap();
    fs::write(cwd.join("cut.ncdu"), &whole[..whole.len() * 2 / 3]).unwrap();
    fs::write(cwd.join("junk"), b"hello").unwrap();
    fs::write(cwd.join("disk.json"), ok(&["--json", "t"], cwd)).unwrap();
    for args in [
        &["--diff", "cut.ncdu", "t"][..],
        &["--diff", "old.ncdu", "cut.ncdu"],
        &["--diff", "junk", "t"],
        &["--diff", "missing.ncdu", "t"],
        &["--diff", "disk.json", "t", "-b"],
        &["--diff", "old.ncdu", "missing-dir/"],
    ] {
        let out = fdu(args, cwd);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // NEW is the one operand: a second is refused as du refuses one.
    let out = fdu(&["--diff", "old.ncdu", "t", "t"], cwd);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("extra operand 't'"), "{err}");
}

/// Lines as bytes, each path without its root's name.
fn relative_bytes(text: &[u8], root: &[u8]) -> Vec<Vec<u8>> {
    text.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let at = l.iter().rposition(|&b| b == b'\t').unwrap() + 1;
            let path = &l[at..];
            let rel = path.strip_prefix(root).unwrap_or(path);
            [&l[..at], rel].concat()
        })
        .collect()
}

#[test]
fn the_live_tree_and_its_export_give_the_same_diff() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let root = cwd.join("t");
    // Enough entries that the walk meets many before OLD is read.
    for d in 0..40 {
        for f in 0..50 {
            write(&root.join(format!("d{d}/sub/f{f}")), 10 * f + d);
        }
    }
    let long = "n".repeat(200);
    let odd = std::ffi::OsStr::from_bytes(b"odd\xff\xfe");
    write(&root.join("turns/into/file"), 5);
    write(&root.join("was_file"), 7);
    write(&root.join(&long).join("inside"), 3);
    write(&root.join("d1").join(odd), 11);
    write(&root.join("links/first"), 2000);
    fs::hard_link(root.join("links/first"), root.join("links/second")).unwrap();
    ok(&["-o", "old.ncdu", "t"], cwd);

    fs::remove_dir_all(root.join("turns")).unwrap();
    write(&root.join("turns"), 600);
    fs::remove_file(root.join("was_file")).unwrap();
    write(&root.join("was_file/now_inside"), 800);
    fs::remove_file(root.join(&long).join("inside")).unwrap();
    write(&root.join(&long).join("other"), 900);
    fs::remove_file(root.join("d1").join(odd)).unwrap();
    write(&root.join("d2").join(odd), 1100);
    fs::remove_file(root.join("links/first")).unwrap();
    for d in (0..40).step_by(7) {
        fs::remove_dir_all(root.join(format!("d{d}/sub"))).unwrap();
    }
    ok(&["-o", "new.ncdu", "t"], cwd);

    let abs = root.as_os_str().as_bytes();
    for extra in [&["-b"][..], &["--json"], &["--inodes"]] {
        let args = |new: &'static str| {
            let mut a = vec!["--diff", "old.ncdu", new, "--top", "0"];
            a.extend_from_slice(extra);
            a
        };
        let exports = fdu(&args("new.ncdu"), cwd);
        let live = fdu(&args("t"), cwd);
        assert!(exports.status.success() && live.status.success(), "{extra:?}");
        if extra == ["--json"] {
            // The same figures in the same order (the paths are checked below).
            let norm = |out: &[u8]| {
                let mut v: serde_json::Value = serde_json::from_slice(out).unwrap();
                v["new"] = serde_json::Value::Null;
                for part in ["changed", "appeared", "gone"] {
                    for item in v[part].as_array_mut().unwrap() {
                        let item = item.as_object_mut().unwrap();
                        item.remove("path");
                        item.remove("path_bytes");
                    }
                }
                v
            };
            assert_eq!(norm(&exports.stdout), norm(&live.stdout), "{extra:?}");
            continue;
        }
        let lines = relative_bytes(&exports.stdout, abs);
        assert_eq!(lines, relative_bytes(&live.stdout, b"t"), "{extra:?}");
        let text = String::from_utf8_lossy(&exports.stdout);
        for shown in [
            "t/turns\n",
            "t/was_file\n",
            "t/d1/odd",
            "t/d2/odd",
            "/other\n",
            "/inside\n",
        ] {
            assert!(text.contains(shown), "{extra:?}: {shown:?} in {text}");
        }
    }
}
