//! JSON as a stream of events, read ([`Reader`]) and written ([`Writer`])
//! at any depth: the nesting is kept in a stack of one byte per level, never
//! in the call stack, so a document 100 000 levels deep is read on a
//! 64 KiB thread. Trees written by `--json` are as deep as the file system
//! (thousands of levels, past `PATH_MAX`); ncdu's export nests one array per
//! directory. Each format builds its own tree from the events, with its own
//! stack ([`crate::json`]).
//!
//! One file past 600 lines: the reader and the writer share one grammar
//! and its escapes (525 lines), and their tests, which write what they read
//! and read what they write, sit beside them.
//!
//! Why not serde_json: its reader stops at 128 levels, and lifting that
//! limit (`unbounded_depth`) leaves a recursion of several frames per level,
//! which serde_stacker moves to heap-allocated stack segments; building,
//! dropping or printing a `serde_json::Value` recurses again. Measured on a
//! `--json` document 100 000 levels deep (5.9 MB; a file and a directory
//! per level, release builds, busy 2-core machine): serde_json with
//! serde_stacker into a `Value` took 1.07 s and 266 MB more memory; this
//! reader, building fdu's tree, 0.24 s and 28 MB. On a flat document of a
//! million entries (47 MB), 2.27 s and 750 MB against 0.59 s and 45 MB.
//! ncdu also writes names that are not UTF-8 as they are, which a strict
//! reader refuses. This reader takes strings as bytes, checks the rest of
//! JSON's grammar, and costs one byte per open level.
//!
//! (Over 600 lines with its tests, and one thing: the reader and the writer
//! of one grammar, tested through each other.)
//!
//! ```
//! use fdu::json_stream::{Event, Reader, Writer};
//!
//! let mut out = Vec::new();
//! let mut w = Writer::new(&mut out);
//! w.begin_object();
//! w.key(b"a");
//! w.begin_array();
//! w.number(1);
//! w.string(b"two");
//! w.end_array();
//! w.end_object();
//! assert_eq!(out, br#"{"a":[1,"two"]}"#);
//!
//! let mut r = Reader::new(&out);
//! assert_eq!(r.next().unwrap(), Some(Event::BeginObject));
//! assert_eq!(r.next().unwrap(), Some(Event::Key(b"a".as_slice().into())));
//! r.skip_value().unwrap();
//! assert_eq!(r.next().unwrap(), Some(Event::EndObject));
//! assert_eq!(r.next().unwrap(), None);
//! ```

use std::borrow::Cow;
use std::fmt;
use std::io::Write as _;

/// One piece of a JSON document, in document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event<'a> {
    BeginObject,
    EndObject,
    BeginArray,
    EndArray,
    /// A member's name; its value comes next.
    Key(Cow<'a, [u8]>),
    /// A string, unescaped; bytes that are not UTF-8 are kept as they are.
    Str(Cow<'a, [u8]>),
    /// A number as written (JSON's grammar checked, not its range).
    Number(&'a str),
    Bool(bool),
    Null,
}

/// Where and why a document is not JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Byte offset of the problem.
    pub offset: usize,
    pub what: &'static str,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.what, self.offset)
    }
}

impl std::error::Error for Error {}

/// What comes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A value (the document, an array element after `,`, a member's value).
    Value,
    /// An array's first element, or its end.
    FirstElement,
    /// An object's first key, or its end.
    FirstKey,
    /// A key, after `,`.
    Key,
    /// `,` or the end of the enclosing container, or the end of the input.
    AfterValue,
    /// Nothing: the document is complete.
    Done,
}

/// A pull reader over a whole document in memory.
pub struct Reader<'a> {
    input: &'a [u8],
    pos: usize,
    /// Open containers, innermost last: true for an object.
    open: Vec<bool>,
    expect: Expect,
}

