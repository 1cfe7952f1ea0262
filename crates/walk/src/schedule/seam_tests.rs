//! The scheduler seam, driven as a second scheduler would drive it: two
//! pools in one process, each with its own walk state as if in a process
//! of its own, handing pending directories to each other as plain data.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::handoff::Handoff;
use super::pool::{self, Alone, Pool, Remote};
use super::root_jobs;
use crate::budget::Budget;
use crate::entry::Chunk;
use crate::error::Error;
use crate::filter::{Decision, DirHook, DirInfo, ErasedHook, ImportError, MovedDir, RawEntry};
use crate::settings::{Order, Settings, Shared};
use crate::visit::{Flow, Visitor};

fn settings(threads: usize, follow_links: bool, shallow_first: bool, filter: Option<Arc<dyn ErasedHook>>) -> Settings {
    Settings {
        order: Order::Parallel,
        threads,
        shallow_first,
        io_depth: threads,
        min_depth: 0,
        max_depth: None,
        follow_links,
        same_file_system: false,
        roots_within: None,
        skip_hidden: false,
        metadata: false,
        sort: None,
        whole_dirs: false,
        chunk_size: 8,
        visit_empty: false,
        hook: filter,
    }
}

fn shared(roots: &[PathBuf], follow_links: bool, shallow_first: bool) -> Shared {
    shared_with(roots, follow_links, shallow_first, None)
}

fn shared_with(
    roots: &[PathBuf],
    follow_links: bool,
    shallow_first: bool,
    filter: Option<Arc<dyn ErasedHook>>,
) -> Shared {
    let roots = roots
        .iter()
        .map(|r| r.as_os_str().as_encoded_bytes().to_vec())
        .collect();
    Shared::new(
        settings(2, follow_links, shallow_first, filter),
        roots,
        None,
        Budget::new(None, 2),
    )
}

/// A hook whose verdicts hang on state inherited down the whole path:
/// each directory's state is a running sum over the names of its
/// ancestors, and an entry is yielded (and descended into) unless the sum
/// with its own name is a multiple of 5. A state lost or garbled on the
/// way to the other pool changes what is yielded.
struct PathSum {
    exports: bool,
}

fn name_sum(name: &[u8]) -> u64 {
    name.iter().map(|&b| u64::from(b)).sum()
}

impl DirHook for PathSum {
    type State = u64;

    fn enter(&self, dir: &DirInfo<'_>, parent: Option<&Arc<u64>>) -> Option<Arc<u64>> {
        let above = parent.map_or(0, |p| **p);
        let name = dir.path.rsplit(|&b| b == b'/').next().unwrap_or(dir.path);
        Some(Arc::new(above * 3 + name_sum(name)))
    }

    fn decide(&self, state: Option<&u64>, entry: &RawEntry<'_>) -> Decision {
        let sum = *state.expect("a state for every directory");
        if (sum + name_sum(entry.name)).is_multiple_of(5) {
            Decision::SKIP
        } else {
            Decision::KEEP
        }
    }

    fn export_state(&self, sum: &Arc<u64>, _: &MovedDir<'_>) -> Option<Vec<u8>> {
        self.exports.then(|| sum.to_le_bytes().to_vec())
    }

    fn import_state(&self, bytes: &[u8], _: &MovedDir<'_>) -> Result<Arc<u64>, ImportError> {
        let sum: [u8; 8] = bytes.try_into().map_err(|_| "not a sum")?;
        Ok(Arc::new(u64::from_le_bytes(sum)))
    }
}

/// Every path a walk yields and every error's path, with how many times.
#[derive(Default)]
struct Seen {
    entries: BTreeMap<Vec<u8>, usize>,
    errors: BTreeMap<PathBuf, usize>,
}

impl Visitor for Seen {
    fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
        for entry in chunk.iter() {
            let mut path = Vec::new();
            entry.write_path(&mut path);
            *self.entries.entry(path).or_default() += 1;
        }
        Flow::Continue
    }

    fn error(&mut self, error: Error) -> Flow {
        *self.errors.entry(error.path().to_path_buf()).or_default() += 1;
        Flow::Continue
    }
}

