//! The engine on trees built to break walkers: hostile names, chains far
//! past PATH_MAX, symlink loops, trees mutated during the walk, and
//! directories swapped for symlinks between listing and opening.
//!
//! The walk is run as root on trees other users control, so every test
//! checks the same three things: nothing lost, nothing crashes, nothing
//! outside the tree followed.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use fnd_test_support::hostile::*;
use fnd_walk::{
    Chunk, Error, ErrorKind, FileType, Flow, Nest, Order, TreeOrder, TreeVisitor, Visitor, WalkBuilder, Within,
};
use rustix::io::Errno;

/// Every order the engine has, with the parallel one at one and at several threads.
const ORDERS: [(Order, usize); 4] = [
    (Order::BreadthFirst, 1),
    (Order::DepthFirst, 1),
    (Order::Parallel, 1),
    (Order::Parallel, 4),
];

/// Every way a directory can be opened: relative to its kept-open parent,
/// or (descriptor budget exhausted) by path from the root.
const FD_BUDGETS: [Option<usize>; 2] = [None, Some(0)];

fn builders(root: &Path) -> impl Iterator<Item = WalkBuilder> + '_ {
    ORDERS.iter().flat_map(move |&(order, threads)| {
        FD_BUDGETS.iter().map(move |&budget| {
            let b = WalkBuilder::new(root).order(order).threads(threads).min_depth(1);
            match budget {
                Some(n) => b.max_open_fds(n),
                None => b,
            }
        })
    })
}

#[derive(Default)]
struct Collect {
    entries: Vec<(Vec<u8>, FileType, FileType)>,
    errors: Vec<Error>,
}

impl Visitor for Collect {
    fn visit(&mut self, chunk: &mut Chunk) -> Flow {
        for e in chunk.iter() {
            let mut path = Vec::new();
            e.write_path(&mut path);
            self.entries.push((path, e.file_type(), e.target_type()));
        }
        Flow::Continue
    }

    fn error(&mut self, error: Error) -> Flow {
        self.errors.push(error);
        Flow::Continue
    }
}

fn collect(builder: &WalkBuilder) -> Collect {
    let mut all = Collect::default();
    builder.visit(Collect::default, |c| {
        all.entries.extend(c.entries);
        all.errors.extend(c.errors);
    });
    all
}

fn paths(c: &Collect) -> Vec<Vec<u8>> {
    c.entries.iter().map(|e| e.0.clone()).collect()
}

/// The paths, checking that none was reported twice.
fn unique_paths(c: &Collect, what: &str) -> HashSet<Vec<u8>> {
    let mut set = HashSet::new();
    for p in paths(c) {
        let shown = String::from_utf8_lossy(&p).into_owned();
        assert!(set.insert(p), "{what}: reported twice: {shown:?}");
    }
    set
}

fn join(base: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = base.to_vec();
    p.push(b'/');
    p.extend_from_slice(name);
    p
}

fn root_bytes(p: &Path) -> Vec<u8> {
    p.as_os_str().as_bytes().to_vec()
}

#[test]
fn hostile_names_are_found_byte_exact_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = root_bytes(tmp.path());
    let top = open_root(tmp.path());
    mkdir_at(&top, b"files");
    mkdir_at(&top, b"dirs");
    let files = open_dir(&top, "files").unwrap();
    let dirs = open_dir(&top, "dirs").unwrap();
    let mut expected = HashSet::new();
    expected.insert(join(&root, b"files"));
    expected.insert(join(&root, b"dirs"));
    for name in hostile_names() {
        touch_at(&files, &name);
        mkdir_at(&dirs, &name);
        touch_at(open_dir(&dirs, OsStr::from_bytes(&name)).unwrap(), &name);
        expected.insert(join(&join(&root, b"files"), &name));
        let d = join(&join(&root, b"dirs"), &name);
        expected.insert(join(&d, &name));
        expected.insert(d);
    }
    for b in builders(tmp.path()) {
        let c = collect(&b.clone().metadata(true));
        assert!(c.errors.is_empty(), "errors: {:?}", c.errors);
        assert_eq!(unique_paths(&c, "hostile names"), expected);
    }
}

/// Records what a chain yields, checking each path as it goes (the paths
/// are tens of KiB each: keeping them all would dwarf the walk).
struct ChainCheck {
    root: Vec<u8>,
    seen: Vec<(usize, bool)>,
    errors: Vec<Error>,
    path: Vec<u8>,
}

