//! Entries kept past their visit never lend a descriptor the walk has
//! closed. Every way the API lets a caller keep entries (a chunk's entries
//! taken in a visitor, after `retain`; the chunk iterator; owned entries
//! from `for_each` and the entry iterator; kept entries sent to another
//! thread) is tried, and then the descriptor numbers the walk used are
//! taken over by directories holding the same names: a kept entry must
//! still stat its own file. (Keeping the `Chunk` a visitor is lent, or an
//! `EntryRef` borrowed from it, does not compile: see `Chunk`'s docs.)

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fnd_walk::{Chunk, ChunkBuf, Entry, EntryRef, Flow, Order, Visitor, WalkBuilder};

/// A tree of a few directories, each with files `f0`..`f4`.
fn make_tree(root: &Path) {
    for d in ["a", "a/b", "c", "c/d/e"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
        for f in 0..5 {
            std::fs::write(root.join(d).join(format!("f{f}")), d).unwrap();
        }
    }
}

/// Each kept path with the inode it must stat to.
fn truth(root: &Path) -> BTreeMap<PathBuf, u64> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, u64>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            out.insert(entry.path(), entry.metadata().unwrap().ino());
            if entry.file_type().unwrap().is_dir() {
                walk(&entry.path(), out);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, &mut out);
    out
}

/// Takes every chunk's entries, after dropping some with `retain`, and
/// notes each descriptor it was lent.
#[derive(Default)]
struct Keep {
    kept: Vec<ChunkBuf>,
    lent: BTreeSet<RawFd>,
}

impl Visitor for Keep {
    fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
        if let Some(fd) = chunk.parent_fd() {
            self.lent.insert(fd.as_raw_fd());
            // While the visit lasts, the entries stat relative to the directory.
            for entry in chunk.iter() {
                assert_eq!(entry.parent_fd().map(|fd| fd.as_raw_fd()), Some(fd.as_raw_fd()));
                assert!(entry.metadata().is_ok(), "{:?}", entry.path());
            }
        }
        chunk.retain(|e| e.name_bytes() != b"f4");
        self.kept.push(chunk.take());
        assert!(chunk.is_empty(), "take leaves the lent chunk empty");
        Flow::Continue
    }
}

/// Open `decoys` directories until every number in `lent` names one of
/// them (or a file), so that a kept entry still using one would stat a
/// name in the wrong directory.
fn take_over(lent: &BTreeSet<RawFd>, decoys: &[PathBuf]) -> Vec<OwnedFd> {
    let mut held = Vec::new();
    for i in 0..4096 {
        let fd: OwnedFd = std::fs::File::open(&decoys[i % decoys.len()]).unwrap().into();
        let n = fd.as_raw_fd();
        held.push(fd);
        if lent.iter().all(|&l| l < n) {
            break;
        }
    }
    held
}

fn check(
    entries: impl IntoIterator<Item = (PathBuf, std::io::Result<fnd_walk::Metadata>)>,
    truth: &BTreeMap<PathBuf, u64>,
) -> usize {
    let mut n = 0;
    for (path, meta) in entries {
        let meta = meta.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if let Some(&ino) = truth.get(&path) {
            assert_eq!(meta.ino, ino, "{} stat-ed somewhere else", path.display());
            n += 1;
        }
    }
    n
}

fn of_ref(e: EntryRef<'_>) -> (PathBuf, std::io::Result<fnd_walk::Metadata>) {
    assert!(e.parent_fd().is_none(), "a kept entry lends a descriptor");
    (e.path(), e.metadata())
}

fn of_entry(e: &Entry) -> (PathBuf, std::io::Result<fnd_walk::Metadata>) {
    (e.path().to_path_buf(), e.metadata())
}

#[test]
fn entries_kept_past_their_visit_stat_their_own_files() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    make_tree(&root);
    // Directories with the same names and files of their own.
    let decoy = tmp.path().join("decoy");
    make_tree(&decoy);
    std::fs::create_dir_all(decoy.join("tree")).unwrap();
    let decoys: Vec<PathBuf> = ["", "a", "a/b", "c", "c/d", "c/d/e"]
        .iter()
        .map(|d| decoy.join(d))
        .collect();
    let truth = truth(&root);
    let files_kept = truth.keys().filter(|p| !p.ends_with("f4")).count();

    for order in [Order::DepthFirst, Order::BreadthFirst, Order::Parallel] {
        let walk = WalkBuilder::new(&root).min_depth(1).order(order).threads(2);

        // Taken in a visitor, then kept past the walk, and sent to another thread.
        let mut keep = Keep::default();
        walk.visit(Keep::default, |k| {
            keep.kept.extend(k.kept);
            keep.lent.extend(k.lent);
        });
        assert!(!keep.lent.is_empty(), "{order:?}: no descriptor was lent");
        let from_iterator: Vec<ChunkBuf> = walk.chunks().map(Result::unwrap).collect();
        let owned = Mutex::new(Vec::new());
        walk.for_each(|e| {
            owned.lock().unwrap().push(e.unwrap().to_entry());
            Flow::Continue
        });
        let iterated: Vec<Entry> = walk.iter().map(Result::unwrap).collect();

        let _held = take_over(&keep.lent, &decoys);
        let kept = std::thread::spawn(move || keep.kept).join().unwrap();
        let n = check(kept.iter().flat_map(|c| c.iter().map(of_ref)), &truth);
        assert_eq!(n, files_kept, "{order:?}: taken chunks");
        let n = check(from_iterator.iter().flat_map(|c| c.iter().map(of_ref)), &truth);
        assert_eq!(n, truth.len(), "{order:?}: the chunk iterator");
        let n = check(owned.into_inner().unwrap().iter().map(of_entry), &truth);
        assert_eq!(n, truth.len(), "{order:?}: for_each's owned entries");
        let n = check(iterated.iter().map(of_entry), &truth);
        assert_eq!(n, truth.len(), "{order:?}: the entry iterator");
    }
}

#[test]
fn kept_entries_with_bulk_metadata_carry_it() {
    let tmp = tempfile::tempdir().unwrap();
    make_tree(tmp.path());
    let truth = truth(tmp.path());
    let mut keep = Keep::default();
    WalkBuilder::new(tmp.path())
        .min_depth(1)
        .metadata(true)
        .visit(Keep::default, |k| keep.kept.extend(k.kept));
    for chunk in &keep.kept {
        for e in chunk.iter() {
            let m = e.cached_metadata().expect("fetched by the walk");
            assert_eq!(truth[&e.path()], m.ino);
        }
    }
}
