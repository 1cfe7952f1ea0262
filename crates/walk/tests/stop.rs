//! Dropping an iterator in the middle of a walk ends every thread of the
//! walk and closes every descriptor it opened, before `drop` returns.
//! (Its own test binary: the counts below are per process.)

use fnd_walk::{Order, WalkBuilder};

fn count(dir: &str) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

/// The threads of this process once those joined have left it: a joined
/// thread has run its last instruction, but the kernel takes it out of
/// `/proc/self/task` a moment later (1 run in 300 on a loaded machine saw
/// it still there). A thread still running never leaves.
fn threads_settled_at(want: usize) -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        let now = count("/proc/self/task");
        if now == want || std::time::Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
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
        assert_eq!(threads_settled_at(threads), threads);
        assert_eq!(count("/proc/self/fd"), fds);

        let mut chunks = builder.chunks();
        chunks.next().unwrap().unwrap();
        drop(chunks);
        assert_eq!(threads_settled_at(threads), threads);
        assert_eq!(count("/proc/self/fd"), fds);
    }
}