impl Seen {
    fn add(&mut self, other: Seen) {
        for (path, n) in other.entries {
            *self.entries.entry(path).or_default() += n;
        }
        for (path, n) in other.errors {
            *self.errors.entry(path).or_default() += n;
        }
    }
}

/// Two pools' go-between: a mailbox each, whether each is idle, and a
/// distributed end: both idle with nothing in the mail. Giving away and
/// taking in happen under its lock, so no directory is ever in neither
/// pool nor a mailbox unseen.
#[derive(Default)]
struct Exchange {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    mailbox: [Vec<Handoff>; 2],
    idle: [bool; 2],
    /// Directories handed over in all, and by each side.
    handed: [usize; 2],
    /// Why a pool refused handoffs.
    refused: Vec<String>,
}

/// One pool's side of the exchange.
struct Side<'a> {
    me: usize,
    exchange: &'a Exchange,
    /// Most directories given away at once.
    batch: usize,
}

impl Side<'_> {
    fn collect_mail(&self, state: &mut State, pool: &Pool<'_>) {
        let mail = std::mem::take(&mut state.mailbox[self.me]);
        if !mail.is_empty() {
            // Through the bytes another process would receive: plain data, no pointer.
            let mail: Vec<Handoff> = mail.iter().map(|h| Handoff::decode(&h.encode()).unwrap()).collect();
            state.idle[self.me] = false;
            if let Some(why) = pool.take_in(mail) {
                state.refused.push(why);
            }
        }
    }
}

impl Remote for Side<'_> {
    fn poll(&self, pool: &Pool<'_>, _: bool) {
        let mut state = self.exchange.state.lock().unwrap();
        self.collect_mail(&mut state, pool);
        let other = 1 - self.me;
        if state.idle[other] && state.mailbox[other].is_empty() {
            let given = pool.give_away(self.batch);
            state.handed[self.me] += given.len();
            state.mailbox[other].extend(given);
        }
    }

    fn idle(&self, pool: &Pool<'_>) -> bool {
        let mut state = self.exchange.state.lock().unwrap();
        self.collect_mail(&mut state, pool);
        // Nothing comes in but under this lock: a pool idle now stays idle.
        if pool.pending() > 0 {
            return false;
        }
        state.idle[self.me] = true;
        state.idle.iter().all(|&i| i) && state.mailbox.iter().all(Vec::is_empty)
    }
}

/// The tree: two roots, each with 12 × 6 directories of 4 files, and with
/// links followed, a link back to an ancestor deep in each.
fn make_tree(base: &Path) -> Vec<PathBuf> {
    let roots = vec![base.join("one"), base.join("two/")];
    for root in &roots {
        for a in 0..12 {
            for b in 0..6 {
                let dir = root.join(format!("a{a}/b{b}"));
                std::fs::create_dir_all(&dir).unwrap();
                for f in 0..4 {
                    std::fs::write(dir.join(format!("f{f}")), "").unwrap();
                }
            }
        }
        std::os::unix::fs::symlink("../..", root.join("a3/b2/up")).unwrap();
        std::os::unix::fs::symlink("../b1", root.join("a7/b4/sideways")).unwrap();
    }
    roots
}

/// The walk of `roots` by one pool alone: what the pair must match.
fn alone(roots: &[PathBuf], follow_links: bool) -> Seen {
    alone_with(roots, follow_links, None)
}

fn alone_with(roots: &[PathBuf], follow_links: bool, filter: Option<Arc<dyn ErasedHook>>) -> Seen {
    let shared = shared_with(roots, follow_links, false, filter);
    let mut seen = Seen::default();
    pool::run(&shared, root_jobs(&shared).collect(), &Alone, Seen::default, |s| {
        seen.add(s)
    });
    seen
}

