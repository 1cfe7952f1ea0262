//! Saved scans read as a stream, entry by entry, for `--by -f` and
//! `--diff`: ncdu's export format (`ncdu -o`, `ncdu -e -o`, `gdu -o`,
//! `fdu -o`; see [`crate::ncdu`]) and fdu's `--json` trees. Nothing of the
//! tree is kept here but the path of open directories: a caller that adds
//! up keeps what it adds up.
//!
//! A file is mapped rather than read, and the pages behind the reader are
//! given back as it goes, so reading an export of a million entries (60 MB)
//! holds a few megabytes of it at a time. Standard input is read whole.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;

use crate::json_stream::{Error, Event, Reader};
use crate::messages::{error_text, quote};
use crate::settings::Measure;

/// An input's bytes: mapped from a file, or read from stdin.
pub struct Input {
    map: Option<(*mut libc::c_void, usize)>,
    data: Vec<u8>,
    /// Bytes below this offset were given back (mapped files only).
    released: std::cell::Cell<usize>,
}

impl Drop for Input {
    fn drop(&mut self) {
        if let Some((ptr, len)) = self.map {
            // SAFETY: the mapping made in `open`, unmapped once.
            unsafe { libc::munmap(ptr, len) };
        }
    }
}

/// Pages given back at a time, at least.
const RELEASE_STEP: usize = 8 << 20;

impl Input {
    /// `file`'s bytes (`-`: stdin), or the message for it.
    pub fn open(file: &[u8]) -> Result<Input, String> {
        let cannot = |e: &std::io::Error| format!("cannot read {}: {}", quote(file), error_text(e));
        if file == b"-" {
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut data).map_err(|e| cannot(&e))?;
            return Ok(Input::bytes(data));
        }
        let f = std::fs::File::open(OsStr::from_bytes(file)).map_err(|e| cannot(&e))?;
        let meta = f.metadata().map_err(|e| cannot(&e))?;
        if meta.is_dir() {
            return Err(format!("cannot read {}: Is a directory", quote(file)));
        }
        let len = meta.len() as usize;
        if !meta.is_file() || len == 0 {
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut &f, &mut data).map_err(|e| cannot(&e))?;
            return Ok(Input::bytes(data));
        }
        // SAFETY: a private, read-only mapping of a whole file; its bytes
        // are only read, through `bytes`.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                f.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(cannot(&std::io::Error::last_os_error()));
        }
        // SAFETY: advice on the mapping just made.
        unsafe { libc::madvise(ptr, len, libc::MADV_SEQUENTIAL) };
        Ok(Input {
            map: Some((ptr, len)),
            data: Vec::new(),
            released: Default::default(),
        })
    }

    /// Bytes already in memory.
    pub fn bytes(data: Vec<u8>) -> Input {
        Input {
            map: None,
            data,
            released: Default::default(),
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        match self.map {
            // SAFETY: the mapping lives as long as `self`.
            Some((ptr, len)) => unsafe { std::slice::from_raw_parts(ptr as *const u8, len) },
            None => &self.data,
        }
    }

    /// The reader is past `offset`: the pages before it leave memory (a
    /// private mapping of a file reads them again if they are touched).
    fn release_before(&self, offset: usize) {
        let Some((ptr, len)) = self.map else { return };
        let page = 4096;
        let end = (offset.min(len) / page) * page;
        let start = self.released.get();
        if end >= start + RELEASE_STEP {
            // SAFETY: a page-aligned range inside the mapping; the pages
            // are file-backed and clean, so their bytes do not change.
            unsafe { libc::madvise((ptr as *mut u8).add(start).cast(), end - start, libc::MADV_DONTNEED) };
            self.released.set(end);
        }
    }
}

/// One entry of a saved scan, in the file's order (pre-order: a directory
/// before what it holds).
#[derive(Debug, Default)]
pub struct Entry<'a> {
    /// 0 for the root.
    pub depth: usize,
    pub name: Cow<'a, [u8]>,
    pub is_dir: bool,
    /// What it counts for in the run's measure: its own (ncdu), or its
    /// whole subtree's (`--json`, see [`Format::totals`]).
    pub amount: u64,
    pub asize: u64,
    pub dsize: u64,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub mode: Option<u32>,
    pub mtime: Option<i64>,
    pub dev: u64,
    pub ino: Option<u64>,
    pub nlink: Option<u64>,
    /// ncdu's `hlnkc`: one of several links.
    pub hard_link: bool,
    /// Neither a regular file nor a directory (ncdu's `notreg`).
    pub not_regular: bool,
}

