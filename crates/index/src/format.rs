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

use std::fmt;
use std::io;

use fnd_walk::{is_file_name, FileType, Metadata};

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

/// A checksum of `bytes`: four independent multiply-xor lanes over 8-byte
/// words, so the multiplications overlap (one lane ran at a third of the speed).
pub fn checksum(bytes: &[u8]) -> u64 {
    let mut sum = Checksum::default();
    sum.update(bytes);
    sum.finish()
}

/// [`checksum`] of bytes that come in pieces.
///
/// ```
/// use fnd_index::format::{checksum, Checksum};
///
/// let mut sum = Checksum::default();
/// sum.update(b"an index ");
/// sum.update(b"written as it is made");
/// assert_eq!(sum.finish(), checksum(b"an index written as it is made"));
/// ```
#[derive(Clone)]
pub struct Checksum {
    lanes: [u64; 4],
    /// The start of a 32-byte block, waiting for the rest.
    pending: [u8; 32],
    pending_len: usize,
    len: u64,
}

impl Default for Checksum {
    fn default() -> Checksum {
        Checksum {
            lanes: [1, 2, 3, 4],
            pending: [0; 32],
            pending_len: 0,
            len: 0,
        }
    }
}

impl Checksum {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;

    pub fn update(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len() as u64;
        if self.pending_len > 0 {
            let take = (32 - self.pending_len).min(bytes.len());
            self.pending[self.pending_len..self.pending_len + take].copy_from_slice(&bytes[..take]);
            self.pending_len += take;
            bytes = &bytes[take..];
            if self.pending_len < 32 {
                return;
            }
            let block = self.pending;
            Self::mix(&mut self.lanes, &block);
            self.pending_len = 0;
        }
        let mut blocks = bytes.chunks_exact(32);
        for block in &mut blocks {
            Self::mix(&mut self.lanes, block);
        }
        let rest = blocks.remainder();
        self.pending[..rest.len()].copy_from_slice(rest);
        self.pending_len = rest.len();
    }

    #[inline(always)]
    fn mix(lanes: &mut [u64; 4], block: &[u8]) {
        for (i, lane) in lanes.iter_mut().enumerate() {
            let w = u64::from_le_bytes(block[i * 8..i * 8 + 8].try_into().unwrap_or_default());
            *lane = (*lane ^ w).wrapping_mul(Self::K).rotate_left(29);
        }
    }

    pub fn finish(&self) -> u64 {
        let mut h = self.len;
        for lane in self.lanes {
            h = (h ^ lane).wrapping_mul(Self::K).rotate_left(31);
        }
        for &b in &self.pending[..self.pending_len] {
            h = (h ^ u64::from(b)).wrapping_mul(Self::K);
        }
        h ^ (h >> 32)
    }
}

/// The checksum a file stores: of its body and of its header but the sum itself.
fn file_sum(file: &[u8]) -> u64 {
    header_sum(&file[..HEADER], checksum(&file[HEADER..]))
}

/// [`file_sum`] from the header and the body's checksum.
fn header_sum(header: &[u8], body: u64) -> u64 {
    let header = [&header[..32], &header[40..HEADER]].concat();
    body ^ checksum(&header).rotate_left(1)
}

/// Store the right checksum in `file` (for fuzzing and tests: damage that
/// gets past the checksum must still be an error).
pub fn seal(file: &mut [u8]) {
    if file.len() >= HEADER {
        let sum = file_sum(file);
        file[32..40].copy_from_slice(&sum.to_le_bytes());
    }
}

/// A name's hash as a [`NameTable`] keeps it: 32 bits, spread over 64
/// for the table (which takes its index from the low bits and a tag from
/// the top ones).
fn name_hash(name: &[u8]) -> u32 {
    use std::hash::BuildHasher;
    let h = rustc_hash::FxBuildHasher.hash_one(name);
    (h ^ h >> 32) as u32
}