/// The same walk by two pools; returns what they saw and how many
/// directories each handed to the other.
fn pair(roots: &[PathBuf], follow_links: bool, shallow_first: bool, batch: usize) -> (Seen, [usize; 2]) {
    pair_with(roots, follow_links, shallow_first, batch, || None)
}

/// [`pair`] with a filter made for each pool, as each process makes its own.
fn pair_with(
    roots: &[PathBuf],
    follow_links: bool,
    shallow_first: bool,
    batch: usize,
    filter: impl Fn() -> Option<Arc<dyn ErasedHook>>,
) -> (Seen, [usize; 2]) {
    // The second pool starts with nothing: idle, and wanting work.
    let exchange = Exchange {
        state: Mutex::new(State {
            idle: [false, true],
            ..State::default()
        }),
    };
    let sides = [0, 1].map(|me| Side {
        me,
        exchange: &exchange,
        batch,
    });
    let walks = [0, 1].map(|_| shared_with(roots, follow_links, shallow_first, filter()));
    let seen = Mutex::new(Seen::default());
    std::thread::scope(|scope| {
        for (me, (side, walk)) in sides.iter().zip(&walks).enumerate() {
            let seen = &seen;
            scope.spawn(move || {
                // The first pool starts with the roots; the second with nothing.
                let jobs = if me == 0 { root_jobs(walk).collect() } else { Vec::new() };
                pool::run(walk, jobs, side, Seen::default, |s| seen.lock().unwrap().add(s));
            });
        }
    });
    let state = exchange.state.into_inner().unwrap();
    assert!(state.refused.is_empty(), "a pool refused handoffs: {:?}", state.refused);
    assert!(state.mailbox.iter().all(Vec::is_empty), "mail left unread");
    (seen.into_inner().unwrap(), state.handed)
}

#[test]
fn two_pools_sharing_a_walk_yield_every_entry_once() {
    let tmp = tempfile::tempdir().unwrap();
    let roots = make_tree(tmp.path());
    for follow_links in [false, true] {
        let expected = alone(&roots, follow_links);
        assert!(expected.entries.values().all(|&n| n == 1));
        for (shallow_first, batch) in [(false, 4), (true, 1), (false, 64)] {
            let (seen, handed) = pair(&roots, follow_links, shallow_first, batch);
            let case = format!("follow_links {follow_links}, shallow_first {shallow_first}, batch {batch}");
            let twice: Vec<_> = seen.entries.iter().filter(|(_, &n)| n > 1).collect();
            assert!(twice.is_empty(), "{case}: yielded twice: {twice:?}");
            assert_eq!(seen.entries, expected.entries, "{case}");
            assert_eq!(seen.errors, expected.errors, "{case}");
            assert!(handed[0] > 0, "{case}: nothing was handed over");
        }
        if follow_links {
            // Each root's link to an ancestor is reported once, however far it travelled.
            assert_eq!(expected.errors.len(), 2, "{:?}", expected.errors);
        }
    }
}

#[test]
fn a_pool_waits_for_directories_until_the_remote_ends_it() {
    // The second pool starts idle with nothing and must not end before the
    // first has finished handing it work.
    let tmp = tempfile::tempdir().unwrap();
    let roots = make_tree(tmp.path());
    let (seen, handed) = pair(&roots, false, false, 1);
    assert_eq!(seen.entries, alone(&roots, false).entries);
    assert!(handed[0] > 0);
}