impl Visitor for ChainCheck {
    fn visit(&mut self, chunk: &mut Chunk) -> Flow {
        for e in chunk.iter() {
            self.path.clear();
            e.write_path(&mut self.path);
            let (depth, is_file) = chain_seen(&self.root, std::iter::once(&self.path[..]))[0];
            assert_eq!((depth, is_file), (e.depth(), e.name_bytes() == b"f"));
            assert!(e.cached_metadata().is_some(), "bulk metadata missing at depth {depth}");
            let lazy = e.metadata().expect("metadata of a deep entry");
            assert_eq!(lazy.is_dir(), !is_file);
            self.seen.push((depth, is_file));
        }
        Flow::Continue
    }

    fn error(&mut self, error: Error) -> Flow {
        self.errors.push(error);
        Flow::Continue
    }
}

#[test]
fn chain_2000_deep_is_walked_whole_in_every_order() {
    const DEPTH: usize = 2000;
    let tmp = scratch_dir();
    make_chain(tmp.path(), DEPTH);
    let root = root_bytes(tmp.path());
    let expected = chain_expected(DEPTH);
    // Every order with kept-open descriptors; two with every directory
    // opened by path from the root (each such open walks the whole path,
    // so those walks are quadratic in the depth).
    let by_path =
        [Order::DepthFirst, Order::Parallel].map(|o| WalkBuilder::new(tmp.path()).order(o).threads(4).max_open_fds(0));
    let kept = ORDERS.map(|(o, t)| WalkBuilder::new(tmp.path()).order(o).threads(t));
    for b in kept.into_iter().chain(by_path) {
        let b = b.min_depth(1).metadata(true);
        let mut seen = Vec::new();
        let mut errors = Vec::new();
        b.visit(
            || ChainCheck {
                root: root.clone(),
                seen: Vec::new(),
                errors: Vec::new(),
                path: Vec::new(),
            },
            |c| {
                seen.extend(c.seen);
                errors.extend(c.errors);
            },
        );
        assert!(errors.is_empty(), "errors: {errors:?}");
        seen.sort();
        assert!(
            seen == expected,
            "chain: {} entries of {} expected",
            seen.len(),
            expected.len()
        );
    }
    remove_chain(tmp.path());
}

#[test]
fn symlink_loops_end_and_are_reported_once() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path();
    std::fs::create_dir_all(r.join("a/b")).unwrap();
    std::fs::write(r.join("a/b/file"), b"").unwrap();
    let links: [(&str, &str); 6] = [
        ("self", "."),
        ("selfname", "selfname"),
        ("dangling", "does-not-exist"),
        ("a/b/up", "../.."),
        ("a/tob", "b"),
        ("a/b/abs", r.to_str().unwrap()),
    ];
    for (link, target) in links {
        std::os::unix::fs::symlink(target, r.join(link)).unwrap();
    }
    let root = root_bytes(r);
    let p = |s: &str| join(&root, s.as_bytes());
    let loops: HashSet<Vec<u8>> = ["self", "a/b/up", "a/b/abs", "a/tob/up", "a/tob/abs"]
        .iter()
        .map(|s| p(s))
        .collect();
    for b in builders(r) {
        let c = collect(&b.follow_links(true));
        let found = unique_paths(&c, "loops");
        let mut reported = HashSet::new();
        let mut unfollowable = Vec::new();
        for e in &c.errors {
            match e.kind() {
                ErrorKind::Loop { .. } => {
                    assert!(reported.insert(root_bytes(e.path())), "loop reported twice: {e}")
                }
                // A link to itself cannot be followed: an error, as fd reports it.
                ErrorKind::Follow(Errno::LOOP) => unfollowable.push(root_bytes(e.path())),
                ErrorKind::Io(_) | ErrorKind::Follow(_) => panic!("unexpected error: {e}"),
            }
        }
        assert_eq!(reported, loops);
        assert_eq!(unfollowable, [p("selfname")]);
        for looped in &loops {
            assert!(
                !found.contains(looped),
                "a link back to an ancestor is reported, not yielded (as fd does)"
            );
        }
        assert!(!found.contains(&p("selfname")), "a link to itself is not yielded");
        for link in ["dangling", "a/tob"] {
            let entry = c
                .entries
                .iter()
                .find(|e| e.0 == p(link))
                .unwrap_or_else(|| panic!("{link} not listed"));
            assert_eq!(entry.1, FileType::Symlink, "{link} listed as a link");
        }
        let entry = c.entries.iter().find(|e| e.0 == p("dangling")).unwrap();
        assert_eq!(entry.2, FileType::Symlink, "a dangling link stays a link");
        assert!(found.contains(&p("a/tob/file")), "a link to a sibling is followed");
        assert!(!found.contains(&p("self/a")), "a self link is not walked");
    }
}

