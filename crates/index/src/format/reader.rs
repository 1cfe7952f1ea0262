//! Reading an index: every field a reader relies on checked once, before
//! anything is read ([`Index::parse`]), then directories, entries and
//! names read in place.

use fnd_walk::{is_file_name, FileType};

use super::checksum::file_sum;
use super::names::{names_in_runs, Run};
use super::{
    four_narrow, narrow_at, type_of, u32_le, u64_le, widen, FormatError, RowStamp, DIR_ROW, HEADER, ID_MASK, MAGIC,
    NARROW_NAMES, ROW_FIRST_CHILD, ROW_FIRST_ENTRY, RUN, VERSION,
};

/// A checked index over its bytes (a file read into memory, usually).
#[derive(Clone, Copy)]
pub struct Index<'a> {
    built_at: i64,
    root: &'a [u8],
    dirs: &'a [u8],
    entries: &'a [u8],
    runs: &'a [u8],
    pub(super) names: &'a [u8],
    n_dirs: u32,
    n_entries: u32,
    pub(super) name_count: u32,
    pub(super) n_runs: u32,
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
    pub(super) fn run(&self, k: usize) -> Run {
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