#[test]
fn a_handoff_that_does_not_fit_the_walk_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let roots = make_tree(tmp.path());
    let walk = shared(&roots, true, false);
    let root = roots[0].as_os_str().as_encoded_bytes().to_vec();
    let good = Handoff {
        root: 0,
        path: [&root[..], b"/a3/b2"].concat(),
        depth: 2,
        follow: false,
        root_id: (1, 2),
        ancestors: vec![(3, 4)],
        filter_state: None,
    };
    let Ok(crate::read::Job::Open(pending)) = good.clone().into_job(&walk) else {
        panic!("a sound handoff is refused");
    };
    assert_eq!(pending.path(), good.path);
    assert_eq!(pending.depth(), 2);
    let parent = &pending.parent;
    assert_eq!((parent.dev, parent.ino), (3, 4));
    assert_eq!(parent.path(), [&root[..], b"/a3"].concat());
    assert_eq!(&parent.prefix[..parent.root_prefix_len], [&root[..], b"/"].concat());
    assert_eq!(parent.root_id(), (1, 2));
    // Exported again, it says the same.
    assert_eq!(Handoff::export(pending, &walk).ok(), Some(good.clone()));

    let bad = [
        Handoff {
            root: 2,
            ..good.clone()
        },
        Handoff {
            path: b"/elsewhere/a3/b2".to_vec(),
            ..good.clone()
        },
        Handoff {
            depth: 3,
            ..good.clone()
        },
        Handoff {
            depth: 1,
            ..good.clone()
        },
        Handoff {
            path: [&root[..], b"/a3//b2"].concat(),
            ..good.clone()
        },
        Handoff {
            path: [&root[..], b"/../b2"].concat(),
            ..good.clone()
        },
        Handoff {
            ancestors: vec![(3, 4), (5, 6)],
            ..good.clone()
        },
        Handoff {
            depth: 0,
            path: b"/not/a/root".to_vec(),
            ..good.clone()
        },
    ];
    for handoff in bad {
        assert!(handoff.clone().into_job(&walk).is_err(), "{handoff:?} accepted");
    }
}

#[test]
fn filter_state_travels_with_the_directories_handed_over() {
    let tmp = tempfile::tempdir().unwrap();
    let roots = make_tree(tmp.path());
    let filter = |exports| move || Some(Arc::new(PathSum { exports }) as Arc<dyn ErasedHook>);
    let expected = alone_with(&roots, false, filter(true)());
    assert!(
        expected.entries.len() < alone(&roots, false).entries.len(),
        "the filter skips nothing"
    );
    let mut handed_below_roots = 0;
    for batch in [1, 4, 64] {
        let (seen, handed) = pair_with(&roots, false, false, batch, filter(true));
        assert_eq!(seen.entries, expected.entries, "batch {batch}");
        handed_below_roots += handed.iter().sum::<usize>().saturating_sub(roots.len());
    }
    assert!(handed_below_roots > 0, "no directory below a root was handed over");
    // A filter that cannot export its state keeps every directory below
    // the roots where it was found: still every entry once.
    let (seen, handed) = pair_with(&roots, false, false, 4, filter(false));
    assert_eq!(seen.entries, expected.entries);
    assert!(handed.iter().sum::<usize>() <= roots.len(), "{handed:?}");
}

#[test]
fn a_filter_state_that_does_not_decode_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let roots = make_tree(tmp.path());
    let walk = shared_with(&roots, false, false, Some(Arc::new(PathSum { exports: true })));
    let root = roots[0].as_os_str().as_encoded_bytes().to_vec();
    let handoff = |filter_state: Option<Vec<u8>>| Handoff {
        root: 0,
        path: [&root[..], b"/a3/b2"].concat(),
        depth: 2,
        follow: false,
        root_id: (1, 2),
        ancestors: Vec::new(),
        filter_state,
    };
    let Ok(crate::read::Job::Open(pending)) = handoff(Some(7u64.to_le_bytes().to_vec())).into_job(&walk) else {
        panic!("a sound handoff is refused");
    };
    let state = pending.parent.hook_state.as_ref().and_then(|s| s.downcast_ref::<u64>());
    assert_eq!(state, Some(&7), "the parent's state was not imported");
    let why = handoff(Some(b"short".to_vec())).into_job(&walk).err().unwrap();
    assert!(why.contains("not a sum"), "{why}");
    let plain = shared(&roots, false, false);
    assert!(
        handoff(Some(Vec::new())).into_job(&plain).is_err(),
        "state for a walk without a filter"
    );
}
