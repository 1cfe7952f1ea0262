//! Printing results: one record per entry into the thread's 64 KiB output
//! buffer, as fd prints it — plain, coloured, through a `--format`
//! template, with hyperlinks, escaped on a terminal — or as a JSON object
//! a line (`--json`).
//!
//! Every mode appends straight to the output buffer (a reused scratch
//! buffer at most), so no mode allocates per entry; the plain mode is two
//! copies and a newline.
//!
//! An entry is given with its chunk's prefix (parent path and `/`); the
//! path text (`./` stripping, `--path-separator`) is `PathStyle`'s.

use fnd_output::Buffer;

use crate::color::{Colors, Painter};
use crate::escape::push_escaped;
use crate::format::Template;
use crate::found::Found;
use crate::hyperlink::Hyperlinks;
use crate::json::{push_record, JsonScratch};
use crate::paths::{printed_prefix, push_with_separator, PathStyle};

/// How results are printed; shared by every thread.
pub struct ListingConfig {
    /// Ends each record: `\n`, or `\0` with `--print0`.
    pub terminator: u8,
    /// `./` stripping and `--path-separator`.
    pub path_style: PathStyle,
    pub colors: Option<Colors>,
    pub hyperlinks: Option<Hyperlinks>,
    /// Stdout is a terminal: escape control characters.
    pub escape: bool,
    pub format: Option<Template>,
    /// `--json`: NDJSON records instead of paths (no colours; on a
    /// terminal, control characters become JSON's `\u` escapes).
    pub json: bool,
}

impl ListingConfig {
    fn is_plain(&self) -> bool {
        self.colors.is_none() && self.hyperlinks.is_none() && !self.escape && self.format.is_none() && !self.json
    }
}

/// Where a thread's printed records go: whole records are appended to
/// [`bytes`](Records::bytes), each ended by [`end_record`](Records::end_record).
/// This process's stdout ([`Buffer`]), or rank 0's for a rank of an MPI job.
pub trait Records {
    /// The buffer the next record is appended to.
    fn bytes(&mut self) -> &mut Vec<u8>;
    /// A record is complete; false when output has ended.
    fn end_record(&mut self) -> bool;
    /// Write what is buffered; false when output has ended.
    fn flush(&mut self) -> bool;
}

impl Records for Buffer {
    #[inline]
    fn bytes(&mut self) -> &mut Vec<u8> {
        Buffer::bytes(self)
    }

    #[inline]
    fn end_record(&mut self) -> bool {
        Buffer::end_record(self)
    }

    fn flush(&mut self) -> bool {
        Buffer::flush(self)
    }
}

/// A thread's printer.
pub struct Listing<'a, R: Records = Buffer> {
    cfg: &'a ListingConfig,
    plain: bool,
    out: R,
    /// Reused buffers: the printed prefix, a rendered text, its escaped
    /// form, a path for a hyperlink.
    scratch: Vec<u8>,
    text: Vec<u8>,
    escaped: Vec<u8>,
    link_scratch: Vec<u8>,
    json: JsonScratch,
    painter: Painter,
}

impl<'a, R: Records> Listing<'a, R> {
    pub fn new(cfg: &'a ListingConfig, out: R) -> Listing<'a, R> {
        Listing {
            cfg,
            plain: cfg.is_plain(),
            out,
            scratch: Vec::new(),
            text: Vec::new(),
            escaped: Vec::new(),
            link_scratch: Vec::new(),
            json: JsonScratch::new(cfg.escape),
            painter: Painter::default(),
        }
    }

    /// Print one entry of a chunk whose prefix is `prefix`. False when
    /// output is gone and the walk should stop.
    #[inline]
    pub fn entry(&mut self, entry: &impl Found, prefix: &[u8]) -> bool {
        let is_dir = entry.target_type().is_dir();
        if self.plain {
            let buf = self.out.bytes();
            self.cfg
                .path_style
                .write_entry_path(buf, prefix, entry.name_bytes(), is_dir, true);
            buf.push(self.cfg.terminator);
        } else {
            self.entry_styled(entry, prefix, is_dir);
        }
        self.out.end_record()
    }

    fn entry_styled(&mut self, entry: &impl Found, chunk_prefix: &[u8], is_dir: bool) {
        let cfg = self.cfg;
        let buf = self.out.bytes();
        if cfg.json {
            self.scratch.clear();
            cfg.path_style
                .write_entry_path(&mut self.scratch, chunk_prefix, entry.name_bytes(), is_dir, false);
            push_record(entry, &self.scratch, &mut self.json, buf);
            return;
        }
        if let Some(links) = &cfg.hyperlinks {
            links.open(entry, &mut self.link_scratch, buf);
        }
        let sep = cfg.path_style.separator.as_deref();
        let escape = cfg.escape;
        let name = entry.name_bytes();
        if let Some(template) = &cfg.format {
            let prefix = printed_prefix(&cfg.path_style, chunk_prefix, name, &mut self.scratch);
            self.text.clear();
            template.render(entry, prefix, sep, &mut self.text);
            push_terminal(escape, &self.text, buf);
        } else if let Some(colors) = &cfg.colors {
            // fd colours the parent part as a directory, then the name in
            // its own style, then a directory's trailing separator.
            let prefix = printed_prefix(&cfg.path_style, chunk_prefix, name, &mut self.scratch);
            if !prefix.is_empty() {
                self.text.clear();
                push_with_separator(prefix, sep, &mut self.text);
                let parent = terminal_text(escape, &self.text, &mut self.escaped);
                self.painter.paint(colors.directory(), parent, buf);
            }
            let text = terminal_text(escape, name, &mut self.escaped);
            self.painter.paint(colors.style_for(entry), text, buf);
            if is_dir {
                self.painter.paint(colors.directory(), sep.unwrap_or(b"/"), buf);
            }
        } else {
            // A terminal without colours: fd's plain text, escaped.
            self.scratch.clear();
            cfg.path_style
                .write_entry_path(&mut self.scratch, chunk_prefix, name, is_dir, true);
            push_terminal(escape, &self.scratch, buf);
        }
        if cfg.hyperlinks.is_some() {
            Hyperlinks::close(buf);
        }
        buf.push(cfg.terminator);
    }

    /// Write out what is buffered.
    pub fn flush(&mut self) -> bool {
        self.out.flush()
    }
}

/// `text` as a terminal should get it: escaped into `escaped` when `escape`.
fn terminal_text<'t>(escape: bool, text: &'t [u8], escaped: &'t mut Vec<u8>) -> &'t [u8] {
    if escape {
        escaped.clear();
        push_escaped(text, escaped);
        escaped
    } else {
        text
    }
}

/// Append `text`, escaped when `escape`.
fn push_terminal(escape: bool, text: &[u8], out: &mut Vec<u8>) {
    if escape {
        push_escaped(text, out);
    } else {
        out.extend_from_slice(text);
    }
}
