//! The public API on trees built in a temporary directory: every way of
//! consuming a walk, in every order, yields each entry exactly once.

use std::collections::BTreeSet;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use fnd_walk::{Chunk, ErrorKind, FileType, Flow, Order, Sort, Visitor, WalkBuilder};

/// A tree with nested directories, an empty one, a wide one, hidden names,
/// a name that is not UTF-8 and symlinks to a file, a directory and nowhere.
fn make_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for d in ["a/b/c", "a/empty", "wide", ".hidden/inner"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    for f in [
        "top.txt",
        "a/one.rs",
        "a/b/two.rs",
        "a/b/c/three.txt",
        ".hidden/inner/x",
        ".dotfile",
    ] {
        std::fs::write(root.join(f), f).unwrap();
    }
    for i in 0..300 {
        std::fs::write(root.join(format!("wide/f{i:03}")), "").unwrap();
    }
    std::fs::write(root.join(std::ffi::OsStr::from_bytes(b"a/caf\xe9")), "latin-1").unwrap();
    std::os::unix::fs::symlink("top.txt", root.join("link-file")).unwrap();
    std::os::unix::fs::symlink("a/b", root.join("link-dir")).unwrap();
    std::os::unix::fs::symlink("nowhere", root.join("link-dangling")).unwrap();
    dir
}

/// What a correct walk yields: every path under `root`, and `root` itself.
fn expected(root: &Path) -> BTreeSet<PathBuf> {
    fn walk(dir: &Path, out: &mut BTreeSet<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            out.insert(entry.path());
            if entry.file_type().unwrap().is_dir() {
                walk(&entry.path(), out);
            }
        }
    }
    let mut out = BTreeSet::from([root.to_path_buf()]);
    walk(root, &mut out);
    out
}

/// Insert every path, failing on a path seen twice.
fn insert_once(set: &mut BTreeSet<PathBuf>, path: PathBuf) {
    assert!(set.insert(path.clone()), "{} yielded twice", path.display());
}

fn builders(root: &Path) -> Vec<(String, WalkBuilder)> {
    let mut out = vec![
        (
            "breadth-first".to_string(),
            WalkBuilder::new(root).order(Order::BreadthFirst),
        ),
        (
            "depth-first".to_string(),
            WalkBuilder::new(root).order(Order::DepthFirst),
        ),
    ];
    for threads in [1, 2, 4] {
        out.push((format!("parallel({threads})"), WalkBuilder::new(root).threads(threads)));
    }
    out.push((
        "parallel shallow-first".to_string(),
        WalkBuilder::new(root).threads(3).shallow_first(true),
    ));
    out.into_iter().map(|(name, b)| (name, b.chunk_size(7))).collect()
}

#[test]
fn entry_iterator_yields_every_entry_once_in_every_order() {
    let tree = make_tree();
    let want = expected(tree.path());
    for (name, builder) in builders(tree.path()) {
        let mut got = BTreeSet::new();
        for entry in builder.iter() {
            insert_once(&mut got, entry.unwrap().into_path());
        }
        assert_eq!(got, want, "{name}");
    }
}

/// Past its bounded frontier (1024 directories) a shallow-first walk goes
/// depth-first below it; every entry still comes out once.
#[test]
fn shallow_first_past_its_frontier_yields_every_entry_once() {
    let tree = tempfile::tempdir().unwrap();
    for i in 0..1500 {
        let sub = tree.path().join(format!("d{i}/sub"));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join("f"), "").unwrap();
    }
    let want = expected(tree.path());
    for threads in [1, 3] {
        let mut got = BTreeSet::new();
        for entry in WalkBuilder::new(tree.path())
            .threads(threads)
            .shallow_first(true)
            .iter()
        {
            insert_once(&mut got, entry.unwrap().into_path());
        }
        assert_eq!(got, want, "{threads} threads");
    }
}

