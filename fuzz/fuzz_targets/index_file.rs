//! Index files: whatever the bytes (checksum made right, so that damage
//! reaches the tables), reading is an error or an index that can be
//! walked whole, up from any directory and from any byte of its names,
//! whose every name is a file name and whose root is a real path (no path
//! made of them leaves the tree), and copied as a refresh copies its
//! unchanged directories into an index that reads again.
//! Run with `cargo +nightly fuzz run index_file`.
#![no_main]

use libfuzzer_sys::fuzz_target;

use fnd_index::build::{fill, Listed, Old, Source};
use fnd_index::format::{seal, Index, IndexWriter};
use fnd_walk::is_file_name;

fuzz_target!(|bytes: &[u8]| {
    let mut sealed = bytes.to_vec();
    seal(&mut sealed);
    for data in [bytes, &sealed[..]] {
        let Ok(index) = Index::parse(data) else { continue };
        let root = index.root();
        assert!(root.starts_with(b"/") && !root.contains(&0));
        assert!(root == b"/" || root[1..].split(|&b| b == b'/').all(is_file_name));
        let mut stack = vec![0u32];
        let mut seen = 0usize;
        while let Some(row) = stack.pop() {
            let dir = index.dir(row);
            let _ = dir.stamp();
            for e in dir.entries() {
                seen += 1;
                assert!(is_file_name(e.name), "{:?}", e.name);
                stack.extend(e.dir);
                if let Some(child) = e.dir {
                    // Up again: the parent is the row read, below the child.
                    let (parent, _) = index.parent(child).expect("a row has a parent");
                    assert!(parent < child);
                }
            }
        }
        // Every row is read once: each entry is seen at most once.
        assert!(seen <= index.entry_count());
        for e in 0..index.entry_count() {
            let row = index.dir_of_entry(e);
            assert!((row as usize) < index.dir_count());
        }
        let names = index.names().count();
        assert_eq!(names, index.name_count());
        for at in 0..index.name_table().len() {
            let (id, name, next) = index.name_holding(at).expect("every byte is in a name");
            assert!(next > at && (id as usize) < names && is_file_name(name));
        }
        let _ = index.find(b"a/b");
        let old = Old {
            index,
            relisted: Default::default(),
            kept: Default::default(),
        };
        let copy = fill(
            IndexWriter::with_names_of(&index, 0),
            &Listed::default(),
            None,
            Source::Kept(0),
            Some(&old),
        )
        .finish();
        Index::parse(&copy).expect("a copy of an index reads");
    }
});