#[test]
fn links_are_not_followed_by_default() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = make_outside(tmp.path(), &["sub"]);
    let tree = tmp.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::os::unix::fs::symlink(&outside, tree.join("out")).unwrap();
    std::os::unix::fs::symlink("/", tree.join("slash")).unwrap();
    for b in builders(&tree) {
        let c = collect(&b.metadata(true));
        assert!(c.errors.is_empty(), "errors: {:?}", c.errors);
        assert_eq!(c.entries.len(), 2);
        assert!(c
            .entries
            .iter()
            .all(|e| e.1 == FileType::Symlink && e.2 == FileType::Symlink));
    }
}

/// Swaps `a` and `b` in `dir` each time a chunk of the given depth is seen:
/// deterministic "between listing and opening" races.
struct SwapOnChunk {
    inner: Collect,
    dir: std::path::PathBuf,
    names: (&'static str, &'static str),
    at_depth: usize,
    swapped: bool,
}

impl Visitor for SwapOnChunk {
    fn visit(&mut self, chunk: &mut Chunk) -> Flow {
        if chunk.depth() == self.at_depth && !self.swapped {
            let dir = open_root(&self.dir);
            exchange(&dir, self.names.0, self.names.1).expect("exchange");
            self.swapped = true;
        }
        self.inner.visit(chunk)
    }

    fn error(&mut self, error: Error) -> Flow {
        self.inner.error(error)
    }
}

fn swap_walk(b: &WalkBuilder, dir: &Path, names: (&'static str, &'static str), at_depth: usize) -> Collect {
    let mut all = Collect::default();
    b.visit(
        || SwapOnChunk {
            inner: Collect::default(),
            dir: dir.to_path_buf(),
            names,
            at_depth,
            swapped: false,
        },
        |v| {
            all.entries.extend(v.inner.entries);
            all.errors.extend(v.inner.errors);
        },
    );
    all
}

fn assert_no_marker(c: &Collect, what: &str) {
    for (p, ..) in &c.entries {
        assert!(
            !contains(p, MARKER.as_bytes()),
            "{what}: followed a symlink out of the tree: {}",
            String::from_utf8_lossy(p)
        );
    }
}

/// tree/a/b/c (real directories) and tree/link -> outside, which mirrors b/c
/// and holds the marker at every level.
fn swap_tree(base: &Path) -> std::path::PathBuf {
    let outside = make_outside(base, &["b", "c"]);
    let tree = base.join("tree");
    std::fs::create_dir_all(tree.join("a/b/c")).unwrap();
    std::fs::write(tree.join("a/b/c/inner"), b"").unwrap();
    std::os::unix::fs::symlink(&outside, tree.join("link")).unwrap();
    tree
}

#[test]
fn directory_swapped_for_symlink_after_listing_is_not_followed() {
    // `a` becomes a link to the outside after the root (or a deeper level)
    // was listed, before `a` (or a/b, a/b/c) is opened, by descriptor or by path.
    if !can_exchange(&std::env::temp_dir()) {
        return;
    }
    for budget in FD_BUDGETS {
        for &(order, threads) in &ORDERS {
            for at_depth in [1, 2, 3] {
                let tmp = tempfile::tempdir().unwrap();
                let tree = swap_tree(tmp.path());
                let mut b = WalkBuilder::new(&tree)
                    .order(order)
                    .threads(threads)
                    .min_depth(1)
                    .metadata(true);
                if let Some(n) = budget {
                    b = b.max_open_fds(n);
                }
                let c = swap_walk(&b, &tree, ("a", "link"), at_depth);
                assert_no_marker(&c, "swap");
                for e in &c.errors {
                    assert!(
                        matches!(e.errno(), Some(Errno::LOOP) | Some(Errno::NOTDIR)),
                        "unexpected error {e}"
                    );
                }
            }
        }
    }
}

