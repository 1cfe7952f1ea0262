//! Dropping an iterator in the middle of a walk ends every thread of the
//! walk and closes every descriptor it opened, before `drop` returns.
//! (Its own test binary: the counts below are per process.)

use fnd_walk::{Order, WalkBuilder};

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[test]
fn dropping_an_iterator_ends_its_threads_and_closes_its_descriptors() {
    let tree = tempfile::tempdir().unwrap();
    for d in 0..20 {
        let mut path = tree.path().join(format!("d{d}"));
        for level in 0..5 {
            path.push(format!("l{level}"));
            std::fs::create_dir_all(&path).unwrap();
            for f in 0..20 {
                std::fs::write(path.join(format!("f{f}")), "").unwrap();
            }
        }
    }
    let (threads, fds) = (count("/proc/self/task"), count("/proc/self/fd"));
    for builder in [
        WalkBuilder::new(tree.path()).threads(4),
        WalkBuilder::new(tree.path()).order(Order::BreadthFirst),
    ] {
        let builder = builder.chunk_size(4).buffer_chunks(1);
        let mut walk = builder.iter();
        for _ in 0..50 {
            walk.next().unwrap().unwrap();
        }
        assert!(count("/proc/self/task") > threads);
        drop(walk);
        assert_eq!(count("/proc/self/task"), threads);
        assert_eq!(count("/proc/self/fd"), fds);

        let mut chunks = builder.chunks();
        chunks.next().unwrap().unwrap();
        drop(chunks);
        assert_eq!(count("/proc/self/task"), threads);
        assert_eq!(count("/proc/self/fd"), fds);
    }
}
