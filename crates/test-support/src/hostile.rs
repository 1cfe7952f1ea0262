//! Builders for hostile trees, shared by the engine's tests and the tools'
//! tests: names that break naive tools, chains far past `PATH_MAX`, huge
//! directories, hostile ignore files, trees that change while they are
//! walked, and runs as another user.
//!
//! Everything is built with `*at` calls relative to an open directory, so
//! path length never matters.

use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{self, AtFlags, Mode, OFlags, RenameFlags, CWD};
use rustix::io::Errno;

/// Name of every directory of a chain (10 bytes: a chain 2,000 deep has
/// paths of 22,000 bytes, five times PATH_MAX).
pub const CHAIN_NAME: &str = "dddddddddd";

/// Names that break naive tools: line breaks, tabs, terminal escapes,
/// option look-alikes, glob and regex metacharacters, invalid UTF-8, a
/// C1 control (CSI) and the longest name a file system takes.
pub fn hostile_names() -> Vec<Vec<u8>> {
    let mut names: Vec<Vec<u8>> = [
        &b"new\nline"[..],
        b"\nleading-newline",
        b"trailing-newline\n",
        b"tab\there",
        b"cr\rreturn",
        b"esc\x1b[31mred\x1b[0m",
        b"title\x1b]0;pwned\x07",
        b"bell\x07",
        b"del\x7f",
        b"c1-csi\xc2\x9b31m",
        b"-rf",
        b"--help",
        b"-",
        b"*",
        b"?",
        b"[a-z]",
        b"{a,b}",
        b"a.*b",
        b"(unclosed",
        b"back\\slash",
        b"$(touch pwned)",
        b"`touch pwned`",
        b"semi;colon",
        b"quote'single",
        b"quote\"double",
        b" leading space",
        b"trailing space ",
        b"bad\xffutf8",
        b"\xc3\x28",
        b"\xed\xa0\x80surrogate",
        b"caf\xc3\xa9",
        b"%s%n%x",
        b"{}",
        b"{.}{..}",
    ]
    .iter()
    .map(|n| n.to_vec())
    .collect();
    names.push(vec![b'L'; 255]);
    names
}

/// A scratch directory on a memory file system when there is one: creating
/// inodes on a busy ext4 costs about a millisecond each, which turns a
/// 2,000-deep chain or a 200,000-entry directory into minutes.
pub fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::Builder::new().prefix("fnd-test").tempdir_in(shm) {
            return dir;
        }
    }
    tempfile::tempdir().expect("temporary directory")
}

/// True when `scratch_dir` is on tmpfs, where big trees are cheap to build.
pub fn scratch_is_memory(dir: &Path) -> bool {
    rustix::fs::statfs(dir)
        .map(|s| s.f_type == 0x0102_1994)
        .unwrap_or(false)
}

