//! Names: the table of distinct names a writer and a listing intern them
//! in (each given an id), and the runs of one length a file stores them in.

use super::NAME_BLOCK;

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
    pub(super) index: Vec<u32>,
    pub(super) bytes: Vec<u8>,
    pub(super) count: u32,
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

    pub(super) fn push(&mut self, name: &[u8]) -> u32 {
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
pub(super) struct Run {
    pub(super) len: u32,
    pub(super) first_id: u32,
    pub(super) first_byte: u32,
}

/// Names as a file stores them: in runs of one length, ids in order.
#[derive(Default)]
pub(super) struct StoredNames {
    pub(super) bytes: Vec<u8>,
    pub(super) runs: Vec<Run>,
    pub(super) count: u32,
}

impl StoredNames {
    /// Add `name` as the next id, in the last run if it has its length.
    pub(super) fn push(&mut self, name: &[u8]) {
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

    pub(super) fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        names_in_runs(&self.bytes, self.runs.iter().copied(), self.count).map(|(_, name)| name)
    }
}

/// The names of `runs` (in order, ids below `count`) over `bytes`, with
/// their ids, in id order.
pub(super) fn names_in_runs<'b>(
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

/// The name starting at `at` in `bytes` and where the next starts, if it is whole.
pub(super) fn name_at(bytes: &[u8], at: usize) -> Option<(&[u8], usize)> {
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
