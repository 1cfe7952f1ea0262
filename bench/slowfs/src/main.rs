//! slowfs: a read-only FUSE view of a directory in which every metadata
//! request (lookup, getattr, opendir, readdir, readlink) is answered after a
//! fixed delay, as from a network file system or a FUSE store over a slow
//! backend. Requests are served by a pool of threads, so many may be in
//! flight at once, as they would be against a server: what a walker gains
//! here is what it gains by keeping requests in flight.
//!
//! Usage: slowfs [--delay-us N] [--threads N] [--ttl-s N] [--trace DIR] [--stats] [--allow-other] SOURCE MOUNTPOINT
//! Runs in the foreground until the mount point is unmounted (`umount
//! MOUNTPOINT` or `fusermount3 -u MOUNTPOINT`).
//!
//! - `--delay-us N` (default 200): the delay added to each request but
//!   releasedir, which is answered at once.
//! - `--threads N` (default 64): the cap on requests in flight. A thread
//!   serves one request at a time, delay included, and the others wait in a
//!   queue for a free thread, as a network client's calls wait for one of
//!   its RPC slots (a Lustre client keeps 8 metadata RPCs in flight per
//!   target by default).
//! - `--ttl-s N` (default 0): how long the kernel may keep an entry and its
//!   attributes. At 0 nothing is cached, so every walk pays the latency, as
//!   after a cache drop on a network mount, and so do path lookups repeated
//!   within one walk; a fresh mount with a long TTL is instead a cold client
//!   cache: each entry costs one round trip, the first time it is seen.
//! - Names in one directory are looked up (and directories read) in
//!   parallel, as NFS and Lustre clients do; the kernel serializes them
//!   per directory for a FUSE server that does not ask otherwise.
//! - `--trace DIR`: every 100 ms, append to `DIR/slowfs-PID.trace` the wall
//!   clock (ms since the epoch) and the requests in flight on average over
//!   those 100 ms, to see when a client's slots sit idle (and line several
//!   clients up in time).
//! - `--allow-other`: users other than the one that mounted it may read it
//!   too, as the source's modes allow (FUSE's `allow_other` and
//!   `default_permissions`; for root, or with `user_allow_other` in
//!   /etc/fuse.conf). Without it every other user is refused, root included.
//! - `--stats`: when the mount ends, print how many requests of each kind
//!   came in and the process's CPU time (what the emulation itself costs).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, UNIX_EPOCH};

use fuser::{
    FileAttr, FileType, Filesystem, MountOption, ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry,
    ReplyOpen, Request, FUSE_ROOT_ID,
};

struct Entry {
    name: OsString,
    ino: u64,
    kind: FileType,
}

struct State {
    source: PathBuf,
    /// The source's inode of the mounted root: it is FUSE's inode 1.
    source_root_ino: u64,
    /// FUSE inode (the source's inode) to a path that reaches it.
    paths: RwLock<HashMap<u64, PathBuf>>,
    /// Listings of open directories, by handle.
    listings: Mutex<HashMap<u64, Arc<Vec<Entry>>>>,
    next_handle: AtomicU64,
    delay: Duration,
    /// How long the kernel may cache an entry or its attributes (`--ttl-s`).
    ttl: Duration,
    /// Requests received, by kind (`Kind as usize`).
    received: [AtomicU64; KINDS.len()],
    /// Time the serving threads spent on requests, delays included, and
    /// the span from the first request's start to the last one's end (ns
    /// since `started`): their ratio is the mean number of requests in flight.
    busy_ns: AtomicU64,
    first_ns: AtomicU64,
    last_ns: AtomicU64,
    started: std::time::Instant,
}

/// The kinds of request counted for `--stats`.
#[derive(Clone, Copy)]
enum Kind {
    Lookup,
    Getattr,
    Readlink,
    Opendir,
    Readdir,
    Releasedir,
}

/// Their names, in the order of `Kind`.
const KINDS: [&str; 6] = ["lookup", "getattr", "readlink", "opendir", "readdir", "releasedir"];

impl State {
    fn path(&self, ino: u64) -> Option<PathBuf> {
        if ino == FUSE_ROOT_ID {
            return Some(self.source.clone());
        }
        self.paths.read().unwrap().get(&ino).cloned()
    }

