//! `--json`: the scanned trees as nested JSON, and reading it back
//! (`--from-json`) for the tree view, at any depth (see [`crate::json_stream`]).
//!
//! ```json
//! {"fdu":1,"measure":"disk","roots":[{"name":"src","size":4096,"children":[{"name":"a","size":8}]}]}
//! ```
//! `size` is in bytes (or inodes, with `--inodes`); directories that hold
//! anything have `children`. A name that is not UTF-8 is written as
//! `name_bytes`, an array of byte values, so paths survive the round trip
//! exactly. Members the reader does not know are skipped.
//!
//! One process writes it while it scans ([`Stream`]), from the ordered
//! walk: each directory's entries in the order du visits them (its
//! directory read, each subtree at its entry), which is the order of
//! `children`. Only the directories open at the moment are held, not the
//! tree (see [`Stream`] for the sizes, which come before the entries).
//! `--tree` beside `--json`, and the ranks of an MPI job, keep the tree
//! and write it whole ([`write()`]).

use std::io;
use std::os::unix::fs::FileExt;

use crate::json_stream::{Error, Event, Reader, Writer};
use crate::settings::Measure;
use crate::tree::{Root, Step, TreeBuilder};

/// `{"fdu":1,"measure":M,"roots":[`: what comes before the first root.
fn begin_document(w: &mut Writer<'_>, measure: Measure) {
    w.begin_object();
    w.key(b"fdu");
    w.number(1);
    w.key(b"measure");
    w.string(measure.name().as_bytes());
    w.key(b"roots");
    w.begin_array();
}

/// An entry's name: `name`, or `name_bytes` when it is not UTF-8.
fn write_name(w: &mut Writer<'_>, name: &[u8]) {
    if std::str::from_utf8(name).is_ok() {
        w.key(b"name");
        w.string(name);
    } else {
        w.key(b"name_bytes");
        w.begin_array();
        name.iter().for_each(|&b| w.number(b.into()));
        w.end_array();
    }
}

pub fn write(roots: &[Root], measure: Measure, out: &mut Vec<u8>) {
    let mut w = Writer::new(out);
    begin_document(&mut w, measure);
    for root in roots {
        for step in root.walk() {
            match step {
                Step::Enter { name, node, .. } => {
                    w.begin_object();
                    write_name(&mut w, name);
                    w.key(b"size");
                    w.number(node.amount);
                    if node.has_children() {
                        w.key(b"children");
                        w.begin_array();
                    }
                }
                Step::Leave { node, .. } => {
                    if node.has_children() {
                        w.end_array();
                    }
                    w.end_object();
                }
            }
        }
    }
    w.end_array();
    w.end_object();
    out.push(b'\n');
}

/// Digits of the largest size (`u64::MAX`): the room a directory's size
/// is given before its entries.
const ROOM: usize = 20;

/// A root's document is moved out of memory into a temporary file past
/// this many bytes.
const SPILL_AT: usize = 1 << 20;

/// `--json` written as the scan goes, directory by directory in the order
/// du visits them, in the format [`write()`] writes.
///
/// A directory's `size` comes before its `children` (readers that stream,
/// `--diff`'s and `--by`'s, need it there), and is known only once its
/// whole subtree is read. So a directory's object is written with room
/// for its size (NUL bytes, see [`Writer::room`]), the room is filled in
/// place when the directory is left, and the NULs left over are taken out
/// as the root's document goes to the output, once the root is complete.
/// The document waits in memory up to `SPILL_AT` (1 MiB), beyond that in
/// an unnamed temporary file (`$TMPDIR`), so the memory held is a few
/// megabytes and the directories open at the moment (a name each while
/// it has no entry yet, 8 bytes after), whatever the size of the tree.
/// When no temporary file can be written, it waits in memory.
pub struct Stream {
    measure: Measure,
    /// Roots written to the output so far.
    roots: usize,
    /// The current root's document, past what was spilled.
    doc: Vec<u8>,
    /// The writer's state between calls (see [`Writer::resume`]).
    fresh: bool,
    spill: Option<std::fs::File>,
    /// Bytes of the document in `spill` (`doc` follows them).
    spilled: u64,
    /// A temporary file could not be made or written: stay in memory.
    no_spill: bool,
    /// A size could not be written into the temporary file: the root's
    /// document is wrong, and the run fails.
    lost: bool,
    /// [`SPILL_AT`], smaller in tests.
    spill_at: usize,
    /// Where the size of each open directory goes, in the document.
    rooms: Vec<u64>,
    /// The directory entered last, while nothing under it is written:
    /// one with no entries is written as a file is, without `children`.
    pending: Option<Vec<u8>>,
}

