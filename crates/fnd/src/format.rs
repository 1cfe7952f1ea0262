//! Templates of `--format`, `--exec` and `--exec-batch`: fd's path
//! placeholders (`{}`, `{/}`, `{//}`, `{.}`, `{/.}`, `{{`, `}}`) plus
//! metadata placeholders (`{size}`, `{mtime}`, …) that fd does not have.
//!
//! A template is parsed once; rendering appends bytes to a caller's buffer,
//! so a listing formats every entry without allocating. Paths are bytes
//! throughout: nothing here is lossy.
//!
//! A path is given as its two parts, the text before the name (the parent
//! and a `/`, as printed) and the name; the walk yields entries that way.

use fnd_walk::{FileType, Metadata};

use crate::found::Found;
use crate::paths::push_with_separator;

mod meta;

pub use meta::{push_group_name, push_perms, push_user_name};
use meta::{push_num, render_meta};

/// What a placeholder stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// `{}`: the path.
    Path,
    /// `{/}`: the name.
    Basename,
    /// `{//}`: the parent directory (`.` when there is none).
    Parent,
    /// `{.}`: the path without its extension.
    NoExt,
    /// `{/.}`: the name without its extension.
    BasenameNoExt,
    /// `{size}`: size in bytes.
    Size,
    /// `{mtime}`: modification time, local, `YYYY-MM-DD HH:MM:SS`.
    Mtime,
    /// `{mode}`: permission bits in octal (`644`, `4755`).
    Mode,
    /// `{perms}`: type and permissions as `ls -l` shows them (`drwxr-xr-x`).
    Perms,
    /// `{type}`: file, dir, symlink, block, char, fifo, socket.
    Type,
    /// `{inode}`: inode number.
    Inode,
    /// `{nlink}`: number of hard links.
    Nlink,
    /// `{uid}` / `{gid}`: numeric owner and group.
    Uid,
    Gid,
    /// `{owner}` / `{group}`: owner and group names (numbers when unknown).
    Owner,
    Group,
    /// `{depth}`: depth below the search root (its entries are at 1).
    Depth,
    /// `{target}`: where a symlink points (empty for anything else).
    Target,
}

/// The placeholders in the order fd's matcher tries them (escapes first),
/// then ours.
const PLACEHOLDERS: &[(&str, Option<Field>)] = &[
    ("{{", None),
    ("}}", None),
    ("{}", Some(Field::Path)),
    ("{/}", Some(Field::Basename)),
    ("{//}", Some(Field::Parent)),
    ("{.}", Some(Field::NoExt)),
    ("{/.}", Some(Field::BasenameNoExt)),
    ("{size}", Some(Field::Size)),
    ("{mtime}", Some(Field::Mtime)),
    ("{mode}", Some(Field::Mode)),
    ("{perms}", Some(Field::Perms)),
    ("{type}", Some(Field::Type)),
    ("{inode}", Some(Field::Inode)),
    ("{nlink}", Some(Field::Nlink)),
    ("{uid}", Some(Field::Uid)),
    ("{gid}", Some(Field::Gid)),
    ("{owner}", Some(Field::Owner)),
    ("{group}", Some(Field::Group)),
    ("{depth}", Some(Field::Depth)),
    ("{target}", Some(Field::Target)),
];

/// The placeholders, as `--help` lists them for --format, -x and -X.
macro_rules! placeholder_help {
    ($path:literal) => {
        concat!(
            "The following placeholders are substituted:\n  ",
            "'{}':   path (",
            $path,
            ")\n  ",
            "'{/}':  basename\n  ",
            "'{//}': parent directory\n  ",
            "'{.}':  path without file extension\n  ",
            "'{/.}': basename without file extension\n  ",
            "'{{':   literal '{' (for escaping)\n  ",
            "'}}':   literal '}' (for escaping)\n",
            "Metadata placeholders (beyond fd; each result is stat'ed once when one is used):\n  ",
            "'{size}':  size in bytes\n  ",
            "'{mtime}': modification time, local (YYYY-MM-DD HH:MM:SS)\n  ",
            "'{mode}':  permission bits in octal (644)\n  ",
            "'{perms}': type and permissions as 'ls -l' shows them (-rw-r--r--)\n  ",
            "'{type}':  file, dir, symlink, block, char, fifo or socket\n  ",
            "'{inode}', '{nlink}': inode number, number of hard links\n  ",
            "'{uid}', '{gid}', '{owner}', '{group}': owner and group, as numbers or names\n  ",
            "'{depth}': depth below the search path (its entries are at 1)\n  ",
            "'{target}': where a symlink points (empty for other entries)\n",
            "Any other text, '{foo}' included, is printed as it is."
        )
    };
}
pub(crate) use placeholder_help;

