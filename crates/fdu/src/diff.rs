//! `fdu --diff OLD [NEW]`: what changed between two scans. OLD is an
//! export in ncdu's format or a `--json` tree; NEW one too, or a directory
//! scanned now (without NEW: OLD's own root, scanned now).
//!
//! ```text
//! grew      +CHANGE  OLD  NEW  PATH     directories, largest change first
//! shrank    -CHANGE  OLD  NEW  PATH
//! appeared  +SIZE    -    NEW  PATH     entries, largest first
//! gone      -SIZE    OLD  -    PATH
//! ```
//!
//! (tab-separated; each part at most `--top N` lines; an entry that
//! appeared or went inside one that did too is not listed again.)
//!
//! No tree is built. An entry is known by a 64-bit hash of its path
//! below the root (chained from its parent's, so roots named differently
//! compare, and a collision is a one in 10^13 chance per pair on a million
//! entries); OLD is kept as the set of its files' hashes and the totals
//! of its directories (8 and 16 bytes an entry) and its names, packed
//! (`Names`: what is shown of OLD is named from them, so OLD is read
//! once). NEW is compared with it as it streams, or as the walk reads it:
//! then OLD is read on a thread of its own beside the walk, and what the
//! walk meets before OLD is read waits for it. A multiply-linked file
//! counts at the link whose path hashes lowest, on both sides, so the
//! same tree gives the same totals whichever order its scans met the
//! links in (a `--json` tree has its totals from du's rule, and lists only
//! the link that counted: against one, a file's other links are not news).

use std::hash::{BuildHasherDefault, Hasher};
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;
use std::sync::Arc;

use fnd_walk::{Chunk, Error, Flow, Metadata, Visitor, Walker};

use crate::exports::{self, Entry, Input, Sink};
use crate::json_stream::Writer;
use crate::messages::{error_text, quote, report};
use crate::settings::{Measure, Settings};
use crate::tally::Grouping;
use crate::usage::Usage;

