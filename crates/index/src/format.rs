//! The index file: a header, the root's path, a table of directories, a
//! table of entries and the names, all little-endian.
//!
//! ```text
//! header   magic "FNDINDX\n", version u32, 0 u32, built_at i64 (seconds),
//!          body_len u64, checksum u64 (of the body), dirs u32, entries u32
//! body     root_len u32, root path bytes,
//!          dirs × 56 bytes: dev u64, ino u64, mtime i64, mtime_ns u32,
//!            ctime_ns u32, ctime i64, first entry u32, entry count u32,
//!            ignore files u32 (IGNORE_* bits), 0 u32
//!          entries × 12 bytes: name offset u32, name length u16, type u8
//!            (d_type), 0 u8, directory u32 (its row, or NO_DIR)
//!          names
//! ```
//!
//! Directories are breadth-first from the root (row 0), so a
//! subdirectory's row is always greater than its parent's: a reader never
//! loops, whatever the bytes say. Each directory's entries are contiguous
//! and sorted by name. [`Index::parse`] checks everything before anything
//! is read, so a query sees a whole index or a clean error.

use std::fmt;

use fnd_walk::{FileType, Metadata};

/// What a file must start with.
pub const MAGIC: &[u8; 8] = b"FNDINDX\n";
/// The version this build reads and writes.
pub const VERSION: u32 = 1;
/// An entry that is not a directory of the index (or one not read).
pub const NO_DIR: u32 = u32::MAX;

const HEADER: usize = 48;
const DIR_ROW: usize = 56;
const ENTRY_ROW: usize = 12;

/// The ignore files a directory holds, as bits of [`Dir::ignore_files`].
pub const IGNORE_FILES: [&[u8]; 4] = [b".gitignore", b".ignore", b".fdignore", b".git"];

/// A directory's identity and change stamp: when any part differs, its
/// listing may have changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub mtime: i64,
    pub mtime_ns: u32,
    pub ctime: i64,
    pub ctime_ns: u32,
}

impl From<&Metadata> for Stamp {
    fn from(m: &Metadata) -> Stamp {
        Stamp {
            dev: m.dev,
            ino: m.ino,
            mtime: m.mtime,
            mtime_ns: m.mtime_nsec,
            ctime: m.ctime,
            ctime_ns: m.ctime_nsec,
        }
    }
}

/// Why bytes are not an index this build can read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormatError {
    NotAnIndex,
    Version(u32),
    Truncated,
    Checksum,
    Corrupt(&'static str),
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormatError::NotAnIndex => write!(f, "not an fnd index"),
            FormatError::Version(v) => write!(f, "index version {v}, this fnd reads version {VERSION}"),
            FormatError::Truncated => write!(f, "index is truncated"),
            FormatError::Checksum => write!(f, "index checksum does not match"),
            FormatError::Corrupt(what) => write!(f, "index is corrupt ({what})"),
        }
    }
}

impl std::error::Error for FormatError {}

/// A d_type byte for a type (what the walk's listing gave).
pub fn type_byte(t: FileType) -> u8 {
    match t {
        FileType::Fifo => 1,
        FileType::CharDevice => 2,
        FileType::Dir => 4,
        FileType::BlockDevice => 6,
        FileType::File => 8,
        FileType::Symlink => 10,
        FileType::Socket => 12,
        FileType::Unknown => 0,
    }
}

/// A checksum of `bytes`: four independent multiply-xor lanes over 8-byte
/// words, so the multiplications overlap (one lane ran at a third of the speed).
pub fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut lanes = [1u64, 2, 3, 4];
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        for (i, lane) in lanes.iter_mut().enumerate() {
            let w = u64::from_le_bytes(block[i * 8..i * 8 + 8].try_into().unwrap());
            *lane = (*lane ^ w).wrapping_mul(K).rotate_left(29);
        }
    }
    let mut h = bytes.len() as u64;
    for lane in lanes {
        h = (h ^ lane).wrapping_mul(K).rotate_left(31);
    }
    for &b in blocks.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(K);
    }
    h ^ (h >> 32)
}

/// The checksum a file stores: of its body and of its header but the sum itself.
fn file_sum(file: &[u8]) -> u64 {
    let header = [&file[..32], &file[40..HEADER]].concat();
    checksum(&file[HEADER..]) ^ checksum(&header).rotate_left(1)
}

/// Store the right checksum in `file` (for fuzzing and tests: damage that
/// gets past the checksum must still be an error).
pub fn seal(file: &mut [u8]) {
    if file.len() >= HEADER {
        let sum = file_sum(file);
        file[32..40].copy_from_slice(&sum.to_le_bytes());
    }
}