/// Long help of `--format`.
pub const FORMAT_HELP: &str = concat!(
    "Print each result according to a template instead of its path.\n",
    placeholder_help!("of the current search result"),
    "\n\nExample:\n\n      fnd -e rs --format '{size} {mtime} {}'"
);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(Box<[u8]>),
    Field(Field),
}

/// A parsed template.
///
/// ```
/// use fnd::format::Template;
///
/// let t = Template::parse("{/.}.png");
/// let mut out = Vec::new();
/// t.render_parts(b"./a/", b"x.jpg", None, &mut out);
/// assert_eq!(out, b"x.png");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    /// Parse like fd: the earliest-ending placeholder wins, `{{` and `}}`
    /// are literal braces, a placeholder directly followed by `}` is
    /// literal text, and anything else (`{foo}`, an unclosed `{`) is text.
    pub fn parse(template: &str) -> Template {
        Template::parse_bytes(template.as_bytes())
    }

    /// [`parse`](Self::parse) for a template that need not be UTF-8 (a command argument).
    pub fn parse_bytes(bytes: &[u8]) -> Template {
        let mut pieces = Vec::new();
        let mut text: Vec<u8> = Vec::new();
        let mut start = 0;
        while let Some((at, len, field)) = find_placeholder(bytes, start) {
            let end = at + len;
            match field {
                None => {
                    // `{{` or `}}`: keep one brace.
                    text.extend_from_slice(&bytes[start..at + 1]);
                    start = end;
                }
                Some(_) if bytes.get(end) == Some(&b'}') => {
                    // `{}}` and the like: the closing brace is escaped.
                    text.extend_from_slice(&bytes[start..end]);
                    start = end + 1;
                }
                Some(field) => {
                    text.extend_from_slice(&bytes[start..at]);
                    if !text.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut text).into()));
                    }
                    pieces.push(Piece::Field(field));
                    start = end;
                }
            }
        }
        text.extend_from_slice(&bytes[start..]);
        if !text.is_empty() {
            pieces.push(Piece::Text(text.into()));
        }
        Template { pieces }
    }

    /// A template that is just `{}`.
    pub fn path() -> Template {
        Template {
            pieces: vec![Piece::Field(Field::Path)],
        }
    }

    /// Whether any placeholder appears (fd appends `{}` to commands without one).
    pub fn has_placeholders(&self) -> bool {
        self.pieces.iter().any(|p| matches!(p, Piece::Field(_)))
    }

    /// Append the rendering for an entry whose printed path is `prefix` + its name.
    pub fn render(&self, entry: &impl Found, prefix: &[u8], separator: Option<&[u8]>, out: &mut Vec<u8>) {
        let mut meta: Option<Option<Metadata>> = None;
        let subject = Subject {
            prefix,
            name: entry.name_bytes(),
            separator,
        };
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.extend_from_slice(t),
                Piece::Field(f) if f.needs_metadata() => {
                    let m = meta.get_or_insert_with(|| metadata(entry));
                    render_meta(*f, m.as_ref(), out);
                }
                Piece::Field(Field::Type) => out.extend_from_slice(type_name(entry.target_type()).as_bytes()),
                Piece::Field(Field::Depth) => push_num(out, entry.depth() as u64),
                Piece::Field(Field::Target) => push_link_target(entry, out),
                Piece::Field(f) => subject.render(*f, out),
            }
        }
    }

    /// Append the rendering for a path given as its parts; metadata
    /// placeholders render as `?`.
    pub fn render_parts(&self, prefix: &[u8], name: &[u8], separator: Option<&[u8]>, out: &mut Vec<u8>) {
        let subject = Subject {
            prefix,
            name,
            separator,
        };
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => out.extend_from_slice(t),
                Piece::Field(f) if f.is_path() => subject.render(*f, out),
                Piece::Field(_) => out.push(b'?'),
            }
        }
    }
}