pub fn open_dir(dir: impl AsFd, name: impl rustix::path::Arg) -> rustix::io::Result<OwnedFd> {
    fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

pub fn open_root(path: &Path) -> OwnedFd {
    fs::openat(
        CWD,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .expect("open test root")
}

pub fn touch_at(dir: impl AsFd, name: &[u8]) {
    fs::openat(
        dir,
        OsStr::from_bytes(name),
        OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .unwrap_or_else(|e| panic!("create {:?}: {e}", OsStr::from_bytes(name)));
}

pub fn mkdir_at(dir: impl AsFd, name: &[u8]) {
    fs::mkdirat(dir, OsStr::from_bytes(name), Mode::from_raw_mode(0o755))
        .unwrap_or_else(|e| panic!("mkdir {:?}: {e}", OsStr::from_bytes(name)));
}

/// A chain `depth` directories deep under `root`, each holding a file `f`:
/// `2 * depth` entries, the deepest at depth `depth + 1`.
pub fn make_chain(root: &Path, depth: usize) {
    let mut cur = open_root(root);
    for _ in 0..depth {
        mkdir_at(&cur, CHAIN_NAME.as_bytes());
        let next = open_dir(&cur, CHAIN_NAME).expect("open chain link");
        touch_at(&next, b"f");
        cur = next;
    }
}

/// Check one path found under a chain root: every component is a chain
/// directory but the last, which may be `f`. Returns (depth, is_file).
pub fn chain_entry(root: &[u8], path: &[u8]) -> (usize, bool) {
    let rel = path
        .strip_prefix(root)
        .unwrap_or_else(|| panic!("path outside the root: {}", path.len()));
    let rel = rel.strip_prefix(b"/").unwrap_or(rel);
    let parts: Vec<&[u8]> = rel.split(|&b| b == b'/').collect();
    let (last, dirs) = parts.split_last().expect("non-empty path");
    assert!(
        dirs.iter().all(|p| *p == CHAIN_NAME.as_bytes()),
        "unexpected component in a chain path"
    );
    let is_file = *last == b"f";
    assert!(
        is_file || *last == CHAIN_NAME.as_bytes(),
        "unexpected name {:?}",
        OsStr::from_bytes(last)
    );
    (parts.len(), is_file)
}

/// [`chain_entry`] for many paths, fast: a full check of each 22 KB path
/// costs seconds in a debug build, so the length pins most paths down and
/// every 500th level is checked in full. Returns the (depth, is_file) sorted.
pub fn chain_seen<'a>(root: &[u8], paths: impl Iterator<Item = &'a [u8]>) -> Vec<(usize, bool)> {
    let mut seen: Vec<(usize, bool)> = paths
        .map(|p| {
            let is_file = p.ends_with(b"/f");
            let file_part = if is_file { 2 } else { 0 };
            let links = (p.len() - root.len() - file_part) / (CHAIN_NAME.len() + 1);
            let depth = links + usize::from(is_file);
            assert_eq!(
                p.len(),
                root.len() + links * (CHAIN_NAME.len() + 1) + file_part,
                "length of a chain path"
            );
            if depth.is_multiple_of(500) {
                assert_eq!(chain_entry(root, p), (depth, is_file));
            }
            (depth, is_file)
        })
        .collect();
    seen.sort();
    seen
}

/// Every (depth, is_file) a chain `depth` deep must yield, sorted.
pub fn chain_expected(depth: usize) -> Vec<(usize, bool)> {
    let mut v: Vec<(usize, bool)> = (1..=depth).flat_map(|d| [(d, false), (d + 1, true)]).collect();
    v.sort();
    v
}

/// Remove a chain with a handful of descriptors: `remove_dir_all` keeps one
/// open per level and fails under a low descriptor limit. Each step lifts the
/// second link up to `root` and removes the (then shallow) first one.
pub fn remove_chain(root: &Path) {
    let rootfd = open_root(root);
    let mut top = CHAIN_NAME.to_string();
    for n in 0.. {
        let dir = match open_dir(&rootfd, top.as_str()) {
            Ok(d) => d,
            Err(Errno::NOENT) => return,
            Err(e) => panic!("open {top}: {e}"),
        };
        let lifted = format!("lifted{n}");
        let more = match fs::renameat(&dir, CHAIN_NAME, &rootfd, lifted.as_str()) {
            Ok(()) => true,
            Err(Errno::NOENT) => false,
            Err(e) => panic!("lift: {e}"),
        };
        let _ = fs::unlinkat(&dir, "f", AtFlags::empty());
        drop(dir);
        fs::unlinkat(&rootfd, top.as_str(), AtFlags::REMOVEDIR).expect("remove chain link");
        if !more {
            return;
        }
        top = lifted;
    }
}

/// Atomically swap two names of one directory (`renameat2(RENAME_EXCHANGE)`).
pub fn exchange(dir: impl AsFd, a: &str, b: &str) -> rustix::io::Result<()> {
    fs::renameat_with(&dir, a, &dir, b, RenameFlags::EXCHANGE)
}

/// Whether the file system under `base` can swap names atomically; the swap
/// tests skip, saying so, where it cannot (some overlay file systems).
pub fn can_exchange(base: &Path) -> bool {
    let probe = tempfile::tempdir_in(base).expect("probe directory");
    let dir = open_root(probe.path());
    touch_at(&dir, b"x");
    mkdir_at(&dir, b"y");
    match exchange(&dir, "x", "y") {
        Ok(()) => true,
        Err(e) => {
            crate::references::skip(&format!("renameat2(RENAME_EXCHANGE) is not supported here ({e})"));
            false
        }
    }
}

/// A directory outside every walked tree with a file whose name the output
/// must never contain, also under `sub` (a path the tree mirrors).
pub const MARKER: &str = "MARKER-outside-the-tree";

pub fn make_outside(base: &Path, sub: &[&str]) -> std::path::PathBuf {
    let outside = base.join("outside");
    let mut p = outside.clone();
    std::fs::create_dir_all(&p).unwrap();
    std::fs::write(p.join(MARKER), b"secret").unwrap();
    for s in sub {
        p = p.join(s);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join(MARKER), b"secret").unwrap();
    }
    outside
}

/// Directories whose `.ignore` is hostile, beside one with a real one.
pub const HOSTILE_IGNORE_DIRS: [&str; 5] = ["fifo", "zero", "dir", "sparse", "plain"];

/// Under `root`, each of [`HOSTILE_IGNORE_DIRS`] holds `kept` and `x.log`
/// and a `.ignore` that is a FIFO (blocks whoever opens it for reading), a
/// link to /dev/zero (never ends), a directory, a sparse terabyte (reads as
/// zeros), or, in `plain`, a real file ignoring `*.log`.
pub fn hostile_ignore_tree(root: &Path) {
    for d in HOSTILE_IGNORE_DIRS {
        std::fs::create_dir(root.join(d)).unwrap();
        std::fs::write(root.join(d).join("kept"), b"").unwrap();
        std::fs::write(root.join(d).join("x.log"), b"").unwrap();
    }
    fs::mknodat(
        CWD,
        root.join("fifo/.ignore"),
        fs::FileType::Fifo,
        Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join("zero/.ignore")).unwrap();
    std::fs::create_dir(root.join("dir/.ignore")).unwrap();
    std::fs::File::create(root.join("sparse/.ignore"))
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    std::fs::write(root.join("plain/.ignore"), b"*.log\n").unwrap();
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// `count` empty files with `name_len`-byte names. With 100 bytes, a listing
/// held in memory instead of streamed takes 20 MB and more for 200,000.
pub fn many_files(root: &Path, count: usize, name_len: usize) {
    let dir = open_root(root);
    for i in 0..count {
        touch_at(&dir, format!("{i:0>name_len$}").as_bytes());
    }
}

/// `dirs` directories of `files` empty files each under `root`; returns
/// the entries made.
pub fn wide_tree(root: &Path, dirs: usize, files: usize) -> usize {
    for d in 0..dirs {
        let dir = root.join(format!("d{d}"));
        std::fs::create_dir(&dir).unwrap();
        many_files(&dir, files, 12);
    }
    dirs * (files + 1)
}

/// Address spaces (`ulimit -v`, bytes) a test binary of this build runs
/// in, from where it could fail for want of its own mappings (a debug
/// build maps some 20 MiB, a release build 8) up to where jemalloc's
/// arenas and every worker's 2 MiB stack used to run a walk out of memory
/// (`fnd -u -j16` on 60,000 entries, release, at 24–48 MiB).
pub fn small_address_spaces() -> [u64; 3] {
    let base: u64 = if cfg!(debug_assertions) { 36 } else { 24 };
    [base << 20, (base + 8) << 20, (base + 24) << 20]
}

/// The standard output of `cmd` run held to each of
/// [`small_address_spaces`] in turn, each run checked to have succeeded
/// (`what` names it in a failure).
pub fn stdout_in_small_address_spaces(cmd: &mut Command, what: &str) -> Vec<Vec<u8>> {
    small_address_spaces()
        .into_iter()
        .map(|bytes| {
            crate::process::limit_address_space(cmd, bytes);
            let out = cmd.output().expect("the command starts");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success(),
                "{what} in {} MiB: {:?} {err}",
                bytes >> 20,
                out.status
            );
            out.stdout
        })
        .collect()
}

/// A directory of 200,000 files with 100-byte names where inodes are cheap
/// (tmpfs), 20,000 elsewhere (a busy disk makes 200,000 take minutes).
/// Returns it with the count.
pub fn huge_directory() -> (tempfile::TempDir, usize) {
    let tmp = scratch_dir();
    let count = if scratch_is_memory(tmp.path()) { 200_000 } else { 20_000 };
    if count < 200_000 {
        eprintln!("note: no memory file system for scratch trees; using {count} entries");
    }
    many_files(tmp.path(), count, 100);
    (tmp, count)
}

/// A tree only root may read all of, for runs as `nobody`: `locked/` (mode
/// 000, holding `deeper/`), `open/x`, and `secret` (mode 000). None, saying
/// so, when not root.
pub fn permission_tree() -> Option<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    if !rustix::process::geteuid().is_root() {
        crate::references::skip("needs root to switch to another user");
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path();
    let mode = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    mode(r, 0o755);
    std::fs::create_dir_all(r.join("locked/deeper")).unwrap();
    std::fs::create_dir_all(r.join("open")).unwrap();
    std::fs::write(r.join("open/x"), b"").unwrap();
    std::fs::write(r.join("secret"), b"").unwrap();
    mode(&r.join("locked"), 0o000);
    mode(&r.join("secret"), 0o000);
    Some(tmp)
}

/// Whether a test can run a program as `nobody` through setpriv, so that
/// permissions apply: as root (which reads every directory), with setpriv
/// installed. Says why not when it cannot.
pub fn nobody_available() -> bool {
    if !rustix::process::geteuid().is_root() {
        crate::references::skip("needs root, to run as nobody (root reads every directory)");
        return false;
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        crate::references::skip("setpriv (util-linux) is not installed");
        return false;
    }
    true
}

/// Run `program args… root` as `nobody`, so that permissions apply (root
/// reads everything). None, saying so, when setpriv cannot.
pub fn as_nobody(program: &str, args: &[&str], root: &Path) -> Option<std::process::Output> {
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", program])
        .args(args)
        .arg(root)
        .env("NO_COLOR", "1")
        .output();
    match out {
        Ok(out) if !String::from_utf8_lossy(&out.stderr).contains("setpriv:") => Some(out),
        Ok(out) => {
            crate::references::skip(&format!(
                "setpriv could not run {program} as nobody: {}",
                String::from_utf8_lossy(&out.stderr).trim_end()
            ));
            None
        }
        Err(e) => {
            crate::references::skip(&format!(
                "setpriv is not available ({e}); permissions cannot be tested as root"
            ));
            None
        }
    }
}

/// Spawn, read all of stdout (counting NULs), and return the count with
/// the child's peak RSS in KiB.
///
/// The peak is the kernel's high-water mark (`VmHWM`), sampled at every read
/// while the child is blocked on the pipe: `getrusage(RUSAGE_CHILDREN)` and
/// `wait4` report `ru_maxrss` including the memory of the test process the
/// child was spawned from (the kernel counts the pre-exec image), which is
/// tens of MiB here.
pub fn count_and_peak_rss(cmd: &mut Command) -> (usize, u64, std::process::ExitStatus) {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("spawn");
    let status_path = format!("/proc/{}/status", child.id());
    let hwm = || -> Option<u64> {
        let status = std::fs::read_to_string(&status_path).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let (mut count, mut peak) = (0, 0);
    loop {
        peak = peak.max(hwm().unwrap_or(0));
        let n = stdout.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        count += buf[..n].iter().filter(|&&b| b == 0).count();
    }
    let status = child.wait().unwrap();
    assert!(peak > 0, "could not read the child's VmHWM");
    (count, peak, status)
}

/// Run `body` while another thread does `step(n)` for n = 0, 1, … until it returns.
fn while_racing(step: impl FnMut(usize) + Send + 'static, body: impl FnOnce()) {
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let racer = {
        let stop = stop.clone();
        let mut step = step;
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                step(n);
                n += 1;
            }
        })
    };
    body();
    stop.store(true, Ordering::Relaxed);
    racer.join().expect("racing thread");
}

