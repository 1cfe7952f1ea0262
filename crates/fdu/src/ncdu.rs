//! ncdu's export format (`ncdu -o`, `gdu -o`: major version 1), read by
//! `fdu -f FILE` into du's lines, `--tree` and `--json`:
//!
//! ```json
//! [1,2,{"progname":"ncdu","progver":"1.18","timestamp":1700000000},
//! [{"name":"/abs/root","asize":4096,"dsize":4096,"dev":2049},
//!  {"name":"file","asize":5,"dsize":4096,"ino":11,"hlnkc":true,"nlink":2},
//!  [{"name":"subdir","asize":4096,"dsize":4096}, ...]]]
//! ```
//!
//! A directory is an array whose first element is its own entry; every
//! entry carries its own sizes (a directory's total is added up here).
//! Absent sizes are 0 (ncdu leaves zeros out; gdu leaves out directories'
//! own sizes), `dev` is inherited from the directory above, a file marked
//! `hlnkc` is counted once per device and inode, as du counts hard links,
//! and `excluded` entries are left out, as du leaves them out. Names are
//! bytes: ncdu writes the bytes of a name that is not UTF-8 as they are,
//! and they are kept (see [`crate::json_stream`]). Read at any depth:
//! the nesting lives in a stack of its own, not the call stack.

use std::collections::HashSet;

use crate::json_stream::{Error, Event, Reader};
use crate::run::Run;
use crate::settings::Measure;
use crate::tree::{Detail, TreeBuilder};
use crate::usage::{Stamp, Usage};

/// One entry of an export, in the export's order (pre-order).
struct Item {
    depth: u32,
    is_dir: bool,
    /// Its own amount in the run's measure, and its apparent size.
    own: u64,
    apparent: u64,
    mtime: i64,
    /// A directory ncdu could not read.
    read_error: bool,
    name: std::ops::Range<usize>,
}

/// An export, read: its entries in pre-order, their names end to end.
pub struct Export {
    items: Vec<Item>,
    names: Vec<u8>,
}

/// The members of one entry that matter here.
#[derive(Default)]
struct Info {
    name: Option<Vec<u8>>,
    asize: u64,
    dsize: u64,
    dev: Option<u64>,
    ino: Option<u64>,
    hard_link: bool,
    /// ncdu writes `nlink` beside `hlnkc`; gdu does not.
    nlink: Option<u64>,
    excluded: bool,
    mtime: i64,
    read_error: bool,
}

/// Read an export; `measure` picks what an entry counts for (`dsize`,
/// `asize`, or one per entry with `--inodes`).
pub fn read(text: &[u8], measure: Measure) -> Result<Export, String> {
    read_counting(text, measure, false)
}

/// [`read`], with every link of a file counted when `count_links` (`-l`),
/// as du counts them.
pub fn read_counting(text: &[u8], measure: Measure, count_links: bool) -> Result<Export, String> {
    read_export(&mut Reader::new(text), measure, count_links).map_err(|e| e.to_string())
}

