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

use crate::json_stream::{Error, Event, Reader, Writer};
use crate::settings::Measure;
use crate::tree::{Root, Step, TreeBuilder};

pub fn write(roots: &[Root], measure: Measure, out: &mut Vec<u8>) {
    let mut w = Writer::new(out);
    w.begin_object();
    w.key(b"fdu");
    w.number(1);
    w.key(b"measure");
    w.string(measure.name().as_bytes());
    w.key(b"roots");
    w.begin_array();
    for root in roots {
        for step in root.walk() {
            match step {
                Step::Enter { name, node, .. } => {
                    w.begin_object();
                    if std::str::from_utf8(name).is_ok() {
                        w.key(b"name");
                        w.string(name);
                    } else {
                        w.key(b"name_bytes");
                        w.begin_array();
                        name.iter().for_each(|&b| w.number(b.into()));
                        w.end_array();
                    }
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
