//! Ignore rules for a directory handed to another process (an MPI rank)
//! are rebuilt there from its path; the verdicts must be the ones the
//! walk that found it would have given.
//!
//! Every directory of trees with nested `.gitignore`, `.ignore` and
//! custom ignore files, negations, anchored and directory-only patterns,
//! hidden entries, a repository inside the root, one above it, and one
//! nested in another, is entered twice: as the walk enters it, and as a
//! second filter (a process of its own: its own instance, its own cache)
//! enters it after importing its parent's exported state. Every entry's
//! decision must be the same both ways.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use fnd_walk::ignore::{IgnoreBuilder, IgnoreFilter, Level};
use fnd_walk::{Chunk, Decision, DirHook, DirInfo, Flow, MovedDir, RawEntry, Visitor, WalkBuilder};

fn put(root: &Path, name: &str, text: &str) {
    let path = root.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A repository whose root holds rules above the walk's root, the walk's
/// root inside it, and a root outside any repository.
fn make_trees(base: &Path) -> Vec<std::path::PathBuf> {
    let repo = base.join("repo");
    std::fs::create_dir_all(repo.join(".git/info")).unwrap();
    put(&repo, ".gitignore", "*.tmp\n/proj/top-only\n");
    put(&repo, ".git/info/exclude", "excluded.txt\n");
    let proj = repo.join("proj");
    put(&proj, ".gitignore", "build/\n*.o\n!keep.o\n");
    put(&proj, ".ignore", "secret*\n!.config\n");
    put(&proj, ".fdignore", "*.bak\n!important.bak\n");
    put(&proj, "src/.gitignore", "gen\n/anchored.txt\n");
    let files = [
        "x.o",
        "keep.o",
        "y.tmp",
        "z.bak",
        "important.bak",
        "secret1",
        "anchored.txt",
        "gen",
        "normal.rs",
        "excluded.txt",
        "top-only",
        ".hidden",
        "k.dat",
        "keep1.dat",
        "keep2.dat",
    ];
    let dirs = [
        "",
        "src",
        "src/a",
        "src/a/b/c",
        "build",
        "src/build",
        ".config",
        "deep/l1/l2/l3/l4/l5/l6",
        "vendor",
        "vendor/lib/inner",
    ];
    for dir in dirs {
        for file in files {
            put(&proj, &format!("{dir}/{file}"), "");
        }
    }
    put(&proj, "deep/l1/.ignore", "*.dat\n");
    put(&proj, "deep/l1/l2/l3/.ignore", "!keep*.dat\n");
    put(&proj, "deep/l1/l2/l3/l4/l5/.gitignore", "keep2.dat\nl6/\n");
    // A repository of its own inside the walk: the outer .gitignore stops at it.
    std::fs::create_dir_all(proj.join("vendor/.git")).unwrap();
    put(&proj, "vendor/.gitignore", "*.rs\n");
    put(&proj, "vendor/lib/.ignore", "!secret1\n");
    let plain = base.join("plain");
    put(&plain, ".gitignore", "*.rs\n");
    put(&plain, ".ignore", "*.o\n");
    for dir in ["", "a", "a/b"] {
        for file in files {
            put(&plain, &format!("{dir}/{file}"), "");
        }
    }
    vec![proj, plain]
}

fn rules() -> IgnoreBuilder {
    IgnoreBuilder::new().add_custom_name(".fdignore")
}

/// A directory's state as the walk made it, and as a second process
/// rebuilt it from its parent's exported state.
struct Pair {
    walked: Arc<Level>,
    rebuilt: Option<Arc<Level>>,
}

struct Checked {
    here: IgnoreFilter,
    there: IgnoreFilter,
    roots: Vec<Vec<u8>>,
    compared: AtomicUsize,
    mismatches: Mutex<Vec<String>>,
}

impl Checked {
    fn rebuild(&self, dir: &DirInfo<'_>, parent: &Arc<Level>) -> Option<Arc<Level>> {
        let slash = dir
            .path
            .iter()
            .rposition(|&b| b == b'/')
            .expect("a directory below a root");
        let root = self
            .roots
            .iter()
            .position(|r| dir.path.starts_with(r))
            .expect("under a root");
        // The walk spells a root as given (perhaps with a trailing slash).
        let parent_path = if dir.depth == 1 {
            &self.roots[root][..]
        } else {
            &dir.path[..slash]
        };
        let handover = MovedDir {
            parent_path,
            parent_depth: dir.depth - 1,
            name: &dir.path[slash + 1..],
            root,
            root_path: &self.roots[root],
            follow_links: false,
        };
        let bytes = self.here.export_state(parent, &handover).expect("ignore rules travel");
        let imported = self
            .there
            .import_state(&bytes, &handover)
            .unwrap_or_else(|e| panic!("{}: {e}", String::from_utf8_lossy(dir.path)));
        self.there.enter(dir, Some(&imported))
    }
}

impl DirHook for Checked {
    type State = Pair;

    fn enter(&self, dir: &DirInfo<'_>, parent: Option<&Arc<Pair>>) -> Option<Arc<Pair>> {
        let parent = parent.map(|p| &p.walked);
        let walked = self.here.enter(dir, parent)?;
        let rebuilt = parent.and_then(|p| self.rebuild(dir, p));
        Some(Arc::new(Pair { walked, rebuilt }))
    }

    fn decide(&self, state: Option<&Pair>, entry: &RawEntry<'_>) -> Decision {
        let pair = state.expect("a state everywhere");
        let walked = self.here.decide(Some(&pair.walked), entry);
        if let Some(rebuilt) = &pair.rebuilt {
            self.compared.fetch_add(1, Ordering::Relaxed);
            let other = self.there.decide(Some(rebuilt), entry);
            if other != walked {
                let mut path = entry.parent_prefix.to_vec();
                path.extend_from_slice(entry.name);
                self.mismatches.lock().unwrap().push(format!(
                    "{}: walked {walked:?}, rebuilt {other:?}",
                    String::from_utf8_lossy(&path)
                ));
            }
        }
        walked
    }

    fn probe_names(&self) -> &[Vec<u8>] {
        self.here.probe_names()
    }
}

struct Count(usize);
impl Visitor for Count {
    fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
        self.0 += chunk.len();
        Flow::Continue
    }
}

