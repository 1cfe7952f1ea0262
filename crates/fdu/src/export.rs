//! `fdu -o FILE`: a tree in ncdu's export format (major version 1, as
//! `ncdu -o` writes it; see [`crate::ncdu`] for the format and the reader),
//! for ncdu, gdu and `fdu -f` to read.
//!
//! Written while the scan runs, from the walk's ordered mode: every core
//! reads and stats, and one consumer writes each directory's entries in
//! du's order, depth first, as ncdu writes them (in the order read), as
//! soon as everything before them is out. No tree is held: the memory is the walk's window of
//! results read ahead. `-x` (a directory on another file system is
//! written, marked `otherfs`, and not entered) and `--exclude` are decided
//! once, on the reading threads. A directory that cannot be read is
//! written with `read_error`, and reported as du reports it. With `-e`,
//! each entry also has its `uid`, `gid` and `mode`, as ncdu's extended
//! mode writes them (`mtime` is written either way), for `--by -f`.

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use fnd_walk::{
    ChunkBuf, Decision, DirEvent, EntryFilter, Error, Flow, Metadata, Nest, RawEntry, TreeOrder, TreeVisitor,
    WalkBuilder,
};

use crate::exclude::Excludes;
use crate::json_stream::Writer;
use crate::messages::{error_text, quote, report};
use crate::settings::{Measure, Settings};
use crate::usage::Usage;

/// What ncdu exports of an entry's metadata (a fifth of `Metadata`).
#[derive(Clone, Copy)]
struct Meta {
    asize: u64,
    dsize: u64,
    dev: u64,
    ino: u64,
    nlink: u64,
    mtime: i64,
    uid: u32,
    gid: u32,
    mode: u32,
    is_dir: bool,
    /// Neither a regular file nor a directory (ncdu's `notreg`).
    not_regular: bool,
}

impl Meta {
    fn of(m: &Metadata) -> Meta {
        let ft = m.file_type();
        Meta {
            // du's own rules for what an entry counts for.
            asize: Usage::of(m, Measure::Apparent, None).amount,
            dsize: Usage::of(m, Measure::Disk, None).amount,
            dev: m.dev,
            ino: m.ino,
            nlink: m.nlink,
            mtime: m.mtime,
            uid: m.uid,
            gid: m.gid,
            mode: m.mode,
            is_dir: ft.is_dir(),
            not_regular: !ft.is_file() && !ft.is_dir(),
        }
    }
}

/// An entry about to be written, and what is known of it.
struct Item {
    name: Vec<u8>,
    meta: Option<Meta>,
    read_error: bool,
    other_fs: bool,
}

/// What the walk leaves out or does not enter: `--exclude`, and with `-x`
/// a directory on another file system (written, not entered).
struct Leave {
    excludes: Excludes,
    other_fs_dev: Option<u64>,
}

impl EntryFilter for Leave {
    fn decide(&self, entry: &RawEntry<'_>) -> Decision {
        if self.excludes.any() {
            let mut path = entry.parent_prefix.to_vec();
            path.extend_from_slice(entry.name);
            if self.excludes.matches(&path) {
                return Decision::SKIP;
            }
        }
        if let (Some(dev), true) = (self.other_fs_dev, entry.is_dir()) {
            let elsewhere = fnd_walk::meta::stat_at(entry.dir_fd, entry.name, false).is_ok_and(|m| m.dev != dev);
            if elsewhere {
                return Decision {
                    emit: true,
                    descend: false,
                };
            }
        }
        Decision::KEEP
    }
}

/// The consumer: ncdu's document, written as the results come.
struct Export<'o> {
    buf: Vec<u8>,
    fresh: bool,
    out: &'o mut (dyn Write + Send),
    /// A directory whose object waits for the first thing under it (or
    /// its end): an error reading it still marks it `read_error`.
    pending: Option<Item>,
    /// The device of each open directory, for ncdu's `dev` (written when
    /// it changes).
    devs: Vec<u64>,
    one_file_system: bool,
    /// `-e`: owners and modes too.
    extended: bool,
    root_dev: u64,
    complete: bool,
    failed: Option<std::io::Error>,
}

impl Export<'_> {
    fn writer(&mut self) -> Writer<'_> {
        Writer::resume(&mut self.buf, self.fresh)
    }

    /// Write the pending directory's opening: `[` and its object.
    fn open_pending(&mut self) {
        let Some(item) = self.pending.take() else { return };
        let parent_dev = self.devs.last().copied();
        let dev = item.meta.map_or(parent_dev.unwrap_or(0), |m| m.dev);
        let extended = self.extended;
        let mut w = self.writer();
        w.begin_array();
        entry(&mut w, &item, parent_dev, extended);
        self.fresh = w.fresh();
        self.devs.push(dev);
    }

    fn drain(&mut self, now: bool) -> Flow {
        if self.failed.is_none() && (now || self.buf.len() >= 64 << 10) {
            if let Err(e) = self.out.write_all(&self.buf).and_then(|()| self.out.flush()) {
                self.failed = Some(e);
            }
            self.buf.clear();
        }
        if self.failed.is_some() {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }
}