/// The entry's metadata; with `-L`, a followed link's is its target's, as
/// fd treats followed links as what they point to.
pub fn metadata(entry: &impl Found) -> Option<Metadata> {
    let followed = entry.file_type() == FileType::Symlink && entry.target_type() != FileType::Symlink;
    if followed {
        entry.metadata_follow()
    } else {
        entry.metadata()
    }
    .ok()
}

impl Field {
    fn is_path(self) -> bool {
        matches!(
            self,
            Field::Path | Field::Basename | Field::Parent | Field::NoExt | Field::BasenameNoExt
        )
    }

    fn needs_metadata(self) -> bool {
        // `{inode}` is stat'ed too: getdents reports a mount point's
        // covered inode, not the one `stat` and `ls -i` show.
        !self.is_path() && !matches!(self, Field::Type | Field::Depth | Field::Target)
    }
}

/// The earliest-ending placeholder at or after `from`: (start, length, field).
/// No two placeholders can end at the same byte, so the first end found is
/// the one fd's matcher reports.
fn find_placeholder(bytes: &[u8], from: usize) -> Option<(usize, usize, Option<Field>)> {
    for end in from + 2..=bytes.len() {
        if bytes[end - 1] != b'}' && bytes[end - 1] != b'{' {
            continue;
        }
        for &(pat, field) in PLACEHOLDERS {
            let pat = pat.as_bytes();
            if end - from >= pat.len() && bytes[..end].ends_with(pat) {
                return Some((end - pat.len(), pat.len(), field));
            }
        }
    }
    None
}

/// A path as printed: `prefix` (parent and `/`, possibly empty) + `name`.
struct Subject<'a> {
    prefix: &'a [u8],
    name: &'a [u8],
    separator: Option<&'a [u8]>,
}

impl Subject<'_> {
    fn render(&self, field: Field, out: &mut Vec<u8>) {
        match field {
            Field::Path => {
                self.push_path(self.prefix, out);
                self.push_path(self.name, out);
            }
            Field::Basename => out.extend_from_slice(basename(self.name)),
            Field::Parent => self.push_path(dirname(self.prefix, self.name), out),
            Field::NoExt => {
                // fd joins dirname and stem, then drops a leading `./`.
                let dir = dirname(self.prefix, self.name);
                let dir = strip_current_dir(dir);
                if !dir.is_empty() {
                    self.push_path(dir, out);
                    if !dir.ends_with(b"/") {
                        self.push_path(b"/", out);
                    }
                }
                out.extend_from_slice(file_stem(basename(self.name)));
            }
            Field::BasenameNoExt => out.extend_from_slice(file_stem(basename(self.name))),
            _ => unreachable!("not a path field"),
        }
    }

    fn push_path(&self, part: &[u8], out: &mut Vec<u8>) {
        push_with_separator(part, self.separator, out);
    }
}

/// The name, or the whole path for one without a name (a root like `/`).
fn basename(name: &[u8]) -> &[u8] {
    let trimmed = trim_trailing_slashes(name);
    match trimmed.iter().rposition(|&b| b == b'/') {
        Some(i) => &trimmed[i + 1..],
        None => trimmed,
    }
}

/// Like `Path::parent`, with `.` for a bare name.
fn dirname<'a>(prefix: &'a [u8], name: &'a [u8]) -> &'a [u8] {
    if prefix.is_empty() {
        // A root, or a path printed without its `./`: the parent is in the name, if anywhere.
        let trimmed = trim_trailing_slashes(name);
        return match trimmed.iter().rposition(|&b| b == b'/') {
            Some(i) => {
                let parent = trim_trailing_slashes(&trimmed[..i]);
                if parent.is_empty() {
                    &trimmed[..1]
                } else {
                    parent
                }
            }
            None if trimmed.is_empty() => name,
            None => b".",
        };
    }
    let parent = trim_trailing_slashes(prefix);
    if parent.is_empty() {
        &prefix[..1] // the root directory
    } else {
        parent
    }
}

fn trim_trailing_slashes(p: &[u8]) -> &[u8] {
    let mut end = p.len();
    while end > 1 && p[end - 1] == b'/' {
        end -= 1;
    }
    &p[..end]
}

/// `Path::strip_prefix(".")`: a leading `.` component goes.
fn strip_current_dir(p: &[u8]) -> &[u8] {
    if p == b"." {
        return b"";
    }
    match p.strip_prefix(b"./") {
        Some(mut rest) => {
            while let Some(r) = rest.strip_prefix(b"/") {
                rest = r;
            }
            rest
        }
        None => p,
    }
}

