//! The index file: a header, the root's path, a table of directories, a
//! table of entries and the distinct names, all little-endian.
//!
//! ```text
//! header   magic "FNDINDX\n", version u32, entry width u32 (3 or 4),
//!          built_at i64 (seconds),
//!          body_len u64, checksum u64 (of the file but itself),
//!          dirs u32, entries u32, names u32, name runs u32, root_len u32,
//!          name bytes u32
//! body     root path bytes,
//!          dirs × 16 bytes: stamp digest u64 (see [`RowStamp`]), first
//!            entry u32, first child u32
//!          entries × 3 bytes, type (d_type) << 20 | name id, when there
//!            are at most 2^20 names; else × u32, type << 28 | name id
//!          name runs × 12 bytes: length u32, first id u32, first byte u32
//!          names: each run's names of its length, one after another
//! ```
//!
//! Directories are breadth-first from the root (row 0), so a directory's
//! subdirectories have consecutive rows, all greater than its own: the
//! k-th entry of type directory in a directory is the row `first child +
//! k`, and a reader never loops, whatever the bytes say. Each directory's
//! entries are contiguous, and which ignore files it holds is which names
//! they have. A name is stored once however many entries have it (a
//! million entries of a source tree have 200k distinct names), so a query
//! matches each distinct name once. Names come in runs of one length with
//! nothing between them: a name's place follows from its id, and a search
//! of the bytes for a string finds every name that holds it. [`Index::parse`]
//! checks everything a reader relies on before anything is read, so a
//! query sees a whole index or a clean error; and that every name is a
//! file name and the root a real path, so no path made of them leaves
//! the tree, whoever wrote the file.

//!
//! The parts, one a file: `checksum` (of the file as it is written),
//! `names` (the table of distinct names, and their runs in a file),
//! `writer` ([`IndexWriter`]) and `reader` ([`Index`]); here, what they
//! share: the layout's constants, the stamps and the entry words.

use std::fmt;

use fnd_walk::{FileType, Metadata};

mod checksum;
mod names;
mod reader;
mod writer;

pub use checksum::{checksum, seal, Checksum};
pub use names::NameTable;
pub use reader::{Dir, Entry, Index};
pub use writer::IndexWriter;

/// What a file must start with.
pub const MAGIC: &[u8; 8] = b"FNDINDX\n";
/// The version this build reads and writes.
pub const VERSION: u32 = 5;

const HEADER: usize = 64;
/// A directory's row: 28 bytes with its inode and ctime whole (version 2)
/// were a third of the index of the `src` tree; 18 with a device index
/// and ignore files' bits (version 4).
const DIR_ROW: usize = 16;
/// Where a row's fields are.
const ROW_FIRST_ENTRY: usize = 8;
const ROW_FIRST_CHILD: usize = 12;
/// A run of names of one length: its length, its first id and where its
/// names start. Runs took the place of a length before each name and an
/// offset every 8 names (version 4): 136 kB of the 2.96 MB index of /usr
/// (90,745 names), which put it over plocate's database.
const RUN: usize = 12;
/// Runs past which a writer sorts all its names by length again: each
/// refresh adds a run for each length among the names it adds.
const MAX_RUNS: usize = 1024;
/// Names per offset of the name index of a [`NameTable`] (in memory):
/// finding a name skips 3.5 lengths on average.
const NAME_BLOCK: usize = 8;
const TYPE_SHIFT: u32 = 28;
/// Names up to which an entry takes 3 bytes rather than 4 (a quarter of
/// the entries' table, a tenth of the index of the `src` tree).
const NARROW_NAMES: u32 = 1 << 20;
const NARROW_SHIFT: u32 = 20;
const ID_MASK: u32 = (1 << TYPE_SHIFT) - 1;

/// A directory's identity and change stamp: when any part differs, its
/// listing may have changed. The ctime alone says so: whatever changes a
/// directory's mtime (an entry made, removed or renamed, `utimes`) sets
/// its ctime too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub ctime: i64,
    pub ctime_ns: u32,
}

impl From<&Metadata> for Stamp {
    fn from(m: &Metadata) -> Stamp {
        Stamp {
            dev: m.dev,
            ino: m.ino,
            ctime: m.ctime,
            ctime_ns: m.ctime_nsec,
        }
    }
}

impl Stamp {
    /// The ctime in nanoseconds.
    pub(crate) fn ctime_nanos(&self) -> i64 {
        self.ctime
            .saturating_mul(1_000_000_000)
            .saturating_add(i64::from(self.ctime_ns))
    }
}

