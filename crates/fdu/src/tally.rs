//! `--by` on a live tree: the parallel walk that adds each entry to its
//! group (`crate::groups`), with du's rules for what is counted: every
//! entry once (the operands themselves included), a multiply-linked file
//! at one link, `--exclude`, `-x`, `-L`/`-H`, and an operand inside
//! another counted once.
//!
//! Each thread keeps its own table and the tables are merged when the
//! walk is over: memory grows with the number of groups, not of entries.
//! Only multiply-linked files are set aside (with their path) until the
//! end: of a file's links, the one with the smallest path counts, so that
//! `--by ext` names the same extension on every run and on any number of
//! ranks.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use fnd_walk::{Chunk, Decision, EntryFilter, Error, Flow, Metadata, Order, RawEntry, Visitor, WalkBuilder, Walker};

use crate::command::{identities, read_operands, stat_operands, trim_trailing_slashes};
use crate::exclude::Excludes;
use crate::groups::{pack, type_code, Facts, Table, Tally};
use crate::hardlinks::{counted_once, Links};
use crate::messages::{error_text, quote, report};
use crate::operands::Operands;
use crate::settings::{Follow, Measure, Settings, TimeKind};
use crate::usage::Usage;

/// What one process's part of a `--by` run found.
#[derive(Default)]
pub struct Found {
    pub table: Table,
    /// Links of multiply-linked files, waiting for the verdict.
    pub links: Vec<Link>,
}

impl Found {
    /// What a rank found, and whether it failed, for rank 0.
    pub fn encode(&self, failed: bool) -> Vec<u8> {
        let mut w = fnd_mpi::codec::Writer::new();
        w.u8(u8::from(failed))
            .bytes(&self.table.encode())
            .u32(self.links.len() as u32);
        for l in &self.links {
            w.u64(l.dev).u64(l.ino).bytes(&l.path).bytes(&l.key);
            w.u64(l.tally.disk).u64(l.tally.apparent).u64(l.tally.count);
        }
        w.finish()
    }

    /// What [`Found::encode`] wrote, checked against `keys`.
    pub fn decode(keys: &[crate::settings::GroupKey], bytes: &[u8]) -> Result<(Found, bool), String> {
        let mut r = fnd_mpi::codec::Reader::new(bytes);
        let e = |e: fnd_mpi::codec::DecodeError| e.to_string();
        let failed = r.u8().map_err(e)? != 0;
        let table = Table::decode(keys, r.bytes().map_err(e)?)?;
        let n = r.count(8 + 8 + 4 + 4 + 24).map_err(e)?;
        let mut links = Vec::with_capacity(n);
        for _ in 0..n {
            let (dev, ino) = (r.u64().map_err(e)?, r.u64().map_err(e)?);
            let path = r.bytes().map_err(e)?.to_vec();
            let key = r.bytes().map_err(e)?.to_vec();
            if crate::groups::unpack(keys, &key).is_none() {
                return Err("a link's group does not fit the keys".into());
            }
            let tally = Tally {
                disk: r.u64().map_err(e)?,
                apparent: r.u64().map_err(e)?,
                count: r.u64().map_err(e)?,
            };
            links.push(Link {
                dev,
                ino,
                path,
                key,
                tally,
            });
        }
        r.end().map_err(e)?;
        Ok((Found { table, links }, failed))
    }

    /// Another part's groups and links added to these.
    pub fn merge(&mut self, other: Found) {
        self.table.merge(other.table);
        self.links.extend(other.links);
    }
}

/// One link of a multiply-linked file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    pub dev: u64,
    pub ino: u64,
    pub path: Vec<u8>,
    /// Its group, packed.
    pub key: Vec<u8>,
    pub tally: Tally,
}

/// What a run of `--by` shares between its threads.
pub struct Grouping {
    pub settings: Settings,
    excludes: Excludes,
    operands: Operands,
    /// Whether a subdirectory has to be statted as it is listed (`-x`,
    /// or several operands that may lie inside each other).
    stat_dirs: bool,
    now: i64,
    failed: AtomicBool,
    root_dev: std::sync::atomic::AtomicU64,
}