fn spread(hash: u32) -> u64 {
    u64::from(hash).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Distinct names, each given an id (its place): those of an index being
/// written, or those a listing found.
#[derive(Default)]
pub struct NameTable {
    index: Vec<u32>,
    bytes: Vec<u8>,
    count: u32,
    /// Each name interned, as its id, where it starts in `bytes` and its
    /// hash: no copy of the name and 12 bytes a slot (a map from a boxed
    /// copy of each name, growing as a thread listed, was a fifth of a
    /// build's CPU time, most of it waiting on memory). With the hash in
    /// the slot, growing the table reads no name again: it did, and took
    /// 4.6% of the CPU time of a build of /usr.
    ids: hashbrown::HashTable<(u32, u32, u32)>,
}

impl NameTable {
    /// How many names it holds (ids are below this).
    pub fn len(&self) -> usize {
        self.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The name with id `id` (below [`len`](Self::len)).
    pub fn name(&self, id: u32) -> &[u8] {
        let Some(&start) = self.index.get(id as usize / NAME_BLOCK) else {
            return &[];
        };
        let mut at = start as usize;
        for _ in 0..id as usize % NAME_BLOCK {
            at = name_at(&self.bytes, at).map_or(at, |(_, next)| next);
        }
        name_at(&self.bytes, at).map_or(&[], |(name, _)| name)
    }

    /// Every name, in id order.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let mut at = 0;
        (0..self.count).map_while(move |_| {
            let (name, next) = name_at(&self.bytes, at)?;
            at = next;
            Some(name)
        })
    }

    fn push(&mut self, name: &[u8]) -> u32 {
        if (self.count as usize).is_multiple_of(NAME_BLOCK) {
            self.index.push(self.bytes.len() as u32);
        }
        let mut len = name.len();
        while len >= 0x80 {
            self.bytes.push(len as u8 | 0x80);
            len >>= 7;
        }
        self.bytes.push(len as u8);
        self.bytes.extend_from_slice(name);
        self.count += 1;
        self.count - 1
    }

    /// The id of `name`, added if it is new.
    pub fn intern(&mut self, name: &[u8]) -> u32 {
        let hash = name_hash(name);
        let bytes = &self.bytes;
        let is_name =
            |&(_, at, h): &(u32, u32, u32)| h == hash && name_at(bytes, at as usize).is_some_and(|(n, _)| n == name);
        if let Some(&(id, ..)) = self.ids.find(spread(hash), is_name) {
            return id;
        }
        let at = self.bytes.len() as u32;
        let id = self.push(name);
        self.ids
            .insert_unique(spread(hash), (id, at, hash), |&(.., h)| spread(h));
        id
    }
}

/// A run of names of one length, as a file stores it (see [`RUN`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    len: u32,
    first_id: u32,
    first_byte: u32,
}

/// Names as a file stores them: in runs of one length, ids in order.
#[derive(Default)]
struct StoredNames {
    bytes: Vec<u8>,
    runs: Vec<Run>,
    count: u32,
}

impl StoredNames {
    /// Add `name` as the next id, in the last run if it has its length.
    fn push(&mut self, name: &[u8]) {
        let len = name.len() as u32;
        if self.runs.last().is_none_or(|r| r.len != len) {
            self.runs.push(Run {
                len,
                first_id: self.count,
                first_byte: self.bytes.len() as u32,
            });
        }
        self.bytes.extend_from_slice(name);
        self.count += 1;
    }

    fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        names_in_runs(&self.bytes, self.runs.iter().copied(), self.count).map(|(_, name)| name)
    }
}

/// The names of `runs` (in order, ids below `count`) over `bytes`, with
/// their ids, in id order.
fn names_in_runs<'b>(
    bytes: &'b [u8],
    runs: impl Iterator<Item = Run> + 'b,
    count: u32,
) -> impl Iterator<Item = (u32, &'b [u8])> + 'b {
    let mut runs = runs.peekable();
    std::iter::from_fn(move || {
        let run = runs.next()?;
        let end = runs.peek().map_or(count, |next| next.first_id);
        Some((run, end))
    })
    .flat_map(move |(run, end)| {
        let len = run.len as usize;
        let names = bytes
            .get(run.first_byte as usize..)
            .and_then(|b| b.get(..end.saturating_sub(run.first_id) as usize * len))
            .unwrap_or_default();
        (run.first_id..).zip(names.chunks_exact(len.max(1)))
    })
}

/// Writes an index: directories breadth-first, each with its entries.
///
/// ```
/// use fnd_index::format::{Index, IndexWriter, Stamp};
/// use fnd_walk::FileType;
///
/// let mut w = IndexWriter::new(b"/src", 1_700_000_000);
/// let root = w.add_dir(Stamp::default());
/// w.add_entry(b"lib", FileType::Dir);
/// w.add_entry(b"main.rs", FileType::File);
/// w.add_dir(Stamp::default()); // lib: row 1
/// w.add_entry(b"mod.rs", FileType::File);
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
    entries: Vec<u32>,
    /// Names as stored, from an older index ([`with_names_of`](Self::with_names_of)):
    /// the ids below `stored.count`.
    stored: StoredNames,
    /// Names added since, ids from `stored.count` up; sorted into runs
    /// when the file is written.
    names: NameTable,
    n_dirs: u32,
    /// Entries of type directory so far: the next child's row, less one.
    children: u32,
}