fn check(roots: &[std::path::PathBuf], rules: impl Fn() -> IgnoreBuilder) {
    let checked = Arc::new(Checked {
        here: rules().build(roots),
        there: rules().build(roots),
        roots: roots
            .iter()
            .map(|r| r.as_os_str().as_encoded_bytes().to_vec())
            .collect(),
        compared: AtomicUsize::new(0),
        mismatches: Mutex::new(Vec::new()),
    });
    let mut walk = WalkBuilder::new(&roots[0]).threads(2);
    for root in &roots[1..] {
        walk = walk.add_root(root);
    }
    let mut yielded = 0;
    walk.clone()
        .hook(checked.clone())
        .visit(|| Count(0), |c| yielded += c.0);
    let mismatches = checked.mismatches.lock().unwrap();
    assert!(
        mismatches.is_empty(),
        "{} verdicts differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert!(checked.compared.load(Ordering::Relaxed) > 100);
    // The rules do leave entries out.
    let mut everything = 0;
    walk.visit(|| Count(0), |c| everything += c.0);
    assert!(yielded < everything, "{yielded} of {everything}");
}

#[test]
fn rules_rebuilt_from_a_path_decide_as_the_walk_did() {
    let tmp = tempfile::tempdir().unwrap();
    let roots = make_trees(tmp.path());
    check(&roots, rules);
    check(&roots, || rules().hidden(false));
    check(&roots, || rules().require_git(false).parents(false));
    // A root spelt with a trailing slash, and one given relative to it.
    let slashed = vec![std::path::PathBuf::from(format!("{}/", roots[0].display()))];
    check(&slashed, rules);
}

#[test]
fn a_state_that_is_not_one_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let roots = make_trees(tmp.path());
    let filter = rules().build(&roots);
    let root = roots[0].as_os_str().as_encoded_bytes();
    let parent = [root, b"/src"].concat();
    let handover = MovedDir {
        parent_path: &parent,
        parent_depth: 1,
        name: b"a",
        root: 0,
        root_path: root,
        follow_links: false,
    };
    assert!(filter.import_state(b"\x01", &handover).is_ok());
    for bad in [&b""[..], b"\x02", b"\x01\x01"] {
        assert!(filter.import_state(bad, &handover).is_err(), "{bad:?}");
    }
    let elsewhere = MovedDir {
        parent_path: b"/elsewhere/src",
        ..handover
    };
    let too_deep = MovedDir {
        parent_depth: 2,
        ..handover
    };
    let dotted = [root, b"/../src"].concat();
    let climbing = MovedDir {
        parent_path: &dotted,
        ..handover
    };
    for bad in [elsewhere, too_deep, climbing] {
        assert!(filter.import_state(b"\x01", &bad).is_err(), "{bad:?}");
    }
    // A parent that vanished since: the file system's own error, for the
    // walk to report as the directory's.
    let gone = [root, b"/gone"].concat();
    let vanished = MovedDir {
        parent_path: &gone,
        ..handover
    };
    let e = filter.import_state(b"\x01", &vanished).err().unwrap();
    assert_eq!(e.downcast_ref::<rustix::io::Errno>(), Some(&rustix::io::Errno::NOENT));
}