impl<'a> Reader<'a> {
    pub fn new(input: &'a [u8]) -> Reader<'a> {
        Reader {
            input,
            pos: 0,
            open: Vec::new(),
            expect: Expect::Value,
        }
    }

    /// Containers open around the reader's position.
    pub fn depth(&self) -> usize {
        self.open.len()
    }

    /// Byte offset of the reader in the input.
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// An error at the reader's position.
    pub fn error(&self, what: &'static str) -> Error {
        Error { offset: self.pos, what }
    }

    /// The next event; `None` once the document is complete (and nothing
    /// but whitespace follows it).
    #[allow(clippy::should_implement_trait)] // events borrow the input: not an Iterator
    pub fn next(&mut self) -> Result<Option<Event<'a>>, Error> {
        loop {
            self.skip_whitespace();
            let Some(&byte) = self.input.get(self.pos) else {
                return match self.expect {
                    Expect::Done | Expect::AfterValue if self.open.is_empty() => {
                        self.expect = Expect::Done;
                        Ok(None)
                    }
                    _ => Err(self.error("unexpected end of input")),
                };
            };
            match self.expect {
                Expect::Done => return Err(self.error("trailing characters after the document")),
                Expect::AfterValue => match (self.open.last(), byte) {
                    (None, _) => return Err(self.error("trailing characters after the document")),
                    (Some(&object), b',') => {
                        self.pos += 1;
                        self.expect = if object { Expect::Key } else { Expect::Value };
                    }
                    (Some(true), b'}') => return Ok(Some(self.close(Event::EndObject))),
                    (Some(false), b']') => return Ok(Some(self.close(Event::EndArray))),
                    (Some(true), _) => return Err(self.error("expected ',' or '}'")),
                    (Some(false), _) => return Err(self.error("expected ',' or ']'")),
                },
                Expect::FirstElement if byte == b']' => return Ok(Some(self.close(Event::EndArray))),
                Expect::FirstKey if byte == b'}' => return Ok(Some(self.close(Event::EndObject))),
                Expect::FirstKey | Expect::Key => {
                    if byte != b'"' {
                        return Err(self.error("expected a key in quotes"));
                    }
                    let key = self.string()?;
                    self.skip_whitespace();
                    if self.input.get(self.pos) != Some(&b':') {
                        return Err(self.error("expected ':'"));
                    }
                    self.pos += 1;
                    self.expect = Expect::Value;
                    return Ok(Some(Event::Key(key)));
                }
                Expect::Value | Expect::FirstElement => return self.value(byte).map(Some),
            }
        }
    }

    /// Skip the next value whole, however deep (after a key, or where an
    /// array element may come).
    pub fn skip_value(&mut self) -> Result<(), Error> {
        let depth = self.open.len();
        loop {
            match self.next()? {
                None => return Err(self.error("unexpected end of input")),
                Some(Event::Key(_)) => {}
                Some(Event::EndObject | Event::EndArray) if self.open.len() < depth => {
                    return Err(self.error("expected a value"));
                }
                Some(_) if self.open.len() == depth => return Ok(()),
                Some(_) => {}
            }
        }
    }

    fn close(&mut self, event: Event<'a>) -> Event<'a> {
        self.pos += 1;
        self.open.pop();
        self.expect = Expect::AfterValue;
        event
    }

    fn value(&mut self, byte: u8) -> Result<Event<'a>, Error> {
        let event = match byte {
            b'{' | b'[' => {
                self.pos += 1;
                let object = byte == b'{';
                self.open.push(object);
                self.expect = if object { Expect::FirstKey } else { Expect::FirstElement };
                return Ok(if object { Event::BeginObject } else { Event::BeginArray });
            }
            b'"' => Event::Str(self.string()?),
            b't' => self.literal(b"true", Event::Bool(true))?,
            b'f' => self.literal(b"false", Event::Bool(false))?,
            b'n' => self.literal(b"null", Event::Null)?,
            b'-' | b'0'..=b'9' => Event::Number(self.number()?),
            b']' | b'}' | b',' => return Err(self.error("expected a value")),
            _ => return Err(self.error("not a JSON value")),
        };
        self.expect = Expect::AfterValue;
        Ok(event)
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.input.get(self.pos) {
            self.pos += 1;
        }
    }

