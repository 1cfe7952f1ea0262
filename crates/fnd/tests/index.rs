//! `--indexed` answers as the walk does: the same results for the same
//! options, after the tree changed (checked mode), while another process
//! rebuilds the index, and with a damaged index (a note, then the walk).

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Tree {
    dir: tempfile::TempDir,
    cache: tempfile::TempDir,
}

impl Tree {
    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn fnd(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_fnd"))
            .args(args)
            .current_dir(self.root())
            .env("XDG_CACHE_HOME", self.cache.path())
            .env("HOME", self.cache.path())
            .env_remove("LS_COLORS")
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    }

    fn build(&self) {
        let out = self.fnd(&["--build-index"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

/// A tree with hidden and ignored entries, links, sizes and depths.
fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let r = dir.path();
    fs::create_dir(r.join(".git")).unwrap();
    write(r, ".gitignore", "target/\n*.log\n");
    write(r, "src/.ignore", "gen*\n");
    for (i, name) in [
        "main.rs",
        "lib.rs",
        "lexer71.java",
        "query.c",
        "main_types.h",
        "README.md",
    ]
    .iter()
    .enumerate()
    {
        write(r, name, &"x".repeat(i * 700));
        write(r, &format!("src/{name}"), "");
        write(r, &format!("src/deep/er/{i}{name}"), &"y".repeat(i * 3000));
        write(r, &format!("docs/a{i}/{name}"), "");
    }
    write(r, "src/generated.rs", "");
    write(r, "target/debug/out.rs", "");
    write(r, "build.log", "log");
    write(r, ".hidden/secret.rs", "");
    write(r, ".env", "");
    write(r, "src/deep/.config.toml", "");
    fs::create_dir_all(r.join("empty/dir")).unwrap();
    write(r, "bin/run.sh", "#!/bin/sh\n");
    fs::set_permissions(r.join("bin/run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    symlink("src", r.join("src-link")).unwrap();
    symlink("main.rs", r.join("main-link.rs")).unwrap();
    symlink("nowhere", r.join("dangling")).unwrap();
    Tree { dir, cache }
}

/// Lines sorted: the walk's order between directories is not defined.
fn sorted(bytes: &[u8]) -> Vec<Vec<u8>> {
    let sep = if bytes.contains(&0) { 0 } else { b'\n' };
    let mut lines: Vec<Vec<u8>> = bytes.split(|&b| b == sep).map(<[u8]>::to_vec).collect();
    lines.sort();
    lines
}

/// With -X, the words of the one command line, sorted.
fn words(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut words: Vec<Vec<u8>> = bytes.split(u8::is_ascii_whitespace).map(<[u8]>::to_vec).collect();
    words.sort();
    words
}

fn same(t: &Tree, mode: &str, args: &[&str]) {
    let live = t.fnd(args);
    let mut indexed_args = vec![mode];
    indexed_args.extend_from_slice(args);
    let indexed = t.fnd(&indexed_args);
    let order = if args.contains(&"-X") { words } else { sorted };
    assert_eq!(
        order(&indexed.stdout),
        order(&live.stdout),
        "{mode} {args:?}:\nindexed:\n{}\nlive:\n{}",
        String::from_utf8_lossy(&indexed.stdout),
        String::from_utf8_lossy(&live.stdout)
    );
    assert_eq!(indexed.status.code(), live.status.code(), "{args:?}");
    assert!(
        indexed.stderr.is_empty() || !live.stderr.is_empty(),
        "{args:?}: {}",
        String::from_utf8_lossy(&indexed.stderr)
    );
}

const QUERIES: &[&[&str]] = &[
    &[],
    &["rs"],
    &["main"],
    &["^main"],
    &[r"\.rs$"],
    &["(?i)readme"],
    &["lexer71.java"],
    &["main_types"],
    &["query"],
    &["nomatch-anywhere"],
    &["-g", "*.rs"],
    &["-g", "**/deep/**"],
    &["--glob", "main*"],
    &["-F", "."],
    &["-F", "main_types.h"],
    &["-e", "rs"],
    &["-e", "rs", "-e", "java"],
    &["-e", "md", "docs"],
    &["-t", "f"],
    &["-t", "d"],
    &["-t", "l"],
    &["-t", "x"],
    &["-t", "e"],
    &["-t", "f", "-e", "h"],
    &["-p", "src/.*rs"],
    &["-p", "deep"],
    &["-d", "1"],
    &["-d", "2", "rs"],
    &["--min-depth", "2"],
    &["--min-depth", "3", "-t", "f"],
    &["--exact-depth", "2"],
    &["-E", "src"],
    &["-E", "*.rs"],
    &["-E", "docs", "-E", "deep", "main"],
    &["-H"],
    &["-H", "rs"],
    &["-I"],
    &["-I", "log"],
    &["-u"],
    &["-u", "secret"],
    &["-HI", "-t", "d"],
    &["-S", "+1k"],
    &["-S", "-2k", "-t", "f"],
    &["-S", "+5k", "-u"],
    &["--changed-within", "1h"],
    &["--changed-before", "1h"],
    &["-x", "echo", "{}"],
    &["-x", "echo", "{/}", "{//}", "{.}", "{/.}", "rs"],
    &["main", "-X", "echo"],
    &["--format", "{}:{/}:{//}:{.}", "rs"],
    &["-l", "-e", "c"],
    &["-0", "rs"],
    &["-a", "main"],
    &["--prune", "src"],
    &["-q", "main"],
    &["-q", "nomatch-anywhere"],
    &["--max-results", "3", "nomatch-anywhere"],
    &["main", "src"],
    &["rs", "src/deep"],
    &["rs", "docs", "src"],
    &["-t", "f", ".", "./docs/"],
    &["--ignore-contain", "lib.rs", "rs"],
    // Judged by name and type alone: found from the matching names.
    &["-u", "main"],
    &["-u", "-d", "2", "rs"],
    &["-u", "--min-depth", "3", "rs"],
    &["-u", "--exact-depth", "1", "main"],
    &["-u", "-t", "f", "-e", "rs"],
    &["-u", "(?i)READ", "src", "."],
    &["-u", "readme"],
    &["-u", "README"],
    &["-u", "-F", "eXer7"],
    &["-u", "er/"],
    &["-I", "main"],
    &["-I", "-g", "*.rs", "docs", "src/deep"],
    &["-I", "-F", "t", "./src/"],
];

#[test]
fn indexed_queries_equal_live() {
    let t = tree();
    t.build();
    assert!(QUERIES.len() >= 50);
    for q in QUERIES {
        same(&t, "--indexed", q);
        same(&t, "--indexed=stale-ok", q);
    }
}

/// A small deterministic generator (the tests need no seed from outside).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

fn dirs_of(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if let Ok(rd) = fs::read_dir(&out[i]) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) && e.file_name() != ".git" {
                    out.push(e.path());
                }
            }
        }
        i += 1;
    }
    out
}

fn files_of(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// One random change somewhere in the tree.
fn change(root: &Path, rng: &mut Lcg, n: usize) {
    let dirs = dirs_of(root);
    let dir = dirs[rng.below(dirs.len())].clone();
    match rng.below(8) {
        0 => fs::write(dir.join(format!("new{n}.rs")), "").unwrap(),
        1 => {
            if let Some(f) = files_of(&dir).first() {
                fs::remove_file(f).unwrap();
            }
        }
        2 => {
            if let Some(f) = files_of(&dir).first() {
                fs::rename(f, dir.join(format!("renamed{n}.java"))).unwrap();
            }
        }
        3 => {
            fs::create_dir_all(dir.join(format!("made{n}/inner"))).unwrap();
            fs::write(dir.join(format!("made{n}/inner/file{n}.rs")), "").unwrap();
        }
        4 if dir != root => fs::remove_dir_all(&dir).unwrap(),
        5 if dir != root => {
            let to = dir.parent().unwrap().join(format!("moved{n}"));
            fs::rename(&dir, to).unwrap();
        }
        6 => {
            let ignores = ["*.java\n", "deep/\n", "made*\n!made1\n", ""];
            fs::write(root.join(".gitignore"), ignores[rng.below(ignores.len())]).unwrap();
        }
        7 if dir != root => {
            fs::remove_dir_all(&dir).unwrap();
            symlink("/", &dir).unwrap();
        }
        _ => fs::write(dir.join(format!("other{n}.txt")), "").unwrap(),
    }
}

#[test]
fn checked_mode_follows_changes() {
    let t = tree();
    t.build();
    let mut rng = Lcg(15);
    let queries: &[&[&str]] = &[
        &[],
        &["-u"],
        &["rs"],
        &["-t", "d", "-H"],
        &["-e", "java"],
        &["-S", "-1k", "-t", "f"],
        &["rs", "src"],
    ];
    for round in 0..12 {
        for n in 0..1 + rng.below(4) {
            change(t.root(), &mut rng, round * 10 + n);
        }
        for q in queries {
            if q.last() == Some(&"src") && !t.root().join("src").is_dir() {
                continue;
            }
            same(&t, "--indexed", q);
        }
        // The checked query saved what it found: stale-ok agrees now.
        same(&t, "--indexed=stale-ok", &["-u"]);
    }
}

#[test]
fn queries_while_the_index_is_rebuilt_are_complete() {
    let t = tree();
    t.build();
    let live = sorted(&t.fnd(&["-u"]).stdout);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let rebuilding = s.spawn(|| {
            let mut builds = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                t.build();
                builds += 1;
            }
            builds
        });
        for _ in 0..30 {
            let out = t.fnd(&["--indexed=stale-ok", "-u"]);
            assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(sorted(&out.stdout), live);
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(rebuilding.join().unwrap() > 0);
    });
}