/// `Path::file_stem`: the name up to its last `.`, unless that dot starts the name.
fn file_stem(name: &[u8]) -> &[u8] {
    if name == b".." {
        return name;
    }
    match name.iter().rposition(|&b| b == b'.') {
        Some(0) | None => name,
        Some(i) => &name[..i],
    }
}

/// A symlink's target as stored (`readlink`), nothing for other entries.
pub fn push_link_target(entry: &impl Found, out: &mut Vec<u8>) {
    use std::os::unix::ffi::OsStringExt;
    if entry.file_type() != FileType::Symlink {
        return;
    }
    let mut path = Vec::new();
    entry.write_path(&mut path);
    if let Ok(target) = std::fs::read_link(std::ffi::OsString::from_vec(path)) {
        out.extend_from_slice(target.as_os_str().as_encoded_bytes());
    }
}

pub fn type_name(t: FileType) -> &'static str {
    match t {
        FileType::File => "file",
        FileType::Dir => "dir",
        FileType::Symlink => "symlink",
        FileType::BlockDevice => "block",
        FileType::CharDevice => "char",
        FileType::Fifo => "fifo",
        FileType::Socket => "socket",
        FileType::Unknown => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(t: &str, prefix: &str, name: &str) -> String {
        let mut out = Vec::new();
        Template::parse(t).render_parts(prefix.as_bytes(), name.as_bytes(), None, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn fd_placeholders() {
        let t = "[{}] [{/}] [{//}] [{.}] [{/.}]";
        assert_eq!(render(t, "a/b.d/", "y"), "[a/b.d/y] [y] [a/b.d] [a/b.d/y] [y]");
        assert_eq!(
            render(t, "a/", "x.tar.gz"),
            "[a/x.tar.gz] [x.tar.gz] [a] [a/x.tar] [x.tar]"
        );
        assert_eq!(render(t, "", "a"), "[a] [a] [.] [a] [a]");
        assert_eq!(render(t, "./a/", "b.d"), "[./a/b.d] [b.d] [./a] [a/b] [b]");
        assert_eq!(render(t, "./", "a"), "[./a] [a] [.] [a] [a]");
        assert_eq!(
            render(t, "/tmp/t/a/", "b.d"),
            "[/tmp/t/a/b.d] [b.d] [/tmp/t/a] [/tmp/t/a/b] [b]"
        );
        assert_eq!(render(t, "/", "bin"), "[/bin] [bin] [/] [/bin] [bin]");
        assert_eq!(render(t, "", ".hid"), "[.hid] [.hid] [.] [.hid] [.hid]");
        assert_eq!(render(t, "a//", "x.c"), "[a//x.c] [x.c] [a] [a/x] [x]");
    }

    #[test]
    fn braces_as_fd_parses_them() {
        // The cases of fd's own tests.
        assert_eq!(render("{{}}", "", "foo"), "{}");
        assert_eq!(render("{{", "", "foo"), "{");
        assert_eq!(render("{.}}", "", "foo"), "{.}");
        assert_eq!(render("{{{},end}", "", "foo"), "{foo,end}");
        assert_eq!(render("{{ }}", "", "foo"), "{ }");
        assert!(!Template::parse("{{}}").has_placeholders());
        // Unknown or unclosed placeholders are text, as in fd.
        assert_eq!(render("{foo} {", "", "x"), "{foo} {");
        assert_eq!(render("{{size}}", "", "x"), "{size}");
    }

    #[test]
    fn separator_replaces_slashes_in_paths_only() {
        let mut out = Vec::new();
        Template::parse("{} {//} {.} a/b").render_parts(b"/x/y/", b"z.c", Some(b"#"), &mut out);
        assert_eq!(out, b"#x#y#z.c #x#y #x#y#z a/b");
    }

    #[test]
    fn stems() {
        assert_eq!(file_stem(b"foo."), b"foo");
        assert_eq!(file_stem(b".a.b"), b".a");
        assert_eq!(file_stem(b"..."), b"..");
        assert_eq!(file_stem(b".."), b"..");
    }

    #[test]
    fn metadata_fields_are_flagged() {
        assert!(Field::Size.needs_metadata() && Field::Owner.needs_metadata());
        assert!(Field::Inode.needs_metadata());
        assert!(!Field::Type.needs_metadata() && !Field::Depth.needs_metadata());
    }
}