impl TreeVisitor for Export<'_> {
    /// The directory entered is the pending one (its entry came last, or
    /// it is the root): it opens with the first thing under it, so that
    /// an error reading it can still mark it.
    fn enter(&mut self, _: DirEvent<'_>) -> Flow {
        Flow::Continue
    }

    fn entries(&mut self, chunk: &ChunkBuf) -> Flow {
        self.open_pending();
        for e in chunk.iter() {
            let meta = match e.cached_metadata() {
                Some(m) => Some(Meta::of(m)),
                None => e.metadata().ok().as_ref().map(Meta::of),
            };
            // With -L a link to a directory is walked as one.
            let is_dir = e.file_type().is_dir() || e.target_type().is_dir();
            let other_fs = self.one_file_system && is_dir && meta.is_some_and(|m| m.dev != self.root_dev);
            let item = Item {
                name: e.name_bytes().to_vec(),
                meta,
                read_error: false,
                other_fs,
            };
            if is_dir && !other_fs {
                // Its subtree comes next (at its entry, the walk's order).
                self.open_pending();
                self.pending = Some(item);
                continue;
            }
            let parent_dev = self.devs.last().copied();
            let extended = self.extended;
            let mut w = self.writer();
            entry(&mut w, &item, parent_dev, extended);
            self.fresh = w.fresh();
        }
        self.drain(false)
    }

    fn leave(&mut self, _: DirEvent<'_>) -> Flow {
        self.open_pending();
        let mut w = self.writer();
        w.end_array();
        self.fresh = w.fresh();
        self.devs.pop();
        self.drain(false)
    }

    fn error(&mut self, e: Error) -> Flow {
        self.complete = false;
        report(&format!(
            "cannot read directory {}: {}",
            quote(e.path().as_os_str().as_bytes()),
            error_text(&e.io_error())
        ));
        if let Some(item) = &mut self.pending {
            item.read_error = true;
        }
        Flow::Continue
    }
}

/// Write the export of the directory `root` to `out`; false when a part
/// of the tree could not be read (it was reported).
pub fn write(settings: &Settings, root: &[u8], out: &mut (dyn Write + Send)) -> Result<bool, String> {
    let root_path = Path::new(OsStr::from_bytes(root));
    let root_meta = fnd_walk::meta::stat_path(root_path, settings.follow != crate::settings::Follow::Never)
        .map_err(|e| format!("cannot access {}: {}", quote(root), error_text(&e)))?;
    // ncdu names the root by its absolute path.
    let absolute = std::fs::canonicalize(root_path).map_err(|e| format!("{}: {}", quote(root), error_text(&e)))?;
    let excludes = Excludes::new(&settings.excludes)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut export = Export {
        buf: Vec::with_capacity(128 << 10),
        fresh: true,
        out,
        pending: None,
        devs: Vec::new(),
        one_file_system: settings.one_file_system,
        extended: settings.extended,
        root_dev: root_meta.dev,
        complete: true,
        failed: None,
    };
    let mut w = export.writer();
    w.begin_array();
    w.number(1);
    w.number(2);
    w.begin_object();
    w.key(b"progname");
    w.string(b"fdu");
    w.key(b"progver");
    w.string(env!("CARGO_PKG_VERSION").as_bytes());
    w.key(b"timestamp");
    w.number(now);
    w.end_object();
    export.fresh = w.fresh();
    let root_item = Item {
        name: absolute.as_os_str().as_bytes().to_vec(),
        meta: Some(Meta::of(&root_meta)),
        read_error: false,
        other_fs: false,
    };
    if root_meta.is_dir() {
        export.pending = Some(root_item);
        let walk = WalkBuilder::new(root_path)
            .threads(settings.threads)
            .io_depth(settings.io_depth)
            .metadata(true)
            .min_depth(1)
            .follow_links(settings.follow == crate::settings::Follow::All)
            .filter(Leave {
                excludes,
                other_fs_dev: settings.one_file_system.then_some(root_meta.dev),
            });
        // du's order (the same export from run to run, and `fdu -f` counts
        // a hard link where du does): a huge directory streams a batch at
        // a time, where sorted by name it was held whole (a million files:
        // 425 MB, past 384 MiB of address space; `ncdu -o` streams it).
        let order = crate::fts::du_order(root);
        walk.visit_tree(TreeOrder::new(order, Nest::AtEntry), &mut export);
    } else {
        let mut w = export.writer();
        entry(&mut w, &root_item, None, settings.extended);
        export.fresh = w.fresh();
    }
    let mut w = export.writer();
    w.end_array();
    export.buf.push(b'\n');
    export.drain(true);
    match export.failed {
        Some(e) => Err(format!("write error: {}", error_text(&e))),
        None => Ok(export.complete),
    }
}

/// One entry's object: what ncdu writes, zeros and `false`s left out
/// (`extended`: and what `ncdu -e` adds).
fn entry(w: &mut Writer<'_>, item: &Item, parent_dev: Option<u64>, extended: bool) {
    w.begin_object();
    w.key(b"name");
    w.string(&item.name);
    if let Some(m) = item.meta {
        for (key, value) in [(&b"asize"[..], m.asize), (b"dsize", m.dsize)] {
            if value != 0 {
                w.key(key);
                w.number(value);
            }
        }
        if parent_dev != Some(m.dev) {
            w.key(b"dev");
            w.number(m.dev);
        }
        if !m.is_dir && m.nlink > 1 {
            w.key(b"ino");
            w.number(m.ino);
            w.key(b"hlnkc");
            w.boolean(true);
            w.key(b"nlink");
            w.number(m.nlink);
        }
        if m.not_regular {
            w.key(b"notreg");
            w.boolean(true);
        }
        if extended {
            for (key, value) in [(&b"uid"[..], m.uid), (b"gid", m.gid), (b"mode", m.mode)] {
                w.key(key);
                w.number(value.into());
            }
        }
        if let Ok(secs) = u64::try_from(m.mtime) {
            w.key(b"mtime");
            w.number(secs);
        }
    }
    if item.read_error {
        w.key(b"read_error");
        w.boolean(true);
    }
    if item.other_fs {
        w.key(b"excluded");
        w.string(b"otherfs");
    }
    w.end_object();
}