#[test]
fn a_damaged_index_falls_back_with_a_note() {
    let t = tree();
    let file = t.cache.path().join("my.idx");
    let file_arg = file.to_str().unwrap();
    assert!(t.fnd(&["--build-index", "--index-file", file_arg]).status.success());
    let live = t.fnd(&["rs"]);
    let good = t.fnd(&["--indexed=stale-ok", "--index-file", file_arg, "rs"]);
    assert_eq!(sorted(&good.stdout), sorted(&live.stdout));
    assert!(good.stderr.is_empty());
    let bytes = fs::read(&file).unwrap();
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", bytes[..bytes.len() / 2].to_vec()),
        ("flipped", {
            let mut b = bytes.clone();
            let at = b.len() - 3;
            b[at] ^= 1;
            b
        }),
        ("other version", {
            let mut b = bytes.clone();
            b[8] = 99;
            b
        }),
        ("not an index", b"hello".to_vec()),
        ("empty", Vec::new()),
    ];
    for (what, bytes) in damaged {
        fs::write(&file, bytes).unwrap();
        for mode in ["--indexed", "--indexed=stale-ok"] {
            let out = t.fnd(&[mode, "--index-file", file_arg, "rs"]);
            assert_eq!(sorted(&out.stdout), sorted(&live.stdout), "{what}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(err.lines().count(), 1, "{what}: {err}");
            assert!(err.contains("searching the tree"), "{what}: {err}");
            assert_eq!(out.status.code(), live.status.code());
        }
    }
}