#[test]
fn chunk_iterator_yields_every_entry_once_in_every_order() {
    let tree = make_tree();
    let want = expected(tree.path());
    for (name, builder) in builders(tree.path()) {
        let mut got = BTreeSet::new();
        for chunk in builder.chunks() {
            let chunk = chunk.unwrap();
            assert!(chunk.len() <= 7, "{name}: chunk of {}", chunk.len());
            for entry in chunk.iter() {
                assert_eq!(entry.depth(), chunk.depth());
                insert_once(&mut got, entry.path());
            }
        }
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn closure_visitors_see_every_entry_once_in_every_order() {
    let tree = make_tree();
    let want = expected(tree.path());
    for (name, builder) in builders(tree.path()) {
        let seen = Mutex::new(BTreeSet::new());
        builder.for_each(|entry| {
            insert_once(&mut seen.lock().unwrap(), entry.unwrap().path());
            Flow::Continue
        });
        assert_eq!(seen.into_inner().unwrap(), want, "{name}");

        let per_thread = builder.for_each_with(Vec::new, |paths, entry| {
            paths.push(entry.unwrap().path());
            Flow::Continue
        });
        let mut got = BTreeSet::new();
        for path in per_thread.into_iter().flatten() {
            insert_once(&mut got, path);
        }
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn depth_first_sorted_walk_is_deterministic() {
    let tree = make_tree();
    let walk = WalkBuilder::new(tree.path())
        .order(Order::DepthFirst)
        .sort(Some(Sort::Name))
        .prune(|d| d.name == b"wide");
    let relative = |e: fnd_walk::Entry| {
        e.path()
            .strip_prefix(tree.path())
            .unwrap()
            .as_os_str()
            .as_bytes()
            .to_vec()
    };
    let got: Vec<Vec<u8>> = walk.iter().map(|e| relative(e.unwrap())).collect();
    // A directory's entries come together (one chunk), then each
    // subdirectory's subtree, in name order.
    let want: Vec<&[u8]> = vec![
        b"",
        b".dotfile",
        b".hidden",
        b"a",
        b"link-dangling",
        b"link-dir",
        b"link-file",
        b"top.txt",
        b"wide",
        b".hidden/inner",
        b".hidden/inner/x",
        b"a/b",
        b"a/caf\xe9",
        b"a/empty",
        b"a/one.rs",
        b"a/b/c",
        b"a/b/two.rs",
        b"a/b/c/three.txt",
    ];
    assert_eq!(got, want);
    // The same walk twice gives the same order.
    let again: Vec<Vec<u8>> = walk.iter().map(|e| relative(e.unwrap())).collect();
    assert_eq!(got, again);
}

#[test]
fn breadth_first_yields_shallower_entries_first() {
    let tree = make_tree();
    let depths: Vec<usize> = WalkBuilder::new(tree.path())
        .order(Order::BreadthFirst)
        .iter()
        .map(|e| e.unwrap().depth())
        .collect();
    assert!(depths.windows(2).all(|w| w[0] <= w[1]), "{depths:?}");
    assert_eq!(depths.iter().max(), Some(&4));
}

#[test]
fn min_and_max_depth_bound_what_is_yielded() {
    let tree = make_tree();
    let want: BTreeSet<PathBuf> = expected(tree.path())
        .into_iter()
        .filter(|p| {
            let depth = p.strip_prefix(tree.path()).unwrap().components().count();
            (1..=2).contains(&depth)
        })
        .collect();
    let got: BTreeSet<PathBuf> = WalkBuilder::new(tree.path())
        .min_depth(1)
        .max_depth(Some(2))
        .iter()
        .map(|e| e.unwrap().into_path())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn entries_carry_what_the_listing_said() {
    let tree = make_tree();
    let entries: Vec<fnd_walk::Entry> = WalkBuilder::new(tree.path()).iter().map(Result::unwrap).collect();
    for entry in &entries {
        let std_meta = std::fs::symlink_metadata(entry.path()).unwrap();
        use std::os::unix::fs::MetadataExt;
        assert_eq!(entry.ino(), std_meta.ino(), "{}", entry.path().display());
        let want_type = if std_meta.is_dir() {
            FileType::Dir
        } else if std_meta.file_type().is_symlink() {
            FileType::Symlink
        } else {
            FileType::File
        };
        assert_eq!(entry.file_type(), want_type, "{}", entry.path().display());
        assert_eq!(entry.is_root(), entry.depth() == 0);
        if !entry.is_root() {
            assert_eq!(entry.file_name(), entry.path().file_name().unwrap());
        }
        assert_eq!(entry.metadata().unwrap().ino, std_meta.ino());
    }
}

#[test]
fn bulk_metadata_is_there_for_every_entry() {
    let tree = make_tree();
    for (name, builder) in builders(tree.path()) {
        for entry in builder.metadata(true).iter() {
            let entry = entry.unwrap();
            let cached = *entry
                .cached_metadata()
                .unwrap_or_else(|| panic!("{name}: no metadata for {}", entry.path().display()));
            assert_eq!(entry.metadata().unwrap(), cached);
            if entry.file_type().is_file() {
                assert_eq!(cached.size, std::fs::metadata(entry.path()).unwrap().len());
            }
        }
    }
}

#[test]
fn following_links_reports_a_loop_once_and_lenient_skips_it() {
    let tree = make_tree();
    std::os::unix::fs::symlink("..", tree.path().join("a/b/c/up")).unwrap();
    let results: Vec<_> = WalkBuilder::new(tree.path())
        .follow_links(true)
        .order(Order::DepthFirst)
        .iter()
        .collect();
    let loops: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    // a/b/c/up → a/b, an ancestor; link-dir/c/up → a/b, met again through link-dir.
    assert!(!loops.is_empty());
    assert!(
        loops
            .iter()
            .all(|e| matches!(e.kind(), ErrorKind::Loop { .. }) && e.is_benign()),
        "{loops:?}"
    );
    let lenient_errors = WalkBuilder::new(tree.path())
        .follow_links(true)
        .lenient(true)
        .iter()
        .filter(Result::is_err)
        .count();
    assert_eq!(lenient_errors, 0);
    // Entries under the followed link are yielded with the link's path.
    let under_link = results
        .iter()
        .flatten()
        .any(|e| e.path() == tree.path().join("link-dir/two.rs"));
    assert!(under_link);
}

/// Following links, a dangling link is yielded as a link; one that cannot
/// be followed (to itself: ELOOP; through a file: ENOTDIR) is an error of
/// its own, benign for a lenient walk.
#[test]
fn links_that_cannot_be_followed_are_errors_dangling_ones_entries() {
    let tree = tempfile::tempdir().unwrap();
    std::fs::write(tree.path().join("file"), "").unwrap();
    for (link, target) in [
        ("dangling", "nowhere"),
        ("itself", "itself"),
        ("through-file", "file/x"),
    ] {
        std::os::unix::fs::symlink(target, tree.path().join(link)).unwrap();
    }
    let results: Vec<_> = WalkBuilder::new(tree.path())
        .follow_links(true)
        .min_depth(1)
        .iter()
        .collect();
    let names: BTreeSet<_> = results.iter().flatten().map(|e| e.file_name().to_owned()).collect();
    assert_eq!(
        names,
        ["dangling", "file"].map(std::ffi::OsString::from).into_iter().collect()
    );
    let mut errors: Vec<_> = results
        .iter()
        .filter_map(|r| r.as_ref().err())
        .map(|e| (e.path().to_owned(), e.kind().clone()))
        .collect();
    errors.sort_by(|a, b| a.0.cmp(&b.0));
    use rustix::io::Errno;
    assert_eq!(
        errors,
        [
            (tree.path().join("itself"), ErrorKind::Follow(Errno::LOOP)),
            (tree.path().join("through-file"), ErrorKind::Follow(Errno::NOTDIR))
        ]
    );
    let lenient = WalkBuilder::new(tree.path())
        .follow_links(true)
        .lenient(true)
        .iter()
        .filter(Result::is_err)
        .count();
    assert_eq!(lenient, 0);
}

#[test]
fn a_missing_root_is_an_error_even_when_lenient() {
    let tree = make_tree();
    let missing = tree.path().join("missing");
    let results: Vec<_> = WalkBuilder::new(tree.path().join("top.txt"))
        .add_root(&missing)
        .lenient(true)
        .iter()
        .collect();
    assert_eq!(results.len(), 2);
    let entry = results.iter().find_map(|r| r.as_ref().ok()).unwrap();
    assert_eq!(entry.path(), tree.path().join("top.txt"));
    assert_eq!(entry.file_type(), FileType::File);
    let error = results.iter().find_map(|r| r.as_ref().err()).unwrap();
    assert_eq!(error.path(), missing);
    assert_eq!(error.errno(), Some(rustix::io::Errno::NOENT));
}

#[test]
fn prune_keeps_the_directory_but_not_its_contents() {
    let tree = make_tree();
    let got: BTreeSet<PathBuf> = WalkBuilder::new(tree.path())
        .prune(|d| d.name == b"a" || d.name == b"wide")
        .iter()
        .map(|e| e.unwrap().into_path())
        .collect();
    assert!(got.contains(&tree.path().join("a")));
    assert!(got.contains(&tree.path().join("wide")));
    assert!(!got
        .iter()
        .any(|p| p.starts_with(tree.path().join("a/")) && p != &tree.path().join("a")));
    assert!(!got.contains(&tree.path().join("wide/f000")));
    assert!(got.contains(&tree.path().join(".hidden/inner/x")));
}

#[test]
fn keep_filters_what_is_yielded_but_still_descends() {
    let tree = make_tree();
    let got: BTreeSet<PathBuf> = WalkBuilder::new(tree.path())
        .min_depth(1)
        .keep(|e| e.name.ends_with(b".rs"))
        .iter()
        .map(|e| e.unwrap().into_path())
        .collect();
    assert_eq!(
        got,
        BTreeSet::from([tree.path().join("a/one.rs"), tree.path().join("a/b/two.rs")])
    );
}

#[test]
fn keep_and_prune_combine_with_skip_hidden() {
    let tree = make_tree();
    let got: BTreeSet<PathBuf> = WalkBuilder::new(tree.path())
        .min_depth(1)
        .skip_hidden(true)
        .prune(|d| d.name == b"b")
        .keep(|e| e.file_type == FileType::Dir)
        .iter()
        .map(|e| e.unwrap().into_path())
        .collect();
    let want = ["a", "a/b", "a/empty", "wide"].map(|p| tree.path().join(p));
    assert_eq!(got, BTreeSet::from(want));
}

#[test]
fn stopping_from_a_closure_stops_the_walk() {
    let tree = make_tree();
    for (name, builder) in builders(tree.path()) {
        let seen = AtomicUsize::new(0);
        builder.chunk_size(1).for_each(|_| {
            seen.fetch_add(1, Ordering::Relaxed);
            Flow::Stop
        });
        // Each worker thread sees at most the one chunk (of one entry) it was visiting.
        assert!(seen.into_inner() <= 4, "{name}");
    }
}

#[test]
fn a_slow_consumer_holds_the_walk_back() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..1000 {
        std::fs::write(dir.path().join(i.to_string()), "").unwrap();
    }
    let judged = Arc::new(AtomicUsize::new(0));
    let counter = judged.clone();
    let mut walk = WalkBuilder::new(dir.path())
        .order(Order::DepthFirst)
        .min_depth(1)
        .chunk_size(1)
        .buffer_chunks(1)
        .keep(move |_| {
            counter.fetch_add(1, Ordering::Relaxed);
            true
        })
        .iter();
    walk.next().unwrap().unwrap();
    // Taken: 1; in the channel: 1; being sent: 1; so at most 3 judged, however long we wait.
    assert!(judged.load(Ordering::Relaxed) <= 3);
    drop(walk);
    assert!(judged.load(Ordering::Relaxed) <= 4);
}

#[test]
#[should_panic(expected = "filter panicked")]
fn a_panic_in_a_filter_reaches_the_consumer() {
    let tree = make_tree();
    for entry in WalkBuilder::new(tree.path())
        .threads(2)
        .keep(|_| panic!("filter panicked"))
        .iter()
    {
        let _ = entry;
    }
}

#[test]
fn visit_hands_each_thread_its_own_visitor() {
    struct Count(usize);
    impl Visitor for Count {
        fn visit(&mut self, chunk: &mut Chunk) -> Flow {
            self.0 += chunk.len();
            Flow::Continue
        }
    }
    let tree = make_tree();
    let mut visitors = 0;
    let mut total = 0;
    WalkBuilder::new(tree.path()).threads(3).visit(
        || Count(0),
        |c| {
            visitors += 1;
            total += c.0;
        },
    );
    assert_eq!(visitors, 3);
    assert_eq!(total, expected(tree.path()).len());
}