    fn fuse_ino(&self, source_ino: u64) -> u64 {
        if source_ino == self.source_root_ino {
            FUSE_ROOT_ID
        } else {
            source_ino
        }
    }

    fn attr(&self, meta: &std::fs::Metadata) -> FileAttr {
        let time = |secs: i64, nsecs: i64| {
            if secs >= 0 {
                UNIX_EPOCH + Duration::new(secs as u64, nsecs as u32)
            } else {
                UNIX_EPOCH
            }
        };
        FileAttr {
            ino: self.fuse_ino(meta.ino()),
            size: meta.size(),
            blocks: meta.blocks(),
            atime: time(meta.atime(), meta.atime_nsec()),
            mtime: time(meta.mtime(), meta.mtime_nsec()),
            ctime: time(meta.ctime(), meta.ctime_nsec()),
            crtime: UNIX_EPOCH,
            kind: kind_of(meta.file_type()),
            perm: (meta.mode() & 0o7777) as u16,
            nlink: meta.nlink() as u32,
            uid: meta.uid(),
            gid: meta.gid(),
            rdev: meta.rdev() as u32,
            blksize: meta.blksize() as u32,
            flags: 0,
        }
    }

    /// `op` on the path of inode `ino`, answered after the delay.
    fn at_path<T>(&self, ino: u64, op: impl FnOnce(&Path) -> std::io::Result<T>) -> Result<T, i32> {
        let result = self
            .path(ino)
            .ok_or(libc::ENOENT)
            .and_then(|p| op(&p).map_err(|e| errno(&e)));
        self.wait();
        result
    }

    /// Stand in for the round trip to the backend.
    fn wait(&self) {
        std::thread::sleep(self.delay);
    }

    fn count(&self, kind: Kind) {
        self.received[kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// One line: the requests received by kind, and this process's CPU time.
    fn stats(&self) -> String {
        let counts: Vec<u64> = self.received.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        let by_kind: Vec<String> = KINDS.iter().zip(&counts).map(|(k, n)| format!("{k} {n}")).collect();
        let span = self
            .last_ns
            .load(Ordering::Relaxed)
            .saturating_sub(self.first_ns.load(Ordering::Relaxed));
        let busy = self.busy_ns.load(Ordering::Relaxed);
        format!(
            "slowfs: {} requests ({}); CPU {}; {:.2} in flight on average over {:.3} s",
            counts.iter().sum::<u64>(),
            by_kind.join(", "),
            cpu_time(),
            busy as f64 / span.max(1) as f64,
            span as f64 / 1e9
        )
    }
}

/// User and system CPU time of the whole process so far.
fn cpu_time() -> String {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let ms = |t: libc::timeval| t.tv_sec * 1000 + t.tv_usec / 1000;
    format!("user {} ms, system {} ms", ms(usage.ru_utime), ms(usage.ru_stime))
}

fn kind_of(t: std::fs::FileType) -> FileType {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        FileType::Directory
    } else if t.is_symlink() {
        FileType::Symlink
    } else if t.is_block_device() {
        FileType::BlockDevice
    } else if t.is_char_device() {
        FileType::CharDevice
    } else if t.is_fifo() {
        FileType::NamedPipe
    } else if t.is_socket() {
        FileType::Socket
    } else {
        FileType::RegularFile
    }
}

fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

type Task = Box<dyn FnOnce(&State) + Send>;

/// The file system as the FUSE session sees it: each request is handed to
/// the pool, which does the work, waits the delay and replies.
struct SlowFs {
    state: Arc<State>,
    tasks: crossbeam_channel::Sender<Task>,
}

impl SlowFs {
    fn run(&self, kind: Kind, task: impl FnOnce(&State) + Send + 'static) {
        self.state.count(kind);
        // The pool outlives the session; a send can only fail at teardown.
        let _ = self.tasks.send(Box::new(task));
    }
}

impl Filesystem for SlowFs {
    fn init(&mut self, _req: &Request<'_>, config: &mut fuser::KernelConfig) -> Result<(), libc::c_int> {
        // Without it, the kernel lets one lookup at a time into a
        // directory: 1,000 stats in one directory took 1,000 delays
        // however many threads asked.
        let _ = config.add_capabilities(fuser::consts::FUSE_PARALLEL_DIROPS);
        Ok(())
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let name = name.to_os_string();
        self.run(Kind::Lookup, move |s| {
            let result = s.path(parent).ok_or(libc::ENOENT).and_then(|dir| {
                let path = dir.join(&name);
                let meta = std::fs::symlink_metadata(&path).map_err(|e| errno(&e))?;
                let attr = s.attr(&meta);
                s.paths.write().unwrap().insert(attr.ino, path);
                Ok(attr)
            });
            s.wait();
            match result {
                Ok(attr) => reply.entry(&s.ttl, &attr, 0),
                Err(e) => reply.error(e),
            }
        });
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        self.run(Kind::Getattr, move |s| {
            match s.at_path(ino, |p| std::fs::symlink_metadata(p)) {
                Ok(meta) => reply.attr(&s.ttl, &s.attr(&meta)),
                Err(e) => reply.error(e),
            }
        });
    }

