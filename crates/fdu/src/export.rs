//! `fdu -o FILE`: a tree in ncdu's export format (major version 1, as
//! `ncdu -o` writes it; see [`crate::ncdu`] for the format and the reader),
//! for ncdu, gdu and `fdu -f` to read.
//!
//! The walk is the engine's parallel one, stat included; entries arrive in
//! any order, so the tree is gathered (about 120 bytes per entry plus its
//! name, as ncdu itself holds) and written depth first once the walk is over, as ncdu writes it.
//! A directory that cannot be read is written with `read_error`, and
//! reported as du reports it.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use fnd_walk::{Metadata, Order, WalkBuilder};

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
            is_dir: ft.is_dir(),
            not_regular: !ft.is_file() && !ft.is_dir(),
        }
    }
}

/// One entry, as ncdu exports it.
struct Item {
    name: std::ops::Range<usize>,
    meta: Option<Meta>,
    read_error: bool,
    other_fs: bool,
    /// A directory's entries (directories only).
    children: Vec<u32>,
    is_dir: bool,
}

/// The tree as the walk found it.
struct Gathered {
    items: Vec<Item>,
    names: Vec<u8>,
    dirs: HashMap<Box<[u8]>, u32>,
}

impl Gathered {
    /// The directory at `path`, made (with its parents) if the walk has not
    /// named it yet: a directory's entries can come before its own.
    fn dir(&mut self, path: &[u8]) -> u32 {
        if let Some(&i) = self.dirs.get(path) {
            return i;
        }
        let (parent, name) = match path.iter().rposition(|&b| b == b'/') {
            Some(slash) => (self.dir(&path[..slash]), &path[slash + 1..]),
            None => (0, path),
        };
        let i = self.push(parent, name, true);
        self.dirs.insert(path.into(), i);
        i
    }

    fn push(&mut self, parent: u32, name: &[u8], is_dir: bool) -> u32 {
        let start = self.names.len();
        self.names.extend_from_slice(name);
        let i = self.items.len() as u32;
        self.items.push(Item {
            name: start..self.names.len(),
            meta: None,
            read_error: false,
            other_fs: false,
            children: Vec::new(),
            is_dir,
        });
        if i != parent {
            self.items[parent as usize].children.push(i);
        }
        i
    }
}