/// Keys that are already [`child_hash`]es, whose bits are all mixed: the
/// table takes them as they are. (std's SipHash of every key was most of
/// the live diff's own time.)
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys come here; anything else still hashes well.
        for &b in bytes {
            self.0 = mix(self.0 ^ u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<Prehashed>>;
type HashSet<K> = std::collections::HashSet<K, BuildHasherDefault<Prehashed>>;

/// OLD's files: a set of [`child_hash`]es, open addressing with the keys
/// inline, linear probing, at most half full; a hash's low bits are its
/// home slot (they are mixed already). std's set (hashbrown) keeps its
/// control bytes apart from its keys, so a lookup among OLD's 0.8M files
/// of million cost about two cache misses: `Live::judge` was 7.2% of the
/// live diff's samples (perf, 2026-11-28), the one lookup per live file;
/// here it costs one, and the walk prefetches it besides.
#[derive(Default)]
struct FileSet {
    /// A power of two long (or empty); 0 marks a free slot.
    slots: Vec<u64>,
    /// Keys in `slots`.
    len: usize,
    /// Whether the key 0 (which cannot be stored in a slot) is in.
    zero: bool,
}

impl FileSet {
    fn mask(&self) -> usize {
        self.slots.len().wrapping_sub(1)
    }

    /// `key`'s slot, or the free one where its probe ends.
    fn find(&self, key: u64) -> usize {
        let mask = self.mask();
        let mut i = key as usize & mask;
        loop {
            let k = self.slots[i];
            if k == key || k == 0 {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    fn contains(&self, key: u64) -> bool {
        if key == 0 {
            return self.zero;
        }
        !self.slots.is_empty() && self.slots[self.find(key)] == key
    }

    /// A set of `keys`, sized for them once, each slot prefetched a few
    /// keys ahead (inserted one by one as an export was read, OLD's files
    /// were most of the reading's time, each waiting for its cache miss).
    fn from_keys(keys: &[u64]) -> FileSet {
        let size = (keys.len() * 2).next_power_of_two().max(16);
        let mut set = FileSet {
            slots: vec![0; size],
            len: 0,
            zero: false,
        };
        for (i, &key) in keys.iter().enumerate() {
            if let Some(&ahead) = keys.get(i + GONE_BATCH) {
                set.prefetch(ahead);
            }
            set.insert(key);
        }
        set
    }

    /// Whether `key` was not in yet.
    fn insert(&mut self, key: u64) -> bool {
        if key == 0 {
            return !std::mem::replace(&mut self.zero, true);
        }
        if (self.len + 1) * 2 > self.slots.len() {
            let size = (self.slots.len() * 2).max(16);
            let old = std::mem::replace(&mut self.slots, vec![0; size]);
            for k in old.into_iter().filter(|&k| k != 0) {
                let i = self.find(k);
                self.slots[i] = k;
            }
        }
        let i = self.find(key);
        if self.slots[i] == key {
            return false;
        }
        self.slots[i] = key;
        self.len += 1;
        true
    }

    /// Whether `key` was in. The keys after it in its run move back into
    /// the hole, so no probe stops short of them (no tombstones).
    fn remove(&mut self, key: u64) -> bool {
        if key == 0 {
            return std::mem::replace(&mut self.zero, false);
        }
        if self.slots.is_empty() {
            return false;
        }
        let mut hole = self.find(key);
        if self.slots[hole] != key {
            return false;
        }
        let mask = self.mask();
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let k = self.slots[j];
            if k == 0 {
                break;
            }
            // `k` may fill the hole unless its home lies after the hole.
            let home = k as usize & mask;
            if j.wrapping_sub(home) & mask >= j.wrapping_sub(hole) & mask {
                self.slots[hole] = k;
                hole = j;
            }
        }
        self.slots[hole] = 0;
        self.len -= 1;
        true
    }

    /// Start loading `key`'s slot, to be looked up soon.
    #[inline]
    fn prefetch(&self, key: u64) {
        #[cfg(target_arch = "x86_64")]
        if let Some(slot) = self.slots.get(key as usize & self.mask()) {
            // SAFETY: a prefetch only hints; the address is in the table.
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                    (slot as *const u64).cast::<i8>(),
                )
            };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = key;
    }
}

/// The root's hash.
const ROOT: u64 = 0x243F_6A88_85A3_08D3;

/// The hash of `name` inside the directory of hash `parent`.
pub fn child_hash(parent: u64, name: &[u8]) -> u64 {
    let mut h = mix(parent ^ (name.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    for chunk in name.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h = mix(h ^ u64::from_le_bytes(word));
    }
    h
}

/// splitmix64's finalizer: every bit of the input moves half the output's.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One link of a multiply-linked file, and the directories it adds to.
struct Link {
    dev: u64,
    ino: u64,
    hash: u64,
    amount: u64,
    /// Its directory's hash and theirs above it, up to the root.
    dirs: Vec<u64>,
}

/// Of each file's links the one whose path hashes lowest adds to its directories.
fn resolve_links(mut links: Vec<Link>, dirs: &mut HashMap<u64, u64>) {
    links.sort_unstable_by_key(|l| (l.dev, l.ino, l.hash));
    let mut last = None;
    for link in links {
        if last == Some((link.dev, link.ino)) {
            continue;
        }
        last = Some((link.dev, link.ino));
        for d in &link.dirs {
            let t = dirs.entry(*d).or_default();
            *t = t.saturating_add(link.amount);
        }
    }
}

/// What a scan leaves to compare: its directories' totals, and OLD's
/// files' hashes (NEW's are only compared).
#[derive(Default)]
struct Side {
    files: FileSet,
    dirs: HashMap<u64, u64>,
    /// The root as the scan names it.
    root: Vec<u8>,
    /// A `--json` tree lists a multiply-linked file at the link that
    /// counts only: its other links are neither there nor gone.
    one_link_only: bool,
}

/// Something NEW has and OLD had not, at its topmost.
struct Appeared {
    hash: u64,
    is_dir: bool,
    /// A file's amount (a directory's is its total, known at the end).
    amount: u64,
    path: Vec<u8>,
}

/// OLD's names, kept as it is read so that what is shown of it (changed
/// directories, what went) is named without reading it again: its
/// directories (hash, parent, name), and its files as they came, each
/// `LEB128(name length * 2) name LEB128(amount * 2 + hard link)`, after a
/// `LEB128(directory * 2 + 1)` where their directory changes (million's
/// 940k entries: about 12 MiB).
#[derive(Default)]
struct Names {
    /// The root first (its parent is itself).
    dirs: Vec<OldDir>,
    dir_names: Vec<u8>,
    files: Vec<u8>,
    /// The open directories, innermost last; and the one the files last
    /// written are in.
    open: Vec<u32>,
    current: Option<u32>,
}

struct OldDir {
    hash: u64,
    parent: u32,
    /// Its name's end in `dir_names` (it begins where the one before ends).
    name_end: usize,
}

fn put_leb(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn get_leb(bytes: &[u8], at: &mut usize) -> u64 {
    let mut n = 0u64;
    let mut shift = 0;
    while let Some(&b) = bytes.get(*at) {
        *at += 1;
        n |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
        shift += 7;
        if b < 0x80 {
            break;
        }
    }
    n
}

impl Names {
    fn dir(&mut self, hash: u64, name: &[u8]) {
        let index = self.dirs.len() as u32;
        let parent = self.open.last().copied().unwrap_or(index);
        self.dir_names.extend_from_slice(name);
        self.dirs.push(OldDir {
            hash,
            parent,
            name_end: self.dir_names.len(),
        });
        self.open.push(index);
    }

    fn file(&mut self, name: &[u8], amount: u64, hard_link: bool) {
        let Some(&dir) = self.open.last() else { return };
        if self.current != Some(dir) {
            put_leb(&mut self.files, u64::from(dir) * 2 + 1);
            self.current = Some(dir);
        }
        put_leb(&mut self.files, name.len() as u64 * 2);
        self.files.extend_from_slice(name);
        put_leb(&mut self.files, amount.saturating_mul(2) | u64::from(hard_link));
    }

    fn close(&mut self) {
        self.open.pop();
    }

    /// The path below the root of directory `index`.
    fn path(&self, index: u32) -> Vec<u8> {
        let mut parts = Vec::new();
        let mut i = index;
        while let Some(d) = self.dirs.get(i as usize).filter(|d| d.parent != i) {
            let start = i.checked_sub(1).map_or(0, |b| self.dirs[b as usize].name_end);
            parts.push(&self.dir_names[start..d.name_end]);
            i = d.parent;
        }
        parts.reverse();
        parts.join(&b'/')
    }

    /// The paths of directories whose hashes are wanted.
    fn paths_of(&self, wanted: &HashSet<u64>) -> HashMap<u64, Vec<u8>> {
        let mut found = HashMap::default();
        for (i, d) in self.dirs.iter().enumerate() {
            if wanted.contains(&d.hash) {
                found.insert(d.hash, self.path(i as u32));
            }
        }
        found
    }

    /// What of OLD NEW has not, at its topmost: its amount and path.
    fn gone(&self, old: &Side, new: &Side) -> Vec<(u64, Vec<u8>)> {
        let mut gone = Vec::new();
        for (i, d) in self.dirs.iter().enumerate() {
            let parent = &self.dirs[d.parent as usize];
            if d.parent as usize != i && !new.dirs.contains_key(&d.hash) && new.dirs.contains_key(&parent.hash) {
                gone.push((old.dirs.get(&d.hash).copied().unwrap_or(0), self.path(i as u32)));
            }
        }
        let (mut at, mut dir) = (0, None);
        // A few files' hashes, their slots prefetched, to be looked up
        // together: one by one, each lookup waited for its cache miss.
        let mut batch: Vec<(u64, u64, usize, usize, u32)> = Vec::with_capacity(GONE_BATCH);
        let mut settle = |batch: &mut Vec<(u64, u64, usize, usize, u32)>| {
            for &(hash, amount, start, end, index) in batch.iter() {
                if old.files.contains(hash) {
                    gone.push((amount, join(&self.path(index), &self.files[start..end])));
                }
            }
            batch.clear();
        };
        while at < self.files.len() {
            let word = get_leb(&self.files, &mut at);
            if word & 1 == 1 {
                // Only in directories NEW has are files gone at their topmost.
                dir = self
                    .dirs
                    .get((word / 2) as usize)
                    .filter(|d| new.dirs.contains_key(&d.hash))
                    .map(|d| (word / 2, d.hash));
                continue;
            }
            let start = at;
            let end = (at + (word / 2) as usize).min(self.files.len());
            at = end;
            let amount = get_leb(&self.files, &mut at);
            let Some((index, parent)) = dir else { continue };
            let (hard_link, amount) = (amount & 1 == 1, amount / 2);
            if new.one_link_only && hard_link {
                continue;
            }
            let hash = child_hash(parent, &self.files[start..end]);
            old.files.prefetch(hash);
            batch.push((hash, amount, start, end, index as u32));
            if batch.len() == GONE_BATCH {
                settle(&mut batch);
            }
        }
        settle(&mut batch);
        gone
    }
}

/// How many of OLD's files [`Names::gone`] looks up at once.
const GONE_BATCH: usize = 16;

/// An export read into a [`Side`]; reading NEW, compared with OLD as it goes.
struct Reading<'a> {
    side: Side,
    /// Open directories: hash, sum so far, the path's length before it, and
    /// the total the file gives (a `--json` tree's).
    open: Vec<(u64, u64, usize)>,
    /// The path below the root of the directory open last.
    path: Vec<u8>,
    totals_given: bool,
    links: Vec<Link>,
    /// OLD, when this reads NEW: its files are taken out as NEW has them.
    old: Option<&'a mut Side>,
    appeared: Vec<Appeared>,
    /// Reading OLD: what names what is shown of it, and its files' hashes
    /// (made a set once all are read).
    names: Names,
    file_hashes: Vec<u64>,
}

impl<'a> Reading<'a> {
    fn new(old: Option<&'a mut Side>) -> Reading<'a> {
        Reading {
            side: Side::default(),
            open: Vec::new(),
            path: Vec::new(),
            totals_given: false,
            links: Vec::new(),
            old,
            appeared: Vec::new(),
            names: Names::default(),
            file_hashes: Vec::new(),
        }
    }
}

/// The path below the root of `name` in the directory at `dir`.
fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(dir.len() + 1 + name.len());
    p.extend_from_slice(dir);
    if !dir.is_empty() {
        p.push(b'/');
    }
    p.extend_from_slice(name);
    p
}

impl Sink for Reading<'_> {
    fn entry(&mut self, e: &Entry<'_>) -> Result<(), String> {
        if e.depth == 0 {
            self.side.root = e.name.to_vec();
            self.open.push((ROOT, e.amount, 0));
            if self.old.is_none() {
                self.names.dir(ROOT, b"");
            }
            return Ok(());
        }
        let (parent, _, _) = *self.open.last().ok_or("an entry outside its root")?;
        let hash = child_hash(parent, &e.name);
        let topmost = |old: &Side| old.dirs.contains_key(&parent);
        if e.is_dir {
            if let Some(old) = self.old.as_deref() {
                if !old.dirs.contains_key(&hash) && topmost(old) {
                    self.appeared.push(Appeared {
                        hash,
                        is_dir: true,
                        amount: 0,
                        path: join(&self.path, &e.name),
                    });
                }
            }
            if self.old.is_none() {
                self.names.dir(hash, &e.name);
            }
            let len = self.path.len();
            if !self.path.is_empty() {
                self.path.push(b'/');
            }
            self.path.extend_from_slice(&e.name);
            self.open.push((hash, e.amount, len));
            return Ok(());
        }
        if let Some(old) = self.old.as_deref_mut() {
            let unlisted_link = old.one_link_only && e.hard_link;
            if !old.files.remove(hash) && topmost(old) && !unlisted_link {
                self.appeared.push(Appeared {
                    hash,
                    is_dir: false,
                    amount: e.amount,
                    path: join(&self.path, &e.name),
                });
            }
        } else {
            // OLD: what NEW does not take out of this set is gone.
            self.file_hashes.push(hash);
            self.names.file(&e.name, e.amount, e.hard_link);
        }
        let amount = if e.hard_link {
            if e.nlink.is_some() {
                // Which link counts is decided once the whole scan is read.
                self.links.push(Link {
                    dev: e.dev,
                    ino: e.ino.unwrap_or(0),
                    hash,
                    amount: e.amount,
                    dirs: self.open.iter().map(|o| o.0).collect(),
                });
            }
            // gdu marks only the links after the one it counted.
            0
        } else {
            e.amount
        };
        if let Some(top) = self.open.last_mut().filter(|_| !self.totals_given) {
            top.1 = top.1.saturating_add(amount);
        }
        Ok(())
    }

    fn close(&mut self, _: usize) -> Result<(), String> {
        let (hash, sum, len) = self.open.pop().ok_or("a directory closed twice")?;
        self.names.close();
        // A `--json` tree gives each directory's total (the sum began
        // there); ncdu's own sizes are added up here.
        let total = sum;
        self.side.dirs.insert(hash, total);
        if !self.totals_given {
            if let Some(parent) = self.open.last_mut() {
                parent.1 = parent.1.saturating_add(total);
            }
        }
        self.path.truncate(len);
        Ok(())
    }
}

/// Read a saved scan: OLD (`old` is `None`), or NEW compared with OLD.
fn read_side(
    input: &Input,
    file: &[u8],
    measure: Measure,
    old: Option<&mut Side>,
) -> Result<(Side, Names, Vec<Appeared>), String> {
    let first = input.as_slice().iter().find(|b| !b.is_ascii_whitespace());
    let mut reading = Reading::new(old);
    reading.totals_given = first == Some(&b'{');
    exports::read(input, measure, &mut reading).map_err(|e| format!("{}: {e}", quote(file)))?;
    let Reading {
        mut side,
        links,
        appeared,
        totals_given,
        mut names,
        file_hashes,
        ..
    } = reading;
    side.files = FileSet::from_keys(&file_hashes);
    drop(file_hashes);
    side.one_link_only = totals_given;
    resolve_links(links, &mut side.dirs);
    names.files.shrink_to_fit();
    Ok((side, names, appeared))
}

/// OLD as the live side gets it: read beside the walk, on a thread of its own.
type OldRead = std::sync::OnceLock<Result<(Side, Names), String>>;

/// The live side: the walk's threads each add up their part.
#[derive(Default)]
struct Live {
    /// Files OLD has too (taken out of OLD once the walk is over).
    matched: Vec<u64>,
    dirs: HashMap<u64, u64>,
    links: Vec<Link>,
    appeared: Vec<Appeared>,
    /// Chunks met before OLD was read, compared with it once it is, and
    /// about how many bytes they hold.
    waiting: Vec<Waiting>,
    waiting_bytes: usize,
}

/// A walk's thread holds at most this much waiting for OLD before it
/// waits itself (on a busy machine the reading may fall far behind).
const WAITING_LIMIT: usize = 16 << 20;

/// The entries of a chunk that wait for OLD.
#[derive(Default)]
struct Waiting {
    parent: u64,
    /// The directory's path below the root, with its `/` (empty for the root).
    dir: Vec<u8>,
    entries: Vec<Candidate>,
    names: Vec<u8>,
}

/// An entry of the live tree as OLD judges it.
struct Candidate {
    hash: u64,
    amount: u64,
    /// Its name's end in [`Waiting::names`].
    name_end: u32,
    is_dir: bool,
    several_links: bool,
}

impl Live {
    /// Whether OLD has `c` (a file), or whether it appeared (at its topmost).
    /// `topmost`: OLD has the directory `c` is in.
    fn judge(&mut self, old: &Side, topmost: bool, dir: &[u8], c: &Candidate, name: &[u8]) {
        let path = || [dir, name].concat();
        if c.is_dir {
            if topmost && !old.dirs.contains_key(&c.hash) {
                self.appeared.push(Appeared {
                    hash: c.hash,
                    is_dir: true,
                    amount: 0,
                    path: path(),
                });
            }
        } else if old.files.contains(c.hash) {
            self.matched.push(c.hash);
        } else if topmost && !(old.one_link_only && c.several_links) {
            self.appeared.push(Appeared {
                hash: c.hash,
                is_dir: false,
                amount: c.amount,
                path: path(),
            });
        }
    }

    /// Judge what waited for OLD.
    fn judge_waiting(&mut self, old: &Side) {
        self.waiting_bytes = 0;
        for w in std::mem::take(&mut self.waiting) {
            let topmost = old.dirs.contains_key(&w.parent);
            let mut start = 0;
            for c in &w.entries {
                let end = c.name_end as usize;
                self.judge(old, topmost, &w.dir, c, &w.names[start..end]);
                start = end;
            }
        }
    }
}

struct LiveVisitor<'a> {
    grouping: &'a Grouping,
    old: &'a OldRead,
    /// How long the root's part of the walk's prefixes is.
    root_len: usize,
    measure: Measure,
    live: Live,
    /// The directory of the chunks seen last: its path and its chain of
    /// hashes, itself first, up to the root.
    prefix: Vec<u8>,
    chain: Vec<u64>,
    scratch: Vec<u8>,
    /// The entries of the chunk at hand.
    ready: Waiting,
}

impl LiveVisitor<'_> {
    /// The chain of hashes of the chunk's directory.
    fn chain_for(&mut self, chunk: &Chunk<'_>) {
        let prefix = chunk.prefix();
        if prefix == self.prefix.as_slice() {
            return;
        }
        self.prefix.clear();
        self.prefix.extend_from_slice(prefix);
        self.chain.clear();
        let mut h = ROOT;
        self.chain.push(h);
        let below = prefix.get(self.root_len..).unwrap_or_default();
        for name in below.split(|&b| b == b'/').filter(|n| !n.is_empty()) {
            h = child_hash(h, name);
            self.chain.push(h);
        }
        self.chain.reverse();
    }
}

/// The root's path as the walk's prefixes begin with it, `/` included.
fn root_prefix(root: &[u8]) -> usize {
    if root.ends_with(b"/") {
        root.len()
    } else {
        root.len() + 1
    }
}

impl Visitor for LiveVisitor<'_> {
    fn visit(&mut self, chunk: &mut Chunk) -> Flow {
        // The walk need not wait for OLD: until it is read, what is to be
        // compared with it waits (a million entries: OLD is read in the
        // walk's first third or so).
        let read = match self.old.get() {
            None if self.live.waiting_bytes > WAITING_LIMIT => Some(self.old.wait()),
            read => read,
        };
        let old = match read {
            Some(Ok((old, _))) => Some(old),
            Some(Err(_)) => return Flow::Stop,
            None => None,
        };
        if let Some(old) = old.filter(|_| !self.live.waiting.is_empty()) {
            self.live.judge_waiting(old);
        }
        self.chain_for(chunk);
        let parent = self.chain[0];
        let dir = self.prefix.get(self.root_len..).unwrap_or_default();
        let topmost = old.is_some_and(|old| old.dirs.contains_key(&parent));
        // Its buffers are kept from chunk to chunk while it is not kept waiting.
        let mut waiting = std::mem::take(&mut self.ready);
        waiting.entries.clear();
        waiting.names.clear();
        let mut sum = 0;
        let g = self.grouping;
        for entry in chunk.iter() {
            let Some(m) = entry.cached_metadata() else {
                g.cannot_stat(&entry, &mut self.scratch);
                continue;
            };
            if !g.counts(m) {
                continue;
            }
            let amount = Usage::of(m, self.measure, None).amount;
            let name = entry.name_bytes();
            let hash = child_hash(parent, name);
            let several_links = m.nlink > 1;
            let c = Candidate {
                hash,
                amount,
                is_dir: m.is_dir(),
                several_links,
                name_end: 0,
            };
            // The chunk's entries are judged once it is read, so that
            // their slots in OLD's files are loaded meanwhile.
            if let Some(old) = old.filter(|_| !c.is_dir) {
                old.files.prefetch(hash);
            }
            waiting.names.extend_from_slice(name);
            waiting.entries.push(Candidate {
                name_end: waiting.names.len() as u32,
                ..c
            });
            if c.is_dir {
                *self.live.dirs.entry(hash).or_default() += amount;
                sum += amount;
            } else if several_links && !g.settings.count_links {
                self.live.links.push(Link {
                    dev: m.dev,
                    ino: m.ino,
                    hash,
                    amount,
                    dirs: self.chain.clone(),
                });
            } else {
                sum += amount;
            }
        }
        if let Some(old) = old {
            let mut start = 0;
            for c in &waiting.entries {
                let end = c.name_end as usize;
                self.live.judge(old, topmost, dir, c, &waiting.names[start..end]);
                start = end;
            }
            self.ready = waiting;
        } else if !waiting.entries.is_empty() {
            waiting.parent = parent;
            waiting.dir = dir.to_vec();
            self.live.waiting_bytes += std::mem::size_of::<Candidate>() * waiting.entries.len()
                + waiting.names.len()
                + waiting.dir.len()
                + std::mem::size_of::<Waiting>();
            self.live.waiting.push(waiting);
        }
        if sum > 0 {
            for d in &self.chain {
                *self.live.dirs.entry(*d).or_default() += sum;
            }
        } else {
            self.live.dirs.entry(parent).or_default();
        }
        Flow::Continue
    }

    fn error(&mut self, error: Error) -> Flow {
        self.grouping.cannot_read(&error);
        Flow::Continue
    }
}