/// What a directory's row keeps of its [`Stamp`]: its device, inode and
/// ctime as one 64-bit digest (version 4 kept the device apart, as 2
/// bytes a row indexing a table of devices).
/// A directory whose ctime changed always has another digest (the inode
/// and the device are multiplied by odd constants and the ctime xor-ed
/// in, so for one directory the digest is a bijection of its ctime);
/// another directory in its place (another device or inode, another
/// ctime) has the same digest one time in 2^64.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowStamp {
    pub digest: u64,
}

impl RowStamp {
    /// The stamp of a directory the index does not hold whole (its
    /// listing failed or was cut short) or may not (its ctime was too
    /// recent to trust, see `build::kept_stamp`): no directory has it (but
    /// one time in 2^64), so every check reads the directory again.
    pub const READ_AGAIN: RowStamp = RowStamp { digest: 0 };
}

impl From<Stamp> for RowStamp {
    fn from(s: Stamp) -> RowStamp {
        const ODD: u64 = 0x9E37_79B9_7F4A_7C15;
        const OTHER_ODD: u64 = 0xC2B2_AE3D_27D4_EB4F;
        RowStamp {
            digest: s.ino.wrapping_mul(ODD) ^ s.dev.wrapping_mul(OTHER_ODD).rotate_left(32) ^ s.ctime_nanos() as u64,
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

const DIR_NIBBLE: u32 = 4;

/// Four 3-byte entries (12 bytes) as their 24-bit words, from three
/// loads.
#[inline(always)]
fn four_narrow(c: &[u8]) -> [u32; 4] {
    let word = |at: usize| u32::from_le_bytes([c[at], c[at + 1], c[at + 2], c[at + 3]]);
    let (w0, w1, w2) = (word(0), word(4), word(8));
    [
        w0 & 0xff_ffff,
        w0 >> 24 | (w1 & 0xffff) << 8,
        w1 >> 16 | (w2 & 0xff) << 16,
        w2 >> 8,
    ]
}

/// The 3-byte entry at the start of `bytes`, as its 24-bit word.
fn narrow_at(bytes: &[u8]) -> u32 {
    u32::from_le_bytes([bytes[0], bytes[1], bytes[2], 0])
}

/// A 3-byte entry (type << 20 | id) as a word (type << 28 | id).
fn widen(narrow: u32) -> u32 {
    (narrow >> NARROW_SHIFT) << TYPE_SHIFT | narrow & (NARROW_NAMES - 1)
}

/// A word (type << 28 | id, the id below 2^20) as a 3-byte entry: what
/// [`widen`] undoes.
fn narrow(word: u32) -> u32 {
    (word >> TYPE_SHIFT) << NARROW_SHIFT | word & (NARROW_NAMES - 1)
}

/// The type of an entry word's top four bits.
fn type_of(word: u32) -> FileType {
    FileType::from_mode((word >> TYPE_SHIFT) << 12)
}

fn u32_le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_le(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut w = IndexWriter::new(b"/r", 5);
        w.add_dir(Stamp::default());
        w.add_entry(b"a", FileType::Dir);
        w.add_entry(b"b", FileType::Symlink);
        w.add_dir(Stamp {
            ino: 7,
            ctime: -3,
            ctime_ns: 5,
            dev: 9,
        });
        w.add_entry(b".gitignore", FileType::File);
        w.add_entry(b"b", FileType::File);
        w.finish()
    }

    #[test]
    fn written_as_made_or_in_memory_the_file_is_the_same() {
        let mut w = IndexWriter::new(b"/r", 5);
        w.add_dir(Stamp::default());
        for i in 0..40_000u32 {
            w.add_entry(format!("n{}", i % 900).as_bytes(), FileType::File);
        }
        let mut streamed = Vec::new();
        w.finish_to(&mut streamed).unwrap();
        assert_eq!(streamed, w.finish());
        assert!(Index::parse(&streamed).is_ok());
    }

    #[test]
    fn reads_what_it_wrote() {
        let bytes = sample();
        let index = Index::parse(&bytes).unwrap();
        assert_eq!(index.built_at(), 5);
        let a = index.find(b"a").unwrap();
        let stamp = Stamp {
            ino: 7,
            ctime: -3,
            ctime_ns: 5,
            dev: 9,
        };
        assert_eq!(index.dir(a).stamp(), stamp.into());
        assert_ne!(index.dir(0).stamp(), stamp.into());
        let elsewhere = Stamp { dev: 10, ..stamp };
        assert_ne!(
            index.dir(a).stamp(),
            elsewhere.into(),
            "the device is part of the stamp"
        );
        let names: Vec<_> = index.dir(0).entries().map(|e| (e.name, e.file_type)).collect();
        assert_eq!(names, [(&b"a"[..], FileType::Dir), (&b"b"[..], FileType::Symlink)]);
        assert_eq!(index.find(b"b"), None);
        assert_eq!(index.name_count(), 3, "b is stored once");
        assert_eq!(index.parent(a), Some((0, 0)));
        assert_eq!(index.dir_of_entry(3), a);
        let long = vec![b'x'; 300];
        let mut w = IndexWriter::new(b"/", 0);
        w.add_dir(Stamp::default());
        for i in 0..20u8 {
            w.add_entry(&[&long[..], &[b'a' + i]].concat(), FileType::File);
        }
        let bytes = w.finish();
        let index = Index::parse(&bytes).unwrap();
        assert_eq!(index.name(19).len(), 301);
        let table = index.name_table();
        let at = table.len() - 1;
        assert_eq!(
            index.name_holding(at).map(|(id, _, end)| (id, end)),
            Some((19, table.len()))
        );
        assert_eq!(index.name_holding(table.len()), None);
        let (id, name, _) = index.name_holding(305).unwrap();
        assert_eq!((id, name.len()), (1, 301));
        assert_eq!(index.names().count(), 20);
    }

    /// Up to 2^20 names an entry takes 3 bytes, past that 4; either way
    /// it reads back as written.
    #[test]
    fn entries_are_narrow_up_to_a_million_names_and_wide_past() {
        for names in [NARROW_NAMES, NARROW_NAMES + 1] {
            let mut w = IndexWriter::new(b"/r", 5);
            w.add_dir(Stamp::default());
            for i in 0..names {
                let t = if i % 3 == 0 { FileType::Symlink } else { FileType::File };
                w.add_entry(format!("{i:x}").as_bytes(), t);
            }
            w.add_entry(b"0", FileType::File);
            let bytes = w.finish();
            let index = Index::parse(&bytes).unwrap();
            let width = if names == NARROW_NAMES { 3 } else { 4 };
            assert_eq!(u32_le(&bytes, 12), width);
            let last = names as usize - 1;
            let (id, file_type) = index.entry(last);
            assert_eq!(index.name(id), format!("{last:x}").as_bytes());
            assert_eq!(file_type, [FileType::Symlink, FileType::File, FileType::File][last % 3]);
            let zero = index.entry(0).0;
            assert_eq!(index.entries_named(zero, 10), Some(vec![0, names as usize]));
            assert_eq!(index.entries_named(zero, 1), None);
            assert_eq!(index.entries_named(names + 1, 10), Some(vec![]), "no such name");
            assert_eq!(
                index.entry_words_from(last, 2).map(|w| w & ID_MASK).collect::<Vec<_>>(),
                [id, zero]
            );
        }
    }

    /// Names of one length follow one another, whatever the order they
    /// came in; each is found from its id and from any of its bytes; names
    /// no entry has are left out; a writer that took an index's names
    /// adds its own after them.
    #[test]
    fn names_are_stored_in_runs_of_one_length() {
        let names: Vec<String> = (0..500u32)
            .map(|i| "x".repeat(1 + (i * 7 % 13) as usize) + &i.to_string())
            .collect();
        let mut w = IndexWriter::new(b"/r", 0);
        w.add_dir(Stamp::default());
        w.intern(b"never an entry's");
        for n in &names {
            w.add_entry(n.as_bytes(), FileType::File);
        }
        let bytes = w.finish();
        let index = Index::parse(&bytes).unwrap();
        assert_eq!(index.name_count(), names.len());
        let lens: Vec<usize> = index.names().map(|(_, n)| n.len()).collect();
        assert!(lens.is_sorted(), "one run per length, shortest first");
        for (e, n) in names.iter().enumerate() {
            assert_eq!(index.name(index.entry(e).0), n.as_bytes());
        }
        let table = index.name_table();
        for at in 0..table.len() {
            let (id, name, next) = index.name_holding(at).unwrap();
            assert_eq!(index.name(id), name);
            assert!(next - name.len() <= at && at < next && &table[next - name.len()..next] == name);
        }
        let mut more = IndexWriter::with_names_of(&index, 0);
        more.add_dir(Stamp::default());
        for e in 0..index.entry_count() {
            let (id, t) = index.entry(e);
            more.add_entry_id(id, t);
        }
        more.add_entry(b"a", FileType::Dir);
        more.add_entry(names[0].as_bytes(), FileType::File);
        more.add_dir(Stamp::default());
        let again = more.finish();
        let again = Index::parse(&again).unwrap();
        assert_eq!(
            again.name_count(),
            names.len() + 2,
            "added after, looked up in the added only"
        );
        assert_eq!(again.name(names.len() as u32), b"a", "the shorter first");
        let listed: Vec<&[u8]> = again.dir(0).entries().map(|e| e.name).collect();
        let mut expected: Vec<&[u8]> = names.iter().map(|n| n.as_bytes()).collect();
        expected.extend([&b"a"[..], names[0].as_bytes()]);
        assert_eq!(listed, expected);
    }

    /// Refreshes that each add names of many lengths leave a run per
    /// length each time, until they are too many: then all names are
    /// sorted by length again, and every entry keeps its name.
    #[test]
    fn runs_left_by_refreshes_are_merged_when_too_many() {
        let mut bytes = {
            let mut w = IndexWriter::new(b"/r", 0);
            w.add_dir(Stamp::default());
            w.finish()
        };
        let mut expected: Vec<Vec<u8>> = Vec::new();
        let (mut runs, mut merged) = (0, false);
        for round in 0..40u32 {
            let index = Index::parse(&bytes).unwrap();
            merged |= (index.n_runs as usize) < runs;
            runs = index.n_runs as usize;
            let mut w = IndexWriter::with_names_of(&index, 0);
            w.add_dir(Stamp::default());
            w.add_entry_words(index.entry_words());
            for len in (1..=30).rev() {
                let name = format!("{round:x}").repeat(len).into_bytes();
                w.add_entry(&name, FileType::File);
                expected.push(name);
            }
            bytes = w.finish();
        }
        assert!(merged, "the runs were merged once past {MAX_RUNS}");
        let index = Index::parse(&bytes).unwrap();
        let names: Vec<Vec<u8>> = index.dir(0).entries().map(|e| e.name.to_vec()).collect();
        assert_eq!(names, expected);
    }

    /// Past what the file's fields hold, writing is an error and writes
    /// nothing (as if 2^32 directories had been added).
    #[test]
    fn a_tree_too_large_for_one_file_is_an_error() {
        let mut w = IndexWriter::new(b"/r", 0);
        w.add_dir(Stamp::default());
        w.add_entry(b"a", FileType::File);
        w.n_dirs = u32::MAX;
        let mut out = Vec::new();
        let e = w.finish_to(&mut out).unwrap_err();
        assert_eq!(e.to_string(), "the tree is too large for one index file");
        assert!(out.is_empty());
    }

    /// The names of an older index that no entry has any more are dropped
    /// once they are many, and all names sorted into runs again.
    #[test]
    fn names_of_entries_gone_are_dropped_when_many() {
        let mut w = IndexWriter::new(b"/r", 0);
        w.add_dir(Stamp::default());
        for i in 0..300u32 {
            w.add_entry(
                format!("{}", 10u64.pow(i % 9) + u64::from(i)).as_bytes(),
                FileType::File,
            );
        }
        let bytes = w.finish();
        let index = Index::parse(&bytes).unwrap();
        let mut w = IndexWriter::with_names_of(&index, 0);
        w.add_dir(Stamp::default());
        w.add_entry_id(index.entry(299).0, FileType::File);
        w.add_entry(b"new", FileType::File);
        let bytes = w.finish();
        let index = Index::parse(&bytes).unwrap();
        let names: Vec<&[u8]> = index.names().map(|(_, n)| n).collect();
        assert_eq!(names, [&b"399"[..], b"new"]);
        assert_eq!(index.dir(0).entries().map(|e| e.name).collect::<Vec<_>>(), names);
    }

    /// A name that would lead out of its directory, or a root that is not
    /// a real path, is refused however well the file is made otherwise
    /// (a forged index, its checksum made right).
    #[test]
    fn a_name_that_is_not_a_file_name_is_refused() {
        let with = |root: &[u8], name: &[u8]| {
            let mut w = IndexWriter::new(root, 0);
            w.add_dir(Stamp::default());
            w.add_entry(b"ok", FileType::Dir);
            w.add_entry(name, FileType::File);
            w.add_dir(Stamp::default());
            Index::parse(&w.finish()).map(drop)
        };
        let refused = Err(FormatError::Corrupt("a name that is not a file name"));
        for name in [&b"d/../../victim"[..], b"..", b".", b"/", b"a\0", b"\0"] {
            assert_eq!(with(b"/r", name), refused, "{:?}", String::from_utf8_lossy(name));
        }
        for name in [&b"..."[..], b".a", b"\xff\xfe", b"a b"] {
            assert_eq!(with(b"/r", name), Ok(()));
        }
        let bad_root = Err(FormatError::Corrupt("a root that is not a real path"));
        for root in [&b""[..], b"r", b"/r/../etc", b"/r//s", b"/r/", b"/r\0"] {
            assert_eq!(with(root, b"f"), bad_root, "{:?}", String::from_utf8_lossy(root));
        }
        assert_eq!(with(b"/", b"f"), Ok(()));
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
        other[8] = 3;
        assert_eq!(Index::parse(&other).err(), Some(FormatError::Version(3)));
    }
}
