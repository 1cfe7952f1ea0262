//! Ignore-file rules through the walk: precedence, whitelisting, and git's
//! rules applying only inside a repository.

use std::path::Path;

use fnd_walk::ignore::IgnoreBuilder;
use fnd_walk::{Chunk, Flow, Order, Visitor, WalkBuilder};

struct Paths(Vec<String>);
impl Visitor for Paths {
    fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
        for e in chunk.iter() {
            let mut p = Vec::new();
            e.write_path(&mut p);
            self.0.push(String::from_utf8(p).unwrap());
        }
        Flow::Continue
    }
}

fn walk(root: &Path, builder: IgnoreBuilder) -> Vec<String> {
    let mut out = Vec::new();
    let filter = builder.parents(false).build(&[root]);
    WalkBuilder::new(root)
        .order(Order::DepthFirst)
        .min_depth(1)
        .hook(filter)
        .visit(|| Paths(Vec::new()), |p| out = p.0);
    let prefix = format!("{}/", root.display());
    let mut v: Vec<String> = out
        .iter()
        .map(|p| p.strip_prefix(&prefix).unwrap().to_owned())
        .collect();
    v.sort();
    v
}

fn put(root: &Path, name: &str, text: &str) {
    let path = root.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn nearer_rules_win_and_whitelist_hidden_entries() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    put(root, ".ignore", "*.log\n");
    put(root, "a.log", "");
    put(root, "sub/.ignore", "!keep.log\n!.seen\n");
    put(root, "sub/keep.log", "");
    put(root, "sub/other.log", "");
    put(root, "sub/.seen", "");
    put(root, "sub/.unseen", "");
    assert_eq!(walk(root, IgnoreBuilder::new()), ["sub", "sub/.seen", "sub/keep.log"]);
    assert_eq!(
        walk(root, IgnoreBuilder::new().dot_ignore(false)),
        ["a.log", "sub", "sub/keep.log", "sub/other.log"]
    );
}

#[test]
fn gitignore_needs_a_repository_unless_told_otherwise() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    put(root, ".gitignore", "x\n");
    put(root, "x", "");
    assert_eq!(walk(root, IgnoreBuilder::new()), ["x"]);
    assert_eq!(
        walk(root, IgnoreBuilder::new().require_git(false)),
        Vec::<String>::new()
    );
    std::fs::create_dir(root.join(".git")).unwrap();
    assert_eq!(walk(root, IgnoreBuilder::new()), Vec::<String>::new());
}
