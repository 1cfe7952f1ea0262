//! du's rule for several operands: nothing is counted twice. A later
//! operand met inside an earlier one is not counted again where it is met;
//! an earlier one met inside a later one is skipped there. With `-l` du
//! counts everything it meets, overlaps included.
//!
//! Operands read from a list as it arrives (`--files0-from`) are not known
//! ahead: as du does then, every entry met is remembered with the operand
//! that met it first, and a later operand met already is skipped.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

/// The operands' identities (device, inode), and which are covered already.
pub struct Operands {
    /// Identity → operand indexes; empty with one operand (nothing to check).
    ids: HashMap<(u64, u64), Vec<usize>>,
    /// Operands already met inside an earlier one.
    seen: Vec<AtomicBool>,
    current: AtomicUsize,
    /// Operands not known ahead: every identity met, with the operand
    /// that met it first (sharded: every worker records every entry).
    met: Option<Box<[Shard]>>,
}

/// Identities met, each with the operand that met it first.
type Shard = Mutex<HashMap<(u64, u64), u32>>;

/// Shards of [`Operands::met`]: a few per core keeps the locks apart.
const SHARDS: usize = 64;

impl Operands {
    /// `ids`: each operand's identity, `None` for one that cannot be statted.
    pub fn new(ids: &[Option<(u64, u64)>], count_links: bool) -> Operands {
        let mut by_id: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
        if ids.len() > 1 && !count_links {
            for (i, id) in ids.iter().enumerate() {
                if let Some(id) = id {
                    by_id.entry(*id).or_default().push(i);
                }
            }
        }
        Operands {
            ids: by_id,
            seen: ids.iter().map(|_| AtomicBool::new(false)).collect(),
            current: AtomicUsize::new(0),
            met: None,
        }
    }

    /// Operands that come one at a time, none known ahead.
    pub fn streaming(count_links: bool) -> Operands {
        Operands {
            met: (!count_links).then(|| (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect()),
            ..Operands::new(&[], count_links)
        }
    }

    /// Streaming: whether an identity is first met by the current operand
    /// (now, or earlier in its walk); it is remembered.
    fn first_met_now(&self, met: &[Shard], dev: u64, ino: u64) -> bool {
        let current = self.current.load(Relaxed) as u32;
        let shard = (ino ^ dev.rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58;
        let mut map = met[shard as usize % SHARDS].lock().unwrap_or_else(|e| e.into_inner());
        match map.entry((dev, ino)) {
            Entry::Occupied(first) => *first.get() == current,
            Entry::Vacant(new) => {
                new.insert(current);
                true
            }
        }
    }

    /// Start operand `index`: false when an earlier operand already covered it.
    pub fn begin(&self, index: usize, id: Option<(u64, u64)>) -> bool {
        if self.seen.get(index).is_some_and(|s| s.load(Relaxed)) {
            return false;
        }
        self.current.store(index, Relaxed);
        if let (Some(met), Some((dev, ino))) = (&self.met, id) {
            return self.first_met_now(met, dev, ino);
        }
        if let Some((dev, ino)) = id {
            self.counts(dev, ino);
        }
        true
    }

    /// The operands met inside an earlier one so far.
    pub fn seen(&self) -> Vec<u32> {
        (0..self.seen.len() as u32)
            .filter(|&i| self.seen[i as usize].load(Relaxed))
            .collect()
    }

    /// Operand `index` was met inside an earlier one (by another process).
    pub fn mark_seen(&self, index: usize) {
        if let Some(s) = self.seen.get(index) {
            s.store(true, Relaxed);
        }
    }

    /// Whether an entry with this identity is counted in the current
    /// operand (it is not when it is an earlier operand).
    pub fn counts(&self, dev: u64, ino: u64) -> bool {
        if let Some(met) = &self.met {
            return self.first_met_now(met, dev, ino);
        }
        if self.ids.is_empty() {
            return true;
        }
        let Some(indexes) = self.ids.get(&(dev, ino)) else {
            return true;
        };
        let current = self.current.load(Relaxed);
        let mut counts = true;
        for &j in indexes {
            if j < current {
                counts = false;
            } else if j > current {
                self.seen[j].store(true, Relaxed);
            }
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operand_inside_another_is_counted_once() {
        // 0: a, 1: a/b (inside a), 2: c.
        let ops = Operands::new(&[Some((1, 10)), Some((1, 11)), Some((1, 12))], false);
        assert!(ops.begin(0, Some((1, 10))));
        assert!(ops.counts(1, 11), "a/b is counted inside a");
        assert!(!ops.begin(1, Some((1, 11))), "and not again as an operand");
        assert!(ops.begin(2, Some((1, 12))));
        assert!(!ops.counts(1, 10), "a met inside c was counted already");
    }

    #[test]
    fn streamed_operands_count_what_no_earlier_one_met() {
        let ops = Operands::streaming(false);
        // 0: a (holding a/b and a/f), 1: a/b, 2: c (holding a).
        assert!(ops.begin(0, Some((1, 10))));
        assert!(ops.counts(1, 11) && ops.counts(1, 12));
        assert!(ops.counts(1, 12), "met twice in one operand: still its own");
        assert!(!ops.begin(1, Some((1, 11))), "met inside a");
        assert!(ops.begin(2, Some((1, 13))));
        assert!(!ops.counts(1, 10), "a was counted already");
        assert!(ops.counts(1, 14));
        let all = Operands::streaming(true);
        assert!(all.begin(0, Some((1, 10))) && all.counts(1, 11));
        assert!(all.begin(1, Some((1, 11))) && all.counts(1, 10), "-l counts everything");
    }

    #[test]
    fn with_count_links_everything_counts() {
        let ops = Operands::new(&[Some((1, 10)), Some((1, 11))], true);
        assert!(ops.begin(0, Some((1, 10))));
        assert!(ops.counts(1, 11));
        assert!(ops.begin(1, Some((1, 11))));
        assert!(ops.counts(1, 10));
    }
}