fn read_export(r: &mut Reader<'_>, measure: Measure, count_links: bool) -> Result<Export, Error> {
    if r.next()? != Some(Event::BeginArray) {
        return Err(r.error("not an array (an ncdu export starts with [1,"));
    }
    match r.next()? {
        Some(Event::Number("1")) => {}
        _ => return Err(r.error("not major version 1 of ncdu's export format")),
    }
    // The minor version, then the metadata object.
    if !matches!(r.next()?, Some(Event::Number(_))) {
        return Err(r.error("no minor version"));
    }
    r.skip_value()?;
    if r.next()? != Some(Event::BeginArray) {
        return Err(r.error("the root is not a directory array"));
    }
    let mut export = Export {
        items: Vec::new(),
        names: Vec::new(),
    };
    let mut counted_links: HashSet<(u64, u64)> = HashSet::new();
    // The devices of the directories open around the reader, outermost
    // first; `None` for one left out (its entries are skipped).
    let mut open: Vec<Option<u64>> = Vec::new();
    // Just after a directory's `[`: its own entry comes next.
    let mut dir_entry_next = true;
    loop {
        let event = r.next()?.ok_or_else(|| r.error("unexpected end of input"))?;
        match event {
            Event::BeginObject => {
                let info = read_info(r)?;
                // Below the root (a path), a name is joined to its
                // parent's: one that leads elsewhere makes the whole export
                // untrusted.
                if !open.is_empty() && info.name.as_deref().is_some_and(|n| !fnd_walk::is_file_name(n)) {
                    return Err(r.error("a name that is not a file name"));
                }
                let parent_dev = open.last().copied().flatten();
                let skipped = open.last().is_some_and(Option::is_none);
                let dev = info.dev.or(parent_dev).unwrap_or(0);
                let keep = !skipped && !info.excluded;
                // A link of a file already counted: du neither counts nor
                // lists it. ncdu marks every link (`hlnkc` with `nlink`): the
                // first of an inode counts. gdu marks only the links after
                // the one it counted, and writes no `nlink`.
                let repeated_link = !dir_entry_next
                    && !count_links
                    && info.hard_link
                    && (info.nlink.is_none() || !counted_links.insert((dev, info.ino.unwrap_or(0))));
                if keep && !repeated_link {
                    let own = match measure {
                        Measure::Disk => info.dsize,
                        Measure::Apparent => info.asize,
                        Measure::Inodes => 1,
                    };
                    let name = info.name.ok_or_else(|| r.error("an entry has no name"))?;
                    let start = export.names.len();
                    export.names.extend_from_slice(&name);
                    export.items.push(Item {
                        depth: open.len() as u32,
                        is_dir: dir_entry_next,
                        own,
                        apparent: info.asize,
                        mtime: info.mtime,
                        read_error: info.read_error,
                        name: start..export.names.len(),
                    });
                }
                if dir_entry_next {
                    open.push(keep.then_some(dev));
                    dir_entry_next = false;
                }
            }
            Event::BeginArray if !dir_entry_next => dir_entry_next = true,
            Event::EndArray if !dir_entry_next => {
                open.pop();
                if open.is_empty() {
                    break;
                }
            }
            _ => return Err(r.error("an entry is neither an object nor a directory array")),
        }
    }
    if r.next()? != Some(Event::EndArray) {
        return Err(r.error("more than one root"));
    }
    if r.next()?.is_some() {
        return Err(r.error("trailing characters after the export"));
    }
    Ok(export)
}

fn read_info(r: &mut Reader<'_>) -> Result<Info, Error> {
    let mut info = Info::default();
    loop {
        let key = match r.next()? {
            Some(Event::Key(key)) => key,
            Some(Event::EndObject) => return Ok(info),
            _ => return Err(r.error("an entry is not an object of members")),
        };
        match &*key {
            b"name" => match r.next()? {
                Some(Event::Str(name)) => info.name = Some(name.into_owned()),
                _ => return Err(r.error("\"name\" is not a string")),
            },
            b"asize" => info.asize = number(r)?,
            b"dsize" => info.dsize = number(r)?,
            b"dev" => info.dev = Some(number(r)?),
            b"ino" => info.ino = Some(number(r)?),
            b"nlink" => info.nlink = Some(number(r)?),
            b"hlnkc" => info.hard_link = r.next()? == Some(Event::Bool(true)),
            b"read_error" => info.read_error = r.next()? == Some(Event::Bool(true)),
            b"excluded" => {
                r.skip_value()?;
                info.excluded = true;
            }
            b"mtime" => {
                info.mtime = match r.next()? {
                    Some(Event::Number(n)) => n.parse().map_err(|_| r.error("\"mtime\" is not a whole number"))?,
                    _ => return Err(r.error("\"mtime\" is not a number")),
                }
            }
            _ => r.skip_value()?,
        }
    }
}

fn number(r: &mut Reader<'_>) -> Result<u64, Error> {
    match r.next()? {
        Some(Event::Number(n)) => n.parse().map_err(|_| r.error("a size or id is not a whole number")),
        _ => Err(r.error("a size or id is not a number")),
    }
}