#[test]
fn root_swapped_for_symlink_mid_walk_is_not_followed() {
    // The fallback opens by path from the root; a root whose parent another
    // user controls can be swapped for a link after the walk started.
    for &(order, threads) in &ORDERS {
        let tmp = tempfile::tempdir().unwrap();
        let tree = swap_tree(tmp.path());
        let aside = tmp.path().join("aside");
        std::fs::create_dir(&aside).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("outside"), aside.join("root-link")).unwrap();
        // Make the outside mirror the tree's first level, too.
        std::fs::create_dir_all(tmp.path().join("outside/a/b/c")).unwrap();
        std::fs::write(tmp.path().join(format!("outside/a/{MARKER}")), b"").unwrap();
        std::fs::write(tmp.path().join(format!("outside/a/b/{MARKER}")), b"").unwrap();
        let b = WalkBuilder::new(&tree)
            .order(order)
            .threads(threads)
            .min_depth(1)
            .max_open_fds(0);
        let mut all = Collect::default();
        b.visit(
            || RootSwap {
                inner: Collect::default(),
                base: tmp.path().to_path_buf(),
                done: false,
            },
            |v| {
                all.entries.extend(v.inner.entries);
                all.errors.extend(v.inner.errors);
            },
        );
        assert_no_marker(&all, "root swap");
    }
}

/// Moves the root away and puts a link to the outside in its place once the
/// root's entries have been seen.
struct RootSwap {
    inner: Collect,
    base: std::path::PathBuf,
    done: bool,
}

impl Visitor for RootSwap {
    fn visit(&mut self, chunk: &mut Chunk) -> Flow {
        if !self.done && chunk.depth() == 1 {
            let base = open_root(&self.base);
            rustix::fs::renameat(&base, "tree", &base, "tree-moved").unwrap();
            rustix::fs::symlinkat("outside", &base, "tree").unwrap();
            self.done = true;
        }
        self.inner.visit(chunk)
    }

    fn error(&mut self, error: Error) -> Flow {
        self.inner.error(error)
    }
}

#[test]
fn racing_swaps_never_lead_out_of_the_tree() {
    const ITERATIONS: usize = 150;
    let tmp = tempfile::tempdir().unwrap();
    if !can_exchange(tmp.path()) {
        return;
    }
    let tree = swap_tree(tmp.path());
    for i in 0..20 {
        std::fs::create_dir_all(tree.join(format!("a/b/c/d{i}"))).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let racer = {
        let (stop, tree) = (stop.clone(), tree.clone());
        std::thread::spawn(move || {
            let dir = open_root(&tree);
            let b = open_dir(&dir, "a").unwrap();
            rustix::fs::symlinkat(tree.parent().unwrap().join("outside/b"), &b, "blink").unwrap();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                exchange(&dir, "a", "link").unwrap();
                exchange(&b, "b", "blink").unwrap();
                n += 1;
            }
            n
        })
    };
    for i in 0..ITERATIONS {
        let (order, threads) = ORDERS[i % ORDERS.len()];
        let mut b = WalkBuilder::new(&tree).order(order).threads(threads).min_depth(1);
        if i % 2 == 1 {
            b = b.max_open_fds(0);
        }
        if i % 3 == 0 {
            b = b.metadata(true);
        }
        let c = collect(&b);
        assert_no_marker(&c, "racing swap");
        unique_paths(&c, "racing swap");
    }
    stop.store(true, Ordering::Relaxed);
    assert!(racer.join().unwrap() > 0);
}

#[test]
fn tree_mutated_during_the_walk() {
    const ITERATIONS: usize = 3;
    let tmp = tempfile::tempdir().unwrap();
    let stable = tmp.path().join("stable");
    let mut expected_stable = HashSet::new();
    for d in 0..20 {
        for f in 0..20 {
            let dir = stable.join(format!("d{d}/e{}", d % 3));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(format!("f{f}")), b"").unwrap();
            expected_stable.insert(root_bytes(&dir.join(format!("f{f}"))));
        }
    }
    let churn = tmp.path().join("churn");
    for c in 0..4 {
        std::fs::create_dir_all(churn.join(format!("c{c}"))).unwrap();
    }
    for i in 0..ITERATIONS {
        for &(order, threads) in &ORDERS {
            let stop = Arc::new(AtomicBool::new(false));
            let mutator = {
                let (stop, churn) = (stop.clone(), churn.clone());
                std::thread::spawn(move || mutate(&churn, &stop, i))
            };
            let mut b = WalkBuilder::new(tmp.path()).order(order).threads(threads).min_depth(1);
            if i % 2 == 1 {
                b = b.max_open_fds(0).metadata(true);
            }
            let c = collect(&b);
            stop.store(true, Ordering::Relaxed);
            mutator.join().unwrap();
            let found = unique_paths(&c, "mutated tree");
            for e in &c.errors {
                assert_eq!(e.errno(), Some(Errno::NOENT), "only vanished entries may fail: {e}");
            }
            let lost: Vec<_> = expected_stable.difference(&found).collect();
            assert!(lost.is_empty(), "{} untouched entries lost", lost.len());
        }
    }
}

