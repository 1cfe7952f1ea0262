//! fd's first 100 ms: results of a search that ends that quickly (with at
//! most 1000 results) are printed sorted by path, so small searches give the
//! same order every time; past either limit results stream as they are found.
//! Held results are kept as whole chunks, taken from the walk.

use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fnd_walk::{Chunk, ChunkBuf};

/// Most results held back (fd's `MAX_BUFFER_LENGTH`).
const HOLD_COUNT: usize = 1000;

/// Results held back while the search is young.
pub struct EarlyResults {
    /// `Some` while holding results back; `None` once streaming.
    held: Mutex<Option<Held>>,
    /// Set once streaming: later chunks need not take the lock.
    streaming: AtomicBool,
    deadline: Instant,
}

#[derive(Default)]
struct Held {
    chunks: Vec<ChunkBuf>,
    count: usize,
}

impl EarlyResults {
    /// Hold results for `hold` (fd's default is 100 ms); `None` streams
    /// every result from the start.
    pub fn new(hold: Option<Duration>) -> Self {
        EarlyResults {
            held: Mutex::new(hold.map(|_| Held::default())),
            streaming: AtomicBool::new(hold.is_none()),
            deadline: Instant::now() + hold.unwrap_or_default(),
        }
    }

    /// Offer a chunk of results: kept (and taken out of `chunk`) while the
    /// search is young; otherwise `print` is given first whatever was held,
    /// in the order found, and the chunk is left for the caller to print.
    /// Returns false when `print` asked to stop.
    pub fn offer(&self, chunk: &mut Chunk, mut print: impl FnMut(&ChunkBuf) -> bool) -> Offer {
        if self.streaming.load(AtomicOrdering::Acquire) {
            return Offer::Print;
        }
        let mut guard = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let Some(held) = guard.as_mut() else {
            return Offer::Print;
        };
        if Instant::now() < self.deadline && held.count + chunk.len() <= HOLD_COUNT {
            held.count += chunk.len();
            held.chunks.push(chunk.take());
            return Offer::Held;
        }
        // Streaming from now on; the lock stays held while the backlog is
        // printed so that no other thread's results overtake it.
        let backlog = guard.take().map(|h| h.chunks).unwrap_or_default();
        let printed = backlog.iter().all(&mut print);
        // Only now may other threads print without the lock.
        self.streaming.store(true, AtomicOrdering::Release);
        if printed {
            Offer::Print
        } else {
            Offer::Stop
        }
    }

    /// After the walk: the results still held, with the order to print them
    /// in: sorted by path when the search ended in time, else as found.
    pub fn finish(self) -> Option<(Vec<ChunkBuf>, Vec<EntryAt>)> {
        let held = self.held.into_inner().unwrap_or_else(|e| e.into_inner())?;
        let mut order: Vec<EntryAt> = held
            .chunks
            .iter()
            .enumerate()
            .flat_map(|(c, chunk)| (0..chunk.len()).map(move |e| (c, e)))
            .collect();
        if Instant::now() < self.deadline {
            let mut path = Vec::new();
            order.sort_by_cached_key(|&(c, e)| {
                path.clear();
                held.chunks[c].get(e).write_path(&mut path);
                sort_key(&path)
            });
        }
        Some((held.chunks, order))
    }
}

/// An entry of the held chunks: (chunk index, entry index).
pub type EntryAt = (usize, usize);

/// What became of an offered chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    Held,
    /// The caller prints the chunk.
    Print,
    /// Printing the backlog failed (output closed): stop.
    Stop,
}

/// A path component, ordered as `std::path::Component` is.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Component<'a> {
    Root,
    Current,
    Parent,
    Normal(&'a [u8]),
}

fn components(path: &[u8]) -> impl Iterator<Item = Component<'_>> {
    let root = path.starts_with(b"/").then_some(Component::Root);
    let rest = path
        .split(|&c| c == b'/')
        .enumerate()
        .filter_map(|(i, part)| match part {
            b"" => None,
            // Only a leading `.` counts, as in `Path::components`.
            b"." => (i == 0).then_some(Component::Current),
            b".." => Some(Component::Parent),
            name => Some(Component::Normal(name)),
        });
    root.into_iter().chain(rest)
}

/// Bytes that compare as the path's components do (as `std::path::Path`
/// orders paths, and fd sorts them: `a/b` before `a.txt`): each component is a
/// tag in `Component`'s order, then a name and a 0 (which no name holds,
/// so a name sorts before the longer names it starts). Built once per
/// path (`sort_by_cached_key`), the keys sort with `memcmp`; comparing components on the fly took
/// 6% of a search's CPU time for 836 results.
pub fn sort_key(path: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(path.len() + 4);
    for component in components(path) {
        match component {
            Component::Root => key.push(1),
            Component::Current => key.push(2),
            Component::Parent => key.push(3),
            Component::Normal(name) => {
                key.push(4);
                key.extend_from_slice(name);
                key.push(0);
            }
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::{components, sort_key};
    use std::cmp::Ordering;

    /// Paths ordered as `std::path::Path` orders them (and fd sorts):
    /// component by component, so `a/b` sorts before `a.txt`.
    fn compare_paths(a: &[u8], b: &[u8]) -> Ordering {
        components(a).cmp(components(b))
    }

    #[test]
    fn paths_sort_by_component() {
        assert_eq!(compare_paths(b"a/b", b"a.txt"), Ordering::Less);
        assert_eq!(compare_paths(b"a.txt", b"a/b"), Ordering::Greater);
        assert_eq!(compare_paths(b"./a", b"./b"), Ordering::Less);
        assert_eq!(compare_paths(b"a//b", b"a/b"), Ordering::Equal);
        assert_eq!(compare_paths(b"./-rf", b"a"), Ordering::Less);
    }

    #[test]
    fn sort_keys_order_as_components_do() {
        let paths: [&[u8]; 14] = [
            b"a/b", b"a.txt", b"./a", b"./b", b"a//b", b"./-rf", b"a", b"/x", b"../y", b"a/./b", b"a/b/c", b"ab",
            b"a\xffb", b"a/..",
        ];
        for a in paths {
            for b in paths {
                assert_eq!(sort_key(a).cmp(&sort_key(b)), compare_paths(a, b), "{a:?} {b:?}");
            }
        }
    }
}