impl Export {
    /// Entries read (a repeated hard link and excluded entries are not).
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the export holds no entry (never true of one read).
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Print du's lines for the export as the run's settings ask (`-a`,
    /// `-d`, `-s`, `-S`, `-t`, `--time`...), in du's order (each directory
    /// after what it holds), and hand the root's total (and tree, for
    /// `--tree` and `--json`) to the run.
    pub fn replay(&self, run: &Run) {
        let settings = &run.settings;
        let items = &self.items;
        if items.is_empty() {
            return;
        }
        // Totals bottom-up: in pre-order, an entry's parent is the nearest
        // directory before it one level up.
        let mut total: Vec<u64> = items.iter().map(|i| i.own).collect();
        let mut local: Vec<u64> = total.clone();
        let mut newest: Vec<i64> = items.iter().map(|i| i.mtime).collect();
        let mut parents: Vec<usize> = Vec::new();
        let mut parent_of = vec![usize::MAX; items.len()];
        for (i, item) in items.iter().enumerate() {
            parents.truncate(item.depth as usize);
            parent_of[i] = parents.last().copied().unwrap_or(usize::MAX);
            if item.is_dir {
                parents.push(i);
            }
        }
        for i in (1..items.len()).rev() {
            let p = parent_of[i];
            if p == usize::MAX {
                continue;
            }
            total[p] += total[i];
            if !items[i].is_dir {
                local[p] += total[i];
            }
            newest[p] = newest[p].max(newest[i]);
        }
        let usage = |i: usize, amount: u64| Usage {
            amount,
            stamp: Stamp {
                secs: newest[i],
                nsec: 0,
            },
        };
        // Post-order with paths: directories wait on a stack until the
        // walk leaves them.
        let mut out = Vec::new();
        let mut path: Vec<u8> = Vec::new();
        let mut open: Vec<(usize, usize)> = Vec::new(); // (item, its parent's path length)
        let mut trees: Vec<TreeBuilder> = Vec::new();
        let keep_tree = settings.keeps_tree();
        let detail = |i: usize| {
            let item = &items[i];
            let mut flags = if item.is_dir { Detail::DIR } else { 0 };
            if item.read_error {
                flags |= Detail::READ_ERROR;
            }
            Detail::new(item.apparent, item.mtime, flags)
        };
        let print = |out: &mut Vec<u8>, i: usize, path: &[u8]| {
            let item = &items[i];
            let shown = item.depth as usize <= settings.max_depth && (item.is_dir || settings.all);
            if shown {
                let amount = if item.is_dir && settings.separate_dirs {
                    local[i]
                } else {
                    total[i]
                };
                run.line(out, usage(i, amount), path);
            }
        };
        let close =
            |out: &mut Vec<u8>, path: &mut Vec<u8>, open: &mut Vec<(usize, usize)>, trees: &mut Vec<TreeBuilder>| {
                let (i, parent_len) = open.pop().expect("an open directory");
                print(out, i, path);
                if keep_tree {
                    let kids = trees.pop().expect("a tree per open directory");
                    let name = &self.names[items[i].name.clone()];
                    match trees.last_mut() {
                        Some(parent) => parent.entry(name, total[i], kids, settings.browse.then(|| detail(i))),
                        None => run.add_operand(path, usage(i, total[i]), Some(kids), detail(i)),
                    }
                } else if open.is_empty() {
                    run.add_operand(path, usage(i, total[i]), None, Default::default());
                }
                path.truncate(parent_len);
            };
        // Written out as it grows: a chain's lines all come as it closes,
        // and were held whole (789 MB for an export of 0.7 MB).
        let spill = |out: &mut Vec<u8>| {
            if out.len() > 1 << 16 {
                run.out.write(out);
                out.clear();
            }
        };
        for (i, item) in items.iter().enumerate() {
            while open.len() > item.depth as usize {
                close(&mut out, &mut path, &mut open, &mut trees);
                spill(&mut out);
            }
            let name = &self.names[item.name.clone()];
            let parent_len = path.len();
            if !open.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(name);
            if item.is_dir {
                open.push((i, parent_len));
                if keep_tree {
                    trees.push(TreeBuilder::default());
                }
            } else {
                print(&mut out, i, &path);
                if let Some(parent) = trees.last_mut() {
                    parent.entry(
                        name,
                        total[i],
                        TreeBuilder::default(),
                        settings.browse.then(|| detail(i)),
                    );
                }
                path.truncate(parent_len);
            }
            spill(&mut out);
        }
        while !open.is_empty() {
            close(&mut out, &mut path, &mut open, &mut trees);
            spill(&mut out);
        }
        run.out.write(&out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NCDU: &[u8] = b"[1,2,{\"progname\":\"ncdu\",\"progver\":\"1.18\",\"timestamp\":1},\n\
[{\"name\":\"/r\",\"asize\":4096,\"dsize\":4096,\"dev\":7},\n\
{\"name\":\"fifo\",\"notreg\":true},\n\
{\"name\":\"f\",\"asize\":5,\"dsize\":4096,\"ino\":11,\"hlnkc\":true,\"nlink\":2},\n\
{\"name\":\"bad\xff\"},\n\
{\"name\":\"skip\",\"excluded\":\"pattern\"},\n\
[{\"name\":\"d\",\"asize\":4096,\"dsize\":4096},\n\
{\"name\":\"hl\",\"asize\":5,\"dsize\":4096,\"ino\":11,\"hlnkc\":true,\"nlink\":2},\n\
[{\"name\":\"e\",\"asize\":4096,\"dsize\":4096}]]]]";

    #[test]
    fn reads_ncdus_export_counting_hard_links_once() {
        let export = read(NCDU, Measure::Disk).unwrap();
        let names: Vec<&[u8]> = export.items.iter().map(|i| &export.names[i.name.clone()]).collect();
        // The second link of f and the excluded entry are not there.
        assert_eq!(names, [&b"/r"[..], b"fifo", b"f", b"bad\xff", b"d", b"e"]);
        let own: Vec<u64> = export.items.iter().map(|i| i.own).collect();
        assert_eq!(own, [4096, 0, 4096, 0, 4096, 4096]);
        let depths: Vec<u32> = export.items.iter().map(|i| i.depth).collect();
        assert_eq!(depths, [0, 1, 1, 1, 1, 2]);
        let inodes = read(NCDU, Measure::Inodes).unwrap();
        assert_eq!(inodes.items.iter().map(|i| i.own).sum::<u64>(), 6);
        // With -l every link counts.
        let every = read_counting(NCDU, Measure::Disk, true).unwrap();
        assert_eq!(every.items.iter().map(|i| i.own).sum::<u64>(), 5 * 4096);
    }

    #[test]
    fn refuses_what_is_not_an_export() {
        for bad in [
            &b""[..],
            b"{}",
            b"[2,0,{},[{\"name\":\"/\"}]]",
            b"[1,2,{},[{\"name\":\"/\"}",
            b"[1,2,{},[{\"name\":\"/\"}]]x",
            b"[1,2,{},[{\"name\":\"/\"},3]]",
            b"[1,2,{},[{\"asize\":1}]]",
            b"[1,2,{},[{\"name\":\"/\",\"asize\":-1}]]",
            b"[1,2,{},[{\"name\":\"/r\"},{\"name\":\"d/../../x\"}]]",
            b"[1,2,{},[{\"name\":\"/r\"},[{\"name\":\"..\"}]]]",
            b"[1,2,{},[{\"name\":\"/r\"},{\"name\":\"\"}]]",
        ] {
            assert!(read(bad, Measure::Disk).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn reads_any_depth() {
        let mut doc = b"[1,2,{},[{\"name\":\"/r\",\"dsize\":1}".to_vec();
        for _ in 0..100_000 {
            doc.extend_from_slice(b",[{\"name\":\"d\",\"dsize\":1}");
        }
        doc.extend(std::iter::repeat_n(b']', 100_001));
        doc.push(b']');
        let export = read(&doc, Measure::Disk).unwrap();
        assert_eq!(export.items.len(), 100_001);
        assert_eq!(export.items.last().unwrap().depth, 100_000);
    }
}
