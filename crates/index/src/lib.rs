//! An index of directory trees for `fnd`: every entry's name and type
//! (each distinct name stored once), each directory's identity and change
//! stamp (device, and inode and ctime as one digest); built with the
//! walk, stored compactly, replaced atomically,
//! read into memory from files no other user can write, and brought up to
//! date with one `stat` per directory.
//!
//! The crate owns the index file (its format, its build, its refresh, where
//! it is stored); `fnd` searches it (`--indexed`).
//!
//! The modules are layers, each using only those below it; the
//! workspace's ARCHITECTURE.md lists them, bottom first, and
//! `tests/layers.rs` checks every import against that list.
//!
//! ```
//! use fnd_index::{build, format::Index, refresh, store};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # std::fs::create_dir(dir.path().join("src")).unwrap();
//! # // A directory changed in the last 50 ms is read again by every check.
//! # std::thread::sleep(std::time::Duration::from_millis(60));
//! let root = dir.path().canonicalize().unwrap();
//! # let cache = tempfile::tempdir().unwrap();
//! let file = store::file_for(cache.path(), &root);
//! store::write_index(&file, &mut build::build(&root, 2).unwrap()).unwrap();
//! let loaded = store::Loaded::open(&file).unwrap();
//! assert!(loaded.index().find(b"src").is_some());
//! std::fs::write(root.join("src/new.rs"), "").unwrap();
//! let fresh = refresh::refresh(&loaded.index(), 2).unwrap();
//! assert_eq!(fresh.changed, 1);
//! let bytes = fresh.writer.unwrap().finish();
//! let index = Index::parse(&bytes).unwrap();
//! assert_eq!(index.dir(index.find(b"src").unwrap()).len(), 1);
//! ```

pub mod build;
pub mod format;
pub mod refresh;
pub mod store;