/// Write the export of the directory `root` to `out`; false when a part
/// of the tree could not be read (it was reported).
pub fn write(settings: &Settings, root: &[u8], out: &mut dyn Write) -> Result<bool, String> {
    let root_path = Path::new(OsStr::from_bytes(root));
    let root_meta = fnd_walk::meta::stat_path(root_path, settings.follow != crate::settings::Follow::Never)
        .map_err(|e| format!("cannot access {}: {}", quote(root), error_text(&e)))?;
    // ncdu names the root by its absolute path.
    let absolute = std::fs::canonicalize(root_path).map_err(|e| format!("{}: {}", quote(root), error_text(&e)))?;
    let excludes = Excludes::new(&settings.excludes)?;
    let mut tree = Gathered {
        items: Vec::new(),
        names: Vec::new(),
        dirs: HashMap::new(),
    };
    tree.push(0, absolute.as_os_str().as_bytes(), root_meta.is_dir());
    tree.items[0].meta = Some(Meta::of(&root_meta));
    let mut complete = true;
    if root_meta.is_dir() {
        tree.dirs.insert(root.into(), 0);
        let mut walk = WalkBuilder::new(root_path)
            .order(Order::Parallel)
            .threads(settings.threads)
            .io_depth(settings.io_depth)
            .metadata(true)
            .min_depth(1)
            .follow_links(settings.follow == crate::settings::Follow::All);
        // Without patterns, no path is built per entry to match against none.
        if excludes.any() {
            let skip = std::sync::Arc::new(move |prefix: &[u8], name: &[u8]| {
                let mut path = prefix.to_vec();
                path.extend_from_slice(name);
                excludes.matches(&path)
            });
            let (prune, keep) = (skip.clone(), skip);
            walk = walk
                .prune(move |e| prune(e.parent_prefix, e.name))
                .keep(move |e| !keep(e.parent_prefix, e.name));
        }
        for entry in walk {
            match entry {
                Ok(entry) => {
                    let path = entry.path_bytes();
                    let slash = path.iter().rposition(|&b| b == b'/').unwrap_or(0);
                    let parent = tree.dir(&path[..slash]);
                    let is_dir = entry.file_type().is_dir();
                    let i = if is_dir {
                        tree.dir(path)
                    } else {
                        tree.push(parent, entry.name_bytes(), false)
                    };
                    let meta = match entry.cached_metadata() {
                        Some(m) => Some(Meta::of(m)),
                        None => entry.metadata().ok().as_ref().map(Meta::of),
                    };
                    let item = &mut tree.items[i as usize];
                    item.meta = meta;
                    item.other_fs = settings.one_file_system && is_dir && meta.is_some_and(|m| m.dev != root_meta.dev);
                }
                Err(e) => {
                    complete = false;
                    let path = e.path().as_os_str().as_bytes();
                    report(&format!(
                        "cannot read directory {}: {}",
                        quote(path),
                        error_text(&e.io_error())
                    ));
                    if let Some(&i) = tree.dirs.get(path) {
                        tree.items[i as usize].read_error = true;
                    }
                }
            }
        }
    }
    tree.sort_by_name();
    write_tree(&tree, out).map_err(|e| format!("write error: {}", error_text(&e)))?;
    Ok(complete)
}

impl Gathered {
    /// Each directory's entries by name: the parallel walk gathers them in
    /// whatever order its threads finish, and an export of the same tree
    /// should read the same every time (and diff cleanly).
    fn sort_by_name(&mut self) {
        let names = &self.names;
        let ranges: Vec<std::ops::Range<usize>> = self.items.iter().map(|i| i.name.clone()).collect();
        for item in &mut self.items {
            item.children
                .sort_unstable_by(|&a, &b| names[ranges[a as usize].clone()].cmp(&names[ranges[b as usize].clone()]));
        }
    }
}

fn write_tree(tree: &Gathered, out: &mut dyn Write) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(1 << 20);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut w = Writer::new(&mut buf);
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
    // Depth first, with a stack of (directory, next child) of its own.
    let mut stack: Vec<(u32, usize)> = Vec::new();
    let mut dev_stack: Vec<u64> = Vec::new();
    let open = |w: &mut Writer<'_>, i: u32, stack: &mut Vec<(u32, usize)>, devs: &mut Vec<u64>| {
        let item = &tree.items[i as usize];
        let descend = item.is_dir && !item.other_fs;
        if descend {
            w.begin_array();
        }
        let parent_dev = devs.last().copied();
        entry(w, tree, item, parent_dev);
        if descend {
            stack.push((i, 0));
            devs.push(item.meta.map_or(parent_dev.unwrap_or(0), |m| m.dev));
        }
    };
    open(&mut w, 0, &mut stack, &mut dev_stack);
    while let Some((dir, next)) = stack.last_mut() {
        let children = &tree.items[*dir as usize].children;
        if *next == children.len() {
            stack.pop();
            dev_stack.pop();
            w.end_array();
            continue;
        }
        let child = children[*next];
        *next += 1;
        open(&mut w, child, &mut stack, &mut dev_stack);
        if w.len() > 1 << 20 {
            w.drain_to(out)?;
        }
    }
    w.end_array();
    w.drain_to(out)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// One entry's object: what ncdu writes, zeros and `false`s left out.
fn entry(w: &mut Writer<'_>, tree: &Gathered, item: &Item, parent_dev: Option<u64>) {
    w.begin_object();
    w.key(b"name");
    w.string(&tree.names[item.name.clone()]);
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