/// Scan `root` now while OLD is read from `old_file`, and compare them,
/// taking NEW's files out of OLD; and whether an entry could not be read
/// (it was reported).
#[allow(clippy::type_complexity)]
fn live_side(
    settings: &Settings,
    old_file: &[u8],
    root: &[u8],
) -> Result<(Side, Names, Side, Vec<Appeared>, bool), String> {
    let path = std::path::Path::new(std::ffi::OsStr::from_bytes(root));
    let m: Metadata = fnd_walk::meta::stat_path(path, true)
        .map_err(|e| format!("cannot access {}: {}", quote(root), error_text(&e)))?;
    if !m.is_dir() {
        return Err(format!("{} is not a directory", quote(root)));
    }
    let grouping = Arc::new(Grouping::new(settings.clone(), &[Some((m.dev, m.ino))])?);
    let mut dirs: HashMap<u64, u64> = HashMap::default();
    dirs.insert(ROOT, Usage::of(&m, settings.measure, None).amount);
    let mut matched: Vec<u64> = Vec::new();
    let mut links = Vec::new();
    let mut appeared = Vec::new();
    let mut waiting = Vec::new();
    let old_read = OldRead::new();
    let measure = settings.measure;
    std::thread::scope(|scope| {
        let read_old = || {
            // Should the reading end without a result, the walk must not
            // wait for one.
            struct Unread<'a>(&'a OldRead);
            impl Drop for Unread<'_> {
                fn drop(&mut self) {
                    let _ = self.0.set(Err("OLD could not be read".into()));
                }
            }
            let _unread = Unread(&old_read);
            let read = Input::open(old_file).and_then(|input| read_side(&input, old_file, measure, None));
            let _ = old_read.set(read.map(|(side, names, _)| (side, names)));
        };
        // The mapping of OLD stays on the thread that reads it.
        if std::thread::Builder::new().spawn_scoped(scope, read_old).is_err() {
            // No thread to spare: OLD is read first.
            read_old();
        }
        fnd_walk::Alone.visit(
            grouping.walk(root, &m),
            || LiveVisitor {
                grouping: &grouping,
                old: &old_read,
                root_len: root_prefix(root),
                measure,
                live: Live::default(),
                prefix: Vec::new(),
                chain: Vec::new(),
                scratch: Vec::new(),
                ready: Waiting::default(),
            },
            |v| {
                let live = v.live;
                if dirs.len() < live.dirs.len() {
                    let mine = std::mem::replace(&mut dirs, live.dirs);
                    for (h, t) in mine {
                        *dirs.entry(h).or_default() += t;
                    }
                } else {
                    for (h, t) in live.dirs {
                        *dirs.entry(h).or_default() += t;
                    }
                }
                matched.extend(live.matched);
                links.extend(live.links);
                appeared.extend(live.appeared);
                waiting.extend(live.waiting);
            },
        );
    });
    let (mut old, names) = old_read.into_inner().ok_or("OLD was not read")??;
    let mut rest = Live {
        waiting,
        ..Live::default()
    };
    rest.judge_waiting(&old);
    appeared.extend(rest.appeared);
    resolve_links(links, &mut dirs);
    let matched: Vec<u64> = matched.into_iter().chain(rest.matched).collect();
    // Prefetched a few ahead: one by one, each waited for its cache miss.
    for (i, &h) in matched.iter().enumerate() {
        if let Some(&ahead) = matched.get(i + GONE_BATCH) {
            old.files.prefetch(ahead);
        }
        old.files.remove(h);
    }
    let side = Side {
        files: FileSet::default(),
        dirs,
        root: root.to_vec(),
        one_link_only: false,
    };
    Ok((old, names, side, appeared, grouping.failed()))
}