/// Creates, renames (within and across directories) and deletes files and
/// directory subtrees under `churn` until told to stop. Names are never
/// reused, so a path seen twice is the walk's fault, not the kernel's.
fn mutate(churn: &Path, stop: &AtomicBool, round: usize) {
    let mut n = 0usize;
    let dir = |c: usize| churn.join(format!("c{}", c % 4));
    while !stop.load(Ordering::Relaxed) || n < 20 {
        let name = format!("r{round}-{n}");
        let d = dir(n).join(&name);
        let _ = std::fs::create_dir_all(d.join("x/y"));
        let _ = std::fs::write(d.join("x/file"), b"");
        let _ = std::fs::write(dir(n).join(format!("{name}.f")), b"");
        let _ = std::fs::rename(dir(n).join(format!("{name}.f")), dir(n + 1).join(format!("{name}.g")));
        let _ = std::fs::rename(&d, dir(n + 2).join(format!("{name}.moved")));
        if n >= 3 {
            let old = format!("r{round}-{}", n - 3);
            let _ = std::fs::remove_dir_all(dir(n - 1).join(format!("{old}.moved")));
            let _ = std::fs::remove_file(dir(n - 2).join(format!("{old}.g")));
        }
        n += 1;
    }
}

#[test]
fn error_asking_to_stop_ends_a_parallel_walk() {
    struct StopOnError;
    impl Visitor for StopOnError {
        fn visit(&mut self, _: &mut Chunk) -> Flow {
            Flow::Continue
        }
        fn error(&mut self, _: Error) -> Flow {
            Flow::Stop
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..50 {
        std::fs::create_dir_all(tmp.path().join(format!("d{i}/e"))).unwrap();
    }
    let missing = tmp.path().join("missing");
    let (tx, rx) = mpsc::channel();
    let root = tmp.path().to_path_buf();
    std::thread::spawn(move || {
        WalkBuilder::new(&missing)
            .add_root(&root)
            .order(Order::Parallel)
            .threads(4)
            .visit(|| StopOnError, drop);
        tx.send(()).unwrap();
    });
    // A hang guard, not a timing check: the walk takes milliseconds.
    rx.recv_timeout(Duration::from_secs(120))
        .expect("the walk ended after a visitor asked to stop");
}

/// `base/big`, a directory of `count` names big enough for a parallel walk
/// to read it with several threads (on ext4, cut by hash ranges). The names
/// are hard links to two files: ext4 adds a link without allocating an
/// inode, which costs about a millisecond on a busy disk.
fn huge_directory_of_links(base: &Path, count: usize) -> (std::path::PathBuf, HashSet<Vec<u8>>) {
    let big = base.join("big");
    std::fs::create_dir(&big).unwrap();
    let dir = open_root(&big);
    touch_at(&dir, b"origin0");
    touch_at(&dir, b"origin1");
    let mut names: HashSet<Vec<u8>> = [b"origin0".to_vec(), b"origin1".to_vec()].into();
    for i in 0..count {
        let name = format!("{i:0>100}");
        let origin = ["origin0", "origin1"][i % 2];
        rustix::fs::linkat(&dir, origin, &dir, name.as_str(), rustix::fs::AtFlags::empty()).unwrap();
        names.insert(name.into_bytes());
    }
    let expected = names.into_iter().map(|n| join(&root_bytes(&big), &n)).collect();
    (big, expected)
}

#[test]
fn huge_directory_read_by_several_threads_yields_each_entry_once() {
    // On the disk (not `scratch_dir`): ext4 is where the engine splits.
    let tmp = tempfile::tempdir().unwrap();
    let (big, expected) = huge_directory_of_links(tmp.path(), 60_000);
    for threads in [2, 8] {
        for metadata in [false, true] {
            let b = WalkBuilder::new(&big)
                .order(Order::Parallel)
                .threads(threads)
                .min_depth(1)
                .metadata(metadata);
            let c = collect(&b);
            assert!(c.errors.is_empty(), "errors: {:?}", c.errors);
            assert!(
                unique_paths(&c, "huge directory") == expected,
                "{threads} threads: entries lost or added"
            );
        }
    }
}

/// A hook that asks which of two names a directory holds, and keeps all.
struct Probes {
    names: Vec<Vec<u8>>,
    /// What each directory entered held of them.
    seen: Seen,
}

type Seen = Arc<std::sync::Mutex<Vec<Vec<bool>>>>;

impl fnd_walk::DirHook for Probes {
    type State = ();

    fn enter(&self, dir: &fnd_walk::DirInfo<'_>, _: Option<&Arc<()>>) -> Option<Arc<()>> {
        self.seen
            .lock()
            .unwrap()
            .push(dir.present.expect("the walk looked").to_vec());
        None
    }

    fn decide(&self, _: Option<&()>, _: &fnd_walk::RawEntry<'_>) -> fnd_walk::Decision {
        fnd_walk::Decision::KEEP
    }

    fn probe_names(&self) -> &[Vec<u8>] {
        &self.names
    }
}

#[test]
fn huge_directory_a_hook_probes_is_listed_in_part_and_still_split() {
    // Listed whole for the probes, it was read by one thread; now only its
    // first part is listed, a probe not in it is looked for by name, and
    // the rest is read (and split) as any directory's.
    let tmp = tempfile::tempdir().unwrap();
    let (big, mut expected) = huge_directory_of_links(tmp.path(), 60_000);
    touch_at(open_root(&big), b"marker");
    expected.insert(join(&root_bytes(&big), b"marker"));
    let probes = |seen: &Seen| Probes {
        names: vec![b"marker".to_vec(), b"absent".to_vec()],
        seen: seen.clone(),
    };
    for threads in [1, 2, 8] {
        let seen = Arc::default();
        let b = WalkBuilder::new(&big)
            .order(Order::Parallel)
            .threads(threads)
            .min_depth(1);
        let c = collect(&b.clone().hook(probes(&seen)));
        assert!(c.errors.is_empty(), "errors: {:?}", c.errors);
        assert!(
            unique_paths(&c, "probed") == expected,
            "{threads} threads: entries lost or added"
        );
        assert_eq!(*seen.lock().unwrap(), [vec![true, false]], "{threads} threads");
        let mut sorted = InOrder(Vec::new());
        b.hook(probes(&seen))
            .visit_tree(TreeOrder::new(Within::Name, Nest::AtEntry), &mut sorted);
        let mut want: Vec<Vec<u8>> = expected.iter().cloned().collect();
        want.sort();
        assert!(
            sorted.0 == want,
            "{threads} threads: not in name order, or entries lost"
        );
    }
}

#[test]
fn huge_directory_with_whole_dirs_is_one_chunk_in_listing_order() {
    // What would be split among the threads comes in one chunk, as the
    // file system lists it (what Python's os.walk tuples are made of).
    let tmp = tempfile::tempdir().unwrap();
    let (big, expected) = huge_directory_of_links(tmp.path(), 60_000);
    let listed: Vec<Vec<u8>> = std::fs::read_dir(&big)
        .unwrap()
        .map(|e| join(&root_bytes(&big), e.unwrap().file_name().as_bytes()))
        .collect();
    let walk = WalkBuilder::new(&big).threads(4).min_depth(1).whole_dirs(true);
    let chunks: Vec<Vec<Vec<u8>>> = walk
        .chunks()
        .map(|c| {
            c.unwrap()
                .iter()
                .map(|e| e.path().into_os_string().into_vec())
                .collect()
        })
        .collect();
    assert_eq!(
        chunks.len(),
        1,
        "chunks of sizes {:?}",
        chunks.iter().map(Vec::len).collect::<Vec<_>>()
    );
    assert!(chunks[0] == listed, "not in the listing's order");
    assert_eq!(listed.into_iter().collect::<HashSet<_>>(), expected);
}

/// A walk's paths in the order it hands them out.
struct InOrder(Vec<Vec<u8>>);

impl TreeVisitor for InOrder {
    fn entries(&mut self, chunk: &fnd_walk::ChunkBuf) -> Flow {
        self.0
            .extend(chunk.iter().map(|e| e.path().into_os_string().into_vec()));
        Flow::Continue
    }
}

#[test]
fn huge_directory_sorted_by_several_threads_comes_in_order() {
    // An ordered walk that sorts reads it in parts too (each sorted on its
    // thread, then merged), with subdirectories found by every part.
    let tmp = tempfile::tempdir().unwrap();
    let (big, mut expected) = huge_directory_of_links(tmp.path(), 60_000);
    let mut dirs = HashSet::new();
    for i in 0..64 {
        let sub = big.join(format!("sub{i}"));
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("f"), "").unwrap();
        dirs.insert(root_bytes(&sub));
        expected.insert(root_bytes(&sub));
        expected.insert(root_bytes(&sub.join("f")));
    }
    let mut by_name: Vec<Vec<u8>> = expected.into_iter().collect();
    // Each directory's entries by name, a subtree at its entry: the paths
    // compared component by component.
    by_name.sort_by(|a, b| a.split(|&c| c == b'/').cmp(b.split(|&c| c == b'/')));
    // The order of the paths spelt with a `/` after each directory.
    let mut by_path = by_name.clone();
    let spelt = |p: &Vec<u8>| [&p[..], if dirs.contains(p) { b"/" } else { b"" }].concat();
    by_path.sort_by_cached_key(spelt);
    for threads in [2, 8] {
        for (within, want) in [(Within::Name, &by_name), (Within::Path, &by_path)] {
            let mut got = InOrder(Vec::new());
            let walk = WalkBuilder::new(&big).threads(threads).min_depth(1);
            walk.visit_tree(TreeOrder::new(within, Nest::AtEntry), &mut got);
            assert_eq!(
                got.0.len(),
                want.len(),
                "{within:?} on {threads} threads: entries lost or added"
            );
            assert!(got.0 == *want, "{within:?} on {threads} threads: out of order");
        }
    }
}

#[test]
fn huge_directory_in_inode_batches_by_several_threads_keeps_the_listing() {
    // du's order (gnulib fts: batches of the listing sorted by inode) with
    // the directory read in parts: joined in the listing's order.
    use std::os::unix::fs::DirEntryExt;
    let tmp = tempfile::tempdir().unwrap();
    let (big, _) = huge_directory_of_links(tmp.path(), 60_000);
    for i in 0..64 {
        let sub = big.join(format!("sub{i}"));
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("f"), "").unwrap();
    }
    let mut listed: Vec<(u64, Vec<u8>)> = std::fs::read_dir(&big)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.ino(), e.file_name().into_vec()))
        .collect();
    let (above, batch) = (1_000, 7_000);
    for run in listed.chunks_mut(batch) {
        if run.len() > above {
            run.sort_by_key(|e| e.0);
        }
    }
    let root = root_bytes(&big);
    let mut want = Vec::new();
    for (_, name) in &listed {
        want.push(join(&root, name));
        if name.starts_with(b"sub") {
            want.push(join(&join(&root, name), b"f"));
        }
    }
    for threads in [2, 8] {
        let mut got = InOrder(Vec::new());
        let walk = WalkBuilder::new(&big).threads(threads).min_depth(1);
        walk.visit_tree(
            TreeOrder::new(Within::InodeBatches { above, batch }, Nest::AtEntry),
            &mut got,
        );
        assert_eq!(got.0.len(), want.len(), "{threads} threads: entries lost or added");
        assert!(got.0 == want, "{threads} threads: not in the listing's batches");
    }
}