    fn literal(&mut self, word: &'static [u8], event: Event<'a>) -> Result<Event<'a>, Error> {
        if !self.input[self.pos..].starts_with(word) {
            return Err(self.error("not a JSON value"));
        }
        self.pos += word.len();
        Ok(event)
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    fn number(&mut self) -> Result<&'a str, Error> {
        let start = self.pos;
        let input = self.input;
        let digits = |pos: &mut usize| {
            let from = *pos;
            while input.get(*pos).is_some_and(u8::is_ascii_digit) {
                *pos += 1;
            }
            *pos - from
        };
        let mut pos = self.pos;
        if input.get(pos) == Some(&b'-') {
            pos += 1;
        }
        match input.get(pos) {
            Some(b'0') => pos += 1,
            Some(b'1'..=b'9') => {
                digits(&mut pos);
            }
            _ => {
                return Err(Error {
                    offset: pos,
                    what: "bad number",
                })
            }
        }
        if input.get(pos) == Some(&b'.') {
            pos += 1;
            if digits(&mut pos) == 0 {
                return Err(Error {
                    offset: pos,
                    what: "bad number",
                });
            }
        }
        if let Some(b'e' | b'E') = input.get(pos) {
            pos += 1;
            if let Some(b'+' | b'-') = input.get(pos) {
                pos += 1;
            }
            if digits(&mut pos) == 0 {
                return Err(Error {
                    offset: pos,
                    what: "bad number",
                });
            }
        }
        self.pos = pos;
        Ok(std::str::from_utf8(&input[start..pos]).expect("a number is ASCII"))
    }

    /// A string from its opening quote: borrowed when it has no escapes.
    fn string(&mut self) -> Result<Cow<'a, [u8]>, Error> {
        let input = self.input;
        self.pos += 1;
        let start = self.pos;
        let special = |b: &u8| matches!(b, b'"' | b'\\') || *b < 0x20;
        let Some(plain) = input[start..].iter().position(special) else {
            self.pos = input.len();
            return Err(self.error("unterminated string"));
        };
        self.pos += plain;
        if input[self.pos] == b'"' {
            self.pos += 1;
            return Ok(Cow::Borrowed(&input[start..self.pos - 1]));
        }
        let mut owned = input[start..self.pos].to_vec();
        loop {
            let Some(&b) = input.get(self.pos) else {
                return Err(self.error("unterminated string"));
            };
            match b {
                b'"' => {
                    self.pos += 1;
                    return Ok(Cow::Owned(owned));
                }
                b'\\' => self.escape(&mut owned)?,
                0..=0x1f => return Err(self.error("control character in a string")),
                _ => {
                    let run = input[self.pos..]
                        .iter()
                        .position(special)
                        .unwrap_or(input.len() - self.pos);
                    owned.extend_from_slice(&input[self.pos..self.pos + run]);
                    self.pos += run;
                }
            }
        }
    }

    /// One escape, from its backslash, appended as UTF-8.
    fn escape(&mut self, out: &mut Vec<u8>) -> Result<(), Error> {
        let Some(&kind) = self.input.get(self.pos + 1) else {
            return Err(self.error("unterminated string"));
        };
        let byte = match kind {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let c = self.unicode_escape()?;
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                return Ok(());
            }
            _ => return Err(self.error("bad escape")),
        };
        self.pos += 2;
        out.push(byte);
        Ok(())
    }

    /// `\uXXXX`, or a surrogate pair `\uD8XX\uDCXX`.
    fn unicode_escape(&mut self) -> Result<char, Error> {
        let first = self.hex4(self.pos + 2)?;
        self.pos += 6;
        let code = match first {
            0xD800..=0xDBFF => {
                if self.input.get(self.pos..self.pos + 2) != Some(b"\\u") {
                    return Err(self.error("lone surrogate in \\u escape"));
                }
                let second = self.hex4(self.pos + 2)?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(self.error("lone surrogate in \\u escape"));
                }
                self.pos += 6;
                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.error("lone surrogate in \\u escape")),
            c => c,
        };
        char::from_u32(code).ok_or_else(|| self.error("bad \\u escape"))
    }

    fn hex4(&self, at: usize) -> Result<u32, Error> {
        let digits = self.input.get(at..at + 4).ok_or(Error {
            offset: at,
            what: "bad \\u escape",
        })?;
        digits.iter().try_fold(0u32, |n, &d| {
            let v = (d as char).to_digit(16).ok_or(Error {
                offset: at,
                what: "bad \\u escape",
            })?;
            Ok(n * 16 + v)
        })
    }
}

/// Writes a document event by event, placing the commas itself. It does
/// not check the document's shape: the caller opens and closes in order.
pub struct Writer<'o> {
    out: &'o mut Vec<u8>,
    /// Nothing written yet at this level (or a key just written): no comma next.
    fresh: bool,
}