#[test]
fn no_index_is_a_note_and_a_walk() {
    let t = tree();
    let out = t.fnd(&["--indexed", "main"]);
    assert_eq!(sorted(&out.stdout), sorted(&t.fnd(&["main"]).stdout));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no index"));
}

#[test]
fn the_index_is_private() {
    use std::os::unix::fs::MetadataExt;
    let t = tree();
    t.build();
    let dir = t.cache.path().join("fnd");
    assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
    for e in fs::read_dir(&dir).unwrap() {
        assert_eq!(e.unwrap().metadata().unwrap().mode() & 0o777, 0o600);
    }
}

#[test]
fn stale_ok_says_how_old_an_old_index_is() {
    let t = tree();
    let file = t.cache.path().join("old.idx");
    let file_arg = file.to_str().unwrap();
    assert!(t.fnd(&["--build-index", "--index-file", file_arg]).status.success());
    let fresh = t.fnd(&["--indexed=stale-ok", "--index-file", file_arg, "main"]);
    assert!(fresh.stderr.is_empty());
    // Built three hours ago, as far as the header says.
    let mut bytes = fs::read(&file).unwrap();
    let built = i64::from_le_bytes(bytes[16..24].try_into().unwrap());
    bytes[16..24].copy_from_slice(&(built - 3 * 3600 - 120).to_le_bytes());
    fnd_index::format::seal(&mut bytes);
    fs::write(&file, bytes).unwrap();
    let old = t.fnd(&["--indexed=stale-ok", "--index-file", file_arg, "main"]);
    assert_eq!(sorted(&old.stdout), sorted(&fresh.stdout));
    let err = String::from_utf8_lossy(&old.stderr);
    assert!(err.contains("is 3 h 2 min old"), "{err}");
    assert_eq!(err.lines().count(), 1);
}