impl Grouping {
    /// `ids`: each operand's (device, inode).
    pub fn new(settings: Settings, ids: &[Option<(u64, u64)>]) -> Result<Grouping, String> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        Ok(Grouping {
            excludes: Excludes::new(&settings.excludes)?,
            operands: Operands::new(ids, settings.count_links),
            stat_dirs: settings.one_file_system || (ids.len() > 1 && !settings.count_links),
            now,
            failed: AtomicBool::new(false),
            root_dev: Default::default(),
            settings,
        })
    }

    /// Whether an entry could not be read (it was reported).
    pub fn failed(&self) -> bool {
        self.failed.load(Relaxed)
    }

    fn error(&self, message: &str) {
        self.failed.store(true, Relaxed);
        report(message);
    }

    /// An operand that cannot be statted (`None`: a symlink to follow
    /// that leads nowhere, for which du gives no reason); the run fails.
    pub fn cannot_access(&self, path: &[u8], err: Option<&std::io::Error>) {
        match err {
            Some(e) => self.error(&format!("cannot access {}: {}", quote(path), error_text(e))),
            None => self.error(&format!("cannot access {}", quote(path))),
        }
    }

    /// The operands met inside an earlier one so far (by this process).
    pub fn seen(&self) -> Vec<u32> {
        self.operands.seen()
    }

    /// Operand `index` was met inside an earlier one (by another process).
    pub fn mark_seen(&self, index: usize) {
        self.operands.mark_seen(index);
    }

    /// Whether an operand is left out by `--exclude`.
    pub fn excluded(&self, path: &[u8]) -> bool {
        self.excludes.matches(path)
    }

    /// Start operand `index`: false when an earlier one covered it.
    pub fn begin_operand(&self, index: usize, id: Option<(u64, u64)>) -> bool {
        self.operands.begin(index, id)
    }

    /// Add one entry (its metadata `m`, its path) to `found`.
    fn add(&self, found: &mut Found, buf: &mut Vec<u8>, m: &Metadata, path_or_name: PathOrName<'_>) {
        let settings = &self.settings;
        let time = match settings.time.as_ref().map(|t| t.0) {
            None | Some(TimeKind::Modified) => m.mtime,
            Some(TimeKind::Accessed) => m.atime,
            Some(TimeKind::Changed) => m.ctime,
        };
        let facts = Facts {
            uid: m.uid,
            gid: m.gid,
            type_code: type_code(m.mode),
            time,
            name: path_or_name.name(),
        };
        pack(&settings.by, self.now, &facts, buf);
        let tally = Tally {
            disk: Usage::of(m, Measure::Disk, None).amount,
            apparent: Usage::of(m, Measure::Apparent, None).amount,
            count: 1,
        };
        if counted_once(settings, m.nlink) && !m.is_dir() {
            found.links.push(Link {
                dev: m.dev,
                ino: m.ino,
                path: path_or_name.path(),
                key: buf.clone(),
                tally,
            });
        } else {
            found.table.add(buf, tally);
        }
    }

    /// The parallel walk below the directory `path` (metadata `m`), with
    /// stats, `--exclude`, `-x`, `-L` and the operand rules (`--diff`'s
    /// live side walks the same way).
    pub fn walk(self: &Arc<Self>, path: &[u8], m: &Metadata) -> WalkBuilder {
        self.root_dev.store(m.dev, Relaxed);
        let settings = &self.settings;
        WalkBuilder::new(Path::new(OsStr::from_bytes(path)))
            .order(Order::Parallel)
            .threads(settings.threads)
            .io_depth(settings.io_depth)
            .metadata(true)
            .min_depth(1)
            .follow_links(settings.follow == Follow::All)
            .filter(ByFilter { grouping: self.clone() })
    }

    /// Whether the entry of a walk counts in this operand (one inside
    /// an earlier operand does not).
    pub fn counts(&self, m: &Metadata) -> bool {
        !self.stat_dirs || self.operands.counts(m.dev, m.ino)
    }

    /// Report an entry the walk could not stat; the run fails.
    pub fn cannot_stat(&self, entry: &fnd_walk::EntryRef<'_>, path: &mut Vec<u8>) {
        path.clear();
        entry.write_path(path);
        match entry.metadata() {
            Err(e) => self.error(&format!("cannot access {}: {}", quote(path), error_text(&e))),
            Ok(_) => self.error(&format!("cannot access {}", quote(path))),
        }
    }

    /// Report a directory the walk could not read; the run fails.
    pub fn cannot_read(&self, error: &Error) {
        if let fnd_walk::ErrorKind::Loop { .. } = error.kind() {
            return;
        }
        let path = error.path().as_os_str().as_bytes();
        self.error(&format!(
            "cannot read directory {}: {}",
            quote(path),
            error_text(&error.io_error())
        ));
    }

    /// An operand: itself, and below it if it is a directory, walked by `walker`.
    pub fn operand(self: &Arc<Self>, path: &[u8], m: &Metadata, walker: &impl Walker, include_self: bool) -> Found {
        let mut found = Found::default();
        let mut buf = Vec::new();
        if include_self {
            self.add(&mut found, &mut buf, m, PathOrName::Path(path));
        }
        if !m.is_dir() {
            return found;
        }
        let walk = self.walk(path, m);
        walker.visit(
            walk,
            || ByVisitor {
                grouping: self,
                found: Found::default(),
                buf: Vec::new(),
                path: Vec::new(),
            },
            |v| {
                found.table.merge(v.found.table);
                found.links.extend(v.found.links);
            },
        );
        found
    }
}