impl<'o> Writer<'o> {
    pub fn new(out: &'o mut Vec<u8>) -> Writer<'o> {
        Writer { out, fresh: true }
    }

    /// Go on with a document written so far into `out`, `fresh` as
    /// [`Writer::fresh`] said when the last writer stopped: a writer kept
    /// by a consumer between the events it is handed.
    pub fn resume(out: &'o mut Vec<u8>, fresh: bool) -> Writer<'o> {
        Writer { out, fresh }
    }

    /// Whether the next value needs no comma before it.
    pub fn fresh(&self) -> bool {
        self.fresh
    }

    fn separate(&mut self) {
        if !self.fresh {
            self.out.push(b',');
        }
        self.fresh = false;
    }

    pub fn begin_object(&mut self) {
        self.separate();
        self.out.push(b'{');
        self.fresh = true;
    }

    pub fn end_object(&mut self) {
        self.out.push(b'}');
        self.fresh = false;
    }

    pub fn begin_array(&mut self) {
        self.separate();
        self.out.push(b'[');
        self.fresh = true;
    }

    pub fn end_array(&mut self) {
        self.out.push(b']');
        self.fresh = false;
    }

    /// A member's name; write its value next.
    pub fn key(&mut self, name: &[u8]) {
        self.separate();
        self.quoted(name);
        self.out.push(b':');
        self.fresh = true;
    }

    /// A string: JSON's escapes for `"`, `\` and control characters (as
    /// serde_json writes them); other bytes as they are.
    pub fn string(&mut self, s: &[u8]) {
        self.separate();
        self.quoted(s);
    }

    /// Room for a number known only later (a directory's size, after its
    /// entries): `len` NUL bytes at the returned offset of the output, for
    /// the caller to overwrite in place and then strip. A document holds
    /// no NUL byte but these: JSON allows none outside a string, and
    /// [`Writer::string`] escapes it inside one.
    pub fn room(&mut self, len: usize) -> usize {
        self.separate();
        let at = self.out.len();
        self.out.resize(at + len, 0);
        at
    }

    pub fn boolean(&mut self, b: bool) {
        self.bare(if b { b"true" } else { b"false" });
    }

    /// Bytes written and not yet handed on.
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// Whether nothing is waiting to be handed on.
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }

    /// Hand what is written so far to `sink` and go on where it stopped
    /// (commas included): a long document never waits whole in memory.
    pub fn drain_to(&mut self, sink: &mut dyn std::io::Write) -> std::io::Result<()> {
        sink.write_all(self.out)?;
        self.out.clear();
        Ok(())
    }

    pub fn number(&mut self, n: u64) {
        self.separate();
        let _ = write!(self.out, "{n}");
    }

    /// Any event, as the reader gives it (a number as it was spelled):
    /// what reads a document can write it back unchanged.
    pub fn event(&mut self, event: &Event<'_>) {
        match event {
            Event::BeginObject => self.begin_object(),
            Event::EndObject => self.end_object(),
            Event::BeginArray => self.begin_array(),
            Event::EndArray => self.end_array(),
            Event::Key(k) => self.key(k),
            Event::Str(s) => self.string(s),
            Event::Number(n) => self.bare(n.as_bytes()),
            Event::Bool(b) => self.bare(if *b { b"true" } else { b"false" }),
            Event::Null => self.bare(b"null"),
        }
    }

    fn bare(&mut self, text: &[u8]) {
        self.separate();
        self.out.extend_from_slice(text);
    }

    fn quoted(&mut self, s: &[u8]) {
        fnd_output::json::push_bytes_as_string(self.out, s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &[u8]) -> Result<Vec<Event<'_>>, Error> {
        let mut r = Reader::new(text);
        let mut all = Vec::new();
        while let Some(e) = r.next()? {
            all.push(e);
        }
        Ok(all)
    }

    fn s(text: &str) -> Cow<'_, [u8]> {
        Cow::Borrowed(text.as_bytes())
    }