impl Stream {
    pub fn new(measure: Measure) -> Stream {
        Stream {
            measure,
            roots: 0,
            doc: Vec::new(),
            fresh: true,
            spill: None,
            spilled: 0,
            no_spill: false,
            lost: false,
            spill_at: SPILL_AT,
            rooms: Vec::new(),
            pending: None,
        }
    }

    /// A directory is entered (a root first): its entries follow, then
    /// [`Stream::leave`] with its size.
    pub fn enter(&mut self, name: &[u8]) {
        self.open_pending();
        self.pending = Some(name.to_vec());
    }

    /// A file, or anything without entries, in the directory entered last.
    pub fn leaf(&mut self, name: &[u8], size: u64) {
        self.open_pending();
        let mut w = Writer::resume(&mut self.doc, self.fresh);
        w.begin_object();
        write_name(&mut w, name);
        w.key(b"size");
        w.number(size);
        w.end_object();
        self.fresh = w.fresh();
        self.maybe_spill();
    }

    /// The directory entered last is complete, and adds up to `size`.
    pub fn leave(&mut self, size: u64) {
        if let Some(name) = self.pending.take() {
            return self.leaf(&name, size);
        }
        let Some(at) = self.rooms.pop() else { return };
        let digits = size.to_string();
        match at.checked_sub(self.spilled) {
            Some(i) => {
                let i = i as usize;
                self.doc[i..i + digits.len()].copy_from_slice(digits.as_bytes());
            }
            None => {
                let spill = self.spill.as_ref().expect("spilled bytes are in the file");
                if spill.write_all_at(digits.as_bytes(), at).is_err() {
                    // Said when the root goes out.
                    self.lost = true;
                    self.no_spill = true;
                }
            }
        }
        let mut w = Writer::resume(&mut self.doc, self.fresh);
        w.end_array();
        w.end_object();
        self.fresh = w.fresh();
        self.maybe_spill();
    }

    /// The directory entered last has an entry: its object opens, with
    /// room for its size.
    fn open_pending(&mut self) {
        let Some(name) = self.pending.take() else { return };
        let mut w = Writer::resume(&mut self.doc, self.fresh);
        w.begin_object();
        write_name(&mut w, &name);
        w.key(b"size");
        let at = w.room(ROOM);
        w.key(b"children");
        w.begin_array();
        self.fresh = w.fresh();
        self.rooms.push(self.spilled + at as u64);
    }

    fn maybe_spill(&mut self) {
        if self.doc.len() < self.spill_at || self.no_spill {
            return;
        }
        if self.spill.is_none() {
            match tempfile::tempfile() {
                Ok(f) => self.spill = Some(f),
                Err(_) => {
                    self.no_spill = true;
                    return;
                }
            }
        }
        let spill = self.spill.as_ref().expect("made above");
        if spill.write_all_at(&self.doc, self.spilled).is_err() {
            self.no_spill = true;
            return;
        }
        self.spilled += self.doc.len() as u64;
        self.doc.clear();
    }

    /// The root is complete: its document goes to `out`, its rooms' NULs
    /// taken out. An error is one of the temporary file.
    pub fn end_root(&mut self, out: &mut dyn FnMut(&[u8]) -> bool) -> io::Result<()> {
        let mut head = Vec::new();
        if self.roots == 0 {
            begin_document(&mut Writer::new(&mut head), self.measure);
        } else {
            head.push(b',');
        }
        self.roots += 1;
        out(&head);
        let mut result = Ok(());
        if let (Some(spill), true) = (&self.spill, self.spilled > 0) {
            let mut chunk = vec![0; 1 << 20];
            let mut at = 0;
            while at < self.spilled {
                let len = chunk.len().min((self.spilled - at) as usize);
                if let Err(e) = spill.read_exact_at(&mut chunk[..len], at) {
                    result = Err(e);
                    break;
                }
                let mut text = std::mem::take(&mut chunk);
                text.truncate(len);
                text.retain(|&b| b != 0);
                let written = out(&text);
                text.resize(1 << 20, 0);
                chunk = text;
                if !written {
                    break;
                }
                at += len as u64;
            }
            if let Err(e) = spill.set_len(0) {
                // Not reused: the next root starts a file of its own.
                self.spill = None;
                result = result.and(Err(e));
            }
        }
        self.doc.retain(|&b| b != 0);
        out(&self.doc);
        self.doc.clear();
        self.doc.shrink_to(SPILL_AT);
        self.spilled = 0;
        self.fresh = true;
        self.rooms.clear();
        self.pending = None;
        if result.is_ok() && std::mem::take(&mut self.lost) {
            result = Err(io::Error::other("a size could not be written into it"));
        }
        result
    }

