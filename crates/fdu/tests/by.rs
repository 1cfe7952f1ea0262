//! `fdu --by`: usage per user, group, extension, type and age, compared
//! with the same aggregation of `find -printf` computed here, byte for
//! byte in `-b`; hard links once, `--exclude`, `--top`, `-f` exports that
//! carry (or lack) the fields, and bad keys.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

const FDU: &str = env!("CARGO_BIN_EXE_fdu");

/// Whether the tests may give files away (`chown` needs root).
fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A tree with several owners (when run as root), extensions in both
/// cases, mtimes from minutes to ten years old, hard links across
/// directories with different extensions, a symlink and a fifo.
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("t");
    for d in ["src/deep", "data", "old", ".hidden"] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    let files: &[(&str, usize, &str)] = &[
        ("src/main.rs", 1200, "1 hour ago"),
        ("src/lib.RS", 30_000, "3 days ago"),
        ("src/deep/notes.txt", 10, "20 days ago"),
        ("data/table.csv", 250_000, "200 days ago"),
        ("data/blob", 7000, "2 years ago"),
        ("old/archive.tar.gz", 90_000, "10 years ago"),
        ("old/.bashrc", 300, "5 years ago"),
        (".hidden/x.TXT", 5, "1 minute ago"),
        ("trailing.", 1, "2 hours ago"),
    ];
    for (path, len, when) in files {
        let p = root.join(path);
        fs::write(&p, vec![b'x'; *len]).unwrap();
        touch(&p, when);
    }
    fs::hard_link(root.join("data/table.csv"), root.join("src/table.link")).unwrap();
    fs::hard_link(root.join("data/table.csv"), root.join("old/table.zz")).unwrap();
    std::os::unix::fs::symlink("src", root.join("to_src.lnk")).unwrap();
    let fifo = root.join("data/pipe");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    if is_root() {
        for (path, owner) in [
            ("src", "1001:2001"),
            ("src/main.rs", "1001:2001"),
            ("src/lib.RS", "1002:2001"),
            ("data/table.csv", "1003:2002"),
            ("old", "65534:65534"),
            ("old/archive.tar.gz", "1001:2002"),
        ] {
            let ok = Command::new("chown")
                .args(["-h", owner])
                .arg(root.join(path))
                .status()
                .unwrap();
            assert!(ok.success());
        }
    }
    dir
}

fn touch(path: &Path, when: &str) {
    let ok = Command::new("touch")
        .args(["-h", "-d", when])
        .arg(path)
        .status()
        .unwrap();
    assert!(ok.success(), "touch -d {when}");
}

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

/// One entry as `find -printf` sees it.
struct Found {
    path: Vec<u8>,
    name: Vec<u8>,
    user: String,
    uid: String,
    group: String,
    kind: char,
    size: u64,
    blocks: u64,
    mtime: i64,
    id: (u64, u64),
    links: u64,
}

fn find(root: &str, cwd: &Path) -> Vec<Found> {
    let out = Command::new("find")
        .args([
            root,
            "-printf",
            "%p\\0%f\\0%u\\0%U\\0%g\\0%y\\0%s\\0%b\\0%T@\\0%D\\0%i\\0%n\\0",
        ])
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(out.status.success());
    let fields: Vec<&[u8]> = out.stdout.split(|&b| b == 0).collect();
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
    fields
        .chunks_exact(12)
        .map(|f| Found {
            path: f[0].to_vec(),
            name: f[1].to_vec(),
            user: text(f[2]),
            uid: text(f[3]),
            group: text(f[4]),
            kind: text(f[5]).chars().next().unwrap(),
            size: text(f[6]).parse().unwrap(),
            blocks: text(f[7]).parse().unwrap(),
            mtime: text(f[8]).split('.').next().unwrap().parse().unwrap(),
            id: (text(f[9]).parse().unwrap(), text(f[10]).parse().unwrap()),
            links: text(f[11]).parse().unwrap(),
        })
        .collect()
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn age(mtime: i64) -> &'static str {
    let age = now() - mtime;
    let day = 86_400;
    match age {
        a if a < day => "< 1 day",
        a if a < 7 * day => "< 1 week",
        a if a < 30 * day => "< 1 month",
        a if a < 365 * day => "< 1 year",
        a if a < 3 * 365 * day => "< 3 years",
        _ => "older",
    }
}

fn ext(name: &[u8]) -> String {
    match name.iter().rposition(|&b| b == b'.') {
        Some(dot) if dot > 0 && dot + 1 < name.len() => String::from_utf8_lossy(&name[dot + 1..]).to_lowercase(),
        _ => "(none)".into(),
    }
}

