//! A directory handed over by another rank of an MPI job, as its bytes:
//! whatever they are, decoding gives a directory or an error (never a
//! panic, never an allocation larger than the input allows), a decoded
//! directory encodes back to the same bytes, and taking it into a walk
//! accepts it or refuses it with a reason, never panics. Its path is checked against the walk's roots,
//! its chain of ancestors against its depth, and its parent's filter
//! state is imported: by a chain of two filters (whose encoding splits the
//! state in two) over the ignore rules, which rebuild the state from the
//! path, reading the ignore files of a small tree. Half the inputs have
//! their path put under the tree's root, so that the fuzzer gets past the
//! first check. Run with `cargo +nightly fuzz run handoff`.
#![no_main]

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use fnd_walk::ignore::IgnoreBuilder;
use fnd_walk::{DirHook, DirInfo, ImportError, MovedDir, WalkBuilder};
use libfuzzer_sys::fuzz_target;

/// A hook whose state is any short byte string.
struct Bytes;

impl DirHook for Bytes {
    type State = usize;

    fn enter(&self, dir: &DirInfo<'_>, _: Option<&Arc<usize>>) -> Option<Arc<usize>> {
        Some(Arc::new(dir.depth))
    }

    fn export_state(&self, _: &Arc<usize>, _: &MovedDir<'_>) -> Option<Vec<u8>> {
        Some(Vec::new())
    }

    fn import_state(&self, bytes: &[u8], handover: &MovedDir<'_>) -> Result<Arc<usize>, ImportError> {
        if bytes.len() > 16 {
            return Err("too long".into());
        }
        Ok(Arc::new(handover.parent_depth))
    }
}

/// The small tree, made once in the fuzz build's directory and kept for
/// every later run (a tree in the temporary directory per process was left
/// behind by each run: libFuzzer ends with `exit`, no destructor runs).
/// Made beside it and renamed into place: runs started together (`-jobs`)
/// never see a tree half made.
fn tree() -> PathBuf {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/target/handoff-tree"));
    if root.join("d/up").symlink_metadata().is_ok() {
        return root;
    }
    let making = root.with_extension(std::process::id().to_string());
    for dir in ["a/b/c", "a/.git", "d/e", ".git"] {
        std::fs::create_dir_all(making.join(dir)).unwrap();
    }
    std::fs::write(making.join(".gitignore"), "*.o\n!keep.o\n").unwrap();
    std::fs::write(making.join("a/.ignore"), "b/\n").unwrap();
    std::fs::write(making.join("a/b/.gitignore"), "/c\n").unwrap();
    std::os::unix::fs::symlink("../a", making.join("d/up")).unwrap();
    if std::fs::rename(&making, &root).is_err() {
        // Another run made it first.
        std::fs::remove_dir_all(&making).unwrap();
    }
    root
}

/// A small tree with ignore files, and walks of it: with a chain of
/// filters, with the ignore rules alone, without a filter; links followed
/// or not.
fn walks() -> &'static (PathBuf, Vec<WalkBuilder>) {
    static WALKS: OnceLock<(PathBuf, Vec<WalkBuilder>)> = OnceLock::new();
    WALKS.get_or_init(|| {
        let root = tree();
        let walk = WalkBuilder::new(&root).add_root(root.join("a"));
        let rules = || Some(IgnoreBuilder::new());
        let walks = vec![
            walk.clone().hook(Bytes).ignore_rules(rules()),
            walk.clone().ignore_rules(rules()).follow_links(true),
            walk.clone().hook(Bytes),
            walk,
        ];
        (root, walks)
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, bytes)) = data.split_first() else {
        return;
    };
    let (root, walks) = walks();
    let walk = &walks[usize::from(mode & 3)];
    if let Some(again) = fnd_walk::fuzzing::reencode(bytes) {
        assert_eq!(again, bytes, "a handed-over directory with two encodings");
    }
    let rebased;
    let bytes = if mode & 4 != 0 {
        // Under the tree's root: the fuzzed path is what follows it.
        let Some(under) = fnd_walk::fuzzing::under(root.as_os_str().as_encoded_bytes(), bytes) else {
            return;
        };
        rebased = under;
        &rebased[..]
    } else {
        bytes
    };
    let _ = fnd_walk::fuzzing::take_in(walk, bytes);
});
