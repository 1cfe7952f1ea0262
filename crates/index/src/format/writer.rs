//! Writing an index: directories breadth-first, each with its entries;
//! the names sorted into runs and the file written as it is made.

use std::io;

use fnd_walk::FileType;

use super::checksum::{header_sum, Checksum};
use super::names::{NameTable, StoredNames};
use super::{
    narrow, type_byte, Index, RowStamp, DIR_NIBBLE, DIR_ROW, HEADER, ID_MASK, MAGIC, MAX_RUNS, NARROW_NAMES, RUN,
    TYPE_SHIFT, VERSION,
};

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
    pub(super) n_dirs: u32,
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