/// Issue 31's attack: an index another user wrote (built by `nobody` in
/// a folder anyone may write, one name made `d/../../victim/secret`, its
/// checksum made right) fed to root's `-x rm`. The file is refused for
/// who could write it (one line naming the fix) and, trusted, for the
/// name; either way the tree is searched instead and nothing outside it
/// is touched.
#[test]
fn a_forged_index_reaches_nothing_outside_the_root() {
    use std::os::unix::fs::chown;
    if !fnd_test_support::hostile::nobody_available() {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    let b = base.path();
    fs::set_permissions(b, fs::Permissions::from_mode(0o755)).unwrap();
    let tree = b.join("tree");
    // The forged name takes the place of a name of its length.
    let forged = b"d/../../victim/secret";
    let decoy = "x".repeat(forged.len());
    write(&tree, &format!("d/{decoy}"), "");
    write(&tree, "d/kept", "");
    write(b, "victim/secret", "root's");
    let shared = b.join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
    let file = shared.join("idx");
    let file_arg = file.to_str().unwrap();
    let Some(built) = fnd_test_support::hostile::as_nobody(
        env!("CARGO_BIN_EXE_fnd"),
        &["--build-index", "--index-file", file_arg],
        &tree,
    ) else {
        return;
    };
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let mut bytes = fs::read(&file).unwrap();
    let at = bytes.windows(decoy.len()).position(|w| w == decoy.as_bytes()).unwrap();
    bytes[at..at + forged.len()].copy_from_slice(forged);
    fnd_index::format::seal(&mut bytes);
    fs::write(&file, &bytes).unwrap();
    let attack = |index: &Path| {
        Command::new(env!("CARGO_BIN_EXE_fnd"))
            .args(["--indexed", "--index-file", index.to_str().unwrap(), "-t", "f", "."])
            .arg(&tree)
            .args(["-x", "rm", "-v"])
            .output()
            .unwrap()
    };
    let refused = |out: &Output, why: &str| {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(b.join("victim/secret").exists(), "the victim was removed: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(why) && err.contains("searching the tree"), "{err}");
        // The walk of the tree: what is in it, and nothing else.
        let removed = String::from_utf8_lossy(&out.stdout);
        assert!(removed.lines().all(|l| l.contains("/tree/d/")), "{removed}");
    };
    let out = attack(&file);
    refused(&out, "writable by other users, not trusted: chmod go-w");
    // The folder safe, the file still another user's.
    let private = b.join("private");
    fs::create_dir(&private).unwrap();
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).unwrap();
    let moved = private.join("idx");
    fs::rename(&file, &moved).unwrap();
    write(&tree, &format!("d/{decoy}"), "");
    write(&tree, "d/kept", "");
    refused(&attack(&moved), "belongs to another user (uid 65534), not trusted");
    // Its own user's, and writable by others.
    chown(&moved, Some(0), Some(0)).unwrap();
    fs::set_permissions(&moved, fs::Permissions::from_mode(0o666)).unwrap();
    write(&tree, &format!("d/{decoy}"), "");
    refused(&attack(&moved), "writable by other users");
    // Trusted, and still refused for its name.
    fs::set_permissions(&moved, fs::Permissions::from_mode(0o600)).unwrap();
    write(&tree, &format!("d/{decoy}"), "");
    refused(&attack(&moved), "a name that is not a file name");
}

/// An index rewritten in place while queries read it (cut short, its
/// names overwritten, written back): each query answers from the bytes
/// it checked, or says the index is damaged and walks the tree; never a
/// signal, a panic or a path the tree does not hold. (Mapped, such a file
/// gave SIGBUS, a panic, or made-up paths with exit 0.)
#[test]
fn an_index_rewritten_under_a_query_gives_the_tree_or_a_note() {
    use std::os::unix::fs::FileExt;
    let t = tree();
    for d in 0..20 {
        for f in 0..150 {
            write(t.root(), &format!("many/d{d}/file{f}.txt"), "");
        }
    }
    let file = t.cache.path().join("rewritten.idx");
    let file_arg = file.to_str().unwrap();
    assert!(t.fnd(&["--build-index", "--index-file", file_arg]).status.success());
    let good = fs::read(&file).unwrap();
    let live = sorted(&t.fnd(&["-u"]).stdout);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let rewriting = s.spawn(|| {
            let mut rounds = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // The file as it is now (a checked query may have saved
                // another in its place), opened for writing in place.
                let Ok(f) = fs::OpenOptions::new().write(true).open(&file) else {
                    continue;
                };
                match rounds % 3 {
                    0 => f.set_len(good.len() as u64 / 2).unwrap(),
                    1 => f
                        .write_all_at(&vec![b'z'; good.len() / 2], (good.len() / 2) as u64)
                        .unwrap(),
                    _ => {}
                }
                std::thread::sleep(std::time::Duration::from_micros(300));
                f.write_all_at(&good, 0).unwrap();
                f.set_len(good.len() as u64).unwrap();
                rounds += 1;
            }
            rounds
        });
        for k in 0..40 {
            let mode = if k % 2 == 0 { "--indexed=stale-ok" } else { "--indexed" };
            let out = t.fnd(&[mode, "--index-file", file_arg, "-u"]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(0), "{mode}: {:?} {err}", out.status);
            assert!(!err.contains("panicked"), "{mode}: {err}");
            assert!(err.lines().count() <= 1, "{mode}: {err}");
            assert_eq!(sorted(&out.stdout), live, "{mode}: {err}");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(rewriting.join().unwrap() > 0);
    });
}