/// Of each file's links, the one with the smallest path counts (unless an
/// earlier operand counted the file): its tally joins `table`.
pub fn resolve_links(links: &Links, mut sightings: Vec<Link>, table: &mut Table) {
    sightings.sort_unstable_by(|a, b| (a.dev, a.ino, &a.path).cmp(&(b.dev, b.ino, &b.path)));
    let mut last = None;
    for link in sightings {
        if last == Some((link.dev, link.ino)) {
            continue;
        }
        last = Some((link.dev, link.ino));
        if links.first(link.dev, link.ino) {
            table.add(&link.key, link.tally);
        }
    }
}

/// A path's last name (`a/b/` names `b`).
fn last_component(path: &[u8]) -> &[u8] {
    let trimmed = path.strip_suffix(b"/").filter(|t| !t.is_empty()).unwrap_or(path);
    trimmed.rsplit(|&b| b == b'/').next().unwrap_or(trimmed)
}

enum PathOrName<'a> {
    Path(&'a [u8]),
    /// A walked entry: its name, and its path written on demand.
    Entry(&'a [u8], &'a dyn Fn() -> Vec<u8>),
}

impl PathOrName<'_> {
    fn name(&self) -> &[u8] {
        match self {
            PathOrName::Path(p) => last_component(p),
            PathOrName::Entry(name, _) => name,
        }
    }

    fn path(&self) -> Vec<u8> {
        match self {
            PathOrName::Path(p) => p.to_vec(),
            PathOrName::Entry(_, path) => path(),
        }
    }
}

/// `--exclude`, `-x` and the operand rules, on the reading thread. It
/// keeps no state per directory, so directories travel freely between
/// the ranks of an MPI job.
struct ByFilter {
    grouping: Arc<Grouping>,
}

impl EntryFilter for ByFilter {
    fn decide(&self, entry: &RawEntry<'_>) -> Decision {
        let g = &*self.grouping;
        if g.excludes.any() {
            let mut path = Vec::with_capacity(entry.parent_prefix.len() + entry.name.len());
            path.extend_from_slice(entry.parent_prefix);
            path.extend_from_slice(entry.name);
            if g.excludes.matches(&path) {
                return Decision::SKIP;
            }
        }
        if !entry.is_dir() || !g.stat_dirs {
            return Decision::KEEP;
        }
        let follow = g.settings.follow == Follow::All;
        match fnd_walk::meta::stat_at(entry.dir_fd, entry.name, follow) {
            Ok(m) if g.settings.one_file_system && m.dev != g.root_dev.load(Relaxed) => Decision::SKIP,
            Ok(m) if !g.operands.counts(m.dev, m.ino) => Decision::SKIP,
            // Unreadable: the walk's stat says why.
            _ => Decision::KEEP,
        }
    }
}

struct ByVisitor<'a> {
    grouping: &'a Grouping,
    found: Found,
    buf: Vec<u8>,
    path: Vec<u8>,
}

impl Visitor for ByVisitor<'_> {
    fn visit(&mut self, chunk: &mut Chunk) -> Flow {
        let g = self.grouping;
        for entry in chunk.iter() {
            let Some(m) = entry.cached_metadata() else {
                g.cannot_stat(&entry, &mut self.path);
                continue;
            };
            if !g.counts(m) {
                continue;
            }
            let path = || {
                let mut p = Vec::new();
                entry.write_path(&mut p);
                p
            };
            g.add(
                &mut self.found,
                &mut self.buf,
                m,
                PathOrName::Entry(entry.name_bytes(), &path),
            );
        }
        Flow::Continue
    }

    fn error(&mut self, error: Error) -> Flow {
        self.grouping.cannot_read(&error);
        Flow::Continue
    }
}