impl IndexWriter {
    pub fn new(root: &[u8], built_at: i64) -> IndexWriter {
        IndexWriter {
            built_at,
            root: root.to_vec(),
            dirs: Vec::new(),
            entries: Vec::new(),
            stored: StoredNames::default(),
            names: NameTable::default(),
            n_dirs: 0,
            children: 0,
        }
    }

    /// A writer that starts with the names of `index` (with their ids,
    /// for [`add_entry_id`](Self::add_entry_id)); names added later are
    /// not looked up among them, so one may be stored twice.
    pub fn with_names_of(index: &Index<'_>, built_at: i64) -> IndexWriter {
        let mut w = IndexWriter::new(index.root(), built_at);
        w.stored = StoredNames {
            bytes: index.names.to_vec(),
            runs: (0..index.n_runs as usize).map(|k| index.run(k)).collect(),
            count: index.name_count,
        };
        w
    }

    /// A writer whose names are those of `table`, with their ids (for
    /// [`add_entry_id`](Self::add_entry_id)).
    pub fn with_table(root: &[u8], built_at: i64, table: &NameTable) -> IndexWriter {
        let mut w = IndexWriter::new(root, built_at);
        w.names.index = table.index.clone();
        w.names.bytes = table.bytes.clone();
        w.names.count = table.count;
        w
    }

    /// The id of `name` among this writer's names, added if it is new
    /// (but see [`with_names_of`](Self::with_names_of)).
    pub fn intern(&mut self, name: &[u8]) -> u32 {
        self.stored.count + self.names.intern(name)
    }

    /// Room for `dirs` directories, `entries` entries and `names` bytes of
    /// names, so the tables are not copied as they grow.
    pub fn reserve(&mut self, dirs: usize, entries: usize, names: usize) {
        self.dirs.reserve(dirs * DIR_ROW);
        self.entries.reserve(entries);
        self.names.bytes.reserve(names);
    }

    /// Start the next directory (breadth-first); its entries follow with
    /// [`add_entry`](Self::add_entry). Returns its row.
    pub fn add_dir(&mut self, stamp: impl Into<RowStamp>) -> u32 {
        let row = self.n_dirs;
        self.n_dirs += 1;
        let d = &mut self.dirs;
        d.extend_from_slice(&stamp.into().digest.to_le_bytes());
        d.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        d.extend_from_slice(&(self.children + 1).to_le_bytes());
        row
    }

    /// Rows of directories written so far (the next one's row).
    pub fn dirs(&self) -> u32 {
        self.n_dirs
    }

    /// An entry of the last directory started; an entry of type directory
    /// is the next row's directory (written later, breadth-first).
    pub fn add_entry(&mut self, name: &[u8], file_type: FileType) {
        let id = self.intern(name);
        self.add_entry_id(id, file_type);
    }

    /// An entry whose name has id `id` in the index this writer took its
    /// names from ([`with_names_of`](Self::with_names_of)).
    pub fn add_entry_id(&mut self, id: u32, file_type: FileType) {
        let t = u32::from(type_byte(file_type));
        self.children += u32::from(t == DIR_NIBBLE);
        self.entries.push(t << TYPE_SHIFT | id & ID_MASK);
    }

    /// Entries of the last directory started, as an index's
    /// [`entry_words`](Index::entry_words) give them, their names' ids
    /// those of the index this writer took its names from; returns how
    /// many are directories.
    pub fn add_entry_words(&mut self, words: impl Iterator<Item = u32>) -> usize {
        let before = self.entries.len();
        self.entries.extend(words);
        let dirs = self.entries[before..]
            .iter()
            .filter(|&&e| e >> TYPE_SHIFT == DIR_NIBBLE)
            .count();
        self.children += dirs as u32;
        dirs
    }

    /// The file's bytes; none when the tree is too large for one file
    /// (see [`finish_to`](Self::finish_to), which says so).
    pub fn finish(mut self) -> Vec<u8> {
        // Names not stored yet take at most their table's bytes.
        let mut out = Vec::with_capacity(HEADER + self.body_len() + self.names.bytes.len());
        // Writing to a Vec fails only before anything is written.
        let _ = self.finish_to(&mut out);
        out
    }