/// A checked query where no thread can start (`ulimit -u` reached: run as
/// `nobody`, as root is not held to it) checks the index on the calling
/// thread and answers whole.
#[test]
fn a_checked_query_with_no_thread_to_spare_answers_whole() {
    use std::os::unix::fs::chown;
    if !fnd_test_support::hostile::nobody_available() {
        return;
    }
    let base = tempfile::tempdir().unwrap();
    fs::set_permissions(base.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let tree = base.path().join("tree");
    for d in 0..40 {
        write(&tree, &format!("d{d}/sub/f{d}"), "");
    }
    // Past the margin within which a directory's stamp is not trusted:
    // the check then reads nothing again (which needs the walk's threads).
    std::thread::sleep(std::time::Duration::from_millis(60));
    let folder = base.path().join("index");
    fs::create_dir(&folder).unwrap();
    chown(&folder, Some(65534), Some(65534)).unwrap();
    let file = folder.join("idx");
    let file_arg = file.to_str().unwrap();
    let fnd = env!("CARGO_BIN_EXE_fnd");
    let Some(built) = fnd_test_support::hostile::as_nobody(fnd, &["--build-index", "--index-file", file_arg], &tree)
    else {
        return;
    };
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let live = sorted(&Command::new(fnd).args(["-u", "."]).arg(&tree).output().unwrap().stdout);
    // One task for the user: every thread the query asks for is refused.
    let Some(out) = fnd_test_support::hostile::as_nobody(
        "prlimit",
        &["--nproc=1", fnd, "--indexed", "--index-file", file_arg, "-u", "."],
        &tree,
    ) else {
        return;
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
    assert_eq!(sorted(&out.stdout), live);
}

/// A build that cannot read a directory for a reason that may pass (here
/// descriptors: `ulimit -n 5` on a chain deeper than `PATH_MAX`) says so
/// in one line and fails, and a checked query of the index it wrote reads
/// that directory again and answers whole. A build that exits 0 wrote
/// the whole tree.
#[test]
fn a_build_short_of_descriptors_says_what_the_index_lacks() {
    use fnd_test_support::hostile::{make_chain, remove_chain};
    let base = tempfile::tempdir().unwrap();
    let tree = base.path().join("tree");
    fs::create_dir(&tree).unwrap();
    make_chain(&tree, 600);
    let file = base.path().join("idx");
    let fnd = env!("CARGO_BIN_EXE_fnd");
    let Ok(built) = Command::new("prlimit")
        .arg("--nofile=5")
        .args([fnd, "--build-index", "--index-file"])
        .args([&file, &tree])
        .output()
    else {
        remove_chain(&tree);
        return;
    };
    let err = String::from_utf8_lossy(&built.stderr);
    assert!(!err.contains("panicked"), "{err}");
    let live = sorted(
        &Command::new(fnd)
            .args(["-u", "-t", "f", "."])
            .arg(&tree)
            .output()
            .unwrap()
            .stdout,
    );
    assert!(live.len() >= 600);
    let query = |freshness: &str| {
        let out = Command::new(fnd)
            .arg(format!("--indexed={freshness}"))
            .arg("--index-file")
            .arg(&file)
            .args(["-u", "-t", "f", "."])
            .arg(&tree)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        sorted(&out.stdout)
    };
    if built.status.success() {
        assert_eq!(query("stale-ok"), live, "exit 0, the index is whole");
    } else {
        assert_eq!(built.status.code(), Some(1), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("lacks what") && err.contains("open files"), "{err}");
    }
    assert_eq!(query("checked"), live);
    remove_chain(&tree);
}