/// A directory whose total changed.
struct Changed {
    hash: u64,
    old: u64,
    new: u64,
    path: Vec<u8>,
}

impl Changed {
    fn change(&self) -> u64 {
        self.old.abs_diff(self.new)
    }
}

/// `fdu --diff OLD [NEW]`: its lines (or JSON) on stdout; the exit status.
pub fn run(settings: Settings) -> ExitCode {
    match compare(&settings) {
        Ok(failed) => {
            if failed {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(message) => {
            report(&message);
            ExitCode::from(1)
        }
    }
}

/// The root OLD names, read from its first entry.
fn root_of(input: &Input, file: &[u8], measure: Measure) -> Result<Vec<u8>, String> {
    struct First(Option<Vec<u8>>);
    const FOUND: &str = "found";
    impl Sink for First {
        fn entry(&mut self, e: &Entry<'_>) -> Result<(), String> {
            self.0 = Some(e.name.to_vec());
            Err(FOUND.into())
        }
        fn close(&mut self, _: usize) -> Result<(), String> {
            Ok(())
        }
    }
    let mut first = First(None);
    match exports::read(input, measure, &mut first) {
        Err(e) if e == FOUND => {}
        Err(e) => return Err(format!("{}: {e}", quote(file))),
        Ok(_) => {}
    }
    first.0.ok_or_else(|| format!("{}: no root", quote(file)))
}

fn compare(settings: &Settings) -> Result<bool, String> {
    let (old_file, new_file) = settings.diff.clone().ok_or("no --diff")?;
    let measure = settings.measure;
    let old_input = Input::open(&old_file)?;
    let new_file = match new_file {
        Some(f) => f,
        None => root_of(&old_input, &old_file, measure)?,
    };
    let is_dir = std::fs::metadata(std::ffi::OsStr::from_bytes(&new_file)).is_ok_and(|m| m.is_dir());
    let (old, names, new, mut appeared, failed) = if is_dir {
        drop(old_input);
        live_side(settings, &old_file, &new_file)?
    } else {
        let (mut old, names, _) = read_side(&old_input, &old_file, measure, None)?;
        drop(old_input);
        let input = Input::open(&new_file)?;
        let (side, _, appeared) = read_side(&input, &new_file, measure, Some(&mut old))?;
        (old, names, side, appeared, false)
    };
    let top = |n: usize| if settings.top == 0 { n } else { settings.top.min(n) };

    let mut changed: Vec<Changed> = new
        .dirs
        .iter()
        .filter_map(|(&hash, &n)| {
            let o = *old.dirs.get(&hash)?;
            (o != n).then(|| Changed {
                hash,
                old: o,
                new: n,
                path: Vec::new(),
            })
        })
        .collect();
    changed.sort_unstable_by(|a, b| b.change().cmp(&a.change()).then(a.hash.cmp(&b.hash)));
    changed.truncate(top(changed.len()));

    for a in appeared.iter_mut().filter(|a| a.is_dir) {
        a.amount = new.dirs.get(&a.hash).copied().unwrap_or(0);
    }
    appeared.sort_unstable_by(|a, b| b.amount.cmp(&a.amount).then_with(|| a.path.cmp(&b.path)));
    appeared.truncate(top(appeared.len()));

    // What is shown of OLD, named.
    let wanted: HashSet<u64> = changed.iter().map(|c| c.hash).collect();
    let paths = names.paths_of(&wanted);
    for c in &mut changed {
        c.path = paths.get(&c.hash).cloned().unwrap_or_default();
    }
    let mut gone = names.gone(&old, &new);
    changed.sort_by(|a, b| b.change().cmp(&a.change()).then_with(|| a.path.cmp(&b.path)));
    gone.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    gone.truncate(top(gone.len()));

    let out = crate::output::Output::stdout();
    let text = if settings.json {
        json(settings, &old.root, &new.root, &changed, &appeared, &gone)
    } else {
        lines(settings, &new.root, &changed, &appeared, &gone)
    };
    out.write(&text);
    out.finish();
    Ok(failed || out.failed())
}

/// A path below the root, shown under the root's name.
fn shown(root: &[u8], rel: &[u8]) -> Vec<u8> {
    let mut p = root.to_vec();
    if !rel.is_empty() {
        if !p.ends_with(b"/") {
            p.push(b'/');
        }
        p.extend_from_slice(rel);
    }
    p
}

fn lines(
    settings: &Settings,
    root: &[u8],
    changed: &[Changed],
    appeared: &[Appeared],
    gone: &[(u64, Vec<u8>)],
) -> Vec<u8> {
    let size = &settings.size;
    let end = if settings.null { 0 } else { b'\n' };
    let mut out = Vec::new();
    let mut line = |word: &str, sign: u8, change: u64, old: Option<u64>, new: Option<u64>, path: &[u8]| {
        out.extend_from_slice(word.as_bytes());
        out.push(b'\t');
        out.push(sign);
        size.write(change, &mut out);
        for amount in [old, new] {
            out.push(b'\t');
            match amount {
                Some(a) => size.write(a, &mut out),
                None => out.push(b'-'),
            }
        }
        out.push(b'\t');
        out.extend_from_slice(&shown(root, path));
        out.push(end);
    };
    for c in changed {
        let (word, sign) = if c.new > c.old {
            ("grew", b'+')
        } else {
            ("shrank", b'-')
        };
        line(word, sign, c.change(), Some(c.old), Some(c.new), &c.path);
    }
    for a in appeared {
        line("appeared", b'+', a.amount, None, Some(a.amount), &a.path);
    }
    for (amount, path) in gone {
        line("gone", b'-', *amount, Some(*amount), None, path);
    }
    out
}

fn json(
    settings: &Settings,
    old_root: &[u8],
    new_root: &[u8],
    changed: &[Changed],
    appeared: &[Appeared],
    gone: &[(u64, Vec<u8>)],
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out);
    let path = |w: &mut Writer<'_>, key: &[u8], p: &[u8]| {
        if std::str::from_utf8(p).is_ok() {
            w.key(key);
            w.string(p);
        } else {
            let mut k = key.to_vec();
            k.extend_from_slice(b"_bytes");
            w.key(&k);
            w.begin_array();
            p.iter().for_each(|&b| w.number(b.into()));
            w.end_array();
        }
    };
    w.begin_object();
    w.key(b"fdu_diff");
    w.number(1);
    w.key(b"measure");
    w.string(settings.measure.name().as_bytes());
    path(&mut w, b"old", old_root);
    path(&mut w, b"new", new_root);
    w.key(b"changed");
    w.begin_array();
    for c in changed {
        w.begin_object();
        path(&mut w, b"path", &shown(new_root, &c.path));
        w.key(b"old");
        w.number(c.old);
        w.key(b"new");
        w.number(c.new);
        w.end_object();
    }
    w.end_array();
    w.key(b"appeared");
    w.begin_array();
    for a in appeared {
        w.begin_object();
        path(&mut w, b"path", &shown(new_root, &a.path));
        w.key(b"size");
        w.number(a.amount);
        w.key(b"dir");
        w.boolean(a.is_dir);
        w.end_object();
    }
    w.end_array();
    w.key(b"gone");
    w.begin_array();
    for (amount, p) in gone {
        w.begin_object();
        path(&mut w, b"path", &shown(new_root, p));
        w.key(b"size");
        w.number(*amount);
        w.end_object();
    }
    w.end_array();
    w.end_object();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_tell_paths_apart_and_chain() {
        let a = child_hash(ROOT, b"a");
        assert_ne!(a, child_hash(ROOT, b"b"));
        assert_ne!(child_hash(a, b"b"), child_hash(ROOT, b"ab"));
        assert_ne!(child_hash(ROOT, b"a\0"), a, "trailing zero bytes count");
        let mut seen = HashSet::default();
        for i in 0..100_000u32 {
            assert!(seen.insert(child_hash(ROOT, format!("f{i}").as_bytes())));
        }
    }

    #[test]
    fn file_set_keeps_colliding_and_special_keys() {
        let mut set = FileSet::default();
        assert!(!set.contains(0) && !set.remove(7));
        // Keys with the same low bits share a home slot; 0 and u64::MAX are
        // keys like any other.
        let keys: Vec<u64> = (0..40u64).map(|i| (i << 40) | 5).chain([0, u64::MAX, 1]).collect();
        for &k in &keys {
            assert!(set.insert(k));
            assert!(!set.insert(k), "{k} twice");
        }
        assert!(keys.iter().all(|&k| set.contains(k)));
        assert!(!set.contains(5 | (41 << 40)));
        // Removing from the middle of a run leaves the rest of it found.
        for &k in keys.iter().step_by(3) {
            assert!(set.remove(k));
            assert!(!set.remove(k));
        }
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(set.contains(k), i % 3 != 0, "{k}");
        }
    }

    #[test]
    fn file_set_grows_and_matches_std() {
        let mut set = FileSet::default();
        let mut std_set = std::collections::HashSet::new();
        let mut x = 1u64;
        for round in 0..300_000u64 {
            x = mix(x);
            // A narrow range of keys, so inserts meet removals.
            let k = x % 200_000;
            if round % 3 == 2 {
                assert_eq!(set.remove(k), std_set.remove(&k));
            } else {
                assert_eq!(set.insert(k), std_set.insert(k));
            }
            set.prefetch(k);
        }
        assert_eq!(set.len + usize::from(set.zero), std_set.len());
        let keys: Vec<u64> = std_set.iter().copied().chain(std_set.iter().copied()).collect();
        let built = FileSet::from_keys(&keys);
        assert_eq!(built.len + usize::from(built.zero), std_set.len());
        assert!(set.len * 2 <= set.slots.len());
        for k in 0..200_000u64 {
            assert_eq!(set.contains(k), std_set.contains(&k), "{k}");
            assert_eq!(built.contains(k), std_set.contains(&k), "{k}");
        }
    }

    #[test]
    fn links_count_once_at_the_lowest_hash() {
        let mut dirs = HashMap::default();
        let link = |hash, dir| Link {
            dev: 1,
            ino: 9,
            hash,
            amount: 10,
            dirs: vec![dir, ROOT],
        };
        resolve_links(vec![link(5, 100), link(3, 200)], &mut dirs);
        assert_eq!(dirs.get(&200), Some(&10));
        assert_eq!(dirs.get(&100), None);
        assert_eq!(dirs.get(&ROOT), Some(&10));
    }

    #[test]
    fn leb_round_trips() {
        let mut out = Vec::new();
        let values = [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
        values.iter().for_each(|&n| put_leb(&mut out, n));
        let mut at = 0;
        for &n in &values {
            assert_eq!(get_leb(&out, &mut at), n);
        }
        assert_eq!(at, out.len());
        // Cut short: what is there, no panic.
        let mut at = 0;
        assert_eq!(get_leb(&[0x80, 0x80], &mut at), 0);
    }

    #[test]
    fn names_give_the_paths_of_what_went() {
        let long = "n".repeat(300);
        let text = format!(
            r#"[1,0,{{}},[{{"name":"/r"}},{{"name":"f","dsize":4096}},[{{"name":"{long}"}},{{"name":"g","dsize":8192}},[{{"name":"h"}},{{"name":"i","dsize":512}}]],{{"name":"j","dsize":1024}}]]"#
        );
        let input = Input::bytes(text.into_bytes());
        let (old, names, _) = read_side(&input, b"old", Measure::Disk, None).unwrap();
        assert_eq!(old.root, b"/r");
        assert_eq!(names.path(0), b"");
        assert_eq!(names.path(2), format!("{long}/h").as_bytes());
        // NEW: only the root, so all that is directly in it went.
        let mut new = Side::default();
        new.dirs.insert(ROOT, 0);
        let mut gone = names.gone(&old, &new);
        gone.sort();
        let expected: Vec<(u64, Vec<u8>)> = vec![
            (1024, b"j".to_vec()),
            (4096, b"f".to_vec()),
            (8192 + 512, long.into_bytes()),
        ];
        assert_eq!(gone, expected);
        // NEW has the long directory, without g: g went, and h.
        let dir = child_hash(ROOT, "n".repeat(300).as_bytes());
        new.dirs.insert(dir, 0);
        let mut gone: Vec<Vec<u8>> = names.gone(&old, &new).into_iter().map(|g| g.1).collect();
        gone.sort();
        assert_eq!(gone.len(), 4, "f, j, g and h");
        assert!(gone.contains(&format!("{}/g", "n".repeat(300)).into_bytes()));
    }
}