/// Which kind of saved scan a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Ncdu,
    FduJson,
}

impl Format {
    /// Whether a directory's amount is its subtree's total (`--json`)
    /// rather than its own.
    pub fn totals(self) -> bool {
        self == Format::FduJson
    }
}

/// What a reader hands each entry and each directory's end to.
pub trait Sink {
    fn entry(&mut self, entry: &Entry<'_>) -> Result<(), String>;
    /// The directory opened last at `depth` is complete.
    fn close(&mut self, depth: usize) -> Result<(), String>;
}

/// Read `input` (of whatever format it is) into `sink`; `measure` picks
/// ncdu's `dsize`, `asize` or one per entry. The error is a sentence.
pub fn read(input: &Input, measure: Measure, sink: &mut dyn Sink) -> Result<Format, String> {
    // Read again from the start, its pages are given back again.
    input.released.set(0);
    let text = input.as_slice();
    let first = text.iter().find(|b| !b.is_ascii_whitespace());
    let mut r = Reader::new(text);
    let format = match first {
        Some(b'{') => Format::FduJson,
        _ => Format::Ncdu,
    };
    let done = match format {
        Format::Ncdu => read_ncdu(&mut r, input, measure, sink),
        Format::FduJson => read_json(&mut r, input, measure, sink),
    };
    match done {
        Ok(()) => Ok(format),
        Err(Failure::Json(e)) => Err(match format {
            Format::Ncdu => format!("not an export in ncdu's format: {e}"),
            Format::FduJson => format!("not a tree written by --json: {e}"),
        }),
        Err(Failure::Sink(e)) => Err(e),
    }
}

enum Failure {
    Json(Error),
    Sink(String),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Json(e)
    }
}

fn sink_err(e: String) -> Failure {
    Failure::Sink(e)
}

fn read_ncdu(r: &mut Reader<'_>, input: &Input, measure: Measure, sink: &mut dyn Sink) -> Result<(), Failure> {
    if r.next()? != Some(Event::BeginArray) {
        return Err(r.error("not an array (an ncdu export starts with [1,").into());
    }
    if r.next()? != Some(Event::Number("1")) {
        return Err(r.error("not major version 1 of ncdu's export format").into());
    }
    if !matches!(r.next()?, Some(Event::Number(_))) {
        return Err(r.error("no minor version").into());
    }
    r.skip_value()?;
    if r.next()? != Some(Event::BeginArray) {
        return Err(r.error("the root is not a directory array").into());
    }
    // Devices of the open directories, outermost first.
    let mut open: Vec<u64> = Vec::new();
    let mut dir_entry_next = true;
    loop {
        let event = r.next()?.ok_or_else(|| r.error("unexpected end of input"))?;
        match event {
            Event::BeginObject => {
                let mut e = read_ncdu_entry(r)?;
                input.release_before(r.offset());
                e.dev = e.dev_given.unwrap_or(open.last().copied().unwrap_or(0));
                let is_dir = dir_entry_next;
                if e.excluded {
                    if is_dir {
                        // Its entries, if any, are left out with it.
                        skip_to_end_of_array(r)?;
                        if open.is_empty() {
                            break;
                        }
                    }
                    dir_entry_next = false;
                    continue;
                }
                let name = e.name.take().ok_or_else(|| r.error("an entry has no name"))?;
                let entry = Entry {
                    depth: open.len(),
                    name: name.into(),
                    is_dir,
                    amount: match measure {
                        Measure::Disk => e.dsize,
                        Measure::Apparent => e.asize,
                        Measure::Inodes => 1,
                    },
                    asize: e.asize,
                    dsize: e.dsize,
                    uid: e.uid,
                    gid: e.gid,
                    mode: e.mode,
                    mtime: e.mtime,
                    dev: e.dev,
                    ino: e.ino,
                    nlink: e.nlink,
                    hard_link: e.hard_link,
                    not_regular: e.not_regular,
                };
                sink.entry(&entry).map_err(sink_err)?;
                if is_dir {
                    open.push(e.dev);
                    dir_entry_next = false;
                }
            }
            Event::BeginArray if !dir_entry_next => dir_entry_next = true,
            Event::EndArray if !dir_entry_next => {
                open.pop();
                sink.close(open.len()).map_err(sink_err)?;
                if open.is_empty() {
                    break;
                }
            }
            _ => return Err(r.error("an entry is neither an object nor a directory array").into()),
        }
    }
    if r.next()? != Some(Event::EndArray) {
        return Err(r.error("more than one root").into());
    }
    if r.next()?.is_some() {
        return Err(r.error("trailing characters after the export").into());
    }
    Ok(())
}

