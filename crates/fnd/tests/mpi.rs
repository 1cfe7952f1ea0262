//! `fnd` as an MPI job (`mpirun -n N fnd …`, feature `mpi`), with 1 to 4
//! ranks on however many cores there are: it must print what one process
//! prints, run each command once, stop when asked, and report errors and
//! exit as fd does. Run with `cargo test -p fnd --features mpi --test mpi`
//! (Open MPI's `mpirun` on the PATH; as root, the test sets
//! `OMPI_ALLOW_RUN_AS_ROOT` itself).
//!
//! The reference for entry sets is GNU `find` from the PATH, and one `fnd`
//! process. `FND_MPI_STATS=1` makes rank 0 print each rank's counts, which
//! show that work really moved; `FND_MPI_TEST_PAUSE_US` makes every rank
//! pause after each directory, so that a tree of a few hundred directories
//! keeps rank 0 busy long enough for the others to steal from it.
#![cfg(feature = "mpi")]

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use rustix::fs::{Mode, OFlags};

const RANKS: [usize; 4] = [1, 2, 3, 4];

/// One `mpirun` at a time: the tests share two cores.
static MPIRUN: Mutex<()> = Mutex::new(());

fn fnd_bin() -> &'static str {
    env!("CARGO_BIN_EXE_fnd")
}

/// How a command is started: as `ranks` ranks under `mpirun`, or alone.
#[derive(Clone, Copy, Debug)]
enum Run {
    Ranks(usize),
    Alone,
}

struct Job<'a> {
    run: Run,
    args: Vec<&'a OsStr>,
    env: Vec<(&'a str, String)>,
    /// Run as `nobody` (through `setpriv`), so that permissions apply.
    as_nobody: bool,
    /// `mpirun -q`: no banner when a rank exits with a non-zero status.
    quiet_launcher: bool,
}

fn job<'a>(run: Run, args: &[&'a str]) -> Job<'a> {
    Job {
        run,
        args: args.iter().map(|a| OsStr::new(*a)).collect(),
        env: Vec::new(),
        as_nobody: false,
        quiet_launcher: false,
    }
}

impl<'a> Job<'a> {
    fn arg(mut self, arg: &'a OsStr) -> Self {
        self.args.push(arg);
        self
    }

    fn env(mut self, key: &'a str, value: impl ToString) -> Self {
        self.env.push((key, value.to_string()));
        self
    }

    fn quiet_launcher(mut self) -> Self {
        self.quiet_launcher = true;
        self
    }

    fn output(&self) -> Output {
        let mut argv: Vec<&OsStr> = Vec::new();
        if self.as_nobody {
            argv.extend(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"].map(OsStr::new));
        }
        let ranks;
        if let Run::Ranks(n) = self.run {
            ranks = n.to_string();
            argv.extend(["mpirun", "--oversubscribe", "--bind-to", "none", "-n", &ranks].map(OsStr::new));
            if self.quiet_launcher {
                argv.push(OsStr::new("-q"));
            }
        }
        argv.push(OsStr::new(fnd_bin()));
        argv.extend(&self.args);
        let mut cmd = Command::new(argv[0]);
        cmd.args(&argv[1..])
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env_remove("LS_COLORS")
            .env_remove("FND_MPI_STATS")
            .env_remove("FND_MPI_TEST_PAUSE_US")
            .env("NO_COLOR", "1");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let _one_at_a_time = MPIRUN.lock().unwrap_or_else(|e| e.into_inner());
        let what = format!("{:?} {:?}", self.run, self.args);
        let out = fnd_test_support::process::run_to_end(cmd, &what, Duration::from_secs(180));
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            assert!(
                !stderr.contains("mpirun") && !stderr.contains("MPI_"),
                "{:?} {:?} succeeded with a banner: {stderr}",
                self.run,
                self.args
            );
        }
        out
    }
}

/// NUL-terminated records, sorted (duplicates kept, so that they show).
fn records(stdout: &[u8]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = stdout.split(|&b| b == 0).map(<[u8]>::to_vec).collect();
    assert_eq!(v.pop(), Some(Vec::new()), "output ends with a NUL");
    v.sort();
    v
}

/// Lines, sorted.
fn lines(stdout: &[u8]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = stdout.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    assert_eq!(v.pop(), Some(Vec::new()), "output ends with a newline");
    v.sort();
    v
}