    #[test]
    fn reads_every_kind_of_value() {
        let doc = br#" {"a": [1, -2.5e3, true, false, null, "x\n\u00e9\ud83d\ude00"], "b": {}, "c": []} "#;
        assert_eq!(
            events(doc).unwrap(),
            [
                Event::BeginObject,
                Event::Key(s("a")),
                Event::BeginArray,
                Event::Number("1"),
                Event::Number("-2.5e3"),
                Event::Bool(true),
                Event::Bool(false),
                Event::Null,
                Event::Str(Cow::Owned("x\né😀".as_bytes().to_vec())),
                Event::EndArray,
                Event::Key(s("b")),
                Event::BeginObject,
                Event::EndObject,
                Event::Key(s("c")),
                Event::BeginArray,
                Event::EndArray,
                Event::EndObject,
            ]
        );
    }

    #[test]
    fn keeps_bytes_that_are_not_utf8() {
        assert_eq!(
            events(b"\"a\xffb\"").unwrap(),
            [Event::Str(Cow::Borrowed(&b"a\xffb"[..]))]
        );
    }

    #[test]
    fn refuses_what_is_not_json() {
        for bad in [
            &b""[..],
            b"{",
            b"[1,]",
            b"[1 2]",
            b"{\"a\" 1}",
            b"{\"a\":1,}",
            b"{1:2}",
            b"[01]",
            b"[1.]",
            b"[-]",
            b"[1e]",
            b"\"a",
            b"\"\\x\"",
            b"\"\\ud800\"",
            b"\"\\udc00\"",
            b"\"\\u12\"",
            b"\"a\nb\"",
            b"[] []",
            b"[}",
            b"{]",
            b"tru",
            b"nul",
            b"]",
        ] {
            assert!(events(bad).is_err(), "{:?} was accepted", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn skips_values_whole() {
        let doc = br#"{"skip": {"x": [1, {"y": []}]}, "keep": 2}"#;
        let mut r = Reader::new(doc);
        assert_eq!(r.next().unwrap(), Some(Event::BeginObject));
        assert_eq!(r.next().unwrap(), Some(Event::Key(s("skip"))));
        r.skip_value().unwrap();
        assert_eq!(r.next().unwrap(), Some(Event::Key(s("keep"))));
        r.skip_value().unwrap();
        assert_eq!(r.next().unwrap(), Some(Event::EndObject));
        assert_eq!(r.next().unwrap(), None);
    }

    #[test]
    fn writes_strings_as_serde_json_does() {
        let nasty: Vec<u8> = (0u8..0x80).chain([b'"', b'\\', 0xc3, 0xa9]).collect();
        let mut out = Vec::new();
        Writer::new(&mut out).string(&nasty);
        let theirs = serde_json::to_vec(std::str::from_utf8(&nasty).unwrap()).unwrap();
        assert_eq!(out, theirs);
        let mut r = Reader::new(&out);
        assert_eq!(r.next().unwrap(), Some(Event::Str(Cow::Owned(nasty))));
    }

    #[test]
    fn events_written_back_read_the_same() {
        let doc = br#" {"a" : [1, -2.5E+3, true, false, null, "x\n\u00e9\/"], "b": {"c": {}}, "": []} "#;
        let read = events(doc).unwrap();
        let mut out = Vec::new();
        let mut w = Writer::new(&mut out);
        read.iter().for_each(|e| w.event(e));
        assert_eq!(events(&out).unwrap(), read);
        let expected = r#"{"a":[1,-2.5E+3,true,false,null,"x\né/"],"b":{"c":{}},"":[]}"#;
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }

    #[test]
    fn reads_and_writes_any_depth_on_a_small_stack() {
        let worker = std::thread::Builder::new().stack_size(64 * 1024);
        worker
            .spawn(|| {
                const DEPTH: usize = 200_000;
                let mut out = Vec::new();
                let mut w = Writer::new(&mut out);
                for _ in 0..DEPTH {
                    w.begin_array();
                    w.begin_object();
                    w.key(b"k");
                }
                w.number(7);
                for _ in 0..DEPTH {
                    w.end_object();
                    w.end_array();
                }
                let mut r = Reader::new(&out);
                let mut deepest = 0;
                let mut count = 0;
                while r.next().unwrap().is_some() {
                    deepest = deepest.max(r.depth());
                    count += 1;
                }
                assert_eq!((deepest, count), (2 * DEPTH, 5 * DEPTH + 1));
                let mut r = Reader::new(&out);
                r.skip_value().unwrap();
                assert_eq!(r.next().unwrap(), None);
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