/// Writes an index: directories breadth-first, each with its entries.
///
/// ```
/// use fnd_index::format::{Index, IndexWriter, Stamp, NO_DIR};
/// use fnd_walk::FileType;
///
/// let mut w = IndexWriter::new(b"/src", 1_700_000_000);
/// let root = w.add_dir(Stamp::default(), 0);
/// w.add_entry(b"lib", FileType::Dir, 1);
/// w.add_entry(b"main.rs", FileType::File, NO_DIR);
/// w.add_dir(Stamp::default(), 0); // lib: row 1
/// w.add_entry(b"mod.rs", FileType::File, NO_DIR);
/// let bytes = w.finish();
/// let index = Index::parse(&bytes).unwrap();
/// assert_eq!(index.root(), b"/src");
/// assert_eq!(index.dir(root).entries().count(), 2);
/// assert_eq!(index.find(b"lib"), Some(1));
/// ```
pub struct IndexWriter {
    built_at: i64,
    root: Vec<u8>,
    dirs: Vec<u8>,
    entries: Vec<u8>,
    names: Vec<u8>,
    n_dirs: u32,
    n_entries: u32,
}

impl IndexWriter {
    pub fn new(root: &[u8], built_at: i64) -> IndexWriter {
        IndexWriter {
            built_at,
            root: root.to_vec(),
            dirs: Vec::new(),
            entries: Vec::new(),
            names: Vec::new(),
            n_dirs: 0,
            n_entries: 0,
        }
    }

    /// Room for `dirs` directories, `entries` entries and `names` bytes of
    /// names, so the tables are not copied as they grow.
    pub fn reserve(&mut self, dirs: usize, entries: usize, names: usize) {
        self.dirs.reserve(dirs * DIR_ROW);
        self.entries.reserve(entries * ENTRY_ROW);
        self.names.reserve(names);
    }

    /// Start the next directory (breadth-first); its entries follow with
    /// [`add_entry`](Self::add_entry). Returns its row.
    pub fn add_dir(&mut self, stamp: Stamp, ignore_files: u32) -> u32 {
        let row = self.n_dirs;
        self.n_dirs += 1;
        let d = &mut self.dirs;
        d.extend_from_slice(&stamp.dev.to_le_bytes());
        d.extend_from_slice(&stamp.ino.to_le_bytes());
        d.extend_from_slice(&stamp.mtime.to_le_bytes());
        d.extend_from_slice(&stamp.mtime_ns.to_le_bytes());
        d.extend_from_slice(&stamp.ctime_ns.to_le_bytes());
        d.extend_from_slice(&stamp.ctime.to_le_bytes());
        d.extend_from_slice(&self.n_entries.to_le_bytes());
        d.extend_from_slice(&0u32.to_le_bytes());
        d.extend_from_slice(&ignore_files.to_le_bytes());
        d.extend_from_slice(&0u32.to_le_bytes());
        row
    }

    /// Rows of directories written so far (the next one's row).
    pub fn dirs(&self) -> u32 {
        self.n_dirs
    }

    /// An entry of the last directory started; `dir` is its row when it
    /// is a directory of the index (written later), else [`NO_DIR`].
    pub fn add_entry(&mut self, name: &[u8], file_type: FileType, dir: u32) {
        let at = self.dirs.len() - DIR_ROW;
        let count = u32::from_le_bytes(self.dirs[at + 44..at + 48].try_into().unwrap());
        self.dirs[at + 44..at + 48].copy_from_slice(&(count + 1).to_le_bytes());
        self.n_entries += 1;
        let e = &mut self.entries;
        e.extend_from_slice(&(self.names.len() as u32).to_le_bytes());
        e.extend_from_slice(&(name.len().min(u16::MAX as usize) as u16).to_le_bytes());
        e.push(type_byte(file_type));
        e.push(0);
        e.extend_from_slice(&dir.to_le_bytes());
        self.names.extend_from_slice(name);
    }

    /// The file's bytes.
    pub fn finish(self) -> Vec<u8> {
        let body_len = 4 + self.root.len() + self.dirs.len() + self.entries.len() + self.names.len();
        let mut out = Vec::with_capacity(HEADER + body_len);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&self.built_at.to_le_bytes());
        out.extend_from_slice(&(body_len as u64).to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        out.extend_from_slice(&self.n_dirs.to_le_bytes());
        out.extend_from_slice(&self.n_entries.to_le_bytes());
        out.extend_from_slice(&(self.root.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.root);
        out.extend_from_slice(&self.dirs);
        out.extend_from_slice(&self.entries);
        out.extend_from_slice(&self.names);
        let sum = file_sum(&out);
        out[32..40].copy_from_slice(&sum.to_le_bytes());
        out
    }
}

/// A checked index over its bytes (a mapped file, usually).
#[derive(Clone, Copy)]
pub struct Index<'a> {
    built_at: i64,
    root: &'a [u8],
    dirs: &'a [u8],
    entries: &'a [u8],
    names: &'a [u8],
}