    /// Write the file to `out` as it is made: no copy of it in memory (a
    /// refresh of million that made one peaked at 41 MB, this at 30 MB).
    /// An error, before anything is written, when the tree is too large
    /// for one file.
    ///
    /// ```
    /// use fnd_index::format::{Index, IndexWriter, Stamp};
    /// use fnd_walk::FileType;
    ///
    /// let mut w = IndexWriter::new(b"/src", 0);
    /// w.add_dir(Stamp::default());
    /// w.add_entry(b"main.rs", FileType::File);
    /// let mut file = Vec::new();
    /// w.finish_to(&mut file).unwrap();
    /// assert_eq!(Index::parse(&file).unwrap().entry_count(), 1);
    /// assert_eq!(file, w.finish());
    /// ```
    pub fn finish_to(&mut self, out: &mut impl io::Write) -> io::Result<()> {
        self.store_names();
        self.check_fits()?;
        let mut header = Vec::with_capacity(HEADER);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&(self.entry_width() as u32).to_le_bytes());
        header.extend_from_slice(&self.built_at.to_le_bytes());
        header.extend_from_slice(&(self.body_len() as u64).to_le_bytes());
        header.extend_from_slice(&0u64.to_le_bytes());
        for n in [
            self.n_dirs,
            self.entries.len() as u32,
            self.stored.count,
            self.stored.runs.len() as u32,
            self.root.len() as u32,
            self.stored.bytes.len() as u32,
        ] {
            header.extend_from_slice(&n.to_le_bytes());
        }
        let mut body = Checksum::default();
        self.each_body_part(&mut |part| {
            body.update(part);
            Ok(())
        })?;
        let sum = header_sum(&header, body.finish());
        header[32..40].copy_from_slice(&sum.to_le_bytes());
        out.write_all(&header)?;
        self.each_body_part(&mut |part| out.write_all(part))
    }

    /// An error when the tables outgrow the file's fields: names ids of
    /// 28 bits, counts and offsets of 32 (some 268 million distinct names,
    /// 4 GiB of them, 4 billion entries or directories).
    fn check_fits(&self) -> io::Result<()> {
        let fits = self.stored.count <= ID_MASK
            && u32::try_from(self.stored.bytes.len()).is_ok()
            && u32::try_from(self.entries.len()).is_ok()
            && self.n_dirs < u32::MAX;
        if fits {
            Ok(())
        } else {
            Err(io::Error::other("the tree is too large for one index file"))
        }
    }

    /// Move the names added into runs of one length after the stored
    /// ones, leaving out those no entry has, and give the entries the
    /// names' new ids. The stored names too are sorted again (and those
    /// no entry has dropped) when many are of entries since gone, or
    /// refreshes left them in many runs.
    fn store_names(&mut self) {
        let total = self.stored.count as usize + self.names.len();
        let mut used = vec![false; total];
        for e in &self.entries {
            if let Some(u) = used.get_mut((e & ID_MASK) as usize) {
                *u = true;
            }
        }
        let stored = self.stored.count as usize;
        let stored_used = used[..stored].iter().filter(|&&u| u).count();
        if stored_used + stored_used / 4 + 64 < stored || self.stored.runs.len() > MAX_RUNS {
            let mut all = NameTable::default();
            for name in self.stored.iter().chain(self.names.iter()) {
                all.push(name);
            }
            self.stored = StoredNames::default();
            self.names = all;
        }
        let base = self.stored.count;
        let added = std::mem::take(&mut self.names);
        let used = &used[base as usize..];
        // A counting sort by length (ids in order within a length).
        let names: Vec<&[u8]> = added.iter().collect();
        let longest = names.iter().map(|n| n.len()).max().unwrap_or(0);
        let mut place = vec![0u32; longest + 2];
        for (name, _) in names.iter().zip(used).filter(|(_, &u)| u) {
            place[name.len() + 1] += 1;
        }
        for len in 1..place.len() {
            place[len] += place[len - 1];
        }
        let mut new_id = vec![u32::MAX; names.len()];
        let mut order = vec![0u32; place[longest + 1] as usize];
        for (id, name) in names.iter().enumerate() {
            if used[id] {
                let at = &mut place[name.len()];
                new_id[id] = base + *at;
                order[*at as usize] = id as u32;
                *at += 1;
            }
        }
        self.stored
            .bytes
            .reserve(order.iter().map(|&id| names[id as usize].len()).sum());
        for &id in &order {
            self.stored.push(names[id as usize]);
        }
        for e in self.entries.iter_mut() {
            let id = *e & ID_MASK;
            if id >= base {
                let new = new_id.get((id - base) as usize).copied().unwrap_or(0);
                *e = *e & !ID_MASK | new;
            }
        }
    }

    fn body_len(&self) -> usize {
        self.root.len()
            + self.dirs.len()
            + self.entries.len() * self.entry_width()
            + self.stored.runs.len() * RUN
            + self.stored.bytes.len()
    }

    /// The body's bytes, in pieces of at most 64 KiB where a table is
    /// turned into bytes on the way.
    fn each_body_part(&self, f: &mut dyn FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        const WORDS: usize = 16 * 1024;
        let mut buf = Vec::with_capacity(WORDS * 8);
        f(&self.root)?;
        f(&self.dirs)?;
        let width = self.entry_width();
        for chunk in self.entries.chunks(WORDS) {
            buf.clear();
            for &w in chunk {
                if width == 3 {
                    buf.extend_from_slice(&narrow(w).to_le_bytes()[..3]);
                } else {
                    buf.extend_from_slice(&w.to_le_bytes());
                }
            }
            f(&buf)?;
        }
        for chunk in self.stored.runs.chunks(WORDS / 2) {
            buf.clear();
            for run in chunk {
                for n in [run.len, run.first_id, run.first_byte] {
                    buf.extend_from_slice(&n.to_le_bytes());
                }
            }
            f(&buf)?;
        }
        f(&self.stored.bytes)
    }

    /// Bytes an entry takes in the file.
    fn entry_width(&self) -> usize {
        if self.stored.count as usize + self.names.len() <= NARROW_NAMES as usize {
            3
        } else {
            4
        }
    }
}

