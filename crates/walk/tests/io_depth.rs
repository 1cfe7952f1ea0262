//! A parallel walk whose reads wait adds workers up to its I/O depth, and
//! still reports each entry exactly once.

use std::collections::HashSet;
use std::time::Duration;

use fnd_walk::{Chunk, Flow, Visitor, WalkBuilder};

/// Visitors that sleep in every chunk make every read look blocked: the
/// pool must grow, and still report each entry exactly once.
#[test]
fn a_blocked_walk_grows_and_reports_everything_once() {
    struct Slow(Vec<Vec<u8>>);
    impl Visitor for Slow {
        fn visit(&mut self, chunk: &mut Chunk<'_>) -> Flow {
            std::thread::sleep(Duration::from_micros(300));
            for e in chunk.iter() {
                let mut p = Vec::new();
                e.write_path(&mut p);
                self.0.push(p);
            }
            Flow::Continue
        }
    }

    let dir = tempfile::tempdir().unwrap();
    for a in 0..20 {
        for b in 0..10 {
            std::fs::create_dir_all(dir.path().join(format!("{a}/{b}"))).unwrap();
            std::fs::write(dir.path().join(format!("{a}/{b}/f")), "").unwrap();
        }
    }
    let (mut visitors, mut paths) = (0, Vec::new());
    WalkBuilder::new(dir.path()).threads(2).io_depth(8).visit(
        || Slow(Vec::new()),
        |v| {
            visitors += 1;
            paths.extend(v.0);
        },
    );
    let unique: HashSet<_> = paths.iter().collect();
    assert_eq!(paths.len(), 1 + 20 + 200 + 200);
    assert_eq!(unique.len(), paths.len());
    assert!(visitors > 2, "the pool did not grow ({visitors} workers)");
}