/// One directory of an index.
#[derive(Clone, Copy)]
pub struct Dir<'a> {
    index: Index<'a>,
    row: &'a [u8],
}

/// One entry of a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    pub name: &'a [u8],
    pub file_type: FileType,
    /// Its directory row, when it is a directory the index read.
    pub dir: Option<u32>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

impl<'a> Index<'a> {
    /// Check `bytes` whole (header, checksum, every row) and read them.
    pub fn parse(bytes: &'a [u8]) -> Result<Index<'a>, FormatError> {
        Self::read(bytes, true)
    }

    /// Read bytes [`parse`](Self::parse) accepted before, without checking them again.
    pub fn reread(bytes: &'a [u8]) -> Result<Index<'a>, FormatError> {
        Self::read(bytes, false)
    }

    fn read(bytes: &'a [u8], check: bool) -> Result<Index<'a>, FormatError> {
        if bytes.len() < 12 || &bytes[..8] != MAGIC {
            return Err(if MAGIC.starts_with(&bytes[..bytes.len().min(8)]) {
                FormatError::Truncated
            } else {
                FormatError::NotAnIndex
            });
        }
        let version = u32_at(bytes, 8);
        if version != VERSION {
            return Err(FormatError::Version(version));
        }
        if bytes.len() < HEADER {
            return Err(FormatError::Truncated);
        }
        let built_at = u64_at(bytes, 16) as i64;
        let body_len = u64_at(bytes, 24);
        let body = &bytes[HEADER..];
        if (body.len() as u64) < body_len {
            return Err(FormatError::Truncated);
        }
        if body.len() as u64 != body_len {
            return Err(FormatError::Corrupt("trailing bytes"));
        }
        if check && file_sum(bytes) != u64_at(bytes, 32) {
            return Err(FormatError::Checksum);
        }
        let n_dirs = u32_at(bytes, 40) as usize;
        let n_entries = u32_at(bytes, 44) as usize;
        let short = FormatError::Corrupt("tables longer than the file");
        if body.len() < 4 {
            return Err(short);
        }
        let root_len = u32_at(body, 0) as usize;
        let mut rest = &body[4..];
        let mut take = |n: usize| -> Result<&'a [u8], FormatError> {
            if rest.len() < n {
                return Err(FormatError::Corrupt("tables longer than the file"));
            }
            let (a, b) = rest.split_at(n);
            rest = b;
            Ok(a)
        };
        let root = take(root_len)?;
        let dirs = take(n_dirs.checked_mul(DIR_ROW).ok_or(short.clone())?)?;
        let entries = take(n_entries.checked_mul(ENTRY_ROW).ok_or(short)?)?;
        let names = rest;
        if n_dirs == 0 {
            return Err(FormatError::Corrupt("no root directory"));
        }
        let index = Index {
            built_at,
            root,
            dirs,
            entries,
            names,
        };
        // Each directory but the root is named by exactly one entry: a
        // walk of the index reads every row once.
        let mut named = vec![false; if check { n_dirs } else { 0 }];
        for d in (0..n_dirs).filter(|_| check) {
            let row = &dirs[d * DIR_ROW..(d + 1) * DIR_ROW];
            let first = u32_at(row, 40) as usize;
            let count = u32_at(row, 44) as usize;
            if first.checked_add(count).is_none_or(|end| end > n_entries) {
                return Err(FormatError::Corrupt("entries out of range"));
            }
            for e in first..first + count {
                let row = &entries[e * ENTRY_ROW..(e + 1) * ENTRY_ROW];
                let off = u32_at(row, 0) as usize;
                let len = u16::from_le_bytes([row[4], row[5]]) as usize;
                if off + len > names.len() || len == 0 {
                    return Err(FormatError::Corrupt("name out of range"));
                }
                let child = u32_at(row, 8);
                if child != NO_DIR && (child as usize >= n_dirs || child as usize <= d) {
                    return Err(FormatError::Corrupt("directory out of order"));
                }
                if child != NO_DIR && std::mem::replace(&mut named[child as usize], true) {
                    return Err(FormatError::Corrupt("directory named twice"));
                }
            }
        }
        if named.iter().skip(1).any(|n| !n) {
            return Err(FormatError::Corrupt("directory named by no entry"));
        }
        Ok(index)
    }

    /// The root's real path.
    pub fn root(&self) -> &'a [u8] {
        self.root
    }

    /// When it was built, in seconds since the epoch.
    pub fn built_at(&self) -> i64 {
        self.built_at
    }

    pub fn dir_count(&self) -> usize {
        self.dirs.len() / DIR_ROW
    }

    /// Bytes of names.
    pub fn names_len(&self) -> usize {
        self.names.len()
    }

    pub fn entry_count(&self) -> usize {
        self.entries.len() / ENTRY_ROW
    }

    /// Directory `row` (0 is the root); rows come from [`Entry::dir`] or
    /// are below [`dir_count`](Self::dir_count).
    pub fn dir(&self, row: u32) -> Dir<'a> {
        let at = row as usize * DIR_ROW;
        Dir {
            index: *self,
            row: &self.dirs[at..at + DIR_ROW],
        }
    }