/// `base/tree` holding `a/b/c` and `link` (to a directory outside holding
/// [`MARKER`]); `body` gets the tree while a thread swaps `a` and `link`
/// without pause. Skips, saying so, without `RENAME_EXCHANGE`.
pub fn during_swaps(base: &Path, body: impl FnOnce(&Path)) {
    if !can_exchange(base) {
        return;
    }
    let outside = make_outside(base, &["b"]);
    let tree = base.join("tree");
    std::fs::create_dir_all(tree.join("a/b/c")).unwrap();
    std::os::unix::fs::symlink(&outside, tree.join("link")).unwrap();
    let dir = open_root(&tree);
    while_racing(move |_| exchange(&dir, "a", "link").expect("exchange"), || body(&tree));
}

/// `base/stable/d0` … `d9`, never touched, and `base/churn`, where a thread
/// creates, renames and deletes directories while `body` runs.
pub fn during_churn(base: &Path, body: impl FnOnce()) {
    for d in 0..10 {
        std::fs::create_dir_all(base.join(format!("stable/d{d}"))).unwrap();
    }
    let churn = base.join("churn");
    std::fs::create_dir(&churn).unwrap();
    let step = move |n: usize| {
        let d = churn.join(format!("n{n}"));
        let _ = std::fs::create_dir_all(d.join("x"));
        let _ = std::fs::rename(&d, churn.join(format!("m{n}")));
        if n > 2 {
            let _ = std::fs::remove_dir_all(churn.join(format!("m{}", n - 2)));
        }
    };
    while_racing(step, body);
}