/// `find ROOT -mindepth 1` (`-L` with `follow`), as sorted records.
fn find(root: &Path, follow: bool) -> Vec<Vec<u8>> {
    let mut cmd = Command::new("find");
    if follow {
        cmd.arg("-L");
    }
    let out = cmd
        .arg(root)
        .args(["-mindepth", "1", "-print0"])
        .stderr(Stdio::null())
        .output()
        .expect("GNU find");
    records(&out.stdout)
}

/// fnd's records as find spells them: a directory without its `/`.
fn as_find_spells(records: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = records
        .iter()
        .map(|r| r.strip_suffix(b"/").unwrap_or(r).to_vec())
        .collect();
    v.sort();
    v
}

/// Each rank's counts from `FND_MPI_STATS`: (directories read, received, given).
fn stats(stderr: &[u8]) -> BTreeMap<usize, (u64, u64, u64)> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("fnd-mpi: rank ")?;
            let (rank, rest) = rest.split_once(": ")?;
            let n: Vec<u64> = rest
                .split(", ")
                .map(|part| part.split(' ').next().unwrap().parse().unwrap())
                .collect();
            Some((rank.parse().unwrap(), (n[0], n[1], n[2])))
        })
        .collect()
}

fn put(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A chain of directories whose path passes `PATH_MAX` (4096), made
/// relative to each other: 48 levels of 100-byte names, a file at the end.
fn deep_chain(root: &Path) {
    let mut dir: OwnedFd = rustix::fs::open(root, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
    for level in 0..48 {
        let name = format!("{level:02}{}", "d".repeat(98));
        rustix::fs::mkdirat(dir.as_fd(), name.as_str(), Mode::from_raw_mode(0o755)).unwrap();
        dir = rustix::fs::openat(
            dir.as_fd(),
            name.as_str(),
            OFlags::DIRECTORY | OFlags::RDONLY,
            Mode::empty(),
        )
        .unwrap();
    }
    let f = rustix::fs::openat(
        dir.as_fd(),
        "bottom",
        OFlags::CREATE | OFlags::WRONLY,
        Mode::from_raw_mode(0o644),
    );
    drop(f.unwrap());
}

/// Names a shell, a terminal or a UTF-8 decoder would trip over.
fn hostile_names() -> Vec<Vec<u8>> {
    vec![
        b"new\nline".to_vec(),
        b"invalid\xff\xfeutf8".to_vec(),
        b"-rf".to_vec(),
        b" leading space".to_vec(),
        b"tab\there".to_vec(),
        b"back\\slash".to_vec(),
        b"\x1b[31mred".to_vec(),
        b"*?[glob]".to_vec(),
        b"quote\"'".to_vec(),
        vec![b'n'; 255],
    ]
}

/// The tree most tests walk: 24 × 6 directories of 4 files (enough for
/// ranks to steal from each other), hostile names as files and
/// directories, a chain past `PATH_MAX`, hidden entries.
fn big_tree(root: &Path) {
    for a in 0..24 {
        for b in 0..6 {
            for f in 0..4 {
                put(&root.join(format!("a{a}/b{b}/f{f}.txt")), b"");
            }
        }
        put(&root.join(format!("a{a}/.hidden")), b"");
    }
    for name in hostile_names() {
        let name = OsStr::from_bytes(&name);
        put(&root.join("hostile").join(name), b"");
        put(&root.join("hostile-dirs").join(name).join("inside"), b"");
    }
    std::fs::create_dir(root.join("deep")).unwrap();
    deep_chain(&root.join("deep"));
}

/// Symbolic links for `-L`: loops back to the root and to a directory
/// itself, a link to a sibling, one that leads nowhere.
fn link_tree(root: &Path) {
    for a in 0..8 {
        for b in 0..4 {
            put(&root.join(format!("a{a}/b{b}/f")), b"");
        }
    }
    symlink("../..", root.join("a1/b2/up")).unwrap();
    symlink(".", root.join("a3/self")).unwrap();
    symlink("b1", root.join("a5/sideways")).unwrap();
    symlink("../a6", root.join("a7/cousin")).unwrap();
    symlink("nowhere", root.join("dangling")).unwrap();
}

/// Ignore files of every kind, nested, with negations, a repository
/// inside the root and one nested in it, and a `.fdignore`.
fn ignore_tree(root: &Path) {
    std::fs::create_dir_all(root.join(".git")).unwrap();
    put(&root.join(".gitignore"), b"*.o\nbuild/\n!keep.o\n");
    put(&root.join(".ignore"), b"secret*\n");
    put(&root.join(".fdignore"), b"*.bak\n!important.bak\n");
    let files = [
        "x.o",
        "keep.o",
        "secret1",
        "z.bak",
        "important.bak",
        "plain.rs",
        "gen",
        "k.dat",
        "keep1.dat",
    ];
    let dirs = [
        "",
        "src",
        "src/a/b",
        "build",
        "deep/l1/l2/l3/l4",
        "vendor",
        "vendor/lib",
    ];
    for group in 0..12 {
        for dir in dirs {
            for file in files {
                put(&root.join(format!("g{group}/{dir}/{file}")), b"");
            }
        }
        put(&root.join(format!("g{group}/src/.gitignore")), b"gen\n!x.o\n");
        put(&root.join(format!("g{group}/deep/l1/.ignore")), b"*.dat\n");
        put(&root.join(format!("g{group}/deep/l1/l2/l3/.ignore")), b"!keep*.dat\n");
        std::fs::create_dir_all(root.join(format!("g{group}/vendor/.git"))).unwrap();
        put(&root.join(format!("g{group}/vendor/.gitignore")), b"*.rs\n");
    }
}

fn tree(make: fn(&Path)) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    make(&root);
    (tmp, root)
}

#[test]
fn every_entry_once_as_find_and_one_process_list_them() {
    let (_tmp, root) = tree(big_tree);
    let expected = find(&root, false);
    assert!(expected.len() > 700, "{}", expected.len());
    let alone = job(Run::Alone, &["-u", "-0", "."]).arg(root.as_os_str()).output();
    assert!(alone.status.success());
    assert_eq!(
        as_find_spells(&records(&alone.stdout)),
        expected,
        "one fnd process and find differ"
    );
    for ranks in RANKS {
        let out = job(Run::Ranks(ranks), &["-u", "-0", "."])
            .arg(root.as_os_str())
            .output();
        assert!(
            out.status.success(),
            "{ranks} ranks: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stderr, b"", "{ranks} ranks");
        assert_eq!(records(&out.stdout), records(&alone.stdout), "{ranks} ranks");
    }
}

#[test]
fn links_followed_with_loops_list_what_find_lists() {
    let (_tmp, root) = tree(link_tree);
    let expected = find(&root, true);
    let alone = job(Run::Alone, &["-L", "-u", "-0", "."]).arg(root.as_os_str()).output();
    assert_eq!(as_find_spells(&records(&alone.stdout)), expected);
    for ranks in RANKS {
        let out = job(Run::Ranks(ranks), &["-L", "-u", "-0", "."])
            .arg(root.as_os_str())
            .output();
        assert!(
            out.status.success(),
            "{ranks} ranks: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(records(&out.stdout), records(&alone.stdout), "{ranks} ranks");
    }
}

#[test]
fn ignore_files_decide_as_in_one_process() {
    let (_tmp, root) = tree(ignore_tree);
    let alone = job(Run::Alone, &["-0", "."]).arg(root.as_os_str()).output();
    let everything = job(Run::Alone, &["-u", "-0", "."]).arg(root.as_os_str()).output();
    assert!(records(&alone.stdout).len() < records(&everything.stdout).len());
    for ranks in RANKS {
        // Slow enough that directories with ignore rules above them move.
        let out = job(Run::Ranks(ranks), &["-0", "."])
            .arg(root.as_os_str())
            .env("FND_MPI_STATS", 1)
            .env("FND_MPI_TEST_PAUSE_US", 1000)
            .output();
        assert!(
            out.status.success(),
            "{ranks} ranks: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(records(&out.stdout), records(&alone.stdout), "{ranks} ranks");
        let moved: u64 = stats(&out.stderr).values().map(|s| s.1).sum();
        assert!(ranks == 1 || moved > 0, "{ranks} ranks: no directory moved");
    }
}

#[test]
fn output_looks_the_same_in_every_format() {
    let (_tmp, root) = tree(big_tree);
    let root = root.as_os_str();
    let formats: [&[&str]; 4] = [
        &["--color", "always", "-u", "."],
        &["--format", "{//} {/.} {.}", "-u", "."],
        &["-u", "--hyperlink=always", "-e", "txt", "."],
        &["-u", "-t", "d", "-a", "."],
    ];
    for args in formats {
        let alone = job(Run::Alone, args).arg(root).output();
        for ranks in [2, 3] {
            let out = job(Run::Ranks(ranks), args).arg(root).output();
            assert!(
                out.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(lines(&out.stdout), lines(&alone.stdout), "{args:?} with {ranks} ranks");
        }
    }
}

#[test]
fn directories_move_between_ranks_and_each_is_read_once() {
    let (_tmp, root) = tree(big_tree);
    let dirs = Command::new("find")
        .arg(&root)
        .args(["-type", "d", "-print0"])
        .output()
        .unwrap()
        .stdout
        .iter()
        .filter(|&&b| b == 0)
        .count() as u64;
    for ranks in [2, 3, 4] {
        let out = job(Run::Ranks(ranks), &["-u", "-0", "."])
            .arg(root.as_os_str())
            .env("FND_MPI_STATS", 1)
            .env("FND_MPI_TEST_PAUSE_US", 2000)
            .output();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let stats = stats(&out.stderr);
        assert_eq!(stats.len(), ranks, "{}", String::from_utf8_lossy(&out.stderr));
        let read: u64 = stats.values().map(|s| s.0).sum();
        assert_eq!(read, dirs, "{ranks} ranks read {stats:?}");
        assert!(
            stats.values().all(|s| s.0 > 0),
            "{ranks} ranks, one read nothing: {stats:?}"
        );
        let (received, given): (u64, u64) = (stats.values().map(|s| s.1).sum(), stats.values().map(|s| s.2).sum());
        assert_eq!(received, given, "{stats:?}");
        assert!(given > 0);
    }
}

#[test]
fn each_command_runs_once_with_its_output_whole() {
    let (tmp, root) = tree(big_tree);
    let script = "echo \"$1\" >> \"$0\"; echo \"out:$1:end\"; echo \"err:$1:end\" >&2";
    let files = job(Run::Alone, &["-u", "-t", "f", "-e", "txt", "."])
        .arg(root.as_os_str())
        .output();
    let files = lines(&files.stdout);
    assert!(files.len() > 500);
    for ranks in RANKS {
        let log = tmp.path().join(format!("log{ranks}"));
        let out = job(Run::Ranks(ranks), &["-u", "-t", "f", "-e", "txt", "."])
            .arg(root.as_os_str())
            .args_exec(&["-x", "sh", "-c", script])
            .arg(log.as_os_str())
            .output();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let ran = lines(&std::fs::read(&log).unwrap());
        assert_eq!(ran, files, "{ranks} ranks: commands run");
        let wrap = |tag: &str| -> Vec<Vec<u8>> {
            files
                .iter()
                .map(|f| [tag.as_bytes(), b":", f, b":end"].concat())
                .collect()
        };
        assert_eq!(lines(&out.stdout), wrap("out"), "{ranks} ranks: stdout");
        assert_eq!(lines(&out.stderr), wrap("err"), "{ranks} ranks: stderr");
        // -X: every result in one batch of the rank that found it. Each
        // batch writes a file of its own: the batches of two ranks run at
        // once, and a shell's `printf` of many lines is several writes,
        // which appends to one file would interleave.
        let batches = tmp.path().join(format!("batches{ranks}"));
        std::fs::create_dir(&batches).unwrap();
        let out = job(Run::Ranks(ranks), &["-u", "-t", "f", "-e", "txt", "."])
            .arg(root.as_os_str())
            .args_exec(&["-X", "sh", "-c", "printf '%s\\n' \"$@\" > \"$0/$$\"; echo batch"])
            .arg(batches.as_os_str())
            .output();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut listed = Vec::new();
        for batch in std::fs::read_dir(&batches).unwrap() {
            listed.extend(std::fs::read(batch.unwrap().path()).unwrap());
        }
        assert_eq!(lines(&listed), files, "{ranks} ranks: -X");
        let runs = lines(&out.stdout).len();
        assert!((1..=ranks).contains(&runs), "{ranks} ranks ran {runs} batches");
    }
}

impl<'a> Job<'a> {
    fn args_exec(mut self, args: &[&'a str]) -> Self {
        self.args.extend(args.iter().map(|a| OsStr::new(*a)));
        self
    }
}

#[test]
fn first_result_and_max_results_stop_every_rank() {
    let (_tmp, root) = tree(big_tree);
    let dirs: u64 = 24 * 7 + 2 * 11 + 50;
    for ranks in RANKS {
        let out = job(Run::Ranks(ranks), &["-1", "-e", "txt", "."])
            .arg(root.as_os_str())
            .env("FND_MPI_STATS", 1)
            .env("FND_MPI_TEST_PAUSE_US", 3000)
            .output();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(lines(&out.stdout).len(), 1, "{ranks} ranks");
        let read: u64 = stats(&out.stderr).values().map(|s| s.0).sum();
        assert!(
            read < dirs / 2,
            "{ranks} ranks went on after the first result: {read} directories"
        );
        for max in [5, 37] {
            let out = job(
                Run::Ranks(ranks),
                &["--max-results", &max.to_string(), "-u", "-e", "txt", "."],
            )
            .arg(root.as_os_str())
            .output();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(lines(&out.stdout).len(), max, "{ranks} ranks");
        }
        // Records counted, not lines: a name holds a newline.
        let out = job(Run::Ranks(ranks), &["--max-results", "1", "-u", "-0", "new.line"])
            .arg(root.as_os_str())
            .output();
        let found = records(&out.stdout);
        assert_eq!(found.len(), 1, "{ranks} ranks: {found:?}");
        assert!(
            found[0].ends_with(b"new\nline") || found[0].ends_with(b"new\nline/"),
            "{found:?}"
        );
    }
}

#[test]
fn quiet_says_by_its_status_whether_anything_matched() {
    let (_tmp, root) = tree(big_tree);
    for ranks in RANKS {
        let found = job(Run::Ranks(ranks), &["-q", "-u", "bottom"])
            .arg(root.as_os_str())
            .output();
        assert_eq!(found.status.code(), Some(0), "{ranks} ranks");
        assert_eq!(found.stdout, b"");
        let none = job(Run::Ranks(ranks), &["-q", "-u", "no-such-name"])
            .arg(root.as_os_str())
            .quiet_launcher()
            .output();
        assert_eq!(none.status.code(), Some(1), "{ranks} ranks");
        assert_eq!((none.stdout.as_slice(), none.stderr.as_slice()), (&b""[..], &b""[..]));
    }
}

#[test]
fn bad_input_is_reported_once_with_fds_status() {
    let (tmp, root) = tree(big_tree);
    let missing = tmp.path().join("missing");
    let cases: Vec<Vec<&OsStr>> = vec![
        vec![OsStr::new("x"), missing.as_os_str()],
        vec![
            OsStr::new("-u"),
            OsStr::new("bottom"),
            missing.as_os_str(),
            root.as_os_str(),
        ],
        vec![OsStr::new("--no-such-option")],
        vec![OsStr::new("--changed-within"), OsStr::new("yesterday-ish")],
        vec![OsStr::new("-x")],
    ];
    for args in &cases {
        let mut alone = job(Run::Alone, &[]);
        alone.args.extend(args);
        let alone = alone.output();
        for ranks in [2, 4] {
            let mut under = job(Run::Ranks(ranks), &[]).quiet_launcher();
            under.args.extend(args);
            let out = under.output();
            assert_eq!(out.status.code(), alone.status.code(), "{args:?} with {ranks} ranks");
            assert_eq!(out.stderr, alone.stderr, "{args:?} with {ranks} ranks");
            assert_eq!(out.stdout, alone.stdout, "{args:?} with {ranks} ranks");
        }
    }
}

#[test]
fn options_that_need_one_process_are_refused_in_one_line() {
    for args in [
        &["--sort", "name"][..],
        &["--sort", "size"],
        &["--order", "bfs"],
        &["--order", "dfs"],
    ] {
        let out = job(Run::Ranks(2), args).quiet_launcher().output();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("[fnd error]: ") && stderr.contains("(this job has 2 ranks)"),
            "{stderr}"
        );
    }
}

/// `--build-index` and `--indexed` are one process's work: under
/// `mpirun` the first task does them alone, as without a launcher (the
/// index written once, each answer printed once), and the others end.
#[test]
fn index_commands_run_once_on_the_first_task() {
    let (_dir, root) = tree(big_tree);
    let root_arg = root.as_os_str();
    let index = root.parent().unwrap().join("tree.fndidx");
    let index_arg = index.as_os_str();
    let alone = job(Run::Alone, &["-u", "-0", "."]).arg(root_arg).output();
    for ranks in [2, 3] {
        let _ = std::fs::remove_file(&index);
        let built = job(Run::Ranks(ranks), &["--build-index", "--index-file"])
            .arg(index_arg)
            .arg(root_arg)
            .output();
        assert!(
            built.status.success(),
            "{ranks}: {}",
            String::from_utf8_lossy(&built.stderr)
        );
        assert!(
            built.stdout.is_empty(),
            "{ranks}: a build printed {} bytes",
            built.stdout.len()
        );
        assert!(index.exists(), "{ranks}: no index written");
        for mode in ["--indexed", "--indexed=stale-ok"] {
            let out = job(Run::Ranks(ranks), &[mode, "--index-file"])
                .arg(index_arg)
                .arg(OsStr::new("-u"))
                .arg(OsStr::new("-0"))
                .arg(OsStr::new("."))
                .arg(root_arg)
                .output();
            assert!(
                out.status.success(),
                "{ranks} {mode}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                out.stderr.is_empty(),
                "{ranks} {mode}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(records(&out.stdout), records(&alone.stdout), "{ranks} {mode}");
        }
    }
}

#[test]
fn an_unreadable_directory_is_reported_once() {
    if !fnd_test_support::hostile::nobody_available() {
        return;
    }
    let (_tmp, root) = tree(big_tree);
    let locked = root.join("a7/locked");
    put(&locked.join("inside"), b"");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let mut alone = job(Run::Alone, &["--show-errors", "-u", "."]).arg(root.as_os_str());
    alone.as_nobody = true;
    let alone = alone.output();
    let expected = format!("[fnd error]: {}: Permission denied (os error 13)\n", locked.display());
    assert_eq!(String::from_utf8_lossy(&alone.stderr), expected);
    for ranks in [2, 3, 4] {
        let mut under = job(Run::Ranks(ranks), &["--show-errors", "-u", "."]).arg(root.as_os_str());
        under.as_nobody = true;
        let out = under.output();
        assert_eq!(out.status.code(), alone.status.code(), "{ranks} ranks");
        assert_eq!(String::from_utf8_lossy(&out.stderr), expected, "{ranks} ranks");
        // No colour codes: the same bytes as one process prints into a pipe.
        assert_eq!(lines(&out.stdout), lines(&alone.stdout), "{ranks} ranks");
    }
}

#[test]
fn a_rank_that_dies_fails_the_job() {
    let (_tmp, root) = tree(big_tree);
    let _one_at_a_time = MPIRUN.lock().unwrap_or_else(|e| e.into_inner());
    let mut cmd = Command::new("mpirun");
    cmd.args(["--oversubscribe", "--bind-to", "none", "-n", "3", fnd_bin(), "-u", "."])
        .arg(&root)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("FND_MPI_TEST_PAUSE_US", "20000");
    let status = fnd_test_support::process::job_after_rank_1_dies(cmd);
    assert!(!status.success(), "a job that lost a rank succeeded");
}

#[test]
fn ranks_that_see_other_search_paths_end_the_job_in_one_line() {
    // Rank 0 starts walking before the ranks compare their search paths;
    // one that sees another tree ends the job all the same.
    let (_tmp, root) = tree(big_tree);
    let (mine, other) = (root.join("a1"), root.join("a2"));
    let _one_at_a_time = MPIRUN.lock().unwrap_or_else(|e| e.into_inner());
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "--oversubscribe",
        "--bind-to",
        "none",
        "-q",
        "-n",
        "2",
        fnd_bin(),
        "-u",
        ".",
    ])
    .arg(&mine)
    .args([":", "-n", "1", fnd_bin(), "-u", "."])
    .arg(&other)
    .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    .env("NO_COLOR", "1");
    let out = fnd_test_support::process::run_to_end(cmd, "ranks with other paths", Duration::from_secs(180));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "[fnd error]: rank 2 of this MPI job sees other search paths than rank 0: every rank must see the same tree\n"
    );
}

#[test]
fn a_rank_under_a_wrapper_prints_no_colours_into_a_pipe() {
    // The pseudo-terminal Open MPI gives each task is no user's terminal:
    // a task whose parent is a shell, not the launcher, cannot take the
    // launcher's stdout over, and must not colour what reaches a pipe.
    let (_tmp, root) = tree(big_tree);
    let alone = job(Run::Alone, &["-u", "."]).arg(root.as_os_str()).output();
    for ranks in ["1", "2"] {
        let _one_at_a_time = MPIRUN.lock().unwrap_or_else(|e| e.into_inner());
        let mut cmd = Command::new("mpirun");
        cmd.args(["--oversubscribe", "--bind-to", "none", "-n", ranks])
            .args(["sh", "-c", "\"$0\" \"$@\"; exit $?", fnd_bin(), "-u", "."])
            .arg(&root)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env_remove("NO_COLOR")
            .env_remove("LS_COLORS");
        let out = fnd_test_support::process::run_to_end(cmd, "under a wrapper", Duration::from_secs(180));
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        // No colour codes: the same bytes as one process prints into a pipe.
        assert_eq!(lines(&out.stdout), lines(&alone.stdout), "{ranks} ranks");
    }
}