/// Past the `]` that closes the array the reader is in.
fn skip_to_end_of_array(r: &mut Reader<'_>) -> Result<(), Error> {
    let depth = r.depth();
    loop {
        match r.next()? {
            None => return Err(r.error("unexpected end of input")),
            Some(Event::EndArray) if r.depth() < depth => return Ok(()),
            Some(_) => {}
        }
    }
}

#[derive(Default)]
struct NcduEntry {
    name: Option<Vec<u8>>,
    asize: u64,
    dsize: u64,
    dev_given: Option<u64>,
    dev: u64,
    ino: Option<u64>,
    nlink: Option<u64>,
    uid: Option<u32>,
    gid: Option<u32>,
    mode: Option<u32>,
    mtime: Option<i64>,
    hard_link: bool,
    not_regular: bool,
    excluded: bool,
}

fn read_ncdu_entry(r: &mut Reader<'_>) -> Result<NcduEntry, Error> {
    let mut e = NcduEntry::default();
    loop {
        let key = match r.next()? {
            Some(Event::Key(key)) => key,
            Some(Event::EndObject) => return Ok(e),
            _ => return Err(r.error("an entry is not an object of members")),
        };
        match &*key {
            b"name" => match r.next()? {
                Some(Event::Str(name)) => e.name = Some(name.into_owned()),
                _ => return Err(r.error("\"name\" is not a string")),
            },
            b"asize" => e.asize = number(r)?,
            b"dsize" => e.dsize = number(r)?,
            b"dev" => e.dev_given = Some(number(r)?),
            b"ino" => e.ino = Some(number(r)?),
            b"nlink" => e.nlink = Some(number(r)?),
            b"uid" => e.uid = Some(u32::try_from(number(r)?).map_err(|_| r.error("\"uid\" is out of range"))?),
            b"gid" => e.gid = Some(u32::try_from(number(r)?).map_err(|_| r.error("\"gid\" is out of range"))?),
            b"mode" => e.mode = Some(u32::try_from(number(r)?).map_err(|_| r.error("\"mode\" is out of range"))?),
            b"mtime" => {
                e.mtime = Some(match r.next()? {
                    Some(Event::Number(n)) => n.parse().map_err(|_| r.error("\"mtime\" is not a whole number"))?,
                    _ => return Err(r.error("\"mtime\" is not a number")),
                })
            }
            b"hlnkc" => e.hard_link = r.next()? == Some(Event::Bool(true)),
            b"notreg" => e.not_regular = r.next()? == Some(Event::Bool(true)),
            b"excluded" => {
                r.skip_value()?;
                e.excluded = true;
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

/// fdu's `--json`: `{"fdu":1,"measure":M,"roots":[ENTRY]}`, an entry
/// `{"name":N,"size":S,"children":[ENTRY...]}` (`name_bytes` for a name
/// that is not UTF-8), as [`crate::json`] writes it: one root, `size`
/// before `children`. An entry with `children` is a directory.
fn read_json(r: &mut Reader<'_>, input: &Input, measure: Measure, sink: &mut dyn Sink) -> Result<(), Failure> {
    if r.next()? != Some(Event::BeginObject) {
        return Err(r.error("not an object").into());
    }
    let mut roots = 0;
    let mut saw_fdu = false;
    loop {
        let key = match r.next()? {
            Some(Event::Key(key)) => key,
            Some(Event::EndObject) => break,
            _ => return Err(r.error("expected a member").into()),
        };
        match &*key {
            b"fdu" => {
                if r.next()? != Some(Event::Number("1")) {
                    return Err(r.error("not version 1 of fdu's --json").into());
                }
                saw_fdu = true;
            }
            b"measure" => match r.next()? {
                Some(Event::Str(m)) if *m == *measure.name().as_bytes() => {}
                Some(Event::Str(m)) => {
                    return Err(sink_err(format!(
                    "a tree of {} sizes, and this run measures {} (--json writes what it is asked for: -A, --inodes)",
                    String::from_utf8_lossy(&m),
                    measure.name()
                )))
                }
                _ => return Err(r.error("\"measure\" is not a string").into()),
            },
            b"roots" => {
                if r.next()? != Some(Event::BeginArray) {
                    return Err(r.error("\"roots\" is not an array").into());
                }
                loop {
                    match r.next()? {
                        Some(Event::BeginObject) => {
                            roots += 1;
                            if roots > 1 {
                                return Err(sink_err("the tree holds several roots: compare one at a time".into()));
                            }
                            read_json_tree(r, input, sink)?;
                        }
                        Some(Event::EndArray) => break,
                        _ => return Err(r.error("a root is not an object").into()),
                    }
                }
            }
            _ => r.skip_value()?,
        }
    }
    if !saw_fdu {
        return Err(r.error("no \"fdu\":1 member").into());
    }
    if roots == 0 {
        return Err(r.error("no root").into());
    }
    if r.next()?.is_some() {
        return Err(r.error("trailing characters").into());
    }
    Ok(())
}

/// An entry of a `--json` tree being read.
#[derive(Default)]
struct Open {
    name: Option<Vec<u8>>,
    size: Option<u64>,
    /// Handed on as a directory (its `children` began).
    is_dir: bool,
}

/// One root's entries; the reader is just inside the root's `{`. The
/// grammar is the reader's to check: only members and array elements
/// reach this loop.
fn read_json_tree(r: &mut Reader<'_>, input: &Input, sink: &mut dyn Sink) -> Result<(), Failure> {
    let mut open: Vec<Open> = vec![Open::default()];
    let hand_on = |top: &mut Open, depth: usize, is_dir: bool, sink: &mut dyn Sink, r: &Reader<'_>| {
        let name = top.name.take().ok_or_else(|| r.error("an entry has no name"))?;
        let size = top
            .size
            .ok_or_else(|| r.error("an entry has no size before its children"))?;
        top.is_dir = is_dir;
        let entry = Entry {
            depth,
            name: name.into(),
            is_dir,
            amount: size,
            ..Entry::default()
        };
        sink.entry(&entry).map_err(sink_err)
    };
    loop {
        let event = r.next()?.ok_or_else(|| r.error("unexpected end of input"))?;
        let depth = open.len().saturating_sub(1);
        match event {
            Event::Key(key) => {
                let top = open.last_mut().ok_or_else(|| r.error("a member outside an entry"))?;
                match &*key {
                    b"name" => match r.next()? {
                        Some(Event::Str(n)) => top.name = Some(n.into_owned()),
                        _ => return Err(r.error("\"name\" is not a string").into()),
                    },
                    b"name_bytes" => {
                        if r.next()? != Some(Event::BeginArray) {
                            return Err(r.error("\"name_bytes\" is not an array").into());
                        }
                        let mut name = Vec::new();
                        loop {
                            match r.next()? {
                                Some(Event::Number(n)) => name.push(
                                    n.parse()
                                        .map_err(|_| r.error("a byte of \"name_bytes\" is not 0 to 255"))?,
                                ),
                                Some(Event::EndArray) => break,
                                _ => return Err(r.error("\"name_bytes\" holds something else than numbers").into()),
                            }
                        }
                        top.name = Some(name);
                    }
                    b"size" => top.size = Some(number(r)?),
                    b"children" => {
                        if top.is_dir {
                            return Err(r.error("\"children\" twice").into());
                        }
                        hand_on(top, depth, true, sink, r)?;
                        if r.next()? != Some(Event::BeginArray) {
                            return Err(r.error("\"children\" is not an array").into());
                        }
                    }
                    _ => r.skip_value()?,
                }
            }
            // A child, inside a directory's `children`.
            Event::BeginObject if open.last().is_some_and(|t| t.is_dir) => open.push(Open::default()),
            // The end of a directory's children: its `}` comes next.
            Event::EndArray => {}
            Event::EndObject => {
                let mut top = open.pop().ok_or_else(|| r.error("an entry ends twice"))?;
                if top.is_dir {
                    sink.close(depth).map_err(sink_err)?;
                } else {
                    hand_on(&mut top, depth, false, sink, r)?;
                }
                input.release_before(r.offset());
                if open.is_empty() {
                    return Ok(());
                }
            }
            _ => return Err(r.error("a child is not an object").into()),
        }
    }
}