    fn readlink(&mut self, _req: &Request<'_>, ino: u64, reply: ReplyData) {
        self.run(Kind::Readlink, move |s| {
            match s.at_path(ino, |p| std::fs::read_link(p)) {
                Ok(target) => reply.data(target.as_os_str().as_bytes()),
                Err(e) => reply.error(e),
            }
        });
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        self.run(Kind::Opendir, move |s| match s.at_path(ino, |p| list(s, p)) {
            Ok(entries) => {
                let fh = s.next_handle.fetch_add(1, Ordering::Relaxed);
                s.listings.lock().unwrap().insert(fh, Arc::new(entries));
                reply.opened(fh, 0);
            }
            Err(e) => reply.error(e),
        });
    }

    fn readdir(&mut self, _req: &Request<'_>, _ino: u64, fh: u64, offset: i64, mut reply: ReplyDirectory) {
        self.run(Kind::Readdir, move |s| {
            let listing = s.listings.lock().unwrap().get(&fh).cloned();
            s.wait();
            let Some(listing) = listing else {
                return reply.error(libc::EBADF);
            };
            for (i, e) in listing.iter().enumerate().skip(offset.max(0) as usize) {
                if reply.add(e.ino, i as i64 + 1, e.kind, &e.name) {
                    break;
                }
            }
            reply.ok();
        });
    }

    fn releasedir(&mut self, _req: &Request<'_>, _ino: u64, fh: u64, _flags: i32, reply: ReplyEmpty) {
        self.state.count(Kind::Releasedir);
        self.state.listings.lock().unwrap().remove(&fh);
        reply.ok();
    }
}

/// A directory's entries with the types the source's `getdents64` gave.
fn list(s: &State, dir: &Path) -> std::io::Result<Vec<Entry>> {
    let mut entries = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let kind = kind_of(e.file_type()?);
        entries.push(Entry {
            name: e.file_name(),
            ino: s.fuse_ino(e.ino()),
            kind,
        });
    }
    Ok(entries)
}

struct Args {
    delay: Duration,
    ttl: Duration,
    threads: usize,
    stats: bool,
    allow_other: bool,
    trace: Option<PathBuf>,
    source: PathBuf,
    mountpoint: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut delay = Duration::from_micros(200);
    let mut ttl = Duration::ZERO;
    let mut threads = 64;
    let mut stats = false;
    let mut allow_other = false;
    let mut trace = None;
    let mut positional = Vec::new();
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        let mut number = |what: &str| -> Result<u64, String> {
            let v = args.next().ok_or(format!("{what} needs a value"))?;
            v.to_str()
                .and_then(|v| v.parse().ok())
                .ok_or(format!("{what}: not a number: {}", v.to_string_lossy()))
        };
        match arg.to_str() {
            Some("--delay-us") => delay = Duration::from_micros(number("--delay-us")?),
            Some("--ttl-s") => ttl = Duration::from_secs(number("--ttl-s")?),
            Some("--threads") => threads = number("--threads")?.max(1) as usize,
            Some("--stats") => stats = true,
            Some("--allow-other") => allow_other = true,
            Some("--trace") => trace = Some(PathBuf::from(args.next().ok_or("--trace needs a folder")?)),
            Some("-h" | "--help") => return Err(String::new()),
            _ => positional.push(PathBuf::from(arg)),
        }
    }
    let [source, mountpoint]: [PathBuf; 2] = positional
        .try_into()
        .map_err(|_| "expected SOURCE and MOUNTPOINT".to_string())?;
    Ok(Args {
        delay,
        ttl,
        threads,
        stats,
        allow_other,
        trace,
        source,
        mountpoint,
    })
}