    /// The document's end, after the last root.
    pub fn finish(&mut self, out: &mut dyn FnMut(&[u8]) -> bool) {
        let mut tail = Vec::new();
        if self.roots == 0 {
            begin_document(&mut Writer::new(&mut tail), self.measure);
        }
        tail.extend_from_slice(b"]}\n");
        out(&tail);
    }
}

/// An entry read so far: it is complete at its closing brace.
#[derive(Default)]
struct Partial {
    name: Option<Vec<u8>>,
    name_bytes: Option<Vec<u8>>,
    size: Option<u64>,
    kids: TreeBuilder,
}

/// Parse what [`write()`] wrote.
pub fn read(text: &[u8]) -> Result<Vec<Root>, String> {
    let mut r = Reader::new(text);
    read_document(&mut r).map_err(|e| e.to_string())
}

fn read_document(r: &mut Reader<'_>) -> Result<Vec<Root>, Error> {
    if r.next()? != Some(Event::BeginObject) {
        return Err(r.error("not an object"));
    }
    let mut roots = None;
    loop {
        match r.next()? {
            Some(Event::Key(k)) if *k == *b"roots" => roots = Some(read_roots(r)?),
            Some(Event::Key(_)) => r.skip_value()?,
            _ => break,
        }
    }
    if r.next()?.is_some() {
        return Err(r.error("trailing characters after the document"));
    }
    roots.ok_or_else(|| r.error("no \"roots\" array"))
}

/// The `roots` array: entries within entries, each kept on a stack of its
/// own until its closing brace.
fn read_roots(r: &mut Reader<'_>) -> Result<Vec<Root>, Error> {
    if r.next()? != Some(Event::BeginArray) {
        return Err(r.error("\"roots\" is not an array"));
    }
    let mut roots = Vec::new();
    // The entries open around the reader, outermost first.
    let mut open: Vec<Partial> = Vec::new();
    // Inside a list of entries (`roots`, `children`), or inside an entry.
    let mut in_list = true;
    loop {
        let event = r.next()?.ok_or_else(|| r.error("unexpected end of input"))?;
        if in_list {
            match event {
                Event::BeginObject => {
                    open.push(Partial::default());
                    in_list = false;
                }
                Event::EndArray if open.is_empty() => return Ok(roots),
                Event::EndArray => in_list = false,
                _ => return Err(r.error("an entry is not an object")),
            }
            continue;
        }
        let entry = open.last_mut().expect("inside an entry");
        match event {
            Event::Key(key) => match &*key {
                b"name" => entry.name = Some(string(r, "\"name\" is not a string")?),
                b"name_bytes" => entry.name_bytes = Some(bytes(r)?),
                b"size" => entry.size = Some(whole_number(r, "\"size\" is not a whole number")?),
                b"children" => {
                    if r.next()? != Some(Event::BeginArray) {
                        return Err(r.error("\"children\" is not an array"));
                    }
                    in_list = true;
                }
                _ => r.skip_value()?,
            },
            Event::EndObject => {
                let done = open.pop().expect("inside an entry");
                let name = done
                    .name
                    .or(done.name_bytes)
                    .ok_or_else(|| r.error("an entry has no name"))?;
                let size = done.size.ok_or_else(|| r.error("an entry has no size"))?;
                match open.last_mut() {
                    // An entry's name is joined to its parent's path (to
                    // delete it, in the browser): one that leads elsewhere
                    // makes the whole file untrusted.
                    Some(_) if !fnd_walk::is_file_name(&name) => return Err(r.error("a name that is not a file name")),
                    Some(parent) => parent.kids.dir(&name, size, done.kids),
                    None => roots.push(Root::new(&name, done.kids.into_node(size))),
                }
                in_list = true;
            }
            _ => return Err(r.error("expected a key")),
        }
    }
}

