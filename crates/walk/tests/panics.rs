//! With `end_process_on_panic`, a panic on any of a walk's threads (a bug
//! in a filter, say) ends the process with status 101, where the other
//! threads used to wait for the panicked one's directory for good. (Its
//! own test binary: it runs itself as the program that panics.)

use std::process::Command;
use std::time::Duration;

use fnd_walk::{Flow, Nest, TreeOrder, TreeVisitor, WalkBuilder, Within};

/// Set in the copy of this test that walks and panics: its walk's order.
const CHILD: &str = "FND_PANICS_TEST_WALK";

struct Count(usize);

impl TreeVisitor for Count {
    fn entries(&mut self, chunk: &fnd_walk::ChunkBuf) -> Flow {
        self.0 += chunk.len();
        Flow::Continue
    }
}

/// The walk that panics: a filter that meets `boom` among many
/// directories, on whichever of four threads reads it.
fn walk_and_panic(order: &str) -> ! {
    fnd_walk::end_process_on_panic();
    let tree = tempfile::tempdir().unwrap();
    for d in 0..200 {
        let dir = tree.path().join(format!("d{d:03}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..20 {
            std::fs::write(dir.join(format!("f{f}")), "").unwrap();
        }
    }
    std::fs::write(tree.path().join("d150/boom"), "").unwrap();
    let walk = WalkBuilder::new(tree.path()).threads(4).keep(|e| {
        assert!(e.name != b"boom", "a bug in a filter");
        true
    });
    if order == "ordered" {
        walk.visit_tree(TreeOrder::new(Within::Name, Nest::AtEntry), &mut Count(0));
    } else {
        walk.for_each(|_| Flow::Continue);
    }
    // Not reached: the panic ended the process.
    std::process::exit(0)
}

#[test]
fn a_panic_on_a_walks_thread_ends_the_process() {
    if let Ok(order) = std::env::var(CHILD) {
        walk_and_panic(&order);
    }
    let exe = std::env::current_exe().unwrap();
    for order in ["parallel", "ordered"] {
        let mut cmd = Command::new(&exe);
        cmd.args([
            "--exact",
            "a_panic_on_a_walks_thread_ends_the_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, order);
        let out = fnd_test_support::process::run_within(cmd, "a walk that panics", Duration::from_secs(60));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(101), "{order}: {stderr}");
        assert!(stderr.contains("a bug in a filter"), "{order}: {stderr}");
    }
}