/// Run `walk` while another thread adds, renames and removes names in
/// `big` (new names only, never reused: a name seen twice is the walk's
/// doing).
fn while_renaming<T>(big: &Path, round: usize, walk: impl FnOnce() -> T) -> T {
    let stop = Arc::new(AtomicBool::new(false));
    let mutator = {
        let (stop, big) = (stop.clone(), big.to_path_buf());
        std::thread::spawn(move || {
            let dir = open_root(&big);
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) || n < 50 {
                let (new, moved) = (format!("new{round}-{n}"), format!("moved{round}-{n}"));
                let _ = rustix::fs::linkat(&dir, "origin0", &dir, new.as_str(), rustix::fs::AtFlags::empty());
                let _ = rustix::fs::renameat(&dir, new.as_str(), &dir, moved.as_str());
                if n >= 3 {
                    let _ = rustix::fs::unlinkat(
                        &dir,
                        format!("moved{round}-{}", n - 3).as_str(),
                        rustix::fs::AtFlags::empty(),
                    );
                }
                n += 1;
            }
        })
    };
    let done = walk();
    stop.store(true, Ordering::Relaxed);
    mutator.join().unwrap();
    done
}

#[test]
fn huge_directory_changing_while_several_threads_read_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (big, expected) = huge_directory_of_links(tmp.path(), 60_000);
    for round in 0..2 {
        let c = while_renaming(&big, round, || {
            collect(&WalkBuilder::new(&big).order(Order::Parallel).threads(4).min_depth(1))
        });
        assert!(c.errors.is_empty(), "errors: {:?}", c.errors);
        let found = unique_paths(&c, "changing huge directory");
        let lost = expected.difference(&found).count();
        assert_eq!(lost, 0, "round {round}: {lost} untouched entries lost");
    }
    // Sorted, read in parts and merged: each entry once, in order.
    for round in 2..4 {
        let mut got = InOrder(Vec::new());
        while_renaming(&big, round, || {
            let walk = WalkBuilder::new(&big).threads(4).min_depth(1);
            walk.visit_tree(TreeOrder::new(Within::Name, Nest::AtEntry), &mut got)
        });
        assert!(
            got.0.windows(2).all(|w| w[0] < w[1]),
            "round {round}: out of order or twice"
        );
        let found: HashSet<Vec<u8>> = got.0.into_iter().collect();
        let lost = expected.difference(&found).count();
        assert_eq!(lost, 0, "round {round}, sorted: {lost} untouched entries lost");
    }
}