fn string(r: &mut Reader<'_>, what: &'static str) -> Result<Vec<u8>, Error> {
    match r.next()? {
        Some(Event::Str(s)) => Ok(s.into_owned()),
        _ => Err(r.error(what)),
    }
}

fn whole_number(r: &mut Reader<'_>, what: &'static str) -> Result<u64, Error> {
    match r.next()? {
        Some(Event::Number(n)) => n.parse().map_err(|_| r.error(what)),
        _ => Err(r.error(what)),
    }
}

/// `name_bytes`: an array of byte values.
fn bytes(r: &mut Reader<'_>) -> Result<Vec<u8>, Error> {
    const BAD: &str = "\"name_bytes\" is not an array of bytes";
    if r.next()? != Some(Event::BeginArray) {
        return Err(r.error(BAD));
    }
    let mut name = Vec::new();
    loop {
        match r.next()? {
            Some(Event::Number(n)) => name.push(n.parse().map_err(|_| r.error(BAD))?),
            Some(Event::EndArray) => return Ok(name),
            _ => return Err(r.error(BAD)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(roots: &[Root]) -> Vec<u8> {
        let mut out = Vec::new();
        write(roots, Measure::Disk, &mut out);
        out
    }

    #[test]
    fn round_trips_including_non_utf8_names() {
        let mut e = TreeBuilder::default();
        e.leaf(b"f", 8);
        let mut d = TreeBuilder::default();
        d.leaf(b"\xffbad", 4);
        d.leaf(b"quote\"and\\slash\n", 1);
        d.dir(b"e", 8, e);
        let tree = Root::new(b"d", d.into_node(13));
        let out = written(std::slice::from_ref(&tree));
        assert_eq!(read(&out).unwrap(), vec![tree]);
    }

    #[test]
    fn writes_the_format_as_documented() {
        let mut src = TreeBuilder::default();
        src.leaf(b"a", 8);
        let roots = [Root::new(b"src", src.into_node(4096)), Root::leaf(b"\xff", 1)];
        assert_eq!(
            String::from_utf8(written(&roots)).unwrap(),
            "{\"fdu\":1,\"measure\":\"disk\",\"roots\":[\
             {\"name\":\"src\",\"size\":4096,\"children\":[{\"name\":\"a\",\"size\":8}]},\
             {\"name_bytes\":[255],\"size\":1}]}\n"
        );
    }

    /// Two roots, given to [`Stream`] in du's order.
    fn streamed(spill_at: usize) -> Vec<u8> {
        let mut s = Stream::new(Measure::Disk);
        s.spill_at = spill_at;
        let mut out = Vec::new();
        let mut sink = |b: &[u8]| {
            out.extend_from_slice(b);
            true
        };
        s.enter(b"src");
        s.leaf(b"a", 8);
        s.enter(b"empty");
        s.leave(4096);
        s.enter(b"\xffd");
        s.leaf(b"quote\"and\\slash\n", 1);
        s.enter(b"e");
        s.leaf(b"f", 12_345_678_901_234);
        s.leave(12_345_678_905_330);
        s.leave(12_345_678_909_427);
        s.leaf(b"z", u64::MAX - 1);
        s.leave(u64::MAX);
        s.end_root(&mut sink).unwrap();
        s.enter(b"file");
        s.leave(3);
        s.end_root(&mut sink).unwrap();
        s.finish(&mut sink);
        out
    }

    #[test]
    fn the_stream_writes_what_the_whole_tree_writes() {
        let mut e = TreeBuilder::default();
        e.leaf(b"f", 12_345_678_901_234);
        let mut d = TreeBuilder::default();
        d.leaf(b"quote\"and\\slash\n", 1);
        d.dir(b"e", 12_345_678_905_330, e);
        let mut src = TreeBuilder::default();
        src.leaf(b"a", 8);
        src.dir(b"empty", 4096, TreeBuilder::default());
        src.dir(b"\xffd", 12_345_678_909_427, d);
        src.leaf(b"z", u64::MAX - 1);
        let roots = [Root::new(b"src", src.into_node(u64::MAX)), Root::leaf(b"file", 3)];
        let whole = written(&roots);
        assert_eq!(
            String::from_utf8_lossy(&streamed(SPILL_AT)),
            String::from_utf8_lossy(&whole)
        );
        // Spilled to a file every few entries, sizes filled in there.
        for spill_at in [1, 16, 100] {
            assert_eq!(streamed(spill_at), whole, "spilled past {spill_at} bytes");
        }
    }

    #[test]
    fn a_stream_of_no_roots_is_an_empty_document() {
        let mut out = Vec::new();
        Stream::new(Measure::Inodes).finish(&mut |b: &[u8]| {
            out.extend_from_slice(b);
            true
        });
        assert_eq!(out, written_as(&[], Measure::Inodes));
    }

    fn written_as(roots: &[Root], measure: Measure) -> Vec<u8> {
        let mut out = Vec::new();
        write(roots, measure, &mut out);
        out
    }

    #[test]
    fn reads_members_in_any_order_and_skips_unknown_ones() {
        let doc = br#"{"roots":[{"children":[{"size":1,"x":{"y":[1]},"name":"f"}],"size":3,"name":"r"}],"fdu":1}"#;
        let mut kids = TreeBuilder::default();
        kids.leaf(b"f", 1);
        assert_eq!(read(doc).unwrap(), vec![Root::new(b"r", kids.into_node(3))]);
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        for (doc, why) in [
            (&b"[]"[..], "not an object"),
            (b"{}", "no \"roots\""),
            (b"{\"roots\":{}}", "not an array"),
            (b"{\"roots\":[[]]}", "not an object"),
            (b"{\"roots\":[{\"size\":1}]}", "no name"),
            (b"{\"roots\":[{\"name\":\"a\"}]}", "no size"),
            (b"{\"roots\":[{\"name\":\"a\",\"size\":-1}]}", "whole number"),
            (b"{\"roots\":[{\"name\":\"a\",\"size\":1.5}]}", "whole number"),
            (b"{\"roots\":[{\"name\":1,\"size\":1}]}", "not a string"),
            (b"{\"roots\":[{\"name_bytes\":[256],\"size\":1}]}", "array of bytes"),
            (
                b"{\"roots\":[{\"name\":\"a\",\"size\":1,\"children\":3}]}",
                "not an array",
            ),
            (b"{\"roots\":[]} x", "trailing"),
            (
                b"{\"roots\":[{\"name\":\"a\",\"size\":1,\"children\":[{\"name\":\"../x\",\"size\":1}]}]}",
                "not a file name",
            ),
            (
                b"{\"roots\":[{\"name\":\"a\",\"size\":1,\"children\":[{\"name_bytes\":[46,46],\"size\":1}]}]}",
                "not a file name",
            ),
            (
                b"{\"roots\":[{\"name\":\"a\",\"size\":1,\"children\":[{\"name\":\"b\"",
                "end of input",
            ),
        ] {
            let err = read(doc).unwrap_err();
            assert!(err.contains(why), "{}: {err}", String::from_utf8_lossy(doc));
        }
    }

    /// A document `depth` levels deep, as a person might write it by hand.
    fn nested(depth: usize) -> Vec<u8> {
        let mut doc = b"{\"fdu\":1,\"roots\":[".to_vec();
        for level in 0..depth {
            doc.extend_from_slice(
                format!("{{\"name\":\"d{level}\",\"size\":{},\"children\":[", depth - level).as_bytes(),
            );
        }
        for _ in 0..depth {
            doc.extend_from_slice(b"]}");
        }
        doc.extend_from_slice(b"]}");
        doc
    }

    #[test]
    fn deep_documents_are_read_written_and_dropped_on_a_small_stack() {
        let worker = std::thread::Builder::new().stack_size(64 * 1024);
        worker
            .spawn(|| {
                let roots = read(&nested(3000)).unwrap();
                assert_eq!(roots[0].walk().count(), 2 * 3000);
                let chain = crate::tree::chain(100_000);
                let again = read(&written(std::slice::from_ref(&chain))).unwrap();
                assert!(again == [chain]);
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