/// `fdu --by` in one process: the table of every operand, printed; the exit status.
pub fn run(settings: Settings) -> std::process::ExitCode {
    let (mut operands, mut failed) = read_operands(&settings);
    operands.iter_mut().for_each(trim_trailing_slashes);
    let metas = stat_operands(&operands, &settings);
    let ids = identities(&metas);
    let grouping = match Grouping::new(settings, &ids) {
        Ok(g) => Arc::new(g),
        Err(e) => {
            report(&e);
            return std::process::ExitCode::from(1);
        }
    };
    let links = Links::default();
    let mut table = Table::default();
    for (i, (op, meta)) in operands.iter().zip(&metas).enumerate() {
        let m = match meta {
            Ok(m) => m,
            Err(Some(e)) => {
                report(&format!("cannot access {}: {}", quote(op), error_text(e)));
                failed = true;
                continue;
            }
            Err(None) => {
                report(&format!("cannot access {}", quote(op)));
                failed = true;
                continue;
            }
        };
        if grouping.excluded(op) || !grouping.begin_operand(i, ids[i]) {
            continue;
        }
        let found = grouping.operand(op, m, &fnd_walk::Alone, true);
        table.merge(found.table);
        resolve_links(&links, found.links, &mut table);
    }
    let out = crate::output::Output::stdout();
    out.write(&crate::report::render(&table, &grouping.settings));
    out.finish();
    if failed || grouping.failed() || out.failed() {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    }
}

/// `fdu --by -f FILE`: the same table from an export in ncdu's format
/// that carries the fields the keys need (`ncdu -e -o` writes owners,
/// modes and mtimes; `fdu -o` and plain `ncdu -o` only mtimes).
pub fn run_export(settings: Settings, file: &[u8]) -> std::process::ExitCode {
    let fail = |message: &str| {
        report(message);
        std::process::ExitCode::from(1)
    };
    if matches!(
        settings.time.as_ref().map(|t| t.0),
        Some(TimeKind::Accessed | TimeKind::Changed)
    ) {
        return fail("--by age on an export reads mtimes: exports hold no atime or ctime");
    }
    let input = match crate::exports::Input::open(file) {
        Ok(input) => input,
        Err(e) => return fail(&e),
    };
    if input.as_slice().iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        return fail(&format!(
            "{}: a tree written by --json holds no owners, types or times; --by reads exports in ncdu's format (ncdu -e -o)",
            quote(file)
        ));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let mut sink = ExportGroups {
        settings: &settings,
        now,
        found: Found::default(),
        names: Vec::new(),
        buf: Vec::new(),
    };
    if let Err(e) = crate::exports::read(&input, settings.measure, &mut sink) {
        return fail(&format!("{}: {e}", quote(file)));
    }
    let Found { mut table, links } = sink.found;
    resolve_links(&Links::default(), links, &mut table);
    let out = crate::output::Output::stdout();
    out.write(&crate::report::render(&table, &settings));
    out.finish();
    if out.failed() {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    }
}

/// An export's entries into groups.
struct ExportGroups<'a> {
    settings: &'a Settings,
    now: i64,
    found: Found,
    /// The names of the open directories, for the paths of hard links.
    names: Vec<Vec<u8>>,
    buf: Vec<u8>,
}

impl crate::exports::Sink for ExportGroups<'_> {
    fn entry(&mut self, e: &crate::exports::Entry<'_>) -> Result<(), String> {
        let keys = &self.settings.by;
        if let Some((key, field)) =
            crate::report::missing_field(keys, e.uid.is_some(), e.gid.is_some(), e.mtime.is_some())
        {
            return Err(format!(
                "--by {key} needs each entry's {field}, which this export does not carry (ncdu -e -o writes it)"
            ));
        }
        self.names.truncate(e.depth);
        let type_code = if e.is_dir {
            type_code(libc::S_IFDIR)
        } else if let Some(mode) = e.mode {
            type_code(mode)
        } else if e.not_regular {
            crate::groups::TYPES.len() as u8 - 1
        } else {
            type_code(libc::S_IFREG)
        };
        let facts = Facts {
            uid: e.uid.unwrap_or(0),
            gid: e.gid.unwrap_or(0),
            type_code,
            time: e.mtime.unwrap_or(0),
            // The root is named by its path.
            name: if e.depth == 0 { last_component(&e.name) } else { &e.name },
        };
        pack(keys, self.now, &facts, &mut self.buf);
        let tally = Tally {
            disk: e.dsize,
            apparent: e.asize,
            count: 1,
        };
        if e.hard_link && !e.is_dir {
            // gdu marks only the links after the one it counted, and
            // writes no link count: those are left out.
            if e.nlink.is_some() {
                let mut path = self.names.join(&b'/');
                path.push(b'/');
                path.extend_from_slice(&e.name);
                self.found.links.push(Link {
                    dev: e.dev,
                    ino: e.ino.unwrap_or(0),
                    path,
                    key: self.buf.clone(),
                    tally,
                });
            }
        } else {
            self.found.table.add(&self.buf, tally);
        }
        if e.is_dir {
            self.names.push(e.name.to_vec());
        }
        Ok(())
    }

    fn close(&mut self, _: usize) -> Result<(), String> {
        Ok(())
    }
}