fn kind(k: char) -> &'static str {
    match k {
        'f' => "file",
        'd' => "dir",
        'l' => "symlink",
        'p' => "fifo",
        's' => "socket",
        'c' => "char",
        'b' => "block",
        _ => "other",
    }
}

/// `fdu --by` in `-b` units, as computed from find's listing: each
/// multiply-linked file at its smallest path, du's apparent size (0 for
/// what is neither a file, a directory nor a symlink), largest first.
fn expected(entries: &[Found], label: impl Fn(&Found) -> Vec<String>) -> String {
    let mut seen = HashSet::new();
    let mut sorted: Vec<&Found> = entries.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut groups: BTreeMap<Vec<String>, (u64, u64, u64)> = BTreeMap::new();
    for e in sorted {
        if e.links > 1 && e.kind != 'd' && !seen.insert(e.id) {
            continue;
        }
        let g = groups.entry(label(e)).or_default();
        g.0 += e.blocks * 512;
        g.1 += if matches!(e.kind, 'f' | 'd' | 'l') { e.size } else { 0 };
        g.2 += 1;
    }
    let mut rows: Vec<(Vec<String>, (u64, u64, u64))> = groups.into_iter().collect();
    rows.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then_with(|| a.0.cmp(&b.0)));
    rows.iter()
        .map(|(l, (d, a, c))| format!("{d}\t{a}\t{c}\t{}\n", l.join("\t")))
        .collect()
}

/// How a case names an entry's group.
type Label = Box<dyn Fn(&Found) -> Vec<String>>;

#[test]
fn groups_add_up_as_find_lists_them() {
    let dir = fixture();
    let cwd = dir.path();
    let entries = find("t", cwd);
    let cases: Vec<(&str, Label)> = vec![
        ("user", Box::new(|e: &Found| vec![e.user.clone()])),
        ("group", Box::new(|e: &Found| vec![e.group.clone()])),
        ("ext", Box::new(|e: &Found| vec![ext(&e.name)])),
        ("type", Box::new(|e: &Found| vec![kind(e.kind).into()])),
        ("age", Box::new(|e: &Found| vec![age(e.mtime).into()])),
        ("user,ext", Box::new(|e: &Found| vec![e.user.clone(), ext(&e.name)])),
        (
            "age,type,group",
            Box::new(|e: &Found| vec![age(e.mtime).into(), kind(e.kind).into(), e.group.clone()]),
        ),
    ];
    for (keys, label) in cases {
        let ours = ok(&["--by", keys, "-b", "--top", "0", "t"], cwd);
        assert_eq!(ours, expected(&entries, label), "--by {keys}");
    }
    let ours = ok(&["--by", "user", "--numeric-ids", "-b", "--top", "0", "t"], cwd);
    assert_eq!(ours, expected(&entries, |e| vec![e.uid.clone()]), "--numeric-ids");
    if is_root() {
        assert!(ours.contains("\t1001\n") && ours.contains("\t65534\n"), "{ours}");
    }
}