/// A checked index over its bytes (a file read into memory, usually).
#[derive(Clone, Copy)]
pub struct Index<'a> {
    built_at: i64,
    root: &'a [u8],
    dirs: &'a [u8],
    entries: &'a [u8],
    runs: &'a [u8],
    names: &'a [u8],
    n_dirs: u32,
    n_entries: u32,
    name_count: u32,
    n_runs: u32,
    /// Bytes an entry takes: 3 or 4.
    entry_width: usize,
}

/// One directory of an index.
#[derive(Clone, Copy)]
pub struct Dir<'a> {
    index: Index<'a>,
    row: u32,
}

/// One entry of a directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    pub name: &'a [u8],
    /// Its name's id (entries with the same name have the same id, mostly).
    pub name_id: u32,
    pub file_type: FileType,
    /// Its directory row, when it is a directory the index read.
    pub dir: Option<u32>,
}

fn u32_le(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_le(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The name starting at `at` in `bytes` and where the next starts, if it is whole.
fn name_at(bytes: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let mut len = 0usize;
    let mut at = at;
    for shift in [0, 7, 14] {
        let b = *bytes.get(at)?;
        at += 1;
        len |= usize::from(b & 0x7f) << shift;
        if b < 0x80 {
            let name = bytes.get(at..at.checked_add(len)?)?;
            return Some((name, at + len));
        }
    }
    None
}

impl<'a> Index<'a> {
    /// Check `bytes` whole (header, checksum, every row) and read them.
    pub fn parse(bytes: &'a [u8]) -> Result<Index<'a>, FormatError> {
        let index = Self::read(bytes, true)?;
        index.check()?;
        Ok(index)
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
        let version = u32_le(bytes, 8);
        if version != VERSION {
            return Err(FormatError::Version(version));
        }
        if bytes.len() < HEADER {
            return Err(FormatError::Truncated);
        }
        let built_at = u64_le(bytes, 16) as i64;
        let body_len = u64_le(bytes, 24);
        let body = &bytes[HEADER..];
        if (body.len() as u64) < body_len {
            return Err(FormatError::Truncated);
        }
        if body.len() as u64 != body_len {
            return Err(FormatError::Corrupt("trailing bytes"));
        }
        if check && file_sum(bytes) != u64_le(bytes, 32) {
            return Err(FormatError::Checksum);
        }
        let n = |at: usize| u32_le(bytes, at) as usize;
        let (n_dirs, n_entries, n_names, n_runs, root_len, names_len) = (n(40), n(44), n(48), n(52), n(56), n(60));
        let entry_width = n(12);
        if entry_width != if n_names <= NARROW_NAMES as usize { 3 } else { 4 } {
            return Err(FormatError::Corrupt("entry width"));
        }
        let mut rest = body;
        let mut take = |count: usize, size: usize| -> Result<&'a [u8], FormatError> {
            match count.checked_mul(size) {
                Some(len) if len <= rest.len() => {
                    let (a, b) = rest.split_at(len);
                    rest = b;
                    Ok(a)
                }
                _ => Err(FormatError::Corrupt("tables longer than the file")),
            }
        };
        let root = take(root_len, 1)?;
        let dirs = take(n_dirs, DIR_ROW)?;
        let entries = take(n_entries, entry_width)?;
        let runs = take(n_runs, RUN)?;
        let names = take(names_len, 1)?;
        if !rest.is_empty() {
            return Err(FormatError::Corrupt("trailing bytes"));
        }
        if n_dirs == 0 {
            return Err(FormatError::Corrupt("no root directory"));
        }
        Ok(Index {
            built_at,
            root,
            dirs,
            entries,
            runs,
            names,
            n_dirs: n_dirs as u32,
            n_entries: n_entries as u32,
            name_count: n_names as u32,
            n_runs: n_runs as u32,
            entry_width,
        })
    }

    /// Everything a reader relies on: each directory's entries and
    /// subdirectories follow the previous one's (so every row but the
    /// root's is the subdirectory of one row before it), names are in
    /// their table, and the runs of names follow one another to its end,
    /// none empty, no name empty.
    fn check(&self) -> Result<(), FormatError> {
        let (n_dirs, n_entries) = (self.n_dirs as usize, self.n_entries as usize);
        let mut last = (0, 1);
        for r in 0..n_dirs {
            let (first, child) = (
                self.field(r, ROW_FIRST_ENTRY) as usize,
                self.field(r, ROW_FIRST_CHILD) as usize,
            );
            if first < last.0 || first > n_entries || (r == 0 && first != 0) {
                return Err(FormatError::Corrupt("entries out of range"));
            }
            if child < last.1 || child <= r || child > n_dirs {
                return Err(FormatError::Corrupt("directory out of order"));
            }
            last = (first, child);
        }
        if self.n_entries > 0 && self.max_name_id() >= self.name_count {
            return Err(FormatError::Corrupt("name out of range"));
        }
        let mut next = (0u64, 0u64);
        for k in 0..self.n_runs as usize {
            let run = self.run(k);
            let end = self.run_end(k);
            if run.len == 0 || (run.first_id, run.first_byte) != (next.0 as u32, next.1 as u32) || end <= run.first_id {
                return Err(FormatError::Corrupt("name runs"));
            }
            next = (
                u64::from(end),
                next.1 + u64::from(end - run.first_id) * u64::from(run.len),
            );
        }
        if next != (u64::from(self.name_count), self.names.len() as u64) {
            return Err(FormatError::Corrupt("name runs"));
        }
        // Every name is a file name ([`is_file_name`]): a query joins names
        // to the search root, and `d/../../x` would name a file outside it
        // (to `-x rm`). A `/` or NUL anywhere in the table is one search of
        // its bytes; `.` and `..` are among the names of one or two bytes.
        if memchr::memchr2(b'/', 0, self.names).is_some()
            || (0..self.n_runs as usize)
                .filter(|&k| self.run(k).len <= 2)
                .any(|k| (self.run(k).first_id..self.run_end(k)).any(|id| !is_file_name(self.name(id))))
        {
            return Err(FormatError::Corrupt("a name that is not a file name"));
        }
        let root_ok = self.root.first() == Some(&b'/')
            && (self.root == b"/" || self.root[1..].split(|&b| b == b'/').all(is_file_name));
        if !root_ok {
            return Err(FormatError::Corrupt("a root that is not a real path"));
        }
        Ok(())
    }

    /// The u32 at `at` in directory row `r`.
    fn field(&self, r: usize, at: usize) -> u32 {
        u32_le(self.dirs, r * DIR_ROW + at)
    }

    /// Row `r`'s first entry and first child, or the ends past the last row.
    fn starts(&self, r: usize) -> (u32, u32) {
        if r < self.n_dirs as usize {
            (self.field(r, ROW_FIRST_ENTRY), self.field(r, ROW_FIRST_CHILD))
        } else {
            (self.n_entries, self.n_dirs)
        }
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
        self.n_dirs as usize
    }

    /// Bytes of names.
    pub fn names_len(&self) -> usize {
        self.names.len()
    }

    pub fn entry_count(&self) -> usize {
        self.n_entries as usize
    }

    /// How many names the name table holds (ids are below this).
    pub fn name_count(&self) -> usize {
        self.name_count as usize
    }

    /// The name with id `id` (below [`name_count`](Self::name_count)).
    pub fn name(&self, id: u32) -> &'a [u8] {
        if id >= self.name_count {
            return &[];
        }
        let k = self.last_run(|run| run.first_id <= id);
        let run = self.run(k);
        let start = run.first_byte as usize + (id.wrapping_sub(run.first_id) as usize) * run.len as usize;
        self.names.get(start..start + run.len as usize).unwrap_or_default()
    }

    /// Every name with its id, in id order.
    pub fn names(&self) -> impl Iterator<Item = (u32, &'a [u8])> + 'a {
        let index = *self;
        let runs = (0..self.n_runs as usize).map(move |k| index.run(k));
        names_in_runs(self.names, runs, self.name_count)
    }

    /// The name table's bytes: the names one after another, in id order,
    /// nothing between them. Searching them for a string finds the names
    /// holding it at once (see [`name_holding`](Self::name_holding)); a
    /// hit may also run from one name into the next.
    pub fn name_table(&self) -> &'a [u8] {
        self.names
    }

    /// The name holding byte `at` of the [`name_table`](Self::name_table):
    /// its id, itself, and where the next starts.
    pub fn name_holding(&self, at: usize) -> Option<(u32, &'a [u8], usize)> {
        if at >= self.names.len() {
            return None;
        }
        let k = self.last_run(|run| run.first_byte as usize <= at);
        let run = self.run(k);
        let nth = (at - run.first_byte as usize) / run.len as usize;
        let start = run.first_byte as usize + nth * run.len as usize;
        let end = start + run.len as usize;
        Some((run.first_id + nth as u32, &self.names[start..end], end))
    }

    /// Run `k` of names (below `n_runs`).
    fn run(&self, k: usize) -> Run {
        let field = |at| u32_le(self.runs, k * RUN + at);
        Run {
            len: field(0),
            first_id: field(4),
            first_byte: field(8),
        }
    }

    /// The id past run `k`'s last.
    fn run_end(&self, k: usize) -> u32 {
        if k + 1 < self.n_runs as usize {
            self.run(k + 1).first_id
        } else {
            self.name_count
        }
    }

    /// The last run for which `before` holds (it holds for the first, and
    /// for none after one for which it does not).
    fn last_run(&self, before: impl Fn(Run) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.n_runs as usize);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if before(self.run(mid)) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Entry `e` (below [`entry_count`](Self::entry_count)): its name's id and its type.
    pub fn entry(&self, e: usize) -> (u32, FileType) {
        let w = self.entry_word(e);
        (w & ID_MASK, type_of(w))
    }

    /// Entry `e` as one word: its type << 28 | its name's id.
    fn entry_word(&self, e: usize) -> u32 {
        if self.entry_width == 3 {
            let b = &self.entries[e * 3..e * 3 + 3];
            widen(narrow_at(b))
        } else {
            u32_le(self.entries, e * 4)
        }
    }

    /// The name ids of all entries, in entry order (entries of a directory
    /// are contiguous, directories in row order).
    pub fn entry_name_ids(&self) -> impl Iterator<Item = u32> + 'a {
        self.entry_words().map(|w| w & ID_MASK)
    }

    /// Every entry as one word, type << 28 | name id, in entry order.
    pub fn entry_words(&self) -> impl Iterator<Item = u32> + 'a {
        self.entry_words_from(0, self.n_entries as usize)
    }

    /// Entries `first..first + n` as [`entry_words`](Self::entry_words).
    pub fn entry_words_from(&self, first: usize, n: usize) -> impl Iterator<Item = u32> + 'a {
        let w = self.entry_width;
        let bytes = self.entries.get(first * w..(first + n) * w).unwrap_or_default();
        bytes.chunks_exact(w).map(move |c| match *c {
            [_, _, _] => widen(narrow_at(c)),
            _ => u32::from_le_bytes(c.try_into().unwrap_or_default()),
        })
    }

    /// The greatest name id of the entries (0 when there are none).
    /// Branch-free, so it runs on SIMD; 3-byte entries four at a time
    /// from three words (one at a time, the check of million's index took
    /// twice as long as with 4-byte entries).
    fn max_name_id(&self) -> u32 {
        if self.entry_width == 3 {
            let whole = self.entries.len() / 12 * 12;
            let (fours, rest) = self.entries.split_at(whole);
            let max = fours.chunks_exact(12).fold(0, |max, c| {
                let [a, b, c, d] = four_narrow(c);
                let mask = NARROW_NAMES - 1;
                max.max(a & mask).max(b & mask).max(c & mask).max(d & mask)
            });
            let rest = rest.chunks_exact(3).map(narrow_at);
            rest.fold(max, |max, w| max.max(w & (NARROW_NAMES - 1)))
        } else {
            self.entry_words().fold(0, |max, w| max.max(w & ID_MASK))
        }
    }

    /// The entries named `id`, in order; `None` past `most` of them. A
    /// scan of every entry, 64 at a time without a branch, so it runs on
    /// SIMD (a lookup per entry took 0.5 ms of a million entries, this 0.1).
    pub fn entries_named(&self, id: u32, most: usize) -> Option<Vec<usize>> {
        let mut hits = Vec::new();
        if id >= self.name_count {
            return Some(hits);
        }
        let w = self.entry_width;
        for (block, words) in self.entries.chunks(64 * w).enumerate() {
            let mut mask = 0u64;
            if w == 3 {
                let id = id & (NARROW_NAMES - 1);
                let whole = words.len() / 12 * 12;
                for (i, c) in words[..whole].chunks_exact(12).enumerate() {
                    for (j, word) in four_narrow(c).into_iter().enumerate() {
                        mask |= u64::from(word & (NARROW_NAMES - 1) == id) << (4 * i + j);
                    }
                }
                for (i, c) in words[whole..].chunks_exact(3).enumerate() {
                    let word = narrow_at(c);
                    mask |= u64::from(word & (NARROW_NAMES - 1) == id) << (whole / 3 + i);
                }
            } else {
                for (i, c) in words.chunks_exact(4).enumerate() {
                    let word = u32::from_le_bytes(c.try_into().unwrap_or_default());
                    mask |= u64::from(word & ID_MASK == id) << i;
                }
            }
            while mask != 0 {
                if hits.len() == most {
                    return None;
                }
                hits.push(block * 64 + mask.trailing_zeros() as usize);
                mask &= mask - 1;
            }
        }
        Some(hits)
    }

    /// The row of the directory holding entry `e`.
    pub fn dir_of_entry(&self, e: usize) -> u32 {
        let e = e as u32;
        let (mut lo, mut hi) = (0, self.n_dirs as usize);
        // The last row whose first entry is at or before `e`.
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if self.field(mid, ROW_FIRST_ENTRY) <= e {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo as u32
    }

    /// The row holding directory `row` and the entry naming it; `None` for the root.
    pub fn parent(&self, row: u32) -> Option<(u32, usize)> {
        if row == 0 || row >= self.n_dirs {
            return None;
        }
        let (mut lo, mut hi) = (0, self.n_dirs as usize);
        // The last row whose first child is at or before `row`.
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if self.field(mid, ROW_FIRST_CHILD) <= row {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let parent = self.dir(lo as u32);
        let (first, _) = self.starts(lo);
        let k = row - self.field(lo, ROW_FIRST_CHILD);
        let nth = (first..first + parent.len() as u32)
            .filter(|&e| self.entry(e as usize).1 == FileType::Dir)
            .nth(k as usize)?;
        Some((lo as u32, nth as usize))
    }

    /// Directory `row` (0 is the root); rows come from [`Entry::dir`] or
    /// are below [`dir_count`](Self::dir_count).
    pub fn dir(&self, row: u32) -> Dir<'a> {
        Dir { index: *self, row }
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
    /// What its row keeps of its stamp when it was read.
    pub fn stamp(&self) -> RowStamp {
        RowStamp {
            digest: u64_le(self.index.dirs, self.row as usize * DIR_ROW),
        }
    }

    /// Its first entry's number (for [`Index::entry`]).
    pub fn first_entry(&self) -> usize {
        self.index.starts(self.row as usize).0 as usize
    }

    pub fn len(&self) -> usize {
        let r = self.row as usize;
        (self.index.starts(r + 1).0 - self.index.starts(r).0) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The rows of its subdirectories, which follow one another.
    pub fn children(&self) -> std::ops::Range<u32> {
        let r = self.row as usize;
        self.index.starts(r).1..self.index.starts(r + 1).1
    }

    /// Its entries.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = Entry<'a>> + 'a {
        let index = self.index;
        self.raw_entries().map(move |(name_id, file_type, dir)| Entry {
            name: index.name(name_id),
            name_id,
            file_type,
            dir,
        })
    }

    /// Its entries without their names: name id, type, directory row.
    pub fn raw_entries(&self) -> impl ExactSizeIterator<Item = (u32, FileType, Option<u32>)> + 'a {
        let index = self.index;
        let first = self.first_entry();
        let children = self.children();
        let mut next_child = children.start;
        (first..first + self.len()).map(move |e| {
            let (name_id, file_type) = index.entry(e);
            let dir = (file_type == FileType::Dir && next_child < children.end).then(|| {
                next_child += 1;
                next_child - 1
            });
            (name_id, file_type, dir)
        })
    }
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
    fn a_checksum_in_pieces_is_the_checksum_of_the_whole() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        for len in [0, 1, 31, 32, 33, 64, 999, 1000] {
            let whole = checksum(&bytes[..len]);
            for piece in [1, 3, 31, 32, 33, 100] {
                let mut sum = Checksum::default();
                bytes[..len].chunks(piece).for_each(|p| sum.update(p));
                assert_eq!(sum.finish(), whole, "{len} bytes in pieces of {piece}");
            }
        }
        // The files of this version depend on it staying as it is.
        assert_eq!(checksum(b"fnd"), 0x8148_98b7_3c95_f03e);
        assert_eq!(checksum(&bytes), 0xc54c_1158_25bb_5cd7);
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