#[test]
fn hostile_ignore_files_neither_hang_nor_fill_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path().to_path_buf();
    hostile_ignore_tree(&r);
    let (tx, rx) = mpsc::channel();
    let root = r.clone();
    std::thread::spawn(move || {
        let filter = Arc::new(
            fnd_walk::ignore::IgnoreBuilder::new()
                .parents(false)
                .require_git(false)
                .build(&[&root]),
        );
        for &(order, threads) in &ORDERS {
            let b = WalkBuilder::new(&root)
                .order(order)
                .threads(threads)
                .min_depth(1)
                .hook(filter.clone());
            tx.send(collect(&b)).unwrap();
        }
    });
    for _ in ORDERS {
        // A hang guard, not a timing check.
        let c = rx.recv_timeout(Duration::from_secs(300)).expect("the walk ended");
        let found = unique_paths(&c, "hostile ignore files");
        for d in HOSTILE_IGNORE_DIRS {
            assert!(found.contains(&root_bytes(&r.join(d).join("kept"))), "{d}/kept listed");
        }
        assert!(
            !found.contains(&root_bytes(&r.join("plain/x.log"))),
            "a real ignore file still applies"
        );
        assert!(
            found.contains(&root_bytes(&r.join("fifo/x.log"))),
            "a FIFO is not an ignore file"
        );
    }
}

#[test]
fn deep_metadata_off_the_reading_thread_under_a_linked_root() {
    // Past PATH_MAX, an entry whose chunk has left its thread is stat'ed by
    // path in pieces; links in the root the user gave are theirs to follow.
    let tmp = scratch_dir();
    let real = tmp.path().join("real");
    std::fs::create_dir(&real).unwrap();
    make_chain(&real, 500);
    std::os::unix::fs::symlink(&real, tmp.path().join("link")).unwrap();
    struct TakeAndStat(Vec<String>);
    impl Visitor for TakeAndStat {
        fn visit(&mut self, chunk: &mut Chunk) -> Flow {
            let taken = chunk.take();
            for e in taken.iter() {
                if let Err(err) = e.metadata() {
                    self.0.push(format!("depth {}: {err}", e.depth()));
                }
            }
            Flow::Continue
        }
    }
    let mut failures = Vec::new();
    WalkBuilder::new(tmp.path().join("link"))
        .order(Order::DepthFirst)
        .min_depth(1)
        .visit(|| TakeAndStat(Vec::new()), |v| failures.extend(v.0));
    remove_chain(&real);
    assert!(
        failures.is_empty(),
        "{} entries without metadata, first: {:?}",
        failures.len(),
        failures.first()
    );
}