/// Every 100 ms, a line: the wall clock in ms and the requests in flight
/// on average since the line before (requests counted as they end).
fn trace(state: &State, mut file: std::fs::File) {
    use std::io::Write;
    const TICK: Duration = Duration::from_millis(100);
    let mut before = 0;
    loop {
        std::thread::sleep(TICK);
        let busy = state.busy_ns.load(Ordering::Relaxed);
        let now = std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let in_flight = (busy - before) as f64 / TICK.as_nanos() as f64;
        before = busy;
        if writeln!(file, "{} {in_flight:.2}", now.as_millis()).is_err() {
            return;
        }
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(msg) => {
            if !msg.is_empty() {
                eprintln!("slowfs: {msg}");
            }
            eprintln!(
                "usage: slowfs [--delay-us N] [--threads N] [--ttl-s N] [--trace DIR] [--stats] [--allow-other] SOURCE MOUNTPOINT"
            );
            return ExitCode::from(2);
        }
    };
    let source = match std::fs::canonicalize(&args.source) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("slowfs: {}: {e}", args.source.display());
            return ExitCode::from(1);
        }
    };
    let source_root_ino = match std::fs::metadata(&source) {
        Ok(m) if m.is_dir() => m.ino(),
        _ => {
            eprintln!("slowfs: {}: not a directory", source.display());
            return ExitCode::from(1);
        }
    };
    let state = Arc::new(State {
        source,
        source_root_ino,
        paths: RwLock::new(HashMap::new()),
        listings: Mutex::new(HashMap::new()),
        next_handle: AtomicU64::new(1),
        delay: args.delay,
        ttl: args.ttl,
        received: Default::default(),
        busy_ns: AtomicU64::new(0),
        first_ns: AtomicU64::new(u64::MAX),
        last_ns: AtomicU64::new(0),
        started: std::time::Instant::now(),
    });
    let (tasks, queue) = crossbeam_channel::unbounded::<Task>();
    for _ in 0..args.threads {
        let (state, queue) = (state.clone(), queue.clone());
        std::thread::spawn(move || {
            // Sleep as long as asked, not the default 50 µs of timer slack more.
            // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
            for task in queue {
                let start = state.started.elapsed().as_nanos() as u64;
                task(&state);
                let end = state.started.elapsed().as_nanos() as u64;
                state.busy_ns.fetch_add(end - start, Ordering::Relaxed);
                state.first_ns.fetch_min(start, Ordering::Relaxed);
                state.last_ns.fetch_max(end, Ordering::Relaxed);
            }
        });
    }
    if let Some(dir) = &args.trace {
        let file = dir.join(format!("slowfs-{}.trace", std::process::id()));
        match std::fs::File::create(&file) {
            Ok(file) => {
                let state = state.clone();
                std::thread::spawn(move || trace(&state, file));
            }
            Err(e) => eprintln!("slowfs: {}: {e}", file.display()),
        }
    }
    let fs = SlowFs {
        state: state.clone(),
        tasks,
    };
    let mut options = vec![
        MountOption::RO,
        MountOption::FSName("slowfs".into()),
        MountOption::Subtype("slowfs".into()),
    ];
    if args.allow_other {
        options.extend([MountOption::AllowOther, MountOption::DefaultPermissions]);
    }
    match fuser::mount2(fs, &args.mountpoint, &options) {
        Ok(()) => {
            if args.stats {
                eprintln!("{}", state.stats());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("slowfs: mount {}: {e}", args.mountpoint.display());
            ExitCode::from(1)
        }
    }
}
