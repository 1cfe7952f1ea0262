//! The browser rescans (`r`, a failed delete) in one process, as often as
//! asked: each scan must be let go of whole, or a long session grows
//! without bound. Counted by an allocator that keeps the bytes live, in a
//! test binary of its own (no other test allocates meanwhile).

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::OsString;
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};
use std::sync::Arc;

use fdu::cli::{self, Parsed};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn a_thousand_rescans_hold_memory_flat() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    for dir in ["a/b/c", "d", "e/f"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    for (i, file) in ["a/1", "a/b/2", "a/b/c/3", "d/4", "e/f/5", "6"].iter().enumerate() {
        std::fs::write(root.join(file), vec![b'x'; 1000 * i]).unwrap();
    }
    // A multiply-linked file: the scan keeps a set of them.
    std::fs::hard_link(root.join("d/4"), root.join("e/4")).unwrap();
    let argv: Vec<OsString> = ["fdu", "-i", "--no-progress"]
        .iter()
        .map(OsString::from)
        .chain([root.clone().into_os_string()])
        .collect();
    let settings = match cli::parse(argv) {
        Ok(Parsed::Run(settings)) => *settings,
        _ => panic!("fdu -i does not parse"),
    };
    let progress = Arc::default();
    let rescan = || {
        let tree = fdu::scan_tree(&settings, &progress).expect("the tree is read");
        drop(tree);
        // The scan held the progress too: it is gone with the scan.
        assert_eq!(Arc::strong_count(&progress), 1, "the scan outlived its tree");
    };
    for _ in 0..100 {
        rescan();
    }
    let after_100 = LIVE.load(Relaxed);
    for _ in 100..550 {
        rescan();
    }
    let after_550 = LIVE.load(Relaxed);
    for _ in 550..1000 {
        rescan();
    }
    let after_1000 = LIVE.load(Relaxed);
    // A scan kept per rescan (its settings, its output buffer, its link
    // sets) would add hundreds of bytes each at the very least, 450 times
    // in each half. Something held once (or a thread still letting go of
    // its own as it ends) grows one half only: a run on a busy machine saw
    // 101,760 bytes more at the end, once in 25 runs.
    let grown = [after_550 - after_100, after_1000 - after_550];
    assert!(
        grown.iter().min().is_some_and(|&g| g < 32 * 1024),
        "{grown:?} bytes more live in each half of 900 more rescans"
    );
}
