//! `--sort` on every core against an independent sort of the same tree:
//! `--sort path` is `fnd -u | LC_ALL=C sort`, `--sort name|size|mtime` is
//! each directory's entries together, sorted, then each subdirectory's
//! subtree in name order; the same for any `-j`.

use std::fs;
use std::path::Path;
use std::process::Command;

const FND: &str = env!("CARGO_BIN_EXE_fnd");

fn fnd(args: &[&str], cwd: &Path) -> Vec<String> {
    let out = Command::new(FND).args(args).current_dir(cwd).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

/// Names that sort differently as names and as paths (`a` before `a.b`,
/// but `a/` after it), sizes and times out of name order.
fn build(root: &Path) {
    for (i, d) in ["a", "a/x", "a-b", "a0", "b.d", "b", "deep/er/est", "wide"]
        .iter()
        .enumerate()
    {
        fs::create_dir_all(root.join(d)).unwrap();
        fs::write(root.join(d).join("f"), vec![b'x'; 100 * (9 - i)]).unwrap();
    }
    for (i, f) in [
        "a.txt", "a/x/g", "a/y", "a-b/z", "a0/q", "b/c", "b.d/e", "b.e", "ab", "A",
    ]
    .iter()
    .enumerate()
    {
        fs::write(root.join(f), vec![b'y'; 37 * ((i * 7) % 10)]).unwrap();
    }
    for i in 0..300 {
        fs::write(root.join(format!("wide/n{}", (i * 7919) % 1000)), vec![b'z'; i]).unwrap();
    }
}

/// The one-thread definition: entries sorted by `key`, then subtrees by name.
fn expected(dir: &Path, rel: &str, key: &str, out: &mut Vec<String>) {
    let mut entries: Vec<(fs::Metadata, String)> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (e.metadata().unwrap(), e.file_name().into_string().unwrap())
        })
        .collect();
    entries.sort_by(|a, b| a.1.as_bytes().cmp(b.1.as_bytes()));
    let mut listed = entries.clone();
    match key {
        "size" => listed.sort_by_key(|(m, _)| m.len()),
        "mtime" => listed.sort_by_key(|(m, _)| m.modified().unwrap()),
        _ => {}
    }
    for (m, name) in &listed {
        out.push(format!("{rel}{name}{}", if m.is_dir() { "/" } else { "" }));
    }
    for (m, name) in entries.iter().filter(|(m, _)| m.is_dir()) {
        let _ = m;
        expected(&dir.join(name), &format!("{rel}{name}/"), key, out);
    }
}

#[test]
fn sorted_listings_match_an_independent_sort_on_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let mut unsorted = fnd(&["-u"], dir.path());
    unsorted.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    for j in ["-j1", "-j2", "-j8"] {
        assert_eq!(
            fnd(&["-u", "--sort", "path", j], dir.path()),
            unsorted,
            "--sort path {j}"
        );
        for key in ["name", "size", "mtime"] {
            let mut want = Vec::new();
            expected(dir.path(), "", key, &mut want);
            assert_eq!(fnd(&["-u", "--sort", key, j], dir.path()), want, "--sort {key} {j}");
        }
    }
    // A pattern that leaves directories out still walks them in path order.
    let files: Vec<String> = unsorted.iter().filter(|p| !p.ends_with('/')).cloned().collect();
    assert_eq!(fnd(&["-u", "-t", "f", "--sort", "path"], dir.path()), files);
}