    /// The directory at `rel` (components separated by `/`, empty for the
    /// root), if the index read it.
    pub fn find(&self, rel: &[u8]) -> Option<u32> {
        let mut row = 0;
        for part in rel.split(|&b| b == b'/').filter(|p| !p.is_empty() && *p != b".") {
            let dir = self.dir(row);
            row = dir.entries().find(|e| e.name == part)?.dir?;
        }
        Some(row)
    }
}

impl<'a> Dir<'a> {
    pub fn stamp(&self) -> Stamp {
        let r = self.row;
        Stamp {
            dev: u64_at(r, 0),
            ino: u64_at(r, 8),
            mtime: u64_at(r, 16) as i64,
            mtime_ns: u32_at(r, 24),
            ctime_ns: u32_at(r, 28),
            ctime: u64_at(r, 32) as i64,
        }
    }

    /// The [`IGNORE_FILES`] it holds, one bit each.
    pub fn ignore_files(&self) -> u32 {
        u32_at(self.row, 48)
    }

    pub fn len(&self) -> usize {
        u32_at(self.row, 44) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its entries, sorted by name.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = Entry<'a>> + 'a {
        let first = u32_at(self.row, 40) as usize;
        let index = self.index;
        (first..first + self.len()).map(move |e| {
            let row = &index.entries[e * ENTRY_ROW..(e + 1) * ENTRY_ROW];
            let off = u32_at(row, 0) as usize;
            let len = u16::from_le_bytes([row[4], row[5]]) as usize;
            let child = u32_at(row, 8);
            Entry {
                name: &index.names[off..off + len],
                file_type: FileType::from_mode(u32::from(row[6]) << 12),
                dir: (child != NO_DIR).then_some(child),
            }
        })
    }
}

/// The [`IGNORE_FILES`] bits of a directory holding `names`.
pub fn ignore_bits<'n>(names: impl IntoIterator<Item = &'n [u8]>) -> u32 {
    let mut bits = 0;
    for name in names {
        if let Some(i) = IGNORE_FILES.iter().position(|f| *f == name) {
            bits |= 1 << i;
        }
    }
    bits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut w = IndexWriter::new(b"/r", 5);
        w.add_dir(Stamp::default(), 0);
        w.add_entry(b"a", FileType::Dir, 1);
        w.add_entry(b"b", FileType::Symlink, NO_DIR);
        w.add_dir(
            Stamp {
                ino: 7,
                ..Stamp::default()
            },
            1,
        );
        w.add_entry(b".gitignore", FileType::File, NO_DIR);
        w.finish()
    }

    #[test]
    fn reads_what_it_wrote() {
        let bytes = sample();
        let index = Index::parse(&bytes).unwrap();
        assert_eq!(index.built_at(), 5);
        let a = index.find(b"a").unwrap();
        assert_eq!(index.dir(a).stamp().ino, 7);
        assert_eq!(index.dir(a).ignore_files(), 1);
        let names: Vec<_> = index.dir(0).entries().map(|e| (e.name, e.file_type)).collect();
        assert_eq!(names, [(&b"a"[..], FileType::Dir), (&b"b"[..], FileType::Symlink)]);
        assert_eq!(index.find(b"b"), None);
    }

    #[test]
    fn every_damage_is_an_error() {
        let bytes = sample();
        for len in 0..bytes.len() {
            assert!(Index::parse(&bytes[..len]).is_err(), "cut at {len}");
        }
        for at in 0..bytes.len() {
            let mut b = bytes.clone();
            b[at] ^= 0x40;
            assert!(Index::parse(&b).is_err(), "flip at {at}");
        }
        let mut other = bytes.clone();
        other[8] = 2;
        assert_eq!(Index::parse(&other).err(), Some(FormatError::Version(2)));
    }
}