#[test]
fn units_top_total_and_excludes() {
    let dir = fixture();
    let cwd = dir.path();
    let all = ok(&["--by", "ext", "-b", "--top", "0", "t"], cwd);
    let top = ok(&["--by", "ext", "-b", "--top", "2", "-c", "t"], cwd);
    let lines: Vec<&str> = top.lines().collect();
    assert_eq!(lines.len(), 4, "{top}");
    assert_eq!(lines[..2], all.lines().take(2).collect::<Vec<_>>()[..]);
    let others = all.lines().count() - 2;
    assert!(lines[2].ends_with(&format!("\t({others} more)")), "{top}");
    let sum = |col: usize, text: &str| -> u64 {
        text.lines()
            .map(|l| l.split('\t').nth(col).unwrap().parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(
        lines[3],
        format!("{}\t{}\t{}\ttotal", sum(0, &all), sum(1, &all), sum(2, &all))
    );
    // du's units: -k rounds each figure up to KiB.
    let k = ok(&["--by", "type", "-k", "--top", "0", "t"], cwd);
    let b = ok(&["--by", "type", "--top", "0", "--block-size=1", "t"], cwd);
    for (kl, bl) in k.lines().zip(b.lines()) {
        let (kf, bf): (Vec<&str>, Vec<&str>) = (kl.split('\t').collect(), bl.split('\t').collect());
        assert_eq!(
            kf[0].parse::<u64>().unwrap(),
            bf[0].parse::<u64>().unwrap().div_ceil(1024)
        );
        assert_eq!(kf[2..], bf[2..]);
    }
    // --exclude leaves out the entries and what is under them.
    let excluded = ok(&["--by", "ext", "-b", "--exclude", "old", "--top", "0", "t"], cwd);
    assert!(!excluded.contains("\tgz\n") && all.contains("\tgz\n"), "{excluded}");
    // An operand inside another is counted once.
    let twice = ok(&["--by", "type", "-b", "--top", "0", "t", "t/src"], cwd);
    assert_eq!(twice, ok(&["--by", "type", "-b", "--top", "0", "t"], cwd));
}

#[test]
fn age_follows_the_time_asked_for() {
    let dir = fixture();
    let cwd = dir.path();
    let entries = find("t", cwd);
    // Reading nothing keeps atimes; ctime is now for every entry.
    let ctime = ok(&["--by", "age", "--time=ctime", "-b", "t"], cwd);
    assert_eq!(ctime, expected(&entries, |_| vec!["< 1 day".into()]));
    let mtime = ok(&["--by", "age", "-b", "t"], cwd);
    assert_eq!(mtime.lines().count(), 6, "every bucket has an entry: {mtime}");
}

#[test]
fn bad_keys_get_one_line_and_status_1() {
    let dir = fixture();
    for keys in ["colour", "user,", "user,user", ""] {
        let out = fdu(&["--by", keys, "t"], dir.path());
        assert_eq!(out.status.code(), Some(1), "--by {keys:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--by"), "{err}");
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn exports_with_the_fields_give_the_live_answer() {
    let dir = fixture();
    let cwd = dir.path();
    let has_ncdu = Command::new("ncdu")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_ncdu {
        eprintln!("ncdu not found: exports with owners not checked");
        return;
    }
    let export = cwd.join("t.ncdu");
    let ok_export = Command::new("ncdu")
        .args(["-e", "-0", "-o"])
        .arg(&export)
        .arg(cwd.join("t"))
        .status()
        .unwrap();
    assert!(ok_export.success());
    let export_s = export.as_os_str().to_str().unwrap();
    for keys in ["user", "group,ext", "age", "type"] {
        let live = ok(&["--by", keys, "-b", "--top", "0", "t"], cwd);
        let read = ok(&["--by", keys, "-b", "--top", "0", "-f", export_s], cwd);
        assert_eq!(read, live, "--by {keys} -f");
    }
    // Without -e, ncdu writes no owners nor times: one line says what is missing.
    let plain = cwd.join("plain.ncdu");
    assert!(Command::new("ncdu")
        .args(["-0", "-o"])
        .arg(&plain)
        .arg(cwd.join("t"))
        .status()
        .unwrap()
        .success());
    let out = fdu(&["--by", "user", "-f", plain.to_str().unwrap()], cwd);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("uid"), "{err}");
    // A truncated export: one line too.
    let bytes = fs::read(&export).unwrap();
    let cut = cwd.join("cut.ncdu");
    fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let out = fdu(&["--by", "ext", "-f", cut.to_str().unwrap()], cwd);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8(out.stderr).unwrap().lines().count(), 1);
}

#[test]
fn fdus_own_extended_export_gives_the_live_answer() {
    let dir = fixture();
    let cwd = dir.path();
    let export = cwd.join("t.fdu");
    let export_s = export.to_str().unwrap();
    ok(&["-e", "-o", export_s, "t"], cwd);
    for keys in ["user", "group,ext", "age", "type"] {
        let live = ok(&["--by", keys, "-b", "--top", "0", "t"], cwd);
        let read = ok(&["--by", keys, "-b", "--top", "0", "-f", export_s], cwd);
        assert_eq!(read, live, "--by {keys} -f");
    }
    // What ncdu -e writes, as ncdu writes it.
    let text = String::from_utf8_lossy(&fs::read(&export).unwrap()).into_owned();
    assert!(text.contains("{\"name\":\"main.rs\",\"asize\":1200,"), "{text}");
    assert!(text.contains(",\"uid\":") && text.contains(",\"gid\":") && text.contains(",\"mode\":33188,"));
    // Without -e, no owners: one line says what is missing.
    ok(&["-o", export_s, "t"], cwd);
    let out = fdu(&["--by", "user", "-f", export_s], cwd);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("uid"), "{err}");
    // -e is about what -o writes.
    let out = fdu(&["-e", "t"], cwd);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-o"));
}
